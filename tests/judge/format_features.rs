//! Suite-format features (status flags, `never` windows, per-instance gaps,
//! exact text, condition reason/message, absent marks in `order`, spec patches, `judge`'s step
//! check): each with a right and a deliberately wrong expectation judged on real data — the
//! recordings in tests/fixtures/recordings, or timelines of a live run of the reference node in
//! tests/fixtures/timelines — where the right one passes and the wrong one fails, naming what
//! was measured.

use podlife::judge::{Fact, Outcome, judge_case};
use podlife::observe::{Recording, Timeline};

use crate::support::judging::{fails_with, judge, load, pass, rec, root, suite_yaml};

/// Validation errors of a suite (one line each).
fn problems(yaml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.yaml");
    std::fs::write(&path, yaml).unwrap();
    match podlife::suite::load_suites(&[path]) {
        Ok(_) => String::new(),
        Err(e) => e.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"),
    }
}

/// A built-in case of `suites/status.yaml`, by name.
fn status_case(name: &str) -> podlife::suite::LoadedCase {
    podlife::suite::load_suites(&[root().join("suites/status.yaml")]).unwrap()[0]
        .cases
        .iter()
        .find(|c| c.name() == name)
        .unwrap()
        .clone()
}

/// A timeline of a live run on the reference node (tests/fixtures/timelines).
fn live(name: &str) -> Timeline {
    let text = std::fs::read_to_string(root().join("tests/fixtures/timelines").join(name)).unwrap();
    let mut tl: Timeline = serde_json::from_str(&text).unwrap();
    tl.complete = true;
    tl
}

// --- 1. status flags `ready` and `started` ---------------------------------------------------

#[test]
fn ready_marks_measure_a_readiness_window() {
    // probe-readiness-exec: ready False@+0.140, True@+5.705, False@+17.707 (receive times).
    let marks = "up: {ready: {container: main}}\ndown: {ready: {container: main, value: false, occurrence: 2}}";
    let v = judge(
        "probe-readiness-exec",
        marks,
        // The readiness file exists 12 s; probe period 1 s on each side (periodSeconds 1).
        "- gap: {from: up, to: down, min: 10s, max: 14s}\n- gap: {from: up, to: down, max: 5s}",
    );
    pass(&v[0]);
    assert!((v[0].measured[0] - 12.002).abs() < 0.01, "{:?}", v[0].measured);
    fails_with(&v[1], "measured 12.00");
}

#[test]
fn started_flag_turns_before_ready_behind_a_startup_probe() {
    // probe-startup-exec: started True @+9.457, ready True @+9.465.
    let v = judge(
        "probe-startup-exec",
        "",
        "- order: [{started: {container: main}}, {ready: {container: main}}]\n- order: [{ready: {container: main}}, {started: {container: main}}]",
    );
    pass(&v[0]);
    fails_with(&v[1], "came 7.4ms later");
}

#[test]
fn container_ready_and_started_flags() {
    // probe-readiness-exec ends not ready (the file is gone) but started.
    let v = judge(
        "probe-readiness-exec",
        "",
        "- container: {name: main, ready: false, started: true}\n- container: {name: main, ready: true}",
    );
    pass(&v[0]);
    fails_with(&v[1], "ready: expected true, observed false");
}

// --- 2. `never` after a mark, and between two marks ------------------------------------------

#[test]
fn never_after_a_mark() {
    let marks =
        "term: {log: {container: main, regex: '^TERM received'}}\ntick: {log: {container: main, regex: '^tick'}}";
    // sigterm-handled exits on TERM: no tick after it. sigterm-ignored keeps ticking for 4.8 s.
    let ok = judge("sigterm-handled", marks, "- never: {mark: tick, after: term}");
    pass(&ok[0]);
    let bad = judge("sigterm-ignored", marks, "- never: {mark: tick, after: term}");
    fails_with(&bad[0], "it occurred inside the window (\"tick");
}

#[test]
fn never_between_two_marks() {
    let marks = "apply: {action: {action: apply}}\ndel: {action: {action: delete}}\nterm: {log: {container: main, regex: '^TERM received'}}\ntick: {log: {container: main, regex: '^tick'}}";
    let v = judge(
        "sigterm-ignored",
        marks,
        "- never: {mark: term, after: apply, before: del}\n- never: {mark: tick, after: apply, before: del}",
    );
    pass(&v[0]);
    fails_with(&v[1], "inside the window");
}

