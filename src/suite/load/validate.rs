//! A small offline API validator: what the API server would refuse in a pod manifest, an ephemeral
//! container, an object or a `patch` step, so bad input fails at `validate`, never against the cluster.

use super::*;

/// Why an `ephemeral` step's container would be refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum EphemeralError {
    #[error("an ephemeral container is a mapping such as `{{name: debugger, image: ..., command: [...]}}`")]
    NotMapping,
    #[error("invalid container name \"{0}\": use 1-63 characters of a-z, 0-9 and `-` (a DNS label)")]
    InvalidName(String),
    #[error("container name `{0}` is already used in the pod")]
    NameTaken(String),
    /// A field the API refuses in an ephemeral container.
    #[error("an ephemeral container may not set `{0}` (the API refuses it)")]
    Forbidden(&'static str),
    #[error("an ephemeral container needs an `image`")]
    NoImage,
    /// A `${...}` that is no `containerImages` entry.
    #[error("{0}")]
    UnknownTemplate(String),
    #[error("not a valid ephemeral container: {path}: {reason}")]
    Invalid { path: String, reason: String },
    /// `known` lists the pod's regular, init and sidecar containers.
    #[error("targetContainerName `{target}` is not a container of the pod (it has: {known})")]
    NoTarget { target: String, known: String },
}

/// Why an auxiliary object (`objects:`, an `object` step) would be refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum ObjectError {
    #[error("the object is not a mapping")]
    NotMapping,
    #[error("apiVersion `{api}`, kind `{kind}`: a case may create only v1 {} beside its pod (they go with the case namespace; other kinds would start pods podlife does not observe, change what the pod may do, or outlive the namespace)", OBJECT_KINDS.join(", "))]
    KindRefused { api: String, kind: String },
    #[error("the {0} has no metadata.name")]
    NoName(String),
    #[error("the {0} uses metadata.generateName: give a fixed name, the pod refers to it")]
    GenerateName(String),
    #[error("invalid {kind} name \"{name}\": {}", name_rule(kind))]
    InvalidName { kind: String, name: String },
    /// A Service type whose effects reach beyond the namespace and the pod under test.
    #[error("spec.type: {0} reaches beyond the case namespace (node ports, load balancers); use ClusterIP")]
    ServiceType(String),
    /// `hint` is empty or a parenthesised advice, with its leading space.
    #[error("not a valid v1 {kind}: {path}: {reason}{hint}")]
    Invalid {
        kind: String,
        path: String,
        reason: String,
        hint: &'static str,
    },
}

/// The naming rule an object of `kind` breaks: a Service name is a DNS-1035 label, others are
/// DNS-1123 subdomains.
fn name_rule(kind: &str) -> &'static str {
    if kind == "Service" {
        "use at most 63 characters of a-z, 0-9 and `-`, starting with a letter and not ending with `-`"
    } else {
        "use lowercase DNS labels (a-z, 0-9, `-`) separated by `.`, at most 253 characters"
    }
}

/// Why a case's pod manifest would be refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum PodError {
    #[error("manifest is not a mapping")]
    NotMapping,
    #[error("expected apiVersion v1, kind Pod; found apiVersion `{api}`, kind `{kind}`")]
    NotPod { api: String, kind: String },
    /// A `${...}` that is no `containerImages` entry.
    #[error("{0}")]
    UnknownTemplate(String),
    #[error("the Pod has no `metadata.name`")]
    NoName,
    #[error("`metadata.name` is not a string")]
    NameNotString,
    #[error(
        "invalid pod name \"{0}\" in `metadata.name`: use at most 253 characters of a-z, 0-9, `-` and `.`, starting and ending with a letter or digit (a DNS-1123 subdomain, as the API requires)"
    )]
    InvalidName(String),
    #[error("not a valid v1 Pod: {0}")]
    Invalid(String),
    #[error("the Pod has no spec")]
    NoSpec,
    #[error("the Pod has no containers")]
    NoContainers,
    #[error("container name `{0}` used twice")]
    NameTwice(String),
    #[error("a container has no name")]
    Unnamed,
}

