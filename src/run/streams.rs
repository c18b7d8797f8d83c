//! Live evidence streams (`StreamMsg`): the pod watch, the Event watch and one log fetch per
//! container instance, each turning what the API server sends into observer `Input`s on a
//! bounded channel, and each riding through API outages.
//!
//! Failures are retried with back-off for a time budget (`--api-outage-budget`), not an error
//! count. Every span in which a watch could not deliver in real time is sent as an
//! `Input::Gap` (closed by `Input::SourceUp` when the watch is re-established), so the judge
//! knows what evidence may be missing. A watch resumes from its last resourceVersion and
//! re-lists after 410 Gone; a log fetch resumes with `sinceTime` (the observer drops the lines
//! delivered twice), decodes invalid UTF-8 lossily, caps long lines, and never emits a line cut
//! by a broken stream (the resumed fetch delivers it whole).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;

use futures::{AsyncBufRead, AsyncBufReadExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, LogParams, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::observe::{
    EvidenceSource, Gap, GapClock, Input, MAX_LOG_LINE_BYTES, NewInstance, TRUNCATED_MARKER, WatchKind, cap_line,
};
use crate::util::backoff::Backoff;

/// Capacity of the channel from the streams to the observer: a chatty container waits for the
/// observer instead of filling memory.
pub const CHANNEL_CAPACITY: usize = 4096;

/// Server-side watch timeout: the API server ends the watch cleanly after this (and the
/// client's 300 s read timeout catches a stream that went silent without ending).
const WATCH_TIMEOUT_SECS: u32 = 290;
/// A log request answered 4xx (other than 429) is given this long to turn good (the container
/// may be between states when asked) before its log is recorded as lost.
const CLIENT_ERROR_PATIENCE: Duration = Duration::from_secs(10);

/// From the streams to the case loop.
#[derive(Debug)]
pub enum StreamMsg {
    Input(Input),
    /// A source stayed down longer than the outage budget and its stream gave up (its gap
    /// stays open to the end of the observation).
    Lost {
        source: EvidenceSource,
        reason: String,
    },
}

pub type Tx = mpsc::Sender<StreamMsg>;

/// What the case loop knows about the pod, for log fetches deciding whether a log is complete.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Known {
    /// Instances seen terminated: their log ends.
    pub terminated: BTreeSet<(String, u32)>,
    /// The pod was seen deleted.
    pub gone: bool,
}

/// Retry bookkeeping of one source: when it went down, why, and the next pause (an API server
/// that comes back is noticed within `Backoff::MAX`).
struct Outage {
    source: EvidenceSource,
    budget: Duration,
    since: Option<Instant>,
    reason: String,
    backoff: Backoff,
}

impl Outage {
    fn new(source: EvidenceSource, budget: Duration) -> Self {
        Outage {
            source,
            budget,
            since: None,
            reason: String::new(),
            backoff: Backoff::new(),
        }
    }

    /// Records a failure. Returns the pause before the next try, or `None` when the source has
    /// been down longer than the budget (the caller gives up).
    fn failed(&mut self, reason: String, retry_after: Option<Duration>) -> Option<Duration> {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.reason = reason;
        if since.elapsed() >= self.budget {
            return None;
        }
        let pause = self.backoff.next_pause();
        Some(retry_after.map_or(pause, |r| r.max(pause)).min(self.budget))
    }

    fn up(&mut self) {
        self.since = None;
        self.backoff.reset();
    }

    fn lost(&self) -> StreamMsg {
        StreamMsg::Lost {
            source: self.source.clone(),
            reason: format!(
                "{} down for longer than the outage budget ({}): {}",
                self.source.label(),
                crate::util::fmt_secs(self.budget.as_secs_f64()),
                self.reason
            ),
        }
    }
}

/// One line for a kube error, and the server's Retry-After (429) if any.
fn explain(e: &kube::Error) -> (String, Option<Duration>, Option<u16>) {
    match e {
        kube::Error::Api(s) => {
            let retry = s
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s)));
            (format!("{} {}: {}", s.code, s.reason, s.message), retry, Some(s.code))
        }
        other => (crate::cluster::describe(other), None, None),
    }
}

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

