//! How the boot tells an exit from a timeout, with launchers that exit the way
//! DSH can, made deterministic: the real DSH closes its outputs a moment before
//! its exit can be read, which only a launcher that waits in between shows on
//! every run. (The real DSH's own early exits are in `live` and `differential`.)

use std::path::Path;
use std::time::Duration;

use dshkit_check::Status;
use dshkit_check::live::{self, Dsh};

/// A `dsh` that runs `body` (a shell script) whatever it is asked.
fn launcher(dir: &Path, body: &str) -> Dsh {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("dsh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Dsh {
        launcher: path,
        path: std::env::var_os("PATH").unwrap_or_default(),
        home: dir.to_owned(),
        user_home: dir.to_owned(),
    }
}

#[test]
fn an_exit_just_after_closing_the_outputs_is_an_exit_not_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let dsh = launcher(
        dir.path(),
        "echo 'Error: dsh: plugin tree failed to load: boom' >&2\necho '    at apply (file:///p/index.js:2:33)' >&2\nexec >&- 2>&-\nsleep 0.5\nexit 3",
    );
    let (boot, instance) = live::live_boot(&dsh, "web", Duration::from_mins(1), live::BOOT_WATCH);
    assert!(instance.is_none());
    assert_eq!(boot.status, Status::Fail);
    assert!(
        boot.detail.starts_with("DSH exited (exit status: 3) ")
            && boot
                .detail
                .contains("before printing its URL: Error: dsh: plugin tree failed to load: boom"),
        "{boot:#?}"
    );
    assert_eq!(
        boot.evidence,
        [
            "Error: dsh: plugin tree failed to load: boom",
            "    at apply (file:///p/index.js:2:33)"
        ]
    );
}

#[test]
fn an_exit_while_a_child_holds_the_outputs_is_an_exit_and_the_child_goes() {
    let dir = tempfile::tempdir().unwrap();
    let child_pid = dir.path().join("child.pid");
    let dsh = launcher(
        dir.path(),
        &format!(
            "sleep 600 &\necho $! > '{}'\necho 'TypeError: boom' >&2\nexit 4",
            child_pid.display()
        ),
    );
    let (boot, _) = live::live_boot(&dsh, "web", Duration::from_mins(1), live::BOOT_WATCH);
    assert!(
        boot.detail.starts_with("DSH exited (exit status: 4) ")
            && boot.detail.contains("before printing its URL: TypeError: boom"),
        "{boot:#?}"
    );
    let pid: u32 = std::fs::read_to_string(&child_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = dshkit_os::process::Identity::of(pid)
        .map(|child| dshkit_os::process::wait_gone(vec![child], Duration::from_secs(10)));
    assert!(
        left.is_none_or(|left| left.is_empty()),
        "the child of the exited launcher was killed with its group"
    );
}

#[test]
fn a_signal_is_named_as_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let dsh = launcher(dir.path(), "echo 'dsh: fatal load failure: x' >&2\nkill -KILL $$");
    let (boot, _) = live::live_boot(&dsh, "web", Duration::from_mins(1), live::BOOT_WATCH);
    assert!(
        boot.detail.starts_with("DSH exited (signal: 9 (SIGKILL)) "),
        "{boot:#?}"
    );
    assert_eq!(boot.evidence, ["dsh: fatal load failure: x"]);
}
