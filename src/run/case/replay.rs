//! Replaying a case: a recording or a stored timeline judged by the same observer, judge and
//! step checks as a live run.

use super::*;

/// Replays a case from a recording folder: same observer, same judge, same step checks.
pub fn replay_case(case: &LoadedCase, dir: &Path) -> Attempt {
    replay_named(case, dir, &crate::files::Names::default())
}

/// `replay_case`, the recording named as `names` names it (a bundle's members as
/// `<bundle>:<member>`) in the timeline's source and in errors.
pub(crate) fn replay_named(case: &LoadedCase, dir: &Path, names: &crate::files::Names) -> Attempt {
    match Recording::read_named(dir, names) {
        Ok(rec) => replay_recording(case, rec),
        Err(e) => errored(e.to_string(), Timestamp::now(), Instant::now(), None),
    }
}

/// Judges a recording that was read: an attempt that did not finish live (interrupted, a
/// harness error) stays so, with what it observed; a finished one is judged like live.
pub fn replay_recording(case: &LoadedCase, rec: Recording) -> Attempt {
    // The load the recorded attempt ran under is a fact of that run, carried over.
    let load = rec
        .outcome
        .node_load
        .clone()
        .and_then(|v| serde_json::from_value(v).ok());
    let mut attempt = judge_recording(case, rec);
    attempt.node_load = load;
    attempt
}

fn judge_recording(case: &LoadedCase, mut rec: Recording) -> Attempt {
    let started = Timestamp::now();
    let t0 = Instant::now();
    let tl = rec.take_timeline();
    // How a recorded live attempt ended is a fact of that run: replay it as it was.
    let o = &rec.outcome;
    if o.interrupted {
        return interrupted(started, t0, Some(tl));
    }
    if let Some(e) = &o.error {
        return errored(e.clone(), started, t0, Some(tl));
    }
    // A recording podlife made for this case with another pod is another experiment.
    if o.podlife
        && let Some(recorded) = &rec.manifest
        && let Some(diff) = pod_changed(case, recorded)
    {
        return conclude(case, tl, Some(judge::case_changed(diff)), started, t0);
    }
    if let Some(v) = &o.step_verdict {
        return match serde_json::from_value::<Verdict>(v.clone()) {
            Ok(v) => match recorded_wait(case, &v) {
                RecordedWait::Today(until) => {
                    let v = cut_short(case, &tl, v, o.closed);
                    let v = lost_mark(case, until, &tl, v);
                    conclude(case, tl, Some(v), started, t0)
                }
                RecordedWait::Gone => {
                    let v = steps_of_today(case, &tl, &v);
                    conclude(case, tl, v, started, t0)
                }
                RecordedWait::NotAWait => {
                    let v = cut_short(case, &tl, v, o.closed);
                    conclude(case, tl, Some(v), started, t0)
                }
            },
            Err(e) => errored(
                format!("{}: damaged recording: step verdict: {e}", rec.shown),
                started,
                t0,
                Some(tl),
            ),
        };
    }
    if let Some(evidence) = &o.step_failure {
        return conclude(case, tl, Some(failed_step(evidence.clone())), started, t0);
    }
    // The recording must have done what the steps say, or the verdicts would judge something else.
    let step_failure = objects_verdict(case, &tl).or_else(|| judge::steps_verdict(&case.spec, &tl));
    conclude(case, tl, step_failure, started, t0)
}

/// Where the pod a recording was made with differs from the case's pod today, apart from what
/// the run chose: images (`--image`) and the targeting `cluster::target` writes (nodeName,
/// nodeSelector, runtimeClassName). A container added or changed, another volume, another
/// command: another experiment.
fn pod_changed(case: &LoadedCase, recorded: &serde_json::Value) -> Option<String> {
    let mask = |mut pod: serde_json::Value| {
        strip_images(&mut pod);
        if let Some(spec) = pod.get_mut("spec").and_then(|s| s.as_object_mut()) {
            for targeting in ["nodeName", "nodeSelector", "runtimeClassName"] {
                spec.remove(targeting);
            }
        }
        pod
    };
    let today = mask(case.render_pod(&Default::default()));
    let then = mask(recorded.clone());
    first_difference(&today["spec"], &then["spec"], "spec")
        .map(|at| format!("the pod differs at {at} from the pod the recording was made with"))
}

