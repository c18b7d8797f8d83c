//! Small value types of the suite format (`Dur`, `Regex`, `Count`, `InstanceSel`, `Occurrence`):
//! each validates while it deserializes, so the YAML location and path come with the error.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The longest duration a suite may give (timeouts, waits, sleeps, tolerances, gap bounds): 24 h.
/// No CI job runs that long (GitHub Actions stops a job at 6 h), the slowest built-in case takes
/// 3.2 min, and the bound keeps every deadline the runner computes far from `Instant` overflow.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// A human duration such as `5s`, `500ms`, `1m30s` (humantime syntax), at most `MAX_DURATION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn from_secs_f64(s: f64) -> Self {
        // Saturating: `Duration::from_secs_f64` panics on inf and overflow.
        Dur(Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX))
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::util::fmt_secs(self.0.as_secs_f64()))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `5s`, `500ms` or `1m30s`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Dur, E> {
                let d = humantime::parse_duration(s.trim()).map_err(|e| {
                    // humantime refuses values past u64 seconds ("number is too large").
                    if matches!(e, humantime::DurationError::NumberOverflow) {
                        E::custom(format!("duration \"{s}\" is above the 24h maximum"))
                    } else {
                        E::custom(format!("invalid duration \"{s}\" (use e.g. `5s`, `500ms`, `1m30s`)"))
                    }
                })?;
                if d > MAX_DURATION {
                    return Err(E::custom(format!("duration \"{s}\" is above the 24h maximum")));
                }
                Ok(Dur(d))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                if v == 0 {
                    Ok(Dur(Duration::ZERO))
                } else {
                    Err(E::custom(format!(
                        "invalid duration {v}: a duration needs a unit, e.g. `{v}s`"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                if v == 0 {
                    Ok(Dur(Duration::ZERO))
                } else {
                    Err(E::custom(format!(
                        "invalid duration {v}: a duration needs a unit, e.g. `{v}s`"
                    )))
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration {v}: a duration needs a unit, e.g. `{v}s`"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl JsonSchema for Dur {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration: `5s`, `500ms`, `1m30s` (humantime syntax).",
            "pattern": "^\\s*([0-9]+(\\.[0-9]+)?\\s*(ns|us|µs|ms|s|sec|m|min|h|hr|d)\\s*)+$"
        })
    }
}

/// A regular expression, compiled at load time. Template variables (`${pod.name}`, ...) are
/// checked at load time and substituted when judging, so the source is kept too.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub source: String,
}

/// Template variables a log regex may use; their values come from the observed pod.
pub(crate) const TEMPLATE_VARS: &[&str] = &[
    "pod.name",
    "pod.namespace",
    "pod.uid",
    "pod.ip",
    "pod.serviceAccountName",
    "node.name",
    "host.ip",
];

/// Why a text's template variables cannot be checked or filled in.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// A `${` without its `}`, found when checking a suite's text.
    #[error("unterminated template variable in \"{text}\"")]
    Unterminated { text: String },
    /// A `${` without its `}`, found when filling in (the text was checked at load time).
    #[error("unterminated template variable")]
    UnterminatedWhenFilling,
    #[error("unknown template variable `${{{name}}}` (known: {})", known_template_vars())]
    Unknown { name: String },
    /// The observed pod has no value for the variable (yet).
    #[error("template variable `${{{name}}}` has no observed value")]
    NoValue { name: String },
}

/// `${pod.name}, ${pod.namespace}, ...`, for the error naming an unknown variable.
fn known_template_vars() -> String {
    TEMPLATE_VARS
        .iter()
        .map(|v| format!("${{{v}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a pattern is no regex, or cannot be compiled against the observed pod.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PatternError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The pattern (variables replaced by a literal) is no regex, in the regex crate's words.
    #[error("invalid regex \"{pattern}\": {reason}")]
    Invalid { pattern: String, reason: String },
    /// The pattern with its variables filled in does not compile (the regex crate's message on
    /// one line).
    #[error("{0}")]
    Filled(String),
}

/// Checks the template variables of `source` and returns it with each replaced by `x`.
fn check_templates(source: &str) -> Result<String, TemplateError> {
    let mut probe = String::new();
    let mut rest = source;
    while let Some(start) = rest.find("${") {
        probe.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(TemplateError::Unterminated {
                text: source.to_string(),
            });
        };
        let name = &after[..end];
        if !TEMPLATE_VARS.contains(&name) {
            return Err(TemplateError::Unknown { name: name.to_string() });
        }
        probe.push('x');
        rest = &after[end + 1..];
    }
    probe.push_str(rest);
    Ok(probe)
}

/// Replaces template variables by their observed values, each passed through `escape`.
fn expand_templates(
    source: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    escape: fn(&str) -> String,
) -> Result<String, TemplateError> {
    let mut out = String::new();
    let mut rest = source;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(TemplateError::UnterminatedWhenFilling)?;
        let name = &after[..end];
        let value = lookup(name).ok_or_else(|| TemplateError::NoValue { name: name.to_string() })?;
        out.push_str(&escape(&value));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An exact text (a log line, a termination message). Template variables (`${pod.name}`, ...)
/// are checked at load time and substituted, unescaped, when judging.
#[derive(Clone, Debug)]
pub struct Exact {
    pub source: String,
}

impl Exact {
    pub(crate) fn expand(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, TemplateError> {
        expand_templates(&self.source, lookup, str::to_string)
    }
}

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        check_templates(&source).map_err(de::Error::custom)?;
        Ok(Exact { source })
    }
}

impl Serialize for Exact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl JsonSchema for Exact {
    fn schema_name() -> Cow<'static, str> {
        "ExactText".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "An exact text. May use ${pod.name}, ${pod.namespace}, ${pod.uid}, ${pod.ip}, ${pod.serviceAccountName}, ${node.name}, ${host.ip}."
        })
    }
}

