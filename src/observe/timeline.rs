//! The `Timeline`: everything observed about one pod, with the time and clock of every item.
//!
//! Clocks and precision (the judge relies on these):
//! - `received`: when podlife (or the recorder) received the item — harness clock, ns.
//! - status times (`startedAt`, `finishedAt`, condition `lastTransitionTime`, event
//!   `first/lastTimestamp`): set by the kubelet — node clock, **whole seconds** (truncated).
//! - log line `time`: the CRI timestamp written by the runtime — node clock, ns.
//! - action `sent`/`done`: harness clock, ns.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::suite::ContainerKind;

/// Format version of the timeline JSON.
pub(crate) const TIMELINE_FORMAT: u32 = 1;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub format: u32,
    /// Where the data came from: `live` or `recording:<dir>`.
    pub source: String,
    pub pod: PodInfo,
    /// Pod watch events that changed something, in arrival order.
    pub snapshots: Vec<Snapshot>,
    /// Receive time of the pod's DELETED watch event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Timestamp>,
    /// Receive times of pod versions that changed nothing (a version redelivered when a watch
    /// re-lists, or one that only touched fields a snapshot does not hold): at each, the pod
    /// was still as the snapshot before it. After a gap that is evidence of what the gap held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<Timestamp>,
    /// Container instances reconstructed from containerIDs, restartCount and lastState.
    pub instances: Vec<Instance>,
    /// Event occurrences (a deduplicated Event whose `count` grew is several occurrences).
    pub events: Vec<EventOccurrence>,
    /// Container log lines, sorted by (container, instance, time).
    pub logs: Vec<LogLine>,
    /// podlife's own actions.
    pub actions: Vec<Action>,
    /// Spans in which a source of evidence was down or never available: what happened inside
    /// them may be missing, so verdicts that depend on it are undecided (see `judge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
    /// What the observer dropped or shortened to stay bounded (also a gap when evidence was lost).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// True once the observation has ended: nothing more will be added.
    pub complete: bool,
    pub stats: Stats,
}

/// What the observer received and dropped, for reports and debugging.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub pod_watch_events: u64,
    /// Re-deliveries with an already seen resourceVersion (e.g. after a watch restart).
    pub pod_duplicates: u64,
    /// Deliveries older than the newest seen resourceVersion.
    pub pod_out_of_order: u64,
    pub event_deliveries: u64,
    pub event_duplicates: u64,
    pub log_lines: u64,
    pub log_duplicates: u64,
    /// Lines longer than `MAX_LOG_LINE_BYTES`, kept truncated with a marker.
    #[serde(default)]
    pub log_lines_truncated: u64,
    /// Lines dropped because an instance had more than `MAX_LOG_LINES_PER_INSTANCE`.
    #[serde(default)]
    pub log_lines_dropped: u64,
}

/// A source of evidence that can be interrupted.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "source")]
pub enum EvidenceSource {
    /// The pod watch: snapshots, instances, phases, conditions, deletion.
    PodWatch,
    /// The Event watch of the case namespace.
    Events,
    /// The API server itself (run-wide probe): it took no new request, so the kubelet could not
    /// write and did not hear of our requests in time. What happened to the pod then, and any
    /// timing from our action to the node's reaction across it, is not the node's alone.
    Api,
    /// The pod's kubelet restarted (its node's `Starting` event): the kubelet keeps the
    /// containers' back-off, probe results and pending work in memory, so those start over, and
    /// it did nothing while it was down. A timing across it is not the node's steady behaviour.
    Kubelet,
    /// Container logs: of one container (`None`: every container) and one instance (`None`: every instance).
    Logs {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        container: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<u32>,
    },
}

impl EvidenceSource {
    /// A gap of this source makes any timing across it say nothing about the node's steady
    /// behaviour (the API server down, or the kubelet restarted).
    pub(crate) fn disturbs_timing(&self) -> bool {
        matches!(self, EvidenceSource::Api | EvidenceSource::Kubelet)
    }

