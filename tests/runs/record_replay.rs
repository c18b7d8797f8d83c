//! Every live run is replayable: `run` records each attempt's raw inputs (here against the
//! in-process API server, which serves real recordings), `run --replay` of the run folder or of
//! its bundle reproduces every verdict, `rejudge` applies changed suites and `diff` shows what
//! flipped, and a damaged recording is one clear error. `tests/fixtures/runs/recorded1` is such a
//! recorded run, committed, replayed end to end (recording → observer → judge → reports).

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use podlife::results::{CaseStatus, RunSummary};
use podlife::run::{RunOptions, RunOutcome};

use crate::support::files::copy_dir;
use crate::support::live;

const FIXTURE_SUITE: &str = "tests/fixtures/runs/suite/record.yaml";
const FIXTURE_RUN: &str = "tests/fixtures/runs/recorded1";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn opts(reports: &Path, replay: Option<PathBuf>) -> RunOptions {
    std::fs::create_dir_all(reports).unwrap();
    RunOptions {
        test_threads: 4,
        retries: 1,
        record: replay.is_none(),
        replay,
        api_outage_budget: Duration::from_secs(5),
        logfile: Some(reports.join(format!("console-{}.log", std::process::id()))),
        ..live::run_options(reports)
    }
}

/// Runs the fixture suite live against the fake API server with recording on, into
/// `<reports>/<run_id>/`.
fn record_live(reports: &Path, run_id: &str) -> RunOutcome {
    record_live_with(reports, run_id, |_| {})
}

fn record_live_with(reports: &Path, run_id: &str, tweak: impl FnOnce(&mut RunOptions)) -> RunOutcome {
    let (rt, client, fake) = live::fake_server();
    fake.lock().unwrap().fail_apply.insert("downward-api-env".into());
    let suites = podlife::suite::load_suites(&[PathBuf::from(FIXTURE_SUITE)]).unwrap_or_else(|e| panic!("{e:?}"));
    let cluster = podlife::cluster::Cluster::from_client(client);
    let mut o = opts(reports, None);
    tweak(&mut o);
    let mut out = podlife::run::run_live(&o, live::cases_of(&suites), cluster, run_id.into(), &rt).unwrap();
    live::publish(&mut out, &o);
    out
}

/// Replays a run folder with the suites it kept (`<run>/suites`), or with `suites`.
fn replay(run: &Path, reports: &Path, suites: Option<&Path>) -> RunOutcome {
    let suites = suites.map_or(run.join("suites"), Path::to_path_buf);
    let suites = podlife::suite::load_suites(&[suites]).unwrap_or_else(|e| panic!("{e:?}"));
    let o = opts(reports, Some(run.to_path_buf()));
    let mut out = podlife::run::run(o.clone(), suites).unwrap_or_else(|c| panic!("{c:?}"));
    live::publish(&mut out, &o);
    out
}

