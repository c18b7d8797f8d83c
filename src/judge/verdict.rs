//! What the judge returns: the verdict of one expectation (outcome, evidence, measurements, marks, facts),
//! and `J`, the judgement under construction that every expectation kind builds.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::measure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Pass,
    Fail,
    /// The timeline ended (or has not yet got far enough) to decide.
    Undecided,
}

/// The judgement of one expectation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Index in the case's `expect` list (`STEP_INDEX` for the step check, which is none of
    /// them: see `is_step`).
    pub index: usize,
    pub kind: VerdictKind,
    pub outcome: Outcome,
    /// One line: expectation, measurement, marks used.
    pub evidence: String,
    /// Measured values in seconds (gaps, back-off intervals), for statistics and diffs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<f64>,
    /// The instants of the marks used (a gap's from and to, an order's chain), for timelines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<MarkAt>,
    /// One per `measured` value: its precision, bounds and noise class, for `podlife diff`
    /// (absent in reports written before podlife 0.1 recorded it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measures: Vec<measure::MeasureInfo>,
    /// What the verdict rests on, as typed facts: later stages (gap handling, statistics,
    /// reports) branch on these, never on the wording of `evidence`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<Fact>,
    /// What was judged, e.g. "gap `term`→`kill`" (statistics and `diff` label measurements
    /// with it; empty in reports written before podlife recorded it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// What the verdict judges, stable across edits of the case: the expectation's kind and a
    /// digest of its definition (`step` and `timeline` for those checks). Two runs' verdicts are
    /// the same verdict when their ids are equal, wherever the expectation moved in the list
    /// (empty in reports written before podlife recorded it: then the index is all there is).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
}

/// The `index` the case-wide checks' verdicts (`step`, `timeline`) carry in reports: they judge
/// none of the case's expectations. Read it with `Verdict::expectation`.
pub const STEP_INDEX: usize = usize::MAX;

/// What kind of check a verdict is: an expectation's kind (as the suite names it), or one of the
/// checks every case gets (`step`: its steps ran as written; `timeline`: a recording answers
/// it). Serialized as the suite's name, so reports read the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum VerdictKind {
    Phase,
    Phases,
    Container,
    Condition,
    Order,
    Gap,
    Event,
    Log,
    Backoff,
    Never,
    Statuses,
    StatusRow,
    QosClass,
    Exec,
    Cgroup,
    Update,
    ObservedGeneration,
    Step,
    Timeline,
}

impl VerdictKind {
    /// The kind of an expectation's verdict.
    pub fn of(e: &crate::suite::Expectation) -> VerdictKind {
        use crate::suite::Expectation as E;
        match e {
            E::Phase(_) => VerdictKind::Phase,
            E::Phases(_) => VerdictKind::Phases,
            E::Container(_) => VerdictKind::Container,
            E::Condition(_) => VerdictKind::Condition,
            E::Order(_) => VerdictKind::Order,
            E::Gap(_) => VerdictKind::Gap,
            E::Event(_) => VerdictKind::Event,
            E::Log(_) => VerdictKind::Log,
            E::Backoff(_) => VerdictKind::Backoff,
            E::Never(_) => VerdictKind::Never,
            E::Statuses(_) => VerdictKind::Statuses,
            E::StatusRow(_) => VerdictKind::StatusRow,
            E::QosClass(_) => VerdictKind::QosClass,
            E::Exec(_) => VerdictKind::Exec,
            E::Cgroup(_) => VerdictKind::Cgroup,
            E::Update(_) => VerdictKind::Update,
            E::ObservedGeneration(_) => VerdictKind::ObservedGeneration,
        }
    }

    /// The name reports print (the suite's name of the kind).
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Phase => "phase",
            VerdictKind::Phases => "phases",
            VerdictKind::Container => "container",
            VerdictKind::Condition => "condition",
            VerdictKind::Order => "order",
            VerdictKind::Gap => "gap",
            VerdictKind::Event => "event",
            VerdictKind::Log => "log",
            VerdictKind::Backoff => "backoff",
            VerdictKind::Never => "never",
            VerdictKind::Statuses => "statuses",
            VerdictKind::StatusRow => "statusRow",
            VerdictKind::QosClass => "qosClass",
            VerdictKind::Exec => "exec",
            VerdictKind::Cgroup => "cgroup",
            VerdictKind::Update => "update",
            VerdictKind::ObservedGeneration => "observedGeneration",
            VerdictKind::Step => "step",
            VerdictKind::Timeline => "timeline",
        }
    }
}

