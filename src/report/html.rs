//! The HTML report (`render`): one self-contained `index.html` with the run header, the cluster
//! fingerprint and, per case, its verdicts and an inline SVG timeline.
//!
//! The page must open from an archived report folder on an offline machine, so it carries no
//! scripts and no network assets (inline CSS, system fonts), and no `http(s)://` text at all.
//! It is also well-formed XML, so strict parsers (and the tests) can read it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jiff::Timestamp;

use crate::judge::marks::hms;
use crate::judge::{Outcome, Verdict};
use crate::observe::{ActionKind, EventOccurrence, Instance, State, Timeline};
use crate::results::{Attempt, AttemptStatus};
use crate::results::{CaseReport, CaseStatus, RunSummary};
use crate::suite::ContainerKind;
use crate::util::fmt_secs;

/// Renders the whole page. Deterministic: the same summary gives the same bytes.
pub fn render(s: &RunSummary) -> String {
    let mut out = String::with_capacity(256 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    let _ = writeln!(out, "<title>podlife run {}</title>", esc(&s.run_id));
    let _ = writeln!(out, "<style>{CSS}</style>\n</head>\n<body>");
    header(&mut out, s);
    out.push_str("<main>\n");
    let cases = ordered(s);
    index(&mut out, &cases);
    legend(&mut out);
    for c in cases {
        case(&mut out, c);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// Escapes text and attribute values for HTML and XML alike. Control characters other than
/// tab and newlines are not allowed in XML 1.0, so they become U+FFFD. `://` is written with
/// character references: log lines and event messages may quote URLs, and the page should not
/// contain a single literal `http(s)://` (it renders the same).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    if out.contains("://") {
        out = out.replace("://", ":&#47;&#47;");
    }
    out
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

fn badge(st: CaseStatus) -> String {
    let n = st.as_str();
    format!("<span class=\"badge b-{n}\">{}</span>", n.to_uppercase())
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

fn header(out: &mut String, s: &RunSummary) {
    out.push_str("<header>\n");
    let _ = writeln!(out, "<h1>podlife run <code>{}</code></h1>", esc(&s.run_id));
    let dur = s.finished.duration_since(s.started).as_secs_f64();
    let _ = writeln!(
        out,
        "<p class=\"times\">started {} · finished {} · took {}{}</p>",
        esc(&when(s.started)),
        esc(&when(s.finished)),
        esc(&fmt_secs(dur)),
        match &s.interrupted_by {
            Some(by) if s.interrupted => format!(" · <b>interrupted ({})</b>", esc(by)),
            _ if s.interrupted => " · <b>interrupted</b>".to_string(),
            _ => String::new(),
        }
    );
    out.push_str("<p class=\"counts\">");
    for (n, label, class) in [
        (s.passed, "passed", "passed"),
        (s.flaky, "flaky", "flaky"),
        (s.failed, "failed", "failed"),
        (s.errors, "errors", "error"),
        (s.ignored, "ignored", "ignored"),
    ] {
        let zero = if n == 0 { " zero" } else { "" };
        let _ = write!(out, "<span class=\"count c-{class}{zero}\"><b>{n}</b> {label}</span> ");
    }
    // Only a run with such cases has these; other reports stay as they were.
    for (n, label, class) in [
        (s.undecided, "undecided", "undecided"),
        (s.interrupted_cases, "interrupted", "interrupted"),
        (s.not_run, "not run", "not-run"),
    ] {
        if n > 0 {
            let _ = write!(out, "<span class=\"count c-{class}\"><b>{n}</b> {label}</span> ");
        }
    }
    out.push_str("</p>\n");
    if !s.leftovers.is_empty() {
        out.push_str("<div class=\"leftovers\"><b>Leftovers</b> (could not be cleaned up):<ul>");
        for l in &s.leftovers {
            let _ = write!(out, "<li><code>{}</code></li>", esc(l));
        }
        out.push_str("</ul></div>\n");
    }
    fingerprint(out, s);
    if let Some(f) = &s.fleet {
        matrix(out, f);
    }
    out.push_str("</header>\n");
}

/// The node × area matrix of an `--each-node` run, each node's fingerprint beside its row, then
/// the fingerprint groups and the odd nodes out.
fn matrix(out: &mut String, f: &crate::results::stats::Fleet) {
    use crate::results::stats::AreaVerdict;
    out.push_str("<h2>Nodes × areas</h2>\n<table class=\"matrix\">\n<tr><th>node</th><th>group</th><th>kubelet</th><th>runtime</th><th>handlers</th><th>kernel</th><th>OS image</th>");
    let areas: Vec<&str> = f
        .nodes
        .first()
        .map(|n| n.areas.iter().map(|a| a.area.as_str()).collect())
        .unwrap_or_default();
    for a in &areas {
        let _ = write!(out, "<th>{}</th>", esc(a));
    }
    out.push_str("</tr>\n");
    for n in &f.nodes {
        let fp = &n.fingerprint;
        let odd = f.odd.iter().any(|o| o.node == n.node);
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&n.node),
            if odd {
                " <span class=\"badge b-failed\">ODD</span>"
            } else {
                ""
            },
            n.group + 1,
            esc(&fp.kubelet_version),
            esc(&fp.container_runtime_version),
            esc(&fp.runtime_handlers.join(", ")),
            esc(&fp.kernel_version),
            esc(&fp.os_image)
        );
        for a in &n.areas {
            let class = match a.verdict {
                AreaVerdict::Conformant => "b-passed",
                AreaVerdict::NotConformant => "b-failed",
                AreaVerdict::Undecided => "b-interrupted",
                AreaVerdict::Skipped => "b-ignored",
            };
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
            let _ = write!(
                out,
                "<td><span class=\"badge {class}\" title=\"{}\">{}</span></td>",
                esc(&title),
                esc(a.verdict.as_str())
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<ul class=\"groups\">\n");
    for (i, g) in f.groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "<li>group {}: {} — {}</li>",
            i + 1,
            esc(&g.fingerprint),
            esc(&g.nodes.join(", "))
        );
    }
    for o in &f.odd {
        let _ = writeln!(
            out,
            "<li><strong>odd node out: {}</strong> differs from the rest of group {}: {}</li>",
            esc(&o.node),
            o.group + 1,
            esc(&o.differences.join("; "))
        );
    }
    out.push_str("</ul>\n");
}

fn fingerprint(out: &mut String, s: &RunSummary) {
    let fp = &s.fingerprint;
    out.push_str("<table class=\"fp\">\n");
    let row = |out: &mut String, k: &str, v: &str| {
        let _ = writeln!(out, "<tr><th>{}</th><td colspan=\"5\">{}</td></tr>", esc(k), esc(v));
    };
    if let Some(src) = &fp.source {
        row(out, "source", src);
    }
    let server = if fp.server_version.is_empty() {
        "unknown"
    } else {
        &fp.server_version
    };
    row(out, "server", server);
    if let Some(p) = fp.platform.as_deref().filter(|p| !p.is_empty()) {
        row(out, "platform", p);
    }
    if !fp.nodes.is_empty() {
        out.push_str(
            "<tr class=\"nodes\"><th>node</th><th>kubelet</th><th>runtime</th><th>kernel</th><th>OS image</th><th>arch</th></tr>\n",
        );
        for n in &fp.nodes {
            let _ = writeln!(
                out,
                "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&n.name),
                if n.ready { "" } else { " (not ready)" },
                esc(&n.kubelet_version),
                esc(&n.container_runtime_version),
                esc(&n.kernel_version),
                esc(&n.os_image),
                esc(&n.architecture)
            );
        }
    }
    out.push_str("</table>\n");
}

fn index(out: &mut String, cases: &[&CaseReport]) {
    out.push_str("<nav class=\"index\"><h2>Cases</h2>\n<table>\n");
    let (ignored, ran): (Vec<&CaseReport>, Vec<&CaseReport>) =
        cases.iter().partition(|c| c.status == CaseStatus::Ignored);
    for c in ran {
        index_row(out, c);
    }
    out.push_str("</table>\n");
    // Ignored cases (no recording, server too old) can outnumber the rest: folded.
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"ignored\"><summary>{} ignored</summary><table>",
            ignored.len()
        );
        for c in ignored {
            index_row(out, c);
        }
        out.push_str("</table></details>\n");
    }
    out.push_str("</nav>\n");
}