#[test]
fn never_after_counts_every_occurrence_not_only_the_first() {
    // The first BackOff of the crash loop precedes the third restart; later ones follow it.
    let v = judge(
        "restart-always-crashloop",
        "",
        "- never: {mark: {event: {reason: BackOff}}, after: {restarts: {container: main, count: 3}}}",
    );
    fails_with(&v[0], "BackOff event");
}

// --- 3. per-instance quantifier --------------------------------------------------------------

#[test]
fn gap_for_each_instance() {
    // restart-always-crashloop: every instance prints `start`, sleeps 2 s and exits 1.
    let marks = "line: {firstLogLine: {container: main, instance: each}}\nend: {containerTerminated: {container: main, instance: each}}";
    let v = judge(
        "restart-always-crashloop",
        marks,
        // finishedAt is whole seconds, narrowed by the line; `sleep 2` plus process exit: the
        // window must be wider than that second (a coarser measurement is never a pass).
        "- gap: {from: line, to: end, forEachInstance: main, target: 2s, tolerance: 600ms}\n- gap: {from: line, to: end, forEachInstance: main, max: 1s}\n- gap: {from: line, to: end, forEachInstance: main, target: 2s, tolerance: 300ms}",
    );
    pass(&v[0]);
    assert!(v[0].evidence.contains("6 instance(s)"), "{}", v[0].evidence);
    assert_eq!(v[0].measured.len(), 6, "{:?}", v[0].measured);
    fails_with(&v[1], "main#0 out of bounds");
    // 1 s of status precision against a 600 ms window: no instance is measured well enough.
    assert_eq!(v[2].outcome, Outcome::Undecided, "{}", v[2].evidence);
    assert!(v[2].facts.contains(&Fact::InstanceUnmeasured), "{:?}", v[2].facts);
}

#[test]
fn gap_for_each_instance_names_the_failing_instance() {
    // Restart gaps from the previous instance's finishedAt are not per instance; but each
    // instance's start relative to the apply grows with the back-off: #3 starts > 40 s in.
    let marks = "apply: {action: {action: apply}}\nstart: {containerStarted: {container: main, instance: each}}";
    let v = judge(
        "restart-always-crashloop",
        marks,
        "- gap: {from: apply, to: start, forEachInstance: main, max: 30s}",
    );
    fails_with(&v[0], "main#3 out of bounds");
}

#[test]
fn instance_each_is_only_valid_under_for_each_instance() {
    let m = rec("restart-always-crashloop").join("manifest.yaml");
    let p = problems(&suite_yaml(
        &m,
        "",
        "s: {containerStarted: {container: main, instance: each}}",
        "- order: [{action: {action: apply}}, s]",
    ));
    assert!(
        p.contains("cases[0].expect[0].order[1]: mark `s` uses `instance: each`, which only a gap with `forEachInstance: main` can bind"),
        "{p}"
    );
    let p = problems(&suite_yaml(
        &m,
        "",
        "",
        "- gap: {from: {action: {action: apply}}, to: {phase: Running}, forEachInstance: main, max: 1s}",
    ));
    assert!(p.contains("neither `from` nor `to` uses `instance: each`"), "{p}");
}

// --- 4. exact text ---------------------------------------------------------------------------

#[test]
fn log_equals_is_exact() {
    let v = judge(
        "sigterm-ignored",
        "",
        // A regex `TERM receive` would match; the exact text does not.
        "- log: {container: main, equals: 'TERM received', count: 1}\n- log: {container: main, equals: 'TERM receive'}",
    );
    pass(&v[0]);
    fails_with(&v[1], "log \"TERM receive\" in `main`");
    let marks = "term: {log: {container: main, equals: 'TERM received'}}\nkill: {lastLogLine: {container: main}}";
    let v = judge(
        "sigterm-ignored",
        marks,
        "- gap: {from: term, to: kill, target: 5s, tolerance: 300ms}",
    );
    pass(&v[0]);
}

#[test]
fn log_equals_with_a_template() {
    let v = judge(
        "downward-api-env",
        "",
        "- log: {container: main, equals: 'POD_NAME=${pod.name}'}\n- log: {container: main, equals: 'POD_NAME=${pod.namespace}'}",
    );
    pass(&v[0]);
    fails_with(&v[1], "observed 0");
}

