//! What stops a run early (`Interrupts`): Ctrl-C (SIGINT), SIGTERM (what CI sends to a
//! cancelled or timed-out job), SIGHUP (a closed terminal), or a cancel channel (tests, embedding).
//! The first one stops the run cleanly; the runner exits at once on the second.

use tokio::sync::watch;

/// One interrupt: which, and the exit code a run it stopped ends with (128 + signal number,
/// as shells report a process killed by that signal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    pub name: &'static str,
    pub exit_code: u8,
}

pub const SIGINT: Interrupt = Interrupt {
    name: "SIGINT",
    exit_code: 130,
};
pub const SIGTERM: Interrupt = Interrupt {
    name: "SIGTERM",
    exit_code: 143,
};
pub const SIGHUP: Interrupt = Interrupt {
    name: "SIGHUP",
    exit_code: 129,
};
/// The cancel channel of `RunOptions` flipped (treated like Ctrl-C).
pub const CANCEL: Interrupt = Interrupt {
    name: "cancel",
    exit_code: 130,
};

/// Where interrupts come from.
pub enum Interrupts {
    /// A cancel channel instead of signals (tests must not take the test process's signals).
    External(Option<watch::Receiver<bool>>),
    #[cfg(unix)]
    Signals {
        int: Option<tokio::signal::unix::Signal>,
        term: Option<tokio::signal::unix::Signal>,
        hup: Option<tokio::signal::unix::Signal>,
    },
    #[cfg(not(unix))]
    CtrlC,
}

impl Interrupts {
    /// Starts listening. Call inside the runtime; from then on the signals no longer kill the
    /// process by default, so call it only when the run is about to handle them.
    pub fn listen(external: Option<watch::Receiver<bool>>) -> Self {
        if external.is_some() {
            return Interrupts::External(external);
        }
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Interrupts::Signals {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
                hup: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Interrupts::CtrlC
    }

    /// Waits for the next interrupt (forever if there is no source left).
    pub async fn next(&mut self) -> Interrupt {
        match self {
            Interrupts::External(rx) => {
                if let Some(r) = rx.as_mut()
                    && r.wait_for(|v| *v).await.is_ok()
                {
                    // A channel fires once: a second "interrupt" never comes from it.
                    *rx = None;
                    return CANCEL;
                }
                std::future::pending().await
            }
            #[cfg(unix)]
            Interrupts::Signals { int, term, hup } => {
                async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                    if let Some(sig) = s.as_mut()
                        && sig.recv().await.is_some()
                    {
                        return;
                    }
                    std::future::pending().await
                }
                tokio::select! {
                    _ = recv(int) => SIGINT,
                    _ = recv(term) => SIGTERM,
                    _ = recv(hup) => SIGHUP,
                }
            }
            #[cfg(not(unix))]
            Interrupts::CtrlC => {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
                SIGINT
            }
        }
    }
}
