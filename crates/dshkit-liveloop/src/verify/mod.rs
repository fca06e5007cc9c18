//! Verification building blocks: the visual diff, the evidence store and the
//! strict verdict; the engine builds on them.

pub mod diff;
pub mod evidence;
pub mod verdict;
