//! podlife: certifies how a Kubernetes node runs pods through their lifecycle. The crate root
//! wires the layers: `suite` (data) → `observe` (streams → `Timeline`) → `judge` (pure verdicts)
//! → `run` (cluster I/O) → `results` (the result model) → `report` (files).

pub mod cli;
pub mod cluster;
pub mod files;
pub mod judge;
pub mod observe;
pub mod report;
pub mod results;
pub mod run;
pub mod select;
pub mod suite;
pub mod util;