/// A kubelet restart resets its image pull back-off (held in memory): after the restart the
/// kubelet pulled again at once, so the second ErrImagePull came before any ImagePullBackOff
/// (vm2's kubelet restarted 60 s into a live run). Across the restart the order is undecided,
/// naming it; the same statuses without a restart are a node that does not back off.
#[test]
fn an_order_across_a_kubelet_restart_is_undecided_and_without_one_fails() {
    let case = status_case("status-image-pull-backoff");
    let order = |tl: &Timeline| {
        judge_case(&case.spec, tl)
            .into_iter()
            .find(|v| v.kind == "order")
            .unwrap()
    };
    let tl = live("status-image-pull-backoff-kubelet-restart.json");
    let v = order(&tl);
    assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
    assert!(
        v.evidence.contains("came 26.998s later")
            && v.evidence
                .contains("undecided: the kubelet of vm2 restarted (its Starting event 11:16:49.000)"),
        "{}",
        v.evidence
    );
    assert!(v.facts.contains(&Fact::KubeletRestarted), "{:?}", v.facts);
    assert!(
        judge_case(&case.spec, &tl).iter().all(|v| v.outcome != Outcome::Fail),
        "nothing fails across the restart"
    );
    let mut without = tl.clone();
    without.gaps.clear();
    let v = order(&without);
    assert_eq!(v.outcome, Outcome::Fail, "{}", v.evidence);
}

#[test]
fn termination_message_equals_on_a_live_timeline() {
    // termination-message-file writes "config invalid: missing key\n" to /dev/termination-log
    // (live run 0e6zgyqg on the reference node); exact means the newline too.
    let case = load(&suite_yaml(
        &root().join("manifests/termination-message-file.yaml"),
        "",
        "",
        "- container: {name: main, messageEquals: \"config invalid: missing key\\n\"}\n- container: {name: main, messageEquals: 'config invalid: missing key'}",
    ));
    let v = judge_case(&case.spec, &live("termination-message-file.json"));
    pass(&v[0]);
    fails_with(
        &v[1],
        "expected exactly \"config invalid: missing key\", observed \"config invalid: missing key\\n\"",
    );
}

#[test]
fn text_needs_regex_or_equals_not_both() {
    let m = rec("sigterm-ignored").join("manifest.yaml");
    let p = problems(&suite_yaml(&m, "", "", "- log: {container: main, regex: x, equals: x}"));
    assert!(
        p.contains("cases[0].expect[0].log: give `regex` or `equals`, not both"),
        "{p}"
    );
    let p = problems(&suite_yaml(&m, "", "", "- log: {container: main}"));
    assert!(
        p.contains("needs `regex` (a pattern) or `equals` (the exact text)"),
        "{p}"
    );
}

// --- 5. condition reason and message ---------------------------------------------------------

#[test]
fn condition_reason_and_message() {
    // Ready ends False with reason PodCompleted (Succeeded) vs PodFailed (Failed).
    let v = judge(
        "restart-never-success",
        "",
        "- condition: {type: Ready, last: False, reason: PodCompleted}\n- condition: {type: Ready, reason: PodFailed}",
    );
    pass(&v[0]);
    fails_with(
        &v[1],
        "expected last reason PodFailed; observed [False → True → False], last reason PodCompleted",
    );
    let v = judge(
        "init-fail-never",
        "",
        "- condition: {type: Initialized, last: False, message: 'incomplete status: \\[init-2\\]$'}\n- condition: {type: Initialized, message: 'init-1'}",
    );
    pass(&v[0]);
    fails_with(&v[1], "expected last message /init-1/");
}

#[test]
fn condition_mark_with_reason_and_message() {
    // init-ordering: Initialized=False lists the init containers still to run, one fewer each time.
    let marks = "only3: {condition: {type: Initialized, status: False, message: '\\[init-3\\]$'}}\ndone: {condition: {type: Ready, status: False, reason: PodCompleted}}";
    let v = judge(
        "init-ordering",
        marks,
        "- order: [{lastLogLine: {container: init-2}}, only3, {firstLogLine: {container: main}}, done]\n- order: [done, only3]",
    );
    pass(&v[0]);
    fails_with(&v[1], "expected `done` before `only3`");
}

// --- 6. a mark that never occurs fails `order` once the observation is complete --------------

#[test]
fn order_with_an_absent_mark_fails_when_complete() {
    let marks = "term: {log: {container: main, regex: TERM}}";
    let v = judge("sigterm-ignored", marks, "- order: [term, {event: {reason: BackOff}}]");
    fails_with(
        &v[0],
        "no first BackOff event (0 seen), and the observation is complete",
    );
    // While observing, the same is only undecided.
    let case = load(&suite_yaml(
        &rec("sigterm-ignored").join("manifest.yaml"),
        "",
        marks,
        "- order: [term, {event: {reason: BackOff}}]",
    ));
    let mut tl = Recording::read(&rec("sigterm-ignored")).unwrap().timeline();
    tl.complete = false;
    assert_eq!(judge_case(&case.spec, &tl)[0].outcome, Outcome::Undecided);
}

