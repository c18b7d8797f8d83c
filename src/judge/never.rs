//! `never` expectations: no occurrence of a mark (at all, before another, or in a window after one), where
//! an occurrence only a gap or a status time's 1 s precision could place is undecided, not a failure.

use super::*;

pub(super) fn never(case: &Case, n: &NeverExpect, tl: &Timeline) -> J {
    if let Some(after) = &n.after {
        return never_after(case, n, after, tl);
    }
    let m = mark(case, &n.mark, tl);
    match &n.before {
        // An occurrence seen is seen; an absence is only proven where the source was up.
        None => match m {
            Ok(h) => fail(format!("never {}: it occurred ({})", n.mark.label(), h.what)),
            Err(_) if tl.complete && event_reason(case, &n.mark).is_some() => {
                // An event's absence is only as strong as the event stream: the events of its
                // type may have reached the recorder's burst (one bucket per source, pod and
                // type: 39 kubelet events of one pod can fill it, Normal and Warning apart).
                let j = match event_lost(case, &n.mark, tl) {
                    Some(why) => undecided(format!("never {}: not seen; undecided: {why}", n.mark.label())),
                    None => pass(format!(
                        "never {}: did not occur [{EVENTS_NOTE}; none were seen dropped or aggregated]",
                        n.mark.label()
                    )),
                };
                in_gap(j.with(Fact::EventsLossy), hidden_by(case, &n.mark, tl, None))
            }
            Err(_) if tl.complete => in_gap(
                pass(format!("never {}: did not occur", n.mark.label())),
                hidden_by(case, &n.mark, tl, None),
            ),
            Err(_) => undecided(format!("never {}: not so far", n.mark.label())),
        },
        Some(before) => {
            let b = mark(case, before, tl);
            // `m` before `b` is refuted by an earlier `b` hidden in a gap; `m` not before `b` by
            // an `m` hidden before `b`.
            let b_hidden_before = |t: Timestamp| hidden_by(case, before, tl, Some(t));
            let m_hidden_before = |t: Timestamp| hidden_by(case, &n.mark, tl, Some(t));
            let j = match (&m, &b) {
                (Ok(h), Ok(bh)) if h.at < bh.at => Some(b_hidden_before(h.at)),
                (Ok(h), Err(_)) => Some(b_hidden_before(h.at)),
                (_, Ok(bh)) => Some(m_hidden_before(bh.at)),
                // Neither came: `before` may hide in a gap.
                (Err(_), Err(_)) => Some(hidden_by(case, before, tl, None)),
            };
            let verdict = never_before(n, before, m, b, tl);
            match j {
                Some(gap) => in_gap(verdict, gap),
                None => verdict,
            }
        }
    }
}

pub(super) fn never_before(
    n: &NeverExpect,
    before: &MarkRef,
    m: Result<Hit, MarkError>,
    b: Result<Hit, MarkError>,
    tl: &Timeline,
) -> J {
    match (m, b) {
        // Across streams, "first" is only proven beyond both marks' uncertainty.
        (Ok(h), Ok(bh)) if h.at < bh.at && !h.same_stream(&bh) && h.span().1 > bh.span().0 => undecided(format!(
            "never {} before {}: it was seen first ({}; {}); undecided: within their uncertainty: {}",
            n.mark.label(),
            before.label(),
            h.what,
            bh.what,
            stream_causes(&h, &bh)
        ))
        .with(Fact::OrderWithinUncertainty),
        (Ok(h), Ok(bh)) if h.at < bh.at => fail(format!(
            "never {} before {}: it occurred first ({}; {})",
            n.mark.label(),
            before.label(),
            h.what,
            bh.what
        )),
        (Ok(h), Err(_)) => fail(format!(
            "never {} before {}: it occurred ({}) and {} did not",
            n.mark.label(),
            before.label(),
            h.what,
            before.label()
        )),
        (_, Ok(bh)) => pass(format!(
            "never {} before {} ({})",
            n.mark.label(),
            before.label(),
            bh.what
        )),
        (Err(_), Err(why)) => {
            if tl.complete {
                // `before` is part of the experiment: with whole evidence, its absence is
                // the node's (the caller makes it undecided when a gap could hide it).
                fail(format!(
                    "never {} before {}: {} never came ({why}), and the observation is complete",
                    n.mark.label(),
                    before.label(),
                    before.label()
                ))
                .with(Fact::MarkAbsent)
            } else {
                undecided(format!("never {} before {}: waiting", n.mark.label(), before.label()))
            }
        }
    }
}

