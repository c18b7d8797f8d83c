//! Bounded inputs on the command line: files that are not regular files (a FIFO, `/dev/zero`) or
//! are too large, manifest paths that would leave the suite's project, recording index entries
//! that would leave the recording. Each must end with one line naming the path and exit 2.
//! `.timeout()` is only a hang guard (no timing is asserted): before these bounds, a FIFO
//! blocked `validate` forever and `/dev/zero` read until memory ran out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::files::copy_dir;
use assert_cmd::Command;

/// Far above what any of these commands needs; only there so a regression fails instead of
/// hanging the test run.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn podlife(dir: &Path, args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(dir)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(args)
        .timeout(HANG_GUARD)
        .output()
        .expect("podlife runs");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

fn suite_with_manifest(manifest: &str) -> String {
    format!("name: s\ncases:\n  - name: c\n    manifest: {manifest}\n    expect:\n      - phase: Succeeded\n")
}

fn ok_pod() -> String {
    std::fs::read_to_string(root().join("tests/malformed/manifests/ok-pod.yaml")).unwrap()
}

fn assert_exit_2(out: &Out, needle: &str) {
    assert_eq!(out.code, Some(2), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(out.stderr.contains(needle), "expected `{needle}` in:\n{}", out.stderr);
}

#[test]
fn a_fifo_manifest_is_refused_without_blocking() {
    let d = tempfile::tempdir().unwrap();
    mkfifo(&d.path().join("manifests/pod.yaml"));
    std::fs::write(d.path().join("s.yaml"), suite_with_manifest("manifests/pod.yaml")).unwrap();
    let out = podlife(d.path(), &["validate", "s.yaml"]);
    assert_exit_2(
        &out,
        "s.yaml:4:15: cases[0].manifest: manifest `./manifests/pod.yaml`: is a FIFO, not a regular file",
    );
}

#[test]
fn dev_zero_as_a_manifest_or_a_suite_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.yaml"), suite_with_manifest("/dev/zero")).unwrap();
    let out = podlife(d.path(), &["validate", "s.yaml"]);
    assert_exit_2(&out, "manifest `/dev/zero`: is a character device, not a regular file");
    let out = podlife(d.path(), &["validate", "/dev/zero"]);
    assert_exit_2(&out, "/dev/zero: is a character device, not a regular file");
}

