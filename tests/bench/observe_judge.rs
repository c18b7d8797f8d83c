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

/// `log: {instance: last}` on 40 000 lines of one container (issue #10: it was quadratic, 8.75 s).
#[divan::bench]
fn log_instance_last_40k(b: divan::Bencher) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = Recording::read(&root.join("tests/fixtures/recordings/restart-never-success")).unwrap();
    let mut tl = rec.timeline();
    let start = tl.logs.iter().map(|l| l.time).max().unwrap();
    for i in 0..40_000i64 {
        tl.logs.push(podlife::observe::LogLine {
            container: "main".into(),
            instance: 0,
            time: start + jiff::SignedDuration::from_millis(i + 1),
            text: format!("line {i}"),
            received: None,
        });
    }
    let dir = std::env::temp_dir().join(format!("podlife-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("s.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: s\ncases:\n  - name: c\n    manifest: {}\n    expect:\n      - log: {{container: main, regex: '^line 39999$', instance: last}}\n",
            root.join("tests/fixtures/recordings/restart-never-success/manifest.yaml").display()
        ),
    )
    .unwrap();
    let suites = podlife::suite::load_suites(&[suite]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let case = suites[0].cases[0].spec.clone();
    b.counter(ItemsCount::new(40_000usize))
        .bench(|| podlife::judge::judge_case(divan::black_box(&case), divan::black_box(&tl)).len());
}
