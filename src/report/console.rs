//! Console rendering of verdicts (`verdict_lines`): one line per expectation.

use crate::judge::{Outcome, Verdict};

/// `  PASS [0] phase: final phase Failed`, one line per verdict.
pub(crate) fn verdict_lines(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let tag = match v.outcome {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Undecided => "UNDECIDED",
        };
        // A case-wide check (steps, timeline) is none of the case's expectations: its kind is
        // shown instead of an index.
        let at = match v.expectation() {
            Some(i) => i.to_string(),
            None => v.kind.to_string(),
        };
        // Evidence quotes log lines and recorded data: escaped so it cannot drive the terminal.
        out.push_str(&format!("  {tag} [{at}] {}\n", crate::util::printable(&v.evidence)));
    }
    out
}
