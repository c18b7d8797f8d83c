//! Reporters (`write_all`, `publish`): console lines, JUnit XML, per-case timeline JSON and the
//! run summary, all written from the finished run's `RunSummary` (they never import `run`).

pub mod console;
pub mod diff;
pub mod html;
pub mod junit;

use std::path::Path;

use crate::results::RunSummary;

/// File name of a case's timeline: `<suite>__<case>.json`.
pub fn timeline_file(suite: &str, case: &str) -> String {
    format!("timelines/{suite}__{case}.json")
}

/// Writes `summary.json`, `junit.xml`, `index.html` and `timelines/` under `dir` (and the JUnit copy to
/// `junit`, if given). Returns the paths written, for the console.
pub fn write_all(dir: &Path, junit: Option<&Path>, summary: &mut RunSummary) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir.join("timelines"))?;
    for c in &mut summary.cases {
        if let Some(tl) = &c.timeline {
            let rel = timeline_file(&c.suite, &c.case);
            let json = serde_json::to_string_pretty(tl).map_err(std::io::Error::other)?;
            std::fs::write(dir.join(&rel), json)?;
            c.timeline_file = Some(rel);
        }
    }
    let xml = junit::junit_report(summary)
        .to_string()
        .map_err(std::io::Error::other)?;
    std::fs::write(dir.join("junit.xml"), &xml)?;
    let mut paths = vec![dir.join("junit.xml").display().to_string()];
    if let Some(p) = junit {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, &xml)?;
        paths.push(p.display().to_string());
    }
    let json = serde_json::to_string_pretty(summary).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("summary.json"), json)?;
    paths.push(dir.join("summary.json").display().to_string());
    std::fs::write(dir.join("index.html"), html::render(summary))?;
    paths.push(dir.join("index.html").display().to_string());
    paths.push(dir.join("timelines").display().to_string() + "/");
    Ok(paths)
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
pub fn publish(opts: PublishOptions<'_>, summary: &mut RunSummary) -> Result<(), String> {
    let dir = opts.dir;
    let mut result = Ok(());
    match write_all(dir, opts.junit, summary) {
        Ok(paths) => {
            if !opts.quiet {
                println!("reports: {}", paths.join(", "));
            }
        }
        Err(e) => {
            eprintln!("error: writing reports: {e}");
            result = Err(e.to_string());
        }
    }
    for l in &summary.leftovers {
        eprintln!("leftover: {l}");
    }
    if let Some(u) = &summary.upstream
        && !opts.quiet
    {
        println!(
            "upstream conformance behaviours certified: {} of {} applicable",
            u.certified.len(),
            u.applicable
        );
    }
    if opts.certify {
        let node = match &summary.fingerprint.nodes[..] {
            [n] => format!(
                "node {} ({}, kubelet {})",
                n.name, n.container_runtime_version, n.kubelet_version
            ),
            _ => "the cluster".to_string(),
        };
        print!(
            "{}",
            crate::results::stats::certification_table(&summary.certification, &node)
        );
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
