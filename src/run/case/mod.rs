//! Running one case (`CaseRun`): live against a cluster, or replayed from a recording. Both end
//! in the same `Attempt`: a timeline, verdicts, and what cleanup did.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::api::Api;
use tokio::sync::mpsc;

use super::record::{self, Recorder, SharedRecorder};
use super::streams::{self, StreamMsg};
use crate::cluster::{CaseApi, ClusterError};
use crate::judge::{self, Outcome, Verdict};
use crate::observe::{Action, ActionKind, EvidenceSource, Input, NewInstance, Observer, Recording, Timeline};
use crate::results::{Attempt, AttemptStatus, Cleanup};
use crate::suite::{LoadedCase, Step};

mod observe;
mod replay;

use observe::observe_case;
pub use replay::{
    TimelineFileError, incomplete_verdict, objects_verdict, read_timeline_file, replay_case, replay_recording,
};
pub(crate) use replay::{judge_timeline_file, replay_named};

/// Shared state of a run that cases need.
#[derive(Clone)]
pub(crate) struct CaseEnv {
    /// Node / runtime pinning injected into every pod.
    pub target: crate::cluster::Target,
    pub run_id: String,
    pub images: std::collections::BTreeMap<String, String>,
    /// Bounds the whole cleanup of a case namespace, its DELETE request included.
    pub cleanup_timeout: Duration,
    pub keep_on_failure: bool,
    /// Flips to true on Ctrl-C, SIGTERM or SIGHUP.
    pub cancel: tokio::sync::watch::Receiver<bool>,
    /// Namespaces this run created and has not deleted yet, with their UIDs (the end-of-run
    /// sweep deletes them, UID-checked).
    pub live_namespaces: Arc<Mutex<BTreeMap<String, String>>>,
    /// Every namespace name handed out in this run: no two attempts ever share one.
    pub used_names: Arc<Mutex<BTreeSet<String>>>,
    /// After the last step, how long to keep observing late watch events.
    pub settle: Duration,
    /// Print a "still waiting" line after this long without progress.
    pub progress_every: Duration,
    /// Bound on each ordinary API request (create, apply, patch, delete).
    pub request_timeout: Duration,
    /// How long the API may be unavailable before a case gives up on it: a case not started yet
    /// waits this long for the API to come back (streams ride through outages of this length).
    pub api_outage_budget: Duration,
    /// Record every attempt under this folder (`reports/<runid>/recordings`); see `record`.
    pub record: Option<std::path::PathBuf>,
    /// `--each-node`: the node this copy of the case runs on (part of its identity: namespace,
    /// recording folder); `target` pins it there.
    pub node: Option<String>,
    /// Live: when the API server took no new request (see `health`).
    pub api_health: Option<Arc<super::health::ApiHealth>>,
    /// Start slots of the node this case's pod lands on (see `RunOptions::starts_per_node`) and
    /// of the cluster (`Budget::starting`).
    pub starts: crate::run::budget::StartSlots,
    /// Paces case starts within the budget's requests per second (`None`: unbounded).
    pub pacer: Option<Arc<crate::run::budget::Pacer>>,
}

impl CaseEnv {
    /// The namespace of this attempt of the case, unique in the run (see `suite::naming`).
    pub(crate) fn claim_namespace(&self, case: &LoadedCase, attempt: usize) -> String {
        let mut used = self.used_names.lock().expect("namespace names");
        let node = self.node.as_deref();
        let name = match node {
            Some(n) => crate::suite::naming::node_namespace_name(&self.run_id, &case.suite, case.name(), n, attempt),
            None => namespace_name(&self.run_id, &case.suite, case.name(), attempt),
        };
        let name = if used.contains(&name) {
            crate::suite::naming::namespace_name_alt(&self.run_id, &case.suite, case.name(), node, attempt)
        } else {
            name
        };
        used.insert(name.clone());
        name
    }
}

pub use crate::suite::naming::namespace_name;

fn failed_step(evidence: String) -> Verdict {
    Verdict {
        index: crate::judge::STEP_INDEX,
        kind: crate::judge::VerdictKind::Step,
        outcome: Outcome::Fail,
        evidence,
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts: vec![],
        subject: "step".into(),
        id: "step".into(),
    }
}

