//! Pins every verdict podlife gives on the fixtures' evidence (the single-scenario recordings
//! and every live bundle, replayed with today's suites): a restructuring must judge every one
//! identically. The pin is one line per case: its status, each verdict's kind and
//! outcome, and a digest of all evidence texts. A deliberate change of judgement re-blesses it
//! with `PODLIFE_BLESS=1 cargo test --test runs verdict_pin::` and says why in its commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pin_file() -> PathBuf {
    root().join("tests/fixtures/verdicts.pin")
}

/// `podlife run --replay SRC --suites suites` from the project folder: the summary's cases.
fn replay(src: &Path) -> Vec<serde_json::Value> {
    let reports = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .args(["run", "--quiet", "--suites", "suites", "--replay"])
        .arg(src)
        .arg("--reports")
        .arg(reports.path())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = std::fs::read_dir(reports.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    summary["cases"].as_array().unwrap().clone()
}

/// One line per case of a replay: `source case status kinds:outcomes digest`.
fn lines(source: &str, cases: &[serde_json::Value], out: &mut BTreeMap<String, String>) {
    for c in cases {
        let name = format!(
            "{}::{}{}",
            c["suite"].as_str().unwrap(),
            c["case"].as_str().unwrap(),
            c["node"].as_str().map(|n| format!("@{n}")).unwrap_or_default()
        );
        // FNV-1a, 64 bits: stable across Rust versions, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for b in bytes {
                h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        let mut outcomes = vec![];
        for a in c["attempts"].as_array().unwrap() {
            for v in a["verdicts"].as_array().unwrap() {
                outcomes.push(format!(
                    "{}:{}",
                    v["kind"].as_str().unwrap_or_default(),
                    &v["outcome"].as_str().unwrap_or_default()[..1]
                ));
                feed(v["evidence"].as_str().unwrap_or_default().as_bytes());
                feed(&[0]);
            }
            feed(a["error"].to_string().as_bytes());
        }
        let digest = format!("{h:016x}");
        out.insert(
            format!("{source} {name}"),
            format!(
                "{} {} {digest}",
                c["status"].as_str().unwrap_or_default(),
                outcomes.join(",")
            ),
        );
    }
}

#[test]
fn every_fixture_is_judged_as_pinned() {
    let mut got = BTreeMap::new();
    lines(
        "recordings",
        &replay(&root().join("tests/fixtures/recordings")),
        &mut got,
    );
    let mut bundles: Vec<PathBuf> = std::fs::read_dir(root().join("tests/fixtures/live-bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    bundles.sort();
    for d in bundles {
        let bundle = std::fs::read_dir(&d)
            .unwrap()
            .map(|f| f.unwrap().path())
            .find(|f| f.to_str().unwrap().ends_with(".tar.gz"))
            .unwrap();
        let folder = d.file_name().unwrap().to_str().unwrap().to_string();
        lines(&folder, &replay(&bundle), &mut got);
    }
    let text: String = got.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    if std::env::var_os("PODLIFE_BLESS").is_some() {
        std::fs::write(pin_file(), &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(pin_file()).expect("tests/fixtures/verdicts.pin (bless with PODLIFE_BLESS=1)");
    let want: BTreeMap<&str, &str> = want
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let (a, b, rest) = (it.next()?, it.next()?, it.next()?);
            Some((&l[..a.len() + 1 + b.len()], rest))
        })
        .collect();
    assert!(want.len() > 1000, "the pin holds {} cases", want.len());
    let mut changed = vec![];
    for (k, v) in &got {
        match want.get(k.as_str()) {
            Some(w) if w == v => {}
            Some(w) => changed.push(format!("{k}:\n  pinned {w}\n  now    {v}")),
            None => changed.push(format!("{k}: not pinned")),
        }
    }
    for k in want.keys() {
        if !got.contains_key(*k) {
            changed.push(format!("{k}: pinned, no longer judged"));
        }
    }
    assert!(
        changed.is_empty(),
        "{} cases judged differently:\n{}",
        changed.len(),
        changed.join("\n")
    );
}
