//! kubectl's STATUS and READY columns (`podlife::observe::pod_row`), one test per rule of
//! `printPod`, on real pod snapshots from the recordings. Rules no recording shows (a container
//! without a reason, NodeLost, a scheduling gate, two app containers) take a real snapshot and
//! change the one field the rule reads, which the test names.

use std::path::Path;

use podlife::observe::{PodRow, Recording, Snapshot, State, Timeline, pod_row};
use podlife::suite::ContainerKind;

fn tl(name: &str) -> Timeline {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings")
        .join(name);
    Recording::read(&dir).unwrap().timeline()
}

/// The STATUS texts in snapshot order, consecutive repeats folded.
fn statuses(tl: &Timeline) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in &tl.snapshots {
        let st = pod_row(&tl.pod, s).status;
        // The observer stores the same text in the snapshot.
        assert_eq!(s.status.as_deref(), Some(st.as_str()));
        if out.last() != Some(&st) {
            out.push(st);
        }
    }
    out
}

/// The first snapshot whose computed STATUS is `status`.
fn shown<'a>(tl: &'a Timeline, status: &str) -> &'a Snapshot {
    tl.snapshots
        .iter()
        .find(|s| pod_row(&tl.pod, s).status == status)
        .unwrap_or_else(|| panic!("{status} never shown: {:?}", statuses(tl)))
}

fn row(tl: &Timeline, s: &Snapshot) -> PodRow {
    pod_row(&tl.pod, s)
}

#[test]
fn phase_is_the_status_before_any_container_status() {
    let t = tl("restart-never-success");
    let first = &t.snapshots[0];
    assert!(first.containers.is_empty());
    assert_eq!(
        row(&t, first),
        PodRow {
            ready: "0/1".into(),
            status: "Pending".into(),
            restarts: 0,
        }
    );
}

#[test]
fn pod_reason_replaces_the_phase() {
    // status-evicted-ephemeral-storage's last snapshot: phase Failed, reason Evicted. With the
    // container still running (the state before the kubelet reported it killed) the column is
    // the pod's reason; with its real terminated state the container's reason wins.
    let t = tl("status-evicted-ephemeral-storage");
    let last = t.snapshots.last().unwrap();
    assert_eq!(last.reason.as_deref(), Some("Evicted"));
    assert_eq!(row(&t, last).status, "Error");
    let mut s = last.clone();
    s.containers[0].state = State::Running { started_at: None };
    assert_eq!(row(&t, &s).status, "Evicted");
}

