//! The `Observer`: turns a stream of `Input`s (pod watch events, Event watch events, log lines,
//! our actions) into a `Timeline`. Live runs and recordings feed it the same inputs.

mod events;
mod logs;
mod pods;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::Timestamp;
use k8s_openapi::api::core::v1 as core;

use super::timeline::*;
use crate::suite::ContainerKind;
pub use events::container_from_field_path;
use logs::OwnLogGap;
pub use logs::{
    MAX_LOG_BYTES_PER_INSTANCE, MAX_LOG_LINE_BYTES, MAX_LOG_LINES_PER_INSTANCE, TRUNCATED_MARKER, cap_line,
    parse_cri_line, parse_log_line,
};

/// The field manager of podlife's server-side applies (the pod, its objects).
pub(crate) const OUR_FIELD_MANAGER: &str = "podlife";

/// Watch event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchKind {
    Added,
    Modified,
    Deleted,
}

impl WatchKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ADDED" => Some(WatchKind::Added),
            "MODIFIED" => Some(WatchKind::Modified),
            "DELETED" => Some(WatchKind::Deleted),
            _ => None,
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            WatchKind::Added => "ADDED",
            WatchKind::Modified => "MODIFIED",
            WatchKind::Deleted => "DELETED",
        }
    }
}

/// One thing that happened, as delivered to podlife.
#[derive(Clone, Debug)]
pub enum Input {
    Pod {
        received: Timestamp,
        kind: WatchKind,
        pod: Box<core::Pod>,
    },
    Event {
        received: Timestamp,
        kind: WatchKind,
        event: Box<core::Event>,
    },
    /// A `--timestamps` log line (`<RFC3339Nano> <text>`) of a container. `instance` is the
    /// instance the fetch was meant for; the observer checks it against the instances' status
    /// times, because a follow or `--previous` request can race with a restart.
    Log {
        received: Option<Timestamp>,
        container: String,
        instance: Option<u32>,
        line: String,
    },
    Action(Action),
    /// A source stopped delivering, or was never available (`from: None`): live, a failed
    /// request or a broken stream; in a recording, a line of `gaps.jsonl`. A gap with `to`
    /// set is complete; one without stays open until `SourceUp` or the end.
    Gap(Gap),
    /// The source delivers again (its watch is re-established): closes its open gap.
    SourceUp {
        source: EvidenceSource,
        at: Timestamp,
    },
    /// A log stream that broke (its gap opened at the failure) was resumed and the resumed fetch
    /// re-delivered the last line seen before it: nothing was lost, so the open gap is withdrawn
    /// (and a note says the stream broke).
    Resumed {
        source: EvidenceSource,
    },
}

impl Input {
    /// Time used to order inputs from a recording.
    pub fn order_key(&self) -> Option<Timestamp> {
        match self {
            Input::Pod { received, .. } | Input::Event { received, .. } => Some(*received),
            Input::Log { received, .. } => *received,
            Input::Action(a) => Some(a.sent),
            Input::Gap(g) => g.from,
            Input::SourceUp { at, .. } => Some(*at),
            Input::Resumed { .. } => None,
        }
    }
}

/// A container instance first seen in status: the live runner starts following its logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewInstance {
    pub container: String,
    pub instance: u32,
    pub container_id: String,
    /// Already terminated when first seen: fetch its logs without following.
    pub terminated: bool,
    /// Only seen as `lastState`: its logs need `previous=true`.
    pub previous: bool,
}

/// How many never-seen instances of one container get a gap of their own (see
/// `lost_instance_logs`).
const MAX_UNSEEN_INSTANCES: u32 = 1024;

/// Builds a `Timeline` incrementally.
#[derive(Debug, Default)]
pub struct Observer {
    tl: Timeline,
    /// Pod name to observe; events about other objects are ignored.
    pod_name: Option<String>,
    last_rv: Option<u64>,
    /// When the version `last_rv` first arrived.
    last_rv_received: Option<Timestamp>,
    /// Spans in which the pod provably was not written: `(from, to)` where the version seen
    /// at `from` was redelivered, still the latest, at `to` (a resourceVersion changes with
    /// every write).
    unwritten: Vec<(Timestamp, Timestamp)>,
    seen_rvs: BTreeSet<String>,
    /// containerID → (container, instance).
    ids: HashMap<String, (String, u32)>,
    /// Event uid → highest count seen.
    event_counts: HashMap<String, u32>,
    log_keys: BTreeSet<(String, Timestamp, String)>,
    kinds: BTreeMap<String, ContainerKind>,
    new_instances: Vec<NewInstance>,
    /// Instances fetched again with `previous` because their first fetch read a later
    /// instance's log (once each).
    refetched: BTreeSet<(String, u32)>,
    /// Kept lines and bytes per (container, instance), for the caps.
    kept: HashMap<(String, u32), (usize, usize)>,
    /// The log gap this observer opened for a (container, instance), by kind: how it finds
    /// that gap again (to widen or withdraw it) among the gaps the streams report.
    own_log_gaps: BTreeMap<(String, u32), OwnLogGap>,
    /// Sees every input before the observer does, in push order (the run recorder).
    tap: Option<Tap>,
}

