//! The pod and Event watches: kube-runtime's `watcher` (list, watch from the list's
//! resourceVersion, resume, re-list after 410 Gone, bookmarks) turned into observer inputs,
//! with every span in which the watch could not deliver in real time sent as a gap.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Resource;
use kube::api::Api;
use kube::runtime::watcher::{self, Config, Event as Change, ListSemantic};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use super::{Outage, StreamMsg, Tx, explain};
use crate::observe::{EvidenceSource, Gap, GapClock, Input, WatchKind};

/// Server-side watch timeout: the API server ends the watch cleanly after this (the watcher
/// then resumes it). A stream that goes silent without ending is caught by the watcher's idle
/// timeout (5 s above this) and the client's 300 s read timeout.
const WATCH_TIMEOUT_SECS: u32 = 290;

/// The watch state of one source: `Gap`/`SourceUp` inputs as it goes down and up.
struct Link {
    source: EvidenceSource,
    tx: Tx,
    /// True while a gap is open.
    down: bool,
    /// Whether the source has ever delivered: a source never up has a gap from the start.
    ever_up: bool,
    /// The last moment the source was known to deliver in real time.
    healthy_at: Timestamp,
}

impl Link {
    fn new(source: EvidenceSource, tx: Tx) -> Self {
        Link {
            source,
            tx,
            down: false,
            ever_up: false,
            healthy_at: Timestamp::now(),
        }
    }

    async fn send(&self, input: Input) -> bool {
        self.tx.send(StreamMsg::Input(input)).await.is_ok()
    }

    /// The source is known to have delivered in real time until `t` (a gap opened next starts
    /// there).
    fn delivered_until(&mut self, t: Timestamp) {
        if !self.down {
            self.healthy_at = self.healthy_at.max(t);
        }
    }

    /// The source failed: opens a gap from the last moment it was healthy.
    async fn down(&mut self, reason: &str) -> bool {
        if self.down {
            return true;
        }
        self.down = true;
        let gap = Gap {
            source: self.source.clone(),
            from: self.ever_up.then_some(self.healthy_at),
            to: None,
            back: None,
            clock: GapClock::Harness,
            reason: reason.to_string(),
        };
        self.send(Input::Gap(gap)).await
    }

    /// The source delivers in real time again (a list answered, a watch request answered, an
    /// object delivered).
    async fn up(&mut self) -> bool {
        self.ever_up = true;
        self.healthy_at = Timestamp::now();
        if !self.down {
            return true;
        }
        self.down = false;
        self.send(Input::SourceUp {
            source: self.source.clone(),
            at: self.healthy_at,
        })
        .await
    }
}

/// The key a watch knows an object by: its uid (a pod deleted and created again under the same
/// name is another object), else its name.
fn key_of<K: Resource>(o: &K) -> String {
    let m = o.meta();
    m.uid.clone().or_else(|| m.name.clone()).unwrap_or_default()
}

/// The objects a watch has delivered: whether an `Apply` adds an object or modifies one (the
/// watcher folds ADDED and MODIFIED into `Apply`), and, with `keep` (the pod watch), the last
/// version of each, to report those a re-list no longer has as deleted.
struct Delivered<K> {
    objects: BTreeMap<String, Option<K>>,
    keep: bool,
}

impl<K: Resource + Clone> Delivered<K> {
    fn new(keep: bool) -> Self {
        Delivered {
            objects: BTreeMap::new(),
            keep,
        }
    }

    /// An object delivered by the watch: `Added` when it was not known yet.
    fn applied(&mut self, o: &K) -> WatchKind {
        match self.objects.insert(key_of(o), self.keep.then(|| o.clone())) {
            None => WatchKind::Added,
            Some(_) => WatchKind::Modified,
        }
    }

    fn deleted(&mut self, o: &K) {
        self.objects.remove(&key_of(o));
    }

    /// A (re-)list answered `listed`: from now on only those are known. Returns the objects
    /// known before and absent from it (kept ones only): a watch that re-lists does not replay
    /// the deletions it missed.
    fn relisted(&mut self, listed: &[K]) -> Vec<K> {
        let before = std::mem::take(&mut self.objects);
        for o in listed {
            self.objects.insert(key_of(o), self.keep.then(|| o.clone()));
        }
        before
            .into_iter()
            .filter(|(k, _)| !self.objects.contains_key(k))
            .filter_map(|(_, o)| o)
            .collect()
    }
}

