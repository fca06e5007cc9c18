//! Streamable HTTP transport, secured and bounded by default: loopback bind,
//! bearer token, Host and Origin validation against DNS rebinding, a body cap and
//! time limits, bounded sessions ([`sessions`]) and connections ([`connections`]).

mod connections;
mod first_answer;
mod sessions;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use dshkit_os::loopback::LoopbackNames;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

pub use self::connections::{ConnectionLimits, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
use self::connections::{Connections, hold_until_sent};
pub use self::sessions::{
    DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE, HIBERNATE_AFTER, RETRY_AFTER_SECS, SessionLimits,
};
use self::sessions::{EndHook, SessionBook};
use crate::server::{DshkitServer, session_subject};
use crate::token::Token;

/// Largest accepted request body (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Longest a request may take to produce its response head. Tool calls are bounded
/// separately by the server's tool timeout, which this exceeds by a margin.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(330);
/// Longest the body of a request may take to arrive once its head has.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an oversized body is read and discarded before answering 413
/// (16 MiB); a larger upload is cut off.
pub const MAX_DRAIN_BYTES: usize = 16 * 1024 * 1024;
/// Interval of SSE keep-alive comments on open streams.
pub(crate) const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How to serve MCP over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub token: Token,
    /// Required to bind an address that is not loopback.
    pub allow_remote: bool,
    /// Extra `Host` names accepted besides the loopback ones (for remote use).
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins accepted besides the loopback ones.
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    pub body_read_timeout: Duration,
    pub request_timeout: Duration,
    pub sessions: SessionLimits,
    pub connections: ConnectionLimits,
}

impl HttpOptions {
    /// Loopback-only options with the default limits.
    pub fn loopback(addr: SocketAddr, token: Token) -> Self {
        Self {
            addr,
            token,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            sessions: SessionLimits::default(),
            connections: ConnectionLimits::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    #[error(
        "refusing to serve MCP on non-loopback address {0}: pass --allow-remote (and a token through --token-file or DSHKIT_MCP_TOKEN) if you really want this"
    )]
    NonLoopback(SocketAddr),
    #[error("failed to bind {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl HttpError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NonLoopback(_) => "NON_LOOPBACK_BIND",
            Self::Bind { .. } => "BIND_FAILED",
        }
    }

    /// Both are refused: an address dshkit will not serve on without
    /// `--allow-remote`, or one it cannot have (taken, or not this machine's).
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Refused
    }
}

dshkit_os::classified!(HttpError);

/// A running HTTP server.
pub struct HttpServer {
    local_addr: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    sessions: Arc<SessionBook>,
    rmcp_sessions: Arc<LocalSessionManager>,
    connections: Arc<Connections>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .field("open_sessions", &self.open_sessions())
            .field("open_connections", &self.open_connections())
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// MCP sessions open (awake or hibernating).
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// MCP sessions awake (with an rmcp worker); the others hibernate.
    pub async fn awake_sessions(&self) -> usize {
        self.rmcp_sessions.sessions.read().await.len()
    }

    /// HTTP connections open.
    pub fn open_connections(&self) -> usize {
        self.connections.len()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local_addr)
    }

    /// Waits until the server has stopped (after its shutdown token fired).
    pub async fn finished(self) -> std::io::Result<()> {
        self.task
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join)))
    }
}

/// What every request passes through, in order: the checks of [`guard_request`],
/// the path, then rmcp's Streamable HTTP service within the request time limit.
struct Guard {
    token: Token,
    names: LoopbackNames,
    max_body_bytes: usize,
    body_read_timeout: Duration,
    request_timeout: Duration,
    sessions: Arc<SessionBook>,
    rmcp_sessions: Arc<LocalSessionManager>,
    mcp: StreamableHttpService<DshkitServer, LocalSessionManager>,
}

