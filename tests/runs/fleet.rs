//! Fleet certification (`run --each-node`) against the in-process API server presenting several
//! nodes (`support::fake_api::FakeNode`): every case once per node, pinned; the node in every
//! report's case identity; the node × area matrix; the odd node out; replay of a fleet run.

use std::path::Path;
use std::time::Duration;

use podlife::results::CaseStatus;
use podlife::results::stats::AreaVerdict;
use podlife::run::{RunOptions, RunOutcome, run_live};

use crate::support::fake_api::FakeNode;
use crate::support::live::{self, Env};

fn opts(reports: &Path) -> RunOptions {
    RunOptions {
        test_threads: 0,
        certify: true,
        target: podlife::cluster::Target {
            each_node: true,
            ..Default::default()
        },
        ..live::run_options(reports)
    }
}

/// Two suites (two areas): a gap that a slow node stretches past its tolerance, and an exit code
/// that no node's speed changes.
const LIFECYCLE: &str = r#"
name: lifecycle
cases:
  - name: restart-never-success
    manifest: REC/restart-never-success/manifest.yaml
    expect:
      - phase: Succeeded
      - container: {name: main, exitCode: 0, reason: Completed, restartCount: 0}
      - gap: {from: {log: {container: main, regex: start}}, to: {log: {container: main, regex: exiting}}, target: 1s, tolerance: 100ms}
"#;

const FAILURES: &str = r#"
name: failures
cases:
  - name: restart-never-fail
    manifest: REC/restart-never-fail/manifest.yaml
    expect:
      - phase: Failed
      - container: {name: main, exitCode: 7, restartCount: 0}
"#;

fn suites(dir: &Path) -> Vec<(podlife::suite::Suite, podlife::suite::LoadedCase)> {
    live::write_suites(dir, &[("lifecycle.yaml", LIFECYCLE), ("failures.yaml", FAILURES)])
}

/// Three nodes that certify (node-a and node-b alike, node-c with a newer containerd), node-b
/// slow enough (×1.5) to fail the 1 s ± 100 ms gap; plus a cordoned node and a control-plane
/// node with a NoSchedule taint, which --each-node leaves out.
fn fleet() -> Vec<FakeNode> {
    let mut b = FakeNode::new("node-b");
    b.stretch = 1.5;
    let mut c = FakeNode::new("node-c");
    c.runtime = "containerd://2.2.0".into();
    let mut cordoned = FakeNode::new("node-d");
    cordoned.unschedulable = true;
    let mut cp = FakeNode::new("cp");
    cp.taints = vec![("node-role.kubernetes.io/control-plane".into(), "NoSchedule".into())];
    vec![cp, FakeNode::new("node-a"), b, c, cordoned]
}

fn env(nodes: Vec<FakeNode>) -> Env {
    live::env(|f| f.nodes = nodes)
}

fn run(e: &Env, o: &RunOptions) -> RunOutcome {
    run_cases(e, o, suites(e.dir.path()))
}

fn run_cases(e: &Env, o: &RunOptions, cases: Vec<(podlife::suite::Suite, podlife::suite::LoadedCase)>) -> RunOutcome {
    let mut out = run_live(o, cases, e.cluster.clone(), "fleetrun".into(), &e.rt).expect("run");
    live::publish(&mut out, o);
    out
}

