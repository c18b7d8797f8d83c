//! The container lanes of a timeline drawing (`lanes`): per container instance, when it waited
//! (and why), where its start and end lie given whole-second status times, when it ran, was
//! ready and logged — in seconds since the drawing's origin, for `svg` to scale.

use jiff::Timestamp;

use crate::judge::marks::hms;
use crate::observe::{Instance, State, Timeline};
use crate::suite::ContainerKind;
use crate::util::fmt_secs;

/// One row per container instance.
pub(super) struct Lane {
    pub(super) label: String,
    pub(super) kind: ContainerKind,
    pub(super) title: String,
    pub(super) waiting: Option<(f64, f64, String)>,
    /// Where the start lies given 1 s status times (startedAt .. first seen running).
    pub(super) start_unc: Option<(f64, f64)>,
    pub(super) running: Option<(f64, f64)>,
    /// Where the end lies (finishedAt .. first seen terminated).
    pub(super) end_unc: Option<(f64, f64)>,
    /// Terminated by then: instant, exit 0, label.
    pub(super) end: Option<(f64, bool, String)>,
    pub(super) logs: Vec<f64>,
    /// Spans in which the status reported this instance ready (receive times).
    pub(super) ready: Vec<(f64, f64)>,
}

/// One lane per instance, in pod spec order; plus a lane for a container still waiting at the
/// end (never started, or waiting to restart), so a stuck container is visible.
pub(super) fn lanes(tl: &Timeline, r: &impl Fn(Timestamp) -> f64, end: Timestamp) -> Vec<Lane> {
    let mut names: Vec<(String, ContainerKind)> = tl.pod.containers.iter().map(|c| (c.name.clone(), c.kind)).collect();
    for i in &tl.instances {
        if !names.iter().any(|(n, _)| *n == i.container) {
            names.push((i.container.clone(), i.kind));
        }
    }
    let mut out = vec![];
    for (name, kind) in &names {
        let first_listed = tl
            .snapshots
            .iter()
            .find(|s| s.container(name).is_some())
            .map(|s| s.received);
        let mut insts: Vec<&Instance> = tl.instances_of(name).collect();
        insts.sort_by_key(|i| i.instance);
        let mut prev: Option<&Instance> = None;
        for inst in &insts {
            out.push(instance_lane(tl, r, end, *kind, inst, prev, first_listed));
            prev = Some(inst);
        }
        // Still waiting at the end of the observation?
        let last_status = tl.snapshots.iter().rev().find_map(|s| s.container(name));
        if let Some(st) = last_status
            && let State::Waiting { .. } = st.state
        {
            let prev_end = prev.and_then(|p| p.finished_at.or(p.first_seen_terminated));
            let still_running = prev.is_some() && prev_end.is_none();
            if !still_running {
                let from = match prev {
                    Some(_) => prev_end,
                    None => first_listed,
                };
                let reasons = tl.waiting_reasons(name, prev.map(|p| p.first_seen), None);
                let n = prev.map(|p| p.instance + 1).unwrap_or(0);
                let waiting = from.map(|f| (r(f), r(end), reasons.join(", ")));
                out.push(Lane {
                    label: format!("{name}#{n}"),
                    kind: *kind,
                    title: format!("{name}#{n}: not started by the end of the observation"),
                    waiting,
                    start_unc: None,
                    running: None,
                    end_unc: None,
                    end: None,
                    logs: vec![],
                    ready: vec![],
                });
            }
        }
    }
    out
}

