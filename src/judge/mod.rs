//! The judge: pure functions `Expectation × Timeline → Verdict`, each verdict with evidence
//! (what was expected, what was measured, which marks were used). No I/O.

mod backoff;
mod cgroup;
mod conclude;
mod condition;
mod container;
mod count;
mod event;
mod exec;
mod gap;
mod generation;
mod log;
pub mod marks;
pub mod measure;
pub mod mechanism;
mod never;
mod order;
mod phase;
pub mod sequence;
pub mod status;
mod steps;
#[cfg(test)]
mod testkit;
mod verdict;

use jiff::{SignedDuration, Timestamp};

use crate::observe::{EvidenceSource, State, Timeline};
use crate::suite::model::*;
use crate::suite::types::{Count, InstanceSel};
use crate::util::fmt_secs;
use marks::{Hit, Stream, compile, matcher, resolve};
use sequence::{SeqMatch, Subject, match_sequence};

use backoff::backoff;
pub use backoff::{Interval, announced_backoffs, backoff_bounds, restart_intervals};
use cgroup::cgroup;
pub use conclude::{Conclusion, conclude};
pub use condition::condition_sequence;
use condition::{condition, condition_gaps};
use container::{container, container_gaps, skipped_note};
use count::decide_count_in_gap;
use event::{EVENTS_NOTE, event, event_type, events_lossy, scheduler_writes};
use exec::exec;
use gap::gap;
use generation::{observed_generation, update};
use log::log;
use never::never;
use order::order;
pub use phase::phase_sequence;
use phase::{is_subsequence, phase, phases, phases_gaps};
pub use steps::{case_changed, steps_verdict};

pub use verdict::{
    Fact, MarkAt, Outcome, STEP_INDEX, Verdict, VerdictKind, all_decided, all_pass, beyond_in_every_attempt,
};
use verdict::{J, fail, in_gap, pass, undecided};

/// Why a verdict on the scheduler's writes cannot be decided for a pod bound at creation.
const BOUND_AT_CREATE: &str = "the pod was created with spec.nodeName: the scheduler never saw it, so no Scheduled event was written and the kubelet set PodScheduled in its own first status write";

/// Judges every expectation of a case. When `tl.complete` is false, expectations that cannot
/// be decided yet are `Undecided` (the runner judges again as data arrives).
pub fn judge_case(case: &Case, tl: &Timeline) -> Vec<Verdict> {
    case.expect
        .iter()
        .enumerate()
        .map(|(i, e)| judge(case, e, tl, i))
        .collect()
}

/// The pod watch was down when the observation ended: the last state seen may be stale.
fn stale_end(tl: &Timeline) -> Option<String> {
    tl.pod_gap_at_end().map(|g| g.describe())
}

pub fn judge(case: &Case, e: &Expectation, tl: &Timeline, index: usize) -> Verdict {
    let j = match e {
        Expectation::Phase(p) => in_gap(phase(*p, tl), stale_end(tl)),
        Expectation::Phases(seq) => phases_gaps(seq, phases(seq, tl), tl),
        Expectation::Container(c) => container_gaps(c, container(c, tl), tl),
        Expectation::Condition(c) => condition_gaps(c, condition(c, tl), tl),
        Expectation::Order(list) => order(case, list, tl),
        Expectation::Gap(g) => gap(case, g, tl),
        Expectation::Event(ev) => event(ev, tl),
        Expectation::Log(l) => log(l, tl),
        Expectation::Backoff(b) => {
            // Status intervals are the kubelet's own times; a missing interval may hide in a
            // pod-watch gap, and a log interval's ends in a log gap.
            let j = backoff(b, tl);
            let gap = match b.measure {
                BackoffMeasure::Logs => tl.log_gaps(&b.container, None).next(),
                BackoffMeasure::Status => None,
            }
            .or_else(|| j.has(Fact::TooFewIntervals).then(|| tl.pod_gaps().next()).flatten())
            .map(|g| g.describe());
            in_gap(j, gap)
        }
        Expectation::Never(n) => never(case, n, tl),
        Expectation::Statuses(seq) => status::statuses_gaps(seq, status::statuses(seq, tl), tl),
        Expectation::StatusRow(r) => status::status_row_gaps(status::status_row(r, tl), tl),
        Expectation::QosClass(q) => status::qos_class(*q, tl),
        Expectation::Exec(x) => exec(x, tl),
        Expectation::Cgroup(g) => cgroup(g, tl),
        Expectation::Update(x) => update(x, tl),
        Expectation::ObservedGeneration(x) => observed_generation(case, x, tl),
    };
    let j = restart_hides_absence(j, tl);
    Verdict {
        index,
        kind: VerdictKind::of(e),
        outcome: j.outcome,
        evidence: j.evidence,
        measured: j.measured,
        marks: j.marks,
        measures: j.measures,
        facts: j.facts,
        subject: subject(e),
        id: verdict::expectation_id(e.kind(), &serde_json::to_value(e).unwrap_or_default()),
    }
}