fn index_row(out: &mut String, c: &CaseReport) {
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
    let _ = writeln!(
        out,
        "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td class=\"note\">{}</td></tr>",
        badge(c.status),
        anchor(c),
        esc(&c.full_name()),
        esc(&note)
    );
}

fn legend(out: &mut String) {
    out.push_str(
        "<p class=\"legend\">Timelines: x = seconds since the case's first action or pod snapshot. \
<span class=\"sw sw-wait\"></span>waiting \
<span class=\"sw sw-run\"></span>running \
<span class=\"sw sw-unc\"></span>start/end within status precision (1 s) \
<span class=\"sw sw-end\"></span>terminated (exit 0) \
<span class=\"sw sw-endbad\"></span>terminated (exit ≠ 0) \
<span class=\"sw sw-ready\"></span>ready \
<span class=\"sw sw-log\"></span>log line \
<span class=\"sw sw-evn\"></span>event \
<span class=\"sw sw-evw\"></span>warning event \
<span class=\"sw sw-act\"></span>our action \
<span class=\"sw sw-mark\"></span>mark \
<span class=\"sw sw-gap\"></span>gap (red: failed)</p>\n",
    );
}

fn outcome_tag(o: Outcome) -> (&'static str, &'static str) {
    match o {
        Outcome::Pass => ("PASS", "v-pass"),
        Outcome::Fail => ("FAIL", "v-fail"),
        Outcome::Undecided => ("UNDECIDED", "v-undecided"),
    }
}

fn case(out: &mut String, c: &CaseReport) {
    let st = c.status.as_str();
    let _ = writeln!(out, "<section class=\"case s-{st}\" id=\"{}\">", anchor(c));
    let _ = writeln!(
        out,
        "<h2>{} <span class=\"name\">{}</span></h2>",
        badge(c.status),
        esc(&c.full_name())
    );
    if !c.description.is_empty() {
        let _ = writeln!(out, "<p class=\"desc\">{}</p>", esc(&c.description));
    }
    let mut meta = vec![];
    if let Some(r) = &c.reference {
        meta.push(format!("reference <code>{}</code>", esc(strip_scheme(r))));
    }
    if !c.tags.is_empty() {
        let tags: Vec<String> = c.tags.iter().map(|t| format!("<code>{}</code>", esc(t))).collect();
        meta.push(format!("tags {}", tags.join(" ")));
    }
    if let Some(a) = c.last() {
        meta.push(format!("took {}", esc(&fmt_secs(a.duration_s))));
        if let Some(ns) = &a.cleanup.namespace {
            meta.push(format!("namespace <code>{}</code>", esc(ns)));
        }
        if a.cleanup.kept {
            meta.push("namespace kept".into());
        }
    }
    if c.attempts.len() > 1 {
        meta.push(format!("{} attempts", c.attempts.len()));
    }
    if let Some(f) = &c.timeline_file {
        meta.push(format!("timeline <code>{}</code>", esc(f)));
    }
    if !meta.is_empty() {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", meta.join(" · "));
    }
    if !c.upstream.is_empty() {
        out.push_str("<details class=\"upstream\"><summary>certifies upstream conformance tests</summary><ul>");
        for u in &c.upstream {
            let _ = write!(out, "<li><code>{}</code></li>", esc(u));
        }
        out.push_str("</ul></details>\n");
    }
    match c.status {
        CaseStatus::Ignored => {
            let why = c.ignore_reason.as_deref().unwrap_or("ignored");
            let _ = writeln!(out, "<p class=\"why\">ignored: {}</p>", esc(why));
        }
        CaseStatus::Interrupted => out.push_str("<p class=\"why\">interrupted before it finished: no verdict</p>\n"),
        CaseStatus::NotRun => out.push_str("<p class=\"why\">not run: the run was interrupted first</p>\n"),
        CaseStatus::Undecided => out.push_str(
            "<p class=\"why\">undecided: no verdict failed, but evidence was lost where one could not be decided (see UNDECIDED below): not a pass, not a node failure</p>\n",
        ),
        _ => {}
    }
    if let Some(a) = c.last() {
        if let Some(e) = &a.error {
            let _ = writeln!(out, "<p class=\"error\">error: {}</p>", esc(e));
        }
        verdicts(out, &a.verdicts);
    }
    if c.attempts.len() > 1 {
        earlier_attempts(out, &c.attempts[..c.attempts.len() - 1]);
    }
    if let Some(tl) = &c.timeline {
        let verdicts = c.last().map(|a| a.verdicts.as_slice()).unwrap_or_default();
        if let Some(svg) = timeline_svg(tl, verdicts) {
            out.push_str("<figure class=\"timeline\">\n");
            out.push_str(&svg);
            if let Some(o) = tl.origin() {
                let _ = writeln!(
                    out,
                    "<figcaption>t = 0 at {} UTC · pod <code>{}</code>{}</figcaption>",
                    esc(&hms(o)),
                    esc(&tl.pod.name),
                    tl.pod
                        .node
                        .as_deref()
                        .map(|n| format!(" on node <code>{}</code>", esc(n)))
                        .unwrap_or_default()
                );
            }
            out.push_str("</figure>\n");
        }
        if !tl.snapshots.is_empty() {
            // The pod as users see it: `kubectl get pods -w`, with exact receive times.
            let _ = writeln!(
                out,
                "<details class=\"watch\"><summary>kubectl get pods -w</summary><pre>{}</pre></details>",
                esc(crate::observe::watch_transcript(tl).trim_end())
            );
        }
        let failed = !matches!(c.status, CaseStatus::Passed | CaseStatus::Ignored);
        if failed {
            let _ = writeln!(
                out,
                "<details class=\"collected\"><summary>events and log tails</summary><pre>{}</pre></details>",
                esc(super::junit::collected(tl).trim())
            );
        }
    }
    out.push_str("</section>\n");
}

