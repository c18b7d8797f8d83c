//! `gap` expectations: the time between two marks (once, or per container instance) against its bounds,
//! widened by each mark's precision and stream delay, each widening named.

use super::*;

pub(super) fn gap(case: &Case, g: &GapExpect, tl: &Timeline) -> J {
    if let Some(c) = &g.for_each_instance {
        return gap_each(case, g, c, tl);
    }
    let missing = |r: &MarkRef, why: MarkError| {
        let e = format!("gap {}→{}: {why}", g.from.label(), g.to.label());
        if tl.complete {
            absent(case, r, tl, e)
        } else {
            undecided(e)
        }
    };
    let a = match mark(case, &g.from, tl) {
        Ok(h) => h,
        Err(why) => return missing(&g.from, why),
    };
    let b = match mark(case, &g.to, tl) {
        Ok(h) => h,
        Err(why) => return missing(&g.to, why),
    };
    let resolution = (secs(a.precision), secs(b.precision));
    let span = (a.at.min(b.at), a.at.max(b.at));
    let mut j = gap_between(g, a, b);
    if !j.measured.is_empty() {
        j.measures = gap_measures(case, g, tl, resolution);
    }
    // The API server was down across the measured span: the kubelet heard of our request, or
    // could act on it, only when it was back. A gap outside its bounds then says nothing about
    // the node; one within them stands (the evidence still proves it).
    if j.outcome == Outcome::Fail
        && let Some(o) = tl
            .gaps
            .iter()
            .find(|x| x.source.disturbs_timing() && x.overlaps(Some(span.0), Some(span.1)))
    {
        let mut u = undecided(format!("{}; undecided: {}", j.evidence, o.describe()));
        u.measured = std::mem::take(&mut j.measured);
        u.measures = std::mem::take(&mut j.measures);
        u.marks = std::mem::take(&mut j.marks);
        return u.with(if o.source == EvidenceSource::Kubelet {
            Fact::KubeletRestarted
        } else {
            Fact::ApiDown
        });
    }
    j
}

/// The description of a measured gap for `diff` (one per measured value).
pub(super) fn gap_measures(
    case: &Case,
    g: &GapExpect,
    tl: &Timeline,
    resolution: (f64, f64),
) -> Vec<measure::MeasureInfo> {
    measure::gap_info(
        case,
        g,
        Some(resolution),
        &|c| tl.pod.probe_period(c),
        tl.pod.any_probe_period(),
    )
    .into_iter()
    .collect()
}

/// `forEachInstance`: the gap judged once per instance of the container, marks with
/// `instance: each` bound to that instance. Fails on the first instance out of bounds, naming it.
pub(super) fn gap_each(case: &Case, g: &GapExpect, container: &str, tl: &Timeline) -> J {
    let label = format!(
        "gap {}→{} for each instance of `{container}`",
        g.from.label(),
        g.to.label()
    );
    let (from, to) = match (lookup(case, &g.from), lookup(case, &g.to)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => return undecided(format!("{label}: {why}")),
    };
    // Instances known from status or from logs (a short-lived instance can miss the status).
    let mut known: Vec<u32> = tl.instances_of(container).map(|i| i.instance).collect();
    known.extend(tl.logs_of(container, None).map(|l| l.instance));
    known.sort_unstable();
    known.dedup();
    let each = Each {
        case,
        g,
        tl,
        from,
        to,
        label,
        container,
        last: known.last().copied(),
    };
    let mut tally = Tally::default();
    for &n in &known {
        if let Some(failed) = each.instance(n, &mut tally) {
            return failed;
        }
    }
    each.verdict(tally)
}

/// A `forEachInstance` gap being judged: its marks looked up, and the newest instance known.
struct Each<'a> {
    case: &'a Case,
    g: &'a GapExpect,
    tl: &'a Timeline,
    from: MarkSpec,
    to: MarkSpec,
    label: String,
    container: &'a str,
    last: Option<u32>,
}

