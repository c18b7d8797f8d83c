//! `MeasureInfo`: what a measured value (a gap, a back-off interval) means when two runs are
//! compared — how exactly it is known, what it was judged against, and which noise model
//! applies to it — so `podlife diff` can tell noise from regression.
//!
//! Precision comes from the marks: a status time is whole seconds (the true instant lies in the
//! second after it, narrowed by the instance's own log lines), a mark that a probe decides can
//! fall anywhere within one probe period, CRI log timestamps are nanoseconds and receive times
//! and our own actions are read on the harness clock. The noise class says what decides the
//! value from run to run on a conformant node (magnitudes and mechanisms: `judge::mechanism`).

use serde::{Deserialize, Serialize};

use crate::suite::model::*;
use crate::suite::types::InstanceSel;

/// The comparison-relevant description of one measured value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeasureInfo {
    /// The true value may be up to this much smaller than measured (seconds).
    pub below: f64,
    /// The true value may be up to this much larger than measured (seconds).
    pub above: f64,
    /// Why it is not exact (empty when both ends are nanosecond or harness-clock instants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<String>,
    /// The bounds the value was judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// The value the expectation aims at: a gap's `target`, a back-off step's lower bound (the
    /// kubelet never restarts before the back-off expires, only later). None: bounds only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal: Option<f64>,
    /// What decides the value from run to run.
    pub noise: Noise,
    /// Why that class applies to this value: which mark decides it and how (empty in reports
    /// written before podlife recorded it; the class's mechanism then says it in general).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// What decides a measured value from run to run (magnitudes and mechanisms in
/// `judge::mechanism`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Noise {
    /// Both ends are log lines of one container instance without probes: the container's own
    /// code, its hooks and the runtime's timers (grace period) decide it.
    Process,
    /// At least one end is a kubelet reaction noticed by its 1 s PLEG relist, a probe, a status
    /// write, an event or a watch delivery.
    Kubelet,
    /// A back-off wait: the kubelet restarts at the first pod sync after the back-off expires.
    Backoff,
    /// The kubelet applies the change at the pod's next periodic sync: a volume's content after
    /// its ConfigMap, Secret or the pod's metadata changed, or a reaction written to status only.
    Sync,
    /// Both ends are podlife's own actions: not node behaviour, never compared.
    Own,
    /// The pod object going away: the kubelet deletes it at a status sync once its resources
    /// are reclaimed.
    Removal,
}

/// A mark's contribution: how it is read and what decides it.
struct End {
    /// Resolution of the instant (the true instant lies in `[at, at + resolution)`), seconds.
    resolution: f64,
    resolution_cause: Option<&'static str>,
    /// A probe decides this instant: it may lie up to one period after the underlying change.
    probe_period: Option<f64>,
    /// `(container, instance)` when the mark is one of that instance's log lines.
    log_of: Option<(String, InstanceSel)>,
}

/// The probe period (longest `periodSeconds` of its probes) of a container, if it has probes.
pub(crate) type ProbePeriods<'a> = &'a dyn Fn(&str) -> Option<f64>;

