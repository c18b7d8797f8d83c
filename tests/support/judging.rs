//! `judge`: a one-case suite judged on a real recording (tests/fixtures/recordings), with the
//! `pass` / `fails_with` checks of its verdicts and the suite-building helpers behind it.

use std::path::{Path, PathBuf};

use podlife::judge::{Outcome, Verdict, judge_case};
use podlife::observe::Recording;
use podlife::suite::LoadedCase;

/// The project root (where `suites/` and `tests/fixtures/` are).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The recording `name` in tests/fixtures/recordings.
/// The built-in case `full` (`suite::case`) from `suites/`, as the project ships it.
pub fn builtin(full: &str) -> LoadedCase {
    podlife::suite::load_suites(&[root().join("suites")])
        .unwrap_or_else(|e| panic!("{e:?}"))
        .into_iter()
        .flat_map(|s| s.cases)
        .find(|c| c.full_name() == full)
        .unwrap_or_else(|| panic!("no case {full}"))
}

pub fn rec(name: &str) -> PathBuf {
    root().join("tests/fixtures/recordings").join(name)
}

/// `s` trimmed, each line indented by `n` spaces (to nest YAML).
pub fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.trim()
        .lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A one-case suite (case `c`) on `manifest` with `marks`, `steps` and `expect` (YAML,
/// unindented; empty `steps` / `marks` are written as empty collections).
pub fn suite_yaml(manifest: &Path, steps: &str, marks: &str, expect: &str) -> String {
    format!(
        "name: t\ncases:\n  - name: c\n    manifest: {}\n    steps:\n{}\n    marks:\n{}\n    expect:\n{}\n",
        manifest.display(),
        indent(if steps.trim().is_empty() { "[]" } else { steps }, 6),
        indent(if marks.trim().is_empty() { "{}" } else { marks }, 6),
        indent(expect, 6)
    )
}

/// The first case of suite `yaml` (written to a temporary file and loaded); panics with the
/// suite and the errors when it does not load.
pub fn load(yaml: &str) -> LoadedCase {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.yaml");
    std::fs::write(&path, yaml).unwrap();
    let suites = podlife::suite::load_suites(&[path]).unwrap_or_else(|e| panic!("{yaml}\n{e:?}"));
    suites[0].cases[0].clone()
}

/// Judges `expect` (YAML list items) with `marks` on recording `name`.
pub fn judge(name: &str, marks: &str, expect: &str) -> Vec<Verdict> {
    let case = load(&suite_yaml(&rec(name).join("manifest.yaml"), "", marks, expect));
    let tl = Recording::read(&rec(name)).unwrap().timeline();
    judge_case(&case.spec, &tl)
}

#[track_caller]
pub fn pass(v: &Verdict) {
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.evidence);
}

/// A failure whose evidence names `measured`.
#[track_caller]
pub fn fails_with(v: &Verdict, measured: &str) {
    assert_eq!(v.outcome, Outcome::Fail, "expected a failure: {}", v.evidence);
    assert!(
        v.evidence.contains(measured),
        "evidence should name `{measured}`: {}",
        v.evidence
    );
}

/// Case `case` of the built-in suite file `suite` (a path under suites/) with `from` replaced by
/// `to` once inside that case's block, which must hold `from` exactly once: a deliberately wrong
/// expectation to judge on real data. The suite is loaded from a temporary folder in which
/// `manifests/` is the project's.
pub fn mutated_case(suite: &str, case: &str, from: &str, to: &str) -> LoadedCase {
    let text = std::fs::read_to_string(root().join("suites").join(suite)).unwrap();
    let start = text
        .find(&format!("  - name: {case}\n"))
        .unwrap_or_else(|| panic!("no case {case}"));
    let end = text[start + 10..]
        .find("\n  - name: ")
        .map_or(text.len(), |i| start + 10 + i);
    let block = &text[start..end];
    assert_eq!(block.matches(from).count(), 1, "`{from}` must occur once in {case}");
    let mutated = format!("{}{}{}", &text[..start], block.replacen(from, to, 1), &text[end..]);
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("manifests"), dir.path().join("manifests")).unwrap();
    let path = dir.path().join(Path::new(suite).file_name().unwrap());
    std::fs::write(&path, mutated).unwrap();
    let suites = podlife::suite::load_suites(&[path]).unwrap_or_else(|e| panic!("{e:?}"));
    suites[0].cases.iter().find(|c| c.name() == case).unwrap().clone()
}
