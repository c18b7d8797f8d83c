//! Statistics over repeated runs (`MeasureStats`, `repeat_status`) and the per-area
//! certification summary (`AreaResult`): pure functions over case results.

use serde::{Deserialize, Serialize};

use super::{Attempt, AttemptStatus, CaseReport, CaseStatus};

/// One measured quantity of a case (a gap, or one back-off interval) over its repetitions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeasureStats {
    /// Index of the expectation in the case's `expect` list.
    pub index: usize,
    /// Position within the verdict's measured values (the i-th back-off interval).
    pub position: usize,
    pub kind: crate::judge::VerdictKind,
    /// What is measured, e.g. "gap `term`→`kill`".
    pub label: String,
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// Precision, bounds and noise class of the value (absent in reports written before
    /// verdicts carried them; `diff` then derives them from the suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<crate::judge::measure::MeasureInfo>,
    /// The verdict's stable `id` (empty in reports written before podlife recorded it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
}

impl MeasureStats {
    /// The key measurements of one run are grouped by.
    pub fn key(&self) -> (usize, usize) {
        (self.index, self.position)
    }

    /// Whether `self` and `other`, of two runs of one case, measure the same value: the same
    /// expectation (by its stable id, else by its index) and position.
    pub(crate) fn same_as(&self, other: &MeasureStats) -> bool {
        let same_expectation = if self.id.is_empty() || other.id.is_empty() {
            self.index == other.index && self.kind == other.kind
        } else {
            self.id == other.id
        };
        same_expectation && self.position == other.position
    }
}

/// The result of one repetition: the last attempt decides it (retries happen within).
pub fn repetition_outcomes(attempts: &[Attempt], repetitions: &[usize]) -> Vec<AttemptStatus> {
    let mut out = vec![];
    let mut i = 0;
    for &n in repetitions {
        if n == 0 {
            continue;
        }
        i += n;
        if let Some(a) = attempts.get(i - 1) {
            out.push(a.status);
        }
    }
    out
}

/// The status of a case over repetitions (each repetition's final status, retries inside).
/// `node_failed`: whether any attempt, retries included, failed on the node.
///
/// A case is certified (passed) only when every repetition passed and no attempt failed: a node
/// seen failing and passing the same case is flaky, and flaky is not conformant. A harness error
/// or an undecided attempt is never a flake of the node: a retry that passed after one stands
/// (the error stays in the attempts and is reported). Repetitions that passed beside others
/// without a verdict leave the case without a verdict (error, else undecided).
pub fn repeat_status(outcomes: &[AttemptStatus], node_failed: bool) -> CaseStatus {
    let passed = outcomes.iter().filter(|s| **s == AttemptStatus::Passed).count();
    let failed = outcomes.contains(&AttemptStatus::Failed);
    match outcomes.last() {
        None => CaseStatus::Interrupted,
        // A recording is judged once: one that does not answer the case is all there is.
        Some(AttemptStatus::NotComparable) => CaseStatus::Ignored,
        Some(_) if passed == outcomes.len() => {
            if node_failed {
                CaseStatus::Flaky
            } else {
                CaseStatus::Passed
            }
        }
        Some(_) if passed > 0 && failed => CaseStatus::Flaky,
        Some(_) if failed => CaseStatus::Failed,
        Some(_) if passed > 0 => {
            if outcomes.contains(&AttemptStatus::Error) {
                CaseStatus::Error
            } else if outcomes.contains(&AttemptStatus::Interrupted) {
                CaseStatus::Interrupted
            } else {
                CaseStatus::Undecided
            }
        }
        Some(AttemptStatus::Failed) => CaseStatus::Failed,
        Some(AttemptStatus::Undecided) => CaseStatus::Undecided,
        Some(AttemptStatus::Error) => CaseStatus::Error,
        Some(AttemptStatus::Interrupted) => CaseStatus::Interrupted,
        Some(AttemptStatus::Passed) => CaseStatus::Passed,
    }
}

/// How many attempts of a case ended in a harness error although the case reached a verdict
/// (a retry passed after it): reported beside the verdict, never counted against the node.
pub(crate) fn harness_errors(attempts: &[Attempt]) -> usize {
    attempts.iter().filter(|a| a.status == AttemptStatus::Error).count()
}

