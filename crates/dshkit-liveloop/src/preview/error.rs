//! Errors of preview sessions, each with a stable code for tools and scripts.

use dshkit_os::error::ErrorClass;

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
            // A pool's refusal or full queue keeps its own code: its reason is the news.
            Self::Cdp(e) if e.is_not_admitted() => e.code(),
            Self::Cdp(_) => "BROWSER_ERROR",
        }
    }

    /// What the caller asked for that a preview will not do (a URL, a ref, a
    /// session, a limit, the network policy) is refused; what failed in the
    /// browser or the page is a runtime failure, except a browser that is not
    /// installed ([`dshkit_cdp::CdpError::class`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::BadUrl(e) => e.class(),
            Self::StaleElementRef { .. }
            | Self::DetachedElementRef(_)
            | Self::BadRef(_)
            | Self::AmbiguousElement { .. }
            | Self::ElementNotFound { .. }
            | Self::UnknownSession(_)
            | Self::NotOwner(_)
            | Self::SessionLimit(_)
            | Self::NavigationBlocked { .. } => ErrorClass::Refused,
            Self::BrowserGone
            | Self::NavigationFailed { .. }
            | Self::Timeout { .. }
            | Self::NoResponse { .. }
            | Self::Interaction(_) => ErrorClass::Runtime,
            Self::Cdp(e) => e.class(),
        }
    }

    /// Whether the browser exited or disconnected (`BROWSER_GONE`): opening a
    /// new preview relaunches it.
    pub fn is_browser_gone(&self) -> bool {
        match self {
            Self::BrowserGone => true,
            Self::Cdp(e) => e.is_disconnect(),
            _ => false,
        }
    }

    /// Whether the browser itself failed (`BROWSER_GONE` or `BROWSER_ERROR`)
    /// rather than the page or the request: no evidence can come from it.
    pub fn is_browser_failure(&self) -> bool {
        matches!(self, Self::BrowserGone | Self::Cdp(_))
    }

    /// Whether the same request may succeed when made again: only when the
    /// browser is gone, since the next open relaunches it.
    pub fn is_retryable(&self) -> bool {
        self.is_browser_gone()
    }
}

dshkit_os::classified!(PreviewError);

#[cfg(test)]
mod tests {
    use super::*;
    use dshkit_cdp::CdpError;

    #[test]
    #[expect(clippy::too_many_lines, reason = "one row per variant: the table is the test")]
    fn each_error_has_its_code_class_and_browser_facts() {
        use ErrorClass::{Refused, Runtime};
        let role = || ("button".to_owned(), "Save".to_owned());
        // (error, code, class, browser gone, browser failure)
        let table = [
            (
                PreviewError::BadUrl(OriginError::Credentials),
                "BAD_URL",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::StaleElementRef {
                    reference: "r1-2".into(),
                    given: 1,
                    current: 2,
                },
                "STALE_ELEMENT_REF",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::DetachedElementRef("r1-2".into()),
                "STALE_ELEMENT_REF",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::BadRef("x".into()),
                "BAD_ELEMENT_REF",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::AmbiguousElement {
                    role: role().0,
                    name: role().1,
                    count: 2,
                    refs: "r1-2, r1-3".into(),
                },
                "AMBIGUOUS_ELEMENT",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::ElementNotFound {
                    role: role().0,
                    name: role().1,
                },
                "ELEMENT_NOT_FOUND",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::UnknownSession("p1".into()),
                "UNKNOWN_SESSION",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::NotOwner("p1".into()),
                "NOT_OWNER",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::SessionLimit(4),
                "SESSION_LIMIT",
                Refused,
                false,
                false,
            ),
            (PreviewError::BrowserGone, "BROWSER_GONE", Runtime, true, true),
            (
                PreviewError::NavigationBlocked {
                    url: "http://example.com/".into(),
                    hop: None,
                    reason: BlockReason::Credentials,
                },
                "NAVIGATION_BLOCKED",
                Refused,
                false,
                false,
            ),
            (
                PreviewError::NavigationFailed {
                    url: "http://127.0.0.1:1/".into(),
                    error: "net::ERR_CONNECTION_REFUSED".into(),
                },
                "NAVIGATION_FAILED",
                Runtime,
                false,
                false,
            ),
            (
                PreviewError::Timeout {
                    what: "the click".into(),
                    ms: 10,
                },
                "TIMEOUT",
                Runtime,
                false,
                false,
            ),
            (
                PreviewError::NoResponse {
                    url: "http://127.0.0.1:1/".into(),
                    ms: 10,
                },
                "TIMEOUT",
                Runtime,
                false,
                false,
            ),
            (
                PreviewError::Interaction("no".into()),
                "INTERACTION_FAILED",
                Runtime,
                false,
                false,
            ),
            (
                PreviewError::Cdp(CdpError::Disconnected),
                "BROWSER_GONE",
                Runtime,
                true,
                true,
            ),
            (
                PreviewError::Cdp(CdpError::Refused {
                    endpoint: "ws://127.0.0.1:3000/".into(),
                    status: 429,
                    reason: "Too many requests".into(),
                }),
                "BROWSER_POOL_REFUSED",
                Runtime,
                false,
                true,
            ),
            (
                PreviewError::Cdp(CdpError::AdmitTimeout {
                    endpoint: "ws://127.0.0.1:3000/".into(),
                    waited: std::time::Duration::from_mins(1),
                }),
                "BROWSER_POOL_TIMEOUT",
                Runtime,
                false,
                true,
            ),
            (
                PreviewError::Cdp(CdpError::NoBrowser("none".into())),
                "BROWSER_ERROR",
                Refused,
                false,
                true,
            ),
            (
                PreviewError::Cdp(CdpError::Unexpected {
                    method: "Page.navigate".into(),
                    detail: "x".into(),
                }),
                "BROWSER_ERROR",
                Runtime,
                false,
                true,
            ),
        ];
        for (error, code, class, gone, browser) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.is_browser_gone(), gone, "{error}");
            assert_eq!(error.is_retryable(), gone, "{error}");
            assert_eq!(error.is_browser_failure(), browser, "{error}");
        }
    }

    #[test]
    fn every_refused_url_is_a_bad_url() {
        for error in [
            OriginError::Invalid("x".into()),
            OriginError::Scheme("file".into()),
            OriginError::Credentials,
            OriginError::NotLoopback("example.com".into()),
        ] {
            assert_eq!(error.code(), "BAD_URL", "{error}");
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
    }
}
