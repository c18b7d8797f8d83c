//! Reading a recording folder (`Recording`) into observer `Input`s: `pods.watch.jsonl`,
//! `events.watch.jsonl`, `logs/` (follow output split per instance by `logs/index.jsonl`,
//! `--previous` captures), `cri-logs/<container>/<attempt>.log`, `actions.jsonl` and `gaps.jsonl`.
//!
//! Missing evidence: a recording says a source was lost with a line in `gaps.jsonl` (a `Gap`
//! as JSON: `{"source": "events", "from": ..., "to": ..., "reason": ...}`), and an absent
//! `events.watch.jsonl` means events were never available (an empty file means none happened).
//! An absent `logs/` is not a gap: a container that never started has no log.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;

use super::observer::{Input, Observer, WatchKind, parse_cri_line};
use super::timeline::{Action, ActionKind, EvidenceSource, Gap, Timeline};

#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{path}: {message}")]
    Bad { path: String, message: String },
}

fn bad(path: &Path, message: impl Into<String>) -> RecordingError {
    RecordingError::Bad {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// A recording folder, read into inputs.
#[derive(Debug)]
pub struct Recording {
    pub dir: PathBuf,
    pub inputs: Vec<Input>,
    /// The pod manifest the recording was made with, if present.
    pub manifest: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WatchLine {
    received: Timestamp,
    event: WatchEvent,
}

#[derive(Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    kind: String,
    object: serde_json::Value,
}

impl Recording {
    /// Reads every stream of the folder. Fails with a one-line error naming the file and line.
    pub fn read(dir: &Path) -> Result<Recording, RecordingError> {
        if !dir.is_dir() {
            return Err(bad(dir, "not a recording folder (no such directory)"));
        }
        let pods_path = dir.join("pods.watch.jsonl");
        if !pods_path.is_file() {
            return Err(bad(dir, "not a recording folder: pods.watch.jsonl is missing"));
        }
        let mut inputs = vec![];
        for (received, kind, obj, path, n) in read_watch(&pods_path)? {
            let pod = serde_json::from_value(obj).map_err(|e| bad(&path, format!("line {n}: not a Pod: {e}")))?;
            inputs.push(Input::Pod {
                received,
                kind,
                pod: Box::new(pod),
            });
        }
        let events_path = dir.join("events.watch.jsonl");
        if events_path.is_file() {
            for (received, kind, obj, path, n) in read_watch(&events_path)? {
                let event =
                    serde_json::from_value(obj).map_err(|e| bad(&path, format!("line {n}: not an Event: {e}")))?;
                inputs.push(Input::Event {
                    received,
                    kind,
                    event: Box::new(event),
                });
            }
        } else {
            inputs.push(Input::Gap(Gap {
                source: EvidenceSource::Events,
                from: None,
                to: None,
                clock: Default::default(),
                reason: "the recording has no events.watch.jsonl".into(),
            }));
        }
        inputs.extend(read_gaps(&dir.join("gaps.jsonl"))?);
        inputs.extend(read_actions(&dir.join("actions.jsonl"))?);
        inputs.extend(read_logs(dir)?);
        // Stable sort: inputs without a receive time (log file copies) keep their file order at the end.
        inputs.sort_by_key(|i| (i.order_key().is_none(), i.order_key()));
        let manifest = match std::fs::read_to_string(dir.join("manifest.yaml")) {
            Ok(text) => Some(
                crate::suite::load::parse_yaml::<serde_json::Value>(
                    &text,
                    &dir.join("manifest.yaml").display().to_string(),
                )
                .map_err(|d| bad(dir, d.to_string()))?,
            ),
            Err(_) => None,
        };
        Ok(Recording {
            dir: dir.to_path_buf(),
            inputs,
            manifest,
        })
    }

    /// Feeds every input through an `Observer` and returns the complete timeline.
    pub fn timeline(&self) -> Timeline {
        let mut obs = Observer::new(None, &format!("recording:{}", self.dir.display()));
        for i in &self.inputs {
            obs.push(i.clone());
        }
        obs.finish()
    }
}

type WatchRow = (Timestamp, WatchKind, serde_json::Value, PathBuf, usize);

fn read_watch(path: &Path) -> Result<Vec<WatchRow>, RecordingError> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let w: WatchLine = serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        // kubectl prints ERROR/BOOKMARK entries too; they carry no object state for us.
        let Some(kind) = WatchKind::parse(&w.event.kind) else {
            continue;
        };
        out.push((w.received, kind, w.event.object, path.to_path_buf(), i + 1));
    }
    Ok(out)
}

/// `gaps.jsonl`: one `Gap` per line (absent: no gaps).
fn read_gaps(path: &Path) -> Result<Vec<Input>, RecordingError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(vec![]);
    };
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let g: Gap = serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        out.push(Input::Gap(g));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ActionLine {
    action: String,
    sent: Option<Timestamp>,
    done: Option<Timestamp>,
    response_received: Option<Timestamp>,
    request: Option<serde_json::Value>,
    command: Option<String>,
}

