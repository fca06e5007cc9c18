//! Verification building blocks: the visual diff and the evidence store; the
//! engine and verdicts build on them.

pub mod diff;
pub mod evidence;