// --- 7. patch of spec fields -----------------------------------------------------------------

#[test]
fn patch_body_is_a_strategic_merge_patch_of_allowed_fields() {
    let case = load(&suite_yaml(
        &rec("emptydir-sharing").join("manifest.yaml"),
        "- patch: {labels: {a: b}, activeDeadlineSeconds: 5, containerImages: {writer: '${image.busybox}', init-writer: 'busybox:1.37'}}",
        "",
        "- phase: Succeeded",
    ));
    let podlife::suite::Step::Patch(p) = &case.spec.steps[0].value else {
        panic!("a patch step")
    };
    let overrides = [("busybox".to_string(), "registry.local/busybox:1.36".to_string())].into();
    let body = case.patch_body(p, &overrides);
    assert_eq!(
        body,
        serde_json::json!({
            "metadata": {"labels": {"a": "b"}},
            "spec": {
                "activeDeadlineSeconds": 5,
                "initContainers": [{"name": "init-writer", "image": "busybox:1.37"}],
                "containers": [{"name": "writer", "image": "registry.local/busybox:1.36"}]
            }
        })
    );
    // `podlife images` lists what the patch switches to.
    let used = case.images_used(&overrides);
    assert!(used.contains("busybox:1.37"), "{used:?}");
}

#[test]
fn patch_validation() {
    let m = rec("emptydir-sharing").join("manifest.yaml");
    let p = problems(&suite_yaml(
        &m,
        "- patch: {activeDeadlineSeconds: 0}",
        "",
        "- phase: Succeeded",
    ));
    assert!(
        p.contains("cases[0].steps[0].patch.activeDeadlineSeconds: must be 1 or more, got 0"),
        "{p}"
    );
    let p = problems(&suite_yaml(
        &m,
        "- patch: {containerImages: {nope: 'x:1'}}",
        "",
        "- phase: Succeeded",
    ));
    assert!(
        p.contains("patch.containerImages.nope: unknown container `nope`"),
        "{p}"
    );
    let p = problems(&suite_yaml(
        &m,
        "- patch: {containerImages: {writer: '${image.nope}'}}",
        "",
        "- phase: Succeeded",
    ));
    assert!(p.contains("unknown template `${image.nope}`"), "{p}");
    let p = problems(&suite_yaml(
        &m,
        "- patch: {restartPolicy: Never}",
        "",
        "- phase: Succeeded",
    ));
    assert!(
        p.contains(
            "unknown field `restartPolicy`, expected one of labels, annotations, activeDeadlineSeconds, containerImages"
        ),
        "{p}"
    );
    let p = problems(&suite_yaml(&m, "- patch: {}", "", "- phase: Succeeded"));
    assert!(p.contains("a patch needs"), "{p}");
    // The API never lets a running pod raise its deadline.
    let p = problems(&suite_yaml(
        &root().join("manifests/status-active-deadline.yaml"),
        "- patch: {activeDeadlineSeconds: 3600}",
        "",
        "- phase: Failed",
    ));
    assert!(p.contains("only lets a running pod lower activeDeadlineSeconds"), "{p}");
}

// --- 10. `judge` checks the steps and prints clean JSON --------------------------------------

#[test]
fn judge_checks_steps_against_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("t.yaml");
    // restart-never-success was never deleted: a case with a delete step is another experiment,
    // which the recording does not answer.
    std::fs::write(
        &suite,
        suite_yaml(
            &rec("restart-never-success").join("manifest.yaml"),
            "- delete: {}",
            "",
            "- phase: Succeeded",
        ),
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .args(["judge", "--suite"])
        .arg(&suite)
        .args(["--case", "c"])
        .arg(rec("restart-never-success"))
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("UNDECIDED [step] not comparable: the case changed since this recording: steps[0] delete: the recording has no delete"),
        "{out}"
    );
    // Another experiment: no verdict of the case is given on it.
    assert!(!out.contains("[0] final phase"), "{out}");
}

