//! Echo's errors, each with a stable code for programs and a class that says
//! what it means for whoever ran the command (the binary maps each class to its
//! exit code).

use std::path::PathBuf;

pub use dshkit_os::error::ErrorClass;

/// Echo's name for [`ErrorClass`]: every crate's errors answer in the one
/// shared class, [`CassetteError::kind`] and the like return it.
pub type ErrorKind = ErrorClass;

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

    /// A cassette that cannot be read (missing, unreadable, damaged or of a
    /// newer format), or that a recording would overwrite, is refused input;
    /// one that cannot be written failed at run time.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Io { action, .. } if !action.reads() => ErrorClass::Runtime,
            _ => ErrorClass::Refused,
        }
    }

    /// The same as [`Self::class`].
    pub fn kind(&self) -> ErrorKind {
        self.class()
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
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    #[error("{url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("--ca-file/SSL_CERT_FILE {path}: {reason}")]
    CaFile { path: PathBuf, reason: String },
    #[error("cannot set up TLS for {url}: {error}")]
    TlsSetup { url: String, error: String },
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
            Self::Unreachable(e) => e.code(),
            Self::BadUrl { .. } => "BAD_URL",
            Self::CaFile { .. } => "CA_FILE_UNREADABLE",
            Self::TlsSetup { .. } => "TLS_SETUP_FAILED",
        }
    }

    /// A cassette's errors are its own ([`CassetteError::class`]); a
    /// passthrough without the server's argv, a CA file that cannot be used and
    /// TLS without roots are refused; a live server that cannot be reached is
    /// [`ErrorClass::Unreachable`]; the rest failed at run time.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Cassette(e) => e.class(),
            Self::NoLiveServer | Self::BadUrl { .. } | Self::CaFile { .. } | Self::TlsSetup { .. } => {
                ErrorClass::Refused
            }
            Self::Unreachable(_) => ErrorClass::Unreachable,
            Self::Spawn { .. } | Self::Io { .. } | Self::FrameTooLong { .. } => ErrorClass::Runtime,
        }
    }

    /// The same as [`Self::class`].
    pub fn kind(&self) -> ErrorKind {
        self.class()
    }

    /// The error of an I/O failure on `what` (a stream, a thread), for `map_err`.
    pub(crate) fn io(what: &'static str) -> impl Fn(std::io::Error) -> Self {
        move |e| Self::Io {
            what,
            error: e.to_string(),
        }
    }
}

/// Why a live server could not be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnreachableCause {
    /// Nothing listens on the port (the connection was refused).
    Refused,
    /// The host name did not resolve.
    Dns,
    /// The server's TLS certificate is not trusted (unknown CA, expired, or
    /// made for another name).
    Certificate,
    /// The TLS handshake failed for another reason.
    Tls,
    /// No connection within the connect timeout.
    TimedOut,
    /// The connection failed otherwise.
    Other,
}

/// A live server that could not be reached: its URL, why, and what the
/// connection's layers said. Never reported as a missing answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot reach {url}: {}", self.explain())]
pub struct Unreachable {
    pub url: String,
    pub cause: UnreachableCause,
    /// The causes below the client's own words (`tcp connect error: Connection
    /// refused (os error 111)`, `invalid peer certificate: UnknownIssuer`).
    pub detail: String,
}

impl Unreachable {
    /// A stable machine-readable code, one per cause.
    pub fn code(&self) -> &'static str {
        match self.cause {
            UnreachableCause::Refused => "UNREACHABLE_REFUSED",
            UnreachableCause::Dns => "UNREACHABLE_DNS",
            UnreachableCause::Certificate => "UNREACHABLE_CERTIFICATE",
            UnreachableCause::Tls => "UNREACHABLE_TLS",
            UnreachableCause::TimedOut => "UNREACHABLE_TIMEOUT",
            UnreachableCause::Other => "UNREACHABLE",
        }
    }

    /// Always [`ErrorClass::Unreachable`].
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Unreachable
    }

    fn explain(&self) -> String {
        let detail = &self.detail;
        match self.cause {
            UnreachableCause::Refused => {
                format!("the connection was refused ({detail}); is the server running on that port?")
            }
            UnreachableCause::Dns => format!("the host name did not resolve ({detail})"),
            UnreachableCause::Certificate => format!(
                "its TLS certificate is not trusted ({detail}); pass its CA with --ca-file PATH or SSL_CERT_FILE"
            ),
            UnreachableCause::Tls => format!("the TLS handshake failed ({detail})"),
            UnreachableCause::TimedOut => format!("no connection within the connect timeout ({detail})"),
            UnreachableCause::Other => format!("the connection failed ({detail})"),
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
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Refused
    }

    /// The same as [`Self::class`].
    pub fn kind(&self) -> ErrorKind {
        self.class()
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
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoLeadingSlash(_) => "POINTER_NO_LEADING_SLASH",
            Self::BadEscape(_) => "POINTER_BAD_ESCAPE",
            Self::WholeAnswer => "POINTER_WHOLE_ANSWER",
        }
    }

    /// A pointer that is none is refused input.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Refused
    }

    /// The same as [`Self::class`].
    pub fn kind(&self) -> ErrorKind {
        self.class()
    }
}

