//! `podlife diff` on two real live runs of a conformant node (tests/fixtures/live-runs:
//! 8o9vtjm0 with runc, 5oc60j0i with crun, both written by podlife before verdicts recorded
//! their precision): noise is told from regression, and table, JSON, JUnit and exit code agree.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::cli::diff;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_dir(id: &str) -> PathBuf {
    root().join("tests/fixtures/live-runs").join(id)
}

fn json(before: &Path, after: &Path) -> (i32, Value) {
    let (code, out) = diff(before, after, &["--format", "json"]);
    (code, serde_json::from_str(&out).unwrap())
}

/// A copy of a live run whose summary.json `edit` changed.
fn edited(id: &str, edit: impl FnOnce(&mut Value)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut s: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir(id).join("summary.json")).unwrap()).unwrap();
    edit(&mut s);
    std::fs::write(dir.join("summary.json"), serde_json::to_string(&s).unwrap()).unwrap();
    (tmp, dir)
}

fn case_mut<'a>(s: &'a mut Value, name: &str) -> &'a mut Value {
    s["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["case"] == name)
        .unwrap()
}

/// Moves measurement (index, position) of a case by `by` seconds (min, median, max alike).
fn shift(s: &mut Value, case: &str, index: u64, position: u64, by: f64) {
    let c = case_mut(s, case);
    for m in c["measurements"].as_array_mut().unwrap() {
        if m["index"] == index && m["position"] == position {
            for k in ["min", "median", "max"] {
                m[k] = (m[k].as_f64().unwrap() + by).into();
            }
        }
    }
}

fn set(s: &mut Value, case: &str, index: u64, position: u64, value: f64) {
    let c = case_mut(s, case);
    for m in c["measurements"].as_array_mut().unwrap() {
        if m["index"] == index && m["position"] == position {
            for k in ["min", "median", "max"] {
                m[k] = value.into();
            }
        }
    }
}

fn case_json<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == name)
        .unwrap()
}

