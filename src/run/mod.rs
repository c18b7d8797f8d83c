//! The runner (`run`): plan → preflight → execute cases concurrently (libtest-mimic threads)
//! → judge → cleanup (always, Ctrl-C included) → reports.

pub mod bundle;
pub mod case;
pub mod health;
pub mod interrupt;
mod options;
pub mod record;
mod replay;
mod schedule;
pub mod streams;
mod sweep;

pub use options::{CASES_PER_NODE, RunOptions, default_threads};
use replay::{cases_of_run, prepare_replay, replay_attempt, replayable, stored_timeline};
pub use replay::{is_run_folder, replay_fingerprint};
pub use schedule::list;
use schedule::{LIBTEST_WAITERS, Lanes, libtest_run_args};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use crate::cluster::{Cluster, Fingerprint, NodeInfo};
use crate::results::{Attempt, AttemptStatus, CaseReport, CaseStatus, RunSummary, failure_message, stats};
use crate::suite::{LoadedCase, Suite};
use case::CaseEnv;
use interrupt::{Interrupt, Interrupts};

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

/// Runs the selected cases. Returns what happened (the caller writes the reports), or the exit
/// code of an error that stopped the run before any case (already printed).
pub fn run(mut opts: RunOptions, suites: Vec<Suite>) -> Result<RunOutcome, ExitCode> {
    let mut cases: Vec<(Suite, LoadedCase)> = suites
        .iter()
        .flat_map(|s| s.cases.iter().map(move |c| (s.clone(), c.clone())))
        .collect();
    // Replaying a run reproduces that run: the cases it ran, not every case of the suites.
    if let Some(ran) = opts.replay.as_deref().and_then(cases_of_run) {
        cases.retain(|(_, c)| ran.contains(&c.full_name()));
    }
    // A filter that selects nothing is a typo, not a green run (nextest refuses it too): say so
    // before anything touches the cluster.
    if !opts.list && !cases.iter().any(|(_, c)| opts.selection().could_select(&c.full_name())) {
        eprintln!(
            "error: no case matches the filter{}{} ({} case{} known; `podlife list` lists them)",
            opts.filter.as_deref().map(|f| format!(" `{f}`")).unwrap_or_default(),
            if opts.skip.is_empty() {
                String::new()
            } else {
                format!(" with --skip {}", opts.skip.join(", "))
            },
            cases.len(),
            plural(cases.len())
        );
        return Err(ExitCode::from(2));
    }
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
    let outcome = match &opts.replay.clone() {
        Some(dir) => {
            if !dir.is_dir() {
                crate::util::print_error(format!("--replay {}: no such directory", dir.display()));
                return Err(ExitCode::from(2));
            }
            if let Err(e) = prepare_replay(&mut opts, &cases) {
                crate::util::print_error(&e);
                return Err(ExitCode::from(2));
            }
            // A replay source holding nothing any selected case can replay (an empty folder, a
            // symlink loop, the wrong folder) is an input error, not a run of ignored cases.
            let selected = cases
                .iter()
                .filter(|(_, c)| opts.selection().selected(&c.full_name()))
                .collect::<Vec<_>>();
            if !selected.is_empty() && !selected.iter().any(|(_, c)| replayable(dir, c)) {
                crate::util::print_error(format!(
                    "--replay {}: no recording of any selected case (expected a run folder with recordings/ or timelines/, or a folder of recordings named after cases, e.g. {}/{})",
                    dir.display(),
                    dir.display(),
                    selected[0].1.name()
                ));
                return Err(ExitCode::from(2));
            }
            let fp = replay_fingerprint(dir);
            let interrupts = {
                let _g = rt.enter();
                Interrupts::listen(opts.cancel.clone())
            };
            execute(
                &opts,
                cases,
                Source::Replay(dir.clone()),
                fp,
                run_id,
                started,
                &rt,
                interrupts,
            )
        }
        None => {
            let cluster = match rt.block_on(Cluster::connect(&opts.connect)) {
                Ok(c) => c,
                Err(e) => {
                    crate::util::print_error(&e);
                    return Err(ExitCode::from(2));
                }
            };
            match run_live(&opts, cases, cluster, run_id, &rt) {
                Ok(o) => o,
                Err(RunError::Interrupted(i)) => {
                    eprintln!("interrupted by {} before any case started: nothing was created", i.name);
                    return Err(ExitCode::from(i.exit_code));
                }
                Err(RunError::Cluster(e)) => {
                    crate::util::print_error(&e);
                    return Err(ExitCode::from(2));
                }
            }
        }
    };
    // Do not block on streams that a stuck server keeps open.
    rt.shutdown_timeout(Duration::from_secs(1));
    let mut outcome = outcome;
    // "Covered" is what the loaded suites claim, selected or not: the figure `list --upstream`
    // states, whatever this run's filter, replay or nodes left out.
    if let Some(u) = &mut outcome.summary.upstream {
        let claimed: std::collections::BTreeSet<&str> = suites
            .iter()
            .flat_map(|s| &s.cases)
            .flat_map(|c| c.spec.upstream.iter().map(String::as_str))
            .collect();
        u.mapped = stats::covered(&opts.upstream_applicable, &claimed);
    }
    if opts.cancel.is_none() {
        exit_on_signal_while_publishing(&outcome);
    }
    Ok(outcome)
}

