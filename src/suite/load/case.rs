//! One case of a suite file checked and resolved (`load_case` → `LoadedCase`): its pod, objects,
//! steps, marks and expectations, each problem reported at its own `file:line:col`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    AuxObject, ContainerInfo, ContainerKind, Ctx, LoadedCase, MAX_GRACE_SECONDS, ManifestError, Refs, check_ephemeral,
    check_object, check_patch, check_pod, load_manifest, parse_version,
};
use crate::files::Names;
use crate::suite::model::*;

/// A case and what its suite file gives it: where its paths are relative to, and its defaults.
pub(super) struct CaseInput<'a> {
    pub base: &'a Path,
    pub suite: &'a SuiteFile,
    pub case: &'a Case,
    /// The case's path in the file, e.g. `cases[3]`.
    pub path: &'a str,
    pub images: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    pub wait_timeout: Duration,
}

/// Checks a case; `None` when anything is wrong (each problem is in `ctx`).
pub(super) fn load_case(ctx: &mut Ctx, c: &CaseInput) -> Option<LoadedCase> {
    let errors_before = ctx.errors.len();
    let (pod, manifest_path) = pod_of(ctx, c)?;
    let mut containers = containers_of(ctx, c, &pod, manifest_path.as_deref())?;
    let min_server_version = min_server_version(ctx, c);
    let objects = objects_of(ctx, &c.case.objects, c, "objects");
    let second_namespace = objects_of(ctx, &c.case.second_namespace, c, "secondNamespace");
    ephemeral_containers(ctx, c, &mut containers);
    let step_objects = object_steps(ctx, c, &objects);
    let exec_names = exec_steps(ctx, c, &containers);
    let update_names = update_steps(ctx, c, &pod, &containers);

    let names: BTreeSet<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let mut refs = Refs {
        ctx,
        containers: &names,
        marks: &c.case.marks,
        all: &containers,
        each: None,
        execs: &exec_names,
        updates: &update_names,
    };
    for (name, m) in &c.case.marks {
        refs.mark(m, &format!("{}.marks.{name}", c.path));
    }
    other_steps(&mut refs, c, &pod);
    step_budget(refs.ctx, c);
    expectations(&mut refs, c);
    if ctx.errors.len() > errors_before {
        return None;
    }
    let (suite, case) = (c.suite, c.case);
    let mut tags = suite.tags.clone();
    tags.extend(case.tags.iter().cloned());
    Some(LoadedCase {
        suite: suite.name.value.clone(),
        spec: case.clone(),
        pod,
        manifest_path,
        objects,
        step_objects,
        second_namespace,
        containers,
        images: c.images.clone(),
        min_server_version,
        timeout: case.timeout.map(|d| d.0).unwrap_or(c.timeout),
        wait_timeout: c.wait_timeout,
        tags,
    })
}

/// The pod, from `manifest` or inline `pod` (exactly one of them).
fn pod_of(ctx: &mut Ctx, c: &CaseInput) -> Option<(serde_json::Value, Option<PathBuf>)> {
    let (case, p, base) = (c.case, c.path, c.base);
    Some(match (&case.manifest, &case.pod) {
        (Some(_), Some(pod)) => {
            ctx.err(pod, format!("{p}.pod"), "give either `manifest` or `pod`, not both");
            return None;
        }
        (None, None) => {
            ctx.err(
                &case.name,
                p.to_string(),
                "missing `manifest` (a path under manifests/) or inline `pod`",
            );
            return None;
        }
        (Some(m), None) => match load_manifest(base, ctx.names, m) {
            Ok((v, path)) => (v, Some(path)),
            Err(msg) => {
                ctx.err(m, format!("{p}.manifest"), msg.to_string());
                return None;
            }
        },
        (None, Some(pod)) => (pod.value.clone(), None),
    })
}

/// The pod's containers, the pod checked against the API's rules.
fn containers_of(
    ctx: &mut Ctx,
    c: &CaseInput,
    pod: &serde_json::Value,
    manifest_path: Option<&Path>,
) -> Option<Vec<ContainerInfo>> {
    let (case, p) = (c.case, c.path);
    let at: Loc<()> = match (&case.manifest, &case.pod) {
        (Some(m), _) => Loc {
            value: (),
            line: m.line,
            col: m.col,
        },
        (_, Some(pod)) => Loc {
            value: (),
            line: pod.line,
            col: pod.col,
        },
        _ => Loc::new(()),
    };
    let field = if case.manifest.is_some() { "manifest" } else { "pod" };
    match check_pod(pod, c.images) {
        Ok(c) => Some(c),
        Err(msg) => {
            let where_ = manifest_path
                .map(|m| format!("{}: ", ctx.names.name(m)))
                .unwrap_or_default();
            ctx.err(&at, format!("{p}.{field}"), format!("{where_}{msg}"));
            None
        }
    }
}

