//! In-place Pod Resize on live recordings (`tests/fixtures/resize-recordings`, this project's
//! two-node cluster, kubelet v1.36.2, containerd 2.1.9, cgroup v1, 2026-12-04): the
//! `upstream-resize` cases pass on what a conformant node did, and fail when the kubelet never
//! reports the new resources, when the cgroup keeps the old values, and on the recording of a
//! runtime handler that ignores resource updates.

use std::path::{Path, PathBuf};

use podlife::judge::Outcome;
use podlife::results::{Attempt, AttemptStatus};

use crate::support::files::copy_dir;
use crate::support::judging::{builtin, root};

fn fixture(dir: &str) -> PathBuf {
    root()
        .join("tests/fixtures/resize-recordings")
        .join(dir)
        .join("attempt-1")
}

/// A copy of a recording, to be changed.
fn copied(dir: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("attempt-1");
    copy_dir(&fixture(dir), &dst);
    (tmp, dst)
}

fn replay(full: &str, rec: &Path) -> Attempt {
    podlife::run::case::replay_case(&builtin(full), rec)
}

fn failing(a: &Attempt, kind: &str) -> Vec<String> {
    a.verdicts
        .iter()
        .filter(|v| v.kind == kind && v.outcome == Outcome::Fail)
        .map(|v| v.evidence.clone())
        .collect()
}

/// Rewrites each recorded pod version with `f`.
fn edit_pods(rec: &Path, f: impl Fn(&mut serde_json::Value)) {
    let path = rec.join("pods.watch.jsonl");
    let out: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            f(&mut v);
            v.to_string()
        })
        .collect();
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
}

#[test]
fn the_resize_cases_pass_on_a_conformant_node() {
    for (dir, full) in [
        (
            "upstream-resize__guaranteed-net-increase@vm",
            "upstream-resize::guaranteed-net-increase",
        ),
        (
            "upstream-resize__guaranteed-net-increase@vm2",
            "upstream-resize::guaranteed-net-increase",
        ),
        (
            "upstream-resize__burstable-various@vm2",
            "upstream-resize::burstable-various",
        ),
        (
            "upstream-resize__read-and-replace@vm",
            "upstream-resize::read-and-replace",
        ),
        ("upstream-resize__restart-policy@vm2", "upstream-resize::restart-policy"),
        (
            "upstream-resize__memory-below-usage@vm",
            "upstream-resize::memory-below-usage",
        ),
    ] {
        let a = replay(full, &fixture(dir));
        assert_eq!(a.status, AttemptStatus::Passed, "{dir}: {:#?}", a.verdicts);
        // Nothing vacuous: the resize was reported, and cgroup values were read and judged.
        assert!(
            a.verdicts
                .iter()
                .any(|v| v.kind == "cgroup" && v.outcome == Outcome::Pass),
            "{dir}"
        );
    }
}

/// A kubelet that keeps reporting c1's old resources after the resize: `resized` never comes,
/// so the case fails (its waitFor and every expectation after it), never passes.
#[test]
fn a_kubelet_that_never_reports_the_new_resources_fails() {
    let full = "upstream-resize::guaranteed-net-increase";
    let (_keep, rec) = copied("upstream-resize__guaranteed-net-increase@vm");
    edit_pods(&rec, |v| {
        for cs in v
            .pointer_mut("/event/object/status/containerStatuses")
            .and_then(|c| c.as_array_mut())
            .into_iter()
            .flatten()
        {
            if cs["name"] == "c1" && cs.get("resources").is_some() {
                cs["resources"] = serde_json::json!({"requests": {"cpu": "20m", "memory": "35Mi"},
                    "limits": {"cpu": "20m", "memory": "35Mi"}});
            }
        }
    });
    let a = replay(full, &rec);
    assert_eq!(a.status, AttemptStatus::Failed, "{:#?}", a.verdicts);
    let why = format!("{:?}", a.verdicts);
    assert!(why.contains("`c1` reports requests [cpu 20m, memory 35Mi]"), "{why}");
}

/// The kubelet reports the resize but the runtime left the cgroup as it was: the container's own
/// read of its cgroup fails the case, naming the file, the value and what the limit sets.
#[test]
fn a_cgroup_left_unchanged_fails() {
    let full = "upstream-resize::guaranteed-net-increase";
    let (_keep, rec) = copied("upstream-resize__guaranteed-net-increase@vm");
    let path = rec.join("actions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["exec"]["name"] == "c1-resized" {
                let s = v["exec"]["stdout"]
                    .as_str()
                    .unwrap()
                    .replace("cpu.cfs_quota_us 2500", "cpu.cfs_quota_us 2000");
                v["exec"]["stdout"] = s.into();
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    let a = replay(full, &rec);
    assert_eq!(a.status, AttemptStatus::Failed, "{:#?}", a.verdicts);
    assert_eq!(
        failing(&a, "cgroup"),
        [
            "cgroup of `c1` read by exec `c1-resized` (cgroup v1): cpu.cfs_quota_us 2000, expected 2500 or 3000 from the cpu limit (as expected: cpu.shares 25, memory.limit_in_bytes 41943040)"
        ]
    );
}

/// Live, on vm with a runtime handler whose `update` does nothing: the kubelet still reports the
/// resize done (containerd answers with the resources it was asked for), and every container's
/// cgroup keeps its old values.
#[test]
fn a_runtime_that_ignores_resource_updates_fails() {
    let full = "upstream-resize::guaranteed-net-increase";
    let a = replay(
        full,
        &fixture("upstream-resize__guaranteed-net-increase@vm-ignore-update"),
    );
    assert_eq!(a.status, AttemptStatus::Failed, "{:#?}", a.verdicts);
    let cg = failing(&a, "cgroup");
    assert_eq!(cg.len(), 3, "{cg:#?}");
    assert!(cg.iter().all(|e| e.contains("-resized`")), "{cg:#?}");
    // What the kubelet reports is not what was applied: the order passes.
    assert!(
        a.verdicts
            .iter()
            .any(|v| v.kind == "order" && v.outcome == Outcome::Pass),
        "{:#?}",
        a.verdicts
    );
}

/// A kubelet that writes a memory limit below the container's usage (or a runtime that takes
/// it) fails: the cgroup must keep the limit in force.
#[test]
fn a_memory_limit_below_usage_applied_fails() {
    let full = "upstream-resize::memory-below-usage";
    let (_keep, rec) = copied("upstream-resize__memory-below-usage@vm");
    let path = rec.join("actions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("memory.limit_in_bytes 31457280"),
        "the recording read 30Mi"
    );
    std::fs::write(
        &path,
        text.replacen("memory.limit_in_bytes 31457280", "memory.limit_in_bytes 8192", 1),
    )
    .unwrap();
    let a = replay(full, &rec);
    assert_eq!(a.status, AttemptStatus::Failed, "{:#?}", a.verdicts);
    assert_eq!(failing(&a, "cgroup").len(), 1, "{:#?}", a.verdicts);
}
