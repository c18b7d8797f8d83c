//! JUnit XML (`junit_report`) via quick-junit: one testsuite per suite file, one testcase per
//! case, the cluster fingerprint as properties, evidence plus events and log tails on failure,
//! flaky reruns as `flakyFailure`.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::judge::Outcome;
use crate::observe::Timeline;
use crate::results::{Attempt, AttemptStatus};
use crate::results::{CaseReport, CaseStatus, RunSummary, failure_message};

/// Lines of each container's log kept in system-out.
const LOG_TAIL: usize = 20;

/// The testsuite (and classname) of a case: its suite, or `suite@node` for an `--each-node`
/// copy.
///
/// With `--each-node` every node gets its own testsuite per suite rather than the node being
/// only a property: GitLab's test report, GitHub's JUnit actions (dorny/test-reporter,
/// action-junit-report) and Jenkins' JUnit plugin show suite and class names but do not display
/// properties, and Jenkins and GitLab merge test cases with the same classname and name — one
/// node's failure would hide behind another's pass. With the node in the suite and class name,
/// each renderer lists every node's result and a failure reads `probes@vm2 / liveness-fail`.
pub(crate) fn suite_name(c: &CaseReport) -> String {
    match &c.target_node {
        Some(n) => format!("{}@{n}", c.suite),
        None => c.suite.clone(),
    }
}

/// `dir`: the run's report folder, where the timelines of failed cases are read from (see
/// `CaseReport::timeline_in`).
pub(crate) fn junit_report(s: &RunSummary, dir: Option<&std::path::Path>) -> Report {
    let mut report = Report::new("podlife");
    report.set_timestamp(ts(s.started));
    report.set_time(dur(s.finished.duration_since(s.started).as_secs_f64()));
    let mut suites: BTreeMap<String, Vec<&CaseReport>> = BTreeMap::new();
    for c in &s.cases {
        suites.entry(suite_name(c)).or_default().push(c);
    }
    for (name, cases) in suites {
        let mut ts_ = TestSuite::new(name.as_str());
        ts_.add_property(("podlife.run", s.run_id.as_str()));
        let node = cases.first().and_then(|c| c.target_node.as_deref());
        match node {
            // A node's testsuite carries that node's fingerprint (not all N nodes').
            Some(n) => {
                for (k, v) in s.fingerprint.properties() {
                    if !k.starts_with("node.") {
                        ts_.add_property((k.as_str(), v.as_str()));
                    }
                }
                ts_.add_property(("node", n));
                if let Some(info) = s.fingerprint.nodes.iter().find(|i| i.name == n) {
                    for (k, v) in info.properties("node") {
                        ts_.add_property((k.as_str(), v.as_str()));
                    }
                }
                // `--each-group`: the nodes this node's verdicts also cover.
                if let Some(g) = s
                    .fleet
                    .iter()
                    .flat_map(|f| &f.groups)
                    .find(|g| g.nodes.iter().any(|x| x == n))
                    && !g.identical.is_empty()
                {
                    ts_.add_property(("takenAsIdentical", g.identical.join(",").as_str()));
                }
                // The node's row of the node × area matrix.
                if let Some(row) = s.fleet.iter().flat_map(|f| &f.nodes).find(|r| r.node == n) {
                    for a in &row.areas {
                        ts_.add_property((format!("certification.{}", a.area).as_str(), a.verdict.as_str()));
                    }
                    if let Some(o) = s.fleet.iter().flat_map(|f| &f.odd).find(|o| o.node == n) {
                        ts_.add_property(("oddNodeOut", o.differences.join("; ").as_str()));
                    }
                }
            }
            None => {
                for (k, v) in s.fingerprint.properties() {
                    ts_.add_property((k.as_str(), v.as_str()));
                }
            }
        }
        for c in cases {
            ts_.add_test_case(test_case(c, dir));
        }
        report.add_test_suite(ts_);
    }
    report
}

fn ts(t: jiff::Timestamp) -> chrono_like::DateTime {
    chrono_like::from(t)
}

