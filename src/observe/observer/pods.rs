//! Pod input: each version of the pod from its watch becomes a snapshot (phase, conditions, container
//! statuses) with container instances numbered, versions redelivered or out of order dropped, a missed start a gap.

use super::*;

impl Observer {
    pub(super) fn pod(&mut self, received: Timestamp, kind: WatchKind, pod: &core::Pod) {
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
                self.confirm_unchanged(received, rv);
                return;
            }
            // resourceVersions are opaque, but etcd-backed servers use increasing integers;
            // that lets us drop stale deliveries after a watch restart.
            if let Ok(n) = rv.parse::<u64>() {
                if self.last_rv.is_some_and(|last| n < last) && kind != WatchKind::Deleted {
                    self.tl.stats.pod_out_of_order += 1;
                    return;
                }
                if self.last_rv.is_none_or(|l| n > l) {
                    self.last_rv_received = Some(received);
                }
                self.last_rv = Some(self.last_rv.map_or(n, |l| l.max(n)));
            }
        }
        if self.tl.stats.pod_watch_events == 1 {
            self.missed_start(received, pod);
        }
        self.update_info(pod);
        let mut snap = self.snapshot(received, kind, pod);
        let row = crate::observe::status::pod_row(&self.tl.pod, &snap);
        snap.status = Some(row.status);
        snap.ready_column = Some(row.ready);
        if kind == WatchKind::Deleted && self.tl.deleted.is_none() {
            self.tl.deleted = Some(received);
        }
        let changed = self.tl.snapshots.last().is_none_or(|prev| !prev.same_state(&snap));
        if changed || kind == WatchKind::Deleted {
            self.tl.snapshots.push(snap);
        } else {
            self.note_unchanged(received);
        }
        self.reattribute_logs();
    }

    /// A redelivered version (same resourceVersion) confirms the state only if it is the latest
    /// seen: an older one re-sent after a watch restart says nothing about now.
    fn confirm_unchanged(&mut self, received: Timestamp, rv: &str) {
        let latest = match rv.parse::<u64>() {
            Ok(n) => self.last_rv == Some(n),
            Err(_) => self.tl.snapshots.last().and_then(|s| s.resource_version.as_deref()) == Some(rv),
        };
        if latest {
            self.note_unchanged(received);
            if let Some(since) = self.last_rv_received
                && self.unwritten.len() < 256
            {
                self.unwritten.push((since, received));
            }
        }
    }

    /// Bounded: one entry per re-list or no-op version; a flood of them keeps the last ones.
    fn note_unchanged(&mut self, received: Timestamp) {
        const MAX_UNCHANGED: usize = 256;
        if self.tl.unchanged.len() >= MAX_UNCHANGED {
            self.tl.unchanged.remove(0);
        }
        if self.tl.unchanged.last().is_none_or(|l| *l <= received) {
            self.tl.unchanged.push(received);
        }
    }

    /// The first version of the pod seen should be the one created: no status beyond the API
    /// server's own defaults (phase Pending, qosClass). When the scheduler (PodScheduled, nodeName
    /// by binding) or the kubelet (conditions, startTime, container statuses: writes through a
    /// subresource) had already written to it, the versions in between were never seen: that is
    /// a gap in the pod watch from the create on, recorded so that no verdict is decided on the
    /// missing start (a STATUS such as `Pending` may hide in it).
    pub(super) fn missed_start(&mut self, received: Timestamp, pod: &core::Pod) {
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
            back: None,
            clock: GapClock::Harness,
            reason: format!(
                "the pod's first versions were not seen: the first one seen (resourceVersion {}) already had {}",
                pod.metadata.resource_version.as_deref().unwrap_or("?"),
                writers.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }

    pub(super) fn update_info(&mut self, pod: &core::Pod) {
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

    pub(super) fn snapshot(&mut self, received: Timestamp, kind: WatchKind, pod: &core::Pod) -> Snapshot {
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
            start_time: st.start_time.as_ref().map(|t| t.0),
            active_deadline_seconds: pod.spec.as_ref().and_then(|s| s.active_deadline_seconds),
            generation: pod.metadata.generation,
            observed_generation: st.observed_generation,
            status: None,
            ready_column: None,
        }
    }

    /// Assigns instance numbers: the kubelet increments restartCount only once the next
    /// instance has started, so with a running/terminated state the current instance is
    /// `restartCount` and lastState is `restartCount-1`; while waiting, lastState is `restartCount`.
    pub(super) fn container_status(&mut self, received: Timestamp, cs: &core::ContainerStatus) -> ContainerStatus {
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
            resources: cs.resources.as_ref().map(|r| crate::observe::timeline::Resources {
                requests: quantities(r.requests.as_ref()),
                limits: quantities(r.limits.as_ref()),
            }),
            allocated_resources: quantities(cs.allocated_resources.as_ref()),
        }
    }

    pub(super) fn assign(
        &mut self,
        container: &str,
        kind: ContainerKind,
        id: &str,
        guess: u32,
        received: Timestamp,
    ) -> u32 {
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

    pub(super) fn record_instance(
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

pub(super) fn terminated(t: &core::ContainerStateTerminated, instance: Option<u32>) -> Terminated {
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
pub(super) fn probe_period(c: &core::Container) -> Option<f64> {
    [&c.liveness_probe, &c.readiness_probe, &c.startup_probe]
        .into_iter()
        .flatten()
        .map(|p| f64::from(p.period_seconds.unwrap_or(10)))
        .reduce(f64::max)
}

/// A resource list as its quantities' text.
fn quantities(
    m: Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> std::collections::BTreeMap<String, String> {
    m.into_iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect()
}