/// A `waitFor` that never saw its mark: failed, unless a gap in the mark's source could hide
/// it, which makes it undecided.
fn wait_failed(case: &LoadedCase, until: &crate::suite::MarkRef, tl: &Timeline, evidence: String) -> Verdict {
    match judge::mark_hidden(&case.spec, until, tl) {
        Some(gap) => Verdict {
            outcome: Outcome::Undecided,
            evidence: format!("{evidence}; undecided: {gap}"),
            ..failed_step(String::new())
        },
        None => failed_step(evidence),
    }
}

/// Finishes an attempt from a complete timeline, as `judge::conclude` concludes it.
fn conclude(
    case: &LoadedCase,
    tl: Timeline,
    step_failure: Option<Verdict>,
    started: Timestamp,
    t0: Instant,
) -> Attempt {
    let (conclusion, verdicts) = judge::conclude(&case.spec, &tl, step_failure);
    let status = match conclusion {
        judge::Conclusion::Passed => AttemptStatus::Passed,
        judge::Conclusion::Failed => AttemptStatus::Failed,
        judge::Conclusion::Undecided => AttemptStatus::Undecided,
        judge::Conclusion::NotComparable => AttemptStatus::NotComparable,
    };
    // The case changed since the recording: why is the step verdict, all there is to say.
    let not_comparable = (status == AttemptStatus::NotComparable).then(|| verdicts[0].evidence.clone());
    let unavailable = (!matches!(status, AttemptStatus::Passed | AttemptStatus::NotComparable))
        .then(|| image_unavailable(case, &tl))
        .flatten();
    Attempt {
        status: if unavailable.is_some() {
            AttemptStatus::Error
        } else {
            status
        },
        verdicts,
        error: unavailable.or(not_comparable),
        started,
        duration_s: t0.elapsed().as_secs_f64(),
        api_requests: 0,
        cleanup: Cleanup::default(),
        node_load: None,
        timeline: Some(tl),
    }
}

/// Waiting reasons of a container whose image the node could not get.
const PULL_FAILURES: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// A container whose image podlife substitutes (`${image.*}`: busybox, agnhost, or what the
/// user gave with `--image`) that the node could not pull, described. Such an image is meant to
/// be there: its absence is the registry's, the name's or the tag's, not the node's, so the case
/// says so instead of judging the node on a pod that never ran. Images a case names literally
/// (one that is meant not to exist, for ImagePullBackOff) are judged as usual. An image volume
/// with a substituted image counts for every container that mounts it: the kubelet pulls the
/// volume's image before it creates that container, which waits with the pull's reason.
fn image_unavailable(case: &LoadedCase, tl: &Timeline) -> Option<String> {
    let image_volumes: Vec<&str> = case
        .pod
        .pointer("/spec/volumes")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter(|v| {
            v.pointer("/image/reference")
                .and_then(|r| r.as_str())
                .is_some_and(|i| i.contains("${image."))
        })
        .filter_map(|v| v["name"].as_str())
        .collect();
    let mounts_one = |c: &serde_json::Value| {
        c["volumeMounts"].as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["name"].as_str().is_some_and(|n| image_volumes.contains(&n)))
        })
    };
    let substituted: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| case.pod.pointer(&format!("/spec/{k}"))?.as_array())
        .flatten()
        .filter(|c| c["image"].as_str().is_some_and(|i| i.contains("${image.")) || mounts_one(c))
        .filter_map(|c| c["name"].as_str())
        .collect();
    // An image volume's image with pullPolicy Always cannot be pre-loaded: say what it needs.
    let hint = if image_volumes.is_empty() {
        ""
    } else {
        "; an image volume's image is pulled from its registry (pullPolicy Always), so the node must reach a registry that holds it: --image NAME=REF names one, --skip leaves the case out"
    };
    tl.snapshots.iter().find_map(|s| {
        s.containers.iter().find_map(|c| match &c.state {
            crate::observe::State::Waiting {
                reason: Some(r),
                message,
            } if PULL_FAILURES.contains(&r.as_str()) && substituted.contains(&c.name.as_str()) => Some(format!(
                "an image of container {} could not be pulled ({r}: {}): it is unavailable to the node (check the registry and --image{hint}); no verdict on the node",
                c.name,
                message.as_deref().unwrap_or("no message")
            )),
            _ => None,
        })
    })
}

