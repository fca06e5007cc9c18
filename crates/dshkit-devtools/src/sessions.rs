//! The session book: debug sessions by opaque id, each bound to the client that
//! attached it and to its target (id and epoch), bounded in number and idle
//! time, with its catalog cursors (bounded too) and a signal that cancels its
//! pending waits. Pure bookkeeping: time comes in as `now`.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use tokio::sync::watch;

use crate::error::DebugError;
use crate::limits::{MAX_CURSORS, MAX_SESSIONS, SESSION_IDLE};
use crate::topology::Digest;

/// Random bytes in a debug session id: unguessable by another client.
const SESSION_ID_BYTES: usize = 16;
/// Random bytes in a catalog cursor.
const CURSOR_ID_BYTES: usize = 12;

/// Why a session's pending waits were cancelled.
pub(crate) type Cancel = Option<&'static str>;

/// One debug session.
pub(crate) struct Session {
    /// The MCP client that attached it (`ToolCall::subject`), the only one that may use it.
    pub(crate) owner: String,
    /// A short, non-secret name for the session in an experiment's owner
    /// (`dshkit-<pid>/agent-<n>`), which other clients may see.
    pub(crate) handle: u64,
    pub(crate) target: String,
    pub(crate) epoch: u64,
    /// The next journal sequence a wait reads.
    pub(crate) cursor: u64,
    pub(crate) last_used: Instant,
    /// The lease of the experiment this session started, while it may run.
    pub(crate) lease: Option<String>,
    pub(crate) checkpoints: VecDeque<Checkpoint>,
    pub(crate) next_checkpoint: u64,
    cursors: Vec<CatalogCursor>,
    cancel: watch::Sender<Cancel>,
}

#[derive(Debug, Clone)]
pub(crate) struct Checkpoint {
    pub(crate) id: String,
    pub(crate) at_ms: u64,
    pub(crate) digest: Digest,
}

/// Where the next page of one catalog starts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CatalogCursor {
    id: String,
    /// The catalog it pages: `fibers`, `events`, `event:<name>`, ...
    catalog: String,
    offset: usize,
}

/// All sessions.
#[derive(Default)]
pub(crate) struct Book {
    sessions: HashMap<String, Session>,
    next_handle: u64,
}

/// `prefix` and `bytes` random bytes in hex.
fn random_id(prefix: &str, bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    // The system's generator failing is not something to recover from: an id
    // made of zeros would be guessable.
    getrandom::fill(&mut buffer).expect("the system's random number generator");
    format!("{prefix}{}", hex::encode(buffer))
}

impl Book {
    /// Opens a session of `owner` on `target` (at `epoch`), reading its journal
    /// from `cursor`; refused past [`MAX_SESSIONS`] (after closing idle ones).
    pub(crate) fn open(
        &mut self,
        owner: &str,
        target: &str,
        epoch: u64,
        cursor: u64,
        now: Instant,
    ) -> Result<String, DebugError> {
        if self.sessions.len() >= MAX_SESSIONS {
            return Err(DebugError::TooManySessions);
        }
        let id = random_id("dbg_", SESSION_ID_BYTES);
        self.next_handle += 1;
        self.sessions.insert(
            id.clone(),
            Session {
                owner: owner.to_owned(),
                handle: self.next_handle,
                target: target.to_owned(),
                epoch,
                cursor,
                last_used: now,
                lease: None,
                checkpoints: VecDeque::new(),
                next_checkpoint: 0,
                cursors: Vec::new(),
                cancel: watch::channel(None).0,
            },
        );
        Ok(id)
    }

