//! Loading and validating suites (`load_suites` → `Suite`/`LoadedCase`, or a list of `Diag`):
//! everything is checked offline, and every problem is reported as `file:line:col: path: message`.

mod diag;
mod discover;
mod manifest;
mod refs;
mod templates;
mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::model::*;
use super::types::InstanceSel;

pub use diag::{Diag, parse_yaml};
pub use discover::discover;
use manifest::load_manifest;
pub use manifest::project_root;
use refs::Refs;
pub use refs::builtin_mark;
pub use templates::BUILTIN_IMAGES;
use templates::{collect_images, substitute, unknown_template};
use validate::{check_ephemeral, check_object, check_patch, check_pod};

/// The longest `gracePeriodSeconds` a delete step may ask for: a grace period longer than the
/// longest case timeout (`MAX_DURATION`, 24 h) could never be seen to end within the case. The
/// API takes it as a 64-bit integer, but podlife must never send a value it had to cut (the
/// kube client's field is 32 bits: 4294967296 once went out as 0, "kill now").
pub const MAX_GRACE_SECONDS: i64 = 24 * 3600;

/// A container of the pod manifest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ContainerInfo {
    pub name: String,
    pub kind: ContainerKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContainerKind {
    Init,
    /// An init container with `restartPolicy: Always` (native sidecar).
    Sidecar,
    Regular,
    /// Added to the running pod by an `ephemeral` step (`spec.ephemeralContainers`); not part of
    /// kubectl's READY and STATUS columns.
    Ephemeral,
}

/// Kinds a case may create beside its pod (`objects:`). Each is a namespaced core/v1 object
/// that a pod consumes on the node (env, volumes, service links) and that goes with the case
/// namespace. Everything else is refused: a workload (Deployment, Job, ...) would start pods
/// podlife does not observe, RBAC objects or a ServiceAccount would change what the pod may do
/// beyond what the case shows, and cluster-scoped objects would outlive the namespace.
pub const OBJECT_KINDS: &[&str] = &["ConfigMap", "Secret", "Service"];

/// An auxiliary object of a case (`objects:`), validated: created before the pod.
#[derive(Clone, Debug, PartialEq)]
pub struct AuxObject {
    /// `ConfigMap`, `Secret` or `Service`.
    pub kind: String,
    pub name: String,
    /// The object as written (its namespace is replaced by the case namespace when applied).
    pub value: serde_json::Value,
    pub path: PathBuf,
}

