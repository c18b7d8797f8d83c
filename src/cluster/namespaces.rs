//! The namespaces podlife created, found by their labels (the sweep, `podlife clean`).

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ListParams};

use super::{CASE_LABEL, ClusterError, IN_USE_UNTIL, MANAGED_BY, RUN_LABEL, SUITE_LABEL, api_err};

/// A namespace carrying podlife's labels.
#[derive(Clone, Debug, PartialEq)]
pub struct PodlifeNamespace {
    pub name: String,
    pub uid: String,
    pub run: String,
    pub suite: Option<String>,
    pub case: Option<String>,
    pub created: Option<jiff::Timestamp>,
    /// Being deleted already.
    pub terminating: bool,
    /// Its `podlife.dev/in-use-until` annotation (absent on namespaces of older podlife).
    pub in_use_until: Option<jiff::Timestamp>,
}

/// Namespaces podlife created (labelled `podlife.dev/run` and managed by podlife), of one run or
/// of all runs.
pub async fn namespaces_labelled(client: &Client, run_id: Option<&str>) -> Result<Vec<PodlifeNamespace>, ClusterError> {
    let sel = match run_id {
        Some(r) => format!("{RUN_LABEL}={r},{MANAGED_BY}=podlife"),
        None => format!("{RUN_LABEL},{MANAGED_BY}=podlife"),
    };
    let list = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default().labels(&sel))
        .await
        .map_err(|e| api_err("list namespaces", &e))?;
    let mut out: Vec<PodlifeNamespace> = list
        .items
        .into_iter()
        .filter_map(|n| {
            let labels = n.metadata.labels.unwrap_or_default();
            let in_use_until = n
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(IN_USE_UNTIL))
                .and_then(|t| t.parse().ok());
            Some(PodlifeNamespace {
                in_use_until,
                name: n.metadata.name?,
                uid: n.metadata.uid?,
                run: labels.get(RUN_LABEL)?.clone(),
                suite: labels.get(SUITE_LABEL).cloned(),
                case: labels.get(CASE_LABEL).cloned(),
                created: n.metadata.creation_timestamp.map(|t| t.0),
                terminating: n.metadata.deletion_timestamp.is_some(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
