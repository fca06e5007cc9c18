//! Echo inside a real DSH: overlays that run server-everything through `dshkit
//! echo`, the plugin's Echo registry, and what DSH's own session store kept.

use std::io::{BufRead as _, Read as _};
use std::path::{Path, PathBuf};

use dshkit_test::{FakeModel, Peers};
use serde_json::{Value, json};

use super::command::output;
use super::dsh::{dsh_command, dsh_turn, install};
use super::home::{Home, walk_files};
use super::servers::everything_launcher;

/// The greeting recorded in [`recorded_everything`]'s cassette.
pub(crate) const RECORDED_GREETING: &str = "hello from the cassette";

/// The `dshkit echo dsh-overlay` patch for server `everything` in `mode` (the
/// real server's launcher for record), for the headless profile.
pub(crate) fn echo_overlay(
    home: &Home,
    dsh_home: &Path,
    cassette: &Path,
    mode: &str,
    server: Option<&Path>,
) -> PathBuf {
    let path = home.path().join(format!("{mode}.patch.yml"));
    let mut command = home.dshkit();
    command
        .args([
            "echo",
            "dsh-overlay",
            "--profile",
            "headless",
            "--server",
            "everything",
            "--mode",
            mode,
        ])
        .arg("--cassette")
        .arg(cassette)
        .arg("--dsh-home")
        .arg(dsh_home)
        .arg("-o")
        .arg(&path);
    if let Some(server) = server {
        command.arg("--").arg(server);
    }
    let out = output(&mut command);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    path
}

/// A new Echo root in `home` (its `echo` directory, reached through no symlink).
pub(crate) fn echo_root(home: &Home) -> PathBuf {
    let root = dshkit_os::fs::canonicalize(home.path()).unwrap().join("echo");
    std::fs::create_dir(&root).unwrap();
    root
}

/// A registry with one HTTP server, `web`, proxied on `port` in `mode`.
pub(crate) fn http_registry(home: &Home, root: &Path, mode: &str, port: u16, upstream: &str) -> PathBuf {
    let registry = home.path().join("echo-http-registry.json");
    let http = json!({"port": port, "upstream": upstream});
    let entry = json!({"id": "web", "path": "web.jsonl", "server": "web", "mode": mode, "http": http});
    std::fs::write(
        &registry,
        json!({"rootDir": root, "cassettes": [entry]}).to_string(),
    )
    .unwrap();
    registry
}

/// DSH's own row for server `web`, pointed at the proxy and waiting for it, as
/// docs/echo.md tells a person to write it.
pub(crate) fn web_row(home: &Home, port: u16) -> PathBuf {
    let row = home.path().join("web-row.patch.yml");
    let yaml = format!(
        "- insert:\n    - id: mcp-web\n      name: '@deepseek-ai/dsh-mcp-client'\n      inject: [dshkitEcho]\n      config: {{ serverName: web, transport: streamable-http, url: 'http://127.0.0.1:{port}/mcp', failOnStartupError: true }}\n"
    );
    std::fs::write(&row, yaml).unwrap();
    row
}

/// An Echo root in `home` whose `everything.jsonl` holds one call of
/// server-everything's `echo` tool ([`RECORDED_GREETING`]), recorded through
/// DSH's own MCP client in a headless turn; the real server's launcher is gone
/// afterwards. Returns the root and the registry file naming that cassette for
/// server `everything` in replay mode.
pub(crate) fn recorded_everything(peers: &Peers, home: &Home, dsh_home: &Path) -> (PathBuf, PathBuf) {
    if !dsh_home.join("profiles/headless").is_dir() {
        let made =
            output(dsh_command(peers, home.path()).args(["--profile", "headless", "--dump-default-config"]));
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    }
    let root = echo_root(home);
    let cassette = root.join("everything.jsonl");
    let launcher = everything_launcher(home.path(), peers);
    let record = echo_overlay(home, dsh_home, &cassette, "record", Some(&launcher));
    let model = FakeModel::sequence(
        &[("mcp__everything__echo", json!({"message": RECORDED_GREETING}))],
        false,
    );
    dsh_turn(peers, home.path(), Some(&record), &model, "Echo a greeting.");
    assert!(cassette.is_file(), "DSH's MCP client was recorded");
    std::fs::remove_file(&launcher).unwrap();
    let registry = echo_registry(home, &root, "everything.jsonl");
    (root, registry)
}

/// A registry file in `home` naming the cassette at `path` under `root` for
/// server `everything` in replay mode (checked only when installed).
pub(crate) fn echo_registry(home: &Home, root: &Path, path: &str) -> PathBuf {
    let registry = home.path().join("echo-registry.json");
    let entry = json!({"id": "everything", "path": path, "server": "everything", "mode": "replay"});
    std::fs::write(
        &registry,
        json!({"rootDir": root, "cassettes": [entry]}).to_string(),
    )
    .unwrap();
    registry
}

/// Every `tool/result` event DSH's session store holds under `dsh_home`
/// (`sessions/…/session.jsonl.zstd`), in the order written.
pub(crate) fn stored_tool_results(dsh_home: &Path) -> Vec<Value> {
    let mut events = Vec::new();
    for file in walk_files(&dsh_home.join("sessions")) {
        if !file.to_string_lossy().ends_with(".jsonl.zstd") {
            continue;
        }
        // Each flush appends a zstd frame of its own.
        let mut text = String::new();
        let mut compressed = std::io::BufReader::new(std::fs::File::open(&file).unwrap());
        while !compressed.fill_buf().unwrap().is_empty() {
            let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut compressed).unwrap();
            frame.read_to_string(&mut text).unwrap();
        }
        for line in text.lines().filter(|line| line.contains("\"tool/result\"")) {
            if let Ok(event) = serde_json::from_str::<Value>(line)
                && event["type"] == "tool/result"
            {
                events.push(event);
            }
        }
    }
    events.sort_by_key(|event| event["time"].as_u64());
    events
}

/// `dshkit dsh install --echo REGISTRY` into `profile` (without the boot proof).
pub(crate) fn install_with_echo(home: &Home, dsh_home: &Path, profile: &str, registry: &Path) {
    let installed = install(
        home.path(),
        dsh_home,
        profile,
        &["--no-boot-check", "--echo", &registry.to_string_lossy()],
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
}