impl Guard {
    /// Serves a request that passed the checks: `/mcp` (and below it, as a nested
    /// service is) goes to rmcp, anything else is 404; a response head that does
    /// not come within the request time limit is 408.
    async fn forward(&self, request: Request) -> Response {
        let path = request.uri().path();
        let ours = path
            .strip_prefix(MCP_PATH)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if !ours {
            return StatusCode::NOT_FOUND.into_response();
        }
        match tokio::time::timeout(self.request_timeout, self.mcp.handle(request)).await {
            Ok(response) => response.map(Body::new),
            Err(_elapsed) => StatusCode::REQUEST_TIMEOUT.into_response(),
        }
    }
}

/// Binds and starts serving; returns once the listener is ready.
pub async fn serve_http(
    server: DshkitServer,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<HttpServer, HttpError> {
    if !options.addr.ip().is_loopback() && !options.allow_remote {
        return Err(HttpError::NonLoopback(options.addr));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| HttpError::Bind {
            addr: options.addr,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| HttpError::Bind {
        addr: options.addr,
        source,
    })?;

    let names = LoopbackNames::new(
        local_addr.port(),
        (!local_addr.ip().is_loopback())
            .then(|| local_addr.to_string())
            .into_iter()
            .chain(options.allowed_hosts.iter().cloned()),
        options.allowed_origins.iter().cloned(),
    );

    // The book stops the worker of a session idle for HIBERNATE_AFTER (never one
    // with a response in flight) and keeps the session; rmcp restores it from
    // there on its next request. rmcp's own idle timer is off: it counts only
    // messages, so it would end a worker mid-call (a 60 s wait, a long verify).
    let mut rmcp_sessions = LocalSessionManager::default();
    rmcp_sessions.session_config.keep_alive = None;
    let rmcp_sessions = Arc::new(rmcp_sessions);
    let releaser = server.clone();
    let on_end: EndHook = Arc::new(move |id| {
        let server = releaser.clone();
        let subject = session_subject(id);
        tokio::spawn(async move { server.release_subject(&subject).await });
    });
    let book = SessionBook::new(options.sessions, on_end);
    let workers = Arc::clone(&rmcp_sessions);
    tokio::spawn(Arc::clone(&book).expire(
        async move |id: String| {
            let _ = workers.close_session(&id.into()).await;
        },
        shutdown.child_token(),
    ));

    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_json_response(true)
        .with_max_request_body_bytes(options.max_body_bytes)
        // Our guard validates Host and Origin first (with ports); rmcp's own check
        // stays on as a second line with the bare loopback names.
        .with_allowed_hosts(
            ["localhost", "127.0.0.1", "::1"]
                .into_iter()
                .map(str::to_owned)
                .chain(options.allowed_hosts.iter().cloned())
                .chain((!local_addr.ip().is_loopback()).then(|| local_addr.ip().to_string())),
        );
    config.session_store = Some(Arc::clone(&book) as _);
    let service: StreamableHttpService<DshkitServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&rmcp_sessions), config);

    let guard = Arc::new(Guard {
        token: options.token,
        names,
        max_body_bytes: options.max_body_bytes,
        body_read_timeout: options.body_read_timeout,
        request_timeout: options.request_timeout,
        sessions: Arc::clone(&book),
        rmcp_sessions: Arc::clone(&rmcp_sessions),
        mcp: service,
    });

    let connections = Arc::new(Connections::default());
    let task = tokio::spawn(connections::serve(
        listener,
        move |request| guard_request(Arc::clone(&guard), request),
        options.connections,
        Arc::clone(&connections),
        shutdown,
    ));
    tracing::info!(%local_addr, "MCP over Streamable HTTP ready");
    Ok(HttpServer {
        local_addr,
        task,
        sessions: book,
        rmcp_sessions,
        connections,
    })
}

