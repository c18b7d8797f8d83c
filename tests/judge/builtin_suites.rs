//! The built-in suites on the real recordings: every case that has a recording passes on it
//! (through the same replay path as `podlife run --replay`), and for each area a mutated
//! expectation fails on the same recording.

use std::path::PathBuf;

use podlife::judge::Outcome;
use podlife::results::AttemptStatus;
use podlife::run::case::replay_case;

use crate::support::judging::mutated_case;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn recordings() -> PathBuf {
    root().join("tests/fixtures/recordings")
}

#[test]
fn suites_validate_and_every_case_is_described() {
    let suites = podlife::suite::load_suites(&[root().join("suites")]).unwrap_or_else(|e| panic!("{e:?}"));
    let cases: Vec<_> = suites.iter().flat_map(|s| &s.cases).collect();
    // Exactly the built-in cases (README and docs/suites.md state the number).
    assert_eq!(cases.len(), 155, "{}", cases.len());
    for c in &cases {
        assert!(!c.spec.description.is_empty(), "{} has no description", c.full_name());
        assert!(c.spec.reference.is_some(), "{} has no reference", c.full_name());
    }
    let names: Vec<&str> = suites.iter().map(|s| s.name()).collect();
    for area in [
        "restart-policy",
        "init-containers",
        "sidecars",
        "hooks",
        "termination",
        "downward-api",
        "emptydir",
        "probes",
        "status",
    ] {
        assert!(names.contains(&area), "no suite for {area}: {names:?}");
    }
}

