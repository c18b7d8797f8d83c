//! The timeline drawing of one case (`timeline`): an inline SVG with our actions, events, the
//! pod's phase and STATUS, one lane per container instance, the verdicts' marks and gaps.
//!
//! Everything is placed in relative seconds first, then scaled to a fixed plot width so a 3 s
//! case and a 215 s crash loop both fill the figure. What the spans mean (phase, STATUS,
//! readiness, waiting reasons) comes from the timeline (`observe::spans`); this only lays out
//! and scales.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jiff::Timestamp;
use maud::{Markup, Render, html};

use super::lanes::{Lane, lanes};
use super::t;
use crate::judge::marks::hms;
use crate::judge::{Outcome, Verdict};
use crate::observe::{ActionKind, EventOccurrence, Timeline};
use crate::suite::ContainerKind;
use crate::util::fmt_secs;

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

/// A coordinate, with one decimal (enough at this size, and keeps the page small).
struct F(f64);

impl Render for F {
    fn render_to(&self, buf: &mut String) {
        let _ = write!(buf, "{:.1}", self.0);
    }
}

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

/// The layers of the drawing, in paint order: grid lines under the lanes, our actions' dashed
/// lines and labels over them, the axis last.
#[derive(Default)]
struct Layers {
    grid: Vec<Markup>,
    body: Vec<Markup>,
    actions: Vec<Markup>,
    act_labels: Vec<Markup>,
    axis: Vec<Markup>,
}

/// Every instant the drawing shows, to size the plot.
fn instants(tl: &Timeline, origin: Timestamp, verdicts: &[Verdict]) -> Vec<Timestamp> {
    let mut times: Vec<Timestamp> = vec![origin];
    times.extend(tl.snapshots.iter().map(|s| s.received));
    times.extend(tl.deleted);
    for i in &tl.instances {
        times.extend(
            [
                i.started_at,
                i.finished_at,
                i.first_seen_running,
                i.first_seen_terminated,
            ]
            .into_iter()
            .flatten(),
        );
        times.push(i.first_seen);
    }
    times.extend(tl.events.iter().map(|e| e.received));
    times.extend(tl.logs.iter().map(|l| l.time));
    for a in &tl.actions {
        times.push(a.sent);
        times.extend(a.done);
    }
    for v in verdicts {
        times.extend(v.marks.iter().map(|m| m.at));
    }
    times
}

/// The drawing of a case's timeline, or None for a timeline with nothing to place in time.
pub(super) fn timeline(tl: &Timeline, verdicts: &[Verdict]) -> Option<Markup> {
    let origin = tl.origin()?;
    let r = |t: Timestamp| t.duration_since(origin).as_secs_f64();

    // The data range: everything that is drawn.
    let times = instants(tl, origin, verdicts);
    let first = times.iter().copied().min()?;
    let last = times.iter().copied().max()?;
    let (data_lo, data_hi) = (r(first), r(last));
    let span = (data_hi - data_lo).max(0.5);
    // A little room on the left so first items stay visible, and a tenth on the right for the
    // labels of whatever ends last (exit codes, marks, gaps).
    let sc = Scale {
        lo: data_lo - span * 0.01,
        hi: data_lo + span * 1.1,
    };

    let mut l = Layers::default();
    let mut y = 6.0;
    let act_top = y;
    y = actions(&mut l, tl, &sc, &r, y);
    let lines_top = y;
    let mut stripe = 0usize;
    y = events(&mut l, tl, &sc, &r, y, &mut stripe);
    let mut pen = Pen { y, stripe };
    phases(&mut l, tl, &sc, &r, last, &mut pen);
    statuses(&mut l, tl, &sc, &r, last, &mut pen);
    let Pen { mut y, mut stripe } = pen;
    for lane in lanes(tl, &r, last) {
        l.body.push(draw_lane(&sc, y, &lane, &mut stripe));
        y += LANE_H;
    }
    y = marks(&mut l, verdicts, &sc, &r, y, &mut stripe);
    y = gaps(&mut l, verdicts, &sc, &r, y, &mut stripe);

    // Axis with tick labels in seconds; our actions' lines span from their labels to it.
    let axis_y = y + 2.0;
    axis(&mut l, &sc, lines_top, axis_y);
    for a in &tl.actions {
        let x = F(sc.x(r(a.sent)));
        l.actions
            .push(html! { line.act x1=(x) y1=(F(act_top)) x2=(F(sc.x(r(a.sent)))) y2=(F(axis_y)) {} });
    }
    let height = format!("{:.0}", axis_y + 22.0);
    let width = format!("{SVG_W:.0}");
    Some(html! {
        svg.tl width=(width) height=(height) viewBox={ "0 0 " (width) " " (height) } role="img" {
            @for m in l.grid.iter().chain(&l.body).chain(&l.actions).chain(&l.act_labels).chain(&l.axis) {
                (m)
            }
        }
    })
}