fn min_server_version(ctx: &mut Ctx, c: &CaseInput) -> Option<(u32, u32)> {
    let (case, p) = (c.case, c.path);
    case.min_server_version.as_ref().and_then(|v| match parse_version(v) {
        Some(x) => Some(x),
        None => {
            ctx.err(
                v,
                format!("{p}.minServerVersion"),
                format!("invalid version \"{}\": use MAJOR.MINOR, e.g. \"1.29\"", v.value),
            );
            None
        }
    })
}

/// `objects:` (or `secondNamespace:`, named by `field`), each loaded and checked, each once.
fn objects_of(ctx: &mut Ctx, list: &[Loc<String>], c: &CaseInput, field: &str) -> Vec<AuxObject> {
    let (p, base) = (c.path, c.base);
    let mut objects: Vec<AuxObject> = vec![];
    for (i, o) in list.iter().enumerate() {
        let path = format!("{p}.{field}[{i}]");
        match load_object(base, ctx.names, o) {
            Ok(obj) => {
                if let Some(first) = objects.iter().position(|x| x.id() == obj.id()) {
                    ctx.err(
                        o,
                        path,
                        format!("{} is also {field}[{first}]: each object once", obj.id()),
                    );
                } else {
                    objects.push(obj);
                }
            }
            // A replay never applies it: the recording says what was created.
            Err(msg) => ctx.live_only(o, path, msg.to_string()),
        }
    }
    objects
}

fn ephemeral_containers(ctx: &mut Ctx, c: &CaseInput, containers: &mut Vec<ContainerInfo>) {
    let (case, p, images) = (c.case, c.path, c.images);
    // Ephemeral containers of `ephemeral` steps are containers expectations may name.
    for (i, s) in case.steps.iter().enumerate() {
        if let Step::Ephemeral(e) = &s.value {
            match check_ephemeral(&e.container.value, images, containers) {
                Ok(name) => containers.push(ContainerInfo {
                    name,
                    kind: ContainerKind::Ephemeral,
                }),
                Err(m) => ctx.err(
                    &e.container,
                    format!("{p}.steps[{i}].ephemeral.container"),
                    m.to_string(),
                ),
            }
        }
    }
}

/// The `object` steps, by step index: each names a ConfigMap or Secret; an apply updates one of
/// `objects:` or creates one later, a delete removes one the case created (never anything else).
fn object_steps(ctx: &mut Ctx, c: &CaseInput, objects: &[AuxObject]) -> BTreeMap<usize, AuxObject> {
    let (case, p, base) = (c.case, c.path, c.base);
    let mut step_objects: BTreeMap<usize, AuxObject> = BTreeMap::new();
    let mut present: Vec<String> = objects.iter().map(|o| o.id()).collect();
    for (i, s) in case.steps.iter().enumerate() {
        let Step::Object(o) = &s.value else { continue };
        let sp = format!("{p}.steps[{i}].object");
        let (m, delete) = match (&o.apply, &o.delete) {
            (Some(m), None) => (m, false),
            (None, Some(m)) => (m, true),
            _ => {
                ctx.err(
                    s,
                    sp,
                    "give `apply: PATH` (update, or create later) or `delete: PATH` (an object this case created), one of them",
                );
                continue;
            }
        };
        let field = format!("{sp}.{}", if delete { "delete" } else { "apply" });
        let obj = match load_object(base, ctx.names, m) {
            Ok(o) if o.kind == "Service" => {
                ctx.err(m, field, "an `object` step changes a ConfigMap or Secret; a Service's environment is read once, when a container starts");
                continue;
            }
            Ok(o) => o,
            Err(e) => {
                ctx.live_only(m, field, e.to_string());
                continue;
            }
        };
        let id = obj.id();
        if delete {
            match present.iter().position(|x| *x == id) {
                Some(at) => {
                    present.remove(at);
                }
                None => ctx.err(
                    m,
                    field,
                    format!("{id} is not an object this case created by then (`objects:` or an earlier `object: {{apply}}`): podlife deletes only what its run created"),
                ),
            }
        } else if !present.contains(&id) {
            present.push(id);
        }
        step_objects.insert(i, obj);
    }
    step_objects
}

