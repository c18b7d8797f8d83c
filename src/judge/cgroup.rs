//! `cgroup` expectations: the cgroup values a container read of its own cgroup files (an `exec`
//! step's output), against what the kubelet and the runtime derive from its requests and limits.

use super::*;
use crate::suite::quantity::Quantity;
use std::collections::BTreeMap;

/// The CFS period the kubelet sets (100 ms), and the least quota it writes (1 ms).
const QUOTA_PERIOD: i128 = 100_000;
const MIN_QUOTA: i128 = 1_000;
/// The kubelet's bounds on cpu.shares.
const MIN_SHARES: i128 = 2;
const MAX_SHARES: i128 = 262_144;

/// Each cgroup file's expected values (more than one where runtimes legitimately differ).
pub(crate) struct Expected {
    pub v2: bool,
    pub files: Vec<(&'static str, Vec<String>, &'static str)>,
}

fn milli(m: &BTreeMap<String, String>, k: &str) -> Option<i128> {
    m.get(k).and_then(|v| Quantity::parse(v).ok()).map(|q| q.milli())
}

/// The values a container with these requests and limits has in its cgroup, as upstream's e2e
/// computes them: the quota from the cpu limit (`limit × 100 µs` per 100 ms period, at least
/// 1 ms; also the limit rounded up to 10m, which runc writes for some limits), the shares from the
/// cpu request (the limit without one), the memory limit in bytes (none: not checked).
pub(crate) fn expected(requests: &BTreeMap<String, String>, limits: &BTreeMap<String, String>, v2: bool) -> Expected {
    let mut files = vec![];
    let cpu_lim = milli(limits, "cpu").filter(|m| *m > 0);
    let quotas: Vec<i128> = match cpu_lim {
        None => vec![-1],
        Some(l) => {
            let q = |l: i128| (l * QUOTA_PERIOD / 1000).max(MIN_QUOTA);
            let mut v = vec![q(l)];
            if l % 10 != 0 {
                v.push(q((l / 10 + 1) * 10));
            }
            v
        }
    };
    let quota_text = |q: i128| {
        if v2 {
            if q < 0 {
                format!("max {QUOTA_PERIOD}")
            } else {
                format!("{q} {QUOTA_PERIOD}")
            }
        } else {
            q.to_string()
        }
    };
    files.push((
        if v2 { "cpu.max" } else { "cpu.cfs_quota_us" },
        quotas.into_iter().map(quota_text).collect(),
        "the cpu limit",
    ));
    let req = milli(requests, "cpu").filter(|m| *m > 0).or(cpu_lim).unwrap_or(0);
    let shares = if req == 0 {
        MIN_SHARES
    } else {
        (req * 1024 / 1000).clamp(MIN_SHARES, MAX_SHARES)
    };
    if v2 {
        // The linear conversion of the kubelet and older runtimes, and the one newer runc and
        // crun use (a log-scale fit that keeps the default weight at 100 for 1024 shares).
        let linear = 1 + ((shares - 2) * 9999) / 262_142;
        let l = (shares as f64).log2();
        let curve = 10f64.powf((l * l + 125.0 * l) / 612.0 - 7.0 / 34.0).ceil() as i128;
        let mut w = vec![linear.to_string()];
        if curve != linear {
            w.push(curve.to_string());
        }
        files.push(("cpu.weight", w, "the cpu request"));
    } else {
        files.push(("cpu.shares", vec![shares.to_string()], "the cpu request"));
    }
    if let Some(bytes) = limits
        .get("memory")
        .and_then(|v| Quantity::parse(v).ok())
        .map(|q| q.units())
        .filter(|b| *b > 0)
    {
        files.push((
            if v2 { "memory.max" } else { "memory.limit_in_bytes" },
            vec![bytes.to_string()],
            "the memory limit",
        ));
    }
    Expected { v2, files }
}

