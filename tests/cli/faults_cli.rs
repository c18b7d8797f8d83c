//! The command line under faults: colliding namespace names rejected by `validate`, reports that
//! cannot be written (exit 2 naming the path), `--include-ignored` listing a case once, an API
//! server that accepts connections and never answers, and SIGTERM during a run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn podlife(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(dir)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(args)
        .output()
        .expect("podlife runs")
}

/// A suite file whose cases use the recordings' own manifests.
fn write_suite(dir: &Path, file: &str, suite: &str, cases: &[&str]) -> PathBuf {
    let rec = root().join("tests/fixtures/recordings");
    let mut body = format!("name: {suite}\ncases:\n");
    for c in cases {
        body.push_str(&format!(
            "  - name: {c}\n    manifest: {}/restart-never-success/manifest.yaml\n    expect:\n      - phase: Succeeded\n",
            rec.display()
        ));
    }
    let path = dir.join(file);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn validate_rejects_cases_that_would_share_a_namespace_name() {
    let d = tempfile::tempdir().unwrap();
    // `a-b` + `c` and `a` + `b-c` both give `podlife-<run>-a-b-c`.
    write_suite(d.path(), "one.yaml", "a-b", &["c"]);
    write_suite(d.path(), "two.yaml", "a", &["b-c"]);
    let out = podlife(d.path(), &["validate", "."]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("would share the namespace name `podlife-<run>-a-b-c`"),
        "{stderr}"
    );
    // Same case name in two differently named suites is fine: the suite is part of the name.
    let d = tempfile::tempdir().unwrap();
    write_suite(d.path(), "one.yaml", "alpha", &["x"]);
    write_suite(d.path(), "two.yaml", "beta", &["x"]);
    let out = podlife(d.path(), &["validate", "."]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn replay_args<'a>(suite: &'a str, rec: &'a str) -> Vec<&'a str> {
    vec!["run", "--replay", rec, "--suites", suite, "--quiet"]
}

#[test]
fn unwritable_reports_exit_2_naming_the_path() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success"]);
    let rec = root().join("tests/fixtures/recordings");
    let (suite, rec) = (suite.display().to_string(), rec.display().to_string());
    for (extra, path) in [
        (vec!["--reports", "/dev/null/x"], "/dev/null/x"),
        (vec!["--junit", "/dev/null/x/junit.xml"], "/dev/null/x/junit.xml"),
    ] {
        let mut args = replay_args(&suite, &rec);
        args.extend(extra);
        let out = podlife(d.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(path), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().filter(|l| l.starts_with("error:")).count(),
            1,
            "{stderr}"
        );
    }
    // A read-only --junit file: same.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ro = d.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Root ignores permissions: only check when the directory really is read-only.
        if std::fs::write(ro.join("probe"), b"").is_err() {
            let junit = ro.join("junit.xml").display().to_string();
            let mut args = replay_args(&suite, &rec);
            args.extend(["--junit", junit.as_str()]);
            let out = podlife(d.path(), &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(stderr.contains(&junit), "{stderr}");
        }
    }
}

#[test]
fn include_ignored_reports_a_case_once() {
    let d = tempfile::tempdir().unwrap();
    // `no-recording` has no recording folder: ignored in a replay, run (and errored) with
    // --include-ignored.
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success", "no-recording"]);
    let rec = root().join("tests/fixtures/recordings");
    let (suite, rec) = (suite.display().to_string(), rec.display().to_string());
    for extra in [vec![], vec!["--include-ignored"]] {
        let reports = tempfile::tempdir().unwrap();
        let mut args = replay_args(&suite, &rec);
        let r = reports.path().display().to_string();
        args.extend(["--reports", r.as_str()]);
        args.extend(extra.iter().copied());
        let out = podlife(d.path(), &args);
        let run = std::fs::read_dir(reports.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
        let names: Vec<&str> = summary["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["case"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["no-recording", "restart-never-success"], "{extra:?}");
        let no_rec = &summary["cases"][0];
        if extra.is_empty() {
            assert_eq!(no_rec["status"], "ignored");
            assert_eq!(out.status.code(), Some(0));
        } else {
            assert_eq!(no_rec["status"], "error", "{no_rec}");
            assert_eq!(out.status.code(), Some(1));
        }
    }
}

/// A TCP server that accepts connections and never answers; counts accepted connections.
fn silent_server() -> (u16, std::sync::mpsc::Receiver<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = vec![];
        for s in l.incoming().flatten() {
            held.push(s);
            let _ = tx.send(());
        }
    });
    (port, rx)
}

fn kubeconfig(dir: &Path, port: u16) -> PathBuf {
    let p = dir.join("kubeconfig");
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
             current-context: x\n"
        ),
    )
    .unwrap();
    p
}

/// Waits for the child, failing the test (and killing it) after `bound`: a ceiling against a
/// hang, not a timing claim.
fn wait_bounded(child: &mut std::process::Child, bound: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            panic!("podlife did not end within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_api_server_that_never_answers_does_not_hang_the_run() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success"]);
    let (port, _accepted) = silent_server();
    let kc = kubeconfig(d.path(), port);
    let mut child = Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(d.path())
        .args(["run", "--kubeconfig", &kc.display().to_string()])
        .args(["--suites", &suite.display().to_string(), "--request-timeout", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no complete answer within 4s"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_run_with_143() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success"]);
    let (port, accepted) = silent_server();
    let kc = kubeconfig(d.path(), port);
    let mut child = Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(d.path())
        .args(["run", "--kubeconfig", &kc.display().to_string()])
        .args(["--suites", &suite.display().to_string(), "--request-timeout", "10m"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The preflight has connected: podlife handles signals from before its first request.
    accepted
        .recv_timeout(Duration::from_secs(60))
        .expect("podlife connects to the API server");
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}: {stderr}");
    assert!(
        stderr.contains("interrupted by SIGTERM before any case started"),
        "{stderr}"
    );
}