/// Reads `--timestamps` log lines from a byte stream: splits on `\n`, decodes invalid UTF-8
/// lossily, keeps at most `MAX_LOG_LINE_BYTES` of a line's text (the rest is skipped without
/// being buffered, and the line ends with `TRUNCATED_MARKER`), and holds back a line that the
/// stream has not finished.
#[derive(Default)]
pub struct LineReader {
    buf: Vec<u8>,
    /// Bytes of the current line skipped over the cap.
    skipped: usize,
}

/// Room for the timestamp and separator before a line's text.
const PREFIX_ROOM: usize = 64;

impl LineReader {
    /// The next complete line, `Ok(None)` at the end of the stream (a started line then stays
    /// in `pending`), or the stream's error.
    pub async fn next_line<R: AsyncBufRead + Unpin>(&mut self, r: &mut R) -> std::io::Result<Option<String>> {
        loop {
            let chunk = r.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(None);
            }
            let (take, end) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, Some(i + 1)),
                None => (chunk.len(), None),
            };
            let room = (MAX_LOG_LINE_BYTES + PREFIX_ROOM).saturating_sub(self.buf.len());
            let keep = take.min(room);
            self.buf.extend_from_slice(&chunk[..keep]);
            self.skipped += take - keep;
            let used = end.unwrap_or(take);
            r.consume_unpin(used);
            if end.is_some() {
                return Ok(Some(self.take_line()));
            }
        }
    }

    /// The unfinished line held back, if any (emit it only when the stream ended cleanly).
    pub fn pending(&mut self) -> Option<String> {
        (!self.buf.is_empty() || self.skipped > 0).then(|| self.take_line())
    }

    /// Drops an unfinished line (the stream broke: the resumed fetch delivers it whole).
    pub fn discard(&mut self) {
        self.buf.clear();
        self.skipped = 0;
    }

    fn take_line(&mut self) -> String {
        let raw = String::from_utf8_lossy(&self.buf).into_owned();
        let skipped = std::mem::take(&mut self.skipped);
        self.buf.clear();
        let (ts, text) = raw.split_once(' ').unwrap_or((raw.as_str(), ""));
        let text = if skipped > 0 && text.len() <= MAX_LOG_LINE_BYTES {
            format!("{text}{TRUNCATED_MARKER}")
        } else if skipped > 0 {
            let mut end = MAX_LOG_LINE_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}{TRUNCATED_MARKER}", &text[..end])
        } else {
            cap_line(text).into_owned()
        };
        format!("{ts} {text}")
    }
}

/// How one log fetch ended.
enum Fetched {
    /// The stream ended cleanly.
    Ended,
    /// The request failed (no stream), or the stream broke (`opened`).
    Failed {
        why: String,
        retry: Option<Duration>,
        code: Option<u16>,
        opened: bool,
    },
    /// The receiver is gone: the case is over.
    Closed,
}

