//! Resolving marks (`Hit`): a `MarkSpec` × `Timeline` → the instant it happened, with its clock
//! and precision, and a description for the evidence.

mod disproof;
mod hit;
mod matchers;
mod unresolved;

use jiff::{SignedDuration, Timestamp};

use crate::observe::{EventOccurrence, Gap, Instance, LogLine, State, Timeline};
use crate::suite::model::*;
use crate::suite::types::{InstanceSel, Occurrence, Pattern};
pub use hit::{Clock, Hit, STATUS_CAUSE, Stream, WATCH_DELIVERY};
pub use matchers::{Matcher, compile, matcher, template_value};
use matchers::{event_hit, event_items, log_hit, log_matches};
pub use unresolved::{Flag, Unresolved};

/// How many of a tick loop's last intervals measure its period: enough to see a stretched
/// tick on a loaded node, few enough to describe the loop as it was when it stopped.
const TICK_INTERVALS: usize = 10;

pub use crate::util::hms;

const SECOND: SignedDuration = SignedDuration::from_secs(1);
const ZERO: SignedDuration = SignedDuration::ZERO;

/// The instances a selector picks, in order.
pub(crate) fn select_instances<'a>(tl: &'a Timeline, container: &'a str, sel: InstanceSel) -> Vec<&'a Instance> {
    let all: Vec<&Instance> = tl.instances_of(container).collect();
    match sel {
        // `each` is replaced by a number before resolving (see `for_instance`).
        InstanceSel::Any | InstanceSel::Each => all,
        InstanceSel::Last => all.last().copied().into_iter().collect(),
        InstanceSel::Nth(n) => all.into_iter().filter(|i| i.instance == n).collect(),
    }
}

/// Instance numbers a selector picks among those that logged (logs can exist for an instance
/// the status never showed).
fn log_instances(tl: &Timeline, container: &str, sel: InstanceSel) -> Option<Vec<u32>> {
    let mut known: Vec<u32> = tl.instances_of(container).map(|i| i.instance).collect();
    known.extend(tl.logs_of(container, None).map(|l| l.instance));
    known.sort_unstable();
    known.dedup();
    match sel {
        InstanceSel::Any | InstanceSel::Each => None,
        InstanceSel::Last => Some(known.last().copied().into_iter().collect()),
        InstanceSel::Nth(n) => Some(vec![n]),
    }
}

/// Resolves a mark; `Err` explains why it has not (yet) occurred. The hit says whether a gap in
/// its source makes its instant uncertain.
pub fn resolve(spec: &MarkSpec, tl: &Timeline) -> Result<Hit, Unresolved> {
    let mut hit = resolve_raw(spec, tl)?;
    if !tl.gaps.is_empty()
        && let Some(u) = uncertainty(spec, &hit, tl)
    {
        hit.uncertain = Some(u.gap);
        hit.uncertain_span = Some(u.span);
    }
    Ok(hit)
}

/// Gaps of the source a mark is read from that start before `before` (`None`: any): where an
/// occurrence of the mark could hide.
pub(crate) fn hiding_gaps<'a>(spec: &MarkSpec, tl: &'a Timeline, before: Option<Timestamp>) -> Vec<&'a Gap> {
    let early = |g: &&Gap| before.is_none_or(|t| g.starts_before(t));
    match spec {
        MarkSpec::Event(_) => tl.event_gaps().filter(early).collect(),
        MarkSpec::Log(LogMark {
            container, instance, ..
        })
        | MarkSpec::FirstLogLine(ContainerInstanceRef { container, instance })
        | MarkSpec::LastLogLine(ContainerInstanceRef { container, instance })
        | MarkSpec::TickStopped(ContainerInstanceRef { container, instance }) => {
            let sel = match log_instances(tl, container.as_str(), *instance) {
                Some(v) if v.len() == 1 => Some(v[0]),
                _ => None,
            };
            tl.log_gaps(container.as_str(), sel).filter(early).collect()
        }
        MarkSpec::Action(_) => vec![],
        // A gap a later snapshot's monotonic fields rule out hides nothing (see `disproof`).
        _ => tl
            .pod_gaps()
            .filter(early)
            .filter(|g| !disproof::disproved_after(spec, tl, g))
            .collect(),
    }
}

