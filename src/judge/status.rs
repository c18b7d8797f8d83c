//! Judging the STATUS column (`statuses`, `statusRow`, `qosClass`): kubectl's view of the pod,
//! computed per snapshot by `observe::status::pod_row`.

use crate::observe::{Snapshot, State, Timeline};
use crate::suite::ContainerKind;
use crate::suite::model::{QosClass, StatusRowExpect, status_entry};

use super::marks::{compile, hms};
use super::sequence::{SeqMatch, Subject, match_sequence};
use super::{J, Outcome, fail, pass, undecided};

/// Distinct consecutive STATUS texts, as `kubectl get pods -w` would print them (it prints a
/// line per watch event; repeated texts are folded), each with the first snapshot showing it.
pub(crate) fn status_sequence(tl: &Timeline) -> Vec<(String, &Snapshot)> {
    let mut out: Vec<(String, &Snapshot)> = vec![];
    for (s, text) in tl.status_column() {
        if out.last().is_none_or(|(t, _)| *t != text) {
            out.push((text, s));
        }
    }
    out
}

/// Why the timeline proves the pod was in `status` although no pod watch event showed it, or
/// None. The kubelet's status manager batches updates, so a state that lasts less than a sync
/// (ContainerCreating, PodInitializing, an `Init:N/M` step, CrashLoopBackOff just before a
/// restart — recordings' fact 13) may never reach the API; other evidence (the container's own
/// log lines, its terminated instance, the kubelet's events) still shows it happened. A status
/// with no such evidence must be seen, so a wrong expectation still fails.
pub(crate) fn skip_evidence(tl: &Timeline, status: &str) -> Option<String> {
    let kind_of = |name: &str| tl.pod.containers.iter().find(|c| c.name == name).map(|c| c.kind);
    let is_init = |name: &str| matches!(kind_of(name), Some(ContainerKind::Init | ContainerKind::Sidecar));
    let is_app = |name: &str| kind_of(name) == Some(ContainerKind::Regular);
    let ran =
        |name: &str| tl.instances_of(name).any(|i| i.started_at.is_some()) || tl.logs_of(name, None).next().is_some();
    let (init, reason) = match status.strip_prefix("Init:") {
        Some(r) => (true, r),
        None => (false, status),
    };
    let in_scope = |name: &str| if init { is_init(name) } else { is_app(name) };

    if !init {
        match status {
            // Every pod is Pending before it is scheduled.
            "Pending" => return Some("every pod starts Pending".into()),
            "ContainerCreating" => {
                return tl
                    .pod
                    .containers
                    .iter()
                    .filter(|c| c.kind == ContainerKind::Regular)
                    .find(|c| tl.instances_of(&c.name).next().is_some())
                    .map(|c| format!("`{}` was created (it has an instance)", c.name));
            }
            "PodInitializing" => {
                let inits: Vec<_> = tl
                    .pod
                    .containers
                    .iter()
                    .filter(|c| c.kind == ContainerKind::Init)
                    .collect();
                let all_done = !inits.is_empty()
                    && inits
                        .iter()
                        .all(|c| tl.instances_of(&c.name).any(|i| i.exit_code == Some(0)));
                return all_done.then(|| "every init container completed (exit 0)".to_string());
            }
            "Running" => {
                return tl
                    .pod
                    .containers
                    .iter()
                    .filter(|c| c.kind == ContainerKind::Regular)
                    .find(|c| ran(&c.name))
                    .map(|c| format!("`{}` ran (startedAt or log lines)", c.name));
            }
            "Terminating" => {
                return tl
                    .actions
                    .iter()
                    .find(|a| a.kind == crate::suite::ActionKind::Delete)
                    .map(|a| format!("our DELETE was sent {}", hms(a.sent)));
            }
            _ => {}
        }
    } else if let Some((i, m)) = reason.split_once('/')
        && let (Ok(i), Ok(m)) = (i.parse::<usize>(), m.parse::<usize>())
    {
        // Init:i/M: the i-th init container (spec order) ran, and the spec has M of them.
        let inits: Vec<_> = tl
            .pod
            .containers
            .iter()
            .filter(|c| matches!(c.kind, ContainerKind::Init | ContainerKind::Sidecar))
            .collect();
        return (inits.len() == m && i < m && ran(&inits[i].name))
            .then(|| format!("init container `{}` ran", inits[i].name));
    }
    // A terminated reason: an instance ended with it.
    if let Some(i) = tl
        .instances
        .iter()
        .find(|i| in_scope(&i.container) && i.reason.as_deref() == Some(reason))
    {
        return Some(format!("{}#{} terminated {reason}", i.container, i.instance));
    }
    // CrashLoopBackOff: the kubelet's BackOff event for the container.
    if reason == "CrashLoopBackOff"
        && let Some(e) = tl.events.iter().find(|e| {
            e.reason == "BackOff"
                && e.message.starts_with("Back-off restarting failed container")
                && e.container.as_deref().is_some_and(in_scope)
        })
    {
        return Some(format!("BackOff event \"{}\" {}", e.message, hms(e.received)));
    }
    // Other waiting reasons (ErrImagePull, ImagePullBackOff, CreateContainerConfigError, ...):
    // the kubelet's `Failed` event says `Error: <reason>`.
    let wanted = format!("Error: {reason}");
    tl.events
        .iter()
        .find(|e| e.message == wanted && e.container.as_deref().is_some_and(in_scope))
        .map(|e| format!("{} event \"{}\" {}", e.reason, e.message, hms(e.received)))
}

