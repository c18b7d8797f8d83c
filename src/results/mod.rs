//! The result model of a run (`RunSummary`, `CaseReport`, `Attempt`): what the runner produces
//! and the reporters consume, so `run` and `report` never import each other.

pub mod diff;
pub mod fingerprint;
pub mod fleet;
pub mod plan;
pub mod stats;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

pub use fingerprint::{Fingerprint, NodeInfo, RuntimeClassInfo};

use crate::judge::{Outcome, Verdict};
use crate::observe::Timeline;

/// Where a run folder keeps a case's timeline, relative to the folder:
/// `timelines/<suite>__<case>.json` (`<suite>__<case>@<node>.json` for an `--each-node` copy).
/// The reporters write it there and replays read it back.
pub fn timeline_file(suite: &str, case: &str, node: Option<&str>) -> String {
    match node {
        Some(n) => format!("timelines/{suite}__{case}@{n}.json"),
        None => format!("timelines/{suite}__{case}.json"),
    }
}

/// How one attempt of a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AttemptStatus {
    Passed,
    Failed,
    /// No verdict failed, but at least one stayed undecided (evidence lost in a gap).
    Undecided,
    /// The harness could not run the case (API error, bad recording).
    Error,
    Interrupted,
    /// A recording judged against a case that changed since it was made: its steps are not
    /// today's, so it answers another experiment. Neither a pass nor a failure of the node: the
    /// case is reported ignored, with the step that differs.
    NotComparable,
}

/// What cleanup did for the case namespace.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cleanup {
    pub namespace: Option<String>,
    pub deleted: bool,
    pub kept: bool,
    /// Set when the namespace could not be deleted or was still there at the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leftover: Option<String>,
    /// Its DELETE was accepted and it was terminating when the case ended: the end-of-run sweep
    /// waits for it, then sets `deleted` or `leftover`.
    #[serde(skip)]
    pub terminating: bool,
}

/// One attempt of a case.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub status: AttemptStatus,
    pub verdicts: Vec<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started: Timestamp,
    pub duration_s: f64,
    pub api_requests: u64,
    pub cleanup: Cleanup,
    /// The CPU its node used while it ran: the load its timings were measured under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_load: Option<NodeLoad>,
    #[serde(skip)]
    pub timeline: Option<Timeline>,
}

/// The CPU a node used while an attempt ran, from the kubelet's summary API (`usageNanoCores`,
/// averaged by the kubelet over its last housekeeping interval) sampled every few seconds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeLoad {
    pub node: String,
    pub mean_cores: f64,
    pub max_cores: f64,
    pub samples: usize,
    /// The node's CPU capacity (`status.capacity.cpu`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_cores: Option<f64>,
}

impl NodeLoad {
    /// `vm: 1.21 cores mean, 1.93 max (of 2), 9 samples`.
    pub fn describe(&self) -> String {
        let of = self.capacity_cores.map(|c| format!(" (of {c})")).unwrap_or_default();
        format!(
            "{}: {:.2} cores mean, {:.2} max{of}, {} sample{}",
            self.node,
            self.mean_cores,
            self.max_cores,
            self.samples,
            if self.samples == 1 { "" } else { "s" }
        )
    }
}

/// The first thing that went wrong in an attempt: its error, else the first verdict that did
/// not pass (empty when all passed).
pub(crate) fn first_problem(a: Option<&Attempt>) -> String {
    let Some(a) = a else { return String::new() };
    if let Some(e) = &a.error {
        return e.clone();
    }
    a.verdicts
        .iter()
        .find(|v| v.outcome != Outcome::Pass)
        .map(|v| v.evidence.clone())
        .unwrap_or_default()
}

/// Final status of a case over its attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CaseStatus {
    Passed,
    /// Passed after failing at least once.
    Flaky,
    Failed,
    /// No verdict failed, but one stayed undecided (its evidence fell in a gap): the node was
    /// neither shown conformant nor shown wrong. Not a pass (exit 1), not a node failure.
    Undecided,
    Error,
    Ignored,
    /// Started, then stopped by Ctrl-C, SIGTERM or SIGHUP before a verdict.
    Interrupted,
    /// Selected but never started (the run was interrupted first).
    NotRun,
}

