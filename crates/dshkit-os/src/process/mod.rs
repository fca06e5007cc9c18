//! The process layer: one API over `/proc` (Linux), libproc (macOS) and
//! Toolhelp32 with Job Objects (Windows).
//!
//! A pid alone is not an identity: pids are reused. [`Identity`] pairs it with
//! the process's start time, and every kill checks both, so a process that took
//! a dead one's pid is never touched.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

mod group;
mod identity;
mod imp;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(unix)]
mod unix;
mod wait;
#[cfg(unix)]
mod watchdog;
#[cfg(windows)]
mod windows;

pub use group::Group;
pub use identity::{CLAIMED_START_SLACK, Entry, Identity, StartClaim, StartTime};
pub use wait::{POLL, wait_exit, wait_gone};

impl Identity {
    /// The process now running as `pid`, if any.
    pub fn of(pid: u32) -> Option<Self> {
        Some(Self {
            pid,
            started: imp::start_time(pid)?,
        })
    }

    /// The process now running as `pid`, if it can be the one that made
    /// `claim` about its start (see [`StartClaim::is_made_by`]): not a later
    /// process given the pid of one that has died.
    pub fn claimed(pid: u32, claim: &StartClaim) -> Option<Self> {
        let found = Self::of(pid)?;
        claim.is_made_by(found, found.started_at()).then_some(found)
    }

    /// When it started, on the wall clock: now less its age (on Linux its start
    /// is counted from boot, so a step of the wall clock since moves this too).
    pub fn started_at(&self) -> Option<SystemTime> {
        SystemTime::now().checked_sub(self.age()?)
    }

    /// Still running: the same process (not a reuse of its pid), not a zombie.
    /// Reads only this process's start time, so polling it stays cheap.
    pub fn is_running(&self) -> bool {
        imp::start_time(self.pid) == Some(self.started)
    }

    /// How long ago it started.
    pub fn age(&self) -> Option<Duration> {
        imp::age(self.started)
    }

    /// Interrupts this process as Ctrl-C at its terminal would (SIGINT). Windows
    /// has no such request for a process without our console: there it is
    /// terminated. Returns whether the request was sent.
    pub fn interrupt(&self) -> bool {
        self.is_running() && imp::interrupt(*self)
    }

    /// Asks this process to stop (SIGTERM). Windows has no such request for a
    /// process without a window or our console: there it is terminated.
    /// Returns whether the request was sent.
    pub fn terminate(&self) -> bool {
        self.is_running() && imp::terminate(*self)
    }

    /// Kills this process (SIGKILL, `TerminateProcess`) if it is still the one
    /// that started at `started`. Returns whether a kill was sent.
    pub fn kill(&self) -> bool {
        self.is_running() && imp::kill(*self)
    }
}

/// Every live process (zombies left out: they run nothing and vanish when reaped).
pub fn snapshot() -> Vec<Entry> {
    imp::snapshot()
}

/// The row of `pid`, if it runs.
pub fn entry(pid: u32) -> Option<Entry> {
    imp::entry(pid)
}

/// The arguments of `pid`, the program first.
pub fn argv(pid: u32) -> Option<Vec<String>> {
    imp::argv(pid)
}

