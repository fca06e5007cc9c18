//! Bounded MCP sessions of the `initialize` eras (2025-06-18, 2025-11-25).
//!
//! The session book is the one record of which sessions exist. rmcp keeps a
//! worker per *awake* session (about 130 KB: channels sized for 32 protocol
//! messages each); a worker idle for [`HIBERNATE_AFTER`] ends, and its session
//! hibernates as the book's small record of its `initialize` parameters. The next
//! request of a hibernating session wakes it: rmcp replays the handshake from the
//! book (its session-store restore), under the same session id, so the client
//! sees nothing and the session's previews stay its own.
//!
//! The book bounds sessions three ways: a cap on their number (a new one beyond
//! it evicts the least recently used idle session, or is refused), an idle
//! expiry, and ending on `DELETE`. A session that ends (any of the three) is
//! forgotten, so its client's next request gets 404 and re-initializes, and what
//! it owned (preview sessions, their browser contexts) is released.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use tokio::time::Instant;

/// Most sessions at once, awake or hibernating.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// A session without a request this long ends.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_mins(10);
/// An awake session without traffic this long hibernates.
pub const HIBERNATE_AFTER: Duration = Duration::from_mins(1);
/// What a client refused for a full book is told to wait before retrying.
pub const RETRY_AFTER_SECS: u64 = 5;

/// The bounds of the session book.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub max_sessions: usize,
    pub idle: Duration,
    pub hibernate_after: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle: DEFAULT_SESSION_IDLE,
            hibernate_after: HIBERNATE_AFTER,
        }
    }
}

/// Called with a session id when the session ends (DELETE, expiry, eviction).
pub(crate) type EndHook = Arc<dyn Fn(&str) + Send + Sync>;

struct Entry {
    /// The session's `initialize` parameters as one JSON string: a hibernating
    /// session keeps one small allocation, not the many of the parsed form.
    state: Box<str>,
    last_used: Instant,
    /// Requests of this session whose responses are still being sent.
    busy: u32,
    /// Whether rmcp holds a worker for it (it hibernates once idle, never with a
    /// response in flight).
    awake: bool,
}

#[derive(Default)]
struct Book {
    entries: HashMap<String, Entry>,
    /// Sessions admitted whose `initialize` is still being answered.
    pending: usize,
}

/// The session book; rmcp's session store.
pub(crate) struct SessionBook {
    book: Mutex<Book>,
    limits: SessionLimits,
    changed: tokio::sync::Notify,
    on_end: EndHook,
}

/// Why a new session was refused.
#[derive(Debug)]
pub(crate) struct BookFull {
    pub max_sessions: usize,
}

/// A slot held for a session being created; released when the `initialize`
/// response has been produced (by then the book holds the session).
pub(crate) struct Admission {
    book: Arc<SessionBook>,
    /// The idle session evicted to make room, to be closed by the caller.
    pub evicted: Option<String>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut book = self.book.lock();
        book.pending = book.pending.saturating_sub(1);
    }
}

/// Marks a session busy while a response of it is being sent.
pub(crate) struct Busy {
    book: Arc<SessionBook>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut book = self.book.lock();
        if let Some(entry) = book.entries.get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last_used = Instant::now();
        }
        drop(book);
        self.book.changed.notify_one();
    }
}

