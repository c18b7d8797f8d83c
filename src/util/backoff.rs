//! `Backoff`: the doubling pauses between tries of something that is away (an API server
//! restarting, a stream's source down), shared by the case API, the sweep and the streams so
//! every retry in podlife waits the same way.

use std::time::Duration;

/// Doubling pauses: `first`, `2 × first` ... up to `max`. Budgets stay with the callers (a
/// request retried within a deadline, a stream down for at most the outage budget); this only
/// says how long to wait before the next try, and whether a pause still fits before a deadline.
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// First pause after a failure: a blip (a dropped connection, one 503) is retried at once,
    /// nearly.
    pub const FIRST: Duration = Duration::from_millis(250);
    /// Longest pause between tries: an apiserver restart takes tens of seconds, so checking
    /// every few seconds notices its return soon enough without flooding it on the way back.
    pub const MAX: Duration = Duration::from_secs(4);

    /// The pauses of every retry while the API is unavailable: [`Self::FIRST`] up to
    /// [`Self::MAX`].
    pub fn new() -> Self {
        Self::between(Self::FIRST, Self::MAX)
    }

    /// Pauses from `first` doubling up to `max` (polling for something expected soon).
    pub fn between(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The pause before the next try; the one after it is twice as long (up to the maximum).
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (pause * 2).min(self.max);
        pause
    }

    /// Whether the next pause ends before `deadline`, so a try after it is still worth making.
    pub fn fits_before(&self, deadline: tokio::time::Instant) -> bool {
        super::after_tokio(self.next) < deadline
    }

    /// The source answered again: the next failure starts over from the first pause.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_maximum_and_start_over_after_a_reset() {
        let mut b = Backoff::new();
        let pauses: Vec<u64> = (0..7).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 4000, 4000]);
        b.reset();
        assert_eq!(b.next_pause(), Duration::from_millis(250));
        let mut p = Backoff::between(Duration::from_millis(50), Duration::from_secs(1));
        let pauses: Vec<u64> = (0..6).map(|_| p.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1000]);
    }
}