fn uncertainty(spec: &MarkSpec, hit: &Hit, tl: &Timeline) -> Option<Uncertain> {
    // A hidden earlier occurrence lies between the first hiding gap's start and the sighting.
    let earlier = |gs: Vec<&Gap>| {
        gs.first().map(|g| Uncertain {
            gap: g.describe(),
            span: (gs.iter().map(|g| g.from).min().flatten(), Some(hit.at)),
        })
    };
    match spec {
        MarkSpec::Event(EventMark { occurrence, .. }) | MarkSpec::Log(LogMark { occurrence, .. }) => match occurrence {
            Occurrence::Last => later(hiding_gaps(spec, tl, None), hit),
            _ => earlier(hiding_gaps(spec, tl, Some(hit.at))),
        },
        MarkSpec::FirstLogLine(_) => earlier(hiding_gaps(spec, tl, Some(hit.at))),
        // A lost stream could hide later lines, i.e. a later last tick.
        MarkSpec::LastLogLine(_) | MarkSpec::TickStopped(_) => later(hiding_gaps(spec, tl, None), hit),
        // Status times are the kubelet's own record: late delivery does not move them.
        MarkSpec::ContainerStarted(_) | MarkSpec::ContainerTerminated(_) | MarkSpec::Action(_) => None,
        MarkSpec::ActiveDeadline if hit.clock == Clock::Node => None,
        // Receive times: the first sighting may come right after a gap that hid the change.
        _ => {
            let prev = tl.snapshots.iter().map(|s| s.received).filter(|r| *r < hit.at).max();
            let g = tl
                .pod_gaps()
                .find(|g| g.overlaps(prev, Some(hit.at)) || (g.to.is_none() && g.starts_before(hit.at)))?;
            Some(Uncertain {
                gap: g.describe(),
                span: (g.from.max(prev), Some(hit.at)),
            })
        }
    }
}

/// Why a hit's instant is uncertain, and where it may lie instead.
struct Uncertain {
    gap: String,
    span: (Option<Timestamp>, Option<Timestamp>),
}

/// A later occurrence may hide in any of the gaps, up to the last one's end.
fn later(gs: Vec<&Gap>, hit: &Hit) -> Option<Uncertain> {
    let first = gs.first()?;
    let end = if gs.iter().any(|g| g.to.is_none()) {
        None
    } else {
        gs.iter().filter_map(|g| g.to).max()
    };
    Some(Uncertain {
        gap: first.describe(),
        span: (Some(hit.at), end),
    })
}

/// When the pod's active deadline ran out, as the kubelet counts it (`pastActiveDeadline`):
/// `status.startTime` plus `spec.activeDeadlineSeconds`. A deadline set (by an update) when it
/// was already past runs out when the kubelet learns of it, which the first snapshot carrying
/// it stands for. startTime is truncated to the second, so the true expiry lies within the
/// second after the computed one.
fn active_deadline(tl: &Timeline) -> Result<Hit, Unresolved> {
    // The deadline the pod ended with, and when it was first seen with that value (a running
    // pod's deadline can only be set or shortened).
    let deadline = tl
        .snapshots
        .iter()
        .rev()
        .find_map(|s| s.active_deadline_seconds)
        .ok_or(Unresolved::NoActiveDeadline)?;
    let set = tl
        .snapshots
        .iter()
        .find(|s| s.active_deadline_seconds == Some(deadline))
        .map(|s| s.received)
        .unwrap_or_default();
    let start = tl
        .snapshots
        .iter()
        .find_map(|s| s.start_time)
        .ok_or(Unresolved::NoStartTime)?;
    let due = crate::util::ts_add(start, SignedDuration::from_secs(deadline));
    let desc = format!("startTime {} + activeDeadlineSeconds {deadline}", hms(start));
    Ok(if due >= set {
        Hit::new(due, SECOND, Clock::Node, format!("{desc} = {}", hms(due))).because(STATUS_CAUSE)
    } else {
        Hit::new(
            set,
            ZERO,
            Clock::Harness,
            format!(
                "{desc} = {}, already past when the deadline was first seen {}",
                hms(due),
                hms(set)
            ),
        )
        .pod_watch()
    })
}

/// Why a snapshot does not show the resize `r` done, or None when it does: each named
/// container reports exactly these requests and limits (by value; none other), has them
/// allocated, and no resize condition is left (the kubelet clears PodResizePending and
/// PodResizeInProgress once it has actuated the resize).
pub(crate) fn resize_mismatch(r: &crate::suite::ResizedMark, s: &crate::observe::Snapshot) -> Option<String> {
    for (name, want) in &r.containers {
        let Some(c) = s.container(name) else {
            return Some(format!("no status of `{name}`"));
        };
        let Some(got) = &c.resources else {
            return Some(format!("`{name}` reports no resources"));
        };
        if !same_quantities(&want.value.requests, &got.requests) || !same_quantities(&want.value.limits, &got.limits) {
            let side = |m: &std::collections::BTreeMap<String, String>| {
                m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            };
            return Some(format!(
                "`{name}` reports requests [{}] limits [{}]",
                side(&got.requests),
                side(&got.limits)
            ));
        }
        if !same_quantities(&want.value.requests, &c.allocated_resources) {
            return Some(format!("`{name}` has allocated {:?}", c.allocated_resources));
        }
    }
    for ty in ["PodResizePending", "PodResizeInProgress"] {
        if let Some(c) = s.condition(ty) {
            return Some(format!(
                "{ty}={} ({}: {})",
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.message.as_deref().unwrap_or("")
            ));
        }
    }
    None
}