fn read_summary(run: &Path) -> RunSummary {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// Case statuses, and per attempt its status, error and verdicts (evidence, measured values and
/// mark instants included): everything `summary.json` says about the verdicts.
fn verdicts(s: &RunSummary) -> Vec<(String, serde_json::Value)> {
    s.cases
        .iter()
        .map(|c| {
            let attempts: Vec<_> = c
                .attempts
                .iter()
                .map(|a| serde_json::json!({"status": a.status, "error": a.error, "verdicts": a.verdicts}))
                .collect();
            (
                c.full_name(),
                serde_json::json!({"status": c.status, "repetitions": c.repetitions, "attempts": attempts}),
            )
        })
        .collect()
}

/// Per case its status and, per attempt, its status and each verdict's (index, kind, outcome).
fn outcomes(s: &RunSummary) -> Vec<(String, CaseStatus, Vec<serde_json::Value>)> {
    s.cases
        .iter()
        .map(|c| {
            let attempts = c
                .attempts
                .iter()
                .map(|a| {
                    let v: Vec<_> = a
                        .verdicts
                        .iter()
                        .map(|v| serde_json::json!([v.index, v.kind, v.outcome]))
                        .collect();
                    serde_json::json!({"status": a.status, "verdicts": v})
                })
                .collect();
            (c.full_name(), c.status, attempts)
        })
        .collect()
}

fn assert_same_verdicts(live: &RunSummary, replayed: &RunSummary) {
    let (a, b) = (verdicts(live), verdicts(replayed));
    assert_eq!(a.len(), b.len());
    for ((na, va), (nb, vb)) in a.iter().zip(&b) {
        assert_eq!(na, nb);
        assert_eq!(va, vb, "{na}: replayed verdicts differ from the live run's");
    }
}

/// A timeline as JSON without its `source` (live vs the recording's path).
fn timeline_json(tl: &podlife::observe::Timeline) -> serde_json::Value {
    let mut v = serde_json::to_value(tl).unwrap();
    v.as_object_mut().unwrap().remove("source");
    v
}

fn status_of(s: &RunSummary, case: &str) -> CaseStatus {
    s.cases.iter().find(|c| c.case == case).unwrap().status
}

#[test]
fn replay_of_a_recorded_run_reproduces_every_verdict_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let live = record_live(dir.path(), "livetest1");
    let run = live.report_dir.clone();
    // Every way an attempt can end is in this run, retried once when it did not pass.
    let s = &live.summary;
    assert_eq!(status_of(s, "restart-never-success"), CaseStatus::Passed);
    assert_eq!(status_of(s, "sigterm-handled"), CaseStatus::Passed);
    assert_eq!(status_of(s, "oom-killed"), CaseStatus::Failed);
    assert_eq!(status_of(s, "restart-onfailure-then-success"), CaseStatus::Failed);
    assert_eq!(status_of(s, "downward-api-env"), CaseStatus::Error);
    let recs = run.join("recordings");
    for f in ["run.json", "cluster-info.json"] {
        assert!(recs.join(f).is_file(), "{f}");
    }
    for a in ["attempt-1", "attempt-2"] {
        let d = recs.join("recorded__oom-killed").join(a);
        for f in [
            "actions.jsonl",
            "pods.watch.jsonl",
            "events.watch.jsonl",
            "manifest.yaml",
            "logs/index.jsonl",
        ] {
            assert!(d.join(f).is_file(), "{}", d.join(f).display());
        }
    }
    assert!(!recs.join("recorded__restart-never-success/attempt-2").exists());
    assert!(run.join("suites/record.yaml").is_file());
    assert!(run.join("suites/manifests/oom-killed.yaml").is_file());

    let replayed = replay(&run, &dir.path().join("replayed"), None);
    assert_same_verdicts(&live.summary, &replayed.summary);
    assert_eq!(replayed.summary.fingerprint.nodes, live.summary.fingerprint.nodes);
    for (a, b) in live.summary.cases.iter().zip(&replayed.summary.cases) {
        let (Some(ta), Some(tb)) = (a.timeline_in(&live.report_dir), b.timeline_in(&replayed.report_dir)) else {
            panic!("{}: a timeline is missing", a.full_name());
        };
        assert_eq!(
            timeline_json(&ta),
            timeline_json(&tb),
            "{}: timeline differs",
            a.full_name()
        );
    }
    // summary.json on disk says the same.
    assert_same_verdicts(&read_summary(&run), &read_summary(&replayed.report_dir));

    // The bundle replays directly, with the suites it holds.
    let bundle = podlife::run::bundle::write(&run).unwrap();
    let out = dir.path().join("from-bundle");
    Command::cargo_bin("podlife")
        .unwrap()
        .args(["run", "-q", "--replay"])
        .arg(&bundle)
        .arg("--reports")
        .arg(&out)
        .arg("--logfile")
        .arg(dir.path().join("bundle-console.log"))
        .assert()
        .code(1);
    let from_bundle = only_run(&out);
    assert_same_verdicts(&live.summary, &read_summary(&from_bundle));
}

