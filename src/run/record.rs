//! The run recorder (`Recorder`): writes, per case attempt, exactly what the observer was fed
//! — pod and Event watch lines with their receive times, log lines per container instance,
//! podlife's own actions — plus the applied manifest and how the attempt ended, in the recording
//! layout `observe::Recording` reads back. Everything is streamed through small write buffers,
//! so memory stays bounded however long a case runs or however chatty its containers are.
//!
//! Layout of `reports/<runid>/recordings/` (see README, "Recording, replaying, re-judging"):
//! `run.json` (podlife version, retries, repeat), `cluster-info.json` (the fingerprint) and one
//! `<suite>__<case>/attempt-<n>/` folder per attempt holding `actions.jsonl`, `pods.watch.jsonl`,
//! `events.watch.jsonl`, `gaps.jsonl`, `manifest.yaml` and `logs/index.jsonl` +
//! `logs/<container>.<instance>.jsonl`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use serde::Serialize;
use serde_json::json;

use crate::observe::{ActionKind, Input, Tap};
use crate::results::{Attempt, AttemptStatus};

/// Version of the recording layout podlife writes (the `format` of the header line).
pub(crate) const RECORDING_FORMAT: u32 = 1;

/// The folder of a case's attempts inside a run's `recordings/`; an `--each-node` copy's
/// folder ends with `@<node>` (node names are DNS subdomains: safe in a file name).
pub(crate) fn case_dir_name(suite: &str, case: &str, node: Option<&str>) -> String {
    match node {
        Some(n) => format!("{suite}__{case}@{n}"),
        None => format!("{suite}__{case}"),
    }
}

/// Writes one attempt's recording. Shared between the observer's tap and the case runner.
pub struct Recorder {
    dir: PathBuf,
    /// Inputs written so far; each input's `seq` is its position in the observer's input order.
    seq: u64,
    pods: BufWriter<File>,
    events: BufWriter<File>,
    actions: BufWriter<File>,
    gaps: BufWriter<File>,
    index: BufWriter<File>,
    /// One file per (container, instance the fetch was for).
    logs: BTreeMap<(String, Option<u32>), BufWriter<File>>,
    /// The first write error: recording stops there and the attempt's recording is marked incomplete.
    error: Option<RecordError>,
    finished: bool,
    /// Bytes written per capped stream, and what the caps dropped (see `RECORD_LIMIT`).
    caps: BTreeMap<Stream, Capped>,
    /// The cap per stream (`RECORD_LIMIT`; smaller in tests).
    limit: u64,
}

/// A stream of a recording with a size cap of its own: a file each.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stream {
    Pods,
    Events,
    Log(String, Option<u32>),
}

/// What one stream wrote, and what its cap dropped.
#[derive(Default)]
struct Capped {
    written: u64,
    dropped: u64,
    first: Option<Timestamp>,
    last: Option<Timestamp>,
    /// A log's newest dropped line (`received`, line): written at the end, so the last line of a
    /// capped log is right on replay as it was live (the observer keeps the newest too).
    tail: Option<(Option<Timestamp>, String)>,
}

/// The most one file of a recording may hold: the reader refuses a recording file over
/// `files::RECORDING` (256 MiB), and a recording that cannot be read makes the whole run
/// impossible to replay or re-judge. A chatty container (or a pod restarting for hours) stops
/// being recorded at this size; what was dropped is recorded as a gap, so the replay is judged
/// knowing the evidence is incomplete. The observer keeps at most 32 MiB of text per instance,
/// so a log over this much JSON was already capped live.
pub(crate) const RECORD_LIMIT: u64 = 128 * 1024 * 1024;

pub(crate) type SharedRecorder = Arc<Mutex<Recorder>>;

#[derive(Serialize)]
struct WatchOut<'a, T: Serialize> {
    seq: u64,
    received: Timestamp,
    event: EventOut<'a, T>,
}

#[derive(Serialize)]
struct EventOut<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    object: &'a T,
}

fn create(path: &Path) -> std::io::Result<BufWriter<File>> {
    Ok(BufWriter::new(File::create(path)?))
}

