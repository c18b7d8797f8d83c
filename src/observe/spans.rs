//! What a timeline says over time (`Timeline::phase_spans`, `status_spans`, `ready_spans`,
//! `waiting_reasons`): spans in receive times, for every reporter to draw or print.
//!
//! Phase, STATUS and readiness are only ever known from pod status updates, so each span runs
//! from the receive time of the snapshot that first showed a value to that of the snapshot that
//! showed another; the last one runs to the pod's deletion, or to the end the caller gives.

use jiff::Timestamp;

use super::timeline::{Instance, State, Timeline};

/// `value` held from `from` to `to` (receive times; `to >= from`).
#[derive(Clone, Debug, PartialEq)]
pub struct Span<T = ()> {
    pub from: Timestamp,
    pub to: Timestamp,
    pub value: T,
}

/// One span per change of value: a repeated value extends the span it is in.
fn changes<T: PartialEq>(values: impl Iterator<Item = (Timestamp, T)>, stop: Timestamp) -> Vec<Span<T>> {
    let mut out: Vec<Span<T>> = vec![];
    for (t, value) in values {
        if out.last().is_some_and(|s| s.value == value) {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.to = t;
        }
        out.push(Span { from: t, to: t, value });
    }
    if let Some(last) = out.last_mut() {
        last.to = stop.max(last.from);
    }
    out
}

impl Timeline {
    /// Where the last span of a value ends: the pod's deletion, or `end` if it was not seen.
    fn stop(&self, end: Timestamp) -> Timestamp {
        self.deleted.unwrap_or(end)
    }

    /// The pod's phase over time (snapshots without a phase are skipped).
    pub(crate) fn phase_spans(&self, end: Timestamp) -> Vec<Span<String>> {
        let phases = self
            .snapshots
            .iter()
            .filter_map(|s| s.phase.clone().map(|p| (s.received, p)));
        changes(phases, self.stop(end))
    }

    /// kubectl's STATUS column over time.
    pub(crate) fn status_spans(&self, end: Timestamp) -> Vec<Span<String>> {
        changes(self.status_column().map(|(s, text)| (s.received, text)), self.stop(end))
    }

