//! For every expectation kind, a right and a deliberately wrong expectation judged on a real
//! recording: the right one passes, the wrong one fails and its evidence names the measured value.

mod support;

use podlife::judge::{Fact, Outcome, judge_case};
use podlife::observe::Recording;
use support::judging::{fails_with, judge, pass, rec};

#[test]
fn phase() {
    let v = judge("sigterm-ignored", "", "- phase: Failed\n- phase: Succeeded");
    pass(&v[0]);
    fails_with(&v[1], "observed Failed");
}

#[test]
fn phases() {
    let v = judge(
        "init-fail-never",
        "",
        "- phases: [Pending, Failed]\n- phases: [Pending, Running, Failed]",
    );
    pass(&v[0]);
    fails_with(&v[1], "observed [Pending → Failed]");
}

#[test]
fn container() {
    let v = judge(
        "oom-killed",
        "",
        "- container: {name: main, exitCode: 137, reason: OOMKilled, restartCount: 0}\n- container: {name: main, exitCode: 1, reason: Error}",
    );
    pass(&v[0]);
    fails_with(
        &v[1],
        "exitCode: expected 1, observed 137; reason: expected Error, observed OOMKilled",
    );
}

#[test]
fn container_restart_count_and_waiting_reasons() {
    let v = judge(
        "restart-always-crashloop",
        "",
        "- container: {name: main, restartCount: {atLeast: 5}, waitingReasonsSeen: [CrashLoopBackOff]}\n- container: {name: main, restartCount: 3}",
    );
    pass(&v[0]);
    fails_with(&v[1], "restartCount: expected exactly 3, observed 5");
}

#[test]
fn never_started() {
    let v = judge(
        "init-fail-never",
        "",
        "- container: {name: main, neverStarted: true}\n- container: {name: init-1, neverStarted: true}",
    );
    pass(&v[0]);
    fails_with(&v[1], "1 instance(s) and 2 log line(s)");
}

#[test]
fn condition() {
    let v = judge(
        "probe-readiness-exec",
        "",
        "- condition: {type: Ready, sequence: [False, True, False]}\n- condition: {type: Ready, sequence: [False, True]}\n- condition: {type: Ready, never: [True, False]}",
    );
    pass(&v[0]);
    fails_with(&v[1], "observed [False → True → False]");
    fails_with(&v[2], "transition True → False must never happen");
}

#[test]
fn order() {
    let marks = "i1: {firstLogLine: {container: init-1}}\ni2: {firstLogLine: {container: init-2}}\ni3: {firstLogLine: {container: init-3}}\nmain: {firstLogLine: {container: main}}";
    let v = judge("init-ordering", marks, "- order: [i1, i2, i3, main]\n- order: [i2, i1]");
    pass(&v[0]);
    fails_with(&v[1], "`i2` came 1.266s later");
}

#[test]
fn gap_from_log_timestamps() {
    let marks = "term: {log: {container: main, regex: \"TERM received\"}}\nkill: {lastLogLine: {container: main}}";
    let v = judge(
        "sigterm-ignored",
        marks,
        "- gap: {from: term, to: kill, target: 5s, tolerance: 300ms}\n- gap: {from: term, to: kill, target: 10s, tolerance: 500ms}",
    );
    pass(&v[0]);
    assert!((v[0].measured[0] - 4.832).abs() < 0.001, "{:?}", v[0].measured);
    fails_with(&v[1], "measured 4.832s");
}

