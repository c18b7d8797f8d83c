//! `SeqMatch`: matching an expected sequence of API states (pod phases, a condition's statuses)
//! against the observed one, allowing exactly the states the API may skip — and only when the
//! timeline proves they happened.
//!
//! Why states can be missing: the kubelet's status manager batches status writes. A container
//! that starts and exits between two writes never makes the API show phase `Running` (observed
//! `Pending → Succeeded` in 3 of 6 short-lived pods with 16 concurrent cases), and
//! init containers that finish before the first write never show `Initialized=False`. The pod
//! did pass through the state; the API just never published it. So a skipped state is accepted
//! only with independent evidence from the node that the state really happened: the containers'
//! own log lines (CRI timestamps) or a terminated state whose `startedAt` is a real start.
//! Without that evidence (a container that never ran, a wrong expectation) the sequence fails.

use jiff::Timestamp;

use crate::observe::{ContainerRef, Instance, Timeline};
use crate::suite::ContainerKind;

/// What the API sequence is a sequence of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subject<'a> {
    /// `status.phase`.
    Phase,
    /// `status.conditions[type]`.
    Condition(&'a str),
    /// kubectl's STATUS column (`observe::status`).
    Status,
}

/// The result of matching.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SeqMatch {
    /// Observed exactly as expected.
    Exact,
    /// Observed as expected minus API-skippable states, each with its proof.
    Skipped(Vec<(String, String)>),
    /// It would match if these skipped states were proven, but the timeline holds no proof
    /// (yet: logs may arrive after the terminal status, so this is undecided until complete).
    Unproven(Vec<String>),
    /// The observed sequence is a prefix of an acceptable one (it may still complete).
    Prefix,
    /// No acceptable sequence starts like the observed one.
    Mismatch,
}

/// Which element of `want` the API may skip, and the proof that it happened anyway.
/// Only interior elements (phases) or a leading `False` before `True` (Initialized) qualify:
/// a skipped state is one a later write superseded, so something must follow it.
fn skippable(subject: Subject, want: &[String], i: usize, tl: &Timeline) -> Option<Result<String, ()>> {
    match subject {
        // Running is the phase of a pod whose regular containers were started; the API may
        // show Pending → Succeeded/Failed directly when they ran between two status writes.
        Subject::Phase if want[i] == "Running" && i > 0 && i + 1 < want.len() => {
            Some(ran(tl, &[ContainerKind::Regular]).ok_or(()))
        }
        // Initialized is False while init containers run; if they all ran before the kubelet's
        // first status write the API shows True at once.
        Subject::Condition("Initialized")
            if want[i] == "False" && i == 0 && want.get(1).is_some_and(|n| n == "True") =>
        {
            Some(ran(tl, &[ContainerKind::Init, ContainerKind::Sidecar]).ok_or(()))
        }
        // An interior STATUS (ContainerCreating, Init:N/M, PodInitializing, Running,
        // CrashLoopBackOff, ...) may be superseded before a write; `status::skip_evidence`
        // says which ones other evidence proves (a container's instance or logs, a terminated
        // reason, the kubelet's events) and which must be seen (NotReady, pod reasons).
        Subject::Status if i > 0 && i + 1 < want.len() => Some(super::status::skip_evidence(tl, &want[i]).ok_or(())),
        // Ready and ContainersReady depend on readiness probes: the timeline has no proof of a
        // probe result other than the condition itself, so they are never skippable.
        _ => None,
    }
}

