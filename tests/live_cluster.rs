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
