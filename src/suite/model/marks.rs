//! Marks: named instants on the timeline that expectations and steps refer to (`MarkRef`, `MarkSpec` and
//! the data of each kind: container state, restarts, log line, event, phase, condition, status, action).

use super::*;

/// A reference to a mark: the name of one in `marks`, or a mark written inline.
#[derive(Clone, Debug)]
pub enum MarkRef {
    Named(Loc<String>),
    Inline(Box<MarkSpec>),
}

impl MarkRef {
    pub fn label(&self) -> String {
        match self {
            MarkRef::Named(n) => format!("`{}`", n.value),
            MarkRef::Inline(m) => m.to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for MarkRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A string is a name; a mapping is an inline mark. Hand-written so a bad inline mark
        // reports its own error rather than serde's "did not match any variant".
        let v = serde_saphyr::Spanned::<MarkRefRaw>::deserialize(d)?;
        let (line, col) = (v.referenced.line(), v.referenced.column());
        Ok(match v.value {
            MarkRefRaw::Named(s) => MarkRef::Named(Loc { value: s, line, col }),
            MarkRefRaw::Inline(m) => MarkRef::Inline(m),
        })
    }
}

pub(super) enum MarkRefRaw {
    Named(String),
    Inline(Box<MarkSpec>),
}

impl<'de> Deserialize<'de> for MarkRefRaw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MarkRefRaw;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mark name or an inline mark such as `{phase: Running}`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<MarkRefRaw, E> {
                Ok(MarkRefRaw::Named(s.to_string()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<MarkRefRaw, A::Error> {
                MarkSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|m| MarkRefRaw::Inline(Box::new(m)))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for MarkRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MarkRef::Named(n) => s.serialize_str(n),
            MarkRef::Inline(m) => m.serialize(s),
        }
    }
}

impl JsonSchema for MarkRef {
    fn schema_name() -> Cow<'static, str> {
        "MarkRef".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let inline = g.subschema_for::<MarkSpec>();
        json_schema!({
            "description": "A mark name (a key of `marks`) or an inline mark.",
            "anyOf": [{"type": "string"}, inline]
        })
    }
}

/// A point in time on the observed timeline.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum MarkSpec {
    /// A container instance's `startedAt` from status (1 s precision, node clock).
    ContainerStarted(ContainerInstanceRef),
    /// A container instance's `finishedAt` from status (1 s precision, node clock).
    ContainerTerminated(ContainerInstanceRef),
    /// The first pod watch event showing the instance in a state (harness receive time).
    ContainerSeen(ContainerSeen),
    /// The restartCount of a container reaching a value (harness receive time).
    Restarts(RestartsMark),
    /// A log line matching a regex (CRI timestamp, ns precision, node clock).
    Log(LogMark),
    /// First log line of a container instance.
    FirstLogLine(ContainerInstanceRef),
    /// Last log line of a container instance (approximates its exit or kill).
    LastLogLine(ContainerInstanceRef),
    /// When a container instance's periodic log loop (a tick) stopped, e.g. killed: after its
    /// last line and within one loop period of it. The period is measured from the instance's
    /// own last lines, so the mark's uncertainty is that of the evidence judged (a 200 ms loop
    /// in old recordings, 20 ms in today's manifests).
    TickStopped(ContainerInstanceRef),
    /// An occurrence of a kubelet/scheduler event (receive time; `count` repetitions count).
    Event(EventMark),
    /// The pod first observed in a phase (harness receive time).
    Phase(PodPhase),
    /// A pod condition first observed with a status (harness receive time).
    Condition(ConditionMark),
    /// The STATUS column of `kubectl get pods` changing to a text, e.g. `{status: CrashLoopBackOff}`
    /// or `{status: {is: ErrImagePull, occurrence: 2}}` (harness receive time, like `phase`).
    Status(StatusMark),
    /// The pod's DELETED watch event (harness receive time).
    PodGone,
    /// The pod's `activeDeadlineSeconds` running out, as the kubelet counts it: `status.startTime`
    /// plus the deadline (1 s precision, node clock), or the first snapshot carrying a deadline
    /// already past when it was set (harness receive time): a deadline cannot expire before the
    /// kubelet learns of it.
    ActiveDeadline,
    /// The first snapshot whose `status.observedGeneration` is at least this (harness receive
    /// time): the kubelet has synced the pod from the spec of that generation and written its
    /// status. `observedGeneration: 2`.
    ObservedGeneration(i64),
    /// One of podlife's own actions (harness clock).
    Action(ActionMark),
    /// A container's `ready` status flag becoming a value (harness receive time).
    Ready(FlagMark),
    /// A container's `started` status flag (startup probe passed; not `startedAt`) becoming a
    /// value (harness receive time).
    Started(FlagMark),
    /// A resize done, as the kubelet reports it: the first pod snapshot (harness receive time)
    /// in which every named container's `status.containerStatuses[].resources` equals these
    /// requests and limits (by value; a resource not given must be absent), its
    /// `allocatedResources` equals the requests, and no PodResizePending or PodResizeInProgress
    /// condition is left; `occurrence` counts the times the snapshots turn to match.
    Resized(ResizedMark),
}

