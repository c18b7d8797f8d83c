//! Console rendering of verdicts (`verdict_lines`): one line per expectation.

use crate::judge::{Outcome, Verdict};

/// `  PASS [0] phase: final phase Failed`, one line per verdict.
pub fn verdict_lines(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let tag = match v.outcome {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Undecided => "UNDECIDED",
        };
        // A failed step (index usize::MAX) is not one of the case's expectations.
        let at = if v.index == usize::MAX {
            v.kind.clone()
        } else {
            v.index.to_string()
        };
        // Evidence quotes log lines and recorded data: escaped so it cannot drive the terminal.
        out.push_str(&format!("  {tag} [{at}] {}\n", crate::util::printable(&v.evidence)));
    }
    out
}
