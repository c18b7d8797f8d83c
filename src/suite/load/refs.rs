//! Reference checks (`Refs`): every container, mark and exec step that a case's marks and expectations
//! name exists and is used as it may be (`instance: each` only inside `forEachInstance`, one of `regex`
//! and `equals`), each problem reported at the reference; and the built-in marks (`podGone`).

use super::*;

pub(super) struct Refs<'a, 'b> {
    pub(super) ctx: &'a mut Ctx<'b>,
    pub(super) containers: &'a BTreeSet<&'a str>,
    pub(super) all: &'a [ContainerInfo],
    pub(super) marks: &'a BTreeMap<String, MarkSpec>,
    /// While checking a gap with `forEachInstance: C`: marks may use `instance: each` on C.
    pub(super) each: Option<String>,
    /// Names of the case's `exec` steps.
    pub(super) execs: &'a BTreeSet<String>,
    /// Names of the case's `update` steps.
    pub(super) updates: &'a BTreeSet<String>,
}

impl Refs<'_, '_> {
    pub(super) fn container(&mut self, c: &Loc<String>, path: &str) {
        if !self.containers.contains(c.value.as_str()) {
            let known = self.all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
            self.ctx.err(
                c,
                path,
                format!("unknown container `{}` (the pod has: {known})", c.value),
            );
        }
    }

    /// The resources a `resize` step sends or a `resized` mark or `cgroup` expectation expects of
    /// a container: a container of the pod (not an ephemeral one, which has no resources), only
    /// `cpu` and `memory` (the only resources the API lets a resize change), each a quantity the
    /// API accepts, greater than zero, and no request above its limit.
    pub(super) fn resources(&mut self, name: &str, r: &Loc<ResizeResources>, path: &str) {
        let at = Loc {
            value: name.to_string(),
            line: r.line,
            col: r.col,
        };
        self.container(&at, path);
        if self
            .all
            .iter()
            .any(|c| c.name == name && c.kind == crate::suite::ContainerKind::Ephemeral)
        {
            self.ctx.err(
                &at,
                path,
                format!("`{name}` is an ephemeral container, which has no resources to resize"),
            );
        }
        self.resource_values(&r.value, &at, path);
    }

    pub(super) fn resource_values(&mut self, r: &ResizeResources, at: &Loc<String>, path: &str) {
        use crate::suite::quantity::Quantity;
        let mut parsed: BTreeMap<(&str, &str), Quantity> = BTreeMap::new();
        for (side, m) in [("requests", &r.requests), ("limits", &r.limits)] {
            for (k, v) in m {
                let p = format!("{path}.{side}.{k}");
                if k != "cpu" && k != "memory" {
                    self.ctx
                        .err(at, p, format!("only cpu and memory can be resized in place, not `{k}`"));
                    continue;
                }
                match Quantity::parse(v) {
                    Ok(q) if q.0 <= 0 => self.ctx.err(at, p, format!("must be more than 0, got {v:?}")),
                    Ok(q) => {
                        parsed.insert((side, k.as_str()), q);
                    }
                    Err(e) => self.ctx.err(at, p, e.to_string()),
                }
            }
        }
        for k in ["cpu", "memory"] {
            if let (Some(req), Some(lim)) = (parsed.get(&("requests", k)), parsed.get(&("limits", k)))
                && req > lim
            {
                self.ctx.err(
                    at,
                    format!("{path}.requests.{k}"),
                    format!("the {k} request {} is above its limit {}", r.requests[k], r.limits[k]),
                );
            }
        }
    }

    /// `instance: each` only means something inside a gap with `forEachInstance` on the same
    /// container; anywhere else it is an error at the reference.
    pub(super) fn check_each(&mut self, m: &MarkRef, path: &str) {
        let spec = match m {
            MarkRef::Named(n) => self.marks.get(&n.value).cloned(),
            MarkRef::Inline(s) => Some((**s).clone()),
        };
        let Some(c) = spec.as_ref().and_then(MarkSpec::each_container).map(str::to_string) else {
            return;
        };
        let at = match m {
            MarkRef::Named(n) => Loc {
                value: (),
                line: n.line,
                col: n.col,
            },
            MarkRef::Inline(_) => Loc::new(()),
        };
        match &self.each {
            Some(e) if *e == c => {}
            Some(e) => self.ctx.err(
                &at,
                path,
                format!(
                    "mark {} uses `instance: each` on `{c}`, but the gap is for each instance of `{e}`",
                    m.label()
                ),
            ),
            None => self.ctx.err(
                &at,
                path,
                format!(
                    "mark {} uses `instance: each`, which only a gap with `forEachInstance: {c}` can bind",
                    m.label()
                ),
            ),
        }
    }

