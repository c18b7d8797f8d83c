//! Reading a recording folder (`Recording`) into observer `Input`s: `pods.watch.jsonl`,
//! `events.watch.jsonl`, `logs/` (follow output split per instance by `logs/index.jsonl`,
//! `--previous` captures), `cri-logs/<container>/<attempt>.log`, `actions.jsonl` and `gaps.jsonl`.
//!
//! Missing evidence: a recording says a source was lost with a line in `gaps.jsonl` (a `Gap`
//! as JSON: `{"source": "events", "from": ..., "to": ..., "reason": ...}`), and an absent
//! `events.watch.jsonl` means events were never available (an empty file means none happened).
//! An absent `logs/` is not a gap: a container that never started has no log.
//!
//! Recordings written by `podlife run` (see `run::record`) open `actions.jsonl` with a
//! `{"action":"recording"}` header, number every input with `seq` (the order the live observer
//! saw them, which a replay follows exactly), keep log lines per instance in
//! `logs/<container>.<instance>.jsonl` with their receive times, note how the attempt ended, and
//! close with `{"action":"recording-complete","inputs":N}`: a recording without it is refused.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;

use crate::files;

use super::observer::{Input, Observer, WatchKind, parse_cri_line};
use super::timeline::{Action, ActionKind, EvidenceSource, Gap, Timeline};

/// A recording that cannot be read: one line naming the file (`shown`: the path as
/// `files::Names` names it, see `Recording::read_named`).
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{shown}: {message}")]
    Bad {
        path: PathBuf,
        shown: String,
        message: String,
    },
}

impl RecordingError {
    /// The error with its file named as `names` names it.
    fn named(self, names: &files::Names) -> RecordingError {
        let RecordingError::Bad { path, message, .. } = self;
        RecordingError::Bad {
            shown: names.name(&path),
            path,
            message,
        }
    }
}

impl From<files::FileError> for RecordingError {
    fn from(e: files::FileError) -> RecordingError {
        bad(&e.path, e.problem.to_string())
    }
}

/// A recording file that may be absent (a FIFO, a device or an oversize file is an error).
fn read_opt(path: &Path, limit: files::Limit) -> Result<Option<String>, RecordingError> {
    Ok(files::read_string_opt(path, limit)?)
}

/// A file a recording's data names (`logs/index.jsonl`, `cri-logs/`) must stay inside the
/// recording folder once symlinks are resolved: a shared recording must not make podlife read
/// elsewhere on the machine that replays it.
fn check_inside(dir: &Path, path: &Path) -> Result<(), RecordingError> {
    if path.exists() && !files::is_within(dir, path) {
        return Err(bad(path, "leads outside the recording folder (a symlink?): refused"));
    }
    Ok(())
}

fn bad(path: &Path, message: impl Into<String>) -> RecordingError {
    RecordingError::Bad {
        path: path.to_path_buf(),
        shown: path.display().to_string(),
        message: message.into(),
    }
}

/// A recording folder, read into inputs.
#[derive(Debug)]
pub struct Recording {
    pub dir: PathBuf,
    /// How the folder is named in the timeline's `source` and in errors (see `read_named`).
    pub shown: String,
    pub inputs: Vec<Input>,
    /// The pod manifest the recording was made with, if present.
    pub manifest: Option<serde_json::Value>,
    /// How a recorded live attempt ended, beyond its streams (podlife-made recordings only).
    pub outcome: RecordedOutcome,
}

/// Facts of a live attempt that its streams cannot show: written by `podlife run` into
/// `actions.jsonl`, replayed as they were.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedOutcome {
    /// Made by `podlife run` (header line present).
    pub podlife: bool,
    /// The harness error that ended the attempt.
    pub error: Option<String>,
    /// The attempt was stopped by Ctrl-C.
    pub interrupted: bool,
    /// The evidence of the step that failed (e.g. a `waitFor` that timed out live).
    pub step_failure: Option<String>,
    /// That step's verdict as JSON (a `judge::Verdict`; observe does not depend on judge).
    pub step_verdict: Option<serde_json::Value>,
    /// The pod the live observer watched (events of other objects are ignored, as live).
    pub pod: Option<String>,
    /// The CPU the node used while the attempt ran (a `results::NodeLoad` as JSON: observe does
    /// not depend on results).
    pub node_load: Option<serde_json::Value>,
    /// When the recording was closed (after cleanup): the observation ended before it, so a
    /// wait that needed longer than this could not have run its course.
    pub closed: Option<Timestamp>,
}