#[test]
fn every_recorded_case_passes_on_its_recording() {
    let suites = podlife::suite::load_suites(&[root().join("suites")]).unwrap();
    let mut covered = 0;
    let mut failures = vec![];
    for c in suites.iter().flat_map(|s| &s.cases) {
        let dir = recordings().join(c.name());
        if !dir.is_dir() {
            continue;
        }
        covered += 1;
        let a = replay_case(c, &dir);
        if a.status != AttemptStatus::Passed {
            let bad: Vec<_> = a
                .verdicts
                .iter()
                .filter(|v| v.outcome != Outcome::Pass)
                .map(|v| v.evidence.clone())
                .collect();
            failures.push(format!("{}: {:?} {:?} {bad:#?}", c.full_name(), a.status, a.error));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // 30 recordings of their own plus 7 status-* recordings and 8 status-table cases that replay another case's recording through a symlink.
    assert_eq!(covered, 45, "every recording has a built-in case");
}

/// Replaces `from` by `to` once inside case `case` of `suite`, replays the case on its
/// recording and returns the failing evidence.
fn mutated(suite: &str, case: &str, from: &str, to: &str) -> Vec<String> {
    let c = &mutated_case(suite, case, from, to);
    let a = replay_case(c, &recordings().join(case));
    assert_eq!(
        a.status,
        AttemptStatus::Failed,
        "the mutation `{from}` → `{to}` must fail {case}"
    );
    a.verdicts
        .iter()
        .filter(|v| v.outcome != Outcome::Pass)
        .map(|v| v.evidence.clone())
        .collect()
}

#[track_caller]
fn assert_named(evidence: &[String], needle: &str) {
    assert!(
        evidence.iter().any(|e| e.contains(needle)),
        "expected `{needle}` in {evidence:#?}"
    );
}

#[test]
fn termination_grace_5s_expected_10s_fails() {
    let e = mutated(
        "termination.yaml",
        "sigterm-ignored",
        "{from: term, to: kill, min: 4750ms, max: 5500ms, allow: [tick, signal]}",
        "{from: term, to: kill, min: 9750ms, max: 10500ms, allow: [tick, signal]}",
    );
    assert_named(&e, "measured 4.832s");
}

#[test]
fn restart_policy_wrong_restart_count_fails() {
    let e = mutated(
        "restart-policy.yaml",
        "restart-never-fail",
        "exitCode: 7, reason: Error, restartCount: 0",
        "exitCode: 7, reason: Error, restartCount: 1",
    );
    assert_named(&e, "restartCount: expected exactly 1, observed 0");
}

#[test]
fn restart_policy_backoff_without_sync_slack_fails() {
    let e = mutated(
        "restart-policy.yaml",
        "restart-always-crashloop",
        "firstImmediate: true, jitter: 0.5, jitterCap: 1m, late: 3s",
        "firstImmediate: true, late: 1s",
    );
    assert_named(&e, "= 14s not in 10s..11s");
}

#[test]
fn init_containers_reversed_order_fails() {
    let e = mutated(
        "init-containers.yaml",
        "init-ordering",
        "order: [init1Start, init2Start,",
        "order: [init2Start, init1Start,",
    );
    assert_named(&e, "but `init2Start` came");
}

#[test]
fn sidecar_stopped_before_the_app_fails() {
    let e = mutated(
        "sidecars.yaml",
        "sidecar-native",
        "order: [sidecarStart, mainStart, mainDone, sidecarTerm]",
        "order: [sidecarStart, mainStart, sidecarTerm, mainDone]",
    );
    assert_named(&e, "but `sidecarTerm` came");
}

#[test]
fn hooks_prestop_not_counted_against_grace_fails() {
    let e = mutated(
        "hooks.yaml",
        "prestop-exceeds-grace",
        "{from: deleteSent, to: kill, min: 5900ms, max: 8500ms, allow: [reaction, signal]}",
        "{from: deleteSent, to: kill, min: 3900ms, max: 4700ms, allow: [reaction, signal]}",
    );
    assert_named(&e, "measured 5.845s");
}

#[test]
fn probes_readiness_without_unready_fails() {
    let e = mutated(
        "probes.yaml",
        "probe-readiness-exec",
        "condition: {type: Ready, sequence: [False, True, False]}",
        "condition: {type: Ready, sequence: [False, True]}",
    );
    assert_named(&e, "observed [False → True → False]");
}

#[test]
fn downward_api_wrong_pod_field_fails() {
    let e = mutated(
        "downward-api.yaml",
        "downward-api-env",
        "regex: '^POD_IP=${pod.ip}$'",
        "regex: '^POD_IP=${host.ip}$'",
    );
    assert_named(&e, "observed 0");
}

#[test]
fn emptydir_memory_not_tmpfs_fails() {
    let e = mutated(
        "emptydir.yaml",
        "emptydir-sharing",
        "regex: '^tmpfs on /mem type tmpfs \\(.*size=16384k'",
        "regex: '^tmpfs on /mem type tmpfs \\(.*size=32768k'",
    );
    assert_named(&e, "observed 0");
}

#[test]
fn status_oom_reason_fails_as_error() {
    let text = std::fs::read_to_string(root().join("suites/status.yaml")).unwrap();
    assert!(text.contains("reason: OOMKilled"));
    let e = mutated(
        "status.yaml",
        "oom-killed",
        "exitCode: 137, reason: OOMKilled, restartCount: 0",
        "exitCode: 137, reason: Error, restartCount: 0",
    );
    assert_named(&e, "observed OOMKilled");
}

#[test]
fn replay_run_writes_reports_and_exits_0() {
    let reports = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["run", "--replay", "tests/fixtures/recordings", "--reports"])
        .arg(reports.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let stdout = String::from_utf8_lossy(&out);
    assert!(stdout.contains("45 passed; 0 failed"), "{stdout}");
    // Only recorded cases replay, so only some upstream behaviours are certified by this run.
    assert!(
        stdout.contains(
            "upstream conformance behaviours covered: 145 of 145 listed; certified by this run: 20 (every case naming it ran and passed)"
        ),
        "{stdout}"
    );
    let run_dir = std::fs::read_dir(reports.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let xml = std::fs::read_to_string(run_dir.join("junit.xml")).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(report.failures, 0);
    assert_eq!(report.errors, 0);
    assert!(report.test_suites.len() >= 9, "{}", report.test_suites.len());
    // Cases without a recording are skipped, with the reason.
    assert!(
        xml.contains("no recording `restart-onfailure-exit0`"),
        "{}",
        &xml[..500]
    );
    // Each timeline file is judged again by `podlife judge` with the same verdict.
    let tl = run_dir.join("timelines/termination__sigterm-ignored.json");
    assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args([
            "judge",
            "--suite",
            "suites/termination.yaml",
            "--case",
            "sigterm-ignored",
        ])
        .arg(&tl)
        .assert()
        .success();
    insta::assert_snapshot!("junit_replay_termination", normalize(&xml, "termination"));
}

/// The run summary states the same covered figure as `list --upstream` whatever the filter
/// selects: the claims of every loaded case, not only of the cases that ran.
#[test]
fn a_filtered_run_states_the_same_upstream_figure() {
    let reports = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args([
            "run",
            "init-containers::init-fail-never",
            "--replay",
            "tests/fixtures/recordings",
            "--reports",
        ])
        .arg(reports.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let stdout = String::from_utf8_lossy(&out);
    assert!(
        stdout.contains(
            "upstream conformance behaviours covered: 145 of 145 listed; certified by this run: 1 (every case naming it ran and passed)"
        ),
        "{stdout}"
    );
}

#[test]
fn replay_run_with_a_failing_case_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("manifests"), dir.path().join("manifests")).unwrap();
    let text = std::fs::read_to_string(root().join("suites/status.yaml"))
        .unwrap()
        .replace("reason: OOMKilled", "reason: Error");
    std::fs::write(dir.path().join("status.yaml"), text).unwrap();
    assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .args(["run", "--suites"])
        .arg(dir.path().join("status.yaml"))
        .arg("--replay")
        .arg(recordings())
        .arg("--reports")
        .arg(dir.path().join("reports"))
        .assert()
        .code(1);
}

/// One testsuite of the JUnit XML with run-dependent values (run id, times, paths) replaced.
fn normalize(xml: &str, suite: &str) -> String {
    let start = xml.find(&format!("<testsuite name=\"{suite}\"")).unwrap();
    let end = start + xml[start..].find("</testsuite>").unwrap() + "</testsuite>".len();
    let s = &xml[start..end];
    let re_time = regex::Regex::new(r#"(time|timestamp)="[^"]*""#).unwrap();
    let re_run = regex::Regex::new(r#"name="podlife.run" value="[^"]*""#).unwrap();
    let s = re_time.replace_all(s, "$1=\"…\"");
    let s = re_run.replace_all(&s, "name=\"podlife.run\" value=\"RUNID\"");
    s.replace(&recordings().display().to_string(), "RECORDINGS")
}

#[test]
fn upstream_mapping_is_honest_and_the_readme_shows_it() {
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args(["list", "--upstream"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    // Every applicable test no case claims says why (a weaker case does not claim it).
    for l in out.lines().filter(|l| l.contains("NOT COVERED")) {
        assert!(l.contains("NOT COVERED: "), "a row not covered needs its reason: {l}");
    }
    assert!(
        !out.contains("warning:"),
        "every `upstream:` name is in the list: {out}"
    );
    // Suites claim ("covered"); only a run certifies, and the list says so.
    assert!(!out.contains("certified |"), "{out}");
    // One figure: covered of listed, the `pod` rows of the fixed list (n/a rows apart).
    let line = out
        .lines()
        .find(|l| l.starts_with("upstream conformance behaviours covered:"))
        .unwrap();
    assert_eq!(
        line,
        "upstream conformance behaviours covered: 145 of 145 listed; 26 more listed as not applicable; a run certifies those whose cases all pass"
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| upstream conformance test"))
        .collect();
    let pod_rows = rows.iter().filter(|l| !l.contains("| not applicable: ")).count();
    let covered_rows = rows.iter().filter(|l| l.ends_with("| covered |")).count();
    assert_eq!(
        (covered_rows, pod_rows, rows.len()),
        (145, 145, 171),
        "the figure counts the table's rows"
    );
    let page = std::fs::read_to_string(root().join("docs/upstream.md")).unwrap();
    assert!(
        page.contains(out.trim_end()),
        "docs/upstream.md's table is stale: run `podlife list --upstream`"
    );
}

#[test]
fn upstream_list_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("l.tsv");
    std::fs::write(&p, "# comment\nA test\tpod\nB test\tn/a\n").unwrap();
    let err = podlife::suite::upstream::read_upstream_list(&p)
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("l.tsv:3: `n/a` needs a reason"), "{err}");
    std::fs::write(&p, "A test\tmaybe\treason\n").unwrap();
    assert!(
        podlife::suite::upstream::read_upstream_list(&p)
            .unwrap_err()
            .to_string()
            .contains(":1: scope `maybe`")
    );
}

#[test]
fn run_without_a_cluster_says_what_it_tried_and_points_at_replay() {
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["run", "--context", "kind-kind"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/kubeconfig") && err.contains("context kind-kind"),
        "{err}"
    );
    assert!(err.contains("--replay"), "{err}");
}

#[test]
fn status_table_terminating_while_not_ready_fails() {
    let e = mutated("status.yaml", "status-terminating", "ready: 1/1", "ready: 0/1");
    assert_named(&e, "expected READY 0/1, observed READY 1/1");
}

#[test]
fn status_table_reordered_statuses_fail() {
    let e = mutated(
        "status.yaml",
        "status-create-container-config-error",
        "statuses: [Pending, ContainerCreating, CreateContainerConfigError]",
        "statuses: [Pending, CreateContainerConfigError, ContainerCreating]",
    );
    assert_named(
        &e,
        "expected [Pending → CreateContainerConfigError → ContainerCreating], observed [Pending → ContainerCreating → CreateContainerConfigError]",
    );
}

#[test]
fn agnhost_cases_use_upstreams_agnhost_and_images_lists_it() {
    // The agnhost cases need the image upstream's 1.36 conformance tests use; `podlife images`
    // lists it (and the lines that pre-load it), and `--image` overrides it like busybox.
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("podlife")
            .unwrap()
            .current_dir(root())
            .args(args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1";
    assert_eq!(run(&["images", "containers-agnhost"]), format!("{agnhost}\n"));
    assert_eq!(
        run(&["images", "probe-grpc-liveness-healthy", "--load", "kind"]),
        format!("docker pull {agnhost} && kind load docker-image {agnhost}\n")
    );
    assert_eq!(
        run(&[
            "images",
            "containers-agnhost",
            "--image",
            "agnhost=registry.local/agnhost:2.66.1"
        ]),
        "registry.local/agnhost:2.66.1\n"
    );
    // Every case of the full run's image list: busybox and agnhost (plus the deliberately
    // unpullable images of the image-pull cases).
    let all = run(&["images"]);
    assert!(all.lines().any(|l| l == agnhost), "{all}");
    assert!(all.lines().any(|l| l == "busybox:1.36"), "{all}");
}

#[test]
fn the_cases_of_objects_ephemeral_containers_agnhost_and_run_container_error_validate() {
    // Loading fails on any invalid case; these are the rules that guard a case's steps, each
    // with what makes it what it is.
    let suites = podlife::suite::load_suites(&[root().join("suites")]).unwrap_or_else(|e| panic!("{e:?}"));
    let find = |full: &str| {
        suites
            .iter()
            .flat_map(|s| &s.cases)
            .find(|c| c.full_name() == full)
            .unwrap_or_else(|| panic!("no case {full}"))
    };
    for (case, objects) in [
        ("upstream-objects::configmap-env", vec!["ConfigMap/configmap-test"]),
        ("upstream-objects::configmap-volume", vec!["ConfigMap/configmap-test"]),
        ("upstream-objects::secret-volume", vec!["Secret/secret-test"]),
        ("upstream-objects::secret-env-field", vec!["Secret/secret-test"]),
        ("upstream-objects::secret-env-from", vec!["Secret/secret-test"]),
        (
            "upstream-objects::pod-service-env-own-service",
            vec!["Service/fooservice"],
        ),
        (
            "upstream-objects::projected-all",
            vec!["ConfigMap/configmap-projected-all", "Secret/secret-projected-all"],
        ),
    ] {
        let ids: Vec<String> = find(case).objects.iter().map(|o| o.id()).collect();
        assert_eq!(ids, objects, "{case}");
    }
    for (case, names) in [
        ("upstream-pods::ephemeral-container-creation", vec!["debugger"]),
        (
            "upstream-pods::ephemeral-container-update",
            vec!["debugger", "debugger2"],
        ),
    ] {
        let c = find(case);
        let eph: Vec<&str> = c
            .containers
            .iter()
            .filter(|x| x.kind == podlife::suite::ContainerKind::Ephemeral)
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(eph, names, "{case}");
    }
    let agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1";
    for case in [
        "upstream-runtime::containers-agnhost-overrides",
        "upstream-runtime::containers-agnhost-defaults",
        "upstream-probes::probe-grpc-liveness-healthy",
        "upstream-objects::configmap-volume",
        "upstream-objects::secret-volume",
        "upstream-pods::ephemeral-container-update",
    ] {
        assert!(find(case).images_used(&Default::default()).contains(agnhost), "{case}");
    }
    let rce = find("status::status-run-container-error");
    assert_eq!(rce.pod["spec"]["restartPolicy"], "Always");
}

/// Every bound of the built-in suites says what it rests on: the named allowances of its chain
/// (or `allow: []`, the mechanism's own time), so `validate` and the reports can show it.
#[test]
fn every_built_in_bound_names_its_allowances() {
    let suites = podlife::suite::load_suites(&[root().join("suites")]).unwrap_or_else(|e| panic!("{e:?}"));
    let (counts, none, unsaid) = podlife::suite::allowances::usage(&suites);
    assert_eq!(unsaid, 0, "gaps without `allow`");
    assert!(
        none > 0 && counts.iter().filter(|(_, n)| *n > 0).count() >= 10,
        "{counts:?}"
    );
}
