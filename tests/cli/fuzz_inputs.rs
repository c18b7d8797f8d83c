//! Fuzzing, in `cargo test`: proptest properties over what podlife reads from
//! outside — recordings (every stream and log file), stored timeline JSON, and the duration and
//! timestamp parsers — mutated from the real recordings in `tests/fixtures/recordings` (the
//! corpus) with the values that broke podlife before: far-future and far-past timestamps,
//! extreme counts, flipped bytes, cut and repeated lines. The property: podlife never panics; a
//! refused input is one line naming its file; an accepted one is judged by every built-in case
//! of that recording. Deterministic (fixed seed, fixed case count) and bounded: a few seconds.
//! The figure (inputs tried, 0 panics) is in docs/tests.md.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

use crate::support::files::copy_dir;
use podlife::observe::{Recording, Timeline};
use podlife::suite::LoadedCase;

/// Recordings the mutations start from: restarts, init containers, probes, hooks, termination.
const CORPUS: &[&str] = &[
    "sigterm-ignored",
    "restart-always-crashloop",
    "init-fail-always",
    "probe-liveness-exec",
    "poststart-fail",
    "status-crashloop",
];

/// Cases per property; with three properties, `3 * CASES` inputs per `cargo test`.
/// `PODLIFE_FUZZ_CASES=N` runs N per property instead (a longer run by hand).
const CASES: u32 = 300;

fn case_count() -> u32 {
    std::env::var("PODLIFE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `PODLIFE_FUZZ_SEED=N` adds N to every property's seed (other inputs, by hand).
fn runner(seed: u64) -> TestRunner {
    let shift: u64 = std::env::var("PODLIFE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let seed = seed.wrapping_add(shift);
    TestRunner::new(Config {
        cases: case_count(),
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 512,
        ..Config::default()
    })
}

/// Every built-in case, loaded once.
fn cases() -> &'static [LoadedCase] {
    static CASES: OnceLock<Vec<LoadedCase>> = OnceLock::new();
    CASES.get_or_init(|| {
        podlife::suite::load_suites(&[root().join("suites")])
            .expect("built-in suites load")
            .into_iter()
            .flat_map(|s| s.cases)
            .collect()
    })
}

/// Judges `tl` with every built-in case made for `recording`, plus one of each area, the step
/// check included, and renders what the reports render of a timeline.
fn judge_all(recording: &str, tl: &Timeline) {
    for c in cases().iter().filter(|c| c.name() == recording) {
        let _ = podlife::judge::judge_case(&c.spec, tl);
        let _ = podlife::judge::steps_verdict(&c.spec, tl);
    }
    let _ = podlife::observe::watch_transcript(tl);
    let _ = serde_json::to_string(tl).expect("a timeline serializes");
}

/// Timestamps as the API, the CRI and files write them, and the ones that broke podlife.
fn timestamp() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("9999-12-30T22:00:00Z".to_string()),
        Just("9999-12-30T22:00:00.999999999Z".to_string()),
        Just("-009999-01-02T01:59:59Z".to_string()),
        Just("0001-01-01T00:00:00Z".to_string()),
        Just("1970-01-01T00:00:00Z".to_string()),
        Just("2026-11-29T21:07:18.999999999+14:00".to_string()),
        (
            jiff::Timestamp::MIN.as_second()..=jiff::Timestamp::MAX.as_second(),
            0..1_000_000_000i32
        )
            .prop_map(|(s, n)| jiff::Timestamp::new(s, n).map(|t| t.to_string()).unwrap_or_default()),
        // Around the shipped recordings' own times, so orders between items change.
        (1_764_440_000i64..1_764_460_000, 0..1_000_000_000i32)
            .prop_map(|(s, n)| jiff::Timestamp::new(s, n).map(|t| t.to_string()).unwrap_or_default()),
        "[-0-9T:.Z+]{0,32}",
    ]
}

/// Numbers that counts, exit codes, restart counts and sequence numbers may carry.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(i64::MAX.to_string()),
        Just(i64::MIN.to_string()),
        Just(u64::MAX.to_string()),
        Just(i32::MAX.to_string()),
        Just(u32::MAX.to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1e308".to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0i64..20).prop_map(|n| n.to_string()),
    ]
}

