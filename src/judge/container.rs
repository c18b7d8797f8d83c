//! `container` expectations: a container's states, waiting reasons, restartCount and exit, with the states
//! the API may skip (and why) and what a pod-watch gap could hide.

use super::*;
use crate::observe::{ContainerStatus, Instance};

/// `container` with gaps: final state and restartCount need the pod watch up at the end; a
/// waiting reason not seen may have been shown during a pod-watch gap. A restartCount already
/// above its bound, or a container seen to start when it should never, stays failed.
pub(super) fn container_gaps(c: &ContainerExpect, j: J, tl: &Timeline) -> J {
    if j.outcome == Outcome::Undecided || tl.gaps.is_empty() {
        return j;
    }
    if j.outcome == Outcome::Fail {
        let seen_starting = c.never_started && j.has(Fact::StartedAgainstExpectation);
        let over = c.restart_count.as_ref().is_some_and(|rc| {
            let got = tl
                .snapshots
                .iter()
                .rev()
                .find_map(|s| s.container(&c.name))
                .map(|s| u64::from(s.restart_count));
            got.is_some_and(|g| rc.exactly.is_some_and(|e| g > e) || rc.at_most.is_some_and(|m| g > m))
        });
        if seen_starting || over || j.has(Fact::WaitingReasonOutside) {
            return j;
        }
    }
    // Every waiting state must have had an allowed reason: a pod-watch gap may hide one that had not.
    if j.outcome == Outcome::Pass && !c.waiting_reasons_only.is_empty() {
        return in_gap(j, tl.pod_gaps().next().map(|g| g.describe()));
    }
    if let Some(g) = stale_end(tl) {
        return in_gap(j, Some(g));
    }
    if j.outcome == Outcome::Fail && j.has(Fact::WaitingReasonMissing) {
        return in_gap(j, tl.pod_gaps().next().map(|g| g.describe()));
    }
    j
}