#[test]
fn every_case_runs_once_per_node_pinned_with_the_node_in_its_identity() {
    let e = env(fleet());
    let mut o = opts(e.dir.path());
    o.record = true;
    let started = std::time::Instant::now();
    let out = run(&e, &o);
    let elapsed = started.elapsed();
    let s = &out.summary;
    // The cordoned and the tainted node are left out, and the fingerprint says why.
    let names: Vec<&str> = s.fingerprint.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node-a", "node-b", "node-c"]);
    let target = s.fingerprint.node_target.as_deref().unwrap();
    assert!(
        target.contains("cp (taint node-role.kubernetes.io/control-plane:NoSchedule)"),
        "{target}"
    );
    assert!(target.contains("node-d (cordoned)"), "{target}");
    assert!(s.fingerprint.each_node);

    // 2 cases × 3 nodes, each applied exactly once, pinned by hostname, and observed there.
    let f = e.fake.lock().unwrap();
    assert_eq!(f.placed.len(), 6, "{:?}", f.placed);
    for case in ["restart-never-success", "restart-never-fail"] {
        let mut on: Vec<&str> = f
            .placed
            .iter()
            .filter(|(_, p, _)| p == case)
            .filter_map(|(_, _, n)| n.as_deref())
            .collect();
        on.sort();
        assert_eq!(on, ["node-a", "node-b", "node-c"], "{case}");
    }
    let namespaces: std::collections::BTreeSet<&String> = f.placed.iter().map(|(ns, _, _)| ns).collect();
    assert_eq!(namespaces.len(), 6, "one namespace per case and node: {namespaces:?}");
    assert!(namespaces.contains(&"podlife-fleetrun-lifecycle-restart-never-success-node-b".to_string()));
    // API requests stay bounded per case and run-wide (the capacity benchmark below counts them
    // per case: at most 14 (the stop of its pods at the end included), plus 17 for the
    // preflight, the node list and the sweep).
    // Log-follow resumes are counted apart: a follow that ends before the pod watch has shown
    // its container terminated is resumed from its last timestamp every 500 ms
    // (src/run/streams.rs), so how many there are depends on how far the watch lags the log
    // stream — CPU load, not the number of nodes. They can only be bounded by that pacing:
    // at most one per 500 ms per followed container (6 here) over the run.
    // The run-wide API probe (src/run/health.rs: GET /version once a second, after the
    // preflight's own) is paced by time too, whatever the node count.
    let (resumes, fixed): (Vec<&String>, Vec<&String>) = f
        .requests
        .iter()
        .partition(|r| r.contains("/log?") && r.contains("follow=true&sinceTime="));
    let (probes, fixed): (Vec<&String>, Vec<&String>) = fixed.into_iter().partition(|r| r.as_str() == "GET /version");
    // The run-wide watch for kubelet restarts (the nodes' `Starting` events, listed every 5 s)
    // is paced by time as well.
    let (starts, fixed): (Vec<&String>, Vec<&String>) = fixed
        .into_iter()
        .partition(|r| r.starts_with("GET /api/v1/namespaces/default/events"));
    assert!(
        starts.len() <= elapsed.as_secs() as usize / 5 + 2,
        "{} kubelet-start lists in {elapsed:?}",
        starts.len()
    );
    // Each node's load: its capacity read once, its kubelet summary every 5 s.
    let (loads, fixed): (Vec<&String>, Vec<&String>) = fixed
        .into_iter()
        .partition(|r| r.starts_with("GET /api/v1/nodes/node-"));
    let summaries = loads.iter().filter(|r| r.contains("/proxy/stats/summary")).count();
    assert!(
        summaries <= 3 * (elapsed.as_secs() as usize / 5 + 2) && loads.len() - summaries <= 3 * 2,
        "{loads:#?} in {elapsed:?}"
    );
    assert!(fixed.len() <= 17 + 14 * 6, "{} requests: {fixed:#?}", fixed.len());
    assert!(
        probes.len() <= 1 + elapsed.as_secs() as usize + 1,
        "{} probes in {elapsed:?}",
        probes.len()
    );
    let paced = 6 * (elapsed.as_millis() as usize / 500 + 1);
    assert!(
        resumes.len() <= paced,
        "{} log resumes in {elapsed:?}: {resumes:#?}",
        resumes.len()
    );
    assert_eq!(
        f.namespace_labels["podlife-fleetrun-lifecycle-restart-never-success-node-b"]["podlife.dev/node"],
        "node-b"
    );
    let pod = &f.applied["restart-never-success"];
    assert!(
        pod["spec"]["nodeSelector"]["kubernetes.io/hostname"].is_string(),
        "{pod}"
    );
    assert!(
        pod["spec"].get("nodeName").is_none(),
        "pinned through the scheduler: {pod}"
    );
    drop(f);

    assert_eq!(s.cases.len(), 6);
    // Every attempt says the load it ran under: its own node's CPU, as the kubelet reported it.
    let loads: Vec<&podlife::results::NodeLoad> = s
        .cases
        .iter()
        .flat_map(|c| c.attempts.iter().filter_map(|a| a.node_load.as_ref()))
        .collect();
    assert!(!loads.is_empty());
    for c in &s.cases {
        for l in c.attempts.iter().filter_map(|a| a.node_load.as_ref()) {
            assert_eq!(Some(l.node.as_str()), c.target_node.as_deref());
            assert_eq!((l.mean_cores, l.capacity_cores), (0.7, Some(2.0)), "{l:?}");
        }
    }
    for c in &s.cases {
        let n = c.target_node.as_deref().expect("each copy names its node");
        assert_eq!(c.node.as_deref(), Some(n), "{} ran where it was pinned", c.full_name());
        assert_eq!(c.full_name(), format!("{}::{}@{n}", c.suite, c.case));
        let want = if n == "node-b" && c.case == "restart-never-success" {
            CaseStatus::Failed
        } else {
            CaseStatus::Passed
        };
        assert_eq!(
            c.status,
            want,
            "{}: {:#?}",
            c.full_name(),
            c.attempts.last().map(|a| &a.verdicts)
        );
        let tl = c.timeline_file.as_deref().unwrap();
        assert!(tl.ends_with(&format!("@{n}.json")), "{tl}");
        assert!(out.report_dir.join(tl).is_file(), "{tl}");
        assert!(
            out.report_dir
                .join("recordings")
                .join(format!("{}__{}@{n}", c.suite, c.case))
                .join("attempt-1")
                .is_dir()
        );
    }

    // JUnit: one testsuite per suite and node, each with that node's fingerprint.
    let xml = std::fs::read_to_string(out.report_dir.join("junit.xml")).unwrap();
    for n in ["node-a", "node-b", "node-c"] {
        assert!(xml.contains(&format!(r#"<testsuite name="lifecycle@{n}""#)), "{xml}");
        assert!(xml.contains(&format!(r#"classname="failures@{n}""#)), "{xml}");
    }
    assert!(
        xml.contains(r#"<property name="node.runtime" value="containerd://2.2.0"/>"#),
        "{xml}"
    );
    let failures = xml.matches("<failure").count();
    assert_eq!(failures, 1, "only node-b's gap fails: {xml}");

    // The node × area matrix attributes the failure to node-b, and only there.
    let f = s.fleet.as_ref().expect("a fleet run has a matrix");
    let cell = |node: &str, area: &str| {
        let row = f.nodes.iter().find(|n| n.node == node).unwrap();
        row.areas.iter().find(|a| a.area == area).unwrap().clone()
    };
    let bad = cell("node-b", "lifecycle");
    assert_eq!(bad.verdict, AreaVerdict::NotConformant);
    assert_eq!(bad.failing, ["lifecycle::restart-never-success@node-b"]);
    for (node, area) in [
        ("node-a", "lifecycle"),
        ("node-c", "lifecycle"),
        ("node-a", "failures"),
        ("node-b", "failures"),
        ("node-c", "failures"),
    ] {
        assert_eq!(cell(node, area).verdict, AreaVerdict::Conformant, "{node} {area}");
    }
    // Grouped by fingerprint: node-c's newer containerd sets it apart.
    let groups: Vec<Vec<String>> = f.groups.iter().map(|g| g.nodes.clone()).collect();
    assert_eq!(
        groups,
        [vec!["node-a".to_string(), "node-b".into()], vec!["node-c".into()]]
    );
    let table = podlife::results::stats::matrix_table(f);
    let row_b = table.lines().find(|l| l.trim_start().starts_with("node-b")).unwrap();
    assert!(
        row_b.contains("NOT CONFORMANT") && row_b.contains("containerd://2.1.9"),
        "{table}"
    );
    let row_c = table.lines().find(|l| l.trim_start().starts_with("node-c")).unwrap();
    assert!(
        !row_c.contains("NOT CONFORMANT") && row_c.contains("containerd://2.2.0"),
        "{table}"
    );
    assert!(
        xml.contains(r#"<property name="certification.lifecycle" value="NOT CONFORMANT"/>"#),
        "{xml}"
    );
    let html = std::fs::read_to_string(out.report_dir.join("index.html")).unwrap();
    assert!(
        html.contains("Nodes × areas") && html.contains("NOT CONFORMANT"),
        "matrix in the HTML"
    );

    // The odd node out: node-b, against its twin node-a. node-a is not odd (better than its only
    // peer could be either's fault), node-c has no peer (its newer containerd is its own group).
    let odd: Vec<&str> = f.odd.iter().map(|o| o.node.as_str()).collect();
    assert_eq!(odd, ["node-b"], "{:#?}", f.odd);
    let why = f.odd[0].differences.join("\n");
    assert!(
        why.contains("lifecycle::restart-never-success: failed here, passed on the rest of group 1 (node-a)"),
        "{why}"
    );
    assert!(why.contains("beyond noise"), "the gap is named with its noise: {why}");
    assert!(xml.contains(r#"<property name="oddNodeOut""#), "{xml}");
    assert!(html.contains("odd node out: node-b"), "odd node in the HTML");
    well_formed(&html);

    // Replaying the recorded fleet run reproduces every copy, with the same verdicts.
    let mut r = opts(e.dir.path());
    r.target = Default::default();
    r.replay = Some(out.report_dir.clone());
    let cases = suites(e.dir.path());
    let replayed = podlife::run::run(
        r,
        cases.into_iter().map(|(s, _)| s).fold(vec![], |mut v, s| {
            if !v.iter().any(|x: &podlife::suite::Suite| x.path == s.path) {
                v.push(s);
            }
            v
        }),
    )
    .unwrap_or_else(|_| panic!("replay"));
    let got: Vec<(String, CaseStatus)> = replayed
        .summary
        .cases
        .iter()
        .map(|c| (c.full_name(), c.status))
        .collect();
    let want: Vec<(String, CaseStatus)> = s.cases.iter().map(|c| (c.full_name(), c.status)).collect();
    assert_eq!(got, want);
    // The load each attempt ran under is a fact of the live run: the replay carries it over.
    let loads = |cs: &[podlife::results::CaseReport]| -> Vec<Option<podlife::results::NodeLoad>> {
        cs.iter().map(|c| c.last().and_then(|a| a.node_load.clone())).collect()
    };
    assert_eq!(loads(&replayed.summary.cases), loads(&s.cases));

    // Re-judging the fleet run with the same suites: every copy found, nothing changed.
    let rejudged = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .arg("rejudge")
        .arg(&out.report_dir)
        .arg("--suites")
        .arg(e.dir.path().join("lifecycle.yaml"))
        .arg("--suites")
        .arg(e.dir.path().join("failures.yaml"))
        .arg("--reports")
        .arg(e.dir.path().join("rejudged"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&rejudged.stdout);
    assert!(
        text.contains("5 passed, 0 flaky, 1 failed"),
        "{text}\n{}",
        String::from_utf8_lossy(&rejudged.stderr)
    );
    assert!(text.contains("0 regressions"), "{text}");
}

/// A gap with only an upper bound: a slower node still passes, so only the timing can tell.
const LOOSE_GAP: &str = r#"
name: timing
cases:
  - name: restart-never-success
    manifest: REC/restart-never-success/manifest.yaml
    expect:
      - phase: Succeeded
      - gap: {from: {log: {container: main, regex: start}}, to: {log: {container: main, regex: exiting}}, max: 5s}
"#;

#[test]
fn a_node_slower_than_its_group_beyond_noise_is_the_odd_one_out_and_within_noise_is_not() {
    // Four identical nodes; w4's pods take 1.6× as long (the 1 s gap: 1.6 s, far beyond the
    // 0.25 s process-scheduling noise of a log-to-log gap), w2's 1.1× (within it).
    let mut nodes: Vec<FakeNode> = ["w1", "w2", "w3", "w4"].iter().map(|n| FakeNode::new(n)).collect();
    nodes[1].stretch = 1.1;
    nodes[3].stretch = 1.6;
    let e = env(nodes);
    let out = run_cases(
        &e,
        &opts(e.dir.path()),
        live::write_suites(e.dir.path(), &[("timing.yaml", LOOSE_GAP)]),
    );
    let s = &out.summary;
    assert!(
        s.cases.iter().all(|c| c.status == CaseStatus::Passed),
        "every node passes the loose gap"
    );
    let f = s.fleet.as_ref().unwrap();
    assert_eq!(f.groups.len(), 1);
    let odd: Vec<&str> = f.odd.iter().map(|o| o.node.as_str()).collect();
    assert_eq!(odd, ["w4"], "{:#?}", f.odd);
    let why = f.odd[0].differences.join("\n");
    assert!(why.contains("timing::restart-never-success [1] gap"), "{why}");
    assert!(why.contains("rest of group 1 (w1, w2, w3)"), "{why}");

    // `diff` between two nodes of the run: w1 → w4 regresses (the same comparison), w1 → w2 does not.
    let dir = out.report_dir.display().to_string();
    let diff = |a: &str, b: &str| {
        assert_cmd::Command::cargo_bin("podlife")
            .unwrap()
            .args(["diff", &dir, "--node-a", a, "--node-b", b])
            .output()
            .unwrap()
    };
    let slow = diff("w1", "w4");
    let text = String::from_utf8_lossy(&slow.stdout);
    assert_eq!(slow.status.code(), Some(1), "{text}");
    assert!(text.contains("REGRESSION") && text.contains("fleetrun@w4"), "{text}");
    let same = diff("w1", "w2");
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stdout));
    // One node of the fleet run against a single-node run (here: w4's own view, written out).
    let (_, summary) = podlife::report::diff::load_summary(&out.report_dir).unwrap();
    let single = e.dir.path().join("single");
    std::fs::create_dir_all(&single).unwrap();
    let w4 = podlife::results::fleet::node_view(&summary, "w4").unwrap();
    std::fs::write(single.join("summary.json"), serde_json::to_string(&w4).unwrap()).unwrap();
    let against = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .args(["diff", &dir])
        .arg(&single)
        .args(["--node-a", "w1"])
        .output()
        .unwrap();
    assert_eq!(
        against.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&against.stdout)
    );
    let unknown = diff("w1", "nope");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("no case of run fleetrun ran on node nope (nodes: w1, w2, w3, w4)")
    );
}

/// Peak resident memory of this process so far (VmHWM), in MiB; None off Linux.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Capacity benchmark (not a timed test: it asserts only counts, and prints the figures the
/// README quotes): one case on 10, then 100 fake nodes. Run with
/// `cargo test --release --test runs -- --ignored --nocapture fleet::capacity`.
#[test]
#[ignore = "benchmark: prints API requests and peak RSS for 10 and 100 nodes"]
fn capacity_10_and_100_nodes() {
    println!("peak RSS before: {:.1} MiB", peak_rss_mib().unwrap_or(f64::NAN));
    for n in [10usize, 100] {
        let nodes: Vec<FakeNode> = (0..n).map(|i| FakeNode::new(&format!("n{i:03}"))).collect();
        let e = env(nodes);
        let t0 = std::time::Instant::now();
        let out = run_cases(
            &e,
            &opts(e.dir.path()),
            live::write_suites(e.dir.path(), &[("timing.yaml", LOOSE_GAP)]),
        );
        let wall = t0.elapsed().as_secs_f64();
        let s = &out.summary;
        assert_eq!(s.cases.len(), n);
        assert!(s.cases.iter().all(|c| c.status == CaseStatus::Passed));
        let f = e.fake.lock().unwrap();
        let total = f.requests.len();
        // Per case: its namespace's create (the name is in the body, not the URL), then every
        // request naming the namespace (watches, apply, logs, delete and the wait for it).
        let creates = f.count("POST /api/v1/namespaces");
        assert_eq!(creates, n);
        let per_case: Vec<usize> = s
            .cases
            .iter()
            .map(|c| {
                let ns = c.last().and_then(|a| a.cleanup.namespace.clone()).unwrap();
                1 + f.requests.iter().filter(|r| r.contains(ns.as_str())).count()
            })
            .collect();
        let max = per_case.iter().max().copied().unwrap_or(0);
        let shared = total - per_case.iter().sum::<usize>();
        println!(
            "{n} nodes: {total} API requests ({shared} run-wide: preflight, node list, sweep; at most {max} per case), peak RSS {:.1} MiB, wall {wall:.1}s",
            peak_rss_mib().unwrap_or(f64::NAN)
        );
        // The cost of a case does not grow with the fleet, nor does the run-wide part.
        assert!(max <= 16, "{max}");
        assert!(shared <= 20, "{shared}");
    }
}

#[test]
fn a_hung_node_fills_only_its_own_lane() {
    // One case at a time per node; every apply on node-b hangs (its first case waits out a long
    // outage budget). node-a and node-c must still run both their cases meanwhile: the run is
    // cancelled only once they are done, so if node-b's lane held them back, the cancel would
    // never come before node-b's case gave up, and node-b would end in an error, not interrupted.
    let e = env(vec![
        FakeNode::new("node-a"),
        FakeNode::new("node-b"),
        FakeNode::new("node-c"),
    ]);
    {
        let mut f = e.fake.lock().unwrap();
        for ns in [
            "podlife-fleetrun-lifecycle-restart-never-success-node-b",
            "podlife-fleetrun-failures-restart-never-fail-node-b",
        ] {
            f.hang.push(format!("PATCH /api/v1/namespaces/{ns}/"));
        }
    }
    let mut o = opts(e.dir.path());
    o.test_threads = 1;
    o.api_outage_budget = Duration::from_secs(300);
    o.request_timeout = Duration::from_secs(300);
    let (tx, rx) = tokio::sync::watch::channel(false);
    o.cancel = Some(rx);
    let fake = e.fake.clone();
    let watcher = std::thread::spawn(move || {
        // Bounded: a starved lane shows as a cancel that never came (the test then fails below).
        for _ in 0..1200 {
            let done = {
                let f = fake.lock().unwrap();
                let others: Vec<&String> = f
                    .placed
                    .iter()
                    .filter(|(_, _, n)| n.as_deref() != Some("node-b"))
                    .map(|(ns, _, _)| ns)
                    .collect();
                others.len() == 4 && others.iter().all(|ns| !f.namespace_exists(ns))
            };
            if done {
                let _ = tx.send(true);
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = tx.send(true);
        false
    });
    let out = run(&e, &o);
    assert!(
        watcher.join().unwrap(),
        "node-a and node-c never finished while node-b hung"
    );
    for c in &out.summary.cases {
        let node = c.target_node.as_deref().unwrap();
        if node == "node-b" {
            assert!(
                matches!(c.status, CaseStatus::Interrupted | CaseStatus::NotRun),
                "{}: {:?}",
                c.full_name(),
                c.status
            );
        } else {
            assert!(c.status.has_verdict(), "{}: {:?}", c.full_name(), c.status);
        }
    }
}

#[test]
fn each_node_with_node_or_replay_is_a_usage_error() {
    let run = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("podlife")
            .unwrap()
            .args(["run", "--suites", "suites"])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let both = run(&["--each-node", "--node", "vm"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("--node"), "{both:?}");
    let replay = run(&["--each-node", "--replay", "tests/fixtures/recordings"]);
    assert_eq!(replay.status.code(), Some(2));
    let err = String::from_utf8_lossy(&replay.stderr);
    assert!(err.contains("a replayed --each-node run replays each node"), "{err}");
}

/// The HTML report stays well-formed XML with the matrix in it (as `html_report` checks pages).
fn well_formed(html: &str) {
    let mut reader = quick_xml::Reader::from_str(html);
    reader.config_mut().check_end_names = true;
    let mut depth = 0i64;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(_)) => depth += 1,
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed at byte {}: {e}", reader.error_position()),
        }
    }
    assert_eq!(depth, 0, "unbalanced elements");
}

#[test]
fn an_unpinned_run_scattered_over_nodes_says_so() {
    // Without --each-node the fake places every pod on its first node; two nodes seen in the
    // results make the note (here, from the summary of a fleet run without its pinning).
    let e = env(vec![FakeNode::new("vm"), FakeNode::new("vm2")]);
    let mut out = run(&e, &opts(e.dir.path()));
    assert!(
        podlife::report::scattered(&out.summary).is_some(),
        "cases on vm and vm2"
    );
    for c in &mut out.summary.cases {
        c.node = Some("vm".into());
    }
    assert_eq!(
        podlife::report::scattered(&out.summary),
        None,
        "all on one node: no note"
    );
    let mut o = opts(e.dir.path());
    o.target = Default::default();
    let unpinned = run(&e, &o);
    assert_eq!(unpinned.summary.fleet, None);
    assert!(unpinned.summary.cases.iter().all(|c| c.node.as_deref() == Some("vm")));
    assert_eq!(podlife::report::scattered(&unpinned.summary), None);
}

/// `--node NAME` pins like `--each-node` does, through the scheduler: a nodeSelector on the
/// node's hostname label, never `spec.nodeName` (which bypasses the scheduler: no `Scheduled`
/// event, no unscheduled `Pending`, no capacity check; live run A1 failed on it).
#[test]
fn node_pins_through_the_scheduler_by_hostname() {
    let mut nodes = fleet();
    // A hostname label that differs from the node name: the label is what is pinned on.
    nodes[2].labels.insert("kubernetes.io/hostname".into(), "host-b".into());
    let e = env(nodes);
    let mut o = opts(e.dir.path());
    o.target.each_node = false;
    o.target.node = Some("node-b".into());
    let out = run(&e, &o);
    assert!(
        out.summary
            .cases
            .iter()
            .all(|c| c.status == podlife::results::CaseStatus::Passed
                || c.status == podlife::results::CaseStatus::Failed)
    );
    let f = e.fake.lock().unwrap();
    assert!(!f.applied.is_empty());
    for (name, pod) in &f.applied {
        assert_eq!(
            pod.pointer("/spec/nodeSelector/kubernetes.io~1hostname")
                .and_then(|v| v.as_str()),
            Some("host-b"),
            "{name}: {pod}"
        );
        assert!(
            pod.pointer("/spec/nodeName").is_none(),
            "{name}: pinned by nodeName: {pod}"
        );
    }
    assert!(
        f.placed.iter().all(|(_, _, n)| n.as_deref() == Some("node-b")),
        "{:?}",
        f.placed
    );
}

/// Each case's status and verdict outcomes, by its `suite::case@node` name.
fn verdicts_by_case(out: &RunOutcome) -> std::collections::BTreeMap<String, (CaseStatus, Vec<String>)> {
    out.summary
        .cases
        .iter()
        .map(|c| {
            let outcomes = c
                .last()
                .map(|a| a.verdicts.iter().map(|v| format!("{}:{:?}", v.id, v.outcome)).collect())
                .unwrap_or_default();
            (c.full_name(), (c.status, outcomes))
        })
        .collect()
}

#[test]
fn a_fleet_beyond_the_watch_budget_runs_in_batches_of_whole_nodes_with_the_same_verdicts() {
    // Within the default budget the three nodes run at once.
    let e = env(fleet());
    let all = run(&e, &opts(e.dir.path()));
    let plan = all.summary.plan.clone().expect("a live run keeps its plan");
    assert_eq!((plan.nodes, plan.cases, plan.nodes_at_once, plan.batches), (3, 2, 3, 1));

    // Four watches are one node's two cases: one node at a time, in three batches, with no flag
    // beyond the budget itself.
    let e = env(fleet());
    let mut o = opts(e.dir.path());
    o.budget.watches = 4;
    let batched = run(&e, &o);
    let plan = batched.summary.plan.clone().unwrap();
    assert_eq!((plan.nodes_at_once, plan.batches), (1, 3));
    assert_eq!(verdicts_by_case(&batched), verdicts_by_case(&all));
    assert!(verdicts_by_case(&all).values().any(|(s, _)| *s == CaseStatus::Failed));

    // A node's pods are applied only once the node before it deleted both its namespaces: the
    // lanes ran one after the other, in node order.
    let f = e.fake.lock().unwrap();
    let index = |needle: &str| {
        f.requests
            .iter()
            .position(|r| r.starts_with(needle))
            .unwrap_or_else(|| panic!("no request {needle}: {:#?}", f.requests))
    };
    let ns = |case: &str, node: &str| format!("podlife-fleetrun-{case}-{node}");
    for (before, after) in [("node-a", "node-b"), ("node-b", "node-c")] {
        let deleted = ["lifecycle-restart-never-success", "failures-restart-never-fail"]
            .map(|c| index(&format!("DELETE /api/v1/namespaces/{}", ns(c, before))));
        let applied = ["lifecycle-restart-never-success", "failures-restart-never-fail"]
            .map(|c| index(&format!("PATCH /api/v1/namespaces/{}/pods", ns(c, after))));
        assert!(
            deleted.iter().max() < applied.iter().min(),
            "{before} deleted at {deleted:?}, {after} applied at {applied:?}"
        );
    }
}

#[test]
fn an_interrupted_fleet_run_says_which_nodes_finished() {
    // One node at a time; the run is cancelled once node-a's cases are done.
    let e = env(fleet());
    let mut o = opts(e.dir.path());
    o.budget.watches = 4;
    let (tx, rx) = tokio::sync::watch::channel(false);
    o.cancel = Some(rx);
    let fake = e.fake.clone();
    let canceller = std::thread::spawn(move || {
        for _ in 0..600 {
            if fake.lock().unwrap().namespace_deletes("podlife-fleetrun-") >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = tx.send(true);
    });
    let out = run(&e, &o);
    canceller.join().unwrap();
    let line = podlife::results::fleet::interrupted_nodes(&out.summary).expect("an interrupted fleet run");
    assert!(
        line.starts_with("interrupted: 1 of 3 nodes finished every case: conformant: node-a; NOT CONFORMANT: none; not certified: node-b ("),
        "{line}"
    );
    assert!(line.contains("node-c (2 of 2 cases unfinished)"), "{line}");
}

#[test]
fn each_group_runs_k_nodes_per_fingerprint_group_and_names_the_ones_taken_as_identical() {
    // node-a, node-b and node-e share a fingerprint; node-c has a newer containerd.
    let mut nodes = fleet();
    nodes.push(FakeNode::new("node-e"));
    for (k, ran) in [(1usize, 2usize), (2, 3)] {
        let e = env(nodes.clone());
        let mut o = opts(e.dir.path());
        o.target.per_group = Some(k);
        let out = run(&e, &o);
        let s = &out.summary;
        let fp = &s.fingerprint;
        assert_eq!(fp.per_group, Some(k));
        assert_eq!(fp.nodes.len(), ran, "K={k}: {:?}", fp.nodes);
        assert_eq!(
            fp.nodes.len() + fp.identical.len(),
            4,
            "every schedulable node is covered"
        );
        assert!(
            fp.nodes.iter().any(|n| n.name == "node-c"),
            "a group of one always runs"
        );
        // Only the sampled nodes ran the cases.
        let ran_on: std::collections::BTreeSet<String> = e
            .fake
            .lock()
            .unwrap()
            .placed
            .iter()
            .filter_map(|(_, _, n)| n.clone())
            .collect();
        let sampled: std::collections::BTreeSet<String> = fp.nodes.iter().map(|n| n.name.clone()).collect();
        assert_eq!(ran_on, sampled);
        // The group × area matrix: each group with what ran and what it covers.
        let f = s.fleet.as_ref().unwrap();
        let big = f
            .groups
            .iter()
            .find(|g| g.nodes.len() + g.identical.len() == 3)
            .unwrap();
        assert_eq!((big.nodes.len(), big.identical.len()), (k, 3 - k));
        assert!(f.groups.iter().all(|g| !g.areas.is_empty()));
        let table = podlife::results::stats::matrix_table(f);
        assert!(table.contains("(group × area)"), "{table}");
        assert!(table.contains(&big.identical.join(", ")), "{table}");
        let plan = s.plan.as_ref().unwrap();
        assert_eq!(plan.identical, 4 - ran);
    }
}

#[test]
fn a_group_sample_is_fixed_by_the_run_id_and_changes_with_it() {
    let node = |name: &str| podlife::results::NodeInfo {
        name: name.into(),
        ready: true,
        kubelet_version: "v1.36.2".into(),
        container_runtime_version: "containerd://2.1.9".into(),
        ..Default::default()
    };
    let sample = |run: &str| {
        let mut fp = podlife::results::Fingerprint {
            nodes: (0..10).map(|i| node(&format!("w{i}"))).collect(),
            each_node: true,
            ..Default::default()
        };
        podlife::results::fleet::sample_groups(&mut fp, 2, run);
        assert_eq!((fp.nodes.len(), fp.identical.len()), (2, 8));
        fp.nodes.into_iter().map(|n| n.name).collect::<Vec<_>>()
    };
    assert_eq!(sample("run1"), sample("run1"));
    let seen: std::collections::BTreeSet<Vec<String>> =
        ["r1", "r2", "r3", "r4", "r5"].iter().map(|r| sample(r)).collect();
    assert!(seen.len() > 1, "every run samples the same nodes: {seen:?}");
}
