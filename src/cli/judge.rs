//! `podlife judge`: one case judged against a recording folder or a timeline JSON.

use std::process::ExitCode;

use super::{JudgeArgs, load_or_report, load_timeline};

pub(super) fn judge_cmd(args: JudgeArgs) -> ExitCode {
    let suites = match load_or_report(std::slice::from_ref(&args.suite)) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let Some(case) = suites.iter().flat_map(|s| &s.cases).find(|c| c.name() == args.case) else {
        let names: Vec<_> = suites
            .iter()
            .flat_map(|s| &s.cases)
            .map(|c| c.name().to_string())
            .collect();
        eprintln!(
            "error: {}: no case `{}` (cases: {})",
            args.suite.display(),
            args.case,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    // A recording is judged as `run --replay` judges it (steps checked): an attempt that did
    // not finish live (Ctrl-C, a harness error) is not judged as if it had.
    let (tl, verdicts) = if args.source.is_dir() {
        let rec = match crate::observe::Recording::read(&args.source) {
            Ok(r) => r,
            Err(e) => {
                crate::util::print_error(&e);
                return ExitCode::from(2);
            }
        };
        let attempt = crate::run::case::replay_recording(case, rec);
        let unfinished = match attempt.status {
            crate::results::AttemptStatus::Interrupted => Some("was interrupted"),
            crate::results::AttemptStatus::Error => Some("ended in a harness error"),
            _ => None,
        };
        if let Some(how) = unfinished {
            let why = attempt.error.as_deref().unwrap_or_default();
            if args.json {
                crate::outln!("[]");
            } else {
                crate::outln!(
                    "judging {} on {}: the recorded attempt {how} ({}): no verdict",
                    case.full_name(),
                    crate::util::printable(&args.source.display().to_string()),
                    crate::util::printable(why)
                );
                crate::outln!("result: not judged (the attempt did not finish)");
            }
            return ExitCode::from(1);
        }
        let Some(tl) = attempt.timeline else {
            crate::util::print_error(format!("{}: the recording gave no timeline", args.source.display()));
            return ExitCode::from(2);
        };
        (tl, attempt.verdicts)
    } else {
        let tl = match load_timeline(&args.source) {
            Ok(t) => t,
            Err(e) => {
                crate::util::print_error(&e);
                return ExitCode::from(2);
            }
        };
        let mut verdicts = crate::judge::judge_case(&case.spec, &tl);
        // Same rule as `run --replay`: the source must have done what the steps say; and an
        // incomplete timeline is at most undecided.
        if let Some(v) = crate::run::case::incomplete_verdict(&tl)
            .or_else(|| crate::run::case::objects_verdict(case, &tl))
            .or_else(|| crate::judge::steps_verdict(&case.spec, &tl))
        {
            verdicts.insert(0, v);
        }
        (tl, verdicts)
    };
    let failed = verdicts
        .iter()
        .filter(|v| v.outcome != crate::judge::Outcome::Pass)
        .count();
    let passed = verdicts.len() - failed;
    if args.json {
        // Valid JSON only on stdout, so it can be piped into jq.
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&verdicts).expect("verdicts serialize")
        );
    } else {
        crate::outln!(
            "judging {} on {} ({} snapshots, {} events, {} log lines)",
            case.full_name(),
            crate::util::printable(&args.source.display().to_string()),
            tl.snapshots.len(),
            tl.events.len(),
            tl.logs.len()
        );
        crate::out!("{}", crate::report::console::verdict_lines(&verdicts));
        crate::outln!(
            "result: {}. {passed} passed; {failed} failed or undecided",
            if failed == 0 { "ok" } else { "FAILED" }
        );
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