impl Recorder {
    /// Creates `attempt-<n>` under `case_dir` (n: 1-based over the case's repetitions and
    /// retries, the order of the report's attempts) and writes the header line. An existing
    /// folder is never overwritten.
    pub fn create(case_dir: &Path, n: usize, case: &str, namespace: &str) -> std::io::Result<Recorder> {
        std::fs::create_dir_all(case_dir)?;
        let dir = case_dir.join(format!("attempt-{n}"));
        std::fs::create_dir(&dir)?;
        std::fs::create_dir(dir.join("logs"))?;
        let mut r = Recorder {
            pods: create(&dir.join("pods.watch.jsonl"))?,
            events: create(&dir.join("events.watch.jsonl"))?,
            actions: create(&dir.join("actions.jsonl"))?,
            gaps: create(&dir.join("gaps.jsonl"))?,
            index: create(&dir.join("logs/index.jsonl"))?,
            dir,
            seq: 0,
            logs: BTreeMap::new(),
            error: None,
            finished: false,
            caps: BTreeMap::new(),
            limit: RECORD_LIMIT,
        };
        r.line_actions(&json!({
            "action": "recording",
            "format": RECORDING_FORMAT,
            "podlife": env!("CARGO_PKG_VERSION"),
            "case": case,
            "attempt": n,
            "namespace": namespace,
            "time": Timestamp::now(),
        }));
        Ok(r)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A tap for the case's `Observer`: every input is written as it is pushed.
    pub fn tap(rec: &SharedRecorder) -> Tap {
        let rec = rec.clone();
        Tap(Box::new(move |i: &Input| {
            if let Ok(mut r) = rec.lock() {
                r.input(i);
            }
        }))
    }

    /// The pod exactly as podlife applied it (rendered images, node/runtime pinning). JSON is
    /// YAML, so `manifest.yaml` reads back with the suite loader's parser.
    pub fn manifest(&mut self, pod: &serde_json::Value) {
        // The observer watches this pod only: replay must filter the same way.
        let name = pod.pointer("/metadata/name").cloned().unwrap_or_default();
        self.line_actions(&json!({"action": "observe", "pod": name}));
        if self.error.is_some() {
            return;
        }
        let text = serde_json::to_string_pretty(pod).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(self.dir.join("manifest.yaml"), text) {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: std::io::Error) {
        if self.error.is_none() {
            self.error = Some(RecordError {
                dir: self.dir.clone(),
                source: e,
            });
        }
    }

    fn line_actions(&mut self, v: &serde_json::Value) {
        if self.error.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut self.actions, v)
            .map_err(std::io::Error::other)
            .and_then(|_| self.actions.write_all(b"\n"));
        if let Err(e) = r {
            self.fail(e);
        }
    }

    fn input(&mut self, input: &Input) {
        if self.error.is_some() {
            return;
        }
        if self.over_cap(input) {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let r = match input {
            Input::Pod { received, kind, pod } => write_line(
                &mut self.pods,
                &WatchOut {
                    seq,
                    received: *received,
                    event: EventOut {
                        kind: kind.as_str(),
                        object: pod.as_ref(),
                    },
                },
            ),
            Input::Event { received, kind, event } => write_line(
                &mut self.events,
                &WatchOut {
                    seq,
                    received: *received,
                    event: EventOut {
                        kind: kind.as_str(),
                        object: event.as_ref(),
                    },
                },
            ),
            Input::Log {
                received,
                container,
                instance,
                line,
            } => self.log(seq, *received, container, *instance, line),
            Input::Action(a) => {
                let action = match a.kind {
                    ActionKind::Apply => "apply-pod",
                    ActionKind::Delete => "delete",
                    ActionKind::Patch => "patch",
                    ActionKind::ApplyObject => "apply-object",
                    ActionKind::Ephemeral => "ephemeral",
                    ActionKind::Exec => "exec",
                    ActionKind::UpdateObject => "update-object",
                    ActionKind::DeleteObject => "delete-object",
                    ActionKind::Resize => "resize",
                    ActionKind::Update => "update",
                };
                let mut v = json!({"seq": seq, "action": action, "sent": a.sent, "done": a.done});
                if let Some(g) = a.grace_period_seconds {
                    v["request"] = json!({"body": {"gracePeriodSeconds": g}});
                }
                if let Some(d) = &a.detail {
                    v["command"] = json!(d);
                }
                if let Some(x) = &a.exec {
                    v["exec"] = json!(x);
                }
                if let Some(u) = &a.update {
                    v["update"] = json!(u);
                }
                write_line(&mut self.actions, &v)
            }
            // Evidence the live run lost (a stream down, a cap): replayed as the same gap.
            Input::Gap(g) => {
                let mut v = serde_json::to_value(g).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("seq".into(), json!(seq));
                }
                write_line(&mut self.gaps, &v)
            }
            // A broken log stream resumed without loss: `{"seq", "resumed": true, "source", ...}`.
            Input::Resumed { source } => {
                let mut v = serde_json::to_value(source).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("seq".into(), json!(seq));
                    o.insert("resumed".into(), json!(true));
                }
                write_line(&mut self.gaps, &v)
            }
            // The source delivers again: `{"seq", "up": <at>, "source", ...}` in gaps.jsonl.
            Input::SourceUp { source, at } => {
                let mut v = serde_json::to_value(source).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("seq".into(), json!(seq));
                    o.insert("up".into(), json!(at));
                }
                write_line(&mut self.gaps, &v)
            }
        };
        if let Err(e) = r {
            self.fail(e);
        }
    }

    /// Counts what `input` adds to its stream; true when the stream is over `RECORD_LIMIT` and
    /// the input is dropped instead (noted for the gap `finish` records).
    fn over_cap(&mut self, input: &Input) -> bool {
        let (stream, at, size, line) = match input {
            Input::Pod { received, pod, .. } => (Stream::Pods, Some(*received), json_len(pod.as_ref()), None),
            Input::Event { received, event, .. } => (Stream::Events, Some(*received), json_len(event.as_ref()), None),
            Input::Log {
                received,
                container,
                instance,
                line,
            } => (
                Stream::Log(container.clone(), *instance),
                crate::observe::observer::parse_log_line(line).map(|(t, _)| t),
                json_len(line),
                Some((*received, line.clone())),
            ),
            _ => return false,
        };
        let c = self.caps.entry(stream).or_default();
        if c.dropped == 0 && c.written.saturating_add(size) <= self.limit {
            c.written += size;
            return false;
        }
        c.dropped += 1;
        if let Some(t) = at {
            c.first = Some(c.first.map_or(t, |f| f.min(t)));
            c.last = Some(c.last.map_or(t, |l| l.max(t)));
        }
        if let Some((received, line)) = line {
            let newer = |old: &str| crate::observe::observer::parse_log_line(old).map(|(t, _)| t) <= at;
            if c.tail.as_ref().is_none_or(|(_, old)| newer(old)) {
                c.tail = Some((received, line));
            }
        }
        true
    }

    /// Writes what the caps held back: each capped log's newest line, then one gap per capped
    /// stream saying what was dropped.
    fn close_caps(&mut self) {
        let caps = std::mem::take(&mut self.caps);
        for (stream, c) in caps.into_iter().filter(|(_, c)| c.dropped > 0) {
            let (source, clock) = match &stream {
                Stream::Pods => (
                    crate::observe::EvidenceSource::PodWatch,
                    crate::observe::GapClock::Harness,
                ),
                Stream::Events => (
                    crate::observe::EvidenceSource::Events,
                    crate::observe::GapClock::Harness,
                ),
                Stream::Log(container, instance) => (
                    crate::observe::EvidenceSource::Logs {
                        container: Some(container.clone()),
                        instance: *instance,
                    },
                    crate::observe::GapClock::Node,
                ),
            };
            let mut dropped = c.dropped;
            if let (Stream::Log(container, instance), Some((received, line))) = (&stream, c.tail) {
                dropped -= 1;
                self.seq += 1;
                let seq = self.seq;
                if let Err(e) = self.log(seq, received, container, *instance, &line) {
                    self.fail(e);
                }
            }
            if dropped == 0 {
                continue;
            }
            self.seq += 1;
            let gap = crate::observe::Gap {
                source,
                from: c.first,
                to: c.last,
                back: None,
                clock,
                reason: format!(
                    "not recorded: {dropped} inputs over the recording's cap of {} MiB per file",
                    self.limit >> 20
                ),
            };
            let mut v = serde_json::to_value(&gap).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("seq".into(), json!(self.seq));
            }
            if let Err(e) = write_line(&mut self.gaps, &v) {
                self.fail(e);
            }
        }
    }

    fn log(
        &mut self,
        seq: u64,
        received: Option<Timestamp>,
        container: &str,
        instance: Option<u32>,
        line: &str,
    ) -> std::io::Result<()> {
        let key = (container.to_string(), instance);
        if !self.logs.contains_key(&key) {
            // Container names are DNS labels ([a-z0-9-]), safe as file names.
            let file = match instance {
                Some(i) => format!("{container}.{i}.jsonl"),
                None => format!("{container}.unattributed.jsonl"),
            };
            let w = create(&self.dir.join("logs").join(&file))?;
            write_line(
                &mut self.index,
                &json!({"kind": "lines", "container": container, "instance": instance, "file": file}),
            )?;
            self.index.flush()?;
            self.logs.insert(key.clone(), w);
        }
        let w = self.logs.get_mut(&key).expect("inserted above");
        write_line(w, &json!({"seq": seq, "received": received, "line": line}))
    }

    /// Writes how the attempt ended (a harness error, an interruption, a step that failed: facts
    /// of the live run a replay cannot re-derive from the streams), what cleanup did, and the
    /// closing line that marks the recording complete. Returns the folder, or why the recording
    /// is incomplete.
    pub fn finish(mut self, attempt: &Attempt) -> Result<PathBuf, RecordError> {
        self.finished = true;
        match attempt.status {
            AttemptStatus::Error => {
                let message = attempt.error.clone().unwrap_or_default();
                self.line_actions(&json!({"action": "error", "message": message}));
            }
            AttemptStatus::Interrupted => self.line_actions(&json!({"action": "interrupted"})),
            AttemptStatus::Passed | AttemptStatus::Failed | AttemptStatus::Undecided | AttemptStatus::NotComparable => {
            }
        }
        if let Some(v) = attempt.verdicts.iter().find(|v| v.is_step()) {
            // The whole verdict: a live wait can end undecided (a gap could hide its mark).
            self.line_actions(&json!({"action": "step-failed", "evidence": v.evidence, "verdict": v}));
        }
        self.line_actions(&json!({"action": "cleanup", "cleanup": attempt.cleanup}));
        if let Some(l) = &attempt.node_load {
            self.line_actions(&json!({"action": "node-load", "load": l}));
        }
        self.close_caps();
        let seq = self.seq;
        self.line_actions(&json!({"action": "recording-complete", "inputs": seq, "time": Timestamp::now()}));
        self.flush_all();
        match self.error.take() {
            None => Ok(self.dir.clone()),
            Some(e) => Err(e),
        }
    }

    fn flush_all(&mut self) {
        let mut flushed: Vec<std::io::Result<()>> = vec![
            self.pods.flush(),
            self.events.flush(),
            self.actions.flush(),
            self.gaps.flush(),
            self.index.flush(),
        ];
        flushed.extend(self.logs.values_mut().map(|w| w.flush()));
        for r in flushed {
            if let Err(e) = r {
                self.fail(e);
            }
        }
    }
}

