//! The WebSocket actor: one writer task, one reader task. Commands are matched to
//! responses by id; events are routed to the subscriber of their session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::endpoint::{Endpoint, refusal_reason};
use crate::error::CdpError;

/// Largest CDP message accepted (256 MiB): full-page screenshots arrive as one
/// base64 message.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// Default time limit of one command.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Events buffered per subscriber before new ones are counted as dropped.
pub const DEFAULT_EVENT_BUFFER: usize = 8192;
/// Commands queued for the writer.
const OUTGOING_BUFFER: usize = 1024;

/// A CDP event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub method: String,
    pub params: Value,
    /// The flattened target session it belongs to; `None` for browser events.
    pub session_id: Option<String>,
}

type Pending = HashMap<u64, (String, oneshot::Sender<Result<Value, CdpError>>)>;

struct Shared {
    next_id: AtomicU64,
    pending: Mutex<Pending>,
    routes: Mutex<HashMap<Option<String>, mpsc::Sender<Event>>>,
    closed: AtomicBool,
    /// Events that had no subscriber (kept as a count; each is logged at debug).
    unrouted: AtomicU64,
    /// Events a full subscriber could not take.
    dropped: AtomicU64,
    /// Told once to close the socket ([`Connection::close`]).
    closing: tokio::sync::Notify,
}

/// A connection to a DevTools endpoint. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    outgoing: mpsc::Sender<String>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to a browser WebSocket endpoint (`ws://host:port/devtools/browser/…`).
    pub async fn connect(ws_url: &str) -> Result<Self, CdpError> {
        Self::connect_to(&Endpoint::new(ws_url)).await
    }

    /// Connects to `endpoint`'s WebSocket with its token as a bearer header,
    /// admitted within its deadline. An HTTP answer instead of the upgrade (a
    /// pool's 429 when its queue is full, 401 for a wrong token) is
    /// [`CdpError::Refused`] with the engine's reason; no admission in time is
    /// [`CdpError::AdmitTimeout`]. No error shows the token.
    pub async fn connect_to(endpoint: &Endpoint) -> Result<Self, CdpError> {
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE_BYTES);
        config.max_frame_size = Some(MAX_MESSAGE_BYTES);
        let failed = |reason: String| CdpError::Connect {
            url: endpoint.shown(),
            reason: endpoint.redact(&reason),
        };
        let mut request = endpoint
            .url()
            .into_client_request()
            .map_err(|e| failed(e.to_string()))?;
        if let Some(token) = endpoint.token().map_err(failed)? {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| failed("the token holds characters a header cannot carry".into()))?;
            value.set_sensitive(true);
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        let connecting = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
        let socket = match tokio::time::timeout(endpoint.admit_deadline(), connecting).await {
            Err(_) => {
                return Err(CdpError::AdmitTimeout {
                    endpoint: endpoint.shown(),
                    waited: endpoint.admit_deadline(),
                });
            }
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
                let status = response.status().as_u16();
                return Err(CdpError::Refused {
                    endpoint: endpoint.shown(),
                    status,
                    reason: refusal_reason(endpoint, status, response.body().as_deref()),
                });
            }
            Ok(Err(e)) => return Err(failed(e.to_string())),
            Ok(Ok((socket, _))) => socket,
        };
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut queue) = mpsc::channel::<String>(OUTGOING_BUFFER);
        let shared = Arc::new(Shared {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            routes: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            unrouted: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            closing: tokio::sync::Notify::new(),
        });

        let writer = Arc::clone(&shared);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    text = queue.recv() => {
                        let Some(text) = text else { break };
                        if sink.send(Message::text(text)).await.is_err() {
                            break;
                        }
                    }
                    () = writer.closing.notified() => break,
                }
            }
            let _ = sink.close().await;
        });
        let reader = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                match message {
                    Ok(Message::Text(text)) => dispatch(&reader, text.as_str()),
                    Ok(Message::Binary(bytes)) => dispatch(&reader, &String::from_utf8_lossy(&bytes)),
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            close(&reader);
        });
        Ok(Self { outgoing, shared })
    }

    /// Closes the socket (a close frame, then the end of the connection): the
    /// browser side ends what the connection held (a pool frees its browser).
    /// Commands still waiting fail with [`CdpError::Disconnected`].
    pub fn close(&self) {
        self.shared.closing.notify_one();
    }

    /// Whether the socket has closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Events received with nobody subscribed, and events a full subscriber lost.
    pub fn lost_events(&self) -> (u64, u64) {
        (
            self.shared.unrouted.load(Ordering::Relaxed),
            self.shared.dropped.load(Ordering::Relaxed),
        )
    }

    /// Sends `method` with `params` (to `session` when given) and waits for its
    /// result, at most `timeout`.
    pub async fn call_with_timeout(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        if self.is_closed() {
            return Err(CdpError::Disconnected);
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        let (tx, rx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .expect("pending lock")
            .insert(id, (method.to_owned(), tx));
        if self.outgoing.send(message.to_string()).await.is_err() {
            self.shared.pending.lock().expect("pending lock").remove(&id);
            return Err(CdpError::Disconnected);
        }
        let sent = std::time::Instant::now();
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => {
                // DSHKIT_LOG=dshkit_cdp=trace: where an operation's time goes.
                tracing::trace!(method, session, micros = sent.elapsed().as_micros(), "CDP call");
                result
            }
            Ok(Err(_)) => Err(CdpError::Disconnected),
            Err(_) => {
                self.shared.pending.lock().expect("pending lock").remove(&id);
                Err(CdpError::Timeout {
                    method: method.to_owned(),
                    timeout,
                })
            }
        }
    }

    /// [`Self::call_with_timeout`] with [`DEFAULT_COMMAND_TIMEOUT`].
    pub async fn call(&self, method: &str, params: Value, session: Option<&str>) -> Result<Value, CdpError> {
        self.call_with_timeout(method, params, session, DEFAULT_COMMAND_TIMEOUT)
            .await
    }

    /// Routes the events of `session` (`None`: browser-level events) to the
    /// returned receiver, replacing an earlier subscriber of the same session.
    pub fn subscribe(&self, session: Option<&str>) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel(DEFAULT_EVENT_BUFFER);
        self.shared
            .routes
            .lock()
            .expect("routes lock")
            .insert(session.map(str::to_owned), tx);
        rx
    }

    /// Stops routing the events of `session`.
    pub fn unsubscribe(&self, session: Option<&str>) {
        self.shared
            .routes
            .lock()
            .expect("routes lock")
            .remove(&session.map(str::to_owned));
    }
}

