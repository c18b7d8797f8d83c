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
pub const RECORDING_FORMAT: u32 = 1;

/// The folder of a case's attempts inside a run's `recordings/`; an `--each-node` copy's
/// folder ends with `@<node>` (node names are DNS subdomains: safe in a file name).
pub fn case_dir_name(suite: &str, case: &str, node: Option<&str>) -> String {
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
    error: Option<String>,
    finished: bool,
}

pub type SharedRecorder = Arc<Mutex<Recorder>>;

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
            self.error = Some(format!("{}: {e}", self.dir.display()));
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
                };
                let mut v = json!({"seq": seq, "action": action, "sent": a.sent, "done": a.done});
                if let Some(g) = a.grace_period_seconds {
                    v["request"] = json!({"body": {"gracePeriodSeconds": g}});
                }
                if let Some(d) = &a.detail {
                    v["command"] = json!(d);
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
    pub fn finish(mut self, attempt: &Attempt) -> Result<PathBuf, String> {
        self.finished = true;
        match attempt.status {
            AttemptStatus::Error => {
                let message = attempt.error.clone().unwrap_or_default();
                self.line_actions(&json!({"action": "error", "message": message}));
            }
            AttemptStatus::Interrupted => self.line_actions(&json!({"action": "interrupted"})),
            AttemptStatus::Passed | AttemptStatus::Failed | AttemptStatus::Undecided => {}
        }
        if let Some(v) = attempt
            .verdicts
            .iter()
            .find(|v| v.kind == "step" && v.index == usize::MAX)
        {
            // The whole verdict: a live wait can end undecided (a gap could hide its mark).
            self.line_actions(&json!({"action": "step-failed", "evidence": v.evidence, "verdict": v}));
        }
        self.line_actions(&json!({"action": "cleanup", "cleanup": attempt.cleanup}));
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
pub fn close_after_panic(
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

fn write_line(w: &mut BufWriter<File>, v: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// Run-level files of `recordings/`: `run.json` (what replay needs to walk the attempts the
/// same way) and `cluster-info.json` (the fingerprint).
pub fn write_run_files(
    root: &Path,
    run_id: &str,
    retries: u32,
    repeat: u32,
    fingerprint: &crate::cluster::Fingerprint,
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

/// Copies one file a suite references by a plain relative path to the same path under `dest`.
fn copy_referenced(dest: &Path, suite: &Path, rel: &str, src: &Path) -> Result<(), String> {
    let rel = Path::new(rel);
    // Only paths that stay inside suites/ once copied (no absolute paths, no `..`).
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(format!(
            "suite {}: `{}` not copied (not a plain relative path)",
            suite.display(),
            rel.display()
        ));
    }
    let to = dest.join(rel);
    to.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::copy(src, &to))
        .map(|_| ())
        .map_err(|e| format!("copying {}: {e}", src.display()))
}

/// Copies the suite files a run used (and the manifests they reference by relative path) into
/// `<run>/suites/`, where the suite loader finds them again: a bundle then replays with exactly
/// the suites the user ran. Returns problems as warnings; the recordings do not depend on it.
pub fn copy_suites(run_dir: &Path, suites: &[crate::suite::Suite]) -> Vec<String> {
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
            warnings.push(format!("copying suite {}: {e}", s.path.display()));
            continue;
        }
        for c in &s.cases {
            // The pod's manifest and every object's: a bundle without them cannot be loaded.
            let manifest = c.spec.manifest.as_ref().zip(c.manifest_path.as_ref());
            let objects = c.spec.objects.iter().zip(c.objects.iter().map(|o| &o.path));
            for (rel, src) in manifest.into_iter().chain(objects) {
                if let Err(w) = copy_referenced(&dest, &s.path, &rel.value, src) {
                    warnings.push(w);
                }
            }
        }
    }
    warnings
}
