//! Steps: what a case does to its pod while it runs (`Step`: waitFor, delete, patch, sleep, exec, object,
//! ephemeral, resize), in order.

use super::*;

/// A step the runner performs. The pod is applied first (implicit).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Step {
    /// Wait until a mark occurs (a mark name, or an inline mark).
    WaitFor(WaitFor),
    /// Delete the pod, optionally overriding the grace period.
    Delete(DeleteStep),
    /// Wait a fixed time: `sleep: 8s`, or `sleep: {for: 6s, pacing: true}`.
    Sleep(SleepStep),
    /// Merge-patch the pod's labels and/or annotations (a null value removes a key).
    Patch(PatchStep),
    /// Add an ephemeral container to the running pod through its `ephemeralcontainers`
    /// subresource; expectations name it like any container.
    Ephemeral(EphemeralStep),
    /// Run a command in a running container through the API server's `exec` subresource
    /// (websocket streaming to the kubelet and the runtime); its stdout, stderr and exit status
    /// are recorded with our action and judged by an `exec` expectation.
    Exec(ExecStep),
    /// Read a container's log once through the API server's `log` endpoint over a websocket
    /// (`binary.k8s.io` or `base64.binary.k8s.io`); recorded like an exec's output (stdout)
    /// and judged by an `exec` expectation of the same name.
    FetchLog(FetchLogStep),
    /// Change an auxiliary object while the pod runs: apply a new version of an object of
    /// `objects:` (update), apply one the pod refers to optionally (created later), or delete
    /// one this case created.
    Object(ObjectStep),
    /// Resize containers in place through the pod's `resize` subresource: new cpu and memory
    /// requests and limits per container, which the kubelet applies to the running containers
    /// (`resized` marks, `cgroup` expectations).
    Resize(ResizeStep),
    /// Update the pod as a client's Update does: read it, change it, PUT it back with the
    /// resourceVersion read (a 409 reads again), `times` times in a row.
    Update(UpdateStep),
}

/// A fixed wait. `pacing: true` says the wait only spaces our next request so that the live
/// experiment is a sharp one: every expectation is measured from marks that do not depend on
/// it, so a recording that did not wait it out (made before the case had it) still answers
/// the case. Without it, such a recording was a different experiment and is not comparable.
#[derive(Clone, Copy, Debug)]
pub struct SleepStep {
    pub r#for: Dur,
    pub pacing: bool,
}

/// The mapping form of a sleep step.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SleepFull {
    /// How long.
    r#for: Dur,
    /// The wait only paces our next request; no expectation depends on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pacing: bool,
}

