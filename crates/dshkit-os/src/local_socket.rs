//! A local stream socket to another process on this machine: a Unix socket at
//! a path, or a Windows named pipe (`\\.\pipe\…`), which is what Node's
//! `net.createServer().listen(path)` makes on each platform.

use std::path::Path;

#[cfg(unix)]
pub type ReadHalf = tokio::net::unix::OwnedReadHalf;
#[cfg(unix)]
pub type WriteHalf = tokio::net::unix::OwnedWriteHalf;
#[cfg(windows)]
pub type ReadHalf = tokio::io::ReadHalf<tokio::net::windows::named_pipe::NamedPipeClient>;
#[cfg(windows)]
pub type WriteHalf = tokio::io::WriteHalf<tokio::net::windows::named_pipe::NamedPipeClient>;

/// Connects to the socket or pipe at `path` and splits it for a reader task and
/// a writer.
#[cfg_attr(
    windows,
    expect(clippy::unused_async, reason = "opening a pipe client does not wait")
)]
pub async fn connect(path: &Path) -> std::io::Result<(ReadHalf, WriteHalf)> {
    #[cfg(unix)]
    {
        Ok(tokio::net::UnixStream::connect(path).await?.into_split())
    }
    #[cfg(windows)]
    {
        let pipe = tokio::net::windows::named_pipe::ClientOptions::new().open(path)?;
        Ok(tokio::io::split(pipe))
    }
}