/// Seconds as a `Duration`, saturating: a duration read back from a `summary.json` (`rejudge`,
/// `diff --format junit`) may be anything, and `from_secs_f64` panics on inf and overflow.
fn dur(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

fn test_case(c: &CaseReport, dir: Option<&std::path::Path>) -> TestCase {
    let last = c.last();
    let status = match c.status {
        CaseStatus::Passed => {
            let mut st = TestCaseStatus::success();
            // Harness errors before the passing retry: reported, never a flake of the node.
            for a in c.attempts.iter().take(c.attempts.len().saturating_sub(1)) {
                st.add_rerun(rerun(a));
            }
            st
        }
        // Seen failing and passing: `<failure type="flaky">` with the pass rate, never a green
        // test with `flakyFailure` children (CI would count it as passed).
        CaseStatus::Flaky => {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_type("flaky");
            st.set_message(failure_message(c).lines().next().unwrap_or("flaky").to_string());
            st.set_description(failure_message(c));
            for a in c.attempts.iter().take(c.attempts.len().saturating_sub(1)) {
                st.add_rerun(rerun(a));
            }
            st
        }
        CaseStatus::Failed | CaseStatus::Error => {
            let kind = if c.status == CaseStatus::Error {
                NonSuccessKind::Error
            } else {
                NonSuccessKind::Failure
            };
            let mut st = TestCaseStatus::non_success(kind);
            st.set_message(crate::results::first_problem(last));
            st.set_description(failure_message(c));
            for a in c.attempts.iter().take(c.attempts.len().saturating_sub(1)) {
                st.add_rerun(rerun(a));
            }
            st
        }
        // `<error type="undecided">`: CI reporters (GitHub, GitLab, Jenkins) show errors as
        // not green, and JUnit's `error` means "could not be decided properly" rather than "the
        // node did the wrong thing" — a `<failure>` would count it as a node failure, `skipped`
        // would let a pipeline look green.
        CaseStatus::Undecided => {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
            st.set_type("undecided");
            st.set_message(crate::results::first_problem(last));
            st.set_description(failure_message(c));
            for a in c.attempts.iter().take(c.attempts.len().saturating_sub(1)) {
                st.add_rerun(rerun(a));
            }
            st
        }
        CaseStatus::Ignored => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(c.ignore_reason.clone().unwrap_or_else(|| "ignored".into()));
            st
        }
        // No verdict either way: skipped, with the reason (never a pass, never a node failure).
        CaseStatus::Interrupted => {
            let mut st = TestCaseStatus::skipped();
            st.set_message("interrupted before it finished");
            st
        }
        CaseStatus::NotRun => {
            let mut st = TestCaseStatus::skipped();
            st.set_message("not run: the run was interrupted first");
            st
        }
    };
    let mut tc = TestCase::new(c.case.as_str(), status);
    tc.set_classname(suite_name(c));
    if let Some(n) = &c.target_node {
        tc.add_property(("node", n.as_str()));
    }
    if let Some(a) = last {
        tc.set_time(dur(a.duration_s));
        tc.set_timestamp(ts(a.started));
        tc.set_assertions(a.verdicts.len());
        tc.add_property(("apiRequests", a.api_requests.to_string().as_str()));
        if let Some(ns) = &a.cleanup.namespace {
            tc.add_property(("namespace", ns.as_str()));
        }
        if let Some(l) = &a.node_load {
            tc.add_property(("nodeCpu", l.describe().as_str()));
        }
        if let Some(l) = &a.cleanup.leftover {
            tc.add_property(("leftover", l.as_str()));
        }
    }
    if let Some(r) = &c.reference {
        tc.add_property(("reference", r.as_str()));
    }
    for u in &c.upstream {
        tc.add_property(("upstream", u.as_str()));
    }
    tc.set_system_out(system_out(c, dir));
    tc
}

fn rerun(a: &Attempt) -> TestRerun {
    let kind = if a.status == AttemptStatus::Error {
        NonSuccessKind::Error
    } else {
        NonSuccessKind::Failure
    };
    let mut r = TestRerun::new(kind);
    r.set_message(crate::results::first_problem(Some(a)));
    r.set_time(dur(a.duration_s));
    r.set_timestamp(ts(a.started));
    r
}

/// Evidence for every verdict; on failure also the pod's events and each container's log tail.
pub(crate) fn system_out(c: &CaseReport, dir: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    if !c.description.is_empty() {
        out.push_str(&format!("{}\n", c.description));
    }
    if let Some(a) = c.last() {
        for v in &a.verdicts {
            let tag = match v.outcome {
                Outcome::Pass => "PASS",
                Outcome::Fail => "FAIL",
                Outcome::Undecided => "UNDECIDED",
            };
            out.push_str(&format!("{tag} {}: {}\n", v.kind, v.evidence));
        }
    }
    let failed = !matches!(c.status, CaseStatus::Passed | CaseStatus::Ignored);
    let tl = match dir {
        Some(d) => c.timeline_in(d),
        None => c.timeline.as_ref().map(std::borrow::Cow::Borrowed),
    };
    if failed && let Some(tl) = tl {
        out.push_str(&collected(&tl));
    }
    out
}

/// Events and log tails, the "collectors on failure".
pub fn collected(tl: &Timeline) -> String {
    let mut out = String::from("\n--- events ---\n");
    for e in &tl.events {
        let on = e.container.as_deref().unwrap_or("pod");
        out.push_str(&format!(
            "{} {} {} ({on}) {}: {}\n",
            crate::judge::marks::hms(e.received),
            e.r#type,
            e.reason,
            e.label(),
            e.message.trim_end()
        ));
    }
    for c in &tl.pod.containers {
        let lines: Vec<_> = tl.logs_of(&c.name, None).collect();
        if lines.is_empty() {
            continue;
        }
        let skip = lines.len().saturating_sub(LOG_TAIL);
        out.push_str(&format!(
            "--- logs {} (last {} of {}) ---\n",
            c.name,
            lines.len() - skip,
            lines.len()
        ));
        for l in &lines[skip..] {
            out.push_str(&format!(
                "{} #{} {}\n",
                crate::judge::marks::hms(l.time),
                l.instance,
                l.text
            ));
        }
    }
    out
}

/// quick-junit takes chrono times; everything else in podlife uses jiff.
mod chrono_like {
    pub(crate) type DateTime = chrono::DateTime<chrono::FixedOffset>;
    pub fn from(t: jiff::Timestamp) -> DateTime {
        let nanos = u32::try_from(t.subsec_nanosecond()).unwrap_or(0);
        let utc = chrono::FixedOffset::east_opt(0).expect("UTC offset");
        chrono::DateTime::from_timestamp(t.as_second(), nanos)
            .map(|d| d.with_timezone(&utc))
            .unwrap_or_default()
    }
}