    /// When the status said instance `instance` of `container` was ready.
    pub(crate) fn ready_spans(&self, container: &str, instance: u32, end: Timestamp) -> Vec<Span> {
        let mut out = vec![];
        let mut since: Option<Timestamp> = None;
        for s in &self.snapshots {
            let Some(c) = s.container(container) else { continue };
            let ready = c.instance == Some(instance) && c.ready;
            match (ready, since) {
                (true, None) => since = Some(s.received),
                (false, Some(from)) => {
                    out.push(Span {
                        from,
                        to: s.received,
                        value: (),
                    });
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(from) = since {
            out.push(Span {
                from,
                to: self.stop(end).max(from),
                value: (),
            });
        }
        out
    }

    /// Distinct waiting reasons of `container` reported strictly between two receive times, in
    /// order (`waiting` for a waiting state without a reason).
    pub(crate) fn waiting_reasons(
        &self,
        container: &str,
        after: Option<Timestamp>,
        before: Option<Timestamp>,
    ) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for s in &self.snapshots {
            if after.is_some_and(|a| s.received <= a) || before.is_some_and(|b| s.received >= b) {
                continue;
            }
            if let Some(c) = s.container(container)
                && let State::Waiting { reason, .. } = &c.state
            {
                let reason = reason.clone().unwrap_or_else(|| "waiting".into());
                if !out.contains(&reason) {
                    out.push(reason);
                }
            }
        }
        out
    }

    /// Why `inst` waited before it started: the waiting reasons reported after the previous
    /// instance `prev` was first seen (from the start, for the first) and before `inst` was.
    pub(crate) fn instance_waiting_reasons(&self, inst: &Instance, prev: Option<&Instance>) -> Vec<String> {
        self.waiting_reasons(&inst.container, prev.map(|p| p.first_seen), Some(inst.first_seen))
    }

    /// The receive time of the last snapshot that showed `container` waiting before `inst` was
    /// first seen (and after `prev` was): startedAt is truncated to the second, so it may
    /// precede this report.
    pub(crate) fn last_waiting_before(&self, inst: &Instance, prev: Option<&Instance>) -> Option<Timestamp> {
        let after = prev.map(|p| p.first_seen);
        self.snapshots
            .iter()
            .filter(|s| after.is_none_or(|a| s.received > a) && s.received < inst.first_seen)
            .filter(|s| {
                s.container(&inst.container)
                    .is_some_and(|c| matches!(c.state, State::Waiting { .. }))
            })
            .map(|s| s.received)
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::timeline::Snapshot;
    use serde_json::json;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    /// A snapshot at second `s` with `phase` and container `main` in `state` (JSON), instance
    /// `inst`, `ready`.
    fn snap(s: i64, phase: Option<&str>, state: serde_json::Value, inst: Option<u32>, ready: bool) -> Snapshot {
        serde_json::from_value(json!({
            "received": at(s),
            "watch": "MODIFIED",
            "phase": phase,
            "containers": [{
                "name": "main", "kind": "regular", "instance": inst,
                "state": state, "ready": ready, "restartCount": 0
            }],
        }))
        .unwrap()
    }

    fn waiting(reason: Option<&str>) -> serde_json::Value {
        json!({"state": "waiting", "reason": reason})
    }

    fn running() -> serde_json::Value {
        json!({"state": "running"})
    }

    fn instance(n: u32, first_seen: i64) -> Instance {
        serde_json::from_value(json!({
            "container": "main", "kind": "regular", "instance": n, "firstSeen": at(first_seen),
        }))
        .unwrap()
    }

    fn timeline(snapshots: Vec<Snapshot>) -> Timeline {
        Timeline {
            snapshots,
            ..Default::default()
        }
    }

    #[test]
    fn phases_change_at_receive_times_and_end_at_the_deletion() {
        let mut tl = timeline(vec![
            snap(0, Some("Pending"), waiting(Some("ContainerCreating")), None, false),
            snap(1, None, waiting(None), None, false),
            snap(2, Some("Pending"), running(), Some(0), false),
            snap(3, Some("Running"), running(), Some(0), true),
        ]);
        let spans = tl.phase_spans(at(10));
        let got: Vec<(Timestamp, Timestamp, &str)> = spans.iter().map(|s| (s.from, s.to, s.value.as_str())).collect();
        assert_eq!(got, [(at(0), at(3), "Pending"), (at(3), at(10), "Running")]);
        tl.deleted = Some(at(7));
        assert_eq!(tl.phase_spans(at(10)).last().unwrap().to, at(7));
        // A deletion before the last change never makes a span run backwards.
        tl.deleted = Some(at(2));
        let last = tl.phase_spans(at(10)).pop().unwrap();
        assert_eq!((last.from, last.to), (at(3), at(3)));
    }

    #[test]
    fn status_spans_follow_the_status_column() {
        let mut a = snap(0, Some("Pending"), waiting(Some("ContainerCreating")), None, false);
        a.status = Some("ContainerCreating".into());
        let mut b = snap(2, Some("Running"), running(), Some(0), true);
        b.status = Some("Running".into());
        let mut c = snap(4, Some("Running"), running(), Some(0), true);
        c.status = Some("Running".into());
        let spans = timeline(vec![a, b, c]).status_spans(at(9));
        let got: Vec<(Timestamp, Timestamp, &str)> = spans.iter().map(|s| (s.from, s.to, s.value.as_str())).collect();
        assert_eq!(got, [(at(0), at(2), "ContainerCreating"), (at(2), at(9), "Running")]);
        assert!(timeline(vec![]).status_spans(at(9)).is_empty());
    }

    #[test]
    fn ready_spans_are_per_instance() {
        let tl = timeline(vec![
            snap(0, None, running(), Some(0), false),
            snap(1, None, running(), Some(0), true),
            snap(3, None, waiting(Some("CrashLoopBackOff")), Some(0), false),
            // Instance 1 ready: not instance 0's.
            snap(5, None, running(), Some(1), true),
        ]);
        let zero: Vec<(Timestamp, Timestamp)> = tl
            .ready_spans("main", 0, at(8))
            .iter()
            .map(|s| (s.from, s.to))
            .collect();
        assert_eq!(zero, [(at(1), at(3))]);
        let one: Vec<(Timestamp, Timestamp)> = tl
            .ready_spans("main", 1, at(8))
            .iter()
            .map(|s| (s.from, s.to))
            .collect();
        assert_eq!(one, [(at(5), at(8))], "still ready at the end");
        assert!(tl.ready_spans("other", 0, at(8)).is_empty());
    }

    #[test]
    fn waiting_reasons_of_an_instance_lie_between_its_predecessor_and_itself() {
        let tl = timeline(vec![
            snap(0, None, waiting(Some("ContainerCreating")), None, false),
            snap(1, None, waiting(None), None, false),
            snap(2, None, running(), Some(0), false),
            snap(4, None, waiting(Some("CrashLoopBackOff")), Some(0), false),
            snap(5, None, waiting(Some("CrashLoopBackOff")), Some(0), false),
            snap(6, None, running(), Some(1), false),
            snap(7, None, waiting(Some("Late")), Some(1), false),
        ]);
        let (i0, i1) = (instance(0, 2), instance(1, 6));
        assert_eq!(tl.instance_waiting_reasons(&i0, None), ["ContainerCreating", "waiting"]);
        assert_eq!(tl.instance_waiting_reasons(&i1, Some(&i0)), ["CrashLoopBackOff"]);
        assert_eq!(tl.last_waiting_before(&i1, Some(&i0)), Some(at(5)));
        assert_eq!(tl.last_waiting_before(&i0, None), Some(at(1)));
        assert_eq!(tl.waiting_reasons("main", Some(at(6)), None), ["Late"]);
    }
}