    /// True when a log gap of `self` covers the logs of `container` instance `instance`
    /// (`None`: some instance of it).
    pub fn covers_logs(&self, container: &str, instance: Option<u32>) -> bool {
        match self {
            EvidenceSource::Logs {
                container: c,
                instance: i,
            } => {
                c.as_deref().is_none_or(|c| c == container)
                    && match (i, instance) {
                        (Some(a), Some(b)) => *a == b,
                        _ => true,
                    }
            }
            _ => false,
        }
    }

    pub fn label(&self) -> String {
        match self {
            EvidenceSource::PodWatch => "pod watch".into(),
            EvidenceSource::Events => "events watch".into(),
            EvidenceSource::Api => "API server".into(),
            EvidenceSource::Kubelet => "kubelet".into(),
            EvidenceSource::Logs { container, instance } => match (container, instance) {
                (Some(c), Some(i)) => format!("log of {c}#{i}"),
                (Some(c), None) => format!("logs of {c}"),
                (None, _) => "container logs".into(),
            },
        }
    }
}

/// Which clock a gap's bounds are on.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub enum GapClock {
    /// podlife's receive time (watches).
    #[default]
    Harness,
    /// CRI log timestamps (a log known complete up to its last received line).
    Node,
}

/// How long after the API server takes requests again the kubelet has written what happened
/// while it could not: its status manager retries every pod whose status the API server lacks
/// each `syncPeriod` (10 s); two periods, as the first retry may meet a server still starting.
pub(crate) const WRITE_CATCH_UP: jiff::SignedDuration = jiff::SignedDuration::from_secs(20);

/// A span in which a source delivered nothing, or nothing in real time: what happened inside
/// it may be missing, and an item received right after it may have happened anywhere in it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    #[serde(flatten)]
    pub source: EvidenceSource,
    /// Start (`None`: from the beginning — the source was never available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Timestamp>,
    /// End (`None`: until the end of the observation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Timestamp>,
    /// For an API outage (an `Api` gap and its pod-watch and Event-watch copies): when the API
    /// server took new requests again. Before it nobody could write about the pod; from it on
    /// what the kubelet writes is seen, only late (the gap lasts until the node has settled, see
    /// `run::health`). `None`: not an outage, or not recorded (see `Timeline::writes_resumed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back: Option<Timestamp>,
    #[serde(default)]
    pub clock: GapClock,
    /// Why, e.g. `503 ServiceUnavailable` or `events.watch.jsonl absent`.
    pub reason: String,
}

impl Gap {
    /// True when the gap may contain instants before `t` (open start included).
    pub(crate) fn starts_before(&self, t: Timestamp) -> bool {
        self.from.is_none_or(|f| f < t)
    }

    /// True when the gap overlaps the half-open span `(after, until]` (`None`: unbounded).
    pub(crate) fn overlaps(&self, after: Option<Timestamp>, until: Option<Timestamp>) -> bool {
        let starts_ok = match (self.from, until) {
            (Some(f), Some(u)) => f < u,
            _ => true,
        };
        let ends_ok = match (self.to, after) {
            (Some(t), Some(a)) => t > a,
            _ => true,
        };
        starts_ok && ends_ok
    }