/// A kubelet restart during the observation makes an absence unanswerable: the restarted
/// kubelet rebuilt what it held in memory (back-off, probe results, eviction state) and resynced
/// the pod from the runtime, so a status or mark a running kubelet would have written may never
/// come. A failure that is an absence is then undecided, naming the restart; what was seen to
/// contradict the case stays failed.
fn restart_hides_absence(j: J, tl: &Timeline) -> J {
    if j.outcome != Outcome::Fail || !(j.has(Fact::StatusNeverShown) || j.has(Fact::MarkAbsent)) {
        return j;
    }
    let Some(g) = tl.gaps.iter().find(|g| g.source == EvidenceSource::Kubelet) else {
        return j;
    };
    J {
        outcome: Outcome::Undecided,
        evidence: format!("{}; undecided: {}", j.evidence, g.describe()),
        ..j
    }
    .with(Fact::KubeletRestarted)
}

/// What an expectation judges, for labels (statistics, `diff`): "gap `a`→`b`", "backoff `main`".
fn subject(e: &Expectation) -> String {
    match e {
        Expectation::Gap(g) => match &g.for_each_instance {
            Some(c) => format!("gap {}→{} for each instance of `{c}`", g.from.label(), g.to.label()),
            None => format!("gap {}→{}", g.from.label(), g.to.label()),
        },
        Expectation::Backoff(b) => format!("backoff `{}`", b.container.as_str()),
        other => other.kind().to_string(),
    }
}

/// Why a mark reference has no hit: it names no mark, or the mark has not (yet) occurred.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum MarkError {
    /// Neither the case nor the built-in marks define the name.
    #[error("undefined mark `{0}`")]
    Undefined(String),
    #[error("mark {label} not found: {why}")]
    NotFound {
        label: String,
        #[source]
        why: marks::Unresolved,
    },
}

fn lookup(case: &Case, r: &MarkRef) -> Result<MarkSpec, MarkError> {
    match r {
        MarkRef::Named(n) => case
            .marks
            .get(&n.value)
            .cloned()
            .or_else(|| crate::suite::load::builtin_mark(&n.value))
            .ok_or_else(|| MarkError::Undefined(n.value.to_string())),
        MarkRef::Inline(m) => Ok((**m).clone()),
    }
}

/// Resolves a mark reference; `Err` carries the undecided/fail explanation.
fn mark(case: &Case, r: &MarkRef, tl: &Timeline) -> Result<Hit, MarkError> {
    let spec = lookup(case, r)?;
    resolve(&spec, tl).map_err(|why| MarkError::NotFound { label: r.label(), why })
}

/// Why two marks of different streams are uncertain relative to each other, for the evidence.
fn stream_causes(a: &marks::Hit, b: &marks::Hit) -> String {
    let mut causes: Vec<&str> = vec![];
    for c in [&a.cause, &b.cause, &a.stream_cause, &b.stream_cause]
        .into_iter()
        .flatten()
    {
        if !causes.contains(&c.as_str()) {
            causes.push(c);
        }
    }
    if a.clock != b.clock {
        causes.push("mixed clocks: harness and node");
    }
    if causes.is_empty() {
        "two streams".into()
    } else {
        causes.join("; ")
    }
}

/// The reason of an event mark (`None`: not an event mark).
fn event_reason(case: &Case, r: &MarkRef) -> Option<String> {
    match lookup(case, r) {
        Ok(MarkSpec::Event(e)) => Some(e.reason.to_string()),
        _ => None,
    }
}

/// A required mark absent from a complete observation: a failure of the node, unless a gap in
/// the mark's source could hide it (then undecided, naming the gap).
fn absent(case: &Case, r: &MarkRef, tl: &Timeline, evidence: String) -> J {
    // A tick loop that logged too little to measure its period did happen: its stop is not
    // absent, only unmeasured.
    if let Ok(MarkSpec::TickStopped(c)) = lookup(case, r)
        && tl.logs_of(&c.container, None).next().is_some()
    {
        return undecided(evidence);
    }
    match hidden_by(case, r, tl, None).or_else(|| kubelet_restarted(case, r, tl)) {
        Some(gap) => undecided(format!("{evidence}; undecided: {gap}")),
        None => match event_lost(case, r, tl) {
            Some(why) => undecided(format!("{evidence}; undecided: {why}")).with(Fact::EventsLossy),
            None => fail(format!("{evidence}, and the observation is complete")).with(Fact::MarkAbsent),
        },
    }
}

