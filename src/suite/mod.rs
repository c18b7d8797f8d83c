//! The suite format (`SuiteFile`) and its loader: pure data, no cluster access.

pub mod allowances;
pub mod durations;
pub mod load;
pub mod model;
pub mod naming;
pub mod quantity;
pub mod types;
pub mod upstream;

pub use load::{ContainerInfo, ContainerKind, Diag, LoadedCase, Suite, load_recorded_suites, load_suites};
pub use model::*;