    pub(super) fn mark_ref(&mut self, m: &MarkRef, path: &str) {
        self.check_each(m, path);
        match m {
            MarkRef::Named(n) => {
                if !self.marks.contains_key(&n.value) && builtin_mark(&n.value).is_none() {
                    let known: Vec<&str> = self.marks.keys().map(String::as_str).collect();
                    let hint = if known.is_empty() {
                        "no marks are defined".to_string()
                    } else {
                        format!("defined: {}", known.join(", "))
                    };
                    self.ctx.err(n, path, format!("undefined mark `{}` ({hint})", n.value));
                }
            }
            MarkRef::Inline(spec) => self.mark(spec, path),
        }
    }

    pub(super) fn mark(&mut self, m: &MarkSpec, path: &str) {
        let path = &format!("{path}.{}", m.key());
        match m {
            MarkSpec::ContainerStarted(c)
            | MarkSpec::ContainerTerminated(c)
            | MarkSpec::FirstLogLine(c)
            | MarkSpec::LastLogLine(c)
            | MarkSpec::TickStopped(c) => self.container(&c.container, &format!("{path}.container")),
            MarkSpec::ContainerSeen(c) => self.container(&c.container, &format!("{path}.container")),
            MarkSpec::Restarts(r) => self.container(&r.container, &format!("{path}.container")),
            MarkSpec::Log(l) => {
                self.container(&l.container, &format!("{path}.container"));
                self.text(l.regex.is_some(), l.equals.is_some(), &l.container, path);
            }
            MarkSpec::Ready(f) | MarkSpec::Started(f) => self.container(&f.container, &format!("{path}.container")),
            MarkSpec::Event(e) => {
                if let Some(c) = &e.container {
                    self.container(c, &format!("{path}.container"))
                }
            }
            MarkSpec::Status(st) => {
                if st.is.trim().is_empty() {
                    self.ctx
                        .err(&Loc::new(()), format!("{path}.is"), "the STATUS text is empty");
                }
            }
            MarkSpec::Resized(r) => {
                if r.containers.is_empty() {
                    self.ctx.err(
                        &Loc::new(()),
                        format!("{path}.containers"),
                        "name at least one container",
                    );
                }
                for (n, x) in &r.containers {
                    self.resources(n, x, &format!("{path}.containers.{n}"));
                }
            }
            MarkSpec::ObservedGeneration(g) => {
                if *g < 1 {
                    self.ctx.err(
                        &Loc::new(()),
                        path.to_string(),
                        format!("observedGeneration {g}: a pod's generation starts at 1"),
                    );
                }
            }
            MarkSpec::Phase(_)
            | MarkSpec::Condition(_)
            | MarkSpec::PodGone
            | MarkSpec::ActiveDeadline
            | MarkSpec::Action(_) => {}
        }
    }

    /// Exactly one of `regex` and `equals`.
    pub(super) fn text(&mut self, regex: bool, equals: bool, at: &Loc<String>, path: &str) {
        match (regex, equals) {
            (true, true) => self.ctx.err(at, path, "give `regex` or `equals`, not both"),
            (false, false) => self
                .ctx
                .err(at, path, "needs `regex` (a pattern) or `equals` (the exact text)"),
            _ => {}
        }
    }