/// A `cgroup` expectation on the recorded output of the `exec` step it names: `<file> <value>`
/// lines. The files present say the cgroup version (v2: `cpu.max`). An exec that did not
/// complete decides nothing.
pub(super) fn cgroup(g: &CgroupExpect, tl: &Timeline) -> J {
    use crate::observe::ActionKind;
    let name = g.exec.as_str();
    let Some(r) = tl
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::Exec)
        .filter_map(|a| a.exec.as_ref())
        .find(|r| r.name == name)
    else {
        let j = fail(format!(
            "cgroup `{name}`: no exec result recorded (the step did not run)"
        ));
        return if tl.complete { j } else { undecided(j.evidence) };
    };
    let head = format!("cgroup of `{}` read by exec `{name}`", r.container);
    if let Some(e) = &r.error {
        return undecided(format!("{head}; undecided: the exec did not complete ({e})"));
    }
    let read: BTreeMap<&str, &str> = r
        .stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let v2 = read.contains_key("cpu.max") || read.contains_key("cpu.weight");
    let want = expected(&g.requests, &g.limits, v2);
    let mut seen = vec![];
    let mut problems = vec![];
    for (file, values, from) in &want.files {
        match read.get(file) {
            None => problems.push(format!("{file} not printed")),
            Some(v) if values.iter().any(|w| w == v) => seen.push(format!("{file} {v}")),
            Some(v) => problems.push(format!("{file} {v}, expected {} from {from}", values.join(" or "))),
        }
    }
    let version = if want.v2 { "v2" } else { "v1" };
    if problems.is_empty() {
        pass(format!("{head} (cgroup {version}): {}", seen.join(", ")))
    } else {
        fail(format!(
            "{head} (cgroup {version}): {}{}",
            problems.join("; "),
            if seen.is_empty() {
                String::new()
            } else {
                format!(" (as expected: {})", seen.join(", "))
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn v1_values_as_the_kubelet_sets_them() {
        let e = expected(&m(&[("cpu", "20m")]), &m(&[("cpu", "30m"), ("memory", "45Mi")]), false);
        let get = |f: &str| e.files.iter().find(|x| x.0 == f).map(|x| x.1.clone());
        assert_eq!(get("cpu.cfs_quota_us"), Some(vec!["3000".to_string()]));
        assert_eq!(get("cpu.shares"), Some(vec!["20".to_string()]));
        assert_eq!(get("memory.limit_in_bytes"), Some(vec![(45u64 << 20).to_string()]));
        // No limit: unlimited quota, shares at least 2, no memory file checked.
        let e = expected(&m(&[("memory", "35Mi")]), &m(&[]), false);
        let get = |f: &str| e.files.iter().find(|x| x.0 == f).map(|x| x.1.clone());
        assert_eq!(get("cpu.cfs_quota_us"), Some(vec!["-1".to_string()]));
        assert_eq!(get("cpu.shares"), Some(vec!["2".to_string()]));
        assert_eq!(get("memory.limit_in_bytes"), None);
        // A limit below 10m: the 1 ms floor; 5m also rounds up to 10m, the same 1000.
        let e = expected(&m(&[("cpu", "1m")]), &m(&[("cpu", "5m")]), false);
        assert_eq!(e.files[0].1, vec!["1000".to_string(), "1000".to_string()]);
    }

    #[test]
    fn v2_values() {
        let e = expected(&m(&[("cpu", "1")]), &m(&[("cpu", "1500m"), ("memory", "1Gi")]), true);
        let get = |f: &str| e.files.iter().find(|x| x.0 == f).map(|x| x.1.clone());
        assert_eq!(get("cpu.max"), Some(vec!["150000 100000".to_string()]));
        // 1024 shares: 39 linear, 100 on the newer runtimes' curve.
        assert_eq!(get("cpu.weight"), Some(vec!["39".to_string(), "100".to_string()]));
        assert_eq!(get("memory.max"), Some(vec![(1u64 << 30).to_string()]));
        let e = expected(&m(&[]), &m(&[]), true);
        assert_eq!(e.files[0].1, vec![format!("max {QUOTA_PERIOD}")]);
    }
}
