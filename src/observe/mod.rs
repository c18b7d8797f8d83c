//! Observation: the `Observer` turns pod/event/log streams (live or recorded) into a `Timeline`.

pub mod observer;
pub mod recording;
pub mod timeline;

pub use observer::{Input, NewInstance, Observer, Tap, WatchKind};
pub use recording::Recording;
pub use timeline::*;