/// A callback that sees every input pushed to an `Observer`, in order: the live runner uses it
/// to record exactly what the observer was fed, so a replay rebuilds the same timeline.
pub struct Tap(pub Box<dyn FnMut(&Input) + Send>);

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

impl Observer {
    /// An observer for the pod `name` (None: the first pod seen).
    pub fn new(pod_name: Option<&str>, source: &str) -> Self {
        Observer {
            tl: Timeline {
                format: TIMELINE_FORMAT,
                source: source.to_string(),
                ..Timeline::default()
            },
            pod_name: pod_name.map(str::to_string),
            ..Observer::default()
        }
    }

    pub fn timeline(&self) -> &Timeline {
        &self.tl
    }

    /// Marks the observation as ended and returns the timeline.
    pub fn finish(mut self) -> Timeline {
        self.resume_outages();
        self.drop_unwritten_pod_gaps();
        self.lost_instance_logs();
        self.tl.complete = true;
        self.tl
    }

    /// An API outage ends for writers when the API server answers again: its gaps learn when
    /// (`back`), and its copies on the pod and Event watches end once the kubelet has caught up
    /// with writing what happened meanwhile. From then on both watches see every write, only
    /// late; the `Api` gap keeps the whole span, for timings.
    fn resume_outages(&mut self) {
        let outages: Vec<(Gap, Timestamp)> = self
            .tl
            .gaps
            .iter()
            .filter(|g| g.source == EvidenceSource::Api)
            .filter_map(|g| Some((g.clone(), self.tl.writes_resumed(g)?)))
            .collect();
        for (api, back) in outages {
            for g in self.tl.gaps.iter_mut().filter(|g| g.from == api.from && g.to == api.to) {
                g.back = Some(back);
                if g.source != EvidenceSource::Api {
                    g.to =
                        g.to.map(|t| t.min(crate::util::ts_add(back, super::timeline::WRITE_CATCH_UP)));
                }
            }
        }
    }

    /// A pod-watch gap inside a span in which the pod provably was not written hid nothing: it
    /// becomes a note.
    fn drop_unwritten_pod_gaps(&mut self) {
        // An API outage is different: the kubelet could not write, so a version redelivered
        // unchanged says only that nothing was written, which the outage explains. Neither its
        // gaps nor a redelivery inside it prove anything.
        let outages: Vec<(Option<Timestamp>, Option<Timestamp>)> = self
            .tl
            .gaps
            .iter()
            .filter(|g| g.source.disturbs_timing())
            .map(|g| (g.from, g.to))
            .collect();
        let in_outage = |t: Timestamp| {
            outages
                .iter()
                .any(|(f, e)| f.is_none_or(|f| f <= t) && e.is_none_or(|e| t <= e))
        };
        let spans: Vec<(Timestamp, Timestamp)> = std::mem::take(&mut self.unwritten)
            .into_iter()
            .filter(|(_, confirmed)| !in_outage(*confirmed))
            .collect();
        let mut notes = vec![];
        self.tl.gaps.retain(|g| {
            let (EvidenceSource::PodWatch, Some(from), Some(to)) = (&g.source, g.from, g.to) else {
                return true;
            };
            if outages.iter().any(|(f, _)| *f == Some(from)) {
                return true;
            }
            let quiet = spans.iter().any(|(a, b)| *a <= from && *b >= to);
            if quiet {
                notes.push(format!(
                    "{}; it hid nothing: the pod's resourceVersion was the same before and after",
                    g.describe()
                ));
            }
            !quiet
        });
        self.tl.notes.extend(notes);
    }

