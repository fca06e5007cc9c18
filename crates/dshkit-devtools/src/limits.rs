//! Every bound of the debug core, in one place.

use std::time::Duration;

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
/// Catalog cursors a debug session holds at once.
pub const MAX_CURSORS: usize = 8;
