//! Observing a live case: the pod, event and log streams into the observer, the steps acted
//! on the cluster in order, the waits bounded by the case timeout (extended by API outages).

use super::*;

/// When an attempt began: the wall-clock time its report gives, and the instant its duration is
/// measured from.
#[derive(Clone, Copy)]
pub(super) struct Began {
    pub(super) started: Timestamp,
    pub(super) t0: Instant,
}

/// Observes one live attempt of `case`: its namespaces created (into `created`, which the
/// cleanup deletes), the streams started, the objects and the pod applied, the steps acted out,
/// and the pod watched until it settles or every expectation is decided.
pub(super) async fn observe_case(
    api: &CaseApi,
    case: &LoadedCase,
    env: &CaseEnv,
    began: Began,
    created: &mut Vec<Created>,
    recorder: Option<&SharedRecorder>,
) -> Result<Attempt, CaseError> {
    let Began { started, t0 } = began;
    let mut cancel = env.cancel.clone();
    if *cancel.borrow() {
        return Ok(interrupted(started, t0, None));
    }
    let second = match create_namespaces(api, case, env, created).await {
        Ok(second) => second,
        Err(early) => return early.end(started, t0),
    };
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
    let pod_watch_up = start_watches(api, &pod_name, &tx, budget, &mut tasks);
    let mut obs = Observer::new(Some(&pod_name), "live");
    if let Some(rec) = recorder {
        rec.lock().expect("recorder").manifest(&pod);
        obs.set_tap(Recorder::tap(rec));
    }
    if let Err(stop) = wait_listening(env, pod_watch_up, &mut rx, &mut obs, &mut tasks, &mut cancel).await {
        return end_early(stop, &mut tasks, obs, started, t0);
    }
    // A start slot of the node (see `RunOptions::starts_per_node`), held from the pod's
    // creation until it runs a container; taken before the case's clock starts.
    let start_slot = if env.starts.is_unbounded() {
        None
    } else {
        tokio::select! {
            p = env.starts.acquire() => Some(p),
            _ = cancel.wait_for(|v| *v) => {
                tasks.abort_all();
                return Ok(interrupted(started, t0, Some(obs.finish())));
            }
        }
    };
    // Room on the node, waited for with the start slot held and before the clock starts too.
    let Some(_running) = room_on_node(env, case, &mut cancel).await else {
        tasks.abort_all();
        return Ok(interrupted(started, t0, Some(obs.finish())));
    };
    let deadline = crate::util::after(case.timeout);
    if let Err(stop) = apply_all(api, second.as_ref(), case, env, &pod, &mut obs).await {
        return end_early(stop, &mut tasks, obs, started, t0);
    }
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
        start_slot: start_slot.map(|p| (p, crate::util::after(crate::run::START_HOLD))),
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
        let r = loop_.step(i, &step.value, deadline, &mut cancel).await;
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
        // Events the kubelet recorded as the pod settled arrive as late as its earlier ones
        // did: the tail waits that out too (a node whose clock or queue is further behind is
        // judged on what arrived within `MAX_EVENT_DELAY`).
        let late = loop_.obs.timeline().event_delay(started).min(MAX_EVENT_DELAY);
        let tail = crate::util::after(env.settle + late).min(deadline.max(Instant::now()));
        let _ = loop_.run_until(tail, &mut cancel, "settle", |_| false).await;
    }
    closing_read(api, &mut loop_.obs, env, &pod_name).await;
    loop_.tasks.abort_all();
    drop(tx);
    api_outage_gaps(&mut loop_.obs, env);
    kubelet_restart_gaps(&mut loop_.obs, env);
    let tl = loop_.obs.finish();
    Ok(conclude(case, tl, step_failure, started, t0))
}