/// An attempt that never reached `finish` (podlife panicked in it) keeps what it recorded and
/// says how many inputs that was; `close_after_panic` then completes it.
impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.finished {
            let seq = self.seq;
            self.line_actions(&json!({"action": "recording-aborted", "inputs": seq}));
            self.flush_all();
        }
    }
}

/// Completes the recording of an attempt in which podlife panicked: the error the report shows,
/// then the closing line (with the inputs recorded before the crash). Creates a minimal
/// recording when the crash came before the recorder started.
pub(crate) fn close_after_panic(
    root: &Path,
    case: &crate::suite::LoadedCase,
    node: Option<&str>,
    n: usize,
    attempt: &Attempt,
) -> std::io::Result<()> {
    let dir = root
        .join(case_dir_name(&case.suite, case.name(), node))
        .join(format!("attempt-{n}"));
    let actions = dir.join("actions.jsonl");
    let mut inputs = 0;
    if dir.is_dir() {
        let text = crate::files::read_string(&actions, crate::files::RECORDING).map_err(std::io::Error::other)?;
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match v.get("action").and_then(|a| a.as_str()) {
                Some("recording-complete") => return Ok(()),
                Some("recording-aborted") => inputs = v.get("inputs").and_then(|i| i.as_u64()).unwrap_or(0),
                _ => {}
            }
        }
    } else {
        // No input was recorded: a recording of nothing but the crash.
        drop(Recorder::create(
            &root.join(case_dir_name(&case.suite, case.name(), node)),
            n,
            &case.full_name(),
            "",
        )?);
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(&actions)?;
    let message = attempt.error.clone().unwrap_or_default();
    writeln!(f, "{}", json!({"action": "error", "message": message}))?;
    writeln!(
        f,
        "{}",
        json!({"action": "recording-complete", "inputs": inputs, "time": Timestamp::now()})
    )
}

