//! `podlife rejudge`: a finished run replayed with the current suites, and what changed against it.

use std::process::ExitCode;

use super::{RejudgeArgs, load_or_report};
use crate::suite;

/// `rejudge`: replays a finished run's recordings (or judges its timelines) with the current
/// suites into a new report folder, then shows what changed against the original.
pub(super) fn rejudge_cmd(args: RejudgeArgs) -> ExitCode {
    let extracted = match crate::run::bundle::open(&args.run) {
        Ok(x) => x,
        Err(e) => {
            crate::util::print_error(&e);
            return ExitCode::from(e.exit_code());
        }
    };
    let dir = extracted.as_ref().map_or(args.run.clone(), |x| x.dir.clone());
    if extracted.is_some() {
        crate::run::interrupt::phase("unpacked");
    }
    let original = match read_original(&args.run, &dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let suites = match suites_of_run(&args.suites, &original) {
        Ok(s) => s,
        Err(c) => return c,
    };
    // What `diff` needs of the suites (tolerances, bounds), taken from the suites just loaded.
    let defs = crate::report::diff::definitions(&suites);
    // A replay sends no request and pins no node: `podlife run`'s defaults for everything else.
    let opts = crate::run::RunOptions {
        test_threads: 4,
        replay: Some(dir.clone()),
        names: extracted.as_ref().map(|x| x.names.clone()).unwrap_or_default(),
        reports_dir: args.reports.clone(),
        junit: args.junit.clone(),
        quiet: true,
        repeat: original.repeat,
        upstream_applicable: suite::upstream::upstream_applicable(&args.suites),
        record: false,
        ..crate::run::RunOptions::default()
    };
    let mut outcome = match crate::run::run(opts, suites) {
        Ok(o) => o,
        Err(code) => return code,
    };
    crate::run::interrupt::phase("publishing");
    let published = crate::report::publish(
        crate::report::PublishOptions {
            dir: &outcome.report_dir,
            junit: args.junit.as_deref(),
            quiet: args.quiet,
            certify: false,
        },
        &mut outcome.summary,
    );
    if published.is_err() {
        return ExitCode::from(2);
    }
    print_changes(&args, &original, &outcome, &defs);
    drop(extracted);
    outcome.exit_code()
}

/// The finished run's `summary.json`, read from its (unpacked) folder `dir`.
fn read_original(run: &std::path::Path, dir: &std::path::Path) -> Result<crate::results::RunSummary, ExitCode> {
    crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
        .map_err(|e| e.problem.to_string())
        .and_then(|t| serde_json::from_str::<crate::results::RunSummary>(&t).map_err(|e| e.to_string()))
        .map_err(|e| {
            crate::util::print_error(format!("{}: not a finished run (summary.json: {e})", run.display()));
            ExitCode::from(2)
        })
}

/// The current suites, kept to the run's own cases; a case the suites no longer have is said,
/// and a run none of whose cases they have is an error.
fn suites_of_run(
    paths: &[std::path::PathBuf],
    original: &crate::results::RunSummary,
) -> Result<Vec<suite::Suite>, ExitCode> {
    let mut suites = load_or_report(paths)?;
    let ran: std::collections::BTreeSet<String> = original.cases.iter().map(|c| c.case_name()).collect();
    let known: std::collections::BTreeSet<String> =
        suites.iter().flat_map(|s| &s.cases).map(|c| c.full_name()).collect();
    for gone in ran.difference(&known) {
        eprintln!(
            "note: {} ran in {} but is not in the current suites: not re-judged",
            crate::util::printable(gone),
            crate::util::printable(&original.run_id)
        );
    }
    for s in &mut suites {
        s.cases.retain(|c| ran.contains(&c.full_name()));
    }
    suites.retain(|s| !s.cases.is_empty());
    if suites.is_empty() {
        crate::util::print_error(format!(
            "none of the cases of run {} is in {}: nothing to re-judge",
            original.run_id,
            suites_label(paths)
        ));
        return Err(ExitCode::from(2));
    }
    Ok(suites)
}

/// The suite paths as the messages name them.
fn suites_label(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The re-judged run's counts and what changed against the original, as `diff` shows it.
fn print_changes(
    args: &RejudgeArgs,
    original: &crate::results::RunSummary,
    outcome: &crate::run::RunOutcome,
    defs: &crate::report::diff::Definitions,
) {
    // The same defaults as `podlife diff`: the streams are the same, so timings move only
    // where a changed expectation measures something else.
    let d = crate::report::diff::diff(
        original,
        &outcome.summary,
        &crate::report::diff::DiffOptions {
            threshold: None,
            min_change: 0.1,
        },
        defs,
    );
    crate::outln!(
        "re-judged run {} with {}: {} passed, {} flaky, {} failed, {} undecided, {} errors, {} ignored{}; against the original:",
        crate::util::printable(&original.run_id),
        suites_label(&args.suites),
        outcome.summary.passed,
        outcome.summary.flaky,
        outcome.summary.failed,
        outcome.summary.undecided,
        outcome.summary.errors,
        outcome.summary.ignored,
        // Cases the live run did not finish stay unfinished: said, never left out of the count.
        match (outcome.summary.interrupted_cases, outcome.summary.not_run) {
            (0, 0) => String::new(),
            (i, n) => format!(", {i} interrupted, {n} not run"),
        }
    );
    crate::out!("{}", crate::report::diff::render_table(&d));
    crate::outln!(
        "compare in full: podlife diff {} {}",
        args.run.display(),
        outcome.report_dir.display()
    );
}