/// Waits while the node the case's pod runs on is busy with podlife's own cases (see
/// `health::ApiHealth::must_wait`: bounded, and only where the run knows the node), then counts
/// the case as running there until the returned guard is dropped. `None`: interrupted.
async fn room_on_node(
    env: &CaseEnv,
    case: &LoadedCase,
    cancel: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<Option<crate::run::health::Running>> {
    let Some(h) = &env.api_health else { return Some(None) };
    let Some(node) = h.node_of(env.node.as_deref().or(env.target.node.as_deref())) else {
        return Some(None);
    };
    let held = tokio::select! {
        held = h.wait_for_room(&node) => held,
        _ = cancel.wait_for(|v| *v) => return None,
    };
    if let Some(((cores, capacity), waited)) = held {
        eprintln!(
            "    {}: waited {} for room on {node} ({cores:.2} of its {capacity} cores busy with podlife's cases)",
            case.full_name(),
            crate::util::fmt_secs(waited.as_secs_f64().round()),
        );
    }
    Some(Some(h.enter(&node)))
}

/// The longest the observation's tail waits for the pod's late events (see
/// `Timeline::event_delay`): a kubelet whose events come later than this is not busy but
/// broken, or its clock is off, and its events are judged as they came.
const MAX_EVENT_DELAY: Duration = Duration::from_secs(30);

/// How a live case's namespaces were not made ready: Ctrl-C, or a harness error.
enum Early {
    Interrupted,
    Error(CaseError),
}

impl Early {
    /// The attempt this ends in.
    fn end(self, started: Timestamp, t0: Instant) -> Result<Attempt, CaseError> {
        match self {
            Early::Interrupted => Ok(interrupted(started, t0, None)),
            Early::Error(e) => Err(e),
        }
    }
}

/// Creates the case's namespace (and its second one, if it has objects there) and waits until
/// it is usable; the second namespace's API is returned. The second namespace is the case's
/// like the first: the same labels (the sweep and `clean` find it), registered and deleted with
/// it.
async fn create_namespaces(
    api: &CaseApi,
    case: &LoadedCase,
    env: &CaseEnv,
    created: &mut Vec<Created>,
) -> Result<Option<CaseApi>, Early> {
    let second = (!case.second_namespace.is_empty())
        .then(|| api.in_namespace(&crate::suite::naming::second_namespace_name(&api.namespace)));
    let ours = std::iter::once((api, "")).chain(second.as_ref().map(|s| (s, "the second namespace: ")));
    for (ns, what) in ours {
        // A case not started yet waits (within the outage budget) for an API that is away.
        match ns
            .create_namespace(
                &env.run_id,
                &case.suite,
                case.name(),
                env.api_outage_budget,
                in_use_until(case, env),
            )
            .await
        {
            Ok(uid) => created.push(Created::new(env, ns, uid)),
            Err(ClusterError::Interrupted) => return Err(Early::Interrupted),
            Err(source) => return Err(Early::Error(CaseError::new(CaseCause::Request { what, source }, None))),
        }
    }
    match api.wait_namespace_ready(env.api_outage_budget).await {
        Ok(()) => Ok(second),
        Err(ClusterError::Interrupted) => Err(Early::Interrupted),
        Err(e) => Err(Early::Error(CaseError::new(e, None))),
    }
}

/// Waits until the pod watch is listening. It must be before the pod exists, or its first
/// versions (Pending, the unscheduled pod) are never seen. Bounded: the watch gives up after the
/// outage budget (its sender is then dropped), and a list that never answers by the request
/// timeout; the pod is then never created, and the watch's last error says why.
async fn wait_listening(
    env: &CaseEnv,
    pod_watch_up: tokio::sync::oneshot::Receiver<()>,
    rx: &mut mpsc::Receiver<StreamMsg>,
    obs: &mut Observer,
    tasks: &mut Tasks,
    cancel: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<(), Stop> {
    let listening = tokio::select! {
        r = tokio::time::timeout(env.api_outage_budget.saturating_add(env.request_timeout), pod_watch_up) => {
            matches!(r, Ok(Ok(())))
        }
        _ = cancel.wait_for(|v| *v) => return Err(Stop::Interrupted),
    };
    if !listening {
        tasks.abort_all();
        // The watch says why it gave up (its last error); otherwise its list never answered.
        let mut why = format!(
            "the pod watch did not start within {}",
            crate::util::fmt_secs(env.api_outage_budget.saturating_add(env.request_timeout).as_secs_f64())
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
        return Err(Stop::Error(CaseCause::PodNotCreated { why }));
    }
    Ok(())
}

/// Applies the pod's auxiliary objects first, in order, each recorded as our action: the pod may
/// only be created once what it consumes exists. Those of the second namespace come first, as
/// upstream creates them: the pod's own are then the newest of their name. Then the pod.
async fn apply_all(
    api: &CaseApi,
    second: Option<&CaseApi>,
    case: &LoadedCase,
    env: &CaseEnv,
    pod: &serde_json::Value,
    obs: &mut Observer,
) -> Result<(), Stop> {
    let own = case.objects.iter().map(|o| (api, o, o.id()));
    let elsewhere = second.into_iter().flat_map(|s| {
        case.second_namespace
            .iter()
            .map(move |o| (s, o, o.second_namespace_id()))
    });
    for (api, o, id) in elsewhere.chain(own) {
        let sent = Timestamp::now();
        api.apply_object(&o.value, env.api_outage_budget).await?;
        obs.push(Input::Action(Action {
            kind: ActionKind::ApplyObject,
            sent,
            done: Some(Timestamp::now()),
            grace_period_seconds: None,
            detail: Some(id),
            exec: None,
            update: None,
        }));
    }
    let sent = Timestamp::now();
    api.apply_pod(pod, env.api_outage_budget).await?;
    obs.push(Input::Action(Action {
        kind: ActionKind::Apply,
        sent,
        done: Some(Timestamp::now()),
        grace_period_seconds: None,
        detail: None,
        exec: None,
        update: None,
    }));
    Ok(())
}

/// Starts the pod and Event watches of the case; the receiver fires when the pod watch has
/// listed. Watches start before the apply so the first events are not missed.
fn start_watches(
    api: &CaseApi,
    pod_name: &str,
    tx: &streams::Tx,
    budget: Duration,
    tasks: &mut Tasks,
) -> tokio::sync::oneshot::Receiver<()> {
    let (pod_listed, pod_watch_up) = tokio::sync::oneshot::channel();
    tasks.spawn(streams::watch_pods(
        api.pods(),
        pod_name.to_string(),
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
    pod_watch_up
}

/// Ends the case before its steps (Ctrl-C, or a harness error), keeping what was observed.
fn end_early(
    stop: Stop,
    tasks: &mut Tasks,
    obs: Observer,
    started: Timestamp,
    t0: Instant,
) -> Result<Attempt, CaseError> {
    tasks.abort_all();
    let tl = obs.finish();
    match stop {
        Stop::Interrupted => Ok(interrupted(started, t0, Some(tl))),
        Stop::Error(cause) => Err(CaseError::new(cause, Some(tl))),
    }
}

/// After a gap in the pod watch or an API outage, one read of the pod at the end: the version it
/// returns is the state after every gap. The same resourceVersion as the last one watched means
/// nothing was written since (the gaps hid nothing); a newer one is a snapshot of its own. Both
/// let the judge rule out what monotonic fields forbid (see `judge::marks::disproof`). Skipped
/// when nothing was lost or the pod is gone, so a normal case makes no extra request.
async fn closing_read(api: &CaseApi, obs: &mut Observer, env: &CaseEnv, pod_name: &str) {
    let tl = obs.timeline();
    let created = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent);
    let outage = match (&env.api_health, created) {
        (Some(h), Some(c)) => !h.outages_between(c, Timestamp::now()).is_empty(),
        _ => false,
    };
    if tl.deleted.is_some() || (tl.pod_gaps().next().is_none() && !outage) {
        return;
    }
    if let Ok(pod) = api.read_pod(pod_name).await {
        obs.push(Input::Pod {
            received: Timestamp::now(),
            kind: crate::observe::WatchKind::Modified,
            pod: Box::new(pod),
        });
    }
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
                back: o.back,
                clock: crate::observe::GapClock::Harness,
                reason: o.reason.clone(),
            }));
        }
    }
}