/// The status of a case from its repetitions' outcomes: like `repeat_status`, except that a run
/// interrupted during the case makes it interrupted (its later repetitions and retries never
/// happened, so neither "flaky" nor "failed" would be the truth).
pub fn case_status(outcomes: &[AttemptStatus], node_failed: bool) -> CaseStatus {
    if outcomes.last() == Some(&AttemptStatus::Interrupted) {
        return CaseStatus::Interrupted;
    }
    repeat_status(outcomes, node_failed)
}

/// min/median/max of every measured value, over the given attempts (one per repetition).
pub fn measure_stats(attempts: &[&Attempt]) -> Vec<MeasureStats> {
    type Entry = (
        crate::judge::VerdictKind,
        String,
        Vec<f64>,
        Option<crate::judge::measure::MeasureInfo>,
        String,
    );
    let mut by_key: std::collections::BTreeMap<(usize, usize), Entry> = Default::default();
    for a in attempts {
        for v in &a.verdicts {
            if v.expectation().is_none() {
                continue;
            }
            // Reports written before verdicts carried their subject fall back to the kind.
            let label = if v.subject.is_empty() {
                v.kind.to_string()
            } else {
                v.subject.clone()
            };
            for (pos, m) in v.measured.iter().enumerate() {
                let e = by_key
                    .entry((v.index, pos))
                    .or_insert_with(|| (v.kind, label.clone(), vec![], None, v.id.clone()));
                e.2.push(*m);
                // The last repetition's description (its resolution may differ by a few ms).
                if let Some(info) = v.measures.get(pos) {
                    e.3 = Some(info.clone());
                }
            }
        }
    }
    by_key
        .into_iter()
        .map(|((index, position), (kind, label, mut values, info, id))| {
            values.sort_by(|a, b| a.total_cmp(b));
            let n = values.len();
            let median = if n % 2 == 1 {
                values[n / 2]
            } else {
                (values[n / 2 - 1] + values[n / 2]) / 2.0
            };
            MeasureStats {
                index,
                position,
                kind,
                label,
                n,
                min: values[0],
                median,
                max: values[n - 1],
                info,
                id,
            }
        })
        .collect()
}

/// Pass rate of a case over its repetitions.
pub fn pass_rate(outcomes: &[AttemptStatus]) -> f64 {
    if outcomes.is_empty() {
        return 0.0;
    }
    outcomes.iter().filter(|s| **s == AttemptStatus::Passed).count() as f64 / outcomes.len() as f64
}

/// Whether an area of the node is certified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AreaVerdict {
    Conformant,
    NotConformant,
    /// Every case was skipped (e.g. the server is too old for it).
    Skipped,
    /// No case failed, but some did not reach a verdict (harness error, interrupted, not run):
    /// the area is neither certified nor refuted.
    Undecided,
}

/// The certification of one area (restart policy, init containers, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AreaResult {
    pub area: String,
    pub verdict: AreaVerdict,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Cases that reached no verdict: errored, interrupted or not run.
    #[serde(default)]
    pub undecided: usize,
    /// Cases that failed, as `suite::case`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<String>,
    /// Why cases were skipped (distinct reasons).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_reasons: Vec<String>,
    /// Cases without a verdict, as `suite::case (status)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided_cases: Vec<String>,
    /// Cases counted as passed that failed, errored or stayed undecided in an attempt first
    /// (flaky), as `suite::case`: shown beside the verdict, never hidden inside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky_cases: Vec<String>,
}

impl AreaResult {
    /// An area before any case is counted: nothing ran, so skipped.
    fn empty(area: String) -> Self {
        AreaResult {
            area,
            verdict: AreaVerdict::Skipped,
            passed: 0,
            failed: 0,
            skipped: 0,
            undecided: 0,
            failing: vec![],
            skip_reasons: vec![],
            undecided_cases: vec![],
            flaky_cases: vec![],
        }
    }
}

/// The area of a case: its suite's first tag, else the suite name.
pub(crate) fn area_of(c: &CaseReport) -> String {
    c.tags.first().cloned().unwrap_or_else(|| c.suite.clone())
}

