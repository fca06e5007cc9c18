//! dshkit in the environment of a stock Windows machine: no `HOME`, the
//! profile's folders (`USERPROFILE`, `APPDATA`, `LOCALAPPDATA`), the path
//! variable spelled `Path`, and `SystemRoot`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{dshkit, node};

/// A user profile in a temp dir, and the environment Windows gives its programs.
pub(crate) struct Stock {
    _dir: tempfile::TempDir,
    pub(crate) profile: PathBuf,
    pub(crate) roaming: PathBuf,
    pub(crate) local: PathBuf,
}

impl Stock {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("Users").join("u");
        let (roaming, local) = (
            profile.join("AppData").join("Roaming"),
            profile.join("AppData").join("Local"),
        );
        for d in [&roaming, &local] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self {
            _dir: dir,
            profile,
            roaming,
            local,
        }
    }

    /// `command` with only this environment: Windows Node's folder first on `Path`.
    pub(crate) fn apply<'c>(&self, command: &'c mut Command, path: &[&Path]) -> &'c mut Command {
        let root = PathBuf::from(std::env::var_os("SystemRoot").expect("Wine sets SystemRoot"));
        let node_dir = dshkit_os::fs::canonicalize(node().parent().unwrap()).unwrap();
        let dirs = [node_dir.as_path()]
            .into_iter()
            .chain(path.iter().copied())
            .map(|p| dshkit_os::fs::canonicalize(p).unwrap())
            .chain([root.join("system32"), root.clone()]);
        let temp = self.local.join("Temp");
        std::fs::create_dir_all(&temp).unwrap();
        command
            .env_clear()
            .env("Path", std::env::join_paths(dirs).unwrap())
            .env("SystemRoot", &root)
            .env("ComSpec", root.join("system32").join("cmd.exe"))
            .env("PATHEXT", ".COM;.EXE;.BAT;.CMD")
            .env("TEMP", &temp)
            .env("TMP", &temp)
            .env("USERPROFILE", &self.profile)
            .env("APPDATA", &self.roaming)
            .env("LOCALAPPDATA", &self.local)
            .env("NO_COLOR", "1")
    }
}