/// How long before its `Starting` event a restarted kubelet may have been down: longer, and its
/// node's lease lapses (the node monitor's 40 s grace period) and the node turns NotReady.
const KUBELET_DOWN_AT_MOST: jiff::SignedDuration = jiff::SignedDuration::from_secs(40);
/// After it starts, the kubelet re-lists its pods and syncs each (PLEG relist 1 s, the pod
/// workers' first sync): reactions in these seconds are its start-up's, not its steady pace.
const KUBELET_START_UP: jiff::SignedDuration = jiff::SignedDuration::from_secs(10);

/// A restart of the pod's kubelet during the case is a gap of the `Kubelet` source around it,
/// so that timings across it (a back-off the restart reset, a probe whose count started over)
/// are undecided, naming the restart, not judged as the node's.
fn kubelet_restart_gaps(obs: &mut Observer, env: &CaseEnv) {
    let Some(h) = &env.api_health else { return };
    let tl = obs.timeline();
    let Some(node) = tl.pod.node.clone() else { return };
    let Some(created) = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent) else {
        return;
    };
    let now = Timestamp::now();
    for k in h.kubelet_starts_between(&node, created, now) {
        let from = Some(crate::util::ts_add(k.at, -KUBELET_DOWN_AT_MOST));
        // Recorded once, whether a failed wait or the end of the case asks first.
        if obs
            .timeline()
            .gaps
            .iter()
            .any(|g| g.source == EvidenceSource::Kubelet && g.from == from)
        {
            continue;
        }
        obs.push(Input::Gap(crate::observe::Gap {
            source: EvidenceSource::Kubelet,
            from: Some(crate::util::ts_add(k.at, -KUBELET_DOWN_AT_MOST)),
            to: Some(crate::util::ts_add(k.at, KUBELET_START_UP)),
            back: None,
            clock: crate::observe::GapClock::Node,
            reason: format!(
                "the kubelet of {node} restarted (its Starting event {}): its back-off, probe state and pending work started over",
                crate::util::hms(k.at)
            ),
        }));
    }
}

