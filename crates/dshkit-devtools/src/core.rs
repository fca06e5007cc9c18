//! The debug core: targets discovered from the collectors' registry, debug
//! sessions on them (bounded in number and idle time), snapshots and waits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::journal::{Change, Record, Window};
use crate::link::{Link, LinkError};
use crate::topology::{Candidate, Topology};

/// Debug sessions open at once.
pub const MAX_SESSIONS: usize = 32;
/// A session unused this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_mins(15);
/// Waits at once, over all sessions.
pub const MAX_WAITERS: usize = 32;
/// Default and longest wait.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(15);
pub const MAX_WAIT: Duration = Duration::from_mins(1);
/// Items a catalog (fibers, events, dispatches) returns per page at most.
pub const MAX_PAGE: usize = 100;
/// Registry files read per discovery.
pub(crate) const MAX_TARGETS: usize = 64;

/// A live process with a collector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// `<pid>-<start time>`: a replaced process (same pid, later start) is a new target.
    pub id: String,
    pub pid: u32,
    pub label: String,
    #[serde(skip)]
    pub socket: PathBuf,
}

/// Errors of the debug core, each with what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DebugError {
    #[error("no debug target {0}; cordis_list_debug_targets lists the live ones")]
    UnknownTarget(String),
    #[error("no debug session {0}; it was detached, expired or never existed: attach again")]
    UnknownSession(String),
    #[error("the session's target {0} is gone (target-disposed): list targets and attach to the new one")]
    Stale(String),
    #[error("{MAX_SESSIONS} debug sessions are open; detach one first")]
    TooManySessions,
    #[error("{MAX_WAITERS} waits are running; retry when one ends")]
    TooManyWaiters,
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("the collector answered something unreadable: {0}")]
    Protocol(String),
}

struct Attached {
    target: Target,
    link: Link,
    baseline: Topology,
}

struct Session {
    target: String,
    cursor: u64,
    last_used: Instant,
}

#[derive(Default)]
struct State {
    attached: HashMap<String, Arc<Attached>>,
    sessions: HashMap<String, Session>,
    next_session: u64,
}

/// The core. One per dshkit process.
pub struct DebugCore {
    registry: PathBuf,
    state: tokio::sync::Mutex<State>,
    waiters: Arc<tokio::sync::Semaphore>,
}

/// A session just attached.
#[derive(Debug, Clone, Serialize)]
pub struct Attachment {
    pub session: String,
    pub target: Target,
    pub cursor: u64,
}

/// What a wait saw.
#[derive(Debug, Clone, Serialize)]
pub struct WaitResult {
    /// `found`, `timeout` or `gap`.
    pub outcome: &'static str,
    pub records: Vec<Record>,
    pub cursor: u64,
    #[serde(flatten)]
    pub window: Window,
    /// More matching records were retained than returned.
    pub truncated: bool,
}

impl DebugCore {
    /// A core that finds targets in `registry` (the collectors' directory).
    pub fn new(registry: PathBuf) -> Self {
        Self {
            registry,
            state: tokio::sync::Mutex::new(State::default()),
            waiters: Arc::new(tokio::sync::Semaphore::new(MAX_WAITERS)),
        }
    }

    /// The live targets; registry files of dead processes are removed.
    pub fn targets(&self) -> Vec<Target> {
        discover(&self.registry)
    }

    /// Attaches a new session to `target` (the only one when `None`).
    pub async fn attach(&self, target: Option<&str>) -> Result<Attachment, DebugError> {
        let targets = self.targets();
        let target = match target {
            Some(id) => targets
                .into_iter()
                .find(|t| t.id == id)
                .ok_or_else(|| DebugError::UnknownTarget(id.to_owned()))?,
            None => match <[Target; 1]>::try_from(targets) {
                Ok([only]) => only,
                Err(all) => {
                    return Err(DebugError::UnknownTarget(format!(
                        "(none named, and {} are live: name one)",
                        all.len()
                    )));
                }
            },
        };
        let mut state = self.state.lock().await;
        expire(&mut state);
        if state.sessions.len() >= MAX_SESSIONS {
            return Err(DebugError::TooManySessions);
        }
        let attached = match state.attached.get(&target.id) {
            Some(attached) if !attached.link.is_closed() => Arc::clone(attached),
            _ => {
                let link = Link::connect(&target.socket).await?;
                let hello = link.request("hello").await?;
                let baseline: Topology = serde_json::from_value(hello["baseline"].clone())
                    .map_err(|e| DebugError::Protocol(e.to_string()))?;
                let attached = Arc::new(Attached {
                    target: target.clone(),
                    link,
                    baseline,
                });
                state.attached.insert(target.id.clone(), Arc::clone(&attached));
                attached
            }
        };
        state.next_session += 1;
        let session = format!("dbg-{}", state.next_session);
        let cursor = attached
            .link
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .head();
        state.sessions.insert(
            session.clone(),
            Session {
                target: target.id.clone(),
                cursor,
                last_used: Instant::now(),
            },
        );
        Ok(Attachment {
            session,
            target,
            cursor,
        })
    }

    /// Ends a session; the channel closes with the target's last session.
    pub async fn detach(&self, session: &str) -> Result<(), DebugError> {
        let mut state = self.state.lock().await;
        let gone = state
            .sessions
            .remove(session)
            .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
        if !state.sessions.values().any(|s| s.target == gone.target) {
            state.attached.remove(&gone.target);
        }
        Ok(())
    }

