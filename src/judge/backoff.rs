//! Back-off: the intervals between a container's restarts measured from status times or log lines, the
//! kubelet's announced waits (CrashLoopBackOff messages), and the bounds a doubling or explicit model allows.

use super::*;

/// One measured back-off interval.
pub struct Interval {
    pub from: Timestamp,
    pub to: Timestamp,
    pub slack: f64,
    pub what: String,
}

/// Intervals between consecutive instances of a container.
pub fn restart_intervals(tl: &Timeline, container: &str, measure: BackoffMeasure) -> Vec<Interval> {
    let insts: Vec<_> = tl.instances_of(container).collect();
    let mut out = vec![];
    for w in insts.windows(2) {
        let (a, b) = (w[0], w[1]);
        // checked: an instance number read from a timeline JSON may be u32::MAX.
        if a.instance.checked_add(1) != Some(b.instance) {
            continue;
        }
        match measure {
            BackoffMeasure::Status => {
                if let (Some(f), Some(s)) = (a.finished_at, b.started_at) {
                    out.push(Interval {
                        from: f,
                        to: s,
                        slack: 1.0,
                        what: format!("#{} finishedAt→#{} startedAt", a.instance, b.instance),
                    });
                }
            }
            BackoffMeasure::Logs => {
                let last = tl.logs_of(container, Some(a.instance)).map(|l| l.time).max();
                let first = tl.logs_of(container, Some(b.instance)).map(|l| l.time).min();
                if let (Some(f), Some(s)) = (last, first) {
                    out.push(Interval {
                        from: f,
                        to: s,
                        slack: 0.0,
                        what: format!("#{} last line→#{} first line", a.instance, b.instance),
                    });
                }
            }
        }
    }
    out
}

pub(super) fn backoff(b: &BackoffExpect, tl: &Timeline) -> J {
    let name = b.container.as_str();
    let ivs = restart_intervals(tl, name, b.measure);
    let measured: Vec<f64> = ivs.iter().map(|i| secs(i.to.duration_since(i.from))).collect();
    let shown = format!(
        "[{}]",
        measured.iter().map(|m| fmt_secs(*m)).collect::<Vec<_>>().join(", ")
    );
    let measure = match b.measure {
        BackoffMeasure::Status => "status finishedAt→startedAt, ±1s precision",
        BackoffMeasure::Logs => "last→first log line",
    };
    let mut bad = intervals_out_of_bounds(b, &measured, &ivs);
    let announced = announced_backoffs(tl, name);
    bad.extend(announced_off_model(b, &announced));
    let announced: Vec<f64> = announced.into_iter().map(|(_, d)| d).collect();
    let want_restarts = b.min_restarts.unwrap_or(if b.doubling.is_none() {
        b.intervals.len() as u32
    } else {
        1
    });
    let mut j = if !bad.is_empty() {
        fail(format!(
            "backoff `{name}` ({measure}): measured {shown}: {}",
            bad.join("; ")
        ))
    } else if (measured.len() as u32) < want_restarts {
        let e = format!(
            "backoff `{name}`: expected at least {want_restarts} restart intervals, observed {} {shown}",
            measured.len()
        );
        if tl.complete { fail(e) } else { undecided(e) }.with(Fact::TooFewIntervals)
    } else {
        let said = if announced.is_empty() {
            String::new()
        } else {
            format!(
                "; the kubelet announced back-off [{}]",
                announced.iter().map(|a| fmt_secs(*a)).collect::<Vec<_>>().join(", ")
            )
        };
        pass(format!(
            "backoff `{name}` ({measure}): measured {shown} within {}{said}",
            model_text(b)
        ))
    };
    j.measures = ivs
        .iter()
        .enumerate()
        .map(|(i, iv)| {
            let (lo, hi) = backoff_bounds(b, i);
            measure::backoff_info(lo, hi, iv.slack)
        })
        .collect();
    j.measured = measured;
    api_down_across_restarts(j, tl, name)
}

