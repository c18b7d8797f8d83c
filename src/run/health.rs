//! Run-wide API health (`ApiHealth`): whether the API server accepts new requests, probed once a
//! second for the whole live run.
//!
//! Why: while kube-apiserver shuts down gracefully (a restart: ~60 s on the reference node) the
//! watches it already serves stay open and healthy, but it takes no new connection, so the
//! kubelet and the scheduler cannot write a status or an event. podlife's streams then see no
//! error, just silence: no pod or event update arrives for as long as the outage lasts while
//! every watch looks up. The probe sees it (a new request is refused at once), and each
//! case's pod watch and Event watch get a gap for every such window, so what the writers could
//! not write is never judged as absent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

/// How often the API is probed: an outage shorter than this may go unseen, and it is far
/// shorter than anything a case measures across an outage.
const PERIOD: Duration = Duration::from_secs(1);
/// A probe with no answer by then counts as a failure (a healthy server answers /version in
/// milliseconds; this leaves room for a loaded 2-core machine).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// After the API server is back, how long its after-effects are watched for: the node lifecycle
/// controller marks a node NotReady once its lease is older than its grace period (40-50 s),
/// which the outage made happen (live: 28 s after the API came back, pods then unschedulable for
/// 23 s). A node not Ready in this window is part of the outage.
const NODE_AFTERMATH: Duration = Duration::from_secs(120);

/// An outage ends only after this long of healthy probes (the API answering, the run's nodes
/// Ready): the kubelet then re-syncs every pod it runs, and reacts late (live, 5-14 s after its
/// node was Ready again: a DELETE seen 280-470 ms late, probe events 120 ms apart instead of a
/// few ms). The length is a cautious guess, not a measurement: too long only makes more verdicts
/// undecided, never a pass.
const SETTLE: Duration = Duration::from_secs(30);

/// One span in which the API server took no new request: from the last probe that succeeded
/// before it to the first that succeeded after it (`None`: still down).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outage {
    pub from: Timestamp,
    pub to: Option<Timestamp>,
    /// The same span on the monotonic clock, for waits.
    pub since: tokio::time::Instant,
    pub until: Option<tokio::time::Instant>,
    /// When the API server answered again (the outage lasts on until the node has settled):
    /// from then on the kubelet could write.
    pub back: Option<Timestamp>,
    /// Why: the first failing probe's answer.
    pub reason: String,
}

/// A kubelet (re)start seen during the run: its node's `Starting` event ("Starting kubelet."),
/// which every kubelet process posts once when it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KubeletStart {
    pub node: String,
    /// The event's first time (the kubelet's clock, whole seconds).
    pub at: Timestamp,
}

/// How often the Node `Starting` events are listed: a restart is noticed within this, far
/// sooner than any case that could be judged across it ends.
const KUBELET_STARTS_EVERY: u32 = 5;

/// How often each node's CPU use is read (one small request per node): the kubelet averages
/// `usageNanoCores` over its own housekeeping interval (10 s or more), so reading it more often
/// adds requests, not information.
const LOAD_PERIOD: Duration = Duration::from_secs(5);

/// The readings of all nodes together stay within this many requests a second, so a fleet's
/// loads never weigh on the API server the run depends on: past 20 nodes the period grows.
const LOAD_REQUESTS_PER_SECOND: f64 = 4.0;

/// A node whose latest CPU reading is at or above this share of its cores has no room to start
/// another pod promptly: the kubelet, its runtime and, on small clusters, the API server share
/// those cores, so what a case then measures (start latency, when the kubelet's events arrive,
/// probe timing) is the backlog podlife's own cases made, not the node's behaviour.
const BUSY_SHARE: f64 = 0.9;

/// The longest a case waits for room on a busy node (see `ApiHealth::must_wait`): when the node
/// stays busy that long, its load is not the cases podlife finishes, and the case measures the
/// node as it is.
pub(crate) const ROOM_WAIT: Duration = Duration::from_secs(120);

/// How old a node's last CPU reading may be to hold a case (or three reading periods, for a
/// fleet whose period is longer).
const READING_FRESH: Duration = Duration::from_secs(30);

