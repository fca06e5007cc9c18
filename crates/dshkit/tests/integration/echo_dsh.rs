//! Echo inside a real DSH: DSH's own MCP client reaches server-everything through
//! an Echo overlay, the plugin (with the Echo registry in its row) annotates each
//! call, and DSH persists the annotation on the call's ordinary `tool/result`.
//! Everything is read back from DSH's own session store.

use dshkit_test::{FakeModel, Peers};
use serde_json::json;

use crate::support::{
    Home, RECORDED_GREETING, dsh_run_in, dsh_turn, echo_overlay, echo_registry, echo_root, everything_http,
    free_port, headless_home, http_registry, install, install_with_echo, recorded_everything,
    stored_tool_results, web_row,
};

#[test]
fn dsh_keeps_each_replayed_calls_cassette_outcome_on_its_tool_result() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let (root, registry) = recorded_everything(&peers, &home, &dsh_home);
    install_with_echo(&home, &dsh_home, "headless", &registry);

    // Replay: the recorded call, then one whose arguments changed.
    let before = stored_tool_results(&dsh_home).len();
    let replay = echo_overlay(&home, &dsh_home, &root.join("everything.jsonl"), "replay", None);
    let changed = json!({"message": "a greeting never recorded"});
    let hello = json!({"message": RECORDED_GREETING});
    let model = FakeModel::sequence(
        &[
            ("mcp__everything__echo", hello),
            ("mcp__everything__echo", changed),
        ],
        false,
    );
    dsh_turn(&peers, home.path(), Some(&replay), &model, "Echo two greetings.");

    let stored = stored_tool_results(&dsh_home);
    let replayed = &stored[before..];
    assert_eq!(replayed.len(), 2, "two calls replayed: {replayed:#?}");
    let hit = &replayed[0]["data"];
    let note = &hit["meta"]["dshCassette"];
    assert_eq!(note["outcome"], "hit", "{hit:#}");
    assert_eq!(note["id"], "everything");
    assert_eq!(note["mode"], "replay");
    assert_eq!(
        note["path"], "everything.jsonl",
        "relative to the root, never absolute"
    );
    assert_eq!(note["tool"], "echo");
    assert!(note["ordinal"].as_u64().is_some(), "{note:#}");
    assert_eq!(note["fingerprint"].as_str().map(str::len), Some(16), "{note:#}");
    assert!(
        hit.to_string().contains(&format!("Echo: {RECORDED_GREETING}")),
        "the cassette answered: {hit:#}"
    );
    let miss = &replayed[1]["data"];
    let note = &miss["meta"]["dshCassette"];
    assert_eq!(note["outcome"], "miss", "{miss:#}");
    assert_eq!(note["miss"]["reason"], "arguments_differ", "{note:#}");
    assert_eq!(note["miss"]["differingPaths"], json!(["message"]), "{note:#}");
    assert!(
        note.get("ordinal").is_none(),
        "a miss has no recorded answer: {note:#}"
    );
    assert_eq!(
        note["miss"]["nearestOrdinal"],
        replayed[0]["data"]["meta"]["dshCassette"]["ordinal"]
    );
    assert_ne!(
        note["fingerprint"], replayed[0]["data"]["meta"]["dshCassette"]["fingerprint"],
        "other arguments, another key"
    );
    assert!(
        !stored
            .iter()
            .any(|event| event.to_string().contains(&*root.to_string_lossy())),
        "no event names the Echo root's absolute path"
    );
}

#[test]
fn an_echo_registry_whose_cassette_leaves_its_root_is_refused_with_the_rule_and_nothing_installed() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let root = echo_root(&home);
    let registry = echo_registry(&home, &root, "../elsewhere.jsonl");
    let patch = dsh_home.join("profiles/headless/cordis.patch.yml");
    let before = std::fs::read(&patch).ok();
    let refused = install(
        home.path(),
        &dsh_home,
        "headless",
        &["--no-boot-check", "--echo", &registry.to_string_lossy()],
    );
    assert_eq!(refused.status.code(), Some(3), "refused input");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("leaves the Echo root [echo.path.inside-root]"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&patch).ok(), before, "the profile is as it was");
    assert!(
        !dsh_home.join("profiles/headless/plugins/dshkit").exists(),
        "nothing installed"
    );
}

