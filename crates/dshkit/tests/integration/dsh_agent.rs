//! A real DSH agent turn: DSH's own MCP client spawns dshkit from the row that
//! `dshkit dsh connect` wrote, the (fake, loopback) model calls `dshkit_doctor`,
//! and the doctor's result reaches DSH's final answer.

use std::io::Read;
use std::time::{Duration, Instant};

use dshkit_test::{ANSWER_PREFIX, FakeModel, Peers, spawn_guarded};

use crate::cli::dsh_command;
use crate::support::{dshkit_command, output};

/// Longest a headless DSH turn may take here (boot ~2 s, plus the MCP handshake).
const TURN_DEADLINE: Duration = Duration::from_mins(2);

#[test]
fn a_dsh_agent_turn_calls_dshkit_doctor_through_dsh_mcp_client() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let dsh_home = home.path().join("dsh");
    let made =
        output(dsh_command(&peers, home.path()).args(["--profile", "headless", "--dump-default-config"]));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let connected = output(
        dshkit_command(home.path())
            .args(["dsh", "connect", "--profile", "headless", "--dsh-home"])
            .arg(&dsh_home),
    );
    assert!(
        connected.status.success(),
        "{}",
        String::from_utf8_lossy(&connected.stderr)
    );

    let model = FakeModel::start("mcp__dshkit__dshkit_doctor", &serde_json::json!({}));
    let mut command = dsh_command(&peers, home.path());
    command
        .args([
            "--profile",
            "headless",
            "Check this machine with the dshkit doctor tool and report what it says.",
        ])
        .env("DEEPSEEK_BASE_URL", &model.url)
        .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
    let mut turn = spawn_guarded(&mut command);
    drop(turn.child.stdin.take());
    let deadline = Instant::now() + TURN_DEADLINE;
    let status = loop {
        if let Some(status) = turn.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the DSH turn did not finish within {TURN_DEADLINE:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    turn.child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    turn.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        status.success(),
        "dsh exited with {status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
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
    let answer = stdout
        .split(ANSWER_PREFIX)
        .nth(1)
        .unwrap_or_else(|| panic!("no tool result in the answer:\n{stdout}\n{stderr}"));
    assert!(answer.contains("dshkit doctor:"), "{answer}");
    assert!(
        answer.contains(&version),
        "the doctor's chromium version {version} is missing:\n{answer}"
    );
}
