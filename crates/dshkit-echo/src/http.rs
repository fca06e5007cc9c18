//! Echo over Streamable HTTP, a transport only. Replay: a loopback MCP endpoint
//! that answers as [`crate::replay`] decides. A request with recorded
//! notifications is answered as an SSE stream (the notifications, then the
//! response); one without as plain JSON. A request whose recording holds server
//! requests is answered as an SSE stream that asks them, and the client's
//! answers (POSTs of their own) reach it by their ids. The 2025 era gets an `Mcp-Session-Id`
//! from `initialize`. Recording: a loopback reverse proxy that streams every
//! answer back as it arrives and hands it to the [`crate::recorder`] on the way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use axum::routing::post;
use dshkit_os::loopback::LoopbackNames;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::error::EchoError;
use crate::live_request::{LiveRequest, Read};
use crate::passthrough::Live;
use crate::recorder::{RecordOptions, RecordSummary, Recorder};
use crate::replay::{Event, HttpAnswer, MISS_CODE, Outgoing, ReplayOptions, Replayer, Reply, parse_error};
use crate::server_request::{ANSWER_TIMEOUT, answer_key};
use crate::upstream::{Client, SendError, Upstream};

/// Largest request body accepted (bytes).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

struct Replay {
    replayer: Mutex<Replayer>,
    options: ReplayOptions,
    /// The real server for `--on-miss passthrough`, started on the first miss.
    live: tokio::sync::Mutex<Option<Live>>,
    session: String,
    era: String,
    /// The Host and Origin values served.
    names: LoopbackNames,
    /// Hits waiting for the client's answer to a server request, by the key of
    /// its id ([`crate::server_request::Awaited::key`]).
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

/// Most events of one answer's SSE stream that wait for the client to read them.
pub const SSE_QUEUE_EVENTS: usize = 64;

/// Binds `127.0.0.1:port` (0: any free port) for the cassette; returns the bound
/// address and the server future.
pub async fn bind(
    port: u16,
    mut options: ReplayOptions,
) -> Result<
    (
        std::net::SocketAddr,
        impl std::future::Future<Output = std::io::Result<()>>,
    ),
    EchoError,
> {
    let replayer = Replayer::open(&mut options)?;
    let era = replayer.era().to_owned();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(EchoError::io("the replay listener"))?;
    let address = listener
        .local_addr()
        .map_err(EchoError::io("the replay listener"))?;
    let mut session = [0u8; 16];
    getrandom::fill(&mut session).map_err(|e| EchoError::Io {
        what: "randomness for a session id",
        error: e.to_string(),
    })?;
    let state = Arc::new(Replay {
        replayer: Mutex::new(replayer),
        options,
        live: tokio::sync::Mutex::new(None),
        session: hex::encode(session),
        era,
        names: LoopbackNames::new(address.port(), [], []),
        waiting: Mutex::new(HashMap::new()),
    });
    let app = axum::Router::new()
        .route("/mcp", post(handle).get(no_stream).delete(end_session))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    Ok((
        address,
        async move { axum::serve(without_delay(listener), app).await },
    ))
}

/// `listener`, with Nagle's algorithm off on each connection it accepts. An SSE
/// answer leaves in several small writes, and with Nagle on each write after the
/// first waits for the client's delayed ACK of the one before: a replayed answer
/// with a notification took 43 ms instead of a fraction of one.
fn without_delay(
    listener: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = std::net::SocketAddr> {
    axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        let _ = tcp.set_nodelay(true);
    })
}

fn status(code: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_owned()));
    *response.status_mut() = code;
    response
}

/// DNS rebinding: only this loopback endpoint's own names are served, as Host
/// and as Origin; otherwise the 403 to answer.
fn refused(headers: &HeaderMap, names: &LoopbackNames) -> Option<Response<Body>> {
    let (host, origin) = (headers.get(header::HOST), headers.get(header::ORIGIN));
    let why = names
        .check(host.map(HeaderValue::as_bytes), origin.map(HeaderValue::as_bytes))
        .err()?;
    tracing::warn!(why, "rejected request: 403");
    Some(status(StatusCode::FORBIDDEN, why))
}

