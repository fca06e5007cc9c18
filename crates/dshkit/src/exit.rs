//! Documented exit codes. Scripts may rely on these.

use std::process::ExitCode;

/// The command did what was asked.
pub const SUCCESS: u8 = 0;
/// The command ran and found a problem it reports (e.g. `doctor` found a missing piece).
pub const PROBLEM_FOUND: u8 = 1;
/// The command line is wrong (unknown flag, bad value). Clap's own code.
pub const USAGE: u8 = 2;
/// Input or configuration is refused: an unparsable patch file, an unsafe token
/// file, a non-loopback bind without `--allow-remote`.
pub const REFUSED: u8 = 3;
/// Something failed at run time: I/O, a transport, a crashed child.
pub const RUNTIME: u8 = 4;
/// `verify` could not produce evidence (verdict UNVERIFIED): no browser, no
/// screenshot, an incomplete requested diff. Not a pass and not an app failure.
pub const UNVERIFIED: u8 = 5;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn refused(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: REFUSED,
            error: error.into(),
        }
    }

    pub fn runtime(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: RUNTIME,
            error: error.into(),
        }
    }
}

pub fn code(value: u8) -> ExitCode {
    ExitCode::from(value)
}
