//! Echo inside a real DSH: DSH's own MCP client reaches server-everything through
//! an Echo overlay, the plugin (with the Echo registry in its row) annotates each
//! call, and DSH persists the annotation on the call's ordinary `tool/result`.
//! Everything is read back from DSH's own session store.

use dshkit_test::{FakeModel, Peers};
use serde_json::json;

use crate::support::{
    RECORDED_GREETING, dsh_turn, echo_overlay, echo_registry, headless_home, install, install_with_echo,
    recorded_everything, stored_tool_results,
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
    let root = dshkit_os::fs::canonicalize(home.path()).unwrap().join("echo");
    std::fs::create_dir(&root).unwrap();
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