/// A filter that selects no case is a typo, not a green run: exit 2 before anything touches the
/// cluster (the kubeconfig here points nowhere), as nextest refuses to run no test. Live, `run
/// status-container-creating --exact` ran 0 cases and said "test result: ok".
#[test]
fn a_filter_that_selects_nothing_exits_2_without_touching_the_cluster() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success"]);
    // `podlife run FILTER...` against a kubeconfig that points nowhere: (exit code, stderr).
    let run = |filter: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_podlife"))
            .current_dir(d.path())
            .args(["run", "--kubeconfig", "/nonexistent/kubeconfig"])
            .args(["--suites", &suite.display().to_string()])
            .args(filter)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // (A filter naming a node copy, `suite::case@node`, is checked once the nodes are known.)
    for filter in [&["restart-never-success", "--exact"][..], &["no-such-case"]] {
        let (code, stderr) = run(filter);
        assert_eq!(code, Some(2), "{filter:?}: {stderr}");
        assert!(stderr.contains("no case matches the filter"), "{filter:?}: {stderr}");
        assert!(
            !stderr.contains("no cluster"),
            "{filter:?} touched the cluster: {stderr}"
        );
    }
    // The exact name of the case, and of a node copy of it, do select it (and then need a cluster).
    for filter in [
        &["mock::restart-never-success", "--exact"][..],
        &["mock::restart-never-success@vm", "--exact"],
    ] {
        let (_, stderr) = run(filter);
        assert!(!stderr.contains("no case matches"), "{filter:?}: {stderr}");
    }
}

/// Once the cases are over, while the reports are written, a signal still ends podlife at once
/// with its code (the handlers installed for the run used to swallow it). The publishing window
/// is held open by a test hook so the signal lands in it.
#[cfg(all(unix, feature = "test-hooks"))]
#[test]
fn a_signal_while_the_reports_are_written_exits_at_once() {
    use std::io::BufRead;
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path(), "s.yaml", "mock", &["restart-never-success"]);
    let rec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut child = Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(d.path())
        .env("PODLIFE_TEST_PUBLISH_DELAY_MS", "120000")
        .args(["run", "--replay", &rec.display().to_string()])
        .args(["--suites", &suite.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The console's closing libtest line comes before the reports are written.
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(out).lines();
    assert!(
        lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.starts_with("test result:")),
        "the run did not finish"
    );
    // Until it exits: a signal that lands in the last moments of the run itself is the run's
    // (its second one exits at once too); every later one is the publishing window's.
    let give_up = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < give_up,
            "SIGTERM while writing the reports was swallowed"
        );
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
}

/// A signal in any phase of a bundle's replay ends the command with its code and leaves no
/// unpacked bundle behind. Between the unpacking and the run, the handlers installed for the
/// unpacking used to catch the signal and nobody read it (the command then ran every case and
/// exited 0); while the reports were written, the exit at once left the unpacked bundle in the
/// temp folder. Each phase announces itself on stderr and stays open (`PODLIFE_TEST_PHASES`),
/// so the signal lands in it without a guessed delay.
#[cfg(unix)]
#[test]
fn a_signal_at_each_phase_of_a_bundle_replay_stops_it_and_leaves_nothing() {
    use std::io::BufRead;
    let bundle = root().join("tests/fixtures/live-bundles/A1-8pgadlfn/8pgadlfn.tar.gz");
    let cases: [(&[&str], &str, &str, i32); 5] = [
        (&["rejudge"], "unpacked", "INT", 130),
        (&["run", "--replay"], "unpacked", "TERM", 143),
        (&["run", "--replay"], "replay-checked", "INT", 130),
        (&["rejudge"], "publishing", "HUP", 129),
        (&["run", "--replay"], "publishing", "INT", 130),
    ];
    for (cmd, phase, sig, code) in cases {
        let d = tempfile::tempdir().unwrap();
        let temp = d.path().join("temp");
        std::fs::create_dir(&temp).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_podlife"))
            .current_dir(root())
            .env("TMPDIR", &temp)
            .env("PODLIFE_TEST_PHASES", phase)
            .args(cmd)
            .arg(&bundle)
            .args(["--quiet", "--reports"])
            .arg(d.path().join("reports"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let marker = format!("podlife-phase: {phase}");
        let mut seen = vec![];
        for l in lines.by_ref().map_while(Result::ok) {
            let here = l == marker;
            seen.push(l);
            if here {
                break;
            }
        }
        assert_eq!(seen.last(), Some(&marker), "{cmd:?} never reached {phase}: {seen:?}");
        let sent = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let status = wait_bounded(&mut child, Duration::from_secs(120));
        assert_eq!(status.code(), Some(code), "{cmd:?} at {phase}: {seen:?} {rest:?}");
        let left: Vec<_> = std::fs::read_dir(&temp).unwrap().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "{cmd:?} at {phase} left behind: {left:?}");
    }
}
