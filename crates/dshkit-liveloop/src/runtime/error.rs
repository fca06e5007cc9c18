//! The runtime's error, with a stable code for programs.

use std::path::PathBuf;

use super::failure::StartFailure;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The expected port has a listener. Each surface says how to adopt it or
    /// move aside in its own spelling ([`PortConflict`]).
    #[error("port {port} is already in use by {holder}")]
    PortInUse { port: u16, holder: String },
    #[error("no server `{0}`; see status for the servers this runtime knows")]
    UnknownServer(String),
    #[error(
        "server `{0}` was adopted, not started by dshkit: it is never stopped or restarted, only released"
    )]
    NotOwned(String),
    #[error("`{0}` is not a loopback http URL with a port")]
    NotLoopback(String),
    #[error("nothing answers at {url}: {error}")]
    NoAnswer { url: String, error: String },
    #[error("the run profile is empty and the app is not a static site")]
    EmptyProfile,
    #[error("{dir} is not a directory")]
    NoDirectory { dir: PathBuf },
    #[error("failed to start `{argv}` in {dir}: {error}")]
    Spawn {
        argv: String,
        dir: PathBuf,
        error: String,
    },
    #[error("already managing {0} servers; stop one first")]
    TooMany(usize),
    /// The start ended, or is still going at the end of the wait, without a
    /// ready server; what the server printed is in the failure.
    #[error("{0}")]
    NotReady(Box<StartFailure>),
    #[error("server `{0}` was stopped before it was ready")]
    StoppedBeforeReady(String),
}

impl RuntimeError {
    /// A stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::PortInUse { .. } => "PORT_IN_USE",
            Self::UnknownServer(_) => "UNKNOWN_SERVER",
            Self::NotOwned(_) => "NOT_OWNED",
            Self::NotLoopback(_) => "NOT_LOOPBACK",
            Self::NoAnswer { .. } => "NO_ANSWER",
            Self::EmptyProfile => "EMPTY_PROFILE",
            Self::NoDirectory { .. } => "NO_DIRECTORY",
            Self::Spawn { .. } => "SPAWN_FAILED",
            Self::TooMany(_) => "TOO_MANY_SERVERS",
            Self::NotReady(failure) if failure.app_is_broken() => "EXITED_BEFORE_READY",
            Self::NotReady(_) | Self::StoppedBeforeReady(_) => "NOT_READY",
        }
    }

    /// Why a start ended without a ready server, when that is what happened.
    pub fn start_failure(&self) -> Option<&StartFailure> {
        match self {
            Self::NotReady(failure) => Some(failure),
            _ => None,
        }
    }
}
