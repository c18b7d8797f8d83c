//! The `Observer`: turns a stream of `Input`s (pod watch events, Event watch events, log lines,
//! our actions) into a `Timeline`. Live runs and recordings feed it the same inputs.

mod events;
mod logs;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::Timestamp;
use k8s_openapi::api::core::v1 as core;

use super::timeline::*;
use crate::suite::ContainerKind;
pub use events::container_from_field_path;
pub use logs::{
    MAX_LOG_BYTES_PER_INSTANCE, MAX_LOG_LINE_BYTES, MAX_LOG_LINES_PER_INSTANCE, TRUNCATED_MARKER, cap_line,
    parse_cri_line, parse_log_line,
};

/// The field manager of podlife's server-side applies (the pod, its objects).
pub const OUR_FIELD_MANAGER: &str = "podlife";

/// Watch event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchKind {
    Added,
    Modified,
    Deleted,
}

impl WatchKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ADDED" => Some(WatchKind::Added),
            "MODIFIED" => Some(WatchKind::Modified),
            "DELETED" => Some(WatchKind::Deleted),
            _ => None,
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            WatchKind::Added => "ADDED",
            WatchKind::Modified => "MODIFIED",
            WatchKind::Deleted => "DELETED",
        }
    }
}

/// One thing that happened, as delivered to podlife.
#[derive(Clone, Debug)]
pub enum Input {
    Pod {
        received: Timestamp,
        kind: WatchKind,
        pod: Box<core::Pod>,
    },
    Event {
        received: Timestamp,
        kind: WatchKind,
        event: Box<core::Event>,
    },
    /// A `--timestamps` log line (`<RFC3339Nano> <text>`) of a container. `instance` is the
    /// instance the fetch was meant for; the observer checks it against the instances' status
    /// times, because a follow or `--previous` request can race with a restart.
    Log {
        received: Option<Timestamp>,
        container: String,
        instance: Option<u32>,
        line: String,
    },
    Action(Action),
    /// A source stopped delivering, or was never available (`from: None`): live, a failed
    /// request or a broken stream; in a recording, a line of `gaps.jsonl`. A gap with `to`
    /// set is complete; one without stays open until `SourceUp` or the end.
    Gap(Gap),
    /// The source delivers again (its watch is re-established): closes its open gap.
    SourceUp {
        source: EvidenceSource,
        at: Timestamp,
    },
    /// A log stream that broke (its gap opened at the failure) was resumed and the resumed fetch
    /// re-delivered the last line seen before it: nothing was lost, so the open gap is withdrawn
    /// (and a note says the stream broke).
    Resumed {
        source: EvidenceSource,
    },
}

impl Input {
    /// Time used to order inputs from a recording.
    pub fn order_key(&self) -> Option<Timestamp> {
        match self {
            Input::Pod { received, .. } | Input::Event { received, .. } => Some(*received),
            Input::Log { received, .. } => *received,
            Input::Action(a) => Some(a.sent),
            Input::Gap(g) => g.from,
            Input::SourceUp { at, .. } => Some(*at),
            Input::Resumed { .. } => None,
        }
    }
}

/// A container instance first seen in status: the live runner starts following its logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewInstance {
    pub container: String,
    pub instance: u32,
    pub container_id: String,
    /// Already terminated when first seen: fetch its logs without following.
    pub terminated: bool,
    /// Only seen as `lastState`: its logs need `previous=true`.
    pub previous: bool,
}

/// How many never-seen instances of one container get a gap of their own (see
/// `lost_instance_logs`).
const MAX_UNSEEN_INSTANCES: u32 = 1024;

/// Builds a `Timeline` incrementally.
#[derive(Debug, Default)]
pub struct Observer {
    tl: Timeline,
    /// Pod name to observe; events about other objects are ignored.
    pod_name: Option<String>,
    last_rv: Option<u64>,
    seen_rvs: BTreeSet<String>,
    /// containerID → (container, instance).
    ids: HashMap<String, (String, u32)>,
    /// Event uid → highest count seen.
    event_counts: HashMap<String, u32>,
    log_keys: BTreeSet<(String, Timestamp, String)>,
    kinds: BTreeMap<String, ContainerKind>,
    new_instances: Vec<NewInstance>,
    /// Kept lines and bytes per (container, instance), for the caps.
    kept: HashMap<(String, u32), (usize, usize)>,
    /// Sees every input before the observer does, in push order (the run recorder).
    tap: Option<Tap>,
}

