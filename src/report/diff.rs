//! Comparing two runs (`DiffReport`): verdict changes per case (pass→fail is a regression),
//! measured timings that moved beyond a threshold, and the two cluster fingerprints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cluster::Fingerprint;
use crate::results::{CaseReport, CaseStatus, RunSummary};
use crate::util::fmt_secs;

/// When a timing change counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Threshold {
    /// Relative change of the median, in percent (with `min_change` as a noise floor).
    Percent(f64),
    /// Absolute change of the median, in seconds.
    Seconds(f64),
}

impl std::str::FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(p) = s.trim().strip_suffix('%') {
            return p
                .trim()
                .parse::<f64>()
                .map(Threshold::Percent)
                .map_err(|_| format!("invalid percentage `{s}`"));
        }
        humantime::parse_duration(s.trim())
            .map(|d| Threshold::Seconds(d.as_secs_f64()))
            .map_err(|_| format!("invalid threshold `{s}`: use e.g. `20%` or `500ms`"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    Same,
    /// passed/flaky before, failed/errored after.
    Regression,
    Fixed,
    New,
    Removed,
    /// Any other status change (e.g. ignored ↔ passed).
    Changed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimingChange {
    pub label: String,
    pub index: usize,
    pub position: usize,
    pub before: f64,
    pub after: f64,
    pub delta: f64,
    /// Relative change in percent (None when `before` is 0).
    pub percent: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictFlip {
    pub index: usize,
    pub kind: String,
    pub before: String,
    pub after: String,
    pub evidence: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseDiff {
    pub case: String,
    pub before: Option<CaseStatus>,
    pub after: Option<CaseStatus>,
    pub change: Change,
    pub verdict_flips: Vec<VerdictFlip>,
    pub timing: Vec<TimingChange>,
}

impl CaseDiff {
    pub fn is_regression(&self) -> bool {
        self.change == Change::Regression
            || self
                .verdict_flips
                .iter()
                .any(|f| f.before == "pass" && f.after != "pass")
            || !self.timing.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffReport {
    pub before: String,
    pub after: String,
    pub before_fingerprint: Fingerprint,
    pub after_fingerprint: Fingerprint,
    pub threshold: Threshold,
    pub cases: Vec<CaseDiff>,
    pub regressions: usize,
}

/// Reads `summary.json` from a run folder, or from the only run inside a reports folder.
pub fn load_summary(path: &Path) -> Result<(PathBuf, RunSummary), String> {
    let file = if path.join("summary.json").is_file() {
        path.join("summary.json")
    } else if path.is_file() {
        path.to_path_buf()
    } else {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("summary.json").is_file())
            .collect();
        runs.sort();
        match runs.as_slice() {
            [one] => one.join("summary.json"),
            [] => {
                return Err(format!(
                    "{}: no summary.json (give a run folder such as reports/<runid>)",
                    path.display()
                ));
            }
            many => {
                let names: Vec<_> = many.iter().map(|p| p.display().to_string()).collect();
                return Err(format!(
                    "{}: several runs, pick one: {}",
                    path.display(),
                    names.join(", ")
                ));
            }
        }
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let s: RunSummary =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a podlife summary: {e}", file.display()))?;
    Ok((file, s))
}

fn outcome_name(o: crate::judge::Outcome) -> String {
    match o {
        crate::judge::Outcome::Pass => "pass",
        crate::judge::Outcome::Fail => "fail",
        crate::judge::Outcome::Undecided => "undecided",
    }
    .into()
}

fn good(s: CaseStatus) -> bool {
    matches!(s, CaseStatus::Passed | CaseStatus::Flaky)
}

fn bad(s: CaseStatus) -> bool {
    matches!(s, CaseStatus::Failed | CaseStatus::Error)
}

/// Compares two runs. `min_change` (seconds) keeps near-zero values from tripping a percentage.
pub fn diff(before: &RunSummary, after: &RunSummary, threshold: Threshold, min_change: f64) -> DiffReport {
    let index = |s: &RunSummary| -> BTreeMap<String, CaseReport> {
        s.cases.iter().map(|c| (c.full_name(), c.clone())).collect()
    };
    let (b, a) = (index(before), index(after));
    let mut names: Vec<&String> = b.keys().chain(a.keys()).collect();
    names.sort();
    names.dedup();
    let mut cases = vec![];
    for name in names {
        let (cb, ca) = (b.get(name), a.get(name));
        let change = match (cb.map(|c| c.status), ca.map(|c| c.status)) {
            (None, Some(_)) => Change::New,
            (Some(_), None) => Change::Removed,
            (Some(x), Some(y)) if good(x) && bad(y) => Change::Regression,
            (Some(x), Some(y)) if bad(x) && good(y) => Change::Fixed,
            (Some(x), Some(y)) if x == y => Change::Same,
            (Some(CaseStatus::Passed), Some(CaseStatus::Flaky))
            | (Some(CaseStatus::Flaky), Some(CaseStatus::Passed)) => Change::Same,
            _ => Change::Changed,
        };
        let mut flips = vec![];
        let mut timing = vec![];
        if let (Some(cb), Some(ca)) = (cb, ca) {
            if let (Some(vb), Some(va)) = (cb.last(), ca.last()) {
                for v in &va.verdicts {
                    if let Some(old) = vb.verdicts.iter().find(|o| o.index == v.index)
                        && old.outcome != v.outcome
                    {
                        flips.push(VerdictFlip {
                            index: v.index,
                            kind: v.kind.clone(),
                            before: outcome_name(old.outcome),
                            after: outcome_name(v.outcome),
                            evidence: v.evidence.clone(),
                        });
                    }
                }
            }
            for m in &ca.measurements {
                let Some(old) = cb.measurements.iter().find(|o| o.key() == m.key()) else {
                    continue;
                };
                let delta = m.median - old.median;
                let percent = (old.median.abs() > 1e-9).then(|| delta / old.median.abs() * 100.0);
                let beyond = match threshold {
                    Threshold::Seconds(s) => delta.abs() > s,
                    Threshold::Percent(p) => delta.abs() >= min_change && percent.is_none_or(|x| x.abs() > p),
                };
                if beyond {
                    timing.push(TimingChange {
                        label: m.label.clone(),
                        index: m.index,
                        position: m.position,
                        before: old.median,
                        after: m.median,
                        delta,
                        percent,
                    });
                }
            }
        }
        cases.push(CaseDiff {
            case: name.clone(),
            before: cb.map(|c| c.status),
            after: ca.map(|c| c.status),
            change,
            verdict_flips: flips,
            timing,
        });
    }
    let regressions = cases.iter().filter(|c| c.is_regression()).count();
    DiffReport {
        before: before.run_id.clone(),
        after: after.run_id.clone(),
        before_fingerprint: before.fingerprint.clone(),
        after_fingerprint: after.fingerprint.clone(),
        threshold,
        cases,
        regressions,
    }
}

fn status_name(s: Option<CaseStatus>) -> String {
    s.map(|s| format!("{s:?}").to_lowercase()).unwrap_or_else(|| "—".into())
}

/// The human table: fingerprints side by side, then every case that changed.
pub fn render_table(d: &DiffReport) -> String {
    let mut out = String::new();
    let fb = d.before_fingerprint.properties();
    let fa = d.after_fingerprint.properties();
    let mut keys: Vec<&String> = fb.iter().map(|(k, _)| k).chain(fa.iter().map(|(k, _)| k)).collect();
    keys.sort();
    keys.dedup();
    let get = |v: &[(String, String)], k: &str| {
        v.iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "—".into())
    };
    let (head_b, head_a) = (format!("before ({})", d.before), format!("after ({})", d.after));
    out.push_str(&format!("{:<28} {head_b:<34} {head_a}\n", "fingerprint"));
    for k in keys {
        let (x, y) = (get(&fb, k), get(&fa, k));
        let mark = if x != y { "  *" } else { "" };
        out.push_str(&format!("{k:<28} {x:<34} {y}{mark}\n"));
    }
    out.push('\n');
    let changed: Vec<&CaseDiff> = d
        .cases
        .iter()
        .filter(|c| c.change != Change::Same || c.is_regression())
        .collect();
    if changed.is_empty() {
        out.push_str("no verdict changed; no timing moved beyond the threshold\n");
    } else {
        out.push_str(&format!(
            "{:<52} {:<12} {:<12} {}\n",
            "case", "before", "after", "change"
        ));
        for c in changed {
            let change = if c.is_regression() {
                "REGRESSION".to_string()
            } else {
                format!("{:?}", c.change).to_lowercase()
            };
            out.push_str(&format!(
                "{:<52} {:<12} {:<12} {change}\n",
                c.case,
                status_name(c.before),
                status_name(c.after)
            ));
            for f in &c.verdict_flips {
                out.push_str(&format!(
                    "    [{}] {} {} → {}: {}\n",
                    f.index, f.kind, f.before, f.after, f.evidence
                ));
            }
            for t in &c.timing {
                let pct = t.percent.map(|p| format!(" ({p:+.1}%)")).unwrap_or_default();
                out.push_str(&format!(
                    "    [{}] {}: {} → {}{pct}\n",
                    t.index,
                    t.label,
                    fmt_secs(t.before),
                    fmt_secs(t.after)
                ));
            }
        }
    }
    let threshold = match d.threshold {
        Threshold::Percent(p) => format!("{p}%"),
        Threshold::Seconds(s) => fmt_secs(s),
    };
    out.push_str(&format!(
        "\n{} cases compared, {} regression{} (timing threshold {threshold})\n",
        d.cases.len(),
        d.regressions,
        if d.regressions == 1 { "" } else { "s" }
    ));
    out
}

/// The diff as JUnit: one testcase per case, a failure per regression.
pub fn render_junit(d: &DiffReport) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut r = Report::new("podlife-diff");
    let mut ts = TestSuite::new(format!("{} → {}", d.before, d.after));
    for c in &d.cases {
        let status = if c.is_regression() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let mut lines = vec![format!("{} → {}", status_name(c.before), status_name(c.after))];
            lines.extend(
                c.verdict_flips
                    .iter()
                    .map(|f| format!("{} {} → {}: {}", f.kind, f.before, f.after, f.evidence)),
            );
            lines.extend(
                c.timing
                    .iter()
                    .map(|t| format!("{}: {} → {}", t.label, fmt_secs(t.before), fmt_secs(t.after))),
            );
            s.set_message(lines.join("; "));
            s
        } else {
            TestCaseStatus::success()
        };
        ts.add_test_case(TestCase::new(c.case.as_str(), status));
    }
    r.add_test_suite(ts);
    r.to_string().unwrap_or_default()
}