/// A `sleep` before a request is held against the recording: the recording deletes 8 s after it
/// saw Running, so a case that sleeps 7 s there matches it, and one that sleeps 20 s is a later
/// version of the case that this recording cannot answer (undecided, never failed).
#[test]
fn a_sleep_the_recording_did_not_wait_out_is_not_comparable() {
    let tl = Recording::read(&rec("sigterm-ignored")).unwrap().timeline();
    let steps = |sleep: &str| {
        let case = load(&suite_yaml(
            &rec("sigterm-ignored").join("manifest.yaml"),
            &format!("- waitFor: {{until: {{phase: Running}}}}\n- sleep: {sleep}\n- delete: {{}}"),
            "",
            "- phase: Running",
        ));
        podlife::judge::steps_verdict(&case.spec, &tl)
    };
    assert!(steps("7s").is_none(), "{:?}", steps("7s"));
    let v = steps("20s").expect("a 20 s sleep before a delete sent after 8 s");
    assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
    assert!(v.facts.contains(&podlife::judge::Fact::CaseChanged), "{v:?}");
    assert!(
        v.evidence.starts_with(
            "not comparable: the case changed since this recording: steps[1] sleep 20s: the recording sent its next request 8s after"
        ),
        "{}",
        v.evidence
    );
    // A sleep that only paces the next request changes no expectation's answer.
    assert!(steps("{for: 20s, pacing: true}").is_none());
    // Still a step like any other: the delete after it must be there.
    let no_delete = load(&suite_yaml(
        &rec("sigterm-ignored").join("manifest.yaml"),
        "- waitFor: {until: {phase: Running}}\n- sleep: {for: 1s, pacing: true}\n- delete: {gracePeriodSeconds: 77}",
        "",
        "- phase: Running",
    ));
    assert!(podlife::judge::steps_verdict(&no_delete.spec, &tl).is_some());
}

#[test]
fn judge_json_prints_json_only() {
    for (case, code) in [("restart-never-success", 0), ("sigterm-ignored", 1)] {
        let out = assert_cmd::Command::cargo_bin("podlife")
            .unwrap()
            .current_dir(root())
            .args(["judge", "--json", "--suite", "suites/restart-policy.yaml", "--case"])
            .arg(if case == "sigterm-ignored" {
                "restart-never-success"
            } else {
                case
            })
            .arg(rec(case))
            .assert()
            .code(code)
            .get_output()
            .stdout
            .clone();
        let v: serde_json::Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out)));
        assert!(v.as_array().is_some_and(|a| !a.is_empty()), "{v}");
    }
}

// --- ephemeral containers (no recording has one: a synthetic timeline, fed through the same
// observer a live run uses, in the shape the kubelet reports them) ----------------------------

fn ts(s: &str) -> jiff::Timestamp {
    s.parse().unwrap()
}

/// The pod of `manifest` running `main`, and from `ephemeral` on the `debugger` ephemeral
/// container in the state given.
fn eph_pod(rv: u32, debugger: Option<serde_json::Value>) -> k8s_openapi::api::core::v1::Pod {
    let mut p = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "eph", "namespace": "ns", "uid": "u1", "resourceVersion": rv.to_string(),
            "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"nodeName": "n", "restartPolicy": "Always",
            "containers": [{"name": "main", "image": "busybox:1.36"}]},
        "status": {"phase": "Running", "qosClass": "BestEffort",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": true, "started": true, "restartCount": 0,
                "image": "busybox:1.36", "imageID": "", "containerID": "containerd://main-0",
                "state": {"running": {"startedAt": "2026-12-01T10:00:01Z"}}}]}
    });
    if let Some(state) = debugger {
        p["spec"]["ephemeralContainers"] = serde_json::json!([{"name": "debugger", "image": "busybox:1.36",
            "command": ["sh", "-c", "while true; do echo polo; sleep 2; done"]}]);
        let mut cs = serde_json::json!({"name": "debugger", "ready": false, "restartCount": 0,
            "image": "busybox:1.36", "imageID": "", "state": state});
        if cs["state"].get("running").is_some() {
            cs["containerID"] = serde_json::json!("containerd://debugger-0");
        }
        p["status"]["ephemeralContainerStatuses"] = serde_json::json!([cs]);
    }
    serde_json::from_value(p).unwrap()
}

