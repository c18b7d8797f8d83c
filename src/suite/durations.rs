//! Typical case durations (`durations.tsv` beside the suites): what the scheduler orders the
//! cases by (longest first) and the plan predicts the wall time from. Never used to judge.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A malformed line of `durations.tsv`.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {why}")]
pub struct DurationsError {
    /// The file, named as `files::Names` names it.
    pub path: String,
    pub line: usize,
    pub why: &'static str,
}

/// Why `durations.tsv` beside the suites cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DurationsFileError {
    #[error(transparent)]
    Unreadable(#[from] crate::files::Unreadable),
    #[error(transparent)]
    Parse(#[from] DurationsError),
}

/// `suite::case` → typical duration of one attempt on a conformant node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Durations(BTreeMap<String, Duration>);

impl Durations {
    /// Parses `case<TAB>seconds` lines (`#` comments, blank lines and the header `case`, TAB, `seconds`
    /// are skipped). A malformed line is an error naming it: the file is part of the suites.
    pub fn parse(path: &str, text: &str) -> Result<Self, DurationsError> {
        let mut out = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') || line == "case\tseconds" {
                continue;
            }
            let bad = |why: &'static str| DurationsError {
                path: path.to_string(),
                line: i + 1,
                why,
            };
            let Some((case, secs)) = line.split_once('\t') else {
                return Err(bad("expected `suite::case<TAB>seconds`"));
            };
            if !case.contains("::") {
                return Err(bad("the case is named `suite::case`"));
            }
            let secs: f64 = secs.trim().parse().map_err(|_| bad("seconds: expected a number"))?;
            if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
                return Err(bad("seconds: between 0 and 86400"));
            }
            out.insert(case.to_string(), Duration::from_secs_f64(secs));
        }
        Ok(Durations(out))
    }

    /// `durations.tsv` in the first suites folder; none (every case scheduled by its timeout)
    /// when there is no such file. A file that cannot be read or parsed is an error naming its
    /// line (as `names` names the file): the file is part of the suites, and `validate` checks
    /// it too.
    pub fn beside(suites: &[PathBuf], names: &crate::files::Names) -> Result<Self, DurationsFileError> {
        let Some(dir) = suites.iter().find(|p| p.is_dir()) else {
            return Ok(Self::default());
        };
        let path = dir.join("durations.tsv");
        match crate::files::read_string_opt(&path, crate::files::LIST) {
            Ok(Some(text)) => Ok(Self::parse(&names.name(&path), &text)?),
            Ok(None) => Ok(Self::default()),
            Err(e) => Err(names.unreadable(e).into()),
        }
    }

    /// The typical duration of `suite::case`, if known.
    pub fn of(&self, full_name: &str) -> Option<Duration> {
        self.0.get(full_name).copied()
    }

    /// What the scheduler expects a case to take: its typical duration, else its timeout (a
    /// case never seen is assumed long, so it starts early rather than end the run late).
    pub fn expected(&self, full_name: &str, timeout: Duration) -> Duration {
        self.of(full_name).map_or(timeout, |d| d.min(timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cases_and_refuses_malformed_lines() {
        let p = "suites/durations.tsv";
        let d = Durations::parse(p, "# c\ncase\tseconds\na::b\t12\nc::d\t0.5\n").unwrap();
        assert_eq!(d.of("a::b"), Some(Duration::from_secs(12)));
        assert_eq!(d.expected("c::d", Duration::from_secs(60)), Duration::from_millis(500));
        // Unknown: the timeout; known but longer than the timeout: the timeout.
        assert_eq!(d.expected("x::y", Duration::from_secs(60)), Duration::from_secs(60));
        assert_eq!(d.expected("a::b", Duration::from_secs(5)), Duration::from_secs(5));
        for bad in ["a::b 12", "ab\t12", "a::b\tx", "a::b\t-1", "a::b\tNaN", "a::b\t1e9"] {
            let e = Durations::parse(p, bad).unwrap_err().to_string();
            assert!(e.starts_with("suites/durations.tsv:1: "), "{bad}: {e}");
        }
    }
}
