//! `podlife clean` (`CleanOptions`, `clean`): finds the namespaces earlier runs left behind
//! (interrupted, killed, or cleanup that timed out) by podlife's labels, lists them, and deletes
//! them only when asked (`--yes`), each with a UID precondition.

use std::io::Write;
use std::time::Duration;

use jiff::Timestamp;
use kube::Client;

use super::{CaseApi, ClusterError, PodlifeNamespace, namespaces_labelled};

/// What `podlife clean` was asked to do.
#[derive(Clone, Debug)]
pub struct CleanOptions {
    /// Only namespaces of this run id.
    pub run: Option<String>,
    /// Only namespaces created at least this long ago (leave a run in progress alone).
    pub older_than: Option<Duration>,
    /// Delete; without it, only list what would be deleted.
    pub yes: bool,
    /// Bound on the whole deletion (all namespaces at once, each DELETE included).
    pub timeout: Duration,
    /// Bound on each request.
    pub request_timeout: Duration,
    /// "Now", for ages (a parameter so tests are reproducible).
    pub now: Timestamp,
}

/// What `clean` found and did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CleanOutcome {
    /// Namespaces matching the filters.
    pub found: Vec<String>,
    /// Deleted and gone.
    pub deleted: Vec<String>,
    /// Still there after `timeout`, or their DELETE failed: `(name, why)`.
    pub failed: Vec<(String, String)>,
}

/// An age the way `kubectl get` prints it: `45s`, `12m`, `20h`, `3d`.
fn age(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..120 => format!("{s}s"),
        120..7200 => format!("{}m", s / 60),
        7200..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// Lists podlife namespaces matching the options, prints them, and deletes them with `yes`.
pub async fn clean(client: &Client, opts: &CleanOptions, out: &mut impl Write) -> Result<CleanOutcome, ClusterError> {
    let listed = tokio::time::timeout(opts.request_timeout, namespaces_labelled(client, opts.run.as_deref()))
        .await
        .map_err(|_| ClusterError::Unavailable {
            what: "list namespaces".into(),
            reason: format!(
                "no answer within {}",
                crate::util::fmt_secs(opts.request_timeout.as_secs_f64())
            ),
        })??;
    let matching: Vec<PodlifeNamespace> = listed
        .into_iter()
        .filter(|n| match (opts.older_than, n.created) {
            (None, _) => true,
            (Some(min), Some(created)) => opts.now.duration_since(created).as_secs_f64() >= min.as_secs_f64(),
            // Without a creation time its age is unknown: not old enough to be sure.
            (Some(_), None) => false,
        })
        .collect();
    let mut outcome = CleanOutcome {
        found: matching.iter().map(|n| n.name.clone()).collect(),
        ..CleanOutcome::default()
    };
    let scope = match (&opts.run, opts.older_than) {
        (Some(r), Some(d)) => format!(" of run {r} older than {}", crate::util::fmt_secs(d.as_secs_f64())),
        (Some(r), None) => format!(" of run {r}"),
        (None, Some(d)) => format!(" older than {}", crate::util::fmt_secs(d.as_secs_f64())),
        (None, None) => String::new(),
    };
    if matching.is_empty() {
        let _ = writeln!(out, "no podlife namespaces{scope}");
        return Ok(outcome);
    }
    let _ = writeln!(out, "{:<63}  {:<8}  {:<10}  CASE", "NAMESPACE", "RUN", "AGE");
    for n in &matching {
        let age = n
            .created
            .map(|c| age(opts.now.duration_since(c).as_secs_f64()))
            .unwrap_or_else(|| "?".into());
        let case = match (&n.suite, &n.case) {
            (Some(s), Some(c)) => format!("{s}::{c}"),
            (None, Some(c)) => c.clone(),
            _ => String::new(),
        };
        let state = if n.terminating { " (terminating)" } else { "" };
        let _ = writeln!(out, "{:<63}  {:<8}  {:<10}  {case}{state}", n.name, n.run, age);
    }
    let count = matching.len();
    let plural = if count == 1 { "" } else { "s" };
    if !opts.yes {
        let mut again = String::from("podlife clean");
        if let Some(r) = &opts.run {
            again.push_str(&format!(" --run {r}"));
        }
        if let Some(d) = opts.older_than {
            again.push_str(&format!(" --older-than {}", humantime::format_duration(d)));
        }
        let _ = writeln!(
            out,
            "{count} namespace{plural}{scope}; dry run, nothing deleted. To delete: {again} --yes"
        );
        return Ok(outcome);
    }
    let deadline = crate::util::after_tokio(opts.timeout);
    let deletes = matching.into_iter().map(|n| {
        let api = CaseApi::new(client.clone(), &n.name).bounded(opts.request_timeout, None);
        async move {
            let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
            let r = api.delete_namespace(&n.uid, wait, std::time::Duration::ZERO).await;
            (n.name, r)
        }
    });
    for (name, r) in futures::future::join_all(deletes).await {
        match r {
            Ok(true) => {
                let _ = writeln!(out, "deleted {name}");
                outcome.deleted.push(name);
            }
            Ok(false) => {
                let why = format!(
                    "still terminating after {}",
                    crate::util::fmt_secs(opts.timeout.as_secs_f64())
                );
                let _ = writeln!(out, "not gone: {name}: {why}");
                outcome.failed.push((name, why));
            }
            Err(e) => {
                let _ = writeln!(out, "not deleted: {name}: {e}");
                outcome.failed.push((name, e.to_string()));
            }
        }
    }
    let _ = writeln!(
        out,
        "{} of {count} namespace{plural}{scope} deleted",
        outcome.deleted.len()
    );
    Ok(outcome)
}
