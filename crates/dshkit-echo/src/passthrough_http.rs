//! A passthrough's real server over Streamable HTTP (`--on-miss passthrough --
//! URL`): reached through [`crate::upstream`]'s client (TLS for `https://`,
//! trusting the system's roots and `SSL_CERT_FILE`'s), opened with the
//! cassette's recorded handshake in a session of its own, each missed request
//! `POSTed` and its answer (JSON, or an SSE stream whose events are passed on as
//! they arrive) read back; the session is ended when the replay ends.

use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue, header};
use serde_json::{Value, json};
use tokio::io::AsyncWrite;

use crate::error::EchoError;
use crate::upstream::{Client, SendError, SseParser, Upstream};

/// Longest wait for the whole answer to one request passed to an HTTP server.
pub const ANSWER_TIMEOUT: Duration = Duration::from_mins(5);
/// Longest wait for the end of the server's session when the replay ends.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes of one answer read (an SSE stream's events together).
pub const MAX_ANSWER_BYTES: usize = crate::MAX_FRAME_BYTES;

/// The id of the handshake a passthrough opens the server with.
const INIT_ID: &str = "dshkit-echo-init";

/// What the real server sent for one request: the notifications before the
/// answer (and when each came), the answer, and how the answer came over HTTP.
pub(crate) struct Exchange {
    pub(crate) notifications: Vec<Value>,
    pub(crate) notified_at: Vec<Instant>,
    pub(crate) response: Value,
    pub(crate) status: Option<u16>,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Option<String>,
}

/// A Streamable HTTP server a replay passes its misses to.
pub(crate) struct Http {
    client: Client,
    url: String,
    /// The session the server gave (the 2025 era).
    session: Option<HeaderValue>,
    /// The protocol version the handshake agreed on.
    protocol: Option<HeaderValue>,
}

/// How the server answered one POST.
struct Answered {
    /// Each JSON-RPC message, in order (an SSE stream's events as they came).
    messages: Vec<(Value, Instant)>,
    status: u16,
    content_type: Option<String>,
    /// The body, when the status is no success.
    text: Option<String>,
}

impl Http {
    /// Reaches the server at `url` (one that cannot be reached is
    /// [`EchoError::Unreachable`]) and opens it with `initialize`, if any.
    pub(crate) async fn open(url: &str, initialize: Option<&Value>) -> Result<Self, EchoError> {
        let upstream = Upstream::trusting(url, Vec::new());
        let client = upstream.client()?;
        client.probe().await?;
        let mut server = Self {
            client,
            url: url.to_owned(),
            session: None,
            protocol: None,
        };
        if let Some(init) = initialize {
            let mut init = init.clone();
            init["id"] = json!(INIT_ID);
            let answered = server.post(&init, &mut tokio::io::sink()).await?;
            let answer = answered
                .messages
                .iter()
                .map(|(message, _)| message)
                .find(|message| message["id"] == INIT_ID)
                .ok_or_else(|| {
                    server.failed(&format!(
                        "HTTP {} without an answer to the handshake",
                        answered.status
                    ))
                })?;
            server.protocol = answer["result"]["protocolVersion"]
                .as_str()
                .and_then(|version| HeaderValue::from_str(version).ok());
            if init["method"] == "initialize" {
                let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                server.post(&initialized, &mut tokio::io::sink()).await?;
            }
        }
        Ok(server)
    }

    /// POSTs `request`, passes on to `client_out` what the server sends before
    /// its answer; returns the exchange. An answer that is no success and no
    /// JSON-RPC answer is answered with the error that names its status.
    pub(crate) async fn exchange(
        &mut self,
        request: &Value,
        client_out: &mut (impl AsyncWrite + Unpin),
    ) -> Result<Exchange, EchoError> {
        let answered = self.post(request, client_out).await?;
        let failed = !(200..300).contains(&answered.status);
        let mut notifications = Vec::new();
        let mut notified_at = Vec::new();
        let mut response = None;
        for (message, at) in answered.messages {
            if message.get("method").is_none() && message.get("id") == request.get("id") {
                response = Some(message);
            } else if message.get("id").is_none() {
                notifications.push(message);
                notified_at.push(at);
            }
        }
        let body = match (&response, failed) {
            (None, true) => Some(answered.text.unwrap_or_default()),
            (None, false) => {
                return Err(self.failed(&format!("HTTP {} without the answer", answered.status)));
            }
            (Some(_), _) => None,
        };
        let response = response.unwrap_or_else(|| {
            crate::replay::http_status_error(&request["id"], answered.status, body.as_deref().unwrap_or(""))
        });
        Ok(Exchange {
            notifications,
            notified_at,
            response,
            status: failed.then_some(answered.status),
            content_type: answered.content_type.filter(|_| failed),
            body,
        })
    }