/// Until when a source that just failed had delivered in real time: where its gap starts.
enum DeliveredUntil {
    /// Until now: the failure ended a stream that was open (it broke, or sent an error).
    Now,
    /// Until the failed watch request was sent: the watcher sends one only once the previous
    /// watch ended (silently: a server timeout, a stream end) or failed.
    LastWatchRequest,
    /// Until it was last seen up (a list failed: the source was down or never up already).
    LastUp,
}

/// What one error of the watcher means for the gap, the retry and the watcher itself.
struct Failure {
    /// `list` or `watch`: which request failed, for the gap's reason.
    stage: &'static str,
    why: String,
    retry_after: Option<Duration>,
    until: DeliveredUntil,
    /// 410 Gone: the history to resume from is gone; re-list at once (no pause, as the server
    /// answered).
    gone: bool,
    /// The watcher would retry the expired resourceVersion forever (a 410 answered to the
    /// watch request itself rather than as an event): start it over, with a list.
    restart: bool,
}

impl Failure {
    fn of(e: &watcher::Error, listing: bool) -> Failure {
        let is_gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 410);
        let client = |stage, e: &kube::Error, until| {
            let (why, retry_after, _) = explain(e);
            let gone = is_gone(e);
            Failure {
                stage,
                why,
                retry_after,
                until: if gone { DeliveredUntil::LastWatchRequest } else { until },
                gone,
                restart: gone,
            }
        };
        match e {
            watcher::Error::InitialListFailed(e) => client("list", e, DeliveredUntil::LastUp),
            watcher::Error::WatchStartFailed(e) => client("watch", e, DeliveredUntil::LastWatchRequest),
            watcher::Error::WatchFailed(e) => client("watch", e, DeliveredUntil::Now),
            watcher::Error::WatchError(s) => Failure {
                stage: "watch",
                why: format!("{} {}: {}", s.code, s.reason, s.message),
                retry_after: None,
                // A 410 event: the changes since the resourceVersion the watch resumed from may
                // be lost. Any other error event ends a stream that delivered until now.
                until: if s.code == 410 {
                    DeliveredUntil::LastWatchRequest
                } else {
                    DeliveredUntil::Now
                },
                gone: s.code == 410,
                // The watcher re-lists after a 410 event by itself.
                restart: false,
            },
            watcher::Error::NoResourceVersion => Failure {
                stage: if listing { "list" } else { "watch" },
                why: e.to_string(),
                retry_after: None,
                until: if listing {
                    DeliveredUntil::LastUp
                } else {
                    DeliveredUntil::Now
                },
                gone: false,
                restart: false,
            },
        }
    }
}

/// How a watch delivery becomes an observer input.
type ToInput<K> = fn(Timestamp, WatchKind, K) -> Input;

/// What one watch source is: its field selector, the evidence source its gaps name, where its
/// inputs go, how long it may be down, how an object becomes an input, whether a re-list
/// reports the objects it no longer has as DELETED, and who waits for its first list.
struct Watched<K> {
    fields: Option<String>,
    source: EvidenceSource,
    tx: Tx,
    budget: Duration,
    to_input: ToInput<K>,
    track_deletes: bool,
    established: Option<oneshot::Sender<()>>,
}

