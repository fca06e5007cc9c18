//! `dshkit.exe run` through the package-manager adapter: npm's and pnpm's real
//! JavaScript CLIs (installed from npm, laid out as `npm install -g` leaves a
//! global prefix on Windows: `npm.cmd`, `pnpm.cmd` and their packages) on
//! Windows Node, in a stock Windows environment. The dev server answers, and
//! killing `dshkit.exe` leaves no process of its tree: the Job Object.
//!
//! Not shown here: the server becoming `ready`. That needs the port's owner,
//! and Wine 8.0's `GetExtendedTcpTable` names none (pid 0), so the test reads
//! the port the server writes instead (docs/platforms.md).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use std::process::Stdio;

use dshkit_os::process::Identity;

use super::stock::Stock;
use super::{Guard, dshkit, gone, spawn};

/// A small app whose `dev` script is a Node HTTP server printing its URL.
fn node_app(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "node-app", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("server.js"),
        r#"const s = require("http").createServer((q, r) => r.end("<!doctype html><title>node app</title><h1>Hello from node</h1>"));
s.listen(0, "127.0.0.1", () => {
  require("fs").writeFileSync("port", String(s.address().port));
  console.log(`Local: http://localhost:${s.address().port}/`);
});"#,
    )
    .unwrap();
}

/// What `http://127.0.0.1:{port}/` answers.
fn get(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(super::PATIENCE)).unwrap();
    stream
        .write_all(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.take(64 * 1024).read_to_string(&mut answer).unwrap();
    answer
}

fn prefix() -> PathBuf {
    std::env::var_os("DSHKIT_WINDOWS_NPM_PREFIX")
        .map(PathBuf::from)
        .expect("DSHKIT_WINDOWS_NPM_PREFIX names the npm prefix with npm and pnpm (cargo xtask test-windows sets it)")
}

/// Runs the app with `manager` (chosen by its lockfile), checks the URL
/// answers, kills `dshkit.exe` and checks its whole tree is gone.
fn serves_and_leaves_nothing(manager: &str, lockfile: Option<(&str, &str)>) {
    let stock = Stock::new();
    let app = stock.profile.join("app");
    node_app(&app);
    if let Some((name, text)) = lockfile {
        std::fs::write(app.join(name), text).unwrap();
    }
    let log = stock.profile.join("dshkit.log");
    let prefix = prefix();
    let mut run = Guard(spawn(
        stock
            .apply(
                dshkit().args(["--json", "run", "--ready-timeout-secs", "600"]),
                &[&prefix],
            )
            .arg(&app)
            .env("npm_config_update_notifier", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap()),
    ));
    let port_file = app.join("port");
    let deadline = std::time::Instant::now() + super::PATIENCE;
    let port: u16 = loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break port;
        }
        assert!(
            std::time::Instant::now() < deadline && run.0.try_wait().unwrap().is_none(),
            "{manager}: the server never listened; dshkit said: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(dshkit_os::process::POLL);
    };
    assert!(get(port).contains("Hello from node"), "port {port}");

    // The tree: npm's Node, the shell npm runs the script in, the server.
    let dshkit_pid = run.0.id();
    let tree: Vec<Identity> = dshkit_os::process::tree(Identity::of(dshkit_pid).unwrap())
        .into_iter()
        .filter(|p| p.pid != dshkit_pid)
        .collect();
    let names: Vec<String> = tree
        .iter()
        .map(|p| dshkit_os::process::command_line(p.pid))
        .collect();
    assert!(
        names.iter().any(|c| c.contains("server.js")) && tree.len() >= 2,
        "the server under the package manager's Node: {names:#?}"
    );
    let cli = if manager == "npm" {
        "npm-cli.js"
    } else {
        "pnpm.cjs"
    };
    assert!(
        names.iter().any(|c| c.contains(cli))
            && !names
                .iter()
                .any(|c| c.to_ascii_lowercase().contains(&format!("{manager}.cmd"))),
        "dshkit started Node with {cli}, no shim: {names:#?}"
    );
    assert!(
        Identity::of(dshkit_pid).unwrap().kill(),
        "dshkit is killed, no cleanup"
    );
    for (p, name) in tree.iter().zip(&names) {
        assert!(gone(p.pid), "{name} (pid {}) outlived dshkit", p.pid);
    }
    drop(run);
}

#[test]
fn dshkit_run_starts_npm_s_own_cli_on_windows_node_and_its_job_leaves_nothing() {
    serves_and_leaves_nothing("npm", None);
}

#[test]
fn dshkit_run_starts_pnpm_s_own_cli_on_windows_node_and_its_job_leaves_nothing() {
    serves_and_leaves_nothing("pnpm", Some(("pnpm-lock.yaml", "lockfileVersion: '9.0'\n")));
}