/// Fetches the log of one container instance with timestamps: followed while it runs, in one
/// go once terminated, `previous` when it was only seen as lastState. A broken or refused fetch
/// resumes from the second of the last line received (`sinceTime` has whole seconds; the
/// observer drops the lines delivered twice), within the outage budget.
///
/// The log's gap opens at the first failure, from its last line on, so a case that ends while
/// the fetch is being retried is judged on a log known to be incomplete. It is withdrawn only
/// when a resumed fetch proves nothing was lost: its first line is at or before the last line
/// seen (the resumed window overlaps what was received), or, with no line seen yet, the resumed
/// fetch read the log from its start. A resumed fetch that starts after the last line seen
/// leaves the gap open: lines may have gone between them.
pub async fn follow_log(
    api: Api<Pod>,
    pod: String,
    n: NewInstance,
    tx: Tx,
    budget: Duration,
    known: watch::Receiver<Known>,
) {
    let source = EvidenceSource::Logs {
        container: Some(n.container.clone()),
        instance: Some(n.instance),
    };
    let mut outage = Outage::new(source.clone(), budget);
    let mut last: Option<Timestamp> = None;
    let mut client_errors: Option<Instant> = None;
    // `Some(from)` while a gap is open: the last line seen before the failure (None: none yet).
    let mut open: Option<Option<Timestamp>> = None;
    // The last fetch ended cleanly (no failure since): the kubelet ends a follow when the
    // container's log ends.
    let mut ended_clean = false;
    let slot = (n.container.clone(), n.instance);
    loop {
        let done = {
            let k = known.borrow();
            k.gone || k.terminated.contains(&slot)
        };
        let follow = !n.terminated && !n.previous && !done;
        let lp = LogParams {
            container: Some(n.container.clone()),
            follow,
            previous: n.previous,
            timestamps: true,
            // Whole seconds, rounded down (kube would round to the nearest second).
            since_time: last.and_then(|t| Timestamp::from_second(t.as_second()).ok()),
            ..LogParams::default()
        };
        let fetched = fetch_log(&api, &pod, &lp, &n, &tx, &mut last, &source, &mut open).await;
        if matches!(fetched, Fetched::Ended | Fetched::Failed { opened: true, .. }) {
            // The server answered: an outage (if any) is over; later failures count afresh.
            outage.up();
            client_errors = None;
        }
        let clean = matches!(fetched, Fetched::Ended);
        let (why, retry, code) = match fetched {
            Fetched::Closed => return,
            Fetched::Ended if !follow => return,
            Fetched::Ended => {
                let k = known.borrow().clone();
                if k.gone || k.terminated.contains(&slot) {
                    // The follow ended with the container; fetch once more without follow
                    // to be sure nothing after the last line was missed. If that fails, the
                    // log after its last line is unknown: a gap to the end.
                    let lp = LogParams {
                        follow: false,
                        since_time: last.and_then(|t| Timestamp::from_second(t.as_second()).ok()),
                        ..lp
                    };
                    // A 404 says the pod is gone already (deleted right after its container
                    // ended): the follow's clean end, which the kubelet sends when the container's
                    // log ends, is then all there is. Any other failure (the API away) leaves the
                    // log's end unknown.
                    match fetch_log(&api, &pod, &lp, &n, &tx, &mut last, &source, &mut open).await {
                        Fetched::Failed { code: Some(404), .. } => {}
                        Fetched::Failed { why, .. } => {
                            open_gap(&tx, &source, &mut open, last, format!("final fetch: {why}")).await;
                        }
                        Fetched::Ended | Fetched::Closed => {}
                    }
                    return;
                }
                // Ended while the container runs (the API server closed it, e.g. shutting down,
                // or the status has not caught up with an exit yet): everything sent so far was
                // delivered; resume shortly.
                (
                    String::from("log stream ended early"),
                    Some(Duration::from_millis(500)),
                    None,
                )
            }
            Fetched::Failed { code: Some(404), .. } if ended_clean && ended_with_pod(&known, &slot).await => {
                // The follow ended cleanly while our pod watch still showed the container
                // running (it trails the log under load), and the pod was deleted before the
                // next fetch: the container has ended, so that clean end was the log's end, as
                // in the final fetch above (live: TERM's line, the follow's end, the terminated
                // status 1.1 s later, the pod gone 0.15 s after that).
                return;
            }
            Fetched::Failed { why, retry, code, .. } => {
                open_gap(&tx, &source, &mut open, last, why.clone()).await;
                (why, retry, code)
            }
        };
        ended_clean = clean;
        // 4xx (not 429): the container may be between states; the answer rarely changes.
        if code.is_some_and(|c| (400..500).contains(&c) && c != 429) {
            let first = *client_errors.get_or_insert_with(Instant::now);
            if first.elapsed() >= CLIENT_ERROR_PATIENCE || code == Some(404) {
                // Given up: the gap opened at the failure stays open to the end.
                return;
            }
        }
        match outage.failed(why.clone(), retry) {
            Some(p) => tokio::time::sleep(p).await,
            None => return,
        }
    }
}

/// How long a log follower waits for the pod watch to show what a 404 implies (the container
/// ended, or the pod is gone): the watch trails the log stream by its delivery (`WATCH_DELIVERY`,
/// 1 s) and the kubelet's status write; beyond this the log's end stays unknown.
const WATCH_CATCH_UP: Duration = Duration::from_secs(5);

/// Whether the pod watch shows (now, or within `WATCH_CATCH_UP`) that the instance ended or
/// the pod is gone.
async fn ended_with_pod(known: &watch::Receiver<Known>, slot: &(String, u32)) -> bool {
    let mut known = known.clone();
    tokio::time::timeout(
        WATCH_CATCH_UP,
        known.wait_for(|k| k.gone || k.terminated.contains(slot)),
    )
    .await
    .is_ok_and(|r| r.is_ok())
}

