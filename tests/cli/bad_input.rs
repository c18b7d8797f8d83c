//! Damaged and hostile inputs and unfinished attempts re-judged: each
//! test feeds the input that showed the defect and checks podlife neither panics nor passes it
//! silently — one `error:` line naming the file and field and exit 2, or a verdict no greener
//! than the evidence.

use crate::support::files::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn podlife(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(args)
        .output()
        .unwrap()
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `tests/fixtures/recordings/sigterm-ignored` with every `finishedAt` set to jiff's last
/// representable second.
fn far_future_recording(dir: &Path) -> PathBuf {
    let rec = dir.join("sigterm-ignored");
    copy_dir(&root().join("tests/fixtures/recordings/sigterm-ignored"), &rec);
    let p = rec.join("pods.watch.jsonl");
    let watch = std::fs::read_to_string(&p).unwrap();
    let re = regex::Regex::new(r#""finishedAt":"[^"]*""#).unwrap();
    assert!(re.is_match(&watch), "the recording has finishedAt fields");
    let changed = re.replace_all(&watch, r#""finishedAt":"9999-12-30T22:00:00Z""#);
    std::fs::write(&p, changed.as_bytes()).unwrap();
    rec
}

/// 22.1: a far-future `finishedAt` panicked in jiff ("adding signed duration to timestamp
/// overflowed") in the observer (`timeline`, exit 101) and in the judge (`judge` on the timeline
/// JSON; `run --replay` reported "podlife panicked"). Timestamp arithmetic now saturates: the
/// timeline is built, the case is judged (and fails: the node claims an absurd kill time).
#[test]
fn a_far_future_finished_at_never_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = far_future_recording(tmp.path());
    let tl = podlife(&[os("timeline"), rec.as_os_str()]);
    assert_eq!(tl.status.code(), Some(0), "{}", text(&tl));
    let json = tmp.path().join("tl.json");
    std::fs::write(&json, &tl.stdout).unwrap();
    for source in [&rec, &json] {
        let j = podlife(&[
            os("judge"),
            os("--suite"),
            os("suites/termination.yaml"),
            os("--case"),
            os("sigterm-ignored"),
            source.as_os_str(),
        ]);
        // Judged (these expectations do not read finishedAt, so it may pass), never a crash.
        assert!(matches!(j.status.code(), Some(0 | 1)), "{}", text(&j));
        assert!(String::from_utf8_lossy(&j.stdout).contains("result: "), "{}", text(&j));
        assert!(!text(&j).contains("panicked"), "{}", text(&j));
    }
    let reports = tmp.path().join("reports");
    let r = podlife(&[
        os("run"),
        os("--replay"),
        tmp.path().as_os_str(),
        os("--quiet"),
        os("--reports"),
        reports.as_os_str(),
        os("termination::sigterm-ignored"),
        os("--exact"),
    ]);
    assert!(matches!(r.status.code(), Some(0 | 1)), "{}", text(&r));
    assert!(!text(&r).contains("panicked"), "{}", text(&r));
    let run = std::fs::read_dir(&reports).unwrap().flatten().next().unwrap().path();
    let got = statuses(&run.join("summary.json"));
    let status = got["termination::sigterm-ignored"].as_str();
    assert!(matches!(status, "passed" | "failed"), "judged, not an error: {status}");
}

/// 22.2: `run --replay` on a folder holding no recording of any selected case (here an empty
/// folder named like a bundle, and a folder whose only entry is a symlink loop) reported every
/// case ignored and exited 0. It is an input error.
#[test]
fn a_replay_source_with_nothing_to_replay_is_an_input_error() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("x.tar.gz");
    std::fs::create_dir(&empty).unwrap();
    let looped = tmp.path().join("loop");
    std::fs::create_dir(&looped).unwrap();
    std::os::unix::fs::symlink(".", looped.join("again")).unwrap();
    for source in [&empty, &looped] {
        let r = podlife(&[
            os("run"),
            os("--replay"),
            source.as_os_str(),
            os("--quiet"),
            os("--reports"),
            tmp.path().join("reports").as_os_str(),
        ]);
        assert_eq!(r.status.code(), Some(2), "{}", text(&r));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains(&format!(
                "error: --replay {}: no recording of any selected case",
                source.display()
            )),
            "{err}"
        );
    }
}