#[test]
fn an_oversize_suite_is_refused_naming_the_limit() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("manifests")).unwrap();
    std::fs::write(d.path().join("manifests/pod.yaml"), ok_pod()).unwrap();
    // A valid suite padded with comment lines to just over 4 MiB.
    let mut text = suite_with_manifest("manifests/pod.yaml");
    let line = format!("# {}\n", "x".repeat(1021));
    while text.len() <= 4 * 1024 * 1024 {
        text.push_str(&line);
    }
    std::fs::write(d.path().join("big.yaml"), &text).unwrap();
    let out = podlife(d.path(), &["validate", "big.yaml"]);
    assert_exit_2(&out, "big.yaml: larger than the 4 MiB limit for a suite file");
    // The same suite without the padding is fine: the limit, not the content, refused it.
    std::fs::write(d.path().join("big.yaml"), suite_with_manifest("manifests/pod.yaml")).unwrap();
    let out = podlife(d.path(), &["validate", "big.yaml"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// `<tmp>/manifests/pod.yaml` above a project `<tmp>/proj/suites/s.yaml`: the old upward search
/// found it; now the search stops at the project root (`<tmp>/proj`), and `..` cannot leave it.
#[test]
fn manifests_never_resolve_outside_the_project_root() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("manifests")).unwrap();
    std::fs::write(d.path().join("manifests/pod.yaml"), ok_pod()).unwrap();
    let proj = d.path().join("proj");
    std::fs::create_dir_all(proj.join("suites")).unwrap();
    std::fs::write(proj.join("suites/s.yaml"), suite_with_manifest("manifests/pod.yaml")).unwrap();
    let out = podlife(&proj, &["validate", "suites"]);
    assert_exit_2(
        &out,
        "manifest `manifests/pod.yaml` not found (searched from suites up to the project root .)",
    );

    std::fs::write(
        proj.join("suites/s.yaml"),
        suite_with_manifest("../../manifests/pod.yaml"),
    )
    .unwrap();
    let out = podlife(&proj, &["validate", "suites"]);
    assert_exit_2(&out, "outside the project root .: refused");

    // `..` that stays inside the project is fine.
    std::fs::create_dir_all(proj.join("manifests")).unwrap();
    std::fs::write(proj.join("manifests/pod.yaml"), ok_pod()).unwrap();
    std::fs::write(proj.join("suites/s.yaml"), suite_with_manifest("../manifests/pod.yaml")).unwrap();
    let out = podlife(&proj, &["validate", "suites"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    // The project's own manifests/ resolves (from suites/, one level up), as the built-ins do.
    std::fs::write(proj.join("suites/s.yaml"), suite_with_manifest("manifests/pod.yaml")).unwrap();
    let out = podlife(&proj, &["validate", "suites"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// A copy of a shipped recording to damage.
fn copy_recording(name: &str, to: &Path) {
    let from = root().join("tests/fixtures/recordings").join(name);
    copy_dir(&from, to);
}

#[test]
fn the_shipped_recording_reads_before_it_is_damaged() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("rec");
    copy_recording("restart-never-success", &rec);
    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("\"phase\""),
        "{}",
        &out.stdout[..out.stdout.len().min(500)]
    );
}

#[test]
fn a_fifo_or_a_device_in_a_recording_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("rec");
    copy_recording("restart-never-success", &rec);
    // A FIFO where the log follow file is.
    std::fs::remove_file(rec.join("logs/main.log")).unwrap();
    mkfifo(&rec.join("logs/main.log"));
    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_exit_2(&out, "rec/logs/main.log: is a FIFO, not a regular file");

    // A FIFO as an optional file (gaps.jsonl: absent is fine, a FIFO is not "absent").
    std::fs::remove_file(rec.join("logs/main.log")).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/recordings/restart-never-success/logs/main.log"),
        rec.join("logs/main.log"),
    )
    .unwrap();
    mkfifo(&rec.join("gaps.jsonl"));
    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_exit_2(&out, "rec/gaps.jsonl: is a FIFO, not a regular file");
    std::fs::remove_file(rec.join("gaps.jsonl")).unwrap();

    // /dev/zero as a CRI log, through a symlink: refused before a byte is read.
    let cri = rec.join("cri-logs/main");
    for e in std::fs::read_dir(&cri).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    std::os::unix::fs::symlink("/dev/zero", cri.join("0.log")).unwrap();
    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_exit_2(&out, "rec/cri-logs/main/0.log");
}

#[test]
fn a_recording_index_cannot_lead_outside_the_recording() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("rec");
    copy_recording("restart-never-success", &rec);
    std::fs::write(d.path().join("secret.log"), "2026-11-29T21:08:19.208999173Z secret\n").unwrap();
    let index = rec.join("logs/index.jsonl");
    let original = std::fs::read_to_string(&index).unwrap();

    // `..` and absolute paths in a `previous` entry's file name.
    for file in ["../../secret.log", "/etc/passwd"] {
        let line = format!("{{\"kind\": \"previous\", \"container\": \"main\", \"file\": \"{file}\"}}\n");
        std::fs::write(&index, format!("{original}{line}")).unwrap();
        let out = podlife(d.path(), &["timeline", "rec"]);
        assert_exit_2(&out, &format!("`{file}` is not a plain file name"));
    }

    // A plain name that is a symlink out of the folder.
    std::os::unix::fs::symlink(d.path().join("secret.log"), rec.join("logs/main.previous.1.log")).unwrap();
    let line = "{\"kind\": \"previous\", \"container\": \"main\", \"file\": \"main.previous.1.log\"}\n";
    std::fs::write(&index, format!("{original}{line}")).unwrap();
    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_exit_2(&out, "leads outside the recording folder");
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
}

