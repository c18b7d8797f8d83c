//! The run-wide table of named allowances: what a bound may add to its mechanism's nominal time,
//! each with its size and cause. A `gap` names the ones it relies on (`allow: [reaction]`);
//! `validate`, the reports and `docs/suites.md` ("Load allowances") show the same table.

/// One named allowance.
#[derive(Debug)]
pub struct Allowance {
    /// The name a bound uses in `allow:`.
    pub name: &'static str,
    /// Its size in seconds when it is fixed; `None` for a formula the suite writes in its own
    /// fields (the back-off re-queue: `doubling.jitter`), which `allow:` cannot name.
    pub secs: Option<f64>,
    /// Its size as the docs print it.
    pub size: &'static str,
    /// The mechanism that needs it.
    pub cause: &'static str,
}

/// Every allowance, once. `judge::mechanism` groups them by the mechanism whose noise they are.
pub(crate) const ALLOWANCES: &[Allowance] = &[
    Allowance {
        name: "start",
        secs: Some(2.0),
        size: "2 s",
        cause: "the kubelet's sync, creation and start of a container on a busy node",
    },
    Allowance {
        name: "relist",
        secs: Some(1.0),
        size: "1 s",
        cause: "the PLEG relist: the kubelet notices a container's exit within its 1 s period",
    },
    Allowance {
        name: "reaction",
        secs: Some(2.0),
        size: "2 s",
        cause: "the kubelet acting on an API change (our DELETE, a patch): the API server's write, the kubelet's watch, its pod worker, the runtime",
    },
    Allowance {
        name: "syncTick",
        secs: Some(1.0),
        size: "1 s",
        cause: "the kubelet's 1 s sync loop, which finds the pods whose time ran out (an active deadline)",
    },
    Allowance {
        name: "podSync",
        secs: Some(1.0),
        size: "1 s",
        cause: "the pod worker's sync that acts on a change the kubelet noticed (a kill, a start), queued behind other pods' work on a busy node",
    },
    Allowance {
        name: "statusWrite",
        secs: Some(1.0),
        size: "1 s",
        cause: "the status manager's write of a change the kubelet made and the watch's delivery of it (0.1-1 s in the recordings)",
    },
    Allowance {
        name: "statusBatch",
        secs: Some(5.0),
        size: "5 s",
        cause: "a change the status manager writes in a later sync than the one it came with (it coalesces a pod's changes), on a busy node",
    },
    Allowance {
        name: "eventPost",
        secs: Some(1.0),
        size: "1 s",
        cause: "the kubelet's event recorder posts asynchronously, its queue waiting on a busy API server",
    },
    Allowance {
        name: "signal",
        secs: Some(0.5),
        size: "+500 ms late",
        cause: "the runtime's kill when its grace timer ends, the SIGTERM after a preStop hook returns",
    },
    Allowance {
        name: "process",
        secs: Some(0.5),
        size: "±500 ms",
        cause: "a container's own sleep between two of its log lines: forks, the runtime reading each line",
    },
    Allowance {
        name: "tick",
        secs: Some(0.3),
        size: "300 ms",
        cause: "one iteration of a container's tick loop and its overhead (200 ms in the recordings, 20 ms today): a trap's line waits for the loop's current command",
    },
    Allowance {
        name: "resync",
        secs: Some(90.0),
        size: "90 s",
        cause: "the pod's periodic sync, which refreshes projected and Downward API files: 1 min, jittered up to 1.5 ×",
    },
    Allowance {
        name: "delivery",
        secs: Some(1.0),
        size: "≤ 1 s",
        cause: "our DELETE's trip and the watch's delivery: exceeded by less than this is undecided, not failed",
    },
    Allowance {
        name: "back-off re-queue",
        secs: None,
        size: "0.5 × the step, at most 30 s, + 3 s",
        cause: "the pod worker re-queues a backing-off pod after the remaining back-off times a random factor in [1, 1.5), then polls every 1 s (`doubling.jitter`/`jitterCap`/`late`)",
    },
];

/// The allowance of that name.
pub fn find(name: &str) -> Option<&'static Allowance> {
    ALLOWANCES.iter().find(|a| a.name == name)
}