/// A timeline as `run` writes it, from the shipped live run 8o9vtjm0.
fn live_timeline() -> serde_json::Value {
    use std::io::Read;
    let p = root().join("tests/fixtures/live-runs/8o9vtjm0/timelines/downward-api__downward-api-env.json.gz");
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

fn judge_downward_api(tl: &Path) -> Output {
    podlife(&[
        os("judge"),
        os("--suite"),
        os("suites/downward-api.yaml"),
        os("--case"),
        os("downward-api-env"),
        tl.as_os_str(),
    ])
}

/// 22.3: `judge` read any timeline: `"format": 999` was judged (and could exit 0), and
/// `"complete": false` was overwritten with true. An unknown format is refused naming the file
/// and field; an incomplete timeline is at most undecided.
#[test]
fn judge_refuses_unknown_timeline_formats_and_never_passes_an_incomplete_one() {
    let tmp = tempfile::tempdir().unwrap();
    let tl = live_timeline();
    let good = tmp.path().join("good.json");
    std::fs::write(&good, tl.to_string()).unwrap();
    let ok = judge_downward_api(&good);
    assert_eq!(ok.status.code(), Some(0), "the control passes: {}", text(&ok));

    let mut future = tl.clone();
    future["format"] = 999.into();
    let p = tmp.path().join("future.json");
    std::fs::write(&p, future.to_string()).unwrap();
    let r = judge_downward_api(&p);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        format!(
            "error: {}: format: timeline format 999 is not supported by this podlife (reads format 1)\n",
            p.display()
        )
    );

    let mut cut = tl;
    cut["complete"] = false.into();
    let p = tmp.path().join("cut.json");
    std::fs::write(&p, cut.to_string()).unwrap();
    let r = judge_downward_api(&p);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("UNDECIDED [timeline] the timeline is incomplete"), "{out}");
    assert!(out.contains("result: FAILED"), "{out}");
}

/// 22.5: control characters from files reached the terminal: `diff` printed case names with
/// ESC sequences and U+202E as they were. Every printed file-derived text is escaped now.
#[test]
fn diff_escapes_control_characters_of_case_names() {
    let tmp = tempfile::tempdir().unwrap();
    let live = root().join("tests/fixtures/live-runs");
    let before = tmp.path().join("before");
    let after = tmp.path().join("after");
    std::fs::create_dir_all(&before).unwrap();
    std::fs::create_dir_all(&after).unwrap();
    let mut b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(live.join("8o9vtjm0/summary.json")).unwrap()).unwrap();
    let hostile = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}gpj.exe";
    b["cases"][0]["case"] = hostile.into();
    // The case is gone afterwards: listed as removed, by its name.
    let mut a = b.clone();
    a["cases"].as_array_mut().unwrap().remove(0);
    std::fs::write(before.join("summary.json"), b.to_string()).unwrap();
    std::fs::write(after.join("summary.json"), a.to_string()).unwrap();
    let r = podlife(&[os("diff"), before.as_os_str(), after.as_os_str()]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains("evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}gpj.exe"),
        "{}",
        text(&r)
    );
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}') && !out.contains('\u{7}'),
        "{out}"
    );
}

