//! What a later pod snapshot proves about the past: status fields the kubelet only moves forward
//! (restartCount, terminal phases, a container instance's first start), so a snapshot after a gap
//! in the pod watch can prove that a mark did not occur inside the gap.
//!
//! Why: the pod watch is a sampled view. A gap hides the versions written while it lasted, but
//! some fields are monotonic by the kubelet's and the API server's rules, and a version of the
//! pod after the gap decides what the gap could have held, once the kubelet has caught up with
//! writing what happened in it (after an API outage, some seconds after the API server answers
//! again). Such a version is one received after that, one redelivered unchanged then, or the
//! last one while the pod watch stayed up until the end of the observation:
//! - `restartCount` only grows (the kubelet derives it from the runtime's containers, whose
//!   restart-count label it carries over from one instance to the next): a count still below N
//!   after the gap means it never reached N inside it;
//! - a terminal phase is final (the API server refuses a status update that leaves Succeeded or
//!   Failed): a pod in any other phase after the gap was never in that terminal phase before;
//! - the phase is Running only once a container has started (the kubelet's `getPhase` counts
//!   running or exited containers): a Pending pod none of whose containers ever started (each
//!   waiting, restartCount 0, no last state) was never Running;
//! - an instance N of a container exists only once restartCount reached N, and the current
//!   instance running proves it has not terminated.

use jiff::{SignedDuration, Timestamp};

use crate::observe::{ContainerStatus, Gap, Snapshot, State, Timeline, WRITE_CATCH_UP};
use crate::suite::model::*;
use crate::suite::types::InstanceSel;
use crate::util::ts_add;

/// How long a watch takes to deliver a version once written: milliseconds on a calm node,
/// seconds at most on a loaded one.
const DELIVERY: SignedDuration = SignedDuration::from_secs(5);

/// From when the pod's stored state again includes everything the gap may have hidden: its end,
/// or for an API outage the kubelet's catch-up after the API server answered again.
fn caught_up(tl: &Timeline, g: &Gap) -> Option<Timestamp> {
    let end = g.to?;
    Some(match tl.writes_resumed(g) {
        Some(back) => ts_add(back, WRITE_CATCH_UP).min(end),
        None => end,
    })
}

/// True when a snapshot of the pod's state after the gap has caught up proves that the mark
/// cannot lie inside it.
pub(super) fn disproved_after(spec: &MarkSpec, tl: &Timeline, g: &Gap) -> bool {
    let Some(mut end) = caught_up(tl, g) else { return false };
    // A gap that ends inside an outage or a kubelet restart is caught up only with it.
    while let Some(later) = tl
        .gaps
        .iter()
        .filter(|x| x.source.disturbs_timing() && x.from.is_none_or(|f| f <= end))
        .filter_map(|x| caught_up(tl, x))
        .filter(|e| *e > end)
        .max()
    {
        end = later;
    }
    // A version that changed nothing shows the state of the snapshot before it, at its time,
    // unless the kubelet could not write then (an API outage, a kubelet restart): it is then
    // only the last state written.
    let writable = |t: &Timestamp| {
        !tl.gaps.iter().any(|x| {
            x.source.disturbs_timing() && x.from.is_none_or(|f| f <= *t) && caught_up(tl, x).is_none_or(|e| *t <= e)
        })
    };
    let confirmed = tl
        .unchanged
        .iter()
        .filter(|t| **t >= end && writable(t))
        .filter_map(|t| tl.snapshots.iter().rev().find(|s| s.received <= *t));
    // The last version stands until the observation's end when the pod watch was up all along
    // from the catch-up on: nothing newer was written, so it is the state then.
    let standing = tl.observed_until().filter(|u| {
        *u >= ts_add(end, DELIVERY)
            && writable(u)
            && !tl
                .pod_gaps()
                .any(|x| !tl.is_outage(x) && x.overlaps(Some(end), Some(*u)))
    });
    let last = standing.and_then(|_| tl.snapshots.last());
    tl.snapshots
        .iter()
        .filter(|s| s.received >= end)
        .chain(confirmed)
        .chain(last)
        .any(|s| disproves(spec, s))
}

