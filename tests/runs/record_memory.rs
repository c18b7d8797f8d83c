//! Memory cost of recording, measured (never asserted in a timed CI test): the same 16-case run
//! against the in-process API server (which serves real recordings at their real pace) once with
//! recording off and once on, each in its own process, comparing peak RSS (`VmHWM`).
//!
//! `cargo test --release --test runs -- --ignored --nocapture record_memory::` (about two minutes);
//! the figures go to the README ("Recording, sharing, replaying, re-judging").

use std::path::Path;
use std::time::Duration;

use crate::support::live::{self, recordings};

const CHILD_ENV: &str = "PODLIFE_MEASURE_RECORD";

/// Peak and current resident set size of this process, in KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

#[test]
#[ignore = "measures memory (about two minutes): cargo test --release --test runs -- --ignored --nocapture record_memory::"]
fn recorded_16_case_run_stays_within_twice_the_rss_of_an_unrecorded_one() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // The child's test name as libtest lists it: this module's path without the binary's name.
    let (_, module) = module_path!().split_once("::").unwrap();
    let child = format!("{module}::measure_one_run");
    let mut peaks = vec![];
    for record in ["0", "1"] {
        let out = std::process::Command::new(&exe)
            .args(["--ignored", "--exact", &child, "--nocapture", "--test-threads", "1"])
            .env(CHILD_ENV, record)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        // libtest may print `test record_memory::measure_one_run ... ` on the same line.
        let line = text
            .lines()
            .find_map(|l| l.find("MEASURED").map(|i| &l[i..]))
            .unwrap_or_else(|| panic!("{text}"));
        println!("{line}");
        let peak: u64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("peak_kib="))
            .unwrap()
            .parse()
            .unwrap();
        peaks.push(peak);
    }
    let ratio = peaks[1] as f64 / peaks[0] as f64;
    println!("recorded/unrecorded peak RSS: {ratio:.2}");
    assert!(ratio <= 2.0, "recording more than doubles peak RSS: {peaks:?}");
}

/// One 16-case run (child process of the test above).
#[test]
#[ignore = "child process of recorded_16_case_run_stays_within_twice_the_rss_of_an_unrecorded_one"]
fn measure_one_run() {
    let Some(record) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let record = record == "1";
    let dir = tempfile::tempdir().unwrap();
    // 16 cases: four real recordings, four cases each (each in its own namespace).
    let mut suite = String::from("name: memory\ncases:\n");
    for n in 0..4 {
        for (rec, phase) in [
            ("restart-never-success", "Succeeded"),
            ("restart-never-fail", "Failed"),
            ("oom-killed", "Failed"),
            ("init-fail-never", "Failed"),
        ] {
            suite.push_str(&format!(
                "  - name: {rec}-{n}\n    manifest: {}\n    steps:\n      - waitFor: {{until: {{phase: {phase}}}}}\n    expect:\n      - phase: {phase}\n",
                recordings().join(rec).join("manifest.yaml").display()
            ));
        }
    }
    std::fs::write(dir.path().join("memory.yaml"), suite).unwrap();
    let suites = podlife::suite::load_suites(&[dir.path().join("memory.yaml")]).unwrap_or_else(|e| panic!("{e:?}"));
    let cases = live::cases_of(&suites);
    assert_eq!(cases.len(), 16);
    let (rt, client, _fake) = live::fake_server();
    let reports = dir.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let opts = podlife::run::RunOptions {
        test_threads: 4,
        api_outage_budget: Duration::from_secs(5),
        logfile: Some(dir.path().join("console.log")),
        record,
        ..live::run_options(&reports)
    };
    let (before, _) = rss_kib();
    let cluster = podlife::cluster::Cluster::from_client(client);
    let mut out = podlife::run::run_live(&opts, cases, cluster, "memory1".into(), &rt).unwrap();
    live::publish(&mut out, &opts);
    if record {
        podlife::run::bundle::write(&out.report_dir).unwrap();
    }
    let (peak, now) = rss_kib();
    let recorded_bytes = dir_size(&out.report_dir.join("recordings"));
    println!(
        "MEASURED record={record} cases={} passed={} peak_kib={peak} rss_kib={now} before_run_kib={before} recordings_bytes={recorded_bytes}",
        out.summary.cases.len(),
        out.summary.passed
    );
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else { return 0 };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                dir_size(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}
