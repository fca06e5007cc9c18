//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dshkit_test::{ChildGuard, read_ready_line, spawn_guarded};

pub(crate) fn dshkit() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dshkit"))
}

/// `dshkit` with a clean, isolated environment rooted in `home`.
pub(crate) fn dshkit_command(home: &Path) -> Command {
    let mut command = Command::new(dshkit());
    isolate(&mut command, home);
    command
}

/// Clears the environment but for what a child needs, pointing HOME and the XDG
/// directories into `home`.
pub(crate) fn isolate(command: &mut Command, home: &Path) {
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("NO_COLOR", "1");
}

/// A running `dshkit mcp --http`.
pub(crate) struct HttpServer {
    pub(crate) url: String,
    pub(crate) token: String,
    pub(crate) guard: ChildGuard,
    home: tempfile::TempDir,
}

impl HttpServer {
    /// The server's isolated home (its state, evidence and config live under it).
    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }
}

pub(crate) fn start_http(extra: &[&str]) -> HttpServer {
    let home = tempfile::tempdir().expect("tempdir");
    let token_file = home.path().join("token");
    let mut command = dshkit_command(home.path());
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .args(extra);
    let mut guard = spawn_guarded(&mut command);
    let line = read_ready_line(&mut guard, "dshkit mcp: ", Duration::from_secs(20));
    let url = line.strip_prefix("dshkit mcp: ").expect("prefix").to_owned();
    let token = std::fs::read_to_string(&token_file)
        .expect("token file")
        .trim()
        .to_owned();
    HttpServer {
        url,
        token,
        guard,
        home,
    }
}

/// Output of a finished command, with a readable failure message.
pub(crate) fn output(command: &mut Command) -> std::process::Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("failed to run {command:?}: {e}"))
}

pub(crate) fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// A launcher script for the real server-everything (stdio) in `dir`: the "server
/// binary" a test records and later deletes, to prove a replay never needs it.
pub(crate) fn everything_launcher(dir: &Path, peers: &dshkit_test::Peers) -> PathBuf {
    let path = dir.join("everything-server");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec '{}' '{}' stdio\n",
            peers.node().display(),
            peers
                .module("@modelcontextprotocol/server-everything/dist/index.js")
                .display()
        ),
    )
    .unwrap();
    dshkit_os::fs::set_mode(&path, 0o755).unwrap();
    path
}

/// The real server-everything in its Streamable HTTP mode on a free loopback port,
/// once it listens; returns its guard and its MCP URL.
pub(crate) fn everything_http(peers: &dshkit_test::Peers) -> (ChildGuard, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = spawn_guarded(
        Command::new(peers.node())
            .arg(peers.module("@modelcontextprotocol/server-everything/dist/index.js"))
            .arg("streamableHttp")
            .env("PORT", port.to_string()),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// Every tool `dshkit mcp` serves by default, in listing order.
pub(crate) const ALL_TOOLS: &[&str] = &[
    "dshkit_doctor",
    "dshkit_info",
    "liveloop_browser",
    "liveloop_detect",
    "liveloop_runtime",
    "liveloop_verify",
    "plugin_check",
    "echo_cassettes",
    "echo_inspect",
    "echo_diff",
    "cordis_list_debug_targets",
    "cordis_attach_debug_session",
    "cordis_debug_snapshot",
    "cordis_wait_for_runtime_change",
    "cordis_detach_debug_session",
    "cordis_runtime_summary",
    "cordis_inspect_event",
    "cordis_inspect_fiber",
    "cordis_search_dispatches",
    "cordis_capture_checkpoint",
    "cordis_compare_current",
    "cordis_waterfall_experiment_status",
    "cordis_start_waterfall_experiment",
    "cordis_stop_waterfall_experiment",
    "cordis_profiler_traces",
];
