//! Image templates: the built-in images, the `${image.NAME}` templates of a manifest (collected, checked
//! against the known images, substituted), so a suite names an image once and a run may override it.

use super::*;

/// Images every suite may use as `${image.NAME}` without declaring them. agnhost is the version
/// upstream's conformance tests of Kubernetes 1.36 use (test/utils/image/manifest.go on
/// release-1.36, kubernetes/kubernetes#141537): its ENTRYPOINT/CMD, `entrypoint-tester`, `pause`
/// and `grpc-health-checking` are what the upstream Containers and gRPC probe tests rely on.
pub const BUILTIN_IMAGES: &[(&str, &str)] = &[
    ("agnhost", "registry.k8s.io/e2e-test-images/agnhost:2.66.1"),
    ("busybox", "busybox:1.36"),
];

pub(super) fn collect_images(pod: &serde_json::Value, out: &mut BTreeSet<String>) {
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(list) = pod.pointer(&format!("/spec/{key}")).and_then(|v| v.as_array()) {
            for c in list {
                if let Some(img) = c.get("image").and_then(|v| v.as_str()) {
                    out.insert(img.to_string());
                }
            }
        }
    }
    // An image volume's image is pulled by the kubelet like a container's (with its own
    // pullPolicy), so it is one the node needs too.
    if let Some(volumes) = pod.pointer("/spec/volumes").and_then(|v| v.as_array()) {
        for v in volumes {
            if let Some(img) = v.pointer("/image/reference").and_then(|r| r.as_str()) {
                out.insert(img.to_string());
            }
        }
    }
}

pub(super) fn substitute(v: &mut serde_json::Value, images: &BTreeMap<String, String>) {
    match v {
        serde_json::Value::String(s) if s.contains("${image.") => {
            let mut out = s.clone();
            for (k, img) in images {
                out = out.replace(&format!("${{image.{k}}}"), img);
            }
            *s = out;
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, images)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| substitute(x, images)),
        _ => {}
    }
}

/// The first `${...}` template in `v` that is not a known image (`${image.<name>}` with `<name>`
/// in `images`), as the error that lists the known ones.
pub(super) fn unknown_template(v: &serde_json::Value, images: &BTreeMap<String, String>) -> Option<String> {
    let mut unknown = BTreeSet::new();
    find_templates(v, images, &mut unknown);
    let t = unknown.into_iter().next()?;
    Some(format!(
        "unknown template `${{{t}}}` (known: {})",
        images
            .keys()
            .map(|k| format!("${{image.{k}}}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

pub(super) fn find_templates(v: &serde_json::Value, images: &BTreeMap<String, String>, unknown: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(i) = rest.find("${") {
                let after = &rest[i + 2..];
                let Some(end) = after.find('}') else { break };
                let name = &after[..end];
                let known = name.strip_prefix("image.").is_some_and(|n| images.contains_key(n));
                if !known {
                    unknown.insert(name.to_string());
                }
                rest = &after[end + 1..];
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| find_templates(x, images, unknown)),
        serde_json::Value::Object(o) => o.values().for_each(|x| find_templates(x, images, unknown)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn images() -> BTreeMap<String, String> {
        BTreeMap::from([("busybox".to_string(), "busybox:1.36".to_string())])
    }

    #[test]
    fn known_images_are_substituted_everywhere() {
        let mut pod = serde_json::json!({"spec": {"containers": [
            {"name": "a", "image": "${image.busybox}", "args": ["${image.busybox}", "x"]}
        ]}});
        substitute(&mut pod, &images());
        assert_eq!(pod.pointer("/spec/containers/0/image").unwrap(), "busybox:1.36");
        assert_eq!(pod.pointer("/spec/containers/0/args/0").unwrap(), "busybox:1.36");
        let mut seen = BTreeSet::new();
        collect_images(&pod, &mut seen);
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["busybox:1.36"]);
    }

    #[test]
    fn an_image_volume_is_an_image_the_node_needs() {
        let mut pod = serde_json::json!({"spec": {
            "containers": [{"name": "a", "image": "busybox:1.36"}],
            "volumes": [{"name": "v", "image": {"reference": "${image.busybox}", "pullPolicy": "Always"}}, {"name": "e", "emptyDir": {}}]
        }});
        substitute(
            &mut pod,
            &BTreeMap::from([("busybox".to_string(), "r.example/kitten:1".to_string())]),
        );
        let mut seen = BTreeSet::new();
        collect_images(&pod, &mut seen);
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            ["busybox:1.36", "r.example/kitten:1"]
        );
    }

    #[test]
    fn an_unknown_template_names_the_known_ones() {
        let ok = serde_json::json!({"image": "${image.busybox}", "env": "$HOME ${image.busybox}"});
        assert_eq!(unknown_template(&ok, &images()), None);
        let bad = serde_json::json!({"args": ["${image.busybox}", "${image.nope}"]});
        assert_eq!(
            unknown_template(&bad, &images()).as_deref(),
            Some("unknown template `${image.nope}` (known: ${image.busybox})")
        );
        // Only `${image.*}` templates exist in manifests.
        let other = serde_json::json!("${pod.name}");
        assert!(unknown_template(&other, &images()).is_some());
    }
}
