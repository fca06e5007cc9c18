//! A loopback HTTP server of fixture pages for browser tests.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::serve::LoopbackServer;

/// What a path answers.
#[derive(Debug, Clone)]
pub enum Fixture {
    Html(String),
    Js(String),
    Css(String),
    /// `302 Found` to the location.
    Redirect(String),
    /// An empty response with this status.
    Status(u16),
    /// `text/event-stream` that sends one event and then stays open.
    EventStream,
    /// A WebSocket endpoint that sends one text message (`hello`) and stays open.
    WebSocket,
    /// Plain text, answered after the delay.
    Delayed(std::time::Duration, String),
    /// Plain text `ok`, each request told to the test on the channel first: the
    /// test learns that the page reached a point of its script.
    Notify(tokio::sync::mpsc::UnboundedSender<()>),
}

/// A running fixture server on `127.0.0.1:0`; stops when dropped.
pub struct FixtureServer {
    pub origin: String,
    _server: LoopbackServer,
}

impl FixtureServer {
    pub fn start(routes: Vec<(&str, Fixture)>) -> Self {
        let routes: Arc<HashMap<String, Fixture>> =
            Arc::new(routes.into_iter().map(|(p, f)| (p.to_owned(), f)).collect());
        let app = axum::Router::new().fallback(serve).with_state(routes);
        // Open event streams would hold a graceful shutdown forever: do not join.
        let server = LoopbackServer::start(app, false);
        Self {
            origin: format!("http://{}", server.addr),
            _server: server,
        }
    }

    /// A server of one HTML page, at `/`.
    pub fn page(html: impl Into<String>) -> Self {
        Self::start(vec![("/", Fixture::Html(html.into()))])
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.origin
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("origin has a port")
    }
}

async fn serve(State(routes): State<Arc<HashMap<String, Fixture>>>, mut request: Request) -> Response {
    let path = request.uri().path().to_owned();
    match routes.get(&path) {
        Some(Fixture::WebSocket) => upgrade_websocket(&mut request),
        Some(Fixture::Html(html)) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html.clone()).into_response()
        }
        Some(Fixture::Js(js)) => ([(header::CONTENT_TYPE, "text/javascript")], js.clone()).into_response(),
        Some(Fixture::Delayed(delay, text)) => {
            tokio::time::sleep(*delay).await;
            ([(header::CONTENT_TYPE, "text/plain")], text.clone()).into_response()
        }
        Some(Fixture::Notify(reached)) => {
            let _ = reached.send(());
            ([(header::CONTENT_TYPE, "text/plain")], "ok").into_response()
        }
        Some(Fixture::Css(css)) => ([(header::CONTENT_TYPE, "text/css")], css.clone()).into_response(),
        Some(Fixture::Redirect(location)) => {
            (StatusCode::FOUND, [(header::LOCATION, location.clone())]).into_response()
        }
        Some(Fixture::Status(code)) => StatusCode::from_u16(*code)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response(),
        Some(Fixture::EventStream) => {
            let first = futures_util_once("data: hello\n\n");
            (
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                Body::from_stream(first),
            )
                .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A stream that yields `first` and then never ends.
fn futures_util_once(
    first: &'static str,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    struct Once(Option<&'static str>);
    impl futures::Stream for Once {
        type Item = Result<bytes::Bytes, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            match self.0.take() {
                Some(text) => std::task::Poll::Ready(Some(Ok(bytes::Bytes::from_static(text.as_bytes())))),
                None => std::task::Poll::Pending,
            }
        }
    }
    Once(Some(first))
}

/// Accepts a WebSocket handshake, then sends one text frame and holds the socket.
fn upgrade_websocket(request: &mut Request) -> Response {
    use base64::Engine;
    use sha1::Digest;
    let Some(key) = request
        .headers()
        .get("sec-websocket-key")
        .and_then(|k| k.to_str().ok())
        .map(str::to_owned)
    else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let accept = base64::engine::general_purpose::STANDARD.encode(sha1::Sha1::digest(
        format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
    ));
    let upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        if let Ok(upgraded) = upgrade.await {
            let mut io = hyper_util::rt::TokioIo::new(upgraded);
            let _ = io.write_all(&[0x81, 5, b'h', b'e', b'l', b'l', b'o']).await;
            let _ = io.flush().await;
            std::future::pending::<()>().await;
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header("sec-websocket-accept", accept)
        .body(Body::empty())
        .expect("a valid response")
}
