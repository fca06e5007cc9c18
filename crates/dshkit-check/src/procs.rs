//! The process table, read from `/proc` (Linux).

use std::path::PathBuf;

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Start time in clock ticks since boot (field 22 of `/proc/PID/stat`): with the
/// pid it identifies a process even after the pid is reused.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and every live descendant, each with its start time (the identity a
/// later kill checks), parents before children.
pub fn tree(root: u32) -> Vec<(u32, u64)> {
    let table: Vec<(u32, Option<u32>)> = all().into_iter().map(|p| (p, parent(p))).collect();
    let mut members = vec![root];
    let mut index = 0;
    while index < members.len() {
        let parent_pid = members[index];
        let children: Vec<u32> = table
            .iter()
            .filter(|(pid, ppid)| *ppid == Some(parent_pid) && !members.contains(pid))
            .map(|(pid, _)| *pid)
            .collect();
        members.extend(children);
        index += 1;
    }
    members
        .into_iter()
        .filter(|p| alive(*p))
        .filter_map(|p| Some((p, start_ticks(p)?)))
        .collect()
}

/// Whether the process `pid` that started at `ticks` still runs (a reused pid is
/// another process).
pub fn same_alive(pid: u32, ticks: u64) -> bool {
    alive(pid) && start_ticks(pid) == Some(ticks)
}

fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// The arguments of `pid`.
pub fn argv(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

pub fn cmdline(pid: u32) -> Option<String> {
    argv(pid).map(|a| a.join(" "))
}

/// The working directory of `pid`, to resolve a relative script argument.
pub fn cwd(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Every pid on the machine.
pub fn all() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live members of the process group led by `leader`.
pub fn group_members(leader: u32) -> Vec<u32> {
    all()
        .into_iter()
        .filter(|p| alive(*p) && process_group(*p) == Some(leader))
        .collect()
}