fn ephemeral_timeline() -> Timeline {
    use podlife::observe::{Action, ActionKind, Input, Observer, WatchKind};
    let mut obs = Observer::new(Some("eph"), "test");
    let pod = |t: &str, rv, d| Input::Pod {
        received: ts(t),
        kind: WatchKind::Modified,
        pod: Box::new(eph_pod(rv, d)),
    };
    // The pod as created (no status yet): the observation begins with it.
    let mut created = eph_pod(0, None);
    created.status = serde_json::from_value(serde_json::json!({"phase": "Pending", "qosClass": "BestEffort"})).unwrap();
    obs.push(Input::Pod {
        received: ts("2026-12-01T10:00:00.100Z"),
        kind: WatchKind::Added,
        pod: Box::new(created),
    });
    obs.push(pod("2026-12-01T10:00:02Z", 1, None));
    obs.push(Input::Action(Action {
        kind: ActionKind::Ephemeral,
        sent: ts("2026-12-01T10:00:05Z"),
        done: Some(ts("2026-12-01T10:00:05.020Z")),
        grace_period_seconds: None,
        detail: Some("debugger via patch".into()),
        exec: None,
        update: None,
    }));
    obs.push(pod(
        "2026-12-01T10:00:05.100Z",
        2,
        Some(serde_json::json!({"waiting": {"reason": "ContainerCreating"}})),
    ));
    obs.push(pod(
        "2026-12-01T10:00:06.500Z",
        3,
        Some(serde_json::json!({"running": {"startedAt": "2026-12-01T10:00:06Z"}})),
    ));
    for (i, t) in ["06.100", "08.110", "10.120"].iter().enumerate() {
        obs.push(Input::Log {
            received: Some(ts(&format!("2026-12-01T10:00:{t}Z")) + jiff::SignedDuration::from_millis(50 + i as i64)),
            container: "debugger".into(),
            instance: Some(0),
            line: format!("2026-12-01T10:00:{t}000000Z polo"),
        });
    }
    let mut tl = obs.finish();
    tl.complete = true;
    tl
}

/// A suite on a manifest with `main` whose one step adds `debugger`.
fn eph_case(expect: &str) -> podlife::suite::LoadedCase {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("pod.yaml");
    std::fs::write(
        &m,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: eph}\nspec:\n  containers:\n  - {name: main, image: '${image.busybox}', command: [sleep, '10000']}\n",
    )
    .unwrap();
    let steps = "- ephemeral: {container: {name: debugger, image: '${image.busybox}', command: [sh, -c, 'while true; do echo polo; sleep 2; done']}}\n- waitFor: {until: {log: {container: debugger, equals: polo, occurrence: 3}}}";
    load(&suite_yaml(&m, steps, "", expect))
}

#[test]
fn ephemeral_container_is_observed_as_a_container() {
    let tl = ephemeral_timeline();
    // A container of its own kind on the timeline, outside kubectl's READY and STATUS.
    let c = tl.pod.containers.iter().find(|c| c.name == "debugger").unwrap();
    assert_eq!(c.kind, podlife::suite::ContainerKind::Ephemeral);
    let last = tl.snapshots.last().unwrap();
    assert_eq!(last.status.as_deref(), Some("Running"));
    assert_eq!(last.ready_column.as_deref(), Some("1/1"));
    let right = eph_case(
        "- container: {name: debugger, state: running, restartCount: 0}\n\
         - log: {container: debugger, equals: polo, count: 3}\n\
         - order: [{action: {action: ephemeral}}, {containerSeen: {container: debugger, state: running}}]\n\
         - gap: {from: {action: {action: ephemeral}}, to: {firstLogLine: {container: debugger}}, max: 5s}\n\
         - statuses: [Pending, Running]",
    );
    for v in judge_case(&right.spec, &tl) {
        pass(&v);
    }
    // The step check accepts the timeline (same container, same request) ...
    assert!(podlife::judge::steps_verdict(&right.spec, &tl).is_none());
    // ... and wrong expectations fail, naming what was observed.
    let wrong = eph_case(
        "- container: {name: debugger, state: terminated}\n\
         - log: {container: debugger, equals: polo, count: 4}\n\
         - order: [{containerSeen: {container: debugger, state: running}}, {action: {action: ephemeral}}]",
    );
    let v = judge_case(&wrong.spec, &tl);
    assert_eq!(v.len(), 3);
    for v in &v {
        assert_eq!(v.outcome, Outcome::Fail, "{}", v.evidence);
    }
    // A case that adds it by update judged on a recording that patched: another experiment.
    let mut by_update = right.clone();
    if let podlife::suite::Step::Ephemeral(e) = &mut by_update.spec.steps[0].value {
        e.via = podlife::suite::EphemeralVia::Update;
    }
    let step = podlife::judge::steps_verdict(&by_update.spec, &tl).unwrap();
    assert!(step.facts.contains(&podlife::judge::Fact::CaseChanged), "{step:?}");
    assert!(
        step.evidence
            .contains("`debugger via update` but the recording added `debugger via patch`"),
        "{}",
        step.evidence
    );
}

