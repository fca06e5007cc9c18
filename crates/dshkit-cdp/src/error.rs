//! Errors of the CDP client.

use std::time::Duration;

use dshkit_os::error::ErrorClass;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CdpError {
    #[error("no Chromium found: {0}")]
    NoBrowser(String),
    #[error("failed to start Chromium at {path}")]
    Spawn {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "Chromium exited before it was ready ({status}{}); its last output:\n{output}",
        if *starts > 1 { format!(", on start {starts} after {} crashed", starts - 1) } else { String::new() }
    )]
    EarlyExit {
        /// How it ended: an exit code or a signal.
        status: String,
        /// Whether it crashed (a signal; an NTSTATUS error on Windows), which a
        /// fresh start may not repeat.
        crashed: bool,
        /// How many starts were made, the crashed ones retried included.
        starts: u32,
        output: String,
    },
    #[error("Chromium did not print its DevTools endpoint within {0:?}")]
    LaunchTimeout(Duration),
    #[error("failed to connect to the DevTools endpoint {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("the browser endpoint {endpoint} refused the connection: HTTP {status}: {reason}")]
    Refused {
        /// The endpoint as it may be shown ([`crate::Endpoint::shown`]).
        endpoint: String,
        status: u16,
        /// The engine's own words (its answer's body), secrets removed.
        reason: String,
    },
    #[error(
        "the browser endpoint {endpoint} did not admit the connection within {waited:?} (a pool holds a connection while its queue waits for a free browser); try again later, or give the pool more capacity"
    )]
    AdmitTimeout { endpoint: String, waited: Duration },
    #[error("the browser connection is closed (the browser exited or the endpoint went away)")]
    Disconnected,
    #[error("{method} got no response within {timeout:?}")]
    Timeout { method: String, timeout: Duration },
    #[error("{method} failed: {message} (code {code})")]
    Protocol {
        method: String,
        code: i64,
        message: String,
    },
    #[error("unexpected reply to {method}: {detail}")]
    Unexpected { method: String, detail: String },
    #[error("failed to create a temporary browser profile")]
    Profile(#[source] std::io::Error),
}

impl CdpError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoBrowser(_) => "NO_BROWSER",
            Self::Spawn { .. } => "BROWSER_SPAWN_FAILED",
            Self::EarlyExit { .. } => "BROWSER_EXITED",
            Self::LaunchTimeout(_) => "BROWSER_LAUNCH_TIMEOUT",
            Self::Connect { .. } => "BROWSER_CONNECT_FAILED",
            Self::Refused { .. } => "BROWSER_POOL_REFUSED",
            Self::AdmitTimeout { .. } => "BROWSER_POOL_TIMEOUT",
            Self::Disconnected => "BROWSER_GONE",
            Self::Timeout { .. } => "CDP_TIMEOUT",
            Self::Protocol { .. } => "CDP_PROTOCOL_ERROR",
            Self::Unexpected { .. } => "CDP_UNEXPECTED_REPLY",
            Self::Profile(_) => "BROWSER_PROFILE_FAILED",
        }
    }

    /// No browser installed, or an endpoint that refuses our credentials (401,
    /// 403), is refused (the setup lacks it); everything else failed while the
    /// browser ran, was started or was waited for.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::NoBrowser(_)
            | Self::Refused {
                status: 401 | 403, ..
            } => ErrorClass::Refused,
            _ => ErrorClass::Runtime,
        }
    }

    /// Whether an endpoint (a pool) did not admit the connection: it refused it
    /// with an HTTP answer, or held it past the admission deadline. The error
    /// carries the engine's reason.
    pub fn is_not_admitted(&self) -> bool {
        matches!(self, Self::Refused { .. } | Self::AdmitTimeout { .. })
    }

    /// Whether the browser is gone and a relaunch is the remedy.
    pub fn is_disconnect(&self) -> bool {
        matches!(self, Self::Disconnected)
    }

    /// Whether a fresh start may not repeat it: the browser disconnected, or
    /// crashed before it was ready.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Disconnected | Self::EarlyExit { crashed: true, .. })
    }
}

dshkit_os::classified!(CdpError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_class_and_retryability() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let early_exit = |crashed| CdpError::EarlyExit {
            status: "signal 11".into(),
            crashed,
            starts: 1,
            output: String::new(),
        };
        let table = [
            (
                CdpError::NoBrowser("none".into()),
                "NO_BROWSER",
                ErrorClass::Refused,
                false,
            ),
            (
                CdpError::Spawn {
                    path: "/chrome".into(),
                    source: io(),
                },
                "BROWSER_SPAWN_FAILED",
                ErrorClass::Runtime,
                false,
            ),
            (early_exit(true), "BROWSER_EXITED", ErrorClass::Runtime, true),
            (early_exit(false), "BROWSER_EXITED", ErrorClass::Runtime, false),
            (
                CdpError::LaunchTimeout(Duration::from_secs(1)),
                "BROWSER_LAUNCH_TIMEOUT",
                ErrorClass::Runtime,
                false,
            ),
            (
                CdpError::Connect {
                    url: "ws://x".into(),
                    reason: "refused".into(),
                },
                "BROWSER_CONNECT_FAILED",
                ErrorClass::Runtime,
                false,
            ),
            (CdpError::Disconnected, "BROWSER_GONE", ErrorClass::Runtime, true),
            (
                CdpError::Timeout {
                    method: "Page.navigate".into(),
                    timeout: Duration::from_secs(1),
                },
                "CDP_TIMEOUT",
                ErrorClass::Runtime,
                false,
            ),
            (
                CdpError::Protocol {
                    method: "Page.navigate".into(),
                    code: -32000,
                    message: "no".into(),
                },
                "CDP_PROTOCOL_ERROR",
                ErrorClass::Runtime,
                false,
            ),
            (
                CdpError::Unexpected {
                    method: "Target.attachToTarget".into(),
                    detail: "no sessionId".into(),
                },
                "CDP_UNEXPECTED_REPLY",
                ErrorClass::Runtime,
                false,
            ),
            (
                CdpError::Profile(io()),
                "BROWSER_PROFILE_FAILED",
                ErrorClass::Runtime,
                false,
            ),
        ];
        for (error, code, class, retryable) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.is_retryable(), retryable, "{error}");
            assert_eq!(error.is_disconnect(), code == "BROWSER_GONE", "{error}");
            assert!(!error.is_not_admitted(), "{error}");
        }
    }

    #[test]
    fn a_pool_that_does_not_admit_has_its_codes_and_a_wrong_token_is_refused() {
        let refused = |status| CdpError::Refused {
            endpoint: "ws://x".into(),
            status,
            reason: "Too many requests".into(),
        };
        let table = [
            (refused(429), "BROWSER_POOL_REFUSED", ErrorClass::Runtime),
            (refused(503), "BROWSER_POOL_REFUSED", ErrorClass::Runtime),
            (refused(401), "BROWSER_POOL_REFUSED", ErrorClass::Refused),
            (
                CdpError::AdmitTimeout {
                    endpoint: "ws://x".into(),
                    waited: Duration::from_secs(1),
                },
                "BROWSER_POOL_TIMEOUT",
                ErrorClass::Runtime,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert!(error.is_not_admitted(), "{error}");
            assert!(!error.is_retryable() && !error.is_disconnect(), "{error}");
        }
    }
}
