//! The debug core's errors, each with a stable code and what to do next.

use dshkit_os::error::ErrorClass;

use crate::limits::{MAX_CURSORS, MAX_SESSIONS, MAX_WAITERS};
use crate::link::{COLLECTOR_PROTOCOL, LinkError};

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
    #[error(
        "debug session {0} was attached by another MCP client, and only that client may use it: attach a session of your own with cordis_attach_debug_session"
    )]
    NotOwner(String),
    #[error(
        "no cursor {0} in this debug session: a cursor belongs to the session that got it, is used once, and a newer first page of the same catalog replaces it; read the catalog again without a cursor"
    )]
    UnknownCursor(String),
    #[error(
        "{MAX_CURSORS} catalog cursors of this debug session are open: page one of them to its end (each use consumes its cursor) or detach, then ask again"
    )]
    TooManyCursors,
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
            Self::NotOwner(_) => "NOT_OWNER",
            Self::UnknownCursor(_) => "UNKNOWN_CURSOR",
            Self::TooManyCursors => "CURSOR_LIMIT",
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
            | Self::NotOwner(_)
            | Self::UnknownCursor(_)
            | Self::TooManyCursors
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
    pub(crate) fn protocol_mismatch(target: &str, collector: Option<u64>) -> Option<Self> {
        (collector != Some(COLLECTOR_PROTOCOL)).then(|| Self::ProtocolMismatch {
            target: target.to_owned(),
            collector,
            core: COLLECTOR_PROTOCOL,
        })
    }
}

dshkit_os::classified!(DebugError);

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
            (DebugError::NotOwner("s1".into()), "NOT_OWNER", Refused, false),
            (
                DebugError::UnknownCursor("c1".into()),
                "UNKNOWN_CURSOR",
                Refused,
                false,
            ),
            (DebugError::TooManyCursors, "CURSOR_LIMIT", Refused, false),
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
