//! Echo's errors, each with a stable code for programs and a kind that says
//! what it means for whoever ran the command (the binary maps each kind to its
//! exit code).

use std::path::PathBuf;

/// What an error means for whoever asked: the binary maps each kind to a
/// documented exit code (`Refused`: 3, `Runtime`: 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input cannot be used as given: a cassette missing, unreadable,
    /// damaged or of a newer format, a recording that would overwrite one in
    /// mode `once`, a passthrough without the real server's argv.
    Refused,
    /// Something failed while it ran: a write, a transport, the server.
    Runtime,
}

/// What an I/O error on a cassette was doing, as its message says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Open,
    Read,
    ReadInteraction,
    Create,
    OpenForAppending,
    Append,
    Sync,
    RenameIntoPlace,
    /// Writing a new version of the whole file (temporary file, sync, rename).
    Replace,
}

impl Action {
    /// Whether it reads the cassette (failing, the cassette cannot be used)
    /// rather than writes it.
    pub fn reads(self) -> bool {
        matches!(self, Self::Open | Self::Read | Self::ReadInteraction)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Read => "read",
            Self::ReadInteraction => "read a recorded interaction",
            Self::Create => "create",
            Self::OpenForAppending => "open for appending",
            Self::Append => "append",
            Self::Sync => "sync",
            Self::RenameIntoPlace => "rename into place",
            Self::Replace => "write its new version",
        })
    }
}

/// A cassette that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    #[error("{path}: failed to {action}: {source}")]
    Io {
        path: PathBuf,
        action: Action,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: cassette format version {found} is newer than this dshkit reads ({newest}); upgrade dshkit"
    )]
    FutureVersion {
        path: PathBuf,
        found: u64,
        /// The newest version this build reads.
        newest: u32,
    },
    #[error("{path}: the first line is not a cassette header ({reason})")]
    NoHeader { path: PathBuf, reason: String },
    #[error("{path}:{line}: not a JSON record: {reason}")]
    BadRecord {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{0} already exists; record mode `once` never overwrites (use --mode all or new_episodes)")]
    Exists(PathBuf),
}

impl CassetteError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { action, .. } if action.reads() => "CASSETTE_UNREADABLE",
            Self::Io { .. } => "CASSETTE_WRITE_FAILED",
            Self::FutureVersion { .. } => "CASSETTE_FUTURE_VERSION",
            Self::NoHeader { .. } => "CASSETTE_NO_HEADER",
            Self::BadRecord { .. } => "CASSETTE_DAMAGED",
            Self::Exists(_) => "CASSETTE_EXISTS",
        }
    }

    /// A cassette that cannot be read, or that a recording would overwrite, is
    /// refused input; one that cannot be written failed at run time.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Io { action, .. } if !action.reads() => ErrorKind::Runtime,
            _ => ErrorKind::Refused,
        }
    }
}

/// What went wrong while recording, replaying or verifying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EchoError {
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    #[error("failed to start the server `{argv}`: {error}")]
    Spawn { argv: String, error: String },
    #[error("I/O on {what}: {error}")]
    Io { what: &'static str, error: String },
    #[error("a frame longer than {limit} bytes on {stream}")]
    FrameTooLong { stream: &'static str, limit: usize },
    #[error("passthrough needs the real server's argv")]
    NoLiveServer,
}

impl EchoError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Cassette(e) => e.code(),
            Self::Spawn { .. } => "SPAWN_FAILED",
            Self::Io { .. } => "IO_FAILED",
            Self::FrameTooLong { .. } => "FRAME_TOO_LONG",
            Self::NoLiveServer => "NO_LIVE_SERVER",
        }
    }

    /// See [`ErrorKind`]: a cassette's errors are its own
    /// ([`CassetteError::kind`]), a passthrough without the server's argv is
    /// refused, the rest failed at run time.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Cassette(e) => e.kind(),
            Self::NoLiveServer => ErrorKind::Refused,
            Self::Spawn { .. } | Self::Io { .. } | Self::FrameTooLong { .. } => ErrorKind::Runtime,
        }
    }

    /// The error of an I/O failure on `what` (a stream, a thread), for `map_err`.
    pub(crate) fn io(what: &'static str) -> impl Fn(std::io::Error) -> Self {
        move |e| Self::Io {
            what,
            error: e.to_string(),
        }
    }
}

