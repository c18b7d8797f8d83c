//! Cluster access (`Cluster`): connect like kubectl, preflight (reachability, version, nodes,
//! permissions), fingerprint, namespaces, server-side apply of untyped pods, deletes.

mod target;
pub use target::Target;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, Config};
use serde::{Deserialize, Serialize};

/// Label every podlife namespace carries: the run id.
pub const RUN_LABEL: &str = "podlife.dev/run";
pub const CASE_LABEL: &str = "podlife.dev/case";
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const FIELD_MANAGER: &str = "podlife";

/// A harness error talking to the cluster (exit code 2 at preflight; a case error later).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "no cluster: {tried}: {reason} (to see podlife work without a cluster, use `podlife run --replay tests/fixtures/recordings`)"
    )]
    NoConfig { tried: String, reason: String },
    #[error("cluster unreachable ({tried}): {reason}")]
    Unreachable { tried: String, reason: String },
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("no Ready node: {0}")]
    NoReadyNode(String),
    #[error("{what}: {reason}")]
    Api { what: String, reason: String },
}

/// One-line description of a kube error (`403 Forbidden: pods is forbidden: ...`).
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string().lines().next().unwrap_or_default().to_string(),
    }
}

fn api_err(what: impl Into<String>, e: &kube::Error) -> ClusterError {
    if let kube::Error::Api(s) = e
        && s.code == 403
    {
        return ClusterError::Forbidden(format!("{}: {}", what.into(), s.message));
    }
    ClusterError::Api {
        what: what.into(),
        reason: describe(e),
    }
}

/// How to connect: like kubectl.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl ConnectOptions {
    /// What we tried, for error messages.
    pub fn describe(&self) -> String {
        let file = match &self.kubeconfig {
            Some(p) => p.display().to_string(),
            None => std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config (or in-cluster)".into()),
        };
        match &self.context {
            Some(c) => format!("kubeconfig {file}, context {c}"),
            None => format!("kubeconfig {file}, current context"),
        }
    }
}

/// Node facts that identify what is being certified.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub ready: bool,
    pub kubelet_version: String,
    pub container_runtime_version: String,
    pub kernel_version: String,
    pub os_image: String,
    pub architecture: String,
}

/// The cluster fingerprint recorded in every report.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Fingerprint {
    pub server_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    pub nodes: Vec<NodeInfo>,
    /// Set when the fingerprint comes from recordings, not a live cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The RuntimeClass every pod ran with (`--runtime-class`) and its handler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<RuntimeClassInfo>,
    /// How pods were pinned (`--node`, `--node-selector`); `nodes` lists only those targeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_target: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeClassInfo {
    pub name: String,
    pub handler: String,
}

impl Fingerprint {
    /// `(major, minor)` of the server.
    pub fn server_minor(&self) -> Option<(u32, u32)> {
        crate::suite::load::parse_version(&self.server_version)
    }

    /// Key/value pairs for JUnit properties.
    pub fn properties(&self) -> Vec<(String, String)> {
        let mut out = vec![("server.version".to_string(), self.server_version.clone())];
        if let Some(s) = &self.source {
            out.push(("source".into(), s.clone()));
        }
        if let Some(rc) = &self.runtime_class {
            out.push(("runtimeClass".into(), rc.name.clone()));
            out.push(("runtimeClass.handler".into(), rc.handler.clone()));
        }
        if let Some(t) = &self.node_target {
            out.push(("nodeTarget".into(), t.clone()));
        }
        for n in &self.nodes {
            let p = format!("node.{}", n.name);
            out.push((format!("{p}.kubelet"), n.kubelet_version.clone()));
            out.push((format!("{p}.runtime"), n.container_runtime_version.clone()));
            out.push((format!("{p}.kernel"), n.kernel_version.clone()));
            out.push((format!("{p}.osImage"), n.os_image.clone()));
            out.push((format!("{p}.arch"), n.architecture.clone()));
        }
        out
    }
}

/// A connected cluster.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    pub tried: String,
}