impl<'de> Deserialize<'de> for SleepStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SleepStep;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `8s`, or `{for: 6s, pacing: true}`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<SleepStep, E> {
                Dur::deserialize(de::value::StrDeserializer::<E>::new(s)).map(|d| SleepStep {
                    r#for: d,
                    pacing: false,
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SleepStep, E> {
                Dur::deserialize(de::value::U64Deserializer::<E>::new(v)).map(|d| SleepStep {
                    r#for: d,
                    pacing: false,
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<SleepStep, A::Error> {
                SleepFull::deserialize(de::value::MapAccessDeserializer::new(map)).map(|f| SleepStep {
                    r#for: f.r#for,
                    pacing: f.pacing,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for SleepStep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.pacing {
            SleepFull {
                r#for: self.r#for,
                pacing: true,
            }
            .serialize(s)
        } else {
            self.r#for.serialize(s)
        }
    }
}

impl JsonSchema for SleepStep {
    fn schema_name() -> Cow<'static, str> {
        "SleepStep".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let dur = g.subschema_for::<Dur>();
        let full = g.subschema_for::<SleepFull>();
        json_schema!({
            "description": "A duration, or `{for: <duration>, pacing: true}` for a wait that only paces our next request.",
            "anyOf": [dur, full]
        })
    }
}

/// `exec: {name: marco, container: debugger, command: [/bin/echo, marco], timeout: 30s}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecStep {
    /// The name `exec` expectations refer to (`[a-z0-9-]`, unique in the case).
    pub name: Loc<String>,
    /// The container to run it in (a container, a started sidecar or an ephemeral container).
    pub container: Loc<String>,
    /// The command and its arguments (no shell unless the command is one).
    pub command: Loc<Vec<String>>,
    /// Bound on the whole exec: connect, run, output (default 30s). A command still running
    /// then is recorded as timed out (undecided), never as a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
    /// The websocket subprotocol asked for (default `v5.channel.k8s.io`).
    #[serde(default, skip_serializing_if = "ExecProtocol::is_default")]
    pub protocol: ExecProtocol,
}

/// Which websocket protocol an `exec` step speaks, and so which path reaches the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum ExecProtocol {
    /// `v5.channel.k8s.io` (falling back to v4): the API server translates it to SPDY, so the
    /// kubelet's and runtime's SPDY streaming is exercised; the exit code comes as a `Status`.
    #[default]
    #[serde(rename = "v5.channel.k8s.io")]
    V5,
    /// `channel.k8s.io`, the base protocol: the API server proxies the websocket to the node's
    /// streaming server unchanged, so its websocket path is exercised (upstream's test speaks
    /// it); a non-zero exit is only the error stream's message.
    #[serde(rename = "channel.k8s.io")]
    Channel,
}

impl ExecProtocol {
    pub(crate) fn is_default(&self) -> bool {
        *self == ExecProtocol::V5
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            ExecProtocol::V5 => "v5.channel.k8s.io",
            ExecProtocol::Channel => "channel.k8s.io",
        }
    }
}

/// Default bound on an `exec` step: far above what an `echo` or a `cat` takes through the
/// kubelet's streaming server (well under a second on a loaded node), below a case timeout.
pub(crate) const DEFAULT_EXEC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `fetchLog: {name: alive, container: main, protocol: binary.k8s.io, timeout: 30s}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FetchLogStep {
    /// The name `exec` expectations refer to (`[a-z0-9-]`, unique among exec and fetchLog steps).
    pub name: Loc<String>,
    /// The container whose log is read (its current instance).
    pub container: Loc<String>,
    /// The websocket subprotocol (default `binary.k8s.io`).
    #[serde(default)]
    pub protocol: LogProtocol,
    /// Bound on the whole read (default 30s, as an exec's). A log still streaming then is
    /// recorded as cut short (undecided), never as a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

/// The log endpoint's websocket protocols: the bytes as binary messages, or base64 text ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum LogProtocol {
    #[default]
    #[serde(rename = "binary.k8s.io")]
    Binary,
    #[serde(rename = "base64.binary.k8s.io")]
    Base64,
}

impl LogProtocol {
    pub fn as_str(&self) -> &'static str {
        match self {
            LogProtocol::Binary => "binary.k8s.io",
            LogProtocol::Base64 => "base64.binary.k8s.io",
        }
    }
}

/// `object: {apply: manifests/x.yaml}` or `object: {delete: manifests/x.yaml}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectStep {
    /// Server-side apply of this one-object manifest (a ConfigMap or Secret): a new version of
    /// an object of `objects:` (same kind and name), or an object created later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<Loc<String>>,
    /// Delete the object this manifest names (kind and name), which the case created (in
    /// `objects:` or by an earlier `object: {apply}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<Loc<String>>,
}

/// `ephemeral: {container: {name: debugger, image: ${image.busybox}, command: [...]}, via: patch}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EphemeralStep {
    /// The ephemeral container as in `spec.ephemeralContainers` (name, image, command, args,
    /// targetContainerName, ...); `${image.NAME}` templates as in manifests.
    pub container: Loc<serde_json::Value>,
    /// How it is sent: `patch` (a strategic merge patch of the subresource, as `kubectl debug`
    /// does; default) or `update` (the subresource read, the container appended, the pod's
    /// ephemeral containers replaced with a PUT).
    #[serde(default)]
    pub via: EphemeralVia,
}

impl EphemeralStep {
    /// The container's name (validation ensures it has one).
    pub fn name(&self) -> &str {
        self.container
            .value
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EphemeralVia {
    #[default]
    Patch,
    Update,
}

impl EphemeralVia {
    pub fn as_str(&self) -> &'static str {
        match self {
            EphemeralVia::Patch => "patch",
            EphemeralVia::Update => "update",
        }
    }
}

/// `patch: {labels: {k: v}, annotations: {k: v}, activeDeadlineSeconds: 5, containerImages: {main: ref}}`:
/// a strategic merge patch of the running pod. Only what the API lets a running pod change is
/// accepted: metadata labels and annotations, `spec.activeDeadlineSeconds` (set, or lowered) and
/// the image of a container or init container.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchStep {
    /// Labels to set (a null value removes the key).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotations to set (a null value removes the key).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Option<String>>,
    /// New `spec.activeDeadlineSeconds` (≥ 1; the API accepts setting it or lowering it, never
    /// raising it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<Loc<i64>>,
    /// New images by container name (`main: ${image.busybox}`); templates as in manifests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub container_images: BTreeMap<String, Loc<String>>,
}

impl PatchStep {
    /// True when the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.annotations.is_empty()
            && self.active_deadline_seconds.is_none()
            && self.container_images.is_empty()
    }

    /// The strategic merge patch for the pod: maps merge key by key (null removes), and
    /// containers merge by name, so only the named containers' images change. `init` says which
    /// container names are init containers (they live in `spec.initContainers`); `render`
    /// resolves `${image.NAME}` templates.
    pub(crate) fn strategic_patch(
        &self,
        init: &dyn Fn(&str) -> bool,
        render: &dyn Fn(&str) -> String,
    ) -> serde_json::Value {
        let mut patch = serde_json::Map::new();
        let mut meta = serde_json::Map::new();
        if !self.labels.is_empty() {
            meta.insert("labels".into(), serde_json::json!(self.labels));
        }
        if !self.annotations.is_empty() {
            meta.insert("annotations".into(), serde_json::json!(self.annotations));
        }
        if !meta.is_empty() {
            patch.insert("metadata".into(), meta.into());
        }
        let mut spec = serde_json::Map::new();
        if let Some(d) = &self.active_deadline_seconds {
            spec.insert("activeDeadlineSeconds".into(), d.value.into());
        }
        for (name, image) in &self.container_images {
            let key = if init(name) { "initContainers" } else { "containers" };
            let list = spec
                .entry(key)
                .or_insert_with(|| serde_json::Value::Array(vec![]))
                .as_array_mut()
                .expect("a list");
            list.push(serde_json::json!({"name": name, "image": render(&image.value)}));
        }
        if !spec.is_empty() {
            patch.insert("spec".into(), spec.into());
        }
        patch.into()
    }
}

/// `update: {name: tolerations, tolerations: [...], activeDeadlineSeconds: 5000,
/// containerImages: {main: ref}, annotations: {k: v}, generation: 1, times: 1}`: a full update of
/// the pod (GET, change, PUT with the resourceVersion read), of what the API lets a running pod
/// change, plus what a client may send and the API ignores (`metadata.generation`). `update:
/// {name: x}` alone sends the pod back unchanged.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateStep {
    /// The name `update` expectations refer to (`[a-z0-9-]`, unique in the case).
    pub name: Loc<String>,
    /// Tolerations added to the pod's (the API lets a running pod only add tolerations); one
    /// already there is not added twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Loc<Toleration>>,
    /// `spec.activeDeadlineSeconds`: a number (≥ 1, never above the pod's: the API only lets a
    /// running pod set or lower it), or `decrement` (the value read, less 1, on each update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<Loc<DeadlineChange>>,
    /// New images by container or init container name; templates as in manifests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub container_images: BTreeMap<String, Loc<String>>,
    /// Annotations to set (a null value removes the key).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Option<String>>,
    /// Labels to set (a null value removes the key).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Option<String>>,
    /// `metadata.generation` as the client sends it (the API server owns the field and ignores
    /// what a client writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<Loc<i64>>,
    /// How many updates in a row (default 1, at most 1000), paced at most `UPDATES_PER_SEC` a
    /// second; one action on the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Loc<u32>>,
}

