//! The HTML report (`render`): one self-contained `index.html` with the run header, the cluster
//! fingerprint and, per case, its verdicts and an inline SVG timeline (`svg`).
//!
//! The page must open from an archived report folder on an offline machine, so it carries no
//! scripts and no network assets (inline CSS, system fonts), and no `http(s)://` text at all.
//! It is also well-formed XML, so strict parsers (and the tests) can read it: elements without
//! content are written with an end tag, never as HTML void elements.
//!
//! Markup is built with maud: every value spliced in is escaped by construction (through
//! [`Text`], which also keeps the page free of URLs and of characters XML forbids).

mod lanes;
mod svg;

use std::borrow::Cow;

use jiff::Timestamp;
use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

use crate::judge::marks::hms;
use crate::judge::{Outcome, Verdict};
use crate::results::stats::{AreaVerdict, Fleet, OddDifference, OddNode};
use crate::results::{Attempt, AttemptStatus};
use crate::results::{CaseReport, CaseStatus, RunSummary};
use crate::util::fmt_secs;

const CSS: &str = include_str!("report.css");

/// Text as the page shows it; maud escapes `&`, `<`, `>` and `"`. Two content rules on top:
/// control characters other than tab and newlines are not allowed in XML 1.0, so they become
/// U+FFFD; and `://` is written with character references, as log lines and event messages may
/// quote URLs and the page should not contain a single literal `http(s)://` (it renders the same).
pub(crate) struct Text<'a>(pub &'a str);

impl Render for Text<'_> {
    fn render_to(&self, buf: &mut String) {
        let bad = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
        let clean: Cow<str> = if self.0.contains(bad) {
            Cow::Owned(self.0.chars().map(|c| if bad(c) { '\u{FFFD}' } else { c }).collect())
        } else {
            Cow::Borrowed(self.0)
        };
        for (i, part) in clean.split("://").enumerate() {
            if i > 0 {
                buf.push_str(":&#47;&#47;");
            }
            part.render_to(buf);
        }
    }
}

/// Shorthand for [`Text`].
fn t(s: &str) -> Text<'_> {
    Text(s)
}

/// Renders the whole page. Deterministic: the same summary gives the same bytes.
pub fn render(s: &RunSummary) -> String {
    let mut out = vec![];
    write_page(s, None, &mut out).expect("writing to memory");
    String::from_utf8(out).expect("maud writes UTF-8")
}

/// Writes the page to `w` case by case, each case's timeline read from the run's report folder
/// `dir` when it is not in memory (see `CaseReport::timeline_in`): the page of a fleet run is
/// far larger than what the run holds in memory.
pub(crate) fn write_page(
    s: &RunSummary,
    dir: Option<&std::path::Path>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let cases = ordered(s);
    let head = html! {
        (DOCTYPE)
        // Opened here and closed below: the cases are written in between, one at a time.
        (PreEscaped("<html lang=\"en\">"))
        head {
            // Void elements written as XML's empty elements (maud writes HTML's `<meta>`).
            (PreEscaped("<meta charset=\"utf-8\"/><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>"))
            title { "podlife run " (t(&s.run_id)) }
            style { (PreEscaped(CSS)) }
        }
        (PreEscaped("<body>"))
        (header(s))
        (PreEscaped("<main>"))
        @if let Some(f) = &s.fleet {
            (fleet(f))
        }
        (index(&cases))
        (legend())
    };
    w.write_all(head.into_string().as_bytes())?;
    for c in &cases {
        let tl = match dir {
            Some(d) => c.timeline_in(d),
            None => c.timeline.as_ref().map(std::borrow::Cow::Borrowed),
        };
        w.write_all(case(c, tl.as_deref()).into_string().as_bytes())?;
    }
    w.write_all(b"</main></body></html>\n")
}

/// A reference without its scheme: the page shows it as text, not as a link.
fn strip_scheme(r: &str) -> &str {
    r.strip_prefix("https://")
        .or_else(|| r.strip_prefix("http://"))
        .unwrap_or(r)
}