/// The command line of `pid` for messages, at most `MESSAGE_COMMAND_LINE` bytes.
pub fn command_line(pid: u32) -> String {
    let mut text = argv(pid).map(|a| a.join(" ")).unwrap_or_default();
    if text.len() > MESSAGE_COMMAND_LINE {
        let mut end = MESSAGE_COMMAND_LINE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// How much of a command line [`command_line`] keeps.
pub const MESSAGE_COMMAND_LINE: usize = 200;

/// The working directory of `pid`, to resolve a relative script argument.
pub fn cwd(pid: u32) -> Option<PathBuf> {
    imp::cwd(pid)
}

/// `root` and every live descendant, parents before children. A child must have
/// started no earlier than its parent: on Windows a parent pid may name a dead
/// parent whose pid was reused.
pub fn tree(root: Identity) -> Vec<Identity> {
    if !root.is_running() {
        return Vec::new();
    }
    root.tree_in(&snapshot())
}

/// Kills `root`'s whole tree and waits (bounded by `limit`) until a fresh read
/// shows every member gone. Returns the members that survived.
pub fn kill_tree(root: Identity, limit: Duration) -> Vec<Identity> {
    let members = tree(root);
    for member in &members {
        member.kill();
    }
    wait_gone(members, limit)
}

/// Kills the group `leader` started, if `leader` still runs: its process group
/// (Unix), its tree (Windows, where a group is a job only its owner holds).
pub fn kill_group_led_by(leader: Identity) {
    if leader.is_running() {
        imp::kill_group_led_by(leader);
    }
}

/// TCP ports in LISTEN state held by any of `pids`.
pub fn listening_ports(pids: &[u32]) -> std::collections::BTreeSet<u16> {
    imp::listeners(Some(pids))
        .into_iter()
        .map(|(port, _)| port)
        .collect()
}

/// The pids holding a listening TCP socket on `port`.
pub fn port_holders(port: u16) -> Vec<u32> {
    let mut pids: Vec<u32> = imp::listeners(None)
        .into_iter()
        .filter(|(p, _)| *p == port)
        .map(|(_, pid)| pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Whether dshkit runs with administrator rights (root on Unix; never assumed on
/// Windows). Chromium refuses its sandbox as root.
pub fn running_as_root() -> bool {
    imp::running_as_root()
}

/// Arms what makes `command`'s process die the moment the thread that spawns it
/// exits, where the platform has it (Linux's parent-death signal). Returns
/// whether it did; elsewhere a [`Group`] bound with [`Group::bind_to_dshkit`]
/// is the binding. Spawn such a command from a thread that lives as long as
/// dshkit.
pub fn die_with_spawning_thread(command: &mut std::process::Command) -> bool {
    imp::die_with_spawning_thread(command)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn this_process_has_an_identity_an_age_and_a_command_line() {
        let me = Identity::of(std::process::id()).expect("this process is in the table");
        assert!(me.is_running());
        assert!(me.age().expect("an age") < Duration::from_hours(24));
        let argv = argv(me.pid).expect("argv");
        let exe = std::env::current_exe().unwrap();
        assert!(
            argv[0].contains(exe.file_stem().unwrap().to_str().unwrap()),
            "{argv:?} names {exe:?}"
        );
        assert_eq!(
            std::fs::canonicalize(cwd(me.pid).expect("cwd")).unwrap(),
            std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap()
        );
        assert!(snapshot().iter().any(|e| e.pid == me.pid));
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        let me = Identity::of(std::process::id()).unwrap();
        let impostor = Identity {
            pid: me.pid,
            started: StartTime(me.started.0 + 1),
        };
        assert!(!impostor.is_running());
        assert!(!impostor.kill(), "a kill is never sent to a reused pid");
    }

    #[test]
    fn a_process_is_the_one_that_claims_its_start_unless_it_started_later() {
        let me = Identity::of(std::process::id()).unwrap();
        let started = me.started_at().expect("a start on the wall clock");
        let now = SystemTime::now();
        assert!(started <= now, "{started:?} is not after {now:?}");
        assert!(
            now.duration_since(started).unwrap() < Duration::from_hours(24),
            "{started:?}"
        );
        let at = |at: SystemTime| StartClaim {
            started: None,
            at: Some(at),
        };
        // Its own account is later than the platform's record (its code runs
        // after the process was made): the same process.
        assert_eq!(Identity::claimed(me.pid, &at(now)), Some(me));
        assert_eq!(
            Identity::claimed(me.pid, &at(started - CLAIMED_START_SLACK / 2)),
            Some(me)
        );
        // A process that said it started an hour before this one did, with
        // this one's pid: it died and its pid was reused.
        assert_eq!(
            Identity::claimed(me.pid, &at(started - Duration::from_hours(1))),
            None
        );
        // The platform's record is compared exactly, whatever the wall clock says.
        let exact = |started| StartClaim {
            started: Some(started),
            at: Some(now),
        };
        assert_eq!(Identity::claimed(me.pid, &exact(me.started)), Some(me));
        assert_eq!(
            Identity::claimed(me.pid, &exact(StartTime(me.started.0 - 1))),
            None
        );
        assert_eq!(Identity::claimed(me.pid, &StartClaim::default()), Some(me));

        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for (seen, claimed, same) in [
            (t, t, true),
            (t, t + Duration::from_secs(5), true),
            (t + CLAIMED_START_SLACK, t, true),
            (t + CLAIMED_START_SLACK + Duration::from_millis(1), t, false),
            (t + Duration::from_hours(1), t, false),
        ] {
            assert_eq!(
                at(claimed).is_made_by(me, Some(seen)),
                same,
                "{seen:?} {claimed:?}"
            );
        }
        assert!(
            !at(t).is_made_by(me, None),
            "a start not known is not taken on trust"
        );
    }

    #[test]
    fn a_killed_tree_is_gone_and_proved_gone() {
        let mut group_command = sleeper();
        Group::prepare(&mut group_command);
        let mut child = group_command.spawn().unwrap();
        let group = Group::adopt(child.id()).unwrap();
        let root = Identity::of(child.id()).unwrap();
        assert_eq!(entry(root.pid).unwrap().parent, Some(std::process::id()));
        let me = Identity::of(std::process::id()).unwrap();
        assert!(tree(me).contains(&root), "the child is in this process's tree");
        let left = kill_tree(root, Duration::from_secs(10));
        assert!(left.is_empty(), "{left:?} survived");
        let _ = child.wait();
        drop(group);
    }

    #[test]
    fn a_group_is_killed_as_a_whole_and_its_members_are_known() {
        let mut command = sleeper();
        Group::prepare(&mut command);
        let mut child = command.spawn().unwrap();
        let group = Group::adopt(child.id()).unwrap();
        assert!(group.members().contains(&child.id()), "{:?}", group.members());
        group.kill();
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !group.members().is_empty() && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert!(group.members().is_empty());
    }

    fn sleeper() -> std::process::Command {
        // A process that runs until killed, on every platform this crate serves.
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "process::tests::sleep_forever_helper",
                "--ignored",
                "--nocapture",
            ])
            .env("DSHKIT_OS_SLEEP_FOREVER", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        command
    }

    /// Not a test: the body of the sleeper child above.
    #[test]
    #[ignore = "run as a child process by the tests above"]
    fn sleep_forever_helper() {
        if std::env::var_os("DSHKIT_OS_SLEEP_FOREVER").is_some() {
            loop {
                std::thread::sleep(Duration::from_hours(1));
            }
        }
    }
}