fn end(spec: &MarkSpec, probes: ProbePeriods, any_probe: Option<f64>, resolution: Option<f64>) -> End {
    let status = |r: Option<f64>| (r.unwrap_or(1.0), Some("whole-second status time"));
    let (resolution, resolution_cause) = match spec {
        MarkSpec::ContainerStarted(_) | MarkSpec::ContainerTerminated(_) => status(resolution),
        _ => match resolution {
            Some(r) if r > 0.0 => (r, Some("mark resolution")),
            _ => (0.0, None),
        },
    };
    let container: Option<&str> = match spec {
        MarkSpec::ContainerStarted(r)
        | MarkSpec::ContainerTerminated(r)
        | MarkSpec::FirstLogLine(r)
        | MarkSpec::LastLogLine(r)
        | MarkSpec::TickStopped(r) => Some(r.container.as_str()),
        MarkSpec::ContainerSeen(s) => Some(s.container.as_str()),
        MarkSpec::Restarts(r) => Some(r.container.as_str()),
        MarkSpec::Log(l) => Some(l.container.as_str()),
        MarkSpec::Event(e) => e.container.as_ref().map(|c| c.as_str()),
        _ => None,
    };
    let probe_period = match spec {
        // Readiness (and a startup probe gating it) flips a condition at a probe tick.
        MarkSpec::Condition(_) => any_probe,
        MarkSpec::Event(e) if e.reason == "Unhealthy" => container.and_then(probes).or(any_probe),
        _ => container.and_then(probes),
    };
    let log_of = match spec {
        MarkSpec::Log(l) => Some((l.container.value.clone(), l.instance)),
        // The tick loop's end is read from the same instance's log lines.
        MarkSpec::FirstLogLine(r) | MarkSpec::LastLogLine(r) | MarkSpec::TickStopped(r) => {
            Some((r.container.value.clone(), r.instance))
        }
        _ => None,
    };
    End {
        resolution,
        resolution_cause,
        probe_period,
        log_of,
    }
}

fn lookup(case: &Case, r: &MarkRef) -> Option<MarkSpec> {
    match r {
        MarkRef::Named(n) => case
            .marks
            .get(&n.value)
            .cloned()
            .or_else(|| crate::suite::load::builtin_mark(&n.value)),
        MarkRef::Inline(m) => Some((**m).clone()),
    }
}

/// A gap's bounds and ideal: `(min, max, ideal)`.
pub(crate) fn gap_bounds(g: &GapExpect) -> (Option<f64>, Option<f64>, Option<f64>) {
    match (g.target, g.tolerance) {
        (Some(t), tol) => {
            let (t, tol) = (t.as_secs_f64(), tol.map_or(0.0, |d| d.as_secs_f64()));
            (Some(t - tol), Some(t + tol), Some(t))
        }
        (None, _) => (g.min.map(|d| d.as_secs_f64()), g.max.map(|d| d.as_secs_f64()), None),
    }
}

/// Describes a gap. `resolution` gives each end's measured resolution (the resolved marks'
/// precision) when known; without it (reports written before podlife recorded this) status
/// marks count as whole seconds and everything else as exact.
pub(crate) fn gap_info(
    case: &Case,
    g: &GapExpect,
    resolution: Option<(f64, f64)>,
    probes: ProbePeriods,
    any_probe: Option<f64>,
) -> Option<MeasureInfo> {
    let (from, to) = (lookup(case, &g.from)?, lookup(case, &g.to)?);
    let (ra, rb) = resolution.unzip();
    let a = end(&from, probes, any_probe, ra);
    let b = end(&to, probes, any_probe, rb);
    // The true gap is (to_true − from_true): a late-read `from` makes the gap look longer
    // (its resolution counts below), a late-read `to` makes it look shorter (above). A
    // probe-decided instant is up to a period after the change it reports.
    let mut below = a.resolution + b.probe_period.unwrap_or(0.0);
    let mut above = b.resolution + a.probe_period.unwrap_or(0.0);
    if !below.is_finite() {
        below = 0.0;
    }
    if !above.is_finite() {
        above = 0.0;
    }
    let mut precision = vec![];
    for (e, which) in [(&a, "from"), (&b, "to")] {
        if let Some(c) = e.resolution_cause
            && e.resolution > 0.0
        {
            precision.push(format!("{which}: {c} (±{})", crate::util::fmt_secs(e.resolution)));
        }
        if let Some(p) = e.probe_period {
            precision.push(format!("{which}: probe period {}", crate::util::fmt_secs(p)));
        }
    }
    // One instance unless the marks name two different ones (`any`/`last` next to a number is
    // taken as the same run: the suites name instances explicitly for gaps across a restart).
    let same_process = match (&a.log_of, &b.log_of) {
        (Some((ca, ia)), Some((cb, ib))) => {
            let distinct = matches!((ia, ib), (InstanceSel::Nth(x), InstanceSel::Nth(y)) if x != y);
            ca == cb && !distinct && probes(ca).is_none()
        }
        _ => false,
    };
    let (min, max, ideal) = gap_bounds(g);
    let (noise, why) = gap_noise(&from, &to, same_process, min);
    Some(MeasureInfo {
        below,
        above,
        precision,
        min,
        max,
        ideal,
        noise,
        why,
    })
}