/// What the instances judged so far came to.
#[derive(Default)]
struct Tally {
    measured: Vec<f64>,
    measures: Vec<measure::MeasureInfo>,
    /// `#n 1.2s` of each instance within the bounds.
    per: Vec<String>,
    skipped: Vec<String>,
    /// Instances whose measurement a gap in the evidence prevented: the quantifier cannot pass
    /// over them ("for each instance" would then mean "for each instance we happened to see").
    unmeasured: Vec<String>,
    marks: Vec<MarkAt>,
    widened: bool,
}

impl Each<'_> {
    /// Judges instance `n` into the tally; `Some` is the verdict when it fails the whole gap.
    fn instance(&self, n: u32, t: &mut Tally) -> Option<J> {
        let (g, tl, label, container) = (self.g, self.tl, &self.label, self.container);
        let (from_n, to_n) = (marks::for_instance(&self.from, n), marks::for_instance(&self.to, n));
        let hidden = |spec: &MarkSpec| marks::hiding_gaps(spec, tl, None).first().map(|g| g.describe());
        let (a, b) = match (resolve(&from_n, tl), resolve(&to_n, tl)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(why), _) => {
                // An instance without its `from` mark is not part of the quantifier (e.g. an
                // instance that never logged the line the gap starts at), unless a gap of the
                // mark's source could hide it.
                match hidden(&from_n) {
                    Some(g) => t
                        .unmeasured
                        .push(format!("#{n} not measured: {why}; its `from` may lie in a gap: {g}")),
                    None => t.skipped.push(format!("#{n} not measured: {why}")),
                }
                return None;
            }
            (Ok(a), Err(why)) => {
                // The newest instance may still be running, or be stopped by the case's own end.
                if Some(n) == self.last {
                    t.skipped.push(format!("#{n} not measured: {why}"));
                    return None;
                }
                let absent = format!(
                    "{label}: {container}#{n} has its `from` ({}) but never its `to`: {why}",
                    a.what
                );
                let mut j = if evidence_is_whole(tl) {
                    fail(absent)
                } else {
                    match hidden(&to_n) {
                        Some(g) => {
                            t.unmeasured
                                .push(format!("#{n} not measured: {why}; its `to` may lie in a gap: {g}"));
                            return None;
                        }
                        None if !tl.complete => {
                            t.skipped.push(format!("#{n} not measured: {why}"));
                            return None;
                        }
                        None => fail(absent).with(Fact::MarkAbsent),
                    }
                };
                j.measured = std::mem::take(&mut t.measured);
                j.measures = std::mem::take(&mut t.measures);
                return Some(j);
            }
        };
        let resolution = (secs(a.precision), secs(b.precision));
        let j = gap_between(g, a.clone(), b.clone());
        t.measured.extend(j.measured.iter().copied());
        if !j.measured.is_empty() {
            t.measures.extend(gap_measures(self.case, g, tl, resolution));
        }
        t.marks.extend(j.marks.iter().cloned());
        if j.outcome == Outcome::Undecided {
            t.unmeasured.push(format!("#{n}: {}", j.evidence));
            return None;
        }
        if j.outcome == Outcome::Fail {
            let mut f = fail(format!("{label}: {container}#{n} out of bounds: {}", j.evidence));
            f.measured = std::mem::take(&mut t.measured);
            f.measures = std::mem::take(&mut t.measures);
            f.marks = j.marks;
            return Some(f);
        }
        if j.has(Fact::ToleranceWidened) {
            t.widened = true;
        }
        t.per
            .push(format!("#{n} {}", fmt_secs(*j.measured.first().unwrap_or(&0.0))));
        None
    }

    /// The verdict once every instance is within the bounds, skipped or unmeasured.
    fn verdict(&self, mut t: Tally) -> J {
        let (g, tl, label) = (self.g, self.tl, &self.label);
        if t.widened {
            t.skipped
                .push("status times are whole seconds: each tolerance widened by their precision".into());
        }
        let skipped_note = if t.skipped.is_empty() {
            String::new()
        } else {
            format!(" [{}]", t.skipped.join("; "))
        };
        let per = &t.per;
        let mut j = if !t.unmeasured.is_empty() {
            let e = format!(
                "{label}: {} instance(s) within {}{}{skipped_note}; undecided: {}",
                per.len(),
                bounds_text(g),
                if per.is_empty() {
                    String::new()
                } else {
                    format!(": {}", per.join(", "))
                },
                t.unmeasured.join("; ")
            );
            undecided(e).with(Fact::InstanceUnmeasured)
        } else if per.is_empty() {
            let e = format!("{label}: no instance with both marks{skipped_note}");
            if evidence_is_whole(tl) {
                fail(e).with(Fact::MarkAbsent)
            } else {
                undecided(e)
            }
        } else {
            let e = format!(
                "{label}: {} instance(s) within {}: {}{skipped_note}",
                per.len(),
                bounds_text(g),
                per.join(", ")
            );
            if tl.complete {
                pass(e)
            } else {
                undecided(format!("{e} so far"))
            }
        };
        j.measured = t.measured;
        j.measures = t.measures;
        j.marks = t.marks;
        j
    }
}