/// Timestamp fields of pods, events, logs and actions: a mutation sets every one of a kind.
const TIME_FIELDS: &[&str] = &[
    "finishedAt",
    "startedAt",
    "received",
    "time",
    "lastTimestamp",
    "firstTimestamp",
    "eventTime",
    "lastTransitionTime",
    "sent",
    "done",
    "creationTimestamp",
    "deletionTimestamp",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the n-th timestamp of the text.
    Timestamp(usize, String),
    /// Set every timestamp of one field (`TIME_FIELDS`) to one value.
    Field(usize, String),
    /// Replace the n-th number after a `count`/`restartCount`/`exitCode`/`seq`/... key.
    Number(usize, String),
    /// Set every number of one key (`NUM_FIELDS`) to one value: a counter the API states
    /// (`restartCount` at i32::MAX) in every snapshot, so no judge may size work by it.
    Numbers(usize, String),
    /// Overwrite one byte.
    Flip(usize, u8),
    /// Cut the text at a byte.
    Truncate(usize),
    /// Repeat the n-th line.
    Duplicate(usize),
    /// Remove the n-th line.
    Drop(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), timestamp()).prop_map(|(n, t)| Mutation::Timestamp(n, t)),
        3 => (0..TIME_FIELDS.len(), timestamp()).prop_map(|(n, t)| Mutation::Field(n, t)),
        3 => (any::<usize>(), number()).prop_map(|(n, v)| Mutation::Number(n, v)),
        2 => (0..NUM_FIELDS.len(), number()).prop_map(|(n, v)| Mutation::Numbers(n, v)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(n, b)| Mutation::Flip(n, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => any::<usize>().prop_map(Mutation::Drop),
    ]
}

fn ts_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"[-+]?\d{4,6}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)").unwrap())
}

/// The numeric keys `Mutation::Number` and `Mutation::Numbers` change.
const NUM_FIELDS: &[&str] = &[
    "count",
    "restartCount",
    "exitCode",
    "signal",
    "seq",
    "inputs",
    "instance",
    "generation",
];

fn num_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r#""(count|restartCount|exitCode|signal|seq|inputs|instance|generation)":\s*(-?\d+)"#)
            .unwrap()
    })
}

