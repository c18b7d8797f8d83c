//! `PodRow`: the READY and STATUS columns of `kubectl get pods`, computed from one pod snapshot.
//!
//! `kubectl get pods` prints what the API server's table printer computes (server-side
//! printing), so the rules are those of the server the user talks to. This follows `printPod` in
//! kubernetes `pkg/printers/internalversion/printers.go` as shipped with Kubernetes v1.36 (the
//! reference node's version), rule for rule and in the same order:
//!
//! 1. STATUS starts as the phase, replaced by `status.reason` when set (Evicted,
//!    DeadlineExceeded, NodeLost, ...); `SchedulingGated` when PodScheduled has that reason.
//! 2. Init containers, in status order: one terminated with exit 0 is skipped; a restartable one
//!    (native sidecar) that has `started: true` is skipped (and counts towards READY when ready);
//!    the first other one decides: terminated → `Init:<reason>` (or `Init:Signal:N` /
//!    `Init:ExitCode:N` without a reason), waiting with a reason other than PodInitializing →
//!    `Init:<reason>`, otherwise `Init:<index>/<number of init containers in the spec>`.
//! 3. When no init container decided, or the Initialized condition is True, the app containers
//!    are scanned from the last to the first, the first container winning: waiting with a reason
//!    → that reason; terminated → its reason, else `Signal:N` / `ExitCode:N` (a non-zero exit
//!    is remembered as the error reason); running and ready → counts towards READY.
//! 4. A STATUS of `Completed` while a container still runs becomes `Running` when the pod is
//!    Ready, else the remembered error reason, else `NotReady`; with no running container the
//!    error reason still wins over `Completed` (the v1.33+ rule: a pod whose first container
//!    failed and whose last one completed shows the failure).
//! 5. With a deletionTimestamp: `Unknown` when `status.reason` is NodeLost, otherwise
//!    `Terminating` unless the phase is already terminal (Succeeded/Failed).
//!
//! READY is `<ready app containers + ready started sidecars>/<app containers + sidecars>`.

use super::timeline::{ContainerStatus, PodInfo, Snapshot, State};
use crate::suite::ContainerKind;

/// The kubectl columns of one snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRow {
    /// READY, e.g. `1/2`.
    pub ready: String,
    /// STATUS, e.g. `Init:1/3`, `CrashLoopBackOff`, `Terminating`.
    pub status: String,
    /// RESTARTS (without kubectl's "(5m ago)", which depends on when it is printed).
    pub restarts: u32,
}

/// Computes READY and STATUS of a snapshot as kubectl shows them.
pub fn pod_row(pod: &PodInfo, snap: &Snapshot) -> PodRow {
    // Rule 1.
    let phase = snap.phase.clone().unwrap_or_default();
    let mut reason = non_empty(&snap.reason).unwrap_or_else(|| phase.clone());
    if snap
        .condition("PodScheduled")
        .is_some_and(|c| c.reason.as_deref() == Some("SchedulingGated"))
    {
        reason = "SchedulingGated".to_string();
    }

    let count = |k: &[ContainerKind]| pod.containers.iter().filter(|c| k.contains(&c.kind)).count();
    let spec_init = count(&[ContainerKind::Init, ContainerKind::Sidecar]);
    let total = count(&[ContainerKind::Regular]) + count(&[ContainerKind::Sidecar]);

    // Rule 2.
    let init = init_containers(snap, spec_init);
    let mut ready = init.ready;
    // RESTARTS: init containers' restarts while initializing, else the sidecars' and the app
    // containers'.
    let mut restarts = init.restarts;
    let initializing = init.status.is_some();
    if let Some(s) = init.status {
        reason = s;
    }

    // Rules 3 and 4.
    if !initializing || is_true(snap, "Initialized") {
        let apps = app_containers(snap, reason, init.sidecar_restarts);
        reason = apps.status;
        ready += apps.ready;
        restarts = apps.restarts;
    }

    // Rule 5.
    if snap.deletion_timestamp.is_some() {
        if snap.reason.as_deref() == Some("NodeLost") {
            reason = "Unknown".to_string();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_string();
        }
    }

    PodRow {
        ready: format!("{ready}/{total}"),
        status: reason,
        restarts,
    }
}

/// A text field, `None` when absent or empty.
fn non_empty(s: &Option<String>) -> Option<String> {
    s.as_deref().filter(|s| !s.is_empty()).map(str::to_string)
}

/// Whether the snapshot's condition `ty` is True.
fn is_true(snap: &Snapshot, ty: &str) -> bool {
    snap.condition(ty).is_some_and(|c| c.status == "True")
}

/// What a scan of containers contributes to the row.
struct Scan<T> {
    /// The STATUS the scan decided.
    status: T,
    /// Ready containers counted.
    ready: usize,
    /// RESTARTS so far.
    restarts: u32,
    /// The sidecars' restarts (counted with the app containers' once initialized).
    sidecar_restarts: u32,
}