/// Rejections, in order: Host or Origin (403), token (401), declared body size (413).
async fn guard_request(guard: Arc<Guard>, request: Request) -> Response {
    if let Err(why) = check_host_and_origin(&guard, request.headers()) {
        tracing::warn!(why, "rejected request: 403");
        return reject(StatusCode::FORBIDDEN, why);
    }
    if !authorized(&guard.token, request.headers()) {
        tracing::warn!("rejected request: missing or wrong bearer token");
        let mut response = reject(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token: send `Authorization: Bearer <token>` with the token from the server's token file",
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"dshkit\""),
        );
        return response;
    }
    let busy = request
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|id| guard.sessions.busy(id));
    if request.method() != http::Method::POST {
        let response = guard.forward(request).await;
        return match busy {
            Some(busy) => hold_until_sent(response, busy),
            None => response,
        };
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_DRAIN_BYTES as u64) {
        // Too big to drain: answer at once; the client may see the connection close.
        return reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body exceeds the server's body cap",
        );
    }
    // Read the (capped) body once so chunked uploads meet the same cap and garbage
    // gets a JSON-RPC parse error rather than a transport-level complaint.
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(guard.body_read_timeout, read_capped(body, guard.max_body_bytes));
    let bytes = match read.await {
        Err(_elapsed) => {
            return reject(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive within the server's body-read timeout",
            );
        }
        Ok(Ok(bytes)) => bytes,
        Ok(Err(BodyError::TooLarge)) => {
            return reject(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body exceeds the server's body cap",
            );
        }
        Ok(Err(BodyError::Unreadable)) => {
            return reject(StatusCode::BAD_REQUEST, "failed to read the request body");
        }
    };
    if let Err(err) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return json_rpc_error(StatusCode::BAD_REQUEST, -32700, &format!("Parse error: {err}"));
    }
    // An `initialize` without a session creates one: it needs a place in the book.
    let admission = if parts.headers.contains_key(HEADER_SESSION_ID) || !is_initialize(&bytes) {
        None
    } else {
        match guard.sessions.admit() {
            Ok(admission) => Some(admission),
            Err(full) => {
                tracing::warn!(
                    max = full.max_sessions,
                    "new MCP session refused: every session is busy"
                );
                let mut response = json_rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32000,
                    &format!(
                        "session limit reached: {} MCP sessions are open and all are serving requests; retry later, and end unused sessions with DELETE",
                        full.max_sessions
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
                return response;
            }
        }
    };
    if let Some(evicted) = admission.as_ref().and_then(|a| a.evicted.clone()) {
        let _ = guard.rmcp_sessions.close_session(&evicted.into()).await;
    }
    let response = guard.forward(Request::from_parts(parts, Body::from(bytes))).await;
    let response = first_answer::with_first_answer(response).await;
    // The book holds the new session once its `initialize` is answered.
    drop(admission);
    match busy {
        Some(busy) => hold_until_sent(response, busy),
        None => response,
    }
}

/// The header naming a request's MCP session.
const HEADER_SESSION_ID: &str = "mcp-session-id";

/// Whether a JSON-RPC message is an `initialize` request.
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Probe<'_>>(body).is_ok_and(|probe| probe.method.as_deref() == Some("initialize"))
}

enum BodyError {
    TooLarge,
    Unreadable,
}

/// Reads at most `max` body bytes. Past the cap the rest is read and discarded, up
/// to [`MAX_DRAIN_BYTES`], so the client finishes its upload and sees the 413
/// instead of a reset connection.
async fn read_capped(mut body: Body, max: usize) -> Result<bytes::Bytes, BodyError> {
    use http_body_util::BodyExt;
    let mut kept = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Unreadable)?;
        let Ok(data) = frame.into_data() else { continue };
        seen = seen.saturating_add(data.len());
        if seen <= max {
            kept.extend_from_slice(&data);
        } else if seen > MAX_DRAIN_BYTES {
            break;
        }
    }
    if seen > max {
        Err(BodyError::TooLarge)
    } else {
        Ok(kept.freeze())
    }
}

fn check_host_and_origin(guard: &Guard, headers: &HeaderMap) -> Result<(), &'static str> {
    let (host, origin) = (headers.get(header::HOST), headers.get(header::ORIGIN));
    guard
        .names
        .check(host.map(HeaderValue::as_bytes), origin.map(HeaderValue::as_bytes))
}

fn authorized(token: &Token, headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .is_some_and(|presented| token.matches(presented))
}

fn reject(status: StatusCode, message: &str) -> Response {
    json_rpc_error(status, -32600, message)
}

fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(body.to_string()),
    )
        .into_response()
}

#[cfg(test)]
mod tests;
