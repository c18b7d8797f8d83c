//! `order` expectations: a chain of marks that must occur in order, where marks of different streams
//! closer than their delays allow are undecided, not inverted.

use std::ops::ControlFlow;

use super::*;

pub(super) fn order(case: &Case, list: &[MarkRef], tl: &Timeline) -> J {
    if tl.pod.bound_at_create && list.iter().any(|r| scheduler_writes(case, r)) {
        return undecided(format!("order: undecided: {BOUND_AT_CREATE}")).with(Fact::BoundWithoutScheduler);
    }
    let hits = match order_hits(case, list, tl) {
        ControlFlow::Continue(h) => h,
        ControlFlow::Break(j) => return j,
    };
    let mut notes = vec![];
    let uncertain_pairs = match uncertain_pairs(case, list, &hits, &mut notes) {
        ControlFlow::Continue(k) => k,
        ControlFlow::Break(j) => return j,
    };
    for (k, w) in hits.windows(2).enumerate() {
        if uncertain_pairs.contains(&(k + 1)) {
            continue;
        }
        // Both counts may arrive in one version (the kubelet writes only its latest status,
        // e.g. after an outage): the same instant, yet in order by definition.
        if intrinsic_order(case, &list[k], &list[k + 1]) {
            continue;
        }
        if let Some(j) = pair_order(tl, (&w[0], &w[1]), &mut notes) {
            return j;
        }
    }
    let chain: Vec<String> = hits.iter().map(|(l, h)| format!("{l} ({})", h.what)).collect();
    let mut ev = format!("order: {}", chain.join(" < "));
    if !notes.is_empty() {
        ev.push_str(&format!(" [{}]", notes.join("; ")));
    }
    let mut j = pass(ev);
    j.marks = hits
        .iter()
        .map(|(l, h)| MarkAt {
            label: l.clone(),
            at: h.at,
        })
        .collect();
    j
}

/// Each mark of the chain with its label, or (`Break`) the verdict on the first that has not
/// occurred.
fn order_hits(case: &Case, list: &[MarkRef], tl: &Timeline) -> ControlFlow<J, Vec<(String, Hit)>> {
    let mut hits = vec![];
    for r in list {
        match mark(case, r, tl) {
            Ok(h) => hits.push((r.label(), h)),
            Err(why) => {
                return ControlFlow::Break(if !tl.complete {
                    undecided(format!("order: waiting: {why}"))
                } else if let Some(gap) = mark_hidden(case, r, tl) {
                    // The mark could have happened while the source was down, or the
                    // kubelet's recorder dropped it.
                    undecided(format!("order: {why}; undecided: {gap}"))
                } else {
                    // Nothing more will be observed and nothing was lost: the mark never happened.
                    fail(format!("order: {why}, and the observation is complete"))
                });
            }
        }
    }
    ControlFlow::Continue(hits)
}

/// The pairs (by the later one's index) with a mark whose instant a gap makes uncertain: it
/// could be anywhere in the span the gap leaves it, so only an order that holds across that
/// whole span is proven (noted); otherwise (`Break`) the verdict is undecided.
fn uncertain_pairs(
    case: &Case,
    list: &[MarkRef],
    hits: &[(String, Hit)],
    notes: &mut Vec<String>,
) -> ControlFlow<J, Vec<usize>> {
    let uncertain_pairs: Vec<usize> = (1..hits.len())
        .filter(|&k| hits[k - 1].1.uncertain.is_some() || hits[k].1.uncertain.is_some())
        .collect();
    for k in &uncertain_pairs {
        let (la, a) = &hits[k - 1];
        let (lb, b) = &hits[*k];
        if intrinsic_order(case, &list[k - 1], &list[*k]) {
            notes.push(format!("{la} before {lb} by definition (restartCount only grows)"));
            continue;
        }
        let (_, a_hi) = possible(a);
        let (b_lo, _) = possible(b);
        match (a_hi, b_lo) {
            (Some(a_hi), Some(b_lo)) if a_hi <= b_lo => {
                let gap = a.uncertain.as_deref().or(b.uncertain.as_deref()).unwrap_or_default();
                notes.push(format!("{la} before {lb} wherever the gap puts them ({gap})"));
            }
            _ => {
                let chain: Vec<String> = hits.iter().map(|(l, h)| format!("{l} ({})", h.what)).collect();
                let (l, h) = if a.uncertain.is_some() { (la, a) } else { (lb, b) };
                return ControlFlow::Break(undecided(format!(
                    "order: {}; undecided: {l} may lie elsewhere: {}",
                    chain.join(", "),
                    h.uncertain.as_deref().unwrap_or_default()
                )));
            }
        }
    }
    ControlFlow::Continue(uncertain_pairs)
}

