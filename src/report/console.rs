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
        out.push_str(&format!("  {tag} [{}] {}\n", v.index, v.evidence));
    }
    out
}
