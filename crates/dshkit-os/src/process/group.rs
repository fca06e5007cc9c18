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
        Ok(Self::of(imp::Group::adopt(leader)?))
    }

    /// [`Group::adopt`], following the leader's whole process tree: a
    /// descendant that moved to a group or session of its own (pnpm 12 runs its
    /// script so; `npm-run-all` and turbo theirs) is a member all the same, is
    /// signalled with the group and, once seen, stays one when its parent dies.
    /// On Windows the job already holds the whole tree.
    pub fn adopt_tree(leader: u32) -> std::io::Result<Self> {
        #[cfg(unix)]
        let inner = imp::Group::adopt_tree(leader)?;
        #[cfg(windows)]
        let inner = imp::Group::adopt(leader)?;
        Ok(Self::of(inner))
    }

    fn of(inner: imp::Group) -> Self {
        Self {
            inner,
            #[cfg(unix)]
            watchdog: None,
        }
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
        let members = self.inner.members();
        #[cfg(unix)]
        self.tell_watchdog();
        members
    }

    /// Tells the watchdog of the tree's other groups the last look found, and
    /// of those gone since.
    #[cfg(unix)]
    fn tell_watchdog(&self) {
        let Some(watchdog) = &self.watchdog else {
            return;
        };
        let (new, gone) = self.inner.untold_groups();
        for group in gone {
            watchdog.unwatch(group);
        }
        for group in new {
            watchdog.watch(group);
        }
    }

    /// Asks the group to stop as a person at the terminal would: SIGINT (which
    /// dev servers handle fastest) on Unix, Ctrl-Break on Windows. Returns
    /// `false` only where it could not ask: Windows asks only a group on
    /// dshkit's console, and otherwise terminates the job. (A Unix group that
    /// is already over has nothing to ask: `true`.)
    pub fn interrupt(&self) -> bool {
        self.inner.interrupt()
    }

    /// Asks the group to stop: SIGTERM on Unix, Ctrl-Break on Windows (see
    /// [`interrupt`](Self::interrupt) for when Windows cannot ask, and what it
    /// does then). Returns whether the group was asked.
    pub fn terminate(&self) -> bool {
        self.inner.terminate()
    }

    /// What [`terminate`](Self::terminate) sends, for people: `SIGTERM`, or
    /// `Ctrl-Break` on Windows.
    pub const STOP_REQUEST: &'static str = if cfg!(windows) { "Ctrl-Break" } else { "SIGTERM" };

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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::BufRead as _;
    use std::time::Duration;

    use super::*;
    use crate::process::identity::Identity;
    use crate::process::imp::entry;
    use crate::process::wait::wait_gone;

    /// A leader in a group of its own whose child starts a session (and so a
    /// group) of its own, as pnpm 12 starts its script; and that child.
    fn leader_with_a_child_elsewhere() -> (std::process::Child, Identity, Identity) {
        let mut command = Command::new("sh");
        command
            .args(["-c", "setsid sleep 600 & echo $!; exec sleep 600"])
            .stdout(std::process::Stdio::piped());
        Group::prepare(&mut command);
        let mut leader = command.spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(leader.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let child: u32 = line.trim().parse().unwrap();
        // `setsid` has made its session once it runs `sleep`.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while entry(child).and_then(|e| e.group) != Some(child) {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never left the group"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let leader_identity = Identity::of(leader.id()).unwrap();
        (leader, leader_identity, Identity::of(child).unwrap())
    }

    #[test]
    fn a_tree_group_follows_a_child_into_its_own_group_and_stops_it_with_the_rest() {
        let (mut leader, leader_identity, child) = leader_with_a_child_elsewhere();
        let group_only = Group::adopt(leader.id()).unwrap();
        assert!(
            !group_only.members().contains(&child.pid),
            "the process group alone does not hold the child"
        );
        let tree = Group::adopt_tree(leader.id()).unwrap();
        let members = tree.members();
        assert!(
            members.contains(&leader.id()) && members.contains(&child.pid),
            "{members:?}"
        );
        // The leader dies alone: its child, reparented away, is still a member.
        assert!(leader_identity.kill());
        let _ = leader.wait();
        assert_eq!(tree.members(), [child.pid]);
        tree.kill();
        assert!(wait_gone(vec![child], Duration::from_secs(30)).is_empty());
        assert!(tree.members().is_empty());
    }

    #[test]
    fn the_watchdog_stops_the_other_groups_of_the_tree_when_dshkit_lets_go() {
        let (mut leader, leader_identity, child) = leader_with_a_child_elsewhere();
        let mut tree = Group::adopt_tree(leader.id()).unwrap();
        tree.bind_to_dshkit().unwrap();
        assert!(tree.members().contains(&child.pid));
        // As when dshkit dies: its end of the watchdog's stdin closes.
        drop(tree);
        let left = wait_gone(vec![leader_identity, child], Duration::from_secs(30));
        let _ = leader.wait();
        if !left.is_empty() {
            for process in &left {
                process.kill();
            }
            panic!("{left:?} outlived the watchdog");
        }
    }

    #[test]
    fn the_watchdog_still_stops_the_leaders_group_once_told_an_other_group_ended() {
        let (mut leader, leader_identity, child) = leader_with_a_child_elsewhere();
        let mut tree = Group::adopt_tree(leader.id()).unwrap();
        tree.bind_to_dshkit().unwrap();
        assert!(tree.members().contains(&child.pid));
        assert!(child.kill());
        assert!(wait_gone(vec![child], Duration::from_secs(30)).is_empty());
        // Seen gone: the watchdog is told to forget the child's group, whose
        // number may be reused; the leader's own group is still its to stop.
        assert_eq!(tree.members(), [leader.id()]);
        assert_eq!(tree.inner.untold_groups(), (Vec::new(), Vec::new()), "all told");
        drop(tree);
        assert!(wait_gone(vec![leader_identity], Duration::from_secs(30)).is_empty());
        let _ = leader.wait();
    }
}