/// Whether mark `a` came before mark `b`: `Some` is the verdict when it did not (or may not
/// have); what only looks close is noted.
fn pair_order(
    tl: &Timeline,
    ((la, a), (lb, b)): (&(String, Hit), &(String, Hit)),
    notes: &mut Vec<String>,
) -> Option<J> {
    let fail = |why: String| match restarted_before(tl, a, b) {
        Some(g) => reset(&why, g),
        None => fail(why),
    };
    // Two streams (or two clocks): only what their uncertainty intervals separate is an
    // order; a measured inversion inside the overlap is two writers racing, or two
    // deliveries, never proof against the node.
    if !a.same_stream(b) {
        let ((a_lo, _), (_, b_hi)) = (a.span(), b.span());
        let inverted = a.at > b.at || (a.at == b.at && a.precision.is_zero() && b.precision.is_zero());
        if inverted && b_hi <= a_lo {
            return Some(fail(format!(
                "order: expected {la} before {lb}, but {la} came {} later, beyond both marks' uncertainty ({}; {})",
                fmt_secs(secs(a.at.duration_since(b.at))),
                a.what,
                b.what
            )));
        }
        if inverted {
            return Some(
                undecided(format!(
                    "order: {la} ({}) seen {} after {lb} ({}); undecided: within their uncertainty: {}",
                    a.what,
                    fmt_secs(secs(a.at.duration_since(b.at))),
                    b.what,
                    stream_causes(a, b)
                ))
                .with(Fact::OrderWithinUncertainty),
            );
        }
        if b.span().0 < a.span().1 {
            notes.push(format!(
                "{la} and {lb} within their uncertainty ({}): consistent with the order",
                stream_causes(a, b)
            ));
        }
        return None;
    }
    if a.at > b.at {
        return Some(fail(format!(
            "order: expected {la} before {lb}, but {la} came {} later ({}; {})",
            fmt_secs(secs(a.at.duration_since(b.at))),
            a.what,
            b.what
        )));
    }
    let exact = a.precision == SignedDuration::ZERO && b.precision == SignedDuration::ZERO;
    if a.at == b.at && exact {
        return Some(fail(format!(
            "order: expected {la} strictly before {lb}, but both are at the same instant ({}; {})",
            a.what, b.what
        )));
    }
    if a.at == b.at && (a.precision > SignedDuration::ZERO || b.precision > SignedDuration::ZERO) {
        notes.push(format!("{la} and {lb} in the same second (1 s status precision)"));
    }
    None
}

/// A kubelet restart before the later of two marks the kubelet wrote: what it held in memory
/// (image pull and crash-loop back-off, probe results) started over there, so the order of
/// the statuses and events that follow is not the one a running kubelet keeps.
fn restarted_before<'a>(tl: &'a Timeline, a: &Hit, b: &Hit) -> Option<&'a crate::observe::Gap> {
    let kubelets = |h: &Hit| matches!(h.stream, Stream::PodWatch | Stream::Events | Stream::Status);
    if !(kubelets(a) && kubelets(b)) {
        return None;
    }
    let later = a.at.max(b.at);
    tl.gaps
        .iter()
        .find(|g| g.source == EvidenceSource::Kubelet && g.from.is_some_and(|f| f < later))
}

/// An order that failed across a kubelet restart: undecided, naming the restart.
fn reset(why: &str, g: &crate::observe::Gap) -> J {
    undecided(format!("{why}; undecided: {}", g.describe())).with(Fact::KubeletRestarted)
}

/// Where a hit's true instant may lie: its own span, widened by the span a gap leaves it
/// (`None`: unbounded on that side).
fn possible(h: &Hit) -> (Option<Timestamp>, Option<Timestamp>) {
    let (lo, hi) = h.span();
    match h.uncertain_span {
        Some((ulo, uhi)) => (ulo.map(|u| u.min(lo)), uhi.map(|u| u.max(hi))),
        None => (Some(lo), Some(hi)),
    }
}

