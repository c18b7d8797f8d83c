//! Snapshots of `podlife schema` and of `podlife list` on the fixed suite in
//! `tests/list-fixture/suites/list.yaml`.

use assert_cmd::Command;

const SUITES: &str = "tests/list-fixture/suites";

/// Runs podlife from the package root; asserts success and an empty stderr; returns stdout.
fn podlife(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_podlife"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(args)
        .output()
        .expect("podlife runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "podlife {args:?} failed: {:?}\n{stderr}",
        out.status
    );
    assert_eq!(stderr, "", "podlife {args:?} wrote to stderr");
    stdout
}

fn list(args: &[&str]) -> String {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--suites", SUITES]);
    podlife(&all)
}

#[test]
fn schema() {
    let out = podlife(&["schema"]);
    // The output is JSON; snapshot the text as printed.
    serde_json::from_str::<serde_json::Value>(&out).expect("schema is JSON");
    insta::assert_snapshot!("schema", out);
}

#[test]
fn list_all() {
    insta::assert_snapshot!("list_all", list(&[]));
}

#[test]
fn list_filter_substring() {
    insta::assert_snapshot!("list_filter_restart_never", list(&["restart-never"]));
}

#[test]
fn list_exact() {
    insta::assert_snapshot!(
        "list_exact_restart_always",
        list(&["--exact", "lifecycle::restart-always"])
    );
}

#[test]
fn list_exact_does_not_match_substrings() {
    insta::assert_snapshot!("list_exact_substring", list(&["--exact", "restart"]));
}

#[test]
fn list_skip() {
    insta::assert_snapshot!("list_skip_never", list(&["--skip", "never"]));
}

#[test]
fn list_filter_and_repeated_skip() {
    insta::assert_snapshot!(
        "list_filter_restart_skip_failure_always",
        list(&["restart", "--skip", "failure", "--skip", "always"])
    );
}
