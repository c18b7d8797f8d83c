//! `podlife clean` against the in-process API server: finds only podlife-labelled namespaces,
//! filters by run and age, lists without deleting by default, deletes (UID-checked) with `--yes`.

mod support;

use std::time::Duration;

use podlife::cluster::clean::{CleanOptions, clean};
use serde_json::json;
use support::{fake_api, live};

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

    // Dry run (the default): lists, deletes nothing, says how to delete.
    let (r, out) = run(opts(None, None, false));
    assert_eq!(
        r.found,
        ["podlife-new1-mock-a", "podlife-old1-mock-a", "podlife-old1-mock-b"],
        "{out}"
    );
    assert!(r.deleted.is_empty());
    assert!(out.contains("old1      20h"), "{out}");
    assert!(out.contains("new1      30s"), "{out}");
    assert!(out.contains("mock::a"), "{out}");
    assert!(
        out.contains("3 namespaces; dry run, nothing deleted. To delete: podlife clean --yes"),
        "{out}"
    );
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