/// Whether a case about to start on a node waits for room: the node's latest reading
/// (`cores`, `capacity`) is busy, some of podlife's cases run there (their end frees the room;
/// without them the load is not podlife's to wait out), and it has not waited `ROOM_WAIT`.
fn must_wait(reading: Option<(f64, f64)>, ours: usize, waited: Duration) -> bool {
    reading.is_some_and(|(cores, capacity)| capacity > 0.0 && cores >= BUSY_SHARE * capacity)
        && ours > 0
        && waited < ROOM_WAIT
}

/// The period between two readings of every node.
fn load_period(nodes: usize) -> Duration {
    LOAD_PERIOD.max(Duration::from_secs_f64(nodes as f64 / LOAD_REQUESTS_PER_SECOND))
}

/// Aborts a task when dropped: the load sampler ends with the probe that started it.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One reading of a node's CPU use.
#[derive(Clone, Debug, PartialEq)]
struct LoadSample {
    node: String,
    at: Timestamp,
    cores: f64,
}

/// A live case of podlife's running on a node (see `ApiHealth::enter`).
pub(crate) struct Running {
    health: Arc<ApiHealth>,
    node: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut ours = self.health.ours.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = ours.get_mut(&self.node) {
            *n = n.saturating_sub(1);
        }
    }
}

#[derive(Default)]
pub(crate) struct ApiHealth {
    outages: Mutex<Vec<Outage>>,
    kubelet_starts: Mutex<Vec<KubeletStart>>,
    loads: Mutex<Vec<LoadSample>>,
    /// podlife's live cases running on each node (see `ApiHealth::enter`).
    ours: Mutex<std::collections::BTreeMap<String, usize>>,
    /// Woken at each round of load readings: what `wait_for_room` waits on.
    readings: tokio::sync::Notify,
    /// Each node's CPU capacity, read once.
    capacity: Mutex<std::collections::BTreeMap<String, f64>>,
    /// A probe that fails is tried once more on a new connection, to tell a stalled connection
    /// of podlife's own from an API server that takes no request.
    fresh: Option<crate::cluster::FreshClient>,
}

impl ApiHealth {
    pub fn new(fresh: Option<crate::cluster::FreshClient>) -> Self {
        ApiHealth {
            fresh,
            ..ApiHealth::default()
        }
    }

    /// Whether the API server answers on a connection of its own (`false`: it does not, or
    /// there is no configuration to open one with).
    async fn answers_afresh(&self) -> bool {
        let Some(client) = self.fresh.as_ref().and_then(|f| f()) else {
            return false;
        };
        matches!(
            tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await,
            Ok(Ok(_))
        )
    }

