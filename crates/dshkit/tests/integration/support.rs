//! Helpers shared by the integration tests: each sets up one thing a test
//! needs, so that the test reads as what it checks.

mod dsh;
mod home;
mod session;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dshkit_test::{ChildGuard, spawn_guarded, spawn_ready};

pub(crate) use dsh::{
    PAGE, dsh_command, dsh_turn, dsh_turn_in, dsh_web, headless_home, install, installed_home,
    model_verifying, processes_of, serve_html, serve_page, the_model_gets_the_binarys_guidance_and_skills,
    tool_answer, verify_arguments, web_home,
};
pub(crate) use home::{EnvDir, Home, describe, walk_files};
pub(crate) use session::Session;

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

/// `dshkit mcp --http` on a free loopback port with `extra` flags, in a home of
/// its own, once it is ready.
pub(crate) fn start_http(extra: &[&str]) -> HttpServer {
    let home = tempfile::tempdir().expect("tempdir");
    let (guard, url, token) = spawn_http(home.path(), extra, &[]);
    HttpServer {
        url,
        token,
        guard,
        home,
    }
}

/// `dshkit mcp --http 127.0.0.1:0 --token-file HOME/token EXTRA` in `home`, with
/// `env`, once its ready line named its URL: the child, the URL and the token.
pub(crate) fn spawn_http(home: &Path, extra: &[&str], env: &[(&str, &str)]) -> (ChildGuard, String, String) {
    let token_file = home.join("token");
    let mut command = dshkit_command(home);
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .args(extra)
        .envs(env.iter().copied());
    let (guard, url) = spawn_ready(&mut command, "dshkit mcp: ", Duration::from_secs(20));
    let token = std::fs::read_to_string(&token_file)
        .expect("token file")
        .trim()
        .to_owned();
    (guard, url, token)
}

/// `dshkit ARGS` in `home` (`echo record --http ...`, `echo replay ... --http`),
/// once it printed the URL it serves on: the child and that URL.
pub(crate) fn echo_http<I, S>(home: &Path, args: I) -> (ChildGuard, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    spawn_ready(
        dshkit_command(home).args(args),
        "dshkit echo: ",
        Duration::from_secs(10),
    )
}

/// Copies every file of `examples/hello-app` (a static app) into `to`.
pub(crate) fn copy_hello_app(to: &Path) {
    let example = dshkit_test::workspace_root().join("examples/hello-app");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
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
    dshkit_test::wait_until(
        Duration::from_secs(20),
        &format!("server-everything did not listen on {port}"),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
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
