//! Dev-server processes: spawned in their own process group with a watchdog that
//! stops the whole group when dshkit dies (even by SIGKILL), stopped as a tree, and
//! the process table read from `/proc` to prove it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStdin, Command};

/// A spawned dev server: the group leader and the watchdog that outlives us.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) pgid: u32,
    /// The app directory (canonical) and the leader's start time in clock ticks
    /// since boot: together they identify helpers the server detached.
    dir: PathBuf,
    started_ticks: u64,
    /// Closing this pipe (explicitly, or because dshkit died) makes the watchdog
    /// stop the group.
    watchdog_stdin: Option<ChildStdin>,
    watchdog: Option<Child>,
}

/// The watchdog: waits for its stdin to close, then INT, TERM and KILL to the group.
/// `sh` is everywhere and needs no part of dshkit to stay alive. (dash's `kill`
/// takes no `--`: a negative pid after the signal names the group.)
const WATCHDOG: &str =
    "read _ignored; kill -TERM -\"$1\" 2>/dev/null && { sleep 3; kill -KILL -\"$1\" 2>/dev/null; }; exit 0";

/// Starts `argv` in `dir` in a new process group, stdout and stderr piped.
pub(crate) fn spawn(argv: &[String], dir: &Path, env: &[(String, String)]) -> std::io::Result<Spawned> {
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("an empty argv"))?;
    let mut command = Command::new(program);
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
        .env("NUXT_TELEMETRY_DISABLED", "1")
        .process_group(0);
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command.spawn()?;
    let pgid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child exited at once"))?;
    let mut watchdog = Command::new("sh");
    watchdog
        .args(["-c", WATCHDOG, "dshkit-watchdog", &pgid.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C at the terminal must not kill it before it acts.
        .process_group(0);
    let (watchdog_stdin, watchdog) = match watchdog.spawn() {
        Ok(mut w) => (w.stdin.take(), Some(w)),
        Err(e) => {
            tracing::warn!(%e, "no watchdog for the dev server; it is stopped on dispose only");
            (None, None)
        }
    };
    Ok(Spawned {
        started_ticks: stat(pgid).map_or(0, |s| s.start_ticks),
        dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned()),
        child,
        pgid,
        watchdog_stdin,
        watchdog,
    })
}

impl Spawned {
    /// Stops the group the way a person at the terminal would: INT (Ctrl-C, which
    /// dev servers handle fastest), then TERM after a third of `grace`, then KILL at
    /// `grace`. Returns the members still alive afterwards (empty on success): the
    /// process table, not the leader's exit, is the authority.
    pub(crate) async fn stop(&mut self, grace: Duration) -> Vec<u32> {
        let began = Instant::now();
        signal_group(self.pgid, rustix::process::Signal::INT);
        let mut termed = false;
        let mut killed = false;
        loop {
            let _ = self.child.try_wait();
            if group_members(self.pgid).is_empty() {
                break;
            }
            if !termed && began.elapsed() >= grace / 3 {
                signal_group(self.pgid, rustix::process::Signal::TERM);
                termed = true;
            }
            if !killed && began.elapsed() >= grace {
                signal_group(self.pgid, rustix::process::Signal::KILL);
                killed = true;
            }
            if began.elapsed() >= grace + KILL_WAIT {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.child.try_wait();
        self.release_watchdog().await;
        let mut left = group_members(self.pgid);
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
        let found = detached_helpers(&self.dir, self.started_ticks);
        if found.is_empty() {
            return Vec::new();
        }
        wait_gone(&found, DETACHED_GRACE).await;
        // Those still running, and any helper one of them started meanwhile.
        let mut left: Vec<Identity> = found.into_iter().filter(Identity::alive).collect();
        for helper in detached_helpers(&self.dir, self.started_ticks) {
            if !left.contains(&helper) {
                left.push(helper);
            }
        }
        if left.is_empty() {
            return Vec::new();
        }
        tracing::debug!(?left, "killing helpers the dev server detached");
        for helper in &left {
            if let Some(pid) = i32::try_from(helper.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        // Waited on by identity, not by searching again: a process in the middle
        // of exiting has already lost its command line and working directory, so a
        // search would miss it while it still runs.
        wait_gone(&left, KILL_WAIT).await;
        left.into_iter().filter(Identity::alive).map(|h| h.pid).collect()
    }

    /// The stop is done and proved: the watchdog has nothing left to do. It is
    /// killed rather than woken, since zombies left in the group (whose reaper is
    /// the container's init) would make its signals "succeed" and its sleeps run.
    async fn release_watchdog(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), watchdog.wait()).await;
        }
        self.watchdog_stdin = None;
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // Dispose without an explicit stop: kill at once; the watchdog sees its
        // stdin close and repeats the kill for anything that escaped.
        if !group_members(self.pgid).is_empty() {
            signal_group(self.pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.try_wait();
    }
}

fn signal_group(pgid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// How long killed processes get to disappear from the table.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long detached helpers get to finish on their own.
const DETACHED_GRACE: Duration = Duration::from_secs(3);

/// The fields of `/proc/<pid>/stat` dshkit uses.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    group: u32,
    session: u32,
    start_ticks: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let fields: Vec<&str> = text[text.rfind(')')? + 2..].split(' ').collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) ... starttime(19).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// A process as the table knows it: its pid and start time, which together stay
/// unique when pids are reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    pid: u32,
    start_ticks: u64,
}

impl Identity {
    /// Still running: the same process (not a reuse of its pid), not a zombie.
    fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_ticks == self.start_ticks && !matches!(s.state, 'Z' | 'X'))
    }
}