/// How good a match is: the best of the sequences an expectation with optional entries allows.
fn rank(m: &SeqMatch) -> u8 {
    match m {
        SeqMatch::Exact => 0,
        SeqMatch::Skipped(_) => 1,
        SeqMatch::Prefix => 2,
        SeqMatch::Unproven(_) => 3,
        SeqMatch::Mismatch => 4,
    }
}

/// Every sequence `want` allows: each optional entry shown or not. Validation bounds the number
/// of optional entries (`suite::model::MAX_OPTIONAL_STATUSES`), so this stays small.
fn allowed_sequences(want: &[String]) -> Vec<Vec<String>> {
    let entries: Vec<(&str, bool)> = want.iter().map(|s| status_entry(s)).collect();
    let optional: Vec<usize> = (0..entries.len()).filter(|i| entries[*i].1).collect();
    (0u32..(1 << optional.len()))
        .map(|mask| {
            entries
                .iter()
                .enumerate()
                .filter(|(i, (_, opt))| {
                    !*opt
                        || optional
                            .iter()
                            .position(|o| o == i)
                            .is_some_and(|b| mask & (1 << b) != 0)
                })
                .map(|(_, (t, _))| t.to_string())
                .collect()
        })
        .collect()
}

pub(super) fn statuses(want: &[String], tl: &Timeline) -> J {
    let seen: Vec<String> = status_sequence(tl).into_iter().map(|(t, _)| t).collect();
    let shown = format!("expected [{}], observed [{}]", want.join(" → "), seen.join(" → "));
    let settled = tl.settled();
    // The same "what the API may skip" rules as `phases` (judge::sequence), with the STATUS
    // column's own proofs, for each sequence the optional entries allow; the best match wins.
    let best = allowed_sequences(want)
        .iter()
        .map(|w| match_sequence(Subject::Status, w, &seen, tl, settled))
        .min_by_key(rank)
        .unwrap_or(SeqMatch::Mismatch);
    match best {
        SeqMatch::Exact if settled => pass(format!("statuses {}", seen.join(" → "))),
        SeqMatch::Skipped(skips) if settled => {
            let notes: Vec<String> = skips
                .iter()
                .map(|(s, proof)| format!("{s} not shown by the API (the kubelet batches status writes), but {proof}"))
                .collect();
            pass(format!("statuses {} ({shown}; {})", seen.join(" → "), notes.join("; ")))
        }
        SeqMatch::Exact | SeqMatch::Skipped(_) | SeqMatch::Prefix => undecided(format!("statuses: {shown} so far")),
        SeqMatch::Unproven(u) if !tl.complete => undecided(format!(
            "statuses: {shown}; waiting for proof that {} was shown",
            u.join(", ")
        )),
        SeqMatch::Unproven(u) => fail(format!(
            "statuses: {shown}; {} never shown and nothing else proves the pod was in it",
            u.join(", ")
        )),
        SeqMatch::Mismatch => fail(format!("statuses: {shown}")),
    }
}