#[test]
fn scheduling_gated_condition_reason() {
    let t = tl("restart-never-success");
    let mut s = t.snapshots[1].clone();
    let c = s.conditions.iter_mut().find(|c| c.r#type == "PodScheduled").unwrap();
    c.status = "False".into();
    c.reason = Some("SchedulingGated".into());
    assert_eq!(row(&t, &s).status, "SchedulingGated");
}

#[test]
fn init_progress_is_index_over_spec_count() {
    let t = tl("init-ordering");
    assert_eq!(
        statuses(&t),
        [
            "Pending",
            "Init:0/3",
            "Init:1/3",
            "Init:2/3",
            "PodInitializing",
            "Running",
            "Completed"
        ]
    );
    // A running init container is still `Init:i/M` (default branch), not its state.
    let s = shown(&t, "Init:1/3");
    assert!(
        t.snapshots.iter().any(|x| row(&t, x).status == "Init:1/3"
            && matches!(x.container("init-2").unwrap().state, State::Running { .. }))
    );
    assert_eq!(row(&t, s).ready, "0/1");
}

#[test]
fn init_terminated_reason() {
    let t = tl("init-fail-never");
    assert_eq!(statuses(&t), ["Pending", "Init:0/2", "Init:1/2", "Init:Error"]);
}

#[test]
fn init_waiting_reason_other_than_pod_initializing() {
    let t = tl("init-fail-always");
    let s = shown(&t, "Init:CrashLoopBackOff");
    assert!(matches!(
        &s.container("init-1").unwrap().state,
        State::Waiting { reason: Some(r), .. } if r == "CrashLoopBackOff"
    ));
    // Waiting PodInitializing is progress, not a reason.
    assert_eq!(row(&t, &t.snapshots[2]).status, "Init:0/2");
}

#[test]
fn init_without_reason_shows_signal_or_exit_code() {
    let t = tl("init-fail-never");
    let mut s = shown(&t, "Init:Error").clone();
    let State::Terminated(term) = &mut s.containers.iter_mut().find(|c| c.name == "init-2").unwrap().state else {
        panic!("init-2 not terminated")
    };
    term.reason = None;
    assert_eq!(row(&t, &s).status, "Init:ExitCode:1");
    let State::Terminated(term) = &mut s.containers.iter_mut().find(|c| c.name == "init-2").unwrap().state else {
        unreachable!()
    };
    term.signal = Some(9);
    assert_eq!(row(&t, &s).status, "Init:Signal:9");
}

#[test]
fn started_sidecar_is_skipped_and_counts_in_ready() {
    let t = tl("sidecar-native");
    assert_eq!(
        statuses(&t),
        ["Pending", "Init:0/1", "PodInitializing", "Running", "Completed"]
    );
    // READY counts the sidecar: 1/2 while main initializes, 2/2 running.
    assert_eq!(row(&t, shown(&t, "PodInitializing")).ready, "1/2");
    assert_eq!(row(&t, shown(&t, "Running")).ready, "2/2");
}

#[test]
fn app_waiting_reasons() {
    for (rec, want) in [
        ("restart-never-success", "ContainerCreating"),
        ("status-image-pull-backoff", "ErrImagePull"),
        ("status-image-pull-backoff", "ImagePullBackOff"),
        ("status-create-container-config-error", "CreateContainerConfigError"),
        ("image-never-pull", "ErrImageNeverPull"),
        ("restart-always-crashloop", "CrashLoopBackOff"),
        ("poststart-fail", "PostStartHookError"),
    ] {
        let t = tl(rec);
        let s = shown(&t, want);
        assert!(
            matches!(&s.container("main").unwrap().state, State::Waiting { reason: Some(r), .. } if r == want),
            "{rec}: {want}"
        );
    }
}

#[test]
fn app_terminated_reasons() {
    for (rec, want) in [
        ("restart-never-success", "Completed"),
        ("restart-never-fail", "Error"),
        ("oom-killed", "OOMKilled"),
        ("status-start-error-never", "StartError"),
    ] {
        let t = tl(rec);
        assert_eq!(statuses(&t).last().map(String::as_str), Some(want), "{rec}");
    }
}

#[test]
fn app_without_reason_shows_signal_or_exit_code() {
    let t = tl("restart-never-fail");
    let mut s = t.snapshots.last().unwrap().clone();
    let State::Terminated(term) = &mut s.containers[0].state else {
        panic!()
    };
    term.reason = None;
    assert_eq!(row(&t, &s).status, "ExitCode:7");
    let State::Terminated(term) = &mut s.containers[0].state else {
        panic!()
    };
    term.signal = Some(15);
    assert_eq!(row(&t, &s).status, "Signal:15");
}

#[test]
fn running_and_ready() {
    let t = tl("restart-never-success");
    let s = shown(&t, "Running");
    assert_eq!(row(&t, s).ready, "1/1");
}

/// sidecar-native's pod with its sidecar turned into a first app container (`kind` changed in
/// the pod and in the snapshot), so the snapshot has two app containers.
fn as_two_apps(t: &mut Timeline, s: &mut Snapshot) {
    for c in &mut t.pod.containers {
        c.kind = ContainerKind::Regular;
    }
    for c in &mut s.containers {
        c.kind = ContainerKind::Regular;
    }
}

fn main_done_sidecar_running(t: &Timeline) -> Snapshot {
    t.snapshots
        .iter()
        .find(|s| {
            s.container("main")
                .is_some_and(|c| matches!(c.state, State::Terminated(_)))
                && s.container("sidecar")
                    .is_some_and(|c| matches!(c.state, State::Running { .. }))
        })
        .unwrap()
        .clone()
}

#[test]
fn completed_with_a_running_container_is_running_when_ready_else_not_ready() {
    let mut t = tl("sidecar-native");
    let mut s = main_done_sidecar_running(&t);
    as_two_apps(&mut t, &mut s);
    assert_eq!(s.condition("Ready").unwrap().status, "False");
    assert_eq!(row(&t, &s).status, "NotReady");
    s.conditions.iter_mut().find(|c| c.r#type == "Ready").unwrap().status = "True".into();
    assert_eq!(
        row(&t, &s),
        PodRow {
            ready: "1/2".into(),
            status: "Running".into(),
            restarts: 0,
        }
    );
}

#[test]
fn a_failed_container_wins_over_completed() {
    // Both containers terminated; the second one failed. The first container's Completed would
    // win the scan; the error reason replaces it (the rule of recent printPod versions).
    let mut t = tl("sidecar-native");
    let mut s = t.snapshots.last().unwrap().clone();
    as_two_apps(&mut t, &mut s);
    assert_eq!(row(&t, &s).status, "Completed");
    let State::Terminated(term) = &mut s.containers.iter_mut().find(|c| c.name == "main").unwrap().state else {
        panic!()
    };
    term.exit_code = 1;
    term.reason = Some("Error".into());
    assert_eq!(row(&t, &s).status, "Error");
}

#[test]
fn deletion_shows_terminating_unless_terminal() {
    let t = tl("prestop-exec-within-grace");
    assert_eq!(
        statuses(&t),
        ["Pending", "ContainerCreating", "Running", "Terminating", "Completed"]
    );
    let term = shown(&t, "Terminating");
    assert!(term.deletion_timestamp.is_some());
    assert_eq!(term.phase.as_deref(), Some("Running"));
    // The DELETED snapshot: deletionTimestamp set, phase Succeeded: not Terminating.
    let last = t.snapshots.last().unwrap();
    assert!(last.deletion_timestamp.is_some());
    assert_eq!(row(&t, last).status, "Completed");
}

#[test]
fn node_lost_with_deletion_is_unknown() {
    let t = tl("prestop-exec-within-grace");
    let mut s = shown(&t, "Terminating").clone();
    s.reason = Some("NodeLost".into());
    assert_eq!(row(&t, &s).status, "Unknown");
    // Without a deletionTimestamp it is the pod's reason (a running container sets none).
    s.deletion_timestamp = None;
    assert_eq!(row(&t, &s).status, "NodeLost");
}

#[test]
fn old_timelines_get_the_column_computed() {
    let t = tl("init-ordering");
    let mut json: serde_json::Value = serde_json::to_value(&t).unwrap();
    for s in json["snapshots"].as_array_mut().unwrap() {
        let o = s.as_object_mut().unwrap();
        o.remove("status");
        o.remove("readyColumn");
    }
    let mut old: Timeline = serde_json::from_value(json).unwrap();
    assert!(old.snapshots.iter().all(|s| s.status.is_none()));
    old.fill_columns();
    assert_eq!(old.snapshots, t.snapshots);
}

#[test]
fn restarts_column_and_watch_transcript() {
    // RESTARTS sums the init containers' restarts while initializing (init-fail-always: 3).
    let t = tl("init-fail-always");
    assert_eq!(row(&t, t.snapshots.last().unwrap()).restarts, 3);
    let t = tl("restart-always-crashloop");
    assert_eq!(row(&t, t.snapshots.last().unwrap()).restarts, 5);
    // The transcript: one line per change, exact receive times, the DELETED line kept.
    let t = tl("prestop-exec-within-grace");
    let text = podlife::observe::watch_transcript(&t);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert!(lines[0].starts_with("TIME (UTC)"));
    assert_eq!(
        lines[4],
        "21:27:07.459    +8.998  prestop-exec-within-grace  1/1    Terminating        0         Running"
    );
    assert!(lines[6].ends_with("Succeeded (deleted)"), "{text}");
}

#[test]
fn timeline_watch_cli_prints_the_transcript() {
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["timeline", "--watch", "tests/fixtures/recordings/init-ordering"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let statuses: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(4).unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "Pending",
            "Init:0/3",
            "Init:1/3",
            "Init:2/3",
            "PodInitializing",
            "Running",
            "Completed"
        ]
    );
}
