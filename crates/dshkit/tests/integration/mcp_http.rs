//! `dshkit mcp --http`: readiness, the security cases in order, and the three
//! protocol versions over raw HTTP.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Home, HttpServer, http_session_message as message, start_http};

const ACCEPT: &str = "application/json, text/event-stream";

fn initialize_body(version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"raw-http","version":"1"}}})
}

fn post(server: &HttpServer, client: &reqwest::Client) -> reqwest::RequestBuilder {
    client
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", ACCEPT)
}

/// `dshkit ARGS` (an `mcp --http` server) in `home` with `DSHKIT_MCP_TOKEN` set
/// to `token`, once its ready line named its URL: the server and that URL.
fn serve_with_token(home: &Home, args: &[&str], token: &str) -> (dshkit_test::ChildGuard, String) {
    dshkit_test::spawn_ready(
        home.dshkit().args(args).env("DSHKIT_MCP_TOKEN", token),
        "dshkit mcp: ",
        std::time::Duration::from_secs(20),
    )
}

/// A well-formed, authorized initialize that must succeed.
async fn good_request_still_works(server: &HttpServer, client: &reqwest::Client) {
    let response = post(server, client)
        .bearer_auth(&server.token)
        .json(&initialize_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let message = message(&response.text().await.unwrap());
    assert_eq!(message["result"]["serverInfo"]["name"], "dshkit", "{message}");
}

#[tokio::test]
async fn the_ready_line_is_the_only_stdout_and_names_the_endpoint() {
    let server = start_http(&[]);
    let rest = server
        .url
        .strip_prefix("http://127.0.0.1:")
        .expect("loopback URL");
    let port = rest.strip_suffix("/mcp").expect("ends in /mcp");
    assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "{}", server.url);
}

#[tokio::test]
async fn security_cases_are_refused_with_the_right_status_and_the_server_keeps_serving() {
    let server = start_http(&[]);
    // A fresh connection per request: after refusing an oversized upload the server
    // closes that connection (it will not drain the body), as it should.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let body = initialize_body("2025-11-25");

    // 401: no token, then a wrong one.
    let response = post(&server, &client).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().get("www-authenticate").is_some());
    good_request_still_works(&server, &client).await;
    let wrong = format!("{}x", &server.token[..server.token.len() - 1]);
    let response = post(&server, &client)
        .bearer_auth(wrong)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    good_request_still_works(&server, &client).await;

    // 403: a rebinding Host, then a foreign Origin, each even with the right token.
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .header("Host", "attacker.example:80")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    good_request_still_works(&server, &client).await;
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .header("Origin", "http://attacker.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    good_request_still_works(&server, &client).await;

    // 413: a declared oversized body, then an oversized chunked stream.
    let big = vec![b' '; 2 * 1024 * 1024];
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    good_request_still_works(&server, &client).await;
    let chunks = futures_chunks(&big);
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    good_request_still_works(&server, &client).await;

    // Garbage: a JSON-RPC parse error.
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error = message(&response.text().await.unwrap());
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    good_request_still_works(&server, &client).await;
}

fn futures_chunks(bytes: &[u8]) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + use<> {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        bytes.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    futures::stream::iter(chunks)
}

#[tokio::test]
async fn a_loopback_origin_of_this_server_is_accepted() {
    let server = start_http(&[]);
    let origin = server.url.trim_end_matches("/mcp").to_owned();
    let response = post(&server, &reqwest::Client::new())
        .bearer_auth(&server.token)
        .header("Origin", origin)
        .json(&initialize_body("2025-06-18"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        message(&response.text().await.unwrap())["result"]["protocolVersion"],
        "2025-06-18"
    );
}

#[tokio::test]
async fn the_2026_era_discovers_without_a_session_and_needs_mcp_method() {
    let server = start_http(&[]);
    let client = reqwest::Client::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": meta}});
    let versioned = |method: &str| {
        post(&server, &client)
            .bearer_auth(&server.token)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method)
    };

    let response = versioned("server/discover").json(&discover).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers().get("mcp-session-id").is_none(),
        "2026-07-28 has no sessions"
    );
    let result = message(&response.text().await.unwrap())["result"].clone();
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "dshkit"
    );

    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"dshkit_info","arguments":{},"_meta": meta}});
    let response = versioned("tools/call")
        .header("Mcp-Name", "dshkit_info")
        .json(&call)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let result = message(&response.text().await.unwrap())["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["name"], "dshkit");

    // Without the Mcp-Method header the 2026 request is refused.
    let response = post(&server, &client)
        .bearer_auth(&server.token)
        .header("MCP-Protocol-Version", "2026-07-28")
        .json(&call)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(
        message(&response.text().await.unwrap())["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Method")
    );
}