pub(super) fn status_row(r: &StatusRowExpect, tl: &Timeline) -> J {
    let shown: Vec<&Snapshot> = tl
        .status_column()
        .filter(|(_, t)| r.status.matches(t))
        .map(|(s, _)| s)
        .collect();
    if shown.is_empty() {
        let seen: Vec<String> = status_sequence(tl).into_iter().map(|(t, _)| t).collect();
        let msg = format!("STATUS {} never shown (observed [{}])", r.status, seen.join(" → "));
        return if tl.settled() { fail(msg) } else { undecided(msg) }.with(super::Fact::StatusNeverShown);
    }
    let mut facts: Vec<String> = vec![];
    for (n, s) in shown.iter().enumerate() {
        let mut problems = vec![];
        let mut check = |what: String, ok: bool, got: String| {
            if n == 0 {
                facts.push(got.clone());
            }
            if !ok {
                problems.push(format!("{what}, observed {got}"));
            }
        };
        if let Some(p) = r.phase {
            let got = s.phase.clone().unwrap_or_else(|| "none".into());
            check(format!("phase {p}"), got == p.as_str(), format!("phase {got}"));
        }
        if let Some(ready) = &r.ready {
            let got = s
                .ready_column
                .clone()
                .unwrap_or_else(|| crate::observe::pod_row(&tl.pod, s).ready);
            check(format!("READY {ready}"), got == *ready, format!("READY {got}"));
        }
        for (ty, want) in &r.conditions {
            let got = s.condition(ty).map_or("absent".to_string(), |c| c.status.clone());
            let want = format!("{want:?}");
            check(format!("{ty}={want}"), got == want, format!("{ty}={got}"));
        }
        if let Some(reason) = &r.reason {
            let got = s.reason.clone().unwrap_or_else(|| "none".into());
            check(format!("reason {reason}"), got == *reason, format!("reason {got}"));
        }
        if let Some(m) = &r.message {
            let got = s.message.clone().unwrap_or_default();
            let ok = compile(m, tl).is_ok_and(|re| re.is_match(&got));
            check(format!("message {m}"), ok, format!("message {got:?}"));
        }
        for c in &r.containers {
            let name = c.name.as_str();
            let Some(cs) = s.container(name) else {
                check(format!("`{name}` in status"), false, format!("no status for `{name}`"));
                continue;
            };
            if let Some(state) = c.state {
                let got = cs.state.name();
                check(
                    format!("{name} {state}"),
                    got == state.to_string(),
                    format!("{name} {got}"),
                );
            }
            if let Some(reason) = &c.reason {
                let got = cs.state.reason().unwrap_or("none").to_string();
                check(
                    format!("{name} reason {reason}"),
                    got == *reason,
                    format!("{name} reason {got}"),
                );
            }
            if let Some(code) = c.exit_code {
                let got = match &cs.state {
                    State::Terminated(t) => Some(t.exit_code),
                    _ => cs.last_terminated.as_ref().map(|t| t.exit_code),
                };
                let shown = got.map_or("none".to_string(), |g| g.to_string());
                check(
                    format!("{name} exitCode {code}"),
                    got == Some(code),
                    format!("{name} exitCode {shown}"),
                );
            }
            if let Some(ready) = c.ready {
                check(
                    format!("{name} ready={ready}"),
                    cs.ready == ready,
                    format!("{name} ready={}", cs.ready),
                );
            }
        }
        if !problems.is_empty() {
            return fail(format!(
                "STATUS {} at {}: expected {}",
                r.status,
                hms(s.received),
                problems.join("; expected ")
            ));
        }
    }
    let times = if shown.len() == 1 {
        format!("shown at {}", hms(shown[0].received))
    } else {
        format!(
            "shown in {} snapshots {}–{}",
            shown.len(),
            hms(shown[0].received),
            hms(shown[shown.len() - 1].received)
        )
    };
    let msg = format!("STATUS {} {times}: {}", r.status, facts.join(", "));
    // A later snapshot showing it could still contradict the row.
    if tl.settled() {
        pass(msg)
    } else {
        undecided(format!("{msg} so far"))
    }
}

pub(super) fn qos_class(q: QosClass, tl: &Timeline) -> J {
    let classes: Vec<&str> = tl.snapshots.iter().filter_map(|s| s.qos_class.as_deref()).collect();
    match classes.first() {
        None if tl.settled() => fail(format!("qosClass: expected {}, never set", q.as_str())),
        None => undecided(format!("qosClass: expected {}, not set yet", q.as_str())),
        Some(first) => {
            // The class is fixed at admission; a change would itself be a defect.
            if let Some(other) = classes.iter().find(|c| *c != first) {
                return fail(format!("qosClass changed from {first} to {other}"));
            }
            if *first == q.as_str() {
                pass(format!("qosClass {first}"))
            } else {
                fail(format!("qosClass: expected {}, observed {first}", q.as_str()))
            }
        }
    }
}

