//! One stand-in model per conversation: a loopback front that hands each chat
//! completions request to the fake model whose phrase the conversation's user
//! messages hold, so two conversations of one DSH can make different calls.

use axum::response::IntoResponse as _;
use dshkit_test::{FakeModel, LoopbackServer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The front (DSH's `DEEPSEEK_BASE_URL`) and the fake models behind it.
pub(crate) struct ConversationModels {
    pub(crate) url: String,
    _server: LoopbackServer,
    _models: Vec<FakeModel>,
}

impl ConversationModels {
    /// Serves on `127.0.0.1:0`; a request goes to the first model whose phrase a
    /// user message of its conversation contains (a request matching none is a 404).
    pub(crate) fn start(routes: Vec<(&str, FakeModel)>) -> Self {
        let upstreams: Vec<(String, String)> = routes
            .iter()
            .map(|(phrase, model)| {
                let addr = model.url.trim_start_matches("http://").to_owned();
                ((*phrase).to_owned(), addr)
            })
            .collect();
        let upstreams = std::sync::Arc::new(upstreams);
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: axum::body::Bytes| {
            let upstreams = std::sync::Arc::clone(&upstreams);
            async move {
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let said = user_text(&request);
                match upstreams
                    .iter()
                    .find(|(phrase, _)| said.contains(phrase.as_str()))
                {
                    Some((_, addr)) => forward(addr, uri.path(), &body).await,
                    None => (
                        axum::http::StatusCode::NOT_FOUND,
                        "no model for this conversation",
                    )
                        .into_response(),
                }
            }
        });
        let server = LoopbackServer::start(app, true);
        Self {
            url: format!("http://{}", server.addr),
            _server: server,
            _models: routes.into_iter().map(|(_, model)| model).collect(),
        }
    }
}

/// What the user said in a chat completions request, all messages together.
fn user_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `POST path` with `body` to the fake model at `addr`, over one HTTP/1.1
/// connection it closes: its answer (status, content type, whole body).
async fn forward(addr: &str, path: &str, body: &[u8]) -> axum::response::Response {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the fake model listens");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("request head");
    stream.write_all(body).await.expect("request body");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .expect("the fake model answers");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .and_then(|s| axum::http::StatusCode::from_u16(s).ok())
        .expect("a status line");
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| "application/json".to_owned());
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
        "the fake model answers with a length: {head}"
    );
    (
        status,
        [(axum::http::header::CONTENT_TYPE, content_type)],
        raw[split + 4..].to_vec(),
    )
        .into_response()
}
