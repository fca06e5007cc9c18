//! What Linux and macOS share: signals, and process groups named by their leader.

use std::os::unix::process::CommandExt as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::identity::{Entry, Identity};
#[cfg(target_os = "linux")]
use super::linux::snapshot;
#[cfg(target_os = "macos")]
use super::macos::snapshot;

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

/// A process group, named by its leader's pid; with [`Group::adopt_tree`], also
/// every descendant of the leader in whatever group or session it moved to.
#[derive(Debug)]
pub(super) struct Group {
    leader: u32,
    /// Set once the group was seen without a live member. An empty group can
    /// never gain one again, and its number is then free for another group
    /// (`pid_max` may be as low as 32768): from here on it has no members and is
    /// sent nothing.
    over: AtomicBool,
    /// The tree followed beyond the group, when asked for (boxed: most groups
    /// follow none, and a group sits in its owner's every value).
    tree: Option<Box<Mutex<Tree>>>,
}

/// What a group that follows its tree has seen.
#[derive(Debug, Default)]
struct Tree {
    /// Every member seen so far (still running at the last look): a process
    /// whose parent died is reparented away from the tree, and is known here.
    known: Vec<Identity>,
    /// The other process groups the last look found members leading.
    groups: Vec<Identity>,
    /// Those of them the watchdog was told of.
    told: Vec<Identity>,
}

/// The most members a group that follows its tree keeps track of.
pub(super) const MAX_TREE_MEMBERS: usize = 1024;

impl Group {
    #[expect(clippy::unnecessary_wraps, reason = "the Windows group can fail to adopt")]
    pub(super) fn adopt(leader: u32) -> std::io::Result<Self> {
        Ok(Self {
            leader,
            over: AtomicBool::new(false),
            tree: None,
        })
    }

    /// The group of `leader`, and every descendant of it: a child that starts a
    /// group or a session of its own (pnpm 12 runs its script so, as do
    /// `npm-run-all` and turbo for theirs) stays a member, and so do the members
    /// of the groups such children lead, and a member whose parent died.
    #[expect(clippy::unnecessary_wraps, reason = "the Windows group can fail to adopt")]
    pub(super) fn adopt_tree(leader: u32) -> std::io::Result<Self> {
        let known = Identity::of(leader).into_iter().collect();
        Ok(Self {
            leader,
            over: AtomicBool::new(false),
            tree: Some(Box::new(Mutex::new(Tree {
                known,
                groups: Vec::new(),
                told: Vec::new(),
            }))),
        })
    }

    pub(super) fn leader(&self) -> u32 {
        self.leader
    }

    pub(super) fn members(&self) -> Vec<u32> {
        self.live().iter().map(|e| e.pid).collect()
    }

    /// The other process groups of the tree (each named by its leader, with the
    /// leader's start time) the last look found that the watchdog was not told
    /// of yet, and those it was told of that are gone; from now on it counts as
    /// told. None without a tree.
    pub(super) fn untold_groups(&self) -> (Vec<Identity>, Vec<Identity>) {
        let Some(tree) = &self.tree else {
            return (Vec::new(), Vec::new());
        };
        let mut tree = tree.lock().expect("lock");
        let new = tree
            .groups
            .iter()
            .filter(|g| !tree.told.contains(g))
            .copied()
            .collect();
        let gone = tree
            .told
            .iter()
            .filter(|g| !tree.groups.contains(g))
            .copied()
            .collect();
        let Tree { groups, told, .. } = &mut *tree;
        told.clone_from(groups);
        (new, gone)
    }

    /// The live members, from one read of the process table.
    fn live(&self) -> Vec<Entry> {
        members_until_over(&self.over, || {
            let table = snapshot();
            let Some(tree) = &self.tree else {
                return table
                    .into_iter()
                    .filter(|e| e.group == Some(self.leader))
                    .collect();
            };
            let mut tree = tree.lock().expect("lock");
            let members = tree_members(self.leader, &tree.known, &table);
            tree.known = members.iter().map(Entry::identity).collect();
            tree.groups = members
                .iter()
                .filter(|e| e.group == Some(e.pid) && e.pid != self.leader)
                .map(Entry::identity)
                .collect();
            members
        })
    }

    pub(super) fn interrupt(&self) -> bool {
        self.signal(rustix::process::Signal::INT);
        true
    }

    pub(super) fn terminate(&self) -> bool {
        self.signal(rustix::process::Signal::TERM);
        true
    }