/// `5s ±300ms`, `at most 2s`, ...
pub(super) fn bounds_text(g: &GapExpect) -> String {
    match (g.target, g.tolerance, g.min, g.max) {
        (Some(t), tol, _, _) => format!("{} ±{}", t, fmt_secs(tol.map(|d| d.as_secs_f64()).unwrap_or(0.0))),
        (None, _, Some(a), Some(b)) => format!("between {a} and {b}"),
        (None, _, Some(a), None) => format!("at least {a}"),
        (None, _, None, Some(b)) => format!("at most {b}"),
        (None, _, None, None) => "any".into(),
    }
}

/// Judges a gap between two resolved marks.
pub(super) fn gap_between(g: &GapExpect, a: Hit, b: Hit) -> J {
    let measured = secs(b.at.duration_since(a.at));
    let (lo, hi, expected) = gap_bounds(g);
    let (shown, note) = shown_measurement(&a, &b, measured);
    let ev = format!(
        "gap {}→{}: expected {expected}, measured {shown} ({}; {}){note}",
        g.from.label(),
        g.to.label(),
        a.what,
        b.what
    );
    let marks = vec![
        MarkAt {
            label: g.from.label(),
            at: a.at,
        },
        MarkAt {
            label: g.to.label(),
            at: b.at,
        },
    ];
    if let Some(why) = a.uncertain.as_ref().or(b.uncertain.as_ref()) {
        // Not a measurement: one end may lie anywhere in a gap (kept out of statistics).
        let mut j = undecided(format!("{ev}; undecided: {why}"));
        j.marks = marks;
        return j;
    }
    let mut j = gap_outcome(ev, &a, &b, (lo, hi), measured);
    if secs(a.precision) + secs(b.precision) > 0.0 {
        j = j.with(Fact::ToleranceWidened);
    }
    if a.tick_stalled || b.tick_stalled {
        j = j.with(Fact::KillDisagreesWithFinishedAt);
    }
    j.measured = vec![measured];
    j.marks = marks;
    j
}

