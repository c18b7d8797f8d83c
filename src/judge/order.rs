//! `order` expectations: a chain of marks that must occur in order, where marks of different streams
//! closer than their delays allow are undecided, not inverted.

use super::*;

pub(super) fn order(case: &Case, list: &[MarkRef], tl: &Timeline) -> J {
    if tl.pod.bound_at_create && list.iter().any(|r| scheduler_writes(case, r)) {
        return undecided(format!("order: undecided: {BOUND_AT_CREATE}")).with(Fact::BoundWithoutScheduler);
    }
    let mut hits = vec![];
    for r in list {
        match mark(case, r, tl) {
            Ok(h) => hits.push((r.label(), h)),
            Err(why) => {
                return if !tl.complete {
                    undecided(format!("order: waiting: {why}"))
                } else if let Some(gap) = mark_hidden(case, r, tl) {
                    // The mark could have happened while the source was down, or the
                    // kubelet's recorder dropped it.
                    undecided(format!("order: {why}; undecided: {gap}"))
                } else {
                    // Nothing more will be observed and nothing was lost: the mark never happened.
                    fail(format!("order: {why}, and the observation is complete"))
                };
            }
        }
    }
    // A mark whose instant a gap makes uncertain could be anywhere in that gap.
    if let Some((l, h)) = hits.iter().find(|(_, h)| h.uncertain.is_some()) {
        let chain: Vec<String> = hits.iter().map(|(l, h)| format!("{l} ({})", h.what)).collect();
        return undecided(format!(
            "order: {}; undecided: {l} may lie elsewhere: {}",
            chain.join(", "),
            h.uncertain.as_deref().unwrap_or_default()
        ));
    }
    let mut notes = vec![];
    for w in hits.windows(2) {
        let ((la, a), (lb, b)) = (&w[0], &w[1]);
        // Two streams (or two clocks): only what their uncertainty intervals separate is an
        // order; a measured inversion inside the overlap is two writers racing, or two
        // deliveries, never proof against the node.
        if !a.same_stream(b) {
            let ((a_lo, _), (_, b_hi)) = (a.span(), b.span());
            let inverted = a.at > b.at || (a.at == b.at && a.precision.is_zero() && b.precision.is_zero());
            if inverted && b_hi <= a_lo {
                return fail(format!(
                    "order: expected {la} before {lb}, but {la} came {} later, beyond both marks' uncertainty ({}; {})",
                    fmt_secs(secs(a.at.duration_since(b.at))),
                    a.what,
                    b.what
                ));
            }
            if inverted {
                return undecided(format!(
                    "order: {la} ({}) seen {} after {lb} ({}); undecided: within their uncertainty: {}",
                    a.what,
                    fmt_secs(secs(a.at.duration_since(b.at))),
                    b.what,
                    stream_causes(a, b)
                ))
                .with(Fact::OrderWithinUncertainty);
            }
            if b.span().0 < a.span().1 {
                notes.push(format!(
                    "{la} and {lb} within their uncertainty ({}): consistent with the order",
                    stream_causes(a, b)
                ));
            }
            continue;
        }
        if a.at > b.at {
            return fail(format!(
                "order: expected {la} before {lb}, but {la} came {} later ({}; {})",
                fmt_secs(secs(a.at.duration_since(b.at))),
                a.what,
                b.what
            ));
        }
        let exact = a.precision == SignedDuration::ZERO && b.precision == SignedDuration::ZERO;
        if a.at == b.at && exact {
            return fail(format!(
                "order: expected {la} strictly before {lb}, but both are at the same instant ({}; {})",
                a.what, b.what
            ));
        }
        if a.at == b.at && (a.precision > SignedDuration::ZERO || b.precision > SignedDuration::ZERO) {
            notes.push(format!("{la} and {lb} in the same second (1 s status precision)"));
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
