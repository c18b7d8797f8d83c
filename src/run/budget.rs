//! Keeping to the run's API budget (`results::plan::Budget`): the pacing of case starts (`Pacer`)
//! and of pod starts (`StartSlots`).

use std::num::NonZeroU32;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::results::plan::{Budget, START_REQUESTS, WATCHES_PER_CASE};

/// Paces case starts so that their requests stay within the budget's requests per second: a
/// token bucket (governor's GCRA) holding one second of requests, each start taking
/// `START_REQUESTS` of them.
pub(crate) struct Pacer {
    limiter: governor::DefaultDirectRateLimiter,
    cost: NonZeroU32,
}

impl Pacer {
    /// `None` when unbounded (0 requests per second).
    pub fn new(requests_per_second: u32) -> Option<Arc<Pacer>> {
        let rps = NonZeroU32::new(requests_per_second)?;
        // A budget below one start's requests still starts cases, one per START_REQUESTS / rps s.
        let cost = NonZeroU32::new(START_REQUESTS.min(rps.get())).expect("both are positive");
        let per = std::time::Duration::from_secs_f64(f64::from(cost.get()) / f64::from(rps.get()));
        let quota = governor::Quota::with_period(per / cost.get())
            .expect("a positive period")
            .allow_burst(rps);
        Some(Arc::new(Pacer {
            limiter: governor::RateLimiter::direct(quota),
            cost,
        }))
    }

    /// Waits until a case may start.
    pub(crate) async fn admit(&self) {
        // The cost never exceeds the burst (see `new`), so the bucket can always hold it.
        let _ = self.limiter.until_n_ready(self.cost).await;
    }
}

/// The start slots a case's pod takes: its node's (`--starts-per-node`) and the cluster's
/// (`--max-starting`). Either may be unbounded.
#[derive(Clone, Default)]
pub(crate) struct StartSlots {
    pub node: Option<Arc<Semaphore>>,
    pub cluster: Option<Arc<Semaphore>>,
}

/// The slots a starting pod holds; dropping it frees them.
pub(crate) struct StartPermit(#[allow(dead_code)] Vec<OwnedSemaphorePermit>);

impl StartSlots {
    /// Takes the node's slot, then the cluster's (always in that order, so two cases never hold
    /// one each while waiting for the other's).
    pub(crate) async fn acquire(&self) -> StartPermit {
        let mut held = vec![];
        for s in [&self.node, &self.cluster].into_iter().flatten() {
            if let Ok(p) = s.clone().acquire_owned().await {
                held.push(p);
            }
        }
        StartPermit(held)
    }

    pub(crate) fn is_unbounded(&self) -> bool {
        self.node.is_none() && self.cluster.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_lets_one_second_of_starts_through_then_spaces_them() {
        // A burst of 16 requests holds two starts of 8; the third waits half a second.
        let p = Pacer::new(16).unwrap();
        let admitted = (0..3).filter(|_| p.limiter.check_n(p.cost) == Ok(Ok(()))).count();
        assert_eq!(admitted, 2);
        assert!(Pacer::new(0).is_none());
        // Below one start's requests a start still goes through, costing the whole burst.
        let slow = Pacer::new(3).unwrap();
        assert_eq!(slow.cost.get(), 3);
        assert_eq!(slow.limiter.check_n(slow.cost), Ok(Ok(())));
    }
}
