//! Lost evidence is never a pass: gaps in a source (`Timeline::gaps`) make the verdicts that
//! depend on it undecided, on the real recordings with a source removed and on synthetic gaps.

use std::path::{Path, PathBuf};

use crate::support::files::copy_dir;
use podlife::judge::{Outcome, Verdict};
use podlife::observe::{EvidenceSource, Gap, GapClock, Input, Observer, Recording, Timeline};
use podlife::results::AttemptStatus;
use podlife::run::case::replay_case;
use podlife::suite::{Expectation, LoadedCase, MarkRef, MarkSpec};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn recordings() -> PathBuf {
    root().join("tests/fixtures/recordings")
}

fn recorded_cases() -> Vec<LoadedCase> {
    let suites = podlife::suite::load_suites(&[root().join("suites")]).unwrap();
    suites
        .iter()
        .flat_map(|s| s.cases.clone())
        .filter(|c| recordings().join(c.name()).is_dir())
        .collect()
}

fn mark_spec(case: &LoadedCase, r: &MarkRef) -> Option<MarkSpec> {
    match r {
        MarkRef::Named(n) => case.spec.marks.get(&n.value).cloned(),
        MarkRef::Inline(m) => Some((**m).clone()),
    }
}

/// True when the verdict is a `never` whose forbidden mark is an event.
fn is_never_event(case: &LoadedCase, v: &Verdict) -> bool {
    match case.spec.expect.get(v.index).map(|e| &e.value) {
        Some(Expectation::Never(n)) => matches!(mark_spec(case, &n.mark), Some(MarkSpec::Event(_))),
        _ => false,
    }
}

/// Replays every recorded built-in case on a copy of its recording changed by `edit`.
fn replay_edited(edit: impl Fn(&Path)) -> Vec<(LoadedCase, podlife::results::Attempt)> {
    let tmp = tempfile::tempdir().unwrap();
    recorded_cases()
        .into_iter()
        .map(|c| {
            let dir = tmp.path().join(c.name());
            copy_dir(&recordings().join(c.name()), &dir);
            edit(&dir);
            let a = replay_case(&c, &dir);
            (c, a)
        })
        .collect()
}

#[test]
fn recordings_without_events_never_pass_a_never_event_verdict() {
    let runs = replay_edited(|dir| std::fs::remove_file(dir.join("events.watch.jsonl")).unwrap());
    // Every case with a recording (status-table cases included).
    assert_eq!(runs.len(), 45);
    let mut never_events = 0;
    for (c, a) in &runs {
        if a.verdicts.iter().any(|v| is_never_event(c, v)) {
            assert_ne!(
                a.status,
                AttemptStatus::Passed,
                "{} passed without its events",
                c.full_name()
            );
            // Nothing failed (below): the attempt is undecided, not failed.
            assert_eq!(a.status, AttemptStatus::Undecided, "{}", c.full_name());
        }
        for v in &a.verdicts {
            // Missing evidence never turns a verdict red either.
            assert_ne!(v.outcome, Outcome::Fail, "{}: {}", c.full_name(), v.evidence);
            if is_never_event(c, v) {
                never_events += 1;
                assert_eq!(v.outcome, Outcome::Undecided, "{}: {}", c.full_name(), v.evidence);
                assert!(
                    v.evidence
                        .contains("events watch never available (the recording has no events.watch.jsonl)"),
                    "{}",
                    v.evidence
                );
            }
            // What does not depend on events is still decided.
            if matches!(v.kind.as_str(), "phase" | "container" | "log") {
                assert_eq!(v.outcome, Outcome::Pass, "{}: {}", c.full_name(), v.evidence);
            }
        }
    }
    // The issue counted 19 `never`-event verdicts that passed without events.
    assert!(never_events >= 19, "{never_events}");
}

#[test]
fn an_empty_events_file_is_not_a_gap() {
    // Empty means "no events happened": `never` event verdicts pass, `event` expectations fail.
    let runs = replay_edited(|dir| std::fs::write(dir.join("events.watch.jsonl"), "").unwrap());
    let mut never_events = 0;
    let mut failed_events = 0;
    for (c, a) in &runs {
        for v in &a.verdicts {
            if is_never_event(c, v) {
                never_events += 1;
                assert_eq!(v.outcome, Outcome::Pass, "{}: {}", c.full_name(), v.evidence);
            }
            if v.kind == "event" && v.outcome == Outcome::Fail {
                failed_events += 1;
            }
        }
        let tl = a.timeline.as_ref().unwrap();
        assert!(tl.gaps.is_empty(), "{:?}", tl.gaps);
    }
    assert!(
        never_events >= 19 && failed_events > 0,
        "{never_events} {failed_events}"
    );
}