/// A pass rate as reports show it: `33%`.
pub(crate) fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

/// Per-area verdicts, counting only cases that ran to a verdict: not conformant when any failed
/// or was flaky (seen failing in one attempt and passing in another: not a certification);
/// undecided when none failed but some errored, were interrupted or never ran; conformant when
/// every selected case passed; skipped when every case was ignored.
pub fn certify(cases: &[CaseReport]) -> Vec<AreaResult> {
    certify_refs(&cases.iter().collect::<Vec<_>>())
}

/// `certify` over borrowed cases (one node's cases of a fleet run, without copying them).
pub(crate) fn certify_refs(cases: &[&CaseReport]) -> Vec<AreaResult> {
    let mut areas: std::collections::BTreeMap<String, AreaResult> = Default::default();
    for c in cases {
        let area = area_of(c);
        let r = areas.entry(area.clone()).or_insert_with(|| AreaResult::empty(area));
        match c.status {
            CaseStatus::Passed => r.passed += 1,
            // Seen failing and passing: not a certification of the node.
            CaseStatus::Flaky => {
                r.failed += 1;
                r.failing.push(c.full_name());
                r.flaky_cases
                    .push(format!("{} (pass rate {})", c.full_name(), percent(c.pass_rate)));
            }
            CaseStatus::Failed => {
                r.failed += 1;
                r.failing.push(c.full_name());
            }
            CaseStatus::Undecided | CaseStatus::Error | CaseStatus::Interrupted | CaseStatus::NotRun => {
                r.undecided += 1;
                r.undecided_cases
                    .push(format!("{} ({})", c.full_name(), c.status.as_str()));
            }
            CaseStatus::Ignored => {
                r.skipped += 1;
                if let Some(why) = &c.ignore_reason
                    && !r.skip_reasons.contains(why)
                {
                    r.skip_reasons.push(why.clone());
                }
            }
        }
    }
    let mut out: Vec<AreaResult> = areas.into_values().collect();
    for r in &mut out {
        r.verdict = if r.failed > 0 {
            AreaVerdict::NotConformant
        } else if r.undecided > 0 {
            AreaVerdict::Undecided
        } else if r.passed > 0 {
            AreaVerdict::Conformant
        } else {
            AreaVerdict::Skipped
        };
    }
    out
}

impl AreaVerdict {
    /// The word reports use: `conformant`, `NOT CONFORMANT`, `skipped`, `undecided`.
    pub fn as_str(self) -> &'static str {
        match self {
            AreaVerdict::Conformant => "conformant",
            AreaVerdict::NotConformant => "NOT CONFORMANT",
            AreaVerdict::Skipped => "skipped",
            AreaVerdict::Undecided => "undecided",
        }
    }
}

/// The certification table for the console.
pub fn certification_table(areas: &[AreaResult], node: &str) -> String {
    let mut out = format!("certification of {node}:\n");
    for a in areas {
        let v = a.verdict.as_str();
        out.push_str(&format!(
            "  {:<18} {v:<15} {} passed, {} failed, {} skipped",
            a.area, a.passed, a.failed, a.skipped
        ));
        if a.undecided > 0 {
            out.push_str(&format!(", {} without a verdict", a.undecided));
        }
        if !a.failing.is_empty() {
            out.push_str(&format!(" (failing: {})", a.failing.join(", ")));
        }
        if !a.flaky_cases.is_empty() {
            out.push_str(&format!(" (flaky: {})", a.flaky_cases.join(", ")));
        }
        if !a.undecided_cases.is_empty() {
            out.push_str(&format!(" (no verdict: {})", a.undecided_cases.join(", ")));
        }
        if !a.skip_reasons.is_empty() {
            out.push_str(&format!(" (skipped: {})", a.skip_reasons.join("; ")));
        }
        out.push('\n');
    }
    out
}

