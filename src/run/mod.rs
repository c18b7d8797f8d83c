//! The runner (`run`): plan → preflight → execute cases concurrently (libtest-mimic threads)
//! → judge → cleanup (always, Ctrl-C included) → reports.

pub mod case;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use crate::cluster::Target;
use crate::cluster::{Cluster, ConnectOptions, Fingerprint};
use crate::results::{AttemptStatus, CaseReport, CaseStatus, RunSummary, failure_message, stats};
use crate::suite::{LoadedCase, Suite};
use case::CaseEnv;

/// Everything `podlife run` was asked to do, validated.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub filter: Option<String>,
    pub exact: bool,
    pub skip: Vec<String>,
    /// Cases run at the same time; 0 = the default, [`default_threads`].
    pub test_threads: usize,
    pub list: bool,
    pub ignored: bool,
    pub include_ignored: bool,
    pub retries: u32,
    pub keep_on_failure: bool,
    pub replay: Option<PathBuf>,
    pub reports_dir: PathBuf,
    pub junit: Option<PathBuf>,
    pub images: BTreeMap<String, String>,
    pub connect: ConnectOptions,
    pub cleanup_timeout: Duration,
    pub settle: Duration,
    pub quiet: bool,
    /// Write the libtest-style console output to this file instead of stdout.
    pub logfile: Option<PathBuf>,
    /// Cancels the run like Ctrl-C when it flips to true (tests and embedding).
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// Run every case this many times (statistics, flakiness).
    pub repeat: u32,
    /// Print the per-area certification summary.
    pub certify: bool,
    /// Upstream conformance testnames a pod can show (from suites/upstream-conformance.tsv), to
    /// report how many this run certified.
    pub upstream_applicable: Vec<String>,
    /// Which node / runtime the pods are pinned to.
    pub target: Target,
}

/// Cases in flight per targeted Ready node when `--test-threads` is not given. Measured on the
/// 2-core reference node (issue 11): 16 concurrent cases ran the 86 built-in cases in 1.05× the
/// slowest case with no load-induced failure, 4 took 2.84×. Beyond "the others fit beside the
/// slowest case" more concurrency buys no wall time, only load on the node.
pub const CASES_PER_NODE: usize = 16;

/// The default concurrency: every case at once, at most [`CASES_PER_NODE`] per Ready node the
/// cases can land on (at least one node is assumed: replays have none).
pub fn default_threads(cases: usize, ready_nodes: usize) -> usize {
    cases.clamp(1, CASES_PER_NODE * ready_nodes.max(1))
}

/// A short, unique, DNS-safe run id.
pub fn new_run_id() -> String {
    let nanos = Timestamp::now().as_nanosecond() as u128;
    let mut x = nanos ^ (u128::from(std::process::id()) << 64);
    let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = String::new();
    for _ in 0..8 {
        s.push(alphabet[(x % 36) as usize] as char);
        x /= 36;
    }
    s
}

/// `run --list`: the selected cases in libtest's `--list` format.
pub fn list(opts: &RunOptions, suites: &[Suite]) -> ExitCode {
    let trials = suites
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| libtest_mimic::Trial::test(c.full_name(), || Ok(())))
        .collect();
    let _ = libtest_mimic::run(&libtest_args(opts, 1), trials);
    ExitCode::SUCCESS
}

/// Runs the selected cases. Returns what happened (the caller writes the reports), or the exit
/// code of an error that stopped the run before any case (already printed).
pub fn run(opts: RunOptions, suites: Vec<Suite>) -> Result<RunOutcome, ExitCode> {
    let cases: Vec<(Suite, LoadedCase)> = suites
        .iter()
        .flat_map(|s| s.cases.iter().map(move |c| (s.clone(), c.clone())))
        .collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let run_id = new_run_id();
    let started = Timestamp::now();
    let outcome = match &opts.replay {
        Some(dir) => {
            if !dir.is_dir() {
                eprintln!("error: --replay {}: no such directory", dir.display());
                return Err(ExitCode::from(2));
            }
            let fp = replay_fingerprint(dir);
            execute(&opts, cases, Source::Replay(dir.clone()), fp, run_id, started, &rt)
        }
        None => {
            let cluster = match rt.block_on(Cluster::connect(&opts.connect)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Err(ExitCode::from(2));
                }
            };
            match run_live(&opts, cases, cluster, run_id, &rt) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Err(ExitCode::from(2));
                }
            }
        }
    };
    // Do not block on streams that a stuck server keeps open.
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(outcome)
}

