//! `podlife clean` against the in-process API server: finds only podlife-labelled namespaces,
//! filters by run and age, lists without deleting by default, deletes (UID-checked) with `--yes`.

use std::time::Duration;

use podlife::cluster::clean::{CleanOptions, clean};
use serde_json::json;

use crate::support::{fake_api, live};

fn labels(run: &str, case: &str) -> serde_json::Value {
    json!({"podlife.dev/run": run, "podlife.dev/suite": "mock", "podlife.dev/case": case,
        "app.kubernetes.io/managed-by": "podlife"})
}

const NOW: &str = "2026-12-01T06:00:00Z";

fn opts(run: Option<&str>, older_than: Option<Duration>, yes: bool) -> CleanOptions {
    CleanOptions {
        run: run.map(str::to_string),
        older_than,
        yes,
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(5),
        now: NOW.parse().unwrap(),
    }
}

#[test]
fn clean_lists_by_default_and_deletes_only_matching_podlife_namespaces_with_yes() {
    let (rt, client, fake) = live::fake_server();
    {
        let mut f = fake.lock().unwrap();
        f.add_namespace("podlife-old1-mock-a", labels("old1", "a"), "2026-11-30T10:00:00Z");
        f.add_namespace("podlife-old1-mock-b", labels("old1", "b"), "2026-11-30T11:00:00Z");
        f.add_namespace("podlife-new1-mock-a", labels("new1", "a"), "2026-12-01T05:59:30Z");
        // Someone else's namespaces: no podlife labels, or a run label without managed-by.
        f.add_namespace("team-payments", json!({"team": "payments"}), "2026-11-01T00:00:00Z");
        f.add_namespace(
            "podlife-lookalike",
            json!({"podlife.dev/run": "old1"}),
            "2026-11-01T00:00:00Z",
        );
    }
    let run = |o: CleanOptions| {
        let mut out = vec![];
        let r = rt.block_on(clean(&client, &o, &mut out)).unwrap();
        (r, String::from_utf8(out).unwrap())
    };

    // Dry run (the default): lists, deletes nothing, says how to delete. Run new1 (30 s old, of
    // a podlife without the in-use annotation) may be in progress: left out unless named.
    let (r, out) = run(opts(None, None, false));
    assert_eq!(r.found, ["podlife-old1-mock-a", "podlife-old1-mock-b"], "{out}");
    assert_eq!(r.in_progress, ["podlife-new1-mock-a"], "{out}");
    assert!(r.deleted.is_empty());
    assert!(out.contains("old1      20h"), "{out}");
    assert!(out.contains("run new1 may still be in progress"), "{out}");
    assert!(out.contains("mock::a"), "{out}");
    assert!(
        out.contains("2 namespaces; dry run, nothing deleted. To delete: podlife clean --yes"),
        "{out}"
    );
    // Named, it is listed.
    let (r, _) = run(opts(Some("new1"), None, false));
    assert_eq!(r.found, ["podlife-new1-mock-a"]);
    assert_eq!(fake.lock().unwrap().count("DELETE"), 0);

    // Age filter: a run that may still be going is left alone.
    let (r, out) = run(opts(None, Some(Duration::from_secs(3600)), false));
    assert_eq!(r.found, ["podlife-old1-mock-a", "podlife-old1-mock-b"], "{out}");
    assert!(out.contains("To delete: podlife clean --older-than 1h --yes"), "{out}");

    // --run old1 --yes: exactly those two go, each DELETE carrying its UID.
    let (r, out) = run(opts(Some("old1"), None, true));
    assert_eq!(r.deleted, ["podlife-old1-mock-a", "podlife-old1-mock-b"], "{out}");
    assert!(r.failed.is_empty(), "{out}");
    assert!(out.contains("2 of 2 namespaces of run old1 deleted"), "{out}");
    let f = fake.lock().unwrap();
    assert_eq!(f.count("DELETE"), 2, "{:#?}", f.requests);
    assert!(f.refused_deletes.is_empty());
    for gone in ["podlife-old1-mock-a", "podlife-old1-mock-b"] {
        assert!(!f.namespace_exists(gone), "{gone}");
    }
    for kept in ["podlife-new1-mock-a", "team-payments", "podlife-lookalike"] {
        assert!(f.namespace_exists(kept), "{kept}");
    }
}

#[test]
fn clean_with_nothing_to_do_says_so() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (client, _fake) = {
        let _g = rt.enter();
        fake_api::start(&live::recordings())
    };
    let mut out = vec![];
    let r = rt
        .block_on(clean(&client, &opts(Some("zzz"), None, true), &mut out))
        .unwrap();
    assert!(r.found.is_empty());
    assert_eq!(String::from_utf8(out).unwrap(), "no podlife namespaces of run zzz\n");
}

