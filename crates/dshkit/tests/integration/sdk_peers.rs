//! Real MCP clients from npm: the official TypeScript SDK client and the MCP
//! Inspector CLI, each over stdio and over HTTP with the token.

use std::process::Command;

use dshkit_test::Peers;
use serde_json::Value;

use crate::support::{dshkit, isolate, output, start_http, stdout_json};

/// `command` run to its end, which must succeed: what it printed, as JSON.
fn json_of(command: &mut Command) -> Value {
    let out = output(command);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

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
    let report = json_of(
        node(&peers, home.path())
            .arg(peers.script("sdk-client.mjs"))
            .arg("stdio")
            .arg(dshkit())
            .arg("mcp"),
    );
    assert_sdk_report(&report);
}

#[test]
fn the_typescript_sdk_client_uses_dshkit_over_http_with_the_token() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let server = start_http(&[]);
    let report = json_of(
        node(&peers, home.path())
            .arg(peers.script("sdk-client.mjs"))
            .args(["http", &server.url, &server.token]),
    );
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
    let tools = json_of(&mut list);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, crate::support::ALL_TOOLS);
    let result = json_of(&mut call);
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

    // The evidence of the server's environment, as the Inspector lists it.
    let evidence = home.path().join("evidence");
    let report = evidence.join("verify/pv-1/verify-1.json");
    std::fs::create_dir_all(report.parent().unwrap()).unwrap();
    std::fs::write(&report, r#"{"verdict":"VERIFIED"}"#).unwrap();
    let mut resources = inspector(&peers, home.path());
    resources
        .arg("-e")
        .arg(format!("DSHKIT_EVIDENCE_ROOT={}", evidence.display()));
    target(&mut resources);
    resources.args(["--method", "resources/list"]);
    let listed = json_of(&mut resources);
    assert!(
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == "dshkit://evidence/verify/pv-1/verify-1.json"
                && r["mimeType"] == "application/json"),
        "{listed}"
    );
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

/// The evidence report of `sdk-evidence.mjs`: at least 5 progress stages, the
/// screenshot as image content equal to the saved (and linked) PNG, every linked
/// file listed and readable, the list announced as changed, and a warning after
/// the browser was killed under the server.
fn assert_evidence_report(report: &Value, evidence_root: &std::path::Path, stdio: bool) {
    use sha2::Digest as _;
    assert!(
        report["capabilities"]["resources"]["listChanged"] == true,
        "{report}"
    );
    assert!(report["capabilities"]["logging"].is_object(), "{report}");
    let progress = report["progress"].as_array().unwrap();
    assert!(progress.len() >= 5, "{progress:?}");
    // Six stages are reported (open, load, one step, assertions, screenshot,
    // verdict); under load over HTTP the last one has once come after the result,
    // which the client then drops.
    assert!(
        progress
            .iter()
            .any(|p| p.as_str() == Some("step 1/1: press \"Tab\"")),
        "{progress:?}"
    );
    // Over stdio the announcement comes before the result; over HTTP it is not
    // tied to the request, so it travels on the client's standalone stream.
    let announced = if stdio {
        "listChangedBeforeResult"
    } else {
        "listChangedTotal"
    };
    assert!(report[announced].as_u64().unwrap() >= 1, "{report}");
    let png_link = report["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["mimeType"] == "image/png")
        .unwrap_or_else(|| panic!("the screenshot is linked: {report}"));
    let uri = png_link["uri"].as_str().unwrap();
    let on_disk = std::fs::read(evidence_root.join(uri.strip_prefix("dshkit://evidence/").unwrap())).unwrap();
    let saved = hex::encode(sha2::Sha256::digest(&on_disk));
    assert_eq!(report["images"][0]["mimeType"], "image/png");
    assert_eq!(
        report["images"][0]["sha256"],
        saved.as_str(),
        "the image is the saved screenshot"
    );
    let listed = report["listed"].as_array().unwrap();
    for read in report["reads"].as_array().unwrap() {
        assert!(listed.contains(&read["uri"]), "{read} is listed");
        if read["uri"] == uri {
            assert_eq!(
                read["sha256"],
                saved.as_str(),
                "the read blob is the saved screenshot"
            );
        }
    }
    assert!(
        report["reads"].as_array().unwrap().len() >= 2,
        "report and screenshot: {report}"
    );
    assert_eq!(
        (report["firstOpen"].as_bool(), report["reopened"].as_bool()),
        (Some(true), Some(true))
    );
    let logs = report["logsAfterRelaunch"].as_array().unwrap();
    assert!(
        logs.iter().any(
            |l| l["level"] == "warning" && l["data"].as_str().unwrap().contains("launched a new browser")
        ),
        "{report}"
    );
}

const TODO_APP: &str = "<!doctype html><title>Todo</title><h1>Todo</h1><p>Nothing yet.</p>";

/// Runs an SDK client's evidence demo (`client` is the command up to its script)
/// over stdio and over HTTP with the token, and judges each report.
fn evidence_demo(client: impl Fn(&std::path::Path) -> Command) {
    let app = dshkit_test::FixtureServer::page(TODO_APP);
    let home = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    let report = json_of(
        client(home.path())
            .env("DSHKIT_EVIDENCE_ROOT", evidence.path())
            .arg(app.url("/"))
            .arg("stdio")
            .arg(dshkit())
            .arg("mcp"),
    );
    assert_evidence_report(&report, evidence.path(), true);

    let server = start_http(&[]);
    let report = json_of(
        client(home.path())
            .arg(app.url("/"))
            .args(["http", &server.url, &server.token])
            .arg(server.guard.pid().to_string()),
    );
    // The HTTP server's evidence root is under its own isolated home.
    let root = server.home().join(".state/dshkit/evidence");
    assert_evidence_report(&report, &root, false);
}

#[test]
fn the_typescript_sdk_client_gets_images_resources_progress_and_logs_over_stdio_and_http() {
    let peers = Peers::get();
    evidence_demo(|home| {
        let mut command = node(&peers, home);
        command.arg(peers.script("sdk-evidence.mjs"));
        command
    });
}

/// The same demo through the official Python SDK client (`mcp`, pinned): the
/// same report, so the same assertions.
#[test]
fn the_python_sdk_client_gets_images_resources_progress_and_logs_over_stdio_and_http() {
    let peers = Peers::get();
    evidence_demo(|home| {
        let mut command = Command::new(peers.python_sdk());
        isolate(&mut command, home);
        command.arg(dshkit_test::workspace_root().join("harness/pysdk/sdk_evidence.py"));
        command
    });
}
