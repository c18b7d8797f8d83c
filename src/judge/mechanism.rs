//! The mechanisms that decide a node's timings, in one table: for each, how far a measured value
//! moves from run to run on a conformant node (the noise `podlife diff` allows) and the named load
//! allowances (`suite::allowances`) the suites add to its nominal time. A noise class and an
//! allowance describe the same mechanism, so each allowance belongs to one mechanism here, and
//! `docs/suites.md` ("Load allowances") mirrors the allowances' table.

use super::measure::Noise;

/// One mechanism: the noise class of the values it decides, and the allowances its bounds get.
#[derive(Debug)]
pub struct Mechanism {
    pub noise: Noise,
    /// Short name, as printed after a noise figure (`±2s (kubelet reaction 2s)`).
    pub name: &'static str,
    /// How far a value moves from run to run on a conformant node, in seconds; None: the value
    /// is not node behaviour and is never compared.
    pub spread: Option<f64>,
    /// Why the value moves that much (the mechanism).
    pub why: &'static str,
    /// The names of its allowances in the run-wide table (`suite::allowances`).
    pub allowances: &'static [&'static str],
}

/// Every mechanism, once.
pub(crate) const MECHANISMS: &[Mechanism] = &[
    Mechanism {
        noise: Noise::Process,
        name: "process scheduling",
        // The container's own code, its hooks and the runtime's grace timer: only CPU
        // scheduling on a loaded 2-core node moves them (0.2 s kill ticks included).
        spread: Some(0.25),
        why: "both ends are log lines of one container instance: its own code, hooks and the runtime's grace timer decide the gap, moved only by CPU scheduling",
        allowances: &["process", "signal", "tick"],
    },
    Mechanism {
        noise: Noise::Kubelet,
        name: "kubelet reaction",
        // A reaction is noticed by the PLEG relist (every 1 s) and published by status writes
        // and watch deliveries.
        spread: Some(2.0),
        why: "an end is a kubelet reaction: noticed by its 1 s PLEG relist and published by a status write, an event or a watch delivery",
        allowances: &[
            "start",
            "relist",
            "reaction",
            "syncTick",
            "podSync",
            "statusWrite",
            "statusBatch",
            "eventPost",
            "delivery",
        ],
    },
    Mechanism {
        noise: Noise::Backoff,
        name: "back-off sync",
        // While a pod backs off, the pod worker re-queues it after the remaining back-off times
        // a random factor in [1, 1.5) (capped at its 1 min resync), then polls its queue every
        // 1 s and starts the container: the 40 s step, the longest the suites measure, ends
        // anywhere in 40-60 s, + 1 s of polling and the 2 s start allowance. A doubled step
        // (80 s) is still far beyond it.
        spread: Some(23.0),
        why: "a back-off step: the kubelet retries at the first pod sync after the back-off expires, re-queued with a jitter of up to 0.5 × the step",
        allowances: &["back-off re-queue"],
    },
    Mechanism {
        noise: Noise::Sync,
        name: "pod sync period",
        // A ConfigMap, Secret, projected or Downward API volume's content, and a reaction the
        // kubelet only writes to status, change at the pod's next periodic sync: the pod worker
        // re-queues a running pod every 1 min with a jitter factor of 0.5 (up to 90 s), and a
        // changed object first reaches the kubelet's object cache. One run may catch the sync a
        // second after the change and the next 88 s after it: 90 s of resync jitter, plus 2 s
        // for the object cache's watch and the container's own 1 s read loop.
        spread: Some(92.0),
        why: "the kubelet applies it at the pod's next periodic sync (a 1 min resync jittered up to 1.5 ×, after its object cache has the change)",
        allowances: &["resync"],
    },
    Mechanism {
        noise: Noise::Removal,
        name: "pod removal",
        // The status manager deletes the pod object once the containers are gone and the pod's
        // volumes and cgroups reclaimed (housekeeping every 2 s); it checks at a status change
        // and at its batch sync every 10 s, so the deletion comes 0-12 s after the last kill.
        spread: Some(12.0),
        why: "the kubelet deletes the pod object at a status sync (every 10 s, or on a change) once housekeeping (every 2 s) has reclaimed its volumes and cgroups",
        allowances: &[],
    },
    Mechanism {
        noise: Noise::Own,
        name: "podlife's own actions",
        // The time between two of our own requests is our pacing (waits, retries), not the node's.
        spread: None,
        why: "both ends are podlife's own actions: the gap is our own pacing, not node behaviour (shown for information)",
        allowances: &[],
    },
];

/// The mechanism of a noise class.
pub fn mechanism(noise: Noise) -> &'static Mechanism {
    MECHANISMS
        .iter()
        .find(|m| m.noise == noise)
        .expect("every noise class has its mechanism")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::allowances::ALLOWANCES;

    #[test]
    fn every_noise_class_has_one_mechanism() {
        for n in [
            Noise::Process,
            Noise::Kubelet,
            Noise::Backoff,
            Noise::Sync,
            Noise::Removal,
            Noise::Own,
        ] {
            assert_eq!(MECHANISMS.iter().filter(|m| m.noise == n).count(), 1, "{n:?}");
        }
    }

    #[test]
    fn every_allowance_belongs_to_one_mechanism() {
        for a in ALLOWANCES {
            let n = MECHANISMS.iter().filter(|m| m.allowances.contains(&a.name)).count();
            assert_eq!(n, 1, "{}", a.name);
        }
        for m in MECHANISMS {
            for n in m.allowances {
                assert!(crate::suite::allowances::find(n).is_some(), "{n}");
            }
        }
    }

    #[test]
    fn the_documented_allowances_are_the_mechanisms_allowances() {
        // docs/suites.md lists the allowances for suite authors: the same names, no other.
        let doc = include_str!("../../docs/suites.md");
        let section = doc
            .split("## Load allowances")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("docs/suites.md has a Load allowances section");
        let documented: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| allowance") && !l.starts_with("|---"))
            .filter_map(|l| l.split('|').nth(1).map(str::trim))
            .filter(|n| !n.is_empty())
            .collect();
        let mut ours: Vec<&str> = ALLOWANCES.iter().map(|a| a.name).collect();
        let mut documented = documented;
        ours.sort();
        documented.sort();
        assert_eq!(documented, ours);
    }
}