/// The `exec` steps checked: their names (each once), containers and commands.
fn exec_steps(ctx: &mut Ctx, c: &CaseInput, containers: &[ContainerInfo]) -> BTreeSet<String> {
    let (case, p) = (c.case, c.path);
    let mut exec_names: BTreeSet<String> = BTreeSet::new();
    for (i, s) in case.steps.iter().enumerate() {
        let (sp, name, container, timeout) = match &s.value {
            Step::Exec(x) => (format!("{p}.steps[{i}].exec"), &x.name, &x.container, x.timeout),
            Step::FetchLog(l) => (format!("{p}.steps[{i}].fetchLog"), &l.name, &l.container, l.timeout),
            _ => continue,
        };
        let n = name.value.as_str();
        if !is_step_name(n) {
            ctx.err(
                name,
                format!("{sp}.name"),
                format!("invalid name \"{n}\": use 1-63 characters of a-z, 0-9 and `-`"),
            );
        } else if !exec_names.insert(n.to_string()) {
            ctx.err(
                name,
                format!("{sp}.name"),
                format!("`{n}` names another exec or fetchLog step too: each its own name"),
            );
        }
        if !containers.iter().any(|c| c.name == container.value) {
            let known = containers
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            ctx.err(
                container,
                format!("{sp}.container"),
                format!("unknown container `{}` (the pod has: {known})", container.value),
            );
        }
        if timeout.is_some_and(|t| t.0.is_zero()) {
            ctx.err(s, format!("{sp}.timeout"), "must be more than 0s");
        }
        let Step::Exec(x) = &s.value else { continue };
        if x.command.value.first().is_none_or(|c| c.is_empty()) {
            ctx.err(
                &x.command,
                format!("{sp}.command"),
                "the command is empty: give the program and its arguments, e.g. [/bin/echo, marco]",
            );
        }
    }
    exec_names
}

/// The `update` steps checked: their names (each once), repeat counts, and that each change is
/// one the API lets a running pod make (the rest it refuses as "pod updates may not change
/// fields other than ...").
fn update_steps(
    ctx: &mut Ctx,
    c: &CaseInput,
    pod: &serde_json::Value,
    containers: &[ContainerInfo],
) -> BTreeSet<String> {
    let (case, p) = (c.case, c.path);
    let mut names: BTreeSet<String> = BTreeSet::new();
    // The pod's deadline as the steps leave it, for the next step's check.
    let mut deadline = pod.pointer("/spec/activeDeadlineSeconds").and_then(|v| v.as_i64());
    for (i, s) in case.steps.iter().enumerate() {
        match &s.value {
            Step::Patch(pt) => {
                if let Some(d) = &pt.active_deadline_seconds {
                    deadline = Some(d.value);
                }
                continue;
            }
            Step::Update(_) => {}
            _ => continue,
        }
        let Step::Update(u) = &s.value else { continue };
        let sp = format!("{p}.steps[{i}].update");
        update_name(ctx, u, &sp, &mut names);
        if let Some(t) = &u.times
            && !(1..=MAX_UPDATE_TIMES).contains(&t.value)
        {
            ctx.err(
                t,
                format!("{sp}.times"),
                format!("must be 1 to {MAX_UPDATE_TIMES}, got {}", t.value),
            );
        }
        for (j, t) in u.tolerations.iter().enumerate() {
            if let Some(why) = toleration_problem(&t.value) {
                ctx.err(t, format!("{sp}.tolerations[{j}]"), why);
            }
        }
        if let Some(d) = &u.active_deadline_seconds {
            update_deadline(ctx, u, d, &format!("{sp}.activeDeadlineSeconds"), &mut deadline);
        }
        update_images(ctx, u, &sp, containers, c.images);
        if let Some(g) = &u.generation
            && g.value < 0
        {
            ctx.err(
                g,
                format!("{sp}.generation"),
                format!("must be 0 or more, got {}", g.value),
            );
        }
    }
    names
}

