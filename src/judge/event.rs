//! `event` expectations, and why Kubernetes Events are lossy evidence (the kubelet's recorder rate-limits,
//! aggregates and drops them), so an absence or exact count of events is decided with care.

use super::*;

/// The kubelet's event recorder (client-go `tools/record`) lets a burst of 25 events through
/// its spam filter, then one more per 5 minutes, and folds more than 10 similar events in 10
/// minutes into one "(combined from similar events)" event. Beyond that burst an absence or a
/// count is no longer evidence.
pub(super) const RECORDER_BURST: u64 = 25;

/// Events are lossy on a healthy node. The recorder's spam filter (client-go
/// `tools/record/events_cache.go`, `getSpamKey`) keys its token bucket by source, involved
/// object and event *type*, not by reason: every Warning the kubelet writes about the pod
/// (MissingClusterDNS on each sync of a cluster without DNS, BackOff, Unhealthy ...) draws
/// from one bucket of 25. When a bucket of `type` (any type: `None`) reached that burst, or
/// similar events were aggregated, an absence or a count is not evidence: the reason why.
pub(super) fn events_lossy(tl: &Timeline, r#type: Option<&str>) -> Option<String> {
    type Bucket<'a> = (u64, Option<Timestamp>, std::collections::BTreeSet<&'a str>);
    let mut by_key: std::collections::BTreeMap<(&str, &str), Bucket> = Default::default();
    // Occurrences arrive in receive order: the one that fills a bucket says from when on the
    // stream may be missing some.
    for o in tl.events.iter().filter(|o| r#type.is_none_or(|t| o.r#type == t)) {
        let b = by_key
            .entry((o.source.as_deref().unwrap_or("unknown"), o.r#type.as_str()))
            .or_default();
        b.0 += u64::from(o.repeats.max(1));
        b.2.insert(o.reason.as_str());
        if b.0 >= RECORDER_BURST && b.1.is_none() {
            b.1 = Some(o.received);
        }
    }
    if let Some(((src, t), (n, full, reasons))) = by_key.iter().find(|(_, (n, ..))| *n >= RECORDER_BURST) {
        let reasons: Vec<&str> = reasons.iter().copied().collect();
        let when = full.map(|at| format!(" at {}", marks::hms(at))).unwrap_or_default();
        return Some(format!(
            "{n} {t} events from {src} ({}) reached the event recorder's spam-filter burst of {RECORDER_BURST} per source, pod and type{when}: later ones may have been dropped",
            reasons.join(", ")
        ));
    }
    tl.events
        .iter()
        .find(|o| o.message.starts_with("(combined from similar events)"))
        .map(|o| format!("the event recorder aggregated similar {} events into one", o.reason))
}

/// The type (Normal, Warning) whose spam-filter bucket an event of `reason` draws from: the
/// expectation's own, else the one type the kubelet writes this reason with, else the type
/// this reason was seen with; unknown (`None`: every bucket counts) otherwise.
pub(super) fn event_type<'a>(tl: &'a Timeline, reason: &str, declared: Option<&'a str>) -> Option<&'a str> {
    declared
        .or_else(|| kubelet_event_type(reason))
        .or_else(|| tl.events.iter().find(|o| o.reason == reason).map(|o| o.r#type.as_str()))
}

/// The reasons the kubelet (v1.36 `pkg/kubelet`, its `events` constants) writes with one type
/// only. `BackOff` is both (a pull back-off is Normal, a restart back-off Warning), so absent.
fn kubelet_event_type(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "Killing" | "Pulled" | "Pulling" | "Created" | "Started" | "SandboxChanged" => "Normal",
        "Unhealthy"
        | "Failed"
        | "FailedMount"
        | "FailedPostStartHook"
        | "FailedPreStopHook"
        | "ExceededGracePeriod"
        | "FailedCreatePodSandBox"
        | "ProbeWarning"
        | "Preempting"
        | "Evicted" => "Warning",
        _ => return None,
    })
}

/// What an event verdict adds about the event stream's own loss.
pub(super) const EVENTS_NOTE: &str =
    "events are best effort: the kubelet's recorder rate-limits, aggregates and may drop them";

/// A mark only the scheduler writes: its `Scheduled` event, or PodScheduled=True.
pub(super) fn scheduler_writes(case: &Case, r: &MarkRef) -> bool {
    let Ok(spec) = lookup(case, r) else { return false };
    match spec {
        MarkSpec::Event(e) => e.reason == "Scheduled",
        MarkSpec::Condition(c) => c.r#type == "PodScheduled",
        _ => false,
    }
}

pub(super) fn event(e: &EventExpect, tl: &Timeline) -> J {
    if e.reason == "Scheduled" && tl.pod.bound_at_create {
        return undecided(format!("event Scheduled: undecided: {BOUND_AT_CREATE}")).with(Fact::BoundWithoutScheduler);
    }
    let EventCount { j, measured_count } = event_count(e, tl);
    let count = e.count.unwrap_or(Count::at_least(1));
    let exact = count.exactly.is_some() || count.at_most.is_some();
    let lower = count.exactly.or(count.at_least);
    let shortfall = j.outcome == Outcome::Fail && measured_count.zip(lower).is_some_and(|(n, l)| n < l);
    // Seen is seen: a count above its bound stands. A shortfall, or an exact count met, is only
    // as strong as the event stream.
    if !((exact && j.outcome == Outcome::Pass) || shortfall) {
        return j;
    }
    match events_lossy(tl, event_type(tl, &e.reason, e.r#type.as_deref())) {
        Some(why) => {
            let mut u = undecided(format!("{}; undecided: {why}", j.evidence));
            u.marks = j.marks;
            u.with(Fact::EventsLossy)
        }
        None if j.outcome == Outcome::Pass => {
            let mut j = j;
            j.evidence
                .push_str(&format!(" [{EVENTS_NOTE}; none were seen dropped or aggregated]"));
            j.with(Fact::EventsLossy)
        }
        None => j,
    }
}

/// An event verdict and the count it was decided on.
pub(super) struct EventCount {
    j: J,
    measured_count: Option<u64>,
}

pub(super) fn event_count(e: &EventExpect, tl: &Timeline) -> EventCount {
    let re = match e.message.as_ref().map(|m| compile(m, tl)).transpose() {
        Ok(r) => r,
        Err(why) => {
            return EventCount {
                j: undecided(format!("event {}: {why}", e.reason)),
                measured_count: None,
            };
        }
    };
    let all: Vec<_> = tl.events.iter().filter(|o| o.reason == e.reason).collect();
    let matching: Vec<_> = all
        .iter()
        .filter(|o| {
            e.container
                .as_ref()
                .is_none_or(|c| o.container.as_deref() == Some(c.as_str()))
                && e.r#type.as_ref().is_none_or(|t| &o.r#type == t)
                && re.as_ref().is_none_or(|r| r.is_match(&o.message))
        })
        .collect();
    let mut what = format!("event {}", e.reason);
    if let Some(c) = &e.container {
        what.push_str(&format!(" on `{c}`"));
    }
    if let Some(m) = &e.message {
        what.push_str(&format!(" message {m}"));
    }
    let count = e.count.unwrap_or(Count::at_least(1));
    let gap = tl.event_gaps().next().map(|g| g.describe());
    // Each item may stand for many repetitions (`repeats`): count them, never expand them.
    let seen: Vec<&crate::observe::EventOccurrence> = matching.iter().map(|o| **o).collect();
    let n = crate::observe::timeline::occurrences(&seen);
    let mut j = decide_count_in_gap(&count, n, tl.complete, what, gap);
    if j.outcome != Outcome::Pass && matching.len() < all.len() {
        let sample = all
            .iter()
            .find(|o| !matching.iter().any(|m| std::ptr::eq(**m, **o)))
            .map(|o| {
                format!(
                    " (other {} occurrences: e.g. on `{}`: \"{}\")",
                    e.reason,
                    o.container.as_deref().unwrap_or("pod"),
                    o.message
                )
            });
        j.evidence.push_str(&sample.unwrap_or_default());
    }
    if let Some(last) = matching.last() {
        j.evidence.push_str(&format!(
            "; last \"{}\" received {}",
            last.message.trim_end(),
            marks::hms(last.received)
        ));
    }
    EventCount {
        j,
        measured_count: Some(n),
    }
}