/// Failures first (what a reader opens the report for), then flaky, passed, ignored; within a
/// group by `suite::case`.
fn ordered(s: &RunSummary) -> Vec<&CaseReport> {
    let group = |st: CaseStatus| match st {
        CaseStatus::Failed | CaseStatus::Undecided | CaseStatus::Error | CaseStatus::Interrupted => 0,
        CaseStatus::Flaky => 1,
        CaseStatus::Passed => 2,
        CaseStatus::Ignored | CaseStatus::NotRun => 3,
    };
    let mut v: Vec<&CaseReport> = s.cases.iter().collect();
    v.sort_by_cached_key(|c| (group(c.status), c.full_name()));
    v
}

fn badge(st: CaseStatus) -> Markup {
    let n = st.as_str();
    html! { span class=(format!("badge b-{n}")) { (n.to_uppercase()) } }
}

/// Anchor id of a case: names are DNS-like, anything else becomes `_`.
fn anchor(c: &CaseReport) -> String {
    let id: String = c
        .full_name()
        .replace("::", "--")
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    format!("case-{id}")
}

fn when(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
}

fn header(s: &RunSummary) -> Markup {
    let dur = s.finished.duration_since(s.started).as_secs_f64();
    html! {
        header {
            h1 { "podlife run " code { (t(&s.run_id)) } }
            p.times {
                "started " (when(s.started)) " · finished " (when(s.finished)) " · took " (fmt_secs(dur))
                @if s.interrupted {
                    " · "
                    b {
                        "interrupted"
                        @if let Some(by) = &s.interrupted_by { " (" (t(by)) ")" }
                    }
                }
            }
            p.counts {
                @for (n, label, class) in [
                    (s.passed, "passed", "passed"),
                    (s.flaky, "flaky", "flaky"),
                    (s.failed, "failed", "failed"),
                    (s.errors, "errors", "error"),
                    (s.ignored, "ignored", "ignored"),
                ] {
                    span class=(format!("count c-{class}{}", if n == 0 { " zero" } else { "" })) { b { (n) } " " (label) }
                    " "
                }
                // Only a run with such cases has these; other reports stay as they were.
                @for (n, label, class) in [
                    (s.undecided, "undecided", "undecided"),
                    (s.interrupted_cases, "interrupted", "interrupted"),
                    (s.not_run, "not run", "not-run"),
                ] {
                    @if n > 0 {
                        span class=(format!("count c-{class}")) { b { (n) } " " (label) }
                        " "
                    }
                }
            }
            @if !s.leftovers.is_empty() {
                div.leftovers {
                    b { "Leftovers" } " (could not be cleaned up):"
                    ul { @for l in &s.leftovers { li { code { (t(l)) } } } }
                }
            }
            (fingerprint(s))
        }
    }
}