fn instance_lane(
    tl: &Timeline,
    r: &impl Fn(Timestamp) -> f64,
    end: Timestamp,
    kind: ContainerKind,
    inst: &Instance,
    prev: Option<&Instance>,
    first_listed: Option<Timestamp>,
) -> Lane {
    let name = inst.container.as_str();
    let label = format!("{name}#{}", inst.instance);
    // Waiting: from the first status listing the container (or the previous instance's end)
    // until it started; status snapshots still showing it waiting extend the bar, as startedAt
    // is truncated to the second and may precede the last waiting report.
    let last_waiting = tl.last_waiting_before(inst, prev).map_or(f64::NEG_INFINITY, r);
    let wait_from = match prev {
        Some(p) => p.finished_at.or(p.first_seen_terminated).map(r),
        None => first_listed.map(r),
    };
    let started = inst.started_at.map(r);
    let fsr = inst.first_seen_running.map(r);
    let fst = inst.first_seen_terminated.map(r);
    let finished = inst.finished_at.map(r);
    let start_lo = started.or(fsr);
    let logs: Vec<f64> = tl.logs_of(name, Some(inst.instance)).map(|l| r(l.time)).collect();
    let first_log = logs.iter().copied().reduce(f64::min);
    let last_log = logs.iter().copied().reduce(f64::max);
    // A waiting status is received after the kubelet wrote it, so it does not prove waiting
    // past the container's first log line.
    let wait_to = start_lo.unwrap_or(r(inst.first_seen)).max(last_waiting);
    let wait_to = first_log.map_or(wait_to, |l| wait_to.min(l));
    let waiting = wait_from
        .filter(|f| wait_to > *f)
        .map(|f| (f, wait_to, tl.instance_waiting_reasons(inst, prev).join(", ")));
    let wait_end = waiting.as_ref().map(|w| w.1);
    // Status times are whole seconds: the true start lies in [startedAt, startedAt+1), and
    // before the first status showing it running and its first log line (CRI time, ns, same
    // node clock); the true end in [finishedAt, finishedAt+1), after its last log line and
    // before the first status showing it terminated. Those intervals are drawn pale.
    let min_of = |v: [Option<f64>; 4]| v.into_iter().flatten().reduce(f64::min);
    let max_of = |v: [Option<f64>; 2]| v.into_iter().flatten().reduce(f64::max);
    let end_unc = if finished.is_some() || fst.is_some() {
        let lo = max_of([finished, last_log]).or(fst).unwrap_or_default();
        let hi = min_of([finished.map(|f| f + 1.0), fst, None, None]).unwrap_or(lo);
        Some((lo, hi.max(lo)))
    } else {
        None
    };
    let start_unc = start_lo.map(|lo| {
        let lo = wait_end.map_or(lo, |w| lo.max(w));
        let hi = match started {
            Some(s) => min_of([Some(s + 1.0), fsr, first_log, end_unc.map(|e| e.0)]).unwrap_or(lo),
            None => lo,
        };
        (lo, hi.max(lo))
    });
    let running = start_unc.map(|(_, hi)| {
        let to = end_unc.map_or(r(end), |e| e.0);
        (hi, to.max(hi))
    });
    let end_mark = end_unc.map(|(_, at)| {
        let code = inst
            .exit_code
            .map(|c| format!("exit {c}"))
            .unwrap_or_else(|| "terminated".into());
        let label = match &inst.reason {
            Some(reason) => format!("{code} {reason}"),
            None => code,
        };
        (at, inst.exit_code == Some(0), label)
    });
    let at = |x: Option<Timestamp>| {
        x.map(|t| format!("{} (+{})", hms(t), fmt_secs(r(t))))
            .unwrap_or_else(|| "-".into())
    };
    let mut title = format!(
        "{label}: startedAt {}, first seen running {}, finishedAt {}, first seen terminated {}",
        at(inst.started_at),
        at(inst.first_seen_running),
        at(inst.finished_at),
        at(inst.first_seen_terminated)
    );
    if let Some(id) = &inst.container_id {
        title.push_str(&format!(", {id}"));
    }
    if let Some(m) = inst.message.as_deref().filter(|m| !m.is_empty()) {
        title.push_str(&format!("; message: {}", m.trim_end()));
    }
    let ready = tl
        .ready_spans(name, inst.instance, end)
        .into_iter()
        .map(|s| (r(s.from), r(s.to)))
        .collect();
    Lane {
        label,
        kind,
        title,
        waiting,
        start_unc,
        running,
        end_unc,
        end: end_mark,
        logs,
        ready,
    }
}
