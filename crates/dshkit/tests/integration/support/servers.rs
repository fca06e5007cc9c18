//! Servers a test talks to once they are ready: `dshkit mcp --http`, an Echo
//! proxy or replay over HTTP, and the real server-everything.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dshkit_test::{ChildGuard, spawn_guarded, spawn_ready};

use super::command::{dshkit_command, free_port};

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
    let port = free_port();
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
