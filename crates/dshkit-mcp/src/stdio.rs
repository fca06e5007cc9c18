//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout. Nothing else
//! may write to stdout while it runs; logs go to stderr.

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::server::DshkitServer;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    #[error("MCP handshake over stdio failed")]
    Handshake(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("MCP stdio session ended with an error")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StdioError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Handshake(_) => "MCP_HANDSHAKE_FAILED",
            Self::Session(_) => "MCP_SESSION_FAILED",
        }
    }

    /// The transport failed while it ran.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Runtime
    }
}

dshkit_os::classified!(StdioError);

/// Serves one client on stdin/stdout until stdin closes or `shutdown` fires.
pub async fn serve_stdio(server: DshkitServer, shutdown: CancellationToken) -> Result<(), StdioError> {
    let running = server
        .clone()
        .serve_with_ct(rmcp::transport::stdio_pipes(), shutdown)
        .await
        .map_err(|e| StdioError::Handshake(Box::new(e)))?;
    let reason = running
        .waiting()
        .await
        .map_err(|e| StdioError::Session(Box::new(e)))?;
    tracing::info!(?reason, "MCP stdio session ended");
    Ok(())
}

/// This process's stdin and stdout as async streams: non-blocking Linux pipes when
/// both are pipes (no thread hand-off per read or write), the blocking handles
/// otherwise. For commands that speak MCP frames themselves (`dshkit echo`).
pub fn stdio_streams() -> (rmcp::transport::io::StdioReader, rmcp::transport::io::StdioWriter) {
    rmcp::transport::stdio_pipes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_is_a_runtime_failure() {
        let cause = || Box::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        let table = [
            (StdioError::Handshake(cause()), "MCP_HANDSHAKE_FAILED"),
            (StdioError::Session(cause()), "MCP_SESSION_FAILED"),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), dshkit_os::error::ErrorClass::Runtime, "{error}");
        }
    }
}