#[test]
fn two_live_runs_of_a_conformant_node_show_no_regression() {
    let (before, after) = (run_dir("8o9vtjm0"), run_dir("5oc60j0i"));
    let (code, out) = diff(&before, &after, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("86 cases compared, 0 regressions;"), "{out}");
    // What an earlier diff called 9 regressions is listed as noise, with the reason.
    for line in [
        "changed [5] gap `created`→`ready`: 185.0ms → 1.019s (+450.9%): within noise ±4s (precision 2s + kubelet reaction 2s)",
        "changed [5] backoff `main` (status finishedAt→startedAt, ±1s precision) interval 1: 1s → 0s (-100.0%): within noise",
        "changed [6] gap `deleteSent`→`podGone`: 754.2ms → 1.162s (+54.1%): within noise ±12s (pod removal 12s)",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    // The cases that failed falsely in the earlier run are fixed, not regressions.
    assert!(
        out.lines()
            .any(|l| l.starts_with("downward-api::downward-api-env") && l.ends_with("fixed")),
        "{out}"
    );
    // Reports written by earlier podlife versions: described from the current suites (a gap
    // whose marks the suite has changed since is only informational).
    assert!(out.contains("described from the current suites"), "{out}");

    let (code, d) = json(&before, &after);
    assert_eq!(code, 0);
    assert_eq!(d["regressions"], 0);
    let cases = d["cases"].as_array().unwrap();
    assert!(cases.iter().all(|c| c["change"] != "regression"));
    let timings: Vec<&Value> = cases.iter().flat_map(|c| c["timing"].as_array().unwrap()).collect();
    assert!(timings.len() >= 20, "{} timings", timings.len());
    assert!(timings.iter().all(|t| t["regression"] == false));
    let described = timings.iter().filter(|t| t["infoSource"] == "suite").count();
    assert!(described + 2 >= timings.len(), "{described} of {}", timings.len());
    // The table lists exactly the cases the JSON says changed.
    let changed: Vec<&str> = cases
        .iter()
        .filter(|c| c["change"] != "same")
        .map(|c| c["case"].as_str().unwrap())
        .collect();
    for c in &changed {
        assert!(out.contains(&format!("{c} ")), "{c} not in the table");
    }
}

#[test]
fn a_kill_gap_two_seconds_longer_is_a_regression() {
    // termination::sigterm-ignored, expectation 4: gap `term`→`kill` (4.75 s..5.5 s), 4.838 s.
    let (_tmp, after) = edited("5oc60j0i", |s| shift(s, "sigterm-ignored", 4, 0, 2.0));
    let before = run_dir("8o9vtjm0");
    let (code, out) = diff(&before, &after, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("86 cases compared, 1 regression;"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("termination::sigterm-ignored") && l.ends_with("REGRESSION")),
        "{out}"
    );
    assert!(
        out.contains(
            "REGRESSION [4] gap `term`→`kill`: 4.851s → 6.838s (+41.0%): beyond noise ±250ms (process scheduling 250ms), past its bound 4.75s..5.5s"
        ),
        "{out}"
    );

    let (code, d) = json(&before, &after);
    assert_eq!(code, 1);
    assert_eq!(d["regressions"], 1);
    let c = case_json(&d, "termination::sigterm-ignored");
    assert_eq!(c["change"], "regression");
    assert_eq!(c["statusChange"], "same");
    let t = &c["timing"][0];
    assert_eq!(t["regression"], true);
    assert_eq!(t["label"], "gap `term`→`kill`");

    let (_, xml) = diff(&before, &after, &["--format", "junit"]);
    let r = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(r.failures, 1);

    // The same move within the kill gap's noise (a scheduling hiccup) is not a regression.
    let (_tmp2, small) = edited("5oc60j0i", |s| shift(s, "sigterm-ignored", 4, 0, 0.2));
    let (code, out) = diff(&before, &small, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("changed [4] gap `term`→`kill`: 4.851s → 5.038s (+3.9%): within noise ±250ms"),
        "{out}"
    );
    // --threshold is an extra floor: a 2 s change below it is not even listed.
    let (code, out) = diff(&before, &after, &["--threshold", "3s"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_verdict_or_status_that_no_longer_passes_is_a_regression() {
    let before = run_dir("8o9vtjm0");
    // A verdict flipped (and so the case failed).
    let (_t1, flipped) = edited("5oc60j0i", |s| {
        let c = case_mut(s, "sigterm-ignored");
        c["status"] = "failed".into();
        let a = c["attempts"].as_array_mut().unwrap().last_mut().unwrap();
        a["status"] = "failed".into();
        a["verdicts"][0]["outcome"] = "fail".into();
    });
    let (code, d) = json(&before, &flipped);
    assert_eq!(code, 1);
    assert_eq!(d["regressions"], 1);
    let c = case_json(&d, "termination::sigterm-ignored");
    assert_eq!(c["change"], "regression");
    assert_eq!(c["verdictFlips"][0]["before"], "pass");
    assert_eq!(c["verdictFlips"][0]["after"], "fail");
    let (code, out) = diff(&before, &flipped, &[]);
    assert_eq!(code, 1);
    assert!(out.contains("REGRESSION [0] phases pass → fail"), "{out}");

    // passed → error, interrupted, ignored, flaky, or missing from the later run.
    for (case, status) in [
        ("sigterm-handled", Some("error")),
        ("oom-killed", Some("interrupted")),
        ("init-ordering", Some("ignored")),
        ("sidecar-native", Some("flaky")),
        ("emptydir-sharing", None),
    ] {
        let (_t, after) = edited("5oc60j0i", |s| match status {
            Some(st) => case_mut(s, case)["status"] = st.into(),
            None => s["cases"].as_array_mut().unwrap().retain(|c| c["case"] != case),
        });
        let (code, d) = json(&before, &after);
        assert_eq!(code, 1, "{case} → {status:?}");
        assert_eq!(d["regressions"], 1, "{case} → {status:?}");
        let c = d["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"].as_str().unwrap().ends_with(&format!("::{case}")))
            .unwrap();
        assert_eq!(c["change"], "regression", "{case} → {status:?}");
    }
}

#[test]
fn a_faster_in_bounds_change_is_only_changed() {
    let before = run_dir("8o9vtjm0");
    // The crash loop's 4th back-off (nominal 40 s) from 49 s down to 41 s: faster, inside its
    // bounds, closer to the nominal step.
    let (_t1, after) = edited("5oc60j0i", |s| set(s, "restart-always-crashloop", 5, 3, 41.0));
    let (code, out) = diff(&before, &after, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("changed [5] backoff `main` (status finishedAt→startedAt, ±1s precision) interval 4: 45s → 41s"),
        "{out}"
    );
    // Beyond its noise but inside its bounds, away from both: changed, not a regression (the
    // kill gap from 4.851 s to 5.132 s, inside 4.75 s..5.5 s).
    let (_t2, after) = edited("5oc60j0i", |s| set(s, "sigterm-ignored", 4, 0, 5.132));
    let (code, d) = json(&before, &after);
    assert_eq!(code, 0);
    assert_eq!(d["regressions"], 0);
    let c = case_json(&d, "termination::sigterm-ignored");
    assert_eq!(c["change"], "changed");
    let t = &c["timing"][0];
    assert_eq!(t["regression"], false);
    let reason = t["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("beyond noise ±250ms")
            && reason.contains("but away from its bounds 4.75s..5.5s; process scheduling: "),
        "{reason}"
    );
    let (_, out) = diff(&before, &after, &[]);
    assert!(out.contains("0 regressions"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("termination::sigterm-ignored") && l.ends_with("changed")),
        "{out}"
    );
}

#[test]
fn a_report_whose_case_is_unknown_is_compared_but_only_informational() {
    // Rename a case in both runs: no suite describes it, so its timings cannot regress, while
    // its verdicts still can.
    let rename = |s: &mut Value| {
        case_mut(s, "sigterm-ignored")["case"] = "renamed-case".into();
    };
    let (_t1, before) = edited("8o9vtjm0", rename);
    let (_t2, after) = edited("5oc60j0i", |s| {
        rename(s);
        shift(s, "renamed-case", 4, 0, 2.0);
    });
    let (code, d) = json(&before, &after);
    assert_eq!(code, 0);
    let t = &case_json(&d, "termination::renamed-case")["timing"][0];
    assert_eq!(t["infoSource"], "unknown");
    assert_eq!(t["regression"], false);
}

/// The live bundles of conformant nodes run with `--each-node` (both nodes in one run, judged
/// by today's suites): N33 and N38, and any later normal run dropped in as `N<letter>-<runid>`.
fn healthy_each_node_bundles() -> Vec<(String, PathBuf)> {
    let dir = root().join("tests/fixtures/live-bundles");
    let mut out = vec![];
    for d in std::fs::read_dir(&dir).unwrap() {
        let d = d.unwrap().path();
        let name = d.file_name().unwrap().to_str().unwrap().to_string();
        let later = name.len() > 2
            && name.starts_with('N')
            && name.as_bytes()[1].is_ascii_lowercase()
            && name.as_bytes()[2] == b'-';
        if !(d.is_dir() && (later || name.starts_with("N33-") || name.starts_with("N38-"))) {
            continue;
        }
        if let Some(b) = std::fs::read_dir(&d)
            .unwrap()
            .map(|f| f.unwrap().path())
            .find(|f| f.to_str().unwrap().ends_with(".tar.gz"))
        {
            out.push((name, b));
        }
    }
    out.sort();
    out
}

/// Re-judges a bundle with today's suites (`podlife rejudge BUNDLE --suites suites`) into `reports`
/// and returns the new run folder.
fn rejudged(bundle: &Path, reports: &Path) -> PathBuf {
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args(["rejudge", "--quiet", "--suites", "suites", "--reports"])
        .arg(reports)
        .arg(bundle)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: rejudge exited {:?}: {}",
        bundle.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_dir(reports)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("summary.json").is_file())
        .unwrap_or_else(|| panic!("{}: no run folder", bundle.display()))
}

fn json_args(before: &Path, after: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let (code, out) = diff(before, after, &args);
    (code, serde_json::from_str(&out).unwrap())
}

/// Timing regressions and verdict flips of cases that passed on both sides: what a healthy pair
/// must never show (a case the old evidence cannot decide is the replay tests' business).
fn node_regressions(d: &Value) -> Vec<String> {
    d["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["before"] == "passed" && c["after"] == "passed" && c["change"] == "regression")
        .map(|c| format!("{}: {}", c["case"], c["timing"]))
        .collect()
}

#[test]
fn healthy_runs_and_healthy_nodes_show_no_timing_regression() {
    let bundles = healthy_each_node_bundles();
    assert!(bundles.len() >= 2, "{bundles:?}");
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<(String, PathBuf)> = bundles
        .iter()
        .map(|(name, b)| (name.clone(), rejudged(b, &tmp.path().join(name))))
        .collect();
    let mut problems = vec![];
    for (i, (a, ra)) in runs.iter().enumerate() {
        let (_, d) = json_args(ra, ra, &["--node-a", "vm", "--node-b", "vm2"]);
        problems.extend(node_regressions(&d).into_iter().map(|p| format!("{a} vm→vm2 {p}")));
        for (b, rb) in &runs[i + 1..] {
            let (_, d) = json_args(ra, rb, &[]);
            problems.extend(node_regressions(&d).into_iter().map(|p| format!("{a}→{b} {p}")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every timing says its mechanism, and a gap between two of our own actions is listed for
    // information only.
    let (a, b) = (&runs[0].1, &runs[1].1);
    let (_, d) = json_args(a, b, &[]);
    for c in d["cases"].as_array().unwrap() {
        for t in c["timing"].as_array().unwrap() {
            if t["infoSource"] == "report" {
                assert!(t["noiseClass"].is_string(), "{t}");
            }
            if t["noiseClass"] == "own" {
                assert_eq!(t["regression"], false, "{t}");
                assert!(t["reason"].as_str().unwrap().starts_with("not compared"), "{t}");
            }
        }
    }
}

/// A copy of run folder `run` whose summary.json `edit` changed.
fn edited_run(run: &Path, edit: impl FnOnce(&mut Value)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("edited");
    std::fs::create_dir_all(&dir).unwrap();
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    edit(&mut s);
    std::fs::write(dir.join("summary.json"), serde_json::to_string(&s).unwrap()).unwrap();
    (tmp, dir)
}

/// Moves measurement `index` (a gap) of `suite::case` on `node` by `by` seconds, as a node whose
/// mark at its `to` end comes that much later would measure it.
fn shift_on(s: &mut Value, full: &str, node: &str, index: u64, by: f64) {
    let (suite, case) = full.split_once("::").unwrap();
    let c = s["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["suite"] == suite && c["case"] == case && c["node"] == node)
        .unwrap_or_else(|| panic!("{full}@{node} not in the run"));
    let m = c["measurements"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["index"] == index && m["position"] == 0)
        .unwrap_or_else(|| panic!("{full}@{node}: no measurement {index}"));
    for k in ["min", "median", "max"] {
        m[k] = (m[k].as_f64().unwrap() + by).into();
    }
}

#[test]
fn a_node_whose_starts_are_3s_slow_or_whose_kill_is_late_still_regresses() {
    let (_, bundle) = healthy_each_node_bundles().pop().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let run = rejudged(&bundle, tmp.path());
    let node = ["--node-a", "vm", "--node-b", "vm"];
    // The same run against itself: nothing.
    let (code, d) = json_args(&run, &run, &node);
    assert_eq!((code, &d["regressions"]), (0, &Value::from(0)));
    // Every container start 3 s later: the gaps that end at a start grow by 3 s.
    let starts = [
        ("init-containers::init-ordering", 4),
        ("init-containers::init-ordering", 5),
        ("init-containers::init-ordering", 6),
        ("restart-policy::restart-onfailure-then-success", 6),
    ];
    let (_t, slow) = edited_run(&run, |s| {
        for (case, index) in starts {
            shift_on(s, case, "vm", index, 3.0);
        }
    });
    let (code, out) = diff(&run, &slow, &node);
    assert_eq!(code, 1, "{out}");
    for (case, index) in starts {
        let line = out
            .lines()
            .skip_while(|l| !l.starts_with(case))
            .skip(1)
            .find(|l| l.contains(&format!("[{index}] gap")))
            .unwrap_or_else(|| panic!("{case} [{index}] not listed in\n{out}"));
        assert!(line.trim_start().starts_with("REGRESSION"), "{line}");
        assert!(line.contains("kubelet reaction"), "{line}");
    }
    // The kill 1.5 s after the grace: the runtime's timer, measured on the container's own lines.
    let (_t2, late) = edited_run(&run, |s| shift_on(s, "termination::sigterm-ignored", "vm", 4, 1.5));
    let (code, out) = diff(&run, &late, &node);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1 regression;"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("[4] gap `term`→`kill`"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.trim_start().starts_with("REGRESSION"), "{line}");
    assert!(line.contains("process scheduling"), "{line}");
}