    /// Closes the sessions unused for [`SESSION_IDLE`] at `now`, cancelling their
    /// waits; returns them (their leases are for the caller to stop).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<Session> {
        let idle: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.last_used) >= SESSION_IDLE)
            .map(|(id, _)| id.clone())
            .collect();
        idle.into_iter()
            .filter_map(|id| self.sessions.remove(&id))
            .inspect(|s| s.cancel_waits("expired"))
            .collect()
    }

    /// Sessions open.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Refuses `id` to any client but its `owner`.
    pub(crate) fn authorize(&self, id: &str, owner: &str) -> Result<(), DebugError> {
        let session = self
            .sessions
            .get(id)
            .ok_or_else(|| DebugError::UnknownSession(id.to_owned()))?;
        if session.owner == owner {
            Ok(())
        } else {
            Err(DebugError::NotOwner(id.to_owned()))
        }
    }

    /// The session `id`, marked used at `now`.
    pub(crate) fn touch(&mut self, id: &str, now: Instant) -> Result<&mut Session, DebugError> {
        let session = self.get_mut(id)?;
        session.last_used = now;
        Ok(session)
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Result<&mut Session, DebugError> {
        self.sessions
            .get_mut(id)
            .ok_or_else(|| DebugError::UnknownSession(id.to_owned()))
    }

    /// Closes `id`, cancelling its waits.
    pub(crate) fn close(&mut self, id: &str) -> Result<Session, DebugError> {
        let session = self
            .sessions
            .remove(id)
            .ok_or_else(|| DebugError::UnknownSession(id.to_owned()))?;
        session.cancel_waits("detached");
        Ok(session)
    }

    /// The ids of `owner`'s sessions.
    pub(crate) fn owned_by(&self, owner: &str) -> Vec<String> {
        self.sessions
            .iter()
            .filter(|(_, s)| s.owner == owner)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether any session is on `target`.
    pub(crate) fn on_target(&self, target: &str) -> bool {
        self.sessions.values().any(|s| s.target == target)
    }
}

impl Session {
    /// A receiver that says why the session's waits end early.
    pub(crate) fn cancelled(&self) -> watch::Receiver<Cancel> {
        self.cancel.subscribe()
    }

    fn cancel_waits(&self, reason: &'static str) {
        self.cancel.send_replace(Some(reason));
    }

    /// A cursor for the page of `catalog` at `offset`. It replaces a cursor of
    /// the same catalog; a new catalog past [`MAX_CURSORS`] open is refused.
    pub(crate) fn issue_cursor(&mut self, catalog: &str, offset: usize) -> Result<String, DebugError> {
        self.cursors.retain(|c| c.catalog != catalog);
        if self.cursors.len() >= MAX_CURSORS {
            return Err(DebugError::TooManyCursors);
        }
        let id = random_id("cur_", CURSOR_ID_BYTES);
        self.cursors.push(CatalogCursor {
            id: id.clone(),
            catalog: catalog.to_owned(),
            offset,
        });
        Ok(id)
    }

    /// The catalog and offset of cursor `id` of this session, which is used up.
    pub(crate) fn take_cursor(&mut self, id: &str) -> Result<(String, usize), DebugError> {
        let at = self
            .cursors
            .iter()
            .position(|c| c.id == id)
            .ok_or_else(|| DebugError::UnknownCursor(id.to_owned()))?;
        let cursor = self.cursors.remove(at);
        Ok((cursor.catalog, cursor.offset))
    }

    /// The catalog cursor `id` pages, without using it.
    pub(crate) fn cursor_catalog(&self, id: &str) -> Result<&str, DebugError> {
        self.cursors
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.catalog.as_str())
            .ok_or_else(|| DebugError::UnknownCursor(id.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn book_with_one(now: Instant) -> (Book, String) {
        let mut book = Book::default();
        let id = book.open("mcp-session:alice", "1-2-3", 3, 1, now).unwrap();
        (book, id)
    }

    #[test]
    fn ids_are_opaque_and_only_the_attaching_client_may_use_one() {
        let now = Instant::now();
        let (mut book, first) = book_with_one(now);
        let second = book.open("mcp-session:alice", "1-2-3", 3, 1, now).unwrap();
        assert_ne!(first, second);
        assert!(
            first.starts_with("dbg_") && first.len() == 4 + 2 * SESSION_ID_BYTES,
            "{first}"
        );
        assert!(book.authorize(&first, "mcp-session:alice").is_ok());
        assert!(matches!(
            book.authorize(&first, "mcp-session:mallory"),
            Err(DebugError::NotOwner(id)) if id == first
        ));
        assert!(matches!(
            book.authorize("dbg_unknown", "mcp-session:alice"),
            Err(DebugError::UnknownSession(_))
        ));
        assert_eq!(book.owned_by("mcp-session:mallory"), Vec::<String>::new());
        assert_eq!(book.owned_by("mcp-session:alice").len(), 2);
    }

    #[test]
    fn sessions_are_capped_and_expire_when_idle_cancelling_their_waits() {
        let start = Instant::now();
        let mut book = Book::default();
        let ids: Vec<String> = (0..MAX_SESSIONS)
            .map(|_| book.open("stdio", "t", 1, 1, start).unwrap())
            .collect();
        assert!(matches!(
            book.open("stdio", "t", 1, 1, start),
            Err(DebugError::TooManySessions)
        ));
        let later = start + SESSION_IDLE.saturating_sub(Duration::from_secs(1));
        book.touch(&ids[0], later).unwrap();
        let waiting = book.get_mut(&ids[1]).unwrap().cancelled();
        assert!(book.expire(later).is_empty(), "none idle for 15 minutes yet");
        let expired = book.expire(start + SESSION_IDLE);
        assert_eq!(expired.len(), MAX_SESSIONS - 1, "all but the one used later");
        assert_eq!(*waiting.borrow(), Some("expired"));
        assert!(book.touch(&ids[0], later).is_ok());
        assert!(book.open("stdio", "t", 1, 1, later).is_ok(), "room again");
    }

    #[test]
    fn detaching_cancels_the_sessions_waits() {
        let now = Instant::now();
        let (mut book, id) = book_with_one(now);
        let waiting = book.get_mut(&id).unwrap().cancelled();
        assert_eq!(*waiting.borrow(), None);
        book.close(&id).unwrap();
        assert_eq!(*waiting.borrow(), Some("detached"));
        assert!(matches!(book.close(&id), Err(DebugError::UnknownSession(_))));
    }

    #[test]
    fn cursors_are_single_use_session_owned_replaced_per_catalog_and_capped() {
        let now = Instant::now();
        let (mut book, first) = book_with_one(now);
        let other = book.open("mcp-session:alice", "1-2-3", 3, 1, now).unwrap();
        let session = book.get_mut(&first).unwrap();
        let fibers = session.issue_cursor("fibers", 100).unwrap();
        assert_eq!(session.cursor_catalog(&fibers).unwrap(), "fibers");
        assert_eq!(session.take_cursor(&fibers).unwrap(), ("fibers".to_owned(), 100));
        assert!(matches!(
            session.take_cursor(&fibers),
            Err(DebugError::UnknownCursor(_))
        ));

        // A newer first page of the same catalog replaces its cursor.
        let old = session.issue_cursor("events", 100).unwrap();
        let new = session.issue_cursor("events", 100).unwrap();
        assert!(session.cursor_catalog(&old).is_err());
        assert!(session.cursor_catalog(&new).is_ok());

        // Another session of the same client does not know this one's cursor.
        assert!(matches!(
            book.get_mut(&other).unwrap().take_cursor(&new),
            Err(DebugError::UnknownCursor(_))
        ));

        let session = book.get_mut(&first).unwrap();
        for n in 1..MAX_CURSORS {
            session.issue_cursor(&format!("event:e{n}"), 1).unwrap();
        }
        assert!(matches!(
            session.issue_cursor("event:ninth", 1),
            Err(DebugError::TooManyCursors)
        ));
        // Using one up makes room.
        session.take_cursor(&new).unwrap();
        assert!(session.issue_cursor("event:ninth", 1).is_ok());
    }
}