/// `never: {mark: X, after: A}` (optionally `before: B`): no occurrence of X strictly after A
/// (and strictly before B). Every occurrence of X counts, not only the first. An occurrence
/// that only the 1 s precision of a status time places on either side is undecided, not a
/// failure.
pub(super) fn never_after(case: &Case, n: &NeverExpect, after: &MarkRef, tl: &Timeline) -> J {
    let mut window = format!("never {} after {}", n.mark.label(), after.label());
    if let Some(b) = &n.before {
        window.push_str(&format!(" before {}", b.label()));
    }
    let a = match mark(case, after, tl) {
        Ok(h) => h,
        Err(why) if tl.complete => return absent(case, after, tl, format!("{window}: the window never opened: {why}")),
        Err(why) => return undecided(format!("{window}: waiting: {why}")),
    };
    let b = n.before.as_ref().map(|r| mark(case, r, tl));
    let spec = match lookup(case, &n.mark) {
        Ok(s) => s,
        Err(why) => return undecided(format!("{window}: {why}")),
    };
    let mut maybe = None;
    for h in marks::resolve_all(&spec, tl) {
        // True instants: X in [h.at, h.at + ph), A in [a.at, a.at + pa), B likewise.
        let surely_after = h.at > a.at && h.at >= crate::util::ts_add(a.at, a.precision);
        let maybe_after = crate::util::ts_add(h.at, h.precision) > a.at
            && !(h.at == a.at && h.precision.is_zero() && a.precision.is_zero());
        let (surely_before, maybe_before) = match &b {
            Some(Ok(bh)) => (
                crate::util::ts_add(h.at, h.precision) <= bh.at && h.at < bh.at,
                h.at < crate::util::ts_add(bh.at, bh.precision)
                    && !(h.at == bh.at && h.precision.is_zero() && bh.precision.is_zero()),
            ),
            // No `before`, or it has not happened: the window is still open.
            _ => (true, true),
        };
        // An instant a gap makes uncertain is never proof of being inside.
        if surely_after && surely_before && h.uncertain.is_none() && a.uncertain.is_none() {
            let bound = match &b {
                Some(Ok(bh)) => format!("; {}", bh.what),
                Some(Err(_)) => format!(
                    "; {} not (yet) seen",
                    n.before.as_ref().map(|r| r.label()).unwrap_or_default()
                ),
                None => String::new(),
            };
            let mut j = fail(format!(
                "{window}: it occurred inside the window ({}; after {}{bound})",
                h.what, a.what
            ));
            j.marks = vec![
                MarkAt {
                    label: after.label(),
                    at: a.at,
                },
                MarkAt {
                    label: n.mark.label(),
                    at: h.at,
                },
            ];
            return j;
        }
        if maybe_after && maybe_before && maybe.is_none() {
            maybe = Some(h.what.clone());
        }
    }
    if let Some(what) = maybe {
        return undecided(format!(
            "{window}: an occurrence lies on the window's edge within the 1 s precision of status times ({what}; {})",
            a.what
        ));
    }
    // An absence is only proven where the source was up.
    let hidden = hidden_by(case, &n.mark, tl, None);
    match &b {
        Some(Ok(bh)) => in_gap(
            pass(format!("{window}: not inside ({} .. {})", a.what, bh.what)),
            hidden,
        ),
        Some(Err(why)) if tl.complete => absent(
            case,
            n.before.as_ref().expect("Some(Err) comes from `before`"),
            tl,
            format!("{window}: the window never closed: {why}"),
        ),
        _ if tl.complete => in_gap(pass(format!("{window}: did not occur after {}", a.what)), hidden),
        _ => undecided(format!("{window}: not so far (after {})", a.what)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// Judges the case's first expectation, a `never`.
    fn judged(expect: &str, tl: &Timeline) -> J {
        let c = case(&format!("expect:\n  - never: {expect}\n"));
        let Expectation::Never(n) = &*c.expect[0] else {
            panic!("not a never expectation: {expect}")
        };
        never(&c, n, tl)
    }

    const NEVER_FAILED: &str = "{mark: {phase: Failed}}";

    #[test]
    fn a_mark_seen_fails_and_one_absent_from_whole_evidence_passes() {
        let j = judged(NEVER_FAILED, &timeline(in_phases(&["Pending", "Failed"])));
        assert_judged(&j, Outcome::Fail, "it occurred (phase Failed seen 08:00:01.000)");
        let j = judged(NEVER_FAILED, &timeline(in_phases(&["Pending", "Succeeded"])));
        assert_judged(&j, Outcome::Pass, "did not occur");
    }

    #[test]
    fn an_absence_is_undecided_until_the_end_or_where_the_source_was_down() {
        let mut tl = timeline(in_phases(&["Pending", "Running"]));
        tl.complete = false;
        assert_judged(&judged(NEVER_FAILED, &tl), Outcome::Undecided, "not so far");
        tl.complete = true;
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(1), None));
        assert_judged(
            &judged(NEVER_FAILED, &tl),
            Outcome::Undecided,
            "did not occur; undecided: pod watch down from 08:00:01.000 to the end",
        );
    }

    const FAILED_BEFORE_RUNNING: &str = "{mark: {phase: Failed}, before: {phase: Running}}";

    #[test]
    fn never_before_fails_on_a_mark_first_and_passes_on_the_other_first() {
        let j = judged(
            FAILED_BEFORE_RUNNING,
            &timeline(in_phases(&["Pending", "Running", "Failed"])),
        );
        assert_judged(&j, Outcome::Pass, "(phase Running seen 08:00:01.000)");
        let j = judged(
            FAILED_BEFORE_RUNNING,
            &timeline(in_phases(&["Pending", "Failed", "Running"])),
        );
        assert_judged(&j, Outcome::Fail, "it occurred first");
        // Neither came: the closing mark is part of the experiment, so its absence fails.
        let j = judged(FAILED_BEFORE_RUNNING, &timeline(in_phases(&["Pending"])));
        assert_judged(&j, Outcome::Fail, "never came");
        assert!(j.has(Fact::MarkAbsent));
    }

    /// `main`#1 must not start after our DELETE.
    const NO_START_AFTER_DELETE: &str =
        "{mark: {containerStarted: {container: main, instance: 1}}, after: {action: {action: delete}}}";

    /// Our DELETE sent at `delete_ms`, `main`#1 started at `started` (whole seconds).
    fn deleted(delete_ms: i64, started: i64) -> Timeline {
        let mut tl = timeline(vec![]);
        tl.actions.push(action(ActionKind::Delete, delete_ms));
        tl.instances.push(instance("main", 1, Some(started), None));
        tl
    }

    #[test]
    fn never_after_fails_inside_the_window_and_passes_before_it() {
        let j = judged(NO_START_AFTER_DELETE, &deleted(500, 2));
        assert_judged(&j, Outcome::Fail, "it occurred inside the window");
        assert_eq!(j.marks.len(), 2);
        let j = judged(NO_START_AFTER_DELETE, &deleted(3000, 1));
        assert_judged(&j, Outcome::Pass, "did not occur after our DELETE");
    }

    #[test]
    fn never_after_within_a_status_times_second_of_the_window_is_undecided() {
        // startedAt 0 s stands for [0 s, 1 s): on either side of a DELETE at 500 ms.
        let j = judged(NO_START_AFTER_DELETE, &deleted(500, 0));
        assert_judged(&j, Outcome::Undecided, "on the window's edge");
    }

    #[test]
    fn never_after_a_window_that_never_opened_fails_on_whole_evidence() {
        let mut tl = timeline(vec![]);
        tl.instances.push(instance("main", 1, Some(2), None));
        let j = judged(NO_START_AFTER_DELETE, &tl);
        assert_judged(&j, Outcome::Fail, "the window never opened");
        tl.complete = false;
        assert_judged(&judged(NO_START_AFTER_DELETE, &tl), Outcome::Undecided, "waiting");
    }
}
