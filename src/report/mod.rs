//! Reporters (`write_all`, `publish`): console lines, JUnit XML, per-case timeline JSON and the
//! run summary, all written from the finished run's `RunSummary` (they never import `run`).

pub mod console;
pub mod diff;
pub mod html;
pub mod junit;

use std::path::Path;

use crate::results::RunSummary;

// Defined with the results, which `run` reads back when replaying a run folder.
pub use crate::results::timeline_file;

/// A report file or folder that could not be written, with its path.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: std::path::PathBuf,
    pub source: std::io::Error,
}

fn mkdir(p: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(p).map_err(|source| WriteError {
        path: p.to_path_buf(),
        source,
    })
}

fn write(p: &Path, contents: impl AsRef<[u8]>) -> Result<(), WriteError> {
    std::fs::write(p, contents).map_err(|source| WriteError {
        path: p.to_path_buf(),
        source,
    })
}

/// Writes `summary.json`, `junit.xml`, `index.html` and `timelines/` under `dir` (and the JUnit copy to
/// `junit`, if given). Returns the paths written, for the console; an error names the path.
pub fn write_all(dir: &Path, junit: Option<&Path>, summary: &RunSummary) -> Result<Vec<String>, WriteError> {
    let other = |p: &Path, e: &dyn std::fmt::Display| WriteError {
        path: p.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    mkdir(&dir.join("timelines"))?;
    // Each timeline goes where the run said it would be (`CaseReport::timeline_file`).
    for c in &summary.cases {
        if let (Some(tl), Some(rel)) = (&c.timeline, &c.timeline_file) {
            let path = dir.join(rel);
            let json = serde_json::to_string_pretty(tl).map_err(|e| other(&path, &e))?;
            write(&path, json)?;
        }
    }
    let xml = junit::junit_report(summary, Some(dir))
        .to_string()
        .map_err(|e| other(&dir.join("junit.xml"), &e))?;
    write(&dir.join("junit.xml"), &xml)?;
    let mut paths = vec![dir.join("junit.xml").display().to_string()];
    if let Some(p) = junit {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            mkdir(parent)?;
        }
        write(p, &xml)?;
        paths.push(p.display().to_string());
    }
    // Streamed to the files: a fleet run's summary and page are large, and need not be held whole.
    let streamed = |name: &str, f: &dyn Fn(&mut dyn std::io::Write) -> std::io::Result<()>| {
        let path = dir.join(name);
        let io = |source| WriteError {
            path: path.clone(),
            source,
        };
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
        f(&mut w).and_then(|()| std::io::Write::flush(&mut w)).map_err(io)
    };
    streamed("summary.json", &|w| {
        serde_json::to_writer_pretty(w, summary).map_err(std::io::Error::other)
    })?;
    paths.push(dir.join("summary.json").display().to_string());
    streamed("index.html", &|w| html::write_page(summary, Some(dir), w))?;
    paths.push(dir.join("index.html").display().to_string());
    paths.push(dir.join("timelines").display().to_string() + "/");
    Ok(paths)
}

/// When an unpinned run's cases landed on several nodes: which, and that `--each-node` would
/// certify each (a table over scattered cases cannot say which node fails).
pub fn scattered(summary: &RunSummary) -> Option<String> {
    let mut on: std::collections::BTreeMap<&str, usize> = Default::default();
    for c in &summary.cases {
        if let Some(n) = &c.node {
            *on.entry(n.as_str()).or_default() += 1;
        }
    }
    if on.len() < 2 {
        return None;
    }
    let list: Vec<String> = on.iter().map(|(n, k)| format!("{k} on {n}")).collect();
    Some(format!(
        "note: the cases ran on {} nodes ({}), so this certifies none of them alone: `--each-node` runs every case on each node and certifies each",
        on.len(),
        list.join(", ")
    ))
}

/// How a finished run is published.
#[derive(Clone, Copy, Debug)]
pub struct PublishOptions<'a> {
    /// The run's report folder (`reports/<runid>`).
    pub dir: &'a Path,
    /// Another copy of the JUnit XML.
    pub junit: Option<&'a Path>,
    pub quiet: bool,
    /// Print the per-area certification table.
    pub certify: bool,
}