    /// One line for evidence: `events watch down 04:01:03.120–04:02:09.448 (503 ...)`.
    pub fn describe(&self) -> String {
        let hms = |t: Timestamp| {
            let z = t.to_zoned(jiff::tz::TimeZone::UTC);
            format!(
                "{:02}:{:02}:{:02}.{:03}",
                z.hour(),
                z.minute(),
                z.second(),
                z.subsec_nanosecond() / 1_000_000
            )
        };
        let what = self.source.label();
        // A kubelet restart loses no evidence: it resets what the kubelet held in memory.
        if self.source == EvidenceSource::Kubelet
            && let (Some(f), Some(t)) = (self.from, self.to)
        {
            return format!("{} between {} and {}", self.reason, hms(f), hms(t));
        }
        let span = match (self.from, self.to, self.clock) {
            (None, None, _) => format!("{what} never available"),
            (Some(f), None, GapClock::Node) => format!("{what} incomplete after its line of {}", hms(f)),
            (None, Some(t), GapClock::Node) => format!("{what} incomplete before {}", hms(t)),
            (Some(f), Some(t), GapClock::Node) => format!("{what} incomplete {}–{}", hms(f), hms(t)),
            (Some(f), None, GapClock::Harness) => format!("{what} down from {} to the end", hms(f)),
            (None, Some(t), GapClock::Harness) => format!("{what} down until {}", hms(t)),
            (Some(f), Some(t), GapClock::Harness) => format!("{what} down {}–{}", hms(f), hms(t)),
        };
        format!("{span} ({})", self.reason)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodInfo {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Timestamp>,
    pub containers: Vec<ContainerRef>,
    /// Created with `spec.nodeName` (by its manifest, or by `--node` before it pinned through
    /// the scheduler): the scheduler never saw the pod, so no `Scheduled` event was written and
    /// the kubelet set PodScheduled itself, in its first status write.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bound_at_create: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRef {
    pub name: String,
    pub kind: ContainerKind,
    /// The longest `periodSeconds` of the container's probes (default 10 s), if it has any:
    /// instants a probe decides are only known to within a period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_period: Option<f64>,
}

impl PodInfo {
    /// The probe period of a container (see [`ContainerRef::probe_period`]).
    pub(crate) fn probe_period(&self, container: &str) -> Option<f64> {
        self.containers
            .iter()
            .find(|c| c.name == container)
            .and_then(|c| c.probe_period)
    }

    /// The longest probe period of any container.
    pub(crate) fn any_probe_period(&self) -> Option<f64> {
        self.containers.iter().filter_map(|c| c.probe_period).reduce(f64::max)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub received: Timestamp,
    /// ADDED, MODIFIED or DELETED.
    pub watch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// `status.reason` (Evicted, DeadlineExceeded, NodeLost, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `status.message` (e.g. the eviction message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `status.qosClass`: Guaranteed, Burstable or BestEffort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<String>,
    /// `status.startTime`: when the kubelet first acknowledged the pod (whole seconds, node
    /// clock); the active deadline counts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    /// `spec.activeDeadlineSeconds`, which a running pod may have set or shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// `metadata.generation`: the API server bumps it on every change of the pod's spec. Absent
    /// in stored timelines written before podlife kept it (a recording's raw pod objects carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// `status.observedGeneration`: the generation of the spec the kubelet last synced the pod
    /// from, written with its status (kubelets from 1.34 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The STATUS column of `kubectl get pods` for this snapshot (see `observe::status`).
    /// Absent in timelines written before it existed: `Timeline::fill_columns` computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The READY column of `kubectl get pods`, e.g. `1/2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_column: Option<String>,
}

impl Snapshot {
    pub fn container(&self, name: &str) -> Option<&ContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }
    pub fn condition(&self, ty: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.r#type == ty)
    }
    /// Equal apart from the receive time, watch type and resourceVersion.
    pub(crate) fn same_state(&self, other: &Snapshot) -> bool {
        self.phase == other.phase
            && self.conditions == other.conditions
            && self.containers == other.containers
            && self.deletion_timestamp == other.deletion_timestamp
            && self.deletion_grace_period_seconds == other.deletion_grace_period_seconds
            && self.reason == other.reason
            && self.message == other.message
            && self.qos_class == other.qos_class
            && self.start_time == other.start_time
            && self.active_deadline_seconds == other.active_deadline_seconds
            && self.generation == other.generation
            && self.observed_generation == other.observed_generation
    }
    /// The STATUS column (stored, or computed for timelines that predate it).
    pub fn status_column(&self, pod: &PodInfo) -> String {
        self.status
            .clone()
            .unwrap_or_else(|| super::status::pod_row(pod, self).status)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    pub r#type: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    pub name: String,
    pub kind: ContainerKind,
    /// The instance the current state belongs to (None while waiting before the first start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u32>,
    pub state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_terminated: Option<Terminated>,
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    pub restart_count: u32,
    /// `resources`: the requests and limits the kubelet reports the running container has
    /// (what it applied through the runtime; an in-place resize changes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// `allocatedResources`: the requests the kubelet admitted for the container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated_resources: BTreeMap<String, String>,
}

/// Requests and limits as the API shows them (quantities as written by their writer).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum State {
    Waiting {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Running {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at: Option<Timestamp>,
    },
    Terminated(Terminated),
    Unknown,
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::Waiting { .. } => "waiting",
            State::Running { .. } => "running",
            State::Terminated(_) => "terminated",
            State::Unknown => "unknown",
        }
    }
    pub fn reason(&self) -> Option<&str> {
        match self {
            State::Waiting { reason, .. } => reason.as_deref(),
            State::Terminated(t) => t.reason.as_deref(),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Terminated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u32>,
    pub exit_code: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The signal that ended the container, when the runtime reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// One run of a container (0 = first, n = after the n-th restart).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    pub container: String,
    pub kind: ContainerKind,
    pub instance: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The termination message (terminationMessagePath, or the log tail with FallbackToLogsOnError).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen_running: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen_terminated: Option<Timestamp>,
    /// First receive time of any status mentioning this instance.
    pub first_seen: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventOccurrence {
    pub received: Timestamp,
    pub reason: String,
    /// Normal or Warning.
    pub r#type: String,
    pub message: String,
    /// The container (from involvedObject.fieldPath), if the event is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Which repetition of the Event object this is (its `count` at the time).
    pub count: u32,
    /// Node-clock time: `lastTimestamp` (1 s) or `eventTime` (µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    /// Precision of `time` in ns (1e9 for lastTimestamp, 1e3 for eventTime).
    pub time_precision_ns: u64,
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// True when several repetitions arrived in one delivery, so the receive time is only an upper bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coalesced: bool,
    /// How many occurrences this item stands for: repetitions `count - repeats + 1 ..= count`
    /// of the Event object. A delivery whose `count` jumped from 3 to 9 is one item with
    /// `repeats: 6`, never six items, so a `count: 2147483647` costs one item, not 2^31.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeats: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl EventOccurrence {
    /// The repetition number of the first occurrence this item stands for.
    pub(crate) fn first_count(&self) -> u32 {
        self.count.saturating_sub(self.repeats.max(1)) + 1
    }

    /// `#7`, or `#4–#9` for an item standing for several repetitions.
    pub fn label(&self) -> String {
        if self.repeats > 1 {
            format!("#{}–#{}", self.first_count(), self.count)
        } else {
            format!("#{}", self.count)
        }
    }
}

/// The `n`-th (from 1) of the occurrences `items` stand for (each `repeats` of them), in order,
/// with its repetition number: counting, never expanding.
pub(crate) fn nth_occurrence<'a>(items: &[&'a EventOccurrence], n: u64) -> Option<(&'a EventOccurrence, u32)> {
    let mut before = 0u64;
    for o in items {
        let k = u64::from(o.repeats.max(1));
        if n >= 1 && n <= before + k {
            // `n - before - 1 < k <= u32::MAX`, so the sum fits.
            let at = o.first_count().saturating_add((n - before - 1) as u32);
            return Some((o, at));
        }
        before += k;
    }
    None
}

/// How many occurrences `items` stand for.
pub fn occurrences(items: &[&EventOccurrence]) -> u64 {
    items.iter().map(|o| u64::from(o.repeats.max(1))).sum()
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    pub container: String,
    pub instance: u32,
    /// CRI timestamp (node clock, ns).
    pub time: Timestamp,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<Timestamp>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub kind: ActionKind,
    /// When the request was sent (harness clock).
    pub sent: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Timestamp>,
    /// Delete grace period override, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// An `exec` step's result, as received: judged by `exec` expectations, live and on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<Box<ExecResult>>,
    /// An `update` step's record: how many updates the API accepted and the generations it
    /// answered, judged by `update` expectations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Box<UpdateResult>>,
}

/// What an `update` step did: `times` GET-change-PUT rounds, each PUT carrying the
/// resourceVersion its GET read. `error` set means it stopped before all were accepted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UpdateResult {
    /// The step's name.
    pub name: String,
    /// Updates asked for.
    pub times: u32,
    /// Updates the API accepted.
    pub accepted: u32,
    /// `metadata.generation` of the pod the first GET read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_read: Option<i64>,
    /// `metadata.generation` of the API's answer to the last accepted PUT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the first request was sent (the action is sent when its last PUT was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sent: Option<Timestamp>,
    /// 409 answers (the pod changed between a GET and its PUT), each answered by reading again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conflicts: u32,
    /// Why it stopped before every update was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What an exec returned. `error` set means it did not complete (timeout, an error status
/// before the stream opened, a stream broken before the exit status): its output is partial
/// and decides nothing.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExecResult {
    /// The step's name.
    pub name: String,
    pub container: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// From the exec status (`Success` is 0; `NonZeroExitCode` carries the code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why the exec did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// More output than podlife keeps (`EXEC_OUTPUT_CAP` per stream) was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The websocket subprotocol asked for, when not kube's own (`v5.channel.k8s.io`, falling
    /// back to v4: recordings made before the choice existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// Output kept per stream of an exec: upstream's commands print a few bytes.
pub(crate) const EXEC_OUTPUT_CAP: usize = 64 * 1024;

pub use crate::suite::ActionKind;

impl Timeline {
    pub fn instances_of<'a>(&'a self, container: &'a str) -> impl Iterator<Item = &'a Instance> + 'a {
        self.instances.iter().filter(move |i| i.container == container)
    }

    pub fn logs_of<'a>(&'a self, container: &'a str, instance: Option<u32>) -> impl Iterator<Item = &'a LogLine> + 'a {
        self.logs
            .iter()
            .filter(move |l| l.container == container && instance.is_none_or(|i| l.instance == i))
    }

