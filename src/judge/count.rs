//! Deciding a count (`count: {min, max, exactly}`) of occurrences: pass or fail only once more data, or
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