#[cfg(feature = "test-hooks")]
#[test]
fn an_attempt_in_which_podlife_crashed_replays_as_the_same_error() {
    let dir = tempfile::tempdir().unwrap();
    let live = record_live_with(dir.path(), "crash1", |o| {
        o.filter = Some("restart-never-".into());
        o.panic_in_case = Some("recorded::restart-never-success".into());
    });
    let crashed = live
        .summary
        .cases
        .iter()
        .find(|c| c.case == "restart-never-success")
        .unwrap();
    assert_eq!(crashed.status, CaseStatus::Error);
    assert!(crashed.last().unwrap().error.as_deref().unwrap().contains("panicked"));
    let replayed = replay(&live.report_dir, &dir.path().join("replayed"), None);
    assert_same_verdicts(&live.summary, &replayed.summary);
}

/// The one run folder inside a reports folder.
fn only_run(reports: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(reports)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn committed_recorded_run_replays_end_to_end_to_the_same_reports() {
    let fixture = root().join(FIXTURE_RUN);
    let committed = read_summary(&fixture);
    let dir = tempfile::tempdir().unwrap();
    let replayed = replay(&fixture, dir.path(), None);
    // The fixture was recorded by an earlier podlife: evidence wording and timeline fields may
    // have changed since (the same build reproduces them bit for bit, see the test above), the
    // outcomes may not.
    assert_eq!(outcomes(&committed), outcomes(&replayed.summary));
    assert_eq!(
        (
            replayed.summary.passed,
            replayed.summary.failed,
            replayed.summary.errors
        ),
        (3, 2, 1)
    );
    // JUnit: the same test cases with the same failures and errors as the live run's report.
    let cases = |xml: &str| -> Vec<(String, &'static str)> {
        let mut out = vec![];
        let mut r = quick_xml::Reader::from_str(xml);
        let mut current: Option<String> = None;
        loop {
            match r.read_event().unwrap() {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                    let name = String::from_utf8_lossy(e.name().as_ref()).to_string();
                    let attr = |k: &str| {
                        e.attributes()
                            .flatten()
                            .find(|a| a.key.as_ref() == k.as_bytes())
                            .map(|a| String::from_utf8_lossy(&a.value).to_string())
                    };
                    match name.as_str() {
                        "testcase" => {
                            current = attr("name");
                            out.push((current.clone().unwrap(), "pass"));
                        }
                        "failure" | "error" if current.is_some() => {
                            out.last_mut().unwrap().1 = if name == "failure" { "failure" } else { "error" };
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        out.sort();
        out
    };
    let live_junit = std::fs::read_to_string(fixture.join("junit.xml")).unwrap();
    let replay_junit = std::fs::read_to_string(replayed.report_dir.join("junit.xml")).unwrap();
    let live_cases = cases(&live_junit);
    assert_eq!(live_cases.len(), 6);
    assert_eq!(live_cases, cases(&replay_junit));
    assert!(
        live_cases.contains(&("restart-onfailure-then-success".into(), "failure"))
            || live_cases.contains(&("recorded::restart-onfailure-then-success".into(), "failure")),
        "{live_cases:?}"
    );
    // HTML: every case, failures first, the step failure's evidence and the harness error shown.
    let html = std::fs::read_to_string(replayed.report_dir.join("index.html")).unwrap();
    for c in &committed.cases {
        assert!(html.contains(&c.case), "{} missing from the HTML", c.case);
    }
    assert!(
        html.contains("timed out after 2s"),
        "the live waitFor timeout is in the report"
    );
    assert!(html.contains("500"), "the server error is in the report");
    let first_fail = html.find("oom-killed").unwrap();
    let first_pass = html.find("restart-never-success").unwrap();
    assert!(first_fail < first_pass, "failures first");
}

/// `podlife rejudge <run> --suites <suites> --reports <reports>`.
fn rejudge(run: &Path, suites: &Path, reports: &Path) -> Command {
    let mut c = podlife();
    c.arg("rejudge")
        .arg(run)
        .arg("--suites")
        .arg(suites)
        .arg("--reports")
        .arg(reports);
    c
}

fn podlife() -> Command {
    let mut c = Command::cargo_bin("podlife").unwrap();
    // Replays never touch a cluster; make sure none could be reached.
    c.env("KUBECONFIG", "/nonexistent/kubeconfig");
    c
}

#[test]
fn damaged_recordings_are_one_clear_error_not_a_panic() {
    let fixture = root().join(FIXTURE_RUN);
    let attempt = "recordings/recorded__restart-never-fail/attempt-1";
    type Damage = fn(&Path);
    let damages: Vec<(&str, Damage, &str)> = vec![
        (
            "truncated watch line",
            |d| {
                let p = d.join("pods.watch.jsonl");
                let text = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, &text[..text.len() - 40]).unwrap();
            },
            "pods.watch.jsonl: line",
        ),
        (
            "no closing line",
            |d| {
                let p = d.join("actions.jsonl");
                let text = std::fs::read_to_string(&p).unwrap();
                let kept: Vec<&str> = text.lines().filter(|l| !l.contains("recording-complete")).collect();
                std::fs::write(&p, kept.join("\n")).unwrap();
            },
            "recording incomplete",
        ),
        (
            "a lost log file",
            |d| {
                let logs = d.join("logs");
                for e in std::fs::read_dir(&logs).unwrap().flatten() {
                    if e.file_name() != "index.jsonl" {
                        std::fs::remove_file(e.path()).unwrap();
                    }
                }
            },
            "cannot read",
        ),
        (
            "a dropped pod event",
            |d| {
                let p = d.join("pods.watch.jsonl");
                let text = std::fs::read_to_string(&p).unwrap();
                let kept: Vec<&str> = text.lines().skip(1).collect();
                std::fs::write(&p, kept.join("\n") + "\n").unwrap();
            },
            "damaged recording",
        ),
        (
            "an index entry pointing outside",
            |d| {
                std::fs::write(
                    d.join("logs/index.jsonl"),
                    "{\"kind\":\"lines\",\"container\":\"main\",\"instance\":0,\"file\":\"../../../../summary.json\"}\n",
                )
                .unwrap();
            },
            "not a plain file name",
        ),
    ];
    for (what, damage, expect) in damages {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        copy_dir(&fixture, &run);
        damage(&run.join(attempt));
        for sub in [vec!["run", "--replay"], vec!["rejudge"]] {
            let out = podlife()
                .args(&sub)
                .arg(&run)
                .arg("--suites")
                .arg(fixture.join("suites"))
                .arg("--reports")
                .arg(dir.path().join("out"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what} ({sub:?}): {err}");
            assert!(!err.contains("panicked"), "{what}: {err}");
            let line = err.lines().find(|l| l.starts_with("error:")).unwrap_or_default();
            assert!(
                line.contains(expect) && line.contains("recorded__restart-never-fail"),
                "{what} ({sub:?}): {err}"
            );
            let reported = std::fs::read_dir(dir.path().join("out")).map_or(0, |rd| rd.count());
            assert_eq!(reported, 0, "{what}: nothing is reported from a damaged run");
        }
    }
}

#[test]
fn rejudge_with_a_changed_expectation_flips_exactly_that_verdict_and_diff_reports_it() {
    let fixture = root().join(FIXTURE_RUN);
    let original = read_summary(&fixture);
    let dir = tempfile::tempdir().unwrap();
    // The same suites, one expectation changed: restart-never-fail now expects exit code 8.
    let suites = dir.path().join("suites");
    copy_dir(&fixture.join("suites"), &suites);
    let file = suites.join("record.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let changed = text.replace("exitCode: 7,", "exitCode: 8,");
    assert_ne!(text, changed);
    std::fs::write(&file, changed).unwrap();

    let out = dir.path().join("rejudged");
    let r = rejudge(&fixture, &suites, &out).output().unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        stdout.contains("recorded::restart-never-fail") && stdout.contains("REGRESSION"),
        "{stdout}"
    );
    let new_run = only_run(&out);
    let rejudged = read_summary(&new_run);
    // Against the same run re-judged by this build with its own suites (evidence wording may
    // have changed since the fixture was recorded; the changed expectation is all that differs).
    let baseline = rejudge_with_own_suites(&fixture, &dir.path().join("same"));
    let (a, b) = (verdicts(&baseline), verdicts(&rejudged));
    let differing: Vec<&String> = a.iter().zip(&b).filter(|(x, y)| x != y).map(|(x, _)| &x.0).collect();
    assert_eq!(differing, vec!["recorded::restart-never-fail"]);
    let before = &baseline
        .cases
        .iter()
        .find(|c| c.case == "restart-never-fail")
        .unwrap()
        .attempts[0];
    let after = &rejudged
        .cases
        .iter()
        .find(|c| c.case == "restart-never-fail")
        .unwrap()
        .attempts[0];
    let flipped: Vec<usize> = before
        .verdicts
        .iter()
        .zip(&after.verdicts)
        .filter(|(x, y)| x.outcome != y.outcome)
        .map(|(x, _)| x.index)
        .collect();
    assert_eq!(flipped, vec![1], "only the changed expectation flips");
    assert!(
        after.verdicts[1].evidence.contains('7'),
        "{}",
        after.verdicts[1].evidence
    );

    // `diff` across the original and the re-judged run reports exactly that flip.
    let d = podlife()
        .arg("diff")
        .arg(&fixture)
        .arg(&new_run)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(d.status.code(), Some(1));
    let d: serde_json::Value = serde_json::from_slice(&d.stdout).unwrap();
    let flips: Vec<(String, u64)> = d["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c["verdictFlips"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |f| (c["case"].as_str().unwrap().to_string(), f["index"].as_u64().unwrap()))
        })
        .collect();
    assert_eq!(flips, vec![("recorded::restart-never-fail".to_string(), 1)], "{d:#}");

    // With the run's own suites no outcome changes.
    assert_eq!(outcomes(&original), outcomes(&baseline));
}

/// `rejudge` of a run with the suites it holds; checks `diff` says nothing flipped.
fn rejudge_with_own_suites(run: &Path, reports: &Path) -> RunSummary {
    let r = rejudge(run, &run.join("suites"), reports).output().unwrap();
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("no verdict changed"),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    read_summary(&only_run(reports))
}

#[test]
fn bundle_is_replayed_and_rejudged_directly_and_unsafe_archives_are_refused() {
    let fixture = root().join(FIXTURE_RUN);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("recorded1");
    copy_dir(&fixture, &run);
    let bundle = podlife::run::bundle::write(&run).unwrap();
    assert_eq!(bundle, dir.path().join("recorded1.tar.gz"));
    std::fs::remove_dir_all(&run).unwrap();
    let out = dir.path().join("rejudged");
    rejudge(&bundle, &fixture.join("suites"), &out).assert().code(1);
    assert_eq!(
        outcomes(&read_summary(&fixture)),
        outcomes(&read_summary(&only_run(&out)))
    );
    // diff reads bundles too.
    podlife()
        .arg("diff")
        .arg(&bundle)
        .arg(only_run(&out))
        .assert()
        .code(0)
        .stdout(predicates::str::contains("no verdict changed"));

    // Not a bundle of a run: one line, exit 2.
    let junk = dir.path().join("junk.tar.gz");
    std::fs::write(&junk, b"\x1f\x8b not really gzip").unwrap();
    let r = podlife().args(["run", "--replay"]).arg(&junk).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("junk.tar.gz"));
}

#[test]
fn rejudge_of_a_run_without_recordings_judges_its_timelines() {
    let fixture = root().join(FIXTURE_RUN);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_dir(&fixture, &run);
    std::fs::remove_dir_all(run.join("recordings")).unwrap();
    let out = dir.path().join("out");
    rejudge(&run, &fixture.join("suites"), &out).assert().code(1);
    let (a, b) = (read_summary(&fixture), read_summary(&only_run(&out)));
    // Judged on the stored timeline of the last attempt: same outcomes where the expectations
    // decided the case (a live step failure or harness error is not in a timeline).
    for case in [
        "restart-never-success",
        "restart-never-fail",
        "sigterm-handled",
        "oom-killed",
    ] {
        let x = a.cases.iter().find(|c| c.case == case).unwrap().last().unwrap();
        let y = b.cases.iter().find(|c| c.case == case).unwrap().last().unwrap();
        let o = |a: &podlife::results::Attempt| -> Vec<_> {
            a.verdicts.iter().map(|v| (v.index, v.kind, v.outcome)).collect()
        };
        assert_eq!(o(x), o(y), "{case}");
    }
}

#[test]
fn images_load_prints_kind_and_k3s_lines() {
    let out = podlife()
        .args(["images", "--suites", FIXTURE_SUITE, "--load", "kind"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "docker pull busybox:1.36 && kind load docker-image busybox:1.36\n"
    );
    let out = podlife()
        .args(["images", "--suites", FIXTURE_SUITE, "--load", "k3s"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "docker pull busybox:1.36 && docker save busybox:1.36 | sudo k3s ctr images import -\n"
    );
}

/// Regenerates the committed fixture run (`cargo test --test runs -- --ignored
/// record_replay::regenerate`): the fixture suite recorded live against the in-process API server.
#[test]
#[ignore = "regenerates tests/fixtures/runs/recorded1"]
fn regenerate_recorded_run_fixture() {
    let reports = root().join("tests/fixtures/runs");
    let _ = std::fs::remove_dir_all(reports.join("recorded1"));
    let out = record_live(&reports, "recorded1");
    for e in std::fs::read_dir(&reports).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("console-") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    assert!(out.report_dir.join("recordings/run.json").is_file());
}

/// The recorder writes every kind of input the observer takes (pod and Event watch lines, log
/// lines of every instance, actions, evidence gaps and their end) so that reading the recording
/// back rebuilds the very same timeline, on a real crash-looping recording.
#[test]
fn recorder_round_trips_every_input_kind_to_the_same_timeline() {
    use podlife::observe::{EvidenceSource, Gap, Input, Observer, Recording};
    use podlife::run::record::Recorder;
    let rec = Recording::read(&root().join("tests/fixtures/recordings/restart-always-crashloop")).unwrap();
    let mut inputs = rec.inputs.clone();
    let at = |i: usize| inputs[i].order_key().unwrap();
    let (from, to) = (at(10), at(20));
    inputs.insert(
        10,
        Input::Gap(Gap {
            source: EvidenceSource::Events,
            from: Some(from),
            to: None,
            back: None,
            clock: Default::default(),
            reason: "503 ServiceUnavailable".into(),
        }),
    );
    inputs.insert(
        21,
        Input::SourceUp {
            source: EvidenceSource::Events,
            at: to,
        },
    );
    assert!(inputs.iter().any(|i| matches!(i, Input::Log { received: None, .. })));
    let dir = tempfile::tempdir().unwrap();
    let case_dir = dir.path().join("s__restart-always-crashloop");
    let recorder = std::sync::Arc::new(std::sync::Mutex::new(
        Recorder::create(&case_dir, 1, "s::restart-always-crashloop", "ns").unwrap(),
    ));
    recorder
        .lock()
        .unwrap()
        .manifest(&serde_json::json!({"metadata": {"name": "restart-always-crashloop"}}));
    let mut obs = Observer::new(Some("restart-always-crashloop"), "live");
    obs.set_tap(Recorder::tap(&recorder));
    for i in inputs {
        obs.push(i);
    }
    let live = obs.finish();
    assert_eq!(live.gaps.len(), 1, "the gap and its end are observed");
    let recorder = std::sync::Arc::try_unwrap(recorder).ok().unwrap().into_inner().unwrap();
    let attempt = podlife::results::Attempt {
        status: podlife::results::AttemptStatus::Passed,
        verdicts: vec![],
        error: None,
        started: jiff::Timestamp::now(),
        duration_s: 0.0,
        api_requests: 0,
        cleanup: Default::default(),
        node_load: None,
        timeline: None,
    };
    let written = recorder.finish(&attempt).unwrap();
    let replayed = Recording::read(&written).unwrap().timeline();
    assert_eq!(timeline_json(&live), timeline_json(&replayed));
}

/// `podlife run --replay BUNDLE` from an empty folder: no checkout, no `suites/` beside it.
fn replay_elsewhere(bundle: &Path) -> (std::process::Output, RunSummary) {
    let empty = tempfile::tempdir().unwrap();
    let copy = empty.path().join(bundle.file_name().unwrap());
    std::fs::copy(bundle, &copy).unwrap();
    let out = Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(empty.path())
        .args(["run", "--quiet", "--replay"])
        .arg(&copy)
        .args(["--reports", "out"])
        .output()
        .unwrap();
    // The bundle is unpacked into a temporary folder that is gone once podlife ends: nothing
    // printed or written names it; its members are named `<bundle>:<member>`.
    let mut texts = vec![
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ];
    let mut todo = vec![empty.path().join("out")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let Ok(t) = std::fs::read_to_string(&p) {
                texts.push(format!("{}: {t}", p.display()));
            }
        }
    }
    for t in &texts {
        assert!(!t.contains("podlife-bundle-"), "names the unpacked folder: {t}");
    }
    let summary = read_summary(&only_run(&empty.path().join("out")));
    let member = format!("{}:", copy.display());
    for c in &summary.cases {
        assert!(c.suite_file.starts_with(&member), "{}", c.suite_file);
    }
    (out, summary)
}

/// A bundle of a live run of this podlife (object steps that apply and delete manifests only
/// those steps read) replays from an empty folder with the suites it kept, and every case ends
/// as it did live: 4 passed.
#[test]
fn a_fresh_bundle_replays_from_an_empty_folder_as_it_ran() {
    let (out, summary) = replay_elsewhere(&root().join("tests/fixtures/fresh-bundle/1fgoa4i5.tar.gz"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("replaying with the run's own suites"), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let statuses: Vec<(&str, CaseStatus)> = summary.cases.iter().map(|c| (c.case.as_str(), c.status)).collect();
    assert_eq!(statuses.len(), 4, "{statuses:?}");
    assert!(statuses.iter().all(|(_, s)| *s == CaseStatus::Passed), "{statuses:?}");
}

/// A bundle whose suites break a rule added since (a step budget) and lack manifests only a
/// live apply reads still replays with its own suites, from any folder: the rules are warnings
/// there, never a reason to judge it with other suites, and no case of that conformant run fails.
#[test]
fn an_old_bundle_replays_with_its_own_suites() {
    let (out, summary) = replay_elsewhere(&root().join("tests/fixtures/live-bundles/A1-8pgadlfn/8pgadlfn.tar.gz"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(
        err.contains("replaying with the run's own suites")
            && err.contains("rules of this podlife that only guard live runs")
            && !err.contains("do not load"),
        "{err}"
    );
    // The warning names the suite file as a member of the bundle.
    assert!(err.contains("8pgadlfn.tar.gz:8pgadlfn/suites/"), "{err}");
    assert_eq!(summary.cases.len(), 117);
    for c in &summary.cases {
        assert!(
            matches!(c.status, CaseStatus::Passed | CaseStatus::Undecided),
            "{}: {:?}",
            c.case,
            c.status
        );
    }
}

/// Verdicts are matched across runs by what they judge, not by their place in the list: an
/// expectation inserted in front of the others is a new verdict (the case now fails), and no
/// verdict that was there before is reported as flipped.
#[test]
fn an_inserted_expectation_flips_no_other_verdict() {
    let fixture = root().join(FIXTURE_RUN);
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    copy_dir(&fixture.join("suites"), &suites);
    let file = suites.join("record.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let inserted = text.replacen(
        "      - phases: [Pending, Running, Failed]\n",
        "      - log: {container: main, regex: '^never printed$'}\n      - phases: [Pending, Running, Failed]\n",
        1,
    );
    assert_ne!(text, inserted);
    std::fs::write(&file, inserted).unwrap();
    let before = rejudge(&fixture, &fixture.join("suites"), &dir.path().join("own"))
        .output()
        .unwrap();
    assert!(before.status.code().is_some());
    rejudge(&fixture, &suites, &dir.path().join("inserted"))
        .output()
        .unwrap();
    let (a, b) = (
        only_run(&dir.path().join("own")),
        only_run(&dir.path().join("inserted")),
    );
    let d = podlife()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let d: serde_json::Value = serde_json::from_slice(&d.stdout).unwrap();
    let case = d["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "recorded::restart-never-fail")
        .unwrap_or_else(|| panic!("{d:#}"));
    assert_eq!(case["verdictFlips"].as_array().map_or(0, Vec::len), 0, "{case:#}");
    assert!(case.to_string().contains("failed"), "{case:#}");
}