/// The size of a value as JSON (an estimate is enough for a cap; a failure counts as large).
fn json_len(v: &impl Serialize) -> u64 {
    serde_json::to_vec(v).map_or(u64::MAX / 2, |b| b.len() as u64 + 64)
}

fn write_line(w: &mut BufWriter<File>, v: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// Run-level files of `recordings/`: `run.json` (what replay needs to walk the attempts the
/// same way) and `cluster-info.json` (the fingerprint).
pub(crate) fn write_run_files(
    root: &Path,
    run_id: &str,
    retries: u32,
    repeat: u32,
    fingerprint: &crate::results::Fingerprint,
) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    let run = json!({
        "format": RECORDING_FORMAT,
        "podlife": env!("CARGO_PKG_VERSION"),
        "runId": run_id,
        "retries": retries,
        "repeat": repeat,
    });
    std::fs::write(root.join("run.json"), serde_json::to_string_pretty(&run)? + "\n")?;
    let info = json!({"fingerprint": fingerprint});
    std::fs::write(
        root.join("cluster-info.json"),
        serde_json::to_string_pretty(&info)? + "\n",
    )
}

/// A recording that could not be written to the end (its folder and the first write error).
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", dir.display())]
pub struct RecordError {
    pub dir: PathBuf,
    pub source: std::io::Error,
}

