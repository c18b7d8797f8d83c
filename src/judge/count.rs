//! Deciding a count of occurrences (`3`, or `{atLeast, atMost}`): pass or fail only once more data, or
//! what a gap hid, can no longer change the answer.

use super::*;

/// Decides a count seen through a source with gaps (`gap`: the first, described): occurrences
/// seen are real, so a count already over its bound fails and one meeting a lower-only bound
/// passes; anything else may change with what the gap hid, so it is undecided.
pub(super) fn decide_count_in_gap(count: &Count, n: u64, complete: bool, what: String, gap: Option<String>) -> J {
    let j = decide_count(count, n, complete, what);
    let exceeded = count.exactly.is_some_and(|e| n > e) || count.at_most.is_some_and(|m| n > m);
    let only_lower = count.exactly.is_none() && count.at_most.is_none();
    if exceeded || (j.outcome == Outcome::Pass && only_lower) {
        return j;
    }
    in_gap(j, gap)
}

/// Decides a count: pass/fail once it can no longer change the answer.
pub(super) fn decide_count(count: &Count, n: u64, complete: bool, what: String) -> J {
    let exceeded = count.exactly.is_some_and(|e| n > e) || count.at_most.is_some_and(|m| n > m);
    let only_lower = count.exactly.is_none() && count.at_most.is_none();
    if exceeded {
        fail(format!("{what}: expected {count}, observed {n}"))
    } else if count.matches(n) && (complete || only_lower) {
        pass(format!("{what}: {n} observed ({count})"))
    } else if !complete {
        undecided(format!("{what}: expected {count}, {n} so far"))
    } else {
        fail(format!("{what}: expected {count}, observed {n}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exactly(n: u64) -> Count {
        Count {
            exactly: Some(n),
            ..Count::default()
        }
    }

    fn at_most(n: u64) -> Count {
        Count {
            at_most: Some(n),
            ..Count::default()
        }
    }

    #[test]
    fn over_the_upper_bound_fails_before_the_end() {
        assert_eq!(decide_count(&at_most(1), 2, false, "x".into()).outcome, Outcome::Fail);
        assert_eq!(decide_count(&exactly(1), 2, false, "x".into()).outcome, Outcome::Fail);
    }

    #[test]
    fn a_lower_bound_met_passes_before_the_end() {
        assert_eq!(
            decide_count(&Count::at_least(2), 2, false, "x".into()).outcome,
            Outcome::Pass
        );
        assert_eq!(
            decide_count(&Count::at_least(2), 1, false, "x".into()).outcome,
            Outcome::Undecided
        );
    }

    #[test]
    fn an_exact_count_waits_for_the_end() {
        assert_eq!(
            decide_count(&exactly(2), 2, false, "x".into()).outcome,
            Outcome::Undecided
        );
        assert_eq!(decide_count(&exactly(2), 2, true, "x".into()).outcome, Outcome::Pass);
        assert_eq!(decide_count(&exactly(2), 1, true, "x".into()).outcome, Outcome::Fail);
    }

    #[test]
    fn a_gap_leaves_only_what_it_cannot_change_decided() {
        let gap = || Some("pod watch down 10:00:00–10:00:05".to_string());
        // What the gap hid could be the missing or an extra occurrence.
        let j = decide_count_in_gap(&exactly(2), 2, true, "x".into(), gap());
        assert_eq!(j.outcome, Outcome::Undecided);
        assert!(j.evidence.contains("pod watch down"), "{}", j.evidence);
        assert_eq!(
            decide_count_in_gap(&exactly(2), 1, true, "x".into(), gap()).outcome,
            Outcome::Undecided
        );
        // Seen occurrences are real: over the bound stays failed, a lower bound met stays passed.
        assert_eq!(
            decide_count_in_gap(&at_most(1), 3, true, "x".into(), gap()).outcome,
            Outcome::Fail
        );
        assert_eq!(
            decide_count_in_gap(&Count::at_least(1), 1, true, "x".into(), gap()).outcome,
            Outcome::Pass
        );
        // Without a gap nothing changes.
        assert_eq!(
            decide_count_in_gap(&exactly(2), 2, true, "x".into(), None).outcome,
            Outcome::Pass
        );
    }
}
