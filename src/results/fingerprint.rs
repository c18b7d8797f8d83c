//! The cluster fingerprint every report records (`Fingerprint`, `NodeInfo`): part of a run's
//! results, read by the reporters and by replays; `cluster` only fills it in.

use serde::{Deserialize, Serialize};

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
    /// Its `kubernetes.io/hostname` label: what `--each-node` pins pods with (see `fleet_target`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The runtime handlers the kubelet reports (`status.runtimeHandlers`, Kubernetes 1.30+);
    /// the default handler is reported without a name and listed as `default`. Which binary
    /// (runc, crun) the default handler runs is not visible through the API.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_handlers: Vec<String>,
    /// Cordoned (`spec.unschedulable`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// Taints as `key=value:Effect`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<String>,
}

impl NodeInfo {
    /// Why `--each-node` leaves this node out by default (None: it certifies it): not Ready,
    /// cordoned, or a NoSchedule/NoExecute taint (podlife's pods tolerate none, so the scheduler
    /// would never place them there).
    pub(crate) fn left_out_because(&self) -> Option<String> {
        if !self.ready {
            return Some("not Ready".into());
        }
        if self.unschedulable {
            return Some("cordoned".into());
        }
        let blocking: Vec<&String> = self
            .taints
            .iter()
            .filter(|t| t.ends_with(":NoSchedule") || t.ends_with(":NoExecute"))
            .collect();
        if !blocking.is_empty() {
            let list: Vec<&str> = blocking.iter().map(|t| t.as_str()).collect();
            return Some(format!("taint {}", list.join(", ")));
        }
        None
    }

    /// The facts that make two nodes run pods the same way: kubelet, runtime and its handlers,
    /// kernel, OS image, architecture. Nodes with equal keys form a group for the odd node out.
    pub(crate) fn group_key(&self) -> String {
        format!(
            "kubelet {} · {} · handlers [{}] · kernel {} · {} · {}",
            self.kubelet_version,
            self.container_runtime_version,
            self.runtime_handlers.join(", "),
            self.kernel_version,
            self.os_image,
            self.architecture
        )
    }
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
    /// `--each-node`: every case ran once on each node of `nodes`, pinned to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub each_node: bool,
    /// `--each-group K`: how many nodes of each fingerprint group ran the cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_group: Option<usize>,
    /// `--each-group`: the nodes that did not run, taken as identical to the sampled nodes of
    /// their group (same fingerprint). Their verdicts are their group's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identical: Vec<NodeInfo>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeClassInfo {
    pub name: String,
    pub handler: String,
}

impl Fingerprint {
    /// `(major, minor)` of the server.
    pub(crate) fn server_minor(&self) -> Option<(u32, u32)> {
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
            out.extend(n.properties(&format!("node.{}", n.name)));
        }
        out
    }
}

impl NodeInfo {
    /// Key/value pairs of this node's fingerprint, keys prefixed with `prefix`.
    pub fn properties(&self, prefix: &str) -> Vec<(String, String)> {
        let p = prefix;
        let mut out = vec![
            (format!("{p}.kubelet"), self.kubelet_version.clone()),
            (format!("{p}.runtime"), self.container_runtime_version.clone()),
        ];
        if !self.runtime_handlers.is_empty() {
            out.push((format!("{p}.runtimeHandlers"), self.runtime_handlers.join(",")));
        }
        out.extend([
            (format!("{p}.kernel"), self.kernel_version.clone()),
            (format!("{p}.osImage"), self.os_image.clone()),
            (format!("{p}.arch"), self.architecture.clone()),
        ]);
        out
    }
}