/// A tool contract (a snapshot or a cassette's tool listing) that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: contract format {found} is newer than this dshkit reads")]
    FutureVersion { path: PathBuf, found: u64 },
    #[error(transparent)]
    Cassette(#[from] CassetteError),
}

impl ContractError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "CONTRACT_UNREADABLE",
            Self::FutureVersion { .. } => "CONTRACT_FUTURE_VERSION",
            Self::Cassette(e) => e.code(),
        }
    }

    /// A contract is only ever read: every error is refused input.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Refused
    }
}

/// Why a text is no JSON pointer `--ignore` takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PointerError {
    #[error("`{0}` is not a JSON pointer: it starts with `/`, e.g. /result/content/0/text")]
    NoLeadingSlash(String),
    #[error("`{0}` is not a JSON pointer: `~` is written `~0` and `/` inside a name `~1`")]
    BadEscape(String),
    #[error("the empty pointer names the whole answer: ignoring it would compare nothing")]
    WholeAnswer,
}

impl PointerError {
    /// A pointer that is none is refused input.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(action: Action) -> CassetteError {
        CassetteError::Io {
            path: "c.jsonl".into(),
            action,
            source: std::io::ErrorKind::PermissionDenied.into(),
        }
    }

    #[test]
    fn a_cassette_that_cannot_be_read_is_refused_and_one_that_cannot_be_written_a_runtime_failure() {
        for action in [Action::Open, Action::Read, Action::ReadInteraction] {
            assert_eq!(io(action).kind(), ErrorKind::Refused, "{action}");
            assert_eq!(io(action).code(), "CASSETTE_UNREADABLE");
        }
        for action in [
            Action::Create,
            Action::OpenForAppending,
            Action::Append,
            Action::Sync,
            Action::RenameIntoPlace,
            Action::Replace,
        ] {
            assert_eq!(io(action).kind(), ErrorKind::Runtime, "{action}");
            assert_eq!(EchoError::from(io(action)).kind(), ErrorKind::Runtime);
            assert_eq!(io(action).code(), "CASSETTE_WRITE_FAILED");
        }
        let refused = [
            CassetteError::Exists("c.jsonl".into()),
            CassetteError::FutureVersion {
                path: "c.jsonl".into(),
                found: 9,
                newest: 2,
            },
            CassetteError::NoHeader {
                path: "c.jsonl".into(),
                reason: "empty".into(),
            },
            CassetteError::BadRecord {
                path: "c.jsonl".into(),
                line: 2,
                reason: "x".into(),
            },
        ];
        for error in refused {
            let code = error.code();
            let echo = EchoError::from(error);
            assert_eq!(echo.kind(), ErrorKind::Refused, "{echo}");
            assert_eq!(echo.code(), code);
        }
        assert_eq!(EchoError::NoLiveServer.kind(), ErrorKind::Refused);
        let too_long = EchoError::FrameTooLong {
            stream: "stdin",
            limit: 16,
        };
        assert_eq!(too_long.kind(), ErrorKind::Runtime);
        assert_eq!(
            EchoError::io("a pipe")(std::io::ErrorKind::BrokenPipe.into()).code(),
            "IO_FAILED"
        );
    }

    #[test]
    fn messages_name_the_file_and_what_failed() {
        assert_eq!(
            io(Action::ReadInteraction).to_string(),
            "c.jsonl: failed to read a recorded interaction: permission denied"
        );
        assert!(
            io(Action::Replace)
                .to_string()
                .starts_with("c.jsonl: failed to write its new version:")
        );
    }
}