impl CaseStatus {
    /// Whether the case ran to a verdict (passed, flaky or failed). Undecided cases, errors,
    /// interruptions, ignored and not-run cases certify nothing either way.
    pub fn has_verdict(self) -> bool {
        matches!(self, CaseStatus::Passed | CaseStatus::Flaky | CaseStatus::Failed)
    }

    /// The word reports use: `passed`, `not-run`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Passed => "passed",
            CaseStatus::Flaky => "flaky",
            CaseStatus::Failed => "failed",
            CaseStatus::Undecided => "undecided",
            CaseStatus::Error => "error",
            CaseStatus::Ignored => "ignored",
            CaseStatus::Interrupted => "interrupted",
            CaseStatus::NotRun => "not-run",
        }
    }
}

/// Everything reported about one case.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    pub suite: String,
    pub suite_file: String,
    pub case: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub tags: Vec<String>,
    /// Upstream conformance testnames this case certifies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream: Vec<String>,
    pub status: CaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_reason: Option<String>,
    /// Every attempt, the last one deciding the status.
    pub attempts: Vec<Attempt>,
    /// Attempts per repetition (`--repeat`), retries included.
    #[serde(default)]
    pub repetitions: Vec<usize>,
    /// Share of repetitions that passed.
    #[serde(default)]
    pub pass_rate: f64,
    /// min/median/max of every measured gap and interval over the repetitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<stats::MeasureStats>,
    /// The node the pod ran on (last attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `--each-node`: the node this copy of the case was pinned to. Part of the case's identity
    /// (`suite::case@node`) in every report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_node: Option<String>,
    /// Path of the timeline JSON (relative to the report folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline_file: Option<String>,
    #[serde(skip)]
    pub timeline: Option<Timeline>,
}

impl CaseReport {
    /// The case's timeline: held in memory, else read from `timeline_file` under the run's
    /// report folder `dir` (a live run writes it there once the case is judged, so that memory
    /// grows with the cases in flight, not with the run). `None` when there is neither.
    pub fn timeline_in(&self, dir: &std::path::Path) -> Option<std::borrow::Cow<'_, Timeline>> {
        if let Some(t) = &self.timeline {
            return Some(std::borrow::Cow::Borrowed(t));
        }
        let text = std::fs::read_to_string(dir.join(self.timeline_file.as_ref()?)).ok()?;
        serde_json::from_str(&text).ok().map(std::borrow::Cow::Owned)
    }

    /// `suite::case`, or `suite::case@node` for an `--each-node` copy.
    pub fn full_name(&self) -> String {
        case_id(&self.suite, &self.case, self.target_node.as_deref())
    }

    /// `suite::case` without the node.
    pub fn case_name(&self) -> String {
        format!("{}::{}", self.suite, self.case)
    }
    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.last()
    }
}

/// The identity of a case in reports: `suite::case`, and `@node` for an `--each-node` copy.
pub(crate) fn case_id(suite: &str, case: &str, node: Option<&str>) -> String {
    match node {
        Some(n) => format!("{suite}::{case}@{n}"),
        None => format!("{suite}::{case}"),
    }
}