    /// The final phase observed.
    pub fn final_phase(&self) -> Option<&str> {
        self.snapshots.iter().rev().find_map(|s| s.phase.as_deref())
    }

    /// True when no more changes are expected: the pod is gone, or it ended in a terminal phase
    /// with every container terminated.
    /// The longest any event of the pod took to arrive after its own time (node clock; an
    /// event's `lastTimestamp` is whole seconds, so this may exceed the true delay by up to
    /// 1 s). The kubelet posts its events one at a time, and on a loaded node they queue behind
    /// each other: an event it recorded as the pod settled can arrive this late too. Only
    /// events of this observation count (their time not before `since`, less the time's
    /// precision): an older one is a replayed or reused Event, or a node clock far behind.
    pub(crate) fn event_delay(&self, since: Timestamp) -> std::time::Duration {
        let since = since - jiff::SignedDuration::from_secs(1);
        self.events
            .iter()
            .filter(|e| !e.coalesced && e.time.is_some_and(|t| t >= since))
            .filter_map(|e| {
                let d = e.received.duration_since(e.time?);
                d.is_positive().then(|| d.unsigned_abs())
            })
            .max()
            .unwrap_or_default()
    }

    pub(crate) fn settled(&self) -> bool {
        if self.complete || self.deleted.is_some() {
            return true;
        }
        matches!(self.final_phase(), Some("Succeeded" | "Failed"))
    }

