//! The odd node out (`odd_nodes`, `fill_odd_nodes`) of an `--each-node` run, and one node's view of a run
//! (`node_view`) for `diff --node-a/--node-b`. Both compare with `diff`'s noise-aware rules, so
//! "differs" means here exactly what "changed beyond noise" means between two runs.

use std::collections::BTreeMap;

use super::diff::{self, Change, DiffOptions};
use crate::results::stats::{MeasureStats, OddDifference, OddNode};
use crate::results::{CaseReport, CaseStatus, RunSummary};
use crate::util::fmt_secs;

/// Why a run has no view for a node.
#[derive(Debug, thiserror::Error)]
pub enum NodeViewError {
    /// No case of the run was pinned to a node.
    #[error("run {run} was not an --each-node run: it has no node {node}")]
    NotEachNode { run: String, node: String },
    /// Cases were pinned to nodes, none to this one; `nodes` lists those that ran.
    #[error("no case of run {run} ran on node {node} (nodes: {nodes})")]
    NoSuchNode { run: String, node: String, nodes: String },
}

/// The run as one node saw it: only the cases pinned to `node`, named without the node (so they
/// match the same cases of another node or of a single-node run), and only that node in the
/// fingerprint.
pub fn node_view(s: &RunSummary, node: &str) -> Result<RunSummary, NodeViewError> {
    if !s.cases.iter().any(|c| c.target_node.as_deref() == Some(node)) {
        let mut nodes: Vec<&str> = s.cases.iter().filter_map(|c| c.target_node.as_deref()).collect();
        nodes.sort();
        nodes.dedup();
        let (run, node) = (s.run_id.clone(), node.to_string());
        return Err(if nodes.is_empty() {
            NodeViewError::NotEachNode { run, node }
        } else {
            NodeViewError::NoSuchNode {
                run,
                node,
                nodes: nodes.join(", "),
            }
        });
    }
    let mut header = s.clone();
    header.cases = vec![];
    Ok(view_of(&header, &s.cases, node))
}

/// `node_view` from a summary without its cases (`header`) and the cases, so that a view per
/// node of a large fleet does not copy every case of every node (nor any timeline).
fn view_of(header: &RunSummary, cases: &[CaseReport], node: &str) -> RunSummary {
    let mut v = header.clone();
    v.run_id = format!("{}@{node}", header.run_id);
    v.cases = cases
        .iter()
        .filter(|c| c.target_node.as_deref() == Some(node))
        .map(|c| CaseReport {
            target_node: None,
            timeline: None,
            ..c.clone()
        })
        .collect();
    v.fingerprint.nodes.retain(|n| n.name == node);
    v.fingerprint.each_node = false;
    v.fleet = None;
    v
}

/// How the diff compares nodes: its defaults (no extra threshold; moves under 100 ms are not
/// even listed, as in `podlife diff`).
fn options() -> DiffOptions {
    DiffOptions {
        threshold: None,
        min_change: 0.1,
    }
}

/// The nodes whose verdicts or timings differ from the rest of their fingerprint group.
///
/// Each node is compared with the rest of its group as `diff` compares two runs, the rest
/// standing in as the "before": per case the status most of them had (a tie takes the worse
/// one, so a split group never makes a node look odd), the verdicts of one of them with that
/// status, and every timing pooled over them (median of their medians, min and max over all
/// their samples — so the spread between the peers widens the noise, as `--repeat` samples do).
/// A node is odd when the diff calls a case a regression (worse than its peers beyond noise);
/// with two or more peers, any status change, verdict flip or timing beyond noise counts too
/// (with a single peer "better than the other" could be either node's fault, so only the worse
/// one is named). Nodes alone in their group have no peers and are never odd: their difference
/// is the fingerprint itself, shown in the matrix.
pub(crate) fn odd_nodes(s: &mut RunSummary) -> Vec<OddNode> {
    let cases = std::mem::take(&mut s.cases);
    let fleet = s.fleet.take();
    let out = fleet.as_ref().map(|f| odd_in(s, &cases, f)).unwrap_or_default();
    s.cases = cases;
    s.fleet = fleet;
    out
}