/// Our actions' labels on top, in up to three rows; returns the y below them.
fn actions(l: &mut Layers, tl: &Timeline, sc: &Scale, r: &impl Fn(Timestamp) -> f64, y: f64) -> f64 {
    let mut rows = Rows::default();
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
            ActionKind::Resize => "resize".to_string(),
            ActionKind::Update => format!("update {}", a.update.as_ref().map_or("", |u| u.name.as_str())),
        };
        if let Some(g) = a.grace_period_seconds {
            label.push_str(&format!(" (grace {g}s)"));
        }
        let (tx, anchor, a0, a1) = beside(x, text_w(&label));
        let row = rows.place(3, a0, a1).unwrap_or(0);
        let mut title = format!("{label} sent {} (+{})", hms(a.sent), fmt_secs(r(a.sent)));
        if let Some(d) = a.done {
            title.push_str(&format!(", done +{}", fmt_secs(r(d))));
        }
        if let Some(d) = &a.detail {
            title.push_str(&format!(": {d}"));
        }
        let ty = y + FONT + row as f64 * LABEL_ROW_H;
        l.act_labels.push(html! {
            text.act-l x=(F(tx)) y=(F(ty)) text-anchor=(anchor) { title { (t(&title)) } (t(&label)) }
        });
    }
    if rows.len() > 0 {
        y + rows.len() as f64 * LABEL_ROW_H + 4.0
    } else {
        y
    }
}

/// Events: one row per reason (in order of first occurrence), each occurrence a mark; the
/// reason is the row label, so labels never overlap however dense a crash loop gets.
fn events(
    l: &mut Layers,
    tl: &Timeline,
    sc: &Scale,
    r: &impl Fn(Timestamp) -> f64,
    mut y: f64,
    stripe: &mut usize,
) -> f64 {
    let mut by_reason: Vec<(String, Vec<&EventOccurrence>)> = vec![];
    for e in &tl.events {
        match by_reason.iter_mut().find(|(r, _)| *r == e.reason) {
            Some((_, v)) => v.push(e),
            None => by_reason.push((e.reason.clone(), vec![e])),
        }
    }
    if by_reason.is_empty() {
        return y;
    }
    l.body
        .push(html! { text.group x="4" y=(F(y + EVENT_ROW_H - 3.0)) { "events" } });
    for (reason, occ) in &by_reason {
        let warning = occ.iter().any(|e| e.r#type == "Warning");
        l.body.push(lane_bg(y, EVENT_ROW_H, stripe));
        let n = crate::observe::timeline::occurrences(occ);
        let label = if n > 1 {
            format!("{reason} ×{n}")
        } else {
            reason.clone()
        };
        let class = if warning { "lane-l warn" } else { "lane-l" };
        l.body.push(html! {
            text class=(class) x=(F(LABEL_W - 8.0)) y=(F(y + EVENT_ROW_H - 3.5)) text-anchor="end" { (t(&truncate(&label, 22))) }
        });
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
            let class = if e.r#type == "Warning" { "ev-w" } else { "ev-n" };
            l.body.push(html! {
                rect class=(class) x=(F(x - 1.5)) y=(F(y + 2.0)) width="3" height=(F(EVENT_ROW_H - 4.0)) { title { (t(&title)) } }
            });
        }
        y += EVENT_ROW_H;
    }
    y + 4.0
}