#[test]
fn doctor_finds_its_folders_and_node_in_a_stock_windows_environment() {
    let stock = Stock::new();
    let out = stock
        .apply(dshkit().args(["--json", "doctor"]), &[])
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let fact = |id: &str| {
        report["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()
            .clone()
    };
    let node_fact = fact("node");
    assert_eq!(node_fact["status"], "ok", "{node_fact:#}");
    assert_eq!(
        dshkit_os::fs::canonicalize(node_fact["path"].as_str().unwrap()).unwrap(),
        dshkit_os::fs::canonicalize(node()).unwrap(),
        "Windows Node, found on Path"
    );
    let evidence = fact("evidence_root");
    assert_eq!(evidence["status"], "ok", "{evidence:#}");
    assert_eq!(
        PathBuf::from(evidence["path"].as_str().unwrap()),
        stock.local.join("dshkit").join("evidence")
    );
    assert!(stock.local.join("dshkit").join("evidence").is_dir());
    let settings = stock.roaming.join("dshkit").join("settings.json");
    assert!(
        evidence["details"]
            .as_array()
            .unwrap()
            .contains(&format!("settings: {}", settings.display()).into()),
        "{evidence:#}"
    );
    let dsh_home = fact("dsh_home");
    assert_eq!(
        PathBuf::from(dsh_home["path"].as_str().unwrap_or_default()),
        stock.profile.join(".dsh"),
        "DSH's own default home, ~/.dsh under USERPROFILE: {dsh_home:#}"
    );
}

/// DSH's shape: `--dump-config` prints a config; a boot starts a child Node,
/// serves, and prints its URL line. It writes its parent's pid to `parent.pid`,
/// and the child what it sees of the environment to `seen.json`, in the DSH home.
const DSH_LAUNCHER: &str = r"
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
if (process.argv.includes('--dump-config')) {
  process.stdout.write(JSON.stringify({ plugins: {} }) + '\n');
  process.exit(0);
}
fs.writeFileSync(path.join(process.env.DSH_HOME, 'parent.pid'), String(process.ppid));
const seen = path.join(process.env.DSH_HOME, 'seen.json');
const report = `require('fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ systemRoot: process.env.SystemRoot ?? null, temp: process.env.TEMP ?? null, appData: process.env.APPDATA ?? null, apiKey: process.env.DEEPSEEK_API_KEY ?? null, dshProfile: process.env.DSH_PROFILE ?? null })); setInterval(() => {}, 1000);`;
spawn(process.execPath, ['-e', report], { stdio: 'ignore' });
const server = require('node:http').createServer((q, r) => r.end('<!doctype html><title>dsh</title>'));
server.listen(0, '127.0.0.1', () => console.log(`dsh web: http://127.0.0.1:${server.address().port}/`));
";

/// What npm's cmd-shim writes for `dsh` in a global prefix on Windows.
const DSH_CMD_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@deepseek-ai\\dsh\\lib\\bin.js\" %*\r\n";

#[test]
fn check_boots_a_dsh_cmd_from_path_through_node_and_its_child_inherits_system_root() {
    let stock = Stock::new();
    // `npm install -g @deepseek-ai/dsh` on Windows: %APPDATA%\npm.
    let prefix = stock.roaming.join("npm");
    let package = prefix.join("node_modules/@deepseek-ai/dsh");
    std::fs::create_dir_all(package.join("lib")).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name":"@deepseek-ai/dsh","version":"0.1.0-rc.8","bin":{"dsh":"lib/bin.js"}}"#,
    )
    .unwrap();
    std::fs::write(package.join("lib/bin.js"), DSH_LAUNCHER).unwrap();
    std::fs::write(prefix.join("dsh.cmd"), DSH_CMD_SHIM).unwrap();
    // DSH's default home, ~/.dsh under USERPROFILE.
    let home = stock.profile.join(".dsh");
    std::fs::create_dir_all(home.join("profiles/web")).unwrap();

    let check = super::spawn(
        stock
            .apply(dshkit().args(["--json", "check", "--live"]), &[&prefix])
            .env("DEEPSEEK_API_KEY", "sk-not-for-children")
            .env("DSH_PROFILE", "not-for-children")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    );
    let dshkit_pid = check.id();
    let out = check.wait_with_output().unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let check = |id: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {report:#}"))
            .clone()
    };
    for id in ["config_assembly", "live_boot", "leftover_audit"] {
        assert_eq!(check(id)["status"], "pass", "{:#}", check(id));
    }
    // This dshkit has no console (its streams are pipes, and Wine gives a
    // program started so none), so no Ctrl-Break can ask DSH to stop. Ending
    // its job instead proves nothing about a clean shutdown: not a pass.
    let shutdown = check("shutdown");
    assert_eq!(shutdown["status"], "not_tested", "{shutdown:#}");
    assert!(
        shutdown["detail"]
            .as_str()
            .unwrap()
            .starts_with("no Ctrl-Break could reach the instance"),
        "{shutdown:#}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("parent.pid")).unwrap(),
        dshkit_pid.to_string(),
        "DSH's Node is dshkit's own child: dsh.cmd is not run through cmd.exe"
    );
    let seen: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join("seen.json")).unwrap()).unwrap();
    assert_eq!(
        seen["systemRoot"].as_str().map(PathBuf::from),
        std::env::var_os("SystemRoot").map(PathBuf::from),
        "{seen}"
    );
    // Wine gives a Windows program SystemRoot even from an empty environment
    // block; these it does not make up.
    assert_eq!(
        seen["temp"].as_str().map(PathBuf::from),
        Some(stock.local.join("Temp")),
        "the host's environment is inherited: {seen}"
    );
    assert_eq!(
        seen["appData"].as_str().map(PathBuf::from),
        Some(stock.roaming.clone()),
        "{seen}"
    );
    assert_eq!(
        seen["apiKey"],
        serde_json::Value::Null,
        "credentials are not inherited"
    );
    assert_eq!(seen["dshProfile"], serde_json::Value::Null, "nor DSH_* names");
}