#[test]
fn a_root_swapped_for_a_symlink_after_install_is_refused_at_the_call_and_the_call_goes_on() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let (root, registry) = recorded_everything(&peers, &home, &dsh_home);
    install_with_echo(&home, &dsh_home, "headless", &registry);
    // The registry is checked at every call, not only when installed.
    let moved = root.with_file_name("echo-moved");
    std::fs::rename(&root, &moved).unwrap();
    dshkit_os::fs::symlink(&moved, &root).unwrap();
    let replay = echo_overlay(&home, &dsh_home, &root.join("everything.jsonl"), "replay", None);
    let before = stored_tool_results(&dsh_home).len();
    let model = FakeModel::sequence(
        &[("mcp__everything__echo", json!({"message": RECORDED_GREETING}))],
        false,
    );
    dsh_turn(&peers, home.path(), Some(&replay), &model, "Echo a greeting.");
    let stored = stored_tool_results(&dsh_home);
    let call = &stored[before..][0]["data"];
    assert!(
        call.to_string().contains(&format!("Echo: {RECORDED_GREETING}")),
        "the call itself was answered: {call:#}"
    );
    let note = &call["meta"]["dshCassette"];
    assert_eq!(note["server"], "everything", "{note:#}");
    let error = note["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error said: {note:#}"));
    assert!(error.contains("[echo.root.no-symlink]"), "{error}");
    assert!(note.get("outcome").is_none(), "no outcome is claimed: {note:#}");
}

/// Nothing accepts on `port` once DSH is gone (the proxies end with the plugin).
fn assert_closed(port: u16) {
    dshkit_test::wait_until(
        std::time::Duration::from_secs(15),
        &format!("something still listens on the proxy's port {port} after DSH stopped"),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
    );
}

#[test]
fn an_http_server_is_recorded_then_replayed_through_the_plugins_own_proxy_which_ends_with_dsh() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let root = echo_root(&home);
    let (server, upstream) = everything_http(&peers);
    let port = free_port();
    let row = web_row(&home, port);
    let hello = json!({"message": RECORDED_GREETING});

    // Record: DSH's client reaches the real HTTP server through the plugin's proxy.
    install_with_echo(
        &home,
        &dsh_home,
        "headless",
        &http_registry(&home, &root, "record", port, &upstream),
    );
    let model = FakeModel::sequence(&[("mcp__web__echo", hello.clone())], false);
    dsh_turn(&peers, home.path(), Some(&row), &model, "Echo a greeting.");
    let recorded = &stored_tool_results(&dsh_home)[0]["data"];
    assert!(
        recorded
            .to_string()
            .contains(&format!("Echo: {RECORDED_GREETING}")),
        "the real server answered: {recorded:#}"
    );
    assert_eq!(
        recorded["meta"]["dshCassette"]["outcome"], "recorded",
        "{recorded:#}"
    );
    let cassette = std::fs::read_to_string(root.join("web.jsonl")).expect("the proxy wrote the cassette");
    assert!(cassette.contains(RECORDED_GREETING), "{cassette}");
    assert!(
        cassette.contains("\"transport\":\"http\""),
        "recorded over HTTP: {cassette}"
    );
    assert_closed(port);

    // Passthrough: the recorded call is answered from the cassette, a new one by
    // the real server, appended.
    install_with_echo(
        &home,
        &dsh_home,
        "headless",
        &http_registry(&home, &root, "passthrough", port, &upstream),
    );
    let other = json!({"message": "a greeting the server answers"});
    let model = FakeModel::sequence(
        &[
            ("mcp__web__echo", hello.clone()),
            ("mcp__web__echo", other.clone()),
        ],
        false,
    );
    dsh_turn(&peers, home.path(), Some(&row), &model, "Echo two greetings.");
    let stored = stored_tool_results(&dsh_home);
    let (hit, passed) = (&stored[1]["data"], &stored[2]["data"]);
    assert_eq!(hit["meta"]["dshCassette"]["outcome"], "hit", "{hit:#}");
    assert_eq!(
        passed["meta"]["dshCassette"]["outcome"], "passthrough",
        "{passed:#}"
    );
    assert!(
        passed.to_string().contains("Echo: a greeting the server answers"),
        "the real server answered: {passed:#}"
    );
    let cassette = std::fs::read_to_string(root.join("web.jsonl")).unwrap();
    assert!(
        cassette.contains("a greeting the server answers"),
        "appended: {cassette}"
    );
    assert_closed(port);

    // Replay with the real server gone: the cassette answers both through the proxy.
    drop(server);
    assert!(
        std::net::TcpStream::connect(upstream.trim_start_matches("http://").trim_end_matches("/mcp"))
            .is_err()
    );
    install_with_echo(
        &home,
        &dsh_home,
        "headless",
        &http_registry(&home, &root, "replay", port, &upstream),
    );
    let model = FakeModel::sequence(&[("mcp__web__echo", other), ("mcp__web__echo", hello)], false);
    dsh_turn(&peers, home.path(), Some(&row), &model, "Echo two greetings.");
    let stored = stored_tool_results(&dsh_home);
    let appended = &stored[3]["data"];
    assert_eq!(appended["meta"]["dshCassette"]["outcome"], "hit", "{appended:#}");
    assert!(
        appended
            .to_string()
            .contains("Echo: a greeting the server answers"),
        "{appended:#}"
    );
    let replayed = &stored[4]["data"];
    assert!(
        replayed
            .to_string()
            .contains(&format!("Echo: {RECORDED_GREETING}")),
        "the cassette answered: {replayed:#}"
    );
    let note = &replayed["meta"]["dshCassette"];
    assert_eq!(note["outcome"], "hit", "{replayed:#}");
    assert_eq!(note["mode"], "replay");
    assert_eq!(note["path"], "web.jsonl");
    assert_closed(port);
}

