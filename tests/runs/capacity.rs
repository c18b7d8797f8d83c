//! The fleet capacity benchmark (run it in release, as users run podlife): the in-process API
//! server presents 100 nodes, and a live run's full suite (its bundle's own suites, each pod
//! replaying that run's recording) runs on every one of them with the default API budget. Not a timed test: it asserts the budget and the
//! per-case cost, and prints the figures `docs/fleet.md` quotes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use podlife::results::CaseStatus;
use podlife::run::{RunOptions, run_live};

use crate::support::fake_api::FakeNode;
use crate::support::live;

/// The live run whose suites and recordings the fake nodes replay: 141 cases on vm and vm2.
const BUNDLE: &str = "tests/fixtures/live-bundles/N38-7kxm6te9/7kxm6te9.tar.gz";

fn peak_rss_mib() -> f64 {
    status_mib("VmHWM:")
}

fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Copies the files of `from` that `to` lacks, keeping the folder structure.
fn copy_missing(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_missing(&entry.path(), &target);
        } else if !target.exists() {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A folder of recordings named after each case's pod (what the fake server replays for a pod
/// of that name): the recording of the case's first attempt on `vm`. Cases whose pods share a
/// name share the first one's recording; their verdicts do not matter here, their cost does.
fn recordings_by_pod(run: &Path, cases: &[(podlife::suite::Suite, podlife::suite::LoadedCase)], into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    for (_, c) in cases {
        let pod = c.render_pod(&Default::default());
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        let rec = run
            .join("recordings")
            .join(format!("{}__{}@vm", c.suite, c.name()))
            .join("attempt-1");
        let link = into.join(&name);
        if rec.is_dir() && !link.exists() {
            std::os::unix::fs::symlink(&rec, &link).unwrap();
        }
    }
}

#[test]
#[ignore = "benchmark: 100 fake nodes × a live run's full suite; prints requests per case, peak watches, RSS and wall"]
fn capacity_full_suite_on_a_fleet() {
    let nodes: usize = std::env::var("PODLIFE_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    // The fake nodes replay the recordings this many times faster (the harness's cost per case
    // does not depend on how long the pod's story takes; the benchmark's wall does).
    let speed: f64 = std::env::var("PODLIFE_BENCH_SPEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10.0);
    let unpacked = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .args(["-xzf", BUNDLE, "-C"])
        .arg(unpacked.path())
        .status()
        .unwrap();
    assert!(status.success());
    let run: PathBuf = unpacked.path().join("7kxm6te9");
    // A live run needs every manifest an `object` step applies. That bundle kept only the
    // manifests of its cases' pods (bundles made since keep every referenced file), so the
    // objects those steps apply come from this checkout's `manifests/`; the pods still
    // replay the bundle's recordings, and their cost, not their verdicts, is measured here.
    copy_missing(Path::new("manifests"), &run.join("suites/manifests"));
    let (suites, _) = podlife::suite::load_recorded_suites(&[run.join("suites")], &Default::default()).unwrap();
    let all = live::cases_of(&suites);
    let cases: Vec<_> =
        all.iter()
            .filter(|(_, c)| {
                c.spec.steps.iter().enumerate().all(|(i, s)| {
                    !matches!(s.value, podlife::suite::Step::Object(_)) || c.step_objects.contains_key(&i)
                })
            })
            .cloned()
            .collect();
    println!("{} of the run's {} cases", cases.len(), all.len());
    let recs = unpacked.path().join("by-pod");
    recordings_by_pod(&run, &cases, &recs);

    let fleet: Vec<FakeNode> = (0..nodes)
        .map(|i| {
            let mut n = FakeNode::new(&format!("n{i:03}"));
            n.stretch = 1.0 / speed;
            n
        })
        .collect();
    let e = live::env(|f| {
        f.nodes = fleet;
        f.recordings = recs.clone();
        // The fake's own polling is its cost, not podlife's: keep it from crowding the 2 cores.
        f.watch_poll = Some(Duration::from_millis(200));
    });
    let o = RunOptions {
        test_threads: 0,
        target: podlife::cluster::Target {
            each_node: true,
            ..Default::default()
        },
        // The defaults a user gets.
        budget: Default::default(),
        starts_per_node: podlife::run::defaults::STARTS_PER_NODE,
        request_timeout: Duration::from_secs(30),
        cleanup_timeout: Duration::from_secs(60),
        ..live::run_options(e.dir.path())
    };
    // How memory follows the run: resident now, beside the cases judged so far.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (done, timelines) = (done.clone(), e.dir.path().join("capacity/timelines"));
        std::thread::spawn(move || {
            let mut samples = vec![];
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let judged = std::fs::read_dir(&timelines).map_or(0, |d| d.count());
                samples.push(format!("{judged} judged: {:.0} MiB", rss_mib()));
                std::thread::sleep(Duration::from_secs(20));
            }
            samples
        })
    };
    let rss_before = peak_rss_mib();
    let t0 = std::time::Instant::now();
    let mut out = run_live(&o, cases.clone(), e.cluster.clone(), "capacity".into(), &e.rt).expect("run");
    let wall = t0.elapsed();
    let rss_run = peak_rss_mib();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    println!("resident while running: {}", sampler.join().unwrap().join(", "));
    live::publish(&mut out, &o);
    let rss_reports = peak_rss_mib();
    let s = &out.summary;
    let plan = s.plan.clone().unwrap();
    assert_eq!(s.cases.len(), cases.len() * nodes);
    let ran = s
        .cases
        .iter()
        .filter(|c| c.status.has_verdict() || c.status == CaseStatus::Error)
        .count();

    let f = e.fake.lock().unwrap();
    // Per case: its namespace's create (the name is in the body), then every request naming its
    // namespace (watches, applies, logs, execs, the delete and the wait for it), counted in one
    // pass over the requests.
    let mut by_namespace: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for r in &f.requests {
        if let Some((_, rest)) = r.split_once("/namespaces/") {
            let ns = rest.split(['/', '?']).next().unwrap_or_default();
            *by_namespace.entry(ns).or_default() += 1;
        }
    }
    let mut per_case: Vec<usize> = s
        .cases
        .iter()
        .flat_map(|c| &c.attempts)
        .filter_map(|a| a.cleanup.namespace.as_deref())
        .map(|ns| 1 + by_namespace.get(ns).copied().unwrap_or(0))
        .collect();
    per_case.sort_unstable();
    let median = per_case[per_case.len() / 2];
    let p95 = per_case[per_case.len() * 95 / 100];
    let max = *per_case.last().unwrap();
    let total = f.requests.len();
    println!(
        "{nodes} nodes × {} cases = {} cases ({ran} ran to a verdict or an error); plan: {} nodes at once, {} batches, predicted {:.0}s",
        cases.len(),
        s.cases.len(),
        plan.nodes_at_once,
        plan.batches,
        plan.predicted_wall.as_secs_f64()
    );
    println!(
        "API requests: {total} in all, per case median {median}, 95th percentile {p95}, max {max}; peak concurrent watches {} (budget {})",
        f.peak_watches, o.budget.watches
    );
    println!(
        "peak RSS: {rss_before:.0} MiB before, {rss_run:.0} MiB after the cases, {rss_reports:.0} MiB after the reports; wall {:.0}s (recordings replayed {speed}× faster)",
        wall.as_secs_f64()
    );
    assert!(
        f.peak_watches <= o.budget.watches,
        "{} watches at once, budget {}",
        f.peak_watches,
        o.budget.watches
    );
}
