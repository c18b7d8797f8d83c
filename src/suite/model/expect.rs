//! Expectations: what must hold on the observed timeline (`Expectation` and the data of each kind:
//! phase, container, condition, gap, event, log, backoff, never, statuses, statusRow, qosClass, exec).

use super::*;

/// What must hold on the observed timeline.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Expectation {
    /// The pod's final phase.
    Phase(PodPhase),
    /// The exact sequence of distinct phases observed, e.g. `[Pending, Running, Failed]`.
    Phases(Vec<PodPhase>),
    /// A container's final state.
    Container(ContainerExpect),
    /// A pod condition's observed status sequence and/or forbidden transition.
    Condition(ConditionExpect),
    /// Marks occur in this order (each strictly before the next).
    Order(Vec<MarkRef>),
    /// The time between two marks.
    Gap(GapExpect),
    /// An event was seen (occurrences counted with `count`).
    Event(EventExpect),
    /// A log line is present in a container's output.
    Log(LogExpect),
    /// Intervals between consecutive restarts (CrashLoopBackOff).
    Backoff(BackoffExpect),
    /// A mark must not occur (at all, or before another mark).
    Never(NeverExpect),
    /// The sequence of distinct STATUS texts `kubectl get pods -w` shows, e.g.
    /// `[Pending, ContainerCreating, Running, Completed]`. A listed status may be missing from
    /// the watch only when the timeline shows, by other evidence, that the pod was in it. An
    /// entry ending in `?` is optional: the node may or may not publish it (`DeadlineExceeded?`).
    Statuses(Vec<String>),
    /// A row of the status table: whenever the STATUS column shows `status`, the pod also has
    /// this phase, READY column, conditions, pod reason/message and container states.
    StatusRow(StatusRowExpect),
    /// The pod's `status.qosClass`.
    QosClass(QosClass),
    /// The recorded result of an `exec` step: its stdout, stderr and exit code.
    Exec(ExecExpect),
    /// The cgroup values a container's own `exec` of the cgroup files read (cgroup v1 or v2),
    /// against the values the kubelet and runtime derive from these requests and limits.
    Cgroup(CgroupExpect),
    /// The recorded result of an `update` step: every update accepted, and the pod's
    /// `metadata.generation` the API answered.
    Update(UpdateExpect),
    /// The pod's `status.observedGeneration` is exactly `is` in every state from `after` (the
    /// state current then) until `before` (or the end of the observation).
    ObservedGeneration(ObservedGenerationExpect),
}

/// `cgroup: {exec: c1-after, requests: {cpu: 20m}, limits: {cpu: 30m, memory: 45Mi}}`: the
/// `exec` step of that name printed one `<file> <value>` line per cgroup file (v1:
/// `cpu.cfs_quota_us`, `cpu.shares`, `memory.limit_in_bytes`; v2: `cpu.max`, `cpu.weight`,
/// `memory.max`), and each equals what these resources set: the CFS quota from the cpu limit
/// (100 ms period, at least 1 ms; no limit: unlimited), the shares (v2: the weight) from the cpu
/// request (or the limit without one; at least 2), the memory limit in bytes. No memory limit is
/// not checked, as upstream.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CgroupExpect {
    /// The `exec` step whose output is judged.
    pub exec: Loc<String>,
    /// The container's `cpu` request, as the pod now has it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    /// The container's `cpu`/`memory` limits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
}

/// `update: {name: tolerations, generationRead: 1, generation: 2}`: judged on the recorded
/// record of the step. An update that did not complete leaves it undecided.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateExpect {
    /// The `update` step's name.
    pub name: Loc<String>,
    /// `metadata.generation` of the pod as the step's first GET read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_read: Option<i64>,
    /// `metadata.generation` in the API's answer to the step's last PUT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// `observedGeneration: {is: 1, after: emptyUpdate, before: tolerationsUpdate}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObservedGenerationExpect {
    /// The value every state in the window shows.
    pub is: i64,
    /// From the state current at this mark.
    pub after: MarkRef,
    /// Until this mark (default: the end of the observation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<MarkRef>,
}

