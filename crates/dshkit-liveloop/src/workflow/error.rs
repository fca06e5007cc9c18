//! The surfaces a text is for, and why a workflow did not come to a result.

use crate::detect::{ChooseError, DetectError};
use crate::preview::PreviewError;
use crate::runtime::RuntimeError;
use crate::verify::VerifyError;

/// Which surface a text is for: the CLI names its flags (`--app DIR`), MCP its
/// arguments (`app`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `dshkit detect|run|verify`.
    Cli,
    /// The `liveloop_*` tools.
    Mcp,
}

/// Why a workflow did not come to a result. A problem of the app itself is
/// never an error: it is a verdict in the report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The workspace cannot be walked.
    #[error(transparent)]
    Workspace(DetectError),
    /// A directory given is missing or resolves outside the workspace.
    #[error("{0}")]
    Outside(String),
    /// No single app to run: none, not the one named, or several.
    #[error(transparent)]
    Choose(ChooseError),
    /// The app's server was refused a start (its port is taken, no profile).
    #[error(transparent)]
    Start(RuntimeError),
    /// The runtime failed while a server was looked up.
    #[error(transparent)]
    Runtime(RuntimeError),
    /// Server `server` was started but the wait for it failed.
    #[error("{error}")]
    Waiting { server: String, error: RuntimeError },
    /// The preview for the verification could not be opened or found.
    #[error("{code}: {0}", code = .0.code())]
    Preview(PreviewError),
    /// The page named is no URL.
    #[error(transparent)]
    Page(VerifyError),
    /// The verification could not be run or its evidence not written.
    #[error(transparent)]
    Verify(VerifyError),
    /// A directory of the workspace cannot be resolved.
    #[error(transparent)]
    Io(std::io::Error),
    /// Evidence cannot be written (no evidence root, a failed write).
    #[error("{0}")]
    Evidence(String),
    /// The server named is starting or stopped, and never failed to start.
    #[error("{0}")]
    ServerNotReady(String),
    /// The target given cannot be verified as asked (the message says why).
    #[error("{0}")]
    Target(String),
}

impl WorkflowError {
    /// Whether the input is at fault (a page that is no URL, a target that
    /// cannot be verified as asked, an argument missing): a surface says so as
    /// invalid input.
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Self::Page(_) | Self::Target(_))
    }

    /// Whether something failed at run time (the runtime, the verification's
    /// evidence) rather than the input or the workspace being refused.
    pub fn is_runtime_failure(&self) -> bool {
        matches!(self, Self::Runtime(_) | Self::Waiting { .. } | Self::Verify(_))
    }
}