    /// Probes until the run ends (the task is aborted), recording every outage. `nodes` are the
    /// run's nodes: one of them not Ready soon after an outage extends it (see `NODE_AFTERMATH`).
    pub async fn probe(self: Arc<Self>, client: kube::Client, nodes: Vec<String>) {
        // Node loads are read in a task of their own: a node that does not answer must not
        // hold up the once-a-second probe.
        let sampler = tokio::spawn(self.clone().sample_loads_every(client.clone(), nodes.clone()));
        let _sampler = AbortOnDrop(sampler.abort_handle());
        let mut last_ok = (Timestamp::now(), tokio::time::Instant::now());
        let mut recovered: Option<tokio::time::Instant> = None;
        let mut healthy_since: Option<tokio::time::Instant> = None;
        let run_started = Timestamp::now();
        let mut round: u32 = 0;
        loop {
            round = round.wrapping_add(1);
            if round % KUBELET_STARTS_EVERY == 1 {
                self.list_kubelet_starts(&client, &nodes, run_started).await;
            }
            let answered = tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await;
            let why = match answered {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(crate::cluster::describe(&e)),
                Err(_) => Some(format!(
                    "no answer to GET /version within {}",
                    crate::util::fmt_secs(PROBE_TIMEOUT.as_secs_f64())
                )),
            };
            // Which of the two it is changes the explanation only (podlife's view is lost either
            // way), so it is asked once, when an outage opens.
            let opening = self.down_now().is_none();
            let mut failure = match why {
                None => None,
                Some(why) if opening && self.answers_afresh().await => Some(format!(
                    "podlife's connection to the API server stalled ({why}; a new connection was \
                     answered): podlife missed what was written meanwhile, the kubelet could write"
                )),
                Some(why) => Some(format!(
                    "the API server took no new request ({why}): the kubelet could not write its \
                     status or events"
                )),
            };
            if failure.is_some() {
                recovered = None;
            } else if self.down_now().is_some() && recovered.is_none() {
                recovered = Some(tokio::time::Instant::now());
            }
            self.answered(failure.is_none());
            // The outage's aftermath: a run node the controller marked not Ready.
            if failure.is_none()
                && recovered.is_some_and(|r| r.elapsed() < NODE_AFTERMATH)
                && let Some(n) = not_ready(&client, &nodes).await
            {
                failure = Some(format!(
                    "node {n} not Ready after the API outage (its lease lapsed meanwhile)"
                ));
            }
            let now = (Timestamp::now(), tokio::time::Instant::now());
            if failure.is_some() {
                healthy_since = None;
            } else if healthy_since.is_none() {
                healthy_since = Some(now.1);
            }
            let settled = healthy_since.is_some_and(|h| h.elapsed() >= SETTLE);
            {
                let mut o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
                let open = o.last_mut().filter(|x| x.to.is_none());
                match (failure, open) {
                    (None, Some(_)) if !settled => {}
                    (None, Some(x)) => {
                        x.to = Some(now.0);
                        x.until = Some(now.1);
                    }
                    (None, None) => {}
                    (Some(why), None) => o.push(Outage {
                        from: last_ok.0,
                        to: None,
                        since: last_ok.1,
                        until: None,
                        back: None,
                        reason: why,
                    }),
                    (Some(_), Some(_)) => {}
                }
            }
            if self.down_now().is_none() {
                last_ok = now;
            }
            tokio::time::sleep(PERIOD).await;
        }
    }

    /// Whether the API server answered this round's probe: an open outage learns when it
    /// answered again, and forgets it if it stops answering before the outage ends.
    fn answered(&self, ok: bool) {
        let mut o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(x) = o.last_mut().filter(|x| x.to.is_none()) {
            match (ok, x.back) {
                (true, None) => x.back = Some(Timestamp::now()),
                (false, Some(_)) => x.back = None,
                _ => {}
            }
        }
    }