/// The mechanism a gap's expectation depends on, from what its two ends are.
fn gap_noise(from: &MarkSpec, to: &MarkSpec, same_process: bool, min: Option<f64>) -> (Noise, String) {
    let action = |m: &MarkSpec| match m {
        MarkSpec::Action(a) => Some(a.action),
        _ => None,
    };
    if let (Some(a), Some(b)) = (action(from), action(to)) {
        return (
            Noise::Own,
            format!("from our {a:?} to our {b:?}: both ends are our own requests"),
        );
    }
    // A running container sees a changed ConfigMap or Secret, or the pod's changed labels and
    // annotations, only in its volume's files, which the kubelet rewrites at its periodic pod sync.
    if let (Some(a @ (ActionKind::UpdateObject | ActionKind::DeleteObject | ActionKind::Patch)), MarkSpec::Log(l)) =
        (action(from), to)
    {
        return (
            Noise::Sync,
            format!(
                "from our {a:?} to `{}` reading the volume: the kubelet rewrites a volume's files at the pod's periodic sync",
                l.container.as_str()
            ),
        );
    }
    // The same kubelet event again after a lower bound: the retry that ends a back-off step
    // (an image pull, a container start), at the first pod sync after the back-off expires.
    if let (MarkSpec::Event(a), MarkSpec::Event(b)) = (from, to)
        && a.reason == b.reason
        && a.occurrence != b.occurrence
        && min.is_some_and(|m| m > 0.0)
    {
        return (
            Noise::Backoff,
            format!("one `{}` event to the next: a retry after a back-off step", b.reason),
        );
    }
    // The pod object goes when the kubelet's status manager deletes it, at its first sync after
    // the containers are gone and the volumes and cgroups reclaimed.
    if matches!(to, MarkSpec::PodGone) {
        return (
            Noise::Removal,
            "to the pod gone: the kubelet deletes the pod object at a status sync once its resources are reclaimed"
                .into(),
        );
    }
    if same_process {
        (
            Noise::Process,
            "both ends are log lines of one container instance".into(),
        )
    } else {
        (
            Noise::Kubelet,
            "an end is the kubelet acting, read from status, an event or the watch".into(),
        )
    }
}

/// Describes the `i`-th back-off interval judged against `(lo, hi)`; `slack` is the
/// measurement's own resolution on each side (1 s for status times, 0 for log lines).
pub(crate) fn backoff_info(lo: Option<f64>, hi: Option<f64>, slack: f64) -> MeasureInfo {
    // A restart that waits out a back-off step happens at a pod sync after it; an immediate
    // restart (no lower bound above 0) is a plain kubelet reaction.
    let waits = lo.is_some_and(|l| l > 0.0);
    let precision = if slack > 0.0 {
        vec![format!("whole-second status times (±{})", crate::util::fmt_secs(slack))]
    } else {
        vec![]
    };
    MeasureInfo {
        below: slack,
        above: slack,
        precision,
        min: lo,
        max: hi,
        ideal: lo.filter(|l| *l > 0.0),
        noise: if waits { Noise::Backoff } else { Noise::Kubelet },
        why: if waits {
            "a restart after a back-off step".into()
        } else {
            "an immediate restart".into()
        },
    }
}

