//! Linux: `/proc`, process groups and the parent-death signal.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::time::Duration;

use super::identity::{Entry, StartTime};

/// The fields of `/proc/<pid>/stat` used here, or `None` for a zombie.
fn stat(pid: u32) -> Option<Entry> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let fields: Vec<&str> = text[text.rfind(')')? + 2..].split(' ').collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) ... starttime(19).
    if matches!(fields.first()?.chars().next()?, 'Z' | 'X') {
        return None;
    }
    let group: u32 = fields.get(2)?.parse().ok()?;
    let session: u32 = fields.get(3)?.parse().ok()?;
    Some(Entry {
        pid,
        parent: fields.get(1)?.parse().ok().filter(|p| *p != 0),
        started: StartTime(fields.get(19)?.parse().ok()?),
        group: Some(group),
        detached: group == pid && session == pid,
    })
}

fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
}

pub(super) fn snapshot() -> Vec<Entry> {
    pids().filter_map(stat).collect()
}

pub(super) fn entry(pid: u32) -> Option<Entry> {
    stat(pid)
}

pub(super) fn start_time(pid: u32) -> Option<StartTime> {
    stat(pid).map(|e| e.started)
}

pub(super) fn argv(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

pub(super) fn cwd(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

pub(super) fn age(started: StartTime) -> Option<Duration> {
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let hz = rustix::param::clock_ticks_per_second();
    #[expect(
        clippy::cast_precision_loss,
        reason = "ticks since boot fit an f64 exactly for centuries"
    )]
    let started = started.0 as f64 / hz as f64;
    Some(Duration::from_secs_f64((uptime - started).max(0.0)))
}

#[expect(
    unsafe_code,
    reason = "pre_exec is the only way to set the parent-death signal in the child"
)]
pub(super) fn die_with_spawning_thread(command: &mut std::process::Command) -> bool {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe system calls (prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // The parent may have died before the signal was armed.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("parent exited during launch"));
            }
            Ok(())
        });
    }
    true
}

/// `(port, pid)` of every listening TCP socket held by one of `pids` (all
/// processes when `None`): `/proc/net/tcp{,6}` names the socket inodes, each
/// process's descriptors name the inodes it holds.
pub(super) fn listeners(pids: Option<&[u32]>) -> Vec<(u16, u32)> {
    let sockets = listening_inodes();
    if sockets.is_empty() {
        return Vec::new();
    }
    let inodes: BTreeSet<u64> = sockets.iter().map(|(_, inode)| *inode).collect();
    let candidates: Vec<u32> = pids.map_or_else(|| self::pids().collect(), <[u32]>::to_vec);
    let mut out = Vec::new();
    for pid in candidates {
        let held: BTreeSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter_map(|target| {
                target
                    .to_str()?
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse()
                    .ok()
            })
            .filter(|inode| inodes.contains(inode))
            .collect();
        for (port, inode) in &sockets {
            if held.contains(inode) {
                out.push((*port, pid));
            }
        }
    }
    out
}

/// `(port, inode)` of every listening TCP socket.
fn listening_inodes() -> Vec<(u16, u64)> {
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