/// Two resource lists with the same resources of equal value (`1000m` is `1`).
fn same_quantities(
    a: &std::collections::BTreeMap<String, String>,
    b: &std::collections::BTreeMap<String, String>,
) -> bool {
    use crate::suite::quantity::Quantity;
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k)
                .is_some_and(|w| match (Quantity::parse(v), Quantity::parse(w)) {
                    (Ok(x), Ok(y)) => x == y,
                    _ => v == w,
                })
        })
}

/// The first instance `r` selects: the one whose status times `containerStarted` and
/// `containerTerminated` read.
fn first_instance<'a>(tl: &'a Timeline, r: &'a ContainerInstanceRef) -> Result<&'a Instance, Unresolved> {
    select_instances(tl, &r.container, r.instance)
        .first()
        .copied()
        .ok_or_else(|| Unresolved::NoInstance {
            container: r.container.to_string(),
            instance: r.instance,
        })
}

fn resolve_raw(spec: &MarkSpec, tl: &Timeline) -> Result<Hit, Unresolved> {
    match spec {
        MarkSpec::ContainerStarted(r) => container_started(r, tl),
        MarkSpec::ContainerTerminated(r) => container_terminated(r, tl),
        MarkSpec::ContainerSeen(s) => container_seen(s, tl),
        MarkSpec::Restarts(r) => restarts(r, tl),
        MarkSpec::Log(l) => log_mark(l, tl),
        MarkSpec::FirstLogLine(r) => end_log_line(r, true, tl),
        MarkSpec::LastLogLine(r) => end_log_line(r, false, tl),
        MarkSpec::TickStopped(r) => tick_stopped(r, tl),
        MarkSpec::Event(e) => event_mark(e, tl),
        MarkSpec::Phase(p) => phase_mark(p, tl),
        MarkSpec::Condition(c) => condition_mark(c, tl),
        MarkSpec::Ready(f) => flag_turn(f, Flag::Ready, tl),
        MarkSpec::Started(f) => flag_turn(f, Flag::Started, tl),
        MarkSpec::Resized(r) => resized(r, tl),
        MarkSpec::Status(st) => status_mark(st, tl),
        MarkSpec::ActiveDeadline => active_deadline(tl),
        MarkSpec::ObservedGeneration(g) => observed_generation(g, tl),
        MarkSpec::PodGone => pod_gone(tl),
        MarkSpec::Action(a) => action_mark(a, tl),
    }
}

/// A container instance's `startedAt`, narrowed by its first log line.
fn container_started(r: &ContainerInstanceRef, tl: &Timeline) -> Result<Hit, Unresolved> {
    let i = first_instance(tl, r)?;
    let t = i.started_at.ok_or_else(|| Unresolved::NoStartedAt {
        container: i.container.to_string(),
        instance: i.instance,
    })?;
    // startedAt is truncated to the second; the first log line (same node clock, ns)
    // bounds the true start from above, so it narrows the interval.
    let first = tl.logs_of(&i.container, Some(i.instance)).map(|l| l.time).min();
    let (precision, note) = match first {
        Some(f) if f >= t && f < crate::util::ts_add(t, SECOND) => (f.duration_since(t), ", ≤ first log line"),
        _ => (SECOND, ""),
    };
    Ok(Hit::new(
        t,
        precision,
        Clock::Node,
        format!("{}#{} startedAt {}{note}", i.container, i.instance, hms(t)),
    )
    .because(STATUS_CAUSE))
}

/// A container instance's `finishedAt`, narrowed by its last log line.
fn container_terminated(r: &ContainerInstanceRef, tl: &Timeline) -> Result<Hit, Unresolved> {
    let i = first_instance(tl, r)?;
    let t = i.finished_at.ok_or_else(|| Unresolved::NotTerminated {
        container: i.container.to_string(),
        instance: i.instance,
    })?;
    // finishedAt is truncated to the second; the last log line bounds the true end from
    // below, so the end lies in [max(finishedAt, last line), finishedAt + 1 s).
    let last = tl.logs_of(&i.container, Some(i.instance)).map(|l| l.time).max();
    let (at, note) = match last {
        Some(l) if l > t && l < crate::util::ts_add(t, SECOND) => (l, ", ≥ last log line"),
        _ => (t, ""),
    };
    Ok(Hit::new(
        at,
        crate::util::ts_add(t, SECOND).duration_since(at),
        Clock::Node,
        format!("{}#{} finishedAt {}{note}", i.container, i.instance, hms(t)),
    )
    .because(STATUS_CAUSE))
}