fn verdicts(out: &mut String, vs: &[Verdict]) {
    if vs.is_empty() {
        return;
    }
    out.push_str("<ul class=\"verdicts\">\n");
    for v in vs {
        let (tag, class) = outcome_tag(v.outcome);
        let _ = writeln!(
            out,
            "<li class=\"{class}\"><span class=\"tag\">{tag}</span> <span class=\"kind\">{}</span> {}</li>",
            esc(&v.kind),
            esc(&v.evidence)
        );
    }
    out.push_str("</ul>\n");
}

fn earlier_attempts(out: &mut String, attempts: &[Attempt]) {
    let _ = writeln!(
        out,
        "<details class=\"attempts\"><summary>{} earlier attempt{}</summary><ol>",
        attempts.len(),
        if attempts.len() == 1 { "" } else { "s" }
    );
    for a in attempts {
        let st = match a.status {
            AttemptStatus::Passed => "passed",
            AttemptStatus::Failed => "failed",
            AttemptStatus::Undecided => "undecided",
            AttemptStatus::Error => "error",
            AttemptStatus::Interrupted => "interrupted",
        };
        let _ = write!(
            out,
            "<li>{st} after {}: {}",
            esc(&fmt_secs(a.duration_s)),
            esc(&crate::results::first_problem(Some(a)))
        );
        verdicts(out, &a.verdicts);
        out.push_str("</li>\n");
    }
    out.push_str("</ol></details>\n");
}

// ---------------------------------------------------------------------------------------------
// The timeline SVG. Everything is placed in relative seconds first, then scaled to a fixed
// plot width so a 3 s case and a 215 s crash loop both fill the figure.

const LABEL_W: f64 = 150.0;
const PLOT_W: f64 = 1000.0;
const RIGHT_PAD: f64 = 28.0;
const SVG_W: f64 = LABEL_W + PLOT_W + RIGHT_PAD;
const FONT: f64 = 11.0;
/// Average glyph width of the 11 px sans-serif labels, a little generous so labels do not touch.
const CHAR_W: f64 = 6.3;
const LANE_H: f64 = 22.0;
const BAR_H: f64 = 14.0;
const EVENT_ROW_H: f64 = 14.0;
const LABEL_ROW_H: f64 = 13.0;
const GAP_ROW_H: f64 = 26.0;

fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

struct Scale {
    lo: f64,
    hi: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        LABEL_W + (t - self.lo) / (self.hi - self.lo) * PLOT_W
    }
}

/// Greedy label rows: a label goes into the first row where it overlaps nothing.
#[derive(Default)]
struct Rows(Vec<Vec<(f64, f64)>>);