fn errored(error: String, started: Timestamp, t0: Instant, tl: Option<Timeline>) -> Attempt {
    // What was observed until the error is not a finished observation: stored and re-judged,
    // it must not pass for one.
    let tl = tl.map(|tl| Timeline { complete: false, ..tl });
    Attempt {
        status: AttemptStatus::Error,
        verdicts: vec![],
        error: Some(error),
        started,
        duration_s: t0.elapsed().as_secs_f64(),
        api_requests: 0,
        cleanup: Cleanup::default(),
        node_load: None,
        timeline: tl,
    }
}

/// The latest instant this attempt can still use its namespace (the `podlife.dev/in-use-until`
/// annotation `podlife clean` reads): every bound the attempt runs under, added up — the case
/// timeout, an outage budget and a request timeout for each request and wait (a wait is
/// extended by the time the API was away), the settle tail, the cleanup, plus a minute for
/// clock differences between the machine of this run and that of `clean`.
fn in_use_until(case: &LoadedCase, env: &CaseEnv) -> Timestamp {
    let waits = (case.spec.steps.len() + case.objects.len() + 2 * case.second_namespace.len() + 4) as u32;
    let bound = case
        .timeout
        .saturating_add(env.settle)
        .saturating_add(env.cleanup_timeout)
        .saturating_add(env.api_outage_budget.saturating_mul(waits))
        .saturating_add(env.request_timeout.saturating_mul(waits))
        .saturating_add(Duration::from_secs(60));
    let bound = jiff::SignedDuration::try_from(bound).unwrap_or(jiff::SignedDuration::MAX);
    crate::util::ts_add(Timestamp::now(), bound)
}

/// Runs one attempt (0-based over repetitions and retries) of a case against the cluster.
/// Cleanup runs on every path, including Ctrl-C, and deletes only a namespace this attempt
/// created (by UID).
pub(crate) async fn live_case(client: kube::Client, case: &LoadedCase, env: &CaseEnv, attempt_no: usize) -> Attempt {
    // Within the budget's requests per second, before the case's clock starts: waiting for a
    // turn is podlife's pacing, not the case's time.
    if let Some(p) = &env.pacer {
        let mut cancel = env.cancel.clone();
        tokio::select! {
            () = p.admit() => {}
            _ = cancel.wait_for(|v| *v) => {}
        }
    }
    let started = Timestamp::now();
    let t0 = Instant::now();
    let ns = env.claim_namespace(case, attempt_no);
    let api = CaseApi::new(client, &ns)
        .bounded(env.request_timeout, Some(env.cancel.clone()))
        .on_node(env.node.as_deref());
    let mut created: Vec<Created> = vec![];
    let recorder = start_recording(env, case, &ns, attempt_no);
    let began = observe::Began { started, t0 };
    let mut attempt = match observe_case(&api, case, env, began, &mut created, recorder.as_ref()).await {
        Ok(a) => a,
        Err(err) => errored(err.to_string(), started, t0, err.timeline.map(|tl| *tl)),
    };
    attempt.cleanup.namespace = Some(ns.clone());
    attempt.node_load = node_load(env, &attempt, started);
    // Not created by us (409, an error or an interrupt before the create answered): nothing to
    // delete here. A create whose answer was lost still carries our run label, and the
    // end-of-run sweep finds it.
    if created.is_empty() {
        attempt.api_requests = api.requests();
        return attempt;
    }
    let keep =
        env.keep_on_failure && attempt.status != AttemptStatus::Passed && attempt.status != AttemptStatus::Interrupted;
    attempt.cleanup.kept = keep;
    attempt.cleanup.deleted = !keep;
    let mut leftovers = vec![];
    for c in &created {
        let done = keep || {
            c.api.stop_pods_now().await;
            // The DELETE only: the namespace controller then takes seconds to remove its
            // objects and its finalizer (more with many namespaces going at once), time in
            // which this case's slot would sit idle. The end-of-run sweep waits for every
            // namespace still terminating, all at once.
            match c
                .api
                .delete_namespace(&c.uid, Duration::ZERO, env.api_outage_budget)
                .await
            {
                Ok(true) => true,
                Ok(false) => {
                    attempt.cleanup.terminating = true;
                    false
                }
                Err(e) => {
                    leftovers.push(format!("namespace {}: {e}", c.api.namespace));
                    false
                }
            }
        };
        // Deleted or kept on purpose: the sweep need not try again. A namespace still
        // terminating (or whose DELETE failed) stays registered: the end-of-run sweep checks it
        // again, so the run's leftovers are what is really left at its end (after an API server
        // restart the namespace controller catches up late).
        if done {
            env.live_namespaces
                .lock()
                .expect("namespace registry")
                .remove(&c.api.namespace);
        } else {
            attempt.cleanup.deleted = false;
        }
    }
    if !leftovers.is_empty() {
        attempt.cleanup.leftover = Some(leftovers.join("; "));
    }
    attempt.api_requests = api.requests();
    finish_recording(recorder, &attempt);
    attempt
}