/// The most updates an `update` step sends in a second: each is a GET and a PUT, so the API
/// server the run measures gets at most twice as many requests from it.
pub(crate) const UPDATES_PER_SEC: u32 = 10;
/// The most updates one `update` step may repeat.
pub(crate) const MAX_UPDATE_TIMES: u32 = 1000;

impl UpdateStep {
    pub fn times(&self) -> u32 {
        self.times.as_ref().map_or(1, |t| t.value)
    }

    /// The least time the step takes at its pace (its first update is sent at once).
    pub(crate) fn min_duration(&self) -> std::time::Duration {
        std::time::Duration::from_millis(u64::from(self.times().saturating_sub(1)) * 1000 / u64::from(UPDATES_PER_SEC))
    }

    /// Changes `pod` (as read from the API, untyped so that fields newer than our types go back
    /// as read) the way one update of this step does. `init` names the init containers;
    /// `images` is `containerImages` rendered (`LoadedCase::update_images`). An error names what
    /// the pod lacks (a decrement of a pod without a deadline, a container it does not have).
    pub fn change(
        &self,
        pod: &mut serde_json::Value,
        init: &BTreeSet<String>,
        images: &BTreeMap<String, String>,
    ) -> Result<(), UpdateError> {
        let pod = pod.as_object_mut().ok_or(UpdateError::NotObject)?;
        for (key, map) in [("annotations", &self.annotations), ("labels", &self.labels)] {
            if map.is_empty() {
                continue;
            }
            let meta = object_at(pod, "metadata");
            let m = object_at(meta, key);
            for (k, v) in map {
                match v {
                    Some(v) => {
                        m.insert(k.clone(), v.clone().into());
                    }
                    None => {
                        m.remove(k);
                    }
                }
            }
        }
        if let Some(g) = &self.generation {
            object_at(pod, "metadata").insert("generation".into(), g.value.into());
        }
        if !self.tolerations.is_empty() {
            let spec = object_at(pod, "spec");
            let list = spec
                .entry("tolerations")
                .or_insert_with(|| serde_json::Value::Array(vec![]));
            if !list.is_array() {
                *list = serde_json::Value::Array(vec![]);
            }
            let list = list.as_array_mut().expect("an array");
            for t in &self.tolerations {
                let t = serde_json::to_value(&t.value).unwrap_or_default();
                if !list.contains(&t) {
                    list.push(t);
                }
            }
        }
        if let Some(d) = &self.active_deadline_seconds {
            let spec = object_at(pod, "spec");
            let new = match d.value {
                DeadlineChange::Set(n) => n,
                DeadlineChange::Decrement => {
                    let cur = spec
                        .get("activeDeadlineSeconds")
                        .and_then(|v| v.as_i64())
                        .ok_or(UpdateError::NoDeadline)?;
                    if cur <= 1 {
                        return Err(UpdateError::DeadlineAtMinimum(cur));
                    }
                    cur - 1
                }
            };
            spec.insert("activeDeadlineSeconds".into(), new.into());
        }
        for (name, image) in images {
            let key = if init.contains(name) {
                "initContainers"
            } else {
                "containers"
            };
            let spec = object_at(pod, "spec");
            let c = spec
                .get_mut(key)
                .and_then(|l| l.as_array_mut())
                .and_then(|l| {
                    l.iter_mut()
                        .find(|c| c.get("name").and_then(|n| n.as_str()) == Some(name))
                })
                .and_then(|c| c.as_object_mut())
                .ok_or_else(|| UpdateError::NoContainer {
                    list: key,
                    name: name.clone(),
                })?;
            c.insert("image".into(), image.clone().into());
        }
        Ok(())
    }

