//! Children that cannot outlive their test.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use dshkit_os::process::{Group, Identity};
use std::time::Duration;

/// A child in its own process group. Dropping the guard kills the group (the child
/// and everything it started) and reaps the child. The group is bound to the test
/// process too: a test killed outright (a timeout, a cancelled run) takes it along.
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
        wait_exit(&mut self.child, grace)
    }

    /// Asks the child alone to stop with SIGINT (Windows terminates it), then
    /// waits up to `grace` for it to exit; panics when the signal cannot be sent.
    pub fn interrupt(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let sent = Identity::of(self.child.id()).is_some_and(|child| child.interrupt());
        assert!(sent, "failed to interrupt {}", self.child.id());
        wait_exit(&mut self.child, grace)
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
        self.group.release(); // stopped: the binding has nothing left to do
    }
}

/// The child's exit status once it exits within `grace`.
fn wait_exit(child: &mut Child, grace: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
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
    let mut group = Group::adopt(child.id()).unwrap_or_else(|e| panic!("failed to group {command:?}: {e}"));
    group
        .bind_to_dshkit()
        .unwrap_or_else(|e| panic!("failed to bind {command:?} to this test: {e}"));
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

/// Spawns `command` (see [`spawn_guarded`]) and waits up to `timeout` for its
/// ready line, the first stdout line that starts with `prefix`: the child, and
/// the rest of that line (a URL, as servers announce it).
pub fn spawn_ready(command: &mut Command, prefix: &str, timeout: Duration) -> (ChildGuard, String) {
    let mut guard = spawn_guarded(command);
    let line = read_ready_line(&mut guard, prefix, timeout);
    let rest = line[prefix.len()..].to_owned();
    (guard, rest)
}

/// Polls `probe` until it gives a value, for at most `within`: a wait for an
/// event, never a measure of speed. `probe` says, when not yet, what it saw;
/// the panic at the end quotes the last of it.
pub fn wait_for<T>(within: Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        match probe() {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < deadline,
                "not within {within:?}: {seen}"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `done` until it holds, for at most `within`; panics with `what` then.
pub fn wait_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    wait_for(within, || if done() { Ok(()) } else { Err(what.to_owned()) });
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// Set in the copy of this test binary that holds a guarded child.
    const HOLDER: &str = "DSHKIT_TEST_GUARD_HOLDER";

    #[test]
    fn a_guarded_child_dies_with_a_test_process_killed_outright() {
        if std::env::var_os(HOLDER).is_some() {
            // The holder: guard a long sleep, say its pid, then wait to be killed.
            let guard = spawn_guarded(Command::new("sleep").arg("600"));
            let mut out = std::io::stdout();
            writeln!(out, "child {}", guard.pid()).unwrap();
            out.flush().unwrap();
            std::thread::sleep(Duration::from_mins(10));
            return;
        }
        let mut holder = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child::tests::a_guarded_child_dies_with_a_test_process_killed_outright",
                "--nocapture",
            ])
            .env(HOLDER, "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
        let child: u32 = lines
            .find_map(|line| line.ok()?.strip_prefix("child ")?.parse().ok())
            .expect("the holder names its child");
        let child = Identity::of(child).expect("the guarded child runs");
        holder.kill().unwrap(); // SIGKILL: no destructor runs in the holder
        holder.wait().unwrap();
        let left = dshkit_os::process::wait_gone(vec![child], Duration::from_secs(30));
        assert!(left.is_empty(), "the guarded child outlived its test process");
    }
}
