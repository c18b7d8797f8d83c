//! Executing the cases (`execute`): one libtest-mimic trial per case (per node with
//! `--each-node`), each running its repetitions and retries (`run_trial`), then the sweep and the
//! run's summary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use super::case::{self, CaseEnv};
use super::interrupt::{Interrupt, Interrupts};
use super::replay::{is_run_folder, replay_attempt, stored_timeline};
use super::schedule::{LIBTEST_WAITERS, Lanes, libtest_run_args};
use super::{CASES_PER_NODE, RunOptions, bundle, default_threads, health, record, sweep};
use crate::results::{Attempt, AttemptStatus, CaseReport, CaseStatus, RunSummary, failure_message, stats};
use crate::results::{Fingerprint, NodeInfo};
use crate::suite::{LoadedCase, Suite};

/// Where cases get their streams from.
pub enum Source {
    Live(kube::Client),
    /// A run or recordings folder, and how its files are named (`RunOptions::names`).
    Replay(PathBuf, crate::files::Names),
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
        node_load: None,
        timeline: None,
    }
}

/// What `execute` runs: the cases and where their streams come from, as `run` (a replay) or
/// `run_live` (after the preflight) decided them.
pub struct Execution<'a> {
    pub opts: &'a RunOptions,
    pub cases: Vec<(Suite, LoadedCase)>,
    pub source: Source,
    /// The cluster (or the replayed run's): its nodes are the lanes of an `--each-node` run.
    pub fingerprint: Fingerprint,
    pub run_id: String,
    pub started: Timestamp,
    pub rt: &'a tokio::runtime::Runtime,
    /// Listening since before the preflight, so a signal during it is not lost.
    pub interrupts: Interrupts,
    /// Live: makes clients on connections of their own, for the API probe (see `health`).
    pub fresh: Option<crate::cluster::FreshClient>,
}

/// Runs every selected case (see `Execution`), sweeps the run's namespaces and sums it all up.
pub fn execute(ex: Execution<'_>) -> RunOutcome {
    let Execution {
        opts,
        cases,
        source,
        fingerprint,
        run_id,
        started,
        rt,
        interrupts,
        fresh,
    } = ex;
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let live_namespaces: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let mut env = case_env(opts, &fingerprint, &run_id, cancel_rx, live_namespaces.clone());
    let health_task = start_health(&mut env, &source, rt, fresh, &fingerprint);
    if matches!(source, Source::Live(_)) && opts.record {
        env.record = start_recording(opts, &run_id, &fingerprint, &cases);
    }
    let (interrupted, interrupted_by) = on_interrupt(rt, interrupts, cancel_tx, &run_id);
    // --each-node: every case once on each node the fingerprint lists (the preflight chose them;
    // a replay reads them from the recorded run).
    let fleet: Vec<NodeInfo> = if fingerprint.each_node {
        fingerprint.nodes.clone()
    } else {
        vec![]
    };
    let per_case = fleet.len().max(1);
    // Within the watch budget: a node's cases beyond it wait (with --each-node, whole nodes wait
    // for a place in the batch instead; see `Budget::nodes_at_once`).
    let threads = thread_count(opts, &fleet, &fingerprint, cases.len()).min(opts.budget.cases_at_once());
    // With --each-node, libtest-mimic's threads only wait for results: the cases run in per-node
    // lanes (see `Lanes`), so how many run at once is bounded per node, not overall.
    let waiters = if fleet.is_empty() {
        threads
    } else {
        (cases.len() * per_case).clamp(1, LIBTEST_WAITERS)
    };
    let args = libtest_run_args(opts, waiters);
    let start_slots = start_slots(&mut env, opts, &fleet, &fingerprint);
    let mut lanes = Lanes::default();
    // One slot per case: a case is reported exactly once, whatever libtest-mimic does with it.
    let slots: Slots = Arc::new(Mutex::new(vec![None; cases.len() * per_case]));
    let source = Arc::new(source);
    let maker = TrialMaker {
        opts,
        args: &args,
        per_case,
        each_node: !fleet.is_empty(),
        server: fingerprint.server_minor(),
        // Replaying a run folder: how many attempts each repetition of each case made live.
        replay_plan: replay_plan(&source),
        source: source.clone(),
        start_slots,
        env,
        // Where judged cases' timelines go (see `spill_timeline`).
        spill_dir: Arc::new(opts.reports_dir.join(&run_id)),
        handle: rt.handle().clone(),
        interrupted: interrupted.clone(),
        slots: slots.clone(),
    };
    let Trials {
        mut trials,
        trial_at,
        expected,
        ignored_reports,
        running,
    } = maker.make(case_work(cases, &fleet, opts), &mut lanes);
    let nothing_selected = trials.is_empty();
    if nothing_selected {
        eprintln!(
            "error: no case matches the filter {} on the nodes of this run",
            opts.filter.as_deref().unwrap_or_default()
        );
    }
    let plan = fleet_plan(&expected, &fleet, &fingerprint, threads, opts);
    // A replay takes the time of reading its recordings, not the plan's.
    let live = matches!(&*source, Source::Live(_));
    if live && !opts.quiet && !opts.list && !nothing_selected {
        for l in plan.lines() {
            eprintln!("{l}");
        }
    }
    if !fleet.is_empty() {
        trials = console_order(trials, &trial_at, &expected, threads, plan.nodes_at_once);
    }
    lanes.start(rt, threads, plan.nodes_at_once);
    // The statuses decide the exit code, not libtest-mimic's conclusion. libtest-mimic's printer
    // panics when stdout is closed (`podlife run | head`); its trials run in a scoped pool, so
    // the panic only reaches us once every started case has finished and cleaned up: catch it,
    // and go on to the sweep and the reports (stdout output is then dropped by `util::emit`).
    let printed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| libtest_mimic::run(&args, trials)));
    if printed.is_err() {
        eprintln!("warning: the console output stopped (stdout closed?); the run went on, see the reports");
    }
    let mut cases = collect_reports(&slots, ignored_reports, running, printed.is_err());
    let leftovers = leftovers(&mut cases, &source, rt, &live_namespaces, &run_id, opts);
    if let Some(t) = health_task {
        t.abort();
    }
    let interrupt = *interrupted_by.lock().expect("interrupt");
    let mut summary = summary(cases, leftovers, fingerprint, opts, &run_id, started);
    summary.interrupted = interrupted.load(std::sync::atomic::Ordering::SeqCst);
    summary.interrupted_by = interrupt.map(|i| i.name.to_string());
    summary.plan = (live && !nothing_selected).then_some(plan);
    crate::results::fleet::fill_odd_nodes(&mut summary);
    let report_dir = opts.reports_dir.join(&run_id);
    RunOutcome {
        any_failed: any_failed(&summary),
        summary,
        report_dir,
        interrupt,
        nothing_selected,
    }
}

