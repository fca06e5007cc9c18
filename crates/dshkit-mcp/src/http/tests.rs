//! The HTTP server in process over real loopback TCP: hibernation keeps a
//! session's identity, the stateless era keeps no session, a slow body times out,
//! a gone client's stream is dropped.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::family::{ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput, ToolSpec};
use crate::{ResultLimits, ServerOptions};

/// `whoami` answers with the caller's subject; released subjects are recorded.
#[derive(Default)]
struct WhoAmI {
    released: Mutex<Vec<String>>,
}

impl ToolFamily for WhoAmI {
    fn name(&self) -> &'static str {
        "whoami"
    }
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "whoami",
            title: "Who am I",
            description: "the caller's subject",
            input_schema: json!({"type": "object"}),
            output_schema: None,
            hints: ToolHints::READ_ONLY,
            host: crate::host::HostSeams::NONE,
        }]
    }
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            // A long call: the answer comes after `holdMs`, with no message between.
            if let Some(ms) = call.arguments.get("holdMs").and_then(Value::as_u64) {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Ok(ToolOutput {
                structured: Map::from_iter([("subject".to_owned(), json!(call.subject))]),
                text: call.subject,
                images: Vec::new(),
            })
        })
    }
    fn release<'a>(&'a self, subject: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move { self.released.lock().unwrap().push(subject.to_owned()) })
    }
}

struct Running {
    server: HttpServer,
    family: Arc<WhoAmI>,
    token: String,
    client: reqwest::Client,
    _stop: tokio_util::sync::DropGuard,
}

async fn start(adjust: impl FnOnce(&mut HttpOptions)) -> Running {
    let family = Arc::new(WhoAmI::default());
    let options = ServerOptions {
        name: "t".into(),
        version: "0".into(),
        instructions: String::new(),
        limits: ResultLimits::default(),
        tool_timeout: Duration::from_mins(1),
    };
    let server = DshkitServer::new(options, vec![Arc::clone(&family) as Arc<dyn ToolFamily>], None).unwrap();
    let token = "test-token-0123456789abcdef".to_owned();
    let mut http = HttpOptions::loopback("127.0.0.1:0".parse().unwrap(), Token::new(&token).unwrap());
    adjust(&mut http);
    let stop = CancellationToken::new();
    let server = serve_http(server, http, stop.clone()).await.unwrap();
    Running {
        server,
        family,
        token,
        client: reqwest::Client::new(),
        _stop: stop.drop_guard(),
    }
}

impl Running {
    fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(self.server.url())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .bearer_auth(&self.token)
            .json(body);
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request
    }

    async fn open(&self) -> String {
        let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}});
        let response = self.post(None, &initialize).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(
            self.post(Some(&id), &initialized)
                .send()
                .await
                .unwrap()
                .status()
                .is_success()
        );
        id
    }

    /// `whoami` with `arguments` in the stateless 2026-07-28 era: no session, the
    /// version and method in headers and `_meta`.
    fn stateless_whoami(&self, id: u64, arguments: &Value) -> reqwest::RequestBuilder {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                          "params":{"name":"whoami","arguments":arguments,"_meta": meta}});
        self.post(None, &call)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "whoami")
    }

    /// `whoami` in `session`: the subject it reports.
    async fn whoami(&self, session: &str) -> String {
        self.whoami_after(session, 0).await
    }

    /// `whoami` in `session`, answered after `hold_ms`.
    async fn whoami_after(&self, session: &str, hold_ms: u64) -> String {
        let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{"holdMs": hold_ms}}});
        let response = self.post(Some(session), &call).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.text().await.unwrap();
        let message: Value = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .find_map(|d| serde_json::from_str(d).ok())
            .unwrap_or_else(|| panic!("{body}"));
        message["result"]["structuredContent"]["subject"]
            .as_str()
            .unwrap_or_else(|| panic!("{message}"))
            .to_owned()
    }
}

/// Waits (bounded) until `condition` holds.
async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let wait = async {
        while !condition().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_mins(1), wait)
        .await
        .unwrap_or_else(|_| panic!("{what} within a minute"));
}

