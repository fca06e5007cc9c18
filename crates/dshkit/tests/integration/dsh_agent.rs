//! A real DSH agent turn: DSH's own MCP client spawns dshkit from the row that
//! `dshkit dsh connect` wrote, the (fake, loopback) model calls `dshkit_doctor`,
//! and the doctor's result reaches DSH's final answer.

use dshkit_test::{FakeModel, Peers};

use crate::support::{dsh_turn, echo_overlay, everything_launcher, headless_home, output, tool_answer};

#[test]
fn a_dsh_agent_turn_calls_dshkit_doctor_through_dsh_mcp_client() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let connected = output(
        home.dshkit()
            .args(["dsh", "connect", "--profile", "headless", "--dsh-home"])
            .arg(&dsh_home),
    );
    assert!(
        connected.status.success(),
        "{}",
        String::from_utf8_lossy(&connected.stderr)
    );

    let model = FakeModel::start("mcp__dshkit__dshkit_doctor", &serde_json::json!({}));
    let stdout = dsh_turn(
        &peers,
        home.path(),
        None,
        &model,
        "Check this machine with the dshkit doctor tool and report what it says.",
    );

    // The model was offered dshkit's tools through DSH's MCP client...
    let requests = model.requests();
    let offered: Vec<String> = requests
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        offered.iter().any(|n| n == "mcp__dshkit__dshkit_doctor"),
        "tools offered: {offered:?}"
    );
    // ...and the final answer carries the doctor's real report: the Chromium line
    // with the version the browser itself prints.
    let banner = output(std::process::Command::new("/usr/bin/chromium").arg("--version"));
    let version =
        dshkit_env::parse_version(&String::from_utf8_lossy(&banner.stdout)).expect("chromium version");
    let answer = tool_answer(&stdout);
    assert!(answer.contains("dshkit doctor:"), "{answer}");
    assert!(
        answer.contains(&version),
        "the doctor's chromium version {version} is missing:\n{answer}"
    );
}

#[test]
fn a_dsh_agent_turn_calls_a_replayed_server_through_an_echo_overlay() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    let profile_patch = dsh_home.join("profiles/headless/cordis.patch.yml");
    let profile_before = std::fs::read(&profile_patch).ok();

    // The "real server": server-everything behind a launcher that is deleted later.
    let launcher = everything_launcher(home.path(), &peers);
    let cassette = home.path().join("everything.jsonl");
    let overlay = |mode: &str| {
        let server = (mode == "record").then_some(launcher.as_path());
        echo_overlay(&home, &dsh_home, &cassette, mode, server)
    };
    let arguments = serde_json::json!({"message": "hello from the cassette"});
    let task = "Echo a greeting with the everything server's echo tool.";

    let record = overlay("record");
    let model = FakeModel::start("mcp__everything__echo", &arguments);
    let recorded = dsh_turn(&peers, home.path(), Some(&record), &model, task);
    assert!(recorded.contains("Echo: hello from the cassette"), "{recorded}");
    assert!(cassette.is_file(), "DSH's MCP client was recorded");

    std::fs::remove_file(&launcher).unwrap();
    let replay = overlay("replay");
    let row = std::fs::read_to_string(&replay).unwrap();
    assert!(
        !row.contains("everything-server"),
        "the replay row holds only the cassette command:\n{row}"
    );
    let model = FakeModel::start("mcp__everything__echo", &arguments);
    let replayed = dsh_turn(&peers, home.path(), Some(&replay), &model, task);
    let answer = tool_answer(&replayed);
    assert!(answer.contains("Echo: hello from the cassette"), "{answer}");
    assert_eq!(
        std::fs::read(&profile_patch).ok(),
        profile_before,
        "the profile was never edited"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(replay.with_extension("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["mode"], "replay");
    assert_eq!(manifest["server"], "everything");
}