fn odd_in(header: &RunSummary, cases: &[CaseReport], fleet: &crate::results::stats::Fleet) -> Vec<OddNode> {
    let views: BTreeMap<&str, RunSummary> = fleet
        .nodes
        .iter()
        .map(|n| (n.node.as_str(), view_of(header, cases, &n.node)))
        .collect();
    // Each node's cases by name, to pool a node's peers without searching them.
    let index: BTreeMap<&str, BTreeMap<String, &CaseReport>> = views
        .iter()
        .map(|(n, v)| (*n, v.cases.iter().map(|c| (c.full_name(), c)).collect()))
        .collect();
    let mut out = vec![];
    for (gi, g) in fleet.groups.iter().enumerate() {
        if g.nodes.len() < 2 {
            continue;
        }
        for node in &g.nodes {
            let Some(mine) = views.get(node.as_str()) else { continue };
            let peers: Vec<&BTreeMap<String, &CaseReport>> = g
                .nodes
                .iter()
                .filter(|n| *n != node)
                .filter_map(|n| index.get(n.as_str()))
                .collect();
            if peers.is_empty() {
                continue;
            }
            let rest = pooled(mine, &peers);
            let d = diff::diff(&rest, mine, &options(), &Default::default());
            let names: Vec<&str> = g.nodes.iter().filter(|n| *n != node).map(String::as_str).collect();
            let peers_text = format!("the rest of group {} ({})", gi + 1, names.join(", "));
            let mut rows = vec![];
            for c in &d.cases {
                let beyond: Vec<&diff::TimingChange> = c
                    .timing
                    .iter()
                    .filter(|t| t.noise > 0.0 && t.delta.abs() > t.noise)
                    .collect();
                let differs = c.status_change != Change::Same || !c.verdict_flips.is_empty() || !beyond.is_empty();
                let odd = c.is_regression() || (peers.len() >= 2 && differs);
                if !odd {
                    continue;
                }
                let row = |what: String, here: String, there: String, why: String| OddDifference {
                    case: c.case.clone(),
                    what,
                    here,
                    peers: there,
                    why,
                };
                if c.status_change != Change::Same {
                    rows.push(row(
                        "status".into(),
                        status_word(c.after).into(),
                        status_word(c.before).into(),
                        String::new(),
                    ));
                }
                for f in &c.verdict_flips {
                    rows.push(row(
                        format!("[{}] {}", f.index, f.kind),
                        f.after.clone(),
                        f.before.clone(),
                        f.evidence.clone(),
                    ));
                }
                for t in beyond {
                    rows.push(row(
                        format!("[{}] {}", t.index, t.label),
                        fmt_secs(t.after),
                        fmt_secs(t.before),
                        t.reason.clone(),
                    ));
                }
            }
            let differences: Vec<String> = rows.iter().map(|r| line(r, &peers_text)).collect();
            if !differences.is_empty() {
                out.push(OddNode {
                    node: node.clone(),
                    group: gi,
                    differences,
                    rows,
                });
            }
        }
    }
    out
}

/// A difference as one line of the console and JUnit: `case: failed here, passed on <peers>`,
/// `case [i] kind: fail here, pass on <peers>: evidence`.
fn line(r: &OddDifference, peers: &str) -> String {
    if r.what == "status" {
        format!("{}: {} here, {} on {peers}", r.case, r.here, r.peers)
    } else {
        format!(
            "{} {}: {} here, {} on {peers}: {}",
            r.case, r.what, r.here, r.peers, r.why
        )
    }
}

/// Fills the fleet's odd nodes out (`odd_nodes`) into a finished run's summary, before any
/// reporter reads it.
pub(crate) fn fill_odd_nodes(s: &mut RunSummary) {
    if s.fleet.is_some() {
        let odd = odd_nodes(s);
        if let Some(f) = &mut s.fleet {
            f.odd = odd;
        }
    }
}

fn status_word(s: Option<CaseStatus>) -> &'static str {
    s.map_or("missing", CaseStatus::as_str)
}

/// How bad a status is, for breaking ties toward the worse one. By name, so a status added
/// later ranks with the errors (no verdict) until it is placed here.
fn badness(s: CaseStatus) -> u8 {
    const ORDER: [&str; 7] = [
        "passed",
        "flaky",
        "ignored",
        "not-run",
        "interrupted",
        "error",
        "failed",
    ];
    ORDER.iter().position(|x| *x == s.as_str()).map_or(5, |i| i as u8)
}

/// The peers of a node as one run: per case the majority status and pooled timings.
fn pooled(mine: &RunSummary, peers: &[&BTreeMap<String, &CaseReport>]) -> RunSummary {
    let mut rest = RunSummary {
        cases: vec![],
        ..mine.clone()
    };
    rest.run_id = "peers".into();
    rest.cases = mine
        .cases
        .iter()
        .filter_map(|c| {
            let name = c.full_name();
            let copies: Vec<&CaseReport> = peers.iter().filter_map(|p| p.get(&name).copied()).collect();
            pooled_case(&copies)
        })
        .collect();
    rest
}

