//! `condition` expectations: the statuses a pod condition (Ready, ContainersReady, ...) shows, in order, and
//! the transitions it must never make; flips a pod-watch gap could hide are undecided.

use super::*;

/// `condition` with gaps: a pod-watch gap between the first and last status seen can hide
/// flips (a condition can go back and forth), so sequences and `last` are undecided; a
/// forbidden transition that was seen stays failed.
pub(super) fn condition_gaps(c: &ConditionExpect, j: J, tl: &Timeline) -> J {
    if j.outcome == Outcome::Undecided || tl.gaps.is_empty() {
        return j;
    }
    if j.outcome == Outcome::Fail && j.has(Fact::ForbiddenTransitionSeen) {
        return j;
    }
    let seen: Vec<_> = tl
        .snapshots
        .iter()
        .filter(|s| s.condition(&c.r#type).is_some())
        .map(|s| s.received)
        .collect();
    let first = seen.first().copied();
    let gap = tl
        .pod_gaps()
        .find(|g| g.to.is_none() || first.is_none() || g.overlaps(first, seen.last().copied()))
        .map(|g| g.describe());
    in_gap(j, gap)
}

/// Distinct consecutive statuses of a condition.
pub fn condition_sequence(tl: &Timeline, ty: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in &tl.snapshots {
        if let Some(c) = s.condition(ty)
            && out.last() != Some(&c.status)
        {
            out.push(c.status.clone());
        }
    }
    out
}

pub(super) fn condition(c: &ConditionExpect, tl: &Timeline) -> J {
    let seq = condition_sequence(tl, &c.r#type);
    let seen = format!("[{}]", seq.join(" → "));
    let ty = &c.r#type;
    let mut problems = vec![];
    let mut early_fail = false;
    let mut forbidden_seen = false;
    let mut notes = String::new();
    if let Some(want) = &c.sequence {
        let want: Vec<String> = want.iter().map(|s| format!("{s:?}")).collect();
        let expected = format!("expected sequence [{}]", want.join(" → "));
        match match_sequence(Subject::Condition(ty), &want, &seq, tl, tl.complete) {
            SeqMatch::Exact => {}
            SeqMatch::Skipped(skips) => notes = format!(" ({expected}; {})", skipped_note(&skips)),
            SeqMatch::Prefix => problems.push(expected),
            SeqMatch::Unproven(u) => problems.push(format!(
                "{expected}; {} not observed and nothing proves it happened",
                u.join(", ")
            )),
            SeqMatch::Mismatch => {
                problems.push(expected);
                early_fail = true;
            }
        }
    }
    if let Some(last) = &c.last {
        let want = format!("{last:?}");
        if seq.last() != Some(&want) {
            problems.push(format!("expected last status {want}"));
        }
    }
    if let Some([a, b]) = &c.never {
        let (a, b) = (format!("{a:?}"), format!("{b:?}"));
        if seq.windows(2).any(|w| w[0] == a && w[1] == b) {
            problems.push(format!("transition {a} → {b} must never happen"));
            early_fail = true;
            forbidden_seen = true;
        }
    }
    // Reason and message of the condition as last observed.
    let final_cond = tl.snapshots.iter().rev().find_map(|s| s.condition(ty));
    let mut seen = seen;
    if c.reason.is_some() || c.message.is_some() {
        let reason = final_cond.and_then(|x| x.reason.as_deref()).unwrap_or("none");
        let message = final_cond.and_then(|x| x.message.as_deref()).unwrap_or("");
        seen.push_str(&format!(", last reason {reason}"));
        if c.message.is_some() {
            seen.push_str(&format!(" message {message:?}"));
        }
        if let Some(r) = &c.reason
            && reason != r
        {
            problems.push(format!("expected last reason {r}"));
        }
        if let Some(m) = &c.message {
            match compile(m, tl) {
                Ok(re) if re.is_match(message) => {}
                Ok(_) => problems.push(format!("expected last message {m}")),
                Err(why) => problems.push(format!("message: {why}")),
            }
        }
    }
    let j = if problems.is_empty() {
        if tl.complete {
            pass(format!("condition {ty}: observed {seen}{notes}"))
        } else {
            undecided(format!("condition {ty}: observed {seen} so far"))
        }
    } else if tl.complete || early_fail {
        fail(format!("condition {ty}: {}; observed {seen}", problems.join("; ")))
    } else {
        undecided(format!(
            "condition {ty}: {}; observed {seen} so far",
            problems.join("; ")
        ))
    };
    if forbidden_seen {
        j.with(Fact::ForbiddenTransitionSeen)
    } else {
        j
    }
}
