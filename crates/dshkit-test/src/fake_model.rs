//! A loopback stand-in for the LLM, speaking the OpenAI-compatible chat
//! completions wire protocol that DSH's DeepSeek adapter uses
//! (`DEEPSEEK_BASE_URL`). It scripts one turn: call `tool` (once, or a given
//! number of times, or a sequence of tools), then answer with the text of the last tool result so the
//! final answer proves the result arrived. A gated model holds each reply that
//! follows a tool result until the test releases it, so a test can act between
//! two calls of one turn.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::serve::LoopbackServer;

/// A request the fake model received.
pub type ModelRequest = Value;

/// Prefix of the final answer, followed by the tool result text.
pub const ANSWER_PREFIX: &str = "Tool result follows: ";

#[derive(Clone)]
struct Script {
    /// The calls of the turn, in order: tool name and JSON arguments.
    calls: Arc<Vec<(String, String)>>,
    gate: Option<Arc<tokio::sync::Semaphore>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// A running fake model. Stops when dropped.
pub struct FakeModel {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    gate: Option<Arc<tokio::sync::Semaphore>>,
    _server: LoopbackServer,
}

impl FakeModel {
    /// Serves on `127.0.0.1:0`; the model calls `tool` with `arguments` first.
    pub fn start(tool: &str, arguments: &Value) -> Self {
        Self::scripted(tool, arguments, 1, false)
    }

    /// The model calls `tool` `calls` times in one turn; when `gated`, every reply
    /// after a tool result waits for [`FakeModel::release`].
    pub fn scripted(tool: &str, arguments: &Value, calls: usize, gated: bool) -> Self {
        Self::sequence(&vec![(tool, arguments.clone()); calls], gated)
    }

    /// The model makes `calls` in order, one per reply, in one turn.
    pub fn sequence(calls: &[(&str, Value)], gated: bool) -> Self {
        assert!(!calls.is_empty(), "a scripted turn makes at least one call");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let gate = gated.then(|| Arc::new(tokio::sync::Semaphore::new(0)));
        let script = Script {
            calls: Arc::new(
                calls
                    .iter()
                    .map(|(tool, arguments)| ((*tool).to_owned(), arguments.to_string()))
                    .collect(),
            ),
            gate: gate.clone(),
            requests: Arc::clone(&requests),
        };
        let app = axum::Router::new()
            .route("/chat/completions", axum::routing::post(complete))
            .route("/v1/chat/completions", axum::routing::post(complete))
            .with_state(script);
        let server = LoopbackServer::start(app, true);
        Self {
            url: format!("http://{}", server.addr),
            requests,
            gate,
            _server: server,
        }
    }

    /// Lets one held reply of a gated model go.
    pub fn release(&self) {
        if let Some(gate) = &self.gate {
            gate.add_permits(1);
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().expect("lock").clone()
    }

    /// The requests of the agent's turn so far, in order: those that offer tools.
    /// DSH's separate title request offers none, and may arrive first.
    pub fn turn_requests(&self) -> Vec<ModelRequest> {
        let requests = self.requests.lock().expect("lock");
        requests.iter().filter(|r| offers_tools(r)).cloned().collect()
    }
}

impl Drop for FakeModel {
    /// Held replies are refused, so a test that fails mid-turn ends instead of
    /// waiting for a release that never comes.
    fn drop(&mut self) {
        if let Some(gate) = &self.gate {
            gate.close();
        }
    }
}

fn offers_tools(request: &Value) -> bool {
    request["tools"].as_array().is_some_and(|t| !t.is_empty())
}

async fn complete(State(script): State<Script>, axum::Json(request): axum::Json<Value>) -> Response {
    script.requests.lock().expect("lock").push(request.clone());
    let stream = request["stream"].as_bool().unwrap_or(false);
    if !offers_tools(&request) {
        return reply_text("dshkit check", stream);
    }
    // The tool result of the last call, when the conversation has one since the
    // model last spoke (a host may add a user message after it, e.g. with images).
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let result = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "assistant")
        .find(|m| m["role"] == "tool");
    let made = messages.iter().filter(|m| m["role"] == "tool").count();
    if made > 0
        && let Some(gate) = &script.gate
    {
        match gate.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_closed) => return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response(),
        }
    }
    if let Some(result) = result.filter(|_| made >= script.calls.len()) {
        return reply_text(
            &format!("{ANSWER_PREFIX}{}", message_text(&result["content"])),
            stream,
        );
    }
    let (tool, arguments) = &script.calls[made.min(script.calls.len() - 1)];
    let call = json!({
        "index": 0, "id": format!("call_dshkit_{}", made + 1), "type": "function",
        "function": { "name": tool, "arguments": arguments },
    });
    if stream {
        sse(
            &[json!({ "role": "assistant", "content": null, "tool_calls": [call] })],
            "tool_calls",
        )
    } else {
        axum::Json(json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{ "index": 0, "finish_reason": "tool_calls",
                          "message": { "role": "assistant", "content": null, "tool_calls": [call] } }],
            "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
        }))
        .into_response()
    }
}

fn message_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn reply_text(text: &str, stream: bool) -> Response {
    if stream {
        sse(&[json!({ "role": "assistant", "content": text })], "stop")
    } else {
        axum::Json(json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": text } }],
            "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
        }))
        .into_response()
    }
}

fn sse(deltas: &[Value], finish: &str) -> Response {
    let mut body = String::new();
    let chunk = |delta: &Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    };
    for delta in deltas {
        body.push_str(&format!("data: {}\n\n", chunk(delta, Value::Null)));
    }
    body.push_str(&format!("data: {}\n\n", chunk(&json!({}), json!(finish))));
    body.push_str(&format!(
        "data: {}\n\n",
        json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake", "choices": [],
                "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 } })
    ));
    body.push_str("data: [DONE]\n\n");
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// POSTs `body` to the model's chat completions and returns the response's status line.
    fn post(model_url: &str, body: &Value) -> String {
        let addr = model_url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        let body = body.to_string();
        write!(
            stream,
            "POST /chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response.lines().next().unwrap_or_default().to_owned()
    }

    fn tool_result_request() -> Value {
        json!({
            "tools": [{ "type": "function", "function": { "name": "t", "parameters": {} } }],
            "messages": [{ "role": "user", "content": "go" }, { "role": "tool", "content": "done" }],
        })
    }

    #[test]
    fn a_dropped_gated_model_refuses_its_held_reply_instead_of_waiting_for_a_release() {
        let model = FakeModel::scripted("t", &json!({}), 2, true);
        let url = model.url.clone();
        let held = std::thread::spawn(move || post(&url, &tool_result_request()));
        while model.requests().is_empty() {
            std::thread::yield_now();
        }
        drop(model);
        let status = held.join().expect("the request ends");
        assert!(status.contains(" 503 "), "{status}");
    }

    #[test]
    fn the_turn_requests_leave_out_the_title_request_that_offers_no_tools() {
        let model = FakeModel::start("t", &json!({}));
        let title = json!({ "messages": [{ "role": "user", "content": "name this" }] });
        assert!(post(&model.url, &title).contains(" 200 "));
        assert!(post(&model.url, &tool_result_request()).contains(" 200 "));
        assert_eq!(model.requests().len(), 2);
        assert_eq!(model.turn_requests(), vec![tool_result_request()]);
    }
}