impl AuxObject {
    /// `Kind/name`, as actions and recordings name it.
    pub fn id(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// A validated case, ready to run or judge.
#[derive(Clone, Debug)]
pub struct LoadedCase {
    pub suite: String,
    pub spec: Case,
    /// The pod manifest with `${image.*}` templates still in place (see `render_pod`).
    pub pod: serde_json::Value,
    pub manifest_path: Option<PathBuf>,
    /// Auxiliary objects, applied in this order before the pod.
    pub objects: Vec<AuxObject>,
    /// The object of each `object` step, by step index (validated like `objects`).
    pub step_objects: BTreeMap<usize, AuxObject>,
    pub containers: Vec<ContainerInfo>,
    /// Suite-declared images (`defaults.images`) over the built-in ones.
    pub images: BTreeMap<String, String>,
    pub min_server_version: Option<(u32, u32)>,
    pub timeout: std::time::Duration,
    pub wait_timeout: std::time::Duration,
    pub tags: Vec<String>,
}

impl LoadedCase {
    pub fn name(&self) -> &str {
        &self.spec.name.value
    }

    /// `suite::case`, the name filters and reports use.
    pub fn full_name(&self) -> String {
        format!("{}::{}", self.suite, self.spec.name.value)
    }

    /// The images this case needs after overrides (`name → reference`).
    pub fn images_used(&self, overrides: &BTreeMap<String, String>) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        collect_images(&self.render_pod(overrides), &mut out);
        // Images a `patch` step switches to, or an `ephemeral` step runs, must be pre-loaded too.
        for s in &self.spec.steps {
            match &s.value {
                Step::Patch(p) => {
                    if let Some(spec) = self.patch_body(p, overrides).get("spec") {
                        collect_images(&serde_json::json!({ "spec": spec }), &mut out);
                    }
                }
                Step::Ephemeral(e) => {
                    let c = self.ephemeral_body(e, overrides);
                    collect_images(&serde_json::json!({ "spec": { "ephemeralContainers": [c] } }), &mut out);
                }
                _ => {}
            }
        }
        out
    }

    /// The container an `ephemeral` step adds, images rendered like the pod's.
    pub fn ephemeral_body(&self, e: &EphemeralStep, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut c = e.container.value.clone();
        substitute(&mut c, &images);
        c
    }

    /// The strategic merge patch a `patch` step sends, images rendered like the pod's.
    pub fn patch_body(&self, p: &PatchStep, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let init = |name: &str| {
            self.containers
                .iter()
                .any(|c| c.name == name && c.kind != ContainerKind::Regular)
        };
        let render = |s: &str| {
            let mut v = serde_json::Value::String(s.to_string());
            substitute(&mut v, &images);
            v.as_str().unwrap_or(s).to_string()
        };
        p.strategic_patch(&init, &render)
    }

    /// The pod manifest with `${image.NAME}` replaced (overrides win over suite and built-ins).
    pub fn render_pod(&self, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut pod = self.pod.clone();
        substitute(&mut pod, &images);
        pod
    }
}

/// A loaded suite file.
#[derive(Clone, Debug)]
pub struct Suite {
    pub path: PathBuf,
    pub file: SuiteFile,
    pub cases: Vec<LoadedCase>,
}

impl Suite {
    pub fn name(&self) -> &str {
        &self.file.name.value
    }
}

/// Loads and validates suites. Returns every problem found, across all files.
pub fn load_suites(paths: &[PathBuf]) -> Result<Vec<Suite>, Vec<Diag>> {
    let files = discover(paths)?;
    let mut suites = vec![];
    let mut errors = vec![];
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for f in files {
        match load_suite_file(&f) {
            Ok(s) => {
                let label = f.display().to_string();
                if let Some(prev) = names.insert(s.name().to_string(), label.clone()) {
                    errors.push(Diag {
                        file: label,
                        line: s.file.name.line,
                        col: s.file.name.col,
                        path: "name".into(),
                        message: format!("duplicate suite name `{}` (also in {prev})", s.name()),
                    });
                }
                suites.push(s);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    // Cases of different suites must not map to one namespace name (one would delete the other's).
    errors.extend(super::naming::stem_collisions(&suites));
    if errors.is_empty() {
        Ok(suites)
    } else {
        errors.sort();
        errors.dedup();
        Err(errors)
    }
}

struct Ctx<'a> {
    file: &'a str,
    errors: Vec<Diag>,
}

impl Ctx<'_> {
    fn err<T>(&mut self, at: &Loc<T>, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Diag {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            path: path.into(),
            message: message.into(),
        });
    }
}

/// Loads one suite file and validates it.
pub fn load_suite_file(path: &Path) -> Result<Suite, Vec<Diag>> {
    let file = path.display().to_string();
    let text = crate::files::read_string(path, crate::files::SUITE).map_err(|e| {
        vec![Diag {
            file: file.clone(),
            line: 0,
            col: 0,
            path: String::new(),
            message: e.problem.to_string(),
        }]
    })?;
    let suite: SuiteFile = parse_yaml(&text, &file).map_err(|d| vec![d])?;
    let mut ctx = Ctx {
        file: &file,
        errors: vec![],
    };
    check_name(&mut ctx, &suite.name, "name");

    let mut images: BTreeMap<String, String> = BUILTIN_IMAGES
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    images.extend(suite.defaults.images.clone());
    let timeout = suite
        .defaults
        .timeout
        .map(|d| d.0)
        .unwrap_or(std::time::Duration::from_secs(120));
    let wait_timeout = suite
        .defaults
        .wait_timeout
        .map(|d| d.0)
        .unwrap_or(std::time::Duration::from_secs(60));

    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut cases = vec![];
    let base = path.parent().unwrap_or(Path::new("."));
    for (i, case) in suite.cases.iter().enumerate() {
        let p = format!("cases[{i}]");
        check_name(&mut ctx, &case.name, &format!("{p}.name"));
        if let Some(line) = seen.insert(case.name.value.clone(), case.name.line) {
            ctx.err(
                &case.name,
                format!("{p}.name"),
                format!("duplicate case name `{}` (first at line {line})", case.name.value),
            );
        }
        if let Some(c) = load_case(&mut ctx, base, &suite, case, &p, &images, timeout, wait_timeout) {
            cases.push(c);
        }
    }
    if suite.cases.is_empty() {
        ctx.err(&suite.cases, "cases", "a suite needs at least one case");
    }
    if ctx.errors.is_empty() {
        Ok(Suite {
            path: path.to_path_buf(),
            file: suite,
            cases,
        })
    } else {
        Err(ctx.errors)
    }
}

fn check_name(ctx: &mut Ctx, name: &Loc<String>, path: &str) {
    let n = &name.value;
    let ok = !n.is_empty()
        && n.len() <= 40
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-');
    if !ok {
        ctx.err(
            name,
            path,
            format!(
                "invalid name \"{n}\": use 1-40 characters of a-z, 0-9 and `-` (it becomes part of a namespace name)"
            ),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn load_case(
    ctx: &mut Ctx,
    base: &Path,
    suite: &SuiteFile,
    case: &Case,
    p: &str,
    images: &BTreeMap<String, String>,
    timeout: std::time::Duration,
    wait_timeout: std::time::Duration,
) -> Option<LoadedCase> {
    let errors_before = ctx.errors.len();
    let (pod, manifest_path) = match (&case.manifest, &case.pod) {
        (Some(_), Some(pod)) => {
            ctx.err(pod, format!("{p}.pod"), "give either `manifest` or `pod`, not both");
            return None;
        }
        (None, None) => {
            ctx.err(
                &case.name,
                p.to_string(),
                "missing `manifest` (a path under manifests/) or inline `pod`",
            );
            return None;
        }
        (Some(m), None) => match load_manifest(base, m) {
            Ok((v, path)) => (v, Some(path)),
            Err(msg) => {
                ctx.err(m, format!("{p}.manifest"), msg);
                return None;
            }
        },
        (None, Some(pod)) => (pod.value.clone(), None),
    };
    let at: Loc<()> = match (&case.manifest, &case.pod) {
        (Some(m), _) => Loc {
            value: (),
            line: m.line,
            col: m.col,
        },
        (_, Some(pod)) => Loc {
            value: (),
            line: pod.line,
            col: pod.col,
        },
        _ => Loc::new(()),
    };
    let field = if case.manifest.is_some() { "manifest" } else { "pod" };
    let mut containers = match check_pod(&pod, images) {
        Ok(c) => c,
        Err(msg) => {
            let where_ = manifest_path
                .as_ref()
                .map(|m| format!("{}: ", m.display()))
                .unwrap_or_default();
            ctx.err(&at, format!("{p}.{field}"), format!("{where_}{msg}"));
            return None;
        }
    };

    let min_server_version = case.min_server_version.as_ref().and_then(|v| match parse_version(v) {
        Some(x) => Some(x),
        None => {
            ctx.err(
                v,
                format!("{p}.minServerVersion"),
                format!("invalid version \"{}\": use MAJOR.MINOR, e.g. \"1.29\"", v.value),
            );
            None
        }
    });

    let mut objects: Vec<AuxObject> = vec![];
    for (i, o) in case.objects.iter().enumerate() {
        let path = format!("{p}.objects[{i}]");
        let loaded = load_manifest(base, o).and_then(|(v, file)| {
            check_object(&v)
                .map(|(kind, name)| AuxObject {
                    kind,
                    name,
                    value: v,
                    path: file.clone(),
                })
                .map_err(|m| format!("{}: {m}", file.display()))
        });
        match loaded {
            Ok(obj) => {
                if let Some(first) = objects.iter().position(|x| x.id() == obj.id()) {
                    ctx.err(
                        o,
                        path,
                        format!("{} is also objects[{first}]: each object once", obj.id()),
                    );
                } else {
                    objects.push(obj);
                }
            }
            Err(msg) => ctx.err(o, path, msg),
        }
    }

    // Ephemeral containers of `ephemeral` steps are containers expectations may name.
    for (i, s) in case.steps.iter().enumerate() {
        if let Step::Ephemeral(e) = &s.value {
            match check_ephemeral(&e.container.value, images, &containers) {
                Ok(name) => containers.push(ContainerInfo {
                    name,
                    kind: ContainerKind::Ephemeral,
                }),
                Err(m) => ctx.err(&e.container, format!("{p}.steps[{i}].ephemeral.container"), m),
            }
        }
    }

    // `object` steps: each names a ConfigMap or Secret; an apply updates one of `objects:` or
    // creates one later, a delete removes one the case created (never anything else).
    let mut step_objects: BTreeMap<usize, AuxObject> = BTreeMap::new();
    let mut present: Vec<String> = objects.iter().map(|o| o.id()).collect();
    let mut exec_names: BTreeSet<String> = BTreeSet::new();
    for (i, s) in case.steps.iter().enumerate() {
        match &s.value {
            Step::Object(o) => {
                let sp = format!("{p}.steps[{i}].object");
                let (m, delete) = match (&o.apply, &o.delete) {
                    (Some(m), None) => (m, false),
                    (None, Some(m)) => (m, true),
                    _ => {
                        ctx.err(
                            s,
                            sp,
                            "give `apply: PATH` (update, or create later) or `delete: PATH` (an object this case created), one of them",
                        );
                        continue;
                    }
                };
                let field = format!("{sp}.{}", if delete { "delete" } else { "apply" });
                let loaded = load_manifest(base, m).and_then(|(v, file)| {
                    check_object(&v)
                        .map(|(kind, name)| AuxObject {
                            kind,
                            name,
                            value: v,
                            path: file.clone(),
                        })
                        .map_err(|e| format!("{}: {e}", file.display()))
                });
                let obj = match loaded {
                    Ok(o) if o.kind == "Service" => {
                        ctx.err(m, field, "an `object` step changes a ConfigMap or Secret; a Service's environment is read once, when a container starts");
                        continue;
                    }
                    Ok(o) => o,
                    Err(e) => {
                        ctx.err(m, field, e);
                        continue;
                    }
                };
                let id = obj.id();
                if delete {
                    match present.iter().position(|x| *x == id) {
                        Some(at) => {
                            present.remove(at);
                        }
                        None => ctx.err(
                            m,
                            field,
                            format!("{id} is not an object this case created by then (`objects:` or an earlier `object: {{apply}}`): podlife deletes only what its run created"),
                        ),
                    }
                } else if !present.contains(&id) {
                    present.push(id);
                }
                step_objects.insert(i, obj);
            }
            Step::Exec(x) => {
                let sp = format!("{p}.steps[{i}].exec");
                let n = x.name.value.as_str();
                let ok = !n.is_empty()
                    && n.len() <= 63
                    && n.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
                if !ok {
                    ctx.err(
                        &x.name,
                        format!("{sp}.name"),
                        format!("invalid name \"{n}\": use 1-63 characters of a-z, 0-9 and `-`"),
                    );
                } else if !exec_names.insert(n.to_string()) {
                    ctx.err(
                        &x.name,
                        format!("{sp}.name"),
                        format!("`{n}` names another exec step too: each exec step its own name"),
                    );
                }
                if !containers.iter().any(|c| c.name == x.container.value) {
                    let known = containers
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    ctx.err(
                        &x.container,
                        format!("{sp}.container"),
                        format!("unknown container `{}` (the pod has: {known})", x.container.value),
                    );
                }
                if x.command.value.first().is_none_or(|c| c.is_empty()) {
                    ctx.err(
                        &x.command,
                        format!("{sp}.command"),
                        "the command is empty: give the program and its arguments, e.g. [/bin/echo, marco]",
                    );
                }
                if let Some(t) = x.timeout
                    && t.0.is_zero()
                {
                    ctx.err(s, format!("{sp}.timeout"), "must be more than 0s");
                }
            }
            _ => {}
        }
    }

    let names: BTreeSet<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let mut refs = Refs {
        ctx,
        containers: &names,
        marks: &case.marks,
        all: &containers,
        each: None,
        execs: &exec_names,
    };
    for (name, m) in &case.marks {
        refs.mark(m, &format!("{p}.marks.{name}"));
    }
    for (i, s) in case.steps.iter().enumerate() {
        let sp = format!("{p}.steps[{i}]");
        match &s.value {
            Step::WaitFor(w) => refs.mark_ref(&w.until, &format!("{sp}.waitFor.until")),
            Step::Delete(d) => {
                if let Some(g) = d.grace_period_seconds
                    && !(0..=MAX_GRACE_SECONDS).contains(&g)
                {
                    refs.ctx.err(
                        s,
                        format!("{sp}.delete.gracePeriodSeconds"),
                        if g < 0 {
                            format!("must be 0 or more, got {g}")
                        } else {
                            format!("must be at most {MAX_GRACE_SECONDS} (24h, the longest case timeout), got {g}")
                        },
                    );
                }
            }
            Step::Sleep(_) => {}
            Step::Patch(patch) => check_patch(&mut refs, s, patch, &sp, &pod, images),
            // Checked above, with the containers.
            Step::Ephemeral(_) | Step::Exec(_) | Step::Object(_) => {}
        }
    }
    // Steps run one after another inside the case timeout: a step that could still be waiting
    // when the case timeout fires would be cut short by it, and its "timed out" would name a
    // limit that never fired (status-crashloop waited "240s" in a 120s case).
    let case_timeout = case.timeout.map(|d| d.0).unwrap_or(timeout);
    let mut worst = std::time::Duration::ZERO;
    for (i, s) in case.steps.iter().enumerate() {
        let (took, what) = match &s.value {
            Step::WaitFor(w) => (w.timeout.map(|d| d.0).unwrap_or(wait_timeout), "waitFor timeout"),
            Step::Sleep(d) => (d.0, "sleep"),
            Step::Exec(x) => (x.timeout.map(|d| d.0).unwrap_or(DEFAULT_EXEC_TIMEOUT), "exec timeout"),
            _ => continue,
        };
        worst = worst.saturating_add(took);
        if worst > case_timeout {
            refs.ctx.err(
                s,
                format!("{p}.steps[{i}]"),
                format!(
                    "the steps up to this {what} may take {} but the case timeout is {}: raise the case's `timeout` (or the suite's `defaults.timeout`) to at least that, or shorten the steps",
                    crate::util::fmt_secs(worst.as_secs_f64()),
                    crate::util::fmt_secs(case_timeout.as_secs_f64())
                ),
            );
            break;
        }
    }
    if case.expect.is_empty() {
        refs.ctx.err(
            &case.name,
            format!("{p}.expect"),
            "a case needs at least one expectation: without one it passes on any node and certifies nothing",
        );
    }
    for (i, e) in case.expect.iter().enumerate() {
        let at = Loc {
            value: (),
            line: e.line,
            col: e.col,
        };
        refs.expectation(e, &format!("{p}.expect[{i}]"), &at);
    }
    if ctx.errors.len() > errors_before {
        return None;
    }
    let mut tags = suite.tags.clone();
    tags.extend(case.tags.iter().cloned());
    Some(LoadedCase {
        suite: suite.name.value.clone(),
        spec: case.clone(),
        pod,
        manifest_path,
        objects,
        step_objects,
        containers,
        images: images.clone(),
        min_server_version,
        timeout: case.timeout.map(|d| d.0).unwrap_or(timeout),
        wait_timeout,
        tags,
    })
}

/// Parses `1.29`, `v1.29`, `1.29.3` into (major, minor).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let v = v.trim().trim_start_matches('v');
    let mut it = v.split('.');
    let major = it.next()?.parse().ok()?;
    let minor_raw = it.next()?;
    // Server minors can carry a `+` (e.g. `32+` on managed clusters).
    let minor = minor_raw.trim_end_matches('+').parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_servers_report_them() {
        assert_eq!(parse_version("1.29"), Some((1, 29)));
        assert_eq!(parse_version("v1.29.3"), Some((1, 29)));
        assert_eq!(parse_version(" v1.32+ "), Some((1, 32)));
        assert_eq!(parse_version("1"), None);
        assert_eq!(parse_version("one.two"), None);
        assert_eq!(parse_version(""), None);
    }
}