/// Which upstream conformance behaviours a run certified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamResult {
    /// How many upstream tests a pod on a node can show: the `pod` rows of the list ("listed").
    pub applicable: usize,
    /// How many of them a loaded case (selected or not) claims in `upstream:` ("covered"), not yet certified.
    #[serde(default)]
    pub mapped: usize,
    /// Those for which at least one case ran and every case naming them passed.
    pub certified: Vec<String>,
    /// Those with a case that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// Those with no failed case but a case that reached no verdict (undecided, error,
    /// interrupted, not run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
}

/// How many of the listed (`pod`) upstream tests a case claims: the "covered" of "covered of
/// listed".
pub fn covered(listed: &[String], claimed: &std::collections::BTreeSet<&str>) -> usize {
    listed.iter().filter(|t| claimed.contains(t.as_str())).count()
}

/// Certified upstream behaviours: every selected case that names the test ran to a verdict and
/// passed (a flaky case counts as failed). A case without a verdict (error, interrupted, not run) leaves the test
/// undecided, never certified.
pub fn upstream(cases: &[CaseReport], applicable: &[String]) -> Option<UpstreamResult> {
    if applicable.is_empty() {
        return None;
    }
    let mut certified = vec![];
    let mut failed = vec![];
    let mut undecided = vec![];
    let mut mapped = 0;
    for name in applicable {
        let naming: Vec<&CaseReport> = cases.iter().filter(|c| c.upstream.contains(name)).collect();
        if !naming.is_empty() {
            mapped += 1;
        }
        let selected: Vec<&&CaseReport> = naming.iter().filter(|c| c.status != CaseStatus::Ignored).collect();
        if selected
            .iter()
            .any(|c| matches!(c.status, CaseStatus::Failed | CaseStatus::Flaky))
        {
            failed.push(name.clone());
        } else if selected.iter().any(|c| !c.status.has_verdict()) {
            undecided.push(name.clone());
        } else if !selected.is_empty() {
            certified.push(name.clone());
        }
    }
    Some(UpstreamResult {
        applicable: applicable.len(),
        mapped,
        certified,
        failed,
        undecided,
    })
}

/// One node of an `--each-node` run: its fingerprint, the fingerprint group it belongs to, and
/// its row of the node × area matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCertification {
    pub node: String,
    pub fingerprint: crate::results::NodeInfo,
    /// Index into `Fleet::groups`.
    pub group: usize,
    /// Per-area verdicts of the cases that ran on this node (every area of the run, in the same
    /// order on every node).
    pub areas: Vec<AreaResult>,
}

/// Nodes with the same fingerprint (kubelet, runtime and handlers, kernel, OS image, arch):
/// expected to run pods the same way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetGroup {
    /// `kubelet v1.36.2 · containerd://2.1.9 · handlers [default] · kernel 6.18 · Debian · amd64`.
    pub fingerprint: String,
    pub nodes: Vec<String>,
    /// `--each-group`: the group's nodes that did not run, taken as identical to `nodes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identical: Vec<String>,
    /// `--each-group`: the group's row of the group × area matrix: per area the worst verdict
    /// of the nodes that ran (it covers `identical` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<AreaResult>,
}

/// A node whose verdicts or timings differ from the rest of its fingerprint group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OddNode {
    pub node: String,
    pub group: usize,
    /// What differs, one line each: `lifecycle::restart-never-success: failed, the rest of its
    /// group passed` or a timing beyond noise.
    pub differences: Vec<String>,
    /// The same differences as table rows (absent in summaries written before they existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<OddDifference>,
}

/// One difference of an odd node from the rest of its group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OddDifference {
    /// `suite::case`.
    pub case: String,
    /// `status`, an expectation (`[5] never`) or a measured timing (`[2] gap a→b`).
    pub what: String,
    /// On this node.
    pub here: String,
    /// On the rest of its group.
    pub peers: String,
    /// The verdict's evidence or the timing's noise, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// The fleet view of an `--each-node` run: the node × area matrix, fingerprint groups and the
/// odd nodes out (filled by `results::fleet::fill_odd_nodes` once the run's summary is whole).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fleet {
    pub nodes: Vec<NodeCertification>,
    pub groups: Vec<FleetGroup>,
    #[serde(default)]
    pub odd: Vec<OddNode>,
}

