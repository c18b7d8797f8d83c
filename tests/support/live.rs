//! `Env`: the in-process fake API server (`fake_api`) replaying tests/fixtures/recordings, the
//! tokio runtime it runs in, a `Cluster` on it and a temporary folder; with the run options,
//! suite loading and report publishing the live-runner tests share.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use podlife::cluster::Cluster;
use podlife::run::{RunOptions, RunOutcome};
use podlife::suite::{LoadedCase, Suite};

use super::fake_api::{self, FakeState};

/// The recordings the fake server serves (tests/fixtures/recordings).
pub fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings")
}

/// A two-worker runtime (as `podlife run` builds) and the fake API server on the recordings,
/// started inside it.
pub fn fake_server() -> (tokio::runtime::Runtime, kube::Client, Arc<Mutex<FakeState>>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (client, fake) = {
        let _g = rt.enter();
        fake_api::start(&recordings())
    };
    (rt, client, fake)
}

pub struct Env {
    pub rt: tokio::runtime::Runtime,
    pub cluster: Cluster,
    pub fake: Arc<Mutex<FakeState>>,
    pub dir: tempfile::TempDir,
}

/// The fake server with `setup` applied to its state, as a cluster, and a fresh temporary folder.
pub fn env(setup: impl FnOnce(&mut FakeState)) -> Env {
    let (rt, client, fake) = fake_server();
    setup(&mut fake.lock().unwrap());
    Env {
        rt,
        cluster: Cluster::from_client(client),
        fake,
        dir: tempfile::tempdir().unwrap(),
    }
}

/// Every case of `suites` with its suite, as `run_live` takes them.
pub fn cases_of(suites: &[Suite]) -> Vec<(Suite, LoadedCase)> {
    suites
        .iter()
        .flat_map(|s| s.cases.iter().map(move |c| (s.clone(), c.clone())))
        .collect()
}

/// Writes the suite files `(file name, body)` into `dir` (`REC` in a body stands for the
/// recordings folder, so cases can use the recordings' own manifests) and loads them as one
/// run's cases.
pub fn write_suites(dir: &Path, files: &[(&str, &str)]) -> Vec<(Suite, LoadedCase)> {
    let mut paths = vec![];
    for (name, body) in files {
        let path = dir.join(name);
        std::fs::write(&path, body.replace("REC", &recordings().display().to_string())).unwrap();
        paths.push(path);
    }
    let suites = podlife::suite::load_suites(&paths).unwrap_or_else(|e| panic!("{e:?}"));
    cases_of(&suites)
}

/// Options of a quiet live run into `reports`: two cases at a time, no retries, 5 s request and
/// cleanup timeouts, a 10 s API outage budget; tests change what they exercise.
pub fn run_options(reports: &Path) -> RunOptions {
    RunOptions {
        filter: None,
        exact: false,
        skip: vec![],
        test_threads: 2,
        list: false,
        ignored: false,
        include_ignored: false,
        retries: 0,
        // Tests that retry undecided attempts or pace starts say so.
        undecided_retries: 0,
        starts_per_node: 0,
        // Unpaced (the fake server needs no protection); tests of the budget set one.
        budget: podlife::results::plan::Budget {
            requests_per_second: 0,
            starting: 0,
            ..Default::default()
        },
        durations: Default::default(),
        keep_on_failure: false,
        replay: None,
        names: Default::default(),
        reports_dir: reports.to_path_buf(),
        junit: None,
        images: Default::default(),
        connect: Default::default(),
        cleanup_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        api_outage_budget: Duration::from_secs(10),
        settle: Duration::from_millis(500),
        quiet: true,
        // libtest-style lines go to a file: inside `cargo test` they would read as our results.
        logfile: Some(reports.join("console.log")),
        cancel: None,
        repeat: 1,
        certify: false,
        upstream_applicable: vec![],
        target: Default::default(),
        #[cfg(feature = "test-hooks")]
        panic_in_case: None,
        record: false,
    }
}

/// Writes the reports of a run made with `o`, as `podlife run` does, and checks that worked.
pub fn publish(out: &mut RunOutcome, o: &RunOptions) {
    let published = podlife::report::publish(
        podlife::report::PublishOptions {
            dir: &out.report_dir,
            junit: o.junit.as_deref(),
            quiet: o.quiet,
            certify: o.certify,
        },
        &mut out.summary,
    );
    assert!(published.is_ok(), "{published:?}");
}