/// A band of spans (phase or STATUS) in one lane, each labelled inside when it fits.
fn band(
    sc: &Scale,
    y: f64,
    spans: &[(f64, f64, String)],
    class: impl Fn(&str) -> String,
    title: impl Fn(f64, &str) -> String,
) -> Markup {
    html! {
        @for (from, to, text) in spans {
            @let (x0, x1) = (sc.x(*from), sc.x(*to));
            @let w = (x1 - x0).max(1.0);
            rect class=(class(text)) x=(F(x0)) y=(F(y + (LANE_H - BAR_H) / 2.0)) width=(F(w)) height=(F(BAR_H)) {
                title { (t(&title(*from, text))) }
            }
            @if text_w(text) + 6.0 < w {
                text.in-bar x=(F(x0 + 3.0)) y=(F(y + LANE_H / 2.0 + 4.0)) { (t(text)) }
            }
        }
    }
}

/// Where the next lane goes: its top, and the alternating background it takes.
struct Pen {
    y: f64,
    stripe: usize,
}

/// A lane of bands: its label, the bands (`(from, to, text)` in seconds since the start), and
/// each band's class and tooltip from its text.
struct Bands<C, T> {
    label: &'static str,
    spans: Vec<(f64, f64, String)>,
    class: C,
    title: T,
}

/// The pod's phase and its deletion, in a lane at the pen, which moves below it.
fn phases(l: &mut Layers, tl: &Timeline, sc: &Scale, r: &impl Fn(Timestamp) -> f64, end: Timestamp, pen: &mut Pen) {
    let spans = tl
        .phase_spans(end)
        .into_iter()
        .map(|s| (r(s.from), r(s.to), s.value))
        .collect();
    let y = pen.y;
    let bands = Bands {
        label: "pod phase",
        spans,
        class: |p: &str| format!("ph ph-{}", p.to_lowercase()),
        title: |from: f64, p: &str| format!("phase {p} from +{} (received)", fmt_secs(from)),
    };
    if !band_lane(l, sc, pen, bands) {
        return;
    }
    if let Some(d) = tl.deleted {
        let x = sc.x(r(d));
        let label = "deleted";
        let (tx, anchor, _, _) = beside(x, text_w(label));
        let title = format!("DELETED received {} (+{})", hms(d), fmt_secs(r(d)));
        l.body.push(html! {
            rect.gone x=(F(x - 1.5)) y=(F(y + 2.0)) width="3" height=(F(LANE_H - 4.0)) { title { (t(&title)) } }
            text.end-l x=(F(tx)) y=(F(y + LANE_H / 2.0 + 4.0)) text-anchor=(anchor) { (label) }
        });
    }
}

/// kubectl's STATUS column, one band per text (same receive-time clock as the phase), in a lane
/// at the pen, which moves below it.
fn statuses(l: &mut Layers, tl: &Timeline, sc: &Scale, r: &impl Fn(Timestamp) -> f64, end: Timestamp, pen: &mut Pen) {
    let spans = tl
        .status_spans(end)
        .into_iter()
        .map(|s| (r(s.from), r(s.to), s.value))
        .collect();
    let bands = Bands {
        label: "STATUS",
        spans,
        class: |s: &str| format!("st st-{}", status_class(s)),
        title: |from: f64, s: &str| format!("STATUS {s} from +{} (received)", fmt_secs(from)),
    };
    band_lane(l, sc, pen, bands);
}

/// A lane of bands, labelled, at the pen, which moves below it; false (nothing drawn, the pen
/// unmoved) when there are none.
fn band_lane(
    l: &mut Layers,
    sc: &Scale,
    pen: &mut Pen,
    bands: Bands<impl Fn(&str) -> String, impl Fn(f64, &str) -> String>,
) -> bool {
    if bands.spans.is_empty() {
        return false;
    }
    let y = pen.y;
    l.body.push(lane_bg(y, LANE_H, &mut pen.stripe));
    l.body.push(lane_label(bands.label, y + LANE_H / 2.0 + 4.0));
    l.body.push(band(sc, y, &bands.spans, bands.class, bands.title));
    pen.y += LANE_H;
    true
}