/// The node × area matrix of an `--each-node` run (None for other runs). Every node gets a
/// cell for every area of the run: an area whose cases all were skipped on a node says so.
pub fn fleet(cases: &[CaseReport], fp: &crate::results::Fingerprint) -> Option<Fleet> {
    if !fp.each_node {
        return None;
    }
    let mut groups: Vec<FleetGroup> = vec![];
    let mut nodes = vec![];
    let all_areas: std::collections::BTreeSet<String> = cases.iter().map(area_of).collect();
    for info in &fp.nodes {
        let key = info.group_key();
        let group = match groups.iter().position(|g| g.fingerprint == key) {
            Some(i) => i,
            None => {
                groups.push(FleetGroup {
                    fingerprint: key,
                    nodes: vec![],
                    identical: vec![],
                    areas: vec![],
                });
                groups.len() - 1
            }
        };
        groups[group].nodes.push(info.name.clone());
        let mine: Vec<&CaseReport> = cases
            .iter()
            .filter(|c| c.target_node.as_deref() == Some(info.name.as_str()))
            .collect();
        let mut areas = certify_refs(&mine);
        for a in &all_areas {
            if !areas.iter().any(|r| &r.area == a) {
                areas.push(AreaResult {
                    skip_reasons: vec!["no case ran on this node".into()],
                    ..AreaResult::empty(a.clone())
                });
            }
        }
        areas.sort_by(|a, b| a.area.cmp(&b.area));
        nodes.push(NodeCertification {
            node: info.name.clone(),
            fingerprint: info.clone(),
            group,
            areas,
        });
    }
    if fp.per_group.is_some() {
        for n in &fp.identical {
            if let Some(g) = groups.iter_mut().find(|g| g.fingerprint == n.group_key()) {
                g.identical.push(n.name.clone());
            }
        }
        for (i, g) in groups.iter_mut().enumerate() {
            let rows: Vec<&NodeCertification> = nodes.iter().filter(|n| n.group == i).collect();
            g.areas = group_areas(&rows);
        }
    }
    Some(Fleet {
        nodes,
        groups,
        odd: vec![],
    })
}

/// A group's area verdicts: per area the worst of its nodes' (not conformant, then undecided,
/// then conformant, then skipped), with their counts summed and the failing cases named per node.
fn group_areas(rows: &[&NodeCertification]) -> Vec<AreaResult> {
    let rank = |v: AreaVerdict| match v {
        AreaVerdict::NotConformant => 3,
        AreaVerdict::Undecided => 2,
        AreaVerdict::Conformant => 1,
        AreaVerdict::Skipped => 0,
    };
    let Some(first) = rows.first() else { return vec![] };
    let mut out: Vec<AreaResult> = first.areas.iter().map(|a| AreaResult::empty(a.area.clone())).collect();
    for (i, acc) in out.iter_mut().enumerate() {
        for r in rows {
            let Some(a) = r.areas.get(i) else { continue };
            // An empty area starts skipped, the lowest rank: the first node's verdict replaces it.
            if rank(a.verdict) > rank(acc.verdict) {
                acc.verdict = a.verdict;
            }
            acc.passed += a.passed;
            acc.failed += a.failed;
            acc.skipped += a.skipped;
            acc.undecided += a.undecided;
            acc.failing.extend(a.failing.iter().cloned());
            acc.undecided_cases.extend(a.undecided_cases.iter().cloned());
            acc.flaky_cases.extend(a.flaky_cases.iter().cloned());
            for s in &a.skip_reasons {
                if !acc.skip_reasons.contains(s) {
                    acc.skip_reasons.push(s.clone());
                }
            }
        }
    }
    out
}