/// A `patch` step may only change what the API lets a running pod change (the rest is
/// rejected by the API server as "pod updates may not change fields other than ...").
pub(super) fn check_patch(
    refs: &mut Refs,
    at: &Loc<Step>,
    patch: &PatchStep,
    sp: &str,
    pod: &serde_json::Value,
    images: &BTreeMap<String, String>,
) {
    if patch.is_empty() {
        refs.ctx.err(
            at,
            format!("{sp}.patch"),
            "a patch needs `labels`, `annotations`, `activeDeadlineSeconds` or `containerImages`",
        );
    }
    if let Some(d) = &patch.active_deadline_seconds {
        let path = format!("{sp}.patch.activeDeadlineSeconds");
        if d.value < 1 {
            refs.ctx.err(d, path, format!("must be 1 or more, got {}", d.value));
        } else if let Some(cur) = pod.pointer("/spec/activeDeadlineSeconds").and_then(|v| v.as_i64())
            && d.value > cur
        {
            // ValidatePodUpdate: activeDeadlineSeconds may be set or lowered, never raised.
            refs.ctx.err(
                d,
                path,
                format!(
                    "the API only lets a running pod lower activeDeadlineSeconds; the manifest has {cur}, the patch raises it to {}",
                    d.value
                ),
            );
        }
    }
    for (name, image) in &patch.container_images {
        let path = format!("{sp}.patch.containerImages.{name}");
        if refs
            .all
            .iter()
            .any(|c| &c.name == name && c.kind == ContainerKind::Ephemeral)
        {
            refs.ctx.err(
                image,
                path,
                format!("`{name}` is an ephemeral container: the API lets a pod patch change only its containers' and init containers' images"),
            );
            continue;
        }
        if !refs.containers.contains(name.as_str()) {
            let known = refs.all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
            refs.ctx.err(
                image,
                path,
                format!("unknown container `{name}` (the pod has: {known})"),
            );
            continue;
        }
        if image.value.trim().is_empty() {
            refs.ctx.err(image, path, "the image is empty");
            continue;
        }
        if let Some(e) = unknown_template(&serde_json::Value::String(image.value.clone()), images) {
            refs.ctx.err(image, path, e);
        }
    }
}

/// Fields the API refuses on an ephemeral container (validateEphemeralContainers): it gets no
/// ports, probes, lifecycle hooks or resources of its own.
pub(super) const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
    "restartPolicy",
];

/// Checks the container of an `ephemeral` step against the pod's containers; returns its name.
pub(super) fn check_ephemeral(
    v: &serde_json::Value,
    images: &BTreeMap<String, String>,
    containers: &[ContainerInfo],
) -> Result<String, EphemeralError> {
    let obj = v.as_object().ok_or(EphemeralError::NotMapping)?;
    let name = obj.get("name").and_then(|v| v.as_str()).unwrap_or("");
    let label = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !label {
        return Err(EphemeralError::InvalidName(name.to_string()));
    }
    if containers.iter().any(|c| c.name == name) {
        return Err(EphemeralError::NameTaken(name.to_string()));
    }
    if let Some(f) = EPHEMERAL_FORBIDDEN.iter().find(|f| obj.contains_key(**f)) {
        return Err(EphemeralError::Forbidden(f));
    }
    if obj
        .get("image")
        .and_then(|v| v.as_str())
        .is_none_or(|i| i.trim().is_empty())
    {
        return Err(EphemeralError::NoImage);
    }
    if let Some(e) = unknown_template(v, images) {
        return Err(EphemeralError::UnknownTemplate(e));
    }
    let mut rendered = v.clone();
    substitute(&mut rendered, images);
    let ec: k8s_openapi::api::core::v1::EphemeralContainer =
        serde_path_to_error::deserialize(rendered).map_err(|e| EphemeralError::Invalid {
            path: e.path().to_string(),
            reason: e.inner().to_string(),
        })?;
    if let Some(t) = &ec.target_container_name
        && !containers
            .iter()
            .any(|c| &c.name == t && c.kind != ContainerKind::Ephemeral)
    {
        let known = containers
            .iter()
            .filter(|c| c.kind != ContainerKind::Ephemeral)
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(EphemeralError::NoTarget {
            target: t.clone(),
            known,
        });
    }
    Ok(name.to_string())
}