/// The fleet of an `--each-node` run: the node × area matrix (areas only, so ten areas fit a
/// laptop screen), the fingerprint groups as a table, and what set nodes apart, one table per
/// finding.
fn fleet(f: &Fleet) -> Markup {
    let areas: Vec<&str> = f
        .nodes
        .first()
        .map(|n| n.areas.iter().map(|a| a.area.as_str()).collect())
        .unwrap_or_default();
    let findings = findings(f);
    let by_group = f.groups.iter().any(|g| !g.areas.is_empty());
    html! {
        section.fleet {
            @if by_group {
                h2 { "Fingerprint groups × areas" }
                div.wide {
                    table.matrix {
                        tr {
                            th { "group" } th { "ran" } th { "taken as identical (not run)" }
                            @for a in &areas { th { (t(a)) } }
                        }
                        @for (i, g) in f.groups.iter().enumerate() {
                            tr {
                                th { (i + 1) }
                                td { (t(&g.nodes.join(", "))) }
                                td { (t(&g.identical.join(", "))) }
                                @for a in &g.areas {
                                    td { span class=(format!("badge {}", verdict_class(a.verdict))) title=(t(&area_title(a))) { (t(a.verdict.as_str())) } }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Nodes × areas" }
            div.wide {
                table.matrix {
                    tr {
                        th { "node" } th { "group" }
                        @for a in &areas { th { (t(a)) } }
                    }
                    @for n in &f.nodes {
                        tr {
                            th {
                                (t(&n.node))
                                @match findings.iter().find(|x| x.names(&n.node)) {
                                    Some(Finding::Odd(_)) => { " " span class="badge b-failed" title="odd node out: see below" { "ODD" } }
                                    Some(Finding::Pair(..)) => { " " span class="badge b-flaky" title="differs from the other node of its group: see below" { "DIFFERS" } }
                                    None => {}
                                }
                            }
                            td { (n.group + 1) }
                            @for a in &n.areas {
                                td { span class=(format!("badge {}", verdict_class(a.verdict))) title=(t(&area_title(a))) { (t(a.verdict.as_str())) } }
                            }
                        }
                    }
                }
            }
            h3 { "Fingerprint groups" }
            div.wide {
                table.groups {
                    tr { th { "group" } th { "nodes" } @if by_group { th { "taken as identical (not run)" } } th { "kubelet" } th { "runtime" } th { "handlers" } th { "kernel" } th { "OS image" } th { "arch" } }
                    @for (i, g) in f.groups.iter().enumerate() {
                        @let fp = f.nodes.iter().find(|n| n.group == i).map(|n| &n.fingerprint);
                        tr title=(t(&g.fingerprint)) {
                            td { (i + 1) }
                            td { (t(&g.nodes.join(", "))) }
                            @if by_group { td { (t(&g.identical.join(", "))) } }
                            @if let Some(fp) = fp {
                                td { (t(&fp.kubelet_version)) }
                                td { (t(&fp.container_runtime_version)) }
                                td { (t(&fp.runtime_handlers.join(", "))) }
                                td { (t(&fp.kernel_version)) }
                                td { (t(&fp.os_image)) }
                                td { (t(&fp.architecture)) }
                            } @else {
                                td colspan="6" { (t(&g.fingerprint)) }
                            }
                        }
                    }
                }
            }
            @for x in &findings {
                (finding(f, x))
            }
        }
    }
}

/// What set nodes of a fingerprint group apart.
enum Finding<'a> {
    /// One node against the rest of its group (two or more peers, or the worse of two).
    Odd(&'a OddNode),
    /// Both nodes of a group of two, each worse than the other somewhere: no majority says
    /// which is right, so neither is "the odd one".
    Pair(&'a OddNode, &'a OddNode),
}

impl Finding<'_> {
    fn names(&self, node: &str) -> bool {
        match self {
            Finding::Odd(o) => o.node == node,
            Finding::Pair(a, b) => a.node == node || b.node == node,
        }
    }
}

fn findings(f: &Fleet) -> Vec<Finding<'_>> {
    let mut out = vec![];
    for (i, g) in f.groups.iter().enumerate() {
        let odd: Vec<&OddNode> = f.odd.iter().filter(|o| o.group == i).collect();
        match odd[..] {
            [a, b] if g.nodes.len() == 2 => out.push(Finding::Pair(a, b)),
            _ => out.extend(odd.into_iter().map(Finding::Odd)),
        }
    }
    out
}

fn finding(f: &Fleet, x: &Finding) -> Markup {
    match x {
        Finding::Odd(o) => {
            let peers: Vec<&str> = f
                .groups
                .get(o.group)
                .map(|g| g.nodes.iter().filter(|n| **n != o.node).map(String::as_str).collect())
                .unwrap_or_default();
            let rest = format!("rest of group {}", o.group + 1);
            let rows: Vec<(&OddDifference, bool)> = o.rows.iter().map(|r| (r, false)).collect();
            html! {
                h3 {
                    "odd node out: " (t(&o.node))
                    span.sub { " differs from the " (rest) " (" (t(&peers.join(", "))) ")" }
                }
                (differences(o, &rows, &o.node, &rest))
            }
        }
        Finding::Pair(a, b) => {
            // One table over both nodes' findings: a's rows as they are, b's with the columns
            // swapped, so each column is one node.
            let mut rows: Vec<(&OddDifference, bool)> = a
                .rows
                .iter()
                .map(|r| (r, false))
                .chain(b.rows.iter().map(|r| (r, true)))
                .collect();
            // By case; within one, each node's rows in their order (status first, then by
            // expectation index), the stable sort keeping them.
            rows.sort_by(|x, y| x.0.case.cmp(&y.0.case));
            html! {
                h3 {
                    (t(&a.node)) " and " (t(&b.node)) " differ"
                    span.sub { " (group " (a.group + 1) ", same fingerprint; with two nodes no majority tells which one is odd)" }
                }
                @if a.rows.is_empty() || b.rows.is_empty() {
                    (old_differences(a))
                    (old_differences(b))
                } @else {
                    (differences(a, &rows, &a.node, &b.node))
                }
            }
        }
    }
}

/// The differences as a table: case, what, the value in column `left`, in column `right`, and
/// why. A row flagged `true` is the right column's node's own finding (its values swapped).
fn differences(o: &OddNode, rows: &[(&OddDifference, bool)], left: &str, right: &str) -> Markup {
    html! {
        @if rows.is_empty() {
            (old_differences(o))
        } @else {
            div.wide {
                table.odd {
                    tr { th { "case" } th { "what" } th { (t(left)) } th { (t(right)) } th { "why" } }
                    @for (r, swapped) in rows {
                        @let (l, rt) = if *swapped { (&r.peers, &r.here) } else { (&r.here, &r.peers) };
                        tr {
                            td.case { (t(&r.case)) }
                            td { (t(&r.what)) }
                            td.v { (t(l)) }
                            td.v { (t(rt)) }
                            td.why { (t(&r.why)) }
                        }
                    }
                }
            }
        }
    }
}

/// A summary written before the differences had rows: its lines as a list.
fn old_differences(o: &OddNode) -> Markup {
    html! {
        ul.odd { @for d in &o.differences { li { (t(d)) } } }
    }
}

fn verdict_class(v: AreaVerdict) -> &'static str {
    match v {
        AreaVerdict::Conformant => "b-passed",
        AreaVerdict::NotConformant => "b-failed",
        AreaVerdict::Undecided => "b-interrupted",
        AreaVerdict::Skipped => "b-ignored",
    }
}

/// A matrix cell's tooltip: the counts behind its verdict.
fn area_title(a: &crate::results::stats::AreaResult) -> String {
    let mut title = format!(
        "{} passed, {} failed, {} skipped, {} without a verdict",
        a.passed, a.failed, a.skipped, a.undecided
    );
    if !a.failing.is_empty() {
        title.push_str(&format!("; failing: {}", a.failing.join(", ")));
    }
    if !a.flaky_cases.is_empty() {
        title.push_str(&format!("; flaky: {}", a.flaky_cases.join(", ")));
    }
    title
}

fn fingerprint(s: &RunSummary) -> Markup {
    let fp = &s.fingerprint;
    let server = if fp.server_version.is_empty() {
        "unknown"
    } else {
        &fp.server_version
    };
    let row = |k: &str, v: &str| html! { tr { th { (t(k)) } td colspan="5" { (t(v)) } } };
    html! {
        table.fp {
            @if let Some(src) = &fp.source { (row("source", src)) }
            (row("server", server))
            @if let Some(p) = fp.platform.as_deref().filter(|p| !p.is_empty()) { (row("platform", p)) }
            @if !fp.nodes.is_empty() {
                tr.nodes { th { "node" } th { "kubelet" } th { "runtime" } th { "kernel" } th { "OS image" } th { "arch" } }
                @for n in &fp.nodes {
                    tr {
                        td { (t(&n.name)) @if !n.ready { " (not ready)" } }
                        td { (t(&n.kubelet_version)) }
                        td { (t(&n.container_runtime_version)) }
                        td { (t(&n.kernel_version)) }
                        td { (t(&n.os_image)) }
                        td { (t(&n.architecture)) }
                    }
                }
            }
        }
    }
}

fn index(cases: &[&CaseReport]) -> Markup {
    let (ignored, ran): (Vec<&CaseReport>, Vec<&CaseReport>) =
        cases.iter().partition(|c| c.status == CaseStatus::Ignored);
    html! {
        nav.index {
            h2 { "Cases" }
            table { @for c in &ran { (index_row(c)) } }
            // Ignored cases (no recording, server too old) can outnumber the rest: folded.
            @if !ignored.is_empty() {
                details.ignored {
                    summary { (ignored.len()) " ignored" }
                    table { @for c in &ignored { (index_row(c)) } }
                }
            }
        }
    }
}

fn index_row(c: &CaseReport) -> Markup {
    let note = match c.status {
        CaseStatus::Ignored => c.ignore_reason.clone().unwrap_or_else(|| "ignored".into()),
        CaseStatus::Interrupted => "interrupted before it finished".into(),
        CaseStatus::NotRun => "not run: the run was interrupted first".into(),
        CaseStatus::Failed | CaseStatus::Undecided | CaseStatus::Error => crate::results::first_problem(c.last()),
        CaseStatus::Flaky => crate::results::failure_message(c)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        CaseStatus::Passed => crate::results::harness_error_note(c).unwrap_or_default(),
    };
    html! {
        tr {
            td { (badge(c.status)) }
            td { a href={ "#" (anchor(c)) } { (t(&c.full_name())) } }
            td.note { (t(&note)) }
        }
    }
}

fn legend() -> Markup {
    let items = [
        ("sw-wait", "waiting"),
        ("sw-run", "running"),
        ("sw-unc", "start/end within status precision (1 s)"),
        ("sw-end", "terminated (exit 0)"),
        ("sw-endbad", "terminated (exit ≠ 0)"),
        ("sw-ready", "ready"),
        ("sw-log", "log line"),
        ("sw-evn", "event"),
        ("sw-evw", "warning event"),
        ("sw-act", "our action"),
        ("sw-mark", "mark"),
        ("sw-gap", "gap (red: failed)"),
    ];
    html! {
        p.legend {
            "Timelines: x = seconds since the case's first action or pod snapshot."
            @for (class, what) in items {
                " " span class=(format!("sw {class}")) {} (what)
            }
        }
    }
}

fn outcome_tag(o: Outcome) -> (&'static str, &'static str) {
    match o {
        Outcome::Pass => ("PASS", "v-pass"),
        Outcome::Fail => ("FAIL", "v-fail"),
        Outcome::Undecided => ("UNDECIDED", "v-undecided"),
    }
}

/// The facts under a case's title, joined by ` · `.
fn case_meta(c: &CaseReport) -> Vec<Markup> {
    let mut meta = vec![];
    if let Some(r) = &c.reference {
        meta.push(html! { "reference " code { (t(strip_scheme(r))) } });
    }
    if !c.tags.is_empty() {
        meta.push(html! {
            "tags"
            @for tag in &c.tags { " " code { (t(tag)) } }
        });
    }
    if let Some(a) = c.last() {
        meta.push(html! { "took " (fmt_secs(a.duration_s)) });
        // The load its timings were measured under.
        if let Some(l) = &a.node_load {
            meta.push(html! { "node CPU " (t(&l.describe())) });
        }
        if let Some(ns) = &a.cleanup.namespace {
            meta.push(html! { "namespace " code { (t(ns)) } });
        }
        if a.cleanup.kept {
            meta.push(html! { "namespace kept" });
        }
    }
    if c.attempts.len() > 1 {
        meta.push(html! { (c.attempts.len()) " attempts" });
    }
    if let Some(f) = &c.timeline_file {
        meta.push(html! { "timeline " code { (t(f)) } });
    }
    meta
}

fn case(c: &CaseReport, timeline: Option<&crate::observe::Timeline>) -> Markup {
    let meta = case_meta(c);
    let why = match c.status {
        CaseStatus::Ignored => Some(format!("ignored: {}", c.ignore_reason.as_deref().unwrap_or("ignored"))),
        CaseStatus::Interrupted => Some("interrupted before it finished: no verdict".into()),
        CaseStatus::NotRun => Some("not run: the run was interrupted first".into()),
        CaseStatus::Undecided => Some(
            "undecided: no verdict failed, but evidence was lost where one could not be decided (see UNDECIDED below): not a pass, not a node failure".into(),
        ),
        _ => None,
    };
    html! {
        section class=(format!("case s-{}", c.status.as_str())) id=(anchor(c)) {
            h2 { (badge(c.status)) " " span.name { (t(&c.full_name())) } }
            @if !c.description.is_empty() { p.desc { (t(&c.description)) } }
            @if !meta.is_empty() {
                p.meta {
                    @for (i, m) in meta.iter().enumerate() {
                        @if i > 0 { " · " }
                        (m)
                    }
                }
            }
            @if !c.upstream.is_empty() {
                details.upstream {
                    summary { "certifies upstream conformance tests" }
                    ul { @for u in &c.upstream { li { code { (t(u)) } } } }
                }
            }
            @if let Some(why) = &why { p.why { (t(why)) } }
            @if let Some(a) = c.last() {
                @if let Some(e) = &a.error { p.error { "error: " (t(e)) } }
                (verdicts(&a.verdicts))
            }
            @if c.attempts.len() > 1 {
                (earlier_attempts(&c.attempts[..c.attempts.len() - 1]))
            }
            @if let Some(tl) = timeline {
                (case_timeline(c, tl))
            }
        }
    }
}

/// The drawing, the `kubectl get pods -w` transcript and, for a case that did not pass, the
/// events and log tails.
fn case_timeline(c: &CaseReport, tl: &crate::observe::Timeline) -> Markup {
    let verdicts = c.last().map(|a| a.verdicts.as_slice()).unwrap_or_default();
    let failed = !matches!(c.status, CaseStatus::Passed | CaseStatus::Ignored);
    html! {
        @if let Some(drawing) = svg::timeline(tl, verdicts) {
            figure.timeline {
                (drawing)
                @if let Some(o) = tl.origin() {
                    figcaption {
                        "t = 0 at " (hms(o)) " UTC · pod " code { (t(&tl.pod.name)) }
                        @if let Some(n) = &tl.pod.node { " on node " code { (t(n)) } }
                    }
                }
            }
        }
        @if !tl.snapshots.is_empty() {
            // The pod as users see it: `kubectl get pods -w`, with exact receive times.
            details.watch {
                summary { "kubectl get pods -w" }
                pre { (t(crate::observe::watch_transcript(tl).trim_end())) }
            }
        }
        @if failed {
            details.collected {
                summary { "events and log tails" }
                pre { (t(super::junit::collected(tl).trim())) }
            }
        }
    }
}

fn verdicts(vs: &[Verdict]) -> Markup {
    html! {
        @if !vs.is_empty() {
            ul.verdicts {
                @for v in vs {
                    @let (tag, class) = outcome_tag(v.outcome);
                    li class=(class) {
                        span.tag { (tag) } " " span.kind { (v.kind.as_str()) } " " (t(&v.evidence))
                        // The mechanism each measured value depends on: what `podlife diff`
                        // allows it to move by from run to run.
                        @for m in &v.measures {
                            @let mech = crate::judge::mechanism::mechanism(m.noise);
                            " " span.noise { "[noise class: " (mech.name) " — " (t(if m.why.is_empty() { mech.why } else { &m.why })) "]" }
                        }
                    }
                }
            }
        }
    }
}

fn earlier_attempts(attempts: &[Attempt]) -> Markup {
    html! {
        details.attempts {
            summary { (attempts.len()) " earlier attempt" @if attempts.len() != 1 { "s" } }
            ol {
                @for a in attempts {
                    li {
                        (attempt_word(a.status)) " after " (fmt_secs(a.duration_s)) ": "
                        (t(&crate::results::first_problem(Some(a))))
                        (verdicts(&a.verdicts))
                    }
                }
            }
        }
    }
}

fn attempt_word(s: AttemptStatus) -> &'static str {
    match s {
        AttemptStatus::Passed => "passed",
        AttemptStatus::Failed => "failed",
        AttemptStatus::Undecided => "undecided",
        AttemptStatus::Error => "error",
        AttemptStatus::Interrupted => "interrupted",
        AttemptStatus::NotComparable => "not comparable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        html! { (Text(s)) }.into_string()
    }

    #[test]
    fn text_is_escaped_without_urls_or_characters_xml_forbids() {
        assert_eq!(text("a < b & \"c\" > d"), "a &lt; b &amp; &quot;c&quot; &gt; d");
        assert_eq!(
            text("see https://example.org/x and ftp://y"),
            "see https:&#47;&#47;example.org/x and ftp:&#47;&#47;y"
        );
        assert_eq!(
            text("bell\u{7} esc\u{1b}[0m\ttab\nline"),
            "bell\u{FFFD} esc\u{FFFD}[0m\ttab\nline"
        );
        assert_eq!(text("://"), ":&#47;&#47;");
    }
}
