//! Replay I/O: what a run folder or a folder of recordings holds for a case (recordings,
//! stored timelines, the live run's attempts and fingerprint), read before and while replaying.

use std::collections::BTreeSet;
use std::path::PathBuf;

use jiff::Timestamp;

use super::{RunOptions, case, record};
use crate::results::Fingerprint;
use crate::results::{Attempt, AttemptStatus, RunSummary};
use crate::suite::{LoadedCase, Suite};

/// A report folder of `podlife run` (`reports/<runid>`), as opposed to a folder of recordings
/// named after cases (`tests/fixtures/recordings`).
pub fn is_run_folder(dir: &std::path::Path) -> bool {
    dir.join("summary.json").is_file() || dir.join("recordings").join("run.json").is_file()
}

/// One attempt replayed: from a run folder, attempt `n` of the case's recordings (or, for runs
/// recorded without `--record`, its judged timeline); from a recordings folder, `<dir>/<case>`.
pub(super) fn replay_attempt(
    dir: &std::path::Path,
    names: &crate::files::Names,
    case: &LoadedCase,
    node: Option<&str>,
    n: usize,
) -> crate::results::Attempt {
    if !is_run_folder(dir) {
        return case::replay_named(case, &dir.join(case.name()), names);
    }
    let recs = dir
        .join("recordings")
        .join(record::case_dir_name(&case.suite, case.name(), node));
    if recs.is_dir() {
        return case::replay_named(case, &recs.join(format!("attempt-{n}")), names);
    }
    // No recordings: the run stored one timeline per case, its last attempt's. Only that
    // attempt has evidence to re-judge; every other attempt is said to have none (judging the
    // last attempt's timeline for each would turn N attempts into N copies of one sample).
    let started = Timestamp::now();
    let recorded = recorded_attempts(dir, case, node);
    let last = recorded.as_ref().map_or(n, Vec::len);
    if n != last {
        return Attempt {
            status: AttemptStatus::Error,
            verdicts: vec![],
            error: Some(format!(
                "attempt {n} of {last}: the run kept no evidence of it (no recordings, and its stored timeline is the last attempt's): not re-judged"
            )),
            started,
            duration_s: 0.0,
            api_requests: 0,
            cleanup: Default::default(),
            node_load: None,
            timeline: None,
        };
    }
    let original = recorded.as_ref().and_then(|a| a.last());
    case::judge_timeline_file(case, &stored_timeline(dir, case, node), names, original)
}

/// The attempts a run folder's `summary.json` reports for a case (None: no readable summary
/// or no such case).
fn recorded_attempts(dir: &std::path::Path, case: &LoadedCase, node: Option<&str>) -> Option<Vec<Attempt>> {
    let text = crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY).ok()?;
    let s: RunSummary = serde_json::from_str(&text).ok()?;
    s.cases
        .into_iter()
        .find(|c| c.suite == case.suite && c.case == case.name() && c.target_node.as_deref() == node)
        .map(|c| c.attempts)
}

/// Whether `dir` holds something to replay `case` from (on any node, for a fleet run).
pub(super) fn replayable(dir: &std::path::Path, case: &LoadedCase) -> bool {
    if !is_run_folder(dir) {
        return dir.join(case.name()).is_dir();
    }
    let stem = record::case_dir_name(&case.suite, case.name(), None);
    let ours = |name: &str, suffix: &str| {
        name.strip_suffix(suffix)
            .is_some_and(|n| n == stem || n.strip_prefix(stem.as_str()).is_some_and(|r| r.starts_with('@')))
    };
    let any_in = |sub: &str, suffix: &str| {
        std::fs::read_dir(dir.join(sub)).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_str().is_some_and(|n| ours(n, suffix)))
        })
    };
    any_in("recordings", "") || any_in("timelines", ".json")
}

/// The timeline JSON a run folder holds for a case (see `results::timeline_file`).
pub(super) fn stored_timeline(dir: &std::path::Path, case: &LoadedCase, node: Option<&str>) -> PathBuf {
    dir.join(crate::results::timeline_file(&case.suite, case.name(), node))
}

/// The `suite::case` names a run folder's `summary.json` reports, without the node of an
/// `--each-node` copy (None: not a finished run).
pub(super) fn cases_of_run(dir: &std::path::Path) -> Option<BTreeSet<String>> {
    if !is_run_folder(dir) {
        return None;
    }
    let text = crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY).ok()?;
    let s: RunSummary = serde_json::from_str(&text).ok()?;
    Some(s.cases.iter().map(|c| c.case_name()).collect())
}