/// A step name marks and expectations refer to: 1-63 characters of a-z, 0-9 and `-`.
fn is_step_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 63
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// An update step's name: a DNS label, and no other update step's.
fn update_name(ctx: &mut Ctx, u: &UpdateStep, sp: &str, names: &mut BTreeSet<String>) {
    let n = u.name.value.as_str();
    if !is_step_name(n) {
        ctx.err(
            &u.name,
            format!("{sp}.name"),
            format!("invalid name \"{n}\": use 1-63 characters of a-z, 0-9 and `-`"),
        );
    } else if !names.insert(n.to_string()) {
        ctx.err(
            &u.name,
            format!("{sp}.name"),
            format!("`{n}` names another update step too: each update step its own name"),
        );
    }
}

/// An update step's `activeDeadlineSeconds` (`d`, at `path`) against the pod's deadline as the
/// steps before leave it (`deadline`, moved on to what this step leaves): the API only lets a
/// running pod lower it, and never to 0.
fn update_deadline(ctx: &mut Ctx, u: &UpdateStep, d: &Loc<DeadlineChange>, path: &str, deadline: &mut Option<i64>) {
    let path = path.to_string();
    match d.value {
        DeadlineChange::Set(v) if v < 1 => ctx.err(d, path, format!("must be 1 or more, got {v}")),
        DeadlineChange::Set(v) => {
            if let Some(cur) = *deadline
                && v > cur
            {
                ctx.err(
                    d,
                    path,
                    format!("the API only lets a running pod lower activeDeadlineSeconds; it is {cur} by then, the update raises it to {v}"),
                );
            }
            *deadline = Some(v);
        }
        DeadlineChange::Decrement => match *deadline {
            None => ctx.err(
                d,
                path,
                "decrement needs a deadline: the manifest (or an earlier step) must set activeDeadlineSeconds",
            ),
            Some(cur) if cur <= i64::from(u.times()) => ctx.err(
                d,
                path,
                format!(
                    "{} decrements of {cur} would reach 0: activeDeadlineSeconds must stay 1 or more",
                    u.times()
                ),
            ),
            Some(cur) => *deadline = Some(cur - i64::from(u.times())),
        },
    }
}

/// An update step's `containerImages`: each names a container or init container of the pod
/// (an update cannot change an ephemeral container's), with a non-empty image whose templates
/// are known.
fn update_images(
    ctx: &mut Ctx,
    u: &UpdateStep,
    sp: &str,
    containers: &[ContainerInfo],
    images: &BTreeMap<String, String>,
) {
    for (name, image) in &u.container_images {
        let path = format!("{sp}.containerImages.{name}");
        match containers.iter().find(|c| &c.name == name) {
            None => {
                let known = containers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
                ctx.err(image, path, format!("unknown container `{name}` (the pod has: {known})"));
            }
            Some(c) if c.kind == ContainerKind::Ephemeral => ctx.err(
                image,
                path,
                format!("`{name}` is an ephemeral container: the API lets an update change only its containers' and init containers' images"),
            ),
            Some(_) if image.value.trim().is_empty() => ctx.err(image, path, "the image is empty"),
            Some(_) => {
                if let Some(e) =
                    super::templates::unknown_template(&serde_json::Value::String(image.value.clone()), images)
                {
                    ctx.err(image, path, e);
                }
            }
        }
    }
}

/// Why the API would refuse this toleration (validateTolerations), if it would.
fn toleration_problem(t: &Toleration) -> Option<String> {
    let op = t.operator.as_deref().unwrap_or("Equal");
    if !matches!(op, "Equal" | "Exists") {
        return Some(format!("operator `{op}`: use Equal or Exists"));
    }
    if op == "Exists" && t.value.as_deref().is_some_and(|v| !v.is_empty()) {
        return Some("operator Exists takes no value".into());
    }
    if t.key.as_deref().unwrap_or("").is_empty() && op != "Exists" {
        return Some("an empty key needs operator Exists".into());
    }
    if let Some(e) = &t.effect
        && !matches!(e.as_str(), "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute")
    {
        return Some(format!("effect `{e}`: use NoSchedule, PreferNoSchedule or NoExecute"));
    }
    if t.toleration_seconds.is_some() && t.effect.as_deref() != Some("NoExecute") {
        return Some("tolerationSeconds only goes with effect NoExecute".into());
    }
    None
}