#[test]
fn gap_with_status_times_is_widened_and_says_so() {
    // Status times are whole seconds; the instance's first and last log lines narrow them
    // (start ≤ first line, end ≥ last line), and what is left widens the tolerance.
    let marks = "s: {containerStarted: {container: main}}\nt: {containerTerminated: {container: main}}";
    let v = judge(
        "restart-never-success",
        marks,
        "- gap: {from: s, to: t, target: 1s, tolerance: 600ms}\n- gap: {from: s, to: t, min: 5s}\n- gap: {from: s, to: t, target: 1s, tolerance: 100ms}",
    );
    pass(&v[0]);
    // What is left of the second (999.5 ms) is wider than a ±100 ms window: never a pass.
    assert_eq!(v[2].outcome, Outcome::Undecided, "{}", v[2].evidence);
    assert!(v[2].facts.contains(&Fact::CoarserThanTolerance), "{:?}", v[2].facts);
    assert!(
        v[0].evidence.contains("≤ first log line") && v[0].evidence.contains("≥ last log line"),
        "{}",
        v[0].evidence
    );
    assert!(
        v[0].evidence
            .contains("tolerance widened by 999.5ms: status times are whole seconds"),
        "{}",
        v[0].evidence
    );
    fails_with(&v[1], "measured 1.108s");
    // Without log lines the full second on each side is the precision.
    let mut tl = Recording::read(&rec("restart-never-success")).unwrap().timeline();
    tl.logs.clear();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "name: t\ncases:\n  - name: x\n    manifest: {}\n    expect:\n      - gap: {{from: {{containerStarted: {{container: main}}}}, to: {{containerTerminated: {{container: main}}}}, max: 1s}}\n",
        rec("restart-never-success").join("manifest.yaml").display()
    );
    std::fs::write(dir.path().join("t.yaml"), yaml).unwrap();
    let suites = podlife::suite::load_suites(&[dir.path().join("t.yaml")]).unwrap();
    let v = judge_case(&suites[0].cases[0].spec, &tl);
    pass(&v[0]);
    assert!(
        v[0].evidence.contains("measured 1s") && v[0].evidence.contains("widened by 2s"),
        "{}",
        v[0].evidence
    );
}

#[test]
fn delete_grace_override_gap() {
    let marks = "term: {log: {container: main, regex: \"TERM received\"}}\nkill: {lastLogLine: {container: main}}";
    let v = judge(
        "delete-grace-override",
        marks,
        "- gap: {from: term, to: kill, target: 2s, tolerance: 300ms}\n- gap: {from: term, to: kill, target: 30s, tolerance: 1s}",
    );
    pass(&v[0]);
    fails_with(&v[1], "measured 1.812s");
}

#[test]
fn event() {
    let v = judge(
        "probe-liveness-exec",
        "",
        "- event: {reason: Unhealthy, container: main, count: {atLeast: 6}}\n- event: {reason: Killing, message: \"failed liveness probe\", count: 3}\n- event: {reason: OOMKilling}",
    );
    pass(&v[0]);
    fails_with(&v[1], "expected exactly 3, observed 4");
    fails_with(&v[2], "observed 0");
}

#[test]
fn log_with_templates_from_the_observed_pod() {
    let v = judge(
        "downward-api-env",
        "",
        "- log: {container: main, regex: \"POD_NAME=${pod.name}$\"}\n- log: {container: main, regex: \"POD_UID=${pod.uid}$\"}\n- log: {container: main, regex: \"NODE_NAME=nonexistent-node\"}",
    );
    pass(&v[0]);
    pass(&v[1]);
    fails_with(&v[2], "observed 0");
}

#[test]
fn backoff() {
    let v = judge(
        "restart-always-crashloop",
        "",
        "- backoff: {container: main, minRestarts: 5, doubling: {base: 10s, factor: 2, cap: 5m, firstImmediate: true}}\n\
         - backoff: {container: main, doubling: {base: 10s, factor: 2, late: 2s}}",
    );
    pass(&v[0]);
    assert_eq!(v[0].measured, vec![0.0, 14.0, 24.0, 52.0, 82.0]);
    fails_with(&v[1], "interval 1 (#0 finishedAt→#1 startedAt) = 0s not in 10s..12s");
}

#[test]
fn backoff_from_logs() {
    let v = judge(
        "restart-always-crashloop",
        "",
        "- backoff: {container: main, measure: logs, intervals: [{max: 3s}, {min: 12s, max: 17s}]}\n- backoff: {container: main, measure: logs, intervals: [{max: 1s}]}",
    );
    pass(&v[0]);
    fails_with(&v[1], "= 2.494s not in ≤1s");
}

#[test]
fn never() {
    let marks = "term: {log: {container: main, regex: TERM}}";
    let v = judge(
        "sigterm-handled",
        marks,
        "- never: {mark: {event: {reason: BackOff}}}\n- never: {mark: term}\n- never: {mark: term, before: {action: {action: delete}}}",
    );
    pass(&v[0]);
    fails_with(&v[1], "TERM received");
    pass(&v[2]);
}