/// Runs kube-runtime's `watcher` on `api` (consistent lists, watches ended by the server after
/// `WATCH_TIMEOUT_SECS`, `fields` as field selector) until the receiver is dropped or the source
/// has been down longer than `budget`, and sends what it delivers as observer inputs: the
/// objects of each (re-)list as ADDED, in one go once the list is complete; a watched change as
/// ADDED when the object was not known yet, else MODIFIED; a deletion as DELETED. With
/// `track_deletes`, an object known before a re-list and absent from it is reported DELETED.
///
/// Gaps: any error of the watcher opens one (if none is open), named after the request that
/// failed. It closes only once the source delivers again: a list answered in full, an object
/// delivered, or a watch request answered 2xx, learnt from the client the watcher is given
/// (`cluster::probe_watches`), as the watcher restarts a watch silently and would otherwise
/// say nothing until the object next changes. `established` fires at the first complete list.
async fn watch_source<K>(api: Api<K>, w: Watched<K>)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let namespace = api.namespace().map(str::to_string);
    let (client, mut watch_requests) = crate::cluster::probe_watches(api.into_client());
    let api: Api<K> = match &namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    // Consistent lists (a quorum read): a re-list after a gap shows the state as it is, not a
    // stale cache's. Bookmarks (on by default) keep the resourceVersion to resume from recent.
    let mut config = Config::default()
        .timeout(WATCH_TIMEOUT_SECS)
        .list_semantic(ListSemantic::MostRecent);
    if let Some(f) = &w.fields {
        config = config.fields(f);
    }
    let start = || watcher::watcher(api.clone(), config.clone()).boxed();
    let mut changes = start();
    let tx = w.tx.clone();
    let mut state = Watching {
        link: Link::new(w.source.clone(), w.tx.clone()),
        outage: Outage::new(w.source, w.budget),
        delivered: Delivered::new(w.track_deletes),
        listing: None,
        to_input: w.to_input,
        established: w.established,
        tx: w.tx,
    };
    loop {
        // The stream first: an error already waiting there outranks the answer to the watch
        // request that opened it (see `Watching::failed`).
        let change = tokio::select! {
            biased;
            () = tx.closed() => return,
            change = changes.next() => change,
            Ok(()) = watch_requests.changed() => {
                // A watch request of this source was answered 2xx: the watch is back, though the
                // watcher says nothing until the next change.
                if !state.up().await {
                    return;
                }
                continue;
            }
        };
        let Some(change) = change else {
            // The watcher's stream does not end; should it, start over with a list.
            changes = start();
            continue;
        };
        let next = match change {
            Ok(Change::Init) => {
                state.listing = Some(Vec::new());
                Next::Poll
            }
            Ok(Change::InitApply(obj)) => {
                state.listing.get_or_insert_with(Vec::new).push(obj);
                Next::Poll
            }
            Ok(Change::InitDone) => state.listed().await,
            Ok(Change::Apply(obj)) => {
                let received = Timestamp::now();
                state.changed(received, obj, false).await
            }
            Ok(Change::Delete(obj)) => {
                let received = Timestamp::now();
                state.changed(received, obj, true).await
            }
            Err(e) => state.failed(&e, &mut watch_requests).await,
        };
        match next {
            Next::Poll => {}
            Next::Relist => {
                changes = start();
                state.listing = None;
            }
            Next::Stop => return,
        }
    }
}

/// The answers to a source's watch requests, as `cluster::probe_watches` reports them.
type WatchRequestsRx = tokio::sync::watch::Receiver<crate::cluster::WatchRequests>;

/// What the watch loop does after one change of the watcher's stream.
enum Next {
    /// Polls the watcher again.
    Poll,
    /// Starts the watcher over (a fresh list).
    Relist,
    /// Ends: the receiver is gone, or the source was lost.
    Stop,
}

/// The state of one watch source between two changes of its stream.
struct Watching<K> {
    link: Link,
    outage: Outage,
    delivered: Delivered<K>,
    /// Between `Init` and `InitDone`: the objects of the list in progress.
    listing: Option<Vec<K>>,
    to_input: ToInput<K>,
    established: Option<oneshot::Sender<()>>,
    tx: Tx,
}

impl<K: Resource<DynamicType = ()> + Clone> Watching<K> {
    /// The source delivered: its gap (if any) closes. False when the receiver is gone.
    async fn up(&mut self) -> bool {
        if !self.link.up().await {
            return false;
        }
        self.outage.up();
        true
    }

    /// A list answered in full: the objects a re-list no longer has go as DELETED (when
    /// tracked), then every listed object as ADDED.
    async fn listed(&mut self) -> Next {
        let listed = self.listing.take().unwrap_or_default();
        if !self.up().await {
            return Next::Stop;
        }
        // From the list's resourceVersion on, the watch delivers every change: anything
        // created after this moment is seen from its first version.
        if let Some(e) = self.established.take() {
            let _ = e.send(());
        }
        let received = Timestamp::now();
        for obj in self.delivered.relisted(&listed) {
            if !self.link.send((self.to_input)(received, WatchKind::Deleted, obj)).await {
                return Next::Stop;
            }
        }
        for obj in listed {
            if !self.link.send((self.to_input)(received, WatchKind::Added, obj)).await {
                return Next::Stop;
            }
        }
        Next::Poll
    }

    /// A watched change (received at `received`): a deletion, or an object applied (ADDED when
    /// it was not known yet, else MODIFIED).
    async fn changed(&mut self, received: Timestamp, obj: K, deleted: bool) -> Next {
        if !self.up().await {
            return Next::Stop;
        }
        let kind = if deleted {
            self.delivered.deleted(&obj);
            WatchKind::Deleted
        } else {
            self.delivered.applied(&obj)
        };
        if self.link.send((self.to_input)(received, kind, obj)).await {
            Next::Poll
        } else {
            Next::Stop
        }
    }

