//! Command-line interface (`Cli`): parses flags into a plan, validates it, then dispatches.
//! Exit codes: 0 all passed, 1 test failures, 2 usage/input/cluster errors.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::suite::{self, Suite};

#[derive(Parser, Debug)]
#[command(name = "podlife", version, about = "Certify how a Kubernetes node runs pods through their lifecycle")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check suites offline: YAML, fields, durations, regexes, manifests, containers, marks.
    Validate {
        /// Suite files or directories (default: suites/).
        paths: Vec<PathBuf>,
    },
    /// List cases as `suite::case: test` (libtest --list format).
    List(ListArgs),
    /// Print the JSON Schema of the suite format.
    Schema,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// Only cases whose `suite::case` name contains this (or equals it with --exact).
    pub filter: Option<String>,
    /// Match the filter exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip cases whose name contains this (repeatable).
    #[arg(long)]
    pub skip: Vec<String>,
    /// Suite files or directories.
    #[arg(long = "suites", default_value = "suites")]
    pub suites: Vec<PathBuf>,
}

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
        Command::List(args) => list(args),
        Command::Schema => {
            println!("{}", schema_json());
            ExitCode::SUCCESS
        }
    }
}

/// Loads suites or prints every problem (one line each) and returns exit code 2.
pub fn load_or_report(paths: &[PathBuf]) -> Result<Vec<Suite>, ExitCode> {
    suite::load_suites(paths).map_err(|errors| {
        for e in &errors {
            eprintln!("{e}");
        }
        eprintln!("error: {} problem{} found", errors.len(), if errors.len() == 1 { "" } else { "s" });
        ExitCode::from(2)
    })
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() { vec![PathBuf::from("suites")] } else { paths }
}

fn validate(paths: Vec<PathBuf>) -> ExitCode {
    match load_or_report(&default_paths(paths)) {
        Ok(suites) => {
            let cases: usize = suites.iter().map(|s| s.cases.len()).sum();
            println!("ok: {} suite{}, {} case{}", suites.len(), plural(suites.len()), cases, plural(cases));
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// libtest-style name filtering: substring (or exact) match, minus `--skip` substrings.
pub fn selected(name: &str, filter: Option<&str>, exact: bool, skip: &[String]) -> bool {
    let included = match filter {
        None => true,
        Some(f) if exact => name == f,
        Some(f) => name.contains(f),
    };
    included && !skip.iter().any(|s| if exact { name == s } else { name.contains(s.as_str()) })
}

fn list(args: ListArgs) -> ExitCode {
    let suites = match load_or_report(&args.suites) {
        Ok(s) => s,
        Err(c) => return c,
    };
    for s in &suites {
        for c in &s.cases {
            let name = c.full_name();
            if selected(&name, args.filter.as_deref(), args.exact, &args.skip) {
                println!("{name}: test");
            }
        }
    }
    ExitCode::SUCCESS
}

/// The JSON Schema of the suite format, pretty-printed.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(crate::suite::SuiteFile);
    serde_json::to_string_pretty(&schema).expect("a schema always serializes")
}
