//! Small timelines and cases for the judge's unit tests: each rule is a pure function of an
//! expectation and a timeline, so a test builds the few items the rule reads and asserts the
//! outcome and a fragment of its evidence.

use jiff::Timestamp;

use super::J;
use super::verdict::Outcome;
use crate::observe::{
    Action, ActionKind, ContainerRef, EvidenceSource, Gap, GapClock, Instance, LogLine, Snapshot, Timeline,
};
use crate::suite::ContainerKind;
use crate::suite::model::Case;

/// `s` seconds after a fixed origin (whole seconds, like status times).
pub fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

/// `ms` milliseconds after the same origin.
pub(crate) fn at_ms(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_800_000_000_000 + ms).unwrap()
}

/// A case from the YAML of its `marks:` and `expect:` (everything after the case's header).
pub fn case(body: &str) -> Case {
    let yaml = format!("name: c\ndescription: d\nreference: r\nmanifest: m.yaml\n{body}");
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{yaml}\n{e}"))
}

/// A pod version received at `s` seconds: `status` holds its other fields (camelCase, as in a
/// stored timeline), e.g. `{"phase": "Running"}`.
pub(crate) fn snap(s: i64, status: serde_json::Value) -> Snapshot {
    let mut v = serde_json::json!({"received": at(s), "watch": "MODIFIED"});
    if let (Some(o), Some(extra)) = (v.as_object_mut(), status.as_object()) {
        o.extend(extra.clone());
    }
    serde_json::from_value(v).unwrap()
}

/// A container status for a snapshot: `state` is e.g. `{"state": "running"}` or
/// `{"state": "waiting", "reason": "CrashLoopBackOff"}`.
pub(crate) fn container_status(name: &str, state: serde_json::Value, restarts: u32, ready: bool) -> serde_json::Value {
    serde_json::json!({
        "name": name, "kind": "regular", "state": state, "ready": ready, "restartCount": restarts,
    })
}

/// A complete observation of the pod (with one regular container `main`) in these versions.
pub fn timeline(snapshots: Vec<Snapshot>) -> Timeline {
    let mut tl = Timeline {
        snapshots,
        complete: true,
        ..Timeline::default()
    };
    tl.pod.containers.push(ContainerRef {
        name: "main".into(),
        kind: ContainerKind::Regular,
        probe_period: None,
    });
    tl
}

/// Pod versions received at 0 s, 1 s, ... in these phases.
pub(crate) fn in_phases(list: &[&str]) -> Vec<Snapshot> {
    list.iter()
        .enumerate()
        .map(|(i, p)| snap(i as i64, serde_json::json!({"phase": p})))
        .collect()
}

/// A log line of `container`#`instance` written at `ms` milliseconds.
pub fn line(container: &str, instance: u32, ms: i64, text: &str) -> LogLine {
    LogLine {
        container: container.into(),
        instance,
        time: at_ms(ms),
        text: text.into(),
        received: None,
    }
}

/// Instance `n` of `container`, started and finished at these seconds (status times).
pub fn instance(container: &str, n: u32, started: Option<i64>, finished: Option<(i64, i32)>) -> Instance {
    Instance {
        container: container.into(),
        kind: ContainerKind::Regular,
        instance: n,
        container_id: Some(format!("containerd://{container}-{n}")),
        started_at: started.map(at),
        finished_at: finished.map(|(s, _)| at(s)),
        exit_code: finished.map(|(_, c)| c),
        reason: None,
        message: None,
        first_seen_running: None,
        first_seen_terminated: None,
        first_seen: at(started.unwrap_or(0)),
    }
}

/// One of our actions, sent at `ms` milliseconds and answered at once.
pub fn action(kind: ActionKind, ms: i64) -> Action {
    Action {
        kind,
        sent: at_ms(ms),
        done: Some(at_ms(ms)),
        grace_period_seconds: None,
        detail: None,
        exec: None,
        update: None,
    }
}

/// A gap of `source` between these seconds (`None`: open on that side), on the harness clock.
pub(crate) fn source_gap(source: EvidenceSource, from: Option<i64>, to: Option<i64>) -> Gap {
    Gap {
        source,
        from: from.map(at),
        to: to.map(at),
        back: None,
        clock: GapClock::Harness,
        reason: "test outage".into(),
    }
}

/// Asserts a judgement's outcome and that its evidence names `fragment`.
#[track_caller]
pub(crate) fn assert_judged(j: &J, outcome: Outcome, fragment: &str) {
    assert_eq!(j.outcome, outcome, "{}", j.evidence);
    assert!(
        j.evidence.contains(fragment),
        "evidence should name `{fragment}`: {}",
        j.evidence
    );
}