/// After the cases, the caller writes the reports and the bundle: a signal then must still end
/// podlife (the signal handlers installed for the run would otherwise swallow it, and a Ctrl-C
/// during a long bundle write did nothing). The run is over and its namespaces are gone, so the
/// first signal exits at once with its code, removing the half-written bundle.
fn exit_on_signal_while_publishing(outcome: &RunOutcome) {
    let report_dir = outcome.report_dir.clone();
    let spawned = std::thread::Builder::new().name("signals".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        let i = rt.block_on(async {
            let mut interrupts = Interrupts::listen(None);
            interrupts.next().await
        });
        let name = report_dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let _ = std::fs::remove_file(report_dir.with_file_name(format!(".{name}.tar.gz.partial")));
        eprintln!(
            "interrupted ({}) while writing the reports of {}: exiting; they may be incomplete",
            i.name,
            report_dir.display()
        );
        std::process::exit(i32::from(i.exit_code));
    });
    if let Err(e) = spawned {
        eprintln!("warning: signals while the reports are written will not stop podlife: {e}");
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Why `run_live` stopped before running any case.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("interrupted by {} before any case started", .0.name)]
    Interrupted(Interrupt),
}

/// Preflight, then run every case against the cluster. A preflight failure touches nothing; so
/// does an interrupt during it. The preflight is bounded like every request.
pub fn run_live(
    opts: &RunOptions,
    cases: Vec<(Suite, LoadedCase)>,
    cluster: Cluster,
    run_id: String,
    rt: &tokio::runtime::Runtime,
) -> Result<RunOutcome, RunError> {
    let started = Timestamp::now();
    let mut interrupts = {
        let _g = rt.enter();
        Interrupts::listen(opts.cancel.clone())
    };
    // The preflight sends about 15 requests; each is small, so a budget of a few request
    // timeouts covers a slow server while a silent one still ends it.
    let budget = opts.request_timeout * 4;
    // What the selected cases need beyond every case's permissions: their objects' kinds, and
    // the ephemeralcontainers subresource for `ephemeral` steps (read and replaced by `update`).
    let mut extra: Vec<(&str, String, Option<&str>)> = vec![];
    for (_, c) in &cases {
        extra.extend(
            c.objects
                .iter()
                .map(|o| ("patch", format!("{}s", o.kind.to_lowercase()), None)),
        );
        for (i, s) in c.spec.steps.iter().enumerate() {
            // `exec` steps open pods/exec (a websocket upgrade the API server authorizes as
            // `create`); `object` steps patch or delete the case's ConfigMaps and Secrets.
            if let crate::suite::Step::Exec(_) = &s.value {
                extra.push(("create", "pods".into(), Some("exec")));
            }
            if let (crate::suite::Step::Object(o), Some(obj)) = (&s.value, c.step_objects.get(&i)) {
                let verb = if o.delete.is_some() { "delete" } else { "patch" };
                extra.push((verb, format!("{}s", obj.kind.to_lowercase()), None));
            }
            if let crate::suite::Step::Ephemeral(e) = &s.value {
                let sub = Some("ephemeralcontainers");
                match e.via {
                    crate::suite::EphemeralVia::Patch => extra.push(("patch", "pods".into(), sub)),
                    crate::suite::EphemeralVia::Update => {
                        extra.push(("get", "pods".into(), sub));
                        extra.push(("update", "pods".into(), sub));
                    }
                }
            }
        }
    }
    extra.sort();
    extra.dedup();
    let extra: Vec<(&str, &str, Option<&str>)> = extra.iter().map(|(v, r, s)| (*v, r.as_str(), *s)).collect();
    let preflight = async {
        let mut fp = cluster.preflight().await?;
        cluster.check_permissions(&extra).await?;
        cluster.check_target(&mut fp, &opts.target).await?;
        Ok::<_, crate::cluster::ClusterError>(fp)
    };
    let fp = rt.block_on(async {
        tokio::select! {
            r = tokio::time::timeout(budget, preflight) => match r {
                Ok(r) => r.map_err(RunError::Cluster),
                Err(_) => Err(RunError::Cluster(crate::cluster::ClusterError::Unreachable {
                    tried: cluster.tried.clone(),
                    reason: format!(
                        "the preflight got no complete answer within {}",
                        crate::util::fmt_secs(budget.as_secs_f64())
                    ),
                })),
            },
            i = interrupts.next() => Err(RunError::Interrupted(i)),
        }
    })?;
    Ok(execute(
        opts,
        cases,
        Source::Live(cluster.client),
        fp,
        run_id,
        started,
        rt,
        interrupts,
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
    /// What interrupted the run, if anything.
    pub interrupt: Option<Interrupt>,
    /// The filter selected no case once the nodes were known (`x@node` naming no node): a usage
    /// error, exit 2.
    pub nothing_selected: bool,
}

impl RunOutcome {
    /// 130/143/129 when interrupted (Ctrl-C, SIGTERM, SIGHUP), 1 when a case failed, stayed
    /// undecided or errored, or a namespace was left behind, else 0.
    pub fn exit_code(&self) -> ExitCode {
        if let Some(i) = self.interrupt {
            ExitCode::from(i.exit_code)
        } else if self.nothing_selected {
            ExitCode::from(2)
        } else if self.summary.interrupted {
            ExitCode::from(130)
        } else if self.any_failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// The message of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// An attempt that ended in a panic of podlife itself: a harness error, never a verdict.
pub(super) fn panicked(p: &(dyn std::any::Any + Send), started: Timestamp, t0: std::time::Instant) -> Attempt {
    Attempt {
        status: AttemptStatus::Error,
        verdicts: vec![],
        error: Some(format!(
            "podlife panicked (a bug in podlife, please report it): {}",
            panic_message(p)
        )),
        started,
        duration_s: t0.elapsed().as_secs_f64(),
        api_requests: 0,
        cleanup: Default::default(),
        timeline: None,
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
    mut interrupts: Interrupts,
) -> RunOutcome {
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let live_namespaces: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let env = CaseEnv {
        target: opts.target.through_scheduler(&fingerprint.nodes),
        run_id: run_id.clone(),
        images: opts.images.clone(),
        cleanup_timeout: opts.cleanup_timeout,
        keep_on_failure: opts.keep_on_failure,
        cancel: cancel_rx,
        live_namespaces: live_namespaces.clone(),
        used_names: Arc::default(),
        settle: opts.settle,
        progress_every: Duration::from_secs(30),
        request_timeout: opts.request_timeout,
        api_outage_budget: opts.api_outage_budget,
        record: None,
        node: None,
        api_health: None,
    };
    let mut env = env;
    // Live: probe the API once a second for the whole run (see `health`).
    let mut health_task = None;
    if let Source::Live(client) = &source {
        let h = Arc::new(health::ApiHealth::default());
        let nodes = fingerprint.nodes.iter().map(|n| n.name.clone()).collect();
        health_task = Some(rt.spawn(h.clone().probe(client.clone(), nodes)));
        env.api_health = Some(h);
    }
    if let Source::Live(_) = &source
        && opts.record
    {
        let run_dir = opts.reports_dir.join(&run_id);
        let root = run_dir.join("recordings");
        match record::write_run_files(&root, &run_id, opts.retries, opts.repeat.max(1), &fingerprint) {
            Ok(()) => env.record = Some(root),
            Err(e) => eprintln!("warning: {}: not recording: {e}", root.display()),
        }
        let mut suites: Vec<&Suite> = cases.iter().map(|(s, _)| s).collect();
        suites.sort_by(|a, b| a.path.cmp(&b.path));
        suites.dedup_by(|a, b| a.path == b.path);
        let suites: Vec<Suite> = suites.into_iter().cloned().collect();
        for w in record::copy_suites(&run_dir, &suites) {
            eprintln!("warning: {w}");
        }
    }
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let interrupted_by: Arc<Mutex<Option<Interrupt>>> = Arc::default();
    {
        let flag = interrupted.clone();
        let by = interrupted_by.clone();
        let run_id = run_id.clone();
        rt.spawn(async move {
            let first = interrupts.next().await;
            eprintln!(
                "\ninterrupted ({}): stopping cases, deleting this run's namespaces, writing reports (interrupt again to exit at once)",
                first.name
            );
            *by.lock().expect("interrupt") = Some(first);
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = cancel_tx.send(true);
            let second = interrupts.next().await;
            eprintln!(
                "interrupted again ({}): exiting now; remove what is left with `podlife clean --run {run_id} --yes`",
                second.name
            );
            // No destructor runs on this exit: remove an unpacked bundle here.
            bundle::remove_unpacked();
            std::process::exit(i32::from(first.exit_code));
        });
    }
    // --each-node: every case once on each node the fingerprint lists (the preflight chose them;
    // a replay reads them from the recorded run).
    let fleet: Vec<NodeInfo> = if fingerprint.each_node {
        fingerprint.nodes.clone()
    } else {
        vec![]
    };
    let per_case = fleet.len().max(1);
    let threads = match opts.test_threads {
        0 if !fleet.is_empty() => {
            let n = default_threads(cases.len(), 1);
            if !opts.quiet && !opts.list {
                eprintln!(
                    "running every case on each of {} nodes, all nodes at once, up to {n} cases at a time per node (default: all, at most {CASES_PER_NODE}; --test-threads N to change)",
                    fleet.len()
                );
            }
            n
        }
        0 => {
            let ready = fingerprint.nodes.iter().filter(|n| n.ready).count();
            let n = default_threads(cases.len(), ready);
            if !opts.quiet && !opts.list {
                eprintln!(
                    "running up to {n} cases at a time (default: all, at most {CASES_PER_NODE} per Ready node; --test-threads N to change)"
                );
            }
            n
        }
        n => n,
    };
    // With --each-node, libtest-mimic's threads only wait for results: the cases run in per-node
    // lanes (see `Lanes`), so how many run at once is bounded per node, not overall.
    let args = libtest_run_args(
        opts,
        if fleet.is_empty() {
            threads
        } else {
            (cases.len() * per_case).clamp(1, LIBTEST_WAITERS)
        },
    );
    let mut lanes = Lanes::default();
    // One slot per case: a case is reported exactly once, whatever libtest-mimic does with it.
    let slots: Arc<Mutex<Vec<Option<CaseReport>>>> = Arc::new(Mutex::new(vec![None; cases.len() * per_case]));
    // Selected cases that libtest-mimic will not run (ignored), and those it will.
    let mut ignored_reports: Vec<(usize, CaseReport)> = vec![];
    let mut running: Vec<(usize, CaseReport)> = vec![];
    let server = fingerprint.server_minor();
    // Replaying a run folder: how many attempts each repetition of each case made live.
    let replay_plan: Arc<BTreeMap<String, Vec<usize>>> = Arc::new(match &source {
        Source::Replay(dir) if is_run_folder(dir) => {
            crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
                .ok()
                .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok())
                .map(|s| s.cases.into_iter().map(|c| (c.full_name(), c.repetitions)).collect())
                .unwrap_or_default()
        }
        _ => BTreeMap::new(),
    });
    let source = Arc::new(source);
    // Longest first (by timeout): with N threads the run then ends soon after its slowest case.
    let mut cases = cases;
    cases.sort_by_key(|(_, c)| std::cmp::Reverse(c.timeout));
    // Each case's copies on every node side by side, so every node's lane gets its longest
    // cases first too.
    let work: Vec<(Suite, LoadedCase, Option<NodeInfo>)> = cases
        .into_iter()
        .flat_map(|(s, c)| {
            let on: Vec<Option<NodeInfo>> = if fleet.is_empty() {
                vec![None]
            } else {
                fleet.iter().cloned().map(Some).collect()
            };
            on.into_iter().map(move |n| (s.clone(), c.clone(), n))
        })
        .collect();
    let mut trials = vec![];
    for (slot, (suite, case, node)) in work.into_iter().enumerate() {
        let node_name = node.as_ref().map(|n| n.name.clone());
        let (ignored, reason) = ignore_reason(&case, node_name.as_deref(), server, &source);
        let name = crate::results::case_id(&case.suite, case.name(), node_name.as_deref());
        let probe = libtest_mimic::Trial::test(name.clone(), || Ok(())).with_ignored_flag(ignored);
        // podlife filters (libtest-mimic is given no filter): a filter naming the case selects
        // each of its node copies, which libtest's own `--exact` would not.
        if !opts.selection().selects(&case.full_name(), &name) {
            continue;
        }
        let runs = !args.is_ignored(&probe);
        let slots = slots.clone();
        let mut env = env.clone();
        if let Some(n) = &node {
            env.target = opts.target.on_node(n);
            env.node = Some(n.name.clone());
        }
        let source = source.clone();
        let replay_plan = replay_plan.clone();
        let handle = rt.handle().clone();
        let retries = opts.retries;
        let repeat = opts.repeat;
        let interrupted = interrupted.clone();
        let inject_panic = opts.panic_in_case.as_deref() == Some(name.as_str())
            || opts.panic_in_case.as_deref() == Some(case.full_name().as_str());
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
            target_node: node_name.clone(),
            timeline_file: None,
            timeline: None,
        };
        if !runs {
            // libtest-mimic prints "ignored" without a reason; say why once, up front.
            if !opts.quiet {
                eprintln!(
                    "ignored {}: {}",
                    name,
                    crate::util::printable(reason.as_deref().unwrap_or("ignored"))
                );
            }
            ignored_reports.push((slot, base.clone()));
        } else if runs {
            running.push((slot, base.clone()));
        }
        let plan_key = name.clone();
        let fallback = base.clone();
        let lane_base = base.clone();
        let job = move || {
            // A panic anywhere in running or summarising the case becomes an error of this case
            // (libtest-mimic would otherwise print it as a failure we never hear of).
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_trial(
                    base,
                    &case,
                    &source,
                    &env,
                    &handle,
                    retries,
                    repeat,
                    &interrupted,
                    inject_panic,
                    replay_plan.get(&plan_key).map(Vec::as_slice),
                )
            }))
            .unwrap_or_else(|p| {
                let mut r = fallback.clone();
                r.status = CaseStatus::Error;
                r.attempts = vec![panicked(&*p, Timestamp::now(), std::time::Instant::now())];
                r.repetitions = vec![1];
                r
            })
        };
        // In a lane the case runs as soon as its node has a free slot; the trial only waits.
        let job: Box<dyn FnOnce() -> CaseReport + Send> = match &node_name {
            Some(n) if runs => Box::new(lanes.push(n, job, lane_base)),
            _ => Box::new(job),
        };
        let trial = libtest_mimic::Trial::ignorable_test(name, move || {
            let report = job();
            // Evidence quotes logs and recordings: printed, it must not drive the terminal.
            let message = crate::util::printable_lines(&failure_message(&report));
            let status = report.status;
            slots.lock().expect("reports")[slot] = Some(report);
            match status {
                CaseStatus::Passed => Ok(libtest_mimic::Completion::Completed),
                // Seen failing and passing: not certified, so not "ok".
                CaseStatus::Flaky => Err(message.into()),
                // Not a failure of the node: the console says so instead of "FAILED".
                CaseStatus::Interrupted => Ok(libtest_mimic::Completion::ignored_with("interrupted")),
                CaseStatus::NotRun => Ok(libtest_mimic::Completion::ignored_with(
                    "not run: the run was interrupted",
                )),
                CaseStatus::Ignored => Ok(libtest_mimic::Completion::ignored()),
                CaseStatus::Failed | CaseStatus::Undecided | CaseStatus::Error => Err(message.into()),
            }
        })
        .with_ignored_flag(ignored);
        trials.push(trial);
    }
    let nothing_selected = trials.is_empty();
    if nothing_selected {
        eprintln!(
            "error: no case matches the filter {} on the nodes of this run",
            opts.filter.as_deref().unwrap_or_default()
        );
    }
    lanes.start(rt, threads);
    // The statuses decide the exit code, not libtest-mimic's conclusion. libtest-mimic's printer
    // panics when stdout is closed (`podlife run | head`); its trials run in a scoped pool, so
    // the panic only reaches us once every started case has finished and cleaned up: catch it,
    // and go on to the sweep and the reports (stdout output is then dropped by `util::emit`).
    let printed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| libtest_mimic::run(&args, trials)));
    if printed.is_err() {
        eprintln!("warning: the console output stopped (stdout closed?); the run went on, see the reports");
    }
    let mut filled = std::mem::take(&mut *slots.lock().expect("reports"));
    let mut cases: Vec<CaseReport> = ignored_reports.into_iter().map(|(_, r)| r).collect();
    for (slot, base) in running {
        cases.push(filled[slot].take().unwrap_or_else(|| {
            // Every trial that runs fills its slot, even on a panic; never drop a case silently.
            let mut r = base;
            r.status = CaseStatus::Error;
            let why = if printed.is_err() {
                // libtest-mimic stopped at its first line, before starting any trial.
                "not run: the console output failed before the case started (stdout closed?)"
            } else {
                "podlife recorded no result for this case (a bug in podlife)"
            };
            r.attempts = vec![Attempt {
                error: Some(why.into()),
                ..panicked(&"no result", Timestamp::now(), std::time::Instant::now())
            }];
            r
        }));
    }
    cases.sort_by(|a, b| (a.suite.as_str(), a.case.as_str()).cmp(&(b.suite.as_str(), b.case.as_str())));
    // A case's leftover (still terminating, or its DELETE failed) stays registered, and the
    // sweep checks it again: the run's leftovers are those the sweep finds at the end.
    let mut leftovers: Vec<String> = if matches!(&*source, Source::Live(_)) {
        vec![]
    } else {
        cases
            .iter()
            .flat_map(|c| &c.attempts)
            .filter_map(|a| a.cleanup.leftover.clone())
            .collect()
    };
    if let Source::Live(client) = &*source {
        // Namespaces still registered belong to cases that never got to their cleanup (Ctrl-C,
        // a panic) or did not see them go; the label finds creates whose answer was lost. Kept
        // ones stay.
        let handled: BTreeSet<String> = cases
            .iter()
            .flat_map(|c| &c.attempts)
            .filter(|a| a.cleanup.deleted || a.cleanup.kept)
            .filter_map(|a| a.cleanup.namespace.clone())
            .collect();
        let registered = std::mem::take(&mut *live_namespaces.lock().expect("registry"));
        leftovers.extend(rt.block_on(sweep::sweep(
            client.clone(),
            &run_id,
            registered,
            &handled,
            opts.cleanup_timeout,
            opts.request_timeout,
            opts.api_outage_budget,
        )));
    }
    if let Some(t) = health_task {
        t.abort();
    }
    let interrupt = *interrupted_by.lock().expect("interrupt");
    let count = |s: CaseStatus| cases.iter().filter(|c| c.status == s).count();
    let fleet_view = stats::fleet(&cases, &fingerprint);
    let mut summary = RunSummary {
        run_id: run_id.clone(),
        started,
        finished: Timestamp::now(),
        fingerprint,
        passed: count(CaseStatus::Passed),
        flaky: count(CaseStatus::Flaky),
        failed: count(CaseStatus::Failed),
        undecided: count(CaseStatus::Undecided),
        errors: count(CaseStatus::Error),
        ignored: count(CaseStatus::Ignored),
        interrupted_cases: count(CaseStatus::Interrupted),
        not_run: count(CaseStatus::NotRun),
        interrupted: interrupted.load(std::sync::atomic::Ordering::SeqCst),
        interrupted_by: interrupt.map(|i| i.name.to_string()),
        leftovers,
        repeat: opts.repeat.max(1),
        certification: stats::certify(&cases),
        upstream: stats::upstream(&cases, &opts.upstream_applicable),
        fleet: fleet_view,
        cases,
    };
    crate::results::fleet::fill_odd_nodes(&mut summary);
    let report_dir = opts.reports_dir.join(&run_id);
    RunOutcome {
        // Undecided is not "all passed": exit 1, like a failure (never greener than the truth).
        // Interrupted and not-run cases did not pass either: a replay or re-judging of an
        // interrupted run (not itself interrupted, so no 130) must not exit 0. Nor does a flaky
        // case: seen failing, it is not certified.
        any_failed: summary.failed
            + summary.flaky
            + summary.undecided
            + summary.errors
            + summary.interrupted_cases
            + summary.not_run
            > 0
            || !summary.leftovers.is_empty(),
        summary,
        report_dir,
        interrupt,
        nothing_selected,
    }
}

