//! `dshkit devtools` through the DevTools endpoint: each command as calls of
//! the `cordis_*` tools on a transient debug session, shown the way the
//! commands on the collector's socket show them ([`crate::text`]).

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::agent::{
    ATTACH, DETACH, EVENT, EXPERIMENT_START, EXPERIMENT_STOP, FIBER, LIST, SNAPSHOT, TRACES, WAIT,
};
use crate::client::{ClientError, McpClient, TokenSource, on_session};
use crate::endpoint::URL_FILE;
use crate::limits::{MAX_LEASE, MAX_PAGE, MAX_WAIT};
use crate::text::{self, Profile, ProfileError};
use crate::topology::{Event, Fiber, Listener};

/// What a command shows: its text, and its JSON (`--json`).
pub type Shown = (String, Value);

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

/// `cordis_list_debug_targets`, shown as `dshkit devtools targets` shows it.
pub async fn targets(url: &str, token: &TokenSource) -> Result<Shown, ClientError> {
    let mut client = McpClient::connect(url, token).await?;
    let listed = client.call(LIST, json!({})).await;
    client.close().await;
    let listed = listed?;
    let targets = listed["targets"].as_array().cloned().unwrap_or_default();
    let text = if targets.is_empty() {
        format!(
            "no debug targets behind the DevTools endpoint {url}: no live DSH runs the dshkit plugin with the collector\n"
        )
    } else {
        targets
            .iter()
            .map(|t| {
                text::target_line(
                    t["id"].as_str().unwrap_or_default(),
                    t["label"].as_str().unwrap_or_default(),
                    &t["pid"],
                    t["problem"].as_str(),
                )
            })
            .collect()
    };
    Ok((text, json!({"endpoint": url, "targets": targets})))
}

impl Remote {
    /// Opens an MCP session with the endpoint and attaches a debug session on
    /// `target` (the only live one when `None`).
    pub async fn attach(url: &str, token: &TokenSource, target: Option<&str>) -> Result<Self, ClientError> {
        let mut client = McpClient::connect(url, token).await?;
        let arguments = target.map_or_else(|| json!({}), |t| json!({"target": t}));
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

    async fn call(&mut self, tool: &str, rest: Map<String, Value>) -> Result<Value, ClientError> {
        self.client.call(tool, on_session(&self.session, rest)).await
    }

    /// Every item of the catalog at `key` of `tool`'s answer, page by page.
    async fn all_pages(
        &mut self,
        tool: &str,
        rest: &Map<String, Value>,
        key: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let mut items = Vec::new();
        let mut arguments = rest.clone();
        loop {
            let page = self.call(tool, arguments.clone()).await?;
            let catalog = &page[key];
            items.extend(catalog["items"].as_array().cloned().unwrap_or_default());
            match catalog["nextCursor"].as_str() {
                Some(cursor) => {
                    arguments.insert("cursor".to_owned(), json!(cursor));
                }
                None => return Ok(items),
            }
        }
    }

    /// The counts and every candidate (`dshkit devtools snapshot`).
    pub async fn snapshot(&mut self) -> Result<Shown, ClientError> {
        let summary = self
            .call(SNAPSHOT, object(json!({"sections": ["summary"]})))
            .await?["summary"]
            .clone();
        let candidates = self
            .all_pages(
                SNAPSHOT,
                &object(json!({"sections": ["candidates"]})),
                "candidates",
            )
            .await?;
        let count =
            |key: &str| usize::try_from(summary[key].as_u64().unwrap_or_default()).unwrap_or(usize::MAX);
        let text = text::counts_text(
            &self.target,
            [
                count("fibers"),
                count("events"),
                count("services"),
                count("entries"),
            ],
            &candidates,
        );
        Ok((
            text,
            json!({"target": self.target, "summary": summary, "candidates": candidates}),
        ))
    }

    /// One event's listeners in dispatch order (`dshkit devtools event`).
    pub async fn event(&mut self, name: &str) -> Result<Shown, ClientError> {
        let listeners = self
            .all_pages(EVENT, &object(json!({"name": name})), "listeners")
            .await?;
        let event = Event {
            name: name.to_owned(),
            listeners: parse::<Listener>(self.client.url(), listeners)?,
        };
        Ok((text::event_text(&event), json!(event)))
    }

    /// Fibers by uid or name (`dshkit devtools fiber`).
    pub async fn fibers(&mut self, uid: Option<i64>, name: Option<&str>) -> Result<Shown, ClientError> {
        let mut rest = Map::new();
        if let Some(uid) = uid {
            rest.insert("uid".to_owned(), json!(uid));
        }
        if let Some(name) = name {
            rest.insert("name".to_owned(), json!(name));
        }
        let fibers = self.all_pages(FIBER, &rest, "fibers").await?;
        let fibers = parse::<Fiber>(self.client.url(), fibers)?;
        Ok((text::fibers_text(&fibers), json!(fibers)))
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

    /// A finite profile of `event` for `ttl` (`dshkit devtools profile`), as
    /// [`text::profile`] holds it on the collector's socket.
    pub async fn profile(
        &mut self,
        event: &str,
        ttl: Duration,
        started: impl FnOnce(&str),
    ) -> Result<Profile, ClientError> {
        if ttl > MAX_LEASE {
            return Err(ClientError::Tool {
                code: None,
                message: ProfileError::TooLong.to_string(),
            });
        }
        let lease_for = (ttl + Duration::from_secs(2)).min(MAX_LEASE);
        let start = object(json!({"event": event, "ttlMs": lease_for.as_millis(), "confirm": true}));
        let lease = self.call(EXPERIMENT_START, start).await?["lease"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        started(&lease);
        let began = tokio::time::Instant::now();
        // The window itself: the profile holds its lease this long.
        tokio::time::sleep(ttl).await;
        let held = began.elapsed();
        let stopped = self
            .call(EXPERIMENT_STOP, object(json!({"lease": lease})))
            .await?;
        let mut traces = Vec::new();
        let mut cursor = 0;
        loop {
            let page = self
                .call(
                    TRACES,
                    object(json!({"lease": lease, "cursor": cursor, "limit": MAX_PAGE})),
                )
                .await?;
            traces.extend(page["traces"].as_array().cloned().unwrap_or_default());
            match page["cursor"].as_u64() {
                Some(next) => cursor = next,
                None => break,
            }
        }
        Ok(Profile {
            event: event.to_owned(),
            lease,
            held,
            stopped,
            traces,
        })
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(url: &str, items: Vec<Value>) -> Result<Vec<T>, ClientError> {
    items
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .map_err(|e| ClientError::Protocol {
            url: url.to_owned(),
            why: e.to_string(),
        })
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
