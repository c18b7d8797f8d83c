//! `diff`: `podlife diff` run as a user would, for the tests of report comparison.

use std::path::Path;

use assert_cmd::Command;

/// `podlife diff <before> <after> <extra>` from the project root (so the built-in suites
/// describe older reports): its exit code and stdout.
pub fn diff(before: &Path, after: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("diff")
        .arg(before)
        .arg(after)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}
