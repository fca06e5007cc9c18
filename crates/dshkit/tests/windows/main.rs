//! dshkit's Windows build, run under Wine by `cargo xtask test-windows` with
//! Windows Node (`DSHKIT_WINDOWS_NODE`). It shows what Wine can show faithfully:
//! the binary starts, the static checks find what they find on Linux, the
//! leftover audit tells DSH instances from look-alikes and kills only a stray's
//! tree, a Job Object takes a child down with a killed dshkit, and MCP over
//! stdio answers. (Empty on every other platform.)
#![cfg(windows)]

#[path = "../shared/broken_home.rs"]
mod broken_home;
mod devtools;
mod package_managers;
mod stock;
mod verify;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dshkit_os::process::Identity;

/// How long anything here may take: Wine starts processes slowly on a loaded
/// machine. Only a bound on a wait, never a pause.
const PATIENCE: Duration = Duration::from_mins(1);

fn dshkit() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dshkit"));
    command.env("NO_COLOR", "1").env_remove("DSHKIT_DSH");
    command
}

fn node() -> PathBuf {
    let node = std::env::var_os("DSHKIT_WINDOWS_NODE")
        .map(PathBuf::from)
        .expect("DSHKIT_WINDOWS_NODE names node.exe (cargo xtask test-windows sets it)");
    assert!(node.is_file(), "{} is missing", node.display());
    node
}

/// Wine's `CreateProcess` now and then fails with `ERROR_INTERNAL_ERROR` (1359) while
/// its server is busy starting other processes (seen once in CI, with a fresh
/// prefix; never reproduced here, also not under load). Windows itself does not
/// fail so, and no test here is about starting a process: such a start is tried
/// again, at most three times, and any other error fails at once.
fn spawn(command: &mut Command) -> Child {
    const ERROR_INTERNAL_ERROR: i32 = 1359;
    let mut attempt = 1;
    loop {
        match command.spawn() {
            Ok(child) => return child,
            Err(e) if e.raw_os_error() == Some(ERROR_INTERNAL_ERROR) && attempt < 3 => attempt += 1,
            Err(e) => panic!("starting {command:?}: {e}"),
        }
    }
}

/// A child killed (with its tree) and reaped when the test ends, pass or fail.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(me) = Identity::of(self.0.id()) {
            dshkit_os::process::kill_tree(me, Duration::from_secs(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for `file` to hold a pid (written by a Node script once it runs).
fn pid_in(file: &Path) -> u32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} was never written", file.display());
        std::thread::sleep(dshkit_os::process::POLL);
    }
}

/// Waits for `pid` to leave the process table.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while dshkit_os::process::entry(pid).is_some() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(dshkit_os::process::POLL);
    }
    true
}

#[test]
fn the_binary_starts_and_names_its_version() {
    let out = dshkit().arg("--version").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("dshkit {}{}", env!("CARGO_PKG_VERSION"), env!("DSHKIT_BUILD"))
    );
}

#[test]
fn the_static_checks_find_the_faults_at_the_positions_linux_reports() {
    let dir = tempfile::tempdir().unwrap();
    let home = broken_home::check(dshkit(), dir.path());
    assert!(
        home.patch.to_string_lossy().contains('\\'),
        "a Windows path: {}",
        home.patch.display()
    );
}

/// The DSH launcher's shape: with `--port 0` (a smoke instance) it starts a
/// child Node; it writes its pid (and its child's) and stays up.
const LAUNCHER: &str = r"
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const out = process.env.PID_DIR;
const smoke = process.argv.includes('--port') && process.argv[process.argv.indexOf('--port') + 1] === '0';
if (smoke) {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  fs.writeFileSync(path.join(out, `child-of-${process.pid}`), String(child.pid));
}
fs.writeFileSync(path.join(out, process.env.ROLE), String(process.pid));
setInterval(() => {}, 1000);
";

