//! `Hit`: a resolved mark, the instant it happened with its clock, its stream's delivery delay and its
//! precision (and the cause of that precision), so judges can tell how far two marks may be trusted apart.

use super::*;

/// Which clock a time was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Node clock: CRI log timestamps, status and event times.
    Node,
    /// podlife's own clock: receive times and actions.
    Harness,
}

/// The stream a mark's instant was read from. Marks of one stream keep the order in which it
/// was written (a watch delivers in resourceVersion order, a container's log in its own order);
/// two streams written by independent writers (the scheduler, the kubelet's status manager,
/// its event recorder, a container) keep no common order, and their receive times are only
/// ordered beyond the delivery delay of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Receive times of the pod watch.
    PodWatch,
    /// Receive times of the events watch (the event's own timestamp bounds it from below).
    Events,
    /// CRI timestamps of one container instance's log.
    Log(String, u32),
    /// The kubelet's status times (startedAt, finishedAt): node clock.
    Status,
    /// podlife's own requests (sent, and answered).
    Action,
}

/// How late a watch may deliver a write (the true instant of a receive-time mark lies up to this
/// much before it, when compared with another stream): the API server's watch cache and two
/// independent HTTP streams: a Scheduled event is received 2.5–35 ms after a status it
/// preceded, and a Started event up to 0.75 s late with 32 cases on 2 cores. A cause of uncertainty, named in the evidence, never a tolerance of the node.
pub const WATCH_DELIVERY: SignedDuration = SignedDuration::from_secs(1);

/// A resolved mark.
#[derive(Clone, Debug)]
pub struct Hit {
    pub at: Timestamp,
    /// The true instant lies in `[at, at + precision)`: 1 s for status times, 0 for ns clocks.
    pub precision: SignedDuration,
    pub clock: Clock,
    /// What was found, e.g. `log main#0 "TERM received" @21:07:26.881`.
    pub what: String,
    /// Why `precision` is not zero, for the evidence (e.g. "status times are whole seconds").
    pub cause: Option<String>,
    /// Set when a gap in the mark's source could hide the true occurrence (an earlier first, a
    /// later last, or this one received late): the gap, described. Verdicts that measure with
    /// such a mark are undecided.
    pub uncertain: Option<String>,
    /// With `uncertain`: where the true instant may lie instead, `(earliest, latest)` (`None`:
    /// unbounded on that side). A first occurrence first seen after a gap lies between the gap's
    /// start and its sighting; a last one may be followed by a later one up to the gap's end.
    pub uncertain_span: Option<(Option<Timestamp>, Option<Timestamp>)>,
    /// The stream the instant was read from.
    pub stream: Stream,
    /// Compared with another stream, the true instant may lie up to this much before `at`
    /// (a receive time lags its write) ...
    pub early: SignedDuration,
    /// ... or up to this much after `at + precision` (our request takes effect before it is
    /// answered).
    pub late: SignedDuration,
    /// Why `early`/`late` are not zero, for the evidence.
    pub stream_cause: Option<String>,
    /// For our own requests: how much later than the request's effect the node may start to
    /// react without fault, because the kubelet hears of it through its own watch of the API
    /// server (`WATCH_DELIVERY`). Only an upper bound on a gap from this mark to a node mark
    /// uses it (it delays reactions, never moves them earlier), and only to make undecided.
    pub reaction: SignedDuration,
    /// A `tickStopped` mark whose loop stalled before the kill (its last tick disagrees with
    /// the container's finishedAt): the instant is finishedAt's, to the second.
    pub tick_stalled: bool,
}

impl Hit {
    pub(super) fn new(at: Timestamp, precision: SignedDuration, clock: Clock, what: String) -> Self {
        Hit {
            at,
            precision,
            clock,
            what,
            cause: None,
            uncertain: None,
            uncertain_span: None,
            stream: Stream::Status,
            early: ZERO,
            late: ZERO,
            stream_cause: None,
            tick_stalled: false,
            reaction: ZERO,
        }
    }

    /// A receive time of the pod watch.
    pub(super) fn pod_watch(mut self) -> Self {
        self.stream = Stream::PodWatch;
        self.early = WATCH_DELIVERY;
        self.stream_cause = Some(format!(
            "a pod watch receive time lags the write by up to {}",
            crate::util::fmt_secs(WATCH_DELIVERY.as_secs_f64())
        ));
        self
    }

    pub(super) fn stalled(mut self) -> Self {
        self.tick_stalled = true;
        self
    }

    pub(super) fn log(mut self, container: &str, instance: u32) -> Self {
        self.stream = Stream::Log(container.to_string(), instance);
        self
    }

    /// The earliest and latest true instant when compared with a mark of another stream.
    /// Saturating: a timestamp near the end of time (bad input) must not panic the judge.
    pub fn span(&self) -> (Timestamp, Timestamp) {
        use crate::util::ts_add;
        (
            ts_add(self.at, -self.early),
            ts_add(ts_add(self.at, self.precision), self.late),
        )
    }

    /// The true instant when compared with a mark of the same stream (its order is the writer's).
    pub(crate) fn same_stream(&self, other: &Hit) -> bool {
        self.stream == other.stream
    }

    pub(super) fn because(mut self, cause: impl Into<String>) -> Self {
        if self.precision > ZERO {
            self.cause = Some(cause.into());
        }
        self
    }
}

/// Status times are truncated to the second.
pub const STATUS_CAUSE: &str = "status times are whole seconds";
