//! The debug core: targets discovered from the collectors' registry, debug
//! sessions on them (kept in the [`crate::sessions`] book), snapshots and waits.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::DebugError;
use crate::journal::{Change, Filter, Record, Window};
use crate::limits::{MAX_CHECKPOINTS, MAX_LEASE, MAX_PAGE, MAX_SESSIONS, MAX_WAIT, MAX_WAITERS};
use crate::link::{Link, LinkError};
use crate::sessions::{Book, Cancel, Checkpoint, Session};
use crate::target::{Target, discover};
use crate::topology::{Candidate, Comparison, Digest, Topology};

/// The client of sessions this process attaches for itself (`dshkit devtools`,
/// the doctor): no MCP client can use them.
pub const LOCAL_OWNER: &str = "local";

struct Attached {
    /// The target as it was attached, with what its `hello` said.
    target: Target,
    link: Link,
    baseline: Topology,
}

#[derive(Default)]
struct State {
    attached: HashMap<String, Arc<Attached>>,
    book: Book,
}

/// The core. One per dshkit process.
pub struct DebugCore {
    registry: PathBuf,
    state: tokio::sync::Mutex<State>,
    waiters: Arc<tokio::sync::Semaphore>,
}

/// A session just attached.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The opaque id; only the client that attached it may use it.
    #[serde(rename = "debugSessionId")]
    pub session: String,
    /// The target's id and epoch the session is bound to.
    pub target_id: String,
    pub epoch: u64,
    pub target: Target,
    /// The journal sequence the session's first wait reads from.
    #[serde(skip)]
    pub cursor: u64,
    /// The newest sequence the session has seen (a wait's default `afterSequence`).
    pub after_sequence: u64,
}

/// What a wait saw.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitResult {
    /// `found`, `timeout`, `gap` or `cancelled`.
    pub outcome: &'static str,
    /// Why a wait was cancelled: `detached`, `expired`, or how its target went
    /// (`target-replaced`, `target-disposed`, `host-disposed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    pub records: Vec<Record>,
    /// The sequence the wait read after.
    pub after_sequence: u64,
    /// Where the next wait reads after (the session's cursor moved there).
    pub next_after_sequence: u64,
    #[serde(flatten)]
    pub window: Window,
    /// More matching records were retained than returned.
    pub truncated: bool,
}

impl WaitResult {
    /// The next sequence a wait reads (the session's cursor).
    pub fn cursor(&self) -> u64 {
        self.next_after_sequence + 1
    }
}

/// What a wait asks for: records matching `filter` after sequence `after` (the
/// session's cursor when `None`), for `timeout` at most ([`MAX_WAIT`]).
#[derive(Debug, Clone, Default)]
pub struct WaitFor {
    pub filter: Filter,
    pub after: Option<u64>,
    pub timeout: Duration,
}

/// A session's target and reading position, for one call.
struct InUse {
    attached: Arc<Attached>,
    cursor: u64,
    cancelled: watch::Receiver<Cancel>,
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

    /// The live targets in the registry; registry files of dead processes are
    /// removed.
    pub fn targets(&self) -> Vec<Target> {
        discover(&self.registry)
    }

    /// The targets for an agent: the registry's, with what this core's channels
    /// learnt (experiments, Node version), then the targets this core's
    /// sessions are still on that are gone (`stale`, with why).
    pub async fn list_targets(&self) -> Vec<Target> {
        let mut listed = self.targets();
        let attached: Vec<Arc<Attached>> = self.state.lock().await.attached.values().cloned().collect();
        for target in &mut listed {
            if let Some(known) = attached.iter().find(|a| a.target.id == target.id) {
                *target = target
                    .clone()
                    .with_hello(known.target.experiments, known.target.version.node.clone());
            }
        }
        for gone in attached.iter().filter(|a| a.link.is_closed()) {
            let (reason, replacement) = self.gone(gone);
            listed.retain(|t| t.id != gone.target.id);
            listed.push(gone.target.clone().stale(reason, replacement));
        }
        listed
    }

    /// Attaches a new session to `target` (the only one when `None`) for this
    /// process itself ([`LOCAL_OWNER`]).
    pub async fn attach(&self, target: Option<&str>) -> Result<Attachment, DebugError> {
        self.attach_for(LOCAL_OWNER, target).await
    }

