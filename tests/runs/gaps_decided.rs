//! What evidence after a gap decides: real recordings of an API-server restart (O1, 2026-12-03)
//! replayed, each beside a copy changed the way a broken node (or a lost stream) would change it,
//! so that every rule that turns "undecided" into a verdict is shown able to fail.

use std::path::Path;

use podlife::judge::Outcome;
use podlife::results::{Attempt, AttemptStatus};

use super::live_runs::{builtin, bundle_recording, judge_one};
use crate::support::files::copy_dir;

const O1: &str = "O1-h7smjxjb";

fn replay(full: &str, rec: &Path) -> Attempt {
    podlife::run::case::replay_case(&builtin(full), rec)
}

fn verdicts<'a>(a: &'a Attempt, kind: &str, says: &str) -> Vec<&'a podlife::judge::Verdict> {
    a.verdicts
        .iter()
        .filter(|v| v.kind == kind && v.evidence.contains(says))
        .collect()
}

/// Rewrites the recorded pod versions: `f` gets each line's JSON and may change it.
fn edit_pods(rec: &Path, f: impl Fn(usize, &mut serde_json::Value)) {
    let path = rec.join("pods.watch.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let out: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            f(i, &mut v);
            v.to_string()
        })
        .collect();
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
}

/// A liveness probe that never fails, in a recording where the API server restarted. No version
/// received before the kubelet caught up with writing (20 s after the API server answered
/// again, at 09:19:01) says what happened in the outage, not even the pod re-listed unchanged.
/// But the pod watch stayed up from then until the end of the case and delivered nothing newer:
/// restartCount 0 stood, so no restart hid in the outage. A node that restarted the container
/// there writes restartCount 1 once it can (here as the runner's closing read sees it), and
/// fails; a pod watch that never came back leaves it undecided.
#[test]
fn a_restart_count_still_zero_after_the_outage_decides_that_none_happened_in_it() {
    let full = "upstream-probes::probe-exec-liveness-healthy";
    let case_dir = "upstream-probes__probe-exec-liveness-healthy@vm";
    let restart_outcomes = |rec: &Path| -> (Attempt, Vec<Outcome>) {
        let a = replay(full, rec);
        let v: Vec<Outcome> = verdicts(&a, "never", "restartCount 1")
            .iter()
            .map(|v| v.outcome)
            .collect();
        assert!(!v.is_empty(), "{:?} {:#?}", a.error, a.verdicts);
        (a, v)
    };
    let (_d, rec) = bundle_recording(O1, case_dir);
    let (a, restarts) = restart_outcomes(&rec);
    assert!(restarts.iter().all(|o| *o == Outcome::Pass), "{:#?}", a.verdicts);

    // The pod watch came back only after the case ended: the last version may be stale.
    let (_d1, lost) = bundle_recording(O1, case_dir);
    move_reconnections(&lost, "podWatch", "2026-12-03T10:00:00.000000000Z");
    let (_, restarts) = restart_outcomes(&lost);
    assert!(restarts.iter().all(|o| *o == Outcome::Undecided), "{restarts:?}");

    // The closing read, after the outage and its settling (09:19:43), as the runner makes it.
    let (_d3, broken) = bundle_recording(O1, case_dir);
    let text = std::fs::read_to_string(broken.join("pods.watch.jsonl")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    v["received"] = "2026-12-03T09:20:30.000000000Z".into();
    v["event"]["type"] = "MODIFIED".into();
    v["event"]["object"]["metadata"]["resourceVersion"] = "999999999".into();
    v["event"]["object"]["status"]["containerStatuses"][0]["restartCount"] = 1.into();
    append_input(&broken, "pods.watch.jsonl", v);
    let (b, restarts) = restart_outcomes(&broken);
    assert_eq!(b.status, AttemptStatus::Failed, "{:#?}", b.verdicts);
    assert!(restarts.iter().all(|o| *o == Outcome::Fail), "{restarts:?}");
}

/// Moves every reconnection of `source` (`podWatch`, `events`) in a recording's gaps to `to`.
fn move_reconnections(rec: &Path, source: &str, to: &str) {
    let moved = rewrite_gaps(rec, |v| {
        let hit = v["source"] == source && v["up"].is_string();
        if hit {
            v["up"] = to.into();
        }
        hit
    });
    assert!(moved > 0, "no reconnection of {source} in the recording");
}

/// Rewrites each line of a recording's `gaps.jsonl` with `f`; returns how many it changed.
fn rewrite_gaps(rec: &Path, f: impl Fn(&mut serde_json::Value) -> bool) -> usize {
    let path = rec.join("gaps.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut changed = 0;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if f(&mut v) {
                changed += 1;
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    changed
}

/// Rewrites the recorded outage (the `api` gap and its copies for the watches) to end at `to`.
fn set_outage_end(rec: &Path, to: &str) {
    rewrite_gaps(rec, |v| {
        let hit = v["reason"].as_str().is_some_and(|r| r.contains("took no new request"));
        if hit {
            v["to"] = to.into();
        }
        hit
    });
}

/// `never Unhealthy` across a gap of the Event watch: Events are objects the API server keeps,
/// and the reconnected watch re-listed them, so one created inside the gap would have been seen;
/// one the kubelet could not post during an outage is retried for at least 100 s. So: an API
/// server that answered again sooner than that decides the absence (the recorded one answered
/// after 68 s, although the outage lasted 110 s with its settling); one that answered only
/// after 107 s does not; and a watch that never reconnected decides nothing.
#[test]
fn an_event_absent_after_a_reconnected_event_watch_is_absent_only_within_the_recorders_patience() {
    let full = "upstream-probes::probe-exec-liveness-healthy";
    let case_dir = "upstream-probes__probe-exec-liveness-healthy@vm";
    let unhealthy_outcomes = |rec: &Path| -> Vec<Outcome> {
        let a = replay(full, rec);
        let v = verdicts(&a, "never", "event Unhealthy");
        assert!(!v.is_empty(), "{:?} {:#?}", a.error, a.verdicts);
        v.iter().map(|v| v.outcome).collect()
    };
    let (_d, rec) = bundle_recording(O1, case_dir);
    assert!(unhealthy_outcomes(&rec).iter().all(|o| *o == Outcome::Pass));

    // Nothing answered before 09:19:40, 107 s into the outage.
    let (_d2, long) = bundle_recording(O1, case_dir);
    set_outage_end(&long, "2026-12-03T09:20:10.000000000Z");
    move_reconnections(&long, "podWatch", "2026-12-03T09:19:40.000000000Z");
    move_reconnections(&long, "events", "2026-12-03T09:19:40.000000000Z");
    assert!(unhealthy_outcomes(&long).iter().all(|o| *o == Outcome::Undecided));

    // The Event watch reconnected only after the case ended: nothing after its gap was seen.
    let (_d3, lost) = bundle_recording(O1, case_dir);
    move_reconnections(&lost, "events", "2026-12-03T10:00:00.000000000Z");
    assert!(unhealthy_outcomes(&lost).iter().all(|o| *o == Outcome::Undecided));
}

/// A subPath that cannot be expanded: the pod stays Pending, its container waiting, never
/// started. After the outage the pod is still Pending with restartCount 0 and no last state, so
/// neither phase Running nor a running container hid in the gap. A node that ran the container
/// inside the gap (a last state after it) leaves it undecided, and one showing it running fails.
#[test]
fn a_pending_pod_whose_container_never_started_was_never_running_inside_the_gap() {
    let full = "upstream-expansion::subpath-expr-from-failed";
    let (_d, rec) = bundle_recording(O1, "upstream-expansion__subpath-expr-from-failed@vm");
    let a = replay(full, &rec);
    assert_eq!(a.status, AttemptStatus::Passed, "{:#?}", a.verdicts);
    let running = verdicts(&a, "never", "phase Running before");
    assert!(running.iter().all(|v| v.outcome == Outcome::Pass), "{running:#?}");

    // Broken: every version after the gap says the container ran once and exited.
    let gap_end = "2026-12-03T09:19:01";
    let (_d2, broken) = bundle_recording(O1, "upstream-expansion__subpath-expr-from-failed@vm");
    edit_pods(&broken, |_, v| {
        if v["received"].as_str().unwrap() > gap_end {
            v["event"]["object"]["metadata"]["resourceVersion"] = format!("99999{}", v["seq"]).into();
            let cs = &mut v["event"]["object"]["status"]["containerStatuses"][0];
            cs["lastState"] = serde_json::json!({"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": "2026-12-03T09:18:55Z", "finishedAt": "2026-12-03T09:18:56Z",
                "containerID": "containerd://ran-inside-the-gap"}});
            cs["restartCount"] = 1.into();
        }
    });
    let b = replay(full, &broken);
    let running = verdicts(&b, "never", "phase Running before");
    assert!(running.iter().all(|v| v.outcome != Outcome::Pass), "{running:#?}");
}

/// An order whose last mark was first seen after a gap: restartCount 4 lies somewhere between
/// the gap's start and its sighting, which is after CrashLoopBackOff was seen wherever it lies,
/// so the order is decided. Moved so that the gap could hold it before CrashLoopBackOff, it is
/// undecided.
#[test]
fn an_order_holds_wherever_the_gap_puts_its_uncertain_mark() {
    let full = "status::status-crashloop";
    let (_d, rec) = bundle_recording(O1, "status__status-crashloop@vm2");
    let a = replay(full, &rec);
    let order = verdicts(&a, "order", "restartCount 4");
    assert_eq!(order.len(), 1, "{:#?}", a.verdicts);
    assert_eq!(order[0].outcome, Outcome::Pass, "{}", order[0].evidence);
    assert!(
        order[0].evidence.contains("wherever the gap puts them"),
        "{}",
        order[0].evidence
    );

    // CrashLoopBackOff first seen only after the gap too: the two may be in either order.
    let gap_start = "2026-12-03T09:18:53";
    let (_d2, late) = bundle_recording(O1, "status__status-crashloop@vm2");
    edit_pods(&late, |_, v| {
        if v["received"].as_str().unwrap() < gap_start && v["event"]["object"]["status"]["containerStatuses"].is_array()
        {
            let cs = &mut v["event"]["object"]["status"]["containerStatuses"][0];
            if cs["state"]["waiting"]["reason"] == "CrashLoopBackOff" {
                cs["state"]["waiting"]["reason"] = "ContainerCreating".into();
            }
        }
    });
    let b = replay(full, &late);
    let order = verdicts(&b, "order", "restartCount 4");
    assert_eq!(order.len(), 1);
    assert_ne!(order[0].outcome, Outcome::Pass, "{}", order[0].evidence);
}

/// Appends an input to a recording as the live runner does at the end of a case: numbered
/// after every other input.
fn append_input(rec: &Path, file: &str, input: serde_json::Value) {
    let mut max = 0u64;
    let mut files = vec![];
    for e in walk(rec) {
        files.push(e);
    }
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for l in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l)
                && let Some(s) = v["seq"].as_u64()
            {
                max = max.max(s);
            }
        }
    }
    let mut input = input;
    input["seq"] = (max + 1).into();
    // The recording's closing line counts its inputs.
    let actions = rec.join("actions.jsonl");
    let text = std::fs::read_to_string(&actions).unwrap();
    let text = text.replace(&format!("\"inputs\":{max}"), &format!("\"inputs\":{}", max + 1));
    std::fs::write(&actions, text).unwrap();
    let path = rec.join(file);
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&input.to_string());
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// K1: vm2's kubelet was restarted during a crash loop, and the restarted kubelet started its
/// in-memory back-off over (announced 10 s for the 4th wait). Nobody recorded the restart then,
/// so the recording alone reads like a kubelet that forgets its back-off, and fails. With the
/// restart recorded (the `Kubelet` gap the live runner adds from the node's `Starting` event),
/// the back-off across it is undecided and names the restart.
#[test]
fn a_back_off_reset_by_a_kubelet_restart_is_undecided_naming_the_restart() {
    let full = "restart-policy::restart-always-crashloop";
    let (_d, rec) = bundle_recording("K1-sj57omz6", "restart-policy__restart-always-crashloop@vm2");
    let a = replay(full, &rec);
    assert_eq!(a.status, AttemptStatus::Failed, "{:#?}", a.verdicts);
    let tl = a.timeline.as_ref().unwrap();
    let inst = |n: u32| {
        tl.instances
            .iter()
            .find(|i| i.container == "main" && i.instance == n)
            .unwrap()
    };
    let (after3, before4) = (inst(3).finished_at.unwrap(), inst(4).started_at.unwrap());
    append_input(
        &rec,
        "gaps.jsonl",
        serde_json::json!({
            "source": "kubelet", "clock": "node",
            "from": after3.to_string(), "to": before4.to_string(),
            "reason": "the kubelet of vm2 restarted (its Starting event): its back-off, probe state and pending work started over",
        }),
    );
    let b = replay(full, &rec);
    assert_eq!(b.status, AttemptStatus::Undecided, "{:?} {:#?}", b.error, b.verdicts);
    let backoff: Vec<_> = b.verdicts.iter().filter(|v| v.kind == "backoff").collect();
    assert!(!backoff.is_empty());
    assert!(
        backoff
            .iter()
            .any(|v| v.outcome == Outcome::Undecided && v.evidence.contains("the kubelet of vm2 restarted")),
        "{backoff:#?}"
    );
}