impl SessionBook {
    pub(crate) fn new(limits: SessionLimits, on_end: EndHook) -> Arc<Self> {
        Arc::new(Self {
            book: Mutex::new(Book::default()),
            limits: SessionLimits {
                max_sessions: limits.max_sessions.max(1),
                ..limits
            },
            changed: tokio::sync::Notify::new(),
            on_end,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        // The book's invariants hold between statements; a panic elsewhere cannot
        // leave it half-updated.
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sessions in the book.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Holds a slot for a new session: evicts the least recently used idle
    /// session when the book is full, and refuses when none is idle.
    pub(crate) fn admit(self: &Arc<Self>) -> Result<Admission, BookFull> {
        let mut book = self.lock();
        let mut evicted = None;
        if book.entries.len() + book.pending >= self.limits.max_sessions {
            let oldest_idle = book
                .entries
                .iter()
                .filter(|(_, entry)| entry.busy == 0)
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(id, _)| id.clone());
            let Some(id) = oldest_idle else {
                return Err(BookFull {
                    max_sessions: self.limits.max_sessions,
                });
            };
            book.entries.remove(&id);
            evicted = Some(id);
        }
        book.pending += 1;
        drop(book);
        if let Some(id) = &evicted {
            tracing::info!(session = %id, "MCP session evicted: the session cap was reached and it was the least recently used idle one");
            (self.on_end)(id);
        }
        Ok(Admission {
            book: Arc::clone(self),
            evicted,
        })
    }

    /// Marks the session `id` in use until the returned guard drops; `None` for a
    /// session the book does not hold.
    pub(crate) fn busy(self: &Arc<Self>, id: &str) -> Option<Busy> {
        let mut book = self.lock();
        let entry = book.entries.get_mut(id)?;
        entry.busy += 1;
        entry.awake = true;
        entry.last_used = Instant::now();
        Some(Busy {
            book: Arc::clone(self),
            id: id.to_owned(),
        })
    }

    /// Removes the sessions idle past the expiry, marks the awake ones idle past
    /// [`SessionLimits::hibernate_after`] as hibernating, and returns both, with
    /// the instant the next one is due. A session with a response in flight is
    /// neither: its idle time starts when its last response is sent.
    fn take_due(&self) -> (Vec<String>, Vec<String>, Option<Instant>) {
        let now = Instant::now();
        let mut book = self.lock();
        let (mut expired, mut hibernating) = (Vec::new(), Vec::new());
        let mut next: Option<Instant> = None;
        let mut due = |deadline: Instant| next = Some(next.map_or(deadline, |n: Instant| n.min(deadline)));
        book.entries.retain(|id, entry| {
            if entry.busy > 0 {
                return true;
            }
            let expiry = entry.last_used + self.limits.idle;
            if expiry <= now {
                expired.push(id.clone());
                return false;
            }
            let hibernation = entry.last_used + self.limits.hibernate_after;
            if entry.awake && hibernation <= now {
                entry.awake = false;
                hibernating.push(id.clone());
            } else if entry.awake {
                due(hibernation);
            }
            due(expiry);
            true
        });
        (expired, hibernating, next)
    }

    /// Ends idle sessions as their expiry passes and lets idle awake ones
    /// hibernate, until `stop` fires. `close` stops a session's rmcp worker (the
    /// book keeps a hibernating session, and rmcp restores it from here on its
    /// next request). rmcp's own idle timer is off: it would end a worker whose
    /// client waits for a long call's answer.
    pub(crate) async fn expire(
        self: Arc<Self>,
        close: impl AsyncFn(String),
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            // Registered before the book is read, so a change in between wakes us.
            let changed = self.changed.notified();
            let (expired, hibernating, next) = self.take_due();
            for id in expired {
                tracing::info!(session = %id, idle_secs = self.limits.idle.as_secs(), "MCP session expired after its idle time");
                (self.on_end)(&id);
                close(id).await;
            }
            for id in hibernating {
                tracing::debug!(session = %id, "MCP session hibernates");
                close(id).await;
            }
            let wake = async {
                match next {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = wake => {}
                () = changed => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for SessionBook {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let mut book = self.lock();
        let Some(entry) = book.entries.get_mut(session_id) else {
            return Ok(None);
        };
        entry.last_used = Instant::now();
        entry.awake = true;
        Ok(Some(serde_json::from_str(&entry.state)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let state = serde_json::to_string(state)?.into_boxed_str();
        let mut book = self.lock();
        book.entries.insert(
            session_id.to_owned(),
            Entry {
                state,
                last_used: Instant::now(),
                busy: 0,
                awake: true,
            },
        );
        drop(book);
        self.changed.notify_one();
        Ok(())
    }

    /// A `DELETE`: the client ended its session.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let removed = self.lock().entries.remove(session_id).is_some();
        if removed {
            tracing::debug!(session = %session_id, "MCP session ended by its client");
            (self.on_end)(session_id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};

    use super::*;

    fn state() -> SessionState {
        SessionState::new(InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("t", "1"),
        ))
    }

    fn book(max_sessions: usize, idle: Duration) -> (Arc<SessionBook>, Arc<Mutex<Vec<String>>>) {
        let ended = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&ended);
        let hook: EndHook = Arc::new(move |id| log.lock().unwrap().push(id.to_owned()));
        let limits = SessionLimits {
            max_sessions,
            idle,
            ..SessionLimits::default()
        };
        (SessionBook::new(limits, hook), ended)
    }

    async fn open(book: &Arc<SessionBook>, id: &str) -> Option<String> {
        let admission = book.admit().expect("admitted");
        book.store(id, &state()).await.unwrap();
        admission.evicted.clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_book_evicts_the_least_recently_used_idle_session_and_refuses_when_all_are_busy() {
        let (book, ended) = book(2, Duration::from_mins(10));
        assert_eq!(open(&book, "a").await, None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(open(&book, "b").await, None);
        tokio::time::advance(Duration::from_secs(1)).await;
        // `a` is used again, so `b` is now the least recently used.
        drop(book.busy("a").unwrap());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(open(&book, "c").await.as_deref(), Some("b"));
        assert_eq!(*ended.lock().unwrap(), ["b"]);
        assert!(
            book.load("b").await.unwrap().is_none(),
            "an evicted session is forgotten"
        );

        let _a = book.busy("a").unwrap();
        let _c = book.busy("c").unwrap();
        let full = book.admit().err().expect("every session is busy");
        assert_eq!(full.max_sessions, 2);
        assert_eq!(book.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_hibernates_and_one_with_a_response_in_flight_does_not() {
        let (book, ended) = book(8, Duration::from_mins(10));
        open(&book, "idle").await;
        open(&book, "calling").await;
        let call = book.busy("calling").unwrap();
        let closed = Arc::new(Mutex::new(Vec::new()));
        let stop = tokio_util::sync::CancellationToken::new();
        let log = Arc::clone(&closed);
        let expiry = tokio::spawn(
            Arc::clone(&book).expire(async move |id| log.lock().unwrap().push(id), stop.clone()),
        );
        // Past HIBERNATE_AFTER: the idle session's worker stops, the session stays.
        tokio::time::sleep(HIBERNATE_AFTER * 3).await;
        assert_eq!(
            *closed.lock().unwrap(),
            ["idle"],
            "a call in flight keeps its worker"
        );
        assert!(ended.lock().unwrap().is_empty(), "hibernation ends nothing");
        assert_eq!(book.len(), 2, "a hibernating session stays in the book");
        // The call's answer is sent; its hibernation counts from then.
        drop(call);
        tokio::time::sleep(HIBERNATE_AFTER / 2).await;
        assert_eq!(closed.lock().unwrap().len(), 1);
        tokio::time::sleep(HIBERNATE_AFTER).await;
        assert_eq!(*closed.lock().unwrap(), ["idle", "calling"]);
        stop.cancel();
        expiry.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn an_admission_holds_its_slot_until_it_is_dropped() {
        let (book, _) = book(1, Duration::from_mins(10));
        let first = book.admit().unwrap();
        assert!(book.admit().is_err(), "the pending session holds the only slot");
        drop(first);
        assert!(book.admit().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_expire_busy_ones_do_not_and_delete_ends_a_session() {
        let (book, ended) = book(8, Duration::from_mins(1));
        open(&book, "idle").await;
        open(&book, "busy").await;
        open(&book, "deleted").await;
        let busy = book.busy("busy").unwrap();
        book.delete("deleted").await.unwrap();
        assert_eq!(*ended.lock().unwrap(), ["deleted"]);

        let closed = Arc::new(AtomicUsize::new(0));
        let stop = tokio_util::sync::CancellationToken::new();
        let counter = Arc::clone(&closed);
        let expiry = tokio::spawn(Arc::clone(&book).expire(
            async move |_id| {
                counter.fetch_add(1, Ordering::SeqCst);
            },
            stop.clone(),
        ));
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(closed.load(Ordering::SeqCst), 1);
        assert_eq!(*ended.lock().unwrap(), ["deleted", "idle"]);
        assert!(
            book.load("busy").await.unwrap().is_some(),
            "a busy session never expires"
        );

        // Its idle time starts when its last response is sent.
        drop(busy);
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(book.load("busy").await.unwrap().is_some());
        tokio::time::sleep(Duration::from_secs(62)).await;
        assert_eq!(*ended.lock().unwrap(), ["deleted", "idle", "busy"]);
        assert_eq!(book.len(), 0);
        stop.cancel();
        expiry.await.unwrap();
    }
}
