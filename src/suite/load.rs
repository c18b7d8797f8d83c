//! Loading and validating suites (`load_suites` → `Suite`/`LoadedCase`, or a list of `Diag`):
//! everything is checked offline, and every problem is reported as `file:line:col: path: message`.

mod case;
mod diag;
mod discover;
mod manifest;
mod refs;
mod templates;
mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::model::*;
use super::types::InstanceSel;
use crate::files::Names;

pub use diag::{Diag, parse_yaml};
pub use discover::discover;
pub use manifest::project_root;
use manifest::{ManifestError, load_manifest};
use refs::Refs;
pub use refs::builtin_mark;
pub use templates::BUILTIN_IMAGES;
use templates::{collect_images, substitute, unknown_template};
use validate::{ObjectError, check_ephemeral, check_object, check_patch, check_pod};

/// The longest `gracePeriodSeconds` a delete step may ask for: a grace period longer than the
/// longest case timeout (`MAX_DURATION`, 24 h) could never be seen to end within the case. The
/// API takes it as a 64-bit integer, but podlife must never send a value it had to cut (the
/// kube client's field is 32 bits: 4294967296 once went out as 0, "kill now").
pub(crate) const MAX_GRACE_SECONDS: i64 = 24 * 3600;

/// A container of the pod manifest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ContainerInfo {
    pub name: String,
    pub kind: ContainerKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContainerKind {
    Init,
    /// An init container with `restartPolicy: Always` (native sidecar).
    Sidecar,
    Regular,
    /// Added to the running pod by an `ephemeral` step (`spec.ephemeralContainers`); not part of
    /// kubectl's READY and STATUS columns.
    Ephemeral,
}

/// Kinds a case may create beside its pod (`objects:`). Each is a namespaced core/v1 object
/// that a pod consumes on the node (env, volumes, service links) and that goes with the case
/// namespace. Everything else is refused: a workload (Deployment, Job, ...) would start pods
/// podlife does not observe, RBAC objects or a ServiceAccount would change what the pod may do
/// beyond what the case shows, and cluster-scoped objects would outlive the namespace.
pub(crate) const OBJECT_KINDS: &[&str] = &["ConfigMap", "Secret", "Service"];

/// An auxiliary object of a case (`objects:`), validated: created before the pod.
#[derive(Clone, Debug, PartialEq)]
pub struct AuxObject {
    /// `ConfigMap`, `Secret` or `Service`.
    pub kind: String,
    pub name: String,
    /// The object as written (its namespace is replaced by the case namespace when applied).
    pub value: serde_json::Value,
    pub path: PathBuf,
}

impl AuxObject {
    /// `Kind/name`, as actions and recordings name it.
    pub fn id(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// How actions and recordings name it when it was created in the case's second namespace.
    pub(crate) fn second_namespace_id(&self) -> String {
        format!("{} in the second namespace", self.id())
    }
}

/// A validated case, ready to run or judge.
#[derive(Clone, Debug)]
pub struct LoadedCase {
    pub suite: String,
    pub spec: Case,
    /// The pod manifest with `${image.*}` templates still in place (see `render_pod`).
    pub pod: serde_json::Value,
    pub manifest_path: Option<PathBuf>,
    /// Auxiliary objects, applied in this order before the pod.
    pub objects: Vec<AuxObject>,
    /// The object of each `object` step, by step index (validated like `objects`).
    pub step_objects: BTreeMap<usize, AuxObject>,
    /// Objects created in the case's second namespace (`secondNamespace:`), in order.
    pub second_namespace: Vec<AuxObject>,
    pub containers: Vec<ContainerInfo>,
    /// Suite-declared images (`defaults.images`) over the built-in ones.
    pub images: BTreeMap<String, String>,
    pub min_server_version: Option<(u32, u32)>,
    pub timeout: std::time::Duration,
    pub wait_timeout: std::time::Duration,
    pub tags: Vec<String>,
}

impl LoadedCase {
    pub fn name(&self) -> &str {
        &self.spec.name.value
    }

    /// `suite::case`, the name filters and reports use.
    pub fn full_name(&self) -> String {
        format!("{}::{}", self.suite, self.spec.name.value)
    }

    /// The images this case needs after overrides (`name → reference`).
    pub fn images_used(&self, overrides: &BTreeMap<String, String>) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        collect_images(&self.render_pod(overrides), &mut out);
        // Images a `patch` step switches to, or an `ephemeral` step runs, must be pre-loaded too.
        for s in &self.spec.steps {
            match &s.value {
                Step::Patch(p) => {
                    if let Some(spec) = self.patch_body(p, overrides).get("spec") {
                        collect_images(&serde_json::json!({ "spec": spec }), &mut out);
                    }
                }
                Step::Update(u) => {
                    let (_, rendered) = self.update_images(u, overrides);
                    out.extend(rendered.into_values());
                }
                Step::Ephemeral(e) => {
                    let c = self.ephemeral_body(e, overrides);
                    collect_images(&serde_json::json!({ "spec": { "ephemeralContainers": [c] } }), &mut out);
                }
                _ => {}
            }
        }
        out
    }

