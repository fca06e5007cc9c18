//! The `@modelcontextprotocol/conformance` server scenarios that apply to a
//! tools-only server, run against `dshkit mcp --http` with its default security.
//!
//! Applicable, and run here:
//! - `server-initialize`, `ping`, `tools-list`: the lifecycle and tool listing.
//! - `server-sse-polling`, `server-sse-multiple-streams`: the Streamable HTTP transport.
//! - `dns-rebinding-protection`: Host/Origin validation.
//! - `prompts-list`: dshkit serves the `plugin-fault-diagnosis` prompt.
//! - `logging-set-level`: dshkit declares logging and honours `logging/setLevel`.
//! - `resources-list`: evidence and cassettes are listed as resources.
//!
//! Not applicable, and why:
//! - `tools-call-*` (simple-text, image, audio, embedded-resource, mixed-content,
//!   with-logging, error, with-progress, sampling, elicitation) and
//!   `json-schema-2020-12`: each calls a fixture tool (`test_simple_text`,
//!   `json_schema_2020_12_tool`, ...) that only the suite's reference server defines.
//! - `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`: fixture tools that
//!   elicit; dshkit's tools never ask the client for input.
//! - `completion-complete`: no completions capability (no prompts or templates).
//! - `resources-read-text`, `resources-read-binary`, `resources-templates-read`:
//!   each reads a fixture URI (`test://static-text`, `test://template/{id}/data`)
//!   that only the suite's reference server defines; dshkit's own text and blob
//!   reads are tested in `liveloop_tool.rs` and `echo.rs`.
//! - `resources-subscribe`, `resources-unsubscribe`: dshkit announces list changes
//!   (`listChanged`), not per-resource subscriptions; evidence files never change
//!   once written.
//! - `prompts-get-simple`, `prompts-get-with-args`, `prompts-get-embedded-resource`,
//!   `prompts-get-with-image`: each gets a fixture prompt (`test_simple_prompt`, ...)
//!   that only the suite's reference server defines.
//!
//! The runner's client cannot be given headers, so a preload
//! (`harness/peers/bearer-preload.mjs`) adds the bearer token as a configured
//! client would; a control run without it must fail.

use std::path::Path;
use std::process::Command;

use dshkit_test::Peers;
use serde_json::Value;

use crate::support::{HttpServer, echo_http, everything_http, isolate, output, start_http};

const APPLICABLE: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "prompts-list",
    "logging-set-level",
    "resources-list",
];

