//! What a process is: its pid with its start time, and its row of the process
//! table. Plain data and the rules read from a table; what the platform does
//! with a process is the parent module's.

/// When a process started, in the platform's own clock: clock ticks since boot
/// (Linux), microseconds since the epoch (macOS), 100 ns since 1601 (Windows).
/// Only compared with start times read on the same machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StartTime(pub u64);

/// A process: its pid and start time, which together stay unique when pids are
/// reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    pub pid: u32,
    pub started: StartTime,
}

/// One row of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub pid: u32,
    pub parent: Option<u32>,
    pub started: StartTime,
    /// The process group it belongs to (Unix; `None` on Windows).
    pub group: Option<u32>,
    /// It leads its own session and process group: it detached itself from
    /// whoever started it (Unix `setsid`; never on Windows, where a job holds
    /// detached children too).
    pub detached: bool,
}

impl Entry {
    pub fn identity(&self) -> Identity {
        Identity {
            pid: self.pid,
            started: self.started,
        }
    }
}

impl Identity {
    /// This process and every descendant in `table`, parents before children. A
    /// child must have started no earlier than its parent: on Windows a parent
    /// pid may name a dead parent whose pid was reused.
    pub(super) fn tree_in(self, table: &[Entry]) -> Vec<Self> {
        let mut members = vec![self];
        let mut index = 0;
        while index < members.len() {
            let parent = members[index];
            for entry in table {
                if entry.parent == Some(parent.pid)
                    && entry.started >= parent.started
                    && !members.iter().any(|m| m.pid == entry.pid)
                {
                    members.push(entry.identity());
                }
            }
            index += 1;
        }
        members
    }
}
