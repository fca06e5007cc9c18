//! What Linux and macOS share: signals, and process groups named by their leader.

use std::os::unix::process::CommandExt as _;

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
}

impl Group {
    #[expect(clippy::unnecessary_wraps, reason = "the Windows group can fail to adopt")]
    pub(super) fn adopt(leader: u32) -> std::io::Result<Self> {
        Ok(Self { leader })
    }

    pub(super) fn leader(&self) -> u32 {
        self.leader
    }

    pub(super) fn members(&self) -> Vec<u32> {
        super::imp::snapshot()
            .into_iter()
            .filter(|e| e.group == Some(self.leader))
            .map(|e| e.pid)
            .collect()
    }

    pub(super) fn interrupt(&self) {
        signal_group(self.leader, rustix::process::Signal::INT);
    }

    pub(super) fn terminate(&self) {
        signal_group(self.leader, rustix::process::Signal::TERM);
    }

    pub(super) fn kill(&self) {
        signal_group(self.leader, rustix::process::Signal::KILL);
    }
}