/// True when the snapshot proves that the mark had not occurred by the time it was written.
fn disproves(spec: &MarkSpec, s: &Snapshot) -> bool {
    match spec {
        MarkSpec::Phase(p) => phase_not_reached(p.as_str(), s),
        MarkSpec::Restarts(r) => s.container(&r.container).is_some_and(|c| c.restart_count < r.count),
        MarkSpec::ContainerSeen(seen) => match seen.state {
            ContainerState::Waiting => false,
            ContainerState::Running => not_started(s, &seen.container, seen.instance),
            ContainerState::Terminated => not_terminated(s, &seen.container, seen.instance),
        },
        MarkSpec::ContainerStarted(r) => not_started(s, &r.container, r.instance),
        MarkSpec::ContainerTerminated(r) => not_terminated(s, &r.container, r.instance),
        _ => false,
    }
}

fn phase_not_reached(p: &str, s: &Snapshot) -> bool {
    let Some(now) = s.phase.as_deref() else { return false };
    match p {
        "Succeeded" | "Failed" => matches!(now, "Pending" | "Running" | "Succeeded" | "Failed") && now != p,
        "Running" => now == "Pending" && !s.containers.is_empty() && s.containers.iter().all(never_started),
        _ => false,
    }
}

/// A container none of whose instances has started yet.
fn never_started(c: &ContainerStatus) -> bool {
    matches!(c.state, State::Waiting { .. }) && c.last_terminated.is_none() && c.restart_count == 0
}

/// The selected instance of the container has not started by this snapshot.
fn not_started(s: &Snapshot, container: &str, sel: InstanceSel) -> bool {
    let Some(c) = s.container(container) else { return false };
    match sel {
        InstanceSel::Nth(n) => c.restart_count < n || never_started(c),
        InstanceSel::Any => never_started(c),
        InstanceSel::Last | InstanceSel::Each => false,
    }
}

