//! Live evidence streams (`StreamMsg`): the pod watch, the Event watch (`watch`) and one log
//! fetch per container instance (`logs`), each turning what the API server sends into observer
//! `Input`s on a bounded channel, and each riding through API outages.
//!
//! Failures are retried with back-off for a time budget (`--api-outage-budget`), not an error
//! count. Every span in which a watch could not deliver in real time is sent as an
//! `Input::Gap` (closed by `Input::SourceUp` when the watch is re-established), so the judge
//! knows what evidence may be missing. A watch (kube-runtime's `watcher`) resumes from its last
//! resourceVersion and re-lists after 410 Gone; a log fetch resumes with `sinceTime` (the
//! observer drops the lines delivered twice), decodes invalid UTF-8 lossily, caps long lines,
//! and never emits a line cut by a broken stream (the resumed fetch delivers it whole).

mod logs;
mod watch;

pub use logs::{LineReader, follow_log};
pub use watch::{watch_events, watch_pods};

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::observe::{EvidenceSource, Input};
use crate::util::backoff::Backoff;

/// Capacity of the channel from the streams to the observer: a chatty container waits for the
/// observer instead of filling memory.
pub const CHANNEL_CAPACITY: usize = 4096;

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