/// The bounds a gap expectation sets (`None`: open) and what it expects, in words, with the
/// allowances the bound rests on.
fn gap_bounds(g: &GapExpect) -> (Option<f64>, Option<f64>, String) {
    let (lo, hi, expected) = match (g.target, g.tolerance, g.min, g.max) {
        (Some(t), tol, _, _) => {
            let tol = tol.map(|d| d.as_secs_f64()).unwrap_or(0.0);
            (
                Some(t.as_secs_f64() - tol),
                Some(t.as_secs_f64() + tol),
                format!("{} ±{}", t, fmt_secs(tol)),
            )
        }
        (None, _, min, max) => {
            let e = match (min, max) {
                (Some(a), Some(b)) => format!("between {a} and {b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => "any".into(),
            };
            (min.map(|d| d.as_secs_f64()), max.map(|d| d.as_secs_f64()), e)
        }
    };
    // The bound says what it rests on: the named allowances over the mechanism's own time.
    let expected = match &g.allow {
        Some(a) => format!("{expected} ({})", crate::suite::allowances::describe(&a.value)),
        None => expected,
    };
    (lo, hi, expected)
}

/// The measurement with its uncertainty (the true gap lies in (m − from's, m + to's
/// precision)), and the note (` [...]`) naming what widened it and any mixing of clocks.
fn shown_measurement(a: &Hit, b: &Hit, measured: f64) -> (String, String) {
    let (below, above) = (secs(a.precision), secs(b.precision));
    let widen = below + above;
    let mut notes = vec![];
    let mut shown = fmt_secs(measured);
    if widen > 0.0 {
        shown.push_str(&format!(" (+{}/−{})", fmt_secs(above), fmt_secs(below)));
        let mut causes: Vec<&str> = vec![];
        for c in [&a.cause, &b.cause].into_iter().flatten() {
            if !causes.contains(&c.as_str()) {
                causes.push(c);
            }
        }
        notes.push(format!(
            "tolerance widened by {}: {}",
            fmt_secs(widen),
            causes.join("; ")
        ));
    }
    if a.clock != b.clock {
        notes.push("mixed clocks: harness and node".to_string());
    }
    let note = if notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", notes.join("; "))
    };
    (shown, note)
}

/// How far the delays between two marks' streams may move a gap.
struct StreamLag {
    below: f64,
    above: f64,
    /// The part of `below` that is the kubelet's own watch delivery of our request.
    reaction: f64,
}

/// The delays between two marks' streams.
///
/// Across two streams each end carries its stream's delay: a receive time lags its write (an
/// event's own time, whole seconds, bounds it), our request takes effect before it is answered.
/// Those delays are known only as bounds, so they never make a pass: they only turn a
/// measurement outside the bounds by less than them into undecided.
fn stream_lag(a: &Hit, b: &Hit) -> StreamLag {
    let cross = !a.same_stream(b);
    let (mut lag_below, lag_above) = if cross {
        (secs(a.late) + secs(b.early), secs(b.late) + secs(a.early))
    } else {
        (0.0, 0.0)
    };
    // From our request to the node's reaction, the kubelet's own watch delivery is part of the
    // measured gap: on a loaded API server or machine it hears of a DELETE late (after an
    // outage, a preStop hook was called 289 ms after the DELETE was answered). It only excuses
    // an upper bound, as undecided; node-side gaps (TERM→kill) keep judging the node precisely.
    let reaction = if cross && b.stream != Stream::Action {
        secs(a.reaction)
    } else {
        0.0
    };
    lag_below += reaction;
    StreamLag {
        below: lag_below,
        above: lag_above,
        reaction,
    }
}