/// A file a suite references that the run's kept suites lack.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    #[error("suite {suite}: `{}` not copied (not a plain relative path)", rel.display())]
    NotPlain { suite: String, rel: PathBuf },
    #[error("copying {}: {source}", src.display())]
    Io { src: PathBuf, source: std::io::Error },
}

/// Copies one file a suite references by a plain relative path to the same path under `dest`.
fn copy_referenced(dest: &Path, suite: &str, rel: &str, src: &Path) -> Result<(), CopyError> {
    let rel = Path::new(rel);
    // Only paths that stay inside suites/ once copied (no absolute paths, no `..`).
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(CopyError::NotPlain {
            suite: suite.to_string(),
            rel: rel.to_path_buf(),
        });
    }
    let to = dest.join(rel);
    to.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::copy(src, &to))
        .map(|_| ())
        .map_err(|source| CopyError::Io {
            src: src.to_path_buf(),
            source,
        })
}

/// Copies the suite files a run used (and the manifests they reference by relative path) into
/// `<run>/suites/`, where the suite loader finds them again: a bundle then replays with exactly
/// the suites the user ran. Returns problems as warnings; the recordings do not depend on it.
pub(crate) fn copy_suites(run_dir: &Path, suites: &[crate::suite::Suite]) -> Vec<String> {
    let dest = run_dir.join("suites");
    let mut warnings = vec![];
    let mut used = std::collections::BTreeSet::new();
    for s in suites {
        let name = s
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| format!("{}.yaml", s.name()));
        let name = if used.insert(name.clone()) {
            name
        } else {
            format!("{}-{name}", s.name())
        };
        used.insert(name.clone());
        let r = std::fs::create_dir_all(&dest).and_then(|_| std::fs::copy(&s.path, dest.join(&name)));
        if let Err(e) = r {
            warnings.push(format!("copying suite {}: {e}", s.shown));
            continue;
        }
        for c in &s.cases {
            // The pod's manifest and every object's, those only steps apply or delete included:
            // a bundle without them cannot be loaded.
            let manifest = c.spec.manifest.as_ref().zip(c.manifest_path.as_ref());
            let objects = c.spec.objects.iter().zip(c.objects.iter().map(|o| &o.path));
            let elsewhere = (c.spec.second_namespace.iter()).zip(c.second_namespace.iter().map(|o| &o.path));
            let steps = c
                .step_objects
                .iter()
                .filter_map(|(i, o)| match &c.spec.steps.get(*i)?.value {
                    crate::suite::Step::Object(s) => Some((s.apply.as_ref().or(s.delete.as_ref())?, &o.path)),
                    _ => None,
                });
            for (rel, src) in manifest.into_iter().chain(objects).chain(elsewhere).chain(steps) {
                if let Err(w) = copy_referenced(&dest, &s.shown, &rel.value, src) {
                    warnings.push(w.to_string());
                }
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{EvidenceSource, Observer, Recording};

    /// A chatty container fills its log file up to the cap; the rest is not recorded but said:
    /// the recording still reads back (the reader refuses files over 256 MiB, which made whole
    /// runs impossible to replay), its last line is the container's last, and the dropped span
    /// is a log gap, so log verdicts on the replay are undecided rather than decided on a cut log.
    #[test]
    fn a_chatty_log_is_capped_with_its_last_line_and_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recorder::create(dir.path(), 1, "s::c", "ns").unwrap();
        rec.limit = 64 * 1024;
        let rec: SharedRecorder = Arc::new(Mutex::new(rec));
        let mut obs = Observer::new(Some("p"), "live");
        obs.set_tap(Recorder::tap(&rec));
        let base: Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
        let n = 5000;
        for i in 0..n {
            let t = base + jiff::SignedDuration::from_millis(i);
            obs.push(Input::Log {
                received: Some(t),
                container: "main".into(),
                instance: Some(0),
                line: format!("{t} line {i}"),
            });
        }
        let live = obs.finish();
        assert_eq!(live.logs.len(), n as usize, "the live observer kept every line");
        let rec = Arc::try_unwrap(rec).ok().unwrap().into_inner().unwrap();
        let attempt = crate::results::Attempt {
            status: crate::results::AttemptStatus::Passed,
            verdicts: vec![],
            error: None,
            started: base,
            duration_s: 1.0,
            api_requests: 0,
            cleanup: Default::default(),
            node_load: None,
            timeline: None,
        };
        let folder = rec.finish(&attempt).unwrap();
        let size = std::fs::metadata(folder.join("logs/main.0.jsonl")).unwrap().len();
        assert!(size <= 80 * 1024, "the log file holds {size} bytes");
        let replayed = Recording::read(&folder).unwrap().timeline();
        let texts: Vec<&str> = replayed.logs.iter().map(|l| l.text.as_str()).collect();
        assert!(texts.len() < n as usize, "nothing was capped");
        assert_eq!(texts.first(), Some(&"line 0"));
        assert_eq!(texts.last(), Some(&"line 4999"), "the newest line is kept");
        let gap = replayed
            .gaps
            .iter()
            .find(|g| g.source.covers_logs("main", Some(0)) && g.source != EvidenceSource::PodWatch)
            .unwrap_or_else(|| panic!("no gap: {:?}", replayed.gaps));
        assert!(gap.reason.contains("not recorded"), "{}", gap.describe());
        assert!(gap.from.is_some() && gap.to.is_some());
    }
}