/// One case on one node (no node without `--each-node`), with its suite file's name.
type Work = (Arc<String>, Arc<LoadedCase>, Option<NodeInfo>);

/// The cases to run, longest first (by typical duration, else timeout): with N slots per node
/// the run then ends soon after its slowest case, and the short cases spread over the whole run
/// instead of crowding its end (longest-processing-time-first scheduling). Each case's copies on
/// every node side by side, so every node's lane gets its longest cases first too. The copies
/// share the case and its suite file's name: a fleet has thousands of copies, and a case (its
/// rendered manifests) or a suite (all its cases) each copied would make memory grow with cases
/// × nodes.
fn case_work(mut cases: Vec<(Suite, LoadedCase)>, fleet: &[NodeInfo], opts: &RunOptions) -> Vec<Work> {
    cases.sort_by_key(|(_, c)| std::cmp::Reverse(opts.durations.expected(&c.full_name(), c.timeout)));
    cases
        .into_iter()
        .flat_map(|(s, c)| {
            let on: Vec<Option<NodeInfo>> = if fleet.is_empty() {
                vec![None]
            } else {
                fleet.iter().cloned().map(Some).collect()
            };
            let (file, case) = (Arc::new(s.shown.clone()), Arc::new(c));
            on.into_iter().map(move |n| (file.clone(), case.clone(), n))
        })
        .collect()
}

/// A case's report before it runs: what the suite says of it, where it is to run, and (if it
/// is ignored) why.
fn base_report(
    case: &LoadedCase,
    suite_file: String,
    target_node: Option<String>,
    reason: Option<String>,
) -> CaseReport {
    CaseReport {
        suite: case.suite.clone(),
        suite_file,
        case: case.name().to_string(),
        description: case.spec.description.clone(),
        reference: case.spec.reference.clone(),
        tags: case.tags.clone(),
        upstream: case.spec.upstream.clone(),
        status: CaseStatus::Ignored,
        ignore_reason: reason,
        attempts: vec![],
        repetitions: vec![],
        pass_rate: 0.0,
        measurements: vec![],
        node: None,
        target_node,
        timeline_file: None,
        timeline: None,
    }
}

