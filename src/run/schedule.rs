//! Scheduling the cases: libtest-mimic's arguments (it prints and, without `--each-node`, bounds
//! concurrency) and the per-node lanes of an `--each-node` run.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use jiff::Timestamp;

use super::RunOptions;
use super::trial::panicked;
use crate::results::{Attempt, CaseReport, CaseStatus};
use crate::suite::Suite;

/// libtest-mimic threads that wait for the results of `--each-node` lanes: they only print, so
/// a few suffice (a result that waits behind a slower one is printed a little later, not run
/// later).
pub(super) const LIBTEST_WAITERS: usize = 16;

type Job = Box<dyn FnOnce() + Send>;

/// `--each-node` scheduling: one lane per node, each running its cases in order with at most
/// `per_node` at once. A slow or hung node fills only its own lane, so it never holds back the
/// cases of another node (a shared pool of threads would fill up with cases waiting for it).
#[derive(Default)]
pub(super) struct Lanes(BTreeMap<String, Vec<Job>>);

impl Lanes {
    /// Queues `job` on `node`'s lane; returns what the trial calls to wait for its report. A job
    /// that never reports (its lane died) is an error of the case, never a silent pass.
    pub(super) fn push(
        &mut self,
        node: &str,
        job: impl FnOnce() -> CaseReport + Send + 'static,
        base: CaseReport,
    ) -> impl FnOnce() -> CaseReport + Send + 'static {
        // A one-slot channel: its buffer is one report. An unbounded channel allocates a block
        // of 31 slots on the first send, and a report may wait in it until its turn in the
        // console's order (until the end of its batch): thousands of them in a fleet.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.0.entry(node.to_string()).or_default().push(Box::new(move || {
            let _ = tx.send(job());
        }));
        move || {
            rx.recv().unwrap_or_else(|_| {
                let mut r = base;
                r.status = CaseStatus::Error;
                r.attempts = vec![Attempt {
                    error: Some("podlife recorded no result for this case (a bug in podlife)".into()),
                    ..panicked(&"no result", Timestamp::now(), std::time::Instant::now())
                }];
                r.repetitions = vec![1];
                r
            })
        }
    }

    /// Starts every lane: a task per node hands its cases, in order, to blocking threads as
    /// slots free up (the cases block on their own runtime calls, as libtest threads do). At
    /// most `nodes_at_once` lanes run; the next (in node order) starts when one has finished all
    /// its cases, so a fleet beyond the API budget runs in batches of whole nodes.
    pub(super) fn start(self, rt: &tokio::runtime::Runtime, per_node: usize, nodes_at_once: usize) {
        let per_node = per_node.max(1);
        let places = Arc::new(tokio::sync::Semaphore::new(nodes_at_once.max(1)));
        let lanes = self.0;
        // One task hands out the places, so the lanes start in node order.
        rt.spawn(async move {
            for (_, jobs) in lanes {
                let Ok(place) = places.clone().acquire_owned().await else {
                    return;
                };
                tokio::spawn(lane(jobs, per_node, place));
            }
        });
    }
}

/// One node's lane: its cases in order, at most `per_node` at once; its place in the batch is
/// given back once the last case is done.
async fn lane(jobs: Vec<Job>, per_node: usize, place: tokio::sync::OwnedSemaphorePermit) {
    let slots = Arc::new(tokio::sync::Semaphore::new(per_node));
    for job in jobs {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        tokio::task::spawn_blocking(move || {
            job();
            drop(permit);
        });
    }
    // Every slot back: the node's last case is done, its place goes to the next.
    let _all = slots.acquire_many(per_node as u32).await;
    drop(place);
}

/// `run --list`: the selected cases in libtest's `--list` format.
pub fn list(opts: &RunOptions, suites: &[Suite]) -> ExitCode {
    let trials = suites
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| libtest_mimic::Trial::test(c.full_name(), || Ok(())))
        .collect();
    // A closed stdout (`run --list | head -1`) panics inside libtest-mimic's printer: quietly done.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        libtest_mimic::run(&libtest_args(opts, 1), trials)
    }));
    ExitCode::SUCCESS
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

/// libtest-mimic's arguments for running trials podlife has already filtered (see `select::Filter::selects`).
pub(super) fn libtest_run_args(opts: &RunOptions, threads: usize) -> libtest_mimic::Arguments {
    libtest_mimic::Arguments {
        filter: None,
        exact: false,
        skip: vec![],
        ..libtest_args(opts, threads)
    }
}