/// True when the observation has ended and lost nothing, so an absent mark truly did not happen.
fn evidence_is_whole(tl: &Timeline) -> bool {
    tl.complete && tl.gaps.is_empty()
}

fn secs(d: SignedDuration) -> f64 {
    d.as_secs_f64()
}

/// Gaps where an occurrence of the mark could hide (before `before`, if given), described.
fn hidden_by(case: &Case, r: &MarkRef, tl: &Timeline, before: Option<Timestamp>) -> Option<String> {
    if tl.gaps.is_empty() {
        return None;
    }
    let spec = lookup(case, r).ok()?;
    let gaps = marks::hiding_gaps(&spec, tl, before);
    // Whether an event happened at all (not when) survives a closed gap of the Event watch.
    if before.is_none() && matches!(spec, MarkSpec::Event(_)) {
        return gaps
            .into_iter()
            .find(|g| !event_gap_caught_up(g, tl))
            .map(|g| g.describe());
    }
    gaps.first().map(|g| g.describe())
}

/// How long the kubelet's event recorder keeps retrying an event it could not post: 12 tries
/// (`maxTriesPerEvent`) 10 s apart (`defaultSleepDuration`, the first sleep random within it),
/// so at least 100 s before it drops one.
const RECORDER_PATIENCE: SignedDuration = SignedDuration::from_secs(100);
/// After the API server takes writes again, a retried event is posted within one retry sleep.
const RECORDER_RETRY: SignedDuration = SignedDuration::from_secs(10);

/// A closed gap of the Event watch hides no event's existence: Events are objects the API
/// server keeps (an hour by default), and the watch that reconnected re-listed or resumed them,
/// so one created or counted up inside the gap was delivered afterwards. An event the kubelet
/// could not post during an API outage is still posted if the API server took requests again
/// within the recorder's patience and the observation went on for one more retry after that.
fn event_gap_caught_up(g: &crate::observe::Gap, tl: &Timeline) -> bool {
    let (Some(from), Some(to)) = (g.from, g.to) else {
        return false;
    };
    // Until when nobody could post: an outage ends for writers when the API server answers
    // again, before the gap (which also covers the node settling) ends.
    let writable_from = tl.writes_resumed(g).unwrap_or(to);
    writable_from.duration_since(from) < RECORDER_PATIENCE
        && tl
            .observed_until()
            .is_some_and(|u| u >= crate::util::ts_add(writable_from, RECORDER_RETRY))
}

/// The gap (described) that could hide an occurrence of a mark, if any: a `waitFor` that never
/// saw its mark is then undecided, not failed.
pub(crate) fn mark_hidden(case: &Case, r: &MarkRef, tl: &Timeline) -> Option<String> {
    hidden_by(case, r, tl, None)
        .or_else(|| event_lost(case, r, tl))
        .or_else(|| kubelet_restarted(case, r, tl))
}

/// A kubelet restart during the case (a `Kubelet` gap): a mark the kubelet was to bring about
/// may not have come because its in-memory state (back-off, probe results, eviction) started
/// over, so its absence is no evidence against the node. Our own actions are not the kubelet's.
fn kubelet_restarted(case: &Case, r: &MarkRef, tl: &Timeline) -> Option<String> {
    if matches!(lookup(case, r), Ok(MarkSpec::Action(_)) | Err(_)) {
        return None;
    }
    tl.gaps
        .iter()
        .find(|g| g.source == EvidenceSource::Kubelet)
        .map(|g| g.describe())
}

/// Why an event mark's absence is no evidence although the event stream had no gap: the
/// kubelet's recorder may have dropped it (its spam-filter bucket for the event's type reached
/// the burst, or similar events were aggregated). For example 16 MissingClusterDNS and 9
/// Unhealthy Warnings of one pod filled the bucket, and the BackOff a `waitFor` awaited never
/// reached the API server. `None` for other marks, or when nothing was seen lost.
fn event_lost(case: &Case, r: &MarkRef, tl: &Timeline) -> Option<String> {
    let reason = event_reason(case, r)?;
    events_lossy(tl, event_type(tl, &reason, None))
}

/// Whether a mark (by reference) has occurred; used by `waitFor` steps.
pub(crate) fn mark_occurred(case: &Case, r: &MarkRef, tl: &Timeline) -> Result<Hit, MarkError> {
    mark(case, r, tl)
}
