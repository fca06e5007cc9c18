//! Children that cannot outlive their test.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use dshkit_os::process::{Group, Identity};
use std::time::Duration;

/// A child in its own process group. Dropping the guard kills the group (the child
/// and everything it started) and reaps the child.
#[derive(Debug)]
pub struct ChildGuard {
    pub child: Child,
    group: Group,
}

impl ChildGuard {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks the child alone to stop (SIGTERM; Windows terminates it), then
    /// waits up to `grace` for it to exit.
    pub fn terminate(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        Identity::of(self.child.id())?.terminate();
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Whether the child is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.group.kill();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `command` in a group of its own with piped stdio.
pub fn spawn_guarded(command: &mut Command) -> ChildGuard {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Group::prepare(command);
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("failed to spawn {command:?}: {e}"));
    let group = Group::adopt(child.id()).unwrap_or_else(|e| panic!("failed to group {command:?}: {e}"));
    ChildGuard { child, group }
}

/// Reads stdout lines until one starts with `prefix`, within `timeout`. Returns the
/// line; panics with everything the child printed otherwise.
pub fn read_ready_line(guard: &mut ChildGuard, prefix: &str, timeout: Duration) -> String {
    let stdout = guard.child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    let prefix_owned = prefix.to_owned();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut seen = String::new();
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.starts_with(&prefix_owned) {
                let _ = tx.send(Ok(line.trim_end().to_owned()));
                // Keep draining so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
                return;
            }
            seen.push_str(&line);
            line.clear();
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(line)) => line,
        other => {
            let mut stderr = String::new();
            if let Some(mut err) = guard.child.stderr.take() {
                let _ = guard.child.kill();
                let _ = err.read_to_string(&mut stderr);
            }
            panic!(
                "no line starting with {prefix:?} within {timeout:?}: stdout so far {other:?}; stderr: {stderr}"
            );
        }
    }
}
