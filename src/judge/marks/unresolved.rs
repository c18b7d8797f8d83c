//! Why a mark has not (yet) occurred in a timeline: one variant per cause, so a caller can tell
//! a mark that cannot be read (its text does not compile against the pod) from one not seen.

use crate::suite::model::{ActionKind, ContainerState};
use crate::suite::types::{InstanceSel, Occurrence, PatternError, TemplateError};

/// A container status flag a `ready` or `started` mark turns on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    Ready,
    Started,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flag::Ready => "ready",
            Flag::Started => "started",
        })
    }
}

/// Why `resolve` found no hit. The text is the evidence's, word for word.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unresolved {
    /// A `log` mark with neither text to match.
    #[error("neither `regex` nor `equals` given")]
    NoText,
    /// A mark's regex does not compile against the observed pod's template values.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("the pod never had an activeDeadlineSeconds")]
    NoActiveDeadline,
    #[error("the pod never had a status.startTime")]
    NoStartTime,
    #[error("no instance{instance} of `{container}` observed")]
    NoInstance { container: String, instance: InstanceSel },
    #[error("{container}#{instance} has no startedAt")]
    NoStartedAt { container: String, instance: u32 },
    #[error("{container}#{instance} has not terminated")]
    NotTerminated { container: String, instance: u32 },
    #[error("`{container}`{instance} never seen {state}")]
    NeverSeen {
        container: String,
        instance: InstanceSel,
        state: ContainerState,
    },
    #[error("`{container}` never reached restartCount {count}")]
    RestartsNotReached { container: String, count: u32 },
    /// `label` is the matcher's (`/regex/` or `"text"`), `matching` how many lines matched.
    #[error("no {occurrence} log line {label} in `{container}`{instance} ({matching} matching)")]
    NoLogLine {
        occurrence: Occurrence,
        label: String,
        container: String,
        instance: InstanceSel,
        matching: usize,
    },
    #[error("no log line from `{container}`{instance}")]
    NoLogLineFrom { container: String, instance: InstanceSel },
    /// A tick loop needs two lines to show its period.
    #[error("`{container}`{instance} logged one line: no tick period to measure")]
    OneTick { container: String, instance: InstanceSel },
    #[error("no {occurrence} {reason} event ({seen} seen)")]
    NoEvent {
        occurrence: Occurrence,
        reason: String,
        seen: u64,
    },
    #[error("phase {phase} never observed")]
    PhaseNever { phase: String },
    /// `label` is `Type=Status (reason) message /m/`.
    #[error("{label} never observed ({seen} times seen)")]
    ConditionNever { label: String, seen: usize },
    #[error("no {occurrence} turn of `{container}` {which}={value} ({seen} seen)")]
    NoFlagTurn {
        occurrence: Occurrence,
        container: String,
        which: Flag,
        value: bool,
        seen: usize,
    },
    /// `last_miss` is why the last snapshot did not show the resize (empty: none was seen).
    #[error("{occurrence} resize never reported ({seen} seen){}", last_seen(last_miss))]
    NotResized {
        occurrence: Occurrence,
        seen: usize,
        last_miss: String,
    },
    #[error("STATUS {status} never shown ({seen} times seen)")]
    StatusNever { status: String, seen: usize },
    #[error("observedGeneration {want} never seen (the latest: {latest})")]
    GenerationBehind { want: i64, latest: i64 },
    #[error("observedGeneration {want} never seen (the kubelet wrote none)")]
    NoGeneration { want: i64 },
    #[error("the pod was never seen deleted")]
    NotDeleted,
    #[error("no {occurrence} {action:?} action")]
    NoAction { occurrence: Occurrence, action: ActionKind },
}

impl From<TemplateError> for Unresolved {
    fn from(e: TemplateError) -> Self {
        Unresolved::Pattern(e.into())
    }
}

fn last_seen(miss: &str) -> String {
    if miss.is_empty() {
        String::new()
    } else {
        format!("; last seen: {miss}")
    }
}