#[test]
fn a_gaps_file_in_a_recording_is_read_and_judged() {
    // sigterm-ignored with the events watch down across the DELETE: Killing may be hidden.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sigterm-ignored");
    copy_dir(&recordings().join("sigterm-ignored"), &dir);
    let rec = Recording::read(&dir).unwrap();
    let tl = rec.timeline();
    let killing = tl.events.iter().find(|e| e.reason == "Killing").unwrap().received;
    let gap = Gap {
        source: EvidenceSource::Events,
        from: Some(killing - jiff::SignedDuration::from_secs(1)),
        to: Some(killing + jiff::SignedDuration::from_secs(2)),
        back: None,
        clock: GapClock::Harness,
        reason: "503 ServiceUnavailable".into(),
    };
    std::fs::write(dir.join("gaps.jsonl"), serde_json::to_string(&gap).unwrap() + "\n").unwrap();
    let tl = Recording::read(&dir).unwrap().timeline();
    assert_eq!(tl.gaps, vec![gap.clone()]);
    let case = recorded_cases()
        .into_iter()
        .find(|c| c.name() == "sigterm-ignored")
        .unwrap();
    let verdicts = podlife::judge::judge_case(&case.spec, &tl);
    // The Killing event was still seen: `event` with a lower bound passes ...
    let ev = verdicts.iter().find(|v| v.kind == "event").unwrap();
    assert!(ev.evidence.contains("Killing"), "{}", ev.evidence);
    // ... but `count: 1` says "exactly": another one could hide in the gap.
    assert_eq!(ev.outcome, Outcome::Undecided, "{}", ev.evidence);
    assert!(ev.evidence.contains("events watch down"), "{}", ev.evidence);
    // The order through the Killing event: it was received right after the gap started, so
    // its receive time is uncertain.
    let order = verdicts
        .iter()
        .find(|v| v.kind == "order" && v.evidence.contains("Killing"))
        .unwrap();
    assert_eq!(order.outcome, Outcome::Undecided, "{}", order.evidence);
    assert!(order.evidence.contains("may lie elsewhere"), "{}", order.evidence);
    // Log- and status-based verdicts are untouched.
    for v in verdicts
        .iter()
        .filter(|v| matches!(v.kind.as_str(), "phase" | "container" | "gap"))
    {
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.evidence);
    }
    // Without the gap everything passes (the test can fail for the right reason only).
    let clean = Recording::read(&recordings().join("sigterm-ignored"))
        .unwrap()
        .timeline();
    assert!(podlife::judge::all_pass(&podlife::judge::judge_case(
        &case.spec, &clean
    )));
}

fn observe(inputs: Vec<Input>) -> Timeline {
    let mut o = Observer::new(None, "test");
    for i in inputs {
        o.push(i);
    }
    o.finish()
}