/// Evidence for states the API skipped: which, why that is allowed, and the proof.
pub(super) fn skipped_note(skips: &[(String, String)]) -> String {
    skips
        .iter()
        .map(|(state, proof)| {
            format!("{state} not shown by the API (the kubelet's status manager batches its writes), but {proof}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

pub(super) fn container(c: &ContainerExpect, tl: &Timeline) -> J {
    let name = c.name.as_str();
    let last = tl.snapshots.iter().rev().find_map(|s| s.container(name));
    let instances: Vec<_> = tl.instances_of(name).collect();
    let final_ = tl.settled();
    if c.never_started {
        return never_started(name, instances.len(), tl.logs_of(name, None).count(), final_);
    }
    let Some(st) = last else {
        return if final_ {
            fail(format!("no status observed for `{name}`"))
        } else {
            undecided(format!("no status for `{name}` yet"))
        };
    };
    let sel = Selected::of(c, st, &instances);
    let mut f = Findings::default();
    check_final_state(c, st, &sel, &mut f);
    check_message(c, st, &instances, tl, &mut f);
    check_flags(c, st, &mut f);
    check_waiting_reasons(c, tl, &mut f);
    if let Some(j) = unknown_instance(c, tl, &instances, &sel, &f) {
        return j;
    }
    let j = if f.problems.is_empty() {
        if final_ {
            pass(format!("{}: {}", sel.label, f.facts.join(", ")))
        } else {
            undecided(format!(
                "{}: {} so far (pod not settled)",
                sel.label,
                f.facts.join(", ")
            ))
        }
    } else if final_ || f.early_fail {
        fail(format!("{}: {}", sel.label, f.problems.join("; ")))
    } else {
        undecided(format!("{}: {} so far", sel.label, f.problems.join("; ")))
    };
    let j = if f.outside_seen {
        j.with(Fact::WaitingReasonOutside)
    } else {
        j
    };
    if f.reasons_missing {
        j.with(Fact::WaitingReasonMissing)
    } else {
        j
    }
}

/// `neverStarted`: no instance and no log line, decided once the pod has settled.
fn never_started(name: &str, instances: usize, logged: usize, final_: bool) -> J {
    if instances == 0 && logged == 0 {
        return if final_ {
            pass(format!("`{name}` never started"))
        } else {
            undecided(format!("`{name}` has not started so far"))
        };
    }
    fail(format!(
        "`{name}` was expected never to start, but {instances} instance(s) and {logged} log line(s) were observed"
    ))
    .with(Fact::StartedAgainstExpectation)
}

/// What the checks of one `container` expectation found: facts for the evidence of a pass,
/// problems for that of a failure, and what makes a failure final before the pod settles.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
    facts: Vec<String>,
    /// Seen, so final: no later state can undo it (a restartCount above its bound, a waiting
    /// reason outside the allowed ones).
    early_fail: bool,
    reasons_missing: bool,
    outside_seen: bool,
}

/// The instance an expectation selects and its final state as reported.
struct Selected {
    state: String,
    reason: Option<String>,
    exit_code: Option<i32>,
    /// Which instance the exit code is of, when it is not the current state's.
    exit_of: String,
    /// `main`, or `main#2` for a numbered instance.
    label: String,
}

impl Selected {
    /// With `instance: last`, state and reason are the current state's (a waiting reason such
    /// as CrashLoopBackOff, or the terminated reason), and exitCode is the last termination's:
    /// while waiting that is lastState, i.e. the previous instance, which the evidence names.
    fn of(c: &ContainerExpect, st: &ContainerStatus, instances: &[&Instance]) -> Selected {
        let name = c.name.as_str();
        let mut exit_of = String::new();
        let (state, reason, exit_code) = match c.instance {
            // `any`/`each` are rejected by validation for a final state; read them as `last`.
            InstanceSel::Last | InstanceSel::Any | InstanceSel::Each => {
                let exit = match &st.state {
                    State::Terminated(t) => Some(t.exit_code),
                    _ => {
                        if let Some(t) = &st.last_terminated {
                            exit_of = match t.instance {
                                Some(i) => format!(" (of {name}#{i}, the last terminated instance)"),
                                None => " (of the last terminated instance)".into(),
                            };
                        }
                        st.last_terminated.as_ref().map(|t| t.exit_code)
                    }
                };
                (st.state.name().to_string(), st.state.reason().map(str::to_string), exit)
            }
            InstanceSel::Nth(n) => match instances.iter().find(|i| i.instance == n) {
                Some(i) => {
                    let state = if i.finished_at.is_some() || i.exit_code.is_some() {
                        "terminated"
                    } else {
                        "running"
                    };
                    (state.to_string(), i.reason.clone(), i.exit_code)
                }
                None => ("absent".to_string(), None, None),
            },
        };
        let label = match c.instance {
            InstanceSel::Nth(n) => format!("{name}#{n}"),
            _ => name.to_string(),
        };
        Selected {
            state,
            reason,
            exit_code,
            exit_of,
            label,
        }
    }
}

/// State, exitCode, reason and restartCount of the selected instance.
fn check_final_state(c: &ContainerExpect, st: &ContainerStatus, sel: &Selected, f: &mut Findings) {
    let exit_of = &sel.exit_of;
    if let Some(s) = c.state {
        let got = sel.state.as_str();
        f.facts.push(format!("state {got}"));
        if got != s.to_string() {
            f.problems.push(format!("state: expected {s}, observed {got}"));
        }
    }
    if let Some(code) = c.exit_code {
        let exit_code = sel.exit_code;
        f.facts.push(format!(
            "exitCode {}{exit_of}",
            exit_code.map_or("none".into(), |e| e.to_string())
        ));
        if exit_code != Some(code) {
            f.problems.push(format!(
                "exitCode: expected {code}, observed {}{exit_of}",
                exit_code.map_or("none".into(), |e| e.to_string())
            ));
        }
    }
    if let Some(r) = &c.reason {
        let got = sel.reason.clone().unwrap_or_else(|| "none".into());
        f.facts.push(format!("reason {got}"));
        if sel.reason.as_deref() != Some(r.as_str()) {
            f.problems.push(format!("reason: expected {r}, observed {got}"));
        }
    }
    if let Some(rc) = &c.restart_count {
        let got = u64::from(st.restart_count);
        f.facts.push(format!("restartCount {got}"));
        if !rc.matches(got) {
            f.problems.push(format!("restartCount: expected {rc}, observed {got}"));
            if rc.exactly.is_some_and(|e| got > e) || rc.at_most.is_some_and(|m| got > m) {
                f.early_fail = true;
            }
        }
    }
}

/// The selected instance's termination message (current state, else lastState) against
/// `message` (a pattern) and `messageEquals` (exact, after template expansion).
fn check_message(c: &ContainerExpect, st: &ContainerStatus, instances: &[&Instance], tl: &Timeline, f: &mut Findings) {
    let selected_message = || match c.instance {
        InstanceSel::Nth(n) => instances
            .iter()
            .find(|i| i.instance == n)
            .and_then(|i| i.message.clone()),
        _ => match &st.state {
            State::Terminated(t) => t.message.clone(),
            _ => st.last_terminated.as_ref().and_then(|t| t.message.clone()),
        },
    };
    if let Some(m) = &c.message {
        let msg = selected_message();
        match compile(m, tl) {
            Ok(re) => {
                let got = msg.unwrap_or_default();
                f.facts.push(format!("message {got:?}"));
                if !re.is_match(&got) {
                    f.problems
                        .push(format!("termination message: expected {m}, observed {got:?}"));
                }
            }
            Err(why) => f.problems.push(format!("termination message: {why}")),
        }
    }
    if let Some(want) = &c.message_equals {
        let msg = selected_message();
        match want.expand(&|n| marks::template_value(tl, n)) {
            Ok(want) => {
                let got = msg.unwrap_or_default();
                f.facts.push(format!("message {got:?}"));
                if got != want {
                    f.problems.push(format!(
                        "termination message: expected exactly {want:?}, observed {got:?}"
                    ));
                }
            }
            Err(why) => f.problems.push(format!("termination message: {why}")),
        }
    }
}

/// The status flags as last reported (for the current instance).
fn check_flags(c: &ContainerExpect, st: &ContainerStatus, f: &mut Findings) {
    if let Some(want) = c.ready {
        f.facts.push(format!("ready {}", st.ready));
        if st.ready != want {
            f.problems
                .push(format!("ready: expected {want}, observed {}", st.ready));
        }
    }
    if let Some(want) = c.started {
        let got = st.started.map_or("absent".to_string(), |b| b.to_string());
        f.facts.push(format!("started {got}"));
        if st.started != Some(want) {
            f.problems.push(format!("started: expected {want}, observed {got}"));
        }
    }
}

/// `waitingReasonsSeen` (each seen at some point) and `waitingReasonsOnly` (no other seen).
fn check_waiting_reasons(c: &ContainerExpect, tl: &Timeline, f: &mut Findings) {
    let name = c.name.as_str();
    if !c.waiting_reasons_seen.is_empty() {
        let seen: std::collections::BTreeSet<String> = tl
            .snapshots
            .iter()
            .filter_map(|s| s.container(name))
            .filter_map(|c| match &c.state {
                State::Waiting { reason: Some(r), .. } => Some(r.clone()),
                _ => None,
            })
            .collect();
        let missing: Vec<_> = c
            .waiting_reasons_seen
            .iter()
            .filter(|r| !seen.contains(*r))
            .cloned()
            .collect();
        f.facts.push(format!(
            "waiting reasons seen [{}]",
            seen.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
        if !missing.is_empty() {
            f.reasons_missing = true;
            f.problems.push(format!(
                "waiting reasons: expected to see [{}], observed [{}]",
                missing.join(", "),
                seen.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if !c.waiting_reasons_only.is_empty() {
        let outside: std::collections::BTreeSet<String> = tl
            .snapshots
            .iter()
            .filter_map(|s| s.container(name))
            .filter_map(|c| match &c.state {
                State::Waiting { reason, .. } => Some(reason.clone().unwrap_or_else(|| "none".into())),
                _ => None,
            })
            .filter(|r| !c.waiting_reasons_only.contains(r))
            .collect();
        f.facts
            .push(format!("only waiting reasons [{}]", c.waiting_reasons_only.join(", ")));
        if !outside.is_empty() {
            // Seen, so final: no later state can undo it.
            f.outside_seen = true;
            f.early_fail = true;
            f.problems.push(format!(
                "waiting reasons: expected only [{}], observed also [{}]",
                c.waiting_reasons_only.join(", "),
                outside.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// A numbered instance whose problems the evidence cannot decide: undecided, naming why.
fn unknown_instance(
    c: &ContainerExpect,
    tl: &Timeline,
    instances: &[&Instance],
    sel: &Selected,
    f: &Findings,
) -> Option<J> {
    let InstanceSel::Nth(n) = c.instance else {
        return None;
    };
    if f.problems.is_empty() {
        return None;
    }
    let inst_label = &sel.label;
    // An instance the evidence says ran but was never seen (its status and log lost to a gap):
    // what it did is unknown, not absent.
    if sel.state == "absent"
        && let Some(g) = tl.instance_log_gap(c.name.as_str(), n)
    {
        return Some(undecided(format!(
            "{inst_label}: {}; undecided: {}",
            f.problems.join("; "),
            g.describe()
        )));
    }
    // An instance that ended (a later one started) but whose end the kubelet never reported:
    // it wrote the next instance's running state with an empty lastState (the status was built
    // before the runtime's record of the exit reached the kubelet's cache), and the instance
    // after that replaced lastState. How it ended is unknown, not contradicted.
    if !f.early_fail
        && instances
            .iter()
            .any(|i| i.instance == n && i.finished_at.is_none() && i.exit_code.is_none())
        && instances.iter().any(|i| i.instance > n)
    {
        return Some(undecided(format!(
            "{inst_label}: {}; undecided: the kubelet never reported how {inst_label} ended (it reported the next instance with an empty lastState)",
            f.problems.join("; ")
        )));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use serde_json::json;

    /// Judges the case's first expectation, a `container`, with its gaps.
    fn judged(expect: &str, tl: &Timeline) -> J {
        let c = case(&format!("expect:\n  - container: {expect}\n"));
        let Expectation::Container(x) = &*c.expect[0] else {
            panic!("not a container expectation: {expect}")
        };
        container_gaps(x, container(x, tl), tl)
    }

    /// The pod in `phase` at 0 s with `main` in `state` after `restarts` restarts.
    fn pod(phase: &str, state: serde_json::Value, restarts: u32) -> Timeline {
        timeline(vec![snap(
            0,
            json!({"phase": phase, "containers": [container_status("main", state, restarts, false)]}),
        )])
    }

    #[test]
    fn a_final_state_and_exit_code_pass_or_fail_once_the_pod_has_settled() {
        let want = "{name: main, state: terminated, exitCode: 0}";
        let ended = |code| pod("Succeeded", json!({"state": "terminated", "exitCode": code}), 0);
        assert_judged(
            &judged(want, &ended(0)),
            Outcome::Pass,
            "main: state terminated, exitCode 0",
        );
        assert_judged(
            &judged(want, &ended(1)),
            Outcome::Fail,
            "exitCode: expected 0, observed 1",
        );
    }

    #[test]
    fn a_running_pod_leaves_a_final_state_undecided() {
        let mut tl = pod("Running", json!({"state": "running"}), 0);
        tl.complete = false;
        assert_judged(
            &judged("{name: main, state: terminated}", &tl),
            Outcome::Undecided,
            "state: expected terminated, observed running so far",
        );
        let j = judged("{name: other, state: running}", &tl);
        assert_judged(&j, Outcome::Undecided, "no status for `other` yet");
    }

    #[test]
    fn a_restart_count_above_its_bound_fails_before_the_pod_settles() {
        let mut tl = pod("Running", json!({"state": "running"}), 2);
        tl.complete = false;
        assert_judged(
            &judged("{name: main, restartCount: {atMost: 1}}", &tl),
            Outcome::Fail,
            "restartCount: expected",
        );
        // Below its lower bound it may still grow.
        assert_judged(
            &judged("{name: main, restartCount: {atLeast: 3}}", &tl),
            Outcome::Undecided,
            "observed 2 so far",
        );
        // A pod-watch gap cannot undo restarts already counted.
        tl.complete = true;
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(1), None));
        assert_eq!(judged("{name: main, restartCount: 0}", &tl).outcome, Outcome::Fail);
    }

    #[test]
    fn never_started_passes_without_an_instance_or_a_line_and_fails_with_either() {
        let mut tl = pod("Failed", json!({"state": "waiting", "reason": "ErrImagePull"}), 0);
        assert_judged(
            &judged("{name: main, neverStarted: true}", &tl),
            Outcome::Pass,
            "`main` never started",
        );
        tl.logs.push(line("main", 0, 0, "hello"));
        let j = judged("{name: main, neverStarted: true}", &tl);
        assert_judged(&j, Outcome::Fail, "0 instance(s) and 1 log line(s)");
        assert!(j.has(Fact::StartedAgainstExpectation));
    }

    #[test]
    fn a_waiting_reason_outside_the_allowed_fails_at_once_and_a_gap_can_hide_one() {
        let waiting = |reason: &str| json!({"state": "waiting", "reason": reason});
        let mut tl = timeline(vec![
            snap(
                0,
                json!({"phase": "Pending", "containers": [container_status("main", waiting("PodInitializing"), 0, false)]}),
            ),
            snap(
                1,
                json!({"phase": "Running", "containers": [container_status("main", json!({"state": "running"}), 0, true)]}),
            ),
        ]);
        let want = "{name: main, waitingReasonsOnly: [PodInitializing]}";
        assert_judged(
            &judged(want, &tl),
            Outcome::Pass,
            "only waiting reasons [PodInitializing]",
        );
        // A pod-watch gap may have hidden a waiting state with another reason.
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(0), Some(1)));
        assert_judged(&judged(want, &tl), Outcome::Undecided, "undecided: pod watch down");
        tl.gaps.clear();
        tl.complete = false;
        tl.snapshots.push(snap(
            2,
            json!({"phase": "Running", "containers": [container_status("main", waiting("CrashLoopBackOff"), 1, false)]}),
        ));
        let j = judged(want, &tl);
        assert_judged(&j, Outcome::Fail, "observed also [CrashLoopBackOff]");
        assert!(j.has(Fact::WaitingReasonOutside));
    }

    #[test]
    fn an_instance_that_ended_unreported_is_undecided() {
        // #0 was replaced by #1, but no status said how #0 ended.
        let mut tl = pod("Running", json!({"state": "running"}), 1);
        tl.instances = vec![instance("main", 0, Some(0), None), instance("main", 1, Some(5), None)];
        assert_judged(
            &judged("{name: main, instance: 0, exitCode: 1}", &tl),
            Outcome::Undecided,
            "the kubelet never reported how main#0 ended",
        );
        tl.instances[0] = instance("main", 0, Some(0), Some((4, 0)));
        assert_judged(
            &judged("{name: main, instance: 0, exitCode: 1}", &tl),
            Outcome::Fail,
            "main#0: exitCode: expected 1, observed 0",
        );
    }

    #[test]
    fn skipped_states_name_their_proof() {
        let note = skipped_note(&[("Running".into(), "`main` ran: 2 log line(s)".into())]);
        assert!(note.starts_with("Running not shown by the API"), "{note}");
        assert!(note.ends_with("but `main` ran: 2 log line(s)"), "{note}");
    }
}
