//! The command line as clap parses it: every command's flags, their defaults and help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::run::defaults;

#[derive(Parser, Debug)]
#[command(
    name = "podlife",
    version,
    about = "Certify how a Kubernetes node runs pods through their lifecycle"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check suites offline: YAML, fields, durations, regexes, manifests, containers, marks.
    Validate {
        /// Suite files or directories (default: suites/).
        paths: Vec<PathBuf>,
    },
    /// List cases as `suite::case: test` (libtest --list format).
    List(ListArgs),
    /// Print the JSON Schema of the suite format.
    Schema,
    /// Judge one case against a recording folder or a timeline JSON written by `run`.
    Judge(JudgeArgs),
    /// Run cases against the current cluster (or recordings with --replay) and write reports.
    Run(Box<RunArgs>),
    /// List every image the selected cases need (after --image overrides), to pre-load them.
    Images(ImagesArgs),
    /// Compare two runs (report folders): verdict regressions, timing changes, fingerprints.
    Diff(DiffArgs),
    /// List (and with --yes delete) namespaces that earlier runs left behind.
    Clean(CleanArgs),
    /// Re-judge a finished run (folder or bundle) with the current suites, without a cluster.
    Rejudge(RejudgeArgs),
    /// Print the timeline built from a recording folder or a timeline JSON (JSON).
    Timeline {
        /// A recording folder or a timeline JSON written by `run`.
        source: PathBuf,
        /// Print the pod's rows as `kubectl get pods -w` would (READY, STATUS, RESTARTS) with
        /// exact receive times, instead of JSON.
        #[arg(long)]
        watch: bool,
    },
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Only cases whose `suite::case` name contains this (libtest filter).
    pub filter: Option<String>,
    /// Match the filter exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip cases whose name contains this (repeatable).
    #[arg(long)]
    pub skip: Vec<String>,
    /// Cases run at the same time (default: all, at most 16 per Ready node); with --each-node,
    /// cases run at the same time on each node.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub test_threads: Option<u32>,
    /// List the cases instead of running them.
    #[arg(long)]
    pub list: bool,
    /// Run only ignored cases (e.g. those needing a newer server).
    #[arg(long)]
    pub ignored: bool,
    /// Run ignored cases too.
    #[arg(long)]
    pub include_ignored: bool,
    /// Rerun a failed case up to N times; a pass after a failure is reported flaky.
    #[arg(long, default_value_t = defaults::RETRIES)]
    pub retries: u32,
    /// Run an attempt that ended undecided (evidence lost: a watch down, an API outage) again,
    /// up to N times, each in a fresh namespace; a case past its bound in the same direction
    /// in every attempt fails.
    #[arg(long, default_value_t = defaults::UNDECIDED_RETRIES)]
    pub undecided_retries: u32,
    /// Pods starting at once on each node (0: unbounded): podlife paces its own pod starts so
    /// that it measures a node doing what a normal node does, not one busy with podlife.
    #[arg(long, default_value_t = defaults::STARTS_PER_NODE)]
    pub starts_per_node: usize,
    /// API budget: watches open at once over the whole run (two per running case). A fleet
    /// whose cases need more runs in batches of nodes, each node with all its cases at once.
    #[arg(long, default_value_t = defaults::MAX_WATCHES, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(2..), |v| v as usize))]
    pub max_watches: usize,
    /// API budget: requests per second of case starts (each sends 8: namespace, its readiness,
    /// two watches with their lists, the apply); 0: unbounded. A case's own steps are never
    /// delayed.
    #[arg(long, default_value_t = defaults::MAX_REQUESTS_PER_SECOND)]
    pub max_requests_per_second: u32,
    /// API budget: pods starting at once across the cluster (0: unbounded), beside
    /// --starts-per-node on each node.
    #[arg(long, default_value_t = defaults::MAX_STARTING)]
    pub max_starting: usize,
    /// Keep the namespaces of failed cases for debugging (`never` or `on-failure`).
    #[arg(long, value_enum, default_value_t = KeepNamespaces::Never)]
    pub keep_namespaces: KeepNamespaces,
    /// Replay instead of a live cluster: a run folder (reports/<runid>) or its bundle
    /// (reports/<runid>.tar.gz) reproduces that run; a folder of recordings replays DIR/<case>/.
    #[arg(long, value_name = "DIR|BUNDLE")]
    pub replay: Option<PathBuf>,
    /// Record every case's raw inputs under reports/<runid>/recordings/ and write the bundle
    /// reports/<runid>.tar.gz (the default).
    #[arg(long, overrides_with = "no_record")]
    pub record: bool,
    /// Do not record or bundle (the last of --record / --no-record wins).
    #[arg(long, overrides_with = "record")]
    pub no_record: bool,
    /// Where reports go: <DIR>/<runid>/.
    #[arg(long, default_value = defaults::REPORTS, value_name = "DIR")]
    pub reports: PathBuf,
    /// Also write the JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Override a template image: NAME=REFERENCE, e.g. busybox=registry.local/busybox:1.36.
    #[arg(long = "image", value_name = "NAME=REF", value_parser = parse_image)]
    pub images: Vec<(String, String)>,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current one).
    #[arg(long)]
    pub context: Option<String>,
    /// Bound on the end-of-run sweep, which waits for every namespace of the run still
    /// terminating.
    #[arg(long, default_value = defaults::CLEANUP_TIMEOUT, value_parser = parse_duration)]
    pub cleanup_timeout: std::time::Duration,
    /// Bound on each API request (create, apply, patch, delete); a server that never answers
    /// cannot hang the run.
    #[arg(long, default_value = defaults::REQUEST_TIMEOUT, value_parser = parse_duration)]
    pub request_timeout: std::time::Duration,
    /// How long the API server may be unavailable (restart, outage, 429/5xx) before cases give up
    /// on it: cases not started yet wait, streams ride through.
    #[arg(long, default_value = defaults::API_OUTAGE_BUDGET, value_parser = parse_duration)]
    pub api_outage_budget: std::time::Duration,
    /// Observation tail after the last step, for late watch events.
    #[arg(long, default_value = defaults::SETTLE, value_parser = parse_duration)]
    pub settle: std::time::Duration,
    /// Less console output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write the per-case console lines to this file instead of stdout.
    #[arg(long, value_name = "PATH")]
    pub logfile: Option<PathBuf>,
    /// Run every case N times: pass rates and min/median/max of every measured gap.
    #[arg(long, default_value_t = defaults::REPEAT, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// `certify`: run the selected built-in suites and state per area whether the node conforms.
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// Pin every case's pod to this node (spec.nodeName).
    #[arg(long, value_name = "NAME", conflicts_with = "each_node")]
    pub node: Option<String>,
    /// Fleet certification: run every selected case once on each node (Ready, not cordoned, no
    /// NoSchedule/NoExecute taint; --node-selector narrows the set), all nodes at once, and
    /// report a node × area matrix and the odd node out.
    #[arg(long, conflicts_with = "each_group")]
    pub each_node: bool,
    /// Group certification: nodes with the same fingerprint (kubelet, runtime and its handlers,
    /// kernel, OS image, arch) form a group; run every selected case on K nodes sampled from each
    /// group (default 1; a different sample each run), and take the rest as identical to them.
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1", conflicts_with = "node",
          value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(1..), |v| v as usize))]
    pub each_group: Option<usize>,
    /// Add a nodeSelector to every case's pod (repeatable); with --each-node, choose the nodes.
    #[arg(long = "node-selector", value_name = "KEY=VALUE", value_parser = parse_image)]
    pub node_selector: Vec<(String, String)>,
    /// Run every case's pod with this RuntimeClass (runc, crun, gVisor, Kata ...).
    #[arg(long, value_name = "NAME")]
    pub runtime_class: Option<String>,
    /// Suite files or directories (default: suites/; with --replay of a run folder or bundle
    /// that holds its suites, those).
    #[arg(long = "suites")]
    pub suites: Vec<PathBuf>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RejudgeArgs {
    /// The finished run: a report folder (reports/<runid>) or its bundle (.tar.gz).
    pub run: PathBuf,
    /// The suites to judge with (default: suites/, the current ones).
    #[arg(long = "suites", default_value = "suites")]
    pub suites: Vec<PathBuf>,
    /// Where the re-judged reports go: <DIR>/<new runid>/.
    #[arg(long, default_value = defaults::REPORTS, value_name = "DIR")]
    pub reports: PathBuf,
    /// Also write the JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Less console output.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// `kind load docker-image` (after `docker pull`).
    Kind,
    /// `k3s ctr images import` of a `docker save`.
    K3s,
}