/// The conformance runner for `scenario` against `url`, isolated in `out_dir`,
/// writing its results under `out_dir/<scenario>`.
fn runner(peers: &Peers, url: &str, scenario: &str, out_dir: &Path) -> Command {
    let mut command = Command::new(peers.node());
    isolate(&mut command, out_dir);
    command
        .arg(peers.module("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(out_dir.join(scenario));
    command
}

/// The checks the runner wrote for `scenario` under `out_dir`, if it wrote any.
fn written_checks(scenario: &str, out_dir: &Path) -> Option<Vec<Value>> {
    std::fs::read_dir(out_dir.join(scenario))
        .ok()
        .and_then(|mut runs| runs.next())
        .and_then(|run| std::fs::read_to_string(run.ok()?.path().join("checks.json")).ok())
        .and_then(|text| serde_json::from_str::<Vec<Value>>(&text).ok())
}

/// Runs one scenario and returns its checks.
fn run_scenario(
    peers: &Peers,
    server: &HttpServer,
    scenario: &str,
    with_token: bool,
    out_dir: &Path,
) -> Vec<Value> {
    let mut command = runner(peers, &server.url, scenario, out_dir);
    if with_token {
        command
            .env(
                "NODE_OPTIONS",
                format!("--import {}", peers.script("bearer-preload.mjs").display()),
            )
            .env("DSHKIT_BEARER_TOKEN", &server.token)
            .env("DSHKIT_BEARER_ORIGIN", server.url.trim_end_matches("/mcp"));
    }
    let out = output(&mut command);
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match written_checks(scenario, out_dir) {
        Some(checks) => checks,
        None if !with_token => Vec::new(),
        None => panic!("{scenario}: no checks.json was written:\n{log}"),
    }
}

#[test]
fn every_applicable_server_scenario_passes() {
    let peers = Peers::get();
    let server = start_http(&[]);
    let dir = tempfile::tempdir().unwrap();
    for scenario in APPLICABLE {
        let checks = run_scenario(&peers, &server, scenario, true, dir.path());
        let verdicts: Vec<(String, String)> = checks
            .iter()
            .filter(|c| c["status"] != "INFO")
            .map(|c| {
                (
                    c["id"].as_str().unwrap_or("?").to_owned(),
                    c["status"].as_str().unwrap_or("?").to_owned(),
                )
            })
            .collect();
        assert!(!verdicts.is_empty(), "{scenario}: no verdicts in {checks:#?}");
        let failed: Vec<&Value> = checks.iter().filter(|c| c["status"] == "FAILURE").collect();
        assert!(failed.is_empty(), "{scenario} failed: {failed:#?}");
        assert!(
            verdicts.iter().any(|(_, s)| s == "SUCCESS"),
            "{scenario}: {verdicts:?}"
        );
    }
}

#[test]
fn without_the_token_the_same_runner_is_refused() {
    let peers = Peers::get();
    let server = start_http(&[]);
    let dir = tempfile::tempdir().unwrap();
    let checks = run_scenario(&peers, &server, "server-initialize", false, dir.path());
    assert!(
        !checks.iter().any(|c| c["status"] == "SUCCESS"),
        "an unauthenticated client must not pass: {checks:#?}"
    );
}

/// Server scenarios run against server-everything, directly and through the Echo
/// recording proxy.
const THROUGH_ECHO: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "prompts-list",
    "resources-list",
    "logging-set-level",
    "completion-complete",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// (check id, status) of one scenario run against `url`.
fn verdicts_at(peers: &Peers, url: &str, scenario: &str, out_dir: &Path) -> Vec<(String, String)> {
    output(&mut runner(peers, url, scenario, out_dir));
    let checks = written_checks(scenario, out_dir).unwrap_or_default();
    let mut verdicts: Vec<(String, String)> = checks
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or("?").to_owned(),
                c["status"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect();
    verdicts.sort();
    verdicts
}

#[test]
fn the_conformance_suite_sees_no_difference_through_the_echo_recording_proxy() {
    let peers = Peers::get();
    let (mut everything, direct) = everything_http(&peers);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("conformance.jsonl");
    let (mut proxy, through) = echo_http(
        dir.path(),
        [
            "echo",
            "record",
            "--http",
            &direct,
            "-o",
            cassette.to_str().unwrap(),
        ],
    );

    let mut compared = 0;
    for scenario in THROUGH_ECHO {
        let plain = verdicts_at(&peers, &direct, scenario, &dir.path().join("direct"));
        let proxied = verdicts_at(&peers, &through, scenario, &dir.path().join("proxied"));
        assert!(
            !plain.is_empty(),
            "{scenario}: no checks against server-everything"
        );
        compared += plain.len();
        if *scenario == "dns-rebinding-protection" {
            // The one deliberate difference: the proxy refuses a foreign Host itself
            // (loopback endpoints are guarded by default), so a check the bare server
            // fails may pass through the proxy; none may get worse.
            for ((id, direct_status), (_, proxied_status)) in plain.iter().zip(&proxied) {
                assert!(
                    proxied_status == direct_status || proxied_status == "SUCCESS",
                    "{scenario}/{id}: {direct_status} directly, {proxied_status} through the proxy"
                );
            }
            continue;
        }
        assert_eq!(proxied, plain, "{scenario}: the proxy changed the result");
    }
    assert!(compared > 10, "{compared} checks compared");
    proxy.terminate(std::time::Duration::from_secs(5));
    assert!(cassette.is_file(), "the proxied runs were recorded");
    let _ = everything.terminate(std::time::Duration::from_secs(5));
}
