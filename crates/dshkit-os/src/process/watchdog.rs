//! The Unix watchdog: a shell that outlives dshkit to stop a process group, and
//! the other groups of its tree that dshkit told it of.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};

use super::identity::Identity;

/// Reads lines until its stdin closes: `+ GROUP START` adds a group of the tree
/// (named by its leader, with the leader's start time), `- GROUP` drops one.
/// Then TERM to the group `$1` and to those others, and KILL to any still there
/// after `$2` tenths of a second. It looks every tenth and leaves as soon as
/// they are gone: a pid is free for reuse once its group is empty, and a blind
/// KILL seconds later could hit a group that merely has the same number. So an
/// other group is signalled only while its leader is the process dshkit saw
/// (its start time read from `/proc`; where there is none, as on macOS, while
/// the group exists). `sh` is everywhere and needs no part of dshkit to stay
/// alive. (dash's `kill` takes no `--`: a negative pid after the signal names
/// the group.)
const SCRIPT: &str = r#"main=$1; grace=$2; others=""
while read -r op group start; do
  case "$op" in
    +) others="$others $group:$start" ;;
    -) kept=""; for o in $others; do [ "${o%%:*}" = "$group" ] || kept="$kept $o"; done; others=$kept ;;
  esac
done
groups=""
kill -0 -"$main" 2>/dev/null && groups=$main
for o in $others; do
  group=${o%%:*}; start=${o#*:}
  if [ -d /proc/self ]; then
    [ -r "/proc/$group/stat" ] || continue
    read -r stat < "/proc/$group/stat"; stat=${stat##*") "}
    set -- $stat; shift 19
    [ "$1" = "$start" ] || continue
  fi
  kill -0 -"$group" 2>/dev/null && groups="$groups $group"
done
[ -n "$groups" ] || exit 0
for group in $groups; do kill -TERM -"$group" 2>/dev/null; done
i=0
while :; do
  alive=""
  for group in $groups; do kill -0 -"$group" 2>/dev/null && alive="$alive $group"; done
  [ -n "$alive" ] || exit 0
  if [ "$i" -ge "$grace" ]; then
    for group in $alive; do kill -KILL -"$group" 2>/dev/null; done
    exit 0
  fi
  groups=$alive; sleep 0.1; i=$((i + 1))
done"#;

/// How long a group gets to stop on TERM before the watchdog sends KILL.
const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

#[derive(Debug)]
pub(super) struct Watchdog {
    child: Option<Child>,
    /// Closing it (explicitly, or because dshkit died) makes the watchdog act.
    stdin: Option<ChildStdin>,
}

impl Watchdog {
    pub(super) fn start(group: u32) -> std::io::Result<Self> {
        Self::with_grace(group, GRACE)
    }

    fn with_grace(group: u32, grace: std::time::Duration) -> std::io::Result<Self> {
        let tenths = grace.as_millis() / 100;
        let mut child = Command::new("sh")
            .args([
                "-c",
                SCRIPT,
                "dshkit-watchdog",
                &group.to_string(),
                &tenths.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: a Ctrl-C at the terminal must not kill it before it acts.
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Self {
            child: Some(child),
            stdin,
        })
    }

    /// Adds an other group of the tree (named by its leader) to those the
    /// watchdog stops.
    pub(super) fn watch(&self, group: Identity) {
        self.tell(&format!("+ {} {}\n", group.pid, group.started.0));
    }

    /// Drops an other group: it is over, and its number may be reused.
    pub(super) fn unwatch(&self, group: Identity) {
        self.tell(&format!("- {}\n", group.pid));
    }

    /// A watchdog that no longer reads has gone: what it is told is lost, and
    /// nothing else can be done about it here.
    fn tell(&self, line: &str) {
        if let Some(mut stdin) = self.stdin.as_ref() {
            let _ = stdin.write_all(line.as_bytes());
        }
    }

    /// Stops the watchdog without letting it act, and reaps it.
    pub(super) fn release(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stdin = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Let go: the watchdog stops the group. Reaped off this thread, since it
        // may take its 3 s before KILL.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        if let Some(mut child) = self.child.take() {
            let _ = std::thread::Builder::new()
                .name("dshkit-watchdog-reaper".into())
                .spawn(move || child.wait());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::process::wait::wait_gone;

    fn group_of(command: &mut Command) -> (std::process::Child, u32) {
        let child = command.process_group(0).spawn().unwrap();
        let id = child.id();
        (child, id)
    }

    #[test]
    fn a_group_that_stops_on_term_is_left_alone_at_once() {
        let (mut leader, group) = group_of(Command::new("sleep").arg("600"));
        // Ten minutes of grace: a watchdog that waits it out before looking again
        // would outlive this test's bound by far.
        let watchdog = Watchdog::with_grace(group, Duration::from_mins(10)).unwrap();
        let shell = Identity::of(watchdog.child.as_ref().unwrap().id()).unwrap();
        drop(watchdog);
        let _ = leader.wait();
        // Bounded far beyond any machine's noise, and far below the grace.
        if !wait_gone(vec![shell], Duration::from_mins(1)).is_empty() {
            // Not left to act ten minutes from now on a number that may be reused.
            shell.kill();
            panic!("the watchdog waited out its grace after the group was gone");
        }
    }

    #[test]
    fn a_group_that_ignores_term_is_killed_after_the_grace() {
        let (mut leader, group) = group_of(
            Command::new("sh")
                .args(["-c", "trap '' TERM; echo ready; sleep 600 & wait"])
                .stdout(std::process::Stdio::piped()),
        );
        // The trap is in place (and inherited by `sleep`) before the watchdog acts.
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "ready\n");
        let watchdog = Watchdog::with_grace(group, Duration::from_millis(500)).unwrap();
        drop(watchdog);
        let status = leader.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{status:?}"
        );
    }
}