#[derive(clap::Args, Debug, Clone)]
pub struct CleanArgs {
    /// Only namespaces of this run id (as in `reports/<runid>` and the `leftover:` lines).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Only namespaces created at least this long ago, e.g. `1h` (leaves runs in progress alone).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Delete them. Without it, only list what would be deleted.
    #[arg(long, short)]
    pub yes: bool,
    /// Bound on the whole deletion, waiting for the namespaces to be gone included.
    #[arg(long, default_value = defaults::CLEANUP_TIMEOUT, value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Bound on each API request.
    #[arg(long, default_value = defaults::REQUEST_TIMEOUT, value_parser = parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current one).
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Every built-in suite, with a per-area conformance summary.
    Certify,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepNamespaces {
    Never,
    OnFailure,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ImagesArgs {
    /// Only cases whose `suite::case` name contains this.
    pub filter: Option<String>,
    #[arg(long)]
    pub exact: bool,
    #[arg(long)]
    pub skip: Vec<String>,
    /// Override a template image: NAME=REFERENCE.
    #[arg(long = "image", value_name = "NAME=REF", value_parser = parse_image)]
    pub images: Vec<(String, String)>,
    #[arg(long = "suites", default_value = "suites")]
    pub suites: Vec<PathBuf>,
    /// Print shell lines that pre-load the images into a kind or k3s node instead of the names.
    #[arg(long, value_enum)]
    pub load: Option<Loader>,
}

impl ImagesArgs {
    pub(super) fn selection(&self) -> crate::select::Filter<'_> {
        crate::select::Filter {
            filter: self.filter.as_deref(),
            exact: self.exact,
            skip: &self.skip,
        }
    }
}

/// A command-line value that does not parse; clap prints it after the option's name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgError {
    #[error("expected NAME=REFERENCE, got `{0}`")]
    Image(String),
    #[error("invalid duration `{given}`: {source}")]
    Duration {
        given: String,
        source: humantime::DurationError,
    },
}