    /// An instance first seen only after a later one had started (it lived while the pod watch
    /// was blind, or the kubelet could not write: an API outage) has a log no one can fetch any
    /// more: the runtime keeps only the current and the previous instance's. Without a line of it,
    /// its log is a gap, so a count over the container's logs is not decided as if it had been
    /// read (e.g. a crash-looping container's instance that ran inside a 65 s outage).
    fn lost_instance_logs(&mut self) {
        let second = jiff::SignedDuration::from_secs(1);
        let mut lost = vec![];
        for i in &self.tl.instances {
            let replaced = self.tl.instances.iter().any(|j| {
                j.container == i.container
                    && j.instance > i.instance
                    && j.started_at
                        .is_some_and(|s| crate::util::ts_add(s, second) <= i.first_seen)
            });
            let has_lines = self
                .tl
                .logs
                .iter()
                .any(|l| l.container == i.container && l.instance == i.instance);
            let covered = self.tl.instance_log_gap(&i.container, i.instance).is_some();
            if replaced && !has_lines && !covered {
                lost.push((i.container.clone(), i.instance));
            }
        }
        // Instances never seen at all: the first status seen already counted restarts (or the
        // count jumped), so instances below or between the seen ones ran while the pod watch
        // was blind or the kubelet could not write (e.g. a postStart-failing container's
        // instances 0-2 living inside a 64 s API outage, the first status seen saying restartCount 3).
        let mut unseen = vec![];
        let mut containers: Vec<&str> = self.tl.instances.iter().map(|i| i.container.as_str()).collect();
        containers.sort_unstable();
        containers.dedup();
        for c in containers {
            let seen: BTreeSet<u32> = self
                .tl
                .instances
                .iter()
                .filter(|i| i.container == c)
                .map(|i| i.instance)
                .collect();
            let top = seen.iter().next_back().copied().unwrap_or(0);
            // Bounded: a restartCount is the API's word, and bad input must not make a billion
            // gaps. The back-off (capped at 5 min) allows a few hundred restarts a day; below
            // the first 1,024 instances every unseen one gets its gap.
            for n in (0..top.min(MAX_UNSEEN_INSTANCES)).filter(|n| !seen.contains(n)) {
                if self.tl.instance_log_gap(c, n).is_none() {
                    let next = seen.range(n..).next().copied().unwrap_or(top);
                    unseen.push((c.to_string(), n, next));
                }
            }
        }
        let gaps = unseen
            .into_iter()
            .map(|(container, instance, next)| {
                let why = format!(
                    "`{container}`#{instance} was never seen: it ran while the pod's status was not observed (#{next} was the next seen), so its state and log are unknown"
                );
                (container, instance, why)
            })
            .chain(lost.into_iter().map(|(container, instance)| {
                let why = format!(
                    "`{container}`#{instance} was first seen after a later instance had started: its log could no longer be fetched"
                );
                (container, instance, why)
            }));
        for (container, instance, reason) in gaps.collect::<Vec<_>>() {
            self.tl.gaps.push(Gap {
                source: EvidenceSource::Logs {
                    container: Some(container),
                    instance: Some(instance),
                },
                from: None,
                to: None,
                back: None,
                clock: GapClock::Node,
                reason,
            });
        }
    }

    /// Calls `tap` with every input from now on, before the observer handles it.
    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// Instances discovered since the last call (for log following).
    pub fn take_new_instances(&mut self) -> Vec<NewInstance> {
        std::mem::take(&mut self.new_instances)
    }

    pub fn push(&mut self, input: Input) {
        if let Some(Tap(tap)) = &mut self.tap {
            tap(&input);
        }
        match input {
            Input::Pod { received, kind, pod } => self.pod(received, kind, &pod),
            Input::Event { received, kind, event } => self.event(received, kind, &event),
            Input::Log {
                received,
                container,
                instance,
                line,
            } => self.log(received, &container, instance, &line),
            Input::Action(a) => {
                let pos = self.tl.actions.partition_point(|x| x.sent <= a.sent);
                self.tl.actions.insert(pos, a);
            }
            Input::Gap(g) => self.gap(g),
            Input::Resumed { source } => {
                if let Some(i) = self.tl.gaps.iter().rposition(|g| g.source == source && g.to.is_none()) {
                    let g = self.tl.gaps.remove(i);
                    self.tl.notes.push(format!(
                        "{} broke ({}) and was resumed without loss: the resumed fetch re-delivered its last line",
                        g.source.label(),
                        g.reason
                    ));
                }
            }
            Input::SourceUp { source, at } => {
                if let Some(g) = self
                    .tl
                    .gaps
                    .iter_mut()
                    .rev()
                    .find(|g| g.source == source && g.to.is_none())
                {
                    g.to = Some(at);
                }
            }
        }
    }