/// Polls the process table until none of `processes` runs or `limit` passes.
async fn wait_gone(processes: &[Identity], limit: Duration) {
    let deadline = Instant::now() + limit;
    while processes.iter().any(Identity::alive) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Session leaders started at or after `since` that work in `dir` and run code from
/// it (their command line names a path inside it), like Next.js's
/// `node <app>/node_modules/next/dist/telemetry/detached-flush.js`.
fn detached_helpers(dir: &Path, since: u64) -> Vec<Identity> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let s = stat(pid)?;
            let leader = !matches!(s.state, 'Z' | 'X')
                && s.session == pid
                && s.group == pid
                && s.start_ticks >= since
                && since > 0;
            (leader
                && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&*dir.to_string_lossy())))
            .then_some(Identity {
                pid,
                start_ticks: s.start_ticks,
            })
        })
        .collect()
}

/// `(pid, ppid, pgid)` of every process, read from `/proc/*/stat`; zombies are left
/// out (they run nothing and vanish when reaped).
pub(crate) fn process_table() -> Vec<(u32, u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name is in parentheses and may contain spaces.
            let rest = &stat[stat.rfind(')')? + 2..];
            let mut fields = rest.split(' ');
            let state = fields.next()?;
            if state == "Z" || state == "X" {
                return None;
            }
            let parent = fields.next()?.parse().ok()?;
            let group = fields.next()?.parse().ok()?;
            Some((pid, parent, group))
        })
        .collect()
}

/// Live members of process group `pgid`.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    process_table()
        .into_iter()
        .filter(|(_, _, g)| *g == pgid)
        .map(|(pid, _, _)| pid)
        .collect()
}

/// TCP ports in LISTEN state held by any of `pids` (from `/proc/net/tcp{,6}` and
/// each process's socket descriptors).
pub(crate) fn listening_ports(pids: &[u32]) -> BTreeSet<u16> {
    let inodes: BTreeSet<u64> = pids
        .iter()
        .filter_map(|pid| std::fs::read_dir(format!("/proc/{pid}/fd")).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            target.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect();
    listeners()
        .into_iter()
        .filter(|(_, inode)| inodes.contains(inode))
        .map(|(port, _)| port)
        .collect()
}

/// Who listens on `port`: the pids holding a listening socket on it.
pub(crate) fn port_holders(port: u16) -> Vec<u32> {
    let inodes: BTreeSet<u64> = listeners()
        .into_iter()
        .filter(|(p, _)| *p == port)
        .map(|(_, inode)| inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    process_table()
        .into_iter()
        .map(|(pid, _, _)| pid)
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|t| {
                    t.to_str()
                        .and_then(|t| t.strip_prefix("socket:[")?.strip_suffix(']')?.parse::<u64>().ok())
                        .is_some_and(|i| inodes.contains(&i))
                })
        })
        .collect()
}

/// `(port, inode)` of every listening TCP socket.
fn listeners() -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if fields.len() < 10 || fields[3] != "0A" {
                continue;
            }
            let port = fields[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if let (Some(port), Ok(inode)) = (port, fields[9].parse()) {
                out.push((port, inode));
            }
        }
    }
    out
}

/// The command line of `pid`, for messages (bounded).
pub(crate) fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut text: String = String::from_utf8_lossy(&raw).replace('\0', " ").trim().to_owned();
    if text.len() > 200 {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