/// The marks the verdicts used, grouped by instant (a gap's end is often an order's element),
/// their labels packed into up to four rows above a row of dots.
fn marks(
    l: &mut Layers,
    verdicts: &[Verdict],
    sc: &Scale,
    r: &impl Fn(Timestamp) -> f64,
    y: f64,
    stripe: &mut usize,
) -> f64 {
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
    if marks.is_empty() {
        return y;
    }
    let y = y + 4.0;
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
    l.body.push(lane_bg(y, h, stripe));
    l.body.push(lane_label("marks", dot_y + 4.0));
    for (x, tx, anchor, row, label, failed, at) in placed {
        let (class, lclass) = if failed {
            ("mark fail", "mark-l fail")
        } else {
            ("mark", "mark-l")
        };
        let title = format!("{label} at {} (+{})", hms(at), fmt_secs(r(at)));
        if let Some(row) = row {
            let ly = y + FONT + row as f64 * LABEL_ROW_H;
            l.body.push(html! {
                line.mark-stem x1=(F(x)) y1=(F(ly - FONT + 2.0)) x2=(F(x)) y2=(F(dot_y)) {}
                text class=(lclass) x=(F(tx)) y=(F(ly)) text-anchor=(anchor) { (t(&label)) }
            });
        }
        l.body.push(html! {
            circle class=(class) cx=(F(x)) cy=(F(dot_y)) r="3.5" { title { (t(&title)) } }
        });
    }
    y + h
}

/// Gaps: a bracket between the two instants with the measured value, packed into rows.
fn gaps(
    l: &mut Layers,
    verdicts: &[Verdict],
    sc: &Scale,
    r: &impl Fn(Timestamp) -> f64,
    y: f64,
    stripe: &mut usize,
) -> f64 {
    let gaps: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.kind == crate::judge::VerdictKind::Gap && v.marks.len() == 2 && !v.measured.is_empty())
        .collect();
    if gaps.is_empty() {
        return y;
    }
    let top = y + 2.0;
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
    let h = rows.len() as f64 * GAP_ROW_H;
    l.body.push(lane_bg(top, h, stripe));
    l.body.push(lane_label("gaps", top + GAP_ROW_H / 2.0 + 4.0));
    for (x0, x1, tx, anchor, row, label, failed, v) in placed {
        let ry = top + row as f64 * GAP_ROW_H;
        let line_y = ry + 19.0;
        let d = format!(
            "M{x0:.1} {:.1} V{line_y:.1} H{x1:.1} V{:.1}",
            line_y - 6.0,
            line_y - 6.0
        );
        l.body.push(html! {
            g class=(if failed { "gap fail" } else { "gap" }) {
                title { (t(&v.evidence)) }
                path d=(d) {}
                text x=(F(tx)) y=(F(ry + 12.0)) text-anchor=(anchor) { (t(&label)) }
            }
        });
    }
    top + h
}

/// The time axis with a tick and a grid line every `tick_step`.
fn axis(l: &mut Layers, sc: &Scale, lines_top: f64, axis_y: f64) {
    let step = tick_step(sc.hi - sc.lo);
    l.axis.push(html! {
        line.axis x1=(F(LABEL_W)) y1=(F(axis_y)) x2=(F(LABEL_W + PLOT_W)) y2=(F(axis_y)) {}
    });
    l.axis.push(lane_label("seconds", axis_y + 15.0));
    let first = (sc.lo / step).ceil() as i64;
    let last = (sc.hi / step).floor() as i64;
    for k in first..=last {
        let tk = k as f64 * step;
        let x = F(sc.x(tk));
        l.grid.push(html! {
            line class=(if k == 0 { "grid zero" } else { "grid" }) x1=(x) y1=(F(lines_top)) x2=(F(sc.x(tk))) y2=(F(axis_y)) {}
        });
        l.axis.push(html! {
            line.axis x1=(F(sc.x(tk))) y1=(F(axis_y)) x2=(F(sc.x(tk))) y2=(F(axis_y + 4.0)) {}
            text.tick x=(F(sc.x(tk))) y=(F(axis_y + 15.0)) text-anchor="middle" { (tick_label(tk, step)) }
        });
    }
}

/// A lane's name in the left margin, vertically at `y` (its text baseline).
fn lane_label(name: &str, y: f64) -> Markup {
    html! { text.lane-l x=(F(LABEL_W - 8.0)) y=(F(y)) text-anchor="end" { (t(name)) } }
}

