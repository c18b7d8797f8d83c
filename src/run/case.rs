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

/// Shared state of a run that cases need.
#[derive(Clone)]
pub struct CaseEnv {
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
}

impl CaseEnv {
    /// The namespace of this attempt of the case, unique in the run (see `suite::naming`).
    pub fn claim_namespace(&self, case: &LoadedCase, attempt: usize) -> String {
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
        index: usize::MAX,
        kind: "step".into(),
        outcome: Outcome::Fail,
        evidence,
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts: vec![],
        subject: "step".into(),
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

/// Finishes an attempt from a complete timeline.
fn conclude(
    case: &LoadedCase,
    tl: Timeline,
    step_failure: Option<Verdict>,
    started: Timestamp,
    t0: Instant,
) -> Attempt {
    let mut verdicts = judge::judge_case(&case.spec, &tl);
    if let Some(v) = step_failure {
        // A step that could not complete for a reason that is not the node's (undecided: a gap
        // could hide its mark, a wait an outage cut short) ended the observation early: what the
        // other expectations found missing may have come later. They are undecided, not failed.
        if v.outcome == Outcome::Undecided {
            // What was seen to contradict the case (a `never` that occurred, a forbidden
            // transition, a container that started against its expectation) stays failed.
            let seen = |x: &Verdict| {
                (x.kind == "never" && !x.facts.contains(&judge::Fact::MarkAbsent))
                    || x.facts.iter().any(|f| {
                        matches!(
                            f,
                            judge::Fact::ForbiddenTransitionSeen | judge::Fact::StartedAgainstExpectation
                        )
                    })
            };
            for x in verdicts.iter_mut().filter(|x| x.outcome == Outcome::Fail && !seen(x)) {
                x.outcome = Outcome::Undecided;
                x.evidence = format!(
                    "{}; undecided: the observation ended early, the steps could not complete ({})",
                    x.evidence, v.evidence
                );
            }
        }
        verdicts.insert(0, v);
    }
    let status = if judge::all_pass(&verdicts) {
        AttemptStatus::Passed
    } else if verdicts.iter().any(|v| v.outcome == judge::Outcome::Fail) {
        AttemptStatus::Failed
    } else {
        // Pass and undecided only: the evidence could not decide, the node did not fail.
        AttemptStatus::Undecided
    };
    Attempt {
        status,
        verdicts,
        error: None,
        started,
        duration_s: t0.elapsed().as_secs_f64(),
        api_requests: 0,
        cleanup: Cleanup::default(),
        timeline: Some(tl),
    }
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
        timeline: tl,
    }
}

/// Replays a case from a recording folder: same observer, same judge, same step checks.
pub fn replay_case(case: &LoadedCase, dir: &Path) -> Attempt {
    match Recording::read(dir) {
        Ok(rec) => replay_recording(case, &rec),
        Err(e) => errored(e.to_string(), Timestamp::now(), Instant::now(), None),
    }
}

/// Judges a recording that was read: an attempt that did not finish live (interrupted, a
/// harness error) stays so, with what it observed; a finished one is judged like live.
pub fn replay_recording(case: &LoadedCase, rec: &Recording) -> Attempt {
    let started = Timestamp::now();
    let t0 = Instant::now();
    let dir = rec.dir.as_path();
    let tl = rec.timeline();
    // How a recorded live attempt ended is a fact of that run: replay it as it was.
    let o = &rec.outcome;
    if o.interrupted {
        return interrupted(started, t0, Some(tl));
    }
    if let Some(e) = &o.error {
        return errored(e.clone(), started, t0, Some(tl));
    }
    if let Some(v) = &o.step_verdict {
        return match serde_json::from_value::<Verdict>(v.clone()) {
            Ok(v) => {
                let v = cut_short(case, &tl, v, o.closed);
                conclude(case, tl, Some(v), started, t0)
            }
            Err(e) => errored(
                format!("{}: damaged recording: step verdict: {e}", dir.display()),
                started,
                t0,
                Some(tl),
            ),
        };
    }
    if let Some(evidence) = &o.step_failure {
        return conclude(case, tl, Some(failed_step(evidence.clone())), started, t0);
    }
    // The recording must have done what the steps say, or the verdicts would judge something else.
    let step_failure = objects_verdict(case, &tl).or_else(|| judge::steps_verdict(&case.spec, &tl));
    conclude(case, tl, step_failure, started, t0)
}

/// A recorded wait that timed out although the recording ended before that wait's timeout (as
/// the case now gives it) could have run out was cut short by the recorded run's own case
/// timeout (status-crashloop waited for restart 5 in a case that ended at 120 s): its failure
/// says nothing about the node, so it is undecided. Live, `validate` keeps every wait within
/// its case timeout.
fn cut_short(case: &LoadedCase, tl: &Timeline, v: Verdict, closed: Option<Timestamp>) -> Verdict {
    let created = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent);
    let (Outcome::Fail, Some(closed), Some(created)) = (v.outcome, closed, created) else {
        return v;
    };
    let lasted = closed.duration_since(created);
    for s in &case.spec.steps {
        let Step::WaitFor(w) = &s.value else { continue };
        if judge::mark_occurred(&case.spec, &w.until, tl).is_ok() {
            continue;
        }
        let timeout = w.timeout.map(|d| d.0).unwrap_or(case.wait_timeout);
        let full = jiff::SignedDuration::try_from(timeout).unwrap_or(jiff::SignedDuration::MAX);
        if lasted >= full {
            return v;
        }
        return Verdict {
            outcome: Outcome::Undecided,
            evidence: format!(
                "{}; undecided: the recording ends {} after the pod was created, before this wait's {} timeout could run out (the recorded run's case timeout cut it short)",
                v.evidence,
                crate::util::fmt_secs(lasted.as_secs_f64()),
                crate::util::fmt_secs(timeout.as_secs_f64())
            ),
            ..v
        };
    }
    v
}

