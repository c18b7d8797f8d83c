//! Runs and what they leave: runs against the in-process API server (fleets, recording and its
//! memory cost, `clean`), real live runs and bundles replayed and re-judged, every verdict pinned,
//! and the reports read back (HTML, `diff`, `--repeat` statistics).
//!
//! One test binary per concern, its modules inside it: each test binary links the whole crate,
//! so fewer binaries link faster. Fixtures are read relative to the project root, where cargo runs tests.
//! The live runner's own tests (`live_mock`, `live_streams`, `live_cluster`) stay binaries of
//! their own.

#[path = "../support/mod.rs"]
mod support;

mod capacity;
mod clean;
mod diff_and_repeat;
mod diff_live_runs;
mod fleet;
mod gaps_decided;
mod html_report;
mod live_runs;
mod live_runs_b;
mod record_memory;
mod record_replay;
mod verdict_pin;