async fn no_stream(State(state): State<Arc<Replay>>, headers: HeaderMap) -> Response<Body> {
    if let Some(refused) = refused(&headers, &state.names) {
        return refused;
    }
    let mut response = status(
        StatusCode::METHOD_NOT_ALLOWED,
        "a replay has no server-initiated stream",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    response
}

async fn end_session(State(state): State<Arc<Replay>>, headers: HeaderMap) -> Response<Body> {
    if let Some(refused) = refused(&headers, &state.names) {
        return refused;
    }
    status(StatusCode::OK, "")
}

/// One message as an SSE event.
fn sse_event(message: &Value) -> String {
    sse_text(&serde_json::to_string(message).expect("JSON"))
}

/// One SSE event carrying the JSON text `json` (one line).
fn sse_text(json: &str) -> String {
    format!("event: message\ndata: {json}\n\n")
}

fn json_response(value: &Value) -> Response<Body> {
    json_text_response(serde_json::to_vec(value).expect("JSON"))
}

fn json_text_response(json: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Body::from(json));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn handle(State(state): State<Arc<Replay>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    if let Some(refused) = refused(&headers, &state.names) {
        return refused;
    }
    let request = match LiveRequest::read(&body, &state.options.redactor) {
        Read::Request(request) => request,
        Read::NoReply => {
            // A notification, or an answer: a hit may wait for it.
            deliver_answers(&state, &body);
            return status(StatusCode::ACCEPTED, "");
        }
        Read::NotJson => {
            let mut response = json_text_response(parse_error());
            *response.status_mut() = StatusCode::BAD_REQUEST;
            return response;
        }
    };
    let Some(method) = request.method() else {
        return status(StatusCode::ACCEPTED, "");
    };
    let opens_session = method == "initialize" && state.era == "2025";
    let reply = state
        .replayer
        .lock()
        .expect("lock")
        .answer(request, &state.options);
    let mut hit = match reply {
        Reply::Hit(hit) => hit,
        Reply::PassThrough(request) => return passthrough(&state, &request).await,
        Reply::Send(message) => return json_text_response(message),
        Reply::Nothing => return status(StatusCode::ACCEPTED, ""),
    };
    if let Some(http) = hit.http.take() {
        return recorded_status(hit, http).await;
    }
    if !hit.server_requests.is_empty() {
        return conversation(&state, hit, opens_session);
    }
    if let Some(wait) = hit.delay {
        tokio::time::sleep(wait).await;
    }
    let mut response = if hit.notifications.is_empty() && hit.responses.len() == 1 {
        json_text_response(hit.responses.into_iter().next().expect("one response"))
    } else {
        // The events go out as the server sent them: each notification the
        // recorded gap (bounded) before what follows it.
        let mut pause = std::time::Duration::ZERO;
        let texts = hit.notifications.iter().map(sse_event).chain(
            hit.responses
                .iter()
                .map(|response| sse_text(std::str::from_utf8(response).expect("JSON text is UTF-8"))),
        );
        let mut events = Vec::new();
        for (index, text) in texts.enumerate() {
            events.push((pause, text));
            pause = hit.gaps.get(index).copied().unwrap_or_default();
        }
        let stream = futures::stream::iter(events).then(|(pause, text)| async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Ok::<_, std::convert::Infallible>(text)
        });
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    };
    if opens_session {
        response.headers_mut().insert(
            "mcp-session-id",
            state.session.parse().expect("hex is a valid header"),
        );
    }
    response
}

