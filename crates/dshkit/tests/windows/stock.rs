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