    /// Attaches a new session to `target` (the only one when `None`) that only
    /// `owner` (an MCP client's subject) may use.
    pub async fn attach_for(&self, owner: &str, target: Option<&str>) -> Result<Attachment, DebugError> {
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
        if state.book.len() >= MAX_SESSIONS {
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
                    target: target.clone().with_hello(
                        hello["experiments"].as_bool(),
                        hello["node"].as_str().map(str::to_owned),
                    ),
                    link,
                    baseline,
                });
                state.attached.insert(target.id.clone(), Arc::clone(&attached));
                attached
            }
        };
        let cursor = attached
            .link
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .head();
        let target = attached.target.clone();
        let session = state
            .book
            .open(owner, &target.id, target.epoch, cursor, std::time::Instant::now())?;
        Ok(Attachment {
            session,
            target_id: target.id.clone(),
            epoch: target.epoch,
            target,
            cursor,
            after_sequence: cursor.saturating_sub(1),
        })
    }

    /// Closes the sessions that are idle at `now` (unused for [`crate::SESSION_IDLE`]):
    /// their pending waits answer `cancelled` (`expired`) and their experiments
    /// are stopped by exact lease. Every call does this with the time it runs.
    pub async fn expire_idle(&self, now: std::time::Instant) {
        expire_at(&mut *self.state.lock().await, now);
    }

    /// Refuses `session` to any MCP client but the one that attached it.
    pub async fn authorize(&self, session: &str, owner: &str) -> Result<(), DebugError> {
        self.state.lock().await.book.authorize(session, owner)
    }

    /// Ends a session, cancelling its waits and stopping the experiment it
    /// owns; the channel closes with the target's last session.
    pub async fn detach(&self, session: &str) -> Result<(), DebugError> {
        let mut state = self.state.lock().await;
        let gone = state.book.close(session)?;
        let attached = state.attached.get(&gone.target).cloned();
        if !state.book.on_target(&gone.target) {
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

    /// Detaches every session of `owner` (its MCP client is gone).
    pub async fn release(&self, owner: &str) {
        let sessions = self.state.lock().await.book.owned_by(owner);
        for session in sessions {
            let _ = self.detach(&session).await;
        }
    }

    async fn session(&self, session: &str) -> Result<InUse, DebugError> {
        let mut state = self.state.lock().await;
        expire(&mut state);
        let entry = state.book.touch(session, std::time::Instant::now())?;
        let (target, epoch, cursor, cancelled) =
            (entry.target.clone(), entry.epoch, entry.cursor, entry.cancelled());
        let attached = state
            .attached
            .get(&target)
            .cloned()
            .ok_or_else(|| DebugError::Stale {
                target: target.clone(),
                reason: "target-disposed",
                replacement: None,
            })?;
        // The session is bound to its target's epoch: a collector started
        // again is another target.
        if attached.target.epoch != epoch {
            return Err(self.stale(&attached));
        }
        Ok(InUse {
            attached,
            cursor,
            cancelled,
        })
    }

    /// The session's channel, refusing a target that is gone, with why.
    async fn live(&self, session: &str) -> Result<Arc<Attached>, DebugError> {
        let attached = self.session(session).await?.attached;
        if attached.link.is_closed() {
            return Err(self.stale(&attached));
        }
        Ok(attached)
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
        let (reason, replacement) = self.gone(attached);
        DebugError::Stale {
            target: attached.target.id.clone(),
            reason,
            replacement,
        }
    }

    /// How `attached` went (see [`Self::stale`]), and its replacement.
    fn gone(&self, attached: &Attached) -> (&'static str, Option<String>) {
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
        (reason, replacement)
    }

    /// The runtime now, with the collector's baseline, the candidates and the
    /// retained dispatches.
    pub async fn snapshot(&self, session: &str) -> Result<Snapshot, DebugError> {
        let attached = self.live(session).await?;
        let topology: Topology =
            serde_json::from_value(self.ask(&attached, "topology", serde_json::Map::new()).await?)
                .map_err(|e| DebugError::Protocol(e.to_string()))?;
        let candidates = topology.candidates(&attached.baseline);
        let (journal, dispatches) = {
            let journal = attached
                .link
                .journal
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (
                journal.window(journal.head()),
                journal.after(0, usize::MAX, |r| {
                    matches!(r.change, Change::DispatchObserved { .. })
                }),
            )
        };
        Ok(Snapshot {
            target: attached.target.clone(),
            topology,
            candidates,
            journal,
            dispatches,
        })
    }

    /// Uses up catalog cursor `cursor` of `session`, which must page `catalog`:
    /// the offset of the page it starts.
    pub async fn take_cursor(&self, session: &str, cursor: &str, catalog: &str) -> Result<usize, DebugError> {
        let mut state = self.state.lock().await;
        let entry = state.book.get_mut(session)?;
        if entry.cursor_catalog(cursor)? != catalog {
            return Err(DebugError::UnknownCursor(format!(
                "{cursor} (it pages another catalog)"
            )));
        }
        Ok(entry.take_cursor(cursor)?.1)
    }

    /// The catalog a cursor of `session` pages, without using it.
    pub async fn cursor_catalog(&self, session: &str, cursor: &str) -> Result<String, DebugError> {
        let mut state = self.state.lock().await;
        Ok(state.book.get_mut(session)?.cursor_catalog(cursor)?.to_owned())
    }

    /// A cursor of `session` for the page of `catalog` at `offset`.
    pub async fn issue_cursor(
        &self,
        session: &str,
        catalog: &str,
        offset: usize,
    ) -> Result<String, DebugError> {
        self.state
            .lock()
            .await
            .book
            .get_mut(session)?
            .issue_cursor(catalog, offset)
    }

    /// Waits until a record after the session's cursor (or after `afterSequence`)
    /// matches the filter, or the timeout passes, or the session's waits are
    /// cancelled (detach, expiry, the target going away); moves the cursor past
    /// what it returns.
    pub async fn wait(&self, session: &str, request: &WaitFor) -> Result<WaitResult, DebugError> {
        let _slot = Arc::clone(&self.waiters)
            .try_acquire_owned()
            .map_err(|_| DebugError::TooManyWaiters)?;
        let InUse {
            attached,
            cursor,
            mut cancelled,
        } = self.session(session).await?;
        let from = request.after.map_or(cursor, |after| after.saturating_add(1));
        let deadline = Instant::now() + request.timeout.min(MAX_WAIT);
        let mut head = attached.link.head.clone();
        let result = |outcome, reason, records: Vec<Record>, next: u64, window, truncated| WaitResult {
            outcome,
            reason,
            records,
            after_sequence: from.saturating_sub(1),
            next_after_sequence: next.saturating_sub(1),
            window,
            truncated,
        };
        let mut first = true;
        let result = loop {
            let (window, mut records) = {
                let journal = attached
                    .link
                    .journal
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                (
                    journal.window(from),
                    journal.after(from, MAX_PAGE + 1, |r| request.filter.matches(r)),
                )
            };
            if window.gap {
                // What fell out is lost; the next wait reads on from the oldest retained.
                let next = window.oldest.unwrap_or(from);
                break result("gap", None, Vec::new(), next, window, false);
            }
            if !records.is_empty() {
                let truncated = records.len() > MAX_PAGE;
                records.truncate(MAX_PAGE);
                let next = records.last().map_or(from, |r| r.seq + 1);
                break result("found", None, records, next, window, truncated);
            }
            if attached.link.is_closed() {
                if first {
                    // Everything the target said has been read, and it will say no more.
                    return Err(self.stale(&attached));
                }
                // The target went away while the wait was pending.
                let (reason, _) = self.gone(&attached);
                break result("cancelled", Some(reason), Vec::new(), from, window, false);
            }
            first = false;
            head.mark_unchanged();
            tokio::select! {
                // A closed channel is seen at the top of the loop.
                _ = head.changed() => {}
                _ = cancelled.changed() => {
                    let reason = cancelled.borrow().unwrap_or("detached");
                    return Ok(result("cancelled", Some(reason), Vec::new(), from, window, false));
                }
                () = tokio::time::sleep_until(deadline) => {
                    let (head_now, window) = {
                        let journal = attached
                            .link
                            .journal
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner);
                        (journal.head(), journal.window(journal.head()))
                    };
                    // Nothing matched: the cursor moves past what was seen.
                    break result("timeout", None, Vec::new(), head_now, window, false);
                }
            }
        };
        let mut state = self.state.lock().await;
        if let Ok(entry) = state.book.touch(session, std::time::Instant::now()) {
            entry.cursor = result.cursor();
        }
        Ok(result)
    }

    /// Dispatches retained in the target's journal from sequence `since`
    /// (oldest first), optionally of events whose name contains `event`: the
    /// page of at most `limit` that starts at sequence `from` (`since` for a
    /// first page). Does not move the session's cursor.
    pub async fn search_dispatches(
        &self,
        session: &str,
        event: Option<&str>,
        (since, from): (Option<u64>, Option<u64>),
        limit: usize,
    ) -> Result<Search, DebugError> {
        let attached = self.session(session).await?.attached;
        let journal = attached
            .link
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let since = since.unwrap_or(0);
        let all = journal.after(since, usize::MAX, |r| match &r.change {
            Change::DispatchObserved { event: name, .. } => event.is_none_or(|wanted| name.contains(wanted)),
            _ => false,
        });
        let from = from.unwrap_or(since).max(since);
        let limit = limit.clamp(1, MAX_PAGE);
        let rest: Vec<&Record> = all.iter().filter(|r| r.seq >= from).collect();
        let records: Vec<Record> = rest.iter().take(limit).map(|r| (*r).clone()).collect();
        let next = (rest.len() > records.len()).then(|| records.last().map_or(from, |r| r.seq + 1));
        Ok(Search {
            total: all.len(),
            returned: records.len(),
            truncated: next.is_some(),
            records,
            next,
            window: journal.window(since),
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
        let entry = state.book.get_mut(session)?;
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
            let mut state = self.state.lock().await;
            let entry = state.book.get_mut(session)?;
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
        let attached = self.live(session).await?;
        let ttl = lease.clamp(Duration::from_millis(100), MAX_LEASE);
        // Other clients see the owner: it names the session without its id.
        let handle = self.state.lock().await.book.get_mut(session)?.handle;
        let owner = format!("dshkit-{}/agent-{handle}", std::process::id());
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
        if let Ok(entry) = self.state.lock().await.book.get_mut(session) {
            entry.lease = Some(lease);
        }
        Ok(started)
    }

    /// Stops the experiment of `lease`, which this session must own.
    pub async fn stop_experiment(&self, session: &str, lease: &str) -> Result<serde_json::Value, DebugError> {
        let attached = self.live(session).await?;
        {
            let mut state = self.state.lock().await;
            let entry = state.book.get_mut(session)?;
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
        let attached = self.live(session).await?;
        let mut params = serde_json::Map::new();
        params.insert("emergency".into(), true.into());
        self.ask(&attached, "experiment-stop", params).await
    }

    /// The running experiment and the last one, as the collector knows them.
    pub async fn experiment_status(&self, session: &str) -> Result<serde_json::Value, DebugError> {
        let attached = self.live(session).await?;
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
        let attached = self.live(session).await?;
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

/// One page of the dispatches found in the journal.
#[derive(Debug, Clone, Serialize)]
pub struct Search {
    /// Matches retained from `since`, on every page.
    pub total: usize,
    pub returned: usize,
    /// Matches follow this page.
    pub truncated: bool,
    pub records: Vec<Record>,
    /// The sequence the next page starts at, when matches follow.
    #[serde(skip)]
    pub next: Option<u64>,
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

/// A snapshot answer.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub target: Target,
    pub topology: Topology,
    pub candidates: Vec<Candidate>,
    /// The target's journal now: oldest and newest sequence, records
    /// retained, capacity.
    pub journal: Window,
    /// The dispatches the journal retains, oldest first.
    pub dispatches: Vec<Record>,
}

/// Closes the sessions idle at `now`, cancelling their waits and stopping
/// their experiments by exact lease, and lets go of targets no session is on.
fn expire_at(state: &mut State, now: std::time::Instant) {
    for gone in state.book.expire(now) {
        stop_expired_lease(state, &gone);
    }
    let State { attached, book } = state;
    attached.retain(|id, _| book.on_target(id));
}

/// [`expire_at`] now.
fn expire(state: &mut State) {
    expire_at(state, std::time::Instant::now());
}

/// Stops the lease of an expired session, in the background (its channel is
/// kept open until the collector answered).
fn stop_expired_lease(state: &State, gone: &Session) {
    if let (Some(lease), Some(attached)) = (gone.lease.clone(), state.attached.get(&gone.target).cloned()) {
        tokio::spawn(async move {
            // The collector knows one reason for an owner that went: `owner-gone`.
            let _ = stop_lease(&attached, &lease, "owner-gone").await;
        });
    }
}
