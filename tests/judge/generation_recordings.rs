//! The Pods Generation parity cases on their own live recordings: each passes, and the
//! recording edited into what a kubelet broken for observedGeneration would show fails.

use std::path::PathBuf;

use podlife::judge::Outcome;
use podlife::results::AttemptStatus;
use podlife::run::case::replay_case;

use crate::support::judging::{builtin, root};

fn recording(case: &str) -> PathBuf {
    root().join("tests/fixtures/parity-recordings").join(case)
}

/// A copy of `case`'s recording with `status.observedGeneration` of every pod version replaced
/// by what `edit` makes of it (`None`: the field removed).
fn kubelet_edited(case: &str, edit: impl Fn(i64) -> Option<i64>) -> tempfile::TempDir {
    let (dir, changed) = crate::support::files::copy_with_edited_lines(&recording(case), "pods.watch.jsonl", |v| {
        let status = &mut v["event"]["object"]["status"];
        let Some(g) = status.get("observedGeneration").and_then(|g| g.as_i64()) else {
            return false;
        };
        let new = edit(g);
        match new {
            Some(n) => status["observedGeneration"] = n.into(),
            None => {
                status.as_object_mut().unwrap().remove("observedGeneration");
            }
        }
        new != Some(g)
    });
    assert!(changed > 0, "the edit of {case} changed nothing");
    dir
}

/// The verdicts of `full` on `dir`, which must not pass.
fn not_passing(full: &str, dir: &std::path::Path) -> Vec<(Outcome, String)> {
    let a = replay_case(&builtin(full), dir);
    assert_ne!(
        a.status,
        AttemptStatus::Passed,
        "{full} must not pass on {}",
        dir.display()
    );
    a.verdicts.iter().map(|v| (v.outcome, v.evidence.clone())).collect()
}

#[track_caller]
fn failed_naming(v: &[(Outcome, String)], needle: &str) {
    assert!(
        v.iter().any(|(o, e)| *o == Outcome::Fail && e.contains(needle)),
        "no failure naming `{needle}` in {v:#?}"
    );
}

#[test]
fn generation_cases_pass_on_their_recordings() {
    for case in ["generation-updates", "generation-500-updates"] {
        let full = format!("upstream-generation::{case}");
        let a = replay_case(&builtin(&full), &recording(case));
        let bad: Vec<_> = a.verdicts.iter().filter(|v| v.outcome != Outcome::Pass).collect();
        assert_eq!(a.status, AttemptStatus::Passed, "{full}: {:?} {bad:#?}", a.error);
        // The recording carries what the judge reads: both generations on the snapshots.
        let tl = podlife::observe::Recording::read(&recording(case)).unwrap().timeline();
        assert!(tl.snapshots.iter().all(|s| s.generation.is_some()), "{case}");
        let last = tl.snapshots.iter().rev().find_map(|s| s.observed_generation);
        assert_eq!(last, Some(if case == "generation-updates" { 5 } else { 500 }));
    }
}

#[test]
fn a_kubelet_that_never_writes_observed_generation_fails() {
    for case in ["generation-updates", "generation-500-updates"] {
        let d = kubelet_edited(case, |_| None);
        let v = not_passing(&format!("upstream-generation::{case}"), d.path());
        failed_naming(&v, "the kubelet wrote none");
    }
}

#[test]
fn a_kubelet_that_stops_at_an_older_generation_fails() {
    // It reports the generation it started the pod with and nothing after.
    let d = kubelet_edited("generation-updates", |_| Some(1));
    let v = not_passing("upstream-generation::generation-updates", d.path());
    failed_naming(&v, "observedGeneration 2 never seen (the latest: 1)");
    // One update behind, for good: 499 of 500.
    let d = kubelet_edited("generation-500-updates", |g| Some(g.min(499)));
    let v = not_passing("upstream-generation::generation-500-updates", d.path());
    failed_naming(&v, "observedGeneration 500 never seen (the latest: 499)");
}

#[test]
fn a_kubelet_whose_observed_generation_goes_back_fails() {
    // After the annotation update nothing bumps the generation: a kubelet that writes an older
    // observedGeneration again (4 after 5) is caught by the state it wrote.
    let seen = std::cell::Cell::new(0);
    let d = kubelet_edited("generation-updates", |g| {
        if g != 5 {
            return Some(g);
        }
        seen.set(seen.get() + 1);
        Some(if seen.get() == 1 { 5 } else { 4 })
    });
    let v = not_passing("upstream-generation::generation-updates", d.path());
    failed_naming(&v, "observedGeneration 5 from `annotations` on: 4 seen");
}
