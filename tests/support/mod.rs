//! Shared test support: the in-process fake API server (`fake_api::FakeState`).

pub mod fake_api;
