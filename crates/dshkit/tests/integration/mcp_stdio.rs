//! `dshkit mcp` over stdio, driven with raw JSON-RPC lines.

use dshkit_os::process::Identity;
use std::time::Duration;

use dshkit_test::FixtureServer;
use serde_json::json;

use crate::support::{EnvDir, Home, Session, describe, output};

#[test]
fn both_initialize_versions_are_negotiated() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut session = Session::start(&[]);
        let response = session.initialize(version);
        assert_eq!(response["result"]["protocolVersion"], version, "{response}");
        assert_eq!(response["result"]["serverInfo"]["name"], "dshkit");
        assert!(response["result"]["capabilities"]["tools"].is_object());
    }
}

#[test]
fn garbage_is_survived_and_every_stdout_line_is_json_rpc() {
    // Debug logging on: none of it may reach stdout.
    let mut session = Session::initialized(&[], &[("DSHKIT_LOG", "debug")]);
    session.send("this is not json {");
    session.send(r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"#); // cut off mid-object
    let info = session.call(7, "dshkit_info", &json!({}));
    assert_eq!(info["id"], 7, "{info}");
    assert_eq!(info["result"]["structuredContent"]["name"], "dshkit");
    assert_eq!(info["result"]["isError"], false);
    assert!(
        info["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2026-07-28")
    );
}

#[test]
fn unknown_tool_is_a_protocol_error_and_bad_arguments_a_tool_error() {
    let mut session = Session::initialized(&[], &[]);
    let unknown = session.call(1, "no_such_tool", &json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/list")
    );
    let bad = session.call(2, "dshkit_doctor", &json!({"verbose": true}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let text = bad["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("unknown field `verbose`") && text.contains("inputSchema"),
        "{text}"
    );
}

#[test]
fn doctor_result_has_structured_content_and_a_compact_text() {
    let mut session = Session::initialized(&[], &[]);
    let doctor = session.call(3, "dshkit_doctor", &json!({}));
    let result = &doctor["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["formatVersion"], 1);
    let ids: Vec<&str> = result["structuredContent"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["chromium", "node", "dsh", "dsh_home", "evidence_root", "disk"]
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("dshkit doctor:") && text.lines().count() == 7,
        "{text}"
    );
}

#[test]
fn stdin_eof_ends_the_server_cleanly() {
    let session = Session::initialized(&[], &[]);
    assert!(session.finish(Duration::from_secs(10)).success());
}

#[test]
fn sigterm_and_sigint_end_the_server_cleanly() {
    for signal in ["TERM", "INT"] {
        let mut session = Session::initialized(&[], &[]);
        let server = Identity::of(session.pid()).unwrap();
        assert!(if signal == "TERM" {
            server.terminate()
        } else {
            server.interrupt()
        });
        let status = session.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "{signal:?}: {status:?}");
    }
}

#[test]
fn tool_families_are_selected_with_tools() {
    let out = Home::new().run(["mcp", "--tools", "core,nope"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool family `nope`") && stderr.contains("core"),
        "{stderr}"
    );

    let mut session = Session::initialized(&[], &[]);
    session.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
    let names: Vec<String> = session.recv()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, crate::support::ALL_TOOLS);
}

#[test]
fn the_diagnosis_playbook_is_an_mcp_prompt() {
    let mut session = Session::start(&[]);
    let init = session.initialize("2025-11-25");
    assert!(init["result"]["capabilities"]["prompts"].is_object(), "{init}");
    session.send(r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list"}"#);
    let list = session.recv();
    assert_eq!(
        list["result"]["prompts"][0]["name"], "plugin-fault-diagnosis",
        "{list}"
    );
    session.send(
        r#"{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"plugin-fault-diagnosis"}}"#,
    );
    let prompt = session.recv();
    let text = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("# plugin-fault-diagnosis"), "{prompt}");
    // The runtime-debugging skill, without its file's front matter.
    session
        .send(r#"{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"dsh-runtime-debugging"}}"#);
    let skill = session.recv();
    let text = skill["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("# Runtime debugging of a live DSH"), "{skill}");
    let file =
        std::fs::read_to_string(dshkit_test::workspace_root().join("skills/dsh-runtime-debugging/SKILL.md"))
            .unwrap();
    assert!(
        file.starts_with("---\nname: dsh-runtime-debugging\n") && file.ends_with(text),
        "the file's body"
    );
    session.send(r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"nope"}}"#);
    assert_eq!(session.recv()["error"]["code"], -32602);
}

#[test]
fn describe_prints_exactly_the_tools_the_server_lists_and_the_prompts() {
    let described = describe(Home::new().path());
    let mut mcp = Session::initialized(&[], &[]);
    mcp.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
    let listed = mcp.recv();
    assert_eq!(described["tools"], listed["result"]["tools"]);
    let playbook = described["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "plugin-fault-diagnosis")
        .expect("the playbook is described");
    assert_eq!(playbook["text"].as_str().unwrap(), dshkit_check::PLAYBOOK);
}

#[test]
fn the_settings_file_sets_the_preview_limit_a_change_applies_without_a_restart_and_a_broken_one_is_refused() {
    let config = EnvDir::config_home();
    let home = Home::new();
    // `dshkit ARGS` in the home, reading its settings from `config`.
    let configured = |args: &[&str]| {
        let (name, value) = config.env();
        output(home.dshkit().env(name, value).args(args))
    };
    let set = configured(&["settings", "set", "--value", r#"{"previewLimit": 1}"#]);
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let page = FixtureServer::page("<p>one</p>");
    let mut mcp = Session::initialized(&[], &[config.env()]);
    // At the limit an owner's own idle preview makes room; another owner's never does.
    let open = |owner: &str| json!({"operation": "open", "url": page.url("/"), "owner": owner});
    let first = mcp.call(1, "liveloop_browser", &open("build"));
    assert_eq!(first["result"]["isError"], false, "{first}");
    let second = mcp.call(2, "liveloop_browser", &open("review"));
    assert_eq!(
        second["result"]["structuredContent"]["code"], "SESSION_LIMIT",
        "{second}"
    );

    // A changed limit applies to the running server's next call.
    let raised = configured(&["settings", "set", "--fields", r#"{"previewLimit": "2"}"#]);
    assert!(
        raised.status.success(),
        "{}",
        String::from_utf8_lossy(&raised.stderr)
    );
    assert!(
        String::from_utf8_lossy(&raised.stdout).contains("Changed Preview session limit: 1 -> 2"),
        "{raised:?}"
    );
    let third = mcp.call(3, "liveloop_browser", &open("review"));
    assert_eq!(third["result"]["isError"], false, "{third}");

    // An invalid value is refused by `settings set`, naming the setting and its
    // rule, and nothing changes...
    let refused = configured(&["settings", "set", "--fields", r#"{"previewLimit": 99}"#]);
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(
            "previewLimit (Preview session limit) must be a whole number from 1 to 64 previews, not 99"
        ),
        "{refused:?}"
    );
    // ...and a hand-broken file fails the running server's calls that use it,
    // and stops a new `dshkit mcp`, each with its fix, but not --describe.
    std::fs::write(config.path().join("dshkit/settings.json"), "{ broken").unwrap();
    let broken = mcp.call(4, "liveloop_browser", &open("review"));
    assert_eq!(
        broken["result"]["structuredContent"]["code"], "SETTINGS_NOT_JSON",
        "{broken}"
    );
    assert!(broken.to_string().contains("dshkit settings set"), "{broken}");
    let serve = configured(&["mcp", "--stdio"]);
    assert!(!serve.status.success());
    assert!(
        String::from_utf8_lossy(&serve.stderr).contains("dshkit settings set"),
        "{serve:?}"
    );
    assert!(configured(&["mcp", "--describe"]).status.success());
}

/// A server whose stdout and stderr peer is gone (the host that started it was
/// killed) still stops on SIGTERM: a log line it cannot write is lost, not fatal.
#[test]
fn sigterm_ends_a_server_whose_stderr_is_gone() {
    use std::io::Read as _;
    let home = Home::new();
    let (ours, theirs) = std::io::pipe().unwrap();
    let mut command = home.dshkit();
    command
        .args(["mcp", "--http", "127.0.0.1:0"])
        .env("DSHKIT_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(theirs.try_clone().unwrap())
        .stderr(theirs);
    let mut child = command.spawn().unwrap();
    let mut ours = ours;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("dshkit mcp: ") {
        let n = ours.read(&mut chunk).unwrap();
        assert!(n > 0, "the server ended before it was ready");
        seen.extend_from_slice(&chunk[..n]);
    }
    drop(ours);
    assert!(Identity::of(child.id()).unwrap().terminate());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            panic!("SIGTERM did not end the server");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