/// What runs one case: its trial plan, a panic anywhere in running or summarising it becoming an
/// error of this case (libtest-mimic would otherwise print it as a failure we never hear of),
/// and its timeline spilled as soon as it is judged (in a lane, its result may wait a while to
/// be printed).
fn case_job(plan: TrialPlan, base: CaseReport, spill: Arc<PathBuf>) -> impl FnOnce() -> CaseReport + Send + 'static {
    move || {
        let fallback = base.clone();
        let mut report =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plan.run(base))).unwrap_or_else(|p| {
                let mut r = fallback;
                r.status = CaseStatus::Error;
                r.attempts = vec![panicked(&*p, Timestamp::now(), std::time::Instant::now())];
                r.repetitions = vec![1];
                r
            });
        spill_timeline(&spill, &mut report);
        report
    }
}

/// The reports of a run's cases, one slot per case: a case is reported exactly once, whatever
/// libtest-mimic does with it.
type Slots = Arc<Mutex<Vec<Option<CaseReport>>>>;

/// The libtest-mimic trial of one case: it runs `job`, files the report in its slot and tells
/// libtest-mimic how to print it.
fn libtest_trial(
    name: String,
    job: Box<dyn FnOnce() -> CaseReport + Send>,
    slots: Slots,
    slot: usize,
) -> libtest_mimic::Trial {
    libtest_mimic::Trial::ignorable_test(name, move || {
        let report = job();
        // Evidence quotes logs and recordings: printed, it must not drive the terminal.
        let message = crate::util::printable_lines(&failure_message(&report));
        let status = report.status;
        let ignored_why = report.ignore_reason.as_deref().map(crate::util::printable);
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
            // Ignored after it ran: a recording that does not answer the case says why.
            CaseStatus::Ignored => Ok(match ignored_why {
                Some(why) => libtest_mimic::Completion::ignored_with(why),
                None => libtest_mimic::Completion::ignored(),
            }),
            CaseStatus::Failed | CaseStatus::Undecided | CaseStatus::Error => Err(message.into()),
        }
    })
}

/// The run's leftovers. A case's leftover (still terminating, or its DELETE failed) stays
/// registered, and a live run's sweep checks it again: the leftovers are those the sweep finds
/// at the end; a replay's are those its cases recorded.
fn leftovers(
    cases: &mut [CaseReport],
    source: &Source,
    rt: &tokio::runtime::Runtime,
    live_namespaces: &Mutex<BTreeMap<String, String>>,
    run_id: &str,
    opts: &RunOptions,
) -> Vec<String> {
    // A case's leftover (still terminating, or its DELETE failed) stays registered, and the
    // sweep checks it again: the run's leftovers are those the sweep finds at the end.
    let mut leftovers: Vec<String> = if matches!(source, Source::Live(_)) {
        vec![]
    } else {
        cases
            .iter()
            .flat_map(|c| &c.attempts)
            .filter_map(|a| a.cleanup.leftover.clone())
            .collect()
    };
    if let Source::Live(client) = source {
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
        let terminating: BTreeSet<String> = cases
            .iter()
            .flat_map(|c| &c.attempts)
            .filter(|a| a.cleanup.terminating)
            .filter_map(|a| a.cleanup.namespace.clone())
            .collect();
        let (left, left_namespaces) = rt.block_on(sweep::sweep(
            client.clone(),
            run_id,
            registered,
            &handled,
            &terminating,
            opts,
        ));
        leftovers.extend(left);
        // The namespaces the cases left terminating: gone now, or leftovers.
        for a in cases.iter_mut().flat_map(|c| c.attempts.iter_mut()) {
            let c = &mut a.cleanup;
            if std::mem::take(&mut c.terminating) {
                match c.namespace.as_ref().filter(|n| left_namespaces.contains(*n)) {
                    Some(n) => c.leftover = Some(format!("namespace {n} still terminating at the end of the run")),
                    None => c.deleted = true,
                }
            }
        }
    }
    leftovers
}

/// The run's summary from its cases and leftovers (interruption and plan are the caller's).
fn summary(
    cases: Vec<CaseReport>,
    leftovers: Vec<String>,
    fingerprint: Fingerprint,
    opts: &RunOptions,
    run_id: &str,
    started: Timestamp,
) -> RunSummary {
    let count = |s: CaseStatus| cases.iter().filter(|c| c.status == s).count();
    let fleet_view = stats::fleet(&cases, &fingerprint);
    RunSummary {
        run_id: run_id.to_string(),
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
        interrupted: false,
        interrupted_by: None,
        leftovers,
        repeat: opts.repeat.max(1),
        certification: stats::certify(&cases),
        upstream: stats::upstream(&cases, &opts.upstream_applicable),
        fleet: fleet_view,
        plan: None,
        cases,
    }
}