impl MarkSpec {
    /// The YAML key of the variant (`containerStarted`, `log`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            MarkSpec::ContainerStarted(_) => "containerStarted",
            MarkSpec::ContainerTerminated(_) => "containerTerminated",
            MarkSpec::ContainerSeen(_) => "containerSeen",
            MarkSpec::Restarts(_) => "restarts",
            MarkSpec::Log(_) => "log",
            MarkSpec::FirstLogLine(_) => "firstLogLine",
            MarkSpec::LastLogLine(_) => "lastLogLine",
            MarkSpec::TickStopped(_) => "tickStopped",
            MarkSpec::Event(_) => "event",
            MarkSpec::Phase(_) => "phase",
            MarkSpec::Condition(_) => "condition",
            MarkSpec::Status(_) => "status",
            MarkSpec::PodGone => "podGone",
            MarkSpec::ActiveDeadline => "activeDeadline",
            MarkSpec::ObservedGeneration(_) => "observedGeneration",
            MarkSpec::Action(_) => "action",
            MarkSpec::Ready(_) => "ready",
            MarkSpec::Started(_) => "started",
            MarkSpec::Resized(_) => "resized",
        }
    }
}

impl MarkSpec {
    /// The container whose instances `instance: each` ranges over, if the mark uses `each`.
    pub(crate) fn each_container(&self) -> Option<&str> {
        let (c, i) = match self {
            MarkSpec::ContainerStarted(c)
            | MarkSpec::ContainerTerminated(c)
            | MarkSpec::FirstLogLine(c)
            | MarkSpec::LastLogLine(c) => (&c.container, c.instance),
            MarkSpec::ContainerSeen(c) => (&c.container, c.instance),
            MarkSpec::Log(l) => (&l.container, l.instance),
            _ => return None,
        };
        (i == InstanceSel::Each).then_some(c.as_str())
    }
}