/// Why named allowances cannot be a bound's.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AllowanceError {
    #[error("unknown allowance `{name}` (known: {})", fixed_names())]
    Unknown { name: String },
    /// A formula (back-off jitter and the like), which only a back-off's bound can use.
    #[error("`{0}` has no fixed size: a back-off's bound writes it in `doubling` (jitter, jitterCap, late)")]
    NoFixedSize(String),
    #[error("the named allowances add up to {}, more than the bound's {}: the bound cannot rest on them", crate::util::fmt_secs(*sum), crate::util::fmt_secs(*width))]
    TooWide { sum: f64, width: f64 },
}

/// The allowances with a fixed size, comma-separated.
fn fixed_names() -> String {
    let known: Vec<&str> = ALLOWANCES.iter().filter(|a| a.secs.is_some()).map(|a| a.name).collect();
    known.join(", ")
}

/// Why `names` cannot be a bound's allowances, if they cannot: an unknown name, a formula, or
/// more allowance than the bound's `width` (its `max`, or its tolerance) has room for.
pub fn check(names: &[String], width: Option<f64>) -> Result<f64, AllowanceError> {
    let mut sum = 0.0;
    for n in names {
        let a = find(n).ok_or_else(|| AllowanceError::Unknown { name: n.clone() })?;
        sum += a.secs.ok_or_else(|| AllowanceError::NoFixedSize(n.clone()))?;
    }
    if let Some(w) = width
        && sum > w + 1e-9
    {
        return Err(AllowanceError::TooWide { sum, width: w });
    }
    Ok(sum)
}

/// `reaction 2s + syncTick 1s` (or `no allowance`), for a bound's description.
pub fn describe(names: &[String]) -> String {
    if names.is_empty() {
        return "no allowance: the mechanism's own time".into();
    }
    names
        .iter()
        .map(|n| match find(n).and_then(|a| a.secs) {
            Some(s) => format!("{n} {}", crate::util::fmt_secs(s)),
            None => n.clone(),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// How many bounds of the suites name each allowance, in the table's order, and how many
/// bounds name none (`allow: []`) or say nothing (no `allow`).
pub fn usage(suites: &[super::Suite]) -> (Vec<(&'static Allowance, usize)>, usize, usize) {
    let mut counts: Vec<(&'static Allowance, usize)> = ALLOWANCES.iter().map(|a| (a, 0)).collect();
    let (mut none, mut unsaid) = (0, 0);
    let gaps = suites
        .iter()
        .flat_map(|s| &s.cases)
        .flat_map(|c| &c.spec.expect)
        .filter_map(|e| match &e.value {
            super::Expectation::Gap(g) => Some(g),
            _ => None,
        });
    for g in gaps {
        match &g.allow {
            None => unsaid += 1,
            Some(a) if a.value.is_empty() => none += 1,
            Some(a) => {
                for n in &a.value {
                    if let Some(c) = counts.iter_mut().find(|(x, _)| x.name == n.as_str()) {
                        c.1 += 1;
                    }
                }
            }
        }
    }
    (counts, none, unsaid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_bound_names_known_fixed_allowances_within_its_width() {
        assert_eq!(check(&names(&["reaction", "syncTick"]), Some(3.0)), Ok(3.0));
        assert_eq!(check(&[], Some(0.2)), Ok(0.0));
        let e = check(&names(&["reaction", "start"]), Some(3.0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("add up to 4s, more than the bound's 3s"), "{e}");
        let e = check(&names(&["reacton"]), None).unwrap_err().to_string();
        assert!(
            e.starts_with("unknown allowance `reacton` (known: start, relist"),
            "{e}"
        );
        let e = check(&names(&["back-off re-queue"]), None).unwrap_err().to_string();
        assert!(e.contains("no fixed size"), "{e}");
        assert_eq!(describe(&names(&["reaction", "syncTick"])), "reaction 2s + syncTick 1s");
    }

    #[test]
    fn names_are_unique() {
        for a in ALLOWANCES {
            assert_eq!(ALLOWANCES.iter().filter(|b| b.name == a.name).count(), 1, "{}", a.name);
        }
    }
}
