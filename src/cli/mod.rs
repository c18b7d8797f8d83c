//! Command-line interface (`Cli`): parses flags into a plan, validates it, then dispatches.
//! Exit codes: 0 all passed, 1 test failures, 2 usage/input/cluster errors.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

mod args;
mod clean;
mod diff;
mod images;
mod judge;
mod list;
mod rejudge;
mod run;
pub use args::*;

use crate::suite::{self, Suite};

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Validate { paths } => validate(paths),
        Command::List(args) => list::list(args),
        Command::Judge(args) => judge::judge_cmd(args),
        Command::Run(args) => run::run_cmd(*args),
        Command::Images(args) => images::images_cmd(args),
        Command::Diff(args) => diff::diff_cmd(args),
        Command::Clean(args) => clean::clean_cmd(args),
        Command::Rejudge(args) => rejudge::rejudge_cmd(args),
        Command::Timeline { source, watch } => match load_timeline(&source) {
            Ok(tl) if watch => {
                // Reasons and messages come from the recording: escaped for the terminal.
                crate::out!(
                    "{}",
                    crate::util::printable_lines(&crate::observe::watch_transcript(&tl))
                );
                ExitCode::SUCCESS
            }
            Ok(tl) => {
                crate::outln!("{}", serde_json::to_string_pretty(&tl).expect("timeline serializes"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                crate::util::print_error(&e);
                ExitCode::from(2)
            }
        },
        Command::Schema => {
            crate::outln!("{}", schema_json());
            ExitCode::SUCCESS
        }
    }
}

/// Loads suites or prints every problem (one line each) and returns exit code 2.
pub(crate) fn load_or_report(paths: &[PathBuf]) -> Result<Vec<Suite>, ExitCode> {
    suite::load_suites(paths).map_err(|errors| {
        for e in &errors {
            eprintln!("{}", crate::util::printable(&e.to_string()));
        }
        eprintln!(
            "error: {} problem{} found",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        );
        ExitCode::from(2)
    })
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("suites")]
    } else {
        paths
    }
}

fn validate(paths: Vec<PathBuf>) -> ExitCode {
    let paths = default_paths(paths);
    match load_or_report(&paths) {
        Ok(suites) => {
            if let Err(e) = crate::suite::durations::Durations::beside(&paths, &crate::files::Names::default()) {
                eprintln!("error: {}", crate::util::printable(&e.to_string()));
                return ExitCode::from(2);
            }
            let cases: usize = suites.iter().map(|s| s.cases.len()).sum();
            crate::outln!(
                "ok: {} suite{}, {} case{}",
                suites.len(),
                plural(suites.len()),
                cases,
                plural(cases)
            );
            print_allowances(&suites);
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

/// The run-wide allowances the suites' bounds rest on, with how many bounds name each: printed
/// when any bound names one.
fn print_allowances(suites: &[crate::suite::Suite]) {
    let (counts, none, unsaid) = crate::suite::allowances::usage(suites);
    if counts.iter().all(|(_, n)| *n == 0) && none == 0 {
        return;
    }
    crate::outln!("allowances the bounds rest on (docs/suites.md, \"Load allowances\"):");
    for (a, n) in counts.iter().filter(|(a, _)| a.secs.is_some()) {
        crate::outln!(
            "  {:<12} {:<14} {:>3} bound{}  {}",
            a.name,
            a.size,
            n,
            plural(*n),
            a.cause
        );
    }
    crate::outln!(
        "  {none} bound{} rest on their mechanism's own time alone (`allow: []`)",
        plural(none)
    );
    if unsaid > 0 {
        crate::outln!("  {unsaid} bound{} name no allowances", plural(unsaid));
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The JSON Schema of the suite format, pretty-printed.
pub(crate) fn schema_json() -> String {
    let schema = schemars::schema_for!(crate::suite::SuiteFile);
    serde_json::to_string_pretty(&schema).expect("a schema always serializes")
}

/// Reads a timeline from a recording folder or a timeline JSON file (as written by `run`).
pub(crate) fn load_timeline(
    source: &std::path::Path,
) -> Result<crate::observe::Timeline, crate::run::case::TimelineFileError> {
    if source.is_dir() {
        let mut rec = crate::observe::Recording::read(source)?;
        let mut tl = rec.take_timeline();
        // An attempt cut short live (Ctrl-C, a harness error) observed only part of the pod's
        // life: its timeline says so, and judging it is at most undecided.
        if rec.outcome.interrupted || rec.outcome.error.is_some() {
            tl.complete = false;
        }
        return Ok(tl);
    }
    // A timeline says itself whether its observation ended (`complete`): it is kept as written,
    // and judging an incomplete one is at most undecided (see `judge_cmd`).
    let mut tl = crate::run::case::read_timeline_file(source)?;
    // Timelines written before the STATUS column existed get it computed from their snapshots.
    tl.fill_columns();
    Ok(tl)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rejudge` and embedders build on `RunOptions::default()`: it must be `podlife run`
    /// without flags, as clap parses it.
    #[test]
    fn run_options_default_is_what_clap_parses_without_flags() {
        let Command::Run(args) = Cli::try_parse_from(["podlife", "run"]).expect("parses").command else {
            panic!("not the run command");
        };
        let d = crate::run::RunOptions::default();
        assert_eq!(args.reports, d.reports_dir);
        assert_eq!(args.cleanup_timeout, d.cleanup_timeout);
        assert_eq!(args.request_timeout, d.request_timeout);
        assert_eq!(args.api_outage_budget, d.api_outage_budget);
        assert_eq!(args.settle, d.settle);
        assert_eq!(args.retries, d.retries);
        assert_eq!(args.repeat, d.repeat);
        assert_eq!(!args.no_record, d.record);
        assert_eq!(args.test_threads.map_or(0, |n| n as usize), d.test_threads);
    }
}