    /// An error of the watcher: a gap opens (from the last moment the source delivered), then
    /// a 410 re-lists at once and anything else pauses within the outage budget, beyond which
    /// the source is lost.
    async fn failed(&mut self, e: &watcher::Error, watch_requests: &mut WatchRequestsRx) -> Next {
        // Watch requests answered before this failure say nothing about after it (a 410
        // event comes in a stream answered 200): only a later answer closes the gap.
        watch_requests.borrow_and_update();
        let f = Failure::of(e, self.listing.is_some());
        match f.until {
            DeliveredUntil::Now => self.link.delivered_until(Timestamp::now()),
            DeliveredUntil::LastWatchRequest => {
                if let Some(sent) = watch_requests.borrow().sent {
                    self.link.delivered_until(sent);
                }
            }
            DeliveredUntil::LastUp => {}
        }
        if !self.link.down(&format!("{}: {}", f.stage, f.why)).await {
            return Next::Stop;
        }
        if f.gone {
            // Re-listed on the next poll; its `InitDone` closes the gap.
            return if f.restart { Next::Relist } else { Next::Poll };
        }
        // The watcher retries on the next poll, so the pause is ours: `util::Backoff`,
        // the one back-off every retry in podlife uses, lengthened to a 429's
        // Retry-After, within the outage budget. Not kube-runtime's `StreamBackoff`: it
        // sees no error's content (no Retry-After) and knows no budget to give up after.
        match self.outage.failed(f.why, f.retry_after) {
            Some(pause) => {
                tokio::select! {
                    () = tokio::time::sleep(pause) => Next::Poll,
                    () = self.tx.closed() => Next::Stop,
                }
            }
            None => {
                let _ = self.tx.send(self.outage.lost()).await;
                Next::Stop
            }
        }
    }
}

fn pod_input(received: Timestamp, kind: WatchKind, pod: Pod) -> Input {
    Input::Pod {
        received,
        kind,
        pod: Box::new(pod),
    }
}

fn event_input(received: Timestamp, kind: WatchKind, event: Event) -> Input {
    Input::Event {
        received,
        kind,
        event: Box::new(event),
    }
}

/// The pod watch of a case (one pod, by name). `established` fires once its first list has
/// answered in full: create the pod only then, or its first versions may be missed (a watch
/// spawned but not yet listing saw 20 of 468 live pods first as ContainerCreating).
pub async fn watch_pods(api: Api<Pod>, name: String, tx: Tx, budget: Duration, established: oneshot::Sender<()>) {
    let fields = Some(format!("metadata.name={name}"));
    let w = Watched {
        fields,
        source: EvidenceSource::PodWatch,
        tx,
        budget,
        to_input: pod_input,
        track_deletes: true,
        established: Some(established),
    };
    watch_source(api, w).await
}

