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