impl fmt::Display for MarkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarkSpec::ContainerStarted(c) => write!(f, "{}{} started", c.container, c.instance),
            MarkSpec::ContainerTerminated(c) => write!(f, "{}{} terminated", c.container, c.instance),
            MarkSpec::ContainerSeen(c) => write!(f, "{}{} seen {}", c.container, c.instance, c.state),
            MarkSpec::Restarts(r) => write!(f, "{} restartCount {}", r.container, r.count),
            MarkSpec::Log(l) => write!(
                f,
                "{} log line {} {}{}",
                l.occurrence,
                l.text(),
                l.container,
                l.instance
            ),
            MarkSpec::FirstLogLine(c) => write!(f, "first log line of {}{}", c.container, c.instance),
            MarkSpec::LastLogLine(c) => write!(f, "last log line of {}{}", c.container, c.instance),
            MarkSpec::TickStopped(c) => write!(f, "tick loop of {}{} stopped", c.container, c.instance),
            MarkSpec::Event(e) => {
                write!(f, "{} event {}", e.occurrence, e.reason)?;
                if let Some(c) = &e.container {
                    write!(f, " on `{c}`")?;
                }
                if let Some(m) = &e.message {
                    write!(f, " message {m}")?;
                }
                Ok(())
            }
            MarkSpec::Phase(p) => write!(f, "phase {p:?}"),
            MarkSpec::Condition(c) => {
                write!(f, "{}={:?}", c.r#type, c.status)?;
                if let Some(r) = &c.reason {
                    write!(f, " reason {r}")?;
                }
                if let Some(m) = &c.message {
                    write!(f, " message {m}")?;
                }
                Ok(())
            }
            MarkSpec::Status(st) => write!(f, "{} STATUS {}", st.occurrence, st.is),
            MarkSpec::PodGone => f.write_str("pod gone"),
            MarkSpec::ActiveDeadline => f.write_str("active deadline ran out"),
            MarkSpec::ObservedGeneration(g) => write!(f, "observedGeneration {g}"),
            MarkSpec::Action(a) => write!(f, "our {:?}", a.action),
            MarkSpec::Ready(r) => write!(f, "{} {} ready={}", r.occurrence, r.container, r.value),
            MarkSpec::Started(r) => write!(f, "{} {} started={}", r.occurrence, r.container, r.value),
            MarkSpec::Resized(r) => {
                let each: Vec<String> = r.containers.iter().map(|(n, x)| format!("{n} {}", x.value)).collect();
                write!(f, "{} resized: {}", r.occurrence, each.join("; "))
            }
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerInstanceRef {
    pub container: Loc<String>,
    /// Default: the first instance (0).
    #[serde(default = "first_instance")]
    pub instance: InstanceSel,
}

pub(super) fn first_instance() -> InstanceSel {
    InstanceSel::Nth(0)
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerSeen {
    pub container: Loc<String>,
    #[serde(default = "first_instance")]
    pub instance: InstanceSel,
    pub state: ContainerState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ContainerState {
    Waiting,
    Running,
    Terminated,
}

impl fmt::Display for ContainerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContainerState::Waiting => "waiting",
            ContainerState::Running => "running",
            ContainerState::Terminated => "terminated",
        })
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestartsMark {
    pub container: Loc<String>,
    pub count: u32,
}

/// `ready: {container: main, value: false, occurrence: 2}`: the n-th time the flag is observed
/// turning to `value` (its first observed value counts as a turn).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlagMark {
    pub container: Loc<String>,
    /// Default true.
    #[serde(default = "yes")]
    pub value: bool,
    #[serde(default)]
    pub occurrence: Occurrence,
}

pub(super) fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogMark {
    pub container: Loc<String>,
    /// The line matches this regex (give `regex` or `equals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<Pattern>,
    /// The line is exactly this text (templates such as `${pod.name}` allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Exact>,
    /// Default: any instance.
    #[serde(default)]
    pub instance: InstanceSel,
    #[serde(default)]
    pub occurrence: Occurrence,
}

impl LogMark {
    pub fn text(&self) -> TextMatch<'_> {
        TextMatch::of(self.regex.as_ref(), self.equals.as_ref())
    }
}

