//! Upstream-parity cases on their own live recordings: each passes, and the recording edited
//! into what a node broken for that behaviour would show fails the case, naming what is wrong.

use std::path::{Path, PathBuf};

use podlife::judge::Outcome;
use podlife::results::AttemptStatus;
use podlife::run::case::replay_case;

use crate::support::judging::{builtin, root};

fn recording(case: &str) -> PathBuf {
    root().join("tests/fixtures/parity-recordings").join(case)
}

/// The recording of `case` with every log line of `container` for which `edit` answers
/// `Some(new)` replaced (an empty `new` leaves an empty line: the recording keeps its sequence
/// of inputs whole, as a reader checks), in a temporary copy.
fn edited(case: &str, container: &str, edit: impl Fn(&str) -> Option<String>) -> tempfile::TempDir {
    let file = format!("logs/{container}.0.jsonl");
    let (dir, changed) = crate::support::files::copy_with_edited_lines(&recording(case), &file, |v| {
        let line = v["line"].as_str().unwrap().to_string();
        let (stamp, content) = line.split_once(' ').unwrap();
        let Some(new) = edit(content) else { return false };
        v["line"] = format!("{stamp} {new}").into();
        true
    });
    assert!(changed > 0, "the edit of {case}/{container} changed nothing");
    dir
}

fn failing_evidence(full: &str, dir: &Path) -> Vec<String> {
    let a = replay_case(&builtin(full), dir);
    assert_eq!(
        a.status,
        AttemptStatus::Failed,
        "{full} must fail on {}: {:?}",
        dir.display(),
        a.error
    );
    a.verdicts
        .iter()
        .filter(|v| v.outcome == Outcome::Fail)
        .map(|v| v.evidence.clone())
        .collect()
}

#[track_caller]
fn named(evidence: &[String], needle: &str) {
    assert!(
        evidence.iter().any(|e| e.contains(needle)),
        "`{needle}` not in {evidence:#?}"
    );
}

#[test]
fn parity_cases_pass_on_their_recordings() {
    for case in [
        "secret-volume-other-ns",
        "configmap-env-prefixes",
        "projected-cm-modes",
        "projected-secret-modes",
        "exec-websocket",
        "logs-websocket",
        "image-volume",
    ] {
        let suite = if case.ends_with("-websocket") {
            "upstream-pods"
        } else if case == "image-volume" {
            "upstream-image-volume"
        } else {
            "upstream-objects"
        };
        let full = format!("{suite}::{case}");
        let a = replay_case(&builtin(&full), &recording(case));
        let bad: Vec<_> = a.verdicts.iter().filter(|v| v.outcome != Outcome::Pass).collect();
        assert_eq!(a.status, AttemptStatus::Passed, "{full}: {:?} {bad:#?}", a.error);
    }
}

