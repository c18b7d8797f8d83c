//! `podlife diff` on report folders built from recordings, `--repeat` statistics on synthetic
//! timelines, and the per-area certification summary.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use podlife::judge::judge_case;
use podlife::observe::Recording;
use podlife::results::stats::{self, AreaVerdict};
use podlife::results::{Attempt, AttemptStatus, Cleanup};
use podlife::results::{CaseReport, CaseStatus};

use crate::support::cli::diff;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A replay run of the built-in suites into `dir`; returns the run folder.
fn replay_run(dir: &Path) -> PathBuf {
    Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args(["run", "--replay", "tests/fixtures/recordings", "--quiet", "--reports"])
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("console.log"))
        .assert()
        .success();
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").is_file())
        .unwrap()
}

#[test]
fn unchanged_runs_show_no_regression_and_a_mutated_one_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let before = replay_run(&tmp.path().join("before"));
    let after = replay_run(&tmp.path().join("after"));
    let (code, out) = diff(&before, &after, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 regressions"), "{out}");
    assert!(
        out.contains("node.vm.kubelet") && out.contains("v1.36.2"),
        "fingerprints side by side: {out}"
    );

    // Flip a verdict and make a gap 50% longer in the later run.
    let path = after.join("summary.json");
    let mut s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for c in s["cases"].as_array_mut().unwrap() {
        if c["case"] == "oom-killed" {
            c["status"] = "failed".into();
            let v = &mut c["attempts"].as_array_mut().unwrap().last_mut().unwrap()["verdicts"][0];
            v["outcome"] = "fail".into();
        }
        if c["case"] == "sigterm-ignored" {
            for m in c["measurements"].as_array_mut().unwrap() {
                if m["label"].as_str().unwrap().contains("`term`→`kill`") {
                    let x = m["median"].as_f64().unwrap() * 1.5;
                    m["median"] = x.into();
                }
            }
        }
    }
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let (code, out) = diff(&before, &after, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("status::oom-killed") && out.contains("REGRESSION"),
        "{out}"
    );
    assert!(out.contains("gap `term`→`kill`: 4.832s → 7.248s (+50.0%)"), "{out}");
    assert!(out.contains("2 regressions"), "{out}");

    // An absolute threshold above the change hides the timing regression, not the verdict one.
    let (code, out) = diff(&before, &after, &["--threshold", "5s"]);
    assert_eq!(code, 1);
    assert!(out.contains("1 regression;"), "{out}");

    // JSON and JUnit formats.
    let (_, json) = diff(&before, &after, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["regressions"], 2);
    // Reports of this podlife carry each measurement's precision, bounds and noise class.
    let kill = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["timing"].as_array().unwrap())
        .find(|t| t["label"] == "gap `term`→`kill`")
        .unwrap();
    assert_eq!(kill["infoSource"], "report");
    assert_eq!(kill["regression"], true);
    let (_, xml) = diff(&before, &after, &["--format", "junit"]);
    let r = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(r.failures, 2);
}

#[test]
fn diff_of_a_folder_without_a_run_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _) = diff(tmp.path(), tmp.path(), &[]);
    assert_eq!(code, 2);
}

fn attempt(status: AttemptStatus, verdicts: Vec<podlife::judge::Verdict>) -> Attempt {
    Attempt {
        status,
        verdicts,
        error: None,
        started: jiff::Timestamp::UNIX_EPOCH,
        duration_s: 1.0,
        api_requests: 0,
        cleanup: Cleanup::default(),
        node_load: None,
        timeline: None,
    }
}