    /// True when the step changes the pod's spec (the API server then bumps its generation).
    pub(crate) fn changes_spec(&self) -> bool {
        !self.tolerations.is_empty() || self.active_deadline_seconds.is_some() || !self.container_images.is_empty()
    }
}

/// Why an `update` step cannot change the pod as read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum UpdateError {
    #[error("the pod read is not an object")]
    NotObject,
    #[error("activeDeadlineSeconds: decrement, but the pod has no deadline")]
    NoDeadline,
    #[error("activeDeadlineSeconds: decrement, but the pod's is {0} (it must stay 1 or more)")]
    DeadlineAtMinimum(i64),
    /// `list` is `containers` or `initContainers`.
    #[error("containerImages: the pod read has no {list} entry `{name}`")]
    NoContainer { list: &'static str, name: String },
}

/// The object at `key` of `o`, made one if it is absent or not an object.
fn object_at<'a>(
    o: &'a mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> &'a mut serde_json::Map<String, serde_json::Value> {
    let e = o.entry(key).or_insert_with(|| serde_json::json!({}));
    if !e.is_object() {
        *e = serde_json::json!({});
    }
    e.as_object_mut().expect("an object")
}

/// A toleration as in `spec.tolerations`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Equal` (default) or `Exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute` (empty: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// Only with `NoExecute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// An `update` step's `activeDeadlineSeconds`: a value, or `decrement` (1 less than read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineChange {
    Set(i64),
    Decrement,
}