fn read_actions(path: &Path) -> Result<Vec<Input>, RecordingError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(vec![]);
    };
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let a: ActionLine = serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        let kind = match a.action.as_str() {
            "create-pod" | "apply-pod" => ActionKind::Apply,
            "delete" => ActionKind::Delete,
            "patch" | "patch-pod" => ActionKind::Patch,
            _ => continue,
        };
        let Some(sent) = a.sent else { continue };
        let grace = a
            .request
            .as_ref()
            .and_then(|r| r.pointer("/body/gracePeriodSeconds"))
            .and_then(|v| v.as_i64());
        out.push(Input::Action(Action {
            kind,
            sent,
            done: a.done.or(a.response_received),
            grace_period_seconds: grace,
            detail: a.command.or_else(|| {
                a.request
                    .as_ref()
                    .and_then(|r| r.get("path"))
                    .and_then(|p| p.as_str())
                    .map(|p| format!("DELETE {p}"))
            }),
        }));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexLine {
    kind: String,
    container: String,
    restart_count_when_seen: Option<u32>,
    file: Option<String>,
    #[serde(default)]
    tries: Vec<Try>,
}

#[derive(Deserialize)]
struct Try {
    #[serde(default)]
    bytes: usize,
}

/// Log lines per instance from three sources; the observer drops the duplicates.
/// - `logs/<c>.log`: `kubectl logs -f` outputs appended one after another; `index.jsonl`
///   gives each follow's size, so the file splits into instances exactly.
/// - `logs/<c>.previous.<r>.log`: `--previous` when restartCount became r: instance r-1.
/// - `cri-logs/<c>/<attempt>.log`: the kubelet's own files (can lack a deleted pod's last lines).
fn read_logs(dir: &Path) -> Result<Vec<Input>, RecordingError> {
    let mut out = vec![];
    let logs = dir.join("logs");
    let index = logs.join("index.jsonl");
    if let Ok(text) = std::fs::read_to_string(&index) {
        let mut offsets: std::collections::HashMap<String, usize> = Default::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let e: IndexLine = serde_json::from_str(line).map_err(|e| bad(&index, format!("line {}: {e}", i + 1)))?;
            match e.kind.as_str() {
                "follow" => {
                    let path = logs.join(format!("{}.log", e.container));
                    let len: usize = e.tries.iter().map(|t| t.bytes).sum();
                    // A container that never printed (status-start-error-never: the process
                    // never started) leaves no file when its only follow delivered 0 bytes.
                    if len == 0 && !path.exists() {
                        continue;
                    }
                    let data = std::fs::read(&path).map_err(|err| bad(&path, format!("cannot read: {err}")))?;
                    let start = offsets.get(&e.container).copied().unwrap_or(0);
                    let end = (start + len).min(data.len());
                    offsets.insert(e.container.clone(), end);
                    let instance = e.restart_count_when_seen.unwrap_or(0);
                    push_lines(
                        &mut out,
                        &e.container,
                        Some(instance),
                        &String::from_utf8_lossy(&data[start.min(end)..end]),
                    );
                }
                "previous" => {
                    // `--previous` returns lastState's instance, which is restartCount-1 or,
                    // while waiting, restartCount itself: let the observer place the lines.
                    let Some(file) = &e.file else { continue };
                    let path = logs.join(file);
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        push_lines(&mut out, &e.container, None, &text);
                    }
                }
                _ => {}
            }
        }
    }
    let cri = dir.join("cri-logs");
    if let Ok(rd) = std::fs::read_dir(&cri) {
        let mut containers: Vec<_> = rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        containers.sort();
        for cdir in containers {
            let container = cdir.file_name().unwrap_or_default().to_string_lossy().to_string();
            let mut files: Vec<_> = std::fs::read_dir(&cdir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            files.sort();
            for f in files {
                let Some(attempt) = f
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                let text = std::fs::read_to_string(&f).map_err(|e| bad(&f, format!("cannot read: {e}")))?;
                let mut partial = String::new();
                for line in text.lines() {
                    let Some((time, full, t)) = parse_cri_line(line) else {
                        continue;
                    };
                    partial.push_str(t);
                    if full {
                        // Re-render as a `--timestamps` line so both sources go through one parser.
                        let line = format!("{} {}", time, std::mem::take(&mut partial));
                        out.push(Input::Log {
                            received: None,
                            container: container.clone(),
                            instance: Some(attempt),
                            line,
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

fn push_lines(out: &mut Vec<Input>, container: &str, instance: Option<u32>, text: &str) {
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        out.push(Input::Log {
            received: None,
            container: container.to_string(),
            instance,
            line: line.to_string(),
        });
    }
}