impl std::fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for VerdictKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for VerdictKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Verdict {
    /// Whether this is the step check's verdict (not one of the case's expectations).
    pub(crate) fn is_step(&self) -> bool {
        self.kind == VerdictKind::Step
    }

    /// The index of the expectation this verdict judges in the case's `expect` list; none for
    /// the checks every case gets (`step`, `timeline`).
    pub fn expectation(&self) -> Option<usize> {
        (!matches!(self.kind, VerdictKind::Step | VerdictKind::Timeline)).then_some(self.index)
    }

    /// Whether `self` and `other`, of two runs of one case, judge the same thing.
    pub(crate) fn same_subject(&self, other: &Verdict) -> bool {
        if self.id.is_empty() || other.id.is_empty() {
            self.index == other.index && self.kind == other.kind
        } else {
            self.id == other.id
        }
    }
}

/// A verdict's `id` for an expectation: its kind and a 64-bit FNV-1a digest of its definition
/// as JSON (stable across Rust versions, unlike std's hasher).
pub(crate) fn expectation_id(kind: &str, definition: &serde_json::Value) -> String {
    format!("{kind}:{:016x}", crate::util::fnv1a(definition.to_string().as_bytes()))
}

/// A fact a verdict rests on, beside its evidence text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fact {
    /// Fewer restart intervals than required were observed (`backoff`).
    TooFewIntervals,
    /// A container expected never to start was seen to start: no gap can undo that.
    StartedAgainstExpectation,
    /// A waiting reason the expectation requires was never seen.
    WaitingReasonMissing,
    /// A waiting reason outside `waitingReasonsOnly` was seen: no gap can undo that.
    WaitingReasonOutside,
    /// A forbidden condition transition was seen: no gap can undo that.
    ForbiddenTransitionSeen,
    /// The STATUS a `statusRow` describes was never shown (as opposed to shown and contradicted).
    StatusNeverShown,
    /// A measurement's tolerance was widened by the precision of its marks.
    ToleranceWidened,
    /// A required mark never came although the evidence is whole: a failure of the node.
    MarkAbsent,
    /// Two marks of different streams are closer than their streams' delays allow to decide
    /// (an order inverted, or a gap outside its bounds, by less than that): undecided.
    OrderWithinUncertainty,
    /// The measurement's uncertainty is wider than the expectation's window.
    CoarserThanTolerance,
    /// An instance could not be measured because its evidence fell in a gap.
    InstanceUnmeasured,
    /// The verdict rests on the absence or exact count of Kubernetes Events, which the kubelet's
    /// recorder may rate-limit, aggregate or drop on a healthy node.
    EventsLossy,
    /// A kill time read from a tick loop disagrees with the container's `finishedAt`.
    KillDisagreesWithFinishedAt,
    /// The API server was down across what was measured (see `EvidenceSource::Api`).
    ApiDown,
    /// The pod's kubelet restarted across what was measured (see `EvidenceSource::Kubelet`).
    KubeletRestarted,
    /// The pod was created with `spec.nodeName`: what only the scheduler writes (the
    /// `Scheduled` event, PodScheduled before the kubelet's first status) cannot be judged.
    BoundWithoutScheduler,
    /// Every attempt measured the value past the same bound on the same side, each by less than
    /// its streams' delays: together they decide what none could alone.
    BeyondInEveryAttempt,
    /// A finished recording did not do what the case's steps say (a step it never ran, another
    /// request, a sleep it did not wait out): it was made for an earlier version of the case,
    /// and answers another experiment.
    CaseChanged,
}

/// A resolved mark as reported: its label and instant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarkAt {
    pub label: String,
    pub at: Timestamp,
}

/// True when every verdict passed.
pub fn all_pass(v: &[Verdict]) -> bool {
    v.iter().all(|v| v.outcome == Outcome::Pass)
}