/// Issue 19.10: `podlife clean --yes` without a filter deleted every podlife namespace on the
/// cluster, a run still going on another CI job included. A namespace says until when its run
/// may use it (`podlife.dev/in-use-until`); a run with such a namespace is left alone — all its
/// namespaces — unless named with `--run`.
#[test]
fn clean_yes_leaves_a_run_in_progress_alone_unless_it_is_named() {
    let (rt, client, fake) = live::fake_server();
    let busy = |until: &str| json!({ "podlife.dev/in-use-until": until });
    {
        let mut f = fake.lock().unwrap();
        // Run live1: one namespace in use until 06:10 (now is 06:00), and a leftover of its
        // first attempt whose own time is over: the run is in progress, both stay.
        f.add_namespace_annotated(
            "podlife-live1-mock-a-2",
            labels("live1", "a"),
            busy("2026-12-01T06:10:00Z"),
            "2026-12-01T05:58:00Z",
        );
        f.add_namespace_annotated(
            "podlife-live1-mock-a",
            labels("live1", "a"),
            busy("2026-12-01T05:59:00Z"),
            "2026-12-01T05:50:00Z",
        );
        // Run dead1 (killed): its namespaces' time is over, they go — though younger than the
        // one-hour guard of namespaces without the annotation.
        f.add_namespace_annotated(
            "podlife-dead1-mock-a",
            labels("dead1", "a"),
            busy("2026-12-01T05:55:00Z"),
            "2026-12-01T05:45:00Z",
        );
    }
    let run = |o: CleanOptions| {
        let mut out = vec![];
        let r = rt.block_on(clean(&client, &o, &mut out)).unwrap();
        (r, String::from_utf8(out).unwrap())
    };
    let (r, out) = run(opts(None, None, true));
    assert_eq!(r.deleted, ["podlife-dead1-mock-a"], "{out}");
    assert_eq!(
        r.in_progress,
        ["podlife-live1-mock-a", "podlife-live1-mock-a-2"],
        "{out}"
    );
    assert!(
        out.contains("run live1 may still be in progress (its namespaces may be in use until 2026-12-01T06:10:00Z): its 2 namespaces left alone; to delete them anyway: podlife clean --run live1 --yes"),
        "{out}"
    );
    {
        let f = fake.lock().unwrap();
        assert!(f.namespace_exists("podlife-live1-mock-a"));
        assert!(f.namespace_exists("podlife-live1-mock-a-2"));
        assert!(!f.namespace_exists("podlife-dead1-mock-a"));
    }
    // --older-than does not make a run in progress fair game either.
    let (r, out) = run(opts(None, Some(Duration::from_secs(60)), true));
    assert!(r.deleted.is_empty(), "{out}");
    // Named, it is deleted.
    let (r, out) = run(opts(Some("live1"), None, true));
    assert_eq!(r.deleted, ["podlife-live1-mock-a", "podlife-live1-mock-a-2"], "{out}");
}

/// The namespaces a live run creates carry `podlife.dev/in-use-until`, after the creation and
/// beyond the case's timeout: so `clean` (next test) knows the run may be in progress.
#[test]
fn a_live_run_marks_its_namespaces_with_how_long_they_may_be_in_use() {
    let e = live::env(|_| {});
    let mut o = live::run_options(e.dir.path());
    o.keep_on_failure = true;
    let cases = live::write_suites(
        e.dir.path(),
        &[(
            "mock.yaml",
            r#"
name: mock
cases:
  - name: restart-never-success
    manifest: REC/restart-never-success/manifest.yaml
    timeout: 90s
    expect:
      - phase: Failed
"#,
        )],
    );
    let before: jiff::Timestamp = jiff::Timestamp::now();
    let out = podlife::run::run_live(&o, cases, e.cluster.clone(), "inuse1".into(), &e.rt).unwrap();
    let ns = out.summary.cases[0].attempts[0].cleanup.namespace.clone().unwrap();
    assert!(
        out.summary.cases[0].attempts[0].cleanup.kept,
        "the failed case's namespace is kept"
    );
    let until: jiff::Timestamp = e.fake.lock().unwrap().namespace_annotations(&ns)["podlife.dev/in-use-until"]
        .as_str()
        .expect("annotation present")
        .parse()
        .unwrap();
    assert!(until >= before + jiff::SignedDuration::from_secs(90), "{until}");
    // The kept namespace's run counts as in progress until then; named, it is cleaned.
    let mut sink = vec![];
    let mut c = opts(None, None, true);
    c.now = jiff::Timestamp::now();
    let r = e.rt.block_on(clean(&e.cluster.client, &c, &mut sink)).unwrap();
    assert_eq!(r.in_progress, std::slice::from_ref(&ns));
    assert!(r.deleted.is_empty());
    c.run = Some("inuse1".into());
    let r = e.rt.block_on(clean(&e.cluster.client, &c, &mut sink)).unwrap();
    assert_eq!(r.deleted, [ns]);
}
