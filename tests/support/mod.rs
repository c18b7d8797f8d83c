//! Shared test support: the in-process fake API server (`fake_api::FakeState`).

// Each test binary that includes this module uses a different part of the fake.
#[allow(dead_code)]
pub mod fake_api;
