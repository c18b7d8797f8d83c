//! The observer on real recordings: restarts and instances, `--previous` logs, deduplicated
//! events, duplicate and out-of-order watch deliveries, deletion, init containers and sidecars.

use std::path::{Path, PathBuf};

use podlife::observe::{Input, Observer, Recording, State, Timeline};
use podlife::suite::ContainerKind;

fn rec(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings")
        .join(name)
}

fn timeline(name: &str) -> Timeline {
    Recording::read(&rec(name)).unwrap().timeline()
}

#[test]
fn crashloop_instances_from_container_ids_and_restart_counts() {
    let tl = timeline("restart-always-crashloop");
    let inst: Vec<_> = tl.instances_of("main").collect();
    assert_eq!(
        inst.iter().map(|i| i.instance).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert!(
        inst.iter()
            .all(|i| i.exit_code == Some(1) && i.reason.as_deref() == Some("Error"))
    );
    // Every instance printed exactly one line ("start"), whichever source delivered it.
    for i in &inst {
        let lines: Vec<_> = tl.logs_of("main", Some(i.instance)).collect();
        assert_eq!(lines.len(), 1, "instance {}: {lines:?}", i.instance);
        assert_eq!(lines[0].text, "start");
    }
    // follow + --previous + CRI copies overlap: the duplicates were recognised.
    assert!(tl.stats.log_duplicates >= 10, "{:?}", tl.stats);
}

#[test]
fn previous_logs_are_placed_by_time_not_by_restart_count() {
    // In poststart-fail `--previous` taken when restartCount became r returned instance r
    // (the kubelet counts the restart only once the next instance failed too).
    let tl = timeline("poststart-fail");
    for i in 0..4 {
        let lines: Vec<_> = tl.logs_of("main", Some(i)).map(|l| l.text.as_str()).collect();
        assert_eq!(
            lines,
            vec![
                "main start",
                "main tick 1",
                "poststart-fail-marker",
                "main TERM received"
            ],
            "instance {i}"
        );
    }
    // No instance was ever seen running, yet all four are known with exit 143.
    let inst: Vec<_> = tl.instances_of("main").collect();
    assert_eq!(inst.len(), 4);
    assert!(
        inst.iter()
            .all(|i| i.first_seen_running.is_none() && i.exit_code == Some(143))
    );
}

#[test]
fn liveness_kills_never_seen_terminated_are_still_instances() {
    let tl = timeline("probe-liveness-exec");
    let inst: Vec<_> = tl.instances_of("main").collect();
    assert_eq!(inst.len(), 4);
    assert!(
        inst[..3]
            .iter()
            .all(|i| i.first_seen_terminated.is_none() && i.exit_code == Some(143))
    );
}

#[test]
fn deduplicated_events_become_one_occurrence_per_count() {
    let tl = timeline("restart-always-crashloop");
    let backoff: Vec<_> = tl.events.iter().filter(|e| e.reason == "BackOff").collect();
    assert_eq!(
        backoff.iter().map(|e| e.count).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert!(backoff.windows(2).all(|w| w[0].uid == w[1].uid), "one Event object");
    assert!(backoff.iter().all(|e| e.time_precision_ns == 1_000_000_000));
    let scheduled = tl.events.iter().find(|e| e.reason == "Scheduled").unwrap();
    assert_eq!(scheduled.time_precision_ns, 1_000, "eventTime has µs precision");
    // Two containers' events are different objects.
    let tl = timeline("sidecar-native");
    let pulled: Vec<_> = tl.events.iter().filter(|e| e.reason == "Pulled").collect();
    assert_eq!(pulled.len(), 2);
    assert_ne!(pulled[0].uid, pulled[1].uid);
}

#[test]
fn a_count_jump_is_several_coalesced_occurrences() {
    let r = Recording::read(&rec("image-never-pull")).unwrap();
    // Drop the middle delivery of each repeated event: count jumps 1 → 3.
    let mut seen = std::collections::HashMap::new();
    let inputs: Vec<Input> = r
        .inputs
        .iter()
        .filter(|i| match i {
            Input::Event { event, .. } if event.count == Some(2) => {
                *seen.entry(event.reason.clone()).or_insert(0) += 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    assert!(!seen.is_empty());
    let mut obs = Observer::new(None, "test");
    inputs.into_iter().for_each(|i| obs.push(i));
    let tl = obs.finish();
    let failed: Vec<_> = tl.events.iter().filter(|e| e.reason == "Failed").collect();
    // Compact: the folded repetitions #2 and #3 are one item standing for two occurrences.
    assert_eq!(failed.iter().map(|e| e.count).collect::<Vec<_>>(), vec![1, 3]);
    assert_eq!(failed.iter().map(|e| e.repeats).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(podlife::observe::timeline::occurrences(&failed), 3);
    assert_eq!(failed[1].label(), "#2–#3");
    assert!(failed[1].coalesced && !failed[0].coalesced);
    // The item's time is the last repetition's `lastTimestamp`.
    assert!(failed[1].time.is_some());
}

#[test]
fn duplicate_and_stale_watch_deliveries_are_dropped() {
    let r = Recording::read(&rec("sigterm-ignored")).unwrap();
    let clean = r.timeline();
    let mut obs = Observer::new(None, "test");
    let pods: Vec<Input> = r
        .inputs
        .iter()
        .filter(|i| matches!(i, Input::Pod { .. }))
        .cloned()
        .collect();
    for i in &r.inputs {
        obs.push(i.clone());
        // A watch restart re-delivers what was seen: the same objects again...
        if matches!(i, Input::Pod { .. }) {
            obs.push(i.clone());
        }
    }
    // ...and a stale relist delivers an old version late.
    obs.push(pods[2].clone());
    let tl = obs.finish();
    assert_eq!(tl.snapshots.len(), clean.snapshots.len());
    assert_eq!(tl.instances, clean.instances);
    assert!(tl.stats.pod_duplicates >= pods.len() as u64, "{:?}", tl.stats);
    assert_eq!(tl.final_phase(), Some("Failed"));
}

#[test]
fn logs_arriving_before_status_keep_their_instance() {
    // Live, a follow can deliver lines before the status that names the instance; the hint wins
    // until status times say otherwise.
    let r = Recording::read(&rec("restart-always-crashloop")).unwrap();
    let mut logs: Vec<Input> = r
        .inputs
        .iter()
        .filter(|i| matches!(i, Input::Log { .. }))
        .cloned()
        .collect();
    let rest: Vec<Input> = r
        .inputs
        .iter()
        .filter(|i| !matches!(i, Input::Log { .. }))
        .cloned()
        .collect();
    logs.retain(|i| matches!(i, Input::Log { instance: Some(_), .. }));
    let mut obs = Observer::new(None, "test");
    logs.into_iter().chain(rest).for_each(|i| obs.push(i));
    let tl = obs.finish();
    for n in 0..6 {
        assert_eq!(tl.logs_of("main", Some(n)).count(), 1, "instance {n}");
    }
}

#[test]
fn deletion_is_observed() {
    let tl = timeline("sigterm-ignored");
    assert!(tl.deleted.is_some());
    let last = tl.snapshots.last().unwrap();
    assert_eq!(last.watch, "DELETED");
    assert_eq!(last.deletion_grace_period_seconds, Some(0));
    let first_deleting = tl.snapshots.iter().find(|s| s.deletion_timestamp.is_some()).unwrap();
    assert_eq!(first_deleting.deletion_grace_period_seconds, Some(5));
    let del = tl
        .actions
        .iter()
        .find(|a| a.kind == podlife::observe::ActionKind::Delete)
        .unwrap();
    assert_eq!(del.grace_period_seconds, None, "no override was sent");
    let tl = timeline("delete-grace-override");
    let del = tl
        .actions
        .iter()
        .find(|a| a.kind == podlife::observe::ActionKind::Delete)
        .unwrap();
    assert_eq!(del.grace_period_seconds, Some(2));
}

#[test]
fn init_containers_and_sidecars() {
    let tl = timeline("init-ordering");
    let kinds: Vec<_> = tl.pod.containers.iter().map(|c| (c.name.as_str(), c.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            ("init-1", ContainerKind::Init),
            ("init-2", ContainerKind::Init),
            ("init-3", ContainerKind::Init),
            ("main", ContainerKind::Regular)
        ]
    );
    // main waits in PodInitializing until the init containers are done.
    let waiting: Vec<_> = tl
        .snapshots
        .iter()
        .filter_map(|s| s.container("main"))
        .filter_map(|c| match &c.state {
            State::Waiting { reason, .. } => reason.clone(),
            _ => None,
        })
        .collect();
    assert!(waiting.iter().all(|r| r == "PodInitializing"), "{waiting:?}");
    let tl = timeline("sidecar-native");
    assert_eq!(tl.pod.containers[0].kind, ContainerKind::Sidecar);
    let killing = tl.events.iter().find(|e| e.reason == "Killing").unwrap();
    assert_eq!(killing.container.as_deref(), Some("sidecar"));
}

#[test]
fn pod_identity_is_observed() {
    let tl = timeline("downward-api-env");
    assert_eq!(tl.pod.name, "downward-api-env");
    assert_eq!(tl.pod.node.as_deref(), Some("vm"));
    assert_eq!(tl.pod.pod_ips, vec!["10.88.0.36"]);
    assert_eq!(tl.pod.host_ips, vec!["192.0.2.2"]);
    assert!(!tl.pod.uid.is_empty());
}

#[test]
fn timeline_json_round_trips() {
    let tl = timeline("probe-liveness-fail");
    let json = serde_json::to_string(&tl).unwrap();
    let back: Timeline = serde_json::from_str(&json).unwrap();
    assert_eq!(back, tl);
}

#[test]
fn cri_timestamps_with_trimmed_digits_parse() {
    let (t, rest) = podlife::observe::observer::parse_log_line("2026-11-29T21:07:43.8244858Z hello world").unwrap();
    assert_eq!(t.subsec_nanosecond(), 824_485_800);
    assert_eq!(rest, "hello world");
    let (_, full, text) = podlife::observe::observer::parse_cri_line("2026-11-29T21:07:43Z stdout P part").unwrap();
    assert!(!full);
    assert_eq!(text, "part");
    assert!(podlife::observe::observer::parse_log_line("not a timestamp").is_none());
}

#[test]
fn every_recording_reads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        // Status-table cases replay another case's recording through a symlink.
        if e.path().is_dir() && !e.path().is_symlink() {
            let tl = Recording::read(&e.path()).unwrap().timeline();
            assert!(
                !tl.snapshots.is_empty() && !tl.events.is_empty(),
                "{}",
                e.path().display()
            );
            n += 1;
        }
    }
    // 30 lifecycle recordings and the 7 status-* ones.
    assert_eq!(n, 37);
}

/// Live O9: instance 0's fetch read instance 1's log and was answered after instance 1's own
/// stream: the lines stay #1's, #0's log is a gap and is asked for again with `previous`; its own
/// line from that fetch (here printed 4 ms before the second of its `startedAt`, as A3's "run 2"
/// was: a process may print before the runtime records its start) withdraws the gap.
#[test]
fn a_log_read_only_by_a_later_instance_is_a_gap_until_the_previous_fetch_reads_it() {
    let r = Recording::read(&rec("restart-onfailure-then-success")).unwrap();
    let clean = r.timeline();
    let mut obs = Observer::new(None, "test");
    for i in r.inputs.iter().filter(|i| !matches!(i, Input::Log { .. })) {
        obs.push(i.clone());
    }
    let line_of = |n: u32| {
        let l = clean.logs_of("main", Some(n)).next().unwrap();
        (l.time, l.text.clone())
    };
    let log = |n: u32, (time, text): &(jiff::Timestamp, String)| Input::Log {
        received: None,
        container: "main".into(),
        instance: Some(n),
        line: format!("{time} {text}"),
    };
    let one = line_of(1);
    obs.push(log(1, &one));
    obs.push(log(0, &one));
    let asked = obs.take_new_instances();
    assert!(
        asked.iter().any(|n| n.instance == 0 && n.previous),
        "no fetch again with previous: {asked:?}"
    );
    let tl = obs.timeline();
    assert_line_on_one_and_zero_unread(tl);
    let started = clean
        .instances
        .iter()
        .find(|i| i.instance == 0)
        .unwrap()
        .started_at
        .unwrap();
    let (_, text) = line_of(0);
    obs.push(log(0, &(started - jiff::SignedDuration::from_millis(4), text)));
    let tl = obs.finish();
    assert_eq!(tl.logs_of("main", Some(0)).count(), 1, "{:?}", tl.logs);
    assert!(tl.gaps.is_empty(), "{:?}", tl.gaps);
}

/// Live N23: the pod watch showed instance 0 running only after instance 1 had run and ended,
/// so #0's follow read #1's log (the current one) and its lines were kept on #0, whose end was
/// not known yet: "run 1" not found, a false failure. Once the status shows #0's end, lines past
/// it go to the later instance whose run holds them, and #0's log is a gap, fetched again with
/// `previous`.
#[test]
fn lines_given_to_an_instance_before_its_end_was_known_move_to_the_later_instance() {
    let r = Recording::read(&rec("restart-onfailure-then-success")).unwrap();
    let clean = r.timeline();
    let one = clean.logs_of("main", Some(1)).next().unwrap().clone();
    let mut obs = Observer::new(None, "test");
    obs.push(Input::Log {
        received: None,
        container: "main".into(),
        instance: Some(0),
        line: format!("{} {}", one.time, one.text),
    });
    assert_eq!(
        obs.timeline().logs_of("main", Some(0)).count(),
        1,
        "kept on #0 while nothing is known"
    );
    for i in r.inputs.iter().filter(|i| !matches!(i, Input::Log { .. })) {
        obs.push(i.clone());
    }
    let asked = obs.take_new_instances();
    let tl = obs.finish();
    assert_line_on_one_and_zero_unread(&tl);
    assert!(
        asked.iter().any(|n| n.instance == 0 && n.previous),
        "no fetch again with previous: {asked:?}"
    );
}

/// #1's line is #1's, and #0, left without lines, has its log marked as never read.
fn assert_line_on_one_and_zero_unread(tl: &Timeline) {
    assert_eq!(tl.logs_of("main", Some(1)).count(), 1, "{:?}", tl.logs);
    assert_eq!(tl.logs_of("main", Some(0)).count(), 0, "{:?}", tl.logs);
    assert!(
        tl.gaps
            .iter()
            .any(|g| g.reason.contains("#0's own lines were never read")),
        "{:?}",
        tl.gaps
    );
}
