//! The step check: did a finished timeline do what the case's steps say (every `waitFor` reached, each
//! delete, patch, exec, object change and ephemeral container in order)? Otherwise verdicts judge another experiment.

use super::*;
use crate::observe::{Action, ActionKind};

/// Checks that a finished timeline (a recording, or a run's timeline JSON) did what the case's
/// steps say: every `waitFor` reached, a delete (with the same grace override) and a patch for
/// each such step, in order. Otherwise the verdicts would judge a different experiment.
///
/// A request of our own the recording did not send as the step says (a step it never ran,
/// another request, a sleep it did not wait out) means it was made for an earlier version of
/// the case: a live run sends every request its steps reach or records the step that failed.
/// That is not comparable (`Fact::CaseChanged`), never a failure of the node. A `waitFor`
/// whose mark never came is the node's: failed, or undecided where a gap of the evidence could
/// hide the mark, as live.
pub fn steps_verdict(case: &Case, tl: &Timeline) -> Option<Verdict> {
    let (problem, waited) = steps_problem(case, tl)?;
    Some(match waited {
        Waited::Mark(r) => match mark_hidden(case, r, tl) {
            Some(g) => step_verdict(Outcome::Undecided, format!("{problem}; undecided: {g}"), vec![]),
            None => step_verdict(Outcome::Fail, problem, vec![]),
        },
        Waited::TooShort | Waited::Other => case_changed(problem),
    })
}

/// The step verdict of a recording made for another version of the case.
pub fn case_changed(problem: String) -> Verdict {
    step_verdict(
        Outcome::Undecided,
        format!("not comparable: the case changed since this recording: {problem}"),
        vec![Fact::CaseChanged],
    )
}

/// A verdict of the step check (kind, subject and id `step`).
pub(super) fn step_verdict(outcome: Outcome, evidence: String, facts: Vec<Fact>) -> Verdict {
    Verdict {
        index: super::STEP_INDEX,
        kind: super::VerdictKind::Step,
        outcome,
        evidence,
        measured: vec![],
        marks: vec![],
        measures: vec![],
        facts,
        subject: "step".into(),
        id: "step".into(),
    }
}

/// What the first contradicted step was, for the verdict's outcome.
pub(super) enum Waited<'a> {
    /// A `waitFor` whose mark never came: a gap may have hidden it.
    Mark(&'a MarkRef),
    /// A `sleep` the recording did not wait out. Live, podlife always sleeps, so only a
    /// recording made before the case had its `sleep` gets here.
    TooShort,
    Other,
}

/// Slack on a `sleep` between the previous step's mark (possibly read on the node's clock) and
/// our next request (the harness clock): clock mixing, never a second.
const SLEEP_SLACK: SignedDuration = SignedDuration::from_secs(1);

/// The recording's requests of each kind, in the order sent: each request step takes the next
/// one of its kind.
struct Requests<'t> {
    deletes: std::vec::IntoIter<&'t Action>,
    patches: std::vec::IntoIter<&'t Action>,
    ephemerals: std::vec::IntoIter<&'t Action>,
    /// Execs and log reads (a log read is an exec action with no command).
    execs: std::vec::IntoIter<&'t Action>,
    resizes: std::vec::IntoIter<&'t Action>,
    updates: std::vec::IntoIter<&'t Action>,
    /// Object applies and deletes, one sequence: a step doing the other is a changed case.
    objects: std::vec::IntoIter<&'t Action>,
}

impl<'t> Requests<'t> {
    fn of(tl: &'t Timeline) -> Self {
        let kind = |k: &[ActionKind]| {
            tl.actions
                .iter()
                .filter(|a| k.contains(&a.kind))
                .collect::<Vec<_>>()
                .into_iter()
        };
        Requests {
            deletes: kind(&[ActionKind::Delete]),
            patches: kind(&[ActionKind::Patch]),
            ephemerals: kind(&[ActionKind::Ephemeral]),
            execs: kind(&[ActionKind::Exec]),
            resizes: kind(&[ActionKind::Resize]),
            updates: kind(&[ActionKind::Update]),
            objects: kind(&[ActionKind::UpdateObject, ActionKind::DeleteObject]),
        }
    }

