//! Node and runtime targeting (`Target`): what a run pins every case's pod to on a mixed cluster.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::NodeInfo;

/// What is being certified on a mixed cluster: injected into every case's pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<String>,
    /// `--each-node`: every case runs once on each selected node (`node_selector` then chooses
    /// the nodes), pinned to it by [`Target::on_node`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub each_node: bool,
    /// `--each-group K`: like `each_node`, on K nodes sampled from each fingerprint group (see
    /// `results::fleet::sample_groups`); the others are taken as identical to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_group: Option<usize>,
}

impl Target {
    pub fn is_empty(&self) -> bool {
        self.node.is_none() && self.node_selector.is_empty() && self.runtime_class.is_none() && !self.each_node
    }

    /// The target of one `--each-node` copy of a case: this target, pinned to `node`.
    ///
    /// Pinned by a nodeSelector on `kubernetes.io/hostname`, not by `spec.nodeName`: a pod with
    /// a nodeName bypasses the scheduler, so it gets no `Scheduled` event and no
    /// `PodScheduled` condition from it (the status suite expects both), is not held back by
    /// the node's capacity (the kubelet rejects it as OutOfcpu/OutOfmemory instead: a false
    /// failure under load) and ignores taints. Through the scheduler each copy runs exactly as
    /// an unpinned case would, on the chosen node. A node without the label falls back to
    /// nodeName.
    pub fn on_node(&self, node: &NodeInfo) -> Target {
        let mut t = Target {
            each_node: false,
            per_group: None,
            ..self.clone()
        };
        match &node.hostname {
            Some(h) => {
                t.node_selector.insert(super::HOSTNAME_LABEL.to_string(), h.clone());
            }
            None => t.node = Some(node.name.clone()),
        }
        t
    }

    /// `--node NAME` pinned the way `on_node` pins an `--each-node` copy: through the scheduler,
    /// by the node's `kubernetes.io/hostname` label (found among `nodes`, the preflight's), so the
    /// pod gets its `Scheduled` event, its unscheduled `Pending` and the capacity check. A node
    /// without that label (or not listed) keeps `spec.nodeName`.
    pub(crate) fn through_scheduler(&self, nodes: &[NodeInfo]) -> Target {
        let Some(name) = &self.node else { return self.clone() };
        match nodes.iter().find(|n| &n.name == name) {
            Some(n) if n.hostname.is_some() => Target {
                node: None,
                ..self.on_node(n)
            },
            _ => self.clone(),
        }
    }

    /// Sets nodeName, merges nodeSelector and sets runtimeClassName in a pod manifest.
    pub fn apply(&self, pod: &mut serde_json::Value) {
        let Some(spec) = pod.get_mut("spec").and_then(|s| s.as_object_mut()) else {
            return;
        };
        if let Some(n) = &self.node {
            spec.insert("nodeName".into(), serde_json::Value::String(n.clone()));
        }
        if !self.node_selector.is_empty() {
            let sel = spec.entry("nodeSelector").or_insert_with(|| serde_json::json!({}));
            if let Some(obj) = sel.as_object_mut() {
                for (k, v) in &self.node_selector {
                    obj.insert(k.clone(), serde_json::Value::String(v.clone()));
                }
            }
        }
        if let Some(rc) = &self.runtime_class {
            spec.insert("runtimeClassName".into(), serde_json::Value::String(rc.clone()));
        }
    }
}