#[test]
fn pod_watch_gap_hides_phases_and_makes_receive_time_marks_uncertain() {
    // restart-never-success: Pending → Running → Succeeded. Drop the snapshots in the middle and
    // declare the pod watch down there.
    let rec = Recording::read(&recordings().join("restart-never-success")).unwrap();
    let case = recorded_cases()
        .into_iter()
        .find(|c| c.name() == "restart-never-success")
        .unwrap();
    let pods: Vec<_> = rec
        .inputs
        .iter()
        .filter_map(|i| match i {
            Input::Pod { received, pod, .. } => Some((*received, pod.status.as_ref()?.phase.clone()?)),
            _ => None,
        })
        .collect();
    let first_running = pods.iter().find(|(_, p)| p == "Running").unwrap().0;
    let first_done = pods.iter().find(|(_, p)| p == "Succeeded").unwrap().0;
    let from = first_running - jiff::SignedDuration::from_millis(1);
    let to = first_done - jiff::SignedDuration::from_millis(1);
    let mut inputs: Vec<Input> = rec
        .inputs
        .iter()
        .filter(|i| !matches!(i, Input::Pod { received, .. } if *received >= from && *received < to))
        .cloned()
        .collect();
    inputs.push(Input::Gap(Gap {
        source: EvidenceSource::PodWatch,
        from: Some(from),
        to: None,
        back: None,
        clock: GapClock::Harness,
        reason: "connection refused".into(),
    }));
    inputs.push(Input::SourceUp {
        source: EvidenceSource::PodWatch,
        at: to,
    });
    let tl = observe(inputs);
    assert_eq!(tl.gaps.len(), 1);
    assert_eq!(tl.gaps[0].to, Some(to));
    let short = Expectation::Phases(vec![
        podlife::suite::PodPhase::Pending,
        podlife::suite::PodPhase::Succeeded,
    ]);
    let v = podlife::judge::judge(&case.spec, &short, &tl, 0);
    // Observed Pending → Succeeded, as expected; but a Running could hide in the gap, which
    // this expectation does not allow: not a pass.
    assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
    assert!(v.evidence.contains("pod watch down"), "{}", v.evidence);
    // Expecting Running too: shown in the gap or skipped by the API, the sequence matches.
    let full = Expectation::Phases(vec![
        podlife::suite::PodPhase::Pending,
        podlife::suite::PodPhase::Running,
        podlife::suite::PodPhase::Succeeded,
    ]);
    let v = podlife::judge::judge(&case.spec, &full, &tl, 0);
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.evidence);
    // A sequence the hidden phase cannot explain still fails.
    let wrong = Expectation::Phases(vec![
        podlife::suite::PodPhase::Running,
        podlife::suite::PodPhase::Pending,
    ]);
    assert_eq!(podlife::judge::judge(&case.spec, &wrong, &tl, 0).outcome, Outcome::Fail);
    // The final phase was seen after the gap: decided.
    let final_ = Expectation::Phase(podlife::suite::PodPhase::Succeeded);
    assert_eq!(
        podlife::judge::judge(&case.spec, &final_, &tl, 0).outcome,
        Outcome::Pass
    );
    // The phase Succeeded mark is the first snapshot after the gap: its time is uncertain.
    let spec = MarkSpec::Phase(podlife::suite::PodPhase::Succeeded);
    let hit = podlife::judge::marks::resolve(&spec, &tl).unwrap();
    assert!(hit.uncertain.is_some());
}

#[test]
fn pod_watch_down_at_the_end_leaves_final_state_undecided() {
    let rec = Recording::read(&recordings().join("restart-never-success")).unwrap();
    let case = recorded_cases()
        .into_iter()
        .find(|c| c.name() == "restart-never-success")
        .unwrap();
    let last_pending = rec
        .inputs
        .iter()
        .filter_map(|i| match i {
            Input::Pod { received, pod, .. } if pod.status.as_ref()?.phase.as_deref() == Some("Pending") => {
                Some(*received)
            }
            _ => None,
        })
        .max()
        .unwrap();
    let mut inputs: Vec<Input> = rec
        .inputs
        .iter()
        .filter(|i| !matches!(i, Input::Pod { received, .. } if *received > last_pending))
        .cloned()
        .collect();
    inputs.push(Input::Gap(Gap {
        source: EvidenceSource::PodWatch,
        from: Some(last_pending + jiff::SignedDuration::from_millis(1)),
        to: None,
        back: None,
        clock: GapClock::Harness,
        reason: "gave up after the outage budget".into(),
    }));
    let tl = observe(inputs);
    for v in podlife::judge::judge_case(&case.spec, &tl) {
        assert_ne!(v.outcome, Outcome::Fail, "{}", v.evidence);
        if matches!(v.kind.as_str(), "phase" | "container") {
            assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
        }
    }
}