fn dispatch(shared: &Shared, text: &str) {
    let Ok(mut message) = serde_json::from_str::<Value>(text) else {
        tracing::warn!(len = text.len(), "unparsable CDP message");
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let Some((method, tx)) = shared.pending.lock().expect("pending lock").remove(&id) else {
            tracing::debug!(id, "CDP response for an abandoned command");
            return;
        };
        let result = match message.get_mut("error") {
            Some(error) => Err(CdpError::Protocol {
                method,
                code: error["code"].as_i64().unwrap_or(0),
                message: error["message"].as_str().unwrap_or("").to_owned(),
            }),
            None => Ok(message.get_mut("result").map_or(Value::Null, Value::take)),
        };
        let _ = tx.send(result);
        return;
    }
    let Some(method) = message.get("method").and_then(Value::as_str).map(str::to_owned) else {
        tracing::debug!("CDP message that is neither a response nor an event");
        return;
    };
    let session_id = message
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let event = Event {
        method,
        params: message.get_mut("params").map_or(Value::Null, Value::take),
        session_id,
    };
    tracing::trace!(method = %event.method, "CDP event");
    let route = shared
        .routes
        .lock()
        .expect("routes lock")
        .get(&event.session_id)
        .cloned();
    match route {
        Some(tx) => {
            if let Err(mpsc::error::TrySendError::Full(event)) = tx.try_send(event) {
                shared.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(method = %event.method, "CDP event dropped: subscriber is full");
            }
        }
        None => {
            shared.unrouted.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(method = %event.method, session = ?event.session_id, "CDP event without subscriber");
        }
    }
}

fn close(shared: &Shared) {
    shared.closed.store(true, Ordering::Release);
    for (_, (_, tx)) in shared.pending.lock().expect("pending lock").drain() {
        let _ = tx.send(Err(CdpError::Disconnected));
    }
    shared.routes.lock().expect("routes lock").clear();
}