/// A callback that sees every input pushed to an `Observer`, in order: the live runner uses it
/// to record exactly what the observer was fed, so a replay rebuilds the same timeline.
pub struct Tap(pub Box<dyn FnMut(&Input) + Send>);

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

impl Observer {
    /// An observer for the pod `name` (None: the first pod seen).
    pub fn new(pod_name: Option<&str>, source: &str) -> Self {
        Observer {
            tl: Timeline {
                format: TIMELINE_FORMAT,
                source: source.to_string(),
                ..Timeline::default()
            },
            pod_name: pod_name.map(str::to_string),
            ..Observer::default()
        }
    }

    pub fn timeline(&self) -> &Timeline {
        &self.tl
    }

    /// Marks the observation as ended and returns the timeline.
    pub fn finish(mut self) -> Timeline {
        self.lost_instance_logs();
        self.tl.complete = true;
        self.tl
    }

    /// An instance first seen only after a later one had started (it lived while the pod watch
    /// was blind, or the kubelet could not write: an API outage) has a log no one can fetch any
    /// more: the runtime keeps only the current and the previous instance's. Without a line of it,
    /// its log is a gap, so a count over the container's logs is not decided as if it had been
    /// read (live: a crash-looping container's instance 3 ran inside a 65 s outage).
    fn lost_instance_logs(&mut self) {
        let second = jiff::SignedDuration::from_secs(1);
        let mut lost = vec![];
        for i in &self.tl.instances {
            let replaced = self.tl.instances.iter().any(|j| {
                j.container == i.container
                    && j.instance > i.instance
                    && j.started_at
                        .is_some_and(|s| crate::util::ts_add(s, second) <= i.first_seen)
            });
            let has_lines = self
                .tl
                .logs
                .iter()
                .any(|l| l.container == i.container && l.instance == i.instance);
            let covered = self.tl.gaps.iter().any(|g| {
                g.source
                    == EvidenceSource::Logs {
                        container: Some(i.container.clone()),
                        instance: Some(i.instance),
                    }
            });
            if replaced && !has_lines && !covered {
                lost.push((i.container.clone(), i.instance));
            }
        }
        // Instances never seen at all: the first status seen already counted restarts (or the
        // count jumped), so instances below or between the seen ones ran while the pod watch
        // was blind or the kubelet could not write (live: a postStart-failing container's
        // instances 0-2 lived inside a 64 s API outage; the first status seen said restartCount 3).
        let mut unseen = vec![];
        let mut containers: Vec<&str> = self.tl.instances.iter().map(|i| i.container.as_str()).collect();
        containers.sort_unstable();
        containers.dedup();
        for c in containers {
            let seen: BTreeSet<u32> = self
                .tl
                .instances
                .iter()
                .filter(|i| i.container == c)
                .map(|i| i.instance)
                .collect();
            let top = seen.iter().next_back().copied().unwrap_or(0);
            // Bounded: a restartCount is the API's word, and bad input must not make a billion
            // gaps. The back-off (capped at 5 min) allows a few hundred restarts a day; below
            // the first 1,024 instances every unseen one gets its gap.
            for n in (0..top.min(MAX_UNSEEN_INSTANCES)).filter(|n| !seen.contains(n)) {
                let covered = self.tl.gaps.iter().any(|g| {
                    g.source
                        == EvidenceSource::Logs {
                            container: Some(c.to_string()),
                            instance: Some(n),
                        }
                });
                if !covered {
                    let next = seen.range(n..).next().copied().unwrap_or(top);
                    unseen.push((c.to_string(), n, next));
                }
            }
        }
        for (container, instance, next) in unseen {
            self.tl.gaps.push(Gap {
                source: EvidenceSource::Logs {
                    container: Some(container.clone()),
                    instance: Some(instance),
                },
                from: None,
                to: None,
                clock: GapClock::Node,
                reason: format!(
                    "`{container}`#{instance} was never seen: it ran while the pod's status was not observed (#{next} was the next seen), so its state and log are unknown"
                ),
            });
        }
        for (container, instance) in lost {
            self.tl.gaps.push(Gap {
                source: EvidenceSource::Logs {
                    container: Some(container.clone()),
                    instance: Some(instance),
                },
                from: None,
                to: None,
                clock: GapClock::Node,
                reason: format!(
                    "`{container}`#{instance} was first seen after a later instance had started: its log could no longer be fetched"
                ),
            });
        }
    }