/// The run's plan (see `results::plan`) from the expected durations of each node's cases.
fn fleet_plan(
    expected: &[(Vec<Duration>, usize)],
    fleet: &[NodeInfo],
    fingerprint: &Fingerprint,
    threads: usize,
    opts: &RunOptions,
) -> crate::results::plan::Plan {
    let (durations, by_timeout) = expected.iter().max_by_key(|e| e.0.len()).cloned().unwrap_or_default();
    let mut plan = crate::results::plan::Plan::new(
        &durations,
        fleet.len(),
        fleet_groups(fleet, fingerprint),
        threads,
        opts.budget,
        by_timeout,
    );
    plan.identical = fingerprint.identical.len();
    plan
}

/// Start slots: per node with --each-node (returned, by node), else shared by the Ready nodes
/// the pods may land on; and the cluster's, shared by every case of the run; with the pacer of
/// the run's requests.
fn start_slots(
    env: &mut CaseEnv,
    opts: &RunOptions,
    fleet: &[NodeInfo],
    fingerprint: &Fingerprint,
) -> BTreeMap<String, Option<Arc<tokio::sync::Semaphore>>> {
    let semaphore = |n: usize| (n > 0).then(|| Arc::new(tokio::sync::Semaphore::new(n)));
    env.starts.cluster = semaphore(opts.budget.starting);
    env.pacer = super::budget::Pacer::new(opts.budget.requests_per_second);
    if fleet.is_empty() {
        let ready = fingerprint.nodes.iter().filter(|n| n.ready).count().max(1);
        env.starts.node = semaphore(opts.starts_per_node * ready);
    }
    fleet
        .iter()
        .map(|n| (n.name.clone(), semaphore(opts.starts_per_node)))
        .collect()
}

/// Whether the run exits 1. Undecided is not "all passed": exit 1, like a failure (never
/// greener than the truth). Interrupted and not-run cases did not pass either: a replay or
/// re-judging of an interrupted run (not itself interrupted, so no 130) must not exit 0. Nor
/// does a flaky case: seen failing, it is not certified. Nor a leftover.
fn any_failed(summary: &RunSummary) -> bool {
    summary.failed + summary.flaky + summary.undecided + summary.errors + summary.interrupted_cases + summary.not_run
        > 0
        || !summary.leftovers.is_empty()
}

/// What every case's trial is made from.
struct TrialMaker<'a> {
    opts: &'a RunOptions,
    args: &'a libtest_mimic::Arguments,
    /// Copies of each case: the nodes with `--each-node`, else 1.
    per_case: usize,
    each_node: bool,
    server: Option<(u32, u32)>,
    replay_plan: Arc<BTreeMap<String, Vec<usize>>>,
    source: Arc<Source>,
    start_slots: BTreeMap<String, Option<Arc<tokio::sync::Semaphore>>>,
    env: CaseEnv,
    spill_dir: Arc<PathBuf>,
    handle: tokio::runtime::Handle,
    interrupted: Arc<std::sync::atomic::AtomicBool>,
    slots: Slots,
}

/// The trials of a run, and what the run needs to know of them.
struct Trials {
    trials: Vec<libtest_mimic::Trial>,
    /// Each trial's node index and its place in that node's list (for the console's order).
    trial_at: Vec<(usize, Option<usize>)>,
    /// Per node (one entry without --each-node): the expected durations of the cases that run,
    /// in the order the lane runs them, and how many of them are only known by their timeout.
    expected: Vec<(Vec<Duration>, usize)>,
    /// Selected cases that libtest-mimic will not run (ignored), and those it will.
    ignored_reports: Vec<(usize, CaseReport)>,
    running: Vec<(usize, CaseReport)>,
}