/// Writes every report of a finished run and prints its closing lines (report paths, leftovers,
/// upstream count, certification table, kept namespaces). Returns the report error, if any.
///
/// It only reads `summary`; the `&mut` stays so its callers (tests/ included) need no change.
pub fn publish(opts: PublishOptions<'_>, summary: &mut RunSummary) -> Result<(), WriteError> {
    let summary: &RunSummary = summary;
    let dir = opts.dir;
    let mut result = Ok(());
    match write_all(dir, opts.junit, summary) {
        Ok(paths) => {
            if !opts.quiet {
                crate::outln!("reports: {}", paths.join(", "));
            }
        }
        Err(e) => {
            eprintln!("error: reports: {e}");
            result = Err(e);
        }
    }
    for l in &summary.leftovers {
        eprintln!("leftover: {l}");
    }
    if !summary.leftovers.is_empty() {
        eprintln!(
            "leftovers: list them with `podlife clean --run {0}` and delete them with `podlife clean --run {0} --yes`",
            summary.run_id
        );
    }
    if !opts.quiet || summary.interrupted {
        crate::outln!("{}", summary.counts_line());
        if let Some(l) = load_line(summary) {
            crate::outln!("{l}");
        }
        if let Some(l) = wall_line(summary) {
            crate::outln!("{l}");
        }
        // A retry that passed after a harness error stands, but the error is not hidden.
        for c in &summary.cases {
            if let Some(note) = crate::results::harness_error_note(c) {
                crate::outln!("{} {}: {note}", c.full_name(), c.status.as_str());
            }
        }
    }
    if let Some(u) = &summary.upstream
        && !opts.quiet
    {
        // The same figure as `list --upstream` (claims of every loaded case, selected or not),
        // then what this run certified of it.
        crate::outln!(
            "{}; certified by this run: {} (every case naming it ran and passed)",
            crate::suite::upstream::figure(u.mapped, u.applicable),
            u.certified.len(),
        );
    }
    if let Some(f) = &summary.fleet {
        // A fleet run is a certification of each node: the matrix, with or without the profile.
        crate::out!("{}", crate::results::stats::matrix_table(f));
        if let Some(l) = crate::results::fleet::interrupted_nodes(summary) {
            crate::outln!("{l}");
        }
    } else if opts.certify {
        let node = match &summary.fingerprint.nodes[..] {
            [n] => format!(
                "node {} ({}, kubelet {})",
                n.name, n.container_runtime_version, n.kubelet_version
            ),
            _ => "the cluster".to_string(),
        };
        crate::out!(
            "{}",
            crate::results::stats::certification_table(&summary.certification, &node)
        );
        if let Some(note) = scattered(summary) {
            crate::outln!("{note}");
        }
    }
    for c in &summary.cases {
        if let Some(a) = c.last()
            && a.cleanup.kept
            && let Some(ns) = &a.cleanup.namespace
        {
            eprintln!(
                "kept namespace {ns} of failed case {}: inspect with `kubectl -n {ns} get pods,events` and `kubectl -n {ns} logs --all-containers --prefix -l '' --ignore-errors`; delete with `kubectl delete namespace {ns}`",
                c.full_name()
            );
        }
    }
    result
}

/// The run's wall time beside the plan's prediction (`wall 5m2s, predicted 4m30s (3 nodes at
/// once, 1 batch)`): how far the plan can be trusted for the next, larger run.
fn wall_line(summary: &RunSummary) -> Option<String> {
    let p = summary.plan.as_ref()?;
    let wall = summary.finished.duration_since(summary.started).as_secs_f64();
    let fleet = if p.nodes > 0 {
        format!(
            " ({} node{} at once, {} batch{})",
            p.nodes_at_once,
            if p.nodes_at_once == 1 { "" } else { "s" },
            p.batches,
            if p.batches == 1 { "" } else { "es" }
        )
    } else {
        String::new()
    };
    Some(format!(
        "wall {}, predicted {}{fleet}",
        crate::util::fmt_secs(wall),
        crate::util::fmt_secs(p.predicted_wall.as_secs_f64())
    ))
}

/// The CPU each node used while the run's attempts ran (`node CPU while the cases ran: vm 1.21
/// cores mean, 1.93 max (of 2)`): the load every timing was measured under. `None` when no
/// attempt has a reading (a replay of a run made before podlife read it).
fn load_line(summary: &crate::results::RunSummary) -> Option<String> {
    let mut per_node: std::collections::BTreeMap<&str, Vec<&crate::results::NodeLoad>> = Default::default();
    for l in summary
        .cases
        .iter()
        .flat_map(|c| &c.attempts)
        .filter_map(|a| a.node_load.as_ref())
    {
        per_node.entry(l.node.as_str()).or_default().push(l);
    }
    if per_node.is_empty() {
        return None;
    }
    let parts: Vec<String> = per_node
        .iter()
        .map(|(node, ls)| {
            let samples: usize = ls.iter().map(|l| l.samples).sum();
            let mean = ls.iter().map(|l| l.mean_cores * l.samples as f64).sum::<f64>() / samples.max(1) as f64;
            let max = ls.iter().map(|l| l.max_cores).fold(0.0, f64::max);
            let of = ls
                .iter()
                .find_map(|l| l.capacity_cores)
                .map(|c| format!(" (of {c})"))
                .unwrap_or_default();
            format!("{node} {mean:.2} cores mean, {max:.2} max{of}")
        })
        .collect();
    Some(format!("node CPU while the cases ran: {}", parts.join("; ")))
}
