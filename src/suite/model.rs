//! The suite format v1 as Rust types (`SuiteFile`, `Case`, `Step`, `MarkSpec`, `Expectation`):
//! pure data, deserialized from YAML with unknown fields denied.

mod expect;
mod marks;
mod steps;

pub use expect::*;
pub use marks::*;
pub use steps::*;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::types::{Count, Dur, Exact, InstanceSel, Occurrence, Pattern};

/// A value with the YAML line and column it was read from (1-based; 0 when unknown).
#[derive(Clone, Debug)]
pub struct Loc<T> {
    pub value: T,
    pub line: u64,
    pub col: u64,
}

impl<T> Loc<T> {
    pub fn new(value: T) -> Self {
        Loc { value, line: 0, col: 0 }
    }
}

impl<T> std::ops::Deref for Loc<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Display> fmt::Display for Loc<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loc<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
        Ok(Loc {
            value: s.value,
            line: s.referenced.line(),
            col: s.referenced.column(),
        })
    }
}

impl<T: Serialize> Serialize for Loc<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<T: JsonSchema> JsonSchema for Loc<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        T::json_schema(g)
    }
}

/// One suite file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "podlife suite (format v1)")]
pub struct SuiteFile {
    /// Suite name; test names are `suite::case`.
    pub name: Loc<String>,
    /// What the suite certifies.
    #[serde(default)]
    pub description: String,
    /// Tags for filtering and reports (e.g. an area such as `termination`).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Defaults for every case.
    #[serde(default)]
    pub defaults: Defaults,
    /// The cases.
    pub cases: Loc<Vec<Case>>,
}

/// Suite-wide defaults.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    /// Case timeout (default 120s): the whole case, steps and observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
    /// Default `waitFor` timeout (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout: Option<Dur>,
    /// Image templates: `busybox: busybox:1.36` makes `${image.busybox}` usable in manifests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, String>,
}

/// One test case: one pod in its own namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    /// Unique within the suite; `[a-z0-9-]`, it becomes part of the namespace name.
    pub name: Loc<String>,
    /// One line saying what behaviour the case certifies.
    #[serde(default)]
    pub description: String,
    /// Where the behaviour is documented (Kubernetes docs page or KEP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Extra tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Upstream Kubernetes conformance tests (their `testname` in
    /// test/conformance/testdata/conformance.yaml) whose behaviour this case certifies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream: Vec<String>,
    /// Path of the pod manifest, relative to the project root (e.g. `manifests/x.yaml`) or the suite file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Loc<String>>,
    /// The pod manifest inline, instead of `manifest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Loc<serde_json::Value>>,
    /// Auxiliary objects the pod consumes, created in the case namespace before the pod, in
    /// order: paths of one-object manifests (like `manifest`) of kind ConfigMap, Secret or
    /// Service (ClusterIP). They go with the namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Loc<String>>,
    /// Objects created before the pod in a second namespace the case owns (labelled, and
    /// deleted with the case, like its own), one-object manifests like `objects:`. An object of
    /// the same kind and name as one of `objects:` shows that the pod consumes its own
    /// namespace's object, never another's of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub second_namespace: Vec<Loc<String>>,
    /// Skip (report ignored) on servers older than this, e.g. `"1.29"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_server_version: Option<Loc<String>>,
    /// Case timeout (overrides the suite default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
    /// Actions after the implicit `apply`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Loc<Step>>,
    /// Named points in time that steps and expectations refer to.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub marks: BTreeMap<String, MarkSpec>,
    /// What must hold on the observed timeline.
    #[serde(default)]
    pub expect: Vec<Loc<Expectation>>,
}