    /// Calls `tap` with every input from now on, before the observer handles it.
    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// Instances discovered since the last call (for log following).
    pub fn take_new_instances(&mut self) -> Vec<NewInstance> {
        std::mem::take(&mut self.new_instances)
    }

    /// The instance number already assigned to a containerID.
    pub fn instance_of(&self, container_id: &str) -> Option<u32> {
        self.ids.get(container_id).map(|(_, i)| *i)
    }

    pub fn push(&mut self, input: Input) {
        if let Some(Tap(tap)) = &mut self.tap {
            tap(&input);
        }
        match input {
            Input::Pod { received, kind, pod } => self.pod(received, kind, &pod),
            Input::Event { received, kind, event } => self.event(received, kind, &event),
            Input::Log {
                received,
                container,
                instance,
                line,
            } => self.log(received, &container, instance, &line),
            Input::Action(a) => {
                let pos = self.tl.actions.partition_point(|x| x.sent <= a.sent);
                self.tl.actions.insert(pos, a);
            }
            Input::Gap(g) => self.gap(g),
            Input::Resumed { source } => {
                if let Some(i) = self.tl.gaps.iter().rposition(|g| g.source == source && g.to.is_none()) {
                    let g = self.tl.gaps.remove(i);
                    self.tl.notes.push(format!(
                        "{} broke ({}) and was resumed without loss: the resumed fetch re-delivered its last line",
                        g.source.label(),
                        g.reason
                    ));
                }
            }
            Input::SourceUp { source, at } => {
                if let Some(g) = self
                    .tl
                    .gaps
                    .iter_mut()
                    .rev()
                    .find(|g| g.source == source && g.to.is_none())
                {
                    g.to = Some(at);
                }
            }
        }
    }

    /// Records a gap; a second report of an already open gap of the same source only counts once.
    fn gap(&mut self, g: Gap) {
        let open = self
            .tl
            .gaps
            .iter()
            .any(|x| x.source == g.source && x.to.is_none() && x.from.is_some());
        if open && g.to.is_none() {
            return;
        }
        self.tl.gaps.push(g);
    }