/// Two marks whose order is part of their meaning: a container's restartCount reaching N
/// before it reaches a higher M (the count only grows, one restart at a time).
fn intrinsic_order(case: &Case, a: &MarkRef, b: &MarkRef) -> bool {
    match (lookup(case, a), lookup(case, b)) {
        (Ok(MarkSpec::Restarts(x)), Ok(MarkSpec::Restarts(y))) => {
            x.container.as_str() == y.container.as_str() && x.count < y.count
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// Judges the case's first expectation, an `order`.
    fn judged(expect: &str, tl: &Timeline) -> J {
        let c = case(&format!("expect:\n  - order: {expect}\n"));
        let Expectation::Order(list) = &*c.expect[0] else {
            panic!("not an order expectation: {expect}")
        };
        order(&c, list, tl)
    }

    const PENDING_RUNNING: &str = "[{phase: Pending}, {phase: Running}]";

    #[test]
    fn marks_of_one_stream_in_order_pass_and_inverted_fail() {
        let j = judged(PENDING_RUNNING, &timeline(in_phases(&["Pending", "Running"])));
        assert_judged(&j, Outcome::Pass, "08:00:00.000) < ");
        assert_eq!(j.marks.len(), 2);
        let j = judged(PENDING_RUNNING, &timeline(in_phases(&["Running", "Pending"])));
        assert_judged(&j, Outcome::Fail, "came 1s later");
    }

    #[test]
    fn a_missing_mark_waits_then_fails_on_whole_evidence() {
        let mut tl = timeline(in_phases(&["Pending"]));
        tl.complete = false;
        assert_judged(&judged(PENDING_RUNNING, &tl), Outcome::Undecided, "order: waiting");
        tl.complete = true;
        assert_judged(
            &judged(PENDING_RUNNING, &tl),
            Outcome::Fail,
            "phase Running never observed, and the observation is complete",
        );
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(0), None));
        assert_judged(
            &judged(PENDING_RUNNING, &tl),
            Outcome::Undecided,
            "undecided: pod watch down",
        );
    }

    /// The pod seen Failed (a pod watch receive time, up to 1 s late) before our DELETE.
    const FAILED_THEN_DELETE: &str = "[{phase: Failed}, {action: {action: delete}}]";

    fn failed_and_deleted(failed_s: i64, delete_ms: i64) -> Timeline {
        let mut tl = timeline(vec![snap(failed_s, serde_json::json!({"phase": "Failed"}))]);
        tl.actions.push(action(ActionKind::Delete, delete_ms));
        tl
    }

    #[test]
    fn across_streams_an_inversion_within_the_delivery_delay_is_undecided() {
        assert_judged(
            &judged(FAILED_THEN_DELETE, &failed_and_deleted(1, 2000)),
            Outcome::Pass,
            "order: ",
        );
        let j = judged(FAILED_THEN_DELETE, &failed_and_deleted(2, 1500));
        assert_judged(&j, Outcome::Undecided, "within their uncertainty");
        assert!(j.has(Fact::OrderWithinUncertainty));
        assert_judged(
            &judged(FAILED_THEN_DELETE, &failed_and_deleted(3, 0)),
            Outcome::Fail,
            "beyond both marks' uncertainty",
        );
    }

    #[test]
    fn an_inversion_across_a_kubelet_restart_is_undecided() {
        let mut tl = timeline(in_phases(&["Running", "Pending"]));
        tl.gaps.push(source_gap(EvidenceSource::Kubelet, Some(0), Some(1)));
        let j = judged(PENDING_RUNNING, &tl);
        assert_judged(&j, Outcome::Undecided, "undecided: test outage between");
        assert!(j.has(Fact::KubeletRestarted));
    }

    #[test]
    fn restart_counts_are_in_order_by_definition() {
        // Both counts in one pod version: the same instant, in order because the count only grows.
        let counted = |n: u32| container_status("main", serde_json::json!({"state": "running"}), n, true);
        let tl = timeline(vec![snap(0, serde_json::json!({"containers": [counted(2)]}))]);
        let j = judged(
            "[{restarts: {container: main, count: 1}}, {restarts: {container: main, count: 2}}]",
            &tl,
        );
        assert_eq!(j.outcome, Outcome::Pass, "{}", j.evidence);
        let j = judged(
            "[{phase: Running}, {phase: Running}]",
            &timeline(in_phases(&["Running"])),
        );
        assert_judged(&j, Outcome::Fail, "both are at the same instant");
    }
}
