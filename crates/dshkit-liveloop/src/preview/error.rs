//! Errors of preview sessions, each with a stable code for tools and scripts.

use super::policy::{BlockReason, OriginError};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreviewError {
    #[error(transparent)]
    BadUrl(#[from] OriginError),
    #[error(
        "element ref `{reference}` is from snapshot generation {given}, but the page is at generation {current}; take a new snapshot and use its refs"
    )]
    StaleElementRef {
        reference: String,
        given: u64,
        current: u64,
    },
    #[error(
        "element ref `{0}` is no longer in the page (it changed since the snapshot); take a new snapshot"
    )]
    DetachedElementRef(String),
    #[error("`{0}` is not an element ref; refs look like r3-12 and come from a snapshot")]
    BadRef(String),
    #[error("{count} elements have role `{role}` and name {name:?} ({refs}); use one of their refs")]
    AmbiguousElement {
        role: String,
        name: String,
        count: usize,
        refs: String,
    },
    #[error("no element with role `{role}` and name {name:?} in the last snapshot")]
    ElementNotFound { role: String, name: String },
    #[error("no preview session `{0}`; list the open ones with the list operation")]
    UnknownSession(String),
    #[error("preview session `{0}` belongs to another client")]
    NotOwner(String),
    #[error("{0} preview sessions are open, the configured limit; close one first")]
    SessionLimit(usize),
    #[error(
        "the browser exited or disconnected; its sessions were closed. Open a new preview to relaunch it"
    )]
    BrowserGone,
    #[error(
        "navigation to {url} is blocked by the preview's network policy at {}: {} (rule {}). Fix: {}",
        hop.as_deref().map_or_else(|| "the first request".to_owned(), |hop| format!("the redirect hop to {hop}")),
        reason.describe(),
        reason.rule(),
        reason.fix()
    )]
    NavigationBlocked {
        url: String,
        /// The redirect hop that was blocked, when it was not the first request.
        hop: Option<String>,
        reason: BlockReason,
    },
    #[error("navigation to {url} failed: {error}")]
    NavigationFailed { url: String, error: String },
    #[error("{what} did not happen within {ms} ms")]
    Timeout { what: String, ms: u128 },
    #[error(
        "the server sent no response to the navigation to {url} within {ms} ms, and the navigation was stopped; a dev server that is stuck or still compiling says so in its log"
    )]
    NoResponse { url: String, ms: u128 },
    #[error("{0}")]
    Interaction(String),
    #[error(transparent)]
    Cdp(#[from] dshkit_cdp::CdpError),
}

impl PreviewError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadUrl(_) => "BAD_URL",
            Self::StaleElementRef { .. } | Self::DetachedElementRef(_) => "STALE_ELEMENT_REF",
            Self::BadRef(_) => "BAD_ELEMENT_REF",
            Self::AmbiguousElement { .. } => "AMBIGUOUS_ELEMENT",
            Self::ElementNotFound { .. } => "ELEMENT_NOT_FOUND",
            Self::UnknownSession(_) => "UNKNOWN_SESSION",
            Self::NotOwner(_) => "NOT_OWNER",
            Self::SessionLimit(_) => "SESSION_LIMIT",
            Self::BrowserGone => "BROWSER_GONE",
            Self::NavigationBlocked { .. } => "NAVIGATION_BLOCKED",
            Self::NavigationFailed { .. } => "NAVIGATION_FAILED",
            Self::Timeout { .. } | Self::NoResponse { .. } => "TIMEOUT",
            Self::Interaction(_) => "INTERACTION_FAILED",
            Self::Cdp(e) if e.is_disconnect() => "BROWSER_GONE",
            Self::Cdp(_) => "BROWSER_ERROR",
        }
    }
}
