//! The debug core: targets discovered from the collectors' registry, debug
//! sessions on them (bounded in number and idle time), snapshots and waits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use dshkit_os::error::ErrorClass;
use serde::Serialize;
use tokio::time::Instant;

use crate::journal::{Change, Record, Window};
use crate::link::{COLLECTOR_PROTOCOL, Link, LinkError};
use crate::topology::{Candidate, Comparison, Digest, Topology};

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
/// Checkpoints a session keeps (the oldest goes first).
pub const MAX_CHECKPOINTS: usize = 8;
/// Default and longest experiment lease (the collector enforces the same bounds).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
pub const MAX_LEASE: Duration = Duration::from_mins(1);

/// A live process with a collector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// `<pid>-<start time>-<collector epoch>`: a restarted process, or a collector
    /// started again inside the same process, is a new target.
    pub id: String,
    pub pid: u32,
    /// When the collector started (ms since the Unix epoch).
    pub epoch: u64,
    pub label: String,
    /// The line protocol its collector announces in the registry (`None`: it
    /// announces none).
    pub protocol: Option<u64>,
    /// Why this core cannot use the target, when it cannot (a collector of
    /// another protocol version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
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
    #[error("the session's target {target} is gone ({reason}){}", replacement.as_ref().map_or_else(|| ": list targets and attach to a live one".to_owned(), |r| format!(": attach to its replacement {r}")))]
    Stale {
        target: String,
        /// `target-replaced`, `target-disposed` or `host-disposed`.
        reason: &'static str,
        replacement: Option<String>,
    },
    #[error("no checkpoint {0} in this session; cordis_capture_checkpoint makes one (8 are kept)")]
    UnknownCheckpoint(String),
    #[error(
        "this session holds no lease {0}; only the session that started an experiment stops it (or an emergency stop)"
    )]
    NotLeaseOwner(String),
    #[error("{MAX_SESSIONS} debug sessions are open; detach one first")]
    TooManySessions,
    #[error("{MAX_WAITERS} waits are running; retry when one ends")]
    TooManyWaiters,
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("the collector answered something unreadable: {0}")]
    Protocol(String),
    #[error(
        "the collector in target {target} speaks protocol {}, and this dshkit ({}) speaks protocol {core}: install the DSH plugin again with this dshkit (`dshkit dsh install --devtools`) and restart that DSH",
        collector.map_or_else(|| "(none announced)".to_owned(), |v| v.to_string()),
        env!("CARGO_PKG_VERSION")
    )]
    ProtocolMismatch {
        target: String,
        /// What the collector announced (`None`: no version).
        collector: Option<u64>,
        /// What this core speaks ([`COLLECTOR_PROTOCOL`]).
        core: u64,
    },
}

impl DebugError {
    /// A stable machine-readable code. A session whose target is gone says how
    /// it went; every failure to talk to the collector is `COLLECTOR`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownTarget(_) => "UNKNOWN_TARGET",
            Self::UnknownSession(_) => "UNKNOWN_SESSION",
            Self::Stale { reason, .. } => match *reason {
                "target-replaced" => "TARGET_REPLACED",
                "host-disposed" => "HOST_DISPOSED",
                _ => "TARGET_DISPOSED",
            },
            Self::UnknownCheckpoint(_) => "UNKNOWN_CHECKPOINT",
            Self::NotLeaseOwner(_) => "NOT_LEASE_OWNER",
            Self::TooManySessions | Self::TooManyWaiters => "LIMIT",
            Self::Link(_) | Self::Protocol(_) => "COLLECTOR",
            Self::ProtocolMismatch { .. } => "PROTOCOL_MISMATCH",
        }
    }

    /// A target, session, checkpoint or lease the caller named that is not
    /// there or not theirs, a limit reached and a collector of another protocol
    /// are refused; a collector that could not be reached or answered
    /// something unreadable is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Link(_) | Self::Protocol(_) => ErrorClass::Runtime,
            Self::UnknownTarget(_)
            | Self::UnknownSession(_)
            | Self::Stale { .. }
            | Self::UnknownCheckpoint(_)
            | Self::NotLeaseOwner(_)
            | Self::TooManySessions
            | Self::TooManyWaiters
            | Self::ProtocolMismatch { .. } => ErrorClass::Refused,
        }
    }

    /// Whether the same request may succeed when made again: only when all
    /// waits were taken, since one ends soon.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::TooManyWaiters)
    }

    /// The refusal of a collector that announced `collector` instead of this
    /// core's protocol, or `None` when it speaks this core's.
    fn protocol_mismatch(target: &str, collector: Option<u64>) -> Option<Self> {
        (collector != Some(COLLECTOR_PROTOCOL)).then(|| Self::ProtocolMismatch {
            target: target.to_owned(),
            collector,
            core: COLLECTOR_PROTOCOL,
        })
    }
}

