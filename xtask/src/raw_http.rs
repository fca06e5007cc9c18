//! A blocking HTTP/1.1 client over one kept-alive loopback connection, for timing
//! MCP servers over Streamable HTTP the way the stdio rows are timed: one write per
//! request, the reply read straight from the socket, nothing else on the clock.
//! It reads `Content-Length` and chunked bodies (what a JSON answer and an SSE
//! stream that ends with the reply come as) and nothing more.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, bail};

/// Longest a reply may take before the benchmark fails instead of hanging.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest reply head or body read.
const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// One connection to `http://HOST:PORT/PATH`.
pub(crate) struct RawHttp {
    host: String,
    path: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    request: Vec<u8>,
}

/// A reply: its status, session header and body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl RawHttp {
    pub(crate) fn connect(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("not an http:// URL: {url}"))?;
        let (host, path) = rest
            .split_once('/')
            .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
        let stream = TcpStream::connect(host).with_context(|| format!("connect to {host}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        Ok(Self {
            host: host.to_owned(),
            path,
            reader: BufReader::with_capacity(64 * 1024, stream.try_clone()?),
            writer: stream,
            request: Vec::with_capacity(4096),
        })
    }

    /// Formats a POST of `body` with `headers`, for [`Self::exchange`] to send.
    pub(crate) fn prepare(&mut self, headers: &[(&str, &str)], body: &[u8]) -> anyhow::Result<()> {
        self.request.clear();
        write!(
            self.request,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            body.len()
        )?;
        for (name, value) in headers {
            write!(self.request, "{name}: {value}\r\n")?;
        }
        self.request.extend_from_slice(b"\r\n");
        self.request.extend_from_slice(body);
        Ok(())
    }

    /// Sends the prepared request in one write and reads the whole reply.
    pub(crate) fn exchange(&mut self) -> anyhow::Result<Reply> {
        self.writer.write_all(&self.request)?;
        self.read_reply()
    }

    fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        self.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        let mut session = None;
        loop {
            line.clear();
            self.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                bail!("not a header: {header:?}");
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>()?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.to_owned());
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.read_line(&mut line)?;
                let size = line.trim_end().split(';').next().unwrap_or_default();
                let size = usize::from_str_radix(size, 16).with_context(|| format!("chunk size {line:?}"))?;
                if body.len() + size > MAX_REPLY_BYTES {
                    bail!("reply larger than {MAX_REPLY_BYTES} bytes");
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                line.clear();
                self.read_line(&mut line)?;
                if size == 0 {
                    break;
                }
            }
        } else if let Some(length) = length {
            if length > MAX_REPLY_BYTES {
                bail!("reply larger than {MAX_REPLY_BYTES} bytes");
            }
            body.resize(length, 0);
            self.reader.read_exact(&mut body)?;
        } else {
            bail!("a reply with neither Content-Length nor chunked encoding (status {status})");
        }
        Ok(Reply {
            status,
            session,
            body,
        })
    }

    /// Reads one line of at most [`MAX_REPLY_BYTES`].
    fn read_line(&mut self, line: &mut String) -> anyhow::Result<()> {
        let limit = u64::try_from(MAX_REPLY_BYTES)?;
        if (&mut self.reader).take(limit).read_line(line)? == 0 {
            bail!("the server closed the connection");
        }
        if !line.ends_with('\n') {
            bail!("reply line longer than {MAX_REPLY_BYTES} bytes, or cut off");
        }
        Ok(())
    }
}