    pub(super) fn expectation(&mut self, e: &Expectation, path: &str, case_name: &Loc<()>) {
        match e {
            Expectation::Phase(_) => {}
            Expectation::Phases(list) => {
                if list.is_empty() {
                    self.ctx
                        .err(case_name, format!("{path}.phases"), "the phase sequence is empty");
                }
            }
            Expectation::Container(c) => self.container_expect(c, path),
            Expectation::Condition(c) => self.condition_expect(c, path, case_name),
            Expectation::Order(list) => {
                if list.len() < 2 {
                    self.ctx
                        .err(case_name, format!("{path}.order"), "an order needs at least two marks");
                }
                for (i, m) in list.iter().enumerate() {
                    self.mark_ref(m, &format!("{path}.order[{i}]"));
                }
            }
            Expectation::Gap(g) => self.gap_expect(g, path, case_name),
            Expectation::Event(ev) => {
                if ev.reason.trim().is_empty() {
                    self.ctx.err(
                        case_name,
                        format!("{path}.event.reason"),
                        "the event reason is empty (it would match no event the kubelet sends)",
                    );
                }
                if let Some(c) = &ev.container {
                    self.container(c, &format!("{path}.event.container"));
                }
            }
            Expectation::Log(l) => self.log_expect(l, path),
            Expectation::Backoff(b) => self.backoff_expect(b, path, case_name),
            Expectation::Statuses(list) => self.statuses_expect(list, path, case_name),
            Expectation::StatusRow(r) => {
                if r.status.texts().is_empty() || r.status.texts().iter().any(|t| t.trim().is_empty()) {
                    self.ctx.err(
                        case_name,
                        format!("{path}.statusRow.status"),
                        "the STATUS text is empty",
                    );
                }
                for (i, c) in r.containers.iter().enumerate() {
                    self.container(&c.name, &format!("{path}.statusRow.containers[{i}].name"));
                }
            }
            Expectation::QosClass(_) => {}
            Expectation::Exec(x) => self.exec_expect(x, path),
            Expectation::Cgroup(g) => self.cgroup_expect(g, path),
            Expectation::Update(x) => self.update_expect(x, path),
            Expectation::ObservedGeneration(x) => {
                if x.is < 1 {
                    self.ctx.err(
                        case_name,
                        format!("{path}.observedGeneration.is"),
                        format!("{}: a pod's generation starts at 1", x.is),
                    );
                }
                self.mark_ref(&x.after, &format!("{path}.observedGeneration.after"));
                if let Some(b) = &x.before {
                    self.mark_ref(b, &format!("{path}.observedGeneration.before"));
                }
            }
            Expectation::Never(n) => {
                self.mark_ref(&n.mark, &format!("{path}.never.mark"));
                if let Some(a) = &n.after {
                    self.mark_ref(a, &format!("{path}.never.after"));
                }
                if let Some(b) = &n.before {
                    self.mark_ref(b, &format!("{path}.never.before"));
                }
            }
        }
    }

    /// The container a `container` expectation names, and a matcher that checks something of one instance.
    fn container_expect(&mut self, c: &ContainerExpect, path: &str) {
        self.container(&c.name, &format!("{path}.container.name"));
        if c.never_started && (c.exit_code.is_some() || c.state.is_some()) {
            self.ctx.err(
                &c.name,
                format!("{path}.container.neverStarted"),
                "neverStarted contradicts state/exitCode",
            );
        }
        if c.message.is_some() && c.message_equals.is_some() {
            self.ctx.err(
                &c.name,
                format!("{path}.container.messageEquals"),
                "give `message` (a regex) or `messageEquals`, not both",
            );
        }
        let checks_something = c.state.is_some()
            || c.exit_code.is_some()
            || c.reason.is_some()
            || c.restart_count.is_some()
            || c.message.is_some()
            || c.message_equals.is_some()
            || c.ready.is_some()
            || c.started.is_some()
            || !c.waiting_reasons_seen.is_empty()
            || !c.waiting_reasons_only.is_empty()
            || c.never_started;
        if !checks_something {
            self.ctx.err(
                &c.name,
                format!("{path}.container"),
                "the container matcher checks nothing: give `state`, `exitCode`, `reason`, `restartCount`, `message`, `ready`, `started`, `waitingReasonsSeen`, `waitingReasonsOnly` or `neverStarted`",
            );
        }
        if matches!(c.instance, InstanceSel::Any | InstanceSel::Each) {
            self.ctx.err(
                &c.name,
                format!("{path}.container.instance"),
                "a final state needs one instance: a number, `first` or `last`",
            );
        }
    }

    /// A `condition` expectation checks something.
    fn condition_expect(&mut self, c: &ConditionExpect, path: &str, case_name: &Loc<()>) {
        if c.sequence.is_none() && c.last.is_none() && c.never.is_none() && c.reason.is_none() && c.message.is_none() {
            self.ctx.err(
                case_name,
                format!("{path}.condition"),
                format!(
                    "condition `{}` needs `sequence`, `last`, `never`, `reason` or `message`",
                    c.r#type
                ),
            );
        }
    }