impl TrialMaker<'_> {
    /// One trial per selected case copy; in a lane (`--each-node`) a case that runs is queued on
    /// its node's lane and its trial only waits for it.
    fn make(&self, work: Vec<Work>, lanes: &mut Lanes) -> Trials {
        let mut t = Trials {
            trials: vec![],
            trial_at: vec![],
            expected: vec![(vec![], 0); self.per_case],
            ignored_reports: vec![],
            running: vec![],
        };
        for (slot, (suite, case, node)) in work.into_iter().enumerate() {
            let node_name = node.as_ref().map(|n| n.name.clone());
            let (ignored, reason) = ignore_reason(&case, node_name.as_deref(), self.server, &self.source);
            let name = crate::results::case_id(&case.suite, case.name(), node_name.as_deref());
            let probe = libtest_mimic::Trial::test(name.clone(), || Ok(())).with_ignored_flag(ignored);
            // podlife filters (libtest-mimic is given no filter): a filter naming the case selects
            // each of its node copies, which libtest's own `--exact` would not.
            if !self.opts.selection().selects(&case.full_name(), &name) {
                continue;
            }
            let runs = !self.args.is_ignored(&probe);
            let node_index = if !self.each_node { 0 } else { slot % self.per_case };
            let mut place = None;
            if runs {
                let e = &mut t.expected[node_index];
                let full = case.full_name();
                place = Some(e.0.len());
                e.0.push(self.opts.durations.expected(&full, case.timeout) * self.opts.repeat.max(1));
                e.1 += usize::from(self.opts.durations.of(&full).is_none());
            }
            let slots = self.slots.clone();
            let mut env = self.env.clone();
            if let Some(n) = &node {
                env.target = self.opts.target.on_node(n);
                env.node = Some(n.name.clone());
                env.starts.node = self.start_slots.get(&n.name).cloned().flatten();
            }
            let base = base_report(&case, suite.to_string(), node_name.clone(), reason.clone());
            if !runs {
                // libtest-mimic prints "ignored" without a reason; say why once, up front.
                if !self.opts.quiet {
                    eprintln!(
                        "ignored {}: {}",
                        name,
                        crate::util::printable(reason.as_deref().unwrap_or("ignored"))
                    );
                }
                t.ignored_reports.push((slot, base.clone()));
            } else if runs {
                t.running.push((slot, base.clone()));
            }
            let plan = TrialPlan {
                #[cfg(feature = "test-hooks")]
                inject_panic: self.opts.panic_in_case.as_deref() == Some(name.as_str())
                    || self.opts.panic_in_case.as_deref() == Some(case.full_name().as_str()),
                recorded: self.replay_plan.get(&name).cloned(),
                case,
                source: self.source.clone(),
                env,
                handle: self.handle.clone(),
                retries: self.opts.retries,
                undecided_retries: self.opts.undecided_retries,
                quiet: self.opts.quiet,
                repeat: self.opts.repeat,
                interrupted: self.interrupted.clone(),
            };
            let lane_base = base.clone();
            let job = case_job(plan, base, self.spill_dir.clone());
            // In a lane the case runs as soon as its node has a free slot; the trial only waits.
            let job: Box<dyn FnOnce() -> CaseReport + Send> = match &node_name {
                Some(n) if runs => Box::new(lanes.push(n, job, lane_base)),
                _ => Box::new(job),
            };
            t.trials
                .push(libtest_trial(name, job, slots, slot).with_ignored_flag(ignored));
            t.trial_at.push((node_index, place));
        }
        t
    }
}

/// Live only: the run-wide API probe, once a second for the whole run (see `health`); its task
/// is stopped at the end.
fn start_health(
    env: &mut CaseEnv,
    source: &Source,
    rt: &tokio::runtime::Runtime,
    fresh: Option<crate::cluster::FreshClient>,
    fingerprint: &Fingerprint,
) -> Option<tokio::task::JoinHandle<()>> {
    let Source::Live(client) = source else { return None };
    let h = Arc::new(health::ApiHealth::new(fresh));
    let nodes = fingerprint.nodes.iter().map(|n| n.name.clone()).collect();
    let task = rt.spawn(h.clone().probe(client.clone(), nodes));
    env.api_health = Some(h);
    Some(task)
}

/// Writes a judged case's timeline where the reports publish it (`timelines/` of the run's report
/// folder) and drops it from memory, so that a run holds the timelines of its cases in flight,
/// not of all its cases (a fleet run has thousands). The reports read it back one at a time
/// (`CaseReport::timeline_in`). A timeline that cannot be written stays in memory, and the
/// reports write it with the rest.
fn spill_timeline(dir: &std::path::Path, report: &mut CaseReport) {
    let Some(tl) = &report.timeline else {
        return;
    };
    let rel = crate::results::timeline_file(&report.suite, &report.case, report.target_node.as_deref());
    let path = dir.join(&rel);
    let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
        let f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        serde_json::to_writer_pretty(f, tl).map_err(std::io::Error::other)
    });
    if written.is_ok() {
        report.timeline = None;
        report.timeline_file = Some(rel);
    }
}

/// Fingerprint groups among the nodes the cases run on (with `--each-node`), else among the
/// cluster's Ready nodes.
fn fleet_groups(fleet: &[NodeInfo], fingerprint: &Fingerprint) -> usize {
    let nodes: Vec<&NodeInfo> = if fleet.is_empty() {
        fingerprint.nodes.iter().filter(|n| n.ready).collect()
    } else {
        fleet.iter().collect()
    };
    nodes.iter().map(|n| n.group_key()).collect::<BTreeSet<_>>().len()
}