#[test]
fn ephemeral_step_validation() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("pod.yaml");
    std::fs::write(
        &m,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: eph}\nspec:\n  containers:\n  - {name: main, image: '${image.busybox}'}\n",
    )
    .unwrap();
    let check = |step: &str, expect: &str| problems(&suite_yaml(&m, step, "", expect));
    let ok = check(
        "- ephemeral: {container: {name: debugger, image: '${image.agnhost}', targetContainerName: main}, via: update}",
        "- container: {name: debugger, state: running}",
    );
    assert_eq!(ok, "");
    for (step, needle) in [
        (
            "- ephemeral: {container: {name: main, image: x}}",
            "container name `main` is already used in the pod",
        ),
        (
            "- ephemeral: {container: {name: Dbg, image: x}}",
            "invalid container name \"Dbg\"",
        ),
        (
            "- ephemeral: {container: {name: d, image: x, ports: [{containerPort: 80}]}}",
            "may not set `ports`",
        ),
        (
            "- ephemeral: {container: {name: d, image: x, readinessProbe: {exec: {command: [x]}}}}",
            "may not set `readinessProbe`",
        ),
        ("- ephemeral: {container: {name: d}}", "needs an `image`"),
        (
            "- ephemeral: {container: {name: d, image: '${image.nope}'}}",
            "unknown template `${image.nope}`",
        ),
        (
            "- ephemeral: {container: {name: d, image: x, targetContainerName: sidecar}}",
            "targetContainerName `sidecar` is not a container of the pod (it has: main)",
        ),
        (
            "- ephemeral: {container: {name: d, image: x, command: sh}}",
            "not a valid ephemeral container: command",
        ),
        (
            "- ephemeral: {container: {name: d, image: x}, via: put}",
            "unknown variant `put`",
        ),
        (
            "- ephemeral: {container: {name: d, image: x}}\n- patch: {containerImages: {d: y}}",
            "`d` is an ephemeral container",
        ),
    ] {
        let p = check(step, "- phase: Running");
        assert!(p.contains(needle), "{step}: {p}");
        assert!(p.contains("t.yaml:"), "file:line:col: {p}");
    }
    // Its image is one `podlife images` lists.
    let c = load(&suite_yaml(
        &m,
        "- ephemeral: {container: {name: debugger, image: '${image.agnhost}'}}",
        "",
        "- phase: Running",
    ));
    assert!(
        c.images_used(&Default::default())
            .contains("registry.k8s.io/e2e-test-images/agnhost:2.66.1")
    );
}

// --- RunContainerError (no recording): the case judged on a synthetic timeline shaped as the
// kubelet source says it reports a failed start under restartPolicy Always (see the comment of
// status::status-run-container-error) — the case must be consistent with that behaviour, and a
// wrong row must fail on it. -----------------------------------------------------------------

fn rce_pod(phase: &str, main: Option<serde_json::Value>) -> k8s_openapi::api::core::v1::Pod {
    let mut p = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "status-run-container-error", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"nodeName": "n", "restartPolicy": "Always",
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["/does-not-exist"]}]},
        "status": {"phase": phase, "qosClass": "BestEffort"}
    });
    // Without a container status: the pod as created, before anyone wrote its status.
    if let Some(m) = main {
        p["status"]["conditions"] = serde_json::json!([{"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"}, {"type": "ContainersReady", "status": "False"},
            {"type": "Ready", "status": "False"}]);
        p["status"]["containerStatuses"] = serde_json::json!([m]);
    }
    serde_json::from_value(p).unwrap()
}

/// main waiting `reason` after `attempts` failed starts (lastState: the last one, StartError).
fn rce_main(reason: &str, attempts: u32) -> serde_json::Value {
    let mut m = serde_json::json!({"name": "main", "ready": false, "started": false, "image": "busybox:1.36",
        "imageID": "", "restartCount": attempts.saturating_sub(1), "state": {"waiting": {"reason": reason}}});
    if attempts > 0 {
        let n = attempts - 1;
        m["containerID"] = serde_json::json!(format!("containerd://c{n}"));
        m["lastState"] = serde_json::json!({"terminated": {"exitCode": 128, "reason": "StartError",
            "message": "exec: \"/does-not-exist\": stat /does-not-exist: no such file or directory",
            "startedAt": "1970-01-01T00:00:00Z", "finishedAt": format!("2026-12-01T10:00:{:02}Z", 2 + 12 * n),
            "containerID": format!("containerd://c{n}")}});
    }
    m
}

