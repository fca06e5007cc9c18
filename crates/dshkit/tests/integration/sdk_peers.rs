//! Real MCP clients from npm: the official TypeScript SDK client and the MCP
//! Inspector CLI, each over stdio and over HTTP with the token.

use std::process::Command;

use dshkit_test::Peers;
use serde_json::Value;

use crate::support::{dshkit, isolate, output, start_http, stdout_json};

fn node(peers: &Peers, home: &std::path::Path) -> Command {
    let mut command = Command::new(peers.node());
    isolate(&mut command, home);
    command
}

fn assert_sdk_report(report: &Value) {
    assert_eq!(report["serverVersion"]["name"], "dshkit");
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, crate::support::ALL_TOOLS);
    assert_eq!(report["tools"][0]["annotations"]["readOnlyHint"], true);
    assert_eq!(report["tools"][0]["hasOutputSchema"], true);
    let doctor = &report["doctor"];
    assert_eq!(doctor["isError"], false, "{doctor}");
    assert_eq!(doctor["structuredContent"]["facts"][0]["id"], "chromium");
    assert!(
        doctor["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("dshkit doctor:")
    );
    assert_eq!(report["badArguments"]["isError"], true);
    assert_eq!(report["unknownTool"]["error"]["code"], -32602, "{report}");
}

#[test]
fn the_typescript_sdk_client_uses_dshkit_over_stdio() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let out = output(
        node(&peers, home.path())
            .arg(peers.script("sdk-client.mjs"))
            .arg("stdio")
            .arg(dshkit())
            .arg("mcp"),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_sdk_report(&stdout_json(&out));
}

#[test]
fn the_typescript_sdk_client_uses_dshkit_over_http_with_the_token() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let server = start_http(&[]);
    let out = output(
        node(&peers, home.path())
            .arg(peers.script("sdk-client.mjs"))
            .args(["http", &server.url, &server.token]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = stdout_json(&out);
    assert_eq!(
        report["protocolVersion"], "2025-11-25",
        "the SDK negotiates its newest version"
    );
    assert_sdk_report(&report);

    // The same client without the token is turned away.
    let out = output(
        node(&peers, home.path())
            .arg(peers.script("sdk-client.mjs"))
            .args(["http", &server.url, "wrong-token-0123456789"]),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn inspector(peers: &Peers, home: &std::path::Path) -> Command {
    let mut command = node(peers, home);
    command
        .arg(peers.module("@modelcontextprotocol/inspector/clients/launcher/build/index.js"))
        .arg("--cli");
    command
}

fn check_inspector_run(mut list: Command, mut call: Command) {
    let out = output(&mut list);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tools = stdout_json(&out);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, crate::support::ALL_TOOLS);
    let out = output(&mut call);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result = stdout_json(&out);
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["formatVersion"], 1, "{result}");
}

#[test]
fn the_inspector_cli_uses_dshkit_over_stdio() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let target = |command: &mut Command| {
        command.arg(dshkit()).arg("mcp");
    };
    let mut list = inspector(&peers, home.path());
    target(&mut list);
    list.args(["--method", "tools/list"]);
    let mut call = inspector(&peers, home.path());
    target(&mut call);
    call.args(["--method", "tools/call", "--tool-name", "dshkit_doctor"]);
    check_inspector_run(list, call);
}

#[test]
fn the_inspector_cli_uses_dshkit_over_http_with_the_token() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let server = start_http(&[]);
    let header = format!("Authorization: Bearer {}", server.token);
    let mut list = inspector(&peers, home.path());
    list.args([
        server.url.as_str(),
        "--transport",
        "http",
        "--header",
        &header,
        "--method",
        "tools/list",
    ]);
    let mut call = inspector(&peers, home.path());
    call.args([
        server.url.as_str(),
        "--transport",
        "http",
        "--header",
        &header,
        "--method",
        "tools/call",
        "--tool-name",
        "dshkit_doctor",
    ]);
    check_inspector_run(list, call);
}
