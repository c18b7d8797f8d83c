//! The command line as a user meets it: what it refuses (the malformed suites of `validate`,
//! damaged and hostile inputs, files and paths beyond their bounds, fuzzed recordings and
//! timelines), how it behaves under faults (unwritable reports, a silent API server, signals),
//! and snapshots of `schema` and `list`.
//!
//! One test binary per concern, its modules inside it: each test binary links the whole crate,
//! so fewer binaries link faster. Fixtures are read relative to the project root, where cargo runs tests.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod bounds;
mod cli_snapshots;
mod cli_validate;
mod faults_cli;
mod fuzz_inputs;