/// One line of a watch stream. The object stays unparsed until the entry's type is known:
/// kubectl's ERROR entries carry a `Status`, which is not the stream's kind of object.
#[derive(Deserialize)]
struct WatchLine<'a> {
    #[serde(default)]
    seq: Option<u64>,
    received: Timestamp,
    #[serde(borrow)]
    event: WatchEvent<'a>,
}

#[derive(Deserialize)]
struct WatchEvent<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    object: &'a serde_json::value::RawValue,
}

impl Recording {
    /// Reads every stream of the folder. Fails with a one-line error naming the file and line.
    pub fn read(dir: &Path) -> Result<Recording, RecordingError> {
        Self::read_named(dir, &files::Names::default())
    }

    /// `read`, the folder and its files named as `names` names them (a bundle's members as
    /// `<bundle>:<member>`) in the timeline's source and in errors.
    pub fn read_named(dir: &Path, names: &files::Names) -> Result<Recording, RecordingError> {
        let mut rec = Self::read_folder(dir).map_err(|e| e.named(names))?;
        rec.shown = names.name(dir);
        Ok(rec)
    }

    fn read_folder(dir: &Path) -> Result<Recording, RecordingError> {
        if !dir.is_dir() {
            return Err(bad(dir, "not a recording folder (no such directory)"));
        }
        let pods_path = dir.join("pods.watch.jsonl");
        if !pods_path.exists() {
            return Err(bad(dir, "not a recording folder: pods.watch.jsonl is missing"));
        }
        let header = read_header(&dir.join("actions.jsonl"))?;
        // (seq, input): seq is set on every input of a podlife-made recording.
        let mut inputs: Vec<Numbered> = vec![];
        read_watch(&pods_path, "a Pod", &mut inputs, |received, kind, pod| Input::Pod {
            received,
            kind,
            pod: Box::new(pod),
        })?;
        let events_path = dir.join("events.watch.jsonl");
        if events_path.exists() {
            read_watch(&events_path, "an Event", &mut inputs, |received, kind, event| {
                Input::Event {
                    received,
                    kind,
                    event: Box::new(event),
                }
            })?;
        } else {
            inputs.push((
                None,
                Input::Gap(Gap {
                    source: EvidenceSource::Events,
                    from: None,
                    to: None,
                    back: None,
                    clock: Default::default(),
                    reason: "the recording has no events.watch.jsonl".into(),
                }),
            ));
        }
        inputs.extend(read_gaps(&dir.join("gaps.jsonl"))?);
        let (actions, outcome) = read_actions(&dir.join("actions.jsonl"))?;
        inputs.extend(actions);
        inputs.extend(read_logs(dir)?);
        let inputs = if header {
            order_by_seq(dir, inputs, &outcome)?
        } else {
            let mut inputs: Vec<Input> = inputs.into_iter().map(|(_, i)| i).collect();
            // Stable sort: inputs without a receive time (log file copies) keep their file order at the end.
            inputs.sort_by_key(|i| (i.order_key().is_none(), i.order_key()));
            inputs
        };
        let outcome = outcome.outcome;
        let manifest = match read_opt(&dir.join("manifest.yaml"), files::MANIFEST)? {
            Some(text) => Some(
                crate::suite::load::parse_yaml::<serde_json::Value>(&text, "manifest.yaml")
                    .map_err(|d| bad(dir, d.to_string()))?,
            ),
            None => None,
        };
        Ok(Recording {
            dir: dir.to_path_buf(),
            shown: dir.display().to_string(),
            inputs,
            manifest,
            outcome,
        })
    }

