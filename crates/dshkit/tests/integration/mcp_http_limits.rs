//! `dshkit mcp --http` under careless clients, with tight limits: the session cap
//! evicts the least recently used idle session or refuses with 503, an idle
//! session expires and takes its previews with it, the connection cap and the
//! header-read timeout hold against stalled connections. Behaviour only: every
//! wait is for an event, never a timing assertion.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::spawn_http;

const ACCEPT: &str = "application/json, text/event-stream";

/// A server started with `extra` flags and `DSHKIT_LOG=info`, whose log lines
/// can be waited for.
struct Limited {
    url: String,
    token: String,
    log: mpsc::Receiver<String>,
    _guard: dshkit_test::ChildGuard,
    _home: tempfile::TempDir,
}

impl Limited {
    fn start(extra: &[&str], settings: Option<&str>) -> Self {
        let home = tempfile::tempdir().unwrap();
        if let Some(settings) = settings {
            let dir = home.path().join(".config/dshkit");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("settings.json"), settings).unwrap();
        }
        let (mut guard, url, token) = spawn_http(
            home.path(),
            extra,
            &[("DSHKIT_LOG", "warn,dshkit_mcp=info,dshkit=info")],
        );
        let stderr = guard.child.stderr.take().unwrap();
        let (lines, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            url,
            token,
            log,
            _guard: guard,
            _home: home,
        }
    }

    fn addr(&self) -> String {
        self.url
            .strip_prefix("http://")
            .unwrap()
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// Waits for a log line containing `needle` (the test's bound: 60 s).
    fn wait_for_log(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_mins(1);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(err) => panic!("no log line with {needle:?} within a minute: {err}"),
            }
        }
    }

    fn post(&self, client: &reqwest::Client, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .bearer_auth(&self.token)
            .json(body);
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request
    }

    /// `initialize` + `notifications/initialized`: the new session's id.
    async fn open(&self, client: &reqwest::Client) -> String {
        let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name":"limits","version":"1"}}});
        let response = self.post(client, None, &initialize).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(client, Some(&id), &initialized).send().await.unwrap();
        assert!(response.status().is_success());
        id
    }

    /// A `tools/call` in `session`: the HTTP status and the JSON-RPC message.
    async fn call(
        &self,
        client: &reqwest::Client,
        session: &str,
        tool: &str,
        arguments: Value,
    ) -> (StatusCode, Value) {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let response = self.post(client, Some(session), &call).send().await.unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        let message = serde_json::from_str(&body).ok().or_else(|| {
            body.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .find(|v| v.get("jsonrpc").is_some())
        });
        (status, message.unwrap_or(Value::String(body)))
    }

    /// Opens the session's standalone SSE stream (GET) and keeps it open.
    async fn listen(&self, client: &reqwest::Client, session: &str) -> reqwest::Response {
        let response = client
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", session)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response
    }
}