/// The node × area matrix for the console: one row per node with its fingerprint beside it,
/// one column per area; then what failed or stayed undecided, per node, and the odd nodes out.
pub fn matrix_table(f: &Fleet) -> String {
    if f.groups.iter().any(|g| !g.areas.is_empty()) {
        return group_table(f) + &node_findings(f);
    }
    let areas: Vec<&str> = f
        .nodes
        .first()
        .map(|n| n.areas.iter().map(|a| a.area.as_str()).collect())
        .unwrap_or_default();
    let nw = f.nodes.iter().map(|n| n.node.len()).max().unwrap_or(4).max(4);
    let kw = f
        .nodes
        .iter()
        .map(|n| n.fingerprint.kubelet_version.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let rw = f
        .nodes
        .iter()
        .map(|n| n.fingerprint.container_runtime_version.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let mut out = format!(
        "certification of {} node{} (node × area):\n",
        f.nodes.len(),
        if f.nodes.len() == 1 { "" } else { "s" }
    );
    out.push_str(&format!(
        "  {:<nw$} {:<5} {:<kw$} {:<rw$}",
        "node", "group", "kubelet", "runtime"
    ));
    for a in &areas {
        out.push_str(&format!(" {:<w$}", a, w = a.len().max(14)));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    for n in &f.nodes {
        out.push_str(&format!(
            "  {:<nw$} {:<5} {:<kw$} {:<rw$}",
            n.node,
            n.group + 1,
            n.fingerprint.kubelet_version,
            n.fingerprint.container_runtime_version
        ));
        for (a, w) in n.areas.iter().zip(&areas) {
            out.push_str(&format!(" {:<w$}", a.verdict.as_str(), w = w.len().max(14)));
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    for (i, g) in f.groups.iter().enumerate() {
        out.push_str(&format!(
            "  group {}: {} ({})\n",
            i + 1,
            g.fingerprint,
            g.nodes.join(", ")
        ));
    }
    out + &node_findings(f)
}

/// `--each-group`: the group × area matrix, each group with the nodes that ran its cases and
/// those taken as identical to them.
fn group_table(f: &Fleet) -> String {
    let areas: Vec<&str> = f
        .groups
        .first()
        .map(|g| g.areas.iter().map(|a| a.area.as_str()).collect())
        .unwrap_or_default();
    let ran = |g: &FleetGroup| g.nodes.join(", ");
    let identical = |g: &FleetGroup| {
        if g.identical.is_empty() {
            "-".to_string()
        } else {
            g.identical.join(", ")
        }
    };
    let rw = f.groups.iter().map(|g| ran(g).len()).max().unwrap_or(3).max(3);
    let iw = f.groups.iter().map(|g| identical(g).len()).max().unwrap_or(17).max(17);
    let covered: usize = f.groups.iter().map(|g| g.nodes.len() + g.identical.len()).sum();
    let mut out = format!(
        "certification of {} fingerprint group{} covering {covered} node{} (group × area):\n",
        f.groups.len(),
        if f.groups.len() == 1 { "" } else { "s" },
        if covered == 1 { "" } else { "s" }
    );
    out.push_str(&format!(
        "  {:<5} {:<rw$} {:<iw$}",
        "group", "ran", "taken as identical"
    ));
    for a in &areas {
        out.push_str(&format!(" {:<w$}", a, w = a.len().max(14)));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    for (i, g) in f.groups.iter().enumerate() {
        out.push_str(&format!("  {:<5} {:<rw$} {:<iw$}", i + 1, ran(g), identical(g)));
        for (a, w) in g.areas.iter().zip(&areas) {
            out.push_str(&format!(" {:<w$}", a.verdict.as_str(), w = w.len().max(14)));
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    for (i, g) in f.groups.iter().enumerate() {
        out.push_str(&format!("  group {}: {}\n", i + 1, g.fingerprint));
    }
    out
}

/// Per node what failed or stayed undecided, then the odd nodes out.
fn node_findings(f: &Fleet) -> String {
    let mut out = String::new();
    for n in &f.nodes {
        for a in &n.areas {
            if !a.failing.is_empty() {
                out.push_str(&format!("  {} {}: failing {}\n", n.node, a.area, a.failing.join(", ")));
            }
            if !a.undecided_cases.is_empty() {
                out.push_str(&format!(
                    "  {} {}: no verdict {}\n",
                    n.node,
                    a.area,
                    a.undecided_cases.join(", ")
                ));
            }
        }
    }
    for o in &f.odd {
        out.push_str(&format!(
            "  odd node out: {} differs from the rest of group {}:\n",
            o.node,
            o.group + 1
        ));
        for d in &o.differences {
            out.push_str(&format!("    {d}\n"));
        }
    }
    out
}
