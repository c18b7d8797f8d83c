//! Comparing two runs (`DiffReport`): status and verdict changes per case (passed → anything
//! else is a regression), measured timings told apart into noise and regression, and the two
//! cluster fingerprints.
//!
//! A timing change is a regression only when it exceeds the measurement's own precision plus
//! its noise (the larger of the noise model, [`noise_of`], and the spread seen across `--repeat`
//! samples) AND moves toward or past the bound of its expectation. Everything else that moved
//! is listed as `changed` (informational, exit 0). Each case's `change` field is the one the
//! table prints and the exit code counts, so table, JSON and exit code agree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::judge::measure::{MeasureInfo, Noise};
use crate::results::Fingerprint;
use crate::results::stats::MeasureStats;
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

/// A `--threshold` that is neither a percentage nor a duration.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error("invalid percentage `{0}`: use a finite, non-negative number such as `20%`")]
    Percent(String),
    #[error("invalid threshold `{0}`: use e.g. `20%` or `500ms`")]
    Neither(String),
}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;
    fn from_str(s: &str) -> Result<Self, ThresholdError> {
        if let Some(p) = s.trim().strip_suffix('%') {
            // `NaN%` parses as a float but compares false with everything: it would silently
            // turn the threshold off. Only a finite, non-negative percentage means something.
            return match p.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(Threshold::Percent(v)),
                _ => Err(ThresholdError::Percent(s.to_string())),
            };
        }
        humantime::parse_duration(s.trim())
            .map(|d| Threshold::Seconds(d.as_secs_f64()))
            .map_err(|_| ThresholdError::Neither(s.to_string()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    Same,
    /// Worse: a case that passed no longer passes (failed, error, interrupted, ignored, flaky or
    /// missing), a verdict that passed no longer does, or a timing moved beyond its noise toward
    /// or past the bound of its expectation.
    Regression,
    Fixed,
    New,
    Removed,
    /// Any other change (informational): e.g. ignored ↔ passed, or timings that moved within
    /// their noise or in a harmless direction.
    Changed,
}

/// Where a measurement's precision, bounds and noise class came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InfoSource {
    /// Recorded by the judge in the report.
    Report,
    /// Derived from the case's current suite definition (reports written before podlife recorded it).
    Suite,
    /// Neither: the change can only be informational.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimingChange {
    pub label: String,
    /// The expectation's kind (`gap`, `backoff`, ...; absent in diffs written before it was
    /// recorded).
    #[serde(default)]
    pub kind: Option<crate::judge::VerdictKind>,
    pub index: usize,
    pub position: usize,
    /// Medians over the repetitions.
    pub before: f64,
    pub after: f64,
    pub delta: f64,
    /// Relative change in percent (None when `before` is 0).
    pub percent: Option<f64>,
    /// Samples (repetitions) behind each median.
    pub before_samples: usize,
    pub after_samples: usize,
    /// How far the median may move without meaning anything: precision plus the larger of the
    /// noise model and the spread seen across repetitions (seconds).
    pub noise: f64,
    pub regression: bool,
    /// Why it is (or is not) a regression, in words.
    pub reason: String,
    pub info_source: InfoSource,
    /// The mechanism the value depends on (`judge::mechanism`); None when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_class: Option<Noise>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictFlip {
    pub index: usize,
    pub kind: crate::judge::VerdictKind,
    pub before: String,
    pub after: String,
    pub evidence: String,
}