impl Rows {
    fn place(&mut self, max_rows: usize, a: f64, b: f64) -> Option<usize> {
        const PAD: f64 = 5.0;
        for (i, row) in self.0.iter_mut().enumerate() {
            if row.iter().all(|&(x, y)| b + PAD <= x || a >= y + PAD) {
                row.push((a, b));
                return Some(i);
            }
        }
        if self.0.len() < max_rows {
            self.0.push(vec![(a, b)]);
            return Some(self.0.len() - 1);
        }
        None
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Where a label of width `w` for an item at `x` goes: right of it, or left of it when it
/// would leave the figure. Returns (text x, anchor, extent start, extent end).
fn beside(x: f64, w: f64) -> (f64, &'static str, f64, f64) {
    if x + 4.0 + w <= SVG_W - 2.0 {
        (x + 4.0, "start", x, x + 4.0 + w)
    } else {
        (x - 4.0, "end", x - 4.0 - w, x)
    }
}

/// One row per container instance.
struct Lane {
    label: String,
    kind: ContainerKind,
    title: String,
    waiting: Option<(f64, f64, String)>,
    /// Where the start lies given 1 s status times (startedAt .. first seen running).
    start_unc: Option<(f64, f64)>,
    running: Option<(f64, f64)>,
    /// Where the end lies (finishedAt .. first seen terminated).
    end_unc: Option<(f64, f64)>,
    /// Terminated by then: instant, exit 0, label.
    end: Option<(f64, bool, String)>,
    logs: Vec<f64>,
    /// Spans in which the status reported this instance ready (receive times).
    ready: Vec<(f64, f64)>,
}

fn timeline_svg(tl: &Timeline, verdicts: &[Verdict]) -> Option<String> {
    let origin = tl.origin()?;
    let r = |t: Timestamp| t.duration_since(origin).as_secs_f64();

    // The data range: everything that is drawn.
    let mut times: Vec<f64> = vec![0.0];
    times.extend(tl.snapshots.iter().map(|s| r(s.received)));
    times.extend(tl.deleted.map(r));
    for i in &tl.instances {
        times.extend(
            [
                i.started_at,
                i.finished_at,
                i.first_seen_running,
                i.first_seen_terminated,
            ]
            .into_iter()
            .flatten()
            .map(r),
        );
        times.push(r(i.first_seen));
    }
    times.extend(tl.events.iter().map(|e| r(e.received)));
    times.extend(tl.logs.iter().map(|l| r(l.time)));
    for a in &tl.actions {
        times.push(r(a.sent));
        times.extend(a.done.map(r));
    }
    for v in verdicts {
        times.extend(v.marks.iter().map(|m| r(m.at)));
    }
    let data_lo = times.iter().copied().fold(f64::INFINITY, f64::min);
    let data_hi = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = (data_hi - data_lo).max(0.5);
    // A little room on the left so first items stay visible, and a tenth on the right for the
    // labels of whatever ends last (exit codes, marks, gaps).
    let sc = Scale {
        lo: data_lo - span * 0.01,
        hi: data_lo + span * 1.1,
    };

    let mut body = String::new();
    let mut y = 6.0;

    // Our actions: labels on top; the dashed lines are drawn last, across everything.
    let mut act_rows = Rows::default();
    let mut act_labels = String::new();
    for a in &tl.actions {
        let x = sc.x(r(a.sent));
        let mut label = match a.kind {
            ActionKind::Apply => "apply".to_string(),
            ActionKind::Delete => "delete".to_string(),
            ActionKind::Patch => "patch".to_string(),
            ActionKind::ApplyObject => format!("apply {}", a.detail.as_deref().unwrap_or("object")),
            ActionKind::Ephemeral => format!("ephemeral {}", a.detail.as_deref().unwrap_or("container")),
            ActionKind::Exec => format!("exec {}", a.exec.as_ref().map_or("", |x| x.name.as_str())),
            ActionKind::UpdateObject => format!("apply {}", a.detail.as_deref().unwrap_or("object")),
            ActionKind::DeleteObject => format!("delete {}", a.detail.as_deref().unwrap_or("object")),
        };
        if let Some(g) = a.grace_period_seconds {
            label.push_str(&format!(" (grace {g}s)"));
        }
        let (tx, anchor, a0, a1) = beside(x, text_w(&label));
        let row = act_rows.place(3, a0, a1).unwrap_or(0);
        let mut title = format!("{label} sent {} (+{})", hms(a.sent), fmt_secs(r(a.sent)));
        if let Some(d) = a.done {
            title.push_str(&format!(", done +{}", fmt_secs(r(d))));
        }
        if let Some(d) = &a.detail {
            title.push_str(&format!(": {d}"));
        }
        let _ = writeln!(
            act_labels,
            "<text class=\"act-l\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\"><title>{}</title>{}</text>",
            y + FONT + row as f64 * LABEL_ROW_H,
            esc(&title),
            esc(&label)
        );
    }
    let act_top = y;
    if act_rows.len() > 0 {
        y += act_rows.len() as f64 * LABEL_ROW_H + 4.0;
    }
    let lines_top = y;

    // Events: one row per reason (in order of first occurrence), each occurrence a mark; the
    // reason is the row label, so labels never overlap however dense a crash loop gets.
    let mut by_reason: Vec<(String, Vec<&EventOccurrence>)> = vec![];
    for e in &tl.events {
        match by_reason.iter_mut().find(|(r, _)| *r == e.reason) {
            Some((_, v)) => v.push(e),
            None => by_reason.push((e.reason.clone(), vec![e])),
        }
    }
    let mut stripe = 0usize;
    if !by_reason.is_empty() {
        let _ = writeln!(
            body,
            "<text class=\"group\" x=\"4\" y=\"{:.1}\">events</text>",
            y + EVENT_ROW_H - 3.0
        );
    }
    for (reason, occ) in &by_reason {
        let warning = occ.iter().any(|e| e.r#type == "Warning");
        lane_bg(&mut body, y, EVENT_ROW_H, &mut stripe);
        let n = crate::observe::timeline::occurrences(occ);
        let label = if n > 1 {
            format!("{reason} ×{n}")
        } else {
            reason.clone()
        };
        let _ = writeln!(
            body,
            "<text class=\"lane-l{}\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            if warning { " warn" } else { "" },
            LABEL_W - 8.0,
            y + EVENT_ROW_H - 3.5,
            esc(&truncate(&label, 22))
        );
        for e in occ {
            let x = sc.x(r(e.received));
            let on = e.container.as_deref().unwrap_or("pod");
            let title = format!(
                "{} ({}) on {on} {} received {} (+{}){}: {}",
                e.reason,
                e.r#type,
                e.label(),
                hms(e.received),
                fmt_secs(r(e.received)),
                if e.coalesced { " [coalesced]" } else { "" },
                e.message.trim_end()
            );
            let _ = writeln!(
                body,
                "<rect class=\"{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"{:.1}\"><title>{}</title></rect>",
                if e.r#type == "Warning" { "ev-w" } else { "ev-n" },
                x - 1.5,
                y + 2.0,
                EVENT_ROW_H - 4.0,
                esc(&title)
            );
        }
        y += EVENT_ROW_H;
    }
    if !by_reason.is_empty() {
        y += 4.0;
    }

    // Pod phase and deletion.
    let phases = phase_spans(tl, &r, data_hi);
    if !phases.is_empty() {
        lane_bg(&mut body, y, LANE_H, &mut stripe);
        lane_label(&mut body, "pod phase", y + LANE_H / 2.0 + 4.0);
        for (from, to, phase) in &phases {
            let (x0, x1) = (sc.x(*from), sc.x(*to));
            let w = (x1 - x0).max(1.0);
            let _ = writeln!(
                body,
                "<rect class=\"ph ph-{}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}</title></rect>",
                phase.to_lowercase(),
                y + (LANE_H - BAR_H) / 2.0,
                BAR_H,
                esc(&format!("phase {phase} from +{} (received)", fmt_secs(*from)))
            );
            if text_w(phase) + 6.0 < w {
                let _ = writeln!(
                    body,
                    "<text class=\"in-bar\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x0 + 3.0,
                    y + LANE_H / 2.0 + 4.0,
                    esc(phase)
                );
            }
        }
        if let Some(d) = tl.deleted {
            let x = sc.x(r(d));
            let label = "deleted";
            let (tx, anchor, _, _) = beside(x, text_w(label));
            let _ = writeln!(
                body,
                "<rect class=\"gone\" x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"{:.1}\"><title>{}</title></rect>\n<text class=\"end-l\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{label}</text>",
                x - 1.5,
                y + 2.0,
                LANE_H - 4.0,
                esc(&format!("DELETED received {} (+{})", hms(d), fmt_secs(r(d)))),
                y + LANE_H / 2.0 + 4.0
            );
        }
        y += LANE_H;
    }

    // kubectl's STATUS column, one band per text (same receive-time clock as the phase).
    let statuses = status_spans(tl, &r, data_hi);
    if !statuses.is_empty() {
        lane_bg(&mut body, y, LANE_H, &mut stripe);
        lane_label(&mut body, "STATUS", y + LANE_H / 2.0 + 4.0);
        for (from, to, text) in &statuses {
            let (x0, x1) = (sc.x(*from), sc.x(*to));
            let w = (x1 - x0).max(1.0);
            let _ = writeln!(
                body,
                "<rect class=\"st st-{}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}</title></rect>",
                status_class(text),
                y + (LANE_H - BAR_H) / 2.0,
                BAR_H,
                esc(&format!("STATUS {text} from +{} (received)", fmt_secs(*from)))
            );
            if text_w(text) + 6.0 < w {
                let _ = writeln!(
                    body,
                    "<text class=\"in-bar\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x0 + 3.0,
                    y + LANE_H / 2.0 + 4.0,
                    esc(text)
                );
            }
        }
        y += LANE_H;
    }

    // Container instances.
    for lane in lanes(tl, &r, data_hi) {
        draw_lane(&mut body, &sc, y, &lane, &mut stripe);
        y += LANE_H;
    }

    // Marks used by the verdicts, grouped by instant (a gap's end is often an order's element).
    let mut marks: BTreeMap<Timestamp, (Vec<String>, bool)> = BTreeMap::new();
    for v in verdicts {
        for m in &v.marks {
            let e = marks.entry(m.at).or_default();
            let label = m.label.replace('`', "");
            if !e.0.contains(&label) {
                e.0.push(label);
            }
            e.1 |= v.outcome == Outcome::Fail;
        }
    }
    if !marks.is_empty() {
        y += 4.0;
        let mut rows = Rows::default();
        let mut placed = vec![];
        for (at, (labels, failed)) in &marks {
            let x = sc.x(r(*at));
            let label = labels.join(" = ");
            let w = text_w(&label);
            let (mut tx, mut anchor, a0, a1) = beside(x, w);
            let mut row = rows.place(4, a0, a1);
            // No room on that side: try the other one before leaving it to the tooltip.
            if row.is_none() && anchor == "start" && x - 4.0 - w >= LABEL_W {
                row = rows.place(4, x - 4.0 - w, x);
                (tx, anchor) = (x - 4.0, "end");
            }
            placed.push((x, tx, anchor, row, label, *failed, *at));
        }
        let label_rows = rows.len().max(1) as f64;
        let dot_y = y + label_rows * LABEL_ROW_H + 6.0;
        let h = dot_y + 6.0 - y;
        lane_bg(&mut body, y, h, &mut stripe);
        lane_label(&mut body, "marks", dot_y + 4.0);
        for (x, tx, anchor, row, label, failed, at) in placed {
            let class = if failed { "mark fail" } else { "mark" };
            let lclass = if failed { "mark-l fail" } else { "mark-l" };
            let title = format!("{label} at {} (+{})", hms(at), fmt_secs(r(at)));
            if let Some(row) = row {
                let ly = y + FONT + row as f64 * LABEL_ROW_H;
                let _ = writeln!(
                    body,
                    "<line class=\"mark-stem\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{dot_y:.1}\"/>\n<text class=\"{lclass}\" x=\"{tx:.1}\" y=\"{ly:.1}\" text-anchor=\"{anchor}\">{}</text>",
                    ly - FONT + 2.0,
                    esc(&label)
                );
            }
            let _ = writeln!(
                body,
                "<circle class=\"{class}\" cx=\"{x:.1}\" cy=\"{dot_y:.1}\" r=\"3.5\"><title>{}</title></circle>",
                esc(&title)
            );
        }
        y += h;
    }

    // Gaps: a bracket between the two instants with the measured value, packed into rows.
    let gaps: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.kind == "gap" && v.marks.len() == 2 && !v.measured.is_empty())
        .collect();
    if !gaps.is_empty() {
        y += 2.0;
        let mut rows = Rows::default();
        let mut placed = vec![];
        for v in &gaps {
            let (a, b) = (sc.x(r(v.marks[0].at)), sc.x(r(v.marks[1].at)));
            let (x0, x1) = (a.min(b), a.max(b));
            let failed = v.outcome == Outcome::Fail;
            let label = format!(
                "{}{}→{} {}",
                if failed { "✗ " } else { "" },
                v.marks[0].label.replace('`', ""),
                v.marks[1].label.replace('`', ""),
                fmt_secs(v.measured[0])
            );
            let w = text_w(&label);
            // Centred over the bracket when it fits, else beside its right end.
            let (tx, anchor, e0, e1) = if w + 8.0 <= x1 - x0 {
                ((x0 + x1) / 2.0, "middle", x0, x1)
            } else {
                let (tx, anchor, l0, l1) = beside(x1, w);
                (tx, anchor, l0.min(x0), l1.max(x1))
            };
            let row = rows.place(usize::MAX, e0, e1).unwrap_or(0);
            placed.push((x0, x1, tx, anchor, row, label, failed, *v));
        }
        let top = y;
        let h = rows.len() as f64 * GAP_ROW_H;
        lane_bg(&mut body, top, h, &mut stripe);
        lane_label(&mut body, "gaps", top + GAP_ROW_H / 2.0 + 4.0);
        for (x0, x1, tx, anchor, row, label, failed, v) in placed {
            let ry = top + row as f64 * GAP_ROW_H;
            let line_y = ry + 19.0;
            let _ = writeln!(
                body,
                "<g class=\"gap{}\"><title>{}</title><path d=\"M{x0:.1} {:.1} V{line_y:.1} H{x1:.1} V{:.1}\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text></g>",
                if failed { " fail" } else { "" },
                esc(&v.evidence),
                line_y - 6.0,
                line_y - 6.0,
                ry + 12.0,
                esc(&label)
            );
        }
        y += h;
    }

    // Axis with tick labels in seconds.
    let lines_bottom = y + 2.0;
    let axis_y = lines_bottom;
    let step = tick_step(sc.hi - sc.lo);
    let mut grid = String::new();
    let mut axis = String::new();
    let _ = writeln!(
        axis,
        "<line class=\"axis\" x1=\"{LABEL_W:.1}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\"/>",
        LABEL_W + PLOT_W
    );
    lane_label(&mut axis, "seconds", axis_y + 15.0);
    let first = (sc.lo / step).ceil() as i64;
    let last = (sc.hi / step).floor() as i64;
    for k in first..=last {
        let t = k as f64 * step;
        let x = sc.x(t);
        let class = if k == 0 { "grid zero" } else { "grid" };
        let _ = writeln!(
            grid,
            "<line class=\"{class}\" x1=\"{x:.1}\" y1=\"{lines_top:.1}\" x2=\"{x:.1}\" y2=\"{axis_y:.1}\"/>"
        );
        let _ = writeln!(
            axis,
            "<line class=\"axis\" x1=\"{x:.1}\" y1=\"{axis_y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 4.0,
            axis_y + 15.0,
            tick_label(t, step)
        );
    }
    let height = axis_y + 22.0;

    let mut actions = String::new();
    for a in &tl.actions {
        let x = sc.x(r(a.sent));
        let _ = writeln!(
            actions,
            "<line class=\"act\" x1=\"{x:.1}\" y1=\"{act_top:.1}\" x2=\"{x:.1}\" y2=\"{lines_bottom:.1}\"/>"
        );
    }

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg class=\"tl\" width=\"{SVG_W:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {SVG_W:.0} {height:.0}\" role=\"img\">"
    );
    svg.push_str(&grid);
    svg.push_str(&body);
    svg.push_str(&actions);
    svg.push_str(&act_labels);
    svg.push_str(&axis);
    svg.push_str("</svg>\n");
    Some(svg)
}

/// A lane's name in the left margin, vertically at `y` (its text baseline).
fn lane_label(out: &mut String, name: &str, y: f64) {
    let _ = writeln!(
        out,
        "<text class=\"lane-l\" x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"end\">{name}</text>",
        LABEL_W - 8.0
    );
}

fn lane_bg(out: &mut String, y: f64, h: f64, stripe: &mut usize) {
    if (*stripe).is_multiple_of(2) {
        let _ = writeln!(
            out,
            "<rect class=\"stripe\" x=\"0\" y=\"{y:.1}\" width=\"{SVG_W:.0}\" height=\"{h:.1}\"/>"
        );
    }
    *stripe += 1;
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// STATUS bands, like phase bands.
fn status_spans(tl: &Timeline, r: &impl Fn(Timestamp) -> f64, end: f64) -> Vec<(f64, f64, String)> {
    let mut out: Vec<(f64, f64, String)> = vec![];
    for (s, text) in tl.status_column() {
        let t = r(s.received);
        if out.last().is_some_and(|(_, _, q)| *q == text) {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.1 = t;
        }
        out.push((t, end, text));
    }
    let stop = tl.deleted.map(r).unwrap_or(end);
    if let Some(last) = out.last_mut() {
        last.1 = stop.max(last.0);
    }
    out
}

/// A colour class for a STATUS: progress, running, done, or trouble.
fn status_class(text: &str) -> &'static str {
    match text {
        "Running" => "run",
        "Completed" => "done",
        "Terminating" => "term",
        "Pending" | "ContainerCreating" | "PodInitializing" | "SchedulingGated" => "wait",
        t if t.starts_with("Init:") && t[5..].contains('/') => "wait",
        _ => "bad",
    }
}

/// Phase bands: from the receive time of the snapshot that showed a phase to the next change.
fn phase_spans(tl: &Timeline, r: &impl Fn(Timestamp) -> f64, end: f64) -> Vec<(f64, f64, String)> {
    let mut out: Vec<(f64, f64, String)> = vec![];
    for s in &tl.snapshots {
        let Some(p) = &s.phase else { continue };
        let t = r(s.received);
        if out.last().is_some_and(|(_, _, q)| q == p) {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.1 = t;
        }
        out.push((t, end, p.clone()));
    }
    let stop = tl.deleted.map(r).unwrap_or(end);
    if let Some(last) = out.last_mut() {
        last.1 = stop.max(last.0);
    }
    out
}

/// One lane per instance, in pod spec order; plus a lane for a container still waiting at the
/// end (never started, or waiting to restart), so a stuck container is visible.
fn lanes(tl: &Timeline, r: &impl Fn(Timestamp) -> f64, end: f64) -> Vec<Lane> {
    let mut names: Vec<(String, ContainerKind)> = tl.pod.containers.iter().map(|c| (c.name.clone(), c.kind)).collect();
    for i in &tl.instances {
        if !names.iter().any(|(n, _)| *n == i.container) {
            names.push((i.container.clone(), i.kind));
        }
    }
    let mut out = vec![];
    for (name, kind) in &names {
        let first_listed = tl
            .snapshots
            .iter()
            .find(|s| s.container(name).is_some())
            .map(|s| s.received);
        let mut insts: Vec<&Instance> = tl.instances_of(name).collect();
        insts.sort_by_key(|i| i.instance);
        let mut prev: Option<&Instance> = None;
        for inst in &insts {
            out.push(instance_lane(tl, r, end, name, *kind, inst, prev, first_listed));
            prev = Some(inst);
        }
        // Still waiting at the end of the observation?
        let last_status = tl.snapshots.iter().rev().find_map(|s| s.container(name));
        if let Some(st) = last_status
            && let State::Waiting { .. } = st.state
        {
            let prev_end = prev.and_then(|p| p.finished_at.or(p.first_seen_terminated));
            let still_running = prev.is_some() && prev_end.is_none();
            if !still_running {
                let from = match prev {
                    Some(_) => prev_end,
                    None => first_listed,
                };
                let after = prev.map(|p| p.first_seen);
                let reasons = waiting_reasons(tl, name, after, None);
                let n = prev.map(|p| p.instance + 1).unwrap_or(0);
                let waiting = from.map(|f| (r(f), end, reasons.join(", ")));
                out.push(Lane {
                    label: format!("{name}#{n}"),
                    kind: *kind,
                    title: format!("{name}#{n}: not started by the end of the observation"),
                    waiting,
                    start_unc: None,
                    running: None,
                    end_unc: None,
                    end: None,
                    logs: vec![],
                    ready: vec![],
                });
            }
        }
    }
    out
}

/// Distinct waiting reasons reported between two receive times, in order.
fn waiting_reasons(tl: &Timeline, name: &str, after: Option<Timestamp>, before: Option<Timestamp>) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in &tl.snapshots {
        if after.is_some_and(|a| s.received <= a) || before.is_some_and(|b| s.received >= b) {
            continue;
        }
        if let Some(c) = s.container(name)
            && let State::Waiting { reason, .. } = &c.state
        {
            let reason = reason.clone().unwrap_or_else(|| "waiting".into());
            if !out.contains(&reason) {
                out.push(reason);
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn instance_lane(
    tl: &Timeline,
    r: &impl Fn(Timestamp) -> f64,
    end: f64,
    name: &str,
    kind: ContainerKind,
    inst: &Instance,
    prev: Option<&Instance>,
    first_listed: Option<Timestamp>,
) -> Lane {
    let label = format!("{name}#{}", inst.instance);
    // Waiting: from the first status listing the container (or the previous instance's end)
    // until it started; status snapshots still showing it waiting extend the bar, as startedAt
    // is truncated to the second and may precede the last waiting report.
    let after = prev.map(|p| p.first_seen);
    let last_waiting = tl
        .snapshots
        .iter()
        .filter(|s| after.is_none_or(|a| s.received > a) && s.received < inst.first_seen)
        .filter(|s| {
            s.container(name)
                .is_some_and(|c| matches!(c.state, State::Waiting { .. }))
        })
        .map(|s| r(s.received))
        .fold(f64::NEG_INFINITY, f64::max);
    let wait_from = match prev {
        Some(p) => p.finished_at.or(p.first_seen_terminated).map(r),
        None => first_listed.map(r),
    };
    let started = inst.started_at.map(r);
    let fsr = inst.first_seen_running.map(r);
    let fst = inst.first_seen_terminated.map(r);
    let finished = inst.finished_at.map(r);
    let start_lo = started.or(fsr);
    let logs: Vec<f64> = tl.logs_of(name, Some(inst.instance)).map(|l| r(l.time)).collect();
    let first_log = logs.iter().copied().reduce(f64::min);
    let last_log = logs.iter().copied().reduce(f64::max);
    // A waiting status is received after the kubelet wrote it, so it does not prove waiting
    // past the container's first log line.
    let wait_to = start_lo.unwrap_or(r(inst.first_seen)).max(last_waiting);
    let wait_to = first_log.map_or(wait_to, |l| wait_to.min(l));
    let waiting = wait_from.filter(|f| wait_to > *f).map(|f| {
        let reasons = waiting_reasons(tl, name, after, Some(inst.first_seen));
        (f, wait_to, reasons.join(", "))
    });
    let wait_end = waiting.as_ref().map(|w| w.1);
    // Status times are whole seconds: the true start lies in [startedAt, startedAt+1), and
    // before the first status showing it running and its first log line (CRI time, ns, same
    // node clock); the true end in [finishedAt, finishedAt+1), after its last log line and
    // before the first status showing it terminated. Those intervals are drawn pale.
    let min_of = |v: [Option<f64>; 4]| v.into_iter().flatten().reduce(f64::min);
    let max_of = |v: [Option<f64>; 2]| v.into_iter().flatten().reduce(f64::max);
    let end_unc = if finished.is_some() || fst.is_some() {
        let lo = max_of([finished, last_log]).or(fst).unwrap_or_default();
        let hi = min_of([finished.map(|f| f + 1.0), fst, None, None]).unwrap_or(lo);
        Some((lo, hi.max(lo)))
    } else {
        None
    };
    let start_unc = start_lo.map(|lo| {
        let lo = wait_end.map_or(lo, |w| lo.max(w));
        let hi = match started {
            Some(s) => min_of([Some(s + 1.0), fsr, first_log, end_unc.map(|e| e.0)]).unwrap_or(lo),
            None => lo,
        };
        (lo, hi.max(lo))
    });
    let running = start_unc.map(|(_, hi)| {
        let to = end_unc.map_or(end, |e| e.0);
        (hi, to.max(hi))
    });
    let end_mark = end_unc.map(|(_, at)| {
        let code = inst
            .exit_code
            .map(|c| format!("exit {c}"))
            .unwrap_or_else(|| "terminated".into());
        let label = match &inst.reason {
            Some(reason) => format!("{code} {reason}"),
            None => code,
        };
        (at, inst.exit_code == Some(0), label)
    });
    let t = |x: Option<Timestamp>| {
        x.map(|t| format!("{} (+{})", hms(t), fmt_secs(r(t))))
            .unwrap_or_else(|| "-".into())
    };
    let mut title = format!(
        "{label}: startedAt {}, first seen running {}, finishedAt {}, first seen terminated {}",
        t(inst.started_at),
        t(inst.first_seen_running),
        t(inst.finished_at),
        t(inst.first_seen_terminated)
    );
    if let Some(id) = &inst.container_id {
        title.push_str(&format!(", {id}"));
    }
    if let Some(m) = inst.message.as_deref().filter(|m| !m.is_empty()) {
        title.push_str(&format!("; message: {}", m.trim_end()));
    }
    Lane {
        label,
        kind,
        title,
        waiting,
        start_unc,
        running,
        end_unc,
        end: end_mark,
        logs,
        ready: ready_spans(tl, r, name, inst.instance, end),
    }
}

/// When the status said the instance was ready, by receive time (readiness is only ever known
/// from status updates).
fn ready_spans(tl: &Timeline, r: &impl Fn(Timestamp) -> f64, name: &str, instance: u32, end: f64) -> Vec<(f64, f64)> {
    let mut out = vec![];
    let mut since: Option<f64> = None;
    for s in &tl.snapshots {
        let Some(c) = s.container(name) else { continue };
        let ready = c.instance == Some(instance) && c.ready;
        match (ready, since) {
            (true, None) => since = Some(r(s.received)),
            (false, Some(a)) => {
                out.push((a, r(s.received)));
                since = None;
            }
            _ => {}
        }
    }
    if let Some(a) = since {
        out.push((a, tl.deleted.map(r).unwrap_or(end).max(a)));
    }
    out
}

fn draw_lane(out: &mut String, sc: &Scale, y: f64, lane: &Lane, stripe: &mut usize) {
    lane_bg(out, y, LANE_H, stripe);
    let by = y + (LANE_H - BAR_H) / 2.0;
    let mid = y + LANE_H / 2.0 + 4.0;
    let kind = match lane.kind {
        ContainerKind::Init => " <tspan class=\"kind\">init</tspan>",
        ContainerKind::Sidecar => " <tspan class=\"kind\">sidecar</tspan>",
        ContainerKind::Regular => "",
        ContainerKind::Ephemeral => " <tspan class=\"kind\">ephemeral</tspan>",
    };
    let _ = writeln!(
        out,
        "<text class=\"lane-l\" x=\"{:.1}\" y=\"{mid:.1}\" text-anchor=\"end\"><title>{}</title>{}{kind}</text>",
        LABEL_W - 8.0,
        esc(&lane.title),
        esc(&truncate(&lane.label, if kind.is_empty() { 22 } else { 15 }))
    );
    let rect = |out: &mut String, class: &str, a: f64, b: f64, title: &str| {
        let (x0, x1) = (sc.x(a), sc.x(b));
        let _ = writeln!(
            out,
            "<rect class=\"{class}\" x=\"{x0:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{BAR_H:.1}\"><title>{}</title></rect>",
            (x1 - x0).max(1.0),
            esc(title)
        );
    };
    if let Some((a, b, reasons)) = &lane.waiting {
        let what = if reasons.is_empty() {
            "waiting"
        } else {
            reasons.as_str()
        };
        rect(
            out,
            "wait",
            *a,
            *b,
            &format!("{}: waiting ({what}) +{} → +{}", lane.label, fmt_secs(*a), fmt_secs(*b)),
        );
        // The reason goes inside the bar, or left of it when the bar is too short.
        let (x0, x1) = (sc.x(*a), sc.x(*b));
        let w = text_w(what);
        if !reasons.is_empty() {
            if w + 6.0 <= x1 - x0 {
                let _ = writeln!(
                    out,
                    "<text class=\"in-bar\" x=\"{:.1}\" y=\"{mid:.1}\">{}</text>",
                    x0 + 3.0,
                    esc(what)
                );
            } else if x0 - 4.0 - w >= LABEL_W {
                let _ = writeln!(
                    out,
                    "<text class=\"side-l\" x=\"{:.1}\" y=\"{mid:.1}\" text-anchor=\"end\">{}</text>",
                    x0 - 4.0,
                    esc(what)
                );
            }
        }
    }
    if let Some((a, b)) = lane.start_unc
        && b > a
    {
        rect(out, "unc", a, b, &format!("{}: started in this interval", lane.label));
    }
    if let Some((a, b)) = lane.running
        && b > a
    {
        rect(out, "run", a, b, &lane.title);
    }
    for (a, b) in &lane.ready {
        let (x0, x1) = (sc.x(*a), sc.x(*b));
        let _ = writeln!(
            out,
            "<rect class=\"ready\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"3\"><title>{}</title></rect>",
            by - 3.5,
            (x1 - x0).max(1.0),
            esc(&format!(
                "{}: ready +{} → +{} (status received)",
                lane.label,
                fmt_secs(*a),
                fmt_secs(*b)
            ))
        );
    }
    // Log lines as ticks across the bar's lower edge, at most one per half pixel (chatty
    // containers would otherwise bloat the page).
    if !lane.logs.is_empty() {
        let mut d = String::new();
        let mut last = f64::NEG_INFINITY;
        let mut xs: Vec<f64> = lane.logs.iter().map(|t| sc.x(*t)).collect();
        xs.sort_by(f64::total_cmp);
        for x in xs {
            if x - last >= 0.5 {
                let _ = write!(d, "M{x:.1} {:.1}v7", by + BAR_H - 4.0);
                last = x;
            }
        }
        let _ = writeln!(
            out,
            "<path class=\"log\" d=\"{d}\"><title>{} log lines</title></path>",
            lane.logs.len()
        );
    }
    if let Some((a, b)) = lane.end_unc
        && b > a
    {
        rect(out, "unc", a, b, &format!("{}: ended in this interval", lane.label));
    }
    if let Some((at, ok, label)) = &lane.end {
        let x = sc.x(*at);
        let _ = writeln!(
            out,
            "<rect class=\"{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"{:.1}\"><title>{}</title></rect>",
            if *ok { "end" } else { "end bad" },
            x - 1.5,
            by - 2.0,
            BAR_H + 4.0,
            esc(&format!("{}: terminated ({label}) by +{}", lane.label, fmt_secs(*at)))
        );
        let (tx, anchor, _, _) = beside(x + 1.5, text_w(label));
        let _ = writeln!(
            out,
            "<text class=\"end-l\" x=\"{tx:.1}\" y=\"{mid:.1}\" text-anchor=\"{anchor}\">{}</text>",
            esc(label)
        );
    }
}

/// A tick spacing giving at most about 12 ticks.
fn tick_step(span: f64) -> f64 {
    const STEPS: [f64; 16] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
    ];
    STEPS
        .into_iter()
        .find(|s| span / s <= 12.0)
        .unwrap_or_else(|| (span / 12.0).ceil())
}

fn tick_label(t: f64, step: f64) -> String {
    if step < 1.0 {
        format!("{t:.1}s")
    } else {
        format!("{}s", t.round() as i64)
    }
}

const CSS: &str = r#"
:root{--pass:#2e7d32;--fail:#c62828;--flaky:#ef6c00;--ign:#78909c;--int:#6a1b9a;--ink:#1d2330;--mute:#5f6b7a}
*{box-sizing:border-box}
body{margin:0;background:#f4f6f8;color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header{background:#1d2330;color:#e8ecf1;padding:14px 24px 16px}
header h1{margin:0 0 4px;font-size:20px;font-weight:600}
header code{color:#fff;font-size:inherit}
.times{margin:0 0 8px;color:#b8c2cf}
.counts{margin:0 0 10px}
.count{display:inline-block;margin-right:10px;padding:2px 10px;border-radius:12px;background:#2c3444}
.count b{font-size:16px}
.count.zero{opacity:.45}
.c-passed b{color:#81c784}.c-flaky b{color:#ffb74d}.c-failed b,.c-error b{color:#ef9a9a}.c-ignored b{color:#b0bec5}
.leftovers{background:#5d1f1f;padding:6px 10px;border-radius:4px;margin-bottom:10px}
.leftovers ul{margin:4px 0 0 18px;padding:0}
table.fp{border-collapse:collapse;font-size:12.5px}
table.fp th,table.fp td{text-align:left;padding:2px 12px 2px 0;vertical-align:top}
table.fp th{color:#b8c2cf;font-weight:600}
table.fp tr.nodes th{border-top:1px solid #3a4456;padding-top:4px}
main{max-width:1240px;margin:0 auto;padding:8px 16px 40px}
h2{font-size:16px;margin:0 0 6px}
nav.index{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:10px 14px;margin:14px 0}
nav.index table{border-collapse:collapse;width:100%;font-size:13px}
nav.index details{margin-top:6px}
nav.index td{padding:2px 8px 2px 0;vertical-align:top;white-space:nowrap}
nav.index td.note{white-space:normal;color:var(--mute);width:100%}
a{color:#1f5fa8;text-decoration:none}
.badge{display:inline-block;min-width:64px;text-align:center;padding:1px 7px;border-radius:10px;font-size:11px;font-weight:700;color:#fff;letter-spacing:.03em}
.b-passed{background:var(--pass)}.b-failed,.b-error{background:var(--fail)}.b-interrupted,.b-not-run,.b-undecided{background:var(--int)}.b-flaky{background:var(--flaky)}.b-ignored{background:var(--ign)}
.legend{font-size:12px;color:var(--mute);margin:6px 0 10px}
.sw{display:inline-block;width:14px;height:10px;margin:0 4px 0 10px;vertical-align:-1px;border-radius:2px}
.sw-wait{background:#f2c14e}.sw-run{background:#43a047}.sw-unc{background:#b9dfbb}.sw-end{background:#455a64}.sw-endbad{background:#b71c1c}
.sw-ready{height:3px;vertical-align:2px;background:#1e88e5}.sw-log{width:2px;background:#0f2f17}.sw-evn{width:3px;background:#3f51b5}.sw-evw{width:3px;background:#ef6c00}
.sw-act{width:0;border-left:2px dashed #37474f;border-radius:0}.sw-mark{width:8px;height:8px;border-radius:4px;background:#6a1b9a}
.sw-gap{height:6px;border:2px solid #2e7d32;border-top:0;background:none;border-radius:0}
section.case{background:#fff;border:1px solid #dde2e8;border-left:6px solid var(--pass);border-radius:6px;margin:14px 0;padding:10px 16px 12px}
section.s-failed,section.s-error{border-left-color:var(--fail)}
section.s-interrupted,section.s-undecided{border-left-color:var(--int)}
section.s-flaky{border-left-color:var(--flaky)}
section.s-ignored{border-left-color:var(--ign);padding-bottom:6px}
.name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:15px}
.desc{margin:2px 0 4px}
.meta{margin:0 0 6px;color:var(--mute);font-size:12.5px}
.why{color:var(--mute);font-style:italic;margin:2px 0}
.error{color:var(--fail);font-weight:600}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
ul.verdicts{list-style:none;margin:4px 0 8px;padding:0;font-size:12.5px}
ul.verdicts li{padding:1px 0 1px 6px;border-left:3px solid transparent;overflow-wrap:anywhere}
ul.verdicts .tag{display:inline-block;min-width:78px;font-weight:700;font-size:11px}
ul.verdicts .kind{display:inline-block;min-width:62px;color:var(--mute)}
li.v-pass .tag{color:var(--pass)}
li.v-fail{background:#fdecea;border-left-color:var(--fail)}li.v-fail .tag{color:var(--fail)}
li.v-undecided{background:#fff4e0;border-left-color:var(--flaky)}li.v-undecided .tag{color:var(--flaky)}
details{font-size:12.5px;margin:4px 0}
details pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:8px;overflow:auto;max-height:420px;font-size:11.5px}
figure.timeline{margin:6px 0 0;overflow-x:auto}
figure.timeline figcaption{font-size:11.5px;color:var(--mute)}
svg.tl{display:block;max-width:100%;height:auto}
svg.tl text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;font-size:11px;fill:var(--ink)}
svg.tl .stripe{fill:#f5f7fa}
svg.tl .end-l,svg.tl .mark-l,svg.tl .gap text,svg.tl .act-l,svg.tl .side-l{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg.tl .group{fill:var(--mute);font-weight:600}
svg.tl .lane-l{fill:#37474f}
svg.tl .lane-l.warn{fill:#c25100}
svg.tl .kind{fill:#8a96a3;font-size:10px}
svg.tl .grid{stroke:#e3e7ec;stroke-width:1}
svg.tl .grid.zero{stroke:#b0bac5}
svg.tl .axis{stroke:#90a4ae;stroke-width:1}
svg.tl .tick{fill:#5f6b7a;font-size:10.5px}
svg.tl .wait{fill:#f2c14e}
svg.tl .run{fill:#43a047}
svg.tl .unc{fill:#b9dfbb}
svg.tl .end{fill:#455a64}
svg.tl .end.bad{fill:#b71c1c}
svg.tl .end-l{fill:#37474f;font-size:10.5px}
svg.tl .in-bar{fill:#3b2f00;font-size:10.5px}
svg.tl .side-l{fill:#8a6d00;font-size:10.5px}
svg.tl .ready{fill:#1e88e5}
svg.tl .log{stroke:#0f2f17;stroke-width:1}
svg.tl .ev-n{fill:#3f51b5}
svg.tl .ev-w{fill:#ef6c00}
svg.tl .ph{fill:#cfd8dc}
svg.tl .ph-pending{fill:#ffe9b0}
svg.tl .ph-running{fill:#c8e6c9}
svg.tl .ph-succeeded{fill:#b3d4fc}
svg.tl .ph-failed{fill:#f8c4c4}
svg.tl .st-wait{fill:#fff3cd}
svg.tl .st-run{fill:#d7ecd8}
svg.tl .st-done{fill:#cfe2fb}
svg.tl .st-term{fill:#e0d4f0}
svg.tl .st-bad{fill:#f6caca}
svg.tl .gone{fill:#263238}
svg.tl .act{stroke:#37474f;stroke-width:1.2;stroke-dasharray:5 4;opacity:.8}
svg.tl .act-l{fill:#263238;font-weight:600}
svg.tl .mark{fill:#6a1b9a}
svg.tl .mark.fail{fill:#c62828}
svg.tl .mark-l{fill:#4a148c}
svg.tl .mark-l.fail{fill:#c62828;font-weight:600}
svg.tl .mark-stem{stroke:#c5b3d9;stroke-width:1}
svg.tl .gap path{fill:none;stroke:#2e7d32;stroke-width:1.6}
svg.tl .gap text{fill:#1b5e20;font-weight:600}
svg.tl .gap.fail path{stroke:#c62828;stroke-width:2}
svg.tl .gap.fail text{fill:#c62828}
"#;
