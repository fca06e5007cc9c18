//! The Unix watchdog: a shell that outlives dshkit to stop a process group.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};

/// Waits for its stdin to close, then TERM and (3 s later) KILL to the group.
/// `sh` is everywhere and needs no part of dshkit to stay alive. (dash's `kill`
/// takes no `--`: a negative pid after the signal names the group.)
const SCRIPT: &str =
    "read _ignored; kill -TERM -\"$1\" 2>/dev/null && { sleep 3; kill -KILL -\"$1\" 2>/dev/null; }; exit 0";

#[derive(Debug)]
pub(super) struct Watchdog {
    child: Option<Child>,
    /// Closing it (explicitly, or because dshkit died) makes the watchdog act.
    stdin: Option<ChildStdin>,
}

impl Watchdog {
    pub(super) fn start(group: u32) -> std::io::Result<Self> {
        let mut child = Command::new("sh")
            .args(["-c", SCRIPT, "dshkit-watchdog", &group.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: a Ctrl-C at the terminal must not kill it before it acts.
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Self {
            child: Some(child),
            stdin,
        })
    }

    /// Stops the watchdog without letting it act, and reaps it.
    pub(super) fn release(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stdin = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Let go: the watchdog stops the group. Reaped off this thread, since it
        // may take its 3 s before KILL.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        if let Some(mut child) = self.child.take() {
            let _ = std::thread::Builder::new()
                .name("dshkit-watchdog-reaper".into())
                .spawn(move || child.wait());
        }
    }
}