#[tokio::test]
async fn a_hibernating_session_wakes_on_its_next_request_as_the_same_subject() {
    let running = start(|options| options.sessions.hibernate_after = Duration::from_millis(200)).await;
    let session = running.open().await;
    let before = running.whoami(&session).await;
    assert_eq!(before, format!("mcp-session:{session}"));

    until("the idle session hibernates", async || {
        running.server.awake_sessions().await == 0
    })
    .await;
    assert_eq!(
        running.server.open_sessions(),
        1,
        "a hibernating session still exists"
    );
    assert_eq!(
        running.whoami(&session).await,
        before,
        "woken, with the same identity"
    );
    assert_eq!(running.server.awake_sessions().await, 1);
    assert!(
        running.family.released.lock().unwrap().is_empty(),
        "hibernation releases nothing"
    );

    // DELETE ends it, awake or not, and releases what it owned.
    let response = running
        .client
        .delete(running.server.url())
        .header("Mcp-Session-Id", &session)
        .bearer_auth(&running.token)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    until("the session's subject is released", async || {
        running.family.released.lock().unwrap().contains(&before)
    })
    .await;
    assert_eq!(running.server.open_sessions(), 0);
}

/// A call that runs longer than the session's hibernation time, with no message
/// in between (a 60 s wait, a long verification), still gets its answer: the
/// session hibernates only once that answer is sent.
#[tokio::test]
async fn a_call_longer_than_the_hibernation_time_gets_its_answer() {
    let running = start(|options| options.sessions.hibernate_after = Duration::from_millis(200)).await;
    let session = running.open().await;
    assert_eq!(
        running.whoami_after(&session, 1500).await,
        format!("mcp-session:{session}")
    );
    until("the session hibernates after its answer", async || {
        running.server.awake_sessions().await == 0
    })
    .await;
    assert_eq!(running.server.open_sessions(), 1);
}

#[tokio::test]
async fn the_stateless_era_keeps_no_session_between_requests() {
    let running = start(|_| {}).await;
    for id in 0..50 {
        let response = running.stateless_whoami(id, &json!({})).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get("mcp-session-id").is_none());
        // An answer with nothing before it comes as JSON, not as an event stream.
        assert_eq!(response.headers()["content-type"], "application/json");
        let body = response.text().await.unwrap();
        assert!(body.contains("\"subject\":\"http\""), "{body}");
    }
    assert_eq!(running.server.open_sessions(), 0);
    assert_eq!(running.server.awake_sessions().await, 0);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408() {
    let running = start(|options| options.body_read_timeout = Duration::from_millis(300)).await;
    let addr = running.server.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        running.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_mins(1), stream.read(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body-read timeout"), "{answer}");
}

#[tokio::test]
async fn the_stream_of_a_client_that_is_gone_is_dropped_and_its_session_can_expire() {
    let running = start(|options| options.sessions.idle = Duration::from_millis(300)).await;
    let session = running.open().await;
    let addr = running.server.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let listen = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n",
        running.token
    );
    stream.write_all(listen.as_bytes()).await.unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    // Listening keeps the session in use: it does not expire.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(running.server.open_sessions(), 1);

    drop(stream);
    until("the gone client's connection is closed", async || {
        running.server.open_connections() <= 1
    })
    .await;
    until("the session expires once nobody listens", async || {
        running.server.open_sessions() == 0
    })
    .await;
    assert!(
        running
            .family
            .released
            .lock()
            .unwrap()
            .contains(&format!("mcp-session:{session}"))
    );
}

#[test]
fn each_error_has_its_code_and_is_refused() {
    let addr: SocketAddr = "0.0.0.0:8080".parse().unwrap();
    let table = [
        (HttpError::NonLoopback(addr), "NON_LOOPBACK_BIND"),
        (
            HttpError::Bind {
                addr,
                source: std::io::ErrorKind::AddrInUse.into(),
            },
            "BIND_FAILED",
        ),
    ];
    for (error, code) in table {
        assert_eq!(error.code(), code, "{error}");
        assert_eq!(error.class(), dshkit_os::error::ErrorClass::Refused, "{error}");
    }
}

#[tokio::test]
async fn only_the_mcp_path_is_served_and_a_head_that_does_not_come_in_time_is_408() {
    let running = start(|options| options.request_timeout = Duration::from_millis(300)).await;
    let url = running.server.url();
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}});
    for (path, status) in [
        ("/mcp", StatusCode::OK),
        ("/mcp/", StatusCode::OK),
        ("/mcpx", StatusCode::NOT_FOUND),
        ("/other", StatusCode::NOT_FOUND),
        ("/", StatusCode::NOT_FOUND),
    ] {
        let response = running
            .client
            .post(url.replace("/mcp", path))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .bearer_auth(&running.token)
            .json(&initialize)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{path}");
    }
    // The checks come before the path: no token, no 404 either.
    let response = running
        .client
        .post(url.replace("/mcp", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // A stateless call answers as JSON, so its head waits for the answer.
    let response = running
        .stateless_whoami(2, &json!({"holdMs": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
}
