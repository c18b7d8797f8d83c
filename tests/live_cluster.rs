//! Runs the shipped suites against the cluster `KUBECONFIG` points at. Ignored by default:
//! `KUBECONFIG=~/.kube/config cargo test --locked --test live_cluster -- --ignored`.

use assert_cmd::Command;

#[test]
#[ignore = "needs cluster"]
fn shipped_suites_pass_on_the_current_cluster() {
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "set KUBECONFIG to the cluster to certify"
    );
    let reports = tempfile::tempdir().unwrap();
    Command::cargo_bin("podlife")
        .unwrap()
        .args(["run", "--suites", "suites", "--reports"])
        .arg(reports.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .timeout(std::time::Duration::from_secs(1800))
        .assert()
        .success();
}

#[test]
#[ignore = "needs cluster"]
fn preflight_passes_on_the_current_cluster() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = podlife::cluster::Cluster::connect(&Default::default()).await.unwrap();
        let fp = c.preflight().await.unwrap();
        assert!(!fp.server_version.is_empty());
        assert!(fp.nodes.iter().any(|n| n.ready));
    });
}

#[test]
#[ignore = "needs cluster"]
fn each_node_certifies_every_schedulable_node_of_the_current_cluster() {
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "set KUBECONFIG to the cluster to certify"
    );
    let reports = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("podlife")
        .unwrap()
        .args(["run", "--each-node", "--suites", "suites", "--reports"])
        .arg(reports.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .timeout(std::time::Duration::from_secs(1800))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("node × area"), "{stdout}");
    // Every case ran once on every node the fingerprint lists.
    let (_, s) = podlife::report::diff::load_summary(reports.path()).unwrap();
    let nodes = s.fingerprint.nodes.len();
    let cases: std::collections::BTreeSet<String> = s.cases.iter().map(|c| c.case_name()).collect();
    assert_eq!(s.cases.len(), nodes * cases.len());
    for c in &s.cases {
        if c.status.has_verdict() {
            assert_eq!(c.node, c.target_node, "{} ran where it was pinned", c.full_name());
        }
    }
}
