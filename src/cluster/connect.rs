//! Connecting like kubectl (`ConnectOptions`, `Cluster::connect`) and the preflight: version,
//! nodes, permissions, the node target, all before a case touches the cluster.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::{ClusterError, HOSTNAME_LABEL, Target, api_err, describe};
use crate::results::{Fingerprint, NodeInfo, RuntimeClassInfo};

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

/// A connected cluster.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    pub tried: String,
    /// Makes a client on new connections of its own, sharing no pooled connection with
    /// `client` (`None`: not possible, e.g. a client given in-process).
    pub fresh: Option<FreshClient>,
}

/// Makes a client on connections of its own (see `Cluster::fresh`).
pub type FreshClient = std::sync::Arc<dyn Fn() -> Option<Client> + Send + Sync>;

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
        let mut config = config;
        // kube sets no read timeout by default: a server that accepts the connection and never
        // answers would hang a request forever. Each request is also bounded by podlife itself
        // (`--request-timeout`); this is the transport's backstop, above the 290 s a watch may
        // legitimately stay silent before the server ends it.
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        // Count the read timeout from when a request is sent, not from when its pooled
        // connection went idle.
        config.reset_reader_on_write = true;
        let client = Client::try_from(config.clone()).map_err(|e| ClusterError::NoConfig {
            tried: tried.clone(),
            reason: one_line(&e),
        })?;
        Ok(Cluster {
            client,
            tried,
            fresh: Some(std::sync::Arc::new(move || Client::try_from(config.clone()).ok())),
        })
    }

    pub fn from_client(client: Client) -> Self {
        Cluster {
            client,
            tried: "in-process client".into(),
            fresh: None,
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
            ("list", "events", None),
            ("watch", "events", None),
            // A new namespace is used only once its default ServiceAccount and root CA exist.
            ("get", "serviceaccounts", None),
            ("get", "configmaps", None),
        ];
        self.check_permissions(needed).await?;
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

    /// Checks the current user may do each `(verb, resource, subresource)`; the error lists
    /// everything missing. The preflight checks what every case needs; a run checks what its
    /// selected cases need beyond that (auxiliary objects) before any case starts.
    pub(crate) async fn check_permissions(&self, needed: &[(&str, &str, Option<&str>)]) -> Result<(), ClusterError> {
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
        Ok(())
    }

    /// Checks what `--node`, `--node-selector` and `--runtime-class` name exists, narrows the
    /// fingerprint to the targeted nodes and records the RuntimeClass handler.
    pub(crate) async fn check_target(&self, fp: &mut Fingerprint, target: &Target) -> Result<(), ClusterError> {
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
                        code: Some(404),
                    });
                }
                Err(e) => return Err(api_err(format!("get runtimeclass {rc}"), &e)),
            }
        }
        if target.each_node {
            return self.select_fleet(fp, target).await;
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

    /// `--each-node`: the nodes to certify, each with its fingerprint. The set is every node
    /// matching `--node-selector` (all nodes without one) that is Ready, not cordoned and has no
    /// NoSchedule/NoExecute taint; the fingerprint lists exactly those, and `node_target` says
    /// which were left out and why.
    pub(crate) async fn select_fleet(&self, fp: &mut Fingerprint, target: &Target) -> Result<(), ClusterError> {
        let mut lp = ListParams::default();
        let sel: Vec<String> = target.node_selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !sel.is_empty() {
            lp = lp.labels(&sel.join(","));
        }
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(|e| api_err("list nodes (--each-node)", &e))?;
        let mut infos: Vec<NodeInfo> = nodes.items.iter().map(node_info).collect();
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        let (chosen, out): (Vec<NodeInfo>, Vec<NodeInfo>) =
            infos.into_iter().partition(|n| n.left_out_because().is_none());
        let among = if sel.is_empty() {
            "nodes".to_string()
        } else {
            format!("nodes with labels {}", sel.join(","))
        };
        if chosen.is_empty() {
            let why: Vec<String> = out
                .iter()
                .map(|n| format!("{} ({})", n.name, n.left_out_because().unwrap_or_default()))
                .collect();
            return Err(ClusterError::NoReadyNode(if why.is_empty() {
                format!("--each-node: no {among}")
            } else {
                format!("--each-node: no Ready, schedulable {among}: {}", why.join(", "))
            }));
        }
        let mut what = format!("each node: {} Ready, schedulable {among}", chosen.len());
        if !out.is_empty() {
            let why: Vec<String> = out
                .iter()
                .map(|n| format!("{} ({})", n.name, n.left_out_because().unwrap_or_default()))
                .collect();
            what.push_str(&format!("; left out: {}", why.join(", ")));
        }
        fp.nodes = chosen;
        fp.node_target = Some(what);
        fp.each_node = true;
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
    let spec = n.spec.clone().unwrap_or_default();
    NodeInfo {
        name: n.metadata.name.clone().unwrap_or_default(),
        ready,
        kubelet_version: info.kubelet_version,
        container_runtime_version: info.container_runtime_version,
        kernel_version: info.kernel_version,
        os_image: info.os_image,
        architecture: info.architecture,
        hostname: n.metadata.labels.as_ref().and_then(|l| l.get(HOSTNAME_LABEL)).cloned(),
        runtime_handlers: st
            .runtime_handlers
            .iter()
            .flatten()
            .map(|h| match h.name.as_deref() {
                None | Some("") => "default".to_string(),
                Some(n) => n.to_string(),
            })
            .collect(),
        unschedulable: spec.unschedulable.unwrap_or(false),
        taints: spec
            .taints
            .iter()
            .flatten()
            .map(|t| match &t.value {
                Some(v) if !v.is_empty() => format!("{}={v}:{}", t.key, t.effect),
                _ => format!("{}:{}", t.key, t.effect),
            })
            .collect(),
    }
}

/// Bound on opening a TCP+TLS connection to the API server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on silence while reading an answer: above the 290 s the watcher asks the server to
/// keep a watch open, so only a server that stopped answering trips it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
