//! Matching text: a mark's `regex`/`equals` with its `${...}` templates filled from the observed pod, and
//! the log lines and event items a `log` or `event` mark matches, as hits.

use super::*;
use crate::suite::types::PatternError;

/// A compiled text matcher: a regex, or exact equality (templates already substituted).
pub enum Matcher {
    Regex(regex::Regex),
    Equals(String),
}

impl Matcher {
    pub fn is_match(&self, text: &str) -> bool {
        match self {
            Matcher::Regex(r) => r.is_match(text),
            Matcher::Equals(e) => e == text,
        }
    }
    /// `/regex/` or `"exact text"` (values substituted), for evidence.
    pub fn label(&self) -> String {
        match self {
            Matcher::Regex(r) => format!("/{}/", r.as_str()),
            Matcher::Equals(e) => format!("{e:?}"),
        }
    }
}

/// Compiles a `regex`/`equals` pair against the observed pod's template values.
pub fn matcher(t: TextMatch, tl: &Timeline) -> Result<Matcher, Unresolved> {
    match t {
        TextMatch::Regex(p) => Ok(Matcher::Regex(compile(p, tl)?)),
        TextMatch::Equals(e) => Ok(Matcher::Equals(e.expand(&|n| template_value(tl, n))?)),
        TextMatch::Missing => Err(Unresolved::NoText),
    }
}

/// Looks up template variables (`${pod.name}`, ...) in the observed pod.
pub fn template_value(tl: &Timeline, name: &str) -> Option<String> {
    let p = &tl.pod;
    let v = match name {
        "pod.name" => p.name.clone(),
        "pod.namespace" => p.namespace.clone(),
        "pod.uid" => p.uid.clone(),
        "pod.ip" => p.pod_ips.first()?.clone(),
        "pod.serviceAccountName" => p.service_account.clone()?,
        "node.name" => p.node.clone()?,
        "host.ip" => p.host_ips.first()?.clone(),
        _ => return None,
    };
    (!v.is_empty()).then_some(v)
}

pub fn compile(p: &Pattern, tl: &Timeline) -> Result<regex::Regex, PatternError> {
    p.compile(&|n| template_value(tl, n))
}

/// The lines a `log` mark matches, in time order, and the matcher's label.
pub(super) fn log_matches<'a>(l: &LogMark, tl: &'a Timeline) -> Result<(Vec<&'a LogLine>, String), Unresolved> {
    let re = matcher(l.text(), tl)?;
    let inst = log_instances(tl, &l.container, l.instance);
    let mut lines: Vec<&LogLine> = tl
        .logs
        .iter()
        .filter(|x| {
            x.container == l.container.as_str()
                && inst.as_ref().is_none_or(|v| v.contains(&x.instance))
                && re.is_match(&x.text)
        })
        .collect();
    lines.sort_by_key(|x| x.time);
    Ok((lines, re.label()))
}

/// A log line as a mark hit (CRI timestamp, node clock).
pub(super) fn log_hit(line: &LogLine) -> Hit {
    Hit::new(
        line.time,
        ZERO,
        Clock::Node,
        format!(
            "\"{}\" {} log {}#{}",
            line.text,
            hms(line.time),
            line.container,
            line.instance
        ),
    )
    .log(&line.container, line.instance)
}

/// The timeline's event items an event mark matches, in receive order.
pub(super) fn event_items<'a>(e: &EventMark, tl: &'a Timeline) -> Result<Vec<&'a EventOccurrence>, Unresolved> {
    let re = e.message.as_ref().map(|m| compile(m, tl)).transpose()?;
    Ok(tl
        .events
        .iter()
        .filter(|o| {
            o.reason == e.reason
                && e.container
                    .as_ref()
                    .is_none_or(|c| o.container.as_deref() == Some(c.as_str()))
                && re.as_ref().is_none_or(|r| r.is_match(&o.message))
        })
        .collect())
}

/// Repetition `at` of the event item `o` as a mark hit (receive time, harness clock).
pub(super) fn event_hit(o: &EventOccurrence, at: u32) -> Hit {
    let mut hit = Hit::new(
        o.received,
        ZERO,
        Clock::Harness,
        format!("{} event #{at} received {}", o.reason, hms(o.received)),
    );
    hit.stream = Stream::Events;
    // The event's own timestamp (its writer's clock, truncated) bounds the occurrence from
    // below; without one, the watch's delivery delay does.
    let early = o
        .time
        .filter(|t| *t <= o.received)
        .map(|t| o.received.duration_since(t))
        .unwrap_or(WATCH_DELIVERY);
    hit.early = early;
    hit.stream_cause = Some(match o.time {
        Some(t) if t <= o.received => format!(
            "the event was recorded at {} (its writer's clock), received {} later",
            hms(t),
            crate::util::fmt_secs(early.as_secs_f64())
        ),
        _ => format!(
            "an event's receive time lags its write by up to {}",
            crate::util::fmt_secs(WATCH_DELIVERY.as_secs_f64())
        ),
    });
    hit
}
