//! Dev-server processes: spawned in a group of their own that follows the whole
//! process tree (a script a package manager runs in a group of its own is a
//! member), dies with dshkit (even when dshkit is killed), is stopped as a
//! whole, and the process table read to prove it. The platform parts are
//! `dshkit_os::process`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use dshkit_os::process::{Group, Identity};
use tokio::process::{Child, Command};

pub(crate) use dshkit_os::process::{command_line, listening_ports, port_holders};

/// A spawned dev server: the leader and its group, bound to dshkit's lifetime.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) group: Group,
    /// The app directory (canonical) and the leader: together they identify
    /// helpers the server detached.
    dir: PathBuf,
    leader: Option<Identity>,
}

/// Starts `argv` in `dir` in a new process group that follows its tree, stdout
/// and stderr piped.
pub(crate) fn spawn(
    argv: &[std::ffi::OsString],
    dir: &Path,
    env: &[(String, String)],
) -> std::io::Result<Spawned> {
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("an empty argv"))?;
    let mut command = Command::new(program);
    // The host's environment less `DSH_*` and credential-shaped names, as DSH
    // gives its own children; what dshkit sets follows.
    dshkit_env::inherit::inherit(command.as_std_mut());
    command
        .args(rest)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Dev servers must never open a desktop browser or wait for a TTY answer.
        .env("BROWSER", "none")
        .env("FORCE_COLOR", "0")
        .env("NEXT_TELEMETRY_DISABLED", "1")
        .env("ASTRO_TELEMETRY_DISABLED", "1")
        .env("NUXT_TELEMETRY_DISABLED", "1");
    for (key, value) in env {
        command.env(key, value);
    }
    Group::prepare(command.as_std_mut());
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child exited at once"))?;
    let mut group = match Group::adopt_tree(pid) {
        Ok(group) => group,
        Err(e) => {
            let _ = child.start_kill();
            return Err(e);
        }
    };
    if let Err(e) = group.bind_to_dshkit() {
        tracing::warn!(%e, "the dev server is not bound to dshkit's lifetime; it is stopped on dispose only");
    }
    Ok(Spawned {
        leader: Identity::of(pid),
        dir: dshkit_os::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned()),
        child,
        group,
    })
}

impl Spawned {
    /// Stops the group the way a person at the terminal would: INT (Ctrl-C, which
    /// dev servers handle fastest) to every member of the tree, then TERM after a
    /// third of `grace`, then KILL from `grace` on (again at each look, for a
    /// member started meanwhile). Returns the members still alive afterwards
    /// (empty on success): the process table, not the leader's exit, is the
    /// authority.
    pub(crate) async fn stop(&mut self, grace: Duration) -> Vec<u32> {
        let began = Instant::now();
        self.group.interrupt();
        let mut termed = false;
        loop {
            let _ = self.child.try_wait();
            if self.group.members().is_empty() {
                break;
            }
            if !termed && began.elapsed() >= grace / 3 {
                self.group.terminate();
                termed = true;
            }
            if began.elapsed() >= grace {
                self.group.kill();
            }
            if began.elapsed() >= grace + KILL_WAIT {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.child.try_wait();
        self.group.release();
        let mut left = self.group.members();
        left.extend(self.stop_detached().await);
        left
    }

    /// Helpers the server started in a session of their own (Next.js flushes its
    /// telemetry from one as it exits): orphans now, with their own session, started
    /// after the server, working in the app directory. They get a moment to finish,
    /// then are killed. Returns those still alive.
    async fn stop_detached(&self) -> Vec<u32> {
        // No settle time is needed: a child started with spawn (libuv, std) has
        // left its parent's session and exec'd before spawn returns, so before
        // the server that started it can have exited.
        let Some(leader) = self.leader else {
            return Vec::new();
        };
        let found = detached_helpers(&self.dir, leader);
        if found.is_empty() {
            return Vec::new();
        }
        wait_gone(&found, DETACHED_GRACE).await;
        // Those still running, and any helper one of them started meanwhile.
        let mut left: Vec<Identity> = found.into_iter().filter(Identity::is_running).collect();
        for helper in detached_helpers(&self.dir, leader) {
            if !left.contains(&helper) {
                left.push(helper);
            }
        }
        if left.is_empty() {
            return Vec::new();
        }
        tracing::debug!(?left, "killing helpers the dev server detached");
        for helper in &left {
            helper.kill();
        }
        // Waited on by identity, not by searching again: a process in the middle
        // of exiting has already lost its command line and working directory, so a
        // search would miss it while it still runs.
        wait_gone(&left, KILL_WAIT).await;
        left.into_iter()
            .filter(Identity::is_running)
            .map(|h| h.pid)
            .collect()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // Dispose without an explicit stop: kill at once (a group already over gets
        // nothing). Dropping the group then lets its watchdog (Unix) repeat the
        // kill for anything that escaped; on Windows closing the job does it.
        self.group.kill();
        let _ = self.child.try_wait();
    }
}

/// How long killed processes get to disappear from the table.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long detached helpers get to finish on their own.
const DETACHED_GRACE: Duration = Duration::from_secs(3);

/// Polls the process table until none of `processes` runs or `limit` passes.
async fn wait_gone(processes: &[Identity], limit: Duration) {
    let deadline = Instant::now() + limit;
    while processes.iter().any(Identity::is_running) && Instant::now() < deadline {
        tokio::time::sleep(dshkit_os::process::POLL).await;
    }
}

/// Processes that detached themselves (their own session and group) after the
/// server started, work in `dir` and run code from it (their command line names
/// a path inside it), like Next.js's
/// `node <app>/node_modules/next/dist/telemetry/detached-flush.js`. (Windows has
/// none: a job holds detached children too.)
fn detached_helpers(dir: &Path, server: Identity) -> Vec<Identity> {
    let dir_text = dir.to_string_lossy();
    dshkit_os::process::snapshot()
        .into_iter()
        .filter(|e| e.detached && e.started >= server.started)
        .filter(|e| dshkit_os::process::cwd(e.pid).is_some_and(|cwd| cwd.starts_with(dir)))
        .filter(|e| dshkit_os::process::argv(e.pid).is_some_and(|a| a.join(" ").contains(&*dir_text)))
        .map(|e| e.identity())
        .collect()
}