#[test]
fn log_gap_makes_never_on_a_log_line_and_last_log_line_undecided() {
    let rec = Recording::read(&recordings().join("sigterm-ignored")).unwrap();
    let tl = rec.timeline();
    let case = recorded_cases()
        .into_iter()
        .find(|c| c.name() == "sigterm-ignored")
        .unwrap();
    let last = tl.logs_of("main", Some(0)).map(|l| l.time).max().unwrap();
    // The log of main#0 is known complete only up to 1 s before its end.
    let cut = last - jiff::SignedDuration::from_secs(1);
    let mut inputs: Vec<Input> = rec
        .inputs
        .iter()
        .filter(|i| match i {
            Input::Log { line, .. } => podlife::observe::observer::parse_log_line(line).is_some_and(|(t, _)| t <= cut),
            _ => true,
        })
        .cloned()
        .collect();
    inputs.push(Input::Gap(Gap {
        source: EvidenceSource::Logs {
            container: Some("main".into()),
            instance: Some(0),
        },
        from: Some(cut),
        to: None,
        back: None,
        clock: GapClock::Node,
        reason: "log stream lost".into(),
    }));
    let tl = observe(inputs);
    let verdicts = podlife::judge::judge_case(&case.spec, &tl);
    // The gap term→kill uses tickStopped (the last tick): the true last line may be missing.
    let gap = verdicts
        .iter()
        .find(|v| v.kind == "gap" && v.evidence.starts_with("gap `term`→`kill`"))
        .unwrap();
    assert_eq!(gap.outcome, Outcome::Undecided, "{}", gap.evidence);
    // Marks before the gap still measure: DELETE → TERM.
    let early = verdicts
        .iter()
        .find(|v| v.kind == "gap" && v.evidence.starts_with("gap `deleteSent`→`term`"))
        .unwrap();
    assert_eq!(early.outcome, Outcome::Pass, "{}", early.evidence);
    assert!(
        gap.evidence.contains("log of main#0 incomplete after"),
        "{}",
        gap.evidence
    );
    assert!(gap.measured.is_empty(), "an uncertain gap is not a measurement");
    // `never` a log line: absent in what was read, but the end of the log is missing.
    let never = Expectation::Never(podlife::suite::NeverExpect {
        mark: MarkRef::Inline(Box::new(
            serde_json::from_value(serde_json::json!({"log": {"container": "main", "regex": "^no such line$"}}))
                .unwrap(),
        )),
        after: None,
        before: None,
    });
    let v = podlife::judge::judge(&case.spec, &never, &tl, 0);
    assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
    // A line seen before the gap is seen: `never` on it fails, `log` on it passes.
    let never_seen = Expectation::Never(podlife::suite::NeverExpect {
        mark: MarkRef::Inline(Box::new(
            serde_json::from_value(serde_json::json!({"log": {"container": "main", "regex": "^TERM received$"}}))
                .unwrap(),
        )),
        after: None,
        before: None,
    });
    assert_eq!(
        podlife::judge::judge(&case.spec, &never_seen, &tl, 0).outcome,
        Outcome::Fail
    );
}

#[test]
fn the_observer_caps_lines_and_keeps_the_last_line_of_a_flooding_instance() {
    use podlife::observe::{MAX_LOG_LINE_BYTES, MAX_LOG_LINES_PER_INSTANCE, TRUNCATED_MARKER};
    let mut o = Observer::new(None, "test");
    let t0: jiff::Timestamp = "2026-11-29T21:00:00Z".parse().unwrap();
    let long = "x".repeat(MAX_LOG_LINE_BYTES * 3);
    o.push(Input::Log {
        received: None,
        container: "main".into(),
        instance: Some(0),
        line: format!("{t0} {long}"),
    });
    let n = MAX_LOG_LINES_PER_INSTANCE + 100;
    for i in 1..=n {
        let t = t0 + jiff::SignedDuration::from_millis(i as i64);
        o.push(Input::Log {
            received: None,
            container: "main".into(),
            instance: Some(0),
            line: format!("{t} line {i}"),
        });
    }
    let tl = o.finish();
    assert_eq!(tl.logs.len(), MAX_LOG_LINES_PER_INSTANCE);
    assert!(tl.logs[0].text.ends_with(TRUNCATED_MARKER));
    assert_eq!(tl.logs[0].text.len(), MAX_LOG_LINE_BYTES + TRUNCATED_MARKER.len());
    assert_eq!(
        tl.logs.last().unwrap().text,
        format!("line {n}"),
        "the newest line is kept"
    );
    assert_eq!(tl.stats.log_lines_truncated, 1);
    assert_eq!(tl.stats.log_lines_dropped, 101);
    assert_eq!(tl.notes.len(), 2, "{:?}", tl.notes);
    let g = &tl.gaps[0];
    assert!(g.source.covers_logs("main", Some(0)));
    assert!(g.from.is_some() && g.to.is_some());
}