#[test]
fn prestop_counts_against_grace_and_kill_comes_two_seconds_after() {
    let marks = "del: {action: {action: delete}}\nbegin: {log: {container: main, regex: prestop-begin}}\nkill: {lastLogLine: {container: main}}";
    let v = judge(
        "prestop-exceeds-grace",
        marks,
        "- gap: {from: del, to: kill, target: 6s, tolerance: 300ms}\n- event: {reason: FailedPreStopHook}\n- gap: {from: del, to: kill, target: 4s, tolerance: 300ms}",
    );
    pass(&v[0]);
    pass(&v[1]);
    fails_with(&v[2], "measured 5.845s");
}

#[test]
fn termination_message() {
    // No recording carries a termination message, so put one into a real timeline, as the
    // kubelet would report it from terminationMessagePath.
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "name: t\ncases:\n  - name: restart-never-fail\n    manifest: {}\n    expect:\n      - container: {{name: main, message: '^bye from main$'}}\n      - container: {{name: main, message: '^hello'}}\n      - container: {{name: main, instance: 0, message: 'bye'}}\n",
        rec("restart-never-fail").join("manifest.yaml").display()
    );
    std::fs::write(dir.path().join("t.yaml"), yaml).unwrap();
    let suites = podlife::suite::load_suites(&[dir.path().join("t.yaml")]).unwrap();
    let mut tl = Recording::read(&rec("restart-never-fail")).unwrap().timeline();
    for s in &mut tl.snapshots {
        for c in &mut s.containers {
            if let podlife::observe::State::Terminated(t) = &mut c.state {
                t.message = Some("bye from main".into());
            }
        }
    }
    for i in &mut tl.instances {
        i.message = Some("bye from main".into());
    }
    let v = judge_case(&suites[0].cases[0].spec, &tl);
    pass(&v[0]);
    fails_with(&v[1], "observed \"bye from main\"");
    pass(&v[2]);
}

#[test]
fn statuses() {
    let v = judge(
        "init-ordering",
        "",
        "- statuses: [Pending, Init:0/3, Init:1/3, Init:2/3, PodInitializing, Running, Completed]\n\
         - statuses: [Pending, Init:0/3, Init:2/3, Init:1/3, PodInitializing, Running, Completed]\n\
         - statuses: [Pending, Init:0/2, Init:1/2, PodInitializing, Running, Completed]\n\
         - statuses: [Pending, Init:0/3, Init:1/3, Init:2/3, PodInitializing, Running, NotReady, Completed]",
    );
    pass(&v[0]);
    fails_with(&v[1], "observed [Pending → Init:0/3 → Init:1/3 → Init:2/3");
    fails_with(&v[2], "observed [Pending → Init:0/3");
    // NotReady has no evidence outside the watch: it must be seen.
    fails_with(&v[3], "NotReady never shown and nothing else proves");
}

#[test]
fn statuses_may_skip_only_what_other_evidence_shows() {
    // restart-never-success shows ContainerCreating; drop that snapshot-level fact by asking for
    // a status the watch never showed but the timeline proves (the BackOff event proves
    // CrashLoopBackOff in restart-always-crashloop's first back-off, Error → Running directly).
    let v = judge(
        "restart-always-crashloop",
        "",
        "- statuses: [Pending, ContainerCreating, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error]\n\
         - statuses: [Pending, ContainerCreating, Running, Error, ImagePullBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error, CrashLoopBackOff, Running, Error]",
    );
    pass(&v[0]);
    assert!(
        v[0].evidence
            .contains("CrashLoopBackOff not shown by the API (the kubelet batches status writes), but BackOff event"),
        "{}",
        v[0].evidence
    );
    fails_with(&v[1], "ImagePullBackOff never shown and nothing else proves");
}