dshkit_os::classified!(DebugError);

struct Attached {
    target: Target,
    link: Link,
    baseline: Topology,
}

struct Session {
    target: String,
    cursor: u64,
    last_used: Instant,
    /// The lease of the experiment this session started, while it may run.
    lease: Option<String>,
    checkpoints: std::collections::VecDeque<Checkpoint>,
    next_checkpoint: u64,
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

    /// Waits running now, over all sessions (at most [`MAX_WAITERS`]).
    pub fn waits_running(&self) -> usize {
        MAX_WAITERS - self.waiters.available_permits()
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
                // A collector of another version would be misread: refused,
                // with both versions and the fix.
                let announced = hello.get("protocol").and_then(serde_json::Value::as_u64);
                if let Some(mismatch) = DebugError::protocol_mismatch(&target.id, announced) {
                    return Err(mismatch);
                }
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
                lease: None,
                checkpoints: std::collections::VecDeque::new(),
                next_checkpoint: 0,
            },
        );
        Ok(Attachment {
            session,
            target,
            cursor,
        })
    }

    /// Ends a session, stopping the experiment it owns; the channel closes with
    /// the target's last session.
    pub async fn detach(&self, session: &str) -> Result<(), DebugError> {
        let mut state = self.state.lock().await;
        let gone = state
            .sessions
            .remove(session)
            .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
        let attached = state.attached.get(&gone.target).cloned();
        if !state.sessions.values().any(|s| s.target == gone.target) {
            state.attached.remove(&gone.target);
        }
        drop(state);
        if let (Some(lease), Some(attached)) = (gone.lease, attached) {
            // Cleaned up by its exact owner; the collector's own lease timer
            // covers a core that cannot say so.
            let _ = stop_lease(&attached, &lease, "owner-gone").await;
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
            .ok_or_else(|| DebugError::Stale {
                target: target.clone(),
                reason: "target-disposed",
                replacement: None,
            })?;
        Ok((attached, cursor))
    }

    /// The session's channel, refusing a target that is gone, with why.
    async fn live(&self, session: &str) -> Result<(Arc<Attached>, u64), DebugError> {
        let (attached, cursor) = self.session(session).await?;
        if attached.link.is_closed() {
            return Err(self.stale(&attached));
        }
        Ok((attached, cursor))
    }

    /// Asks the session's collector; a channel that closes meanwhile is the
    /// target going away, reported as such.
    async fn ask(
        &self,
        attached: &Attached,
        op: &'static str,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, DebugError> {
        match attached.link.request_with(op, params).await {
            Err(LinkError::Closed) => Err(self.stale(attached)),
            other => Ok(other?),
        }
    }

    /// Why `attached` is gone: `host-disposed` when its collector said so, else
    /// `target-replaced` when a live target with the same label started after it
    /// (a restarted DSH), else `target-disposed`.
    fn stale(&self, attached: &Attached) -> DebugError {
        let said = attached
            .link
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .after(0, usize::MAX, |r| {
                matches!(r.change, Change::TargetDisposed { .. })
            })
            .into_iter()
            .next_back()
            .and_then(|r| match r.change {
                Change::TargetDisposed { reason } => Some(reason),
                _ => None,
            });
        let replacement = self
            .targets()
            .into_iter()
            .filter(|t| {
                t.label == attached.target.label
                    && t.id != attached.target.id
                    && t.epoch >= attached.target.epoch
            })
            .max_by_key(|t| t.epoch)
            .map(|t| t.id);
        let reason = match (replacement.is_some(), said.as_deref()) {
            (true, _) => "target-replaced",
            (false, Some("host-disposed")) => "host-disposed",
            _ => "target-disposed",
        };
        DebugError::Stale {
            target: attached.target.id.clone(),
            reason,
            replacement,
        }
    }

    /// The runtime now, with the collector's baseline and the candidates.
    pub async fn snapshot(&self, session: &str) -> Result<Snapshot, DebugError> {
        let (attached, _) = self.live(session).await?;
        let topology: Topology =
            serde_json::from_value(self.ask(&attached, "topology", serde_json::Map::new()).await?)
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
            (_, None) | (Change::TargetDisposed { .. }, _) => true,
            (Change::TopologyInvalidated { name, .. }, Some(wanted)) => name.as_deref() == Some(wanted),
            (
                Change::DispatchObserved { event: name, .. }
                | Change::ProfilerTraceUpdated { event: name, .. }
                | Change::ProfilerStatusChanged { event: name, .. },
                Some(wanted),
            ) => name == wanted,
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
                return Err(self.stale(&attached));
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

    /// Dispatches retained in the target's journal (newest last), optionally of
    /// events whose name contains `event`; does not move the session's cursor.
    pub async fn search_dispatches(
        &self,
        session: &str,
        event: Option<&str>,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Search, DebugError> {
        let (attached, _) = self.session(session).await?;
        let journal = attached
            .link
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let from = since.unwrap_or(0);
        let all = journal.after(from, usize::MAX, |r| match &r.change {
            Change::DispatchObserved { event: name, .. } => event.is_none_or(|wanted| name.contains(wanted)),
            _ => false,
        });
        let limit = limit.clamp(1, MAX_PAGE);
        let total = all.len();
        // The newest matches are the interesting ones when there are too many.
        let records = all[total.saturating_sub(limit)..].to_vec();
        Ok(Search {
            total,
            returned: records.len(),
            truncated: records.len() < total,
            records,
            window: journal.window(from),
        })
    }

    /// A digest of the runtime's shape now, and when it was taken (ms since the
    /// Unix epoch), for a checkpoint kept outside the core (the CLI's file).
    pub async fn digest(&self, session: &str) -> Result<(Digest, u64), DebugError> {
        let snapshot = self.snapshot(session).await?;
        Ok((Digest::of(&snapshot.topology), snapshot.topology.at))
    }

    /// Records a digest of the runtime's shape in the session.
    pub async fn capture_checkpoint(&self, session: &str) -> Result<CheckpointInfo, DebugError> {
        let snapshot = self.snapshot(session).await?;
        let digest = Digest::of(&snapshot.topology);
        let mut state = self.state.lock().await;
        let entry = state
            .sessions
            .get_mut(session)
            .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
        entry.next_checkpoint += 1;
        let id = format!("cp-{}", entry.next_checkpoint);
        let info = CheckpointInfo {
            checkpoint: id.clone(),
            at_ms: snapshot.topology.at,
            items: digest.len(),
            evicted: (entry.checkpoints.len() >= MAX_CHECKPOINTS)
                .then(|| entry.checkpoints.pop_front().map(|c| c.id))
                .flatten(),
        };
        entry.checkpoints.push_back(Checkpoint {
            id,
            at_ms: snapshot.topology.at,
            digest,
        });
        Ok(info)
    }

    /// What changed since checkpoint `id` (the newest when `None`): added,
    /// removed and changed items of each scope. Read-only.
    pub async fn compare_current(&self, session: &str, id: Option<&str>) -> Result<Comparison, DebugError> {
        let checkpoint = {
            let state = self.state.lock().await;
            let entry = state
                .sessions
                .get(session)
                .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
            match id {
                Some(id) => entry.checkpoints.iter().find(|c| c.id == id),
                None => entry.checkpoints.back(),
            }
            .cloned()
            .ok_or_else(|| DebugError::UnknownCheckpoint(id.unwrap_or("(none yet)").to_owned()))?
        };
        let snapshot = self.snapshot(session).await?;
        Ok(checkpoint.digest.compare(
            &Digest::of(&snapshot.topology),
            &checkpoint.id,
            checkpoint.at_ms,
            snapshot.topology.at,
        ))
    }

    /// Starts a leased experiment on `event` (one per target at a time; the
    /// collector refuses unless its DSH enabled experiments).
    pub async fn start_experiment(
        &self,
        session: &str,
        event: &str,
        lease: Duration,
    ) -> Result<serde_json::Value, DebugError> {
        let (attached, _) = self.live(session).await?;
        let ttl = lease.clamp(Duration::from_millis(100), MAX_LEASE);
        let owner = format!("dshkit-{}/{session}", std::process::id());
        let mut params = serde_json::Map::new();
        params.insert("event".into(), event.into());
        params.insert(
            "ttlMs".into(),
            u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).into(),
        );
        params.insert("owner".into(), owner.into());
        let started = self.ask(&attached, "experiment-start", params).await?;
        let lease = started["lease"]
            .as_str()
            .ok_or_else(|| DebugError::Protocol("an experiment without a lease".into()))?
            .to_owned();
        if let Some(entry) = self.state.lock().await.sessions.get_mut(session) {
            entry.lease = Some(lease);
        }
        Ok(started)
    }

    /// Stops the experiment of `lease`, which this session must own.
    pub async fn stop_experiment(&self, session: &str, lease: &str) -> Result<serde_json::Value, DebugError> {
        let (attached, _) = self.live(session).await?;
        {
            let mut state = self.state.lock().await;
            let entry = state
                .sessions
                .get_mut(session)
                .ok_or_else(|| DebugError::UnknownSession(session.to_owned()))?;
            if entry.lease.as_deref() != Some(lease) {
                return Err(DebugError::NotLeaseOwner(lease.to_owned()));
            }
            entry.lease = None;
        }
        stop_lease(&attached, lease, "stopped").await
    }

    /// A person's stop: ends whatever experiment runs on the session's target,
    /// whoever owns it.
    pub async fn emergency_stop(&self, session: &str) -> Result<serde_json::Value, DebugError> {
        let (attached, _) = self.live(session).await?;
        let mut params = serde_json::Map::new();
        params.insert("emergency".into(), true.into());
        self.ask(&attached, "experiment-stop", params).await
    }

    /// The running experiment and the last one, as the collector knows them.
    pub async fn experiment_status(&self, session: &str) -> Result<serde_json::Value, DebugError> {
        let (attached, _) = self.live(session).await?;
        self.ask(&attached, "experiment-status", serde_json::Map::new())
            .await
    }

    /// A page of traces of the running or last experiment (`lease` picks one).
    pub async fn traces(
        &self,
        session: &str,
        lease: Option<&str>,
        cursor: usize,
        limit: usize,
    ) -> Result<serde_json::Value, DebugError> {
        let (attached, _) = self.live(session).await?;
        let mut params = serde_json::Map::new();
        if let Some(lease) = lease {
            params.insert("lease".into(), lease.into());
        }
        params.insert("cursor".into(), cursor.into());
        params.insert("limit".into(), limit.clamp(1, MAX_PAGE).into());
        self.ask(&attached, "traces", params).await
    }
}

async fn stop_lease(attached: &Attached, lease: &str, reason: &str) -> Result<serde_json::Value, DebugError> {
    let mut params = serde_json::Map::new();
    params.insert("lease".into(), lease.into());
    params.insert("reason".into(), reason.into());
    Ok(attached.link.request_with("experiment-stop", params).await?)
}

/// Dispatches found in the journal.
#[derive(Debug, Clone, Serialize)]
pub struct Search {
    pub total: usize,
    pub returned: usize,
    pub truncated: bool,
    pub records: Vec<Record>,
    #[serde(flatten)]
    pub window: Window,
}

/// A checkpoint just captured.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointInfo {
    pub checkpoint: String,
    pub at_ms: u64,
    /// Items in its digest (fibers, events, services, entries).
    pub items: usize,
    /// The checkpoint dropped to keep [`MAX_CHECKPOINTS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted: Option<String>,
}

