//! `update` expectations on the recorded record of an update step, and `observedGeneration`
//! expectations on the generation the kubelet reported over a window.

use super::*;

/// An `update` expectation: the step's updates were all accepted, and the generations the API
/// answered are the ones expected. An update that stopped early decides nothing it did not
/// reach: its record names why.
pub(super) fn update(x: &UpdateExpect, tl: &Timeline) -> J {
    use crate::observe::ActionKind;
    let name = x.name.as_str();
    let Some(r) = tl
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::Update)
        .filter_map(|a| a.update.as_ref())
        .find(|r| r.name == name)
    else {
        let j = fail(format!("update `{name}`: no record (the step did not run)"));
        return if tl.complete { j } else { undecided(j.evidence) };
    };
    let shown = |g: Option<i64>| g.map_or("none".to_string(), |g| g.to_string());
    let got = format!(
        "update `{name}`: {} of {} accepted ({} conflict(s) read again), generation read {}, answered {}",
        r.accepted,
        r.times,
        r.conflicts,
        shown(r.generation_read),
        shown(r.generation)
    );
    let mut problems = vec![];
    if let Some(want) = x.generation_read
        && r.generation_read.is_some()
        && r.generation_read != Some(want)
    {
        problems.push(format!("generation read {want} expected"));
    }
    if let Some(e) = &r.error {
        // What was read is known; what the unfinished updates would have answered is not.
        return if problems.is_empty() {
            undecided(format!("{got}; undecided: the step stopped early ({e})"))
        } else {
            fail(format!("{got}; {}", problems.join(", ")))
        };
    }
    if let Some(want) = x.generation
        && r.generation != Some(want)
    {
        problems.push(format!("generation {want} expected"));
    }
    if x.generation_read.is_some() && r.generation_read.is_none() {
        problems.push("no generation read".into());
    }
    if problems.is_empty() {
        pass(got)
    } else {
        fail(format!("{got}; {}", problems.join(", ")))
    }
}

/// An `observedGeneration` expectation: every pod state from the one current at `after` until
/// `before` (or the end) reports exactly `is`. A pod-watch gap inside the window may hide a
/// state: a difference seen still fails, but no difference passes only without one.
pub(super) fn observed_generation(case: &Case, x: &ObservedGenerationExpect, tl: &Timeline) -> J {
    let label = format!("observedGeneration {}", x.is);
    let from = match mark(case, &x.after, tl) {
        Ok(h) => h.at,
        Err(why) => {
            let j = fail(format!("{label} after {}: {why}", x.after.label()));
            return if tl.complete { j } else { undecided(j.evidence) };
        }
    };
    let to = match &x.before {
        None => None,
        Some(b) => match mark(case, b, tl) {
            Ok(h) => Some(h.at),
            Err(why) => {
                let j = fail(format!("{label} before {}: {why}", b.label()));
                return if tl.complete { j } else { undecided(j.evidence) };
            }
        },
    };
    let window = match &x.before {
        Some(b) => format!("from {} to {}", x.after.label(), b.label()),
        None => format!("from {} on", x.after.label()),
    };
    // The state current at `after`, then every later one in the window.
    let start = tl.snapshots.iter().rposition(|s| s.received <= from).unwrap_or(0);
    let states: Vec<_> = tl.snapshots[start..]
        .iter()
        .filter(|s| to.is_none_or(|t| s.received < t))
        .collect();
    if states.is_empty() {
        let j = fail(format!("{label} {window}: no pod state observed"));
        return if tl.complete { j } else { undecided(j.evidence) };
    }
    let shown = |g: Option<i64>| g.map_or("none".to_string(), |g| g.to_string());
    if let Some(bad) = states.iter().find(|s| s.observed_generation != Some(x.is)) {
        return fail(format!(
            "{label} {window}: {} seen {}",
            shown(bad.observed_generation),
            hms(bad.received)
        ));
    }
    let evidence = format!(
        "{label} {window}: {} state(s), each {} (the first seen {})",
        states.len(),
        x.is,
        hms(states[0].received)
    );
    let hidden = tl
        .pod_gaps()
        .find(|g| g.to.is_none_or(|t| t > from) && g.from.is_none_or(|f| to.is_none_or(|t| f < t)))
        .map(|g| g.describe());
    if !tl.complete && to.is_none() {
        return undecided(format!("{evidence}; the observation goes on"));
    }
    in_gap(pass(evidence), hidden)
}

fn hms(t: Timestamp) -> String {
    crate::util::hms(t)
}