/// Opens the log's gap at a failure, from its last line on (once: a gap already open stays).
async fn open_gap(
    tx: &Tx,
    source: &EvidenceSource,
    open: &mut Option<Option<Timestamp>>,
    last: Option<Timestamp>,
    why: String,
) {
    if open.is_some() {
        return;
    }
    *open = Some(last);
    let _ = tx.send(StreamMsg::Input(Input::Gap(log_gap(source, last, why)))).await;
}

/// A log known complete up to its line at `last` (node clock), unknown after it.
fn log_gap(source: &EvidenceSource, last: Option<Timestamp>, why: String) -> Gap {
    Gap {
        source: source.clone(),
        from: last,
        to: None,
        clock: GapClock::Node,
        reason: why,
    }
}

/// One log request: sends every complete line; a line left unfinished is sent only when the
/// stream ended cleanly and was not a follow that will be resumed.
#[allow(clippy::too_many_arguments)]
async fn fetch_log(
    api: &Api<Pod>,
    pod: &str,
    lp: &LogParams,
    n: &NewInstance,
    tx: &Tx,
    last: &mut Option<Timestamp>,
    source: &EvidenceSource,
    open: &mut Option<Option<Timestamp>>,
) -> Fetched {
    let stream = match api.log_stream(pod, lp).await {
        Ok(s) => s,
        Err(e) => {
            let (why, retry, code) = explain(&e);
            return Fetched::Failed {
                why,
                retry,
                code,
                opened: false,
            };
        }
    };
    let mut stream = std::pin::pin!(stream);
    let mut reader = LineReader::default();
    let send = |line: String, last: &mut Option<Timestamp>| {
        if let Some((t, _)) = crate::observe::observer::parse_log_line(&line) {
            *last = Some(last.map_or(t, |l| l.max(t)));
        }
        tx.send(StreamMsg::Input(Input::Log {
            received: Some(Timestamp::now()),
            container: n.container.clone(),
            instance: Some(n.instance),
            line,
        }))
    };
    // With a gap open, the first line of this (resumed) fetch decides whether anything was lost.
    let mut first = true;
    loop {
        match reader.next_line(&mut stream).await {
            Ok(Some(line)) => {
                if std::mem::take(&mut first)
                    && let Some(from) = *open
                {
                    let t = crate::observe::observer::parse_log_line(&line).map(|(t, _)| t);
                    let proven = match (from, t) {
                        // Nothing was seen before: a fetch from the log's start loses nothing.
                        (None, _) => lp.since_time.is_none(),
                        // The resumed window overlaps what was received.
                        (Some(l), Some(t)) => t <= l,
                        (Some(_), None) => false,
                    };
                    let msg = match (proven, t) {
                        (true, _) => Some(Input::Resumed { source: source.clone() }),
                        // Lines resume after a hole: the gap ends where they resume.
                        (false, Some(t)) => Some(Input::SourceUp {
                            source: source.clone(),
                            at: t,
                        }),
                        // A line without a timestamp proves nothing: the gap stays open.
                        (false, None) => None,
                    };
                    if let Some(msg) = msg {
                        *open = None;
                        if tx.send(StreamMsg::Input(msg)).await.is_err() {
                            return Fetched::Closed;
                        }
                    }
                }
                if send(line, last).await.is_err() {
                    return Fetched::Closed;
                }
            }
            Ok(None) => {
                // A follow that ends may be resumed: its unfinished line comes again whole.
                if !lp.follow
                    && let Some(line) = reader.pending()
                    && send(line, last).await.is_err()
                {
                    return Fetched::Closed;
                }
                // An empty log read from its start lost nothing either.
                if first && *open == Some(None) && lp.since_time.is_none() {
                    *open = None;
                    if tx
                        .send(StreamMsg::Input(Input::Resumed { source: source.clone() }))
                        .await
                        .is_err()
                    {
                        return Fetched::Closed;
                    }
                }
                return Fetched::Ended;
            }
            Err(e) => {
                reader.discard();
                return Fetched::Failed {
                    why: format!("log stream broke: {e}"),
                    retry: None,
                    code: None,
                    opened: true,
                };
            }
        }
    }
}