#[test]
fn a_volume_of_the_other_namespaces_secret_fails() {
    // A node that resolves the Secret by name in the wrong namespace mounts the other one.
    let d = edited("secret-volume-other-ns", "keys", |l| {
        l.starts_with("data-").then(|| {
            if l == "data-1" {
                "this_should_not_match_content_of_other_secret"
            } else {
                ""
            }
            .to_string()
        })
    });
    named(
        &failing_evidence("upstream-objects::secret-volume-other-ns", d.path()),
        "data-1",
    );
    let d = edited("secret-volume-other-ns", "default", |l| {
        l.starts_with("content of file")
            .then(|| r#"content of file "/etc/secret-volume/data-1": similarly_this_should_not_match_content_of_other_secret"#.into())
    });
    named(
        &failing_evidence("upstream-objects::secret-volume-other-ns", d.path()),
        "value-1",
    );
}

#[test]
fn a_runtime_dropping_names_a_shell_cannot_use_fails() {
    // Prefixes outside C identifiers (`1-`, `$_-`, `#@!`) lost on the way to the process.
    let d = edited("configmap-env-prefixes", "env-test", |l| {
        ["1-", "$_-", "#@!"].iter().any(|p| l.starts_with(p)).then(String::new)
    });
    let e = failing_evidence("upstream-objects::configmap-env-prefixes", d.path());
    named(&e, "1-data-1=value-1");
    named(&e, "#@!data-3=value-3");
}

#[test]
fn a_default_mode_ignored_for_mapped_items_fails() {
    // A kubelet that applies a projected volume's defaultMode to whole sources only writes a
    // mapped item (no mode of its own) 0644.
    for (case, path) in [
        ("projected-cm-modes", "/etc/projected-configmap-volume/path/to/data-2"),
        ("projected-secret-modes", "/etc/projected-secret-volume/new-path-data-1"),
    ] {
        let d = edited(case, "mapped-default-mode", |l| {
            l.starts_with("mode of file")
                .then(|| format!(r#"mode of file "{path}": -rw-r--r--"#))
        });
        named(
            &failing_evidence(&format!("upstream-objects::{case}"), d.path()),
            "-r--------",
        );
    }
}

/// The recording's `actions.jsonl` with `edit` applied to the exec result of the action whose
/// exec is named `name`, in a temporary copy.
fn edited_exec(case: &str, name: &str, edit: impl Fn(&mut serde_json::Value)) -> tempfile::TempDir {
    let (dir, changed) = crate::support::files::copy_with_edited_lines(&recording(case), "actions.jsonl", |v| {
        let ours = v["exec"]["name"] == name;
        if ours {
            edit(&mut v["exec"]);
        }
        ours
    });
    assert_eq!(changed, 1, "{case}: one exec `{name}`");
    dir
}

#[test]
fn a_node_whose_streaming_websockets_misbehave_fails() {
    // A streaming server that loses the command's output on the websocket path.
    let d = edited_exec("exec-websocket", "echo", |x| x["stdout"] = "".into());
    named(
        &failing_evidence("upstream-pods::exec-websocket", d.path()),
        "remote execution test",
    );
    // Output on the wrong channel (stderr).
    let d = edited_exec("exec-websocket", "echo", |x| {
        x["stderr"] = x["stdout"].clone();
        x["stdout"] = "".into();
    });
    failing_evidence("upstream-pods::exec-websocket", d.path());
    // A log served with the runtime's timestamps the user did not ask for, or cut.
    for wrong in ["2026-12-04T16:49:28.111Z container is alive\n", "container is al"] {
        let d = edited_exec("logs-websocket", "logs", |x| x["stdout"] = wrong.into());
        named(
            &failing_evidence("upstream-pods::logs-websocket", d.path()),
            "container is alive",
        );
    }
}

#[test]
fn a_runtime_that_mounts_no_image_or_a_writable_one_fails() {
    let full = "upstream-image-volume::image-volume";
    // The image's files missing from the mount point (a runtime that mounts an empty directory).
    for (name, file) in [("data", "data.json"), ("os-release", "etc/os-release")] {
        let d = edited_exec("image-volume", name, |x| {
            x["stdout"] = "".into();
            x["stderr"] = format!("cat: can't open '/volume/{file}': No such file or directory\n").into();
            x["exitCode"] = 1.into();
        });
        named(&failing_evidence(full, d.path()), &format!("exec `{name}`"));
    }
    // Another image's root mounted (the container's own busybox, not the volume's).
    let d = edited_exec("image-volume", "os-release", |x| {
        x["stdout"] = "NAME=Debian\n".into();
    });
    named(&failing_evidence(full, d.path()), "Alpine Linux");
    // A volume mounted writable: the write succeeds.
    let d = edited_exec("image-volume", "write", |x| {
        x["stderr"] = "".into();
        x["exitCode"] = 0.into();
    });
    named(&failing_evidence(full, d.path()), "exec `write`");
}

/// The volume's image on a registry the node cannot reach (the case's default reference on a
/// node without Internet access): the pull is the registry's, so the attempt is an error that
/// names the image and the kubelet's reason, and says what an image volume needs, never a
/// verdict on the node. Judged from its evidence (the recorded error removed), as live.
#[test]
fn an_image_volume_the_node_cannot_pull_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::files::copy_dir(&recording("image-volume-unreachable"), dir.path());
    let actions = dir.path().join("actions.jsonl");
    let text = std::fs::read_to_string(&actions).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(r#"{"action":"error""#))
        .collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "one recorded error");
    std::fs::write(&actions, kept.join("\n") + "\n").unwrap();
    let a = replay_case(&builtin("upstream-image-volume::image-volume"), dir.path());
    assert_eq!(a.status, AttemptStatus::Error, "{:#?}", a.verdicts);
    let e = a.error.unwrap_or_default();
    assert!(
        e.contains("registry.k8s.io/e2e-test-images/kitten:1.7")
            && e.contains("container test-container could not be pulled")
            && e.contains("pullPolicy Always")
            && e.contains("no verdict on the node"),
        "{e}"
    );
}