/// True when no verdict is still undecided.
pub fn all_decided(v: &[Verdict]) -> bool {
    v.iter().all(|v| v.outcome != Outcome::Undecided)
}

/// Which side of its bounds a measured verdict lies on (`None`: within them, or unmeasured).
fn side(v: &Verdict) -> Option<std::cmp::Ordering> {
    let (m, info) = (v.measured.first()?, v.measures.first()?);
    if info.max.is_some_and(|max| *m > max) {
        Some(std::cmp::Ordering::Greater)
    } else if info.min.is_some_and(|min| *m < min) {
        Some(std::cmp::Ordering::Less)
    } else {
        None
    }
}

/// Attempts of one case that all ended undecided: when each measured the same expectation past
/// the same bound, on the same side, by less than its streams' delays (so each alone could not
/// decide), the node is reproducibly past that bound, each time in a fresh namespace: a bound
/// is set where a healthy node never comes near it, so its streams' delays cannot carry it past
/// the bound in every attempt. Returns the position of that verdict in the last attempt and its
/// failing replacement, with every attempt's measurement as evidence.
pub fn beyond_in_every_attempt(attempts: &[&[Verdict]]) -> Option<(usize, Verdict)> {
    let (last, earlier) = attempts.split_last()?;
    if earlier.is_empty() {
        return None;
    }
    last.iter().enumerate().find_map(|(pos, v)| {
        let within_delay =
            |v: &Verdict| v.outcome == Outcome::Undecided && v.facts.contains(&Fact::OrderWithinUncertainty);
        let s = side(v).filter(|_| within_delay(v))?;
        let mut measured = vec![];
        for a in earlier {
            let w = a.iter().find(|w| w.index == v.index && w.subject == v.subject)?;
            if !within_delay(w) || side(w) != Some(s) {
                return None;
            }
            measured.push(w.measured[0]);
        }
        measured.push(v.measured[0]);
        let shown: Vec<String> = measured.iter().map(|m| crate::util::fmt_secs(*m)).collect();
        let mut f = v.clone();
        f.outcome = Outcome::Fail;
        f.evidence = format!(
            "past its bound on the same side in every one of {} attempts (measured {}); last: {}",
            measured.len(),
            shown.join(", "),
            v.evidence
        );
        f.facts.retain(|x| *x != Fact::OrderWithinUncertainty);
        f.facts.push(Fact::BeyondInEveryAttempt);
        Some((pos, f))
    })
}

/// A judgement under construction: each expectation kind builds one (`pass`, `fail`, `undecided`,
/// then `in_gap` and `with` a fact), and `judge` turns it into the `Verdict` with index, kind and subject.
pub(super) struct J {
    pub(super) outcome: Outcome,
    pub(super) evidence: String,
    pub(super) measured: Vec<f64>,
    pub(super) marks: Vec<MarkAt>,
    pub(super) measures: Vec<measure::MeasureInfo>,
    pub(super) facts: Vec<Fact>,
}

impl J {
    pub(super) fn with(mut self, f: Fact) -> J {
        if !self.facts.contains(&f) {
            self.facts.push(f);
        }
        self
    }
    pub(super) fn has(&self, f: Fact) -> bool {
        self.facts.contains(&f)
    }
}

pub(super) fn pass(e: impl Into<String>) -> J {
    J {
        outcome: Outcome::Pass,
        evidence: e.into(),
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts: vec![],
    }
}

pub(super) fn fail(e: impl Into<String>) -> J {
    J {
        outcome: Outcome::Fail,
        evidence: e.into(),
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts: vec![],
    }
}

/// A decided verdict that a gap in the evidence could overturn becomes undecided, naming the gap.
pub(super) fn in_gap(j: J, gap: Option<String>) -> J {
    match gap {
        Some(g) if j.outcome != Outcome::Undecided => J {
            outcome: Outcome::Undecided,
            evidence: format!("{}; undecided: {g}", j.evidence),
            measured: vec![],
            marks: j.marks,
            measures: vec![],
            facts: j.facts,
        },
        _ => j,
    }
}

pub(super) fn undecided(e: impl Into<String>) -> J {
    J {
        outcome: Outcome::Undecided,
        evidence: e.into(),
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts: vec![],
    }
}