    pub(super) fn kill(&self) {
        self.signal(rustix::process::Signal::KILL);
    }

    /// Signals the group by its number, unless it is over: looked up first, since
    /// its leader may have been reaped long ago. Members in other groups are
    /// signalled one by one, each by its identity (never a pid reused since).
    fn signal(&self, signal: rustix::process::Signal) {
        let live = self.live();
        if live.iter().any(|e| e.group == Some(self.leader)) {
            signal_group(self.leader, signal);
        }
        for member in live.iter().filter(|e| e.group != Some(self.leader)) {
            if member.identity().is_running() {
                signal_pid(member.pid, signal);
            }
        }
    }
}

/// The members of `leader`'s group and of its tree in `table`: the group's
/// processes, the `known` members still running, their descendants (a child
/// started no earlier than its parent, so a reused parent pid adopts no one),
/// and the processes of the groups any of them leads; at most
/// [`MAX_TREE_MEMBERS`].
fn tree_members(leader: u32, known: &[Identity], table: &[Entry]) -> Vec<Entry> {
    let mut members: Vec<Entry> = table
        .iter()
        .filter(|e| e.group == Some(leader) || known.contains(&e.identity()))
        .copied()
        .collect();
    let mut index = 0;
    while index < members.len() && members.len() < MAX_TREE_MEMBERS {
        let member = members[index];
        let leads_a_group = member.group == Some(member.pid);
        for entry in table {
            let child = entry.parent == Some(member.pid) && entry.started >= member.started;
            let in_its_group = leads_a_group && entry.group == Some(member.pid);
            if (child || in_its_group)
                && members.len() < MAX_TREE_MEMBERS
                && !members.iter().any(|m| m.pid == entry.pid)
            {
                members.push(*entry);
            }
        }
        index += 1;
    }
    members
}

/// What `scan` finds, until it finds nothing once; from then on nothing.
fn members_until_over<T>(over: &AtomicBool, scan: impl FnOnce() -> Vec<T>) -> Vec<T> {
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
        assert!(members_until_over(&over, Vec::<u32>::new).is_empty());
        // The number reused by an unrelated group: not ours, never signalled.
        assert!(members_until_over(&over, || vec![42]).is_empty());
    }

    fn row(pid: u32, parent: u32, group: u32, started: u64) -> Entry {
        Entry {
            pid,
            parent: Some(parent),
            started: super::super::identity::StartTime(started),
            group: Some(group),
            detached: false,
        }
    }

    #[test]
    fn a_tree_holds_descendants_in_other_groups_and_their_groups_but_no_reused_pid() {
        let table = [
            row(10, 1, 10, 100),  // the leader
            row(11, 10, 11, 110), // its child, in a group of its own (pnpm 12's script)
            row(12, 11, 11, 120), // that group's member (the dev server)
            row(13, 1, 11, 130),  // reparented, still in the child's group
            row(14, 12, 14, 90),  // names 12 as parent but started before it: a reused pid
            row(15, 1, 15, 140),  // unrelated
        ];
        let leader = table[0].identity();
        let pids = |members: Vec<Entry>| members.iter().map(|e| e.pid).collect::<Vec<_>>();
        assert_eq!(pids(tree_members(10, &[leader], &table)), [10, 11, 12, 13]);
        // The leader and its child gone: the members once seen are still known.
        let known: Vec<Identity> = table[..4].iter().map(Entry::identity).collect();
        assert_eq!(pids(tree_members(10, &known, &table[2..])), [12, 13]);
    }

    #[test]
    fn the_watchdog_is_told_each_other_group_once_and_each_that_ended() {
        let group = Group::adopt_tree(std::process::id()).unwrap();
        let (a, b) = (row(21, 1, 21, 1).identity(), row(22, 1, 22, 2).identity());
        let set = |groups: Vec<Identity>| group.tree.as_ref().unwrap().lock().unwrap().groups = groups;
        set(vec![a, b]);
        assert_eq!(group.untold_groups(), (vec![a, b], Vec::new()));
        assert_eq!(group.untold_groups(), (Vec::new(), Vec::new()));
        set(vec![b]);
        assert_eq!(group.untold_groups(), (Vec::new(), vec![a]));
        assert_eq!(Group::adopt(1).unwrap().untold_groups(), (Vec::new(), Vec::new()));
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
            tree: None,
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