/// `--each-node`: the trials in the order their results are expected (libtest-mimic's few
/// waiting threads print them in this order): by the node's batch, then by when the case ends
/// in its node's schedule. In case order, a case's copy on a node of the last batch would hold
/// back the printing of everything after it until the end of the run.
fn console_order(
    trials: Vec<libtest_mimic::Trial>,
    at: &[(usize, Option<usize>)],
    expected: &[(Vec<Duration>, usize)],
    per_node: usize,
    nodes_at_once: usize,
) -> Vec<libtest_mimic::Trial> {
    let ends: Vec<Vec<Duration>> = expected
        .iter()
        .map(|(d, _)| crate::results::plan::end_offsets(d, per_node))
        .collect();
    let mut keyed: Vec<((usize, Duration), libtest_mimic::Trial)> = trials
        .into_iter()
        .zip(at)
        .map(|(t, &(node, place))| {
            let end = place.and_then(|p| ends[node].get(p).copied()).unwrap_or_default();
            ((node / nodes_at_once.max(1), end), t)
        })
        .collect();
    // Stable: equal keys keep the case order.
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, t)| t).collect()
}

/// The environment every case of the run shares (each case's copy then names its node).
fn case_env(
    opts: &RunOptions,
    fingerprint: &Fingerprint,
    run_id: &str,
    cancel: tokio::sync::watch::Receiver<bool>,
    live_namespaces: Arc<Mutex<BTreeMap<String, String>>>,
) -> CaseEnv {
    CaseEnv {
        target: opts.target.through_scheduler(&fingerprint.nodes),
        run_id: run_id.to_string(),
        images: opts.images.clone(),
        cleanup_timeout: opts.cleanup_timeout,
        keep_on_failure: opts.keep_on_failure,
        cancel,
        live_namespaces,
        used_names: Arc::default(),
        settle: opts.settle,
        progress_every: Duration::from_secs(30),
        request_timeout: opts.request_timeout,
        api_outage_budget: opts.api_outage_budget,
        record: None,
        node: None,
        api_health: None,
        starts: Default::default(),
        pacer: None,
    }
}

/// Starts the run's recordings (`--record`): the run's files and its suites as run. `None`
/// (with a warning) when they cannot be written: the run goes on unrecorded.
fn start_recording(
    opts: &RunOptions,
    run_id: &str,
    fingerprint: &Fingerprint,
    cases: &[(Suite, LoadedCase)],
) -> Option<PathBuf> {
    let run_dir = opts.reports_dir.join(run_id);
    let root = run_dir.join("recordings");
    let record = match record::write_run_files(&root, run_id, opts.retries, opts.repeat.max(1), fingerprint) {
        Ok(()) => Some(root),
        Err(e) => {
            eprintln!("warning: {}: not recording: {e}", root.display());
            None
        }
    };
    let mut suites: Vec<&Suite> = cases.iter().map(|(s, _)| s).collect();
    suites.sort_by(|a, b| a.path.cmp(&b.path));
    suites.dedup_by(|a, b| a.path == b.path);
    let suites: Vec<Suite> = suites.into_iter().cloned().collect();
    for w in record::copy_suites(&run_dir, &suites) {
        eprintln!("warning: {w}");
    }
    record
}

/// The first interrupt cancels the cases (they clean up, the reports are written), the second
/// exits at once. Returns the flag the cases check and what interrupted the run.
fn on_interrupt(
    rt: &tokio::runtime::Runtime,
    mut interrupts: Interrupts,
    cancel_tx: tokio::sync::watch::Sender<bool>,
    run_id: &str,
) -> (Arc<std::sync::atomic::AtomicBool>, Arc<Mutex<Option<Interrupt>>>) {
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let interrupted_by: Arc<Mutex<Option<Interrupt>>> = Arc::default();
    {
        let flag = interrupted.clone();
        let by = interrupted_by.clone();
        let run_id = run_id.to_string();
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
    (interrupted, interrupted_by)
}

/// How many cases run at once (per node with `--each-node`): `--test-threads`, else all, at
/// most `CASES_PER_NODE` per node.
fn thread_count(opts: &RunOptions, fleet: &[NodeInfo], fingerprint: &Fingerprint, cases: usize) -> usize {
    match opts.test_threads {
        0 if !fleet.is_empty() => {
            let n = default_threads(cases, 1);
            if !opts.quiet && !opts.list {
                eprintln!(
                    "running every case on each of {} nodes, up to {n} cases at a time per node (default: all, at most {CASES_PER_NODE}; --test-threads N to change)",
                    fleet.len()
                );
            }
            n
        }
        0 => {
            let ready = fingerprint.nodes.iter().filter(|n| n.ready).count();
            let n = default_threads(cases, ready);
            if !opts.quiet && !opts.list {
                eprintln!(
                    "running up to {n} cases at a time (default: all, at most {CASES_PER_NODE} per Ready node; --test-threads N to change)"
                );
            }
            n
        }
        n => n,
    }
}

/// Replaying a run folder: how many attempts each repetition of each case made live.
fn replay_plan(source: &Source) -> Arc<BTreeMap<String, Vec<usize>>> {
    Arc::new(match source {
        Source::Replay(dir, _) if is_run_folder(dir) => {
            crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
                .ok()
                .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok())
                .map(|s| s.cases.into_iter().map(|c| (c.full_name(), c.repetitions)).collect())
                .unwrap_or_default()
        }
        _ => BTreeMap::new(),
    })
}