#[test]
fn repeat_statistics_over_synthetic_timelines() {
    // Three runs of sigterm-ignored whose SIGKILL came 4.832 s, +0.1 s and +0.8 s later:
    // the last log line is moved to make the synthetic timelines.
    let base = Recording::read(&root().join("tests/fixtures/recordings/sigterm-ignored"))
        .unwrap()
        .timeline();
    let suites = podlife::suite::load_suites(&[root().join("suites/termination.yaml")]).unwrap();
    let case = suites[0].cases.iter().find(|c| c.name() == "sigterm-ignored").unwrap();
    let mut attempts = vec![];
    // (Moving the last tick also stretches the loop's measured period, the kill's uncertainty.)
    for shift_ms in [0i64, 100, 800] {
        let mut tl = base.clone();
        let last = tl
            .logs
            .iter_mut()
            .filter(|l| l.container == "main")
            .max_by_key(|l| l.time)
            .unwrap();
        last.time += jiff::SignedDuration::from_millis(shift_ms);
        // The kubelet's finishedAt (whole seconds) moves with the kill, as it would.
        let killed = jiff::Timestamp::from_second(last.time.as_second()).unwrap();
        for i in tl.instances.iter_mut().filter(|i| i.container == "main") {
            i.finished_at = Some(killed);
        }
        let verdicts = judge_case(&case.spec, &tl);
        let ok = podlife::judge::all_pass(&verdicts);
        attempts.push(attempt(
            if ok {
                AttemptStatus::Passed
            } else {
                AttemptStatus::Failed
            },
            verdicts,
        ));
    }
    let refs: Vec<&Attempt> = attempts.iter().collect();
    let m = stats::measure_stats(&refs);
    let gap = m.iter().find(|m| m.label == "gap `term`→`kill`").unwrap();
    assert_eq!(gap.n, 3);
    assert!((gap.min - 4.832).abs() < 1e-3, "{gap:?}");
    assert!((gap.median - 4.932).abs() < 1e-3, "{gap:?}");
    assert!((gap.max - 5.632).abs() < 1e-3, "{gap:?}");
    // +800 ms puts the kill past the window's 5.5 s (and stretches the loop's measured period
    // to ~1 s, coarser than the window): that run did not pass, so the case is flaky.
    let outcomes: Vec<_> = attempts.iter().map(|a| a.status).collect();
    assert_eq!(
        outcomes,
        vec![AttemptStatus::Passed, AttemptStatus::Passed, AttemptStatus::Failed]
    );
    assert_eq!(stats::repeat_status(&outcomes, false), CaseStatus::Flaky);
    assert!((stats::pass_rate(&outcomes) - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Failed, AttemptStatus::Failed], false),
        CaseStatus::Failed
    );
    // A failure in a retry before the pass: flaky (the node was seen failing).
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Passed, AttemptStatus::Passed], true),
        CaseStatus::Flaky
    );
    // A harness error before a passing retry is no flake of the node: the retry's pass stands.
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Passed, AttemptStatus::Passed], false),
        CaseStatus::Passed
    );
    // Repetitions that passed beside ones without a verdict: not certified, not a node failure.
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Passed, AttemptStatus::Error], false),
        CaseStatus::Error
    );
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Undecided, AttemptStatus::Passed], false),
        CaseStatus::Undecided
    );
    assert_eq!(
        stats::repetition_outcomes(&attempts, &[2, 1]),
        vec![AttemptStatus::Passed, AttemptStatus::Failed]
    );
}

fn report(suite: &str, tag: &str, case: &str, status: CaseStatus, reason: Option<&str>) -> CaseReport {
    CaseReport {
        suite: suite.into(),
        suite_file: String::new(),
        case: case.into(),
        description: String::new(),
        reference: None,
        tags: vec![tag.into()],
        upstream: vec![],
        status,
        ignore_reason: reason.map(str::to_string),
        attempts: vec![],
        repetitions: vec![],
        pass_rate: 0.0,
        measurements: vec![],
        node: None,
        target_node: None,
        timeline_file: None,
        timeline: None,
    }
}

#[test]
fn certification_per_area() {
    let cases = vec![
        report("termination", "termination", "a", CaseStatus::Passed, None),
        report("termination", "termination", "b", CaseStatus::Flaky, None),
        report("probes", "probes", "c", CaseStatus::Passed, None),
        report("probes", "probes", "d", CaseStatus::Failed, None),
        report(
            "sidecars",
            "sidecars",
            "e",
            CaseStatus::Ignored,
            Some("needs server 1.29, cluster is 1.27"),
        ),
    ];
    let areas = stats::certify(&cases);
    let get = |a: &str| areas.iter().find(|x| x.area == a).unwrap();
    // A flaky case (seen failing and passing) certifies nothing: its area is not conformant.
    assert_eq!(get("termination").verdict, AreaVerdict::NotConformant);
    assert_eq!(get("termination").failing, vec!["termination::b"]);
    assert_eq!(get("probes").verdict, AreaVerdict::NotConformant);
    assert_eq!(get("probes").failing, vec!["probes::d"]);
    assert_eq!(get("sidecars").verdict, AreaVerdict::Skipped);
    let mut up = cases.clone();
    up[0].upstream = vec!["T1".into()];
    up[1].upstream = vec!["T5".into()];
    up[2].upstream = vec!["T2".into()];
    up[3].upstream = vec!["T2".into()];
    up[4].upstream = vec!["T3".into()];
    let u = stats::upstream(&up, &["T1".into(), "T2".into(), "T3".into(), "T4".into(), "T5".into()]).unwrap();
    assert_eq!(
        u.certified,
        vec!["T1"],
        "T2 has a failing case, T3 only an ignored one, T4 none, T5 a flaky one"
    );
    assert_eq!(u.failed, vec!["T2", "T5"]);
    assert_eq!(u.applicable, 5);
    let table = stats::certification_table(&areas, "node vm");
    assert!(
        table.contains("NOT CONFORMANT") && table.contains("needs server 1.29"),
        "{table}"
    );
    // The table names the flaky case with its pass rate.
    assert_eq!(get("termination").flaky_cases, vec!["termination::b (pass rate 0%)"]);
    assert!(table.contains("(flaky: termination::b (pass rate 0%))"), "{table}");
}

