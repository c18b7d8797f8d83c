//! What `podlife run` was asked to do (`RunOptions`) and the default concurrency derived from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{ConnectOptions, Target};

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
    /// Run an attempt that ended undecided again, up to this many times, in a fresh namespace
    /// (`--undecided-retries`): an undecided verdict is evidence lost, and a new attempt may
    /// have it. Not a flake: only a failure of the node makes a later pass flaky.
    pub undecided_retries: u32,
    /// Pods starting at once on one node (`--starts-per-node`; 0: unbounded). A case holds a
    /// start slot from its pod's creation until the pod runs a container, ends, or
    /// [`START_HOLD`] passes: podlife's own start bursts must not load the node it measures.
    pub starts_per_node: usize,
    /// What podlife may ask of the API server at once (`--max-watches`,
    /// `--max-requests-per-second`, `--max-starting`); see `budget::Budget`.
    pub budget: crate::run::budget::Budget,
    /// Typical case durations (`durations.tsv` beside the suites): the longest start first.
    pub durations: crate::suite::durations::Durations,
    pub keep_on_failure: bool,
    pub replay: Option<PathBuf>,
    /// How the replayed files are named in what the run prints and stores (a bundle's members
    /// as `<bundle>:<member>`: the folder it was unpacked into is gone when podlife ends).
    pub names: crate::files::Names,
    pub reports_dir: PathBuf,
    pub junit: Option<PathBuf>,
    pub images: BTreeMap<String, String>,
    pub connect: ConnectOptions,
    /// Bounds the whole cleanup of a case namespace (DELETE included), and the end-of-run sweep.
    pub cleanup_timeout: Duration,
    /// Bound on each ordinary API request.
    pub request_timeout: Duration,
    /// How long the API may be away before a case gives up on it (`--api-outage-budget`).
    pub api_outage_budget: Duration,
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
    /// Test hook: the case of this full name (`suite::case`) panics in each attempt, so tests can
    /// show a crashing case is reported as an error everywhere.
    #[cfg(feature = "test-hooks")]
    pub panic_in_case: Option<String>,
    /// Record every live attempt's raw inputs under `reports/<runid>/recordings/` (see `record`).
    pub record: bool,
}

/// `podlife run`'s defaults, written once: clap shows and parses these strings (`--help` says
/// `[default: 60s]`), and `RunOptions::default()` parses the same ones.
pub mod defaults {
    pub(crate) const REPORTS: &str = "reports";
    pub(crate) const CLEANUP_TIMEOUT: &str = "60s";
    pub(crate) const REQUEST_TIMEOUT: &str = "30s";
    pub(crate) const API_OUTAGE_BUDGET: &str = "2m";
    pub(crate) const SETTLE: &str = "3s";
    pub(crate) const RETRIES: u32 = 0;
    pub(crate) const UNDECIDED_RETRIES: u32 = 2;
    pub const STARTS_PER_NODE: usize = 3;
    /// See `budget::Budget`'s default for why these values.
    use crate::results::plan::Budget;
    pub(crate) const MAX_WATCHES: usize = Budget::DEFAULT.watches;
    pub(crate) const MAX_REQUESTS_PER_SECOND: u32 = Budget::DEFAULT.requests_per_second;
    pub(crate) const MAX_STARTING: usize = Budget::DEFAULT.starting;
    pub(crate) const REPEAT: u32 = 1;
}

impl Default for RunOptions {
    /// `podlife run` without flags (live, recorded, every case, the default concurrency).
    fn default() -> Self {
        let duration = |s: &str| humantime::parse_duration(s).expect("the default durations parse");
        RunOptions {
            filter: None,
            exact: false,
            skip: vec![],
            test_threads: 0,
            list: false,
            ignored: false,
            include_ignored: false,
            retries: defaults::RETRIES,
            undecided_retries: defaults::UNDECIDED_RETRIES,
            starts_per_node: defaults::STARTS_PER_NODE,
            budget: Default::default(),
            durations: Default::default(),
            keep_on_failure: false,
            replay: None,
            names: Default::default(),
            reports_dir: PathBuf::from(defaults::REPORTS),
            junit: None,
            images: BTreeMap::new(),
            connect: ConnectOptions::default(),
            cleanup_timeout: duration(defaults::CLEANUP_TIMEOUT),
            request_timeout: duration(defaults::REQUEST_TIMEOUT),
            api_outage_budget: duration(defaults::API_OUTAGE_BUDGET),
            settle: duration(defaults::SETTLE),
            quiet: false,
            logfile: None,
            cancel: None,
            repeat: defaults::REPEAT,
            certify: false,
            upstream_applicable: vec![],
            target: Target::default(),
            #[cfg(feature = "test-hooks")]
            panic_in_case: None,
            record: true,
        }
    }
}

impl RunOptions {
    /// The cases the filter (`FILTER`, `--exact`, `--skip`) selects.
    pub(crate) fn selection(&self) -> crate::select::Filter<'_> {
        crate::select::Filter {
            filter: self.filter.as_deref(),
            exact: self.exact,
            skip: &self.skip,
        }
    }
}

/// The longest a case holds its start slot (see `RunOptions::starts_per_node`): a pod left
/// Pending by design (an image that never pulls, a missing ConfigMap) must not hold back the
/// others. Starting a container takes the kubelet a sync and the runtime a create and a start:
/// about a second on a calm node.
pub const START_HOLD: Duration = Duration::from_secs(10);

/// Cases in flight per targeted Ready node when `--test-threads` is not given. Measured on the
/// 2-core reference node: 16 concurrent cases ran the 86 built-in cases in 1.05× the
/// slowest case with no load-induced failure, 4 took 2.84×. Beyond "the others fit beside the
/// slowest case" more concurrency buys no wall time, only load on the node.
pub const CASES_PER_NODE: usize = 16;

/// The default concurrency: every case at once, at most [`CASES_PER_NODE`] per Ready node the
/// cases can land on (at least one node is assumed: replays have none).
pub fn default_threads(cases: usize, ready_nodes: usize) -> usize {
    cases.clamp(1, CASES_PER_NODE * ready_nodes.max(1))
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
