//! A live MCP server Echo started (to record, or to verify a cassette against):
//! in a group of its own bound to dshkit's lifetime, so that neither it nor
//! anything it started outlives dshkit, even when dshkit is killed and the
//! server ignores its stdin closing.

use std::ops::{Deref, DerefMut};

use dshkit_os::process::Group;
use tokio::process::{Child, Command};

/// The server's process (it derefs to the [`Child`]) and its group. Dropping
/// it kills the server (`kill_on_drop`); dropping the group stops what the
/// server left behind.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    _group: Group,
}

impl ServerProcess {
    /// Spawns `command` (with `kill_on_drop`) in a group bound to dshkit.
    pub(crate) fn spawn(command: &mut Command) -> std::io::Result<Self> {
        Group::prepare(command.as_std_mut());
        let mut child = command.kill_on_drop(true).spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| std::io::Error::other("the server exited at once"))?;
        let bound = Group::adopt(pid).and_then(|mut group| group.bind_to_dshkit().map(|()| group));
        match bound {
            Ok(group) => Ok(Self { child, _group: group }),
            Err(e) => {
                let _ = child.start_kill();
                Err(e)
            }
        }
    }
}

impl Deref for ServerProcess {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.child
    }
}

impl DerefMut for ServerProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}
