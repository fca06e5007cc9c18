//! A live MCP server Echo started (to record, or to verify a cassette against):
//! in a group of its own bound to dshkit's lifetime, so that neither it nor
//! anything it started outlives dshkit, even when dshkit is killed and the
//! server ignores its stdin closing.

use std::ops::{Deref, DerefMut};
use std::process::Stdio;
use std::time::Duration;

use dshkit_os::process::Group;
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::EchoError;

/// How long a server may take to exit once its stdin is closed.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(5);

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

/// Starts `argv` as a server spoken to over its stdin and stdout (its stderr
/// is dshkit's): the process, and its two pipes.
pub(crate) fn spawn_server(
    argv: &[String],
) -> Result<(ServerProcess, ChildStdin, BufReader<ChildStdout>), EchoError> {
    let spawn_error = |error: String| EchoError::Spawn {
        argv: argv.join(" "),
        error,
    };
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| spawn_error("empty argv".into()))?;
    let mut child = ServerProcess::spawn(
        Command::new(program)
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit()),
    )
    .map_err(|e| spawn_error(e.to_string()))?;
    let stdin = child.stdin.take().ok_or_else(|| spawn_error("no stdin".into()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| spawn_error("no stdout".into()))?;
    Ok((child, stdin, BufReader::new(stdout)))
}

/// Closes the server's stdin and waits [`EXIT_GRACE`] for it to exit, then
/// kills it.
pub(crate) async fn close_server(child: ServerProcess, stdin: ChildStdin) {
    drop(stdin);
    reap_server(child, EXIT_GRACE).await;
}

/// Waits up to `grace` for the server to exit, then kills it.
pub(crate) async fn reap_server(mut child: ServerProcess, grace: Duration) {
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}