/// Rule 2: the init containers, in status order (the snapshot lists their statuses first). The
/// STATUS is `Some` when one of them decides it (the pod is initializing).
fn init_containers(snap: &Snapshot, spec_init: usize) -> Scan<Option<String>> {
    let mut scan = Scan {
        status: None,
        ready: 0,
        restarts: 0,
        sidecar_restarts: 0,
    };
    let inits = snap
        .containers
        .iter()
        .filter(|c| matches!(c.kind, ContainerKind::Init | ContainerKind::Sidecar));
    for (i, c) in inits.enumerate() {
        scan.restarts = scan.restarts.saturating_add(c.restart_count);
        if c.kind == ContainerKind::Sidecar {
            scan.sidecar_restarts = scan.sidecar_restarts.saturating_add(c.restart_count);
        }
        scan.status = Some(match &c.state {
            State::Terminated(t) if t.exit_code == 0 => continue,
            _ if c.kind == ContainerKind::Sidecar && c.started == Some(true) => {
                if c.ready {
                    scan.ready += 1;
                }
                continue;
            }
            State::Terminated(t) => match non_empty(&t.reason) {
                Some(r) => format!("Init:{r}"),
                None => match t.signal.filter(|s| *s != 0) {
                    Some(s) => format!("Init:Signal:{s}"),
                    None => format!("Init:ExitCode:{}", t.exit_code),
                },
            },
            State::Waiting { reason: Some(r), .. } if !r.is_empty() && r != "PodInitializing" => format!("Init:{r}"),
            _ => format!("Init:{i}/{spec_init}"),
        });
        break;
    }
    scan
}

/// Rules 3 and 4: the app containers from the last to the first, the first container winning,
/// over the STATUS so far; RESTARTS counted on from the sidecars'.
fn app_containers(snap: &Snapshot, mut reason: String, sidecar_restarts: u32) -> Scan<String> {
    let mut restarts = sidecar_restarts;
    let mut ready = 0;
    let mut has_running = false;
    let mut error_reason: Option<String> = None;
    let apps: Vec<&ContainerStatus> = snap
        .containers
        .iter()
        .filter(|c| c.kind == ContainerKind::Regular)
        .collect();
    for c in apps.iter().rev() {
        restarts = restarts.saturating_add(c.restart_count);
        match &c.state {
            State::Waiting { reason: Some(r), .. } if !r.is_empty() => reason = r.clone(),
            State::Terminated(t) => {
                reason = match (non_empty(&t.reason), t.signal.filter(|s| *s != 0)) {
                    (Some(r), _) => r,
                    (None, Some(s)) => format!("Signal:{s}"),
                    (None, None) => format!("ExitCode:{}", t.exit_code),
                };
                if t.exit_code != 0 {
                    error_reason = Some(reason.clone());
                }
            }
            State::Running { .. } if c.ready => {
                has_running = true;
                ready += 1;
            }
            _ => {}
        }
    }
    if reason == "Completed" {
        if has_running && is_true(snap, "Ready") {
            reason = "Running".to_string();
        } else if let Some(e) = error_reason {
            reason = e;
        } else if has_running {
            reason = "NotReady".to_string();
        }
    }
    Scan {
        status: reason,
        ready,
        restarts,
        sidecar_restarts,
    }
}

/// One line of a `kubectl get pods -w` transcript: a snapshot whose READY, STATUS or RESTARTS
/// differ from the previous line's, with its exact receive time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchLine {
    pub received: jiff::Timestamp,
    /// ADDED, MODIFIED or DELETED.
    pub watch: String,
    pub row: PodRow,
    pub phase: String,
}

/// The pod's rows as `kubectl get pods -w` prints them, repeated rows folded (kubectl prints a
/// line per watch event; podlife keeps the ones that change a column, and the DELETED one).
pub fn watch_lines(tl: &super::Timeline) -> Vec<WatchLine> {
    let mut out: Vec<WatchLine> = vec![];
    for s in &tl.snapshots {
        let mut row = pod_row(&tl.pod, s);
        if let Some(stored) = &s.status {
            row.status = stored.clone();
        }
        let same = out.last().is_some_and(|l| l.row == row);
        if !same || s.watch == "DELETED" {
            out.push(WatchLine {
                received: s.received,
                watch: s.watch.clone(),
                row,
                phase: s.phase.clone().unwrap_or_default(),
            });
        }
    }
    out
}

/// The transcript as text: `TIME  +REL  NAME  READY  STATUS  RESTARTS  (PHASE, EVENT)`.
pub fn watch_transcript(tl: &super::Timeline) -> String {
    let lines = watch_lines(tl);
    let origin = tl.origin();
    let name_w = tl.pod.name.len().max(4);
    let status_w = lines.iter().map(|l| l.row.status.len()).max().unwrap_or(6).max(6);
    let mut out = format!(
        "{:<12}  {:>8}  {:<name_w$}  {:<5}  {:<status_w$}  {:<8}  PHASE\n",
        "TIME (UTC)", "+s", "NAME", "READY", "STATUS", "RESTARTS"
    );
    for l in &lines {
        let z = l.received.to_zoned(jiff::tz::TimeZone::UTC);
        let rel = origin.map_or(String::new(), |o| {
            format!("{:+.3}", l.received.duration_since(o).as_secs_f64())
        });
        let deleted = if l.watch == "DELETED" { " (deleted)" } else { "" };
        out.push_str(&format!(
            "{:02}:{:02}:{:02}.{:03}  {rel:>8}  {:<name_w$}  {:<5}  {:<status_w$}  {:<8}  {}{deleted}\n",
            z.hour(),
            z.minute(),
            z.second(),
            z.subsec_nanosecond() / 1_000_000,
            tl.pod.name,
            l.row.ready,
            l.row.status,
            l.row.restarts,
            l.phase,
        ));
    }
    out
}