    /// The request step `i` sent (the next of its kind), and how it differs from the step, if
    /// it does. `None` for a step that sends no request.
    fn take(&mut self, i: usize, step: &Step) -> Option<(Option<&'t Action>, Option<String>)> {
        Some(match step {
            Step::WaitFor(_) | Step::Sleep(_) => return None,
            Step::Delete(d) => sent_as(self.deletes.next(), |a| delete_problem(i, d, a)),
            Step::Exec(x) => sent_as(self.execs.next(), |a| exec_problem(i, x, a)),
            Step::FetchLog(l) => sent_as(self.execs.next(), |a| fetch_log_problem(i, l, a)),
            Step::Object(o) => sent_as(self.objects.next(), |a| object_problem(i, o, a)),
            Step::Ephemeral(e) => sent_as(self.ephemerals.next(), |a| ephemeral_problem(i, e, a)),
            Step::Resize(r) => sent_as(self.resizes.next(), |a| resize_problem(i, r, a)),
            Step::Update(u) => sent_as(self.updates.next(), |a| update_problem(i, u, a)),
            Step::Patch(p) => sent_as(self.patches.next(), |a| patch_problem(i, p, a)),
        })
    }
}

/// A request taken from the recording and how it differs from its step.
fn sent_as<'t>(
    a: Option<&'t Action>,
    problem: impl FnOnce(Option<&'t Action>) -> Option<String>,
) -> (Option<&'t Action>, Option<String>) {
    (a, problem(a))
}