fn rce_timeline() -> Timeline {
    use podlife::observe::{Action, ActionKind, Input, Observer, WatchKind};
    let mut obs = Observer::new(Some("status-run-container-error"), "test");
    obs.push(Input::Action(Action {
        kind: ActionKind::Apply,
        sent: ts("2026-12-01T10:00:00Z"),
        done: Some(ts("2026-12-01T10:00:00.050Z")),
        grace_period_seconds: None,
        detail: None,
        exec: None,
        update: None,
    }));
    let pod = |t: &str, phase: &str, m: Option<serde_json::Value>| Input::Pod {
        received: ts(t),
        kind: WatchKind::Modified,
        pod: Box::new(rce_pod(phase, m)),
    };
    let event = |t: &str, reason: &str, kind: &str, message: &str, count: u32| {
        Input::Event {
        received: ts(&format!("{t}Z")),
        kind: WatchKind::Added,
        event: Box::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("e-{reason}"), "namespace": "ns"},
                "involvedObject": {"kind": "Pod", "name": "status-run-container-error", "namespace": "ns",
                    "uid": "u1", "fieldPath": "spec.containers{main}"},
                "reason": reason, "message": message, "type": kind, "count": count,
                "firstTimestamp": "2026-12-01T10:00:02Z", "lastTimestamp": t.split('.').next().unwrap().to_string() + "Z",
            }))
            .unwrap(),
        ),
    }
    };
    let failed = "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/does-not-exist\": stat /does-not-exist: no such file or directory: unknown";
    obs.push(pod("2026-12-01T10:00:00.100Z", "Pending", None));
    obs.push(pod(
        "2026-12-01T10:00:01.000Z",
        "Pending",
        Some(rce_main("ContainerCreating", 0)),
    ));
    obs.push(event("2026-12-01T10:00:02.100", "Failed", "Warning", failed, 1));
    obs.push(pod(
        "2026-12-01T10:00:02.500Z",
        "Running",
        Some(rce_main("RunContainerError", 1)),
    ));
    // The first retry is immediate and fails the same way.
    obs.push(event("2026-12-01T10:00:03.100", "Failed", "Warning", failed, 2));
    obs.push(pod(
        "2026-12-01T10:00:03.500Z",
        "Running",
        Some(rce_main("RunContainerError", 2)),
    ));
    obs.push(event(
        "2026-12-01T10:00:04.100",
        "BackOff",
        "Warning",
        "Back-off restarting failed container main in pod status-run-container-error_ns(u1)",
        1,
    ));
    obs.push(pod(
        "2026-12-01T10:00:04.500Z",
        "Running",
        Some(rce_main("CrashLoopBackOff", 2)),
    ));
    obs.push(event("2026-12-01T10:00:15.100", "Failed", "Warning", failed, 3));
    obs.push(pod(
        "2026-12-01T10:00:15.500Z",
        "Running",
        Some(rce_main("RunContainerError", 3)),
    ));
    let mut tl = obs.finish();
    tl.complete = true;
    tl
}

#[test]
fn run_container_error_case_agrees_with_the_kubelet_source() {
    let case = status_case("status-run-container-error");
    let tl = rce_timeline();
    assert!(podlife::judge::steps_verdict(&case.spec, &tl).is_none());
    for v in judge_case(&case.spec, &tl) {
        pass(&v);
    }
    // The commonly published pairing (Pending while the container cannot start) is wrong here.
    let text = std::fs::read_to_string(root().join("suites/status.yaml")).unwrap();
    let start = text.find("  - name: status-run-container-error").unwrap();
    let end = start + text[start..].find("\n  - name: ").unwrap();
    let wrong = text[start..end].replacen(
        "status: RunContainerError\n          phase: Running",
        "status: RunContainerError\n          phase: Pending",
        1,
    );
    assert_ne!(wrong, text[start..end]);
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("manifests"), dir.path().join("manifests")).unwrap();
    std::fs::write(dir.path().join("s.yaml"), format!("name: status\ncases:\n{wrong}\n")).unwrap();
    let wrong = podlife::suite::load_suites(&[dir.path().join("s.yaml")]).unwrap()[0].cases[0].clone();
    let v = judge_case(&wrong.spec, &tl);
    let row = v.iter().find(|v| v.kind == "statusRow").unwrap();
    assert_eq!(row.outcome, Outcome::Fail, "{}", row.evidence);
}
