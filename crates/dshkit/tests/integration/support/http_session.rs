//! One MCP client of `dshkit mcp --http`, driven with raw JSON-RPC: its own
//! initialized `Mcp-Session-Id` and bearer token, answers read from a JSON or an
//! SSE body. Clones share the session (calls in flight at once get their own ids).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

const ACCEPT: &str = "application/json, text/event-stream";
/// The longest a test waits for one answer (a verification on a busy machine
/// included); past it the test fails instead of hanging.
const ANSWER: Duration = Duration::from_mins(2);

#[derive(Clone)]
pub(crate) struct HttpSession {
    http: reqwest::Client,
    url: String,
    token: String,
    session: String,
    next_id: Arc<AtomicU64>,
}

/// The JSON-RPC message in a JSON or SSE response body.
pub(crate) fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v.get("jsonrpc").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in body: {body}"))
}

impl HttpSession {
    /// An initialized 2025-era MCP session on `url`, named `client` to the server.
    pub(crate) async fn open(url: &str, token: &str, client: &str) -> Self {
        let http = reqwest::Client::new();
        let response = http
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}}))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "initialize: {}",
            response.status()
        );
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.text().await;
        let opened = Self {
            http,
            url: url.to_owned(),
            token: token.to_owned(),
            session,
            next_id: Arc::new(AtomicU64::new(10)),
        };
        opened
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        opened
    }

    /// Posts one message in the session: the response body, which must come
    /// with a success status within [`ANSWER`].
    pub(crate) async fn send(&self, body: &Value) -> String {
        let request = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .header("Mcp-Session-Id", &self.session)
            .bearer_auth(&self.token)
            .json(body)
            .send();
        let response = tokio::time::timeout(ANSWER, request)
            .await
            .unwrap_or_else(|_| panic!("no answer within {ANSWER:?} to {body}"))
            .unwrap();
        assert!(response.status().is_success(), "{body}: {}", response.status());
        response.text().await.unwrap()
    }

    /// `tools/call`: the raw response body (to look for what must not be in
    /// it) and the JSON-RPC answer.
    pub(crate) async fn call_with_body(&self, tool: &str, arguments: Value) -> (String, Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}))
            .await;
        let answer = message(&body);
        (body, answer)
    }

    /// `tools/call`: the JSON-RPC answer.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.call_with_body(tool, arguments).await.1
    }

    /// Ends the MCP session (`DELETE`).
    pub(crate) async fn end(&self) {
        let response = self
            .http
            .delete(&self.url)
            .header("Mcp-Session-Id", &self.session)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }
}