/// Preflight, then run every case against the cluster. A preflight failure touches nothing.
pub fn run_live(
    opts: &RunOptions,
    cases: Vec<(Suite, LoadedCase)>,
    cluster: Cluster,
    run_id: String,
    rt: &tokio::runtime::Runtime,
) -> Result<RunOutcome, crate::cluster::ClusterError> {
    let started = Timestamp::now();
    let mut fp = rt.block_on(cluster.preflight())?;
    rt.block_on(cluster.check_target(&mut fp, &opts.target))?;
    Ok(execute(
        opts,
        cases,
        Source::Live(cluster.client),
        fp,
        run_id,
        started,
        rt,
    ))
}

/// Where cases get their streams from.
pub enum Source {
    Live(kube::Client),
    Replay(PathBuf),
}

/// What `execute` produced.
pub struct RunOutcome {
    pub summary: RunSummary,
    pub report_dir: PathBuf,
    pub any_failed: bool,
}

impl RunOutcome {
    pub fn exit_code(&self) -> ExitCode {
        if self.summary.interrupted {
            ExitCode::from(130)
        } else if self.any_failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn execute(
    opts: &RunOptions,
    cases: Vec<(Suite, LoadedCase)>,
    source: Source,
    fingerprint: Fingerprint,
    run_id: String,
    started: Timestamp,
    rt: &tokio::runtime::Runtime,
) -> RunOutcome {
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let live_namespaces: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let env = CaseEnv {
        target: opts.target.clone(),
        run_id: run_id.clone(),
        images: opts.images.clone(),
        cleanup_timeout: opts.cleanup_timeout,
        keep_on_failure: opts.keep_on_failure,
        cancel: cancel_rx,
        live_namespaces: live_namespaces.clone(),
        settle: opts.settle,
        progress_every: Duration::from_secs(30),
    };
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let Source::Live(_) = &source {
        let flag = interrupted.clone();
        let external = opts.cancel.clone();
        rt.spawn(async move {
            let requested = async {
                match external {
                    Some(mut rx) => {
                        let _ = rx.wait_for(|v| *v).await;
                    }
                    None => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            };
            {
                requested.await;
                eprintln!(
                    "\ninterrupted: stopping cases and deleting this run's namespaces (Ctrl-C again to exit at once)"
                );
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = cancel_tx.send(true);
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        });
    } else {
        std::mem::forget(cancel_tx);
    }
    let reports: Arc<Mutex<Vec<CaseReport>>> = Arc::default();
    let server = fingerprint.server_minor();
    let source = Arc::new(source);
    // Longest first (by timeout): with N threads the run then ends soon after its slowest case.
    let mut cases = cases;
    cases.sort_by_key(|(_, c)| std::cmp::Reverse(c.timeout));
    let mut trials = vec![];
    for (suite, case) in cases {
        let (ignored, reason) = ignore_reason(&case, server, &source);
        let name = case.full_name();
        let reports = reports.clone();
        let env = env.clone();
        let source = source.clone();
        let handle = rt.handle().clone();
        let retries = opts.retries;
        let repeat = opts.repeat;
        let interrupted = interrupted.clone();
        let suite_file = suite.path.display().to_string();
        let base = CaseReport {
            suite: case.suite.clone(),
            suite_file,
            case: case.name().to_string(),
            description: case.spec.description.clone(),
            reference: case.spec.reference.clone(),
            tags: case.tags.clone(),
            upstream: case.spec.upstream.clone(),
            status: CaseStatus::Ignored,
            ignore_reason: reason.clone(),
            attempts: vec![],
            repetitions: vec![],
            pass_rate: 0.0,
            measurements: vec![],
            node: None,
            timeline_file: None,
            timeline: None,
        };
        if ignored {
            // libtest-mimic prints "ignored" without a reason; say why once, up front.
            if !opts.quiet {
                eprintln!(
                    "ignored {}: {}",
                    case.full_name(),
                    reason.as_deref().unwrap_or("ignored")
                );
            }
            reports.lock().expect("reports").push(base.clone());
        }
        let trial = libtest_mimic::Trial::test(name, move || {
            let mut report = base;
            if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                report.status = CaseStatus::Interrupted;
                reports.lock().expect("reports").push(report);
                return Err("not started: run interrupted".into());
            }
            'reps: for _ in 0..repeat.max(1) {
                let mut n = 0;
                for _ in 0..=retries {
                    let attempt = match &*source {
                        Source::Replay(dir) => case::replay_case(&case, &dir.join(case.name())),
                        Source::Live(client) => handle.block_on(case::live_case(client.clone(), &case, &env)),
                    };
                    let status = attempt.status;
                    report.attempts.push(attempt);
                    n += 1;
                    if status == AttemptStatus::Interrupted || interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                        report.repetitions.push(n);
                        break 'reps;
                    }
                    if status == AttemptStatus::Passed {
                        break;
                    }
                }
                report.repetitions.push(n);
            }
            let outcomes = stats::repetition_outcomes(&report.attempts, &report.repetitions);
            report.status = stats::repeat_status(&outcomes, report.repetitions.iter().any(|n| *n > 1));
            report.pass_rate = stats::pass_rate(&outcomes);
            let mut ends = vec![];
            let mut i = 0;
            for n in &report.repetitions {
                i += n;
                if let Some(a) = report.attempts.get(i - 1) {
                    ends.push(a);
                }
            }
            report.measurements = stats::measure_stats(&ends);
            report.timeline = report.attempts.last_mut().and_then(|a| a.timeline.take());
            report.node = report.timeline.as_ref().and_then(|t| t.pod.node.clone());
            let message = failure_message(&report);
            let status = report.status;
            reports.lock().expect("reports").push(report);
            match status {
                CaseStatus::Passed | CaseStatus::Flaky => Ok(()),
                _ => Err(message.into()),
            }
        })
        .with_ignored_flag(ignored);
        trials.push(trial);
    }
    let threads = match opts.test_threads {
        0 => {
            let ready = fingerprint.nodes.iter().filter(|n| n.ready).count();
            let n = default_threads(trials.len(), ready);
            if !opts.quiet && !opts.list {
                eprintln!(
                    "running up to {n} cases at a time (default: all, at most {CASES_PER_NODE} per Ready node; --test-threads N to change)"
                );
            }
            n
        }
        n => n,
    };
    let conclusion = libtest_mimic::run(&libtest_args(opts, threads), trials);
    let mut cases = std::mem::take(&mut *reports.lock().expect("reports"));
    cases.sort_by(|a, b| (a.suite.as_str(), a.case.as_str()).cmp(&(b.suite.as_str(), b.case.as_str())));
    // Ctrl-C: namespaces still registered belong to cases that never got to their cleanup.
    let mut leftovers: Vec<String> = cases
        .iter()
        .filter_map(|c| c.last().and_then(|a| a.cleanup.leftover.clone()))
        .collect();
    if let Source::Live(client) = &*source {
        let remaining: Vec<String> = live_namespaces.lock().expect("registry").iter().cloned().collect();
        for ns in remaining {
            let api = crate::cluster::CaseApi::new(client.clone(), &ns);
            match rt.block_on(api.delete_namespace(opts.cleanup_timeout)) {
                Ok(true) => {}
                Ok(false) => leftovers.push(format!("namespace {ns} still terminating")),
                Err(e) => leftovers.push(format!("namespace {ns}: {e}")),
            }
        }
    }
    let count = |s: CaseStatus| cases.iter().filter(|c| c.status == s).count();
    let summary = RunSummary {
        run_id: run_id.clone(),
        started,
        finished: Timestamp::now(),
        fingerprint,
        passed: count(CaseStatus::Passed),
        flaky: count(CaseStatus::Flaky),
        failed: count(CaseStatus::Failed),
        errors: count(CaseStatus::Error),
        ignored: count(CaseStatus::Ignored),
        interrupted: interrupted.load(std::sync::atomic::Ordering::SeqCst),
        leftovers,
        repeat: opts.repeat.max(1),
        certification: stats::certify(&cases),
        upstream: stats::upstream(&cases, &opts.upstream_applicable),
        cases,
    };
    let report_dir = opts.reports_dir.join(&run_id);
    RunOutcome {
        any_failed: conclusion.has_failed() || !summary.leftovers.is_empty(),
        summary,
        report_dir,
    }
}

fn ignore_reason(case: &LoadedCase, server: Option<(u32, u32)>, source: &Source) -> (bool, Option<String>) {
    if let (Some(min), Some(have)) = (case.min_server_version, server)
        && have < min
    {
        return (
            true,
            Some(format!(
                "needs server {}.{}, cluster is {}.{}",
                min.0, min.1, have.0, have.1
            )),
        );
    }
    if let Source::Replay(dir) = source
        && !dir.join(case.name()).is_dir()
    {
        return (
            true,
            Some(format!("no recording `{}` in {}", case.name(), dir.display())),
        );
    }
    (false, None)
}

fn libtest_args(opts: &RunOptions, threads: usize) -> libtest_mimic::Arguments {
    libtest_mimic::Arguments {
        filter: opts.filter.clone(),
        exact: opts.exact,
        skip: opts.skip.clone(),
        test_threads: Some(threads.max(1)),
        list: opts.list,
        ignored: opts.ignored,
        include_ignored: opts.include_ignored,
        quiet: opts.quiet,
        logfile: opts.logfile.as_ref().map(|p| p.display().to_string()),
        ..libtest_mimic::Arguments::default()
    }
}

/// The fingerprint of recordings: `cluster-info.json` beside them, when present.
pub fn replay_fingerprint(dir: &std::path::Path) -> Fingerprint {
    let mut fp = Fingerprint {
        source: Some(format!("replay:{}", dir.display())),
        ..Fingerprint::default()
    };
    let Ok(text) = std::fs::read_to_string(dir.join("cluster-info.json")) else {
        return fp;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return fp;
    };
    let s = |p: &str| v.pointer(p).and_then(|x| x.as_str()).unwrap_or_default().to_string();
    fp.server_version = s("/version/serverVersion/gitVersion");
    fp.platform = Some(s("/version/serverVersion/platform"));
    if v.pointer("/node/name").is_some() {
        fp.nodes.push(crate::cluster::NodeInfo {
            name: s("/node/name"),
            ready: true,
            kubelet_version: s("/node/nodeInfo/kubeletVersion"),
            container_runtime_version: s("/node/nodeInfo/containerRuntimeVersion"),
            kernel_version: s("/node/nodeInfo/kernelVersion"),
            os_image: s("/node/nodeInfo/osImage"),
            architecture: s("/node/nodeInfo/architecture"),
        });
    }
    fp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_threads_runs_everything_at_once_up_to_the_per_node_cap() {
        assert_eq!(default_threads(86, 1), 16);
        assert_eq!(default_threads(86, 2), 32);
        assert_eq!(default_threads(86, 10), 86);
        assert_eq!(default_threads(5, 1), 5);
        // A replay has no node: one node's worth.
        assert_eq!(default_threads(30, 0), 16);
        assert_eq!(default_threads(0, 0), 1);
    }
}