    fn pod(&mut self, received: Timestamp, kind: WatchKind, pod: &core::Pod) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        match &self.pod_name {
            Some(n) if *n != name => return,
            None => self.pod_name = Some(name.clone()),
            _ => {}
        }
        self.tl.stats.pod_watch_events += 1;
        let rv = pod.metadata.resource_version.clone();
        if let Some(rv) = &rv {
            // A DELETED event may carry the last MODIFIED's resourceVersion: it is a fact of its own.
            let key = if kind == WatchKind::Deleted {
                format!("{rv}/deleted")
            } else {
                rv.clone()
            };
            if !self.seen_rvs.insert(key) {
                self.tl.stats.pod_duplicates += 1;
                return;
            }
            // resourceVersions are opaque, but etcd-backed servers use increasing integers;
            // that lets us drop stale deliveries after a watch restart.
            if let Ok(n) = rv.parse::<u64>() {
                if self.last_rv.is_some_and(|last| n < last) && kind != WatchKind::Deleted {
                    self.tl.stats.pod_out_of_order += 1;
                    return;
                }
                self.last_rv = Some(self.last_rv.map_or(n, |l| l.max(n)));
            }
        }
        if self.tl.stats.pod_watch_events == 1 {
            self.missed_start(received, pod);
        }
        self.update_info(pod);
        let mut snap = self.snapshot(received, kind, pod);
        let row = super::status::pod_row(&self.tl.pod, &snap);
        snap.status = Some(row.status);
        snap.ready_column = Some(row.ready);
        if kind == WatchKind::Deleted && self.tl.deleted.is_none() {
            self.tl.deleted = Some(received);
        }
        let changed = self.tl.snapshots.last().is_none_or(|prev| !prev.same_state(&snap));
        if changed || kind == WatchKind::Deleted {
            self.tl.snapshots.push(snap);
        }
    }

    /// The first version of the pod seen should be the one created: no status beyond the API
    /// server's own defaults (phase Pending, qosClass). When the scheduler (PodScheduled, nodeName
    /// by binding) or the kubelet (conditions, startTime, container statuses: writes through a
    /// subresource) had already written to it, the versions in between were never seen: that is
    /// a gap in the pod watch from the create on, recorded so that no verdict is decided on the
    /// missing start (a STATUS such as `Pending` may hide in it).
    fn missed_start(&mut self, received: Timestamp, pod: &core::Pod) {
        let mut writers: BTreeSet<String> = pod
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| m.subresource.as_deref().is_some_and(|s| !s.is_empty()))
            .map(|m| {
                format!(
                    "{} ({})",
                    m.manager.as_deref().unwrap_or("?"),
                    m.subresource.as_deref().unwrap_or_default()
                )
            })
            .collect();
        if let Some(st) = &pod.status {
            let written = [
                ("conditions", st.conditions.as_ref().is_some_and(|c| !c.is_empty())),
                ("startTime", st.start_time.is_some()),
                ("hostIP", st.host_ip.is_some()),
                (
                    "containerStatuses",
                    st.container_statuses.as_ref().is_some_and(|c| !c.is_empty())
                        || st.init_container_statuses.as_ref().is_some_and(|c| !c.is_empty()),
                ),
            ];
            writers.extend(written.iter().filter(|(_, w)| *w).map(|(f, _)| format!("status.{f}")));
        }
        if writers.is_empty() {
            return;
        }
        let created = self
            .tl
            .actions
            .iter()
            .find(|a| a.kind == ActionKind::Apply)
            .map(|a| a.sent);
        self.tl.gaps.push(Gap {
            source: EvidenceSource::PodWatch,
            from: created,
            to: Some(received),
            clock: GapClock::Harness,
            reason: format!(
                "the pod's first versions were not seen: the first one seen (resourceVersion {}) already had {}",
                pod.metadata.resource_version.as_deref().unwrap_or("?"),
                writers.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }

    fn update_info(&mut self, pod: &core::Pod) {
        // The creator's fields (an entry not written through a subresource) include nodeName:
        // the pod was bound at creation, not by the scheduler's binding.
        let bound = pod.metadata.managed_fields.iter().flatten().any(|m| {
            m.subresource.as_deref().is_none_or(str::is_empty)
                && m.fields_v1
                    .as_ref()
                    .and_then(|f| f.0.pointer("/f:spec/f:nodeName"))
                    .is_some()
        });
        let info = &mut self.tl.pod;
        info.bound_at_create |= bound;
        let md = &pod.metadata;
        info.name = md.name.clone().unwrap_or_default();
        info.namespace = md.namespace.clone().unwrap_or_default();
        if let Some(uid) = &md.uid {
            info.uid = uid.clone();
        }
        if let Some(t) = &md.creation_timestamp {
            info.creation_timestamp = Some(t.0);
        }
        if let Some(spec) = &pod.spec {
            if spec.node_name.is_some() {
                info.node = spec.node_name.clone();
            }
            info.service_account = spec.service_account_name.clone();
            info.restart_policy = spec.restart_policy.clone();
            info.termination_grace_period_seconds = spec.termination_grace_period_seconds;
            if info.containers.is_empty() {
                for c in spec.init_containers.iter().flatten() {
                    let kind = if c.restart_policy.as_deref() == Some("Always") {
                        ContainerKind::Sidecar
                    } else {
                        ContainerKind::Init
                    };
                    info.containers.push(ContainerRef {
                        name: c.name.clone(),
                        kind,
                        probe_period: probe_period(c),
                    });
                    self.kinds.insert(c.name.clone(), kind);
                }
                for c in &spec.containers {
                    info.containers.push(ContainerRef {
                        name: c.name.clone(),
                        kind: ContainerKind::Regular,
                        probe_period: probe_period(c),
                    });
                    self.kinds.insert(c.name.clone(), ContainerKind::Regular);
                }
            }
            // Ephemeral containers join the running pod (an `ephemeral` step): each is a
            // container from the first snapshot whose spec has it.
            for c in spec.ephemeral_containers.iter().flatten() {
                if !self.kinds.contains_key(&c.name) {
                    info.containers.push(ContainerRef {
                        name: c.name.clone(),
                        kind: ContainerKind::Ephemeral,
                        probe_period: None,
                    });
                    self.kinds.insert(c.name.clone(), ContainerKind::Ephemeral);
                }
            }
        }
        if let Some(st) = &pod.status {
            let ips: Vec<String> = st.pod_ips.iter().flatten().map(|i| i.ip.clone()).collect();
            if !ips.is_empty() {
                info.pod_ips = ips;
            } else if let Some(ip) = &st.pod_ip {
                info.pod_ips = vec![ip.clone()];
            }
            let hips: Vec<String> = st.host_ips.iter().flatten().map(|i| i.ip.clone()).collect();
            if !hips.is_empty() {
                info.host_ips = hips;
            } else if let Some(ip) = &st.host_ip {
                info.host_ips = vec![ip.clone()];
            }
        }
    }

    fn snapshot(&mut self, received: Timestamp, kind: WatchKind, pod: &core::Pod) -> Snapshot {
        let st = pod.status.clone().unwrap_or_default();
        let conditions = st
            .conditions
            .iter()
            .flatten()
            .map(|c| Condition {
                r#type: c.type_.clone(),
                status: c.status.clone(),
                last_transition_time: c.last_transition_time.as_ref().map(|t| t.0),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect();
        let mut containers = vec![];
        for cs in st
            .init_container_statuses
            .iter()
            .flatten()
            .chain(st.container_statuses.iter().flatten())
            .chain(st.ephemeral_container_statuses.iter().flatten())
        {
            containers.push(self.container_status(received, cs));
        }
        Snapshot {
            received,
            watch: kind.as_str().to_string(),
            resource_version: pod.metadata.resource_version.clone(),
            phase: st.phase.clone(),
            conditions,
            containers,
            deletion_timestamp: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            deletion_grace_period_seconds: pod.metadata.deletion_grace_period_seconds,
            reason: st.reason.clone(),
            message: st.message.clone(),
            qos_class: st.qos_class.clone(),
            status: None,
            ready_column: None,
        }
    }

    /// Assigns instance numbers: the kubelet increments restartCount only once the next
    /// instance has started, so with a running/terminated state the current instance is
    /// `restartCount` and lastState is `restartCount-1`; while waiting, lastState is `restartCount`.
    fn container_status(&mut self, received: Timestamp, cs: &core::ContainerStatus) -> ContainerStatus {
        let kind = self.kinds.get(&cs.name).copied().unwrap_or(ContainerKind::Regular);
        let rc = u32::try_from(cs.restart_count).unwrap_or(0);
        let state = cs.state.clone().unwrap_or_default();
        let waiting = state.running.is_none() && state.terminated.is_none();
        let last_term = cs.last_state.as_ref().and_then(|l| l.terminated.as_ref());
        let mut last_terminated = None;
        if let Some(t) = last_term
            && let Some(id) = &t.container_id
        {
            let guess = if waiting { rc } else { rc.saturating_sub(1) };
            let inst = self.assign(&cs.name, kind, id, guess, received);
            let term = terminated(t, Some(inst));
            self.record_instance(&cs.name, inst, received, None, Some(&term), true);
            last_terminated = Some(term);
        }
        let mut instance = None;
        let st = if let Some(r) = &state.running {
            let inst = cs
                .container_id
                .as_ref()
                .map(|id| self.assign(&cs.name, kind, id, rc, received));
            instance = inst;
            let started_at = r.started_at.as_ref().map(|t| t.0);
            if let Some(i) = inst {
                self.record_instance(&cs.name, i, received, started_at, None, false);
            }
            State::Running { started_at }
        } else if let Some(t) = &state.terminated {
            let id = t.container_id.as_ref().or(cs.container_id.as_ref());
            let inst = id.map(|id| self.assign(&cs.name, kind, id, rc, received));
            instance = inst;
            let term = terminated(t, inst);
            if let Some(i) = inst {
                self.record_instance(&cs.name, i, received, None, Some(&term), false);
            }
            State::Terminated(term)
        } else if let Some(w) = &state.waiting {
            State::Waiting {
                reason: w.reason.clone(),
                message: w.message.clone(),
            }
        } else {
            State::Unknown
        };
        ContainerStatus {
            name: cs.name.clone(),
            kind,
            instance,
            state: st,
            last_terminated,
            ready: cs.ready,
            started: cs.started,
            restart_count: rc,
        }
    }

    fn assign(&mut self, container: &str, kind: ContainerKind, id: &str, guess: u32, received: Timestamp) -> u32 {
        if let Some((_, i)) = self.ids.get(id) {
            return *i;
        }
        self.ids.insert(id.to_string(), (container.to_string(), guess));
        if !self
            .tl
            .instances
            .iter()
            .any(|i| i.container == container && i.instance == guess)
        {
            let inst = Instance {
                container: container.to_string(),
                kind,
                instance: guess,
                container_id: Some(id.to_string()),
                started_at: None,
                finished_at: None,
                exit_code: None,
                reason: None,
                message: None,
                first_seen_running: None,
                first_seen_terminated: None,
                first_seen: received,
            };
            let pos = self
                .tl
                .instances
                .partition_point(|i| (i.container.as_str(), i.instance) < (container, guess));
            self.tl.instances.insert(pos, inst);
        }
        self.new_instances.push(NewInstance {
            container: container.to_string(),
            instance: guess,
            container_id: id.to_string(),
            terminated: false,
            previous: false,
        });
        guess
    }

    fn record_instance(
        &mut self,
        container: &str,
        instance: u32,
        received: Timestamp,
        started_at: Option<Timestamp>,
        term: Option<&Terminated>,
        from_last_state: bool,
    ) {
        // Tell the log follower how to fetch a newly found instance.
        if let Some(n) = self
            .new_instances
            .iter_mut()
            .find(|n| n.container == container && n.instance == instance)
        {
            n.terminated |= term.is_some();
            n.previous |= from_last_state;
        }
        let Some(inst) = self
            .tl
            .instances
            .iter_mut()
            .find(|i| i.container == container && i.instance == instance)
        else {
            return;
        };
        if let Some(t) = started_at {
            inst.started_at.get_or_insert(t);
            inst.first_seen_running.get_or_insert(received);
        }
        if let Some(t) = term {
            if t.started_at.is_some() {
                inst.started_at = t.started_at;
            }
            inst.finished_at = t.finished_at;
            inst.exit_code = Some(t.exit_code);
            inst.reason = t.reason.clone();
            inst.message = t.message.clone();
            if !from_last_state {
                inst.first_seen_terminated.get_or_insert(received);
            }
        }
    }
}

fn terminated(t: &core::ContainerStateTerminated, instance: Option<u32>) -> Terminated {
    Terminated {
        instance,
        exit_code: t.exit_code,
        reason: t.reason.clone(),
        message: t.message.clone(),
        // A container whose process never started (StartError) reports the zero time
        // 1970-01-01T00:00:00Z as startedAt (status-start-error-never): it did not start.
        started_at: t
            .started_at
            .as_ref()
            .map(|x| x.0)
            .filter(|t| *t != Timestamp::UNIX_EPOCH),
        finished_at: t.finished_at.as_ref().map(|x| x.0),
        container_id: t.container_id.clone(),
        signal: t.signal,
    }
}

/// The longest `periodSeconds` of a container's probes (Kubernetes defaults it to 10 s).
fn probe_period(c: &core::Container) -> Option<f64> {
    [&c.liveness_probe, &c.readiness_probe, &c.startup_probe]
        .into_iter()
        .flatten()
        .map(|p| f64::from(p.period_seconds.unwrap_or(10)))
        .reduce(f64::max)
}