/// A run folder that cannot be replayed: one line naming the file at fault (as
/// `RunOptions::names` names it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayFolderError {
    #[error(
        "{}: a symbolic link in a run folder: refused (a run is re-judged only from what it holds)",
        crate::util::printable(.0)
    )]
    Link(String),
    #[error(transparent)]
    Unreadable(#[from] crate::files::Unreadable),
    #[error("{file}: not a podlife run.json: {source}")]
    RunJson { file: String, source: serde_json::Error },
    #[error(transparent)]
    Recording(#[from] crate::observe::recording::RecordingError),
}

/// Before replaying a run folder: walk the attempts as the live run did (its `--retries` and
/// `--repeat` from `recordings/run.json`), and check every recording the selected cases need,
/// so a damaged one is one clear error before anything runs.
pub(super) fn prepare_replay(opts: &mut RunOptions, cases: &[(Suite, LoadedCase)]) -> Result<(), ReplayFolderError> {
    let Some(dir) = opts.replay.clone() else { return Ok(()) };
    if !is_run_folder(&dir) {
        return Ok(());
    }
    let names = &opts.names;
    refuse_links(&dir).map_err(|link| ReplayFolderError::Link(names.name(&link)))?;
    let run_json = dir.join("recordings").join("run.json");
    let text = crate::files::read_string_opt(&run_json, crate::files::SUMMARY).map_err(|e| names.unreadable(e))?;
    if let Some(text) = text {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|source| ReplayFolderError::RunJson {
            file: names.name(&run_json),
            source,
        })?;
        if let Some(r) = v.get("retries").and_then(|x| x.as_u64()) {
            opts.retries = u32::try_from(r).unwrap_or(0);
        }
        if let Some(r) = v.get("repeat").and_then(|x| x.as_u64()) {
            opts.repeat = u32::try_from(r).unwrap_or(1).max(1);
        }
    }
    // Without run.json (a run made without recordings), the attempts `summary.json` lists are
    // what the live run made: walk them all, so the last one — whose timeline is stored — is
    // judged as itself (the replay never makes more than the live run made).
    let most_tries = crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
        .ok()
        .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok())
        .and_then(|s| s.cases.iter().flat_map(|c| c.repetitions.iter().copied()).max())
        .unwrap_or(1);
    opts.retries = opts
        .retries
        .max(u32::try_from(most_tries.saturating_sub(1)).unwrap_or(0));
    // `retries`, `repeat` and the repetitions are numbers a file states: they bound loops and
    // allocations only up to the attempts the folder actually holds (no replay makes more).
    let held = u32::try_from(attempts_held(&dir)).unwrap_or(u32::MAX);
    opts.retries = opts.retries.min(held);
    opts.repeat = opts.repeat.min(held.max(1));
    for (_, case) in cases {
        if !opts.selection().could_select(&case.full_name()) {
            continue;
        }
        // The case's folder, and those of its --each-node copies (`…@<node>`).
        let plain = record::case_dir_name(&case.suite, case.name(), None);
        let Ok(all) = std::fs::read_dir(dir.join("recordings")) else {
            continue;
        };
        let folders = all.flatten().map(|e| e.path()).filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == plain || n.strip_prefix(plain.as_str()).is_some_and(|r| r.starts_with('@')))
        });
        for recs in folders {
            let Ok(rd) = std::fs::read_dir(&recs) else { continue };
            let mut attempts: Vec<_> = rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
            attempts.sort();
            for a in attempts {
                crate::observe::Recording::read_named(&a, &opts.names)?;
            }
        }
    }
    Ok(())
}

/// A run folder is evidence of one run: what it holds is read from inside it only. A symbolic
/// link in it (a recording or stored timeline pointing elsewhere) would be judged and copied
/// into the new reports as if the run had recorded it, so it is refused, naming the path, as
/// bundles refuse links (`Err`: the first link found). The walk never follows a link, so it
/// ends on any folder.
fn refuse_links(dir: &std::path::Path) -> Result<(), PathBuf> {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() {
                return Err(e.path());
            }
            if t.is_dir() {
                todo.push(e.path());
            }
        }
    }
    Ok(())
}

/// The most attempts any one case has evidence of in a run folder: attempt folders under its
/// `recordings/<case>/`, or attempts its `summary.json` lists (each an entry of the file).
fn attempts_held(dir: &std::path::Path) -> usize {
    let recorded = std::fs::read_dir(dir.join("recordings")).map_or(0, |rd| {
        rd.flatten()
            .filter_map(|e| std::fs::read_dir(e.path()).ok())
            .map(|a| a.count())
            .max()
            .unwrap_or(0)
    });
    let listed = crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
        .ok()
        .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok())
        .and_then(|s| s.cases.iter().map(|c| c.attempts.len()).max())
        .unwrap_or(0);
    recorded.max(listed)
}

/// The fingerprint of recordings: a run folder's own (from its `summary.json`, else
/// `recordings/cluster-info.json`), or `cluster-info.json` beside a recordings folder.
pub fn replay_fingerprint(dir: &std::path::Path, names: &crate::files::Names) -> Fingerprint {
    let source = Some(format!("replay:{}", names.name(dir)));
    if is_run_folder(dir) {
        let from_summary = crate::files::read_string(&dir.join("summary.json"), crate::files::SUMMARY)
            .ok()
            .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok())
            .map(|s| s.fingerprint);
        let from_info = || {
            let text =
                crate::files::read_string(&dir.join("recordings/cluster-info.json"), crate::files::SUMMARY).ok()?;
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            serde_json::from_value::<Fingerprint>(v.get("fingerprint")?.clone()).ok()
        };
        if let Some(mut fp) = from_summary.or_else(from_info) {
            fp.source = source;
            return fp;
        }
    }
    let mut fp = Fingerprint {
        source,
        ..Fingerprint::default()
    };
    let Ok(text) = crate::files::read_string(&dir.join("cluster-info.json"), crate::files::SUMMARY) else {
        return fp;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return fp;
    };
    let s = |p: &str| v.pointer(p).and_then(|x| x.as_str()).unwrap_or_default().to_string();
    fp.server_version = s("/version/serverVersion/gitVersion");
    fp.platform = Some(s("/version/serverVersion/platform"));
    if v.pointer("/node/name").is_some() {
        fp.nodes.push(crate::results::NodeInfo {
            name: s("/node/name"),
            ready: true,
            kubelet_version: s("/node/nodeInfo/kubeletVersion"),
            container_runtime_version: s("/node/nodeInfo/containerRuntimeVersion"),
            kernel_version: s("/node/nodeInfo/kernelVersion"),
            os_image: s("/node/nodeInfo/osImage"),
            architecture: s("/node/nodeInfo/architecture"),
            ..Default::default()
        });
    }
    fp
}
