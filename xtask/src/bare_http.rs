//! `cargo xtask bare-http`: the floor `bench mcp` times MCP over HTTP against, as
//! `cat` is the floor of its stdio rows. A blocking HTTP/1.1 responder on a
//! loopback port that answers every POST on a kept-alive connection at once: a
//! JSON-RPC result with the request's id, or 202 for a notification. No MCP, no
//! session, no parsing beyond the head and the id: what a round trip over
//! loopback TCP costs, wake-ups included.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use anyhow::{Context, bail};

/// Longest head line read.
const MAX_LINE_BYTES: u64 = 8 * 1024;
/// Largest request body read.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Prints `http://ADDR/mcp` once listening, then answers until killed.
pub(crate) fn serve() -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            if let Err(err) = answer(stream) {
                eprintln!("bare-http: {err:#}");
            }
        });
    }
    Ok(())
}

/// Answers the requests of one connection until the client closes it.
fn answer(stream: TcpStream) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut line = String::new();
    let mut body = Vec::new();
    let mut reply = Vec::new();
    loop {
        line.clear();
        if (&mut reader).take(MAX_LINE_BYTES).read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut length = 0;
        loop {
            line.clear();
            (&mut reader).take(MAX_LINE_BYTES).read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().context("Content-Length")?;
            }
        }
        if length > MAX_BODY_BYTES {
            bail!("a request body of {length} bytes (at most {MAX_BODY_BYTES})");
        }
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
        reply.clear();
        match id_of(&body) {
            Some(id) => {
                let result =
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"isError":false}}}}"#);
                write!(
                    reply,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{result}",
                    result.len()
                )?;
            }
            None => reply.extend_from_slice(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"),
        }
        writer.write_all(&reply)?;
    }
}

/// The value of a request's `"id"` as sent (the bench's ids are numbers and come
/// before any nested object); `None` for a notification.
fn id_of(body: &[u8]) -> Option<&str> {
    let key = b"\"id\":";
    let at = body.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &body[at..];
    let end = rest
        .iter()
        .position(|b| matches!(b, b',' | b'}'))
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok().map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_with_its_id_and_a_notification_has_none() {
        assert_eq!(
            id_of(br#"{"id":17,"jsonrpc":"2.0","method":"tools/call","params":{}}"#),
            Some("17")
        );
        assert_eq!(id_of(br#"{"jsonrpc":"2.0","method":"ping","id": 3}"#), Some("3"));
        assert_eq!(
            id_of(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
    }
}
