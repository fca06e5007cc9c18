//! What CI systems read from dshkit: JUnit XML ([`junit`]), the one model of
//! suites and testcases that `dshkit verify --junit` and `dshkit echo verify
//! --junit` fill from their reports, with XML 1.0 escaping ([`xml`]), bounded
//! output and the atomic write of [`dshkit_os::fs::write_atomic`].

pub mod junit;
pub mod xml;

pub use junit::{Case, Outcome, Problem, Property, Suite, WriteError};