/// Checks an auxiliary object: one core/v1 object of an allowed kind (`OBJECT_KINDS`), valid for
/// its type, with a name the API accepts; returns its kind and name. `metadata.namespace` may be
/// set but is replaced by the case namespace, like the pod's.
pub(super) fn check_object(v: &serde_json::Value) -> Result<(String, String), ObjectError> {
    let obj = v.as_object().ok_or(ObjectError::NotMapping)?;
    let api = obj.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = obj.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    if api != "v1" || !OBJECT_KINDS.contains(&kind) {
        return Err(ObjectError::KindRefused {
            api: api.to_string(),
            kind: kind.to_string(),
        });
    }
    let name = v.pointer("/metadata/name").and_then(|v| v.as_str()).unwrap_or("");
    if name.is_empty() {
        return Err(ObjectError::NoName(kind.to_string()));
    }
    if v.pointer("/metadata/generateName").is_some() {
        return Err(ObjectError::GenerateName(kind.to_string()));
    }
    // ConfigMap and Secret names are DNS-1123 subdomains; a Service name is a DNS-1035 label
    // (it becomes a DNS name and the prefix of its environment variables).
    let valid = if kind == "Service" {
        name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.ends_with('-')
    } else {
        name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    };
    if !valid {
        return Err(ObjectError::InvalidName {
            kind: kind.to_string(),
            name: name.to_string(),
        });
    }
    use k8s_openapi::api::core::v1 as core;
    let typed = match kind {
        "ConfigMap" => serde_path_to_error::deserialize::<_, core::ConfigMap>(v.clone()).map(|_| Ok(())),
        "Secret" => serde_path_to_error::deserialize::<_, core::Secret>(v.clone()).map(|_| Ok(())),
        _ => serde_path_to_error::deserialize::<_, core::Service>(v.clone()).map(|svc| {
            // A NodePort or LoadBalancer Service opens a port on every node or provisions an
            // external load balancer: effects beyond the namespace and the pod under test.
            if let Some(t @ ("NodePort" | "LoadBalancer")) = svc.spec.as_ref().and_then(|s| s.type_.as_deref()) {
                return Err(ObjectError::ServiceType(t.to_string()));
            }
            Ok(())
        }),
    };
    match typed {
        Ok(Ok(())) => {}
        Ok(Err(m)) => return Err(m),
        Err(e) => {
            let hint = if kind == "Secret" && e.path().to_string().starts_with("data") {
                " (`data` values are base64; use `stringData` for plain text)"
            } else {
                ""
            };
            return Err(ObjectError::Invalid {
                kind: kind.to_string(),
                path: e.path().to_string(),
                reason: e.inner().to_string(),
                hint,
            });
        }
    }
    Ok((kind.to_string(), name.to_string()))
}

/// Checks that the value is a v1 Pod, that its `${...}` templates are known images, and returns
/// its containers.
pub(super) fn check_pod(
    pod: &serde_json::Value,
    images: &BTreeMap<String, String>,
) -> Result<Vec<ContainerInfo>, PodError> {
    let obj = pod.as_object().ok_or(PodError::NotMapping)?;
    let api = obj.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = obj.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    if api != "v1" || kind != "Pod" {
        return Err(PodError::NotPod {
            api: api.to_string(),
            kind: kind.to_string(),
        });
    }
    if let Some(e) = unknown_template(pod, images) {
        return Err(PodError::UnknownTemplate(e));
    }
    match obj.get("metadata").and_then(|m| m.get("name")) {
        None => return Err(PodError::NoName),
        Some(n) => {
            let name = n.as_str().ok_or(PodError::NameNotString)?;
            if !dns1123_subdomain(name) {
                return Err(PodError::InvalidName(name.to_string()));
            }
        }
    }
    let mut rendered = pod.clone();
    substitute(&mut rendered, images);
    let typed: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(rendered).map_err(|e| PodError::Invalid(e.to_string()))?;
    let spec = typed.spec.ok_or(PodError::NoSpec)?;
    if spec.containers.is_empty() {
        return Err(PodError::NoContainers);
    }
    let mut out = vec![];
    for c in spec.init_containers.unwrap_or_default() {
        let kind = if c.restart_policy.as_deref() == Some("Always") {
            ContainerKind::Sidecar
        } else {
            ContainerKind::Init
        };
        out.push(ContainerInfo { name: c.name, kind });
    }
    for c in spec.containers {
        out.push(ContainerInfo {
            name: c.name,
            kind: ContainerKind::Regular,
        });
    }
    let mut names = BTreeSet::new();
    for c in &out {
        if !names.insert(c.name.clone()) {
            return Err(PodError::NameTwice(c.name.clone()));
        }
        if c.name.is_empty() {
            return Err(PodError::Unnamed);
        }
    }
    Ok(out)
}

/// A DNS-1123 subdomain, what the API server accepts as a pod name.
pub(super) fn dns1123_subdomain(n: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !n.is_empty()
        && n.len() <= 253
        && n.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty() && b.iter().all(|&c| alnum(c) || c == b'-') && alnum(b[0]) && alnum(b[b.len() - 1])
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_names_the_api_accepts() {
        for n in ["a", "web-0", "a.b-c.d", "0abc", &"a".repeat(253)] {
            assert!(dns1123_subdomain(n), "{n:?}");
        }
    }

    #[test]
    fn pod_names_the_api_refuses() {
        let long = "a".repeat(254);
        for n in ["", "Web", "-a", "a-", "a..b", ".a", "a_b", "a b", &long] {
            assert!(!dns1123_subdomain(n), "{n:?}");
        }
    }

    #[test]
    fn refusals_read_as_the_api_rule_they_break() {
        let none = BTreeMap::new();
        let e = check_ephemeral(&serde_json::json!("x"), &none, &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "an ephemeral container is a mapping such as `{name: debugger, image: ..., command: [...]}`"
        );
        let e = check_object(&serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "A"}}))
            .unwrap_err();
        assert!(matches!(e, ObjectError::InvalidName { .. }), "{e}");
        assert!(
            e.to_string().starts_with("invalid Service name \"A\": use at most 63"),
            "{e}"
        );
    }
}