    /// A `gap`'s marks (`instance: each` only with `forEachInstance`), its bounds and its allowances.
    fn gap_expect(&mut self, g: &GapExpect, path: &str, case_name: &Loc<()>) {
        if let Some(c) = &g.for_each_instance {
            self.container(c, &format!("{path}.gap.forEachInstance"));
            let uses_each = [&g.from, &g.to].iter().any(|r| {
                let spec = match r {
                    MarkRef::Named(n) => self.marks.get(&n.value).cloned(),
                    MarkRef::Inline(s) => Some((**s).clone()),
                };
                spec.as_ref().and_then(MarkSpec::each_container).is_some()
            });
            if !uses_each {
                self.ctx.err(
                    c,
                    format!("{path}.gap.forEachInstance"),
                    format!(
                        "neither `from` nor `to` uses `instance: each`, so every instance would measure the same gap; give one of them `container: {}, instance: each`",
                        c.value
                    ),
                );
            }
            self.each = Some(c.value.clone());
        }
        self.mark_ref(&g.from, &format!("{path}.gap.from"));
        self.mark_ref(&g.to, &format!("{path}.gap.to"));
        self.each = None;
        let has_target = g.target.is_some();
        let has_bounds = g.min.is_some() || g.max.is_some();
        if !has_target && !has_bounds {
            self.ctx.err(
                case_name,
                format!("{path}.gap"),
                "a gap needs `target` (± `tolerance`) or `min`/`max`",
            );
        } else if has_target && has_bounds {
            self.ctx.err(
                case_name,
                format!("{path}.gap"),
                "give `target` (± `tolerance`) or `min`/`max`, not both",
            );
        } else if g.tolerance.is_some() && !has_target {
            self.ctx
                .err(case_name, format!("{path}.gap.tolerance"), "`tolerance` needs `target`");
        } else if let (Some(lo), Some(hi)) = (g.min, g.max)
            && lo > hi
        {
            self.ctx.err(
                case_name,
                format!("{path}.gap"),
                format!("min {lo} is greater than max {hi}"),
            );
        }
        if let Some(allow) = &g.allow {
            // The room the allowances take: a tolerance, or a max (a lower bound alone
            // is a nominal time less its allowances, which has no width to check).
            let width = match (g.target, g.tolerance, g.max) {
                (Some(_), tol, _) => Some(tol.map_or(0.0, |t| t.0.as_secs_f64())),
                (None, _, max) => max.map(|m| m.0.as_secs_f64()),
            };
            if let Err(e) = crate::suite::allowances::check(&allow.value, width) {
                self.ctx.err(allow, format!("{path}.gap.allow"), e.to_string());
            }
        }
    }

    /// A `log` expectation's container, text and instance.
    fn log_expect(&mut self, l: &LogExpect, path: &str) {
        self.container(&l.container, &format!("{path}.log.container"));
        self.text(
            l.regex.is_some(),
            l.equals.is_some(),
            &l.container,
            &format!("{path}.log"),
        );
        if l.instance == InstanceSel::Each {
            self.ctx.err(
                &l.container,
                format!("{path}.log.instance"),
                "`each` is for marks of a gap with `forEachInstance`; use `any` or a count",
            );
        }
    }

    /// A `backoff`'s container and its intervals or doubling.
    fn backoff_expect(&mut self, b: &BackoffExpect, path: &str, case_name: &Loc<()>) {
        self.container(&b.container, &format!("{path}.backoff.container"));
        match (b.intervals.is_empty(), &b.doubling) {
            (true, None) => self.ctx.err(
                case_name,
                format!("{path}.backoff"),
                "a backoff needs `intervals` or `doubling`",
            ),
            (false, Some(_)) => self.ctx.err(
                case_name,
                format!("{path}.backoff"),
                "give `intervals` or `doubling`, not both",
            ),
            _ => {}
        }
        if let Some(d) = &b.doubling
            && !(d.factor.is_finite() && d.factor >= 1.0)
        {
            self.ctx.err(
                &b.container,
                format!("{path}.backoff.doubling.factor"),
                format!("factor must be at least 1, got {}", d.factor),
            );
        }
        if let Some(d) = &b.doubling
            && let Some(j) = d.jitter
            && !(j.is_finite() && (0.0..=10.0).contains(&j))
        {
            self.ctx.err(
                &b.container,
                format!("{path}.backoff.doubling.jitter"),
                format!("jitter must be a fraction between 0 and 10, got {j}"),
            );
        }
    }