/// The summary JSON of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub run_id: String,
    pub started: Timestamp,
    pub finished: Timestamp,
    pub fingerprint: Fingerprint,
    pub passed: usize,
    pub flaky: usize,
    pub failed: usize,
    /// Cases whose verdicts were pass and undecided only (summaries before it: 0).
    #[serde(default)]
    pub undecided: usize,
    pub errors: usize,
    pub ignored: usize,
    /// Cases stopped mid-way by an interrupt.
    #[serde(default)]
    pub interrupted_cases: usize,
    /// Selected cases that never started because the run was interrupted.
    #[serde(default)]
    pub not_run: usize,
    pub interrupted: bool,
    /// What interrupted the run (`SIGINT`, `SIGTERM`, `SIGHUP`, `cancel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// Namespaces that could not be cleaned up.
    pub leftovers: Vec<String>,
    /// Repetitions per case.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Per-area certification of the fingerprinted node.
    #[serde(default)]
    pub certification: Vec<stats::AreaResult>,
    /// Upstream conformance behaviours this run certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<stats::UpstreamResult>,
    /// `--each-node`: the node × area matrix, fingerprint groups and odd nodes out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<stats::Fleet>,
    /// What the run planned before its first case (absent in summaries written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<plan::Plan>,
    pub cases: Vec<CaseReport>,
}

fn one() -> u32 {
    1
}

impl RunSummary {
    /// Cases with the given status.
    pub fn count(&self, s: CaseStatus) -> usize {
        self.cases.iter().filter(|c| c.status == s).count()
    }

    /// The console's closing count, every status separately:
    /// `cases: 3 passed, 0 flaky, 1 failed, 0 undecided, 0 errors, 2 ignored, 1 interrupted, 4 not run`.
    pub fn counts_line(&self) -> String {
        format!(
            "cases: {} passed, {} flaky, {} failed, {} undecided, {} errors, {} ignored, {} interrupted, {} not run",
            self.count(CaseStatus::Passed),
            self.count(CaseStatus::Flaky),
            self.count(CaseStatus::Failed),
            self.count(CaseStatus::Undecided),
            self.count(CaseStatus::Error),
            self.count(CaseStatus::Ignored),
            self.count(CaseStatus::Interrupted),
            self.count(CaseStatus::NotRun),
        )
    }
}

/// The message libtest-mimic prints for a failed case: failing verdicts, then the error.
pub fn failure_message(r: &CaseReport) -> String {
    let Some(a) = r.last() else { return "no attempt".into() };
    let mut out = String::new();
    if r.status == CaseStatus::Flaky {
        // The last attempt may have passed: show the pass rate and the first failing attempt.
        let reps = r.repetitions.iter().filter(|n| **n > 0).count().max(1);
        out.push_str(&format!(
            "flaky, not certified: {} of {reps} repetition(s) passed (pass rate {}), {} of {} attempt(s) failed\n",
            (r.pass_rate * reps as f64).round() as usize,
            stats::percent(r.pass_rate),
            r.attempts.iter().filter(|a| a.status == AttemptStatus::Failed).count(),
            r.attempts.len()
        ));
        if let Some(f) = r.attempts.iter().find(|a| a.status == AttemptStatus::Failed) {
            for v in f.verdicts.iter().filter(|v| v.outcome == Outcome::Fail) {
                out.push_str(&format!("FAIL {}: {}\n", v.kind, v.evidence));
            }
        }
        return out;
    }
    if let Some(e) = &a.error {
        out.push_str(&format!("error: {e}\n"));
    }
    for v in &a.verdicts {
        if v.outcome != Outcome::Pass {
            let tag = if v.outcome == Outcome::Fail {
                "FAIL"
            } else {
                "UNDECIDED"
            };
            out.push_str(&format!("{tag} {}: {}\n", v.kind, v.evidence));
        }
    }
    if r.attempts.len() > 1 {
        out.push_str(&format!("({} attempts)\n", r.attempts.len()));
    }
    out
}

/// For a case that reached a verdict after harness errors (a retry that passed): the errors,
/// reported beside the verdict (they are podlife's or the cluster's, never the node's flake).
pub fn harness_error_note(r: &CaseReport) -> Option<String> {
    let n = stats::harness_errors(&r.attempts);
    if n == 0 || r.status == CaseStatus::Error {
        return None;
    }
    let first = r
        .attempts
        .iter()
        .find(|a| a.status == AttemptStatus::Error)
        .and_then(|a| a.error.clone())
        .unwrap_or_default();
    Some(format!(
        "after {n} harness error(s), not counted against the node (first: {first})"
    ))
}