/// Each measured interval outside the model's bounds for it, described.
fn intervals_out_of_bounds(b: &BackoffExpect, measured: &[f64], ivs: &[Interval]) -> Vec<String> {
    let mut bad = vec![];
    for (i, (m, iv)) in measured.iter().zip(ivs).enumerate() {
        let (lo, hi) = backoff_bounds(b, i);
        let ok = lo.is_none_or(|lo| m + iv.slack >= lo - 1e-9) && hi.is_none_or(|hi| m - iv.slack <= hi + 1e-9);
        if !ok {
            let range = match (lo, hi) {
                (Some(l), Some(h)) => format!("{}..{}", fmt_secs(l.max(0.0)), fmt_secs(h)),
                (Some(l), None) => format!("≥{}", fmt_secs(l)),
                (None, Some(h)) => format!("≤{}", fmt_secs(h)),
                (None, None) => "any".into(),
            };
            bad.push(format!(
                "interval {} ({}) = {} not in {range}",
                i + 1,
                iv.what,
                fmt_secs(*m)
            ));
        }
    }
    bad
}

/// Each back-off the kubelet announced that is not the model's step for that wait, described.
///
/// The kubelet's own word: each CrashLoopBackOff waiting message names the back-off it is
/// waiting out ("back-off 10s restarting failed container=main ..."). Read directly, free of
/// the re-sync jitter that widens the interval bounds, it tells a 10 s base from a 20 s one.
/// Each message is read with the restartCount it was shown with, which says which wait it is:
/// a status write the kubelet could not make (an API outage) hides some waits, and the next
/// message seen then announces a later, longer step (e.g. "back-off 80s" next after "back-off
/// 10s" across a 65 s outage), never a wrong one.
fn announced_off_model(b: &BackoffExpect, announced: &[(u32, f64)]) -> Vec<String> {
    let offset = immediate_restarts(b);
    let mut bad = vec![];
    // Each announced wait's step is computed on its own: the restartCount that names the step
    // comes from the API and may be anything up to u32::MAX, so it must never size the work.
    for (r, got) in announced {
        let Some(k) = r.checked_sub(offset).map(|k| k as usize) else {
            continue;
        };
        let Some(want) = nominal_step(b, k) else { continue };
        let want = &want;
        if (got - want).abs() > 1e-6 {
            bad.push(format!(
                "the kubelet announced back-off {} for its {} wait (\"back-off {}\" in the CrashLoopBackOff message at restartCount {r}), the model's step is {}",
                fmt_secs(*got),
                ordinal(k + 1),
                fmt_secs(*got),
                fmt_secs(*want)
            ));
        }
    }
    bad
}

/// The back-off model in words: `doubling from 10s ×2 cap 5m`, or `explicit bounds`.
fn model_text(b: &BackoffExpect) -> String {
    match &b.doubling {
        Some(d) => format!(
            "doubling from {} ×{}{}{}",
            d.base,
            d.factor,
            d.cap.map(|c| format!(" cap {c}")).unwrap_or_default(),
            if d.first_immediate { ", first immediate" } else { "" }
        ),
        None => "explicit bounds".into(),
    }
}

/// A failed back-off measured across an API outage (or a kubelet restart) is undecided.
/// Restarts need the API (the kubelet reads the pod's secrets and config maps, writes its
/// status): an outage across the restarts delays them, and a back-off measured across one says
/// nothing about the node's.
fn api_down_across_restarts(mut j: J, tl: &Timeline, name: &str) -> J {
    let first = tl.instances_of(name).filter_map(|i| i.started_at).min();
    let last = tl
        .instances_of(name)
        .filter_map(|i| i.started_at.max(i.finished_at))
        .max();
    if j.outcome == Outcome::Fail
        && let Some(o) = tl
            .gaps
            .iter()
            .find(|x| x.source.disturbs_timing() && x.overlaps(first, last))
    {
        j.outcome = Outcome::Undecided;
        j.evidence = format!("{}; undecided: {}", j.evidence, o.describe());
        j.facts.push(if o.source == EvidenceSource::Kubelet {
            Fact::KubeletRestarted
        } else {
            Fact::ApiDown
        });
    }
    j
}

/// Restarts the model makes before its first back-off wait (the kubelet restarts the first exit
/// at once): the first CrashLoopBackOff is shown with this restartCount.
pub(super) fn immediate_restarts(b: &BackoffExpect) -> u32 {
    match &b.doubling {
        Some(d) => u32::from(d.first_immediate),
        None => b
            .intervals
            .iter()
            .take_while(|x| x.min.is_none_or(|m| m.as_secs_f64() <= 0.0))
            .count() as u32,
    }
}