#[test]
fn the_audit_kills_a_stray_smoke_tree_and_leaves_the_host_and_a_look_alike() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("node_modules/@deepseek-ai/dsh/dist");
    std::fs::create_dir_all(&dist).unwrap();
    let launcher = dist.join("bin.js");
    std::fs::write(&launcher, LAUNCHER).unwrap();
    // Not the launcher, though its command line says "dsh" and "--port 0".
    let look_alike_script = dir.path().join("dsh-notes.js");
    std::fs::write(&look_alike_script, LAUNCHER).unwrap();
    let pids = dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let start = |role: &str, script: &Path, args: &[&str]| {
        Guard(spawn(
            Command::new(node())
                .arg(script)
                .args(args)
                .env("PID_DIR", &pids)
                .env("ROLE", role)
                // Windows Node cannot write to a Linux pipe; it writes nothing here.
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        ))
    };
    let host = start("host", &launcher, &["--profile", "web"]);
    let smoke = start(
        "smoke",
        &launcher,
        &["--profile", "web", "--port", "0", "--no-open"],
    );
    let look_alike = start("look-alike", &look_alike_script, &["dsh", "--port", "0"]);
    let (host_pid, smoke_pid, look_alike_pid) = (
        pid_in(&pids.join("host")),
        pid_in(&pids.join("smoke")),
        pid_in(&pids.join("look-alike")),
    );
    assert_eq!((host_pid, smoke_pid), (host.0.id(), smoke.0.id()));
    let smoke_child = pid_in(&pids.join(format!("child-of-{smoke_pid}")));
    let look_alike_child = pid_in(&pids.join(format!("child-of-{look_alike_pid}")));

    let out = dshkit()
        .args([
            "--json",
            "check",
            "--sweep",
            "--kill-stray",
            "--stray-age-secs",
            "0",
            "--dsh-home",
        ])
        .arg(dir.path())
        .env("DSHKIT_DSH", &launcher)
        .output()
        .unwrap();
    let evidence = passed_audit(&out.stdout);
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with(&format!("pid {host_pid} Host "))),
        "{evidence:#?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with(&format!("pid {smoke_pid} Smoke "))),
        "{evidence:#?}"
    );
    assert!(
        evidence.contains(&format!(
            "killed the process tree of stray pid {smoke_pid} (Smoke), verified gone"
        )),
        "{evidence:#?}"
    );
    assert!(
        !evidence
            .iter()
            .any(|e| e.contains(&format!("pid {look_alike_pid} "))),
        "{evidence:#?}"
    );
    assert!(gone(smoke_pid) && gone(smoke_child), "the smoke tree is gone");
    for (what, pid) in [
        ("host", host_pid),
        ("look-alike", look_alike_pid),
        ("look-alike's child", look_alike_child),
    ] {
        assert!(
            dshkit_os::process::entry(pid).is_some(),
            "the {what} is untouched"
        );
    }
    drop((host, smoke, look_alike));
}

/// The evidence of the report's leftover audit, which must have passed.
fn passed_audit(stdout: &[u8]) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    let audit = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "leftover_audit")
        .unwrap();
    assert_eq!(audit["status"], "pass", "{audit:#}");
    audit["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect()
}

/// A stdio MCP server that never reads its stdin, so it cannot notice dshkit
/// going away: only its Job Object can stop it.
const DEAF_SERVER: &str = r"
require('node:fs').writeFileSync(process.env.PID_FILE, String(process.pid));
setInterval(() => {}, 1000);
";

#[test]
fn a_server_in_dshkits_job_dies_when_dshkit_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("deaf.js");
    std::fs::write(&script, DEAF_SERVER).unwrap();
    let pid_file = dir.path().join("server.pid");
    let recorder = Guard(spawn(
        dshkit()
            .args(["echo", "record", "--output"])
            .arg(dir.path().join("cassette.jsonl"))
            .arg("--")
            .arg(node())
            .arg(&script)
            .env("PID_FILE", &pid_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    ));
    let server = pid_in(&pid_file);
    assert!(dshkit_os::process::entry(server).is_some());
    assert!(
        Identity::of(recorder.0.id()).unwrap().kill(),
        "dshkit is killed, no cleanup"
    );
    let outlived = !gone(server);
    if outlived && let Some(server) = Identity::of(server) {
        server.kill();
    }
    assert!(!outlived, "the server outlived dshkit");
    drop(recorder);
}

#[test]
fn mcp_over_stdio_lists_the_tools() {
    use std::io::{BufRead as _, Write as _};
    let mut server = Guard(spawn(
        dshkit()
            .args(["mcp", "--stdio", "--no-prewarm"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    ));
    let mut stdin = server.0.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(server.0.stdout.take().unwrap());
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"windows-test","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    let mut line = String::new();
    let tools = loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the server closed its stdout"
        );
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message["result"]["tools"].as_array().unwrap().clone();
        }
    };
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for wanted in ["liveloop_browser", "echo_inspect", "plugin_check"] {
        assert!(names.contains(&wanted), "{names:?}");
    }
    drop(stdin);
    let deadline = Instant::now() + PATIENCE;
    while server.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the server did not end when its stdin closed"
        );
        std::thread::sleep(dshkit_os::process::POLL);
    }
}

/// The official MCP SDK client on Windows Node starts `dshkit.exe mcp --stdio`
/// itself (a Windows child on Windows pipes), lists the tools and calls one; its
/// report goes to a file (Windows Node cannot write to a Linux pipe).
const SDK_CLIENT: &str = r"
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
const [modules, dshkit, out] = process.argv.slice(2);
const sdk = (file) => import(pathToFileURL(join(modules, '@modelcontextprotocol/sdk/dist/esm/client', file)).href);
const { Client } = await sdk('index.js');
const { StdioClientTransport } = await sdk('stdio.js');
const transport = new StdioClientTransport({ command: dshkit, args: ['mcp', '--stdio', '--no-prewarm'], stderr: 'ignore' });
const client = new Client({ name: 'dshkit-windows-sdk-client', version: '1.0.0' });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const info = await client.callTool({ name: 'dshkit_info', arguments: {} });
await client.close();
writeFileSync(out, JSON.stringify({ server: client.getServerVersion(), tools, info }));
";

