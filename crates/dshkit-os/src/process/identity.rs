//! What a process is: its pid with its start time, and its row of the process
//! table. Plain data and the rules read from a table; what the platform does
//! with a process is the parent module's.

use std::time::{Duration, SystemTime};

/// How much later than a process's own wall-clock account of its start (as
/// Node's `Date.now() - process.uptime()`) the platform's record of it may lie
/// and still be the same process: the two clock reads and the rounding of the
/// record (Linux counts clock ticks from boot, read against `/proc/uptime` in
/// 10 ms steps). The platform records a process's start before its own code
/// runs, so the other way round has no bound to keep.
pub const CLAIMED_START_SLACK: Duration = Duration::from_secs(1);

/// What a process said of its own start, so that a later process given its pid
/// is told from it: the platform's own record where the process could read it
/// (Linux: `/proc/self/stat`), else its account on the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StartClaim {
    /// The platform's record, compared exactly.
    pub started: Option<StartTime>,
    /// When it started on the wall clock, by its own reckoning.
    pub at: Option<SystemTime>,
}

impl StartClaim {
    /// The one rule against pid reuse where a process names itself (a DevTools
    /// collector's registry file): whether `process`, which the platform saw
    /// start at `started_at` on the wall clock, can be the one that made this
    /// claim. With the platform's record, the start times are equal. With a
    /// wall-clock account only: a process that took a dead one's pid started
    /// after that one's account of its start, so one that started later than
    /// the account by more than [`CLAIMED_START_SLACK`] is another process.
    /// Windows and macOS keep a start on the wall clock when the process is
    /// made; Linux keeps it from boot, so there a step of the wall clock since
    /// moves `started_at`, and a process on Linux is best named with its
    /// platform record. A claim of neither is taken on the pid alone.
    pub fn is_made_by(&self, process: Identity, started_at: Option<SystemTime>) -> bool {
        match (self.started, self.at) {
            (Some(started), _) => process.started == started,
            (None, Some(at)) => started_at.is_some_and(|started| started <= at + CLAIMED_START_SLACK),
            (None, None) => true,
        }
    }
}

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
