//! The runtime's error, with a stable code for programs and its class.

use std::path::PathBuf;

use dshkit_os::error::ErrorClass;

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
    /// The package manager cannot be started: not found, or an install layout
    /// the adapter does not know ([`dshkit_env::launch`]).
    /// Boxed: it names paths, which would make every runtime result large.
    #[error("{0}")]
    Launch(Box<dshkit_env::launch::LaunchError>),
}

impl From<dshkit_env::launch::LaunchError> for RuntimeError {
    fn from(error: dshkit_env::launch::LaunchError) -> Self {
        Self::Launch(Box::new(error))
    }
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
            Self::Launch(e) => e.code(),
        }
    }

    /// What the caller asked that the runtime will not do (a taken port, a
    /// server it does not know or own, a URL or directory it cannot use, a
    /// limit) is refused; a server that failed to start, answer or become ready
    /// is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::PortInUse { .. }
            | Self::UnknownServer(_)
            | Self::NotOwned(_)
            | Self::NotLoopback(_)
            | Self::EmptyProfile
            | Self::NoDirectory { .. }
            | Self::TooMany(_) => ErrorClass::Refused,
            Self::Launch(e) => e.class(),
            Self::NoAnswer { .. } | Self::Spawn { .. } | Self::NotReady(_) | Self::StoppedBeforeReady(_) => {
                ErrorClass::Runtime
            }
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

dshkit_os::classified!(RuntimeError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::failure::FailureCause;

    #[test]
    fn each_error_has_its_code_and_class() {
        use ErrorClass::{Refused, Runtime};
        let not_ready =
            |cause| RuntimeError::NotReady(Box::new(StartFailure::from_log(cause, [], Vec::new())));
        dshkit_os::error::assert_classified([
            (
                RuntimeError::PortInUse {
                    port: 5173,
                    holder: "node".into(),
                },
                "PORT_IN_USE",
                Refused,
            ),
            (
                RuntimeError::UnknownServer("s1".into()),
                "UNKNOWN_SERVER",
                Refused,
            ),
            (RuntimeError::NotOwned("s1".into()), "NOT_OWNED", Refused),
            (
                RuntimeError::NotLoopback("http://example.com".into()),
                "NOT_LOOPBACK",
                Refused,
            ),
            (
                RuntimeError::NoAnswer {
                    url: "http://127.0.0.1:1".into(),
                    error: "refused".into(),
                },
                "NO_ANSWER",
                Runtime,
            ),
            (RuntimeError::EmptyProfile, "EMPTY_PROFILE", Refused),
            (
                RuntimeError::NoDirectory {
                    dir: "/nowhere".into(),
                },
                "NO_DIRECTORY",
                Refused,
            ),
            (
                RuntimeError::Spawn {
                    argv: "npm run dev".into(),
                    dir: "/app".into(),
                    error: "not found".into(),
                },
                "SPAWN_FAILED",
                Runtime,
            ),
            (RuntimeError::TooMany(8), "TOO_MANY_SERVERS", Refused),
            (
                not_ready(FailureCause::Exited { code: Some(1) }),
                "EXITED_BEFORE_READY",
                Runtime,
            ),
            (
                not_ready(FailureCause::TimedOut {
                    after_secs: 60,
                    last_answer: None,
                    stopped: true,
                }),
                "NOT_READY",
                Runtime,
            ),
            (
                RuntimeError::StoppedBeforeReady("s1".into()),
                "NOT_READY",
                Runtime,
            ),
            (
                RuntimeError::Launch(Box::new(dshkit_env::launch::LaunchError::NotFound {
                    manager: "pnpm".into(),
                })),
                "PACKAGE_MANAGER_NOT_FOUND",
                Refused,
            ),
        ]);
    }
}
