//! `podlife clean` (`CleanOptions`, `clean`): finds the namespaces earlier runs left behind
//! (interrupted, killed, or cleanup that timed out) by podlife's labels, lists them, and deletes
//! them only when asked (`--yes`), each with a UID precondition. A run still in progress (one of
//! its namespaces' `podlife.dev/in-use-until` not passed yet) is left alone unless named.

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
    /// Namespaces matching the filters (those of runs in progress excluded, see `in_progress`).
    pub found: Vec<String>,
    /// Namespaces left alone because their run is in progress (not named with `--run`).
    pub in_progress: Vec<String>,
    /// Deleted and gone.
    pub deleted: Vec<String>,
    /// Still there after `timeout`, or their DELETE failed: `(name, why)`.
    pub failed: Vec<(String, String)>,
}

/// How long a namespace of an older podlife (without the `podlife.dev/in-use-until` annotation)
/// is taken for one of a run in progress: such runs cannot say how long they last, and the
/// longest built-in case with its outage budget and cleanup stays well under this.
pub(crate) const UNANNOTATED_IN_USE: Duration = Duration::from_secs(3600);

/// Until when `n` may still be used by its run: its annotation, else its creation time plus
/// `UNANNOTATED_IN_USE` (None: unknown age, taken as in use).
fn in_use_until(n: &PodlifeNamespace) -> Option<Timestamp> {
    n.in_use_until.or_else(|| {
        let guard = jiff::SignedDuration::try_from(UNANNOTATED_IN_USE).unwrap_or(jiff::SignedDuration::MAX);
        n.created.map(|c| crate::util::ts_add(c, guard))
    })
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
    let busy = busy_runs(&listed, opts.now);
    let (matching, in_progress): (Vec<PodlifeNamespace>, Vec<PodlifeNamespace>) = listed
        .into_iter()
        .filter(|n| match (opts.older_than, n.created) {
            (None, _) => true,
            (Some(min), Some(created)) => opts.now.duration_since(created).as_secs_f64() >= min.as_secs_f64(),
            // Without a creation time its age is unknown: not old enough to be sure.
            (Some(_), None) => false,
        })
        .partition(|n| opts.run.is_some() || !busy.contains_key(&n.run));
    let mut outcome = CleanOutcome {
        found: matching.iter().map(|n| n.name.clone()).collect(),
        in_progress: in_progress.iter().map(|n| n.name.clone()).collect(),
        ..CleanOutcome::default()
    };
    print_in_progress(out, &in_progress, &busy);
    let scope = match (&opts.run, opts.older_than) {
        (Some(r), Some(d)) => format!(" of run {r} older than {}", crate::util::fmt_secs(d.as_secs_f64())),
        (Some(r), None) => format!(" of run {r}"),
        (None, Some(d)) => format!(" older than {}", crate::util::fmt_secs(d.as_secs_f64())),
        (None, None) => String::new(),
    };
    if matching.is_empty() {
        let other = if outcome.in_progress.is_empty() {
            ""
        } else {
            " to delete"
        };
        let _ = writeln!(out, "no podlife namespaces{scope}{other}");
        return Ok(outcome);
    }
    print_table(out, &matching, opts.now);
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
    delete_all(client, opts, matching, out, &mut outcome).await;
    let _ = writeln!(
        out,
        "{} of {count} namespace{plural}{scope} deleted",
        outcome.deleted.len()
    );
    Ok(outcome)
}

/// The runs that may still be in progress, with the time their namespaces may be in use until
/// (`Timestamp::MAX`: unknown). A run is in progress while any of its namespaces may still be in
/// use (and is not being deleted already): all its namespaces are left alone — a leftover of its
/// first attempt included — unless the user names the run.
fn busy_runs(listed: &[PodlifeNamespace], now: Timestamp) -> std::collections::BTreeMap<String, Timestamp> {
    listed
        .iter()
        .filter(|n| !n.terminating)
        .filter_map(|n| match in_use_until(n) {
            Some(t) if t > now => Some((n.run.clone(), t)),
            Some(_) => None,
            None => Some((n.run.clone(), Timestamp::MAX)),
        })
        .fold(Default::default(), |mut m, (run, t)| {
            let e = m.entry(run).or_insert(t);
            *e = (*e).max(t);
            m
        })
}

/// One line per run left alone because it may still be in progress.
fn print_in_progress(
    out: &mut impl Write,
    in_progress: &[PodlifeNamespace],
    busy: &std::collections::BTreeMap<String, Timestamp>,
) {
    let runs_in_progress: std::collections::BTreeSet<&String> = in_progress.iter().map(|n| &n.run).collect();
    for run in runs_in_progress {
        let n = in_progress.iter().filter(|n| &n.run == run).count();
        let until = busy
            .get(run)
            .filter(|t| **t < Timestamp::MAX)
            .map_or("an unknown time".to_string(), |t| t.to_string());
        let _ = writeln!(
            out,
            "run {run} may still be in progress (its namespaces may be in use until {until}): its {n} namespace{} left alone; to delete them anyway: podlife clean --run {run} --yes",
            if n == 1 { "" } else { "s" }
        );
    }
}

/// The namespaces found: name, run, age and case.
fn print_table(out: &mut impl Write, matching: &[PodlifeNamespace], now: Timestamp) {
    let _ = writeln!(out, "{:<63}  {:<8}  {:<10}  CASE", "NAMESPACE", "RUN", "AGE");
    for n in matching {
        let age = n
            .created
            .map(|c| age(now.duration_since(c).as_secs_f64()))
            .unwrap_or_else(|| "?".into());
        let case = match (&n.suite, &n.case) {
            (Some(s), Some(c)) => format!("{s}::{c}"),
            (None, Some(c)) => c.clone(),
            _ => String::new(),
        };
        let state = if n.terminating { " (terminating)" } else { "" };
        let _ = writeln!(out, "{:<63}  {:<8}  {:<10}  {case}{state}", n.name, n.run, age);
    }
}

/// Deletes the namespaces (UID-checked) all at once, each waited for until the clean's
/// timeout, and says of each what became of it.
async fn delete_all(
    client: &Client,
    opts: &CleanOptions,
    matching: Vec<PodlifeNamespace>,
    out: &mut impl Write,
    outcome: &mut CleanOutcome,
) {
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
}
