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
    // A mark whose instant a gap makes uncertain could be anywhere in the span the gap leaves
    // it: only an order that holds across that whole span is proven.
    let mut notes = vec![];
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
                return undecided(format!(
                    "order: {}; undecided: {l} may lie elsewhere: {}",
                    chain.join(", "),
                    h.uncertain.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    for (k, w) in hits.windows(2).enumerate() {
        if uncertain_pairs.contains(&(k + 1)) {
            continue;
        }
        // Both counts may arrive in one version (the kubelet writes only its latest status,
        // e.g. after an outage): the same instant, yet in order by definition.
        if intrinsic_order(case, &list[k], &list[k + 1]) {
            continue;
        }
        let ((la, a), (lb, b)) = (&w[0], &w[1]);
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
