//! The upstream conformance list (`UpstreamRow`, from `suites/upstream-conformance.tsv`) and its
//! mapping to the cases that name an upstream test in `upstream:`.

use std::path::PathBuf;

use super::Suite;

/// One row of the upstream conformance list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamRow {
    pub testname: String,
    /// `None` when a pod on a node can show the behaviour; else why podlife does not apply.
    pub not_applicable: Option<String>,
    /// For an applicable row: why no case covers it (yet), shown while none claims it.
    pub note: Option<String>,
}

/// Why the upstream conformance list cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamListError {
    #[error(transparent)]
    Read(#[from] crate::files::FileError),
    /// A malformed line (1-based).
    #[error("{}:{line}: {why}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        why: UpstreamLineProblem,
    },
}

/// What is wrong with a line of the upstream conformance list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamLineProblem {
    #[error("expected `testname<TAB>pod|n/a<TAB>reason`")]
    Columns,
    #[error("`n/a` needs a reason")]
    NoReason,
    #[error("scope `{0}`: use `pod` or `n/a`")]
    Scope(String),
}

/// Reads `testname<TAB>pod|n/a<TAB>reason` lines (`#` comments and blank lines skipped).
pub fn read_upstream_list(path: &std::path::Path) -> Result<Vec<UpstreamRow>, UpstreamListError> {
    let text = crate::files::read_string(path, crate::files::LIST)?;
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        let bad = |why| UpstreamListError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            why,
        };
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, scope, reason) = match cols.as_slice() {
            [n, s] => (*n, *s, ""),
            [n, s, r, ..] => (*n, *s, *r),
            _ => return Err(bad(UpstreamLineProblem::Columns)),
        };
        let not_applicable = match scope.trim() {
            "pod" => None,
            "n/a" if !reason.trim().is_empty() => Some(reason.trim().to_string()),
            "n/a" => return Err(bad(UpstreamLineProblem::NoReason)),
            other => return Err(bad(UpstreamLineProblem::Scope(other.to_string()))),
        };
        let note = (not_applicable.is_none() && !reason.trim().is_empty()).then(|| reason.trim().to_string());
        out.push(UpstreamRow {
            testname: name.trim().to_string(),
            not_applicable,
            note,
        });
    }
    Ok(out)
}

/// The mapping table: upstream testname → podlife case(s) → covered / not applicable / not covered,
/// ending with the one figure podlife states everywhere: covered of listed (`pod` rows a case claims
/// / all `pod` rows). "Covered" is what the suites claim; only a run that passes the cases certifies it.
pub(crate) fn upstream_table(suites: &[Suite], list: &std::path::Path) -> Result<String, UpstreamListError> {
    let rows = read_upstream_list(list)?;
    let mut by_name: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for c in suites.iter().flat_map(|s| &s.cases) {
        for u in &c.spec.upstream {
            by_name.entry(u.as_str()).or_default().push(c.full_name());
        }
    }
    let mut out = String::from("| upstream conformance test | podlife case | status |\n|---|---|---|\n");
    let (mut covered, mut listed) = (0, 0);
    for r in &rows {
        let cases = by_name.get(r.testname.as_str()).cloned().unwrap_or_default();
        let status = match (&r.not_applicable, cases.is_empty()) {
            (Some(why), true) => format!("not applicable: {why}"),
            (Some(why), false) => format!("claimed, but listed as not applicable: {why}"),
            (None, false) => {
                listed += 1;
                covered += 1;
                "covered".to_string()
            }
            (None, true) => {
                listed += 1;
                match &r.note {
                    Some(why) => format!("NOT COVERED: {why}"),
                    None => "NOT COVERED".to_string(),
                }
            }
        };
        let shown = if cases.is_empty() {
            "—".to_string()
        } else {
            cases.join(", ")
        };
        out.push_str(&format!(
            "| {} | {shown} | {status} |\n",
            r.testname.replace('|', "\\|")
        ));
    }
    out.push_str(&format!(
        "\n{}; {} more listed as not applicable; a run certifies those whose cases all pass\n",
        figure(covered, listed),
        rows.len() - listed,
    ));
    let known: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.testname.as_str()).collect();
    for u in by_name.keys().filter(|k| !known.contains(*k)) {
        out.push_str(&format!(
            "warning: a case names `{u}`, which is not in {}\n",
            list.display()
        ));
    }
    Ok(out)
}

/// The one upstream figure, worded the same in `list --upstream`, the run summary and README:
/// `pod` rows a case claims, of all `pod` rows of the list.
pub fn figure(covered: usize, listed: usize) -> String {
    format!("upstream conformance behaviours covered: {covered} of {listed} listed")
}

/// The applicable upstream testnames, from `upstream-conformance.tsv` in the first suites folder
/// (none when there is no such file: then the run does not report upstream coverage).
pub fn upstream_applicable(suites: &[PathBuf]) -> Vec<String> {
    let Some(dir) = suites.iter().find(|p| p.is_dir()) else {
        return vec![];
    };
    match read_upstream_list(&dir.join("upstream-conformance.tsv")) {
        Ok(rows) => rows
            .into_iter()
            .filter(|r| r.not_applicable.is_none())
            .map(|r| r.testname)
            .collect(),
        Err(_) => vec![],
    }
}