    /// Records the `Starting` events of the run's kubelets posted since the run started (a
    /// failed list is tried again next round: a restart's event stays for the event TTL).
    async fn list_kubelet_starts(&self, client: &kube::Client, nodes: &[String], since: Timestamp) {
        let api = kube::Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default");
        let lp = kube::api::ListParams::default()
            .fields("involvedObject.kind=Node,reason=Starting")
            .limit(500);
        let Ok(Ok(list)) = tokio::time::timeout(PROBE_TIMEOUT, api.list(&lp)).await else {
            return;
        };
        let mut starts = self.kubelet_starts.lock().unwrap_or_else(|p| p.into_inner());
        for e in list.items {
            let node = e.involved_object.name.clone().unwrap_or_default();
            let from_kubelet = e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kubelet")
                || e.reporting_component.as_deref() == Some("kubelet");
            let at = e
                .first_timestamp
                .as_ref()
                .map(|t| t.0)
                .or_else(|| e.event_time.as_ref().map(|t| t.0))
                .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0));
            let Some(at) = at else { continue };
            // The event's time is whole seconds: one second of slack before the run's start.
            let recent = at >= crate::util::ts_add(since, -jiff::SignedDuration::from_secs(1));
            let ours = nodes.is_empty() || nodes.contains(&node);
            let start = KubeletStart { node, at };
            if from_kubelet && recent && ours && !starts.contains(&start) {
                starts.push(start);
            }
        }
    }

    /// Reads the nodes' loads every `load_period` while the API answers.
    async fn sample_loads_every(self: Arc<Self>, client: kube::Client, nodes: Vec<String>) {
        let period = load_period(nodes.len());
        loop {
            let next = tokio::time::Instant::now() + period;
            if self.down_now().is_none() {
                self.sample_loads(&client, &nodes).await;
            }
            tokio::time::sleep_until(next).await;
        }
    }

    /// Reads each node's CPU use from its kubelet's summary API (through the API server's node
    /// proxy). A node that does not answer (no proxy rights, a kubelet down) is skipped: its
    /// load is then unknown, never zero.
    async fn sample_loads(&self, client: &kube::Client, nodes: &[String]) {
        for node in nodes {
            if !self
                .capacity
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(node)
            {
                let api = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
                if let Ok(Ok(n)) = tokio::time::timeout(PROBE_TIMEOUT, api.get(node)).await
                    && let Some(c) = n
                        .status
                        .and_then(|s| s.capacity)
                        .and_then(|c| c.get("cpu").and_then(|q| crate::util::cpu_cores(&q.0)))
                {
                    self.capacity
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(node.clone(), c);
                }
            }
            let path = format!("/api/v1/nodes/{node}/proxy/stats/summary?only_cpu_and_memory=true");
            let Ok(req) = http::Request::get(path).body(Vec::new()) else {
                continue;
            };
            let Ok(Ok(text)) = tokio::time::timeout(PROBE_TIMEOUT, client.request_text(req)).await else {
                continue;
            };
            if let Some(cores) = summary_cores(&text) {
                self.loads.lock().unwrap_or_else(|p| p.into_inner()).push(LoadSample {
                    node: node.clone(),
                    at: Timestamp::now(),
                    cores,
                });
            }
        }
        self.readings.notify_waiters();
    }

    /// The CPU `node` used between `from` and `to`: the readings inside, else the last one
    /// before (the kubelet's average then still covers part of the span). `None`: no reading.
    pub(crate) fn load_between(&self, node: &str, from: Timestamp, to: Timestamp) -> Option<crate::results::NodeLoad> {
        let loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
        let of_node: Vec<&LoadSample> = loads.iter().filter(|l| l.node == node && l.at <= to).collect();
        let inside: Vec<f64> = of_node.iter().filter(|l| l.at >= from).map(|l| l.cores).collect();
        let picked = if inside.is_empty() {
            vec![of_node.last()?.cores]
        } else {
            inside
        };
        Some(crate::results::NodeLoad {
            node: node.to_string(),
            mean_cores: picked.iter().sum::<f64>() / picked.len() as f64,
            max_cores: picked.iter().copied().fold(0.0, f64::max),
            samples: picked.len(),
            capacity_cores: self
                .capacity
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(node)
                .copied(),
        })
    }

    /// The node's latest CPU reading and its capacity, in cores; `None` when the last reading
    /// is older than `READING_FRESH` (the kubelet stopped answering: its load is unknown).
    fn latest(&self, node: &str) -> Option<(f64, f64)> {
        let (capacity, nodes) = {
            let c = self.capacity.lock().unwrap_or_else(|p| p.into_inner());
            (*c.get(node)?, c.len())
        };
        let cores = {
            let loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
            let l = loads.iter().rev().find(|l| l.node == node)?;
            let age = Timestamp::now().duration_since(l.at).unsigned_abs();
            if age > READING_FRESH.max(3 * load_period(nodes)) {
                return None;
            }
            l.cores
        };
        Some((cores, capacity))
    }

    /// The node a case's pod runs on when the run names it (its `--each-node` copy's, or
    /// `--node`), else the only node the run reads loads of.
    pub(crate) fn node_of<'a>(&self, pinned: Option<&'a str>) -> Option<std::borrow::Cow<'a, str>> {
        if let Some(n) = pinned {
            return Some(std::borrow::Cow::Borrowed(n));
        }
        let c = self.capacity.lock().unwrap_or_else(|p| p.into_inner());
        match c.keys().collect::<Vec<_>>()[..] {
            [only] => Some(std::borrow::Cow::Owned(only.clone())),
            _ => None,
        }
    }

    /// Whether a case that has waited `waited` for room on `node` waits on (see `must_wait`);
    /// `Some((cores, capacity))` of the reading that holds it.
    pub(crate) fn must_wait(&self, node: &str, waited: Duration) -> Option<(f64, f64)> {
        let ours = self
            .ours
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
            .copied()
            .unwrap_or(0);
        let reading = self.latest(node);
        must_wait(reading, ours, waited).then_some(reading).flatten()
    }

    /// Waits while `node` has no room (see `must_wait`), re-deciding at each round of readings
    /// (or when the last reading grows stale). Returns the reading that held the case and how
    /// long it waited, if it did.
    pub(crate) async fn wait_for_room(&self, node: &str) -> Option<((f64, f64), Duration)> {
        let t = tokio::time::Instant::now();
        let mut held = None;
        loop {
            let next = self.readings.notified();
            tokio::pin!(next);
            // Registered before the decision, so a reading in between is not missed.
            next.as_mut().enable();
            let Some(reading) = self.must_wait(node, t.elapsed()) else {
                return held.map(|r| (r, t.elapsed()));
            };
            held = Some(reading);
            let _ = tokio::time::timeout(READING_FRESH, next).await;
        }
    }

    /// Counts a live case as running on `node` until the returned guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, node: &str) -> Running {
        *self
            .ours
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(node.to_string())
            .or_default() += 1;
        Running {
            health: self.clone(),
            node: node.to_string(),
        }
    }

    /// The kubelet starts on `node` between `from` and `to`.
    pub(crate) fn kubelet_starts_between(&self, node: &str, from: Timestamp, to: Timestamp) -> Vec<KubeletStart> {
        let s = self.kubelet_starts.lock().unwrap_or_else(|p| p.into_inner());
        s.iter()
            .filter(|k| k.node == node && k.at >= from && k.at <= to)
            .cloned()
            .collect()
    }

    /// Since when the API has been down, if it is.
    pub(crate) fn down_now(&self) -> Option<tokio::time::Instant> {
        let o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
        o.last().filter(|x| x.to.is_none()).map(|x| x.since)
    }

    /// How long the API was down between `from` and `to` (monotonic).
    pub(crate) fn down_between(&self, from: tokio::time::Instant, to: tokio::time::Instant) -> Duration {
        let o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
        o.iter()
            .map(|x| {
                let a = x.since.max(from);
                let b = x.until.unwrap_or(to).min(to);
                b.saturating_duration_since(a)
            })
            .sum()
    }

    /// The outages overlapping `[from, to]` (wall clock), with the reason of the latest.
    pub(crate) fn outages_between(&self, from: Timestamp, to: Timestamp) -> Vec<Outage> {
        let o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
        o.iter()
            .filter(|x| x.from <= to && x.to.is_none_or(|t| t >= from))
            .cloned()
            .collect()
    }
}

