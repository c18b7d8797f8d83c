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

/// Runs `f` (blocking work before a run starts, such as unpacking a bundle) with Ctrl-C,
/// SIGTERM and SIGHUP caught: `f` gets a `stop` function to ask whether one came, and must end
/// early (cleaning up after itself) when it says so. Without this a signal would kill the
/// process on the spot and leave behind whatever `f` was writing. Signals are listened to on a
/// helper thread, which is stopped when `f` returns.
pub fn while_listening<T>(f: impl FnOnce(&dyn Fn() -> Option<Interrupt>) -> T) -> T {
    use std::sync::{Arc, Mutex};
    let got: Arc<Mutex<Option<Interrupt>>> = Arc::default();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let seen = got.clone();
    let helper = std::thread::Builder::new()
        .name("podlife-signals".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                let _ = ready_tx.send(());
                return;
            };
            rt.block_on(async move {
                let mut interrupts = Interrupts::listen(None);
                // Listening now: from here on a signal no longer kills the process.
                let _ = ready_tx.send(());
                tokio::select! {
                    i = interrupts.next() => {
                        *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
                    }
                    _ = done_rx => {}
                }
            });
        });
    if helper.is_ok() {
        let _ = ready_rx.recv();
    }
    let stop = || *got.lock().unwrap_or_else(|p| p.into_inner());
    let out = f(&stop);
    let _ = done_tx.send(());
    if let Ok(h) = helper {
        let _ = h.join();
    }
    out
}
