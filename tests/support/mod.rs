//! Shared test support: the in-process fake API server (`fake_api::FakeState`), the live-run
//! scaffolding around it (`live::Env`), judging a suite on a real recording
//! (`judging::judge`), `podlife diff` as a user runs it (`cli::diff`) and fixture copies
//! (`files::copy_dir`).

// Each test binary that includes this module uses a different part of it.
#[allow(dead_code)]
pub mod cli;
#[allow(dead_code)]
pub mod fake_api;
#[allow(dead_code)]
pub mod files;
#[allow(dead_code)]
pub mod judging;
#[allow(dead_code)]
pub mod live;