/// A mark the kubelet was to bring about that never came is a failure of the node on whole
/// evidence, but undecided when the kubelet restarted during the case: its back-off, probe
/// results and eviction state started over, so the absence says nothing about the node.
#[test]
fn a_required_mark_missing_across_a_kubelet_restart_is_undecided_naming_it() {
    let full = "restart-policy::restart-always-crashloop";
    let (_d, rec) = bundle_recording("K1-sj57omz6", "restart-policy__restart-always-crashloop@vm2");
    let mut tl = replay(full, &rec).timeline.unwrap();
    let expect = "- order: [{restarts: {container: main, count: 1}}, {restarts: {container: main, count: 40}}]";
    let whole = judge_one(full, expect, &tl);
    assert_eq!(whole.outcome, Outcome::Fail, "{}", whole.evidence);
    let at = tl
        .instances
        .iter()
        .find(|i| i.instance == 3)
        .unwrap()
        .finished_at
        .unwrap();
    tl.gaps.push(podlife::observe::Gap {
        source: podlife::observe::EvidenceSource::Kubelet,
        from: Some(at),
        to: Some(at),
        back: None,
        clock: Default::default(),
        reason: "the kubelet of vm2 restarted".into(),
    });
    let restarted = judge_one(full, expect, &tl);
    assert_eq!(restarted.outcome, Outcome::Undecided, "{}", restarted.evidence);
    assert!(
        restarted.evidence.contains("the kubelet of vm2 restarted"),
        "{}",
        restarted.evidence
    );
}

