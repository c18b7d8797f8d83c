//! Log follows: one fetch per container instance (`follow_log`), read line by line
//! (`LineReader`), resumed with `sinceTime` after a break, its gap opened at the first failure.

use std::time::Duration;

use futures::{AsyncBufRead, AsyncBufReadExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Known, Outage, StreamMsg, Tx, explain};
use crate::observe::{
    EvidenceSource, Gap, GapClock, Input, MAX_LOG_LINE_BYTES, NewInstance, TRUNCATED_MARKER, cap_line,
};

/// A log request answered 4xx (other than 429) is given this long to turn good (the container
/// may be between states when asked) before its log is recorded as lost.
const CLIENT_ERROR_PATIENCE: Duration = Duration::from_secs(10);

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
    let mut client_errors: Option<Instant> = None;
    let log = LogSource {
        api: &api,
        pod: &pod,
        n: &n,
        tx: &tx,
        source: &source,
    };
    let mut seen = Seen::default();
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
            since_time: seen.since(),
            ..LogParams::default()
        };
        let fetched = log.fetch(&lp, &mut seen).await;
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
                        since_time: seen.since(),
                        ..lp
                    };
                    // A 404 says the pod is gone already (deleted right after its container
                    // ended): the follow's clean end, which the kubelet sends when the container's
                    // log ends, is then all there is. Any other failure (the API away) leaves the
                    // log's end unknown.
                    match log.fetch(&lp, &mut seen).await {
                        Fetched::Failed { code: Some(404), .. } => {}
                        Fetched::Failed { why, .. } => {
                            log.open_gap(&mut seen, format!("final fetch: {why}")).await;
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
                log.open_gap(&mut seen, why.clone()).await;
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

/// One container instance's log: where it is read from, and where its lines and gaps go.
struct LogSource<'a> {
    api: &'a Api<Pod>,
    pod: &'a str,
    n: &'a NewInstance,
    tx: &'a Tx,
    source: &'a EvidenceSource,
}

/// What the fetches of one log have seen so far.
#[derive(Default)]
struct Seen {
    /// The newest line's timestamp.
    last: Option<Timestamp>,
    /// `Some(from)` while the log's gap is open: the last line seen before the failure (`None`:
    /// none yet).
    open: Option<Option<Timestamp>>,
}

impl Seen {
    /// Where a resumed fetch starts: the second of the last line (`sinceTime` has whole
    /// seconds, rounded down here as kube would round to the nearest).
    fn since(&self) -> Option<Timestamp> {
        self.last.and_then(|t| Timestamp::from_second(t.as_second()).ok())
    }
}

impl LogSource<'_> {
    /// Opens the log's gap at a failure, from its last line on (once: a gap already open stays).
    async fn open_gap(&self, seen: &mut Seen, why: String) {
        if seen.open.is_some() {
            return;
        }
        seen.open = Some(seen.last);
        let gap = log_gap(self.source, seen.last, why);
        let _ = self.tx.send(StreamMsg::Input(Input::Gap(gap))).await;
    }
}

/// A log known complete up to its line at `last` (node clock), unknown after it.
fn log_gap(source: &EvidenceSource, last: Option<Timestamp>, why: String) -> Gap {
    Gap {
        source: source.clone(),
        from: last,
        to: None,
        back: None,
        clock: GapClock::Node,
        reason: why,
    }
}

/// Asked with timestamps, every log line has one. The kubelet answers a log it cannot read (its
/// file gone: an evicted pod, a removed container) with 200 and its error as the body ("unable to
/// retrieve container logs for ...", "failed to try resolving symlinks in path ..."): no line of
/// the log.
fn is_kubelet_error(line: &str) -> bool {
    crate::observe::observer::parse_log_line(line).is_none() && !line.trim().is_empty()
}

/// The log is gone, as a 404 says (see `is_kubelet_error`).
fn log_unreadable(line: &str) -> Fetched {
    Fetched::Failed {
        why: format!(
            "the log request was answered \"{}\" instead of the log",
            crate::util::printable(line.trim())
                .chars()
                .take(200)
                .collect::<String>()
        ),
        retry: None,
        code: Some(404),
        opened: true,
    }
}

impl LogSource<'_> {
    /// One log request: sends every complete line; a line left unfinished is sent only when the
    /// stream ended cleanly and was not a follow that will be resumed.
    async fn fetch(&self, lp: &LogParams, seen: &mut Seen) -> Fetched {
        let (api, pod, n, tx, source) = (self.api, self.pod, self.n, self.tx, self.source);
        let (last, open) = (&mut seen.last, &mut seen.open);
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
                // Asked with timestamps, every log line has one. The kubelet answers a log it cannot
                // read (its file gone: an evicted pod, a removed container) with 200 and its error as
                // the body ("unable to retrieve container logs for ...", "failed to try resolving
                // symlinks in path ..."): the log is gone, as a 404 says, never a line of it.
                Ok(Some(line)) if is_kubelet_error(&line) => return log_unreadable(&line),
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
                    let pending = reader.pending();
                    if let Some(line) = pending.as_deref().filter(|l| is_kubelet_error(l)) {
                        return log_unreadable(line);
                    }
                    // A follow that ends may be resumed: its unfinished line comes again whole.
                    if !lp.follow
                        && let Some(line) = pending
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
}
