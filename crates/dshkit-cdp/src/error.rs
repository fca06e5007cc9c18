//! Errors of the CDP client.

use std::time::Duration;

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
    /// Whether the browser is gone and a relaunch is the remedy.
    pub fn is_disconnect(&self) -> bool {
        matches!(self, Self::Disconnected)
    }
}