#[test]
fn the_official_sdk_client_on_windows_node_lists_and_calls_the_tools() {
    let modules = std::env::var_os("DSHKIT_WINDOWS_MCP_MODULES")
        .map(PathBuf::from)
        .expect(
            "DSHKIT_WINDOWS_MCP_MODULES names the npm peers' node_modules (cargo xtask test-windows sets it)",
        );
    let modules = dshkit_os::fs::canonicalize(&modules).unwrap();
    let dshkit = dshkit_os::fs::canonicalize(env!("CARGO_BIN_EXE_dshkit")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sdk-client.mjs");
    std::fs::write(&script, SDK_CLIENT).unwrap();
    let report = dir.path().join("report.json");
    let mut client = Guard(spawn(
        Command::new(node())
            .arg(&script)
            .arg(&modules)
            .arg(&dshkit)
            .arg(&report)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    ));
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = client.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the SDK client did not finish");
        std::thread::sleep(dshkit_os::process::POLL);
    };
    assert!(status.success(), "the SDK client failed: {status}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["server"]["name"], "dshkit", "{report:#}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for wanted in ["liveloop_browser", "echo_inspect", "plugin_check", "dshkit_info"] {
        assert!(tools.contains(&wanted), "{tools:?}");
    }
    assert_eq!(report["info"]["isError"], false, "{report:#}");
    let text = report["info"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
}

/// `npm install dshkit` on Windows, laid out as npm lays it out: the main
/// package with the launcher and the platform rule, and `@dshkit/win32-x64`
/// beside it with this build's `dshkit.exe`. Returns the launcher's path.
fn installed_package(dir: &Path, with_platform_package: bool) -> PathBuf {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/dsh-plugin");
    let main = dir.join("node_modules/dshkit");
    std::fs::create_dir_all(main.join("bin")).unwrap();
    for file in ["platform.js", "bin/dshkit.js"] {
        std::fs::copy(plugin.join(file), main.join(file)).unwrap();
    }
    std::fs::write(
        main.join("package.json"),
        r#"{"name":"dshkit","version":"0.0.0","type":"module","bin":{"dshkit":"bin/dshkit.js"}}"#,
    )
    .unwrap();
    if with_platform_package {
        let platform = dir.join("node_modules/@dshkit/win32-x64");
        std::fs::create_dir_all(platform.join("bin")).unwrap();
        std::fs::write(
            platform.join("package.json"),
            r#"{"name":"@dshkit/win32-x64","version":"0.0.0","os":["win32"],"cpu":["x64"]}"#,
        )
        .unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_dshkit"), platform.join("bin/dshkit.exe")).unwrap();
    }
    main.join("bin/dshkit.js")
}

/// Runs the launcher on Windows Node with `args`; its exit code.
fn launch(launcher: &Path, home: &Path, args: &[&str]) -> Option<i32> {
    let mut child = Guard(spawn(
        Command::new(node())
            .arg(launcher)
            .args(args)
            .env("USERPROFILE", home)
            .env("APPDATA", home.join("AppData/Roaming"))
            .env("LOCALAPPDATA", home.join("AppData/Local"))
            // Windows Node cannot write to a Linux pipe; it writes nothing here.
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    ));
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "the launcher did not end within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_npm_launcher_runs_the_windows_platform_packages_binary_and_ends_as_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let launcher = installed_package(dir.path(), true);
    assert_eq!(launch(&launcher, &home, &["--version"]), Some(0));
    // clap's usage error, through the launcher unchanged.
    assert_eq!(launch(&launcher, &home, &["no-such-command"]), Some(2));
    // The binary ran with these arguments: it wrote the setting where Windows keeps them.
    assert_eq!(
        launch(
            &launcher,
            &home,
            &["settings", "set", "--value", r#"{"quietWindowMs":700}"#]
        ),
        Some(0)
    );
    let written = walk(&home)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "settings.json"))
        .unwrap_or_else(|| panic!("no settings.json under {}", home.display()));
    let settings = std::fs::read_to_string(&written).unwrap();
    assert!(settings.contains("\"quietWindowMs\": 700"), "{settings}");

    // Without the platform package (`--omit=optional`), the launcher says so and exits 1.
    let bare = tempfile::tempdir().unwrap();
    let launcher = installed_package(bare.path(), false);
    assert_eq!(launch(&launcher, &home, &["--version"]), Some(1));
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