/// The Event watch of a case namespace. A 403 (events forbidden) is a gap like any failure:
/// retried within the budget (RBAC can lag behind an API server restart), then left open.
pub async fn watch_events(api: Api<Event>, tx: Tx, budget: Duration) {
    let w = Watched {
        fields: None,
        source: EvidenceSource::Events,
        tx,
        budget,
        to_input: event_input,
        track_deletes: false,
        established: None,
    };
    watch_source(api, w).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    /// A pod known by `uid` (or only by name when `uid` is empty).
    fn pod(name: &str, uid: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.uid = (!uid.is_empty()).then(|| uid.to_string());
        p
    }

    #[test]
    fn an_object_is_added_once_then_modified_and_added_again_after_its_deletion() {
        let mut d = Delivered::new(false);
        let p = pod("p", "u1");
        assert_eq!(d.applied(&p), WatchKind::Added);
        assert_eq!(d.applied(&p), WatchKind::Modified);
        d.deleted(&p);
        assert_eq!(d.applied(&p), WatchKind::Added);
        // The same name with another uid is another object.
        assert_eq!(d.applied(&pod("p", "u2")), WatchKind::Added);
    }

    #[test]
    fn a_relist_reports_the_kept_objects_it_no_longer_has() {
        let mut d = Delivered::new(true);
        d.applied(&pod("a", "ua"));
        d.applied(&pod("b", "ub"));
        let gone = d.relisted(&[pod("b", "ub")]);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].metadata.uid.as_deref(), Some("ua"));
        // What the list had is known from then on: a later delivery of it modifies it.
        assert_eq!(d.applied(&pod("b", "ub")), WatchKind::Modified);
        assert!(d.relisted(&[pod("b", "ub")]).is_empty());
        // Without `keep` (the Event watch) nothing is reported deleted.
        let mut d = Delivered::new(false);
        d.applied(&pod("a", "ua"));
        assert!(d.relisted(&[]).is_empty());
        assert_eq!(key_of(&pod("n", "")), "n");
    }

    fn status(code: u16, reason: &str) -> Box<kube::core::Status> {
        Box::new(
            serde_json::from_value(serde_json::json!({"code": code, "reason": reason, "message": "boom"})).unwrap(),
        )
    }

    #[test]
    fn a_gone_answer_re_lists_and_a_gone_event_leaves_the_re_list_to_the_watcher() {
        let f = Failure::of(
            &watcher::Error::WatchStartFailed(kube::Error::Api(status(410, "Expired"))),
            false,
        );
        assert!(f.gone && f.restart);
        assert_eq!(f.stage, "watch");
        assert!(matches!(f.until, DeliveredUntil::LastWatchRequest));
        let f = Failure::of(&watcher::Error::WatchError(status(410, "Expired")), false);
        assert!(f.gone && !f.restart);
        assert!(matches!(f.until, DeliveredUntil::LastWatchRequest));
    }

    #[test]
    fn where_a_failure_says_the_source_stopped_delivering() {
        let f = Failure::of(
            &watcher::Error::InitialListFailed(kube::Error::Api(status(503, "ServiceUnavailable"))),
            true,
        );
        assert_eq!(f.stage, "list");
        assert!(!f.gone && matches!(f.until, DeliveredUntil::LastUp));
        let f = Failure::of(
            &watcher::Error::WatchFailed(kube::Error::Api(status(500, "InternalError"))),
            false,
        );
        assert!(!f.gone && matches!(f.until, DeliveredUntil::Now));
        let f = Failure::of(&watcher::Error::WatchError(status(500, "InternalError")), false);
        assert_eq!(f.why, "500 InternalError: boom");
        assert!(!f.gone && matches!(f.until, DeliveredUntil::Now));
        let f = Failure::of(&watcher::Error::NoResourceVersion, true);
        assert_eq!(f.stage, "list");
        assert!(matches!(f.until, DeliveredUntil::LastUp));
        let f = Failure::of(&watcher::Error::NoResourceVersion, false);
        assert_eq!(f.stage, "watch");
        assert!(matches!(f.until, DeliveredUntil::Now));
    }

    /// The next input sent, if any was.
    fn sent(rx: &mut mpsc::Receiver<StreamMsg>) -> Option<Input> {
        match rx.try_recv().ok()? {
            StreamMsg::Input(i) => Some(i),
            StreamMsg::Lost { .. } => panic!("no source was lost"),
        }
    }

    #[tokio::test]
    async fn a_source_never_up_has_a_gap_from_the_start_and_one_up_from_when_it_last_delivered() {
        let (tx, mut rx) = mpsc::channel(8);
        let mut link = Link::new(EvidenceSource::PodWatch, tx);
        assert!(link.down("list: 503").await);
        let Some(Input::Gap(g)) = sent(&mut rx) else {
            panic!("a gap")
        };
        assert_eq!((g.from, g.to, g.reason.as_str()), (None, None, "list: 503"));
        // A second failure while down opens nothing.
        assert!(link.down("list: 503").await);
        assert!(sent(&mut rx).is_none());
        assert!(link.up().await);
        assert!(matches!(
            sent(&mut rx),
            Some(Input::SourceUp {
                source: EvidenceSource::PodWatch,
                ..
            })
        ));
        // Up already: nothing to close.
        assert!(link.up().await);
        assert!(sent(&mut rx).is_none());
        // Known to have delivered until `t`: the next gap starts there.
        let t = Timestamp::from_second(4_000_000_000).unwrap();
        link.delivered_until(t);
        assert!(link.down("watch: broken").await);
        let Some(Input::Gap(g)) = sent(&mut rx) else {
            panic!("a gap")
        };
        assert_eq!(g.from, Some(t));
        assert_eq!(g.clock, GapClock::Harness);
    }
}