/// Every selected case's report, each exactly once: the ignored ones, and a slot filled by
/// each trial that ran (an empty slot is a harness error, never a silently dropped case).
fn collect_reports(
    slots: &Mutex<Vec<Option<CaseReport>>>,
    ignored: Vec<(usize, CaseReport)>,
    running: Vec<(usize, CaseReport)>,
    console_failed: bool,
) -> Vec<CaseReport> {
    let mut filled = std::mem::take(&mut *slots.lock().expect("reports"));
    let mut cases: Vec<CaseReport> = ignored.into_iter().map(|(_, r)| r).collect();
    for (slot, base) in running {
        cases.push(filled[slot].take().unwrap_or_else(|| {
            // Every trial that runs fills its slot, even on a panic; never drop a case silently.
            let mut r = base;
            r.status = CaseStatus::Error;
            let why = if console_failed {
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
    // Where each case's timeline is published: part of the results, so the reporters only read.
    for c in &mut cases {
        if c.timeline.is_some() && c.timeline_file.is_none() {
            c.timeline_file = Some(crate::results::timeline_file(
                &c.suite,
                &c.case,
                c.target_node.as_deref(),
            ));
        }
    }
    cases
}

/// Everything one case's trial needs, moved into the job that runs it.
struct TrialPlan {
    case: Arc<LoadedCase>,
    source: std::sync::Arc<Source>,
    env: CaseEnv,
    handle: tokio::runtime::Handle,
    retries: u32,
    undecided_retries: u32,
    quiet: bool,
    repeat: u32,
    interrupted: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The `panic_in_case` test hook names this case.
    #[cfg(feature = "test-hooks")]
    inject_panic: bool,
    /// Replaying a run folder: the attempts per repetition the live run made.
    recorded: Option<Vec<usize>>,
}

impl TrialPlan {
    /// Runs every repetition and retry of the case and sums them up in its report.
    fn run(&self, mut report: CaseReport) -> CaseReport {
        let (case, source, env) = (&self.case, &*self.source, &self.env);
        let (retries, repeat, interrupted) = (self.retries, self.repeat, &*self.interrupted);
        let recorded = self.recorded.as_deref();
        if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            report.status = CaseStatus::NotRun;
            report.ignore_reason = Some("not run: the run was interrupted".into());
            return report;
        }
        // Replaying recordings without a run's plan: one recording per case, nothing to retry.
        let undecided_retries = match (source, recorded) {
            (Source::Replay(..), None) => 0,
            _ => self.undecided_retries as usize,
        };
        let mut attempt_no = 0;
        'reps: for rep in 0..repeat.max(1) as usize {
            let mut n = 0;
            // Failed attempts retried (`--retries`) and undecided ones (`--undecided-retries`),
            // each against its own budget.
            let (mut failed_tries, mut undecided_tries) = (0, 0);
            for try_ in 0.. {
                // Replaying a run folder: the attempts the live run made, never more (a retry it did
                // not make has no recording, e.g. for a case re-judged into failing).
                let k = match recorded {
                    Some(reps) => match reps.get(rep) {
                        Some(&tries) if try_ >= tries => break,
                        _ => reps[..rep.min(reps.len())].iter().sum::<usize>() + try_ + 1,
                    },
                    None => attempt_no + 1,
                };
                let attempt = self.attempt(attempt_no, k);
                attempt_no += 1;
                let status = attempt.status;
                report.attempts.push(attempt);
                n += 1;
                if status == AttemptStatus::Interrupted || interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                    report.repetitions.push(n);
                    break 'reps;
                }
                let again = match status {
                    AttemptStatus::Failed | AttemptStatus::Error => {
                        failed_tries += 1;
                        failed_tries <= retries as usize
                    }
                    AttemptStatus::Undecided => {
                        undecided_tries += 1;
                        undecided_tries <= undecided_retries
                    }
                    _ => false,
                };
                if !again {
                    break;
                }
                if status == AttemptStatus::Undecided && !self.quiet {
                    eprintln!(
                        "    {}: attempt {} undecided ({}); running it again in a fresh namespace",
                        crate::results::case_id(&case.suite, case.name(), env.node.as_deref()),
                        try_ + 1,
                        report.attempts.last().map(undecided_cause).unwrap_or_default()
                    );
                }
            }
            beyond_in_every_attempt(&mut report.attempts[attempt_no - n..attempt_no]);
            report.repetitions.push(n);
        }
        sum_up(report)
    }

    /// Runs attempt number `attempt_no` (from 0; `k`, from 1, is the recording a replay reads):
    /// a panic in it is the attempt's harness error, and ends a live attempt's recording.
    fn attempt(&self, attempt_no: usize, k: usize) -> Attempt {
        let (case, source, env, handle) = (&self.case, &*self.source, &self.env, &self.handle);
        let started = Timestamp::now();
        let t0 = std::time::Instant::now();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            #[cfg(feature = "test-hooks")]
            if self.inject_panic {
                panic!("injected by the panic_in_case test hook");
            }
            match source {
                Source::Replay(dir, names) => replay_attempt(dir, names, case, env.node.as_deref(), k),
                // Boxed: the case's state machine lives on the heap for as long as it
                // runs, not on this thread's stack, whose touched pages would stay
                // resident for the thread's life (hundreds of threads in a fleet).
                Source::Live(client) => {
                    handle.block_on(Box::pin(case::live_case(client.clone(), case, env, attempt_no)))
                }
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
        })
    }
}

/// Undecided in every attempt of a repetition, each past the same bound on the same side: the
/// node is outside it, whatever the streams' delays (see `judge::beyond_in_every_attempt`), and
/// the last attempt fails.
fn beyond_in_every_attempt(rep_attempts: &mut [Attempt]) {
    if rep_attempts.len() > 1 && rep_attempts.iter().all(|a| a.status == AttemptStatus::Undecided) {
        let verdicts: Vec<&[crate::judge::Verdict]> = rep_attempts.iter().map(|a| a.verdicts.as_slice()).collect();
        if let Some((pos, v)) = crate::judge::beyond_in_every_attempt(&verdicts)
            && let Some(last) = rep_attempts.last_mut()
        {
            last.verdicts[pos] = v;
            last.status = AttemptStatus::Failed;
        }
    }
}

/// The case's status, pass rate and measurements from its attempts, with the last attempt's
/// timeline kept for the reports (the others are judged and recorded, and dropped).
fn sum_up(mut report: CaseReport) -> CaseReport {
    let outcomes = stats::repetition_outcomes(&report.attempts, &report.repetitions);
    // A failure of the node in any attempt (retries included) makes a later pass flaky; a
    // harness error or an undecided attempt does not.
    let node_failed = report.attempts.iter().any(|a| a.status == AttemptStatus::Failed);
    report.status = stats::case_status(&outcomes, node_failed);
    if report.status == CaseStatus::Ignored {
        // A recording that does not answer the case (it changed since): the reason is why.
        report.ignore_reason = report.attempts.last().and_then(|a| a.error.clone());
    }
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
    // Earlier attempts are judged and recorded: their timelines are no longer needed.
    for a in &mut report.attempts {
        a.timeline = None;
    }
    report.node = report.timeline.as_ref().and_then(|t| t.pod.node.clone());
    report
}

/// Why an attempt was undecided, in a few words: its first undecided verdict's cause.
fn undecided_cause(a: &Attempt) -> String {
    let v = a
        .verdicts
        .iter()
        .find(|v| v.outcome == crate::judge::Outcome::Undecided);
    let text = v.map_or("no verdict", |v| {
        v.evidence
            .rsplit_once("undecided: ")
            .map_or(v.evidence.as_str(), |(_, why)| why)
    });
    let mut short: String = text.chars().take(120).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    crate::util::printable(&short)
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
    if let Source::Replay(dir, names) = source {
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
                        names.name(dir)
                    )),
                );
            }
        } else if !dir.join(case.name()).is_dir() {
            return (
                true,
                Some(format!("no recording `{}` in {}", case.name(), names.name(dir))),
            );
        }
    }
    (false, None)
}