    /// Feeds every input through an `Observer` and returns the complete timeline.
    pub fn timeline(&self) -> Timeline {
        self.observe(self.inputs.iter().cloned())
    }

    /// `timeline`, consuming the inputs: a long pod watch's pods are not held twice.
    pub(crate) fn take_timeline(&mut self) -> Timeline {
        let inputs = std::mem::take(&mut self.inputs);
        self.observe(inputs.into_iter())
    }

    fn observe(&self, inputs: impl Iterator<Item = Input>) -> Timeline {
        let mut obs = Observer::new(self.outcome.pod.as_deref(), &format!("recording:{}", self.shown));
        for i in inputs {
            obs.push(i);
        }
        obs.finish()
    }
}

/// An input with its `seq` (set in podlife-made recordings).
type Numbered = (Option<u64>, Input);

/// Whether `actions.jsonl` opens with podlife's recording header (checking its format).
fn read_header(path: &Path) -> Result<bool, RecordingError> {
    let Some(text) = read_opt(path, files::RECORDING)? else {
        return Ok(false);
    };
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return Ok(false);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(first) else {
        return Ok(false);
    };
    if v.get("action").and_then(|a| a.as_str()) != Some("recording") {
        return Ok(false);
    }
    match v.get("format").and_then(|f| f.as_u64()) {
        Some(1) => Ok(true),
        f => Err(bad(
            path,
            format!(
                "line 1: recording format {} is not supported by this podlife (reads format 1)",
                f.map_or("(missing)".to_string(), |f| f.to_string())
            ),
        )),
    }
}

/// Orders a podlife-made recording's inputs exactly as the live observer received them, after
/// checking it is whole: every input numbered once, and as many as the closing line says.
fn order_by_seq(dir: &Path, inputs: Vec<Numbered>, actions: &ActionsRead) -> Result<Vec<Input>, RecordingError> {
    let actions_path = dir.join("actions.jsonl");
    let Some(expected) = actions.complete else {
        return Err(bad(
            &actions_path,
            "recording incomplete: no `recording-complete` line (podlife stopped, or a write failed, while recording)",
        ));
    };
    let mut numbered = Vec::with_capacity(inputs.len());
    for (seq, i) in inputs {
        let Some(seq) = seq else {
            return Err(bad(dir, "damaged recording: an input has no `seq`"));
        };
        numbered.push((seq, i));
    }
    numbered.sort_by_key(|(s, _)| *s);
    for (n, (seq, _)) in numbered.iter().enumerate() {
        if *seq != n as u64 + 1 {
            return Err(bad(
                dir,
                format!(
                    "damaged recording: input #{} is missing or duplicated (found seq {seq})",
                    n + 1
                ),
            ));
        }
    }
    if numbered.len() as u64 != expected {
        return Err(bad(
            dir,
            format!(
                "damaged recording: {} inputs found, the recording says {expected}",
                numbered.len()
            ),
        ));
    }
    Ok(numbered.into_iter().map(|(_, i)| i).collect())
}

/// Reads a watch stream a line at a time into inputs, each object parsed straight into its
/// type (`what` names it in errors): a pod watch can hold hundreds of MiB of pods, so neither
/// its whole text nor a generic JSON tree of it is kept.
fn read_watch<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
    out: &mut Vec<Numbered>,
    input: impl Fn(Timestamp, WatchKind, T) -> Input,
) -> Result<(), RecordingError> {
    files::for_each_line(path, files::RECORDING, |n, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let w: WatchLine = serde_json::from_str(line).map_err(|e| bad(path, format!("line {n}: {e}")))?;
        // kubectl prints ERROR/BOOKMARK entries too; they carry no object state for us.
        let Some(kind) = WatchKind::parse(&w.event.kind) else {
            return Ok(());
        };
        let object =
            serde_json::from_str(w.event.object.get()).map_err(|e| bad(path, format!("line {n}: not {what}: {e}")))?;
        out.push((w.seq, input(w.received, kind, object)));
        Ok(())
    })
}