/// A recording judged for a case with `objects` must have created each of them before the pod:
/// without its ConfigMap the pod shows something else than what the case certifies.
pub fn objects_verdict(case: &LoadedCase, tl: &Timeline) -> Option<Verdict> {
    let applied: Vec<&str> = tl
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::ApplyObject)
        .filter_map(|a| a.detail.as_deref())
        .collect();
    let pod_at = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent);
    let problem = case.objects.iter().enumerate().find_map(|(i, o)| {
        let id = o.id();
        let found = tl
            .actions
            .iter()
            .find(|a| a.kind == ActionKind::ApplyObject && a.detail.as_deref() == Some(id.as_str()));
        match found {
            None => Some(format!(
                "objects[{i}]: the recording never created {id} (it created: {})",
                if applied.is_empty() {
                    "no object".to_string()
                } else {
                    applied.join(", ")
                }
            )),
            Some(a) if pod_at.is_some_and(|p| p < a.sent) => {
                Some(format!("objects[{i}]: the recording created {id} after the pod"))
            }
            Some(_) => None,
        }
    })?;
    Some(failed_step(problem))
}

/// Reads a timeline JSON as `run` writes it, refusing a format this podlife does not read (one
/// line naming the file and the field).
pub fn read_timeline_file(path: &Path) -> Result<Timeline, String> {
    let text = crate::files::read_string(path, crate::files::TIMELINE).map_err(|e| e.to_string())?;
    let tl = serde_json::from_str::<Timeline>(&text)
        .map_err(|e| format!("{}: not a podlife timeline: {e}", path.display()))?;
    if tl.format != crate::observe::timeline::TIMELINE_FORMAT {
        return Err(format!(
            "{}: format: timeline format {} is not supported by this podlife (reads format {})",
            path.display(),
            tl.format,
            crate::observe::timeline::TIMELINE_FORMAT
        ));
    }
    Ok(tl)
}

/// What judging a timeline adds when the timeline is not complete (its observation was cut
/// short: Ctrl-C, a harness error, or a file saying so): the case is at most undecided, since
/// what came after the cut is unknown.
pub fn incomplete_verdict(tl: &Timeline) -> Option<Verdict> {
    (!tl.complete).then(|| Verdict {
        kind: "timeline".into(),
        outcome: Outcome::Undecided,
        ..failed_step(
            "the timeline is incomplete (`complete: false`: its observation was cut short), so no verdict on it can be final"
                .into(),
        )
    })
}