    /// The container an `ephemeral` step adds, images rendered like the pod's.
    pub(crate) fn ephemeral_body(&self, e: &EphemeralStep, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut c = e.container.value.clone();
        substitute(&mut c, &images);
        c
    }

    /// The strategic merge patch a `patch` step sends, images rendered like the pod's.
    pub fn patch_body(&self, p: &PatchStep, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let init = |name: &str| {
            self.containers
                .iter()
                .any(|c| c.name == name && c.kind != ContainerKind::Regular)
        };
        let render = |s: &str| {
            let mut v = serde_json::Value::String(s.to_string());
            substitute(&mut v, &images);
            v.as_str().unwrap_or(s).to_string()
        };
        p.strategic_patch(&init, &render)
    }

    /// An `update` step's changes with images rendered like the pod's: `(init container names,
    /// container name → image)`, for `UpdateStep::change`.
    pub(crate) fn update_images(
        &self,
        u: &UpdateStep,
        overrides: &BTreeMap<String, String>,
    ) -> (BTreeSet<String>, BTreeMap<String, String>) {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let init = self
            .containers
            .iter()
            .filter(|c| c.kind != ContainerKind::Regular && c.kind != ContainerKind::Ephemeral)
            .map(|c| c.name.clone())
            .collect();
        let rendered = u
            .container_images
            .iter()
            .map(|(name, image)| {
                let mut v = serde_json::Value::String(image.value.clone());
                substitute(&mut v, &images);
                (name.clone(), v.as_str().unwrap_or(&image.value).to_string())
            })
            .collect();
        (init, rendered)
    }

    /// The `resize` step's strategic merge patch (containers or init containers by name).
    pub(crate) fn resize_patch(&self, r: &ResizeStep) -> serde_json::Value {
        let init = |name: &str| {
            self.containers
                .iter()
                .any(|c| c.name == name && c.kind != ContainerKind::Regular)
        };
        r.strategic_patch(&init)
    }

    /// The pod manifest with `${image.NAME}` replaced (overrides win over suite and built-ins).
    pub fn render_pod(&self, overrides: &BTreeMap<String, String>) -> serde_json::Value {
        let mut images = self.images.clone();
        images.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut pod = self.pod.clone();
        substitute(&mut pod, &images);
        pod
    }
}

/// A loaded suite file.
#[derive(Clone, Debug)]
pub struct Suite {
    pub path: PathBuf,
    /// How messages and results name the file (`<bundle>:<member>` for a bundle's suite).
    pub shown: String,
    pub file: SuiteFile,
    pub cases: Vec<LoadedCase>,
}

impl Suite {
    pub fn name(&self) -> &str {
        &self.file.name.value
    }
}

/// Loads and validates suites. Returns every problem found, across all files.
pub fn load_suites(paths: &[PathBuf]) -> Result<Vec<Suite>, Vec<Diag>> {
    load_suites_as(paths, false, &Names::default()).map(|(suites, _)| suites)
}

/// Loads the suites a run kept (a bundle's or a run folder's `suites/`), to replay the run with
/// the cases as they ran. A rule this podlife checks that the recorded suites break without
/// changing what their cases are (a step budget added since; a manifest only a live apply reads,
/// which older bundles did not keep) is a warning here, returned beside the suites: it would
/// refuse to run the cases live, not change what their recordings mean. Files are named as
/// `names` names them (a bundle's as `<bundle>:<member>`).
pub fn load_recorded_suites(paths: &[PathBuf], names: &Names) -> Result<(Vec<Suite>, Vec<Diag>), Vec<Diag>> {
    load_suites_as(paths, true, names)
}

