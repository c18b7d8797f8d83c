//! Benchmark of observer + judge (`divan`) on the shipped recordings: inputs are read once,
//! then each iteration builds the timelines and judges the built-in cases against them.
//! Run with `cargo bench`; the README quotes the figures.

use std::path::Path;

use divan::counter::ItemsCount;
use podlife::observe::{Input, Observer, Recording};
use podlife::suite::LoadedCase;

fn main() {
    divan::main();
}

struct Fixture {
    name: String,
    inputs: Vec<Input>,
    cases: Vec<LoadedCase>,
}

fn fixtures() -> Vec<Fixture> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suites = podlife::suite::load_suites(&[root.join("suites")]).expect("built-in suites are valid");
    let cases: Vec<LoadedCase> = suites.into_iter().flat_map(|s| s.cases).collect();
    let mut out = vec![];
    let dir = root.join("tests/fixtures/recordings");
    let mut dirs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        let rec = Recording::read(&d).unwrap();
        let cases = cases.iter().filter(|c| c.name() == name).cloned().collect();
        out.push(Fixture {
            name,
            inputs: rec.inputs,
            cases,
        });
    }
    out
}

fn run(fx: &[Fixture]) -> usize {
    let mut verdicts = 0;
    for f in fx {
        let mut obs = Observer::new(None, "bench");
        for i in &f.inputs {
            obs.push(i.clone());
        }
        let tl = obs.finish();
        for c in &f.cases {
            verdicts += podlife::judge::judge_case(&c.spec, &tl).len();
        }
    }
    verdicts
}

/// All 30 recordings: observe every input, judge every built-in case that has a recording.
#[divan::bench]
fn all_recordings(b: divan::Bencher) {
    let fx = fixtures();
    let items: usize = fx.iter().map(|f| f.inputs.len()).sum();
    b.counter(ItemsCount::new(items)).bench(|| run(divan::black_box(&fx)));
}

/// The largest recordings alone (crash loop, init back-off, liveness restarts).
#[divan::bench(args = ["restart-always-crashloop", "init-ordering", "init-fail-always", "probe-liveness-exec", "probe-readiness-toggle"])]
fn one_recording(b: divan::Bencher, name: &str) {
    let fx: Vec<Fixture> = fixtures().into_iter().filter(|f| f.name == name).collect();
    let items: usize = fx.iter().map(|f| f.inputs.len()).sum();
    b.counter(ItemsCount::new(items)).bench(|| run(divan::black_box(&fx)));
}