impl Loop<'_> {
    /// Acts out step `i` (or waits, for a `waitFor` or a `sleep`) within `deadline`: a verdict
    /// when a wait failed, a stop for Ctrl-C or a harness error.
    async fn step(
        &mut self,
        i: usize,
        step: &Step,
        deadline: Instant,
        cancel: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Result<Option<Verdict>, Stop> {
        let (api, case, env) = (self.api, self.case, self.env);
        let pod_name = self.pod_name.clone();
        match step {
            Step::WaitFor(w) => self.wait_for(i, w, deadline, cancel).await,
            Step::Sleep(d) => {
                let until = crate::util::after(d.r#for.0).min(deadline);
                self.run_until(until, cancel, "sleep", |_| false).await.map(|_| None)
            }
            Step::Delete(d) => {
                let grace = d.grace_period_seconds;
                act(
                    api,
                    &mut self.obs,
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
                    &mut self.obs,
                    ActionKind::Ephemeral,
                    None,
                    Some(format!("{} via {}", e.name(), e.via.as_str())),
                    api.add_ephemeral(&pod_name, &container, e.via, env.api_outage_budget),
                )
                .await
            }
            Step::Exec(x) => self.exec(i, x, deadline).await,
            Step::FetchLog(l) => self.fetch_log(i, l, deadline).await,
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
                act(api, &mut self.obs, kind, None, Some(obj.id()), request).await
            }
            Step::Update(u) => self.update(i, u).await,
            Step::Resize(r) => {
                let patch = case.resize_patch(r);
                let resources = r
                    .containers
                    .iter()
                    .map(|(n, x)| (n.clone(), x.value.to_json()))
                    .collect();
                act(
                    api,
                    &mut self.obs,
                    ActionKind::Resize,
                    None,
                    Some(r.detail()),
                    api.resize_pod(&pod_name, r.via, &patch, &resources, env.api_outage_budget),
                )
                .await
            }
            Step::Patch(p) => {
                let patch = case.patch_body(p, &env.images);
                act(
                    api,
                    &mut self.obs,
                    ActionKind::Patch,
                    None,
                    Some(patch.to_string()),
                    api.patch_pod(&pod_name, &patch, env.api_outage_budget),
                )
                .await
            }
        }
    }

    /// A `waitFor` step: waits for its mark within its own timeout and the case's deadline; a
    /// verdict when the mark did not come (undecided when a gap may hide it).
    async fn wait_for(
        &mut self,
        i: usize,
        w: &crate::suite::WaitFor,
        deadline: Instant,
        cancel: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Result<Option<Verdict>, Stop> {
        let (case, env) = (self.case, self.env);
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
        self.run_until(until, cancel, &format!("steps[{i}] waitFor {what}"), |tl| {
            judge::mark_occurred(&case.spec, &w.until, tl).is_ok()
        })
        .await
        .map(|reached| {
            (!reached).then(|| {
                // A kubelet restart so far is part of why the mark may not have come.
                kubelet_restart_gaps(&mut self.obs, env);
                let tl = self.obs.timeline();
                let why = judge::mark_occurred(&case.spec, &w.until, tl)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                let evidence = format!("steps[{i}] waitFor {what}: {limit}: {why}");
                wait_failed(case, &w.until, tl, evidence)
            })
        })
    }

    /// An `exec` step, bounded by its own timeout and what is left of the case's: its result is
    /// recorded as an action for the `exec` expectations.
    async fn exec(&mut self, i: usize, x: &crate::suite::ExecStep, deadline: Instant) -> Result<Option<Verdict>, Stop> {
        let (api, case, pod_name) = (self.api, self.case, self.pod_name.clone());
        // Bounded by its own timeout and what is left of the case's.
        let own = x.timeout.map(|d| d.0).unwrap_or(crate::suite::DEFAULT_EXEC_TIMEOUT);
        let timeout = own.min(deadline.saturating_duration_since(Instant::now()));
        let first = Timestamp::now();
        match api
            .exec(&pod_name, &x.container.value, &x.command.value, x.protocol, timeout)
            .await
        {
            Ok(r) => {
                let detail = format!("{} in {}", x.command.value.join(" "), x.container.value);
                let step = format!("{}: steps[{i}] exec", case.full_name());
                self.record_answered(&step, &x.name.value, first, detail, r);
                Ok(None)
            }
            Err(e) => Err(Stop::from(e)),
        }
    }

    /// A `fetchLog` step: one read of a container's log over a websocket, recorded like an exec.
    async fn fetch_log(
        &mut self,
        i: usize,
        l: &crate::suite::FetchLogStep,
        deadline: Instant,
    ) -> Result<Option<Verdict>, Stop> {
        let (api, case, pod_name) = (self.api, self.case, self.pod_name.clone());
        let own = l.timeout.map(|d| d.0).unwrap_or(crate::suite::DEFAULT_EXEC_TIMEOUT);
        let timeout = own.min(deadline.saturating_duration_since(Instant::now()));
        let first = Timestamp::now();
        match api.fetch_log(&pod_name, &l.container.value, l.protocol, timeout).await {
            Ok(r) => {
                let detail = format!("log of {} over {}", l.container.value, l.protocol.as_str());
                let step = format!("{}: steps[{i}] fetchLog", case.full_name());
                self.record_answered(&step, &l.name.value, first, detail, r);
                Ok(None)
            }
            Err(e) => Err(Stop::from(e)),
        }
    }

    /// Records an exec or a log read that was answered, named as its step (`name`), as sent
    /// when its last try was (after `first`).
    fn record_answered(
        &mut self,
        step: &str,
        name: &str,
        first: Timestamp,
        detail: String,
        mut r: crate::observe::ExecResult,
    ) {
        r.name = name.to_string();
        let sent = self.api.last_sent().filter(|t| *t > first).unwrap_or(first);
        self.obs.push(answered(step, sent, detail, r));
    }

    /// An `update` step: paced GET-change-PUT rounds, recorded as one action with their result.
    async fn update(&mut self, i: usize, u: &crate::suite::UpdateStep) -> Result<Option<Verdict>, Stop> {
        let (api, case, env, pod_name) = (self.api, self.case, self.env, self.pod_name.clone());
        let (init, images) = case.update_images(u, &env.images);
        let first = Timestamp::now();
        match api
            .update_pod(&pod_name, u, &init, &images, env.api_outage_budget)
            .await
        {
            Ok(done) => {
                if let Some(e) = &done.result.error {
                    eprintln!("    {}: steps[{i}] update `{}`: {e}", case.full_name(), u.name.value);
                }
                // Sent when the PUT that made the last change was: the kubelet reacts
                // to that one (a step that stopped early: when it began).
                let sent = done.last_put.or(done.result.first_sent).unwrap_or(first);
                self.obs.push(Input::Action(Action {
                    kind: ActionKind::Update,
                    sent,
                    done: Some(Timestamp::now()),
                    grace_period_seconds: None,
                    detail: Some(format!("{} × {}", u.name.value, u.times())),
                    exec: None,
                    update: Some(Box::new(done.result)),
                }));
                Ok(None)
            }
            Err(e) => Err(Stop::from(e)),
        }
    }
}

enum Stop {
    Interrupted,
    Error(CaseCause),
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
    /// The node's start slot this case holds, and when it gives it up at the latest.
    start_slot: Option<(crate::run::budget::StartPermit, Instant)>,
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
        update: None,
    }));
    Ok(None)
}