    /// Fills the kubectl columns (STATUS, READY) of snapshots that lack them (timelines
    /// written before they existed).
    pub fn fill_columns(&mut self) {
        for s in &mut self.snapshots {
            if s.status.is_none() {
                let row = super::status::pod_row(&self.pod, s);
                s.status = Some(row.status);
                s.ready_column = Some(row.ready);
            }
        }
    }

    /// The STATUS column of every snapshot, with the snapshot.
    pub fn status_column(&self) -> impl Iterator<Item = (&Snapshot, String)> + '_ {
        self.snapshots.iter().map(|s| (s, s.status_column(&self.pod)))
    }

    /// Gaps of the pod watch.
    pub fn pod_gaps(&self) -> impl Iterator<Item = &Gap> + '_ {
        self.gaps.iter().filter(|g| g.source == EvidenceSource::PodWatch)
    }

    /// Gaps of the Event watch.
    pub(crate) fn event_gaps(&self) -> impl Iterator<Item = &Gap> + '_ {
        self.gaps.iter().filter(|g| g.source == EvidenceSource::Events)
    }

    /// Gaps in the logs of `container` (instance `None`: any instance).
    pub(crate) fn log_gaps(&self, container: &str, instance: Option<u32>) -> impl Iterator<Item = &Gap> + '_ {
        let container = container.to_string();
        self.gaps
            .iter()
            .filter(move |g| g.source.covers_logs(&container, instance))
    }

    /// The gap recorded for exactly this instance's log (not a container-wide one).
    pub(crate) fn instance_log_gap(&self, container: &str, instance: u32) -> Option<&Gap> {
        self.gaps.iter().find(|g| {
            matches!(&g.source, EvidenceSource::Logs { container: Some(c), instance: Some(i) }
                if c == container && *i == instance)
        })
    }

    /// A pod-watch gap still open when the observation ended: the last state seen may be stale.
    pub(crate) fn pod_gap_at_end(&self) -> Option<&Gap> {
        self.pod_gaps().find(|g| g.to.is_none())
    }

    /// True when `g` is an API outage: the `Api` gap or one of its copies on the pod watch and
    /// the Event watch (same span).
    pub(crate) fn is_outage(&self, g: &Gap) -> bool {
        g.source == EvidenceSource::Api
            || g.back.is_some()
            || self
                .gaps
                .iter()
                .any(|a| a.source == EvidenceSource::Api && a.from == g.from && a.to == g.to)
    }

    /// When the API server took new requests again after the outage `g` (`None`: `g` is no
    /// outage, or it never answered again in this observation). The outage's own record, or
    /// earlier a stream of this case that came back inside it: a watch or log request answered
    /// proves the API server took new requests then.
    pub(crate) fn writes_resumed(&self, g: &Gap) -> Option<Timestamp> {
        if !self.is_outage(g) {
            return None;
        }
        let from = g.from?;
        let recorded = self
            .gaps
            .iter()
            .filter(|a| a.from == g.from && a.to == g.to)
            .filter_map(|a| a.back);
        let reconnected = self
            .gaps
            .iter()
            .filter(|a| matches!(a.source, EvidenceSource::PodWatch | EvidenceSource::Events))
            .filter(|a| a.clock == GapClock::Harness && !self.is_outage(a))
            .filter_map(|a| a.to)
            .filter(|t| *t > from && g.to.is_none_or(|e| *t <= e));
        recorded.chain(reconnected).min()
    }

    /// The latest moment the observation is known to have lasted: its last received item.
    pub(crate) fn observed_until(&self) -> Option<Timestamp> {
        self.snapshots
            .iter()
            .map(|s| s.received)
            .chain(self.events.iter().map(|e| e.received))
            .chain(self.actions.iter().map(|a| a.done.unwrap_or(a.sent)))
            .chain(self.unchanged.iter().copied())
            .chain(self.deleted)
            .max()
    }

    /// The time of the first item (used as the origin of relative times in reports).
    pub(crate) fn origin(&self) -> Option<Timestamp> {
        let mut t: Vec<Timestamp> = vec![];
        t.extend(self.actions.iter().map(|a| a.sent));
        t.extend(self.snapshots.first().map(|s| s.received));
        t.into_iter().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn gap(source: EvidenceSource, from: Option<i64>, to: Option<i64>) -> Gap {
        Gap {
            source,
            from: from.map(at),
            to: to.map(at),
            back: None,
            clock: GapClock::Harness,
            reason: "503".into(),
        }
    }

    fn logs(container: Option<&str>, instance: Option<u32>) -> EvidenceSource {
        EvidenceSource::Logs {
            container: container.map(str::to_string),
            instance,
        }
    }

    #[test]
    fn a_log_gap_covers_its_container_and_instance_only() {
        assert!(logs(Some("main"), Some(1)).covers_logs("main", Some(1)));
        assert!(logs(Some("main"), Some(1)).covers_logs("main", None));
        assert!(!logs(Some("main"), Some(1)).covers_logs("main", Some(0)));
        assert!(!logs(Some("main"), None).covers_logs("side", Some(0)));
        assert!(logs(None, None).covers_logs("side", Some(0)));
        assert!(!EvidenceSource::PodWatch.covers_logs("main", None));
        assert_eq!(logs(Some("main"), Some(1)).label(), "log of main#1");
        assert_eq!(logs(None, Some(1)).label(), "container logs");
    }

    #[test]
    fn a_gap_overlaps_a_half_open_span() {
        let g = gap(EvidenceSource::PodWatch, Some(10), Some(20));
        assert!(g.overlaps(Some(at(15)), Some(at(30))));
        assert!(g.overlaps(None, None));
        // (20 s, 30 s]: the gap ends where the span opens.
        assert!(!g.overlaps(Some(at(20)), Some(at(30))));
        assert!(!g.overlaps(Some(at(0)), Some(at(10))));
        assert!(g.overlaps(Some(at(0)), Some(at(11))));
        assert!(g.starts_before(at(11)) && !g.starts_before(at(10)));
        let open = gap(EvidenceSource::PodWatch, None, None);
        assert!(open.starts_before(at(0)) && open.overlaps(Some(at(100)), None));
    }

    #[test]
    fn a_gap_describes_its_span_on_its_clock() {
        let g = gap(EvidenceSource::Events, Some(1), Some(2));
        assert_eq!(g.describe(), "events watch down 08:00:01.000–08:00:02.000 (503)");
        assert_eq!(
            gap(EvidenceSource::PodWatch, Some(1), None).describe(),
            "pod watch down from 08:00:01.000 to the end (503)"
        );
        assert_eq!(
            gap(EvidenceSource::Api, None, None).describe(),
            "API server never available (503)"
        );
        let node = Gap {
            clock: GapClock::Node,
            ..gap(logs(Some("main"), None), Some(1), None)
        };
        assert_eq!(
            node.describe(),
            "logs of main incomplete after its line of 08:00:01.000 (503)"
        );
        // A kubelet restart loses no evidence: it is named by its reason alone.
        let restart = Gap {
            reason: "the kubelet restarted".into(),
            ..gap(EvidenceSource::Kubelet, Some(1), Some(2))
        };
        assert_eq!(
            restart.describe(),
            "the kubelet restarted between 08:00:01.000 and 08:00:02.000"
        );
    }

    fn occurrence(count: u32, repeats: u32) -> EventOccurrence {
        EventOccurrence {
            received: at(0),
            reason: "BackOff".into(),
            r#type: "Warning".into(),
            message: String::new(),
            container: None,
            count,
            time: None,
            time_precision_ns: 1_000_000_000,
            uid: "e".into(),
            source: None,
            coalesced: false,
            repeats,
        }
    }

    #[test]
    fn the_event_delay_is_the_latest_arrival_after_the_events_own_time() {
        let mut tl = Timeline::default();
        let delay = |tl: &Timeline| tl.event_delay(at(0));
        assert_eq!(delay(&tl), std::time::Duration::ZERO, "no event");
        let ev = |time: i64, received: i64, coalesced: bool| EventOccurrence {
            time: Some(at(time)),
            received: at(received),
            coalesced,
            ..occurrence(1, 1)
        };
        tl.events = vec![ev(0, 2, false), ev(1, 5, false), ev(6, 6, false)];
        assert_eq!(delay(&tl), std::time::Duration::from_secs(4));
        // An event from before the observation (a replayed one) says nothing of this node's queue.
        tl.events.push(ev(-100, 7, false));
        assert_eq!(delay(&tl), std::time::Duration::from_secs(4));
        // A node clock ahead of podlife's gives no negative delay; a coalesced delivery's
        // receive time is only an upper bound, so it does not count.
        tl.events = vec![ev(9, 5, false), ev(0, 30, true)];
        assert_eq!(delay(&tl), std::time::Duration::ZERO);
    }

    #[test]
    fn repeated_occurrences_are_counted_never_expanded() {
        let (a, b) = (occurrence(3, 1), occurrence(9, 6));
        assert_eq!(
            (b.first_count(), b.label(), a.label()),
            (4, "#4–#9".to_string(), "#3".to_string())
        );
        let items = [&a, &b];
        assert_eq!(occurrences(&items), 7);
        assert_eq!(nth_occurrence(&items, 1).map(|(o, n)| (o.count, n)), Some((3, 3)));
        assert_eq!(nth_occurrence(&items, 2).map(|(o, n)| (o.count, n)), Some((9, 4)));
        assert_eq!(nth_occurrence(&items, 7).map(|(o, n)| (o.count, n)), Some((9, 9)));
        assert!(nth_occurrence(&items, 8).is_none() && nth_occurrence(&items, 0).is_none());
        // A count of 2^31 − 1 is one item standing for as many occurrences.
        let huge = occurrence(i32::MAX as u32, i32::MAX as u32);
        assert_eq!(occurrences(&[&huge]), i32::MAX as u64);
    }

    fn snapshot(s: i64, phase: &str) -> Snapshot {
        serde_json::from_value(serde_json::json!({"received": at(s), "watch": "MODIFIED", "phase": phase})).unwrap()
    }

    #[test]
    fn a_pod_is_settled_once_gone_or_in_a_terminal_phase() {
        let mut tl = Timeline {
            snapshots: vec![snapshot(0, "Pending"), snapshot(1, "Running")],
            ..Timeline::default()
        };
        assert_eq!(tl.final_phase(), Some("Running"));
        assert!(!tl.settled());
        tl.snapshots.push(snapshot(2, "Succeeded"));
        assert!(tl.settled());
        tl.snapshots.pop();
        tl.deleted = Some(at(3));
        assert!(tl.settled());
    }

    #[test]
    fn an_outage_ends_for_writers_when_a_stream_came_back_inside_it() {
        let mut tl = Timeline::default();
        let api = gap(EvidenceSource::Api, Some(10), Some(60));
        tl.gaps.push(api.clone());
        assert!(tl.is_outage(&api));
        assert_eq!(tl.writes_resumed(&api), None);
        // The pod watch reconnected at 25 s, inside the outage.
        tl.gaps.push(gap(EvidenceSource::PodWatch, Some(12), Some(25)));
        assert_eq!(tl.writes_resumed(&api), Some(at(25)));
        // A recorded return wins when it is earlier.
        tl.gaps[0].back = Some(at(20));
        let api = tl.gaps[0].clone();
        assert_eq!(tl.writes_resumed(&api), Some(at(20)));
        // A gap that is no outage has no such moment.
        let events = gap(EvidenceSource::Events, Some(70), Some(80));
        assert!(!tl.is_outage(&events));
        assert_eq!(tl.writes_resumed(&events), None);
    }

    #[test]
    fn the_observation_lasts_until_its_last_item_and_its_gaps_are_found_by_source() {
        let mut tl = Timeline {
            snapshots: vec![snapshot(0, "Pending")],
            unchanged: vec![at(7)],
            ..Timeline::default()
        };
        assert_eq!(tl.observed_until(), Some(at(7)));
        assert_eq!(tl.origin(), Some(at(0)));
        tl.gaps = vec![
            gap(EvidenceSource::PodWatch, Some(1), Some(2)),
            gap(EvidenceSource::PodWatch, Some(5), None),
            gap(logs(Some("main"), Some(0)), None, None),
        ];
        assert_eq!(tl.pod_gap_at_end().map(|g| g.from), Some(Some(at(5))));
        assert!(tl.instance_log_gap("main", 0).is_some() && tl.instance_log_gap("main", 1).is_none());
        assert_eq!(tl.log_gaps("main", None).count(), 1);
        assert_eq!(tl.event_gaps().count(), 0);
    }
}