fn load_suites_as(paths: &[PathBuf], recorded: bool, names: &Names) -> Result<(Vec<Suite>, Vec<Diag>), Vec<Diag>> {
    let files = discover::discover_named(paths, names)?;
    let mut suites = vec![];
    let mut errors = vec![];
    let mut warnings = vec![];
    let mut suite_names: BTreeMap<String, String> = BTreeMap::new();
    for f in files {
        match load_suite_file_as(&f, recorded, names) {
            Ok((s, mut w)) => {
                warnings.append(&mut w);
                let label = s.shown.clone();
                if let Some(prev) = suite_names.insert(s.name().to_string(), label.clone()) {
                    errors.push(Diag {
                        file: label,
                        line: s.file.name.line,
                        col: s.file.name.col,
                        path: "name".into(),
                        message: format!("duplicate suite name `{}` (also in {prev})", s.name()),
                    });
                }
                suites.push(s);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    // Cases of different suites must not map to one namespace name (one would delete the other's).
    errors.extend(super::naming::stem_collisions(&suites));
    if errors.is_empty() {
        warnings.sort();
        Ok((suites, warnings))
    } else {
        errors.sort();
        errors.dedup();
        Err(errors)
    }
}

struct Ctx<'a> {
    file: &'a str,
    /// How files are named in the problems found (the suite's, its manifests).
    names: &'a Names,
    errors: Vec<Diag>,
    /// Loading suites a run kept, to replay it (`load_recorded_suites`).
    recorded: bool,
    warnings: Vec<Diag>,
}

impl Ctx<'_> {
    /// A problem of a rule that guards live runs only (see `load_recorded_suites`): an error,
    /// or a warning when the suites are a recorded run's.
    fn live_only<T>(&mut self, at: &Loc<T>, path: impl Into<String>, message: impl Into<String>) {
        self.err(at, path, message);
        if self.recorded
            && let Some(d) = self.errors.pop()
        {
            self.warnings.push(d);
        }
    }

    fn err<T>(&mut self, at: &Loc<T>, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Diag {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            path: path.into(),
            message: message.into(),
        });
    }
}

fn load_suite_file_as(path: &Path, recorded: bool, names: &Names) -> Result<(Suite, Vec<Diag>), Vec<Diag>> {
    let file = names.name(path);
    let text = crate::files::read_string(path, crate::files::SUITE).map_err(|e| {
        vec![Diag {
            file: file.clone(),
            line: 0,
            col: 0,
            path: String::new(),
            message: e.problem.to_string(),
        }]
    })?;
    let suite: SuiteFile = parse_yaml(&text, &file).map_err(|d| vec![d])?;
    let mut ctx = Ctx {
        file: &file,
        names,
        errors: vec![],
        recorded,
        warnings: vec![],
    };
    check_name(&mut ctx, &suite.name, "name");

    let mut images: BTreeMap<String, String> = BUILTIN_IMAGES
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    images.extend(suite.defaults.images.clone());
    let timeout = suite
        .defaults
        .timeout
        .map(|d| d.0)
        .unwrap_or(std::time::Duration::from_secs(120));
    let wait_timeout = suite
        .defaults
        .wait_timeout
        .map(|d| d.0)
        .unwrap_or(std::time::Duration::from_secs(60));

    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut cases = vec![];
    let base = path.parent().unwrap_or(Path::new("."));
    for (i, case) in suite.cases.iter().enumerate() {
        let p = format!("cases[{i}]");
        check_name(&mut ctx, &case.name, &format!("{p}.name"));
        if let Some(line) = seen.insert(case.name.value.clone(), case.name.line) {
            ctx.err(
                &case.name,
                format!("{p}.name"),
                format!("duplicate case name `{}` (first at line {line})", case.name.value),
            );
        }
        let input = case::CaseInput {
            base,
            suite: &suite,
            case,
            path: &p,
            images: &images,
            timeout,
            wait_timeout,
        };
        if let Some(c) = case::load_case(&mut ctx, &input) {
            cases.push(c);
        }
    }
    if suite.cases.is_empty() {
        ctx.err(&suite.cases, "cases", "a suite needs at least one case");
    }
    if ctx.errors.is_empty() {
        let suite = Suite {
            path: path.to_path_buf(),
            shown: file.clone(),
            file: suite,
            cases,
        };
        Ok((suite, ctx.warnings))
    } else {
        Err(ctx.errors)
    }
}

fn check_name(ctx: &mut Ctx, name: &Loc<String>, path: &str) {
    let n = &name.value;
    let ok = !n.is_empty()
        && n.len() <= 40
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-');
    if !ok {
        ctx.err(
            name,
            path,
            format!(
                "invalid name \"{n}\": use 1-40 characters of a-z, 0-9 and `-` (it becomes part of a namespace name)"
            ),
        );
    }
}

/// Parses `1.29`, `v1.29`, `1.29.3` into (major, minor).
pub(crate) fn parse_version(v: &str) -> Option<(u32, u32)> {
    let v = v.trim().trim_start_matches('v');
    let mut it = v.split('.');
    let major = it.next()?.parse().ok()?;
    let minor_raw = it.next()?;
    // Server minors can carry a `+` (e.g. `32+` on managed clusters).
    let minor = minor_raw.trim_end_matches('+').parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_servers_report_them() {
        assert_eq!(parse_version("1.29"), Some((1, 29)));
        assert_eq!(parse_version("v1.29.3"), Some((1, 29)));
        assert_eq!(parse_version(" v1.32+ "), Some((1, 32)));
        assert_eq!(parse_version("1"), None);
        assert_eq!(parse_version("one.two"), None);
        assert_eq!(parse_version(""), None);
    }
}