impl fmt::Display for Exact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.source)
    }
}

impl Pattern {
    /// Checks the template variables and the regex syntax (variables replaced by a literal).
    pub fn check(source: &str) -> Result<(), PatternError> {
        let probe = check_templates(source)?;
        regex::Regex::new(&probe)
            .map(|_| ())
            .map_err(|e| PatternError::Invalid {
                pattern: source.to_string(),
                reason: regex_reason(&e),
            })
    }

    /// Substitutes template variables (values regex-escaped) and compiles.
    pub fn compile(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<regex::Regex, PatternError> {
        let out = expand_templates(&self.source, lookup, regex::escape)?;
        regex::Regex::new(&out).map_err(|e| PatternError::Filled(one_line(&e.to_string())))
    }
}

/// The regex crate's own reason ("unclosed group"), without its pattern-and-caret drawing.
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("");
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        Pattern::check(&source).map_err(de::Error::custom)?;
        Ok(Pattern { source })
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl JsonSchema for Pattern {
    fn schema_name() -> Cow<'static, str> {
        "Regex".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "regex",
            "description": "A Rust regex. May use ${pod.name}, ${pod.namespace}, ${pod.uid}, ${pod.ip}, ${pod.serviceAccountName}, ${node.name}, ${host.ip}."
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

/// A count: `3` (exactly) or `{atLeast: 1, atMost: 5}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Count {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exactly: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_most: Option<u64>,
}

impl JsonSchema for Count {
    fn schema_name() -> Cow<'static, str> {
        "Count".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A count: an integer (exactly) or {exactly, atLeast, atMost}.",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "exactly": {"type": "integer", "minimum": 0},
                        "atLeast": {"type": "integer", "minimum": 0},
                        "atMost": {"type": "integer", "minimum": 0}
                    }
                }
            ]
        })
    }
}

