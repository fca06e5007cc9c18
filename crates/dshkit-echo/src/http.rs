//! Replay over Streamable HTTP: a loopback MCP endpoint that answers from the
//! cassette. A request with recorded notifications is answered as an SSE stream
//! (the notifications, then the response); one without as plain JSON. The 2025 era
//! gets an `Mcp-Session-Id` from `initialize`.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Response, StatusCode, header};
use axum::routing::post;
use serde_json::{Value, json};

use crate::cassette;
use crate::matcher::Matcher;
use crate::stdio::{EchoError, MISS_CODE, ReplayOptions, playback, recorded_delay};

/// Largest request body accepted (bytes).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

struct Replay {
    matcher: Mutex<Matcher>,
    options: ReplayOptions,
    cassette_id: String,
    session: String,
    era: String,
    port: u16,
}

/// Binds `127.0.0.1:port` (0: any free port) for the cassette; returns the bound
/// address and the server future.
pub async fn bind(
    port: u16,
    options: ReplayOptions,
) -> Result<
    (
        std::net::SocketAddr,
        impl std::future::Future<Output = std::io::Result<()>>,
    ),
    EchoError,
> {
    let loaded = cassette::read(&options.cassette)?;
    let era = loaded.cassette.header.era.clone();
    let matcher = Matcher::new(loaded.cassette.into_interactions(), options.matching.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| EchoError::Io {
            what: "the replay listener",
            error: e.to_string(),
        })?;
    let address = listener.local_addr().map_err(|e| EchoError::Io {
        what: "the replay listener",
        error: e.to_string(),
    })?;
    let mut session = [0u8; 16];
    getrandom::fill(&mut session).map_err(|e| EchoError::Io {
        what: "randomness for a session id",
        error: e.to_string(),
    })?;
    let state = Arc::new(Replay {
        cassette_id: options
            .cassette
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        matcher: Mutex::new(matcher),
        options,
        session: hex::encode(session),
        era,
        port: address.port(),
    });
    let app = axum::Router::new()
        .route("/mcp", post(handle).get(no_stream).delete(end_session))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    Ok((address, async move { axum::serve(listener, app).await }))
}

fn status(code: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_owned()));
    *response.status_mut() = code;
    response
}

/// DNS rebinding: only this loopback endpoint's own names are served.
fn host_ok(headers: &HeaderMap, port: u16) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| {
            [
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ]
            .iter()
            .any(|allowed| allowed == host)
        })
}

async fn no_stream(State(state): State<Arc<Replay>>, headers: HeaderMap) -> Response<Body> {
    if !host_ok(&headers, state.port) {
        return status(StatusCode::FORBIDDEN, "forbidden host");
    }
    let mut response = status(
        StatusCode::METHOD_NOT_ALLOWED,
        "a replay has no server-initiated stream",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, "POST, DELETE".parse().expect("valid"));
    response
}

async fn end_session(State(state): State<Arc<Replay>>, headers: HeaderMap) -> Response<Body> {
    if !host_ok(&headers, state.port) {
        return status(StatusCode::FORBIDDEN, "forbidden host");
    }
    status(StatusCode::OK, "")
}

fn json_response(value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).expect("JSON")));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, "application/json".parse().expect("valid"));
    response
}

async fn handle(State(state): State<Arc<Replay>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    if !host_ok(&headers, state.port) {
        return status(StatusCode::FORBIDDEN, "forbidden host");
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        let mut response = json_response(
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32_700, "message": "Parse error: not JSON"}}),
        );
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    let (Some(method), Some(id)) = (
        message.get("method").and_then(Value::as_str),
        message.get("id").cloned(),
    ) else {
        return status(StatusCode::ACCEPTED, ""); // a notification or an answer
    };
    let found = state
        .matcher
        .lock()
        .expect("lock")
        .find(&message, Some(&state.options.redactor))
        .cloned();
    let interaction = match found {
        Ok(interaction) => interaction,
        Err(miss) => {
            return json_response(&json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": MISS_CODE, "message": format!("echo: no recorded answer: {}", miss.message()), "data": miss.data()
            }}));
        }
    };
    if let Some(wait) = recorded_delay(&interaction, state.options.timing) {
        tokio::time::sleep(wait).await;
    }
    let (notifications, responses) =
        playback(&interaction, &message, &id, &state.options, &state.cassette_id);
    let mut response = if notifications.is_empty() && responses.len() == 1 {
        json_response(&responses[0])
    } else {
        let mut stream = String::new();
        for event in notifications.iter().chain(&responses) {
            stream.push_str("event: message\ndata: ");
            stream.push_str(&serde_json::to_string(event).expect("JSON"));
            stream.push_str("\n\n");
        }
        let mut response = Response::new(Body::from(stream));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, "text/event-stream".parse().expect("valid"));
        response
    };
    if method == "initialize" && state.era == "2025" {
        response.headers_mut().insert(
            "mcp-session-id",
            state.session.parse().expect("hex is a valid header"),
        );
    }
    response
}
