//! The bridge: a stdio MCP server that forwards each message to the DevTools
//! endpoint (Streamable HTTP) and writes back what it answers, JSON or an SSE
//! stream. It sends the bearer token and never prints it; each `initialize`
//! (the host opening a session) reads the token file and the endpoint's URL
//! file again, so a rotated token or a restarted endpoint needs no new bridge.
//! A failed call is answered with an error, never retried (a retried experiment
//! start could take a second lease).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dshkit_echo::http::SseParser;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{Mutex, Semaphore};

use crate::client::{ClientError, TokenSource, check_loopback};
use crate::endpoint::endpoint_url;

/// Messages forwarded at once (a wait may hold one for a minute).
pub const MAX_IN_FLIGHT: usize = 32;
/// Longest a forwarded call may take: the longest wait plus a margin.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(90);
/// Longest line read from the host.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Characters of an endpoint's error body quoted in an error.
const QUOTED_BODY: usize = 300;

/// Why the bridge stopped before its host went away.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    #[error(transparent)]
    Client(reqwest::Error),
    #[error(transparent)]
    Read(std::io::Error),
    #[error(transparent)]
    Token(ClientError),
}

/// Where the bridge finds the endpoint each time the host opens a session:
/// `explicit`, else the URL file of `registry`; and the token.
#[derive(Debug, Clone)]
pub struct Source {
    pub registry: PathBuf,
    pub explicit: Option<String>,
    pub token: TokenSource,
}

impl Source {
    /// The endpoint's URL and token now.
    fn read(&self) -> Result<(String, String), ClientError> {
        let url = endpoint_url(&self.registry, self.explicit.clone());
        check_loopback(&url)?;
        Ok((url, self.token.read()?))
    }
}

type Output = Box<dyn AsyncWrite + Unpin + Send>;

struct Endpoint {
    source: Source,
    /// The URL and token of the session open now (read again at each `initialize`).
    current: Mutex<(String, String)>,
    client: reqwest::Client,
    /// The session id and protocol version the endpoint's `initialize` answer set.
    session: Mutex<(Option<String>, Option<String>)>,
    out: Mutex<Output>,
}

/// Forwards each line of `input` to the endpoint `source` names, writing every
/// answer to `output`, until `input` ends; then ends the endpoint's session. A
/// token that cannot be read at the start is refused at once.
pub async fn run(
    source: Source,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Result<(), BridgeError> {
    let client = reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        .build()
        .map_err(BridgeError::Client)?;
    let current = source.read().map_err(BridgeError::Token)?;
    let endpoint = Arc::new(Endpoint {
        source,
        current: Mutex::new(current),
        client,
        session: Mutex::new((None, None)),
        out: Mutex::new(Box::new(output)),
    });
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut lines = tokio::io::BufReader::new(input).lines();
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(line) = lines.next_line().await.map_err(BridgeError::Read)? {
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            endpoint
                .write(&error(&Value::Null, -32600, "message too large for the bridge"))
                .await;
            continue;
        }
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(e) => {
                endpoint
                    .write(&error(&Value::Null, -32700, &format!("parse error: {e}")))
                    .await;
                continue;
            }
        };
        if message["method"] == "initialize" {
            // Everything after it needs the session it opens.
            endpoint.forward(message).await;
            continue;
        }
        let slot = Arc::clone(&slots)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let endpoint = Arc::clone(&endpoint);
        tasks.spawn(async move {
            endpoint.forward(message).await;
            drop(slot);
        });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    endpoint.end_session().await;
    Ok(())
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl Endpoint {
    async fn write(&self, message: &Value) {
        let mut out = self.out.lock().await;
        let _ = out.write_all(format!("{message}\n").as_bytes()).await;
        let _ = out.flush().await;
    }

    /// Posts `message` once and writes back every message of the answer; a
    /// request whose post failed gets an error answer.
    async fn forward(&self, message: Value) {
        let id = message
            .get("id")
            .cloned()
            .filter(|_| message.get("method").is_some());
        let is_initialize = message["method"] == "initialize";
        if is_initialize {
            // A new session: the one before ends, and the token and URL are read
            // as they are now.
            self.end_session().await;
            match self.source.read() {
                Ok(now) => *self.current.lock().await = now,
                Err(why) => {
                    if let Some(id) = &id {
                        self.write(&error(id, -32000, &why.to_string())).await;
                    }
                    return;
                }
            }
            *self.session.lock().await = (None, None);
        }
        let (url, token) = self.current.lock().await.clone();
        let fail = |why: String| {
            let url = url.clone();
            async move {
                if let Some(id) = &id {
                    self.write(&error(id, -32000, &format!("the DevTools endpoint {url}: {why}")))
                        .await;
                }
            }
        };
        let mut request = self
            .client
            .post(&url)
            .bearer_auth(&token)
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .json(&message);
        {
            let session = self.session.lock().await;
            if let Some(id) = &session.0 {
                request = request.header("mcp-session-id", id);
            }
            if let Some(version) = &session.1 {
                request = request.header("mcp-protocol-version", version);
            }
        }
        let response = match request.send().await {
            Ok(response) => response,
            // The error names the URL, never the request's headers.
            Err(e) => return fail(format!("did not answer ({}); not retried", e.without_url())).await,
        };
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session.lock().await.0 = Some(session.to_owned());
        }
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let quoted: String = body.chars().take(QUOTED_BODY).collect();
            return fail(format!("answered HTTP {status}: {quoted}")).await;
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            let mut parser = SseParser::default();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let Ok(chunk) = chunk else {
                    return fail("closed its stream early".into()).await;
                };
                for answer in parser.feed(&chunk) {
                    self.note_version(is_initialize, &answer).await;
                    self.write(&answer).await;
                }
            }
        } else {
            match response.json::<Value>().await {
                Ok(answer) => {
                    self.note_version(is_initialize, &answer).await;
                    self.write(&answer).await;
                }
                Err(e) => {
                    fail(format!(
                        "answered something that is not JSON ({})",
                        e.without_url()
                    ))
                    .await;
                }
            }
        }
    }

    async fn note_version(&self, is_initialize: bool, answer: &Value) {
        if let (true, Some(version)) = (is_initialize, answer["result"]["protocolVersion"].as_str()) {
            self.session.lock().await.1 = Some(version.to_owned());
        }
    }

    /// Ends the endpoint's session when the host goes away.
    async fn end_session(&self) {
        let session = self.session.lock().await.0.clone();
        let (url, token) = self.current.lock().await.clone();
        if let Some(id) = session {
            let _ = self
                .client
                .delete(&url)
                .bearer_auth(&token)
                .header("mcp-session-id", id)
                .timeout(Duration::from_secs(5))
                .send()
                .await;
        }
    }
}