/// The first step the timeline contradicts, and what kind of step it was.
pub(super) fn steps_problem<'a>(case: &'a Case, tl: &Timeline) -> Option<(String, Waited<'a>)> {
    // When the previous step ended (its mark, or our request answered), and the earliest a
    // request may follow a `sleep` after it.
    let mut last_end: Option<Timestamp> = None;
    let mut slept: Option<(usize, SignedDuration, Timestamp)> = None; // (step, sleep, from)
    let mut requests = Requests::of(tl);
    for (i, s) in case.steps.iter().enumerate() {
        let sent = match &s.value {
            Step::WaitFor(w) => match mark_occurred(case, &w.until, tl) {
                Err(why) => {
                    return Some((
                        format!("steps[{i}] waitFor: the recording never reaches it: {why}"),
                        Waited::Mark(&w.until),
                    ));
                }
                Ok(hit) => {
                    last_end = Some(hit.at);
                    None
                }
            },
            // A pacing sleep changes no expectation's answer: a recording without it is judged.
            Step::Sleep(d) if d.pacing => None,
            Step::Sleep(d) => {
                let d = SignedDuration::try_from(d.r#for.0).unwrap_or(SignedDuration::MAX);
                slept = last_end.map(|e| (i, d, e));
                None
            }
            step => match requests.take(i, step) {
                Some((_, Some(p))) => return Some((p, Waited::Other)),
                Some((a, None)) => a,
                None => None,
            },
        };
        if let Some(a) = sent {
            if let Some(too_short) = slept.take().and_then(|sl| sleep_problem(sl, a)) {
                return Some((too_short, Waited::TooShort));
            }
            last_end = Some(a.done.unwrap_or(a.sent));
        }
    }
    None
}

/// A `sleep` (step `si`, of `d`, from `before`) the request `a` after it did not wait out.
fn sleep_problem((si, d, before): (usize, SignedDuration, Timestamp), a: &Action) -> Option<String> {
    (crate::util::ts_add(a.sent, SLEEP_SLACK) < crate::util::ts_add(before, d)).then(|| {
        format!(
            "steps[{si}] sleep {}: the recording sent its next request {} after the step before, not {}",
            crate::util::fmt_secs(d.as_secs_f64()),
            crate::util::fmt_secs(a.sent.duration_since(before).as_secs_f64()),
            crate::util::fmt_secs(d.as_secs_f64())
        )
    })
}

/// The same grace override.
fn delete_problem(i: usize, d: &DeleteStep, a: Option<&Action>) -> Option<String> {
    match a {
        None => Some(format!("steps[{i}] delete: the recording has no delete")),
        Some(a) if a.grace_period_seconds != d.grace_period_seconds => Some(format!(
            "steps[{i}] delete: grace override {:?} but the recording used {:?}",
            d.grace_period_seconds, a.grace_period_seconds
        )),
        Some(_) => None,
    }
}

/// The same command in the same container.
fn exec_problem(i: usize, x: &ExecStep, a: Option<&Action>) -> Option<String> {
    match a.and_then(|a| a.exec.as_ref()) {
        None => Some(format!("steps[{i}] exec: the recording has no exec `{}`", x.name.value)),
        Some(r) if r.name != x.name.value || r.container != x.container.value || r.command != x.command.value => {
            Some(format!(
                "steps[{i}] exec: `{}` ({} in `{}`) but the recording ran `{}` ({} in `{}`)",
                x.name.value,
                x.command.value.join(" "),
                x.container.value,
                r.name,
                r.command.join(" "),
                r.container
            ))
        }
        // The same path to the node: a recording over another protocol exercised another.
        Some(r) if r.protocol.as_deref().unwrap_or(ExecProtocol::V5.as_str()) != x.protocol.as_str() => Some(format!(
            "steps[{i}] exec: `{}` over {} but the recording spoke {}",
            x.name.value,
            x.protocol.as_str(),
            r.protocol.as_deref().unwrap_or(ExecProtocol::V5.as_str())
        )),
        Some(_) => None,
    }
}

/// The same container's log over the same protocol (an exec action with no command).
fn fetch_log_problem(i: usize, l: &FetchLogStep, a: Option<&Action>) -> Option<String> {
    match a.and_then(|a| a.exec.as_ref()) {
        None => Some(format!(
            "steps[{i}] fetchLog: the recording has no log read `{}`",
            l.name.value
        )),
        Some(r)
            if r.name != l.name.value
                || r.container != l.container.value
                || !r.command.is_empty()
                || r.protocol.as_deref() != Some(l.protocol.as_str()) =>
        {
            Some(format!(
                "steps[{i}] fetchLog: `{}` (log of `{}` over {}) but the recording ran `{}` ({} in `{}` over {})",
                l.name.value,
                l.container.value,
                l.protocol.as_str(),
                r.name,
                r.command.join(" "),
                r.container,
                r.protocol.as_deref().unwrap_or(ExecProtocol::V5.as_str())
            ))
        }
        Some(_) => None,
    }
}

/// The same change of the same object (`ConfigMap/name`).
fn object_problem(i: usize, o: &ObjectStep, a: Option<&Action>) -> Option<String> {
    let (kind, verb) = if o.delete.is_some() {
        (ActionKind::DeleteObject, "delete")
    } else {
        (ActionKind::UpdateObject, "apply")
    };
    let path = o
        .apply
        .as_ref()
        .or(o.delete.as_ref())
        .map(|m| m.value.as_str())
        .unwrap_or("");
    match a {
        None => Some(format!(
            "steps[{i}] object: the recording has no object {verb} ({path})"
        )),
        Some(a) if a.kind != kind => Some(format!(
            "steps[{i}] object: {verb} {path} but the recording did the other ({})",
            a.detail.as_deref().unwrap_or("?")
        )),
        Some(_) => None,
    }
}

/// The same container, sent the same way (`debugger via patch`).
fn ephemeral_problem(i: usize, e: &EphemeralStep, a: Option<&Action>) -> Option<String> {
    let want = format!("{} via {}", e.name(), e.via.as_str());
    match a {
        None => Some(format!(
            "steps[{i}] ephemeral: the recording added no ephemeral container"
        )),
        Some(a) if a.detail.as_deref() != Some(want.as_str()) => Some(format!(
            "steps[{i}] ephemeral: `{want}` but the recording added `{}`",
            a.detail.as_deref().unwrap_or("?")
        )),
        Some(_) => None,
    }
}

/// The same containers resized to the same values, sent the same way.
fn resize_problem(i: usize, r: &ResizeStep, a: Option<&Action>) -> Option<String> {
    let want = r.detail();
    match a {
        None => Some(format!("steps[{i}] resize: the recording has no resize")),
        Some(a) if a.detail.as_deref() != Some(want.as_str()) => Some(format!(
            "steps[{i}] resize: `{want}` but the recording sent `{}`",
            a.detail.as_deref().unwrap_or("?")
        )),
        Some(_) => None,
    }
}

/// The same step, repeated as often (what each update changed is the step's own).
fn update_problem(i: usize, u: &UpdateStep, a: Option<&Action>) -> Option<String> {
    match a.and_then(|a| a.update.as_ref()) {
        None => Some(format!(
            "steps[{i}] update: the recording has no update `{}`",
            u.name.value
        )),
        Some(r) if r.name != u.name.value || r.times != u.times() => Some(format!(
            "steps[{i}] update: `{}` {} time(s) but the recording updated `{}` {} time(s)",
            u.name.value,
            u.times(),
            r.name,
            r.times
        )),
        Some(_) => None,
    }
}

/// The same deadline: a run's timeline keeps the patch body, and a different deadline is a
/// different experiment.
fn patch_problem(i: usize, p: &PatchStep, a: Option<&Action>) -> Option<String> {
    let Some(a) = a else {
        return Some(format!("steps[{i}] patch: the recording has no patch"));
    };
    let sent = a
        .detail
        .as_deref()
        .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .and_then(|v| v.pointer("/spec/activeDeadlineSeconds").and_then(|x| x.as_i64()));
    match (&p.active_deadline_seconds, sent) {
        (Some(want), Some(got)) if want.value != got => Some(format!(
            "steps[{i}] patch: activeDeadlineSeconds {} but the recording sent {got}",
            want.value
        )),
        _ => None,
    }
}