/// Judges a case on the timeline a run stored (`timelines/<suite>__<case>.json`): what is left
/// to re-judge of a run recorded without raw recordings. `recorded` is how that attempt ended
/// live (from `summary.json`): an interrupted or errored attempt stays so, a finished one is
/// judged with its steps checked on the timeline, as `podlife judge` does.
pub fn judge_timeline_file(case: &LoadedCase, path: &Path, recorded: Option<&Attempt>) -> Attempt {
    let started = Timestamp::now();
    let t0 = Instant::now();
    let mut tl = match read_timeline_file(path) {
        Ok(tl) => tl,
        Err(e) => return errored(e, started, t0, None),
    };
    match recorded.map(|a| a.status) {
        Some(AttemptStatus::Interrupted) => {
            tl.complete = false;
            return interrupted(started, t0, Some(tl));
        }
        Some(AttemptStatus::Error) => {
            let e = recorded
                .and_then(|a| a.error.clone())
                .unwrap_or_else(|| "the attempt ended in a harness error".into());
            return errored(e, started, t0, Some(tl));
        }
        _ => {}
    }
    let step_failure = incomplete_verdict(&tl)
        .or_else(|| objects_verdict(case, &tl))
        .or_else(|| judge::steps_verdict(&case.spec, &tl));
    conclude(case, tl, step_failure, started, t0)
}

