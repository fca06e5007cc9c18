//! One JSON-RPC frame on a stdio stream: a line, its newline included, of at
//! most [`MAX_FRAME_BYTES`]. The rule for every stdio stream Echo reads: the
//! client's, the recorded server's, the live server of a passthrough.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::error::EchoError;

/// Longest JSON-RPC line accepted from either side (16 MiB).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Reads one line (with its newline) into `line`; `Ok(false)` at end of input.
/// `what` names the stream in errors.
pub(crate) async fn read_frame(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    what: &'static str,
) -> Result<bool, EchoError> {
    line.clear();
    let n = reader
        .take(MAX_FRAME_BYTES as u64 + 1)
        .read_until(b'\n', line)
        .await
        .map_err(EchoError::io(what))?;
    if n > MAX_FRAME_BYTES {
        return Err(EchoError::FrameTooLong {
            stream: what,
            limit: MAX_FRAME_BYTES,
        });
    }
    Ok(n > 0)
}

/// [`read_frame`] from a blocking reader.
#[cfg(unix)]
pub(crate) fn read_frame_blocking(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    what: &'static str,
) -> Result<bool, EchoError> {
    use std::io::Read as _;
    line.clear();
    let mut limited = reader.take(MAX_FRAME_BYTES as u64 + 1);
    let n = std::io::BufRead::read_until(&mut limited, b'\n', line).map_err(EchoError::io(what))?;
    if n > MAX_FRAME_BYTES {
        return Err(EchoError::FrameTooLong {
            stream: what,
            limit: MAX_FRAME_BYTES,
        });
    }
    Ok(n > 0)
}

/// `message` as one line, its newline included.
pub(crate) fn json_line(message: &serde_json::Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("JSON serializes");
    line.push(b'\n');
    line
}

/// Writes `message` to `out` as one line and flushes it (the client's stdout,
/// or what a passthrough collects for an HTTP answer).
pub(crate) async fn write_message(
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
    message: &serde_json::Value,
) -> Result<(), EchoError> {
    use tokio::io::AsyncWriteExt as _;
    out.write_all(&json_line(message))
        .await
        .map_err(EchoError::io("the client's stdout"))?;
    out.flush().await.map_err(EchoError::io("the client's stdout"))
}