/// The first pod version showing the instance in a state.
fn container_seen(s: &ContainerSeen, tl: &Timeline) -> Result<Hit, Unresolved> {
    for snap in &tl.snapshots {
        let Some(c) = snap.container(&s.container) else {
            continue;
        };
        let state_ok = matches!(
            (&c.state, s.state),
            (State::Waiting { .. }, ContainerState::Waiting)
                | (State::Running { .. }, ContainerState::Running)
                | (State::Terminated(_), ContainerState::Terminated)
        );
        let inst_ok = match (s.instance, c.instance) {
            (InstanceSel::Any | InstanceSel::Last | InstanceSel::Each, _) => true,
            (InstanceSel::Nth(n), Some(i)) => n == i,
            // Waiting before any start has no instance: it precedes instance 0.
            (InstanceSel::Nth(n), None) => n == c.restart_count,
        };
        if state_ok && inst_ok {
            return Ok(Hit::new(
                snap.received,
                ZERO,
                Clock::Harness,
                format!("{} seen {} @{}", s.container, s.state, hms(snap.received)),
            )
            .pod_watch());
        }
    }
    Err(Unresolved::NeverSeen {
        container: s.container.to_string(),
        instance: s.instance,
        state: s.state,
    })
}

/// The first pod version whose restartCount reached the mark's.
fn restarts(r: &RestartsMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    tl.snapshots
        .iter()
        .find(|s| s.container(&r.container).is_some_and(|c| c.restart_count >= r.count))
        .map(|s| {
            Hit::new(
                s.received,
                ZERO,
                Clock::Harness,
                format!("{} restartCount {} @{}", r.container, r.count, hms(s.received)),
            )
            .pod_watch()
        })
        .ok_or_else(|| Unresolved::RestartsNotReached {
            container: r.container.to_string(),
            count: r.count,
        })
}

/// The chosen occurrence of a matching log line.
fn log_mark(l: &LogMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    let (lines, label) = log_matches(l, tl)?;
    let line = l.occurrence.pick(&lines).ok_or_else(|| Unresolved::NoLogLine {
        occurrence: l.occurrence,
        label,
        container: l.container.to_string(),
        instance: l.instance,
        matching: lines.len(),
    })?;
    Ok(log_hit(line))
}

/// The first (`first`) or last log line of the selected instances.
fn end_log_line(r: &ContainerInstanceRef, first: bool, tl: &Timeline) -> Result<Hit, Unresolved> {
    let inst = log_instances(tl, &r.container, r.instance);
    let mut lines: Vec<_> = tl
        .logs_of(&r.container, None)
        .filter(|x| inst.as_ref().is_none_or(|v| v.contains(&x.instance)))
        .collect();
    lines.sort_by_key(|x| x.time);
    let line = if first { lines.first() } else { lines.last() };
    let line = line.ok_or_else(|| Unresolved::NoLogLineFrom {
        container: r.container.to_string(),
        instance: r.instance,
    })?;
    let which = if first { "first" } else { "last" };
    Ok(Hit::new(
        line.time,
        ZERO,
        Clock::Node,
        format!(
            "{which} log line \"{}\" {} {}#{}",
            line.text,
            hms(line.time),
            line.container,
            line.instance
        ),
    )
    .log(&line.container, line.instance))
}

/// When a tick loop stopped: within one period after its last line, or finishedAt when the loop
/// stalled before the kill.
fn tick_stopped(r: &ContainerInstanceRef, tl: &Timeline) -> Result<Hit, Unresolved> {
    let inst = log_instances(tl, &r.container, r.instance);
    let mut lines: Vec<_> = tl
        .logs_of(&r.container, None)
        .filter(|x| inst.as_ref().is_none_or(|v| v.contains(&x.instance)))
        .collect();
    lines.sort_by_key(|x| x.time);
    let tail = &lines[lines.len().saturating_sub(TICK_INTERVALS + 1)..];
    let last = tail.last().ok_or_else(|| Unresolved::NoLogLineFrom {
        container: r.container.to_string(),
        instance: r.instance,
    })?;
    // The loop stopped after its last line and before the next tick was due: the
    // longest recent interval is the period the evidence was sampled at.
    let period = tail
        .windows(2)
        .map(|w| w[1].time.duration_since(w[0].time))
        .max()
        .ok_or_else(|| Unresolved::OneTick {
            container: r.container.to_string(),
            instance: r.instance,
        })?;
    let p = crate::util::fmt_secs(period.as_secs_f64());
    // The kill must agree with the kubelet's record of the exit: the true kill lies in
    // [last tick, last tick + period) and the exit in [finishedAt, finishedAt + 1 s). A
    // loop that stalled (busybox 1.38's `read -t` after a trap) stops ticking long
    // before the kill; its last tick is then no reading of the kill, and the only one
    // left is finishedAt, to the second.
    let finished = tl
        .instances_of(&last.container)
        .find(|i| i.instance == last.instance)
        .and_then(|i| i.finished_at);
    if let Some(f) = finished
        && (crate::util::ts_add(last.time, period) <= f || last.time >= crate::util::ts_add(f, SECOND))
    {
        return Ok(Hit::new(
            f,
            SECOND,
            Clock::Node,
            format!(
                "{}#{} finishedAt {} (the tick loop stopped at \"{}\" {}, a {p} loop, which disagrees with finishedAt: a stalled tick is no reading of the kill)",
                last.container,
                last.instance,
                hms(f),
                last.text,
                hms(last.time)
            ),
        )
        .because(format!(
            "{STATUS_CAUSE}; the tick loop stalled before the kill, so the kill is read from finishedAt"
        ))
        .stalled());
    }
    Ok(Hit::new(
        last.time,
        period,
        Clock::Node,
        format!(
            "last tick \"{}\" {} {}#{} of a {p} loop",
            last.text,
            hms(last.time),
            last.container,
            last.instance
        ),
    )
    .because(format!("a {p} tick loop stops within one tick after its last line"))
    .log(&last.container, last.instance))
}

