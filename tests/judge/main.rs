//! From evidence to verdict, on real recordings: the observer, kubectl's STATUS column, every
//! expectation kind and suite-format feature right and deliberately wrong, lost evidence made
//! undecided, and the built-in suites passing on their recordings and failing when mutated.
//!
//! One test binary per concern, its modules inside it: each test binary links the whole crate,
//! so fewer binaries link faster. Fixtures are read relative to the project root, where cargo runs tests.

#[path = "../support/mod.rs"]
mod support;

mod builtin_suites;
mod evidence_gaps;
mod format_features;
mod generation_recordings;
mod judge_mutations;
mod observer;
mod parity_recordings;
mod resize;
mod status_column;
