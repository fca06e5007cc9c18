//! `dshkit.exe run` through the package-manager adapter: npm's, pnpm's and
//! Yarn classic's real JavaScript CLIs (installed from npm, laid out as `npm
//! install -g` leaves a global prefix on Windows: `npm.cmd`, `pnpm.cmd`,
//! `yarn.cmd` and their packages), and a project's own Yarn berry release, on
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

/// `dshkit.exe run` on `app`, its stderr written to `log`.
fn run_app(stock: &Stock, app: &Path, log: &Path) -> Guard {
    Guard(spawn(
        stock
            .apply(
                dshkit().args(["--json", "run", "--ready-timeout-secs", "600"]),
                &[&prefix()],
            )
            .arg(app)
            .env("npm_config_update_notifier", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap()),
    ))
}

/// Polls `found` until it answers, while `dshkit.exe` runs; fails when it
/// exits or after [`super::PATIENCE`], naming `what` and showing its `log`.
fn wait_while_running<T>(run: &mut Guard, log: &Path, what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + super::PATIENCE;
    loop {
        if let Some(value) = found() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline && run.0.try_wait().unwrap().is_none(),
            "never saw {what}; dshkit said: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(dshkit_os::process::POLL);
    }
}

/// The processes `dshkit` started, each with its command line.
fn started_by(dshkit: u32) -> Vec<(Identity, String)> {
    dshkit_os::process::tree(Identity::of(dshkit).unwrap())
        .into_iter()
        .filter(|p| p.pid != dshkit)
        .map(|p| (p, dshkit_os::process::command_line(p.pid)))
        .collect()
}

/// Node runs `cli` (never `{manager}.cmd`); killing `dshkit.exe` (no clean-up)
/// leaves no process of `tree`.
fn runs_cli_and_dies_with_dshkit(run: Guard, manager: &str, cli: &str, tree: &[(Identity, String)]) {
    let shim = format!("{manager}.cmd");
    assert!(
        tree.iter().any(|(_, c)| c.contains(cli))
            && !tree.iter().any(|(_, c)| c.to_ascii_lowercase().contains(&shim)),
        "dshkit started Node with {cli}, no shim: {tree:#?}"
    );
    assert!(
        Identity::of(run.0.id()).unwrap().kill(),
        "dshkit is killed, no cleanup"
    );
    for (p, name) in tree {
        assert!(gone(p.pid), "{name} (pid {}) outlived dshkit", p.pid);
    }
    drop(run);
}

/// Runs the app, made by [`node_app`] then `prepare` (which picks the package
/// manager, by its lockfile), checks the URL answers and that Node runs `cli`
/// (never a `.cmd` shim), kills `dshkit.exe` and checks its whole tree is gone.
fn serves_and_leaves_nothing(manager: &str, cli: &str, prepare: impl FnOnce(&Path)) {
    let stock = Stock::new();
    let app = stock.profile.join("app");
    node_app(&app);
    prepare(&app);
    let log = stock.profile.join("dshkit.log");
    let mut run = run_app(&stock, &app, &log);
    let port_file = app.join("port");
    let port: u16 = wait_while_running(
        &mut run,
        &log,
        &format!("{manager}: the server listening"),
        || {
            std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
        },
    );
    assert!(get(port).contains("Hello from node"), "port {port}");

    // The tree: the package manager's Node, the shell it runs the script in,
    // the server.
    let tree = started_by(run.0.id());
    assert!(
        tree.iter().any(|(_, c)| c.contains("server.js")) && tree.len() >= 2,
        "the server under the package manager's Node: {tree:#?}"
    );
    runs_cli_and_dies_with_dshkit(run, manager, cli, &tree);
}

#[test]
fn dshkit_run_starts_npm_s_own_cli_on_windows_node_and_its_job_leaves_nothing() {
    serves_and_leaves_nothing("npm", "npm-cli.js", |_| {});
}

#[test]
fn dshkit_run_starts_pnpm_s_own_cli_on_windows_node_and_its_job_leaves_nothing() {
    serves_and_leaves_nothing("pnpm", "pnpm.cjs", |app| {
        std::fs::write(app.join("pnpm-lock.yaml"), "lockfileVersion: '9.0'\n").unwrap();
    });
}

#[test]
fn dshkit_run_starts_yarn_classic_s_own_cli_on_windows_node_and_its_job_leaves_nothing() {
    serves_and_leaves_nothing("yarn", "yarn.js", |app| {
        std::fs::write(app.join("yarn.lock"), "# yarn lockfile v1\n\n\n").unwrap();
    });
}

/// Yarn berry, as a project commits it: its release under `.yarn/releases`
/// named by `yarnPath`, and the lockfile `yarn install` writes for a project
/// with no dependencies (so `yarn run` needs no install first). Berry starts a
/// script's programs through `cmd.exe /d /s /c` with `^"`-escaped quotes, which
/// Wine's `cmd.exe` does not run (it exits 0, having run nothing), so here the
/// script is berry's own `sleep`: dshkit starts Node with the project's
/// release, and its job takes it down.
#[test]
fn dshkit_run_starts_the_project_s_yarn_berry_release_on_windows_node_and_its_job_leaves_nothing() {
    const RELEASE: &str = "yarn-4.18.1.cjs";
    let stock = Stock::new();
    let app = stock.profile.join("app");
    let releases = app.join(".yarn").join("releases");
    std::fs::create_dir_all(&releases).unwrap();
    std::fs::write(
        app.join("package.json"),
        r#"{ "name": "node-app", "private": true, "scripts": { "dev": "sleep 600" } }"#,
    )
    .unwrap();
    std::fs::copy(
        prefix().join(r"node_modules\@yarnpkg\cli-dist\bin\yarn.js"),
        releases.join(RELEASE),
    )
    .unwrap();
    std::fs::write(
        app.join(".yarnrc.yml"),
        format!("yarnPath: .yarn/releases/{RELEASE}\nenableTelemetry: false\n"),
    )
    .unwrap();
    std::fs::write(
        app.join("yarn.lock"),
        "__metadata:\n  version: 10\n  cacheKey: 10c0\n\n\"node-app@workspace:.\":\n  version: 0.0.0-use.local\n  resolution: \"node-app@workspace:.\"\n  languageName: unknown\n  linkType: soft\n",
    )
    .unwrap();
    let log = stock.profile.join("dshkit.log");
    let mut run = run_app(&stock, &app, &log);
    let dshkit = run.0.id();
    let tree = wait_while_running(&mut run, &log, &format!("Node running {RELEASE}"), || {
        Some(started_by(dshkit)).filter(|tree| tree.iter().any(|(_, c)| c.contains(RELEASE)))
    });
    runs_cli_and_dies_with_dshkit(run, "yarn", RELEASE, &tree);
}
