//! `Backoff`: the doubling pauses between tries of something that is away (an API server
//! restarting, a stream's source down), shared by the case API, the sweep and the streams so
//! every retry in podlife waits the same way.

use std::time::Duration;

/// Doubling pauses: `first`, `2 × first` ... up to `max`. Budgets stay with the callers (a
/// request retried within a deadline, a stream down for at most the outage budget); this only
/// says how long to wait before the next try, and whether a pause still fits before a deadline.
#[derive(Clone, Debug)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// First pause after a failure: a blip (a dropped connection, one 503) is retried at once,
    /// nearly.
    pub(crate) const FIRST: Duration = Duration::from_millis(250);
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
    pub(crate) fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (pause * 2).min(self.max);
        pause
    }

    /// Whether the next pause ends before `deadline`, so a try after it is still worth making.
    pub(crate) fn fits_before(&self, deadline: tokio::time::Instant) -> bool {
        super::after_tokio(self.next) < deadline
    }

    /// The source answered again: the next failure starts over from the first pause.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// What a retry's pauses give way to.
#[derive(Clone, Debug)]
pub(crate) enum Pauses {
    /// Cancellation (Ctrl-C, SIGTERM: the receiver turning true) ends a pause at once.
    Cancellable(Option<tokio::sync::watch::Receiver<bool>>),
    /// The pauses run to their end whatever the signals: a cleanup, which a signal starts rather
    /// than stops (a namespace abandoned halfway would leak); the retry's deadline bounds it.
    Uninterrupted,
}

/// How a retry ended without a result.
#[derive(Debug, PartialEq)]
pub(crate) enum RetryEnd<E> {
    /// The last try's error: one that will not change, or a transient one when no further pause
    /// fits before the deadline.
    Failed(E),
    /// Cancelled during a pause.
    Cancelled,
}

impl Backoff {
    /// Pauses for the next pause; true when cancelled meanwhile.
    pub(crate) async fn pause(&mut self, pauses: &Pauses) -> bool {
        let d = self.next_pause();
        match pauses {
            Pauses::Cancellable(Some(rx)) => {
                let mut rx = rx.clone();
                tokio::select! {
                    _ = tokio::time::sleep(d) => false,
                    _ = rx.wait_for(|v| *v) => true,
                }
            }
            Pauses::Cancellable(None) | Pauses::Uninterrupted => {
                tokio::time::sleep(d).await;
                false
            }
        }
    }

    /// The retry loop every caller shares: tries `attempt` until it succeeds, fails with an
    /// error `transient` says will not change, or fails transiently when the next pause no
    /// longer fits before `deadline`; between tries, the doubling pauses.
    pub async fn retry<T, E, F, Fut>(
        &mut self,
        deadline: tokio::time::Instant,
        pauses: &Pauses,
        transient: impl Fn(&E) -> bool,
        mut attempt: F,
    ) -> Result<T, RetryEnd<E>>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        loop {
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && self.fits_before(deadline) => {
                    if self.pause(pauses).await {
                        return Err(RetryEnd::Cancelled);
                    }
                }
                Err(e) => return Err(RetryEnd::Failed(e)),
            }
        }
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

    fn tries(failures: u32, transient: bool) -> impl FnMut() -> std::future::Ready<Result<u32, (u32, bool)>> {
        let mut n = 0;
        move || {
            n += 1;
            std::future::ready(if n > failures { Ok(n) } else { Err((n, transient)) })
        }
    }

    fn transient(e: &(u32, bool)) -> bool {
        e.1
    }

    /// Pauses of a millisecond or two: the outcome of a retry does not depend on their length.
    fn quick() -> Backoff {
        Backoff::between(Duration::from_millis(1), Duration::from_millis(2))
    }

    #[tokio::test]
    async fn a_transient_failure_is_tried_again_until_it_succeeds() {
        let deadline = crate::util::after_tokio(Duration::from_secs(3600));
        let r = quick()
            .retry(deadline, &Pauses::Uninterrupted, transient, tries(3, true))
            .await;
        assert_eq!(r, Ok(4));
    }

    #[tokio::test]
    async fn a_lasting_failure_ends_the_retry_at_once() {
        let deadline = crate::util::after_tokio(Duration::from_secs(3600));
        let r = quick()
            .retry(deadline, &Pauses::Uninterrupted, transient, tries(3, false))
            .await;
        assert_eq!(r, Err(RetryEnd::Failed((1, false))));
    }

    #[tokio::test]
    async fn the_retry_gives_up_when_no_pause_fits_before_the_deadline() {
        let deadline = tokio::time::Instant::now();
        let r = quick()
            .retry(deadline, &Pauses::Uninterrupted, transient, tries(3, true))
            .await;
        assert_eq!(r, Err(RetryEnd::Failed((1, true))));
    }

    #[tokio::test]
    async fn cancellation_ends_a_cancellable_pause_but_not_an_uninterrupted_one() {
        let deadline = crate::util::after_tokio(Duration::from_secs(3600));
        let (tx, rx) = tokio::sync::watch::channel(false);
        tx.send(true).unwrap();
        // A pause of 250 ms, cut short: the cancellation is already there.
        let r = Backoff::new()
            .retry(
                deadline,
                &Pauses::Cancellable(Some(rx.clone())),
                transient,
                tries(3, true),
            )
            .await;
        assert_eq!(r, Err(RetryEnd::Cancelled));
        let r = quick()
            .retry(deadline, &Pauses::Uninterrupted, transient, tries(3, true))
            .await;
        assert_eq!(r, Ok(4));
        let r = quick()
            .retry(deadline, &Pauses::Cancellable(None), transient, tries(3, true))
            .await;
        assert_eq!(r, Ok(4));
    }
}
