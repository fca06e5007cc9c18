//! `dshkit` and other commands, isolated and run: the base every other helper
//! builds on.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `dshkit` binary under test.
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

/// The command's stdout as JSON; panics with stdout and stderr when it is not.
pub(crate) fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// A loopback port free at this moment, for a server that must be told its port.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