/// The selected instance of the container has not terminated by this snapshot.
fn not_terminated(s: &Snapshot, container: &str, sel: InstanceSel) -> bool {
    let Some(c) = s.container(container) else { return false };
    let running_now = |n: u32| matches!(c.state, State::Running { .. }) && c.instance == Some(n);
    match sel {
        InstanceSel::Nth(n) => c.restart_count < n || never_started(c) || running_now(n),
        InstanceSel::Any => never_started(c) || (running_now(0) && c.last_terminated.is_none()),
        InstanceSel::Last | InstanceSel::Each => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::EvidenceSource;
    use crate::suite::ContainerKind;
    use jiff::Timestamp;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn container(state: State, restart_count: u32, instance: Option<u32>) -> ContainerStatus {
        ContainerStatus {
            name: "main".into(),
            kind: ContainerKind::Regular,
            instance,
            state,
            last_terminated: None,
            ready: false,
            started: None,
            restart_count,
            resources: None,
            allocated_resources: Default::default(),
        }
    }

    fn snap(received: i64, phase: &str, c: ContainerStatus) -> Snapshot {
        let mut s: Snapshot = serde_json::from_value(serde_json::json!({
            "received": at(received).to_string(), "watch": "MODIFIED"
        }))
        .unwrap();
        s.phase = Some(phase.into());
        s.containers = vec![c];
        s
    }

    fn timeline(snaps: Vec<Snapshot>) -> (Timeline, Gap) {
        let mut tl = Timeline {
            snapshots: snaps,
            ..Timeline::default()
        };
        let g = Gap {
            source: EvidenceSource::PodWatch,
            from: Some(at(10)),
            to: Some(at(20)),
            back: None,
            clock: Default::default(),
            reason: "watch: broken".into(),
        };
        tl.gaps = vec![g.clone()];
        (tl, g)
    }

    fn running() -> State {
        State::Running {
            started_at: Some(at(1)),
        }
    }

    fn phase(p: &str) -> MarkSpec {
        MarkSpec::Phase(PodPhase::parse(p).unwrap())
    }

    fn waiting() -> State {
        State::Waiting {
            reason: Some("CrashLoopBackOff".into()),
            message: None,
        }
    }

    fn restarts(count: u32) -> MarkSpec {
        MarkSpec::Restarts(serde_json::from_value(serde_json::json!({"container": "main", "count": count})).unwrap())
    }

    #[test]
    fn the_last_version_stands_once_the_kubelet_has_caught_up_after_an_outage() {
        // Nobody could write from 10 s; the API server answered again at 20 s; the outage (with
        // the node settling) lasts until 60 s. The pod watch stayed up; its last version is older.
        let outage = |source| Gap {
            source,
            from: Some(at(10)),
            to: Some(at(60)),
            back: Some(at(20)),
            clock: Default::default(),
            reason: "the API server took no new request".into(),
        };
        let mut tl = Timeline {
            snapshots: vec![snap(5, "Running", container(running(), 0, Some(0)))],
            gaps: vec![outage(EvidenceSource::Api), outage(EvidenceSource::PodWatch)],
            deleted: Some(at(100)),
            ..Timeline::default()
        };
        let g = tl.gaps[1].clone();
        assert!(disproved_after(&restarts(1), &tl, &g));
        // Observed only until before the kubelet had caught up: a restart may not be written yet.
        tl.deleted = Some(at(42));
        assert!(!disproved_after(&restarts(1), &tl, &g));
        // The pod watch broke after the catch-up and never came back: the version may be stale.
        tl.deleted = Some(at(100));
        tl.gaps.push(Gap {
            source: EvidenceSource::PodWatch,
            from: Some(at(70)),
            to: None,
            back: None,
            clock: Default::default(),
            reason: "watch: broken".into(),
        });
        assert!(!disproved_after(&restarts(1), &tl, &g));
    }

    #[test]
    fn a_restart_count_still_low_after_the_gap_proves_no_restart_inside_it() {
        let (tl, g) = timeline(vec![snap(25, "Running", container(running(), 0, Some(0)))]);
        let restarts = |count| {
            MarkSpec::Restarts(
                serde_json::from_value(serde_json::json!({"container": "main", "count": count})).unwrap(),
            )
        };
        assert!(disproved_after(&restarts(1), &tl, &g));
        // A count reached after the gap may have been reached inside it.
        let (tl, g) = timeline(vec![snap(25, "Running", container(running(), 1, Some(1)))]);
        assert!(!disproved_after(&restarts(1), &tl, &g));
        // A snapshot before the gap's end proves nothing about the gap.
        let (tl, g) = timeline(vec![snap(15, "Running", container(running(), 0, Some(0)))]);
        assert!(!disproved_after(&restarts(1), &tl, &g));
    }

    #[test]
    fn a_non_terminal_phase_after_the_gap_proves_no_terminal_phase_inside_it() {
        let (tl, g) = timeline(vec![snap(25, "Running", container(waiting(), 3, None))]);
        assert!(disproved_after(&phase("Failed"), &tl, &g));
        assert!(disproved_after(&phase("Succeeded"), &tl, &g));
        let (tl, g) = timeline(vec![snap(25, "Failed", container(waiting(), 3, None))]);
        assert!(!disproved_after(&phase("Failed"), &tl, &g));
        // Running after the gap says nothing about Running before it.
        let (tl, g) = timeline(vec![snap(25, "Running", container(running(), 0, Some(0)))]);
        assert!(!disproved_after(&phase("Running"), &tl, &g));
    }

    #[test]
    fn a_pending_pod_whose_containers_never_started_was_never_running() {
        let never = container(
            State::Waiting {
                reason: Some("CreateContainerConfigError".into()),
                message: None,
            },
            0,
            None,
        );
        let (tl, g) = timeline(vec![snap(25, "Pending", never.clone())]);
        assert!(disproved_after(&phase("Running"), &tl, &g));
        let seen: ContainerSeen =
            serde_json::from_value(serde_json::json!({"container": "main", "instance": 0, "state": "running"}))
                .unwrap();
        assert!(disproved_after(&MarkSpec::ContainerSeen(seen), &tl, &g));
        // A container that ran once (a last state, or a restart) may have run inside the gap.
        let mut ran = never;
        ran.restart_count = 1;
        let (tl, g) = timeline(vec![snap(25, "Pending", ran)]);
        assert!(!disproved_after(&phase("Running"), &tl, &g));
    }
}
