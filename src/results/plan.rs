//! The run's plan (`Plan`): nodes, fingerprint groups, batches of nodes within the API budget
//! (`Budget`) and
//! the wall time predicted from the cases' typical durations, printed before the first case
//! starts (as nextest prints what it will run) and kept in the summary beside the measured wall.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Watches a case holds while it runs: its pod and its Events (log follows come and go with the
/// containers, and exec streams with the steps).
pub const WATCHES_PER_CASE: usize = 2;

/// Requests a case sends as it starts: the namespace, the two reads that say it is ready (the
/// default ServiceAccount, the root CA), the list and watch of the pod and of the Events, and the
/// apply. Objects of the case and log fetches come later, spread over its run.
pub const START_REQUESTS: u32 = 8;

/// What podlife may ask of one API server at once (`--max-watches`, `--max-requests-per-second`,
/// `--max-starting`). A run larger than the budget is cut into batches of nodes rather than a
/// node's cases being run fewer at a time: each node is then measured under the same load from
/// podlife, whatever the size of the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Watches open at once, over every case of the run.
    pub watches: usize,
    /// Requests per second the case starts may send (see `START_REQUESTS`); a case's own steps
    /// are never delayed, since a delayed action would move what it measures.
    pub requests_per_second: u32,
    /// Pods starting at once across the cluster (beside `--starts-per-node` on each node).
    pub starting: usize,
}

impl Default for Budget {
    /// Well below what one API server serves (its watch cache fans a few thousand watches out
    /// cheaply; by default it admits 400 reads and 200 writes in flight, each answered in
    /// milliseconds), so podlife stays a small share of a shared control plane: 500 cases in
    /// flight, 25 case starts a second, 100 pods starting across the cluster (a node starts 3).
    fn default() -> Self {
        Budget::DEFAULT
    }
}

impl Budget {
    pub(crate) const DEFAULT: Budget = Budget {
        watches: 1000,
        requests_per_second: 200,
        starting: 100,
    };

    /// Cases that may run at once within the watch budget (at least one).
    pub(crate) fn cases_at_once(&self) -> usize {
        (self.watches / WATCHES_PER_CASE).max(1)
    }

    /// Nodes of an `--each-node` run that may run at once when each runs `per_node` cases at a
    /// time (at least one: a budget below one node's cases still runs that node).
    pub fn nodes_at_once(&self, per_node: usize, nodes: usize) -> usize {
        (self.cases_at_once() / per_node.max(1)).clamp(1, nodes.max(1))
    }

    /// Case starts per second that keep their start requests within `requests_per_second`.
    pub(crate) fn starts_per_second(&self) -> f64 {
        f64::from(self.requests_per_second) / f64::from(START_REQUESTS)
    }
}

/// What a run will do, decided before its first case.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Nodes the cases run on (each one's copy with `--each-node`; 0: wherever the scheduler
    /// puts them).
    pub nodes: usize,
    /// Fingerprint groups among those nodes.
    pub groups: usize,
    /// `--each-group`: nodes not run, taken as identical to their group's sampled nodes.
    #[serde(default)]
    pub identical: usize,
    /// Cases that run on each node (`--each-node`), else in the run.
    pub cases: usize,
    /// Cases at once on each node (`--each-node`), else in the run.
    pub cases_at_once: usize,
    /// `--each-node`: nodes running at once; the next node starts as one finishes.
    pub nodes_at_once: usize,
    /// `--each-node`: how many rounds of `nodes_at_once` nodes the fleet takes.
    pub batches: usize,
    pub budget: Budget,
    /// From `durations.tsv` (a case not listed by its timeout), the schedule and the pacing.
    #[serde(with = "humantime_serde")]
    pub predicted_wall: Duration,
    /// The selected cases with no typical duration, predicted by their timeout.
    pub by_timeout: usize,
}

impl Plan {
    /// The plan of running `durations` (one per case, per node; longest first) on `nodes` nodes
    /// (0: not an `--each-node` run) with `cases_at_once` at a time each, within `budget`.
    pub fn new(
        durations: &[Duration],
        nodes: usize,
        groups: usize,
        cases_at_once: usize,
        budget: Budget,
        by_timeout: usize,
    ) -> Plan {
        let fleet = nodes.max(1);
        let nodes_at_once = if nodes == 0 {
            1
        } else {
            budget.nodes_at_once(cases_at_once, nodes)
        };
        let predicted_wall = simulate(durations, fleet, cases_at_once, nodes_at_once, &budget);
        Plan {
            nodes,
            groups,
            identical: 0,
            cases: durations.len(),
            cases_at_once,
            nodes_at_once,
            batches: fleet.div_ceil(nodes_at_once),
            budget,
            predicted_wall,
            by_timeout,
        }
    }