/// The longest `periodSeconds` of a container's probes in a pod manifest (Kubernetes defaults
/// it to 10 s), or None when it has no probe.
pub(crate) fn probe_period_in(pod: &serde_json::Value, container: &str) -> Option<f64> {
    let spec = pod.get("spec")?;
    let all = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k)?.as_array())
        .flatten();
    let c = all
        .into_iter()
        .find(|c| c.get("name").and_then(|n| n.as_str()) == Some(container))?;
    ["livenessProbe", "readinessProbe", "startupProbe"]
        .iter()
        .filter_map(|p| c.get(*p))
        .map(|p| p.get("periodSeconds").and_then(|s| s.as_f64()).unwrap_or(10.0))
        .reduce(f64::max)
}

/// The longest probe period of any container of a pod manifest.
pub(crate) fn any_probe_period_in(pod: &serde_json::Value) -> Option<f64> {
    let spec = pod.get("spec")?;
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k)?.as_array())
        .flatten()
        .filter_map(|c| c.get("name")?.as_str())
        .filter_map(|n| probe_period_in(pod, n))
        .reduce(f64::max)
}

/// What a report's label of a measured value says it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Labelled<'a> {
    /// `gap F→T`: the gap between the marks labelled `F` and `T`.
    Gap { from: &'a str, to: &'a str },
    /// `backoff \`C\`` (and what follows): the back-off of container `C`.
    Backoff { container: &'a str },
}

/// Every reading of a report's label: a mark's label may itself hold `→`, and a backtick may
/// follow a container's name, so each place the label could split at is a reading.
fn label_readings(label: &str) -> Vec<Labelled<'_>> {
    if let Some(rest) = label.strip_prefix("gap ") {
        rest.match_indices('→')
            .map(|(i, arrow)| Labelled::Gap {
                from: &rest[..i],
                to: &rest[i + arrow.len()..],
            })
            .collect()
    } else if let Some(rest) = label.strip_prefix("backoff `") {
        rest.match_indices('`')
            .map(|(i, _)| Labelled::Backoff { container: &rest[..i] })
            .collect()
    } else {
        vec![]
    }
}

/// Describes the measured values of expectation `index` of a case from its definition alone
/// (no timeline): used for reports written before verdicts carried `measures`. `label` is the
/// report's label of the value (`gap \`term\`→\`kill\``, `backoff \`main\` (...)`): when the
/// expectation at that place measures something else now, there is no description.
pub(crate) fn static_info(
    case: &Case,
    pod: &serde_json::Value,
    index: usize,
    position: usize,
    label: &str,
) -> Option<MeasureInfo> {
    let e = &case.expect.get(index)?.value;
    let same = label_readings(label).into_iter().any(|r| match (e, r) {
        (Expectation::Gap(g), Labelled::Gap { from, to }) => from == g.from.label() && to == g.to.label(),
        (Expectation::Backoff(b), Labelled::Backoff { container }) => container == b.container.as_str(),
        _ => false,
    });
    if !same {
        return None;
    }
    let probes = |c: &str| probe_period_in(pod, c);
    let any = any_probe_period_in(pod);
    match e {
        Expectation::Gap(g) if position == 0 => gap_info(case, g, None, &probes, any),
        Expectation::Backoff(b) => {
            let (lo, hi) = super::backoff_bounds(b, position);
            let slack = if b.measure == BackoffMeasure::Status { 1.0 } else { 0.0 };
            Some(backoff_info(lo, hi, slack))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_read_at_every_place_it_could_split() {
        assert_eq!(
            label_readings("gap `a`→`b`"),
            vec![Labelled::Gap { from: "`a`", to: "`b`" }]
        );
        // A mark's own label may hold an arrow: each split is a reading.
        assert_eq!(label_readings("gap x→y→z").len(), 2);
        assert!(label_readings("backoff `main` (status)").contains(&Labelled::Backoff { container: "main" }));
        assert!(label_readings("exec").is_empty());
    }
}