    /// Ends the server's session (a DELETE, at most [`CLOSE_TIMEOUT`]).
    pub(crate) async fn close(self) {
        if self.session.is_some() {
            let delete = self
                .client
                .send(http::Method::DELETE, self.headers(), Vec::new().into());
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, delete).await;
        }
    }

    /// The headers of every request: the session and protocol version agreed.
    fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = vec![
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            ),
        ];
        if let Some(session) = &self.session {
            headers.push((HeaderName::from_static("mcp-session-id"), session.clone()));
        }
        if let Some(protocol) = &self.protocol {
            headers.push((HeaderName::from_static("mcp-protocol-version"), protocol.clone()));
        }
        headers
    }

    /// POSTs `message` and reads the answer whole (at most [`ANSWER_TIMEOUT`]
    /// and [`MAX_ANSWER_BYTES`]); each notification of an SSE stream goes on to
    /// `client_out` as it arrives.
    async fn post(
        &mut self,
        message: &Value,
        client_out: &mut (impl AsyncWrite + Unpin),
    ) -> Result<Answered, EchoError> {
        let exchange = async {
            let response = match self
                .client
                .send(http::Method::POST, self.headers(), message.to_string().into())
                .await
            {
                Ok(response) => response,
                Err(SendError::Unreachable(unreachable)) => return Err(unreachable.into()),
                Err(SendError::Failed(why)) => return Err(self.failed(&why)),
            };
            let (head, mut body) = response.into_parts();
            if let Some(session) = head.headers.get("mcp-session-id") {
                self.session = Some(session.clone());
            }
            let content_type = head
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let is_sse = content_type
                .as_deref()
                .is_some_and(|value| value.starts_with("text/event-stream"));
            let mut answered = Answered {
                messages: Vec::new(),
                status: head.status.as_u16(),
                content_type,
                text: None,
            };
            let mut sse = SseParser::default();
            let mut bytes = Vec::new();
            let mut read = 0;
            while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
                let frame = frame.map_err(|e| self.failed(&format!("the answer broke off ({e})")))?;
                let Some(chunk) = frame.data_ref() else {
                    continue;
                };
                read += chunk.len();
                if read > MAX_ANSWER_BYTES {
                    return Err(self.failed(&format!("its answer is longer than {MAX_ANSWER_BYTES} bytes")));
                }
                if !is_sse {
                    bytes.extend_from_slice(chunk);
                    continue;
                }
                for event in sse.feed(chunk) {
                    if event.get("id").is_none() {
                        crate::frame::write_message(client_out, &event).await?;
                    }
                    let done = event.get("method").is_none() && event.get("id") == message.get("id");
                    answered.messages.push((event, Instant::now()));
                    if done {
                        return Ok(answered);
                    }
                }
            }
            if !is_sse {
                if let Ok(one) = serde_json::from_slice::<Value>(&bytes) {
                    let batch = match one {
                        Value::Array(batch) => batch,
                        one => vec![one],
                    };
                    answered.messages = batch.into_iter().map(|m| (m, Instant::now())).collect();
                }
                if !(200..300).contains(&answered.status) {
                    answered.text = Some(String::from_utf8_lossy(&bytes).into_owned());
                }
            }
            Ok(answered)
        };
        tokio::time::timeout(ANSWER_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(self.failed(&format!(
                    "no answer within {} s, ANSWER_TIMEOUT",
                    ANSWER_TIMEOUT.as_secs()
                )))
            })
    }

    /// The error of an exchange with the server that failed after it was reached.
    fn failed(&self, why: &str) -> EchoError {
        EchoError::Io {
            what: "the live server",
            error: format!("{}: {why}", self.url),
        }
    }
}