/// The first of `nodes` whose Ready condition is not True (None: all Ready, or they cannot be read).
async fn not_ready(client: &kube::Client, nodes: &[String]) -> Option<String> {
    let api = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    let list = tokio::time::timeout(PROBE_TIMEOUT, api.list(&kube::api::ListParams::default()))
        .await
        .ok()?
        .ok()?;
    list.items.into_iter().find_map(|n| {
        let name = n.metadata.name.clone().unwrap_or_default();
        if !nodes.is_empty() && !nodes.contains(&name) {
            return None;
        }
        let ready = n
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        (!ready).then_some(name)
    })
}

/// A node's CPU use in cores from a kubelet summary (`node.cpu.usageNanoCores`).
fn summary_cores(text: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let n = v.pointer("/node/cpu/usageNanoCores")?.as_f64()?;
    (n.is_finite() && n >= 0.0).then_some(n / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_waits_for_room_only_on_a_node_busy_with_podlifes_own_cases() {
        let busy = Some((1.9, 2.0));
        let s = Duration::from_secs;
        assert!(must_wait(busy, 3, s(0)));
        // Room: below 90 % of the cores.
        assert!(!must_wait(Some((1.7, 2.0)), 3, s(0)));
        // No reading, or no capacity known: nothing to wait for.
        assert!(!must_wait(None, 3, s(0)));
        assert!(!must_wait(Some((1.9, 0.0)), 3, s(0)));
        // None of podlife's cases run there: the load is the node's own, measured as it is.
        assert!(!must_wait(busy, 0, s(0)));
        // Bounded.
        assert!(must_wait(busy, 3, ROOM_WAIT - s(1)));
        assert!(!must_wait(busy, 3, ROOM_WAIT));
    }

    #[test]
    fn the_room_on_a_node_follows_its_latest_reading_and_podlifes_cases_there() {
        let h = Arc::new(ApiHealth::default());
        h.capacity.lock().unwrap().insert("vm".into(), 2.0);
        let read = |cores: f64| {
            h.loads.lock().unwrap().push(LoadSample {
                node: "vm".into(),
                at: Timestamp::now(),
                cores,
            })
        };
        read(1.95);
        assert_eq!(
            h.must_wait("vm", Duration::ZERO),
            None,
            "no case of podlife's runs there"
        );
        let one = h.enter("vm");
        assert_eq!(h.must_wait("vm", Duration::ZERO), Some((1.95, 2.0)));
        read(1.2);
        assert_eq!(h.must_wait("vm", Duration::ZERO), None, "the latest reading has room");
        read(1.95);
        drop(one);
        assert_eq!(h.must_wait("vm", Duration::ZERO), None, "its case ended");
        assert_eq!(h.node_of(None).as_deref(), Some("vm"), "the only node");
        assert_eq!(h.node_of(Some("vm2")).as_deref(), Some("vm2"));
    }

    #[tokio::test]
    async fn a_case_waiting_for_room_goes_at_the_first_reading_with_room() {
        let h = Arc::new(ApiHealth::default());
        h.capacity.lock().unwrap().insert("vm".into(), 2.0);
        let read = |cores: f64| {
            h.loads.lock().unwrap().push(LoadSample {
                node: "vm".into(),
                at: Timestamp::now(),
                cores,
            });
            h.readings.notify_waiters();
        };
        assert_eq!(h.wait_for_room("vm").await, None, "no reading: no wait");
        read(1.95);
        let _ours = h.enter("vm");
        let waiter = tokio::spawn({
            let h = h.clone();
            async move { h.wait_for_room("vm").await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "busy with podlife's case: it waits");
        read(1.0);
        let (reading, _) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("woken by the reading")
            .unwrap()
            .expect("it waited");
        assert_eq!(reading, (1.95, 2.0));
    }

    #[test]
    fn a_summary_gives_the_nodes_cores_and_nothing_else_gives_any() {
        assert_eq!(
            summary_cores(r#"{"node":{"nodeName":"vm","cpu":{"usageNanoCores":1250000000}}}"#),
            Some(1.25)
        );
        assert_eq!(summary_cores(r#"{"node":{"cpu":{}}}"#), None);
        assert_eq!(summary_cores("404 page not found"), None);
    }

    #[test]
    fn a_fleets_readings_stay_within_the_request_rate() {
        assert_eq!(load_period(2), LOAD_PERIOD);
        assert_eq!(load_period(20), LOAD_PERIOD);
        assert_eq!(load_period(100), Duration::from_secs(25));
    }

    #[test]
    fn the_load_of_a_span_is_its_readings_or_the_last_before_it() {
        let h = ApiHealth::default();
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        for (node, s, cores) in [("vm", 0, 0.5), ("vm", 10, 1.0), ("vm", 20, 2.0), ("vm2", 10, 9.0)] {
            h.loads.lock().unwrap().push(LoadSample {
                node: node.into(),
                at: t(s),
                cores,
            });
        }
        h.capacity.lock().unwrap().insert("vm".into(), 2.0);
        let l = h.load_between("vm", t(5), t(25)).unwrap();
        assert_eq!((l.mean_cores, l.max_cores, l.samples), (1.5, 2.0, 2));
        assert_eq!(l.describe(), "vm: 1.50 cores mean, 2.00 max (of 2), 2 samples");
        let l = h.load_between("vm", t(1), t(2)).unwrap();
        assert_eq!((l.mean_cores, l.samples), (0.5, 1), "the last reading before the span");
        assert!(h.load_between("vm", t(-5), t(-1)).is_none(), "no reading yet: unknown");
        assert!(h.load_between("vm3", t(0), t(30)).is_none());
    }
}