/// A hit recorded with an HTTP status other than 200: that status, the
/// recorded content type, and the recorded body (or the response, with the
/// live id). No session is opened by it.
async fn recorded_status(hit: Outgoing, http: HttpAnswer) -> Response<Body> {
    if let Some(wait) = hit.delay {
        tokio::time::sleep(wait).await;
    }
    let (body, content_type) = match http.body {
        Some(body) => (body, http.content_type),
        None => (
            hit.responses.into_iter().next().unwrap_or_default(),
            http.content_type.or_else(|| Some("application/json".into())),
        ),
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(http.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if let Some(value) = content_type.and_then(|value| HeaderValue::from_str(&value).ok()) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// Hands each answer in `body` (one message or a batch) to the hit waiting for it.
fn deliver_answers(state: &Replay, body: &[u8]) {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let messages = match message {
        Value::Array(batch) => batch,
        one => vec![one],
    };
    for message in messages {
        let waiter = answer_key(&message).and_then(|key| state.waiting.lock().expect("lock").remove(&key));
        if let Some(waiter) = waiter {
            let _ = waiter.send(message);
        }
    }
}

/// A hit that asks the client: an SSE stream of its notifications and server
/// requests in recorded order, each answer (a POST of its own, routed here by
/// its id) waited for (at most [`ANSWER_TIMEOUT`]) and checked, then its
/// responses; or, when an answer differs or none comes, the miss that says so.
fn conversation(state: &Arc<Replay>, hit: Outgoing, opens_session: bool) -> Response<Body> {
    let (events, mut queue) = mpsc::channel::<String>(SSE_QUEUE_EVENTS);
    let session = state.session.parse().expect("hex is a valid header");
    let state = Arc::clone(state);
    tokio::spawn(async move {
        // Each answer is waited for before its request goes out: it may come at once.
        let mut answers = HashMap::new();
        for event in hit.events() {
            if let Event::Await(awaited) = event {
                let (waiter, answer) = oneshot::channel();
                state.waiting.lock().expect("lock").insert(awaited.key(), waiter);
                answers.insert(awaited.key(), answer);
            }
        }
        let keys: Vec<String> = answers.keys().cloned().collect();
        // A send fails once the client has gone: the stream ends there.
        let _ = converse(&state, &hit, answers, &events).await;
        let mut waiting = state.waiting.lock().expect("lock");
        for key in keys {
            waiting.remove(&key);
        }
    });
    let stream = futures::stream::poll_fn(move |context| {
        queue
            .poll_recv(context)
            .map(|event| event.map(Ok::<_, std::convert::Infallible>))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    if opens_session {
        response.headers_mut().insert("mcp-session-id", session);
    }
    response
}

/// Sends `hit`'s events, waits for each answer, then the responses (or the
/// miss of a failed server request), into `events`; `Err` once the client is
/// gone.
async fn converse(
    state: &Replay,
    hit: &Outgoing,
    mut answers: HashMap<String, oneshot::Receiver<Value>>,
    events: &mpsc::Sender<String>,
) -> Result<(), ()> {
    let send = |text: String| async move { events.send(text).await.map_err(drop) };
    if let Some(wait) = hit.delay {
        tokio::time::sleep(wait).await;
    }
    for event in hit.events() {
        match event {
            Event::Notification(notification, gap) => {
                send(sse_event(notification)).await?;
                if !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
            }
            Event::Ask(request) => send(sse_event(request)).await?,
            Event::Await(awaited) => {
                let answer = answers
                    .remove(&awaited.key())
                    .expect("each awaited answer has its waiter");
                let checked = match tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
                    Ok(Ok(answer)) => awaited.check(answer, &state.options.redactor),
                    _ => Err(awaited.unanswered(&format!(
                        "no answer within {} s, ANSWER_TIMEOUT",
                        ANSWER_TIMEOUT.as_secs()
                    ))),
                };
                if let Err(failure) = checked {
                    state.replayer.lock().expect("lock").server_request_failed();
                    let miss = hit.failed(&failure);
                    return send(sse_text(std::str::from_utf8(&miss).expect("JSON text is UTF-8"))).await;
                }
            }
        }
    }
    for response in &hit.responses {
        send(sse_text(
            std::str::from_utf8(response).expect("JSON text is UTF-8"),
        ))
        .await?;
    }
    Ok(())
}

/// A miss with `--on-miss passthrough`: the real server (started on the first
/// miss, over stdio) answers; what it sent goes back as JSON or an SSE stream and
/// is appended to the cassette as `origin: live`.
async fn passthrough(state: &Replay, request: &Value) -> Response<Body> {
    let mut live = state.live.lock().await;
    let answered: Result<Vec<u8>, EchoError> = async {
        if live.is_none() {
            let handshake = state.replayer.lock().expect("lock").handshake().cloned();
            *live = Some(
                Live::start(
                    state.options.on_miss.argv(),
                    handshake.as_ref(),
                    &state.options.cassette,
                )
                .await?,
            );
        }
        let server = live.as_mut().expect("just started");
        // Numbered under the server's lock: appended in the order they are numbered.
        let ordinal = state.replayer.lock().expect("lock").next_ordinal();
        let mut sent = Vec::new();
        server
            .pass_through(request, ordinal, &mut sent, &state.options)
            .await?;
        Ok(sent)
    }
    .await;
    let sent = match answered {
        Ok(sent) => sent,
        Err(error) => {
            // A dead server is started again on the next miss.
            *live = None;
            return json_response(&json!({"jsonrpc": "2.0", "id": request["id"], "error": {
                "code": MISS_CODE, "message": format!("echo: passthrough to the real server failed: {error}")
            }}));
        }
    };
    let messages: Vec<Value> = sent
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    if let [only] = messages.as_slice() {
        return json_response(only);
    }
    let mut stream = String::new();
    for message in &messages {
        stream.push_str(&sse_event(message));
    }
    let mut response = Response::new(Body::from(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

// ---------------------------------------------------------------------------
// Recording over Streamable HTTP: a loopback reverse proxy in front of the server
// ---------------------------------------------------------------------------

/// Headers that belong to one hop and are never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "upgrade",
    "proxy-connection",
    "te",
    "trailer",
];

pub use crate::upstream::SseParser;

struct Proxy {
    client: Client,
    recorder: Mutex<Recorder>,
    /// The Host and Origin values served.
    names: LoopbackNames,
}

/// A running recording proxy; `finish` writes the rest of the cassette.
pub struct RecordingProxy {
    proxy: Arc<Proxy>,
}

impl RecordingProxy {
    pub fn finish(&self) -> Result<RecordSummary, EchoError> {
        self.proxy.recorder.lock().expect("lock").finish()
    }
}

/// Binds a loopback proxy for `upstream` (an `http://…/mcp` or `https://…/mcp`
/// URL): every request is forwarded unchanged, every response streamed back
/// chunk by chunk as it arrives and recorded on the way. A server that cannot
/// be reached is refused before anything is bound ([`EchoError::Unreachable`]).
pub async fn bind_recorder(
    port: u16,
    upstream: &Upstream,
    options: RecordOptions,
) -> Result<
    (
        std::net::SocketAddr,
        RecordingProxy,
        impl std::future::Future<Output = std::io::Result<()>> + use<>,
    ),
    EchoError,
> {
    options.refuse_to_overwrite()?;
    let client = upstream.client()?;
    client.probe().await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(EchoError::io("the recording listener"))?;
    let address = listener
        .local_addr()
        .map_err(EchoError::io("the recording listener"))?;
    let proxy = Arc::new(Proxy {
        client,
        recorder: Mutex::new(Recorder::new(options, "http")),
        names: LoopbackNames::new(address.port(), [], []),
    });
    let app = axum::Router::new()
        .route("/mcp", axum::routing::any(forward))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(Arc::clone(&proxy));
    Ok((address, RecordingProxy { proxy }, async move {
        axum::serve(without_delay(listener), app).await
    }))
}

async fn forward(
    State(proxy): State<Arc<Proxy>>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if let Some(refused) = refused(&headers, &proxy.names) {
        return refused;
    }
    let sent = serde_json::from_slice::<Value>(&body).ok();
    if let Some(message) = &sent {
        let mut recorder = proxy.recorder.lock().expect("lock");
        match message {
            Value::Array(batch) => batch.iter().for_each(|m| recorder.on_client(m)),
            one => recorder.on_client(one),
        }
    }
    let forwarded = headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()));
    let upstream = match proxy.client.send(method, forwarded, body).await {
        Ok(response) => response,
        Err(why) => {
            tracing::warn!(%why, "answered 502");
            let why = match why {
                SendError::Unreachable(unreachable) => unreachable.to_string(),
                SendError::Failed(why) => format!("the recorded server did not answer: {why}"),
            };
            return status(StatusCode::BAD_GATEWAY, &why);
        }
    };
    let (head, body) = upstream.into_parts();
    if !head.status.is_success()
        && let Some(request) = sent.filter(|sent| sent.get("method").is_some())
    {
        return failed_answer(&proxy, &request, head, body).await;
    }
    let is_sse = head
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut response = Response::builder().status(head.status.as_u16());
    for (name, value) in &head.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response = response.header(name, value);
        }
    }
    let recorder = Arc::clone(&proxy);
    let mut sse = SseParser::default();
    let mut json_body: Vec<u8> = Vec::new();
    // Each chunk goes on as it arrives, and is recorded on the way.
    let chunks = http_body_util::BodyExt::map_frame(body, move |frame| {
        if let Some(bytes) = frame.data_ref() {
            if is_sse {
                let messages = sse.feed(bytes);
                let mut recorder = recorder.recorder.lock().expect("lock");
                for message in messages {
                    recorder.on_server(message);
                }
            } else if json_body.len() + bytes.len() <= MAX_BODY_BYTES {
                json_body.extend_from_slice(bytes);
                if let Ok(message) = serde_json::from_slice::<Value>(&json_body) {
                    let mut recorder = recorder.recorder.lock().expect("lock");
                    match message {
                        Value::Array(batch) => batch.into_iter().for_each(|m| recorder.on_server(m)),
                        one => recorder.on_server(one),
                    }
                    json_body.clear();
                }
            }
        }
        frame
    });
    response.body(Body::new(chunks)).unwrap_or_else(|_| {
        status(
            StatusCode::BAD_GATEWAY,
            "the recorded server's answer could not be passed on",
        )
    })
}

/// An upstream's answer to the client's `request` that is not a success (a
/// 404, a 400 for an unknown session): read whole (at most
/// [`MAX_BODY_BYTES`]), recorded with its status, content type and body, and
/// passed on as it came.
async fn failed_answer(
    proxy: &Proxy,
    request: &Value,
    head: axum::http::response::Parts,
    body: hyper::body::Incoming,
) -> Response<Body> {
    let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
    let bytes = match http_body_util::BodyExt::collect(limited).await {
        Ok(collected) => collected.to_bytes(),
        Err(why) => {
            return status(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "the recorded server's answer could not be read (at most {MAX_BODY_BYTES} bytes): {why}"
                ),
            );
        }
    };
    let content_type = head
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    proxy
        .recorder
        .lock()
        .expect("lock")
        .on_http_answer(request, head.status.as_u16(), content_type, &bytes);
    let mut response = Response::builder().status(head.status.as_u16());
    for (name, value) in &head.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(bytes)).unwrap_or_else(|_| {
        status(
            StatusCode::BAD_GATEWAY,
            "the recorded server's answer could not be passed on",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_served_connection_sends_small_writes_at_once() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let mut listener = without_delay(listener);
        let (_client, (accepted, _)) = tokio::join!(
            async { tokio::net::TcpStream::connect(address).await.expect("connect") },
            axum::serve::Listener::accept(&mut listener)
        );
        assert!(accepted.nodelay().expect("TCP_NODELAY of the accepted socket"));
    }

    #[test]
    fn sse_events_split_across_chunks_become_messages() {
        let mut parser = SseParser::default();
        assert!(
            parser
                .feed(b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",")
                .is_empty()
        );
        let messages =
            parser.feed(b"\"id\":1,\"result\":{}}\r\n\r\nid: 7\ndata: {\"method\":\"x\"}\n\n: ping\n\n");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["id"], 1);
        assert_eq!(messages[1]["method"], "x");
    }
}