/// Removes what a run may substitute: every container's image and every image volume's reference.
fn strip_images(v: &mut serde_json::Value) {
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(list) = v.pointer_mut(&format!("/spec/{key}")).and_then(|l| l.as_array_mut()) {
            for c in list.iter_mut().filter_map(|c| c.as_object_mut()) {
                c.remove("image");
            }
        }
    }
    if let Some(list) = v.pointer_mut("/spec/volumes").and_then(|l| l.as_array_mut()) {
        for image in list.iter_mut().filter_map(|x| x.get_mut("image")?.as_object_mut()) {
            image.remove("reference");
        }
    }
}

/// The path of the first place where `a` and `b` differ, e.g. `spec.containers[2]`.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &format!("{at}.{k}")),
                _ => Some(format!("{at}.{k}")),
            })
        }
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]")))
            .or_else(|| (x.len() != y.len()).then(|| format!("{at}[{}]", x.len().min(y.len())))),
        _ => (a != b).then(|| at.to_string()),
    }
}

/// What a recorded step failure was, against the case as it is today.
enum RecordedWait<'a> {
    /// A `waitFor` the case still has, at the same index, for the same mark.
    Today(&'a crate::suite::MarkRef),
    /// A `waitFor` the case no longer has (changed or removed since the recording).
    Gone,
    /// Another step's failure.
    NotAWait,
}

/// Matches a recorded step failure ("steps[1] waitFor first event BackOff on `main`: timed out
/// after 30s: ...") with the case's steps today.
fn recorded_wait<'a>(case: &'a LoadedCase, v: &Verdict) -> RecordedWait<'a> {
    let Some(rest) = v.evidence.strip_prefix("steps[") else {
        return RecordedWait::NotAWait;
    };
    let Some((i, rest)) = rest.split_once("] waitFor ") else {
        return RecordedWait::NotAWait;
    };
    let Ok(i) = i.parse::<usize>() else {
        return RecordedWait::NotAWait;
    };
    match case.spec.steps.get(i).map(|s| &s.value) {
        Some(Step::WaitFor(w)) if rest.starts_with(&format!("{}:", w.until.label())) => RecordedWait::Today(&w.until),
        _ => RecordedWait::Gone,
    }
}

/// A recorded failed wait judged as today's judge would: a mark the evidence could have lost
/// (a gap, an event the kubelet's recorder dropped) makes it undecided.
fn lost_mark(case: &LoadedCase, until: &crate::suite::MarkRef, tl: &Timeline, v: Verdict) -> Verdict {
    if v.outcome != Outcome::Fail {
        return v;
    }
    match judge::mark_hidden(&case.spec, until, tl) {
        Some(why) => Verdict {
            outcome: Outcome::Undecided,
            evidence: format!("{}; undecided: {why}", v.evidence),
            ..v
        },
        None => v,
    }
}

/// The recorded run failed at a wait the case no longer has (a live run waited for a BackOff
/// event; the case now waits for the CrashLoopBackOff status): that failure is not about the
/// case as it is. The recording is held to today's steps instead; one it does not reach was cut
/// short by the old step, so the recording does not answer the case as it is.
fn steps_of_today(case: &LoadedCase, tl: &Timeline, recorded: &Verdict) -> Option<Verdict> {
    if let Some(v) = objects_verdict(case, tl) {
        return Some(v);
    }
    let v = judge::steps_verdict(&case.spec, tl)?;
    let ended = format!(
        "the recorded run ended at a step the case no longer has ({})",
        recorded.evidence
    );
    Some(if v.facts.contains(&judge::Fact::CaseChanged) {
        Verdict {
            evidence: format!("{}; {ended}", v.evidence),
            ..v
        }
    } else if v.outcome == Outcome::Fail {
        // A wait of today's the recording never reaches: the old step ended it first.
        judge::case_changed(format!("{}; {ended}", v.evidence))
    } else {
        v
    })
}