impl<'de> Deserialize<'de> for DeadlineChange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DeadlineChange;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of seconds or `decrement`")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DeadlineChange, E> {
                Ok(DeadlineChange::Set(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DeadlineChange, E> {
                i64::try_from(v)
                    .map(DeadlineChange::Set)
                    .map_err(|_| E::custom(format!("{v} is out of range")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DeadlineChange, E> {
                match s {
                    "decrement" => Ok(DeadlineChange::Decrement),
                    _ => Err(E::custom(format!("`{s}`: give a number of seconds or `decrement`"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for DeadlineChange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DeadlineChange::Set(n) => s.serialize_i64(*n),
            DeadlineChange::Decrement => s.serialize_str("decrement"),
        }
    }
}

/// `resize: {containers: {c1: {requests: {cpu: 25m}, limits: {cpu: 25m, memory: 40Mi}}}, via: patch}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResizeStep {
    /// The new resources of each container (or init container) by name. `patch` sends the
    /// values given (the others stay as they are); `update` replaces each named container's
    /// resources with exactly these.
    pub containers: BTreeMap<String, Loc<ResizeResources>>,
    /// How it is sent: `patch` (a strategic merge patch of `pods/resize`, as `kubectl patch
    /// --subresource resize` does; default) or `update` (`pods/resize` read, the resources
    /// replaced, the pod written back with a PUT carrying the resourceVersion read).
    #[serde(default)]
    pub via: ResizeVia,
}

/// A container's resources in a resize: `cpu` and `memory` only, as the API allows.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResizeResources {
    /// `cpu`/`memory` requests (quantities: `25m`, `40Mi`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    /// `cpu`/`memory` limits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
}

impl ResizeResources {
    /// As the `resources` of a container in the API.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if !self.requests.is_empty() {
            m.insert("requests".into(), serde_json::json!(self.requests));
        }
        if !self.limits.is_empty() {
            m.insert("limits".into(), serde_json::json!(self.limits));
        }
        m.into()
    }
}

impl fmt::Display for ResizeResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side =
            |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
        write!(f, "requests [{}] limits [{}]", side(&self.requests), side(&self.limits))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ResizeVia {
    #[default]
    Patch,
    Update,
}

impl ResizeVia {
    pub fn as_str(&self) -> &'static str {
        match self {
            ResizeVia::Patch => "patch",
            ResizeVia::Update => "update",
        }
    }
}

impl JsonSchema for DeadlineChange {
    fn schema_name() -> Cow<'static, str> {
        "DeadlineChange".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A number of seconds (≥ 1), or `decrement`: the value read less 1.",
            "anyOf": [{"type": "integer", "minimum": 1}, {"const": "decrement"}]
        })
    }
}