impl VerdictFlip {
    pub(crate) fn is_regression(&self) -> bool {
        self.before == "pass" && self.after != "pass"
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseDiff {
    pub case: String,
    pub before: Option<CaseStatus>,
    pub after: Option<CaseStatus>,
    /// The overall change: `regression` when the status, a verdict or a timing regressed.
    pub change: Change,
    /// The change of the case status alone.
    pub status_change: Change,
    pub verdict_flips: Vec<VerdictFlip>,
    /// Timings that moved by at least `--min-change` (and `--threshold`, when given).
    pub timing: Vec<TimingChange>,
}

impl CaseDiff {
    pub(crate) fn is_regression(&self) -> bool {
        self.change == Change::Regression
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffReport {
    pub before: String,
    pub after: String,
    pub before_fingerprint: Fingerprint,
    pub after_fingerprint: Fingerprint,
    /// An extra floor a timing change must pass (`--threshold`), besides its noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Threshold>,
    /// Timing changes smaller than this are not listed (`--min-change`, seconds).
    pub min_change: f64,
    pub cases: Vec<CaseDiff>,
    /// Cases whose `change` is `regression`; the exit code is 1 when this is not 0.
    pub regressions: usize,
}

/// How `diff` compares timings.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Extra floor a timing change must exceed to count at all (besides its noise).
    pub threshold: Option<Threshold>,
    /// Timing changes below this are not listed (seconds).
    pub min_change: f64,
}

/// Case definitions (`suite::case` → case and pod manifest), to describe the measurements of
/// reports written before verdicts carried their precision and bounds.
pub(crate) type Definitions = BTreeMap<String, (crate::suite::model::Case, serde_json::Value)>;

/// The definitions of every case of the given suites.
pub(crate) fn definitions(suites: &[crate::suite::Suite]) -> Definitions {
    suites
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| (c.full_name(), (c.spec.clone(), c.pod.clone())))
        .collect()
}

/// The noise model: how much a measured value of each class moves from run to run on a
/// conformant node, and why (the mechanism's own table, `judge::mechanism`). Used as a floor even
/// with `--repeat` (a few samples can show less spread than the node really has). None: the value
/// is not node behaviour and is never compared.
pub(crate) fn noise_of(n: Noise) -> (Option<f64>, &'static str) {
    let m = crate::judge::mechanism::mechanism(n);
    (m.spread, m.name)
}

/// A run folder whose summary cannot be read: one line naming the path (as `files::Names`
/// names it).
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("{file}: {source}")]
    Folder { file: String, source: std::io::Error },
    #[error("{0}: no summary.json (give a run folder such as reports/<runid>)")]
    NoRun(String),
    #[error("{file}: several runs, pick one: {}", runs.join(", "))]
    SeveralRuns { file: String, runs: Vec<String> },
    #[error(transparent)]
    Unreadable(#[from] crate::files::Unreadable),
    #[error("{file}: not a podlife summary: {source}")]
    NotSummary { file: String, source: serde_json::Error },
}

/// Reads `summary.json` from a run folder, or from the only run inside a reports folder.
pub fn load_summary(path: &Path) -> Result<(PathBuf, RunSummary), SummaryError> {
    load_summary_named(path, &crate::files::Names::default())
}

/// `load_summary`, paths named in errors as `names` names them (a bundle's members as
/// `<bundle>:<member>`).
pub(crate) fn load_summary_named(
    path: &Path,
    names: &crate::files::Names,
) -> Result<(PathBuf, RunSummary), SummaryError> {
    let file = if path.join("summary.json").is_file() {
        path.join("summary.json")
    } else if path.is_file() {
        path.to_path_buf()
    } else {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| SummaryError::Folder {
                file: names.name(path),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("summary.json").is_file())
            .collect();
        runs.sort();
        match runs.as_slice() {
            [one] => one.join("summary.json"),
            [] => return Err(SummaryError::NoRun(names.name(path))),
            _ => {
                return Err(SummaryError::SeveralRuns {
                    file: names.name(path),
                    runs: runs.iter().map(|r| names.name(r)).collect(),
                });
            }
        }
    };
    let text = crate::files::read_string(&file, crate::files::SUMMARY).map_err(|e| names.unreadable(e))?;
    let s: RunSummary = serde_json::from_str(&text).map_err(|source| SummaryError::NotSummary {
        file: names.name(&file),
        source,
    })?;
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

/// 2 passed, 1 flaky (passed, but not every time), 0 anything else.
fn rank(s: CaseStatus) -> u8 {
    match s {
        CaseStatus::Passed => 2,
        CaseStatus::Flaky => 1,
        _ => 0,
    }
}

fn bad(s: CaseStatus) -> bool {
    matches!(
        s,
        CaseStatus::Failed | CaseStatus::Undecided | CaseStatus::Error | CaseStatus::Interrupted
    )
}

fn status_change(before: Option<CaseStatus>, after: Option<CaseStatus>) -> Change {
    match (before, after) {
        (None, None) => Change::Same,
        (None, Some(_)) => Change::New,
        // A case that passed and is missing now certified nothing: that is a regression.
        (Some(x), None) if rank(x) > 0 => Change::Regression,
        (Some(_), None) => Change::Removed,
        (Some(x), Some(y)) if x == y => Change::Same,
        (Some(x), Some(y)) if rank(x) > 0 && rank(y) < rank(x) => Change::Regression,
        (Some(x), Some(y)) if bad(x) && rank(y) > 0 => Change::Fixed,
        _ => Change::Changed,
    }
}

/// How far a value is inside its bounds (negative: outside); None without bounds.
fn margin(v: f64, info: &MeasureInfo) -> Option<f64> {
    [info.min.map(|lo| v - lo), info.max.map(|hi| hi - v)]
        .into_iter()
        .flatten()
        .reduce(f64::min)
}

/// Whether moving from `old` to `new` is a move toward (or past) a bound: away from the ideal
/// when there is one, else toward the nearer bound. Also says how, for the evidence.
fn worse(old: f64, new: f64, info: &MeasureInfo) -> (bool, String) {
    if let Some(ideal) = info.ideal {
        let (d_old, d_new) = ((old - ideal).abs(), (new - ideal).abs());
        let past = margin(new, info).is_some_and(|m| m < 0.0);
        return if d_new > d_old + 1e-9 {
            let how = if past { "past its bound" } else { "toward its bound" };
            (true, format!("away from {} and {how}", fmt_secs(ideal)))
        } else {
            (false, format!("closer to {}", fmt_secs(ideal)))
        };
    }
    match (margin(old, info), margin(new, info)) {
        (Some(mo), Some(mn)) if mn < mo - 1e-9 => {
            let how = if mn < 0.0 { "past" } else { "toward" };
            (true, format!("{how} its bound {}", bounds_text(info)))
        }
        (Some(_), Some(_)) => (false, format!("away from its bounds {}", bounds_text(info))),
        _ => (false, "its expectation has no bound".into()),
    }
}

fn bounds_text(info: &MeasureInfo) -> String {
    match (info.min, info.max) {
        (Some(a), Some(b)) => format!("{}..{}", fmt_secs(a), fmt_secs(b)),
        (Some(a), None) => format!("≥{}", fmt_secs(a)),
        (None, Some(b)) => format!("≤{}", fmt_secs(b)),
        (None, None) => "none".into(),
    }
}

/// Classifies one measurement's change; None when it moved less than the listing floor.
fn timing_change(
    old: &MeasureStats,
    new: &MeasureStats,
    info: (Option<MeasureInfo>, Option<MeasureInfo>),
    source: InfoSource,
    opts: &DiffOptions,
) -> Option<TimingChange> {
    let delta = new.median - old.median;
    let percent = (old.median.abs() > 1e-9).then(|| delta / old.median.abs() * 100.0);
    if delta.abs() < opts.min_change.max(1e-9) {
        return None;
    }
    let beyond_threshold = match opts.threshold {
        None => true,
        Some(Threshold::Seconds(s)) => delta.abs() > s,
        Some(Threshold::Percent(p)) => percent.is_none_or(|x| x.abs() > p),
    };
    if !beyond_threshold {
        return None;
    }
    let spread = (old.max - old.min).max(new.max - new.min);
    // One side described is enough: the other was measured the same way.
    let info = match info {
        (None, Some(a)) => (Some(a.clone()), Some(a)),
        (Some(b), None) => (Some(b.clone()), Some(b)),
        both => both,
    };
    let (regression, noise, reason, noise_class) = match info {
        (Some(ib), Some(ia)) => {
            // The two true values could be equal if the measured ones are within the sum of
            // their uncertainties on the facing sides.
            let precision = if delta > 0.0 {
                ib.above + ia.below
            } else {
                ib.below + ia.above
            };
            let (jitter, cause) = noise_of(ia.noise);
            let class = if ia.why.is_empty() {
                crate::judge::mechanism::mechanism(ia.noise).why.to_string()
            } else {
                ia.why.clone()
            };
            // Not node behaviour: listed so the reader sees it moved, never a regression.
            let Some(jitter) = jitter else {
                let reason = format!("not compared: {cause} ({class}): informational");
                return Some(change_of(old, new, source, (false, 0.0, reason, Some(ia.noise))));
            };
            let mut parts = vec![];
            if precision > 0.0 {
                parts.push(format!("precision {}", fmt_secs(precision)));
            }
            let jitter_used = jitter.max(spread);
            if spread > jitter {
                parts.push(format!("spread {} over repetitions", fmt_secs(spread)));
            } else {
                parts.push(format!("{cause} {}", fmt_secs(jitter)));
            }
            let noise = precision + jitter_used;
            let significant = delta.abs() > noise + 1e-9;
            let (w, how) = worse(old.median, new.median, &ia);
            let noise_text = format!("±{} ({})", fmt_secs(noise), parts.join(" + "));
            let reason = match (significant, w) {
                (true, true) => format!("beyond noise {noise_text}, {how}"),
                (true, false) => format!("beyond noise {noise_text}, but {how}"),
                (false, _) => format!("within noise {noise_text}"),
            };
            let reason = format!("{reason}; {cause}: {class}");
            (significant && w, noise, reason, Some(ia.noise))
        }
        _ => (
            false,
            0.0,
            "precision and bounds unknown (the report predates them and the case is not in the suites): informational"
                .to_string(),
            None,
        ),
    };
    Some(change_of(old, new, source, (regression, noise, reason, noise_class)))
}

/// One measurement's change, with its classification: whether it is a regression, the noise
/// it was held against, why, and the noise class.
fn change_of(
    old: &MeasureStats,
    new: &MeasureStats,
    source: InfoSource,
    (regression, noise, reason, noise_class): (bool, f64, String, Option<Noise>),
) -> TimingChange {
    let delta = new.median - old.median;
    TimingChange {
        label: new.label.clone(),
        kind: Some(new.kind),
        index: new.index,
        position: new.position,
        before: old.median,
        after: new.median,
        delta,
        percent: (old.median.abs() > 1e-9).then(|| delta / old.median.abs() * 100.0),
        before_samples: old.n,
        after_samples: new.n,
        noise,
        regression,
        reason,
        info_source: source,
        noise_class,
    }
}

/// Compares two runs. `defs` describes the measurements of reports that predate `measures`.
pub fn diff(before: &RunSummary, after: &RunSummary, opts: &DiffOptions, defs: &Definitions) -> DiffReport {
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
        let status_change = status_change(cb.map(|c| c.status), ca.map(|c| c.status));
        let mut flips = vec![];
        let mut timing = vec![];
        if let (Some(cb), Some(ca)) = (cb, ca) {
            if let (Some(vb), Some(va)) = (cb.last(), ca.last()) {
                for v in &va.verdicts {
                    if let Some(old) = vb.verdicts.iter().find(|o| o.same_subject(v))
                        && old.outcome != v.outcome
                    {
                        flips.push(VerdictFlip {
                            index: v.index,
                            kind: v.kind,
                            before: outcome_name(old.outcome),
                            after: outcome_name(v.outcome),
                            evidence: v.evidence.clone(),
                        });
                    }
                }
            }
            let def = defs.get(name);
            let derive = |m: &MeasureStats| {
                def.and_then(|(case, pod)| crate::judge::measure::static_info(case, pod, m.index, m.position, &m.label))
            };
            for m in &ca.measurements {
                let Some(old) = cb.measurements.iter().find(|o| o.same_as(m)) else {
                    continue;
                };
                let (source, info) = match (&old.info, &m.info) {
                    (None, None) => match derive(m) {
                        Some(i) => (InfoSource::Suite, (None, Some(i))),
                        None => (InfoSource::Unknown, (None, None)),
                    },
                    (x, y) => (InfoSource::Report, (x.clone(), y.clone())),
                };
                if let Some(t) = timing_change(old, m, info, source, opts) {
                    timing.push(t);
                }
            }
        }
        let regressed = status_change == Change::Regression
            || flips.iter().any(VerdictFlip::is_regression)
            || timing.iter().any(|t| t.regression);
        let change = if regressed {
            Change::Regression
        } else if status_change != Change::Same {
            status_change
        } else if !flips.is_empty() || !timing.is_empty() {
            Change::Changed
        } else {
            Change::Same
        };
        cases.push(CaseDiff {
            case: name.clone(),
            before: cb.map(|c| c.status),
            after: ca.map(|c| c.status),
            change,
            status_change,
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
        threshold: opts.threshold,
        min_change: opts.min_change,
        cases,
        regressions,
    }
}

pub(crate) fn status_name(s: Option<CaseStatus>) -> String {
    // The same words as summary.json and the console (`not-run`, not the Debug name `notrun`).
    s.map(|s| s.as_str().to_string()).unwrap_or_else(|| "—".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_named_as_in_the_other_reports() {
        assert_eq!(status_name(Some(CaseStatus::NotRun)), "not-run");
        assert_eq!(status_name(Some(CaseStatus::Undecided)), "undecided");
        assert_eq!(status_name(None), "—");
    }

    fn stats(values: &[f64]) -> MeasureStats {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        MeasureStats {
            index: 0,
            position: 0,
            kind: crate::judge::VerdictKind::Gap,
            label: "gap `a`→`b`".into(),
            n: v.len(),
            min: v[0],
            median: v[v.len() / 2],
            max: v[v.len() - 1],
            info: None,
            id: String::new(),
        }
    }

    fn info(noise: Noise, min: Option<f64>, max: Option<f64>, ideal: Option<f64>, precision: f64) -> MeasureInfo {
        MeasureInfo {
            below: precision,
            above: precision,
            precision: vec![],
            min,
            max,
            ideal,
            noise,
            why: String::new(),
        }
    }

    fn change(old: &[f64], new: &[f64], i: MeasureInfo) -> TimingChange {
        let opts = DiffOptions {
            threshold: None,
            min_change: 0.1,
        };
        timing_change(&stats(old), &stats(new), (None, Some(i)), InfoSource::Report, &opts).unwrap()
    }

    #[test]
    fn a_move_toward_a_max_bound_beyond_noise_regresses_and_the_opposite_does_not() {
        let i = info(Noise::Process, None, Some(3.0), None, 0.0);
        assert!(change(&[1.0], &[1.5], i.clone()).regression);
        let t = change(&[1.5], &[1.0], i);
        assert!(!t.regression, "{t:?}");
        assert!(t.reason.contains("but away from its bounds"), "{t:?}");
    }

    #[test]
    fn precision_and_repeat_spread_widen_the_noise() {
        // Values known to ±1 s: 1 s → 3.5 s is beyond 2 s of precision + 0.25 s of noise...
        let i = info(Noise::Process, None, Some(10.0), None, 1.0);
        assert!(change(&[1.0], &[3.5], i.clone()).regression);
        // ...but 1 s → 3 s could be the same true gap.
        assert!(!change(&[1.0], &[3.0], i).regression);
        // Repetitions that spread over 1.5 s make a 1 s move noise.
        let i = info(Noise::Process, None, Some(10.0), None, 0.0);
        let t = change(&[3.0, 3.5, 4.5], &[4.5, 4.5, 4.6], i);
        assert!(!t.regression, "{t:?}");
        assert!(t.reason.contains("spread 1.5s over repetitions"), "{t:?}");
        assert!((t.noise - 1.5).abs() < 1e-9);
    }

    #[test]
    fn a_target_or_nominal_step_decides_the_direction() {
        // A back-off step: 58 s → 41 s is toward its nominal 40 s, never a regression...
        let b = info(Noise::Backoff, Some(40.0), Some(60.0), Some(40.0), 1.0);
        assert!(!change(&[58.0], &[41.0], b.clone()).regression);
        // ...41 s → 60 s is within the back-off noise (a 40 s step re-queued with a jitter of
        // up to 0.5 × 40 s, + 3 s polling and start, + 2 s precision): two healthy runs show it...
        assert!(!change(&[41.0], &[60.0], b.clone()).regression);
        // ...while a doubled step (41 s → 81 s) is beyond it and away from its nominal.
        assert!(change(&[41.0], &[81.0], b).regression);
        // Both directions away from a target regress.
        let t = info(Noise::Process, Some(4.7), Some(5.3), Some(5.0), 0.0);
        assert!(change(&[5.0], &[4.6], t.clone()).regression);
        assert!(change(&[5.0], &[5.4], t).regression);
    }

    #[test]
    fn the_mechanism_decides_the_noise_and_our_own_pacing_is_never_compared() {
        // A volume refreshed at the pod's periodic sync: the next sync may come 1 s or 88 s
        // after the change on the same healthy node.
        let v = info(Noise::Sync, None, Some(240.0), None, 0.0);
        let t = change(&[1.1], &[87.9], v.clone());
        assert!(!t.regression, "{t:?}");
        assert!(t.reason.contains("pod sync period"), "{t:?}");
        assert!(change(&[1.1], &[180.0], v).regression);
        // Two of our own requests: listed, never a regression, whatever the bound.
        let o = info(Noise::Own, Some(120.0), None, None, 0.0);
        let t = change(&[128.0], &[100.0], o);
        assert!(!t.regression, "{t:?}");
        assert!(t.reason.starts_with("not compared"), "{t:?}");
        assert_eq!(t.noise_class, Some(Noise::Own));
        // A back-off step shorter by 2 s, toward its lower bound: back-off noise, not a regression.
        let b = info(Noise::Backoff, Some(20.0), None, None, 0.0);
        assert!(!change(&[29.1], &[26.9], b).regression);
    }

    #[test]
    fn status_changes() {
        use CaseStatus::*;
        let f = |a, b| status_change(Some(a), Some(b));
        assert_eq!(f(Passed, Failed), Change::Regression);
        assert_eq!(f(Passed, Undecided), Change::Regression);
        assert_eq!(f(Flaky, Undecided), Change::Regression);
        assert_eq!(f(Undecided, Passed), Change::Fixed);
        assert_eq!(f(Passed, Ignored), Change::Regression);
        assert_eq!(f(Passed, Interrupted), Change::Regression);
        assert_eq!(f(Passed, Flaky), Change::Regression);
        assert_eq!(f(Flaky, Error), Change::Regression);
        assert_eq!(f(Flaky, Passed), Change::Changed);
        assert_eq!(f(Failed, Passed), Change::Fixed);
        assert_eq!(f(Ignored, Passed), Change::Changed);
        assert_eq!(f(Failed, Error), Change::Changed);
        assert_eq!(status_change(Some(Passed), None), Change::Regression);
        assert_eq!(status_change(Some(Ignored), None), Change::Removed);
        assert_eq!(status_change(None, Some(Passed)), Change::New);
    }
}