/// `exec: {name: marco, stdout: "marco\n", exitCode: 0}`: judged on the recorded result. An exec
/// that could not complete (timeout, error status, broken stream) leaves it undecided.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecExpect {
    /// The `exec` step's name.
    pub name: Loc<String>,
    /// The whole stdout is exactly this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<Exact>,
    /// The stdout matches this regex (anywhere; anchor it, or use `(?s)`, as needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_regex: Option<Pattern>,
    /// The whole stderr is exactly this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<Exact>,
    /// The stderr matches this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_regex: Option<Pattern>,
    /// The command's exit code (from the exec status: Success is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl Expectation {
    pub fn kind(&self) -> &'static str {
        match self {
            Expectation::Phase(_) => "phase",
            Expectation::Phases(_) => "phases",
            Expectation::Container(_) => "container",
            Expectation::Condition(_) => "condition",
            Expectation::Order(_) => "order",
            Expectation::Gap(_) => "gap",
            Expectation::Event(_) => "event",
            Expectation::Log(_) => "log",
            Expectation::Backoff(_) => "backoff",
            Expectation::Never(_) => "never",
            Expectation::Statuses(_) => "statuses",
            Expectation::StatusRow(_) => "statusRow",
            Expectation::QosClass(_) => "qosClass",
            Expectation::Exec(_) => "exec",
            Expectation::Cgroup(_) => "cgroup",
            Expectation::Update(_) => "update",
            Expectation::ObservedGeneration(_) => "observedGeneration",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerExpect {
    pub name: Loc<String>,
    /// Which instance's state (default: the last one observed).
    #[serde(default = "last_instance")]
    pub instance: InstanceSel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
    /// Exit code of the selected instance; for `instance: last` while waiting or running, of
    /// the last terminated instance (lastState).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The reason of the selected state: terminated (Completed, Error, OOMKilled) or, for the
    /// current state of `instance: last`, waiting (CrashLoopBackOff, ErrImageNeverPull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Final restartCount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_count: Option<Count>,
    /// The termination message of the selected terminated instance (from
    /// terminationMessagePath, or the log tail with FallbackToLogsOnError) must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
    /// The termination message must be exactly this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_equals: Option<Exact>,
    /// The final `ready` flag of the container's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The final `started` flag of the container's status (startup probe passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// Waiting reasons that must have been seen at some point (e.g. CrashLoopBackOff).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_reasons_seen: Vec<String>,
    /// Every waiting state observed has one of these reasons (e.g. app containers only ever
    /// `PodInitializing` while the init containers have not completed, as upstream's init
    /// container tests require of every pod watch event).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_reasons_only: Vec<String>,
    /// The container must never have started (no instance, no log).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub never_started: bool,
}

pub(super) fn last_instance() -> InstanceSel {
    InstanceSel::Last
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConditionExpect {
    pub r#type: String,
    /// Exact sequence of distinct statuses observed (absent condition not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Vec<CondStatus>>,
    /// Final status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<CondStatus>,
    /// A transition that must never be observed, e.g. `[True, False]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never: Option<[CondStatus; 2]>,
    /// The final reason of the condition (e.g. `PodCompleted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The final message of the condition must match this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GapExpect {
    pub from: MarkRef,
    pub to: MarkRef,
    /// Judge the gap once per instance of this container: marks with `instance: each` take
    /// each instance in turn (`from` and `to` of the same instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_each_instance: Option<Loc<String>>,
    /// Expected gap; use with `tolerance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Dur>,
    /// The named allowances (`suite::allowances`, e.g. `[reaction, syncTick]`) the bound adds to
    /// its mechanism's nominal time; `[]`: the bound is the mechanism's own time. Status-time
    /// precision is added by the judge and never named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Loc<Vec<String>>>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventExpect {
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Loc<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
    /// `Normal` or `Warning`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    /// Occurrences (deduplicated events count by `count`); default at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Count>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogExpect {
    pub container: Loc<String>,
    /// Lines matching this regex (give `regex` or `equals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<Pattern>,
    /// Lines exactly equal to this text (templates such as `${pod.name}` allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Exact>,
    #[serde(default)]
    pub instance: InstanceSel,
    /// Matching lines; default at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Count>,
}

impl LogExpect {
    pub fn text(&self) -> TextMatch<'_> {
        TextMatch::of(self.regex.as_ref(), self.equals.as_ref())
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackoffExpect {
    pub container: Loc<String>,
    /// Minimum number of restarts that must be observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_restarts: Option<u32>,
    /// How an interval is measured: `status` (finishedAt → next startedAt, 1 s precision) or
    /// `logs` (last log line → next instance's first log line, ns precision).
    #[serde(default)]
    pub measure: BackoffMeasure,
    /// Explicit bounds, interval by interval (the i-th restart's wait).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Bounds>,
    /// Or a doubling model: wait i (from 0) is `base·factor^(i-1)` capped at `cap`, the first 0 when `firstImmediate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubling: Option<Doubling>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BackoffMeasure {
    #[default]
    Status,
    Logs,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Bounds {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Dur>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Doubling {
    /// First back-off step (kubelet: 10s).
    pub base: Dur,
    /// Multiplier (kubelet: 2).
    #[serde(default = "two")]
    pub factor: f64,
    /// Cap (kubelet: 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Dur>,
    /// The first restart does not wait.
    #[serde(default)]
    pub first_immediate: bool,
    /// Accepted extra wait below the nominal step (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early: Option<Dur>,
    /// Accepted extra wait above the nominal step, besides `jitter` (default 15s without
    /// `jitter`, 0s with it): the kubelet's work-queue poll and the container's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Dur>,
    /// The kubelet re-queues a pod in back-off after the remaining back-off times a random
    /// factor in [1, 1 + jitter) (the pod worker's `workerBackOffPeriodJitterFactor`, 0.5):
    /// a restart may come up to `jitter` × the step (capped by `jitterCap`) after it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// The re-queue delay is capped at the pod worker's resync interval (kubelet: 1m), so the
    /// jitter adds at most `jitter` × this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_cap: Option<Dur>,
}

pub(super) fn two() -> f64 {
    2.0
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NeverExpect {
    pub mark: MarkRef,
    /// Only forbidden after this mark (which must occur); with `before`, between the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<MarkRef>,
    /// Only forbidden before this mark (which must occur).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<MarkRef>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StatusRowExpect {
    /// The STATUS text the row is about, e.g. `ImagePullBackOff`; or a list of the texts a
    /// conformant node may show for the same state (`[Error, ContainerStatusUnknown]` for an
    /// evicted container, see the status suite), the row holding for each shown.
    pub status: StatusText,
    /// The phase while it is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodPhase>,
    /// The READY column while it is shown, e.g. `0/1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    /// Condition statuses while it is shown, e.g. `{Initialized: True, Ready: False}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conditions: BTreeMap<String, CondStatus>,
    /// `status.reason` while it is shown (Evicted, DeadlineExceeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `status.message` while it is shown must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
    /// Container states while it is shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<RowContainer>,
}

/// One STATUS text, or the texts a conformant node may show for the same state.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusText {
    One(String),
    AnyOf(Vec<String>),
}

impl StatusText {
    pub fn texts(&self) -> &[String] {
        match self {
            StatusText::One(s) => std::slice::from_ref(s),
            StatusText::AnyOf(v) => v,
        }
    }

    pub fn matches(&self, shown: &str) -> bool {
        self.texts().iter().any(|t| t == shown)
    }
}

impl std::fmt::Display for StatusText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.texts().join(" or "))
    }
}

/// A container's status while a STATUS is shown.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RowContainer {
    pub name: Loc<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
    /// Reason of the current state (waiting or terminated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Exit code of the terminated state, or of lastState while waiting or running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The container's `ready` flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
}

/// `status.qosClass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    pub fn as_str(&self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

/// At most this many optional (`?`) entries in one `statuses` list: each doubles the sequences
/// the judge tries, and a list that is mostly optional asserts little.
pub(crate) const MAX_OPTIONAL_STATUSES: usize = 4;

/// A `statuses` entry: its STATUS text and whether it is optional (`Text?`: a status the node
/// may or may not publish, e.g. the pod reason the kubelet writes with the terminal phase before
/// the container's own terminated state reaches the API).
pub(crate) fn status_entry(s: &str) -> (&str, bool) {
    match s.strip_suffix('?') {
        Some(t) => (t.trim_end(), true),
        None => (s, false),
    }
}