/// Runs every repetition and retry of one case and sums them up in its report.
#[allow(clippy::too_many_arguments)]
fn run_trial(
    mut report: CaseReport,
    case: &LoadedCase,
    source: &Source,
    env: &CaseEnv,
    handle: &tokio::runtime::Handle,
    retries: u32,
    repeat: u32,
    interrupted: &std::sync::atomic::AtomicBool,
    inject_panic: bool,
    recorded: Option<&[usize]>,
) -> CaseReport {
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        report.status = CaseStatus::NotRun;
        report.ignore_reason = Some("not run: the run was interrupted".into());
        return report;
    }
    let mut attempt_no = 0;
    'reps: for rep in 0..repeat.max(1) as usize {
        let mut n = 0;
        for try_ in 0..=retries as usize {
            // Replaying a run folder: the attempts the live run made, never more (a retry it did
            // not make has no recording, e.g. for a case re-judged into failing).
            let k = match recorded {
                Some(reps) => match reps.get(rep) {
                    Some(&tries) if try_ >= tries => break,
                    _ => reps[..rep.min(reps.len())].iter().sum::<usize>() + try_ + 1,
                },
                None => attempt_no + 1,
            };
            let started = Timestamp::now();
            let t0 = std::time::Instant::now();
            let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if inject_panic {
                    panic!("injected by the panic_in_case test hook");
                }
                match source {
                    Source::Replay(dir) => replay_attempt(dir, case, env.node.as_deref(), k),
                    Source::Live(client) => handle.block_on(case::live_case(client.clone(), case, env, attempt_no)),
                }
            }))
            .unwrap_or_else(|p| {
                let a = panicked(&*p, started, t0);
                // The attempt's recording ends with the crash, so a replay reports it the same way.
                if let (Source::Live(_), Some(root)) = (source, &env.record)
                    && let Err(e) = record::close_after_panic(root, case, env.node.as_deref(), attempt_no + 1, &a)
                {
                    eprintln!("warning: recording of a crashed attempt: {e}");
                }
                a
            });
            attempt_no += 1;
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
    // A failure of the node in any attempt (retries included) makes a later pass flaky; a
    // harness error or an undecided attempt does not.
    let node_failed = report.attempts.iter().any(|a| a.status == AttemptStatus::Failed);
    report.status = stats::case_status(&outcomes, node_failed);
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
    report
}

fn ignore_reason(
    case: &LoadedCase,
    node: Option<&str>,
    server: Option<(u32, u32)>,
    source: &Source,
) -> (bool, Option<String>) {
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
    if let Source::Replay(dir) = source {
        if is_run_folder(dir) {
            let rec = dir
                .join("recordings")
                .join(record::case_dir_name(&case.suite, case.name(), node));
            let tl = stored_timeline(dir, case, node);
            if !rec.is_dir() && !tl.is_file() {
                return (
                    true,
                    Some(format!(
                        "no recording or timeline of `{}` in {}",
                        crate::results::case_id(&case.suite, case.name(), node),
                        dir.display()
                    )),
                );
            }
        } else if !dir.join(case.name()).is_dir() {
            return (
                true,
                Some(format!("no recording `{}` in {}", case.name(), dir.display())),
            );
        }
    }
    (false, None)
}
