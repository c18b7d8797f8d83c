//! `podlife diff`: two runs (or two nodes of one) compared, exit 1 on a regression.

use std::process::ExitCode;

use super::{DiffArgs, DiffFormat};
use crate::suite;

pub(super) fn diff_cmd(args: DiffArgs) -> ExitCode {
    use crate::report::diff;
    // Bundles are read in place of their run folder (unpacked for the duration of the call).
    let after_path = args.after.clone().unwrap_or_else(|| args.before.clone());
    // One after the other: a signal while unpacking the first stops before the second.
    let (xb, xa) = match crate::run::bundle::open(&args.before)
        .and_then(|b| crate::run::bundle::open(&after_path).map(|a| (b, a)))
    {
        Ok(x) => x,
        Err(e) => {
            crate::util::print_error(&e);
            return ExitCode::from(e.exit_code());
        }
    };
    let before_dir = xb.as_ref().map_or(args.before.clone(), |x| x.dir.clone());
    let after_dir = xa.as_ref().map_or(after_path.clone(), |x| x.dir.clone());
    let names = |x: &Option<crate::run::bundle::Extracted>| x.as_ref().map(|x| x.names.clone()).unwrap_or_default();
    let (before, after) = match (
        diff::load_summary_named(&before_dir, &names(&xb)),
        diff::load_summary_named(&after_dir, &names(&xa)),
    ) {
        (Ok((_, b)), Ok((_, a))) => (b, a),
        (Err(e), _) | (_, Err(e)) => {
            crate::util::print_error(&e);
            return ExitCode::from(2);
        }
    };
    // Node against node: each side is the run as that node saw it (its cases, its fingerprint).
    let view = |s: crate::results::RunSummary, node: &Option<String>| match node {
        Some(n) => crate::results::fleet::node_view(&s, n),
        None => Ok(s),
    };
    let (before, after) = match (view(before, &args.node_a), view(after, &args.node_b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            crate::util::print_error(&e);
            return ExitCode::from(2);
        }
    };
    // Older reports: describe their measurements from the suites, if they load (quietly: a
    // diff does not need them for anything else).
    let defs = suite::load_suites(&args.suites)
        .map(|s| diff::definitions(&s))
        .unwrap_or_default();
    let opts = diff::DiffOptions {
        threshold: args.threshold,
        min_change: args.min_change.as_secs_f64(),
    };
    let d = diff::diff(&before, &after, &opts, &defs);
    match args.format {
        DiffFormat::Table => crate::out!("{}", diff::render_table(&d)),
        DiffFormat::Json => crate::outln!("{}", serde_json::to_string_pretty(&d).expect("diff serializes")),
        DiffFormat::Junit => crate::outln!("{}", diff::render_junit(&d)),
    }
    if d.regressions > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