    async fn session(&self, session: &str) -> Result<(Arc<Attached>, u64), DebugError> {
        let mut state = self.state.lock().await;
        expire(&mut state);
        let entry = state
            .sessions
            .get_mut(session)
            .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
        entry.last_used = Instant::now();
        let (target, cursor) = (entry.target.clone(), entry.cursor);
        let attached = state
            .attached
            .get(&target)
            .cloned()
            .ok_or_else(|| DebugError::Stale(target.clone()))?;
        Ok((attached, cursor))
    }

    /// The runtime now, with the collector's baseline and the candidates.
    pub async fn snapshot(&self, session: &str) -> Result<Snapshot, DebugError> {
        let (attached, _) = self.session(session).await?;
        if attached.link.is_closed() {
            return Err(DebugError::Stale(attached.target.id.clone()));
        }
        let topology: Topology = serde_json::from_value(attached.link.request("topology").await?)
            .map_err(|e| DebugError::Protocol(e.to_string()))?;
        let candidates = topology.candidates(&attached.baseline);
        let journal = {
            let journal = attached
                .link
                .journal
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            journal.window(journal.head())
        };
        Ok(Snapshot {
            target: attached.target.clone(),
            topology,
            candidates,
            journal,
        })
    }

    /// Waits until a record after the session's cursor matches `event` (any
    /// record when `None`), or `timeout` passes; advances the cursor past what
    /// it returns.
    pub async fn wait(
        &self,
        session: &str,
        event: Option<&str>,
        timeout: Duration,
    ) -> Result<WaitResult, DebugError> {
        let _slot = Arc::clone(&self.waiters)
            .try_acquire_owned()
            .map_err(|_| DebugError::TooManyWaiters)?;
        let (attached, cursor) = self.session(session).await?;
        let matches = |r: &Record| match (&r.change, event) {
            (_, None) | (Change::TargetDisposed, _) => true,
            (Change::DispatchObserved { event: name, .. }, Some(wanted)) => name == wanted,
            (Change::TopologyInvalidated { name, .. }, Some(wanted)) => name.as_deref() == Some(wanted),
            _ => false,
        };
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut head = attached.link.head.clone();
        let result = loop {
            let (window, mut records) = {
                let journal = attached
                    .link
                    .journal
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                (
                    journal.window(cursor),
                    journal.after(cursor, MAX_PAGE + 1, matches),
                )
            };
            if window.gap {
                // What fell out is lost; the next wait reads on from the oldest retained.
                let next = window.oldest.unwrap_or(cursor);
                break WaitResult {
                    outcome: "gap",
                    records: Vec::new(),
                    cursor: next,
                    window,
                    truncated: false,
                };
            }
            if !records.is_empty() {
                let truncated = records.len() > MAX_PAGE;
                records.truncate(MAX_PAGE);
                let next = records.last().map_or(cursor, |r| r.seq + 1);
                break WaitResult {
                    outcome: "found",
                    records,
                    cursor: next,
                    window,
                    truncated,
                };
            }
            if attached.link.is_closed() {
                // Everything the target said has been read, and it will say no more.
                return Err(DebugError::Stale(attached.target.id.clone()));
            }
            head.mark_unchanged();
            let changed = tokio::select! {
                changed = head.changed() => changed.is_ok(),
                () = tokio::time::sleep_until(deadline) => false,
            };
            if !changed {
                let (head_now, window) = {
                    let journal = attached
                        .link
                        .journal
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    (journal.head(), journal.window(journal.head()))
                };
                // Nothing matched: the cursor moves past what was seen.
                break WaitResult {
                    outcome: "timeout",
                    records: Vec::new(),
                    cursor: head_now,
                    window,
                    truncated: false,
                };
            }
        };
        let mut state = self.state.lock().await;
        if let Some(entry) = state.sessions.get_mut(session) {
            entry.cursor = result.cursor;
            entry.last_used = Instant::now();
        }
        Ok(result)
    }
}

/// A snapshot answer.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub target: Target,
    pub topology: Topology,
    pub candidates: Vec<Candidate>,
    /// The target's journal now: oldest and newest sequence, records retained.
    pub journal: Window,
}

fn expire(state: &mut State) {
    let now = Instant::now();
    state
        .sessions
        .retain(|_, s| now.duration_since(s.last_used) < SESSION_IDLE);
    let live: std::collections::HashSet<String> = state.sessions.values().map(|s| s.target.clone()).collect();
    state.attached.retain(|id, _| live.contains(id));
}

/// Reads the registry: one JSON file per live collector. Files of processes that
/// are gone are removed.
fn discover(registry: &Path) -> Vec<Target> {
    let Ok(dir) = std::fs::read_dir(registry.join("targets")) else {
        return Vec::new();
    };
    let mut targets = Vec::new();
    for entry in dir.flatten().take(MAX_TARGETS) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(pid) = record["pid"].as_u64().and_then(|p| u32::try_from(p).ok()) else {
            continue;
        };
        let Some(started) = start_time(pid) else {
            tracing::debug!(pid, "pruned the registry file of a process that is gone");
            let _ = std::fs::remove_file(&path);
            continue;
        };
        let Some(socket) = record["socket"].as_str() else {
            continue;
        };
        targets.push(Target {
            id: format!("{pid}-{started}"),
            pid,
            label: record["label"].as_str().unwrap_or("cordis").to_owned(),
            socket: PathBuf::from(socket),
        });
    }
    targets.sort_by(|a, b| a.id.cmp(&b.id));
    targets
}

/// A process's start time (clock ticks after boot), `None` when it is gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}
