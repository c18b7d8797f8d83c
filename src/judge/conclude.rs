//! The conclusion of an attempt from its timeline and how its steps went: one policy for live
//! runs, replays and re-judging, so a recording is concluded exactly as the run that made it.

use super::*;

/// What an attempt's evidence says about the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conclusion {
    /// Every expectation held.
    Passed,
    /// An expectation was contradicted by whole evidence.
    Failed,
    /// Nothing failed, but evidence lost in a gap left something undecided.
    Undecided,
    /// The recording was made for another version of the case (`Fact::CaseChanged`).
    NotComparable,
}

/// Judges `case` on `tl`, given the verdict of a step that could not complete (`step`, first
/// in the list when given), and concludes.
pub fn conclude(case: &Case, tl: &Timeline, step: Option<Verdict>) -> (Conclusion, Vec<Verdict>) {
    if let Some(v) = step.as_ref().filter(|v| v.facts.contains(&Fact::CaseChanged)) {
        // What the recording shows answers another experiment: no verdict of today's case.
        return (Conclusion::NotComparable, vec![v.clone()]);
    }
    let mut verdicts = judge_case(case, tl);
    if let Some(v) = step {
        // A step that could not complete for a reason that is not the node's (undecided: a gap
        // could hide its mark, a wait an outage cut short) ended the observation early: what the
        // other expectations found missing may have come later. They are undecided, not failed.
        if v.outcome == Outcome::Undecided {
            // What was seen to contradict the case (a `never` that occurred, a forbidden
            // transition, a container that started against its expectation) stays failed.
            let seen = |x: &Verdict| {
                (x.kind == VerdictKind::Never && !x.facts.contains(&Fact::MarkAbsent))
                    || x.facts
                        .iter()
                        .any(|f| matches!(f, Fact::ForbiddenTransitionSeen | Fact::StartedAgainstExpectation))
            };
            for x in verdicts.iter_mut().filter(|x| x.outcome == Outcome::Fail && !seen(x)) {
                x.outcome = Outcome::Undecided;
                x.evidence = format!(
                    "{}; undecided: the observation ended early, the steps could not complete ({})",
                    x.evidence, v.evidence
                );
            }
        }
        verdicts.insert(0, v);
    }
    let conclusion = if all_pass(&verdicts) {
        Conclusion::Passed
    } else if verdicts.iter().any(|v| v.outcome == Outcome::Fail) {
        Conclusion::Failed
    } else {
        // Pass and undecided only: the evidence could not decide, the node did not fail.
        Conclusion::Undecided
    };
    (conclusion, verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Snapshot;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    /// Pod versions received at 0 s, 1 s, ... in these phases; a complete observation.
    fn timeline(phases: &[&str]) -> Timeline {
        let snapshots = phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                serde_json::from_value::<Snapshot>(serde_json::json!({
                    "received": at(i as i64), "watch": "MODIFIED", "phase": p,
                }))
                .unwrap()
            })
            .collect();
        Timeline {
            snapshots,
            complete: true,
            ..Timeline::default()
        }
    }

    fn case(expect: &str) -> Case {
        serde_saphyr::from_str(&format!(
            "name: c\ndescription: d\nreference: r\nmanifest: m.yaml\nexpect:\n{expect}"
        ))
        .unwrap()
    }

    fn step(outcome: Outcome, facts: Vec<Fact>) -> Verdict {
        super::super::steps::step_verdict(outcome, "steps[0] waitFor: timed out".into(), facts)
    }

    #[test]
    fn whole_evidence_passes_or_fails() {
        let c = case("  - phase: Succeeded\n");
        let (k, v) = conclude(&c, &timeline(&["Pending", "Running", "Succeeded"]), None);
        assert_eq!((k, v.len()), (Conclusion::Passed, 1));
        let (k, _) = conclude(&c, &timeline(&["Pending", "Running", "Failed"]), None);
        assert_eq!(k, Conclusion::Failed);
    }

    #[test]
    fn a_step_cut_short_leaves_what_was_missing_undecided_but_not_what_was_seen() {
        let cut = || Some(step(Outcome::Undecided, vec![]));
        // The Succeeded phase may have come after the observation ended: undecided.
        let c = case("  - phase: Succeeded\n");
        let (k, v) = conclude(&c, &timeline(&["Pending", "Running"]), cut());
        assert_eq!(k, Conclusion::Undecided, "{v:#?}");
        assert_eq!(v[0].kind, "step");
        assert!(
            v[1].evidence.contains("the observation ended early"),
            "{}",
            v[1].evidence
        );
        // A phase that was seen and must never be: failed, whatever came later.
        let c = case("  - never: {mark: {phase: Failed}}\n");
        let (k, _) = conclude(&c, &timeline(&["Pending", "Failed"]), cut());
        assert_eq!(k, Conclusion::Failed);
        // A step that failed on whole evidence fails the attempt.
        let (k, _) = conclude(&c, &timeline(&["Pending"]), Some(step(Outcome::Fail, vec![])));
        assert_eq!(k, Conclusion::Failed);
    }

    #[test]
    fn a_recording_of_another_version_of_the_case_answers_nothing() {
        let c = case("  - phase: Succeeded\n");
        let (k, v) = conclude(
            &c,
            &timeline(&["Pending", "Failed"]),
            Some(step(Outcome::Undecided, vec![Fact::CaseChanged])),
        );
        assert_eq!((k, v.len()), (Conclusion::NotComparable, 1));
    }
}
