//! `dshkit devtools` through the DevTools endpoint: a transient debug session
//! whose `cordis_*` tools are called over MCP (a [`Route`]), so each command's
//! workflow ([`crate::show`], [`crate::profile`]) is the socket route's.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::agent::{ATTACH, DETACH, LIST, WAIT};
use crate::client::{ClientError, McpClient, TokenSource, on_session};
use crate::endpoint::URL_FILE;
use crate::limits::MAX_WAIT;
use crate::route::{Route, object};
use crate::show::{self, CommandFailed, Shown, Via};
use crate::text;

/// The codes of a target that went away (a watch ends on them).
const GONE: [&str; 3] = ["TARGET_REPLACED", "HOST_DISPOSED", "TARGET_DISPOSED"];

/// Where the CLI finds the endpoint: named (a flag or the environment), or
/// found in the devtools directory's URL file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Named(String),
    FromFile(String),
}

/// The endpoint `named` (a flag or the environment), else the URL the running
/// endpoint wrote into `registry`, else none (the CLI then attaches to the
/// collector's socket itself).
pub fn find_endpoint(registry: &Path, named: Option<String>) -> Option<Found> {
    if let Some(url) = named.filter(|u| !u.trim().is_empty()) {
        return Some(Found::Named(url.trim().to_owned()));
    }
    let url = std::fs::read_to_string(registry.join(URL_FILE)).ok()?;
    Some(Found::FromFile(url.trim().to_owned()))
}

/// A transient debug session over the endpoint, detached by [`Remote::end`].
pub struct Remote {
    client: McpClient,
    pub session: String,
    pub target: String,
}

impl Remote {
    /// Opens an MCP session with the endpoint and attaches a debug session on
    /// `target` (the only live one when `None`).
    pub async fn attach(url: &str, token: &TokenSource, target: Option<&str>) -> Result<Self, ClientError> {
        let mut client = McpClient::connect(url, token).await?;
        let arguments = target.map_or_else(|| json!({}), |t| json!({"targetId": t}));
        match client.call(ATTACH, arguments).await {
            Ok(attached) => Ok(Self {
                session: attached["debugSessionId"].as_str().unwrap_or_default().to_owned(),
                target: attached["targetId"].as_str().unwrap_or_default().to_owned(),
                client,
            }),
            Err(error) => {
                client.close().await;
                Err(error)
            }
        }
    }

    /// Detaches the debug session and ends the MCP session (which detaches
    /// whatever the first could not).
    pub async fn end(mut self) {
        let _ = self
            .client
            .call(DETACH, json!({"debugSessionId": self.session}))
            .await;
        self.client.close().await;
    }

    /// The journal as it grows, for `duration` (until stopped when `None`):
    /// each record, gap and the target's end told to `seen` as its JSON line
    /// and its text, as `dshkit devtools watch` prints them.
    pub async fn watch(
        &mut self,
        event: Option<&str>,
        duration: Option<Duration>,
        mut seen: impl FnMut(&Value, &str),
    ) -> Result<(), ClientError> {
        let until = duration.map(|d| tokio::time::Instant::now() + d);
        loop {
            let left = until.map_or(MAX_WAIT, |u| {
                u.saturating_duration_since(tokio::time::Instant::now())
            });
            if left.is_zero() {
                return Ok(());
            }
            let mut rest = object(json!({"timeoutMs": left.min(MAX_WAIT).as_millis()}));
            if let Some(event) = event {
                rest.insert("event".to_owned(), json!(event));
            }
            let waited = match self.call(WAIT, rest).await {
                Ok(waited) => waited,
                Err(error) if error.tool_code().is_some_and(|c| GONE.contains(&c)) => {
                    let gone = json!({"kind": "target-gone", "code": error.tool_code(), "message": error.to_string()});
                    seen(&gone, &format!("{error}\n"));
                    return Ok(());
                }
                Err(error) => return Err(error),
            };
            if waited["outcome"] == "gap" {
                let cursor = waited["nextAfterSequence"].as_u64().unwrap_or_default() + 1;
                seen(&json!({"kind": "gap", "cursor": cursor}), &text::gap_line(cursor));
            }
            for record in waited["records"].as_array().into_iter().flatten() {
                seen(record, &text::record_value_line(record));
            }
        }
    }
}

impl Route for Remote {
    type Error = ClientError;

    async fn call(&mut self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ClientError> {
        self.client.call(tool, on_session(&self.session, arguments)).await
    }
}

impl From<CommandFailed> for ClientError {
    fn from(failed: CommandFailed) -> Self {
        Self::Tool {
            code: None,
            message: failed.0,
        }
    }
}

/// `cordis_list_debug_targets` on the endpoint at `url`, shown as `dshkit devtools targets` shows it.
pub async fn targets(url: &str, token: &TokenSource) -> Result<Shown, ClientError> {
    let mut client = McpClient::connect(url, token).await?;
    let listed = client.call(LIST, json!({})).await;
    client.close().await;
    let listed = listed?;
    let targets = listed["targets"].as_array().cloned().unwrap_or_default();
    Ok(show::targets(&Via::Endpoint(url.to_owned()), &targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_endpoint_wins_over_the_url_file_and_without_either_there_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find_endpoint(dir.path(), None), None);
        std::fs::write(dir.path().join(URL_FILE), "http://127.0.0.1:9/mcp\n").unwrap();
        assert_eq!(
            find_endpoint(dir.path(), None),
            Some(Found::FromFile("http://127.0.0.1:9/mcp".into()))
        );
        assert_eq!(
            find_endpoint(dir.path(), Some("http://[::1]:8/mcp".into())),
            Some(Found::Named("http://[::1]:8/mcp".into()))
        );
    }
}