impl Cluster {
    /// Connects like kubectl: `--kubeconfig`, else `KUBECONFIG`/`~/.kube/config`, else in-cluster.
    /// Reads configuration only: no request is sent.
    pub async fn connect(opts: &ConnectOptions) -> Result<Cluster, ClusterError> {
        let tried = opts.describe();
        let kco = KubeConfigOptions {
            context: opts.context.clone(),
            ..Default::default()
        };
        let config = match &opts.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(|e| ClusterError::NoConfig {
                    tried: tried.clone(),
                    reason: one_line(&e),
                })?;
                Config::from_custom_kubeconfig(kc, &kco)
                    .await
                    .map_err(|e| ClusterError::NoConfig {
                        tried: tried.clone(),
                        reason: one_line(&e),
                    })?
            }
            None if opts.context.is_some() => {
                Config::from_kubeconfig(&kco)
                    .await
                    .map_err(|e| ClusterError::NoConfig {
                        tried: tried.clone(),
                        reason: one_line(&e),
                    })?
            }
            None => Config::infer().await.map_err(|e| ClusterError::NoConfig {
                tried: tried.clone(),
                reason: one_line(&e),
            })?,
        };
        let client = Client::try_from(config).map_err(|e| ClusterError::NoConfig {
            tried: tried.clone(),
            reason: one_line(&e),
        })?;
        Ok(Cluster { client, tried })
    }

    pub fn from_client(client: Client) -> Self {
        Cluster {
            client,
            tried: "in-process client".into(),
        }
    }

    /// Checks the server answers, its version, Ready nodes and every permission a run needs.
    pub async fn preflight(&self) -> Result<Fingerprint, ClusterError> {
        let v = self
            .client
            .apiserver_version()
            .await
            .map_err(|e| ClusterError::Unreachable {
                tried: self.tried.clone(),
                reason: describe(&e),
            })?;
        let mut fp = Fingerprint {
            server_version: v.git_version.clone(),
            platform: Some(v.platform.clone()),
            nodes: vec![],
            source: None,
            ..Fingerprint::default()
        };
        let needed: &[(&str, &str, Option<&str>)] = &[
            ("create", "namespaces", None),
            ("delete", "namespaces", None),
            ("list", "namespaces", None),
            ("watch", "namespaces", None),
            ("create", "pods", None),
            ("patch", "pods", None),
            ("delete", "pods", None),
            ("watch", "pods", None),
            ("get", "pods", Some("log")),
            ("watch", "events", None),
        ];
        let mut missing = vec![];
        for (verb, resource, sub) in needed {
            if !self.can(verb, resource, *sub).await? {
                missing.push(match sub {
                    Some(s) => format!("{verb} {resource}/{s}"),
                    None => format!("{verb} {resource}"),
                });
            }
        }
        if !missing.is_empty() {
            return Err(ClusterError::Forbidden(format!(
                "the current user may not {} (see manifests/rbac/ for the role podlife needs)",
                missing.join(", ")
            )));
        }
        match Api::<Node>::all(self.client.clone()).list(&ListParams::default()).await {
            Ok(list) => {
                fp.nodes = list.items.iter().map(node_info).collect();
                fp.nodes.sort_by(|a, b| a.name.cmp(&b.name));
                if !fp.nodes.iter().any(|n| n.ready) {
                    let names: Vec<_> = fp.nodes.iter().map(|n| n.name.as_str()).collect();
                    return Err(ClusterError::NoReadyNode(if names.is_empty() {
                        "the cluster has no nodes".into()
                    } else {
                        format!("none of {} is Ready", names.join(", "))
                    }));
                }
            }
            // Listing nodes is only for the fingerprint: a least-privilege user may lack it.
            Err(kube::Error::Api(s)) if s.code == 403 => {
                eprintln!("warning: may not list nodes; the report's fingerprint will have no node details");
            }
            Err(e) => return Err(api_err("list nodes", &e)),
        }
        Ok(fp)
    }

    /// Checks what `--node`, `--node-selector` and `--runtime-class` name exists, narrows the
    /// fingerprint to the targeted nodes and records the RuntimeClass handler.
    pub async fn check_target(&self, fp: &mut Fingerprint, target: &Target) -> Result<(), ClusterError> {
        if let Some(rc) = &target.runtime_class {
            let api: Api<k8s_openapi::api::node::v1::RuntimeClass> = Api::all(self.client.clone());
            match api.get(rc).await {
                Ok(r) => {
                    fp.runtime_class = Some(RuntimeClassInfo {
                        name: rc.clone(),
                        handler: r.handler,
                    })
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    return Err(ClusterError::Api {
                        what: format!("--runtime-class {rc}"),
                        reason: "no such RuntimeClass".into(),
                    });
                }
                Err(e) => return Err(api_err(format!("get runtimeclass {rc}"), &e)),
            }
        }
        if target.node.is_none() && target.node_selector.is_empty() {
            return Ok(());
        }
        let mut lp = ListParams::default();
        let sel: Vec<String> = target.node_selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !sel.is_empty() {
            lp = lp.labels(&sel.join(","));
        }
        if let Some(n) = &target.node {
            lp = lp.fields(&format!("metadata.name={n}"));
        }
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(|e| api_err("list nodes", &e))?;
        let infos: Vec<NodeInfo> = nodes.items.iter().map(node_info).collect();
        let what = match (&target.node, sel.is_empty()) {
            (Some(n), true) => format!("node {n}"),
            (Some(n), false) => format!("node {n} with labels {}", sel.join(",")),
            (None, _) => format!("nodes with labels {}", sel.join(",")),
        };
        if !infos.iter().any(|n| n.ready) {
            return Err(ClusterError::NoReadyNode(format!("no Ready {what}")));
        }
        fp.nodes = infos;
        fp.node_target = Some(what);
        Ok(())
    }

    async fn can(&self, verb: &str, resource: &str, sub: Option<&str>) -> Result<bool, ClusterError> {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.into()),
                    resource: Some(resource.into()),
                    subresource: sub.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let r = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| api_err("create selfsubjectaccessreviews", &e))?;
        Ok(r.status.is_some_and(|s| s.allowed))
    }

    /// Namespaces labelled with a run id (to list leftovers of this or an interrupted run).
    pub async fn namespaces_of_run(&self, run_id: Option<&str>) -> Result<Vec<String>, ClusterError> {
        let sel = match run_id {
            Some(r) => format!("{RUN_LABEL}={r}"),
            None => RUN_LABEL.to_string(),
        };
        let list = Api::<Namespace>::all(self.client.clone())
            .list(&ListParams::default().labels(&sel))
            .await
            .map_err(|e| api_err("list namespaces", &e))?;
        Ok(list.items.into_iter().filter_map(|n| n.metadata.name).collect())
    }
}

fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn node_info(n: &Node) -> NodeInfo {
    let st = n.status.clone().unwrap_or_default();
    let info = st.node_info.unwrap_or_default();
    let ready = st
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    NodeInfo {
        name: n.metadata.name.clone().unwrap_or_default(),
        ready,
        kubelet_version: info.kubelet_version,
        container_runtime_version: info.container_runtime_version,
        kernel_version: info.kernel_version,
        os_image: info.os_image,
        architecture: info.architecture,
    }
}

/// The API calls one case makes, counted (watches and log streams separately).
#[derive(Clone)]
pub struct CaseApi {
    pub client: Client,
    pub namespace: String,
    requests: Arc<AtomicU64>,
}

impl CaseApi {
    pub fn new(client: Client, namespace: &str) -> Self {
        CaseApi {
            client,
            namespace: namespace.to_string(),
            requests: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Non-watch requests made so far (namespace, apply, delete, log fetches).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates the case namespace with the run labels.
    pub async fn create_namespace(&self, run_id: &str, case: &str) -> Result<(), ClusterError> {
        self.count();
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": self.namespace,
                "labels": { RUN_LABEL: run_id, CASE_LABEL: case, MANAGED_BY: "podlife" }
            }
        }))
        .expect("static namespace object");
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .map_err(|e| api_err(format!("create namespace {}", self.namespace), &e))?;
        Ok(())
    }

    /// Server-side apply of the pod as an untyped object, so fields newer than our
    /// k8s-openapi are sent as written.
    pub async fn apply_pod(&self, pod: &serde_json::Value) -> Result<String, ClusterError> {
        self.count();
        let name = pod
            .pointer("/metadata/name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let mut pod = pod.clone();
        pod["metadata"]["namespace"] = serde_json::Value::String(self.namespace.clone());
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
        api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&pod))
            .await
            .map_err(|e| api_err(format!("apply pod {}/{name}", self.namespace), &e))?;
        Ok(name)
    }

    /// Strategic-merge-patches the pod: maps merge key by key, containers merge by name.
    pub async fn patch_pod(&self, name: &str, patch: &serde_json::Value) -> Result<(), ClusterError> {
        self.count();
        self.pods()
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map_err(|e| api_err(format!("patch pod {}/{name}", self.namespace), &e))?;
        Ok(())
    }

    /// Deletes the pod, optionally overriding the grace period.
    pub async fn delete_pod(&self, name: &str, grace: Option<i64>) -> Result<(), ClusterError> {
        self.count();
        let mut dp = DeleteParams::background();
        if let Some(g) = grace {
            dp.grace_period_seconds = Some(u32::try_from(g).unwrap_or(0));
        }
        match self.pods().delete(name, &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(api_err(format!("delete pod {}/{name}", self.namespace), &e)),
        }
    }

    /// Deletes the namespace and waits (bounded) until it is gone. Returns false when it is
    /// still there at the deadline.
    pub async fn delete_namespace(&self, wait: Duration) -> Result<bool, ClusterError> {
        self.count();
        let api = Api::<Namespace>::all(self.client.clone());
        let uid = match api.delete(&self.namespace, &DeleteParams::background()).await {
            Ok(either) => either.left().and_then(|ns| ns.metadata.uid),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(true),
            Err(e) => return Err(api_err(format!("delete namespace {}", self.namespace), &e)),
        };
        let Some(uid) = uid else { return Ok(true) };
        let cond = kube::runtime::wait::conditions::is_deleted::<Namespace>(&uid);
        match tokio::time::timeout(wait, kube::runtime::wait::await_condition(api, &self.namespace, cond)).await {
            Ok(Ok(_)) => Ok(true),
            Ok(Err(e)) => Err(ClusterError::Api {
                what: format!("wait for namespace {} to go", self.namespace),
                reason: e.to_string(),
            }),
            Err(_) => Ok(false),
        }
    }
}
