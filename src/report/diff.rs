//! `podlife diff` as a table (`render_table`) and as JUnit (`render_junit`), from the
//! comparison `results::diff` computes (re-exported here, where the CLI finds it).

pub use crate::results::diff::*;

use crate::results::diff::status_name;
use crate::util::fmt_secs;

/// The human table: fingerprints side by side, then every case that changed.
pub(crate) fn render_table(d: &DiffReport) -> String {
    // Everything quoted from the two summaries (case names, fingerprints, evidence) is escaped:
    // a summary is a file anyone may hand over, and ESC or U+202E must not reach the terminal.
    use crate::util::printable as p;
    let mut out = String::new();
    let fb = d.before_fingerprint.properties();
    let fa = d.after_fingerprint.properties();
    let mut keys: Vec<&String> = fb.iter().map(|(k, _)| k).chain(fa.iter().map(|(k, _)| k)).collect();
    keys.sort();
    keys.dedup();
    let get = |v: &[(String, String)], k: &str| {
        v.iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| p(v))
            .unwrap_or_else(|| "—".into())
    };
    let (head_b, head_a) = (format!("before ({})", p(&d.before)), format!("after ({})", p(&d.after)));
    out.push_str(&format!("{:<28} {head_b:<34} {head_a}\n", "fingerprint"));
    for k in keys {
        let (x, y) = (get(&fb, k), get(&fa, k));
        let mark = if x != y { "  *" } else { "" };
        out.push_str(&format!("{:<28} {x:<34} {y}{mark}\n", p(k)));
    }
    out.push('\n');
    let listed: Vec<&CaseDiff> = d.cases.iter().filter(|c| c.change != Change::Same).collect();
    if listed.is_empty() {
        out.push_str("no verdict changed, no case status changed, no timing moved by --min-change or more\n");
    } else {
        out.push_str(&format!(
            "{:<52} {:<12} {:<12} {}\n",
            "case", "before", "after", "change"
        ));
        for c in listed {
            out.push_str(&format!(
                "{:<52} {:<12} {:<12} {}\n",
                p(&c.case),
                status_name(c.before),
                status_name(c.after),
                change_name(c.change)
            ));
            for f in &c.verdict_flips {
                let tag = if f.is_regression() { "REGRESSION" } else { "changed" };
                out.push_str(&format!(
                    "    {tag} [{}] {} {} → {}: {}\n",
                    f.index,
                    f.kind,
                    f.before,
                    f.after,
                    p(&f.evidence)
                ));
            }
            for t in &c.timing {
                let tag = if t.regression { "REGRESSION" } else { "changed" };
                let pct = t.percent.map(|p| format!(" ({p:+.1}%)")).unwrap_or_default();
                out.push_str(&format!(
                    "    {tag} [{}] {}: {} → {}{pct}: {}\n",
                    t.index,
                    p(&timing_label(t)),
                    fmt_secs(t.before),
                    fmt_secs(t.after),
                    p(&t.reason)
                ));
            }
        }
    }
    let timings: Vec<&TimingChange> = d.cases.iter().flat_map(|c| &c.timing).collect();
    let timing_regressions = timings.iter().filter(|t| t.regression).count();
    let floor = match d.threshold {
        Some(Threshold::Percent(p)) => format!(", --threshold {p}%"),
        Some(Threshold::Seconds(s)) => format!(", --threshold {}", fmt_secs(s)),
        None => String::new(),
    };
    out.push_str(&format!(
        "\n{} cases compared, {} regression{}; {} timing{} moved (--min-change {}{floor}): {} beyond noise toward a bound, {} noise or harmless\n",
        d.cases.len(),
        d.regressions,
        if d.regressions == 1 { "" } else { "s" },
        timings.len(),
        if timings.len() == 1 { "" } else { "s" },
        fmt_secs(d.min_change),
        timing_regressions,
        timings.len() - timing_regressions,
    ));
    let from_suite = timings.iter().filter(|t| t.info_source == InfoSource::Suite).count();
    let unknown = timings.iter().filter(|t| t.info_source == InfoSource::Unknown).count();
    if from_suite + unknown > 0 {
        out.push_str(&format!(
            "(reports written before podlife recorded precision and bounds: {from_suite} timing{} described from the current suites, {unknown} unknown and informational only)\n",
            if from_suite == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The label of a timing; a back-off names which interval.
fn timing_label(t: &TimingChange) -> String {
    if t.kind == Some(crate::judge::VerdictKind::Backoff) {
        format!("{} interval {}", t.label, t.position + 1)
    } else {
        t.label.clone()
    }
}

fn change_name(c: Change) -> String {
    match c {
        Change::Regression => "REGRESSION".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The diff as JUnit: one testcase per case, a failure per regression.
pub(crate) fn render_junit(d: &DiffReport) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut r = Report::new("podlife-diff");
    let mut ts = TestSuite::new(format!("{} → {}", d.before, d.after));
    for c in &d.cases {
        let status = if c.is_regression() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let mut lines = vec![format!("{} → {}", status_name(c.before), status_name(c.after))];
            lines.extend(
                c.verdict_flips
                    .iter()
                    .filter(|f| f.is_regression())
                    .map(|f| format!("{} {} → {}: {}", f.kind, f.before, f.after, f.evidence)),
            );
            lines.extend(c.timing.iter().filter(|t| t.regression).map(|t| {
                format!(
                    "{}: {} → {}: {}",
                    t.label,
                    fmt_secs(t.before),
                    fmt_secs(t.after),
                    t.reason
                )
            }));
            s.set_message(lines.join("; "));
            s
        } else {
            TestCaseStatus::success()
        };
        ts.add_test_case(TestCase::new(c.case.as_str(), status));
    }
    r.add_test_suite(ts);
    r.to_string().unwrap_or_default()
}