/// The outcome of a measured gap against its bounds (`lo`, `hi`), `ev` its evidence: a pass
/// only when the true gap, measured with both marks' precision, surely lies within them.
fn gap_outcome(ev: String, a: &Hit, b: &Hit, (lo, hi): (Option<f64>, Option<f64>), measured: f64) -> J {
    // True instants lie in [at, at+precision): the true gap lies in (m - pa, m + pb).
    let below = secs(a.precision);
    let above = secs(b.precision);
    let lo_true = measured - below;
    let hi_true = measured + above;
    let lag = stream_lag(a, b);
    let within = |l: f64, h: f64| lo.is_none_or(|lo| h >= lo - 1e-9) && hi.is_none_or(|hi| l <= hi + 1e-9);
    let ok = within(lo_true, hi_true);
    let ok_with_lag = within(lo_true - lag.below, hi_true + lag.above);
    let widen = below + above;
    // A measurement coarser than the window it is judged against cannot show the node inside
    // it: never a pass (a broken node would pass as well), undecided unless surely outside.
    let window = match (lo, hi) {
        (Some(l), Some(h)) => Some(h - l),
        _ => None,
    };
    let coarse = window.is_some_and(|w| widen > w + 1e-9);
    // A stalled tick leaves only finishedAt (whole seconds) as the kill's reading: when that
    // second straddles a bound, the node may lie on either side of it.
    let stalled = a.tick_stalled || b.tick_stalled;
    let surely_within = lo.is_none_or(|lo| lo_true >= lo - 1e-9) && hi.is_none_or(|hi| hi_true <= hi + 1e-9);
    if ok && stalled && !surely_within {
        undecided(format!(
            "{ev}; undecided: the kill is read from finishedAt alone, whose second straddles the bound"
        ))
    } else if ok && coarse {
        undecided(format!(
            "{ev}; undecided: the measurement's uncertainty ({}) is wider than the expectation's window ({})",
            fmt_secs(widen),
            fmt_secs(window.unwrap_or_default())
        ))
        .with(Fact::CoarserThanTolerance)
    } else if ok {
        pass(ev)
    } else if ok_with_lag {
        undecided(format!(
            "{ev}; undecided: outside the bounds by less than the delay between the two streams (−{}/+{}: {}{})",
            fmt_secs(lag.below),
            fmt_secs(lag.above),
            stream_causes(a, b),
            if lag.reaction > 0.0 {
                format!(
                    "; the kubelet hears of our request through its own watch, up to {} late under load",
                    fmt_secs(lag.reaction)
                )
            } else {
                String::new()
            }
        ))
        .with(Fact::OrderWithinUncertainty)
    } else {
        fail(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// Judges the case's first expectation, a `gap`.
    fn judged(body: &str, tl: &Timeline) -> J {
        let c = case(body);
        let Expectation::Gap(g) = &*c.expect[0] else {
            panic!("not a gap: {body}")
        };
        gap(&c, g, tl)
    }

    /// From the first to the last log line of `main`#0: one stream, one clock, ns precision.
    const RUN: &str = "expect:\n  - gap: {from: {firstLogLine: {container: main}}, to: {lastLogLine: {container: main}}, target: 1s, tolerance: 100ms}\n";

    fn logged(ms: &[i64]) -> Timeline {
        let mut tl = timeline(vec![]);
        tl.logs = ms.iter().map(|t| line("main", 0, *t, "tick")).collect();
        tl
    }

    #[test]
    fn a_gap_within_its_tolerance_passes_and_one_outside_fails() {
        let j = judged(RUN, &logged(&[0, 1050]));
        assert_judged(&j, Outcome::Pass, "expected 1s ±100ms, measured 1.05s");
        assert!((j.measured[0] - 1.05).abs() < 1e-9, "{:?}", j.measured);
        assert_eq!(j.marks.len(), 2);
        let j = judged(RUN, &logged(&[0, 1500]));
        assert_judged(&j, Outcome::Fail, "measured 1.5s");
        assert_eq!(j.measured, vec![1.5]);
    }

    #[test]
    fn a_missing_mark_waits_while_observing_and_fails_on_whole_evidence() {
        let mut tl = logged(&[]);
        tl.complete = false;
        assert_judged(&judged(RUN, &tl), Outcome::Undecided, "no log line from `main`");
        tl.complete = true;
        let j = judged(RUN, &tl);
        assert_judged(&j, Outcome::Fail, "and the observation is complete");
        assert!(j.has(Fact::MarkAbsent));
    }

    #[test]
    fn a_missing_mark_a_log_gap_could_hide_is_undecided() {
        let mut tl = logged(&[]);
        tl.gaps.push(source_gap(
            EvidenceSource::Logs {
                container: Some("main".into()),
                instance: None,
            },
            Some(0),
            Some(5),
        ));
        assert_judged(&judged(RUN, &tl), Outcome::Undecided, "undecided: logs of main");
    }

    #[test]
    fn a_gap_out_of_bounds_across_an_api_outage_is_undecided_not_failed() {
        let mut tl = logged(&[0, 3000]);
        tl.gaps.push(source_gap(EvidenceSource::Api, Some(1), Some(2)));
        let j = judged(RUN, &tl);
        assert_judged(&j, Outcome::Undecided, "undecided: API server down");
        assert!(j.has(Fact::ApiDown));
        // The measurement is kept, for statistics, though it decides nothing.
        assert_eq!(j.measured, vec![3.0]);
    }

    /// From our DELETE (harness clock) to the pod seen Failed (a pod watch receive time).
    const DELETE_TO_FAILED: &str =
        "expect:\n  - gap: {from: {action: {action: delete}}, to: {phase: Failed}, max: 2s}\n";

    fn deleted_then_failed(failed_s: i64) -> Timeline {
        let mut tl = timeline(vec![snap(failed_s, serde_json::json!({"phase": "Failed"}))]);
        tl.actions.push(action(ActionKind::Delete, 0));
        tl
    }

    #[test]
    fn across_two_streams_a_gap_over_its_bound_by_less_than_their_delays_is_undecided() {
        assert_judged(
            &judged(DELETE_TO_FAILED, &deleted_then_failed(2)),
            Outcome::Pass,
            "expected at most 2s, measured 2s",
        );
        let j = judged(DELETE_TO_FAILED, &deleted_then_failed(3));
        assert_judged(&j, Outcome::Undecided, "by less than the delay between the two streams");
        assert!(j.has(Fact::OrderWithinUncertainty));
        assert_judged(
            &judged(DELETE_TO_FAILED, &deleted_then_failed(6)),
            Outcome::Fail,
            "measured 6s",
        );
    }

    #[test]
    fn status_times_widen_the_tolerance_and_a_coarser_measurement_never_passes() {
        // startedAt of #0 to startedAt of #1: whole seconds each, so ±1 s around the measurement.
        let body = "expect:\n  - gap: {from: {containerStarted: {container: main, instance: 0}}, to: {containerStarted: {container: main, instance: 1}}, target: 10s, tolerance: 200ms}\n";
        let mut tl = timeline(vec![]);
        tl.instances = vec![
            instance("main", 0, Some(0), Some((1, 1))),
            instance("main", 1, Some(10), None),
        ];
        let j = judged(body, &tl);
        assert_judged(&j, Outcome::Undecided, "wider than the expectation's window");
        assert!(j.has(Fact::CoarserThanTolerance) && j.has(Fact::ToleranceWidened));
        tl.instances[1].started_at = Some(at(20));
        assert_judged(&judged(body, &tl), Outcome::Fail, "tolerance widened by 2s");
    }

    #[test]
    fn for_each_instance_names_the_first_instance_out_of_bounds() {
        let body = "expect:\n  - gap: {from: {firstLogLine: {container: main, instance: each}}, to: {lastLogLine: {container: main, instance: each}}, max: 1s, forEachInstance: main}\n";
        let mut tl = timeline(vec![]);
        tl.logs = vec![
            line("main", 0, 0, "a"),
            line("main", 0, 500, "b"),
            line("main", 1, 2000, "a"),
            line("main", 1, 2800, "b"),
        ];
        let j = judged(body, &tl);
        assert_judged(&j, Outcome::Pass, "2 instance(s) within at most 1s: #0 500ms, #1 800ms");
        assert_eq!(j.measured, vec![0.5, 0.8]);
        tl.logs.push(line("main", 1, 4000, "c"));
        assert_judged(&judged(body, &tl), Outcome::Fail, "main#1 out of bounds");
    }

    #[test]
    fn bounds_read_as_the_evidence_states_them() {
        let g = |yaml: &str| {
            let c = case(&format!(
                "expect:\n  - gap: {{from: {{firstLogLine: {{container: main}}}}, to: {{lastLogLine: {{container: main}}}}, {yaml}}}\n"
            ));
            let Expectation::Gap(g) = &*c.expect[0] else { panic!() };
            bounds_text(g)
        };
        assert_eq!(g("target: 5s, tolerance: 300ms"), "5s ±300ms");
        assert_eq!(g("min: 1s, max: 4s"), "between 1s and 4s");
        assert_eq!(g("min: 1s"), "at least 1s");
        assert_eq!(g("max: 2s"), "at most 2s");
    }
}