/// `gaps.jsonl`: one `Gap` per line (absent: no gaps).
fn read_gaps(path: &Path) -> Result<Vec<Numbered>, RecordingError> {
    let Some(text) = read_opt(path, files::RECORDING)? else {
        return Ok(vec![]);
    };
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        // podlife-made recordings number the gap like every input (`seq`).
        let seq = v.as_object_mut().and_then(|o| o.remove("seq")).and_then(|s| s.as_u64());
        // A line with `up` says the source delivers again (closes its open gap).
        let up = v.as_object_mut().and_then(|o| o.remove("up"));
        // A line with `resumed` withdraws the open gap of a log stream resumed without loss.
        let resumed = v.as_object_mut().and_then(|o| o.remove("resumed")).is_some();
        let input = match up {
            None if resumed => Input::Resumed {
                source: serde_json::from_value(v).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?,
            },
            Some(at) => Input::SourceUp {
                at: serde_json::from_value(at).map_err(|e| bad(path, format!("line {}: up: {e}", i + 1)))?,
                source: serde_json::from_value(v).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?,
            },
            None => Input::Gap(serde_json::from_value(v).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?),
        };
        out.push((seq, input));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ActionLine {
    #[serde(default)]
    seq: Option<u64>,
    action: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    evidence: Option<String>,
    #[serde(default)]
    inputs: Option<u64>,
    #[serde(default)]
    time: Option<Timestamp>,
    #[serde(default)]
    pod: Option<String>,
    #[serde(default)]
    verdict: Option<serde_json::Value>,
    /// A `node-load` line's reading (a `results::NodeLoad`).
    #[serde(default)]
    load: Option<serde_json::Value>,
    sent: Option<Timestamp>,
    done: Option<Timestamp>,
    response_received: Option<Timestamp>,
    request: Option<serde_json::Value>,
    command: Option<String>,
    /// An `exec` action's result.
    #[serde(default)]
    exec: Option<crate::observe::ExecResult>,
    #[serde(default)]
    update: Option<Box<crate::observe::UpdateResult>>,
}

/// `actions.jsonl` read: our requests as inputs, plus the attempt's recorded facts.
#[derive(Default)]
struct ActionsRead {
    outcome: RecordedOutcome,
    /// The input count of the `recording-complete` line.
    complete: Option<u64>,
}

fn read_actions(path: &Path) -> Result<(Vec<Numbered>, ActionsRead), RecordingError> {
    let mut read = ActionsRead::default();
    let Some(text) = read_opt(path, files::RECORDING)? else {
        return Ok((vec![], read));
    };
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let a: ActionLine = serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        match a.action.as_str() {
            "recording" => read.outcome.podlife = true,
            "error" => read.outcome.error = Some(a.message.clone().unwrap_or_default()),
            "interrupted" => read.outcome.interrupted = true,
            "step-failed" => {
                read.outcome.step_failure = Some(a.evidence.clone().unwrap_or_default());
                read.outcome.step_verdict = a.verdict.clone();
            }
            "recording-complete" => {
                read.complete = Some(a.inputs.unwrap_or(0));
                read.outcome.closed = a.time;
            }
            // Written when podlife crashed in the attempt; `recording-complete` follows it.
            "recording-aborted" => {}
            "observe" => read.outcome.pod = a.pod.clone(),
            "node-load" => read.outcome.node_load = a.load.clone(),
            _ => {}
        }
        let kind = match a.action.as_str() {
            "create-pod" | "apply-pod" => ActionKind::Apply,
            "delete" => ActionKind::Delete,
            "patch" | "patch-pod" => ActionKind::Patch,
            // `command` names the object: `ConfigMap/name`.
            "apply-object" => ActionKind::ApplyObject,
            // `command` names the container and the request: `debugger via patch`.
            "ephemeral" => ActionKind::Ephemeral,
            // `exec` carries the result as received.
            "exec" => ActionKind::Exec,
            // `command` names the object: `ConfigMap/name`.
            "update-object" => ActionKind::UpdateObject,
            "delete-object" => ActionKind::DeleteObject,
            // `command` names the request and each container's new resources.
            "resize" => ActionKind::Resize,
            // `update` carries what the API answered (the generations, the count done).
            "update" => ActionKind::Update,
            _ => continue,
        };
        let Some(sent) = a.sent else { continue };
        let grace = a
            .request
            .as_ref()
            .and_then(|r| r.pointer("/body/gracePeriodSeconds"))
            .and_then(|v| v.as_i64());
        out.push((
            a.seq,
            Input::Action(Action {
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
                exec: a.exec.map(Box::new),
                update: a.update,
            }),
        ));
    }
    Ok((out, read))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexLine {
    kind: String,
    container: String,
    /// `lines` entries: the instance the fetch was for (null: unattributed).
    #[serde(default)]
    instance: Option<u32>,
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
fn read_logs(dir: &Path) -> Result<Vec<Numbered>, RecordingError> {
    let mut out = vec![];
    let logs = dir.join("logs");
    let index = logs.join("index.jsonl");
    if let Some(text) = read_opt(&index, files::RECORDING)? {
        let mut offsets: std::collections::HashMap<String, usize> = Default::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let e: IndexLine = serde_json::from_str(line).map_err(|e| bad(&index, format!("line {}: {e}", i + 1)))?;
            // Index entries name files inside logs/ only (a shared recording must not read elsewhere).
            for name in std::iter::once(&e.container).chain(e.file.as_ref()) {
                if !plain_file_name(name) {
                    return Err(bad(
                        &index,
                        format!("line {}: `{name}` is not a plain file name", i + 1),
                    ));
                }
            }
            match e.kind.as_str() {
                "lines" => {
                    let Some(file) = &e.file else {
                        return Err(bad(&index, format!("line {}: `lines` entry without `file`", i + 1)));
                    };
                    let path = logs.join(file);
                    check_inside(dir, &path)?;
                    read_lines_file(&path, &e.container, e.instance, &mut out)?;
                }
                "follow" => {
                    let path = logs.join(format!("{}.log", e.container));
                    let len: usize = e.tries.iter().map(|t| t.bytes).sum();
                    // A container that never printed (status-start-error-never: the process
                    // never started) leaves no file when its only follow delivered 0 bytes.
                    if len == 0 && !path.exists() {
                        continue;
                    }
                    check_inside(dir, &path)?;
                    let data = files::read_bytes(&path, files::RECORDING)?;
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
                    check_inside(dir, &path)?;
                    if let Some(text) = read_opt(&path, files::RECORDING)? {
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
                check_inside(dir, &f)?;
                let text = files::read_string(&f, files::RECORDING)?;
                let mut partial = String::new();
                for line in text.lines() {
                    let Some((time, full, t)) = parse_cri_line(line) else {
                        continue;
                    };
                    partial.push_str(t);
                    if full {
                        // Re-render as a `--timestamps` line so both sources go through one parser.
                        let line = format!("{} {}", time, std::mem::take(&mut partial));
                        out.push((
                            None,
                            Input::Log {
                                received: None,
                                container: container.clone(),
                                instance: Some(attempt),
                                line,
                            },
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

fn push_lines(out: &mut Vec<Numbered>, container: &str, instance: Option<u32>, text: &str) {
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        out.push((
            None,
            Input::Log {
                received: None,
                container: container.to_string(),
                instance,
                line: line.to_string(),
            },
        ));
    }
}

fn plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

#[derive(Deserialize)]
struct LogLineRecord {
    seq: Option<u64>,
    received: Option<Timestamp>,
    line: String,
}

/// `logs/<container>.<instance>.jsonl` of a podlife recording: one line as received per row.
fn read_lines_file(
    path: &Path,
    container: &str,
    instance: Option<u32>,
    out: &mut Vec<Numbered>,
) -> Result<(), RecordingError> {
    let text = files::read_string(path, files::RECORDING)?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: LogLineRecord = serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
        out.push((
            r.seq,
            Input::Log {
                received: r.received,
                container: container.to_string(),
                instance,
                line: r.line,
            },
        ));
    }
    Ok(())
}
