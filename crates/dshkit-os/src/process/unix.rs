//! What Linux and macOS share: signals, and process groups named by their leader.

use std::os::unix::process::CommandExt as _;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Identity;

fn signal_pid(pid: u32, signal: rustix::process::Signal) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::kill_process(pid, signal).is_ok())
}

fn signal_group(group: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

pub(super) fn kill(process: Identity) -> bool {
    signal_pid(process.pid, rustix::process::Signal::KILL)
}

pub(super) fn interrupt(process: Identity) -> bool {
    signal_pid(process.pid, rustix::process::Signal::INT)
}

pub(super) fn terminate(process: Identity) -> bool {
    signal_pid(process.pid, rustix::process::Signal::TERM)
}

pub(super) fn kill_group_led_by(leader: Identity) {
    signal_group(leader.pid, rustix::process::Signal::KILL);
}

pub(super) fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub(super) fn prepare_group(command: &mut std::process::Command) {
    command.process_group(0);
}

/// A process group, named by its leader's pid.
#[derive(Debug)]
pub(super) struct Group {
    leader: u32,
    /// Set once the group was seen without a live member. An empty group can
    /// never gain one again, and its number is then free for another group
    /// (`pid_max` may be as low as 32768): from here on it has no members and is
    /// sent nothing.
    over: AtomicBool,
}

impl Group {
    #[expect(clippy::unnecessary_wraps, reason = "the Windows group can fail to adopt")]
    pub(super) fn adopt(leader: u32) -> std::io::Result<Self> {
        Ok(Self {
            leader,
            over: AtomicBool::new(false),
        })
    }

    pub(super) fn leader(&self) -> u32 {
        self.leader
    }

    pub(super) fn members(&self) -> Vec<u32> {
        members_until_over(&self.over, || {
            super::imp::snapshot()
                .into_iter()
                .filter(|e| e.group == Some(self.leader))
                .map(|e| e.pid)
                .collect()
        })
    }

    pub(super) fn interrupt(&self) {
        self.signal(rustix::process::Signal::INT);
    }

    pub(super) fn terminate(&self) {
        self.signal(rustix::process::Signal::TERM);
    }

    pub(super) fn kill(&self) {
        self.signal(rustix::process::Signal::KILL);
    }

    /// Signals the group by its number, unless it is over: looked up first, since
    /// its leader may have been reaped long ago.
    fn signal(&self, signal: rustix::process::Signal) {
        if !self.members().is_empty() {
            signal_group(self.leader, signal);
        }
    }
}

/// What `scan` finds, until it finds nothing once; from then on nothing.
fn members_until_over(over: &AtomicBool, scan: impl FnOnce() -> Vec<u32>) -> Vec<u32> {
    if over.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let members = scan();
    if members.is_empty() {
        over.store(true, Ordering::Relaxed);
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_seen_empty_stays_over_when_its_number_names_another_group() {
        let over = AtomicBool::new(false);
        assert_eq!(members_until_over(&over, || vec![41, 42]), [41, 42]);
        assert!(members_until_over(&over, Vec::new).is_empty());
        // The number reused by an unrelated group: not ours, never signalled.
        assert!(members_until_over(&over, || vec![42]).is_empty());
    }

    #[test]
    fn a_group_whose_members_are_gone_is_over() {
        let mut leader = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Group::adopt(leader.id()).unwrap();
        assert_eq!(group.members(), [leader.id()]);
        group.kill();
        let _ = leader.wait();
        assert!(group.members().is_empty());
        // Over: the group's number is no longer looked up.
        assert!(group.over.load(Ordering::Relaxed));
    }

    #[test]
    fn a_group_that_is_over_sends_no_signal_to_the_group_now_holding_its_number() {
        let mut other = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        // Ours ended, and its number now names `other`'s group.
        let ours = Group {
            leader: other.id(),
            over: AtomicBool::new(true),
        };
        ours.interrupt();
        ours.terminate();
        ours.kill();
        // A signal sent after ours: `other` dies of it only if none of ours
        // reached it (a pending INT, TERM or KILL would be taken first).
        signal_pid(other.id(), rustix::process::Signal::USR1);
        let status = other.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(rustix::process::Signal::USR1.as_raw()),
            "a signal reached the group that merely has our number: {status:?}"
        );
    }
}