/// The latest instant this attempt can still use its namespace (the `podlife.dev/in-use-until`
/// annotation `podlife clean` reads): every bound the attempt runs under, added up — the case
/// timeout, an outage budget and a request timeout for each request and wait (a wait is
/// extended by the time the API was away), the settle tail, the cleanup, plus a minute for
/// clock differences between the machine of this run and that of `clean`.
fn in_use_until(case: &LoadedCase, env: &CaseEnv) -> Timestamp {
    let waits = (case.spec.steps.len() + case.objects.len() + 4) as u32;
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
pub async fn live_case(client: kube::Client, case: &LoadedCase, env: &CaseEnv, attempt_no: usize) -> Attempt {
    let started = Timestamp::now();
    let t0 = Instant::now();
    let ns = env.claim_namespace(case, attempt_no);
    let api = CaseApi::new(client, &ns)
        .bounded(env.request_timeout, Some(env.cancel.clone()))
        .on_node(env.node.as_deref());
    let mut created: Option<String> = None;
    let recorder = start_recording(env, case, &ns, attempt_no);
    let mut attempt = match observe_case(&api, case, env, started, t0, &mut created, recorder.as_ref()).await {
        Ok(a) => a,
        Err(err) => {
            let (e, tl) = *err;
            errored(e, started, t0, tl)
        }
    };
    attempt.cleanup.namespace = Some(ns.clone());
    // Not created by us (409, an error or an interrupt before the create answered): nothing to
    // delete here. A create whose answer was lost still carries our run label, and the
    // end-of-run sweep finds it.
    let Some(uid) = created else {
        attempt.api_requests = api.requests();
        return attempt;
    };
    let keep =
        env.keep_on_failure && attempt.status != AttemptStatus::Passed && attempt.status != AttemptStatus::Interrupted;
    if keep {
        attempt.cleanup.kept = true;
    } else {
        match api
            .delete_namespace(&uid, env.cleanup_timeout, env.api_outage_budget)
            .await
        {
            Ok(true) => attempt.cleanup.deleted = true,
            Ok(false) => {
                attempt.cleanup.leftover = Some(format!(
                    "namespace {ns} still terminating after {}",
                    crate::util::fmt_secs(env.cleanup_timeout.as_secs_f64())
                ))
            }
            Err(e) => attempt.cleanup.leftover = Some(format!("namespace {ns}: {e}")),
        }
    }
    // Deleted or kept on purpose: the sweep need not try again. A namespace still terminating
    // (or whose DELETE failed) stays registered: the end-of-run sweep checks it again, so the
    // run's leftovers are what is really left at its end (after an API server restart the
    // namespace controller catches up late).
    if attempt.cleanup.deleted || attempt.cleanup.kept {
        env.live_namespaces.lock().expect("namespace registry").remove(&ns);
    }
    attempt.api_requests = api.requests();
    finish_recording(recorder, &attempt);
    attempt
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

/// A harness error, with what was observed until then (boxed: a timeline is large).
type CaseError = Box<(String, Option<Timeline>)>;

async fn observe_case(
    api: &CaseApi,
    case: &LoadedCase,
    env: &CaseEnv,
    started: Timestamp,
    t0: Instant,
    created: &mut Option<String>,
    recorder: Option<&SharedRecorder>,
) -> Result<Attempt, CaseError> {
    let mut cancel = env.cancel.clone();
    if *cancel.borrow() {
        return Ok(interrupted(started, t0, None));
    }
    // A case not started yet waits (within the outage budget) for an API that is away.
    match api
        .create_namespace(
            &env.run_id,
            &case.suite,
            case.name(),
            env.api_outage_budget,
            in_use_until(case, env),
        )
        .await
    {
        Ok(uid) => {
            env.live_namespaces
                .lock()
                .expect("namespace registry")
                .insert(api.namespace.clone(), uid.clone());
            *created = Some(uid);
        }
        Err(ClusterError::Interrupted) => return Ok(interrupted(started, t0, None)),
        Err(e) => return Err(Box::new((e.to_string(), None))),
    }
    match api.wait_namespace_ready(env.api_outage_budget).await {
        Ok(()) => {}
        Err(ClusterError::Interrupted) => return Ok(interrupted(started, t0, None)),
        Err(e) => return Err(Box::new((e.to_string(), None))),
    }
    let mut pod = case.render_pod(&env.images);
    env.target.apply(&mut pod);
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let (tx, mut rx) = mpsc::channel::<StreamMsg>(streams::CHANNEL_CAPACITY);
    let mut tasks = Tasks::default();
    let budget = env.api_outage_budget;
    // Watches start before the apply so the first events are not missed.
    let (pod_listed, pod_watch_up) = tokio::sync::oneshot::channel();
    tasks.spawn(streams::watch_pods(
        api.pods(),
        pod_name.clone(),
        tx.clone(),
        budget,
        pod_listed,
    ));
    // The Event watch's first list returns every Event of the namespace, those written before
    // it included: it need not be up before the pod is created.
    tasks.spawn(streams::watch_events(
        Api::<Event>::namespaced(api.client.clone(), &api.namespace),
        tx.clone(),
        budget,
    ));
    let mut obs = Observer::new(Some(&pod_name), "live");
    if let Some(rec) = recorder {
        rec.lock().expect("recorder").manifest(&pod);
        obs.set_tap(Recorder::tap(rec));
    }
    // The pod watch must be listening before the pod exists, or its first versions (Pending,
    // the unscheduled pod) are never seen. Bounded: the watch gives up after the outage budget
    // (its sender is then dropped), and a list that never answers by the request timeout.
    let listening = tokio::select! {
        r = tokio::time::timeout(budget.saturating_add(env.request_timeout), pod_watch_up) => {
            matches!(r, Ok(Ok(())))
        }
        _ = cancel.wait_for(|v| *v) => {
            tasks.abort_all();
            return Ok(interrupted(started, t0, Some(obs.finish())));
        }
    };
    if !listening {
        tasks.abort_all();
        // The watch says why it gave up (its last error); otherwise its list never answered.
        let mut why = format!(
            "the pod watch did not start within {}",
            crate::util::fmt_secs(budget.saturating_add(env.request_timeout).as_secs_f64())
        );
        while let Ok(m) = rx.try_recv() {
            match m {
                StreamMsg::Lost {
                    source: EvidenceSource::PodWatch,
                    reason,
                } => why = reason,
                StreamMsg::Input(i) => obs.push(i),
                StreamMsg::Lost { .. } => {}
            }
        }
        return Err(Box::new((
            format!("{why}; the pod was not created"),
            Some(obs.finish()),
        )));
    }
    let deadline = crate::util::after(case.timeout);
    // The pod's auxiliary objects first, in order, each recorded as our action: the pod may
    // only be created once what it consumes exists.
    for o in &case.objects {
        let sent = Timestamp::now();
        if let Err(e) = api.apply_object(&o.value, env.api_outage_budget).await {
            tasks.abort_all();
            if matches!(e, ClusterError::Interrupted) {
                return Ok(interrupted(started, t0, Some(obs.finish())));
            }
            return Err(Box::new((e.to_string(), Some(obs.finish()))));
        }
        obs.push(Input::Action(Action {
            kind: ActionKind::ApplyObject,
            sent,
            done: Some(Timestamp::now()),
            grace_period_seconds: None,
            detail: Some(o.id()),
            exec: None,
        }));
    }
    let sent = Timestamp::now();
    if let Err(e) = api.apply_pod(&pod, env.api_outage_budget).await {
        tasks.abort_all();
        if matches!(e, ClusterError::Interrupted) {
            return Ok(interrupted(started, t0, Some(obs.finish())));
        }
        return Err(Box::new((e.to_string(), Some(obs.finish()))));
    }
    obs.push(Input::Action(Action {
        kind: ActionKind::Apply,
        sent,
        done: Some(Timestamp::now()),
        grace_period_seconds: None,
        detail: None,
        exec: None,
    }));
    let mut loop_ = Loop {
        api,
        case,
        env,
        obs,
        rx: &mut rx,
        tx: tx.clone(),
        tasks,
        pod_name: pod_name.clone(),
        known: tokio::sync::watch::channel(streams::Known::default()).0,
        pod_down_since: None,
        pod_downtime: Duration::ZERO,
    };

    let mut step_failure = None;
    let last_is_wait = matches!(case.spec.steps.last().map(|s| &s.value), Some(Step::WaitFor(_)));
    // The case timeout is extended by the time nothing could be seen or done (a pod watch down,
    // the API server taking no request), within the outage budget, as every wait is: an outage
    // must not leave the steps after it no time at all (live: a DELETE sent as the case ended).
    let case_began = Instant::now();
    let case_deadline = deadline;
    for (i, step) in case.spec.steps.iter().enumerate() {
        let deadline = crate::util::add(case_deadline, loop_.blind_since(case_began));
        let r = match &step.value {
            Step::WaitFor(w) => {
                let timeout = w.timeout.map(|d| d.0).unwrap_or(case.wait_timeout);
                let own = crate::util::after(timeout);
                let until = own.min(deadline);
                // Name the limit that fires: the wait's own, or the case's (validate keeps the
                // steps within the case timeout, but an outage can eat into it).
                let limit = if deadline < own {
                    format!(
                        "the case timeout ({}) ended the wait",
                        crate::util::fmt_secs(case.timeout.as_secs_f64())
                    )
                } else {
                    format!("timed out after {}", crate::util::fmt_secs(timeout.as_secs_f64()))
                };
                let what = w.until.label();
                loop_
                    .run_until(until, &mut cancel, &format!("steps[{i}] waitFor {what}"), |tl| {
                        judge::mark_occurred(&case.spec, &w.until, tl).is_ok()
                    })
                    .await
                    .map(|reached| {
                        (!reached).then(|| {
                            let tl = loop_.obs.timeline();
                            let why = judge::mark_occurred(&case.spec, &w.until, tl).err().unwrap_or_default();
                            let evidence = format!("steps[{i}] waitFor {what}: {limit}: {why}");
                            wait_failed(case, &w.until, tl, evidence)
                        })
                    })
            }
            Step::Sleep(d) => {
                let until = crate::util::after(d.0).min(deadline);
                loop_
                    .run_until(until, &mut cancel, "sleep", |_| false)
                    .await
                    .map(|_| None)
            }
            Step::Delete(d) => {
                let grace = d.grace_period_seconds;
                act(
                    api,
                    &mut loop_.obs,
                    ActionKind::Delete,
                    grace,
                    None,
                    api.delete_pod(&pod_name, grace, env.api_outage_budget),
                )
                .await
            }
            Step::Ephemeral(e) => {
                let container = case.ephemeral_body(e, &env.images);
                act(
                    api,
                    &mut loop_.obs,
                    ActionKind::Ephemeral,
                    None,
                    Some(format!("{} via {}", e.name(), e.via.as_str())),
                    api.add_ephemeral(&pod_name, &container, e.via, env.api_outage_budget),
                )
                .await
            }
            Step::Exec(x) => {
                // Bounded by its own timeout and what is left of the case's.
                let own = x.timeout.map(|d| d.0).unwrap_or(crate::suite::DEFAULT_EXEC_TIMEOUT);
                let timeout = own.min(deadline.saturating_duration_since(Instant::now()));
                let first = Timestamp::now();
                match api.exec(&pod_name, &x.container.value, &x.command.value, timeout).await {
                    Ok(mut r) => {
                        r.name = x.name.value.clone();
                        if let Some(e) = &r.error {
                            eprintln!("    {}: steps[{i}] exec `{}`: {e}", case.full_name(), r.name);
                        }
                        let sent = api.last_sent().filter(|t| *t > first).unwrap_or(first);
                        loop_.obs.push(Input::Action(Action {
                            kind: ActionKind::Exec,
                            sent,
                            done: Some(Timestamp::now()),
                            grace_period_seconds: None,
                            detail: Some(format!("{} in {}", x.command.value.join(" "), x.container.value)),
                            exec: Some(r),
                        }));
                        Ok(None)
                    }
                    Err(e) => Err(Stop::from(e)),
                }
            }
            Step::Object(o) => {
                let obj = case
                    .step_objects
                    .get(&i)
                    .expect("validated: every object step has its object");
                let (kind, request) = if o.delete.is_some() {
                    (
                        ActionKind::DeleteObject,
                        futures::future::Either::Left(api.delete_object(&obj.kind, &obj.name, env.api_outage_budget)),
                    )
                } else {
                    let apply = async { api.apply_object(&obj.value, env.api_outage_budget).await.map(|_| ()) };
                    (ActionKind::UpdateObject, futures::future::Either::Right(apply))
                };
                act(api, &mut loop_.obs, kind, None, Some(obj.id()), request).await
            }
            Step::Patch(p) => {
                let patch = case.patch_body(p, &env.images);
                act(
                    api,
                    &mut loop_.obs,
                    ActionKind::Patch,
                    None,
                    Some(patch.to_string()),
                    api.patch_pod(&pod_name, &patch, env.api_outage_budget),
                )
                .await
            }
        };
        match r {
            Ok(None) => {}
            Ok(Some(v)) => {
                step_failure = Some(v);
                break;
            }
            Err(stop) => return loop_.stop(stop, started, t0),
        }
    }
    // Observation window: after a final waitFor, only a settle tail; otherwise until the pod
    // settles or every expectation is decided, within the case timeout.
    let deadline = crate::util::add(case_deadline, loop_.blind_since(case_began));
    if step_failure.is_none() && !last_is_wait {
        let r = loop_
            .run_until_every(
                deadline,
                &mut cancel,
                "the pod to settle or all expectations to be decided",
                Duration::from_millis(200),
                |tl| tl.settled() || judge::all_decided(&judge::judge_case(&case.spec, tl)),
            )
            .await;
        if let Err(stop) = r {
            return loop_.stop(stop, started, t0);
        }
    }
    if step_failure.is_none() {
        let tail = crate::util::after(env.settle).min(deadline.max(Instant::now()));
        let _ = loop_.run_until(tail, &mut cancel, "settle", |_| false).await;
    }
    loop_.tasks.abort_all();
    drop(tx);
    api_outage_gaps(&mut loop_.obs, env);
    let tl = loop_.obs.finish();
    Ok(conclude(case, tl, step_failure, started, t0))
}

/// Every span in which the API server took no new request (see `health`) is a gap of the pod
/// watch and of the Event watch, even if they stayed connected: the kubelet and the scheduler
/// could not write then, so a status or an event of that span may never have been seen (the
/// kubelet writes only its latest status afterwards, and drops events it could not post).
/// Before the pod was created nobody wrote about it: an outage then hides nothing.
fn api_outage_gaps(obs: &mut Observer, env: &CaseEnv) {
    let Some(h) = &env.api_health else { return };
    let Some(created) = obs
        .timeline()
        .actions
        .iter()
        .find(|a| a.kind == ActionKind::Apply)
        .map(|a| a.sent)
    else {
        return;
    };
    let now = Timestamp::now();
    for o in h.outages_between(created, now) {
        for source in [EvidenceSource::PodWatch, EvidenceSource::Events, EvidenceSource::Api] {
            obs.push(Input::Gap(crate::observe::Gap {
                source,
                from: Some(o.from.max(created)),
                to: Some(o.to.unwrap_or(now)),
                clock: crate::observe::GapClock::Harness,
                reason: format!("{}: the kubelet could not write its status or events", o.reason),
            }));
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
        timeline: tl,
    }
}

enum Stop {
    Interrupted,
    Error(String),
}

#[derive(Default)]
struct Tasks(Vec<tokio::task::JoinHandle<()>>);

impl Tasks {
    fn spawn(&mut self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        self.0.push(tokio::spawn(f));
    }
    fn abort_all(&mut self) {
        for t in self.0.drain(..) {
            t.abort();
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.abort_all();
    }
}

struct Loop<'a> {
    api: &'a CaseApi,
    case: &'a LoadedCase,
    env: &'a CaseEnv,
    obs: Observer,
    rx: &'a mut mpsc::Receiver<StreamMsg>,
    tx: streams::Tx,
    tasks: Tasks,
    pod_name: String,
    /// Terminated instances and deletion, for the log fetches.
    known: tokio::sync::watch::Sender<streams::Known>,
    /// Since when the pod watch is down (a gap is open), if it is.
    pod_down_since: Option<Instant>,
    /// How long the pod watch was down in total (closed gaps).
    pod_downtime: Duration,
}

/// Sends one of our requests and records it as an action: `sent` before its last try (a
/// request retried through an outage took effect with it), `done` after.
async fn act(
    api: &CaseApi,
    obs: &mut Observer,
    kind: ActionKind,
    grace_period_seconds: Option<i64>,
    detail: Option<String>,
    request: impl std::future::Future<Output = Result<(), ClusterError>>,
) -> Result<Option<Verdict>, Stop> {
    let first = Timestamp::now();
    request.await?;
    let sent = api.last_sent().filter(|t| *t > first).unwrap_or(first);
    obs.push(Input::Action(Action {
        kind,
        sent,
        done: Some(Timestamp::now()),
        grace_period_seconds,
        detail,
        exec: None,
    }));
    Ok(None)
}

impl Loop<'_> {
    /// Ends the case early (Ctrl-C or a harness error), keeping what was observed.
    fn stop(mut self, stop: Stop, started: Timestamp, t0: Instant) -> Result<Attempt, CaseError> {
        self.tasks.abort_all();
        api_outage_gaps(&mut self.obs, self.env);
        let tl = self.obs.finish();
        match stop {
            Stop::Interrupted => Ok(interrupted(started, t0, Some(tl))),
            Stop::Error(e) => Err(Box::new((e, Some(tl)))),
        }
    }

    /// How long, since `began`, nothing could be seen (the pod watch down) or done (the API
    /// server taking no request), within the outage budget.
    fn blind_since(&self, began: Instant) -> Duration {
        let now = Instant::now();
        let watch = self.pod_downtime + self.pod_down_since.map_or(Duration::ZERO, |s| now - s.max(began));
        let api = self.env.api_health.as_ref().map_or(Duration::ZERO, |h| {
            h.down_between(
                tokio::time::Instant::from_std(began),
                tokio::time::Instant::from_std(now),
            )
        });
        watch.max(api).min(self.env.api_outage_budget)
    }

    /// Feeds inputs to the observer until `done` holds (true) or `until` passes (false).
    async fn run_until(
        &mut self,
        until: Instant,
        cancel: &mut tokio::sync::watch::Receiver<bool>,
        what: &str,
        done: impl Fn(&Timeline) -> bool,
    ) -> Result<bool, Stop> {
        self.run_until_every(until, cancel, what, Duration::ZERO, done).await
    }

    /// Like `run_until`, but evaluates `done` at most once per `every` (for conditions that
    /// judge the whole timeline, which a chatty container would otherwise trigger per line).
    async fn run_until_every(
        &mut self,
        until: Instant,
        cancel: &mut tokio::sync::watch::Receiver<bool>,
        what: &str,
        every: Duration,
        done: impl Fn(&Timeline) -> bool,
    ) -> Result<bool, Stop> {
        let began = Instant::now();
        let mut next_progress = crate::util::add(began, self.env.progress_every);
        let mut next_eval = began;
        let downtime_before = self.pod_downtime;
        loop {
            if Instant::now() >= next_eval {
                if done(self.obs.timeline()) {
                    return Ok(true);
                }
                next_eval = crate::util::after(every);
            }
            let now = Instant::now();
            // While the pod watch is down nothing can be seen: the wait is extended by the
            // time it was down (within the outage budget), so an outage does not time it out.
            let watch_blind = self.pod_downtime - downtime_before
                + self.pod_down_since.map_or(Duration::ZERO, |s| now - s.max(began));
            // While the API takes no new request nothing can progress either (the kubelet cannot
            // write), even with the watches up: the wait is extended by that too.
            let api_blind = self.env.api_health.as_ref().map_or(Duration::ZERO, |h| {
                h.down_between(
                    tokio::time::Instant::from_std(began),
                    tokio::time::Instant::from_std(now),
                )
            });
            let blind = watch_blind.max(api_blind);
            let until = crate::util::add(until, blind.min(self.env.api_outage_budget));
            if now >= until {
                return Ok(false);
            }
            if now >= next_progress {
                eprintln!(
                    "    {}: waiting for {what} ({} elapsed, {} left)",
                    self.case.full_name(),
                    crate::util::fmt_secs((now - began).as_secs_f64().round()),
                    crate::util::fmt_secs((until - now).as_secs_f64().round())
                );
                next_progress = crate::util::add(now, self.env.progress_every);
            }
            let wake = until
                .min(next_progress)
                .min(if every.is_zero() { until } else { next_eval });
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(StreamMsg::Input(i)) => self.take(i),
                    Some(StreamMsg::Lost { source: EvidenceSource::PodWatch, reason }) => {
                        return Err(Stop::Error(reason));
                    }
                    // Events or a log given up: their gap stays open; the judge accounts for it.
                    Some(StreamMsg::Lost { .. }) => {}
                    None => return Ok(false),
                },
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = cancel.changed() => return Err(Stop::Interrupted),
            }
        }
    }

    /// Feeds one input to the observer; starts log fetches for new instances and tells them
    /// what ended; keeps the pod watch's downtime.
    fn take(&mut self, i: Input) {
        match &i {
            Input::Gap(g) if g.source == EvidenceSource::PodWatch && g.to.is_none() => {
                self.pod_down_since.get_or_insert_with(Instant::now);
            }
            Input::SourceUp {
                source: EvidenceSource::PodWatch,
                ..
            } => {
                if let Some(s) = self.pod_down_since.take() {
                    self.pod_downtime += s.elapsed();
                }
            }
            _ => {}
        }
        let pod = matches!(i, Input::Pod { .. });
        self.obs.push(i);
        for n in self.obs.take_new_instances() {
            self.follow_logs(n);
        }
        if pod {
            let tl = self.obs.timeline();
            let known = streams::Known {
                terminated: tl
                    .instances
                    .iter()
                    .filter(|i| i.finished_at.is_some() || i.first_seen_terminated.is_some())
                    .map(|i| (i.container.clone(), i.instance))
                    .collect(),
                gone: tl.deleted.is_some(),
            };
            self.known.send_if_modified(|k| {
                let changed = *k != known;
                *k = known;
                changed
            });
        }
    }

    /// Fetches an instance's log (see `streams::follow_log`).
    fn follow_logs(&mut self, n: NewInstance) {
        self.api.count();
        self.tasks.spawn(streams::follow_log(
            self.api.pods(),
            self.pod_name.clone(),
            n,
            self.tx.clone(),
            self.env.api_outage_budget,
            self.known.subscribe(),
        ));
    }
}

impl From<ClusterError> for Stop {
    fn from(e: ClusterError) -> Self {
        match e {
            ClusterError::Interrupted => Stop::Interrupted,
            e => Stop::Error(e.to_string()),
        }
    }
}