/// A case whose verdicts are pass and undecided only is `undecided` in every report — not
/// failed, not passed: summary.json, JUnit (`<error type="undecided">`), the console count, the
/// certification table (area undecided) — and the run exits 1 (not everything passed).
#[test]
fn pass_and_undecided_only_is_an_undecided_case_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    for name in ["sigterm-handled", "sigterm-ignored"] {
        copy_dir(&recordings().join(name), &rec.join(name));
        std::fs::remove_file(rec.join(name).join("events.watch.jsonl")).unwrap();
    }
    let reports = tmp.path().join("reports");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["run", "--replay"])
        .arg(&rec)
        .arg("--reports")
        .arg(&reports)
        .args(["--profile", "certify", "termination::sig"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("cases: 0 passed, 0 flaky, 0 failed, 2 undecided, 0 errors"),
        "{stdout}"
    );
    assert!(stdout.contains("termination        undecided"), "{stdout}");
    let run = std::fs::read_dir(&reports).unwrap().next().unwrap().unwrap().path();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["undecided"], 2);
    assert_eq!(summary["failed"], 0);
    let statuses: Vec<&str> = summary["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["undecided", "undecided"]);
    let junit = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<error message=").count(), 2, "{junit}");
    assert_eq!(junit.matches(" type=\"undecided\">").count(), 2, "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    let html = std::fs::read_to_string(run.join("index.html")).unwrap();
    assert!(html.contains("badge b-undecided"), "html has no undecided badge");
    assert!(html.contains("<p class=\"why\">undecided: "), "html does not say why");
    // Re-judging the run says the same, and counts the undecided cases in its closing line.
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .arg("rejudge")
        .arg(&run)
        .arg("--reports")
        .arg(tmp.path().join("rejudged"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(": 0 passed, 0 flaky, 0 failed, 2 undecided, 0 errors, 0 ignored;"),
        "{stdout}"
    );
}

/// Live, a 64 s API outage: a postStart-failing container's instances 0-2 ran while the kubelet
/// could not write its status; the first status seen counted 3 restarts. Those instances were
/// never seen, so what the case says of instance 0 (terminated 143, its log lines) is
/// undecided, never failed as "absent" — and every other verdict stays as decided as before.
#[test]
fn instances_that_ran_unseen_during_an_outage_are_undecided_not_absent() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/outage-recordings/poststart-fail@vm2");
    let tl = Recording::read(&dir).unwrap().timeline();
    for n in 0..3 {
        let g = tl
            .gaps
            .iter()
            .find(|g| {
                g.source
                    == EvidenceSource::Logs {
                        container: Some("main".into()),
                        instance: Some(n),
                    }
            })
            .unwrap_or_else(|| panic!("no gap for main#{n}: {:?}", tl.gaps));
        assert!(g.reason.contains("never seen"), "{}", g.describe());
    }
    assert!(
        !tl.gaps.iter().any(|g| g.source
            == EvidenceSource::Logs {
                container: Some("main".into()),
                instance: Some(3)
            }),
        "instance 3 was seen and its log read"
    );
    let suites = podlife::suite::load_suites(&[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("suites")]).unwrap();
    let case = suites
        .iter()
        .flat_map(|s| &s.cases)
        .find(|c| c.full_name() == "hooks::poststart-fail")
        .unwrap();
    let v = podlife::judge::judge_case(&case.spec, &tl);
    assert!(v.iter().all(|v| v.outcome != Outcome::Fail), "{v:#?}");
    let c = v
        .iter()
        .find(|v| v.kind == "container" && v.evidence.starts_with("main#0"))
        .unwrap();
    assert_eq!(c.outcome, Outcome::Undecided, "{}", c.evidence);
    assert!(c.evidence.contains("never seen"), "{}", c.evidence);
}

/// Live (2026-12-01, the start of an outage run): instance 0's exit was never written to the
/// status (Running, then instance 1 Running), so the "second Error" STATUS was instance 2's and
/// CrashLoopBackOff came before it. The case bounds CrashLoopBackOff by instances, which the
/// sampling cannot shift: nothing fails on this evidence.
#[test]
fn a_skipped_status_does_not_shift_the_crashloop_bounds() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/outage-recordings/status-crashloop@vm2");
    let tl = Recording::read(&dir).unwrap().timeline();
    let suites = podlife::suite::load_suites(&[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("suites")]).unwrap();
    let case = suites
        .iter()
        .flat_map(|s| &s.cases)
        .find(|c| c.full_name() == "status::status-crashloop")
        .unwrap();
    let v = podlife::judge::judge_case(&case.spec, &tl);
    assert!(v.iter().all(|v| v.outcome != Outcome::Fail), "{v:#?}");
    let never = v
        .iter()
        .find(|v| v.kind == "never" && v.evidence.contains("CrashLoopBackOff"))
        .unwrap();
    assert_eq!(never.outcome, Outcome::Pass, "{}", never.evidence);
}