/// How a text is matched: a regex, or exact equality.
#[derive(Clone, Copy, Debug)]
pub enum TextMatch<'a> {
    Regex(&'a Pattern),
    Equals(&'a Exact),
    /// Neither given (validation rejects it).
    Missing,
}

impl<'a> TextMatch<'a> {
    pub fn of(regex: Option<&'a Pattern>, equals: Option<&'a Exact>) -> Self {
        match (regex, equals) {
            (Some(r), _) => TextMatch::Regex(r),
            (None, Some(e)) => TextMatch::Equals(e),
            (None, None) => TextMatch::Missing,
        }
    }
}

impl fmt::Display for TextMatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextMatch::Regex(r) => r.fmt(f),
            TextMatch::Equals(e) => e.fmt(f),
            TextMatch::Missing => f.write_str("(no text)"),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventMark {
    pub reason: String,
    /// The container the event is about (from `involvedObject.fieldPath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Loc<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
    #[serde(default)]
    pub occurrence: Occurrence,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl PodPhase {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            "Unknown" => PodPhase::Unknown,
            _ => return None,
        })
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for PodPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum CondStatus {
    True,
    False,
    Unknown,
}

impl CondStatus {
    pub fn parse(s: &str) -> Self {
        match s {
            "True" => CondStatus::True,
            "False" => CondStatus::False,
            _ => CondStatus::Unknown,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConditionMark {
    /// Condition type: PodScheduled, PodReadyToStartContainers, Initialized, ContainersReady, Ready, ...
    pub r#type: String,
    pub status: CondStatus,
    /// The condition's reason must also be this (e.g. `PodCompleted`, `ContainersNotReady`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The condition's message must also match this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Pattern>,
    #[serde(default)]
    pub occurrence: Occurrence,
}

/// The STATUS column changing to `is` (the `occurrence`-th time it does).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusMark {
    /// The STATUS text, exactly as kubectl prints it: `Init:1/2`, `CrashLoopBackOff`, ...
    pub is: String,
    /// Which time the column changed to it: `first` (default), `last` or a number from 1.
    #[serde(default)]
    pub occurrence: Occurrence,
}

/// The STATUS column changing to `is` (the `occurrence`-th time it does).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct StatusMarkFull {
    /// The STATUS text, exactly as kubectl prints it: `Init:1/2`, `CrashLoopBackOff`, ...
    is: String,
    /// Which time the column changed to it: `first` (default), `last` or a number from 1.
    #[serde(default)]
    occurrence: Occurrence,
}

impl JsonSchema for StatusMark {
    fn schema_name() -> Cow<'static, str> {
        "StatusMark".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let full = g.subschema_for::<StatusMarkFull>();
        json_schema!({
            "description": "A STATUS text (its first occurrence), or `{is, occurrence}`.",
            "anyOf": [{"type": "string"}, full]
        })
    }
}

impl<'de> Deserialize<'de> for StatusMark {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `{status: Running}` is the first time the column shows Running; the mapping form
        // picks another occurrence. Hand-written so each form reports its own errors.
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StatusMark;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a STATUS text such as `CrashLoopBackOff`, or `{is: TEXT, occurrence: N}`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<StatusMark, E> {
                Ok(StatusMark {
                    is: s.to_string(),
                    occurrence: Occurrence::First,
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<StatusMark, A::Error> {
                let full = StatusMarkFull::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(StatusMark {
                    is: full.is,
                    occurrence: full.occurrence,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// `resized: {containers: {c1: {requests: {cpu: 25m}, limits: {cpu: 25m}}}, occurrence: 2}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResizedMark {
    /// The resources each named container must report (other containers are not looked at).
    pub containers: BTreeMap<String, Loc<ResizeResources>>,
    #[serde(default)]
    pub occurrence: Occurrence,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActionMark {
    pub action: ActionKind,
    #[serde(default)]
    pub occurrence: Occurrence,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// The pod apply request was sent.
    Apply,
    /// A pod DELETE request was sent.
    Delete,
    /// A metadata patch was sent.
    Patch,
    /// An auxiliary object (`objects`) was applied, before the pod.
    ApplyObject,
    /// An ephemeral container was added (`ephemeral` step).
    Ephemeral,
    /// A command was run in a container (`exec` step); the action carries its result.
    Exec,
    /// An object was applied while the pod ran (`object: {apply}` step: updated or created).
    UpdateObject,
    /// An object was deleted while the pod ran (`object: {delete}` step).
    DeleteObject,
    /// Containers were resized through `pods/resize` (`resize` step).
    Resize,
    /// The pod was updated (`update` step: GET, change, PUT with the resourceVersion read); a
    /// step repeated `times` is one action, sent when its last PUT was.
    Update,
}