/// An undecided case is neither conformant nor NOT CONFORMANT: its area is undecided, and the
/// upstream behaviour it names is not certified.
#[test]
fn an_undecided_case_leaves_its_area_undecided() {
    let mut cases = vec![
        report("termination", "termination", "a", CaseStatus::Passed, None),
        report("termination", "termination", "b", CaseStatus::Undecided, None),
    ];
    cases[1].upstream = vec!["T1".into()];
    let areas = stats::certify(&cases);
    assert_eq!(areas[0].verdict, AreaVerdict::Undecided);
    assert_eq!(areas[0].undecided_cases, vec!["termination::b (undecided)"]);
    let u = stats::upstream(&cases, &["T1".into()]).unwrap();
    assert!(u.certified.is_empty() && u.failed.is_empty(), "{u:?}");
    assert_eq!(u.undecided, vec!["T1"]);
    assert_eq!(
        stats::repeat_status(&[AttemptStatus::Undecided], false),
        CaseStatus::Undecided
    );
}

#[test]
fn repeat_and_certify_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args([
            "run",
            "--replay",
            "tests/fixtures/recordings",
            "--repeat",
            "2",
            "--profile",
            "certify",
            "--reports",
        ])
        .arg(tmp.path())
        .arg("--logfile")
        .arg(tmp.path().join("console.log"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("certification of node vm"), "{out}");
    assert!(out.contains("termination        conformant"), "{out}");
    let run = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["repeat"], 2);
    let c = s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "sigterm-ignored")
        .unwrap();
    assert_eq!(c["repetitions"], serde_json::json!([1, 1]));
    assert_eq!(c["passRate"], 1.0);
    let m = c["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["label"] == "gap `term`→`kill`")
        .unwrap();
    assert_eq!(m["n"], 2);
}

#[test]
fn targeting_flags_are_refused_with_replay() {
    Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args(["run", "--replay", "tests/fixtures/recordings", "--node", "vm"])
        .assert()
        .code(2);
}

/// A harness error followed by a passing retry is no flake of the node: the case passed,
/// its area is conformant, and the error is reported beside the pass (JUnit, HTML, console).
/// A failure followed by a passing retry is flaky: not conformant, a JUnit failure.
#[test]
fn a_harness_error_before_a_passing_retry_is_reported_but_not_a_flake() {
    let mut errored = attempt(AttemptStatus::Error, vec![]);
    errored.error = Some("delete pod: client error (Connect)".into());
    let outcomes = stats::repetition_outcomes(&[errored.clone(), attempt(AttemptStatus::Passed, vec![])], &[2]);
    let mut passed = report("termination", "termination", "a", CaseStatus::Passed, None);
    passed.status = stats::case_status(&outcomes, false);
    passed.attempts = vec![errored, attempt(AttemptStatus::Passed, vec![])];
    passed.repetitions = vec![2];
    passed.pass_rate = stats::pass_rate(&outcomes);
    assert_eq!(passed.status, CaseStatus::Passed);
    let note = podlife::results::harness_error_note(&passed).unwrap();
    assert!(
        note.contains("1 harness error(s), not counted against the node") && note.contains("Connect"),
        "{note}"
    );
    let mut flaky = report("termination", "termination", "b", CaseStatus::Passed, None);
    flaky.attempts = vec![
        attempt(AttemptStatus::Failed, vec![]),
        attempt(AttemptStatus::Passed, vec![]),
    ];
    flaky.repetitions = vec![2];
    flaky.status = stats::case_status(&[AttemptStatus::Passed], true);
    flaky.pass_rate = 1.0;
    assert_eq!(flaky.status, CaseStatus::Flaky);
    let areas = stats::certify(std::slice::from_ref(&passed));
    assert_eq!(areas[0].verdict, AreaVerdict::Conformant);
    let areas = stats::certify(&[passed.clone(), flaky.clone()]);
    assert_eq!(areas[0].verdict, AreaVerdict::NotConformant);
    let msg = podlife::results::failure_message(&flaky);
    assert!(
        msg.starts_with("flaky, not certified:") && msg.contains("1 of 2 attempt(s) failed"),
        "{msg}"
    );
}