dshkit_os::classified!(CassetteError, EchoError, Unreachable, ContractError, PointerError);

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
            assert_eq!(io(action).class(), ErrorClass::Refused, "{action}");
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
            assert_eq!(io(action).class(), ErrorClass::Runtime, "{action}");
            assert_eq!(EchoError::from(io(action)).class(), ErrorClass::Runtime);
            assert_eq!(io(action).code(), "CASSETTE_WRITE_FAILED");
        }
    }

    #[test]
    fn each_cassette_error_has_its_code_and_class_wherever_it_is_wrapped() {
        let table = [
            (CassetteError::Exists("c.jsonl".into()), "CASSETTE_EXISTS"),
            (
                CassetteError::FutureVersion {
                    path: "c.jsonl".into(),
                    found: 9,
                    newest: 2,
                },
                "CASSETTE_FUTURE_VERSION",
            ),
            (
                CassetteError::NoHeader {
                    path: "c.jsonl".into(),
                    reason: "empty".into(),
                },
                "CASSETTE_NO_HEADER",
            ),
            (
                CassetteError::BadRecord {
                    path: "c.jsonl".into(),
                    line: 2,
                    reason: "x".into(),
                },
                "CASSETTE_DAMAGED",
            ),
            (io(Action::Read), "CASSETTE_UNREADABLE"),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
            assert_eq!(error.kind(), error.class(), "{error}");
            let echo = EchoError::from(error);
            assert_eq!((echo.code(), echo.class()), (code, ErrorClass::Refused), "{echo}");
        }
        let contract = ContractError::from(io(Action::Open));
        assert_eq!(contract.code(), "CASSETTE_UNREADABLE");
        assert_eq!(contract.class(), ErrorClass::Refused);
    }

    #[test]
    fn each_echo_error_has_its_code_and_class() {
        let table = [
            (
                EchoError::Spawn {
                    argv: "server".into(),
                    error: "not found".into(),
                },
                "SPAWN_FAILED",
                ErrorClass::Runtime,
            ),
            (
                EchoError::io("a pipe")(std::io::ErrorKind::BrokenPipe.into()),
                "IO_FAILED",
                ErrorClass::Runtime,
            ),
            (
                EchoError::FrameTooLong {
                    stream: "stdin",
                    limit: 16,
                },
                "FRAME_TOO_LONG",
                ErrorClass::Runtime,
            ),
            (EchoError::NoLiveServer, "NO_LIVE_SERVER", ErrorClass::Refused),
            (
                EchoError::BadUrl {
                    url: "ftp://x".into(),
                    reason: "not http".into(),
                },
                "BAD_URL",
                ErrorClass::Refused,
            ),
            (
                EchoError::CaFile {
                    path: "ca.pem".into(),
                    reason: "not found".into(),
                },
                "CA_FILE_UNREADABLE",
                ErrorClass::Refused,
            ),
            (
                EchoError::TlsSetup {
                    url: "https://x/mcp".into(),
                    error: "no roots".into(),
                },
                "TLS_SETUP_FAILED",
                ErrorClass::Refused,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.kind(), class, "{error}");
        }
    }

    #[test]
    fn an_unreachable_server_has_a_code_per_cause_its_own_class_and_names_its_url() {
        let table = [
            (
                UnreachableCause::Refused,
                "UNREACHABLE_REFUSED",
                "is the server running",
            ),
            (UnreachableCause::Dns, "UNREACHABLE_DNS", "did not resolve"),
            (
                UnreachableCause::Certificate,
                "UNREACHABLE_CERTIFICATE",
                "--ca-file PATH or SSL_CERT_FILE",
            ),
            (UnreachableCause::Tls, "UNREACHABLE_TLS", "TLS handshake failed"),
            (
                UnreachableCause::TimedOut,
                "UNREACHABLE_TIMEOUT",
                "connect timeout",
            ),
            (UnreachableCause::Other, "UNREACHABLE", "connection failed"),
        ];
        for (cause, code, words) in table {
            let error = EchoError::from(Unreachable {
                url: "https://127.0.0.1:9/mcp".into(),
                cause,
                detail: "what the layers said".into(),
            });
            assert_eq!((error.code(), error.class()), (code, ErrorClass::Unreachable));
            let text = error.to_string();
            assert!(
                text.starts_with("cannot reach https://127.0.0.1:9/mcp: "),
                "{text}"
            );
            assert!(
                text.contains(words) && text.contains("what the layers said"),
                "{text}"
            );
        }
    }

    #[test]
    fn every_contract_and_pointer_error_is_refused_with_its_code() {
        let contracts = [
            (
                ContractError::Io {
                    path: "tools.json".into(),
                    source: std::io::ErrorKind::NotFound.into(),
                },
                "CONTRACT_UNREADABLE",
            ),
            (
                ContractError::FutureVersion {
                    path: "tools.json".into(),
                    found: 9,
                },
                "CONTRACT_FUTURE_VERSION",
            ),
        ];
        for (error, code) in contracts {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
        let pointers = [
            (
                PointerError::NoLeadingSlash("a".into()),
                "POINTER_NO_LEADING_SLASH",
            ),
            (PointerError::BadEscape("/~2".into()), "POINTER_BAD_ESCAPE"),
            (PointerError::WholeAnswer, "POINTER_WHOLE_ANSWER"),
        ];
        for (error, code) in pointers {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
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