#[derive(Debug, Clone)]
struct Checkpoint {
    id: String,
    at_ms: u64,
    digest: Digest,
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
        let epoch = record["epoch"].as_u64().unwrap_or(0);
        let id = format!("{pid}-{started}-{epoch}");
        let protocol = record["protocol"].as_u64();
        targets.push(Target {
            problem: DebugError::protocol_mismatch(&id, protocol).map(|e| e.to_string()),
            id,
            pid,
            epoch,
            label: record["label"].as_str().unwrap_or("cordis").to_owned(),
            protocol,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_class_and_retryability() {
        use ErrorClass::{Refused, Runtime};
        let stale = |reason| DebugError::Stale {
            target: "t1".into(),
            reason,
            replacement: None,
        };
        let table = [
            (
                DebugError::UnknownTarget("t1".into()),
                "UNKNOWN_TARGET",
                Refused,
                false,
            ),
            (
                DebugError::UnknownSession("s1".into()),
                "UNKNOWN_SESSION",
                Refused,
                false,
            ),
            (stale("target-replaced"), "TARGET_REPLACED", Refused, false),
            (stale("host-disposed"), "HOST_DISPOSED", Refused, false),
            (stale("target-disposed"), "TARGET_DISPOSED", Refused, false),
            (
                DebugError::UnknownCheckpoint("c1".into()),
                "UNKNOWN_CHECKPOINT",
                Refused,
                false,
            ),
            (
                DebugError::NotLeaseOwner("l1".into()),
                "NOT_LEASE_OWNER",
                Refused,
                false,
            ),
            (DebugError::TooManySessions, "LIMIT", Refused, false),
            (DebugError::TooManyWaiters, "LIMIT", Refused, true),
            (DebugError::Link(LinkError::Closed), "COLLECTOR", Runtime, false),
            (
                DebugError::Protocol("not JSON".into()),
                "COLLECTOR",
                Runtime,
                false,
            ),
            (
                DebugError::ProtocolMismatch {
                    target: "t1".into(),
                    collector: None,
                    core: COLLECTOR_PROTOCOL,
                },
                "PROTOCOL_MISMATCH",
                Refused,
                false,
            ),
        ];
        for (error, code, class, retryable) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.is_retryable(), retryable, "{error}");
        }
    }
}
