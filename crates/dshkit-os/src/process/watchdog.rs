//! The Unix watchdog: a shell that outlives dshkit to stop a process group.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};

/// Waits for its stdin to close, then TERM to the group, and KILL if the group
/// is still there after `$2` tenths of a second. It looks every tenth and leaves
/// as soon as the group is gone: a pid is free for reuse once its group is empty,
/// and a blind KILL seconds later could hit a group that merely has the same
/// number. `sh` is everywhere and needs no part of dshkit to stay alive. (dash's
/// `kill` takes no `--`: a negative pid after the signal names the group.)
const SCRIPT: &str = "read _ignored; kill -TERM -\"$1\" 2>/dev/null || exit 0; i=0; \
     while kill -0 -\"$1\" 2>/dev/null; do \
     if [ \"$i\" -ge \"$2\" ]; then kill -KILL -\"$1\" 2>/dev/null; exit 0; fi; \
     sleep 0.1; i=$((i + 1)); done; exit 0";

/// How long a group gets to stop on TERM before the watchdog sends KILL.
const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

#[derive(Debug)]
pub(super) struct Watchdog {
    child: Option<Child>,
    /// Closing it (explicitly, or because dshkit died) makes the watchdog act.
    stdin: Option<ChildStdin>,
}

impl Watchdog {
    pub(super) fn start(group: u32) -> std::io::Result<Self> {
        Self::with_grace(group, GRACE)
    }

    fn with_grace(group: u32, grace: std::time::Duration) -> std::io::Result<Self> {
        let tenths = grace.as_millis() / 100;
        let mut child = Command::new("sh")
            .args([
                "-c",
                SCRIPT,
                "dshkit-watchdog",
                &group.to_string(),
                &tenths.to_string(),
            ])
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::process::{Identity, wait_gone};

    fn group_of(command: &mut Command) -> (std::process::Child, u32) {
        let child = command.process_group(0).spawn().unwrap();
        let id = child.id();
        (child, id)
    }

    #[test]
    fn a_group_that_stops_on_term_is_left_alone_at_once() {
        let (mut leader, group) = group_of(Command::new("sleep").arg("600"));
        // Ten minutes of grace: a watchdog that waits it out before looking again
        // would outlive this test's bound by far.
        let watchdog = Watchdog::with_grace(group, Duration::from_mins(10)).unwrap();
        let shell = Identity::of(watchdog.child.as_ref().unwrap().id()).unwrap();
        drop(watchdog);
        let _ = leader.wait();
        // Bounded far beyond any machine's noise, and far below the grace.
        if !wait_gone(vec![shell], Duration::from_mins(1)).is_empty() {
            // Not left to act ten minutes from now on a number that may be reused.
            shell.kill();
            panic!("the watchdog waited out its grace after the group was gone");
        }
    }

    #[test]
    fn a_group_that_ignores_term_is_killed_after_the_grace() {
        let (mut leader, group) = group_of(
            Command::new("sh")
                .args(["-c", "trap '' TERM; echo ready; sleep 600 & wait"])
                .stdout(std::process::Stdio::piped()),
        );
        // The trap is in place (and inherited by `sleep`) before the watchdog acts.
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "ready\n");
        let watchdog = Watchdog::with_grace(group, Duration::from_millis(500)).unwrap();
        drop(watchdog);
        let status = leader.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{status:?}"
        );
    }
}
