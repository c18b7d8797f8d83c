//! The pod and Event watches: list, then watch from the list's resourceVersion, resumed after a
//! stream end or error and re-listed after 410 Gone, with the gaps in between.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use super::{Outage, StreamMsg, Tx, explain};
use crate::observe::{EvidenceSource, Gap, GapClock, Input, WatchKind};

/// Server-side watch timeout: the API server ends the watch cleanly after this (and the
/// client's 300 s read timeout catches a stream that went silent without ending).
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
            clock: GapClock::Harness,
            reason: reason.to_string(),
        };
        self.send(Input::Gap(gap)).await
    }

    /// A request succeeded: the source delivers in real time again.
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

/// How a watch delivery becomes an observer input.
type ToInput<K> = fn(Timestamp, WatchKind, K) -> Input;

/// Lists, then watches from the list's resourceVersion, resuming after a stream end or error
/// and re-listing after 410 Gone, until the receiver is dropped or the source has been down
/// longer than `budget`. With `track_deletes`, an object seen before a re-list and absent from
/// it is reported DELETED (a watch that re-lists does not replay deletions).
#[allow(clippy::too_many_arguments)]
async fn watch_source<K>(
    api: Api<K>,
    fields: Option<String>,
    source: EvidenceSource,
    tx: Tx,
    budget: Duration,
    to_input: ToInput<K>,
    track_deletes: bool,
    mut established: Option<oneshot::Sender<()>>,
) where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let mut link = Link::new(source.clone(), tx.clone());
    let mut outage = Outage::new(source, budget);
    let mut known: BTreeMap<String, K> = BTreeMap::new();
    let name_of = |o: &K| o.meta().name.clone().unwrap_or_default();
    'relist: loop {
        let mut lp = ListParams::default();
        if let Some(f) = &fields {
            lp = lp.fields(f);
        }
        let list = match api.list(&lp).await {
            Ok(l) => l,
            Err(e) => {
                let (why, retry, _) = explain(&e);
                if !link.down(&format!("list: {why}")).await {
                    return;
                }
                match outage.failed(why, retry) {
                    Some(p) => {
                        tokio::time::sleep(p).await;
                        continue 'relist;
                    }
                    None => {
                        let _ = tx.send(outage.lost()).await;
                        return;
                    }
                }
            }
        };
        if !link.up().await {
            return;
        }
        outage.up();
        // From the list's resourceVersion on, the watch below delivers every change: anything
        // created after this moment is seen from its first version.
        if let Some(e) = established.take() {
            let _ = e.send(());
        }
        let received = Timestamp::now();
        let listed: BTreeSet<String> = list.items.iter().map(name_of).collect();
        if track_deletes {
            for (name, obj) in std::mem::take(&mut known) {
                if !listed.contains(&name) && !link.send(to_input(received, WatchKind::Deleted, obj)).await {
                    return;
                }
            }
        }
        let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
        for obj in list.items {
            if track_deletes {
                known.insert(name_of(&obj), obj.clone());
            }
            if !link.send(to_input(received, WatchKind::Added, obj)).await {
                return;
            }
        }
        loop {
            let mut wp = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
            if let Some(f) = &fields {
                wp = wp.fields(f);
            }
            let failure = match api.watch(&wp, &rv).await {
                Err(kube::Error::Api(s)) if s.code == 410 => continue 'relist,
                Err(e) => explain(&e),
                Ok(stream) => {
                    if !link.up().await {
                        return;
                    }
                    outage.up();
                    let mut stream = std::pin::pin!(stream);
                    let mut failure = None;
                    while let Some(ev) = stream.next().await {
                        let received = Timestamp::now();
                        link.healthy_at = received;
                        let (kind, obj) = match ev {
                            Ok(WatchEvent::Added(o)) => (WatchKind::Added, o),
                            Ok(WatchEvent::Modified(o)) => (WatchKind::Modified, o),
                            Ok(WatchEvent::Deleted(o)) => (WatchKind::Deleted, o),
                            Ok(WatchEvent::Bookmark(b)) => {
                                rv = b.metadata.resource_version;
                                continue;
                            }
                            Ok(WatchEvent::Error(s)) if s.code == 410 => continue 'relist,
                            Ok(WatchEvent::Error(s)) => {
                                failure = Some((format!("{} {}: {}", s.code, s.reason, s.message), None, Some(s.code)));
                                break;
                            }
                            Err(e) => {
                                failure = Some(explain(&e));
                                break;
                            }
                        };
                        if let Some(v) = &obj.meta().resource_version {
                            rv = v.clone();
                        }
                        if track_deletes {
                            if kind == WatchKind::Deleted {
                                known.remove(&name_of(&obj));
                            } else {
                                known.insert(name_of(&obj), obj.clone());
                            }
                        }
                        if !link.send(to_input(received, kind, obj)).await {
                            return;
                        }
                    }
                    match failure {
                        // The server ended the watch (its timeout, or a graceful shutdown):
                        // resume from the last resourceVersion at once.
                        None => {
                            link.healthy_at = Timestamp::now();
                            continue;
                        }
                        Some(f) => {
                            link.healthy_at = Timestamp::now();
                            f
                        }
                    }
                }
            };
            let (why, retry, _) = failure;
            if !link.down(&format!("watch: {why}")).await {
                return;
            }
            match outage.failed(why, retry) {
                Some(p) => tokio::time::sleep(p).await,
                None => {
                    let _ = tx.send(outage.lost()).await;
                    return;
                }
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
/// answered: create the pod only then, or its first versions may be missed (a watch spawned but
/// not yet listing saw 20 of 468 live pods first as ContainerCreating).
pub async fn watch_pods(api: Api<Pod>, name: String, tx: Tx, budget: Duration, established: oneshot::Sender<()>) {
    let fields = Some(format!("metadata.name={name}"));
    watch_source(
        api,
        fields,
        EvidenceSource::PodWatch,
        tx,
        budget,
        pod_input,
        true,
        Some(established),
    )
    .await
}

/// The Event watch of a case namespace. A 403 (events forbidden) is a gap like any failure:
/// retried within the budget (RBAC can lag behind an API server restart), then left open.
pub async fn watch_events(api: Api<Event>, tx: Tx, budget: Duration) {
    watch_source(api, None, EvidenceSource::Events, tx, budget, event_input, false, None).await
}