    /// The plan's lines, as printed before the run.
    pub fn lines(&self) -> Vec<String> {
        let wall = crate::util::fmt_secs(self.predicted_wall.as_secs_f64());
        let b = &self.budget;
        let budget = format!(
            "budget: {} watches, {} requests/s, {} pods starting at once (--max-watches, --max-requests-per-second, --max-starting)",
            b.watches, b.requests_per_second, b.starting
        );
        let guess = if self.by_timeout > 0 {
            format!(
                " ({} case{} without a typical duration counted at their timeout)",
                self.by_timeout,
                if self.by_timeout == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        if self.nodes == 0 {
            return vec![
                format!(
                    "plan: {} cases, up to {} at a time; predicted wall {wall}{guess}",
                    self.cases, self.cases_at_once
                ),
                format!("  {budget}"),
            ];
        }
        let batches = if self.batches == 1 {
            "all nodes at once".to_string()
        } else {
            format!(
                "{} node{} at once, in {} batches (the next node starts as one finishes)",
                self.nodes_at_once,
                if self.nodes_at_once == 1 { "" } else { "s" },
                self.batches
            )
        };
        vec![
            format!(
                "plan: {} cases on each of {} nodes ({} fingerprint group{}{}): {} cases, up to {} at a time per node, {batches}; predicted wall {wall}{guess}",
                self.cases,
                self.nodes,
                self.groups,
                if self.groups == 1 { "" } else { "s" },
                if self.identical > 0 {
                    format!(
                        "; {} more node{} taken as identical, not run",
                        self.identical,
                        if self.identical == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                },
                self.cases * self.nodes,
                self.cases_at_once
            ),
            format!("  {budget}"),
        ]
    }
}

/// When each case ends, from the start of its node's run, when `durations` (in their order)
/// run on `slots` slots, each case starting as soon as a slot is free.
pub(crate) fn end_offsets(durations: &[Duration], slots: usize) -> Vec<Duration> {
    let mut free: BinaryHeap<Reverse<Duration>> = (0..slots.max(1)).map(|_| Reverse(Duration::ZERO)).collect();
    durations
        .iter()
        .map(|d| {
            let Reverse(t) = free.pop().expect("at least one slot");
            free.push(Reverse(t + *d));
            t + *d
        })
        .collect()
}

/// The predicted wall time: every node runs its cases longest first on `per_node` slots; at most
/// `nodes_at_once` nodes run, the next starting when one has finished; every case start waits
/// for its turn in the budget's requests per second (a burst of one second's worth, then evenly
/// spaced).
fn simulate(durations: &[Duration], nodes: usize, per_node: usize, nodes_at_once: usize, budget: &Budget) -> Duration {
    if durations.is_empty() {
        return Duration::ZERO;
    }
    let per_node = per_node.max(1);
    let mut sorted: Vec<Duration> = durations.to_vec();
    sorted.sort_by_key(|d| Reverse(*d));
    let sps = budget.starts_per_second();
    let interval = if sps > 0.0 { 1.0 / sps } else { 0.0 };
    let burst = (f64::from(budget.requests_per_second) / f64::from(START_REQUESTS))
        .floor()
        .max(1.0);
    let mut started = 0.0f64;
    // Free slots as (time, node), earliest first; per node: the next case, slots still working.
    let mut free: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut next_case = vec![0usize; nodes];
    let mut busy = vec![0usize; nodes];
    let mut finished_at = vec![0u64; nodes];
    let mut waiting = nodes_at_once.min(nodes)..nodes;
    for (n, b) in busy.iter_mut().enumerate().take(nodes_at_once.min(nodes)) {
        for _ in 0..per_node.min(sorted.len()) {
            free.push(Reverse((0, n)));
            *b += 1;
        }
    }
    let ms = |s: f64| (s * 1000.0).round() as u64;
    let mut wall = 0u64;
    while let Some(Reverse((t, n))) = free.pop() {
        if let Some(d) = sorted.get(next_case[n]) {
            next_case[n] += 1;
            let turn = if interval > 0.0 {
                (started - burst + 1.0).max(0.0) * interval
            } else {
                0.0
            };
            started += 1.0;
            let start = t.max(ms(turn));
            let end = start + d.as_millis() as u64;
            finished_at[n] = finished_at[n].max(end);
            wall = wall.max(end);
            free.push(Reverse((end, n)));
            continue;
        }
        busy[n] -= 1;
        if busy[n] == 0
            && let Some(m) = waiting.next()
        {
            for _ in 0..per_node.min(sorted.len()) {
                free.push(Reverse((finished_at[n].max(t), m)));
                busy[m] += 1;
            }
        }
    }
    Duration::from_millis(wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_larger_than_the_watch_budget_runs_in_batches_of_whole_nodes() {
        let b = Budget::default();
        assert_eq!(b.cases_at_once(), 500);
        // 16 cases per node: 31 nodes at once; a fleet of 2 runs whole.
        assert_eq!(b.nodes_at_once(16, 100), 31);
        assert_eq!(b.nodes_at_once(16, 2), 2);
        // A budget below one node's cases still runs one node at a time.
        let tiny = Budget { watches: 10, ..b };
        assert_eq!(tiny.nodes_at_once(16, 100), 1);
        assert_eq!(tiny.cases_at_once(), 5);
        assert_eq!(Budget { watches: 1, ..b }.cases_at_once(), 1);
        assert!((b.starts_per_second() - 25.0).abs() < 1e-9);
    }

    fn secs(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|s| Duration::from_secs(*s)).collect()
    }

    const UNPACED: Budget = Budget {
        watches: 1000,
        requests_per_second: 0,
        starting: 0,
    };

    #[test]
    fn one_node_with_enough_slots_takes_its_slowest_case() {
        let p = Plan::new(&secs(&[256, 60, 30, 10]), 1, 1, 16, UNPACED, 0);
        assert_eq!(p.predicted_wall, Duration::from_secs(256));
        assert_eq!((p.nodes_at_once, p.batches), (1, 1));
    }

    #[test]
    fn each_case_ends_when_its_slot_frees_plus_its_duration() {
        assert_eq!(end_offsets(&secs(&[10, 8, 6, 4]), 2), secs(&[10, 8, 14, 14]));
        assert_eq!(end_offsets(&secs(&[3, 2]), 0), secs(&[3, 5]));
    }

    #[test]
    fn longest_first_on_two_slots() {
        // 10 | 8, then 6 after 8, 4 after 10: 14.
        let p = Plan::new(&secs(&[4, 6, 8, 10]), 0, 0, 2, UNPACED, 0);
        assert_eq!(p.predicted_wall, Duration::from_secs(14));
    }

    #[test]
    fn a_fleet_beyond_the_budget_takes_one_node_wall_per_batch() {
        // 16 cases per node and 100 watches: 3 nodes at once; 7 nodes take 3 rounds.
        let budget = Budget {
            watches: 100,
            ..UNPACED
        };
        let p = Plan::new(&secs(&[100; 16]), 7, 2, 16, budget, 0);
        assert_eq!((p.nodes_at_once, p.batches), (3, 3));
        assert_eq!(p.predicted_wall, Duration::from_secs(300));
        assert!(
            p.lines()[0].contains("3 nodes at once, in 3 batches"),
            "{:?}",
            p.lines()
        );
        // Within the budget, the whole fleet at once.
        let all = Plan::new(&secs(&[100; 16]), 7, 2, 16, Budget::default(), 0);
        assert_eq!(all.batches, 1);
        assert!(all.lines()[0].contains("all nodes at once"), "{:?}", all.lines());
    }

    #[test]
    fn starts_beyond_the_request_budget_wait_their_turn() {
        // 8 requests per second: one start a second after a burst of one; 10 short cases on
        // 10 slots end at 9 s + 1 s, not at 1 s.
        let budget = Budget {
            requests_per_second: 8,
            ..UNPACED
        };
        let p = Plan::new(&secs(&[1; 10]), 0, 0, 10, budget, 0);
        assert_eq!(p.predicted_wall, Duration::from_secs(10));
    }
}
