//! A case's objects on the cluster: server-side apply of its pod and ConfigMaps/Secrets,
//! patches, ephemeral containers and deletes of its objects, each retried through an outage.

use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use super::{CaseApi, ClusterError, FIELD_MANAGER};

/// How often an ephemeral container's update reads the pod again after a 409 (a concurrent
/// change of the pod): each conflict is a real write by someone else, so a few suffice.
const MAX_CONFLICTS: u32 = 5;

impl CaseApi {
    /// Server-side apply of the pod as an untyped object, so fields newer than our
    /// k8s-openapi are sent as written. Idempotent, so it waits up to `outage_budget` for an
    /// unavailable API.
    pub(crate) async fn apply_pod(
        &self,
        pod: &serde_json::Value,
        outage_budget: Duration,
    ) -> Result<String, ClusterError> {
        self.apply_namespaced("Pod", pod, outage_budget).await
    }

    /// Server-side apply of an auxiliary object (a core/v1 ConfigMap, Secret or Service, as
    /// validated by the suite loader) into the case namespace, the same way as the pod: created
    /// in our namespace only, so deleting the namespace deletes it. Returns its name.
    pub(crate) async fn apply_object(
        &self,
        obj: &serde_json::Value,
        outage_budget: Duration,
    ) -> Result<String, ClusterError> {
        let kind = obj.get("kind").and_then(|v| v.as_str()).unwrap_or_default().to_string();
        self.apply_namespaced(&kind, obj, outage_budget).await
    }

