//! Observation: the `Observer` turns pod/event/log streams (live or recorded) into a `Timeline`.

pub mod observer;
pub mod recording;
pub mod spans;
pub mod status;
pub mod timeline;

pub use observer::{
    Input, MAX_LOG_BYTES_PER_INSTANCE, MAX_LOG_LINE_BYTES, MAX_LOG_LINES_PER_INSTANCE, NewInstance, Observer,
    TRUNCATED_MARKER, Tap, WatchKind, cap_line,
};
pub use recording::Recording;
pub use spans::Span;
pub use status::{PodRow, WatchLine, pod_row, watch_lines, watch_transcript};
pub use timeline::*;
