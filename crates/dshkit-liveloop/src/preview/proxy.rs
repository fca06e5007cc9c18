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

/// Most header fields a request head may carry; a head with more is refused as
/// malformed (browsers send a few dozen).
const MAX_HEAD_FIELDS: usize = 128;

const FORBIDDEN: &[u8] = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
const BAD_REQUEST: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";

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
    let (head, rest) = match read_head(&mut client).await? {
        Head::Complete(head, rest) => (head, rest),
        Head::Malformed(err) => {
            tracing::debug!(%err, "preview proxy refused a malformed request head");
            return client.write_all(BAD_REQUEST).await;
        }
    };
    let (method, target) = (head.method.as_str(), head.target.as_str());
    let upgrade = head.is_websocket_upgrade();

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
        return client.write_all(BAD_REQUEST).await;
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
    let forwarded = head.forwarded(&path, upgrade);
    let mut upstream = connect(address).await?;
    upstream.write_all(&forwarded).await?;
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

/// A request head as the proxy read it.
#[derive(Debug, PartialEq, Eq)]
struct RequestHead {
    method: String,
    /// The request target: `host:port` for `CONNECT`, an absolute URL otherwise.
    target: String,
    /// The minor HTTP/1 version (`HTTP/1.0`, `HTTP/1.1`).
    minor_version: u8,
    /// The header fields, in order, each name as sent with its value.
    fields: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    /// Parses `buffer`: the head with its length (its final empty line
    /// included), `None` while it has not ended, or why it is not a request head.
    fn parse(buffer: &[u8]) -> Result<Option<(Self, usize)>, httparse::Error> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEAD_FIELDS];
        let mut request = httparse::Request::new(&mut fields);
        let httparse::Status::Complete(length) = request.parse(buffer)? else {
            return Ok(None);
        };
        // `parse` fills every part of a complete head.
        let head = Self {
            method: request.method.unwrap_or_default().to_owned(),
            target: request.path.unwrap_or_default().to_owned(),
            minor_version: request.version.unwrap_or(1),
            fields: request
                .headers
                .iter()
                .map(|field| (field.name.to_owned(), field.value.to_owned()))
                .collect(),
        };
        Ok(Some((head, length)))
    }

    /// It asks to become a WebSocket (`Upgrade: websocket`, in any case, alone
    /// or in a list).
    fn is_websocket_upgrade(&self) -> bool {
        self.fields.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("upgrade")
                && value.split(|b| *b == b',').any(|protocol| {
                    let name = protocol.split(|b| *b == b'/').next().unwrap_or_default();
                    name.trim_ascii().eq_ignore_ascii_case(b"websocket")
                })
        })
    }

    /// The head sent upstream: origin-form `path`, without the proxy's own
    /// fields and, unless it is an `upgrade`, closed after one response (one
    /// request per upstream connection: a kept-alive client connection could
    /// otherwise carry its next request to this host regardless of its target).
    fn forwarded(&self, path: &str, upgrade: bool) -> Vec<u8> {
        let mut out = format!("{} {path} HTTP/1.{}\r\n", self.method, self.minor_version).into_bytes();
        for (name, value) in &self.fields {
            if name.eq_ignore_ascii_case("proxy-connection")
                || (!upgrade && name.eq_ignore_ascii_case("connection"))
            {
                continue;
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        if !upgrade {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// What [`read_head`] read.
#[derive(Debug)]
enum Head {
    /// The head, and any bytes after it.
    Complete(RequestHead, Vec<u8>),
    /// Not an HTTP/1 request head.
    Malformed(httparse::Error),
}

/// Reads until the end of the request head, at most [`MAX_HEAD_BYTES`].
async fn read_head(client: &mut TcpStream) -> std::io::Result<Head> {
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
        match RequestHead::parse(&buffer) {
            Ok(Some((head, length))) if length <= MAX_HEAD_BYTES => {
                return Ok(Head::Complete(head, buffer.split_off(length)));
            }
            Ok(None) if buffer.len() <= MAX_HEAD_BYTES => {}
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "request head too large",
                ));
            }
            Err(err) => return Ok(Head::Malformed(err)),
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

    fn parsed(head: &str) -> RequestHead {
        let (head, length) = RequestHead::parse(head.as_bytes())
            .unwrap()
            .expect("a complete head");
        assert!(length > 0);
        head
    }

    #[test]
    fn a_head_is_complete_at_its_empty_line_and_what_follows_is_not_its() {
        let text = "POST http://127.0.0.1:9/a?b HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\n\r\nhi";
        let (head, length) = RequestHead::parse(text.as_bytes()).unwrap().unwrap();
        assert_eq!(&text[length..], "hi");
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "http://127.0.0.1:9/a?b");
        assert_eq!(head.minor_version, 1);
        assert_eq!(head.fields.len(), 2);
        assert_eq!(
            RequestHead::parse(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0").unwrap(),
            None,
            "not ended yet"
        );
    }

    #[test]
    fn malformed_heads_are_refused_instead_of_forwarded() {
        for head in [
            // A field line without a colon was forwarded verbatim.
            "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost 127.0.0.1:9\r\n\r\n",
            // A request line without a version was forwarded as HTTP/1.1.
            "GET http://127.0.0.1:9/\r\nHost: 127.0.0.1:9\r\n\r\n",
            // Whitespace before the colon makes the field another one upstream.
            "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost : 127.0.0.1:9\r\n\r\n",
            // A continuation line (obsolete folding).
            "GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n",
            // Not HTTP/1.
            "GET http://127.0.0.1:9/ HTTP/2.0\r\n\r\n",
            "\u{0}\u{1}\u{2}\r\n\r\n",
        ] {
            assert!(RequestHead::parse(head.as_bytes()).is_err(), "{head:?}");
        }
        let crowded = format!(
            "GET http://127.0.0.1:9/ HTTP/1.1\r\n{}\r\n",
            "X-A: a\r\n".repeat(MAX_HEAD_FIELDS + 1)
        );
        assert_eq!(
            RequestHead::parse(crowded.as_bytes()).unwrap_err(),
            httparse::Error::TooManyHeaders
        );
    }

    #[test]
    fn an_upgrade_to_websocket_is_recognized_however_it_is_spelled() {
        for upgrade in [
            "Upgrade: websocket",
            "upgrade:WebSocket",
            "UPGRADE:  h2c, websocket/13 ",
        ] {
            let head = parsed(&format!("GET http://127.0.0.1:9/ HTTP/1.1\r\n{upgrade}\r\n\r\n"));
            assert!(head.is_websocket_upgrade(), "{upgrade}");
        }
        for other in ["Upgrade: h2c", "X-Upgrade: websocket", "Connection: websocket"] {
            let head = parsed(&format!("GET http://127.0.0.1:9/ HTTP/1.1\r\n{other}\r\n\r\n"));
            assert!(!head.is_websocket_upgrade(), "{other}");
        }
    }

    #[test]
    fn the_forwarded_head_is_origin_form_without_the_proxys_fields_and_closes() {
        let head = parsed(
            "GET http://127.0.0.1:9/a HTTP/1.0\r\nHost: 127.0.0.1:9\r\nProxy-Connection: keep-alive\r\nconnection: keep-alive\r\nX-Bytes: \u{e9}\r\n\r\n",
        );
        assert_eq!(
            String::from_utf8(head.forwarded("/a", false)).unwrap(),
            "GET /a HTTP/1.0\r\nHost: 127.0.0.1:9\r\nX-Bytes: \u{e9}\r\nConnection: close\r\n\r\n"
        );
        let upgrade = parsed(
            "GET http://127.0.0.1:9/ws HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        );
        assert_eq!(
            String::from_utf8(upgrade.forwarded("/ws", true)).unwrap(),
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        );
    }

    /// A proxy armed for `http://127.0.0.1:1`, and the refusals it records.
    async fn armed_proxy() -> (PolicyProxy, Arc<std::sync::Mutex<Vec<Refusal>>>) {
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&told);
        let proxy = PolicyProxy::start(Arc::new(move |refusal| record.lock().unwrap().push(refusal)))
            .await
            .unwrap();
        let (origin, _) = super::super::policy::PreviewOrigin::of("http://127.0.0.1:1/").unwrap();
        proxy.arm(NetworkPolicy {
            origin,
            allow_hosts: Vec::new(),
            resolver: Arc::new(super::super::policy::SystemResolver),
            dns_timeout: super::super::policy::DEFAULT_DNS_TIMEOUT,
        });
        (proxy, told)
    }

    async fn exchange(proxy: &PolicyProxy, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut client = TcpStream::connect(proxy.addr).await?;
        client.write_all(request).await?;
        let mut reply = Vec::new();
        client.read_to_end(&mut reply).await?;
        Ok(reply)
    }

    #[tokio::test]
    async fn an_armed_proxy_answers_a_malformed_head_with_bad_request() {
        let (proxy, told) = armed_proxy().await;
        let reply = exchange(
            &proxy,
            b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost 127.0.0.1:9\r\n\r\n",
        )
        .await
        .unwrap();
        assert_eq!(reply, BAD_REQUEST);
        assert!(told.lock().unwrap().is_empty(), "nothing was decided");
    }

    #[tokio::test]
    async fn a_head_past_the_limit_gets_no_answer() {
        let (proxy, told) = armed_proxy().await;
        let mut request = b"GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: ".to_vec();
        request.resize(MAX_HEAD_BYTES + 1024, b'a');
        // Closed unanswered (or reset, with the rest unread).
        let reply = exchange(&proxy, &request).await;
        assert!(
            reply.as_ref().is_err() || reply.as_ref().unwrap().is_empty(),
            "{reply:?}"
        );
        assert!(told.lock().unwrap().is_empty());
    }

    /// Regression: an `Upgrade:websocket` field (no space after the colon) was
    /// not seen as an upgrade, so the socket was decided as a plain request.
    #[tokio::test]
    async fn a_websocket_upgrade_without_a_space_is_refused_as_a_socket() {
        let (proxy, told) = armed_proxy().await;
        let reply = exchange(
            &proxy,
            b"GET http://127.0.0.1:9/ws HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: Upgrade\r\nUpgrade:websocket\r\n\r\n",
        )
        .await
        .unwrap();
        assert_eq!(reply, FORBIDDEN);
        assert_eq!(
            *told.lock().unwrap(),
            [Refusal::Socket {
                authority: "127.0.0.1:9".to_owned(),
                reason: BlockReason::CrossOriginWebSocket {
                    url: "ws://127.0.0.1:9/ws".to_owned()
                },
            }]
        );
    }
}
