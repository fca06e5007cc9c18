//! A process group: a child and everything it starts, stopped as one, and bound
//! to dshkit's lifetime so that nothing outlives dshkit, even when it is killed.

use std::process::Command;

use super::imp;

/// A child's group: a process group on Unix, a Job Object on Windows.
///
/// Dropping it does not wait for anything. On Windows it closes the job, which
/// kills every member; on Unix a bound group's watchdog sees dshkit let go and
/// stops the group (TERM, then KILL).
#[derive(Debug)]
pub struct Group {
    inner: imp::Group,
    #[cfg(unix)]
    watchdog: Option<super::watchdog::Watchdog>,
}

impl Group {
    /// Makes `command` start a group of its own: a new process group (Unix), or
    /// suspended until [`Group::adopt`] has put it in its job (Windows), so not
    /// even its first child escapes.
    pub fn prepare(command: &mut Command) {
        imp::prepare_group(command);
    }

    /// Takes the group of a child spawned from a [`Group::prepare`]d command.
    pub fn adopt(leader: u32) -> std::io::Result<Self> {
        Ok(Self {
            inner: imp::Group::adopt(leader)?,
            #[cfg(unix)]
            watchdog: None,
        })
    }

    /// The pid of the process the group was made for.
    pub fn leader(&self) -> u32 {
        self.inner.leader()
    }

    /// The live members. On Unix a group once seen without any is over for good:
    /// its number may then name another group, so it has no members from then
    /// on and [`interrupt`](Self::interrupt), [`terminate`](Self::terminate) and
    /// [`kill`](Self::kill) (which look first) send nothing.
    pub fn members(&self) -> Vec<u32> {
        self.inner.members()
    }

    /// Asks the group to stop as a person at the terminal would (SIGINT, which
    /// dev servers handle fastest). Windows has no such request for a process
    /// without our console: there it terminates the job.
    pub fn interrupt(&self) {
        self.inner.interrupt();
    }

    /// Asks the group to stop (SIGTERM; on Windows the job is terminated).
    pub fn terminate(&self) {
        self.inner.terminate();
    }

    /// Stops the group at once (SIGKILL; `TerminateJobObject`).
    pub fn kill(&self) {
        self.inner.kill();
    }

    /// Makes the group die with dshkit, even when dshkit is killed: on Unix a
    /// watchdog (`sh`, needing no part of dshkit) stops it when dshkit's end of
    /// its stdin closes; on Windows the job already kills on close.
    pub fn bind_to_dshkit(&mut self) -> std::io::Result<()> {
        #[cfg(unix)]
        if self.watchdog.is_none() {
            self.watchdog = Some(super::watchdog::Watchdog::start(self.inner.leader())?);
        }
        Ok(())
    }

    /// The group's stop is done and proved: the watchdog has nothing left to do.
    /// It is killed rather than woken, since zombies left in the group (whose
    /// reaper is the container's init) would make its signals "succeed" and its
    /// sleeps run.
    pub fn release(&mut self) {
        #[cfg(unix)]
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.release();
        }
    }
}