/// A recorded wait that timed out although the recording ended before that wait's timeout (as
/// the case now gives it) could have run out was cut short by the recorded run's own case
/// timeout (status-crashloop waited for restart 5 in a case that ended at 120 s): its failure
/// says nothing about the node, so it is undecided. Live, `validate` keeps every wait within
/// its case timeout.
fn cut_short(case: &LoadedCase, tl: &Timeline, v: Verdict, closed: Option<Timestamp>) -> Verdict {
    let created = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent);
    let (Outcome::Fail, Some(closed), Some(created)) = (v.outcome, closed, created) else {
        return v;
    };
    let lasted = closed.duration_since(created);
    for s in &case.spec.steps {
        let Step::WaitFor(w) = &s.value else { continue };
        if judge::mark_occurred(&case.spec, &w.until, tl).is_ok() {
            continue;
        }
        let timeout = w.timeout.map(|d| d.0).unwrap_or(case.wait_timeout);
        let full = jiff::SignedDuration::try_from(timeout).unwrap_or(jiff::SignedDuration::MAX);
        if lasted >= full {
            return v;
        }
        return Verdict {
            outcome: Outcome::Undecided,
            evidence: format!(
                "{}; undecided: the recording ends {} after the pod was created, before this wait's {} timeout could run out (the recorded run's case timeout cut it short)",
                v.evidence,
                crate::util::fmt_secs(lasted.as_secs_f64()),
                crate::util::fmt_secs(timeout.as_secs_f64())
            ),
            ..v
        };
    }
    v
}

/// A recording judged for a case with `objects` must have created each of them before the pod:
/// without its ConfigMap the pod shows something else than what the case certifies.
pub fn objects_verdict(case: &LoadedCase, tl: &Timeline) -> Option<Verdict> {
    let applied: Vec<&str> = tl
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::ApplyObject)
        .filter_map(|a| a.detail.as_deref())
        .collect();
    let pod_at = tl.actions.iter().find(|a| a.kind == ActionKind::Apply).map(|a| a.sent);
    let own = case
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| (format!("objects[{i}]"), o.id()));
    let elsewhere = (case.second_namespace.iter().enumerate())
        .map(|(i, o)| (format!("secondNamespace[{i}]"), o.second_namespace_id()));
    let problem = elsewhere.chain(own).find_map(|(at, id)| {
        let found = tl
            .actions
            .iter()
            .find(|a| a.kind == ActionKind::ApplyObject && a.detail.as_deref() == Some(id.as_str()));
        match found {
            None => Some(format!(
                "{at}: the recording never created {id} (it created: {})",
                if applied.is_empty() {
                    "no object".to_string()
                } else {
                    applied.join(", ")
                }
            )),
            Some(a) if pod_at.is_some_and(|p| p < a.sent) => {
                Some(format!("{at}: the recording created {id} after the pod"))
            }
            Some(_) => None,
        }
    })?;
    // A live run creates every object before the pod or errs: a recording that did not was
    // made for another version of the case.
    Some(judge::case_changed(problem))
}

/// A timeline file that cannot be read, or a recording folder whose timeline cannot: one line
/// naming the file (and the field). Files are named as `files::Names` names them.
#[derive(Debug, thiserror::Error)]
pub enum TimelineFileError {
    #[error(transparent)]
    Unreadable(#[from] crate::files::Unreadable),
    #[error(transparent)]
    Recording(#[from] crate::observe::recording::RecordingError),
    #[error("{file}: not a podlife timeline: {source}")]
    NotTimeline { file: String, source: serde_json::Error },
    #[error(
        "{file}: format: timeline format {found} is not supported by this podlife (reads format {})",
        crate::observe::timeline::TIMELINE_FORMAT
    )]
    Format { file: String, found: u32 },
}

/// Reads a timeline JSON as `run` writes it, refusing a format this podlife does not read (one
/// line naming the file and the field).
pub fn read_timeline_file(path: &Path) -> Result<Timeline, TimelineFileError> {
    read_timeline_named(path, &crate::files::Names::default())
}