/// The CPU the attempt's node used while it ran, as the run sampled it (see `health`).
fn node_load(env: &CaseEnv, attempt: &Attempt, started: Timestamp) -> Option<crate::results::NodeLoad> {
    let node = env
        .node
        .clone()
        .or_else(|| attempt.timeline.as_ref()?.pod.node.clone())?;
    env.api_health.as_ref()?.load_between(&node, started, Timestamp::now())
}

/// Opens this attempt's recording when the run records. A recorder that cannot start is a
/// warning, never a reason to perturb the case.
fn start_recording(env: &CaseEnv, case: &LoadedCase, ns: &str, attempt_no: usize) -> Option<SharedRecorder> {
    let root = env.record.as_ref()?;
    let dir = root.join(record::case_dir_name(&case.suite, case.name(), env.node.as_deref()));
    match Recorder::create(&dir, attempt_no + 1, &case.full_name(), ns) {
        Ok(r) => Some(Arc::new(Mutex::new(r))),
        Err(e) => {
            eprintln!("warning: {}: not recording: {e}", dir.display());
            None
        }
    }
}

fn finish_recording(recorder: Option<SharedRecorder>, attempt: &Attempt) {
    let Some(rec) = recorder else { return };
    // The observer (and its tap's clone) is gone once the attempt is concluded.
    let rec = match Arc::try_unwrap(rec) {
        Ok(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()),
        Err(_) => {
            eprintln!("warning: a recording was still in use when its attempt ended; it is left incomplete");
            return;
        }
    };
    if let Err(e) = rec.finish(attempt) {
        eprintln!("warning: recording incomplete ({e}); `run --replay` will refuse it");
    }
}

/// A namespace this attempt created, with the API of its requests: only it (by UID) is deleted.
pub(super) struct Created {
    api: CaseApi,
    uid: String,
}

impl Created {
    /// Registers the namespace with the run, whose end-of-run sweep deletes it should the
    /// attempt not get to.
    fn new(env: &CaseEnv, api: &CaseApi, uid: String) -> Self {
        env.live_namespaces
            .lock()
            .expect("namespace registry")
            .insert(api.namespace.clone(), uid.clone());
        Created { api: api.clone(), uid }
    }
}

/// What ended a case as a harness error (not the node's doing); its text is the attempt's
/// `error`.
#[derive(Debug, thiserror::Error)]
pub(super) enum CaseCause {
    /// A request failed; `what` names the second namespace when the request was for it.
    #[error("{what}{source}")]
    Request { what: &'static str, source: ClusterError },
    /// The pod create was refused or never answered.
    #[error("{why}; the pod was not created")]
    PodNotCreated { why: String },
    /// The pod watch was given up, so nothing more could be observed.
    #[error("{0}")]
    PodWatchLost(String),
}

impl From<ClusterError> for CaseCause {
    fn from(source: ClusterError) -> Self {
        CaseCause::Request { what: "", source }
    }
}

/// A harness error, with what was observed until then (boxed: a timeline is large, and the
/// error travels in a `Result` whose `Ok` is small).
#[derive(Debug, thiserror::Error)]
#[error("{cause}")]
pub(super) struct CaseError {
    pub cause: CaseCause,
    pub timeline: Option<Box<Timeline>>,
}

impl CaseError {
    fn new(cause: impl Into<CaseCause>, timeline: Option<Timeline>) -> Self {
        CaseError {
            cause: cause.into(),
            timeline: timeline.map(Box::new),
        }
    }
}

fn interrupted(started: Timestamp, t0: Instant, tl: Option<Timeline>) -> Attempt {
    // Cut short: the stored timeline says so (see `errored`).
    let tl = tl.map(|tl| Timeline { complete: false, ..tl });
    Attempt {
        status: AttemptStatus::Interrupted,
        verdicts: vec![],
        error: Some("interrupted".into()),
        started,
        duration_s: t0.elapsed().as_secs_f64(),
        api_requests: 0,
        cleanup: Cleanup::default(),
        node_load: None,
        timeline: tl,
    }
}
