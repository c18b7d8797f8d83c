//! Run-wide API health (`ApiHealth`): whether the API server accepts new requests, probed once a
//! second for the whole live run.
//!
//! Why: while kube-apiserver shuts down gracefully (a restart: ~60 s on the reference node) the
//! watches it already serves stay open and healthy, but it takes no new connection, so the
//! kubelet and the scheduler cannot write a status or an event. podlife's streams then see no
//! error, just silence: in a live run and again here, no pod or event update arrived for 65 s
//! while every watch looked up. The probe sees it (a new request is refused at once), and each
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
pub struct Outage {
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
pub struct KubeletStart {
    pub node: String,
    /// The event's first time (the kubelet's clock, whole seconds).
    pub at: Timestamp,
}

/// How often the Node `Starting` events are listed: a restart is noticed within this, far
/// sooner than any case that could be judged across it ends.
const KUBELET_STARTS_EVERY: u32 = 5;

#[derive(Default)]
pub struct ApiHealth {
    outages: Mutex<Vec<Outage>>,
    kubelet_starts: Mutex<Vec<KubeletStart>>,
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

    /// The kubelet starts on `node` between `from` and `to`.
    pub fn kubelet_starts_between(&self, node: &str, from: Timestamp, to: Timestamp) -> Vec<KubeletStart> {
        let s = self.kubelet_starts.lock().unwrap_or_else(|p| p.into_inner());
        s.iter()
            .filter(|k| k.node == node && k.at >= from && k.at <= to)
            .cloned()
            .collect()
    }

    /// Since when the API has been down, if it is.
    pub fn down_now(&self) -> Option<tokio::time::Instant> {
        let o = self.outages.lock().unwrap_or_else(|p| p.into_inner());
        o.last().filter(|x| x.to.is_none()).map(|x| x.since)
    }

    /// How long the API was down between `from` and `to` (monotonic).
    pub fn down_between(&self, from: tokio::time::Instant, to: tokio::time::Instant) -> Duration {
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
    pub fn outages_between(&self, from: Timestamp, to: Timestamp) -> Vec<Outage> {
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
