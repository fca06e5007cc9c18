//! Bounded waits on processes, polling the table.

use std::time::{Duration, Instant};

use super::identity::Identity;

/// Polls the table until none of `processes` runs or `limit` passes; returns
/// those still running.
pub fn wait_gone(mut processes: Vec<Identity>, limit: Duration) -> Vec<Identity> {
    let deadline = Instant::now() + limit;
    loop {
        processes.retain(Identity::is_running);
        if processes.is_empty() || Instant::now() >= deadline {
            return processes;
        }
        std::thread::sleep(POLL);
    }
}

/// Polls `child` until it exits or `limit` passes; its status, or `None` if it
/// still runs then. Kills nothing.
pub fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            _ => return None,
        }
    }
}

/// How often a wait on the process table looks again.
pub const POLL: Duration = Duration::from_millis(20);