#[tokio::test]
async fn the_token_can_come_from_the_environment() {
    let home = Home::new();
    let token = "env-token-0123456789abcdef";
    let (_server, url) = serve_with_token(&home, &["mcp", "--http"], token);
    let client = reqwest::Client::new();
    let response = client
        .post(&url)
        .header("Accept", ACCEPT)
        .bearer_auth(token)
        .json(&initialize_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        !home.path().join(".config/dshkit/mcp-token").exists(),
        "no token file when the environment gives one"
    );
}

#[test]
fn a_non_loopback_bind_is_refused_unless_asked_for_with_a_chosen_token() {
    let home = Home::new();
    let out = home.run(["mcp", "--http", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
    assert!(
        !home.path().join(".config/dshkit/mcp-token").exists(),
        "a refused command creates nothing"
    );
    let out = home.run(["mcp", "--http", "0.0.0.0:0", "--allow-remote"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "a freshly generated token is not a chosen one"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("token you chose"));
}

#[tokio::test]
async fn an_explicit_remote_bind_with_a_chosen_token_serves() {
    let home = Home::new();
    let token = "chosen-token-0123456789abcdef";
    let (_server, served) = serve_with_token(&home, &["mcp", "--http", "0.0.0.0:0", "--allow-remote"], token);
    let port = served
        .trim_start_matches("http://0.0.0.0:")
        .trim_end_matches("/mcp");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = reqwest::Client::new();
    let response = client
        .post(&url)
        .header("Accept", ACCEPT)
        .json(&initialize_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "remote mode still needs the token"
    );
    let response = client
        .post(&url)
        .header("Accept", ACCEPT)
        .bearer_auth(token)
        .json(&initialize_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[test]
fn sigterm_stops_the_http_server() {
    let mut server = start_http(&[]);
    let status = server
        .guard
        .terminate(std::time::Duration::from_secs(10))
        .expect("exits on SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// An initialized 2025-era MCP session over raw HTTP: its `Mcp-Session-Id`.
async fn open_mcp_session(server: &HttpServer, client: &reqwest::Client) -> String {
    let response = post(server, client)
        .bearer_auth(&server.token)
        .json(&initialize_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = response.text().await;
    let response = post(server, client)
        .bearer_auth(&server.token)
        .header("Mcp-Session-Id", &id)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    id
}

async fn call_in(server: &HttpServer, client: &reqwest::Client, session: &str, arguments: Value) -> Value {
    let response = post(server, client)
        .bearer_auth(&server.token)
        .header("Mcp-Session-Id", session)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "liveloop_browser", "arguments": arguments}}))
        .send()
        .await
        .unwrap();
    message(&response.text().await.unwrap())
}

#[tokio::test]
async fn one_mcp_session_cannot_drive_another_sessions_preview_even_by_naming_its_owner() {
    let app = dshkit_test::FixtureServer::page("<!doctype html><title>mine</title><button>Mine</button>");
    let server = start_http(&[]);
    let client = reqwest::Client::new();
    let alice = open_mcp_session(&server, &client).await;
    let mallory = open_mcp_session(&server, &client).await;
    let opened = call_in(
        &server,
        &client,
        &alice,
        json!({"operation": "open", "url": app.url("/"), "owner": "build"}),
    )
    .await;
    let preview = opened["result"]["structuredContent"]["session"]
        .as_str()
        .unwrap_or_else(|| panic!("{opened}"))
        .to_owned();
    for arguments in [
        json!({"operation": "snapshot", "session": preview}),
        json!({"operation": "snapshot", "session": preview, "owner": "build"}),
    ] {
        let taken = call_in(&server, &client, &mallory, arguments).await;
        assert_eq!(
            taken["result"]["structuredContent"]["code"], "NOT_OWNER",
            "{taken}"
        );
    }
    let own = call_in(
        &server,
        &client,
        &alice,
        json!({"operation": "snapshot", "session": preview, "owner": "build"}),
    )
    .await;
    assert_eq!(own["result"]["isError"], false, "{own}");
}