fn parse_image(s: &str) -> Result<(String, String), ArgError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(ArgError::Image(s.to_string())),
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, ArgError> {
    humantime::parse_duration(s).map_err(|source| ArgError::Duration {
        given: s.to_string(),
        source,
    })
}

#[derive(clap::Args, Debug, Clone)]
pub struct DiffArgs {
    /// The earlier run: reports/<runid> (or a reports folder holding one run).
    pub before: PathBuf,
    /// The later run (default, with --node-a/--node-b: the same run, node against node).
    #[arg(required_unless_present_all = ["node_a", "node_b"])]
    pub after: Option<PathBuf>,
    /// Take BEFORE as this node of an --each-node run saw it (its cases only) ...
    #[arg(long, value_name = "NODE")]
    pub node_a: Option<String>,
    /// ... and AFTER (BEFORE again when AFTER is not given) as this node saw it: e.g. an
    /// old-kubelet node against an upgraded one during a rolling upgrade. Either alone compares
    /// one node of a fleet run with a single-node run.
    #[arg(long, value_name = "NODE")]
    pub node_b: Option<String>,
    /// An extra floor a timing change must exceed, besides its own noise: `20%` or `500ms`.
    #[arg(long)]
    pub threshold: Option<crate::report::diff::Threshold>,
    /// Do not list timings that moved less than this.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub min_change: std::time::Duration,
    /// Suites describing cases of reports written before verdicts recorded their precision.
    #[arg(long = "suites", default_value = "suites")]
    pub suites: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = DiffFormat::Table)]
    pub format: DiffFormat,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Table,
    Json,
    Junit,
}

#[derive(clap::Args, Debug, Clone)]
pub struct JudgeArgs {
    /// The suite file holding the case.
    #[arg(long)]
    pub suite: PathBuf,
    /// The case name (without the suite prefix).
    #[arg(long)]
    pub case: String,
    /// A recording folder or a timeline JSON file.
    pub source: PathBuf,
    /// Print verdicts as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// Only cases whose `suite::case` name contains this (or equals it with --exact).
    pub filter: Option<String>,
    /// Match the filter exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip cases whose name contains this (repeatable).
    #[arg(long)]
    pub skip: Vec<String>,
    /// Suite files or directories.
    #[arg(long = "suites", default_value = "suites")]
    pub suites: Vec<PathBuf>,
    /// Print the upstream conformance mapping instead: testname → case → covered / not applicable.
    #[arg(long)]
    pub upstream: bool,
    /// The upstream conformance list (TSV: testname, `pod` or `n/a`, reason).
    #[arg(long, default_value = "suites/upstream-conformance.tsv", value_name = "PATH")]
    pub upstream_list: PathBuf,
}

impl ListArgs {
    pub(super) fn selection(&self) -> crate::select::Filter<'_> {
        crate::select::Filter {
            filter: self.filter.as_deref(),
            exact: self.exact,
            skip: &self.skip,
        }
    }
}
