//! The preview's own loopback proxy. Every connection of the preview's browser
//! context goes through it (loopback included), so what the request-stage policy
//! cannot see, chiefly WebSockets, is still decided: a tunnel or request to
//! anywhere but the preview origin (or an allowlisted public host) is refused.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::lookup;
use super::policy::{BlockReason, Decision, NetworkPolicy, is_public};

/// A connection the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A request for `url`.
    Request { url: String, reason: BlockReason },
    /// A socket (a tunnel, or a WebSocket upgrade) to `authority` (`host:port`,
    /// lowercase). Whose it is the proxy cannot tell: the browser opens tunnels
    /// of its own through a context's proxy too (a feature's check, a
    /// preconnect), so only a WebSocket the page opened there makes it the
    /// page's (see `Observations::refused_socket`).
    Socket { authority: String, reason: BlockReason },
}

/// Told of every connection the proxy refuses.
pub(crate) type Recorder = Arc<dyn Fn(Refusal) + Send + Sync>;

/// Largest request head the proxy reads (16 KiB).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Longest an unarmed proxy waits for the head of a request it will refuse.
const UNARMED_HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

const FORBIDDEN: &[u8] = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";

/// A running proxy; stops accepting when dropped. It refuses every connection
/// until it is [armed](PolicyProxy::arm) with its preview's policy: a context is
/// made with its proxy before anyone knows which origin it will preview.
#[derive(Debug)]
pub(crate) struct PolicyProxy {
    addr: SocketAddr,
    policy: Arc<OnceLock<NetworkPolicy>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PolicyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PolicyProxy {
    /// Serves on `127.0.0.1:0`, unarmed; `record` is told of every connection
    /// the policy refuses.
    pub(crate) async fn start(record: Recorder) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let policy = Arc::new(OnceLock::<NetworkPolicy>::new());
        let armed = Arc::clone(&policy);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let policy = armed.get().cloned();
                let record = Arc::clone(&record);
                tokio::spawn(async move {
                    let Some(policy) = policy else {
                        tracing::debug!("preview proxy refused a connection before its policy was set");
                        // Read the head first: closing on unread bytes would reset
                        // the connection instead of answering it.
                        let _ = tokio::time::timeout(UNARMED_HEAD_TIMEOUT, read_head(&mut client)).await;
                        let _ = client.write_all(FORBIDDEN).await;
                        return;
                    };
                    if let Err(err) = serve(client, &policy, &record).await {
                        tracing::debug!(%err, "preview proxy connection ended");
                    }
                });
            }
        });
        Ok(Self { addr, policy, task })
    }

    /// Sets the policy every later connection is decided by; the first one set
    /// stays.
    pub(crate) fn arm(&self, policy: NetworkPolicy) {
        if self.policy.set(policy).is_err() {
            tracing::warn!("a preview proxy was armed twice; its first policy stays");
        }
    }

    /// `http://127.0.0.1:PORT`, for `Target.createBrowserContext`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn serve(mut client: TcpStream, policy: &NetworkPolicy, record: &Recorder) -> std::io::Result<()> {
    // A relay forwards each piece as it comes: without this, a response's body
    // written after its head waits for the browser's delayed ACK (Nagle).
    client.set_nodelay(true)?;
    let (head, rest) = read_head(&mut client).await?;
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let upgrade = text.to_ascii_lowercase().contains("\r\nupgrade: websocket");

    if method == "CONNECT" {
        // A tunnel: the request-stage policy already vetted every http(s) request,
        // so a tunnel to a foreign place is a WebSocket (or another stream) it
        // never saw. Only the preview origin and allowlisted public hosts pass.
        let url = format!("ws://{target}/");
        let Some(address) = allowed_address(policy, &url, target, true, record).await else {
            return client.write_all(FORBIDDEN).await;
        };
        let mut upstream = connect(address).await?;
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }

    // An absolute-form request (`GET http://host:port/path HTTP/1.1`).
    let Ok(url) = url::Url::parse(target) else {
        return client
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
    };
    let checked = if upgrade {
        url.as_str().replacen("http", "ws", 1)
    } else {
        url.to_string()
    };
    let authority = format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(80)
    );
    let Some(address) = allowed_address(policy, &checked, &authority, upgrade, record).await else {
        return client.write_all(FORBIDDEN).await;
    };
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    // One request per upstream connection: a kept-alive client connection could
    // otherwise carry its next request to this host regardless of its target.
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("proxy-connection:") || (!upgrade && lower.starts_with("connection:")) {
            continue;
        }
        forwarded.push_str(line);
        forwarded.push_str("\r\n");
    }
    if !upgrade {
        forwarded.push_str("Connection: close\r\n");
    }
    forwarded.push_str("\r\n");
    let mut upstream = connect(address).await?;
    upstream.write_all(forwarded.as_bytes()).await?;
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// A connection to the previewed app, relaying without Nagle's delay.
async fn connect(address: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Decides `url` and returns the address to connect to: the checked one, so a
/// second DNS answer cannot differ from the one that passed (rebinding). A
/// refusal is told to `record` as a [`Refusal::Socket`] when `socket`.
async fn allowed_address(
    policy: &NetworkPolicy,
    url: &str,
    authority: &str,
    socket: bool,
    record: &Recorder,
) -> Option<SocketAddr> {
    let decided = lookup::decide(policy, url).await;
    if let Decision::Block(reason) = decided {
        let reason = match reason {
            BlockReason::OtherLoopbackOrigin { .. } | BlockReason::ExternalHost { .. }
                if url.starts_with("ws") =>
            {
                BlockReason::CrossOriginWebSocket { url: url.to_owned() }
            }
            other => other,
        };
        tracing::debug!(%url, ?reason, "preview proxy refused a connection");
        record(if socket {
            Refusal::Socket {
                authority: authority.to_ascii_lowercase(),
                reason,
            }
        } else {
            Refusal::Request {
                url: url.to_owned(),
                reason,
            }
        });
        return None;
    }
    let (host, port) = authority.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if host == "localhost" => IpAddr::from([127, 0, 0, 1]),
        Err(_) => {
            let addresses = lookup::resolve(policy, host, port).await.ok()?;
            // Connect only to an address that passes the same check.
            *addresses.iter().find(|ip| is_public(**ip))?
        }
    };
    Some(SocketAddr::new(ip, port))
}

/// Reads until the end of the request head; returns the head and any bytes after it.
async fn read_head(client: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before the request head ended",
            ));
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unarmed_proxy_refuses_every_connection() {
        let told = Arc::new(std::sync::Mutex::new(0));
        let count = Arc::clone(&told);
        let proxy = PolicyProxy::start(Arc::new(move |_| *count.lock().unwrap() += 1))
            .await
            .unwrap();
        for request in [
            "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
            "CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n",
        ] {
            let mut client = TcpStream::connect(proxy.addr).await.unwrap();
            client.write_all(request.as_bytes()).await.unwrap();
            let mut reply = Vec::new();
            client.read_to_end(&mut reply).await.unwrap();
            assert_eq!(reply, FORBIDDEN, "{request}");
        }
        assert_eq!(*told.lock().unwrap(), 0, "no policy decided them");
    }
}
