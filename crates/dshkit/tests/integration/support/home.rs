//! Isolated homes and directories a test hands to `dshkit`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::command::{dshkit_command, output, stdout_json};

/// A fresh temp dir that is `dshkit`'s HOME (and holds its XDG directories).
pub(crate) struct Home(tempfile::TempDir);

impl Home {
    pub(crate) fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    /// A path inside the home.
    pub(crate) fn join(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.0.path().join(relative)
    }

    /// `dshkit`, isolated in this home, to be given its arguments.
    pub(crate) fn dshkit(&self) -> Command {
        dshkit_command(self.path())
    }

    /// `dshkit ARGS`, isolated in this home, run to its end.
    pub(crate) fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        output(self.dshkit().args(args))
    }
}

/// `dshkit mcp --describe` in `home`, which must succeed: what it prints.
pub(crate) fn describe(home: &Path) -> Value {
    let out = output(dshkit_command(home).args(["mcp", "--describe"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

/// A fresh temp dir handed to a child as the environment variable `name`
/// (the evidence root, `TMPDIR`, `XDG_CONFIG_HOME`).
pub(crate) struct EnvDir {
    name: &'static str,
    /// The directory as the variable's value.
    pub(crate) value: String,
    dir: tempfile::TempDir,
}

impl EnvDir {
    fn new(name: &'static str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            name,
            value: dir.path().display().to_string(),
            dir,
        }
    }

    /// `DSHKIT_EVIDENCE_ROOT`: where the server writes its evidence.
    pub(crate) fn evidence_root() -> Self {
        Self::new("DSHKIT_EVIDENCE_ROOT")
    }

    /// `TMPDIR`: Chromium's profile is made in it, so its processes carry it on
    /// their command lines and can be found.
    pub(crate) fn tmpdir() -> Self {
        Self::new("TMPDIR")
    }

    /// `XDG_CONFIG_HOME`: where the settings file is read.
    pub(crate) fn config_home() -> Self {
        Self::new("XDG_CONFIG_HOME")
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The variable as an environment entry.
    pub(crate) fn env(&self) -> (&str, &str) {
        (self.name, &self.value)
    }
}

/// Every file under `dir`, at any depth (none when `dir` does not exist).
pub(crate) fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}