    /// Records a gap; a second report of an already open gap of the same source only counts once.
    fn gap(&mut self, g: Gap) {
        let open = self
            .tl
            .gaps
            .iter()
            .any(|x| x.source == g.source && x.to.is_none() && x.from.is_some());
        if open && g.to.is_none() {
            return;
        }
        self.tl.gaps.push(g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn gap(source: EvidenceSource, from: Option<i64>, to: Option<i64>) -> Gap {
        Gap {
            source,
            from: from.map(at),
            to: to.map(at),
            back: None,
            clock: GapClock::Harness,
            reason: "503".into(),
        }
    }

    fn log_source(container: &str) -> EvidenceSource {
        EvidenceSource::Logs {
            container: Some(container.into()),
            instance: Some(0),
        }
    }

    fn instance(n: u32, started: i64, first_seen: i64) -> Instance {
        Instance {
            container: "main".into(),
            kind: ContainerKind::Regular,
            instance: n,
            container_id: None,
            started_at: Some(at(started)),
            finished_at: None,
            exit_code: None,
            reason: None,
            message: None,
            first_seen_running: None,
            first_seen_terminated: None,
            first_seen: at(first_seen),
        }
    }

    #[test]
    fn an_open_gap_is_recorded_once_and_closed_when_its_source_is_up() {
        let mut o = Observer::new(Some("p"), "test");
        o.push(Input::Gap(gap(EvidenceSource::PodWatch, Some(1), None)));
        o.push(Input::Gap(gap(EvidenceSource::PodWatch, Some(2), None)));
        assert_eq!(o.timeline().gaps.len(), 1);
        o.push(Input::SourceUp {
            source: EvidenceSource::PodWatch,
            at: at(5),
        });
        assert_eq!(o.timeline().gaps[0].to, Some(at(5)));
        // Closed, so the next failure is a gap of its own.
        o.push(Input::Gap(gap(EvidenceSource::PodWatch, Some(8), None)));
        assert_eq!(o.timeline().gaps.len(), 2);
    }

    #[test]
    fn a_log_stream_resumed_without_loss_leaves_a_note_not_a_gap() {
        let mut o = Observer::new(Some("p"), "test");
        o.push(Input::Gap(gap(log_source("main"), Some(1), None)));
        o.push(Input::Resumed {
            source: log_source("main"),
        });
        assert!(o.timeline().gaps.is_empty());
        assert_eq!(
            o.timeline().notes,
            ["log of main#0 broke (503) and was resumed without loss: the resumed fetch re-delivered its last line"]
        );
    }

    #[test]
    fn actions_are_kept_in_the_order_they_were_sent() {
        let mut o = Observer::new(Some("p"), "test");
        let action = |s: i64, kind| Action {
            kind,
            sent: at(s),
            done: None,
            grace_period_seconds: None,
            detail: None,
            exec: None,
            update: None,
        };
        o.push(Input::Action(action(5, ActionKind::Delete)));
        o.push(Input::Action(action(1, ActionKind::Apply)));
        let sent: Vec<Timestamp> = o.timeline().actions.iter().map(|a| a.sent).collect();
        assert_eq!(sent, [at(1), at(5)]);
    }

    #[test]
    fn an_outage_ends_on_the_watches_once_the_kubelet_has_caught_up() {
        let mut o = Observer::new(Some("p"), "test");
        // The outage and its copy on the pod watch; the Event watch came back at 20 s.
        o.push(Input::Gap(gap(EvidenceSource::Api, Some(10), Some(100))));
        o.push(Input::Gap(gap(EvidenceSource::PodWatch, Some(10), Some(100))));
        o.push(Input::Gap(gap(EvidenceSource::Events, Some(12), Some(20))));
        let tl = o.finish();
        assert!(tl.complete);
        let api = tl.gaps.iter().find(|g| g.source == EvidenceSource::Api).unwrap();
        assert_eq!((api.back, api.to), (Some(at(20)), Some(at(100))));
        let pod = tl.gaps.iter().find(|g| g.source == EvidenceSource::PodWatch).unwrap();
        assert_eq!(pod.back, Some(at(20)));
        assert_eq!(pod.to, Some(crate::util::ts_add(at(20), WRITE_CATCH_UP)));
    }

    #[test]
    fn instances_never_seen_or_seen_too_late_get_a_log_gap() {
        let mut o = Observer::new(Some("p"), "test");
        // #0 never seen; #1 first seen at 30 s, after #2 had started at 20 s.
        o.tl.instances = vec![instance(1, 5, 30), instance(2, 20, 21)];
        let tl = o.finish();
        let lost: Vec<(u32, &str)> = tl
            .gaps
            .iter()
            .filter_map(|g| match &g.source {
                EvidenceSource::Logs { instance: Some(i), .. } => Some((*i, g.reason.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(lost.len(), 2, "{lost:?}");
        assert!(
            lost.iter().any(|(i, why)| *i == 0 && why.contains("was never seen")),
            "{lost:?}"
        );
        assert!(
            lost.iter()
                .any(|(i, why)| *i == 1 && why.contains("log could no longer be fetched")),
            "{lost:?}"
        );
    }

    #[test]
    fn an_instance_with_a_line_of_its_log_loses_nothing() {
        let mut o = Observer::new(Some("p"), "test");
        o.tl.instances = vec![instance(0, 5, 30), instance(1, 20, 21)];
        o.tl.logs.push(LogLine {
            container: "main".into(),
            instance: 0,
            time: at(6),
            text: "hello".into(),
            received: None,
        });
        assert!(o.finish().gaps.is_empty());
    }
}