/// The back-offs the kubelet announced for `container`, in order, one per distinct wait, with
/// the restartCount shown beside it: the duration in its CrashLoopBackOff waiting messages
/// ("back-off 10s restarting failed container=main pod=..."), consecutive repeats of one wait
/// counted once.
pub fn announced_backoffs(tl: &Timeline, container: &str) -> Vec<(u32, f64)> {
    let mut out: Vec<(u32, f64)> = vec![];
    let mut last_restarts = None;
    for s in &tl.snapshots {
        let Some(c) = s.container(container) else { continue };
        let State::Waiting {
            reason: Some(r),
            message: Some(m),
        } = &c.state
        else {
            continue;
        };
        if r != "CrashLoopBackOff" {
            continue;
        }
        let Some(d) = m
            .strip_prefix("back-off ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(go_duration)
        else {
            continue;
        };
        // One wait per restartCount: the same wait is shown in many snapshots.
        if last_restarts != Some(c.restart_count) {
            out.push((c.restart_count, d));
            last_restarts = Some(c.restart_count);
        }
    }
    out
}

/// A Go duration as the kubelet prints it (`10s`, `1m20s`, `5m0s`), in seconds.
pub(super) fn go_duration(t: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut num = String::new();
    let mut any = false;
    let mut chars = t.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_ascii_digit() || ch == '.' {
            num.push(ch);
            continue;
        }
        let v: f64 = num.parse().ok()?;
        num.clear();
        let unit = match ch {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += v * unit;
        any = true;
    }
    (any && num.is_empty()).then_some(total)
}

/// The `k`-th (from 0) back-off step an expectation models, for the waits the kubelet
/// announces (the immediate first restart announces none): the doubling's step, or the `k`-th
/// explicit interval's lower bound (the kubelet never restarts before its back-off expires).
/// Computed directly, in time and memory independent of `k`.
pub(super) fn nominal_step(b: &BackoffExpect, k: usize) -> Option<f64> {
    if let Some(d) = &b.doubling {
        let base = d.base.as_secs_f64();
        // Past i32::MAX doublings the step is infinite (then capped) either way.
        let v = base * d.factor.powi(i32::try_from(k).unwrap_or(i32::MAX));
        Some(d.cap.map_or(v, |c| v.min(c.as_secs_f64())))
    } else {
        b.intervals
            .iter()
            .filter_map(|x| x.min.map(|m| m.as_secs_f64()).filter(|m| *m > 0.0))
            .nth(k)
    }
}

pub(super) fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

/// The bounds `(min, max)` of the `i`-th (from 0) back-off interval.
pub fn backoff_bounds(b: &BackoffExpect, i: usize) -> (Option<f64>, Option<f64>) {
    if let Some(d) = &b.doubling {
        let base = d.base.as_secs_f64();
        let nominal = if d.first_immediate {
            if i == 0 {
                0.0
            } else {
                base * d.factor.powi(i as i32 - 1)
            }
        } else {
            base * d.factor.powi(i as i32)
        };
        let nominal = d.cap.map_or(nominal, |c| nominal.min(c.as_secs_f64()));
        let early = d.early.map_or(0.0, |x| x.as_secs_f64());
        let late = d
            .late
            .map_or(if d.jitter.is_some() { 0.0 } else { 15.0 }, |x| x.as_secs_f64());
        let jittered = nominal.min(d.jitter_cap.map_or(f64::INFINITY, |c| c.as_secs_f64()));
        let jitter = d.jitter.unwrap_or(0.0) * jittered;
        (Some(nominal - early), Some(nominal + jitter + late))
    } else if let Some(x) = b.intervals.get(i) {
        (x.min.map(|d| d.as_secs_f64()), x.max.map(|d| d.as_secs_f64()))
    } else {
        (None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_as_the_kubelet_prints_them() {
        assert_eq!(go_duration("10s"), Some(10.0));
        assert_eq!(go_duration("1m20s"), Some(80.0));
        assert_eq!(go_duration("5m0s"), Some(300.0));
        assert_eq!(go_duration("1h0m0s"), Some(3600.0));
        assert_eq!(go_duration("500ms"), Some(0.5));
        assert_eq!(go_duration("2.5s"), Some(2.5));
    }

    #[test]
    fn not_a_go_duration() {
        // A number without a unit, an unknown unit, a trailing number or nothing at all.
        for t in ["", "10", "10x", "1m20", "s", "1d"] {
            assert_eq!(go_duration(t), None, "{t:?}");
        }
    }

    #[test]
    fn ordinals() {
        let got: Vec<String> = (1..=5).map(ordinal).collect();
        assert_eq!(got, ["first", "second", "third", "4th", "5th"]);
    }
}