/// The other steps' marks and fields.
fn other_steps(refs: &mut Refs, c: &CaseInput, pod: &serde_json::Value) {
    let (case, p, images) = (c.case, c.path, c.images);
    for (i, s) in case.steps.iter().enumerate() {
        let sp = format!("{p}.steps[{i}]");
        match &s.value {
            Step::WaitFor(w) => refs.mark_ref(&w.until, &format!("{sp}.waitFor.until")),
            Step::Delete(d) => {
                if let Some(g) = d.grace_period_seconds
                    && !(0..=MAX_GRACE_SECONDS).contains(&g)
                {
                    refs.ctx.err(
                        s,
                        format!("{sp}.delete.gracePeriodSeconds"),
                        if g < 0 {
                            format!("must be 0 or more, got {g}")
                        } else {
                            format!("must be at most {MAX_GRACE_SECONDS} (24h, the longest case timeout), got {g}")
                        },
                    );
                }
            }
            Step::Sleep(_) => {}
            Step::Patch(patch) => check_patch(refs, s, patch, &sp, pod, images),
            Step::Resize(r) => {
                if r.containers.is_empty() {
                    refs.ctx.err(
                        s,
                        format!("{sp}.resize.containers"),
                        "name at least one container to resize",
                    );
                }
                for (n, x) in &r.containers {
                    refs.resources(n, x, &format!("{sp}.resize.containers.{n}"));
                    if x.value.requests.is_empty() && x.value.limits.is_empty() {
                        refs.ctx.err(
                            &Loc {
                                value: (),
                                line: x.line,
                                col: x.col,
                            },
                            format!("{sp}.resize.containers.{n}"),
                            "no requests or limits: the resize would change nothing",
                        );
                    }
                }
            }
            // Checked above, with the containers.
            Step::Ephemeral(_) | Step::Exec(_) | Step::FetchLog(_) | Step::Object(_) | Step::Update(_) => {}
        }
    }
}

fn step_budget(ctx: &mut Ctx, c: &CaseInput) {
    let (case, p, timeout, wait_timeout) = (c.case, c.path, c.timeout, c.wait_timeout);
    // Steps run one after another inside the case timeout: a step that could still be waiting
    // when the case timeout fires would be cut short by it, and its "timed out" would name a
    // limit that never fired (status-crashloop waited "240s" in a 120s case).
    let case_timeout = case.timeout.map(|d| d.0).unwrap_or(timeout);
    let mut worst = std::time::Duration::ZERO;
    for (i, s) in case.steps.iter().enumerate() {
        let (took, what) = match &s.value {
            Step::WaitFor(w) => (w.timeout.map(|d| d.0).unwrap_or(wait_timeout), "waitFor timeout"),
            Step::Sleep(d) => (d.r#for.0, "sleep"),
            Step::Exec(x) => (x.timeout.map(|d| d.0).unwrap_or(DEFAULT_EXEC_TIMEOUT), "exec timeout"),
            Step::FetchLog(l) => (
                l.timeout.map(|d| d.0).unwrap_or(DEFAULT_EXEC_TIMEOUT),
                "fetchLog timeout",
            ),
            Step::Update(u) => (u.min_duration(), "update's paced updates"),
            _ => continue,
        };
        worst = worst.saturating_add(took);
        if worst > case_timeout {
            ctx.live_only(
                s,
                format!("{p}.steps[{i}]"),
                format!(
                    "the steps up to this {what} may take {} but the case timeout is {}: raise the case's `timeout` (or the suite's `defaults.timeout`) to at least that, or shorten the steps",
                    crate::util::fmt_secs(worst.as_secs_f64()),
                    crate::util::fmt_secs(case_timeout.as_secs_f64())
                ),
            );
            break;
        }
    }
}

fn expectations(refs: &mut Refs, c: &CaseInput) {
    let (case, p) = (c.case, c.path);
    if case.expect.is_empty() {
        refs.ctx.err(
            &case.name,
            format!("{p}.expect"),
            "a case needs at least one expectation: without one it passes on any node and certifies nothing",
        );
    }
    for (i, e) in case.expect.iter().enumerate() {
        let at = Loc {
            value: (),
            line: e.line,
            col: e.col,
        };
        refs.expectation(e, &format!("{p}.expect[{i}]"), &at);
    }
}

/// An object manifest (`objects:`, an `object` step) loaded and checked.
fn load_object(base: &Path, names: &Names, m: &Loc<String>) -> Result<AuxObject, ManifestError> {
    load_manifest(base, names, m).and_then(|(v, file)| {
        check_object(&v)
            .map(|(kind, name)| AuxObject {
                kind,
                name,
                value: v,
                path: file.clone(),
            })
            .map_err(|problem| ManifestError::Object {
                path: names.name(&file),
                problem,
            })
    })
}