impl Loop<'_> {
    /// Ends the case early (Ctrl-C or a harness error), keeping what was observed.
    fn stop(mut self, stop: Stop, started: Timestamp, t0: Instant) -> Result<Attempt, CaseError> {
        self.tasks.abort_all();
        api_outage_gaps(&mut self.obs, self.env);
        kubelet_restart_gaps(&mut self.obs, self.env);
        let tl = self.obs.finish();
        match stop {
            Stop::Interrupted => Ok(interrupted(started, t0, Some(tl))),
            Stop::Error(cause) => Err(CaseError::new(cause, Some(tl))),
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
            self.release_start_slot();
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
                .min(self.start_slot.as_ref().map_or(until, |(_, by)| *by))
                .min(if every.is_zero() { until } else { next_eval });
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(StreamMsg::Input(i)) => self.take(i),
                    Some(StreamMsg::Lost { source: EvidenceSource::PodWatch, reason }) => {
                        return Err(Stop::Error(CaseCause::PodWatchLost(reason)));
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

    /// Gives the start slot back once the pod's start is over: a container of it started (or
    /// ended), the pod reached a terminal phase or was deleted, or the slot was held for
    /// `START_HOLD` (a pod Pending by design).
    fn release_start_slot(&mut self) {
        let Some((_, by)) = &self.start_slot else {
            return;
        };
        let tl = self.obs.timeline();
        let started = tl
            .instances
            .iter()
            .any(|i| i.started_at.is_some() || i.first_seen_running.is_some() || i.first_seen_terminated.is_some());
        let ended = matches!(tl.final_phase(), Some("Succeeded" | "Failed")) || tl.deleted.is_some();
        if started || ended || Instant::now() >= *by {
            self.start_slot = None;
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
            e => Stop::Error(e.into()),
        }
    }
}

/// Our exec or log read, answered: an `exec` action carrying its result, which `exec`
/// expectations judge. A stream that broke is said on the console (`step` names it) as well as
/// kept in the result.
fn answered(step: &str, sent: Timestamp, detail: String, r: crate::observe::ExecResult) -> Input {
    if let Some(e) = &r.error {
        eprintln!("    {step} `{}`: {e}", r.name);
    }
    Input::Action(Action {
        kind: ActionKind::Exec,
        sent,
        done: Some(Timestamp::now()),
        grace_period_seconds: None,
        detail: Some(detail),
        exec: Some(Box::new(r)),
        update: None,
    })
}