/// Matches `seen` against `want`. `settled`: no later state can be added to `seen`.
pub(crate) fn match_sequence(
    subject: Subject,
    want: &[String],
    seen: &[String],
    tl: &Timeline,
    settled: bool,
) -> SeqMatch {
    if seen == want {
        return SeqMatch::Exact;
    }
    let skip_at: Vec<(usize, Option<Result<String, ()>>)> = (0..want.len())
        .map(|i| (i, skippable(subject, want, i, tl)))
        .filter(|(_, s)| s.is_some())
        .collect();
    // Suites list a handful of states; bound the subsets tried anyway (2^10).
    let skip_at = &skip_at[..skip_at.len().min(10)];
    let mut prefix = seen.is_empty() || want.starts_with(seen);
    let mut unproven: Option<Vec<String>> = None;
    for mask in 1u32..(1 << skip_at.len()) {
        let chosen: Vec<&(usize, Option<Result<String, ()>>)> = skip_at
            .iter()
            .enumerate()
            .filter(|(b, _)| mask & (1 << b) != 0)
            .map(|(_, s)| s)
            .collect();
        let mut cand: Vec<&String> = vec![];
        for (i, w) in want.iter().enumerate() {
            // Distinct consecutive states: dropping True from [False, True, False] leaves [False].
            if !chosen.iter().any(|(j, _)| *j == i) && cand.last() != Some(&w) {
                cand.push(w);
            }
        }
        if cand.iter().copied().eq(seen.iter()) {
            let proofs: Vec<_> = chosen
                .iter()
                .map(|(i, p)| (want[*i].clone(), p.clone().and_then(|r| r.ok())))
                .collect();
            if proofs.iter().all(|(_, p)| p.is_some()) {
                return SeqMatch::Skipped(proofs.into_iter().map(|(s, p)| (s, p.unwrap_or_default())).collect());
            }
            unproven.get_or_insert_with(|| {
                proofs
                    .into_iter()
                    .filter(|(_, p)| p.is_none())
                    .map(|(s, _)| s)
                    .collect()
            });
        } else if cand.len() > seen.len() && cand[..seen.len()].iter().copied().eq(seen.iter()) {
            prefix = true;
        }
    }
    match unproven {
        Some(u) => SeqMatch::Unproven(u),
        None if prefix && !settled => SeqMatch::Prefix,
        None => SeqMatch::Mismatch,
    }
}

/// A container start that really happened: the runtime's `startedAt` (the API's Unix epoch
/// placeholder of a container that failed to start does not count, nor anything before the pod
/// existed).
fn real_start(i: &Instance, created: Option<Timestamp>) -> Option<Timestamp> {
    let t = i.started_at?;
    let floor = created.unwrap_or(Timestamp::UNIX_EPOCH);
    // Both are whole seconds on the node's/API server's clocks (one machine for a single node).
    (t > Timestamp::UNIX_EPOCH && t >= floor).then_some(t)
}

