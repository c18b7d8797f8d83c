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

pub(crate) const SIGINT: Interrupt = Interrupt {
    name: "SIGINT",
    exit_code: 130,
};
pub const SIGTERM: Interrupt = Interrupt {
    name: "SIGTERM",
    exit_code: 143,
};
pub(crate) const SIGHUP: Interrupt = Interrupt {
    name: "SIGHUP",
    exit_code: 129,
};
/// The cancel channel of `RunOptions` flipped (treated like Ctrl-C).
pub(crate) const CANCEL: Interrupt = Interrupt {
    name: "cancel",
    exit_code: 130,
};

/// Where interrupts come from.
pub enum Interrupts {
    /// A cancel channel instead of signals (tests must not take the test process's signals).
    External(Option<watch::Receiver<bool>>),
    /// The process's signals, as the one signal thread delivers them.
    Signals(Listener),
}

impl Interrupts {
    /// Starts listening. From then on the signals no longer kill the process by default; a
    /// signal that comes while nothing listens ends it at once (see `hub`).
    pub(crate) fn listen(external: Option<watch::Receiver<bool>>) -> Self {
        if external.is_some() {
            return Interrupts::External(external);
        }
        Interrupts::Signals(Listener::new())
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
            Interrupts::Signals(l) => l.next().await,
        }
    }
}

/// The signals the process got, and who listens. Signal handlers, once installed, stay for
/// the life of the process (tokio never restores the default action), so a signal that comes
/// between two phases that each listen would be recorded and read by no one: the command then
/// went on as if nothing came. Hence one thread receives every signal for the whole process,
/// from the first phase that handles signals on: it hands each to the listeners, and with none
/// it ends podlife at once, removing what would be left behind (unpacked bundles, the bundle
/// being written).
struct Hub {
    state: std::sync::Mutex<HubState>,
    notify: tokio::sync::Notify,
}

#[derive(Default)]
struct HubState {
    /// Every signal delivered to a listener, in order.
    log: Vec<Interrupt>,
    listeners: usize,
    /// Files to remove on an exit at once.
    remove: Vec<std::path::PathBuf>,
    /// What an exit at once says, after "interrupted by SIGINT ".
    note: Option<String>,
}

fn hub() -> &'static Hub {
    static HUB: std::sync::OnceLock<&'static Hub> = std::sync::OnceLock::new();
    HUB.get_or_init(|| {
        let hub: &'static Hub = Box::leak(Box::new(Hub {
            state: Default::default(),
            notify: tokio::sync::Notify::new(),
        }));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("podlife-signals".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                    let _ = ready_tx.send(());
                    return;
                };
                rt.block_on(async move {
                    #[cfg(unix)]
                    let (mut int, mut term, mut hup) = {
                        use tokio::signal::unix::{SignalKind, signal};
                        (
                            signal(SignalKind::interrupt()).ok(),
                            signal(SignalKind::terminate()).ok(),
                            signal(SignalKind::hangup()).ok(),
                        )
                    };
                    // Listening now: from here on a signal no longer kills the process.
                    let _ = ready_tx.send(());
                    loop {
                        #[cfg(unix)]
                        let i = {
                            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                                if let Some(sig) = s.as_mut()
                                    && sig.recv().await.is_some()
                                {
                                    return;
                                }
                                std::future::pending().await
                            }
                            tokio::select! {
                                _ = recv(&mut int) => SIGINT,
                                _ = recv(&mut term) => SIGTERM,
                                _ = recv(&mut hup) => SIGHUP,
                            }
                        };
                        #[cfg(not(unix))]
                        let i = {
                            if tokio::signal::ctrl_c().await.is_err() {
                                std::future::pending::<()>().await;
                            }
                            SIGINT
                        };
                        deliver(hub, i);
                    }
                });
            });
        if spawned.is_ok() {
            let _ = ready_rx.recv();
        }
        hub
    })
}

fn lock(hub: &Hub) -> std::sync::MutexGuard<'_, HubState> {
    hub.state.lock().unwrap_or_else(|p| p.into_inner())
}