#[test]
fn a_proxy_port_held_by_another_program_stops_dsh_with_the_reason_and_no_call_reaches_that_program() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let root = echo_root(&home);
    let (_server, upstream) = everything_http(&peers);
    // Another program holds the port DSH's row names.
    let squatter = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    squatter.set_nonblocking(true).unwrap();
    let port = squatter.local_addr().unwrap().port();
    install_with_echo(
        &home,
        &dsh_home,
        "headless",
        &http_registry(&home, &root, "record", port, &upstream),
    );
    let model = FakeModel::sequence(&[("mcp__web__echo", json!({"message": "hi"}))], false);
    let (status, stdout, stderr) = dsh_run_in(
        &peers,
        home.path(),
        None,
        Some(&web_row(&home, port)),
        &model,
        "Echo a greeting.",
    );
    assert!(
        !status.success(),
        "DSH did not start its row without the proxy\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("the HTTP proxies are not running")
            && stderr.contains(&format!(
                "cassette \"web\": port {port} is taken by another program"
            )),
        "DSH's message says which proxy and why: {stderr}"
    );
    assert!(
        matches!(squatter.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection ever reached the program on the port"
    );
    assert!(!root.join("web.jsonl").exists(), "nothing recorded");
}

#[test]
fn the_proxies_end_and_finish_their_recording_when_their_stdin_ends_as_when_dsh_is_killed() {
    use std::io::{BufRead as _, Write as _};
    let peers = Peers::get();
    let home = Home::new();
    let root = echo_root(&home);
    let (_server, upstream) = everything_http(&peers);
    let port = free_port();
    let registry = std::fs::read_to_string(http_registry(&home, &root, "record", port, &upstream)).unwrap();
    let mut proxies = dshkit_test::spawn_guarded(
        home.dshkit()
            .args(["--json", "echo", "dsh-proxies"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped()),
    );
    let mut stdin = proxies.child.stdin.take().unwrap();
    writeln!(stdin, "{{\"echo\": {registry}}}").unwrap();
    let mut line = String::new();
    std::io::BufReader::new(proxies.child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        ready["proxies"],
        json!([{"id": "web", "server": "web", "mode": "record", "url": format!("http://127.0.0.1:{port}/mcp")}]),
        "{line}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "it listens once it said so"
    );
    // DSH gone, even killed outright: the pipe's end is all the proxies see.
    drop(stdin);
    let status = dshkit_test::wait_for(std::time::Duration::from_secs(30), || {
        proxies
            .child
            .try_wait()
            .unwrap()
            .ok_or_else(|| "the proxies did not end".to_owned())
    });
    assert!(status.success(), "{status:?}");
    assert_closed(port);
    let cassette = std::fs::read_to_string(root.join("web.jsonl")).expect("the recording was finished");
    assert!(cassette.starts_with("{\"type\":\"header\""), "{cassette}");
}
