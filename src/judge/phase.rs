//! `phase` and `phases` expectations: the pod phase at the end, and the sequence of phases seen, which only
//! moves forward, so a pod-watch gap can hide a phase only where the sequence skips one (or after the last).

use super::*;

pub(super) fn phase(p: PodPhase, tl: &Timeline) -> J {
    let seen = tl.final_phase();
    let label = seen.unwrap_or("none");
    if !tl.settled() {
        if seen == Some(p.as_str()) {
            return undecided(format!(
                "final phase: expected {p}, currently {label} (pod not settled yet)"
            ));
        }
        return undecided(format!("final phase: expected {p}, currently {label}"));
    }
    if seen == Some(p.as_str()) {
        pass(format!("final phase {p}"))
    } else {
        fail(format!("final phase: expected {p}, observed {label}"))
    }
}

/// Distinct consecutive phases observed.
pub fn phase_sequence(tl: &Timeline) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in &tl.snapshots {
        if let Some(p) = &s.phase
            && out.last() != Some(p)
        {
            out.push(p.clone());
        }
    }
    out
}

pub(super) fn phases(seq: &[PodPhase], tl: &Timeline) -> J {
    let seen = phase_sequence(tl);
    let want: Vec<String> = seq.iter().map(|p| p.as_str().to_string()).collect();
    let shown = format!("expected [{}], observed [{}]", want.join(" → "), seen.join(" → "));
    match match_sequence(Subject::Phase, &want, &seen, tl, tl.settled()) {
        SeqMatch::Exact if tl.settled() => pass(format!("phases {}", want.join(" → "))),
        SeqMatch::Skipped(skips) if tl.settled() => pass(format!(
            "phases {} ({}; {})",
            seen.join(" → "),
            shown,
            skipped_note(&skips)
        )),
        SeqMatch::Exact | SeqMatch::Skipped(_) | SeqMatch::Prefix => undecided(format!("phases: {shown} so far")),
        SeqMatch::Unproven(u) if !tl.complete => undecided(format!(
            "phases: {shown}; waiting for proof that {} happened (a container's log or start)",
            u.join(", ")
        )),
        SeqMatch::Unproven(u) => fail(format!(
            "phases: {shown}; {} not observed and nothing proves it happened (no regular container logged or has a real startedAt)",
            u.join(", ")
        )),
        SeqMatch::Mismatch => fail(format!("phases: {shown}")),
    }
}

/// True when `seen` appears in `want` in order (what hidden items could complete).
pub(super) fn is_subsequence(seen: &[String], want: &[&str]) -> bool {
    let mut it = want.iter();
    seen.iter().all(|s| it.any(|w| *w == s))
}

/// Phases only move forward (Pending → Running → Succeeded/Failed), so a pod-watch gap can hide
/// a phase only between two observed phases more than one step apart, or after the last
/// observed one when the gap is still open at the end. Returns the gap and the phases it could
/// hide.
pub(super) fn hidden_phases(tl: &Timeline) -> Option<(String, Vec<&'static str>)> {
    const ALL: [&str; 4] = ["Pending", "Running", "Succeeded", "Failed"];
    let rank = |p: &str| match p {
        "Pending" => 0,
        "Running" => 1,
        "Succeeded" | "Failed" => 2,
        _ => 3,
    };
    let phased: Vec<_> = tl
        .snapshots
        .iter()
        .filter_map(|s| Some((s.received, s.phase.as_deref()?)))
        .collect();
    for g in tl.pod_gaps() {
        let before = phased.iter().rev().find(|(r, _)| g.from.is_some_and(|f| *r <= f));
        let after = phased.iter().find(|(r, _)| g.to.is_some_and(|t| *r >= t));
        let (lo, hi) = match (before, after) {
            (Some((_, a)), Some((_, b))) if rank(a) < 3 && rank(b) < 3 => (rank(a) + 1, rank(b)),
            (None, Some((_, b))) if rank(b) < 3 => (0, rank(b)),
            (Some((_, a)), None) if rank(a) < 3 => (rank(a) + 1, 3),
            _ => (0, 3),
        };
        let hidden: Vec<&str> = ALL.iter().copied().filter(|p| rank(p) >= lo && rank(p) < hi).collect();
        if !hidden.is_empty() {
            return Some((g.describe(), hidden));
        }
    }
    None
}

/// `phases` with gaps: observed phases are real. A pass stands when every phase a gap could
/// hide is expected anyway (shown or skipped, the sequence still matches); a failure stands
/// when what was seen is not a part of the expected sequence, which no hidden phase can mend.
pub(super) fn phases_gaps(seq: &[PodPhase], j: J, tl: &Timeline) -> J {
    let Some((gap, hidden)) = hidden_phases(tl) else {
        return j;
    };
    let want: Vec<&str> = seq.iter().map(|p| p.as_str()).collect();
    let doubt = match j.outcome {
        Outcome::Pass => hidden.iter().any(|h| !want.contains(h)),
        Outcome::Fail => is_subsequence(&phase_sequence(tl), &want),
        Outcome::Undecided => false,
    };
    in_gap(j, doubt.then_some(gap))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn seen_phases_are_a_subsequence_of_the_expected_in_order() {
        let want = ["Pending", "Running", "Succeeded"];
        assert!(is_subsequence(&seen(&["Pending", "Succeeded"]), &want));
        assert!(is_subsequence(&seen(&["Running"]), &want));
        assert!(is_subsequence(&seen(&[]), &want));
        assert!(!is_subsequence(&seen(&["Succeeded", "Running"]), &want));
        assert!(!is_subsequence(&seen(&["Pending", "Failed"]), &want));
        // Each expected phase stands for one seen phase only.
        assert!(!is_subsequence(&seen(&["Running", "Running"]), &want));
    }
}