/// Proof that a container of one of `kinds` ran: its own log lines, else a real `startedAt`.
pub fn ran(tl: &Timeline, kinds: &[ContainerKind]) -> Option<String> {
    let names: Vec<&ContainerRef> = tl.pod.containers.iter().filter(|c| kinds.contains(&c.kind)).collect();
    for c in &names {
        let lines: Vec<_> = tl.logs_of(&c.name, None).collect();
        if let Some(first) = lines.iter().map(|l| l.time).min() {
            return Some(format!(
                "`{}` ran: {} log line(s) from {}",
                c.name,
                lines.len(),
                super::marks::hms(first)
            ));
        }
    }
    for c in &names {
        for i in tl.instances_of(&c.name) {
            if let Some(t) = real_start(i, tl.pod.creation_timestamp) {
                let end = match (i.finished_at, i.exit_code) {
                    (Some(f), Some(code)) => format!(", finished {} exitCode {code}", super::marks::hms(f)),
                    _ => String::new(),
                };
                return Some(format!(
                    "`{}`#{} ran: startedAt {}{end}",
                    c.name,
                    i.instance,
                    super::marks::hms(t)
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const PHASES: &[&str] = &["Pending", "Running", "Succeeded"];

    fn phases_of(seen: &[&str], tl: &Timeline, settled: bool) -> SeqMatch {
        match_sequence(Subject::Phase, &strings(PHASES), &strings(seen), tl, settled)
    }

    #[test]
    fn the_sequence_as_expected_is_exact_and_another_a_mismatch() {
        let tl = timeline(vec![]);
        assert_eq!(phases_of(PHASES, &tl, true), SeqMatch::Exact);
        assert_eq!(phases_of(&["Pending", "Failed"], &tl, true), SeqMatch::Mismatch);
        assert_eq!(phases_of(&["Running", "Pending"], &tl, true), SeqMatch::Mismatch);
    }

    #[test]
    fn a_start_of_the_sequence_is_a_prefix_until_the_pod_settles() {
        let tl = timeline(vec![]);
        assert_eq!(phases_of(&["Pending", "Running"], &tl, false), SeqMatch::Prefix);
        assert_eq!(phases_of(&["Pending", "Running"], &tl, true), SeqMatch::Mismatch);
    }

    #[test]
    fn a_skipped_running_phase_needs_proof_that_a_container_ran() {
        let mut tl = timeline(vec![]);
        assert_eq!(
            phases_of(&["Pending", "Succeeded"], &tl, true),
            SeqMatch::Unproven(strings(&["Running"]))
        );
        tl.logs.push(line("main", 0, 250, "hello"));
        let SeqMatch::Skipped(skips) = phases_of(&["Pending", "Succeeded"], &tl, true) else {
            panic!("Running skipped with proof")
        };
        assert_eq!(skips[0].0, "Running");
        assert!(
            skips[0].1.contains("`main` ran: 1 log line(s) from 08:00:00.250"),
            "{skips:?}"
        );
    }

    #[test]
    fn only_an_interior_phase_may_be_skipped() {
        // Succeeded is last: nothing superseded it, so it must be seen.
        let mut tl = timeline(vec![]);
        tl.logs.push(line("main", 0, 0, "hello"));
        assert_eq!(phases_of(&["Pending", "Running"], &tl, true), SeqMatch::Mismatch);
    }

    #[test]
    fn a_leading_initialized_false_is_skippable_when_an_init_container_ran() {
        let want = strings(&["False", "True"]);
        let mut tl = timeline(vec![]);
        let initialized =
            |tl: &Timeline| match_sequence(Subject::Condition("Initialized"), &want, &strings(&["True"]), tl, true);
        assert_eq!(initialized(&tl), SeqMatch::Unproven(strings(&["False"])));
        tl.pod.containers.push(ContainerRef {
            name: "init".into(),
            kind: ContainerKind::Init,
            probe_period: None,
        });
        tl.instances.push(Instance {
            kind: ContainerKind::Init,
            ..instance("init", 0, Some(0), Some((1, 0)))
        });
        let SeqMatch::Skipped(skips) = initialized(&tl) else {
            panic!("False skipped with proof")
        };
        assert!(
            skips[0]
                .1
                .contains("`init`#0 ran: startedAt 08:00:00.000, finished 08:00:01.000 exitCode 0"),
            "{skips:?}"
        );
        // Ready depends on probes: never skippable.
        let ready = match_sequence(Subject::Condition("Ready"), &want, &strings(&["True"]), &tl, true);
        assert_eq!(ready, SeqMatch::Mismatch);
    }

    #[test]
    fn a_start_time_before_the_pod_existed_is_no_proof_of_a_run() {
        let mut tl = timeline(vec![]);
        tl.pod.creation_timestamp = Some(at(10));
        tl.instances.push(instance("main", 0, Some(5), None));
        assert_eq!(ran(&tl, &[ContainerKind::Regular]), None);
        tl.instances[0].started_at = Some(at(10));
        assert_eq!(
            ran(&tl, &[ContainerKind::Regular]).as_deref(),
            Some("`main`#0 ran: startedAt 08:00:10.000")
        );
        // The API's placeholder for a container that never started.
        tl.pod.creation_timestamp = None;
        tl.instances[0].started_at = Some(Timestamp::UNIX_EPOCH);
        assert_eq!(ran(&tl, &[ContainerKind::Regular]), None);
    }
}
