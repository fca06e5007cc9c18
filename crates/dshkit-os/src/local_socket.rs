//! A local stream socket to another process on this machine: a Unix socket at
//! a path, or a Windows named pipe (`\\.\pipe\…`), which is what Node's
//! `net.createServer().listen(path)` makes on each platform.

use std::path::Path;
use std::time::Duration;

#[cfg(unix)]
pub type ReadHalf = tokio::net::unix::OwnedReadHalf;
#[cfg(unix)]
pub type WriteHalf = tokio::net::unix::OwnedWriteHalf;
#[cfg(windows)]
pub type ReadHalf = tokio::io::ReadHalf<tokio::net::windows::named_pipe::NamedPipeClient>;
#[cfg(windows)]
pub type WriteHalf = tokio::io::WriteHalf<tokio::net::windows::named_pipe::NamedPipeClient>;

/// Longest a connect waits for a named pipe whose every instance is taken
/// (`ERROR_PIPE_BUSY`) to offer one; then it fails with that error. A Unix
/// socket queues a connect itself.
pub const BUSY_PIPE_WAIT: Duration = Duration::from_secs(5);

/// Connects to the socket or pipe at `path` and splits it for a reader task and
/// a writer.
pub async fn connect(path: &Path) -> std::io::Result<(ReadHalf, WriteHalf)> {
    #[cfg(unix)]
    {
        Ok(tokio::net::UnixStream::connect(path).await?.into_split())
    }
    #[cfg(windows)]
    {
        Ok(tokio::io::split(open_pipe(path).await?))
    }
}

/// Opens a client of the pipe at `path`. A pipe whose every instance is taken
/// is waited for with `WaitNamedPipeW` (in a blocking task) until an instance
/// is free, at most [`BUSY_PIPE_WAIT`] in all; another client may take the
/// freed instance first, so the open is tried again.
#[cfg(windows)]
async fn open_pipe(path: &Path) -> std::io::Result<tokio::net::windows::named_pipe::NamedPipeClient> {
    use std::os::windows::ffi::OsStrExt as _;

    let busy = i32::try_from(windows_sys::Win32::Foundation::ERROR_PIPE_BUSY).unwrap_or(i32::MAX);
    let deadline = std::time::Instant::now() + BUSY_PIPE_WAIT;
    loop {
        match tokio::net::windows::named_pipe::ClientOptions::new().open(path) {
            Err(error) if error.raw_os_error() == Some(busy) => {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(error);
                }
                let name: Vec<u16> = path.as_os_str().encode_wide().chain(Some(0)).collect();
                let ms = u32::try_from(left.as_millis()).unwrap_or(u32::MAX).max(1);
                let freed = tokio::task::spawn_blocking(move || wait_named_pipe(&name, ms))
                    .await
                    .unwrap_or(false);
                if !freed {
                    // Timed out or the pipe went away: the last try says which.
                    return tokio::net::windows::named_pipe::ClientOptions::new().open(path);
                }
            }
            other => return other,
        }
    }
}

/// `WaitNamedPipeW`: whether an instance of the pipe `name` (NUL-terminated
/// UTF-16) became free within `ms`.
#[cfg(windows)]
#[expect(unsafe_code, reason = "WaitNamedPipeW is a C call")]
fn wait_named_pipe(name: &[u16], ms: u32) -> bool {
    debug_assert_eq!(name.last(), Some(&0));
    // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the call.
    unsafe { windows_sys::Win32::System::Pipes::WaitNamedPipeW(name.as_ptr(), ms) != 0 }
}

#[cfg(all(test, windows))]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::windows::named_pipe::ServerOptions;

    use super::*;

    #[tokio::test]
    async fn a_pipe_whose_every_instance_is_taken_is_waited_for_until_one_is_free() {
        let name = format!(r"\\.\pipe\dshkit-os-busy-{}", std::process::id());
        let first = ServerOptions::new()
            .first_pipe_instance(true)
            .create(&name)
            .unwrap();
        let (_read, _write) = connect(Path::new(&name)).await.expect("the first instance");
        first.connect().await.unwrap();
        // The only instance is taken: a second client finds the pipe busy.
        let second = tokio::spawn({
            let name = name.clone();
            async move { connect(Path::new(&name)).await }
        });
        // Not a synchronisation: the server makes its next instance a while
        // later, so that the client above meets a busy pipe first (without the
        // wait it fails at once with ERROR_PIPE_BUSY).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut next = ServerOptions::new().create(&name).unwrap();
        let (mut read, mut write) = tokio::time::timeout(BUSY_PIPE_WAIT, second)
            .await
            .expect("the wait ends once an instance is free")
            .unwrap()
            .expect("connected to the next instance");
        next.connect().await.unwrap();
        write.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        next.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        next.write_all(b"pong").await.unwrap();
        read.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"pong");
    }
}