#[tokio::test]
async fn beyond_the_session_cap_the_least_recently_used_idle_session_is_evicted_and_gets_404() {
    let server = Limited::start(&["--max-sessions", "2"], None);
    let client = reqwest::Client::new();
    let first = server.open(&client).await;
    let second = server.open(&client).await;
    // `first` is used after `second` was opened: `second` is the least recently used.
    let (status, _) = server.call(&client, &first, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::OK);

    let third = server.open(&client).await;
    server.wait_for_log("MCP session evicted");
    let (status, _) = server.call(&client, &second, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the evicted session is gone");
    for session in [&first, &third] {
        let (status, message) = server.call(&client, session, "dshkit_info", json!({})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            message["result"]["structuredContent"]["name"], "dshkit",
            "{message}"
        );
    }
}

#[tokio::test]
async fn when_every_session_is_busy_a_new_one_gets_503_with_retry_after() {
    let server = Limited::start(&["--max-sessions", "2"], None);
    let client = reqwest::Client::new();
    let first = server.open(&client).await;
    let second = server.open(&client).await;
    // A session whose client listens on its stream is in use.
    let first_stream = server.listen(&client, &first).await;
    let second_stream = server.listen(&client, &second).await;

    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name":"limits","version":"1"}}});
    let response = server.post(&client, None, &initialize).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        response.headers().contains_key("retry-after"),
        "{:?}",
        response.headers()
    );
    assert!(response.headers().get("mcp-session-id").is_none());
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session limit reached"),
        "{refused}"
    );

    // The client of `second` goes away: its session is idle again and makes room.
    drop(second_stream);
    let retry = async {
        loop {
            let response = server.post(&client, None, &initialize).send().await.unwrap();
            if response.status() == StatusCode::OK {
                return;
            }
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_mins(1), retry)
        .await
        .expect("a new session once a client has left");
    server.wait_for_log("MCP session evicted");
    let (status, _) = server.call(&client, &second, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server.call(&client, &first, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::OK, "the listening session was kept");
    drop(first_stream);
}

#[tokio::test]
async fn an_idle_session_expires_its_client_gets_404_and_its_previews_are_closed() {
    let app = dshkit_test::FixtureServer::page("<!doctype html><title>one</title><button>One</button>");
    // One preview at a time: a second client can open one only after the first
    // client's preview was closed.
    let server = Limited::start(&["--session-idle", "2"], Some(r#"{"previewLimit": 1}"#));
    let client = reqwest::Client::new();
    let gone = server.open(&client).await;
    let open = json!({"operation": "open", "url": app.url("/")});
    let (_, opened) = server
        .call(&client, &gone, "liveloop_browser", open.clone())
        .await;
    assert_eq!(opened["result"]["isError"], false, "{opened}");

    server.wait_for_log("MCP session expired");
    let (status, _) = server.call(&client, &gone, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an expired session is gone");
    server.wait_for_log("closed the preview sessions of a client that is gone");

    let next = server.open(&client).await;
    let (_, opened) = server.call(&client, &next, "liveloop_browser", open).await;
    assert_eq!(
        opened["result"]["isError"], false,
        "the expired client's preview was closed: {opened}"
    );
}

/// Reads until the server closes the connection; returns what it sent.
async fn until_closed(stream: &mut tokio::net::TcpStream) -> String {
    let mut seen = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_mins(1), read)
        .await
        .expect("the server closes the connection");
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn stalled_connections_neither_lock_out_a_client_nor_stay_open() {
    let server = Limited::start(&["--max-connections", "4", "--header-timeout", "2"], None);
    let addr = server.addr();
    let mut stalled = Vec::new();
    for _ in 0..6 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: appl");
        stream.write_all(head.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    // Six stalled connections against a cap of four: a client is still served.
    let client = reqwest::Client::new();
    let session = server.open(&client).await;
    let (status, message) = server.call(&client, &session, "dshkit_info", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{message}");

    // Every stalled connection is closed: shed for a newer one, or at the timeout.
    for stream in &mut stalled {
        let sent = until_closed(stream).await;
        assert!(!sent.contains("200 OK"), "{sent}");
    }

    // A kept-alive connection that sends no next request is closed too.
    let mut idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    idle.write_all(request.as_bytes()).await.unwrap();
    let sent = until_closed(&mut idle).await;
    assert!(
        sent.starts_with("HTTP/1.1 401"),
        "one answer, then the close: {sent}"
    );
}

#[tokio::test]
async fn when_every_connection_is_serving_a_new_one_gets_503_at_once() {
    let server = Limited::start(&["--max-connections", "2"], None);
    let client = reqwest::Client::new();
    let first = server.open(&client).await;
    let second = server.open(&client).await;
    // Two open streams, each on its own connection, fill the cap; the pool's idle
    // connections are shed for them.
    let streams = [
        server.listen(&client, &first).await,
        server.listen(&client, &second).await,
    ];
    let mut refused = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let sent = until_closed(&mut refused).await;
    assert!(sent.starts_with("HTTP/1.1 503"), "{sent}");
    assert!(sent.contains("Retry-After:"), "{sent}");
    assert!(sent.contains("too many connections"), "{sent}");
    drop(streams);
}