/// The chosen occurrence of an event, counted over repeated items.
fn event_mark(e: &EventMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    let matches = event_items(e, tl)?;
    // Items stand for `repeats` occurrences each: pick by counting, never expanding.
    let total = crate::observe::timeline::occurrences(&matches);
    let n = match e.occurrence {
        Occurrence::First => 1,
        Occurrence::Last => total,
        Occurrence::Nth(n) => u64::from(n),
    };
    let (o, at) = crate::observe::timeline::nth_occurrence(&matches, n).ok_or_else(|| Unresolved::NoEvent {
        occurrence: e.occurrence,
        reason: e.reason.to_string(),
        seen: total,
    })?;
    Ok(event_hit(o, at))
}

/// The first pod version in a phase.
fn phase_mark(p: &PodPhase, tl: &Timeline) -> Result<Hit, Unresolved> {
    tl.snapshots
        .iter()
        .find(|s| s.phase.as_deref() == Some(p.as_str()))
        .map(|s| {
            Hit::new(
                s.received,
                ZERO,
                Clock::Harness,
                format!("phase {p} seen {}", hms(s.received)),
            )
            .pod_watch()
        })
        .ok_or_else(|| Unresolved::PhaseNever { phase: p.to_string() })
}

/// The chosen turn of a pod condition to a status (and reason and message).
fn condition_mark(c: &ConditionMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    let want = format!("{:?}", c.status);
    let msg = c.message.as_ref().map(|m| compile(m, tl)).transpose()?;
    // A hit is a snapshot where the condition matches (status, and reason and message
    // when given) and the previous observed value of the condition did not.
    let mut prev: Option<bool> = None;
    let mut hits = vec![];
    for s in &tl.snapshots {
        let Some(cond) = s.condition(&c.r#type) else { continue };
        let now = cond.status == want
            && c.reason
                .as_ref()
                .is_none_or(|r| cond.reason.as_deref() == Some(r.as_str()))
            && msg
                .as_ref()
                .is_none_or(|m| m.is_match(cond.message.as_deref().unwrap_or_default()));
        if now && prev != Some(true) {
            hits.push(s.received);
        }
        prev = Some(now);
    }
    let mut label = format!("{}={}", c.r#type, want);
    if let Some(r) = &c.reason {
        label.push_str(&format!(" ({r})"));
    }
    if let Some(m) = &c.message {
        label.push_str(&format!(" message {m}"));
    }
    let t = pick(c.occurrence, &hits).ok_or_else(|| Unresolved::ConditionNever {
        label: label.clone(),
        seen: hits.len(),
    })?;
    Ok(Hit::new(t, ZERO, Clock::Harness, format!("{label} seen {}", hms(t))).pod_watch())
}

/// The chosen turn of a container's `ready` or `started` flag (`which`) to a value.
fn flag_turn(f: &FlagMark, which: Flag, tl: &Timeline) -> Result<Hit, Unresolved> {
    let mut prev: Option<bool> = None;
    let mut hits = vec![];
    for s in &tl.snapshots {
        let Some(c) = s.container(&f.container) else { continue };
        // `started` is absent on old servers and before the kubelet reports it.
        let Some(v) = (match which {
            Flag::Ready => Some(c.ready),
            Flag::Started => c.started,
        }) else {
            continue;
        };
        if v == f.value && prev != Some(v) {
            hits.push(s.received);
        }
        prev = Some(v);
    }
    let t = pick(f.occurrence, &hits).ok_or_else(|| Unresolved::NoFlagTurn {
        occurrence: f.occurrence,
        container: f.container.to_string(),
        which,
        value: f.value,
        seen: hits.len(),
    })?;
    Ok(Hit::new(
        t,
        ZERO,
        Clock::Harness,
        format!("{} {which}={} seen {}", f.container, f.value, hms(t)),
    )
    .pod_watch())
}

/// The chosen time the containers' reported resources turn to match a resize.
fn resized(r: &ResizedMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    // Each time the snapshots turn to match is one occurrence: a rollback to values
    // seen before the resize matches a second time.
    let mut prev = false;
    let mut hits = vec![];
    let mut last_miss = String::new();
    for s in &tl.snapshots {
        let now = match resize_mismatch(r, s) {
            None => true,
            Some(why) => {
                last_miss = why;
                false
            }
        };
        if now && !prev {
            hits.push(s.received);
        }
        prev = now;
    }
    let t = pick(r.occurrence, &hits).ok_or(Unresolved::NotResized {
        occurrence: r.occurrence,
        seen: hits.len(),
        last_miss,
    })?;
    let names: Vec<&str> = r.containers.keys().map(String::as_str).collect();
    Ok(Hit::new(
        t,
        ZERO,
        Clock::Harness,
        format!("{} reported resized {}", names.join(", "), hms(t)),
    )
    .pod_watch())
}

/// The chosen time the STATUS column turns to a text.
fn status_mark(st: &StatusMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    // Each time the column changes to the text is one occurrence.
    let hits: Vec<Timestamp> = super::status::status_sequence(tl)
        .into_iter()
        .filter(|(t, _)| *t == st.is)
        .map(|(_, s)| s.received)
        .collect();
    let t = pick(st.occurrence, &hits).ok_or_else(|| Unresolved::StatusNever {
        status: st.is.to_string(),
        seen: hits.len(),
    })?;
    Ok(Hit::new(t, ZERO, Clock::Harness, format!("STATUS {} seen {}", st.is, hms(t))).pod_watch())
}

/// The first pod version whose observedGeneration reached the mark's.
fn observed_generation(g: &i64, tl: &Timeline) -> Result<Hit, Unresolved> {
    // Only the kubelet writes it, and never above the pod's generation: the first
    // snapshot at or above `g` is when its sync of that spec was seen.
    let latest = tl.snapshots.iter().rev().find_map(|s| s.observed_generation);
    let s = tl
        .snapshots
        .iter()
        .find(|s| s.observed_generation.is_some_and(|o| o >= *g))
        .ok_or(match latest {
            Some(latest) => Unresolved::GenerationBehind { want: *g, latest },
            None => Unresolved::NoGeneration { want: *g },
        })?;
    let seen = s.observed_generation.unwrap_or_default();
    Ok(Hit::new(
        s.received,
        ZERO,
        Clock::Harness,
        format!("observedGeneration {seen} seen {}", hms(s.received)),
    )
    .pod_watch())
}

/// The pod's DELETED watch event.
fn pod_gone(tl: &Timeline) -> Result<Hit, Unresolved> {
    tl.deleted
        .map(|t| Hit::new(t, ZERO, Clock::Harness, format!("DELETED received {}", hms(t))).pod_watch())
        .ok_or(Unresolved::NotDeleted)
}

/// One of our own actions: sent, late by its round trip.
fn action_mark(a: &ActionMark, tl: &Timeline) -> Result<Hit, Unresolved> {
    let times: Vec<_> = tl
        .actions
        .iter()
        .filter(|x| x.kind == a.action)
        .map(|x| x.sent)
        .collect();
    let t = pick(a.occurrence, &times).ok_or(Unresolved::NoAction {
        occurrence: a.occurrence,
        action: a.action,
    })?;
    // The server acted between our sending and its answer.
    let done = tl
        .actions
        .iter()
        .find(|x| x.kind == a.action && x.sent == t)
        .and_then(|x| x.done)
        .filter(|d| *d >= t);
    let name = match a.action {
        ActionKind::Apply => "apply",
        ActionKind::Delete => "DELETE",
        ActionKind::Patch => "patch",
        ActionKind::ApplyObject => "object apply",
        ActionKind::Ephemeral => "ephemeral container",
        ActionKind::Exec => "exec",
        ActionKind::UpdateObject => "object update",
        ActionKind::DeleteObject => "object delete",
        ActionKind::Resize => "resize",
        ActionKind::Update => "update",
    };
    let mut hit = Hit::new(t, ZERO, Clock::Harness, format!("our {name} sent {}", hms(t)));
    hit.stream = Stream::Action;
    hit.reaction = WATCH_DELIVERY;
    if let Some(d) = done {
        hit.late = d.duration_since(t);
        hit.stream_cause = Some(format!(
            "the server applied our {name} within its {} round trip",
            crate::util::fmt_secs(hit.late.as_secs_f64())
        ));
    }
    Ok(hit)
}

fn pick(o: Occurrence, items: &[Timestamp]) -> Option<Timestamp> {
    o.pick(items)
}

/// The mark with `instance: each` replaced by instance `n` (for a gap's `forEachInstance`).
pub(crate) fn for_instance(spec: &MarkSpec, n: u32) -> MarkSpec {
    let mut spec = spec.clone();
    let fix = |i: &mut InstanceSel| {
        if *i == InstanceSel::Each {
            *i = InstanceSel::Nth(n);
        }
    };
    match &mut spec {
        MarkSpec::ContainerStarted(c)
        | MarkSpec::ContainerTerminated(c)
        | MarkSpec::FirstLogLine(c)
        | MarkSpec::LastLogLine(c) => fix(&mut c.instance),
        MarkSpec::ContainerSeen(c) => fix(&mut c.instance),
        MarkSpec::Log(l) => fix(&mut l.instance),
        _ => {}
    }
    spec
}

/// Every occurrence of a mark, in time order: a mark with an `occurrence` yields each one, a
/// mark on `any` instance each instance's. `never` needs them all (the first occurrence may lie
/// outside the window while a later one lies inside).
pub(crate) fn resolve_all(spec: &MarkSpec, tl: &Timeline) -> Vec<Hit> {
    // Bounded: a timeline holds far fewer occurrences of anything than this.
    const MAX: u32 = 100_000;
    let with_occurrence = |set: &dyn Fn(&mut MarkSpec, Occurrence)| -> Vec<Hit> {
        let mut out = vec![];
        for n in 1..MAX {
            let mut s = spec.clone();
            set(&mut s, Occurrence::Nth(n));
            match resolve(&s, tl) {
                Ok(h) => out.push(h),
                Err(_) => break,
            }
        }
        out
    };
    let mut hits = match spec {
        // In one pass (resolving each occurrence on its own re-scanned every line: quadratic,
        // minutes for a `never` on a chatty container), with what `resolve` would add: a gap
        // of the log that starts before the line makes it uncertain.
        MarkSpec::Log(l) => match log_matches(l, tl) {
            Ok((lines, _)) => {
                let gaps = if tl.gaps.is_empty() {
                    vec![]
                } else {
                    hiding_gaps(spec, tl, None)
                };
                lines
                    .into_iter()
                    .map(|line| {
                        let mut hit = log_hit(line);
                        hit.uncertain = gaps.iter().find(|g| g.starts_before(hit.at)).map(|g| g.describe());
                        hit
                    })
                    .collect()
            }
            Err(_) => vec![],
        },
        // One hit per item: the repetitions an item stands for were all received at once, so
        // more hits would only repeat its time (and a count of 2^31 must not make 2^31 hits).
        MarkSpec::Event(e) => match event_items(e, tl) {
            Ok(items) => items
                .into_iter()
                .map(|o| {
                    let mut hit = event_hit(o, o.count);
                    // As `resolve` does for an occurrence other than `last`.
                    if !tl.gaps.is_empty() {
                        hit.uncertain = hiding_gaps(spec, tl, Some(hit.at)).first().map(|g| g.describe());
                    }
                    hit
                })
                .collect(),
            Err(_) => vec![],
        },
        MarkSpec::Condition(_) => with_occurrence(&|s, o| {
            if let MarkSpec::Condition(c) = s {
                c.occurrence = o
            }
        }),
        MarkSpec::Action(_) => with_occurrence(&|s, o| {
            if let MarkSpec::Action(a) = s {
                a.occurrence = o
            }
        }),
        MarkSpec::Status(_) => with_occurrence(&|s, o| {
            if let MarkSpec::Status(st) = s {
                st.occurrence = o
            }
        }),
        MarkSpec::Resized(_) => with_occurrence(&|s, o| {
            if let MarkSpec::Resized(r) = s {
                r.occurrence = o
            }
        }),
        MarkSpec::Ready(_) | MarkSpec::Started(_) => with_occurrence(&|s, o| {
            if let MarkSpec::Ready(f) | MarkSpec::Started(f) = s {
                f.occurrence = o
            }
        }),
        MarkSpec::ContainerStarted(c)
        | MarkSpec::ContainerTerminated(c)
        | MarkSpec::FirstLogLine(c)
        | MarkSpec::LastLogLine(c)
            if c.instance == InstanceSel::Any =>
        {
            let mut known: Vec<u32> = tl.instances_of(&c.container).map(|i| i.instance).collect();
            known.extend(tl.logs_of(&c.container, None).map(|l| l.instance));
            known.sort_unstable();
            known.dedup();
            known
                .into_iter()
                .filter_map(|n| {
                    let mut s = spec.clone();
                    if let MarkSpec::ContainerStarted(c)
                    | MarkSpec::ContainerTerminated(c)
                    | MarkSpec::FirstLogLine(c)
                    | MarkSpec::LastLogLine(c) = &mut s
                    {
                        c.instance = InstanceSel::Nth(n);
                    }
                    resolve(&s, tl).ok()
                })
                .collect()
        }
        _ => resolve(spec, tl).into_iter().collect(),
    };
    hits.sort_by_key(|h| h.at);
    hits
}

#[cfg(test)]
mod active_deadline_tests {
    use super::*;
    use crate::observe::Snapshot;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    /// A pod version received at `s` with its startTime and deadline.
    fn snap(s: i64, start: Option<i64>, deadline: Option<i64>) -> Snapshot {
        serde_json::from_value(serde_json::json!({
            "received": at(s),
            "watch": "MODIFIED",
            "startTime": start.map(at),
            "activeDeadlineSeconds": deadline,
        }))
        .unwrap()
    }

    fn resolve_in(snaps: Vec<Snapshot>) -> Result<Hit, Unresolved> {
        let tl = Timeline {
            snapshots: snaps,
            ..Timeline::default()
        };
        resolve_raw(&MarkSpec::ActiveDeadline, &tl)
    }

    #[test]
    fn a_deadline_set_in_time_runs_out_at_start_plus_deadline_on_the_nodes_clock() {
        let h = resolve_in(vec![snap(0, Some(0), None), snap(1, Some(0), Some(5))]).unwrap();
        assert_eq!((h.at, h.clock, h.precision), (at(5), Clock::Node, SECOND));
    }

    #[test]
    fn a_deadline_already_past_when_set_runs_out_when_it_is_seen() {
        let h = resolve_in(vec![snap(0, Some(0), None), snap(8, Some(0), Some(5))]).unwrap();
        assert_eq!((h.at, h.clock, h.precision), (at(8), Clock::Harness, ZERO));
        assert!(h.what.contains("already past"), "{}", h.what);
    }

    #[test]
    fn no_deadline_or_no_start_is_no_mark() {
        assert!(resolve_in(vec![snap(0, Some(0), None)]).is_err());
        assert!(resolve_in(vec![snap(0, None, Some(5))]).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::observe::{ActionKind, EvidenceSource};

    fn spec(yaml: &str) -> MarkSpec {
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}\n{e}"))
    }

    const STARTED: &str = "{containerStarted: {container: main, instance: 0}}";
    const FINISHED: &str = "{containerTerminated: {container: main, instance: 0}}";

    #[test]
    fn a_first_log_line_within_the_second_narrows_a_start() {
        let mut tl = timeline(vec![]);
        tl.instances.push(instance("main", 0, Some(0), Some((5, 0))));
        let h = resolve(&spec(STARTED), &tl).unwrap();
        assert_eq!((h.at, h.precision, h.clock), (at(0), SECOND, Clock::Node));
        assert_eq!(h.cause.as_deref(), Some(STATUS_CAUSE));
        tl.logs.push(line("main", 0, 300, "hello"));
        let h = resolve(&spec(STARTED), &tl).unwrap();
        assert_eq!((h.at, h.precision), (at(0), SignedDuration::from_millis(300)));
        assert!(h.what.ends_with("≤ first log line"), "{}", h.what);
    }

    #[test]
    fn a_last_log_line_within_the_second_raises_an_end() {
        let mut tl = timeline(vec![]);
        tl.instances.push(instance("main", 0, Some(0), Some((5, 0))));
        tl.logs.push(line("main", 0, 5400, "bye"));
        let h = resolve(&spec(FINISHED), &tl).unwrap();
        assert_eq!((h.at, h.precision), (at_ms(5400), SignedDuration::from_millis(600)));
        assert!(h.what.ends_with("≥ last log line"), "{}", h.what);
        tl.instances[0].finished_at = None;
        let why = resolve(&spec(FINISHED), &tl).unwrap_err();
        assert_eq!(why.to_string(), "main#0 has not terminated");
    }

    #[test]
    fn a_first_sighting_right_after_a_pod_watch_gap_is_uncertain() {
        let mut tl = timeline(in_phases(&["Pending", "Pending", "Pending", "Running"]));
        let running = spec("{phase: Running}");
        let h = resolve(&running, &tl).unwrap();
        assert_eq!((h.at, h.stream.clone()), (at(3), Stream::PodWatch));
        assert!(h.uncertain.is_none());
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(2), Some(3)));
        let h = resolve(&running, &tl).unwrap();
        assert!(
            h.uncertain.as_deref().is_some_and(|g| g.starts_with("pod watch down")),
            "{h:?}"
        );
        assert_eq!(h.uncertain_span, Some((Some(at(2)), Some(at(3)))));
        // Our own actions are never hidden by a watch's gap.
        assert!(hiding_gaps(&spec("{action: {action: delete}}"), &tl, None).is_empty());
        assert_eq!(hiding_gaps(&running, &tl, None).len(), 1);
    }

    #[test]
    fn an_action_is_late_by_its_round_trip() {
        let mut tl = timeline(vec![]);
        let mut delete = action(ActionKind::Delete, 1000);
        delete.done = Some(at_ms(1250));
        tl.actions.push(delete);
        let h = resolve(&spec("{action: {action: delete}}"), &tl).unwrap();
        assert_eq!(
            (h.at, h.late, h.stream.clone()),
            (at(1), SignedDuration::from_millis(250), Stream::Action)
        );
        assert_eq!(h.reaction, WATCH_DELIVERY);
        let why = resolve(&spec("{action: {action: apply}}"), &tl).unwrap_err();
        assert!(why.to_string().starts_with("no first"), "{why}");
    }

    #[test]
    fn a_log_mark_picks_its_occurrence() {
        let mut tl = timeline(vec![]);
        tl.logs = vec![
            line("main", 0, 100, "tick"),
            line("main", 0, 200, "tock"),
            line("main", 0, 300, "tick"),
        ];
        let second = spec("{log: {container: main, regex: tick, occurrence: 2}}");
        assert_eq!(resolve(&second, &tl).unwrap().at, at_ms(300));
        let last = spec("{log: {container: main, regex: tick, occurrence: last}}");
        assert_eq!(resolve(&last, &tl).unwrap().at, at_ms(300));
        assert!(resolve(&spec("{log: {container: main, regex: tick, occurrence: 3}}"), &tl).is_err());
    }
}
