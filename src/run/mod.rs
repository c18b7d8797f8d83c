//! The runner (`run`): plan → preflight → execute cases concurrently (libtest-mimic threads)
//! → judge → cleanup (always, Ctrl-C included) → reports.

pub mod budget;
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
mod trial;

pub use options::{CASES_PER_NODE, RunOptions, START_HOLD, default_threads, defaults};
use replay::{cases_of_run, prepare_replay, replayable};
pub use replay::{is_run_folder, replay_fingerprint};
pub use schedule::list;
pub use trial::{Execution, RunOutcome, Source, execute};

use std::process::ExitCode;
use std::time::Duration;

use jiff::Timestamp;

use crate::cluster::Cluster;
use crate::results::stats;
use crate::suite::{LoadedCase, Suite};
use interrupt::{Interrupt, Interrupts};

/// A short, unique, DNS-safe run id.
pub(crate) fn new_run_id() -> String {
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
                crate::util::print_error(format!("--replay {}: no such directory", opts.names.name(dir)));
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
                    opts.names.name(dir),
                    opts.names.name(dir),
                    selected[0].1.name()
                ));
                return Err(ExitCode::from(2));
            }
            let fp = replay_fingerprint(dir, &opts.names);
            interrupt::phase("replay-checked");
            let interrupts = {
                let _g = rt.enter();
                Interrupts::listen(opts.cancel.clone())
            };
            execute(Execution {
                opts: &opts,
                cases,
                source: Source::Replay(dir.clone(), opts.names.clone()),
                fingerprint: fp,
                run_id,
                started,
                rt: &rt,
                interrupts,
                fresh: None,
            })
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
/// first signal exits at once with its code, removing the half-written bundle and an unpacked
/// one (no destructor runs on that exit).
fn exit_on_signal_while_publishing(outcome: &RunOutcome) {
    let report_dir = &outcome.report_dir;
    let name = report_dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    interrupt::on_exit_at_once(
        Some(report_dir.with_file_name(format!(".{name}.tar.gz.partial"))),
        format!(
            "while writing the reports of {}: exiting; they may be incomplete",
            report_dir.display()
        ),
    );
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
            (c.objects.iter().chain(&c.second_namespace))
                .map(|o| ("patch", format!("{}s", o.kind.to_lowercase()), None)),
        );
        for (i, s) in c.spec.steps.iter().enumerate() {
            // `exec` steps open pods/exec (a websocket upgrade the API server authorizes as
            // `create`); `object` steps patch or delete the case's ConfigMaps and Secrets.
            if let crate::suite::Step::Exec(_) = &s.value {
                extra.push(("create", "pods".into(), Some("exec")));
            }
            // `update` steps read the pod and replace it.
            if let crate::suite::Step::Update(_) = &s.value {
                extra.push(("get", "pods".into(), None));
                extra.push(("update", "pods".into(), None));
            }
            if let crate::suite::Step::FetchLog(_) = &s.value {
                extra.push(("get", "pods".into(), Some("log")));
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
            if let crate::suite::Step::Resize(r) = &s.value {
                let sub = Some("resize");
                match r.via {
                    crate::suite::ResizeVia::Patch => extra.push(("patch", "pods".into(), sub)),
                    crate::suite::ResizeVia::Update => {
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
    let mut fp = fp;
    if let Some(k) = opts.target.per_group {
        crate::results::fleet::sample_groups(&mut fp, k, &run_id);
        if !fp.identical.is_empty() {
            let names: Vec<&str> = fp.identical.iter().map(|n| n.name.as_str()).collect();
            fp.node_target = Some(format!(
                "{}; {} per fingerprint group run, taken as identical to them: {}",
                fp.node_target.as_deref().unwrap_or("each group"),
                k,
                names.join(", ")
            ));
        }
    }
    Ok(execute(Execution {
        opts,
        cases,
        source: Source::Live(cluster.client),
        fingerprint: fp,
        run_id,
        started,
        rt,
        interrupts,
        fresh: cluster.fresh,
    }))
}