fn deliver(hub: &Hub, i: Interrupt) {
    let mut st = lock(hub);
    if st.listeners == 0 {
        drop(st);
        exit_now(hub, i);
    }
    st.log.push(i);
    drop(st);
    hub.notify.notify_waiters();
}

/// Ends podlife with `i`'s code, removing what it would leave behind (no destructor runs).
fn exit_now(hub: &Hub, i: Interrupt) -> ! {
    let (remove, note) = {
        let st = lock(hub);
        (st.remove.clone(), st.note.clone())
    };
    for f in remove {
        let _ = std::fs::remove_file(f);
    }
    super::bundle::remove_unpacked();
    eprintln!(
        "interrupted by {} {}",
        i.name,
        note.as_deref()
            .unwrap_or("between the steps of the command: exiting; nothing else was done")
    );
    std::process::exit(i32::from(i.exit_code))
}

/// From now on, a signal that comes while nothing listens removes `file` too and says `note`
/// (after "interrupted by SIGINT "). Starts the signal thread if it is not yet running.
pub(crate) fn on_exit_at_once(file: Option<std::path::PathBuf>, note: String) {
    let hub = hub();
    let mut st = lock(hub);
    st.remove.extend(file);
    st.note = Some(note);
}

/// One listener of the process's signals: gets every signal from its creation on. A signal it
/// got but never handled (returned by `next` or `pending`) when it is dropped ends podlife at
/// once, as one with no listener does.
pub struct Listener {
    /// Signals before this index are handled.
    cursor: std::sync::atomic::AtomicUsize,
}

impl Listener {
    fn new() -> Self {
        let hub = hub();
        let mut st = lock(hub);
        st.listeners += 1;
        Listener {
            cursor: st.log.len().into(),
        }
    }

    /// The first signal this listener got, if any (handled from then on).
    fn pending(&self) -> Option<Interrupt> {
        use std::sync::atomic::Ordering;
        let st = lock(hub());
        let c = self.cursor.load(Ordering::SeqCst);
        let i = st.log.get(c).copied()?;
        // Every signal so far is answered by this one stop.
        self.cursor.store(st.log.len(), Ordering::SeqCst);
        Some(i)
    }

    async fn next(&mut self) -> Interrupt {
        let hub = hub();
        loop {
            let notified = hub.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = lock(hub);
                let c = self.cursor.get_mut();
                if let Some(i) = st.log.get(*c).copied() {
                    *c += 1;
                    return i;
                }
            }
            notified.await;
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let hub = hub();
        let mut st = lock(hub);
        st.listeners -= 1;
        let unhandled = st.log.get(*self.cursor.get_mut()).copied();
        drop(st);
        if let Some(i) = unhandled {
            exit_now(hub, i);
        }
    }
}

/// Runs `f` (blocking work before a run starts, such as unpacking a bundle) with Ctrl-C,
/// SIGTERM and SIGHUP caught: `f` gets a `stop` function to ask whether one came, and must end
/// early (cleaning up after itself) when it says so. Without this a signal would kill the
/// process on the spot and leave behind whatever `f` was writing. A signal that comes after
/// `f` last asked is not lost: it ends podlife once `f` returns (see `Listener`).
pub(crate) fn while_listening<T>(f: impl FnOnce(&dyn Fn() -> Option<Interrupt>) -> T) -> T {
    let listener = Listener::new();
    let stop = || listener.pending();
    let out = f(&stop);
    drop(listener);
    out
}

/// Test seam: with `PODLIFE_TEST_PHASES` set, podlife says on stderr when it enters a phase
/// (`podlife-phase: <name>`), so a test can send a signal into that phase instead of after a
/// guessed delay; when it equals `<name>`, podlife also stays in that phase (up to a minute)
/// until the signal ends it. Unset, it costs one lookup.
pub fn phase(name: &str) {
    let Ok(v) = std::env::var("PODLIFE_TEST_PHASES") else {
        return;
    };
    eprintln!("podlife-phase: {name}");
    if v == name {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}