impl ResizeStep {
    /// The strategic merge patch of `pods/resize`: containers merge by name, so only the named
    /// containers' resources change, and within them only the values given. `init` says which
    /// names are init containers (`spec.initContainers`).
    pub(crate) fn strategic_patch(&self, init: &dyn Fn(&str) -> bool) -> serde_json::Value {
        let mut spec = serde_json::Map::new();
        for (name, r) in &self.containers {
            let key = if init(name) { "initContainers" } else { "containers" };
            if let Some(list) = spec
                .entry(key)
                .or_insert_with(|| serde_json::Value::Array(vec![]))
                .as_array_mut()
            {
                list.push(serde_json::json!({"name": name, "resources": r.value.to_json()}));
            }
        }
        serde_json::json!({ "spec": spec })
    }

    /// How the action is recorded (and compared on replay): the request and each container's
    /// new resources, e.g. `via patch: c1 requests [cpu 25m] limits [cpu 25m]`.
    pub fn detail(&self) -> String {
        let each: Vec<String> = self
            .containers
            .iter()
            .map(|(n, r)| format!("{n} {}", r.value))
            .collect();
        format!("via {}: {}", self.via.as_str(), each.join("; "))
    }
}

/// `waitFor: {until: <mark>, timeout: 30s}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitFor {
    /// The mark to wait for.
    pub until: MarkRef,
    /// How long to wait (default: the suite's `defaults.waitTimeout`, else 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

/// `delete: {gracePeriodSeconds: 2}` (`delete: {}` uses the pod's own grace).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteStep {
    /// Grace period override sent with the DELETE request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
}

#[cfg(test)]
mod update_tests {
    use super::*;