    /// A `statuses` sequence: not empty, and not only optional entries.
    fn statuses_expect(&mut self, list: &[String], path: &str, case_name: &Loc<()>) {
        if list.is_empty() {
            self.ctx
                .err(case_name, format!("{path}.statuses"), "the STATUS sequence is empty");
        }
        use crate::suite::model::{MAX_OPTIONAL_STATUSES, status_entry};
        if let Some(i) = list.iter().position(|s| status_entry(s).0.trim().is_empty()) {
            self.ctx
                .err(case_name, format!("{path}.statuses[{i}]"), "the STATUS text is empty");
        }
        let optional = list.iter().filter(|s| status_entry(s).1).count();
        if !list.is_empty() && optional == list.len() {
            self.ctx.err(
                case_name,
                format!("{path}.statuses"),
                "every STATUS is optional (`?`): the list asserts nothing",
            );
        } else if optional > MAX_OPTIONAL_STATUSES {
            self.ctx.err(
                case_name,
                format!("{path}.statuses"),
                format!("{optional} optional STATUS entries (`?`), at most {MAX_OPTIONAL_STATUSES}"),
            );
        }
    }

    /// An `exec` expectation names an exec step and checks something of its result.
    fn exec_expect(&mut self, x: &ExecExpect, path: &str) {
        if !self.execs.contains(&x.name.value) {
            let known = self.execs.iter().cloned().collect::<Vec<_>>().join(", ");
            self.ctx.err(
                &x.name,
                format!("{path}.exec.name"),
                format!(
                    "no exec step named `{}` (exec steps: {})",
                    x.name.value,
                    if known.is_empty() { "none".into() } else { known }
                ),
            );
        }
        if x.stdout.is_none()
            && x.stdout_regex.is_none()
            && x.stderr.is_none()
            && x.stderr_regex.is_none()
            && x.exit_code.is_none()
        {
            self.ctx.err(
                &x.name,
                format!("{path}.exec"),
                "an exec expectation needs `stdout`, `stdoutRegex`, `stderr`, `stderrRegex` or `exitCode`: without one it certifies nothing",
            );
        }
    }

    /// A `cgroup` expectation names an exec step and gives resources a cgroup value follows from.
    fn cgroup_expect(&mut self, g: &CgroupExpect, path: &str) {
        if !self.execs.contains(&g.exec.value) {
            let known = self.execs.iter().cloned().collect::<Vec<_>>().join(", ");
            self.ctx.err(
                &g.exec,
                format!("{path}.cgroup.exec"),
                format!(
                    "no exec step named `{}` (exec steps: {})",
                    g.exec.value,
                    if known.is_empty() { "none".into() } else { known }
                ),
            );
        }
        let r = ResizeResources {
            requests: g.requests.clone(),
            limits: g.limits.clone(),
        };
        if let Some(k) = r.requests.keys().find(|k| *k != "cpu") {
            self.ctx.err(
                &g.exec,
                format!("{path}.cgroup.requests.{k}"),
                "only the cpu request sets a cgroup value (shares or weight)",
            );
        }
        self.resource_values(&r, &g.exec, &format!("{path}.cgroup"));
    }

    /// An `update` expectation names an update step and checks a generation.
    fn update_expect(&mut self, x: &UpdateExpect, path: &str) {
        if !self.updates.contains(&x.name.value) {
            let known = self.updates.iter().cloned().collect::<Vec<_>>().join(", ");
            self.ctx.err(
                &x.name,
                format!("{path}.update.name"),
                format!(
                    "no update step named `{}` (update steps: {})",
                    x.name.value,
                    if known.is_empty() { "none".into() } else { known }
                ),
            );
        }
        if x.generation.is_none() && x.generation_read.is_none() {
            self.ctx.err(
                &x.name,
                format!("{path}.update"),
                "an update expectation needs `generation` or `generationRead`: without one it certifies nothing",
            );
        }
        for (field, g) in [("generation", x.generation), ("generationRead", x.generation_read)] {
            if let Some(g) = g
                && g < 1
            {
                self.ctx.err(
                    &x.name,
                    format!("{path}.update.{field}"),
                    format!("{g}: a pod's generation starts at 1"),
                );
            }
        }
    }
}

/// Mark names usable without defining them (`podGone`, `activeDeadline`).
pub fn builtin_mark(name: &str) -> Option<MarkSpec> {
    match name {
        "podGone" => Some(MarkSpec::PodGone),
        "activeDeadline" => Some(MarkSpec::ActiveDeadline),
        _ => None,
    }
}