/// `read_timeline_file`, the file named in errors as `names` names it.
fn read_timeline_named(path: &Path, names: &crate::files::Names) -> Result<Timeline, TimelineFileError> {
    let file = || names.name(path);
    let text = crate::files::read_string(path, crate::files::TIMELINE).map_err(|e| names.unreadable(e))?;
    let tl = serde_json::from_str::<Timeline>(&text)
        .map_err(|source| TimelineFileError::NotTimeline { file: file(), source })?;
    if tl.format != crate::observe::timeline::TIMELINE_FORMAT {
        return Err(TimelineFileError::Format {
            file: file(),
            found: tl.format,
        });
    }
    Ok(tl)
}

/// What judging a timeline adds when the timeline is not complete (its observation was cut
/// short: Ctrl-C, a harness error, or a file saying so): the case is at most undecided, since
/// what came after the cut is unknown.
pub fn incomplete_verdict(tl: &Timeline) -> Option<Verdict> {
    (!tl.complete).then(|| Verdict {
        kind: crate::judge::VerdictKind::Timeline,
        id: "timeline".into(),
        outcome: Outcome::Undecided,
        ..failed_step(
            "the timeline is incomplete (`complete: false`: its observation was cut short), so no verdict on it can be final"
                .into(),
        )
    })
}

/// Judges a case on the timeline a run stored (`timelines/<suite>__<case>.json`): what is left
/// to re-judge of a run recorded without raw recordings. `recorded` is how that attempt ended
/// live (from `summary.json`): an interrupted or errored attempt stays so, a finished one is
/// judged with its steps checked on the timeline, as `podlife judge` does.
pub(crate) fn judge_timeline_file(
    case: &LoadedCase,
    path: &Path,
    names: &crate::files::Names,
    recorded: Option<&Attempt>,
) -> Attempt {
    let started = Timestamp::now();
    let t0 = Instant::now();
    let mut tl = match read_timeline_named(path, names) {
        Ok(tl) => tl,
        Err(e) => return errored(e.to_string(), started, t0, None),
    };
    match recorded.map(|a| a.status) {
        Some(AttemptStatus::Interrupted) => {
            tl.complete = false;
            return interrupted(started, t0, Some(tl));
        }
        Some(AttemptStatus::Error) => {
            let e = recorded
                .and_then(|a| a.error.clone())
                .unwrap_or_else(|| "the attempt ended in a harness error".into());
            return errored(e, started, t0, Some(tl));
        }
        _ => {}
    }
    let step_failure = incomplete_verdict(&tl)
        .or_else(|| objects_verdict(case, &tl))
        .or_else(|| judge::steps_verdict(&case.spec, &tl));
    conclude(case, tl, step_failure, started, t0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = json!({"containers": [{"name": "a", "args": ["x"]}], "volumes": []});
        assert_eq!(first_difference(&a, &a.clone(), "spec"), None);
        let b = json!({"containers": [{"name": "a", "args": ["y"]}], "volumes": []});
        assert_eq!(
            first_difference(&a, &b, "spec").as_deref(),
            Some("spec.containers[0].args[0]")
        );
        let c = json!({"containers": [{"name": "a", "args": ["x"]}, {"name": "b"}], "volumes": []});
        assert_eq!(first_difference(&a, &c, "spec").as_deref(), Some("spec.containers[1]"));
        let d = json!({"containers": [{"name": "a", "args": ["x"]}]});
        assert_eq!(first_difference(&a, &d, "spec").as_deref(), Some("spec.volumes"));
    }

    #[test]
    fn images_are_what_a_run_may_substitute() {
        let mut pod = json!({"spec": {
            "containers": [{"name": "a", "image": "busybox:1.36"}],
            "initContainers": [{"name": "i", "image": "r.example/x:1"}],
            "volumes": [{"name": "v", "image": {"reference": "r.example/kitten:1", "pullPolicy": "Always"}}]
        }});
        strip_images(&mut pod);
        assert_eq!(
            pod,
            json!({"spec": {
                "containers": [{"name": "a"}],
                "initContainers": [{"name": "i"}],
                "volumes": [{"name": "v", "image": {"pullPolicy": "Always"}}]
            }})
        );
    }
}
