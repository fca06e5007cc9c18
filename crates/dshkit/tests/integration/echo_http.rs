//! Echo in front of an HTTP upstream, the real server-everything in its
//! Streamable HTTP mode: an answer that is not a 200 (a 400 for a session the
//! server does not know) is recorded with its status, content type and body,
//! and replayed with them; an HTTP replay passes its misses to the server over
//! HTTP and appends its answers.

use std::path::Path;
use std::time::Duration;

use dshkit_test::Peers;
use serde_json::{Value, json};

use crate::support::{Home, echo_http, everything_http};

/// What came back for one POST.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    session: Option<String>,
    body: String,
}

/// POSTs `message` to `url` as an MCP client does, with `session` as its
/// `Mcp-Session-Id`.
fn post(url: &str, session: Option<&str>, message: &Value) -> Answer {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(message);
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        let response = request.send().await.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        Answer {
            status: response.status().as_u16(),
            content_type: header("content-type"),
            session: header("mcp-session-id"),
            body: response.text().await.unwrap(),
        }
    })
}

/// A session at `url`: initialize, then `tools/list` under a session the
/// server never gave, then under its own. The three answers.
fn session_with_a_stale_id(url: &str) -> [Answer; 3] {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "dshkit-echo-test", "version": "1"}}});
    let opened = post(url, None, &initialize);
    let session = opened.session.clone().expect("initialize opens a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(&session), &initialized).status, 202);
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let stale = post(url, Some("no-such-session"), &list(2));
    let listed = post(url, Some(&session), &list(3));
    [opened, stale, listed]
}

/// The cassette's interactions.
fn interactions(cassette: &Path) -> Vec<Value> {
    std::fs::read_to_string(cassette)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["type"] == "interaction")
        .collect()
}

#[test]
fn an_http_upstreams_400_is_recorded_and_replayed_with_its_status_content_type_and_body() {
    let peers = Peers::get();
    let dir = Home::new();
    let (mut server, server_url) = everything_http(&peers);
    let cassette = dir.path().join("status.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let (mut proxy, url) = echo_http(
        dir.path(),
        ["echo", "record", "--http", &server_url, "-o", cassette_arg],
    );
    let live = session_with_a_stale_id(&url);
    let stopped = proxy
        .interrupt(Duration::from_secs(10))
        .expect("the recorder did not stop on SIGINT");
    assert!(stopped.success(), "{stopped:?}");
    let _ = server.terminate(Duration::from_secs(5));
    assert_eq!(live[1].status, 400, "{live:?}");
    assert!(live[1].body.contains("No valid session ID"), "{live:?}");
    assert_eq!(live[2].status, 200, "{live:?}");

    let recorded = interactions(&cassette);
    let methods: Vec<(&str, &Value)> = recorded
        .iter()
        .map(|i| (i["request"]["method"].as_str().unwrap(), &i["status"]))
        .collect();
    assert_eq!(
        methods,
        [
            ("initialize", &Value::Null),
            ("tools/list", &json!(400)),
            ("tools/list", &Value::Null)
        ],
        "the 400 is paired with its request, the 200s carry no status"
    );
    assert_eq!(recorded[1]["body"], live[1].body.as_str());
    assert_eq!(
        recorded[1]["responses"],
        json!([]),
        "its body is no JSON-RPC answer"
    );

    let (_replay, url) = echo_http(dir.path(), ["echo", "replay", cassette_arg, "--http"]);
    let replayed = session_with_a_stale_id(&url);
    assert_eq!(replayed[1], live[1], "the same status, content type and body");
    assert_eq!(replayed[0].status, 200);
    let session = replayed[0].session.as_deref().unwrap();
    assert_ne!(
        Some(session),
        live[0].session.as_deref(),
        "a replay issues its own session id"
    );
    assert_eq!(replayed[2].status, 200);
    assert!(replayed[2].body.contains("\"tools\""), "{:?}", replayed[2]);
}

/// A `tools/call` of server-everything's `echo` tool.
fn echo_call(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": message}}})
}

/// The JSON-RPC message of `answer` (JSON, or the last event of an SSE stream).
fn message(answer: &Answer) -> Value {
    let text = answer
        .body
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(&answer.body);
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

#[test]
fn an_http_replay_passes_a_miss_to_the_real_server_over_http_and_appends_its_answer() {
    let peers = Peers::get();
    let dir = Home::new();
    let (mut server, server_url) = everything_http(&peers);
    let cassette = dir.path().join("passthrough.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "dshkit-echo-test", "version": "1"}}});
    let (mut proxy, url) = echo_http(
        dir.path(),
        ["echo", "record", "--http", &server_url, "-o", cassette_arg],
    );
    let session = post(&url, None, &initialize).session.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&url, Some(&session), &initialized);
    let one = message(&post(&url, Some(&session), &echo_call(2, "one")));
    assert_eq!(one["result"]["content"][0]["text"], "Echo: one", "{one}");
    assert!(
        proxy
            .interrupt(Duration::from_secs(10))
            .is_some_and(|s| s.success())
    );
    assert_eq!(interactions(&cassette).len(), 2);

    let (mut replay, url) = echo_http(
        dir.path(),
        [
            "echo",
            "replay",
            cassette_arg,
            "--http",
            "--on-miss",
            "passthrough",
            "--annotate",
            "--",
            &server_url,
        ],
    );
    let session = post(&url, None, &initialize).session.unwrap();
    let hit = message(&post(&url, Some(&session), &echo_call(2, "one")));
    assert_eq!(hit["result"]["_meta"]["dshkit/echo"]["outcome"], "hit", "{hit}");
    let missed = message(&post(&url, Some(&session), &echo_call(3, "two")));
    assert_eq!(missed["id"], 3, "{missed}");
    assert_eq!(missed["result"]["content"][0]["text"], "Echo: two", "{missed}");
    assert_eq!(
        missed["result"]["_meta"]["dshkit/echo"]["outcome"], "passthrough",
        "{missed}"
    );
    // A miss whose answer streams progress: each event is passed on, then kept.
    let slow = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "trigger-long-running-operation", "arguments": {"duration": 0.2, "steps": 2},
        "_meta": {"progressToken": "p-4"}}});
    let streamed = post(&url, Some(&session), &slow);
    let events: Vec<Value> = streamed
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(
        events.len(),
        3,
        "two progress events, then the answer: {streamed:?}"
    );
    assert_eq!(events[0]["params"]["progressToken"], "p-4");
    assert_eq!(events[2]["id"], 4);
    assert!(replay.interrupt(Duration::from_secs(10)).is_some());
    let _ = server.terminate(Duration::from_secs(5));
    let appended = interactions(&cassette);
    let [.., two, slow] = &appended[..] else {
        panic!("{appended:?}")
    };
    assert_eq!(two["origin"], "live", "{two}");
    assert_eq!(two["ordinal"], 3, "numbered after the recorded ones");
    assert_eq!(two["responses"][0]["result"]["content"][0]["text"], "Echo: two");
    assert_eq!(slow["notifications"].as_array().map(Vec::len), Some(2), "{slow}");

    // The server gone, what passed through is a hit.
    let (_replay, url) = echo_http(dir.path(), ["echo", "replay", cassette_arg, "--http"]);
    let session = post(&url, None, &initialize).session.unwrap();
    let again = message(&post(&url, Some(&session), &echo_call(9, "two")));
    assert_eq!(again["result"]["content"][0]["text"], "Echo: two", "{again}");
}
