//! Reporters (`write_all`): console lines, JUnit XML, per-case timeline JSON and the run summary,
//! all written from the finished run's `RunSummary`.

pub mod console;
pub mod diff;
pub mod html;
pub mod junit;

use std::path::Path;

use crate::run::RunSummary;

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