    async fn apply_namespaced(
        &self,
        kind: &str,
        obj: &serde_json::Value,
        outage_budget: Duration,
    ) -> Result<String, ClusterError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let mut obj = obj.clone();
        // Whatever the manifest says, the object goes into the case namespace.
        obj["metadata"]["namespace"] = serde_json::Value::String(self.namespace.clone());
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", kind));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
        let what = format!("apply {} {}/{name}", kind.to_lowercase(), self.namespace);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        let patch = Patch::Apply(&obj);
        self.retrying(outage_budget, || {
            self.call(&what, None, true, api.patch(&name, &pp, &patch))
        })
        .await?;
        Ok(name)
    }

    /// Strategic-merge-patches the pod: maps merge key by key, containers merge by name. The same
    /// patch twice is the same pod, so it is retried while the API is unavailable, within
    /// `outage_budget`.
    pub(crate) async fn patch_pod(
        &self,
        name: &str,
        patch: &serde_json::Value,
        outage_budget: Duration,
    ) -> Result<(), ClusterError> {
        let what = format!("patch pod {}/{name}", self.namespace);
        let pods = self.pods();
        let pp = PatchParams::default();
        let patch = Patch::Strategic(patch);
        self.retrying(outage_budget, || {
            self.call(&what, None, true, pods.patch(name, &pp, &patch))
        })
        .await?;
        Ok(())
    }

    /// Adds an ephemeral container to the running pod through the `ephemeralcontainers`
    /// subresource: a strategic merge patch (containers merge by name, as `kubectl debug` sends
    /// it), or `update`: the subresource read, the container appended, the list replaced (a PUT
    /// that carries the resourceVersion read, so a concurrent change is a 409, not lost).
    pub(crate) async fn add_ephemeral(
        &self,
        name: &str,
        container: &serde_json::Value,
        via: crate::suite::EphemeralVia,
        outage_budget: Duration,
    ) -> Result<(), ClusterError> {
        // Retried while the API is unavailable: the patch adds the same container again (no
        // change), and the update re-reads the list and appends only a container not there yet.
        // The update's 409 (the pod changed between our read and our PUT: the kubelet writes
        // its status meanwhile, live after an API outage) is answered by reading again, a few
        // times: the container is added on the pod as it now is, never over a change.
        let mut conflicts = 0;
        loop {
            match self
                .retrying(outage_budget, || self.add_ephemeral_once(name, container, via))
                .await
            {
                Err(ClusterError::Api { code: Some(409), .. })
                    if via == crate::suite::EphemeralVia::Update && conflicts < MAX_CONFLICTS =>
                {
                    conflicts += 1;
                }
                r => return r,
            }
        }
    }

    async fn add_ephemeral_once(
        &self,
        name: &str,
        container: &serde_json::Value,
        via: crate::suite::EphemeralVia,
    ) -> Result<(), ClusterError> {
        let what = format!("{} pods/ephemeralcontainers {}/{name}", via.as_str(), self.namespace);
        match via {
            crate::suite::EphemeralVia::Patch => {
                let patch = serde_json::json!({"spec": {"ephemeralContainers": [container]}});
                self.call(
                    &what,
                    None,
                    true,
                    self.pods().patch_subresource(
                        "ephemeralcontainers",
                        name,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    ),
                )
                .await?;
            }
            crate::suite::EphemeralVia::Update => {
                // Untyped, so the containers already there go back exactly as read (the API
                // refuses any change to an existing ephemeral container, and a field newer than
                // our k8s-openapi would otherwise be dropped).
                let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"));
                let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
                let mut pod = self
                    .call(&what, None, true, api.get_subresource("ephemeralcontainers", name))
                    .await?;
                let spec = &mut pod.data["spec"];
                if !spec.is_object() {
                    *spec = serde_json::json!({});
                }
                let list = &mut spec["ephemeralContainers"];
                if !list.is_array() {
                    *list = serde_json::json!([]);
                }
                if let Some(l) = list.as_array_mut() {
                    // An earlier try whose answer was lost may have added it already.
                    if l.iter().any(|c| c.get("name") == container.get("name")) {
                        return Ok(());
                    }
                    l.push(container.clone());
                }
                self.call(
                    &what,
                    None,
                    true,
                    api.replace_subresource("ephemeralcontainers", name, &PostParams::default(), &pod),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Resizes containers in place through the pod's `resize` subresource. `patch` sends
    /// `patch` (a strategic merge patch: containers merge by name; sending it again gives the
    /// same pod, so it is retried while the API is unavailable). `update` reads the
    /// subresource, replaces each container's resources with `resources` (by name), and writes
    /// the pod back with the resourceVersion read; a 409 (the pod changed between our read and
    /// our PUT: the kubelet writes its status meanwhile) reads again, a few times, so the
    /// resize is never written over someone else's change.
    pub(crate) async fn resize_pod(
        &self,
        name: &str,
        via: crate::suite::ResizeVia,
        patch: &serde_json::Value,
        resources: &std::collections::BTreeMap<String, serde_json::Value>,
        outage_budget: Duration,
    ) -> Result<(), ClusterError> {
        let mut conflicts = 0;
        loop {
            let r = self
                .retrying(outage_budget, || self.resize_once(name, via, patch, resources))
                .await;
            match r {
                Err(ClusterError::Api { code: Some(409), .. })
                    if via == crate::suite::ResizeVia::Update && conflicts < MAX_CONFLICTS =>
                {
                    conflicts += 1;
                }
                r => return r,
            }
        }
    }

    async fn resize_once(
        &self,
        name: &str,
        via: crate::suite::ResizeVia,
        patch: &serde_json::Value,
        resources: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<(), ClusterError> {
        let what = format!("{} pods/resize {}/{name}", via.as_str(), self.namespace);
        match via {
            crate::suite::ResizeVia::Patch => {
                self.call(
                    &what,
                    None,
                    true,
                    self.pods()
                        .patch_subresource("resize", name, &PatchParams::default(), &Patch::Strategic(patch)),
                )
                .await?;
            }
            crate::suite::ResizeVia::Update => {
                // Untyped, so every other field goes back exactly as read.
                let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"));
                let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
                let mut pod = self
                    .call(&what, None, true, api.get_subresource("resize", name))
                    .await?;
                let mut missing: Vec<&str> = resources.keys().map(String::as_str).collect();
                for key in ["containers", "initContainers"] {
                    if let Some(list) = pod.data["spec"][key].as_array_mut() {
                        for c in list {
                            let cname = c.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_string();
                            if let Some(r) = resources.get(&cname) {
                                c["resources"] = r.clone();
                                missing.retain(|m| *m != cname);
                            }
                        }
                    }
                }
                if !missing.is_empty() {
                    return Err(ClusterError::Api {
                        what,
                        reason: format!("the pod read has no container {}", missing.join(", ")),
                        code: None,
                    });
                }
                self.call(
                    &what,
                    None,
                    true,
                    api.replace_subresource("resize", name, &PostParams::default(), &pod),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Deletes an auxiliary object of the case namespace (an `object: {delete}` step; the loader
    /// lets it name only an object this case created). Retried while the API is unavailable,
    /// within `outage_budget`: a DELETE sent again finds the object gone (404, done).
    pub(crate) async fn delete_object(
        &self,
        kind: &str,
        name: &str,
        outage_budget: Duration,
    ) -> Result<(), ClusterError> {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", kind));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
        let what = format!("delete {} {}/{name}", kind.to_lowercase(), self.namespace);
        let dp = DeleteParams::default();
        match self
            .retrying(outage_budget, || self.call(&what, None, true, api.delete(name, &dp)))
            .await
        {
            Ok(_) | Err(ClusterError::Api { code: Some(404), .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