fn pooled_case(copies: &[&CaseReport]) -> Option<CaseReport> {
    let mut counts: BTreeMap<u8, (usize, CaseStatus)> = BTreeMap::new();
    for c in copies {
        counts.entry(badness(c.status)).or_insert((0, c.status)).0 += 1;
    }
    // Most common; among equals the worse (the larger badness comes last in the map).
    let (_, status) = counts.values().copied().max_by_key(|(n, s)| (*n, badness(*s)))?;
    let mut out = (*copies.iter().find(|c| c.status == status)?).clone();
    let mut by_key: BTreeMap<(usize, usize), Vec<&MeasureStats>> = BTreeMap::new();
    for c in copies {
        for m in &c.measurements {
            by_key.entry(m.key()).or_default().push(m);
        }
    }
    out.measurements = by_key
        .into_values()
        .filter_map(|ms| {
            let first = *ms.first()?;
            let mut medians: Vec<f64> = ms.iter().map(|m| m.median).collect();
            medians.sort_by(f64::total_cmp);
            let k = medians.len();
            let median = if k % 2 == 1 {
                medians[k / 2]
            } else {
                (medians[k / 2 - 1] + medians[k / 2]) / 2.0
            };
            Some(MeasureStats {
                n: ms.iter().map(|m| m.n).sum(),
                min: ms.iter().map(|m| m.min).fold(f64::INFINITY, f64::min),
                max: ms.iter().map(|m| m.max).fold(f64::NEG_INFINITY, f64::max),
                median,
                ..first.clone()
            })
        })
        .collect();
    Some(out)
}

/// An interrupted `--each-node` run: which nodes finished every case (and so were certified, as
/// conformant or not), and which were cut short or never started. `None` for other runs.
pub fn interrupted_nodes(s: &RunSummary) -> Option<String> {
    let f = s.fleet.as_ref().filter(|_| s.interrupted)?;
    let (mut conformant, mut not_conformant, mut cut) = (vec![], vec![], vec![]);
    for n in &f.nodes {
        let mine: Vec<&CaseReport> = s
            .cases
            .iter()
            .filter(|c| c.target_node.as_deref() == Some(n.node.as_str()))
            .collect();
        let unfinished = mine
            .iter()
            .filter(|c| matches!(c.status, CaseStatus::Interrupted | CaseStatus::NotRun))
            .count();
        use super::stats::AreaVerdict as V;
        if unfinished > 0 {
            cut.push(format!("{} ({unfinished} of {} cases unfinished)", n.node, mine.len()));
        } else if n.areas.iter().any(|a| a.verdict == V::NotConformant) {
            not_conformant.push(n.node.clone());
        } else if n.areas.iter().all(|a| matches!(a.verdict, V::Conformant | V::Skipped)) {
            conformant.push(n.node.clone());
        } else {
            cut.push(format!("{} (finished, some cases reached no verdict)", n.node));
        }
    }
    let list = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    Some(format!(
        "interrupted: {} of {} nodes finished every case: conformant: {}; NOT CONFORMANT: {}; not certified: {}",
        conformant.len() + not_conformant.len(),
        f.nodes.len(),
        list(&conformant),
        list(&not_conformant),
        list(&cut)
    ))
}

/// `--each-group K`: keeps K nodes of each fingerprint group in `fp.nodes` and moves the rest to
/// `fp.identical`. The K are the first by a digest of the run id and the node's name: each run
/// samples afresh (over runs every node of a group gets its turn), and a run's sample follows
/// from its id.
pub fn sample_groups(fp: &mut crate::results::Fingerprint, k: usize, run_id: &str) {
    let mut groups: BTreeMap<String, Vec<crate::results::NodeInfo>> = BTreeMap::new();
    for n in std::mem::take(&mut fp.nodes) {
        groups.entry(n.group_key()).or_default().push(n);
    }
    for (_, mut nodes) in groups {
        nodes.sort_by_key(|n| crate::util::fnv1a(format!("{run_id}/{}", n.name).as_bytes()));
        let rest = nodes.split_off(k.max(1).min(nodes.len()));
        fp.nodes.extend(nodes);
        fp.identical.extend(rest);
    }
    fp.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    fp.identical.sort_by(|a, b| a.name.cmp(&b.name));
    fp.per_group = Some(k.max(1));
}
