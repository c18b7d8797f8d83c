//! Reporters: console lines, JUnit XML and JSON timelines/summaries, fed by run events.

pub mod console;
