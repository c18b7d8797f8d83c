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
        "changed [6] gap `deleteSent`→`podGone`: 754.2ms → 1.162s (+54.1%): within noise ±2s (kubelet reaction 2s)",
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
        reason.starts_with("beyond noise ±250ms") && reason.ends_with("but away from its bounds 4.75s..5.5s"),
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