    fn step(yaml: &str) -> UpdateStep {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn pod() -> serde_json::Value {
        serde_json::json!({
            "metadata": {"name": "p", "resourceVersion": "7", "generation": 3, "annotations": {"keep": "1", "drop": "2"}},
            "spec": {
                "activeDeadlineSeconds": 5000,
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "initContainers": [{"name": "init", "image": "busybox"}],
                "containers": [{"name": "main", "image": "agnhost", "args": ["pause"]}],
                "newerField": {"kept": true}
            },
            "status": {"phase": "Running"}
        })
    }

    fn changed(u: &UpdateStep, images: &[(&str, &str)]) -> Result<serde_json::Value, UpdateError> {
        let mut p = pod();
        let init: BTreeSet<String> = ["init".to_string()].into();
        let images = images.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        u.change(&mut p, &init, &images).map(|_| p)
    }

    #[test]
    fn an_empty_update_sends_the_pod_back_as_read() {
        let u = step("{name: empty}");
        assert_eq!(changed(&u, &[]).unwrap(), pod());
        assert!(!u.changes_spec());
        assert_eq!((u.times(), u.min_duration()), (1, std::time::Duration::ZERO));
    }

    #[test]
    fn each_field_changes_only_its_own_part_and_keeps_the_resource_version_read() {
        let u = step(
            "{name: all, tolerations: [{key: foo, operator: Equal, value: bar, effect: NoSchedule}], \
             activeDeadlineSeconds: 4000, annotations: {drop: null, new: v}, generation: 1}",
        );
        let p = changed(&u, &[("main", "pause:3.10"), ("init", "pause:3.10")]).unwrap();
        assert_eq!(p["metadata"]["resourceVersion"], "7", "the PUT carries what was read");
        assert_eq!(p["metadata"]["generation"], 1, "as the client sends it");
        assert_eq!(
            p["metadata"]["annotations"],
            serde_json::json!({"keep": "1", "new": "v"})
        );
        assert_eq!(p["spec"]["activeDeadlineSeconds"], 4000);
        let tol = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tol.len(), 2, "added to the pod's, never replacing them");
        assert_eq!(
            tol[1],
            serde_json::json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"})
        );
        assert_eq!(p["spec"]["containers"][0]["image"], "pause:3.10");
        assert_eq!(p["spec"]["containers"][0]["args"], serde_json::json!(["pause"]));
        assert_eq!(p["spec"]["initContainers"][0]["image"], "pause:3.10");
        assert_eq!(
            p["spec"]["newerField"],
            serde_json::json!({"kept": true}),
            "unknown fields go back as read"
        );
        assert_eq!(p["status"], pod()["status"]);
        assert!(u.changes_spec());
        // The same toleration again adds nothing.
        let mut again = p.clone();
        u.change(&mut again, &BTreeSet::new(), &BTreeMap::new()).unwrap();
        assert_eq!(again["spec"]["tolerations"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_decrement_lowers_what_was_read_by_one_and_refuses_what_it_cannot() {
        let u = step("{name: lower, activeDeadlineSeconds: decrement, times: 499}");
        assert_eq!(changed(&u, &[]).unwrap()["spec"]["activeDeadlineSeconds"], 4999);
        assert_eq!(u.times(), 499);
        // 498 pauses of 100 ms: 10 updates a second.
        assert_eq!(u.min_duration(), std::time::Duration::from_millis(49_800));
        let mut p = pod();
        p["spec"].as_object_mut().unwrap().remove("activeDeadlineSeconds");
        let e = u
            .change(&mut p, &BTreeSet::new(), &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no deadline"), "{e}");
        p["spec"]["activeDeadlineSeconds"] = 1.into();
        let e = u
            .change(&mut p, &BTreeSet::new(), &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("must stay 1 or more"), "{e}");
    }

    #[test]
    fn an_image_of_a_container_the_pod_lacks_is_an_error_not_a_new_container() {
        let u = step("{name: img, containerImages: {other: x}}");
        let e = changed(&u, &[("other", "x")]).unwrap_err().to_string();
        assert!(e.contains("no containers entry `other`"), "{e}");
    }

    #[test]
    fn a_deadline_is_a_number_or_decrement() {
        assert!(serde_saphyr::from_str::<UpdateStep>("{name: x, activeDeadlineSeconds: lower}").is_err());
        let u = step("{name: x, activeDeadlineSeconds: 5}");
        assert_eq!(u.active_deadline_seconds.unwrap().value, DeadlineChange::Set(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(yaml: &str) -> ResizeStep {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn the_resize_patch_names_only_the_given_containers_and_values() {
        let r =
            step("containers:\n  c1: {requests: {cpu: 25m}, limits: {cpu: 35m}}\n  init-1: {limits: {memory: 50Mi}}\n");
        assert_eq!(r.via, ResizeVia::Patch);
        let p = r.strategic_patch(&|n| n.starts_with("init-"));
        assert_eq!(
            p,
            serde_json::json!({"spec": {
                "containers": [{"name": "c1", "resources": {"requests": {"cpu": "25m"}, "limits": {"cpu": "35m"}}}],
                "initContainers": [{"name": "init-1", "resources": {"limits": {"memory": "50Mi"}}}]
            }})
        );
        assert_eq!(
            r.detail(),
            "via patch: c1 requests [cpu 25m] limits [cpu 35m]; init-1 requests [] limits [memory 50Mi]"
        );
    }

    #[test]
    fn an_update_is_recorded_as_such() {
        let r = step("containers: {c1: {requests: {cpu: 25m, memory: 40Mi}}}\nvia: update\n");
        assert_eq!(r.via, ResizeVia::Update);
        assert_eq!(r.detail(), "via update: c1 requests [cpu 25m, memory 40Mi] limits []");
        assert_eq!(
            r.containers["c1"].value.to_json(),
            serde_json::json!({"requests": {"cpu": "25m", "memory": "40Mi"}})
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(serde_saphyr::from_str::<ResizeStep>("containers: {c1: {request: {cpu: 1}}}\n").is_err());
        assert!(serde_saphyr::from_str::<ResizeStep>("containers: {}\nvia: put\n").is_err());
    }
}