#[test]
fn status_row() {
    let v = judge(
        "status-image-pull-backoff",
        "",
        "- statusRow: {status: ImagePullBackOff, phase: Pending, ready: 0/1, conditions: {Initialized: True, Ready: False}, containers: [{name: main, state: waiting, reason: ImagePullBackOff}]}\n\
         - statusRow: {status: ImagePullBackOff, conditions: {Initialized: False}}\n\
         - statusRow: {status: ImagePullBackOff, containers: [{name: main, reason: ErrImagePull}]}\n\
         - statusRow: {status: CrashLoopBackOff, phase: Pending}",
    );
    pass(&v[0]);
    fails_with(&v[1], "expected Initialized=False, observed Initialized=True");
    fails_with(&v[2], "observed main reason ImagePullBackOff");
    fails_with(&v[3], "STATUS CrashLoopBackOff never shown");
    let v = judge(
        "status-evicted-ephemeral-storage",
        "",
        "- statusRow: {status: Error, phase: Failed, reason: Evicted, message: 'exceeds the total limit of containers 20Mi'}\n\
         - statusRow: {status: Evicted, phase: Failed}\n\
         - statusRow: {status: Error, reason: DeadlineExceeded}",
    );
    pass(&v[0]);
    fails_with(
        &v[1],
        "never shown (observed [Pending → ContainerCreating → Running → Error])",
    );
    fails_with(&v[2], "observed reason Evicted");
}

#[test]
fn qos_class() {
    let v = judge(
        "status-qos-guaranteed",
        "",
        "- qosClass: Guaranteed\n- qosClass: BestEffort",
    );
    pass(&v[0]);
    fails_with(&v[1], "observed Guaranteed");
    let v = judge("oom-killed", "", "- qosClass: Burstable\n- qosClass: Guaranteed");
    pass(&v[0]);
    fails_with(&v[1], "observed Burstable");
}

#[test]
fn status_mark() {
    let v = judge(
        "status-image-pull-backoff",
        "pullFailed: {status: ErrImagePull}\nbackOff2: {status: {is: ImagePullBackOff, occurrence: 2}}",
        "- order: [pullFailed, {status: ImagePullBackOff}, {status: {is: ErrImagePull, occurrence: 2}}, backOff2]\n\
         - order: [backOff2, pullFailed]\n\
         - gap: {from: pullFailed, to: backOff2, min: 30s}\n\
         - gap: {from: pullFailed, to: backOff2, max: 20s}",
    );
    pass(&v[0]);
    fails_with(&v[1], "STATUS ImagePullBackOff seen 04:21:30.036");
    pass(&v[2]);
    fails_with(&v[3], "measured 37.15s");
}

#[test]
fn statuses_and_rows_with_a_pod_watch_gap() {
    // A pod-watch outage in the middle of init-fail-never: a status may have been shown unseen.
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "name: t\ncases:\n  - name: c\n    manifest: {}\n    expect:\n      \
         - statuses: [Pending, Init:0/2, Init:1/2, Init:Error]\n      \
         - statuses: [Pending, Init:1/2, Init:0/2, Init:Error]\n      \
         - statusRow: {{status: Init:Error, conditions: {{Initialized: False}}}}\n      \
         - statusRow: {{status: Init:Error, conditions: {{Initialized: True}}}}\n",
        rec("init-fail-never").join("manifest.yaml").display()
    );
    let path = dir.path().join("t.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let suites = podlife::suite::load_suites(&[path]).unwrap();
    let mut tl = Recording::read(&rec("init-fail-never")).unwrap().timeline();
    let mid = tl.snapshots[4].received;
    tl.gaps.push(podlife::observe::Gap {
        source: podlife::observe::EvidenceSource::PodWatch,
        from: Some(mid),
        to: Some(mid + jiff::SignedDuration::from_millis(500)),
        clock: Default::default(),
        reason: "503 ServiceUnavailable".into(),
    });
    let v = judge_case(&suites[0].cases[0].spec, &tl);
    // A pass becomes undecided; a reordering no hidden status can mend stays a failure; a row
    // contradicted by a snapshot that was seen stays a failure.
    assert_eq!(v[0].outcome, Outcome::Undecided, "{}", v[0].evidence);
    assert!(v[0].evidence.contains("503 ServiceUnavailable"), "{}", v[0].evidence);
    assert_eq!(v[1].outcome, Outcome::Fail, "{}", v[1].evidence);
    assert_eq!(v[2].outcome, Outcome::Undecided, "{}", v[2].evidence);
    fails_with(&v[3], "observed Initialized=False");
}