/// Applies `m` to `text` (bytes: a flip may make it invalid UTF-8, which readers must refuse).
fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let s = String::from_utf8_lossy(text);
    let replace_nth = |re: &regex::Regex, n: usize, group: usize, with: &str| -> Option<Vec<u8>> {
        let all: Vec<_> = re.captures_iter(&s).collect();
        let c = all.get(n % all.len().max(1))?;
        let g = c.get(group)?;
        Some(format!("{}{with}{}", &s[..g.start()], &s[g.end()..]).into_bytes())
    };
    match m {
        Mutation::Timestamp(n, t) => replace_nth(ts_re(), *n, 0, t).unwrap_or_else(|| text.to_vec()),
        Mutation::Number(n, v) => replace_nth(num_re(), *n, 2, v).unwrap_or_else(|| text.to_vec()),
        Mutation::Field(n, t) => {
            let re = regex::Regex::new(&format!(r#""{}":\s*"[^"]*""#, TIME_FIELDS[*n])).unwrap();
            let with = format!(r#""{}":"{t}""#, TIME_FIELDS[*n]);
            re.replace_all(&s, regex::NoExpand(&with)).into_owned().into_bytes()
        }
        Mutation::Numbers(n, v) => {
            let re = regex::Regex::new(&format!(r#""{}":\s*-?\d+"#, NUM_FIELDS[*n])).unwrap();
            let with = format!(r#""{}":{v}"#, NUM_FIELDS[*n]);
            re.replace_all(&s, regex::NoExpand(&with)).into_owned().into_bytes()
        }
        Mutation::Flip(at, b) => {
            let mut t = text.to_vec();
            if !t.is_empty() {
                let i = at % t.len();
                t[i] = *b;
            }
            t
        }
        Mutation::Truncate(at) => text[..at % (text.len() + 1)].to_vec(),
        Mutation::Duplicate(n) | Mutation::Drop(n) => {
            let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
            let i = n % lines.len();
            if matches!(m, Mutation::Duplicate(_)) {
                lines.insert(i, lines[i]);
            } else {
                lines.remove(i);
            }
            lines.join(&b'\n')
        }
    }
}

/// Every text file of a recording, relative to it.
fn files_of(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl" || x == "log") {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Recordings: read, observed into a timeline, judged; or refused in one line naming a file.
#[test]
fn fuzz_recordings_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let strategy = (
        0..CORPUS.len(),
        proptest::collection::vec((any::<usize>(), mutation()), 1..6),
    );
    runner(0x22_0001)
        .run(&strategy, |(which, muts)| {
            let name = CORPUS[which];
            let dir = tmp.path().join(name);
            let _ = std::fs::remove_dir_all(&dir);
            copy_dir(&root().join("tests/fixtures/recordings").join(name), &dir);
            let files = files_of(&dir);
            for (f, m) in &muts {
                let p = dir.join(&files[f % files.len()]);
                let text = std::fs::read(&p).unwrap();
                std::fs::write(&p, apply(&text, m)).unwrap();
            }
            match Recording::read(&dir) {
                Ok(rec) => judge_all(name, &rec.timeline()),
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(!e.contains('\n'), "an error is one line: {e}");
                    prop_assert!(e.contains(&dir.display().to_string()), "names the file: {e}");
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Stored timelines (`podlife judge t.json`, `rejudge` of runs without recordings): parsed,
/// judged; or refused.
#[test]
fn fuzz_timeline_json_never_panics() {
    let seeds: Vec<(String, String)> = CORPUS
        .iter()
        .map(|n| {
            let rec = Recording::read(&root().join("tests/fixtures/recordings").join(n)).unwrap();
            (n.to_string(), serde_json::to_string_pretty(&rec.timeline()).unwrap())
        })
        .collect();
    let strategy = (0..seeds.len(), proptest::collection::vec(mutation(), 1..8));
    runner(0x22_0002)
        .run(&strategy, |(which, muts)| {
            let (name, json) = &seeds[which];
            let mut text = json.clone().into_bytes();
            for m in &muts {
                text = apply(&text, m);
            }
            if let Ok(mut tl) = serde_json::from_slice::<Timeline>(&text) {
                tl.fill_columns();
                judge_all(name, &tl);
            }
            Ok(())
        })
        .unwrap();
}

/// Durations (suite fields, `--threshold`) and timestamps: parsed or refused, and timestamp
/// arithmetic on what parses saturates.
#[test]
fn fuzz_duration_and_timestamp_parsers_never_panic() {
    let text = prop_oneof![
        timestamp(),
        "[0-9]{0,25}(ns|us|ms|s|m|h|d|w|y|%|)",
        "-?[0-9.eE+-]{0,12}(ms|s|%)",
        Just("NaN%".to_string()),
        Just("inf%".to_string()),
        Just("18446744073709551616s".to_string()),
        Just("500000000000y".to_string()),
        any::<String>(),
    ];
    let strategy = (text, any::<f64>(), any::<i64>());
    runner(0x22_0003)
        .run(&strategy, |(s, f, n)| {
            let _ = serde_json::from_value::<podlife::suite::types::Dur>(serde_json::json!(s));
            let _ = serde_json::from_value::<podlife::suite::types::Dur>(serde_json::json!(n));
            let _ = serde_json::from_value::<podlife::suite::types::Dur>(serde_json::json!(f));
            let _ = podlife::suite::types::Dur::from_secs_f64(f);
            if let Ok(podlife::report::diff::Threshold::Percent(p)) = s.parse::<podlife::report::diff::Threshold>() {
                prop_assert!(p.is_finite() && p >= 0.0, "{s} -> {p}");
            }
            if let Ok(t) = s.parse::<jiff::Timestamp>() {
                let d = jiff::SignedDuration::from_secs(n % (1 << 40));
                let _ = podlife::util::ts_add(t, d);
                let _ = podlife::util::ts_add(t, jiff::SignedDuration::from_secs(1));
            }
            Ok(())
        })
        .unwrap();
}
