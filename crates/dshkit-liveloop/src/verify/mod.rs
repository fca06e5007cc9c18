//! Verification building blocks: the visual diff today; the engine, evidence store
//! and verdicts build on it.

pub mod diff;