/// `statuses` with pod-watch gaps: any STATUS can hide in a gap. A pass stands only without
/// gaps; a failure stands when what was seen is not part of the expected sequence in order
/// (a hidden status can add to the sequence, never remove from it).
pub(super) fn statuses_gaps(want: &[String], j: J, tl: &Timeline) -> J {
    let Some(g) = tl.pod_gaps().next() else { return j };
    let seen: Vec<String> = status_sequence(tl).into_iter().map(|(t, _)| t).collect();
    // Every entry, optional ones included: a hidden status can only add to what was seen.
    let want: Vec<&str> = want.iter().map(|s| status_entry(s).0).collect();
    let doubt = match j.outcome {
        Outcome::Pass => true,
        Outcome::Fail => super::is_subsequence(&seen, &want),
        Outcome::Undecided => false,
    };
    super::in_gap(j, doubt.then(|| g.describe()))
}

/// `statusRow` with pod-watch gaps: a snapshot that contradicts the row stays a failure; a row
/// that held (or a status never shown) may have been contradicted (or shown) inside the gap.
pub(super) fn status_row_gaps(j: J, tl: &Timeline) -> J {
    let Some(g) = tl.pod_gaps().next() else { return j };
    let contradicted = j.outcome == Outcome::Fail && !j.has(super::Fact::StatusNeverShown);
    super::in_gap(j, (!contradicted).then(|| g.describe()))
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::observe::{ActionKind, EvidenceSource};
    use crate::suite::model::Expectation;
    use serde_json::json;

    /// Pod versions at 0 s, 1 s, ... whose STATUS column reads these texts, in phase `phase`.
    fn shown(texts: &[&str], phase: &str) -> Timeline {
        timeline(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| snap(i as i64, json!({"status": t, "phase": phase, "readyColumn": "0/1"})))
                .collect(),
        )
    }

    fn expectation(yaml: &str) -> Expectation {
        case(&format!("expect:\n  - {yaml}\n")).expect[0].value.clone()
    }

    fn statuses_of(want: &[&str], tl: &Timeline) -> J {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        statuses_gaps(&want, statuses(&want, tl), tl)
    }

    #[test]
    fn statuses_as_shown_pass_and_others_fail() {
        let tl = shown(&["Pending", "Running", "Completed"], "Succeeded");
        assert_judged(
            &statuses_of(&["Pending", "Running", "Completed"], &tl),
            Outcome::Pass,
            "statuses Pending → Running → Completed",
        );
        assert_judged(
            &statuses_of(&["Pending", "Running", "Error"], &tl),
            Outcome::Fail,
            "expected [Pending → Running → Error], observed [Pending → Running → Completed]",
        );
    }

    #[test]
    fn a_status_not_shown_passes_only_with_other_evidence_of_it() {
        let want = ["Pending", "ContainerCreating", "Running", "Completed"];
        let mut tl = shown(&["Pending", "Running", "Completed"], "Succeeded");
        assert_judged(
            &statuses_of(&want, &tl),
            Outcome::Fail,
            "ContainerCreating never shown and nothing else proves the pod was in it",
        );
        tl.instances.push(instance("main", 0, Some(0), Some((2, 0))));
        assert_judged(
            &statuses_of(&want, &tl),
            Outcome::Pass,
            "ContainerCreating not shown by the API (the kubelet batches status writes), but `main` was created",
        );
    }

    #[test]
    fn an_optional_status_may_or_may_not_be_shown() {
        let tl = shown(&["Running", "Completed"], "Succeeded");
        assert_eq!(
            statuses_of(&["Running", "Error?", "Completed"], &tl).outcome,
            Outcome::Pass
        );
        assert_eq!(
            allowed_sequences(&["Running".into(), "Error?".into()]),
            vec![
                vec!["Running".to_string()],
                vec!["Running".to_string(), "Error".to_string()]
            ]
        );
    }

    #[test]
    fn statuses_so_far_are_undecided_and_a_pod_watch_gap_doubts_a_pass() {
        let mut tl = shown(&["Pending", "Running"], "Running");
        tl.complete = false;
        assert_judged(
            &statuses_of(&["Pending", "Running", "Completed"], &tl),
            Outcome::Undecided,
            "so far",
        );
        let mut tl = shown(&["Pending", "Completed"], "Succeeded");
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(0), Some(1)));
        assert_judged(
            &statuses_of(&["Pending", "Completed"], &tl),
            Outcome::Undecided,
            "undecided: pod watch down",
        );
        // Seen out of order: no hidden status can mend that.
        assert_eq!(statuses_of(&["Completed", "Pending"], &tl).outcome, Outcome::Fail);
    }

    fn row(yaml: &str, tl: &Timeline) -> J {
        let Expectation::StatusRow(r) = expectation(yaml) else {
            panic!("not a statusRow: {yaml}")
        };
        status_row_gaps(status_row(&r, tl), tl)
    }

    #[test]
    fn a_status_row_holds_in_every_snapshot_showing_it() {
        let tl = shown(&["Running", "Completed", "Completed"], "Succeeded");
        assert_judged(
            &row("statusRow: {status: Completed, phase: Succeeded, ready: 0/1}", &tl),
            Outcome::Pass,
            "STATUS Completed shown in 2 snapshots 08:00:01.000–08:00:02.000: phase Succeeded, READY 0/1",
        );
        assert_judged(
            &row("statusRow: {status: Completed, phase: Failed}", &tl),
            Outcome::Fail,
            "STATUS Completed at 08:00:01.000: expected phase Failed, observed phase Succeeded",
        );
    }

    #[test]
    fn a_status_never_shown_fails_unless_a_gap_could_hide_it() {
        let mut tl = shown(&["Running", "Completed"], "Succeeded");
        let j = row("statusRow: {status: Error}", &tl);
        assert_judged(
            &j,
            Outcome::Fail,
            "STATUS Error never shown (observed [Running → Completed])",
        );
        assert!(j.has(super::super::Fact::StatusNeverShown));
        tl.gaps.push(source_gap(EvidenceSource::PodWatch, Some(0), Some(1)));
        assert_judged(
            &row("statusRow: {status: Error}", &tl),
            Outcome::Undecided,
            "undecided: pod watch down",
        );
        // A row contradicted by what was seen stays failed.
        assert_eq!(
            row("statusRow: {status: Completed, phase: Failed}", &tl).outcome,
            Outcome::Fail
        );
    }

    fn qos(yaml: &str, tl: &Timeline) -> J {
        let Expectation::QosClass(q) = expectation(yaml) else {
            panic!("not a qosClass: {yaml}")
        };
        qos_class(q, tl)
    }

    #[test]
    fn the_qos_class_is_compared_and_must_never_change() {
        let class = |c: &str| snap(0, json!({"phase": "Running", "qosClass": c}));
        let tl = timeline(vec![class("Burstable")]);
        assert_judged(&qos("qosClass: Burstable", &tl), Outcome::Pass, "qosClass Burstable");
        assert_judged(
            &qos("qosClass: Guaranteed", &tl),
            Outcome::Fail,
            "expected Guaranteed, observed Burstable",
        );
        let tl = timeline(vec![class("Burstable"), class("BestEffort")]);
        assert_judged(
            &qos("qosClass: Burstable", &tl),
            Outcome::Fail,
            "qosClass changed from Burstable to BestEffort",
        );
        let mut tl = timeline(in_phases(&["Pending"]));
        tl.complete = false;
        assert_judged(&qos("qosClass: Burstable", &tl), Outcome::Undecided, "not set yet");
    }

    #[test]
    fn a_status_not_shown_is_proven_only_by_its_own_evidence() {
        let mut tl = timeline(vec![]);
        assert_eq!(skip_evidence(&tl, "Terminating"), None);
        tl.actions.push(action(ActionKind::Delete, 1500));
        assert_eq!(
            skip_evidence(&tl, "Terminating").as_deref(),
            Some("our DELETE was sent 08:00:01.500")
        );
        // A waiting reason: the kubelet's `Failed` event `Error: <reason>` for the container.
        assert_eq!(skip_evidence(&tl, "ErrImagePull"), None);
        tl.events.push(
            serde_json::from_value(json!({
                "received": at(2), "reason": "Failed", "type": "Warning", "message": "Error: ErrImagePull",
                "container": "main", "count": 1, "timePrecisionNs": 1_000_000_000u64, "uid": "e1",
            }))
            .unwrap(),
        );
        assert_eq!(
            skip_evidence(&tl, "ErrImagePull").as_deref(),
            Some("Failed event \"Error: ErrImagePull\" 08:00:02.000")
        );
    }
}