/// A case's recording out of `tests/fixtures/kubelet-restart-recordings` (run K4 on this
/// project's cluster: vm2's kubelet restarted 60 s into a full run), copied so it can be changed.
fn k4_recording(case_dir: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubelet-restart-recordings")
        .join(case_dir)
        .join("attempt-1");
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("attempt-1");
    copy_dir(&src, &dst);
    (dir, dst)
}

/// vm2's kubelet restarted while the emptyDir eviction case ran: the restarted kubelet resynced
/// the pod (ContainerCreating again) and never evicted it, so `Error`/`ContainerStatusUnknown`
/// was never shown. What a running kubelet would have written is unknowable across its restart:
/// undecided, naming it. The same recording without the restart on record fails.
#[test]
fn a_status_never_shown_across_a_kubelet_restart_is_undecided_naming_it() {
    let full = "status::status-evicted-emptydir";
    let (_keep, rec) = k4_recording("status__status-evicted-emptydir@vm2");
    let a = replay(full, &rec);
    let v = verdicts(&a, "statusRow", "never shown");
    assert!(!v.is_empty(), "{:#?}", a.verdicts);
    for v in &v {
        assert_eq!(v.outcome, Outcome::Undecided, "{}", v.evidence);
        assert!(v.evidence.contains("the kubelet of vm2 restarted"), "{}", v.evidence);
    }
    assert!(
        a.verdicts.iter().all(|v| v.outcome != Outcome::Fail),
        "{:#?}",
        a.verdicts
    );

    // The restart not on record: its line becomes a gap of a log no case reads (the recording
    // keeps its count of inputs).
    let gaps = rec.join("gaps.jsonl");
    let kept: Vec<String> = std::fs::read_to_string(&gaps)
        .unwrap()
        .lines()
        .map(|l| {
            l.replace(
                "\"source\":\"kubelet\"",
                "\"source\":\"logs\",\"container\":\"nobody\",\"instance\":0",
            )
        })
        .collect();
    std::fs::write(&gaps, kept.join("\n") + "\n").unwrap();
    let a = replay(full, &rec);
    let v = verdicts(&a, "statusRow", "never shown");
    assert!(v.iter().any(|v| v.outcome == Outcome::Fail), "{:#?}", a.verdicts);
}