/// Every other lane on a pale stripe.
fn lane_bg(y: f64, h: f64, stripe: &mut usize) -> Markup {
    let on = (*stripe).is_multiple_of(2);
    *stripe += 1;
    html! {
        @if on { rect.stripe x="0" y=(F(y)) width=(format!("{SVG_W:.0}")) height=(F(h)) {} }
    }
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

fn draw_lane(sc: &Scale, y: f64, lane: &Lane, stripe: &mut usize) -> Markup {
    let bg = lane_bg(y, LANE_H, stripe);
    let by = y + (LANE_H - BAR_H) / 2.0;
    let mid = y + LANE_H / 2.0 + 4.0;
    let kind = match lane.kind {
        ContainerKind::Init => Some("init"),
        ContainerKind::Sidecar => Some("sidecar"),
        ContainerKind::Regular => None,
        ContainerKind::Ephemeral => Some("ephemeral"),
    };
    let bar = |class: &str, a: f64, b: f64, title: &str| {
        let (x0, x1) = (sc.x(a), sc.x(b));
        html! {
            rect class=(class) x=(F(x0)) y=(F(by)) width=(F((x1 - x0).max(1.0))) height=(F(BAR_H)) { title { (t(title)) } }
        }
    };
    // Log lines as ticks across the bar's lower edge, at most one per half pixel (chatty
    // containers would otherwise bloat the page).
    let mut ticks = String::new();
    let mut last = f64::NEG_INFINITY;
    let mut xs: Vec<f64> = lane.logs.iter().map(|t| sc.x(*t)).collect();
    xs.sort_by(f64::total_cmp);
    for x in xs {
        if x - last >= 0.5 {
            let _ = write!(ticks, "M{x:.1} {:.1}v7", by + BAR_H - 4.0);
            last = x;
        }
    }
    html! {
        (bg)
        text.lane-l x=(F(LABEL_W - 8.0)) y=(F(mid)) text-anchor="end" {
            title { (t(&lane.title)) }
            (t(&truncate(&lane.label, if kind.is_none() { 22 } else { 15 })))
            @if let Some(k) = kind { " " tspan.kind { (k) } }
        }
        @if let Some((a, b, reasons)) = &lane.waiting {
            @let what = if reasons.is_empty() { "waiting" } else { reasons.as_str() };
            (bar("wait", *a, *b, &format!("{}: waiting ({what}) +{} → +{}", lane.label, fmt_secs(*a), fmt_secs(*b))))
            // The reason goes inside the bar, or left of it when the bar is too short.
            @let (x0, x1) = (sc.x(*a), sc.x(*b));
            @let w = text_w(what);
            @if !reasons.is_empty() {
                @if w + 6.0 <= x1 - x0 {
                    text.in-bar x=(F(x0 + 3.0)) y=(F(mid)) { (t(what)) }
                } @else if x0 - 4.0 - w >= LABEL_W {
                    text.side-l x=(F(x0 - 4.0)) y=(F(mid)) text-anchor="end" { (t(what)) }
                }
            }
        }
        @if let Some((a, b)) = lane.start_unc.filter(|(a, b)| b > a) {
            (bar("unc", a, b, &format!("{}: started in this interval", lane.label)))
        }
        @if let Some((a, b)) = lane.running.filter(|(a, b)| b > a) {
            (bar("run", a, b, &lane.title))
        }
        @for (a, b) in &lane.ready {
            @let (x0, x1) = (sc.x(*a), sc.x(*b));
            rect.ready x=(F(x0)) y=(F(by - 3.5)) width=(F((x1 - x0).max(1.0))) height="3" {
                title { (t(&format!("{}: ready +{} → +{} (status received)", lane.label, fmt_secs(*a), fmt_secs(*b)))) }
            }
        }
        @if !lane.logs.is_empty() {
            path.log d=(ticks) { title { (lane.logs.len()) " log lines" } }
        }
        @if let Some((a, b)) = lane.end_unc.filter(|(a, b)| b > a) {
            (bar("unc", a, b, &format!("{}: ended in this interval", lane.label)))
        }
        @if let Some((at, ok, label)) = &lane.end {
            @let x = sc.x(*at);
            @let (tx, anchor, _, _) = beside(x + 1.5, text_w(label));
            rect class=(if *ok { "end" } else { "end bad" }) x=(F(x - 1.5)) y=(F(by - 2.0)) width="3" height=(F(BAR_H + 4.0)) {
                title { (t(&format!("{}: terminated ({label}) by +{}", lane.label, fmt_secs(*at)))) }
            }
            text.end-l x=(F(tx)) y=(F(mid)) text-anchor=(anchor) { (t(label)) }
        }
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
