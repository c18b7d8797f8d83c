//! `podlife list`: the selected cases in libtest's `--list` format, or the upstream conformance mapping.

use std::process::ExitCode;

use super::{ListArgs, load_or_report};
use crate::suite;

pub(super) fn list(args: ListArgs) -> ExitCode {
    let suites = match load_or_report(&args.suites) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if args.upstream {
        return match suite::upstream::upstream_table(&suites, &args.upstream_list) {
            Ok(t) => {
                crate::out!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                crate::util::print_error(&e);
                ExitCode::from(2)
            }
        };
    }
    for s in &suites {
        for c in &s.cases {
            let name = c.full_name();
            if args.selection().selected(&name) {
                crate::outln!("{name}: test");
            }
        }
    }
    ExitCode::SUCCESS
}
