//! Cordis DevTools on a real DSH: the plugin installed with `--devtools` runs the
//! collector; `dshkit mcp --tools devtools` lists the DSH process as a target,
//! snapshots its runtime, sees an agent turn's dispatches through
//! `cordis_wait_for_runtime_change`, and reports the target gone when DSH exits.

use std::path::Path;
use std::time::{Duration, Instant};

use dshkit_test::{FakeModel, Peers};
use serde_json::{Value, json};

use crate::mcp_stdio::Session;
use crate::support::{dshkit_command, output};

fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

fn install_with_devtools(peers: &Peers, home: &Path, dsh_home: &Path) {
    let installed = output(
        dshkit_command(home)
            .env("PATH", peers.path_var())
            .args([
                "dsh",
                "install",
                "--profile",
                "headless",
                "--no-boot-check",
                "--devtools",
            ])
            .arg("--dsh-home")
            .arg(dsh_home),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
}

/// A headless DSH turn in its own thread; joins to its output.
fn headless_turn(home: &Path, model_url: &str) -> std::thread::JoinHandle<std::process::Output> {
    let (home, model_url) = (home.to_owned(), model_url.to_owned());
    std::thread::spawn(move || {
        let mut command = crate::cli::dsh_command(&Peers::get(), &home);
        command
            .args(["--profile", "headless", "Look at the workspace."])
            .env("DEEPSEEK_BASE_URL", model_url)
            .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
        output(&mut command)
    })
}

#[test]
fn an_agent_turn_in_a_real_dsh_is_seen_through_the_devtools_tools() {
    let peers = Peers::get();
    let (home, dsh_home) = crate::dsh_agent::headless_home(&peers);
    install_with_devtools(&peers, home.path(), &dsh_home);
    // Two detections, each reply after a tool result held until released: DSH
    // stays up, mid-turn, while the test attaches.
    let model = FakeModel::scripted("liveloop_detect", &json!({}), 2, true);
    let turn = headless_turn(home.path(), &model.url);

    let registry = dsh_home.join("dshkit-devtools");
    let registry_arg = registry.display().to_string();
    let mut mcp = Session::start_with(&["--tools", "devtools", "--devtools-dir", &registry_arg], &[]);
    mcp.initialize("2025-11-25");
    let deadline = Instant::now() + Duration::from_mins(2);
    let target = loop {
        let listed = mcp.call(1, "cordis_list_debug_targets", &json!({}));
        let targets = result(&listed)["targets"].as_array().cloned().unwrap_or_default();
        if let Some(target) = targets.first() {
            break target.clone();
        }
        assert!(Instant::now() < deadline, "no debug target appeared: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(target["label"], "dsh");

    let attached = mcp.call(2, "cordis_attach_debug_session", &json!({"target": target["id"]}));
    let session = result(&attached)["session"].as_str().unwrap().to_owned();
    let snapshot = mcp.call(3, "cordis_debug_snapshot", &json!({"session": session}));
    let snapshot = result(&snapshot).clone();
    let fibers = snapshot["summary"]["fibers"].as_u64().unwrap();
    assert!(fibers > 50, "a booted DSH has many fibers: {snapshot}");
    assert_eq!(snapshot["fibers"]["returned"], 100, "catalogs page at 100");
    assert_eq!(snapshot["fibers"]["truncated"], true);
    let dshkit = mcp.call(
        4,
        "cordis_inspect_fiber",
        &json!({"session": session, "name": "dshkit"}),
    );
    let found = &result(&dshkit)["fibers"]["items"];
    assert_eq!(found[0]["state"], "active", "{dshkit}");

    // The turn goes on: its dispatches reach the wait.
    model.release();
    let waited = mcp.call_within(
        5,
        "cordis_wait_for_runtime_change",
        &json!({"session": session, "timeoutMs": 60_000}),
        Duration::from_mins(2),
    );
    let waited = result(&waited).clone();
    assert_eq!(waited["outcome"], "found", "{waited}");
    assert!(
        waited["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "dispatch-observed"),
        "{waited}"
    );

    // The turn ends and DSH exits: the session's target is gone.
    model.release();
    model.release();
    let finished = turn.join().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );
    let deadline = Instant::now() + Duration::from_mins(2);
    let gone = loop {
        assert!(Instant::now() < deadline, "the exit of DSH was never reported");
        let waited = mcp.call_within(
            6,
            "cordis_wait_for_runtime_change",
            &json!({"session": session, "timeoutMs": 60_000}),
            Duration::from_mins(2),
        );
        assert_ne!(
            waited["result"]["structuredContent"]["code"], "TARGET_DISPOSED",
            "read past the end: {waited}"
        );
        let records = result(&waited)["records"].as_array().cloned().unwrap_or_default();
        if records.iter().any(|r| r["kind"] == "target-disposed") {
            break waited;
        }
    };
    assert_eq!(result(&gone)["outcome"], "found");
    let stale = mcp.call(7, "cordis_debug_snapshot", &json!({"session": session}));
    assert_eq!(stale["result"]["isError"], true, "{stale}");
    assert_eq!(
        stale["result"]["structuredContent"]["code"], "TARGET_DISPOSED",
        "{stale}"
    );
    let listed = mcp.call(8, "cordis_list_debug_targets", &json!({}));
    assert_eq!(
        result(&listed)["targets"],
        json!([]),
        "the exited DSH is no target"
    );
}