/// A healthy kubelet (vm's, under a full run's load) reported `main`'s second instance running
/// with restartCount 1 and an empty lastState: how the first instance ended was never written,
/// and the next restart replaced lastState. Its exit code is unknown, not contradicted:
/// undecided. A kubelet that reports the first instance killed with the wrong signal fails.
#[test]
fn an_instance_whose_end_the_kubelet_never_reported_is_undecided() {
    let full = "probes::probe-liveness-fail";
    let (_keep, rec) = k4_recording("probes__probe-liveness-fail@vm");
    let a = replay(full, &rec);
    let v = verdicts(&a, "container", "main#0");
    assert!(!v.is_empty(), "{:#?}", a.verdicts);
    assert!(
        v.iter()
            .all(|v| v.outcome == Outcome::Undecided && v.evidence.contains("never reported how main#0 ended")),
        "{v:#?}"
    );
    assert!(
        a.verdicts.iter().all(|v| v.outcome != Outcome::Fail),
        "{:#?}",
        a.verdicts
    );

    // The kubelet reports instance 0 as killed by SIGKILL (137), not by SIGTERM (143).
    let first_id = std::fs::read_to_string(rec.join("pods.watch.jsonl"))
        .unwrap()
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let cs = v.pointer("/event/object/status/containerStatuses/0")?;
            (cs["restartCount"] == 0 && cs["state"]["running"].is_object())
                .then(|| cs["containerID"].as_str().unwrap().to_string())
        })
        .unwrap();
    edit_pods(&rec, |_, v| {
        let Some(cs) = v
            .pointer_mut("/event/object/status/containerStatuses/0")
            .filter(|cs| cs.is_object())
        else {
            return;
        };
        if cs["restartCount"] == 1 {
            cs["lastState"] = serde_json::json!({"terminated": {
                "containerID": first_id, "exitCode": 137, "reason": "Error",
                "startedAt": "2026-12-04T14:42:01Z", "finishedAt": "2026-12-04T14:42:14Z"}});
        }
    });
    let a = replay(full, &rec);
    let v = verdicts(&a, "container", "main#0");
    assert!(v.iter().any(|v| v.outcome == Outcome::Fail), "{:#?}", a.verdicts);
}