/// An Event with `count: 2147483647` (a sender's word, not a bound) is one compact item: the
/// timeline stays small, count expectations count it, occurrence marks index into it. Before,
/// it was expanded into 2^31 items and `timeline`/`judge` allocated until killed.
#[test]
fn a_huge_event_count_is_judged_compactly() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("rec");
    copy_recording("restart-never-success", &rec);
    let events = rec.join("events.watch.jsonl");
    let text = std::fs::read_to_string(&events).unwrap();
    let pulled = text.lines().position(|l| l.contains("\"reason\":\"Pulled\"")).unwrap();
    let text: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == pulled {
                assert!(l.contains("\"count\":1,"), "{l}");
                l.replace("\"count\":1,", "\"count\":2147483647,")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&events, text.join("\n") + "\n").unwrap();

    let out = podlife(d.path(), &["timeline", "rec"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // The shipped recording's timeline is ~100 KiB; 2^31 items would be hundreds of GiB.
    assert!(out.stdout.len() < 1 << 20, "timeline of {} bytes", out.stdout.len());
    assert!(out.stdout.contains("\"repeats\": 2147483646"), "no compact item");

    let manifest = rec.join("manifest.yaml");
    let suite = format!(
        "name: s\ncases:\n\
         \x20 - name: right\n    manifest: {m}\n    expect:\n\
         \x20     - event: {{reason: Pulled, count: {{atLeast: 2147483647}}}}\n\
         \x20     - order: [{{event: {{reason: Pulled, occurrence: 2147483647}}}}, {{phase: Succeeded}}]\n\
         \x20     - never: {{mark: {{event: {{reason: Pulled}}}}, after: {{phase: Succeeded}}}}\n\
         \x20 - name: wrong\n    manifest: {m}\n    expect:\n\
         \x20     - event: {{reason: Pulled, count: {{atMost: 5}}}}\n",
        m = manifest.display()
    );
    std::fs::write(d.path().join("s.yaml"), suite).unwrap();
    let out = podlife(d.path(), &["judge", "--suite", "s.yaml", "--case", "right", "rec"]);
    assert_eq!(out.code, Some(0), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("2147483647 observed"), "{}", out.stdout);
    // The wrong expectation on the same data fails: the count is really read.
    let out = podlife(d.path(), &["judge", "--suite", "s.yaml", "--case", "wrong", "rec"]);
    assert_eq!(out.code, Some(1), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("expected at most 5, observed 2147483647"),
        "{}",
        out.stdout
    );
}

/// A timeline of the shipped `restart-never-success` recording with `n` more lines of `main`
/// (instance 0, one per millisecond after its last line).
fn with_many_lines(n: usize) -> podlife::observe::Timeline {
    let rec =
        podlife::observe::Recording::read(&root().join("tests/fixtures/recordings/restart-never-success")).unwrap();
    let mut tl = rec.timeline();
    let start = tl.logs.iter().map(|l| l.time).max().unwrap();
    for i in 0..n {
        tl.logs.push(podlife::observe::LogLine {
            container: "main".into(),
            instance: 0,
            time: start + jiff::SignedDuration::from_millis(i as i64 + 1),
            text: format!("line {i}"),
            received: None,
        });
    }
    tl
}

/// `log: {instance: last}` and `never` on a log mark, on 40 000 lines: a hang guard for the
/// quadratic judging they had (8.75 s for 40 k lines; the bench `log_instance_last_40k` has the
/// figure now). No timing is asserted: the test only has to finish, with the right verdicts.
#[test]
fn log_instance_last_on_many_lines_is_judged() {
    let tl = with_many_lines(40_000);
    let d = tempfile::tempdir().unwrap();
    let suite = format!(
        "name: s\ncases:\n  - name: c\n    manifest: {}\n    expect:\n\
         \x20     - log: {{container: main, regex: '^line 39999$', instance: last, count: 1}}\n\
         \x20     - log: {{container: main, regex: '^line 40000$', instance: last}}\n\
         \x20     - never: {{mark: {{log: {{container: main, regex: '^line'}}}}, before: {{phase: Running}}}}\n\
         \x20     - never: {{mark: {{log: {{container: main, regex: '^line 3999[0-9]$'}}}}}}\n",
        root()
            .join("tests/fixtures/recordings/restart-never-success/manifest.yaml")
            .display()
    );
    let path = d.path().join("s.yaml");
    std::fs::write(&path, suite).unwrap();
    let suites = podlife::suite::load_suites(&[path]).unwrap();
    let v = podlife::judge::judge_case(&suites[0].cases[0].spec, &tl);
    use podlife::judge::Outcome;
    assert_eq!(v[0].outcome, Outcome::Pass, "{}", v[0].evidence);
    // A line that is not there fails on the same data.
    assert_eq!(v[1].outcome, Outcome::Fail, "{}", v[1].evidence);
    // `never` sees every one of the 40 000 occurrences (in one pass, not one scan each).
    assert_eq!(v[2].outcome, Outcome::Pass, "{}", v[2].evidence);
    assert_eq!(v[3].outcome, Outcome::Fail, "{}", v[3].evidence);
}

/// Runs podlife with its stdout a pipe whose reading end is closed before podlife writes: every
/// write fails with EPIPE, as with `podlife list | head -1` once `head` is done.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("podlife starts");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    (status.code(), stderr)
}

#[test]
fn a_closed_stdout_ends_output_quietly() {
    let rec = "tests/fixtures/recordings/restart-never-success";
    let judge = [
        "judge",
        "--suite",
        "suites/restart-policy.yaml",
        "--case",
        "restart-never-success",
        rec,
    ];
    for args in [
        &["list"][..],
        &["list", "--upstream"],
        &["images"],
        &["timeline", rec],
        &["timeline", "--watch", rec],
        &["schema"],
        &["validate"],
        &judge,
    ] {
        let (code, stderr) = with_closed_stdout(args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
}

/// `run` with a closed stdout: libtest-mimic's printer panics at its first line; podlife catches
/// it, writes its reports and exits 1 with every case an error saying why (never 0: nothing was
/// certified). `run --list` just ends.
#[test]
fn a_run_with_a_closed_stdout_reports_and_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let reports = d.path().join("reports");
    let reports_s = reports.display().to_string();
    let args = [
        "run",
        "--replay",
        "tests/fixtures/recordings",
        "--reports",
        reports_s.as_str(),
        "restart-policy::restart-never-success",
    ];
    let (code, stderr) = with_closed_stdout(&args);
    assert_eq!(code, Some(1), "{stderr}");
    let run = std::fs::read_dir(&reports).unwrap().next().unwrap().unwrap().path();
    let summary = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert!(
        summary.contains("not run: the console output failed before the case started"),
        "{summary}"
    );
    let (code, stderr) = with_closed_stdout(&["run", "--list"]);
    assert_eq!(code, Some(0), "{stderr}");
}