impl Count {
    pub(crate) fn at_least(n: u64) -> Self {
        Count {
            at_least: Some(n),
            ..Count::default()
        }
    }
    pub fn matches(&self, n: u64) -> bool {
        self.exactly.is_none_or(|e| n == e)
            && self.at_least.is_none_or(|l| n >= l)
            && self.at_most.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![];
        if let Some(e) = self.exactly {
            parts.push(format!("exactly {e}"));
        }
        if let Some(l) = self.at_least {
            parts.push(format!("at least {l}"));
        }
        if let Some(m) = self.at_most {
            parts.push(format!("at most {m}"));
        }
        if parts.is_empty() {
            parts.push("any number".into());
        }
        f.write_str(&parts.join(" and "))
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct Map {
            exactly: Option<u64>,
            at_least: Option<u64>,
            at_most: Option<u64>,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a count: a non-negative integer or {exactly, atLeast, atMost}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count {
                    exactly: Some(v),
                    ..Count::default()
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v)
                    .map(|v| Count {
                        exactly: Some(v),
                        ..Count::default()
                    })
                    .map_err(|_| E::custom(format!("invalid count {v}: must not be negative")))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Count, A::Error> {
                let m = Map::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (m.exactly, m.at_least, m.at_most) {
                    (None, None, None) => {
                        return Err(de::Error::custom(
                            "empty count: it would match any number; give `exactly`, `atLeast` or `atMost`",
                        ));
                    }
                    (Some(e), l, h) if l.is_some() || h.is_some() => {
                        return Err(de::Error::custom(format!(
                            "invalid count: `exactly: {e}` with `atLeast`/`atMost`; give one or the other"
                        )));
                    }
                    _ => {}
                }
                if let (Some(l), Some(h)) = (m.at_least, m.at_most)
                    && l > h
                {
                    return Err(de::Error::custom(format!("invalid count: atLeast {l} > atMost {h}")));
                }
                Ok(Count {
                    exactly: m.exactly,
                    at_least: m.at_least,
                    at_most: m.at_most,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Which container instance (0 = first run, 1 = after the first restart, ...): a number,
/// `first`, `last` (default for most selectors), `any`, or `each` (in a mark used by a gap with
/// `forEachInstance`: every instance in turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InstanceSel {
    Nth(u32),
    #[default]
    Any,
    Last,
    Each,
}

impl fmt::Display for InstanceSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstanceSel::Nth(n) => write!(f, "#{n}"),
            InstanceSel::Any => f.write_str(" (any instance)"),
            InstanceSel::Last => f.write_str(" (last instance)"),
            InstanceSel::Each => f.write_str(" (each instance)"),
        }
    }
}

impl<'de> Deserialize<'de> for InstanceSel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = InstanceSel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an instance: a number (0 = first run), `first`, `last` or `any`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<InstanceSel, E> {
                u32::try_from(v)
                    .map(InstanceSel::Nth)
                    .map_err(|_| E::custom("instance out of range"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<InstanceSel, E> {
                u32::try_from(v)
                    .map(InstanceSel::Nth)
                    .map_err(|_| E::custom(format!("invalid instance {v}: must be 0 or more, `last` or `any`")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<InstanceSel, E> {
                match s {
                    "first" => Ok(InstanceSel::Nth(0)),
                    "last" => Ok(InstanceSel::Last),
                    "any" => Ok(InstanceSel::Any),
                    "each" => Ok(InstanceSel::Each),
                    _ => Err(E::custom(format!(
                        "invalid instance \"{s}\": use a number, `first`, `last`, `any` or `each`"
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for InstanceSel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InstanceSel::Nth(n) => s.serialize_u32(*n),
            InstanceSel::Any => s.serialize_str("any"),
            InstanceSel::Last => s.serialize_str("last"),
            InstanceSel::Each => s.serialize_str("each"),
        }
    }
}

impl JsonSchema for InstanceSel {
    fn schema_name() -> Cow<'static, str> {
        "Instance".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Container instance: 0 = first run, n = after the n-th restart; or first/last/any; `each` in marks of a gap with forEachInstance.",
            "anyOf": [{"type": "integer", "minimum": 0}, {"enum": ["first", "last", "any", "each"]}]
        })
    }
}

/// Which matching occurrence: `first` (default), `last`, or a 1-based number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Occurrence {
    #[default]
    First,
    Last,
    Nth(u32),
}

impl fmt::Display for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Occurrence::First => f.write_str("first"),
            Occurrence::Last => f.write_str("last"),
            Occurrence::Nth(n) => write!(f, "#{n}"),
        }
    }
}

impl Occurrence {
    /// Picks from matches in time order.
    pub fn pick<T: Clone>(&self, items: &[T]) -> Option<T> {
        match self {
            Occurrence::First => items.first().cloned(),
            Occurrence::Last => items.last().cloned(),
            Occurrence::Nth(n) => items.get((*n as usize).checked_sub(1)?).cloned(),
        }
    }
}

impl<'de> Deserialize<'de> for Occurrence {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Occurrence;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an occurrence: `first`, `last` or a number from 1")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Occurrence, E> {
                match u32::try_from(v) {
                    Ok(n) if n >= 1 => Ok(Occurrence::Nth(n)),
                    _ => Err(E::custom(format!("invalid occurrence {v}: counts from 1"))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Occurrence, E> {
                Err(E::custom(format!("invalid occurrence {v}: counts from 1")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Occurrence, E> {
                match s {
                    "first" => Ok(Occurrence::First),
                    "last" => Ok(Occurrence::Last),
                    _ => Err(E::custom(format!(
                        "invalid occurrence \"{s}\": use `first`, `last` or a number from 1"
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Occurrence {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Occurrence::First => s.serialize_str("first"),
            Occurrence::Last => s.serialize_str("last"),
            Occurrence::Nth(n) => s.serialize_u32(*n),
        }
    }
}

impl JsonSchema for Occurrence {
    fn schema_name() -> Cow<'static, str> {
        "Occurrence".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "integer", "minimum": 1}, {"enum": ["first", "last"]}]})
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;

    #[test]
    fn template_errors_name_the_variable() {
        let e = Pattern::check("a${pod.nope}").unwrap_err();
        assert!(matches!(e, PatternError::Template(TemplateError::Unknown { .. })));
        assert!(
            e.to_string()
                .starts_with("unknown template variable `${pod.nope}` (known: ${pod.name}, "),
            "{e}"
        );
        let e = Pattern::check("a${pod.name").unwrap_err();
        assert_eq!(e.to_string(), "unterminated template variable in \"a${pod.name\"");
        let p = Pattern {
            source: "${pod.ip}".into(),
        };
        let e = p.compile(&|_| None).unwrap_err();
        assert_eq!(e.to_string(), "template variable `${pod.ip}` has no observed value");
    }
}