/// 22.5: the error for a `.tar.gz` of random bytes echoed binary bytes of its header.
#[test]
fn a_random_bytes_bundle_error_is_printable() {
    let tmp = tempfile::tempdir().unwrap();
    // A gzip stream holding a "tar header" of control bytes: the tar reader quotes them.
    let mut raw = vec![0x1bu8; 512];
    raw[100..108].copy_from_slice(b"\x1b[31m\x07\x1b]");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    let bundle = tmp.path().join("random.tar.gz");
    std::fs::write(&bundle, gz.finish().unwrap()).unwrap();
    let r = podlife(&[
        os("rejudge"),
        bundle.as_os_str(),
        os("--reports"),
        tmp.path().as_os_str(),
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.starts_with(&format!("error: {}: ", bundle.display())), "{err}");
    assert!(err.chars().all(|c| c == '\n' || !c.is_control()), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// 22.6: `validate` followed a symlinked folder loop and loaded the same suite 41 times.
#[test]
fn validate_reads_each_suite_once_through_symlink_loops() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suites");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(root().join("suites/termination.yaml"), dir.join("termination.yaml")).unwrap();
    std::os::unix::fs::symlink(root().join("manifests"), tmp.path().join("manifests")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("up")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("again")).unwrap();
    let r = podlife(&[
        os("validate"),
        dir.as_os_str(),
        dir.join("termination.yaml").as_os_str(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with("ok: 1 suite,"),
        "{}",
        text(&r)
    );
}

/// 22.6: `diff` refused a `summary.json` starting with a UTF-8 BOM (as Windows editors save it).
#[test]
fn diff_reads_a_summary_with_a_byte_order_mark() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let summary = std::fs::read(root().join("tests/fixtures/live-runs/8o9vtjm0/summary.json")).unwrap();
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(summary);
    std::fs::write(run.join("summary.json"), bom).unwrap();
    let r = podlife(&[os("diff"), run.as_os_str(), run.as_os_str()]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
}

/// 22.6: `--threshold NaN%` was taken and silently disabled the threshold; inf and negative
/// values are as meaningless.
#[test]
fn diff_refuses_a_threshold_that_is_not_a_finite_non_negative_number() {
    let run = root().join("tests/fixtures/live-runs/8o9vtjm0");
    for bad in ["NaN%", "nan%", "inf%", "-inf%", "-5%"] {
        let arg = format!("--threshold={bad}");
        let r = podlife(&[os("diff"), run.as_os_str(), run.as_os_str(), os(&arg)]);
        assert_eq!(r.status.code(), Some(2), "{bad}: {}", text(&r));
        assert!(
            String::from_utf8_lossy(&r.stderr).contains(&format!("invalid percentage `{bad}`")),
            "{bad}: {}",
            text(&r)
        );
    }
    let r = podlife(&[
        os("diff"),
        run.as_os_str(),
        run.as_os_str(),
        os("--threshold"),
        os("20%"),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
}

/// The statuses of a summary.json: `suite::case` → status.
fn statuses(summary: &Path) -> std::collections::BTreeMap<String, String> {
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("{}::{}", c["suite"].as_str().unwrap(), c["case"].as_str().unwrap()),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn rejudge(run: &Path, reports: &Path) -> (Output, std::collections::BTreeMap<String, String>) {
    let r = podlife(&[os("rejudge"), run.as_os_str(), os("--reports"), reports.as_os_str()]);
    let new = std::fs::read_dir(reports)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").is_file())
        .unwrap_or_else(|| panic!("no re-judged run: {}", text(&r)));
    let s = statuses(&new.join("summary.json"));
    (r, s)
}

fn unpack(bundle: &Path, into: &Path) -> PathBuf {
    let f = std::fs::File::open(bundle).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(f)).unpack(into).unwrap();
    let name = bundle
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches(".tar.gz");
    into.join(name)
}

/// On real data: live run F3 (`run probes`, Ctrl-C after 30 s: 8 cases interrupted) and
/// F1 (API server stopped mid-run: 6 cases errored), `tests/fixtures/unfinished-runs/`. Re-judged
/// from their recordings and from their stored timelines alone (runs recorded without
/// recordings), every interrupted or errored case stays so: none becomes passed.
#[test]
fn rejudging_keeps_interrupted_and_errored_attempts_unfinished() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["mk88hmjs", "nyybrjpu"] {
        let bundle = root().join(format!("tests/fixtures/unfinished-runs/{name}.tar.gz"));
        let run = unpack(&bundle, &tmp.path().join(format!("{name}-src")));
        let original = statuses(&run.join("summary.json"));
        let unfinished: Vec<&String> = original
            .iter()
            .filter(|(_, s)| *s == "interrupted" || *s == "error")
            .map(|(c, _)| c)
            .collect();
        assert!(unfinished.len() >= 6, "{name}: {original:?}");
        // From the recordings (the bundle itself), then from the timelines alone.
        let (r, with_recordings) = rejudge(&bundle, &tmp.path().join(format!("{name}-a")));
        std::fs::remove_dir_all(run.join("recordings")).unwrap();
        let (r2, timelines_only) = rejudge(&run, &tmp.path().join(format!("{name}-b")));
        for (how, got, out) in [
            ("recordings", &with_recordings, &r),
            ("timelines", &timelines_only, &r2),
        ] {
            for c in &unfinished {
                assert_eq!(
                    got.get(*c),
                    original.get(*c),
                    "{name} {c} re-judged from {how}: {}",
                    text(out)
                );
            }
            assert_ne!(out.status.code(), Some(0), "{name} from {how}: {}", text(out));
        }
    }
}

/// `podlife judge` on a recording ignored how the attempt ended: an interrupted attempt
/// of F3 was judged as if finished.
#[test]
fn judge_on_a_recording_of_an_interrupted_attempt_gives_no_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let run = unpack(
        &root().join("tests/fixtures/unfinished-runs/mk88hmjs.tar.gz"),
        tmp.path(),
    );
    let rec = run.join("recordings/probes__probe-liveness-exec/attempt-1");
    let r = podlife(&[
        os("judge"),
        os("--suite"),
        os("suites/probes.yaml"),
        os("--case"),
        os("probe-liveness-exec"),
        rec.as_os_str(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("the recorded attempt was interrupted"), "{out}");
    assert!(!out.contains("result: ok"), "{out}");
}

/// A `--repeat` run without recordings stores one timeline per case (the last attempt's);
/// re-judging judged that one timeline for every attempt, so N attempts became N copies of one
/// sample. Only the last attempt is judged; the others say they have no evidence.
#[test]
fn rejudging_a_repeated_run_without_recordings_judges_only_the_attempt_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    let src = root().join("tests/fixtures/live-runs/kj0j3jec");
    let run = tmp.path().join("kj0j3jec");
    std::fs::create_dir_all(run.join("timelines")).unwrap();
    std::fs::copy(src.join("summary.json"), run.join("summary.json")).unwrap();
    let case = "downward-api__downward-api-env.json";
    {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(src.join("timelines").join(format!("{case}.gz"))).unwrap())
            .read_to_string(&mut s)
            .unwrap();
        std::fs::write(run.join("timelines").join(case), s).unwrap();
    }
    let reports = tmp.path().join("out");
    let r = podlife(&[os("rejudge"), run.as_os_str(), os("--reports"), reports.as_os_str()]);
    let new = std::fs::read_dir(&reports).unwrap().flatten().next().unwrap().path();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(new.join("summary.json")).unwrap()).unwrap();
    let c = s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "downward-api-env")
        .unwrap_or_else(|| panic!("{}", text(&r)));
    let attempts = c["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3, "{c}");
    for a in &attempts[..2] {
        assert_eq!(a["status"], "error", "{a}");
        assert!(
            a["error"].as_str().unwrap().contains("the run kept no evidence of it"),
            "{a}"
        );
    }
    assert_eq!(attempts[2]["status"], "passed", "{}", attempts[2]);
}

/// 22.4 / 19.11: a signal while a bundle is unpacked (`rejudge big.tar.gz`, Ctrl-C) left the
/// partly unpacked folder in the temp dir (812 MB in the issue). The unpacking is cancellable
/// and its `TempDir` removed: podlife exits 143 on SIGTERM, the temp dir is left empty.
#[test]
fn a_signal_while_unpacking_a_bundle_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("big.tar.gz");
    {
        use std::io::Read as _;
        // 256 MiB of zeros first (a few hundred KB compressed), so the unpacking is still going
        // when the signal comes; the run's summary after it.
        let file = std::fs::File::create(&bundle).unwrap();
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let size = 256u64 << 20;
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "run1/big.bin", std::io::repeat(0).take(size))
            .unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "run1/summary.json", &b"{}"[..]).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    let temp = tmp.path().join("temp");
    std::fs::create_dir(&temp).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(root())
        .env("TMPDIR", &temp)
        .args([
            os("rejudge"),
            bundle.as_os_str(),
            os("--reports"),
            tmp.path().join("r").as_os_str(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (on the condition, not a clock) until the unpacking has begun.
    loop {
        if std::fs::read_dir(&temp).unwrap().next().is_some() {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("podlife ended before unpacking: {status}");
        }
        std::thread::yield_now();
    }
    // The shell's own `kill` (no procps needed, no libc dependency).
    let killed = std::process::Command::new("sh")
        .args(["-c", "kill -TERM \"$0\"", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted by SIGTERM while unpacking the bundle"),
        "{}",
        text(&out)
    );
    let left: Vec<_> = std::fs::read_dir(&temp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A malformed `durations.tsv` beside the suites (it orders the cases) is one error naming its
/// line, exit 2, for `validate` and for `run` before the cluster is touched.
#[test]
fn a_malformed_durations_file_is_one_error_naming_its_line() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&root().join("tests/list-fixture"), d.path());
    let suites = d.path().join("suites");
    std::fs::write(suites.join("durations.tsv"), "case\tseconds\nx::y\t12\nx::z\tlong\n").unwrap();
    for args in [
        vec![os("validate"), suites.as_os_str()],
        vec![os("run"), os("--suites"), suites.as_os_str()],
    ] {
        let o = podlife(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("durations.tsv:3: seconds: expected a number"),
            "{}",
            text(&o)
        );
        assert!(!err.contains("panicked"), "{}", text(&o));
    }
}

/// A restartCount is a number the API states, up to i32::MAX: nothing may be sized by it. With
/// every restartCount of a crash-looping recording at 2147483647, the back-off judge allocated
/// one step per count (16 GiB) and the process aborted, which no panic catcher sees: `judge`
/// and a whole `run --replay` died. Judged now, as a failure of the model at worst.
#[test]
fn a_huge_restart_count_sizes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("restart-always-crashloop");
    copy_dir(&root().join("tests/fixtures/recordings/restart-always-crashloop"), &rec);
    let p = rec.join("pods.watch.jsonl");
    let watch = std::fs::read_to_string(&p).unwrap();
    let re = regex::Regex::new(r#""restartCount":\d+"#).unwrap();
    assert!(re.is_match(&watch), "the recording has restartCount fields");
    std::fs::write(&p, re.replace_all(&watch, r#""restartCount":2147483647"#).as_bytes()).unwrap();
    let j = podlife(&[
        os("judge"),
        os("--suite"),
        os("suites/restart-policy.yaml"),
        os("--case"),
        os("restart-always-crashloop"),
        rec.as_os_str(),
    ]);
    assert!(matches!(j.status.code(), Some(0 | 1)), "{}", text(&j));
    assert!(String::from_utf8_lossy(&j.stdout).contains("result: "), "{}", text(&j));
    let reports = tmp.path().join("reports");
    let r = podlife(&[
        os("run"),
        os("--replay"),
        tmp.path().as_os_str(),
        os("--quiet"),
        os("--reports"),
        reports.as_os_str(),
        os("restart-policy::restart-always-crashloop"),
        os("--exact"),
    ]);
    assert!(matches!(r.status.code(), Some(0 | 1)), "{}", text(&r));
    let run = std::fs::read_dir(&reports).unwrap().flatten().next().unwrap().path();
    let got = statuses(&run.join("summary.json"));
    assert!(got.contains_key("restart-policy::restart-always-crashloop"), "{got:?}");
}

/// A run folder is re-judged only from what it holds: a recording folder or a stored timeline
/// that is a symbolic link to elsewhere was read, judged and copied into the new reports. Both
/// shapes are refused, naming the link, exit 2, and nothing is re-judged.
#[cfg(unix)]
#[test]
fn rejudge_refuses_links_in_a_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = root().join("tests/fixtures/live-bundles/A1-8pgadlfn/8pgadlfn.tar.gz");
    // A recording folder linked: attempt-1 of a case points at a copy outside the run.
    let run = unpack(&bundle, &tmp.path().join("a"));
    let case = std::fs::read_dir(run.join("recordings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("attempt-1").is_dir())
        .expect("a recorded case");
    let outside = tmp.path().join("outside");
    std::fs::rename(case.join("attempt-1"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, case.join("attempt-1")).unwrap();
    // A stored timeline linked, in a run without recordings.
    let run2 = unpack(&bundle, &tmp.path().join("b"));
    std::fs::remove_dir_all(run2.join("recordings")).unwrap();
    let tl = std::fs::read_dir(run2.join("timelines"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let elsewhere = tmp.path().join("elsewhere.json");
    std::fs::rename(&tl, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &tl).unwrap();
    for (run, link) in [(&run, case.join("attempt-1")), (&run2, tl.clone())] {
        let reports = tmp.path().join("reports");
        let r = podlife(&[os("rejudge"), run.as_os_str(), os("--reports"), reports.as_os_str()]);
        assert_eq!(r.status.code(), Some(2), "{}", text(&r));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("symbolic link"), "{}", text(&r));
        assert!(
            err.contains(&link.display().to_string()),
            "names the link: {}",
            text(&r)
        );
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error")).count(),
            1,
            "{}",
            text(&r)
        );
    }
}
