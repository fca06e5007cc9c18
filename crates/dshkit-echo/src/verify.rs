//! `dshkit echo verify`: send the recorded requests to the live server and compare
//! its answers with the recording, volatile values (timestamps, UUIDs, epochs)
//! normalised first.

use std::time::Duration;

use regex::Regex;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::cassette::{CassetteError, Record};
use crate::matcher::differing_paths;
use crate::redact::Redactor;
use crate::stdio::EchoError;

/// Longest wait for one answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How one recorded request fared against the live server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING-KEBAB-CASE")]
pub enum Outcome {
    Match,
    Changed,
    ErrorShapeChanged,
    Missing,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub ordinal: u64,
    pub method: String,
    pub outcome: Outcome,
    /// Where the answers differ (JSON paths), for CHANGED.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Replaces volatile values so that two honest answers compare equal.
pub struct Normaliser {
    timestamp: Regex,
    uuid: Regex,
}

impl Default for Normaliser {
    fn default() -> Self {
        Self {
            timestamp: Regex::new(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
                .expect("compiles"),
            uuid: Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
                .expect("compiles"),
        }
    }
}

impl Normaliser {
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                let replaced = self.timestamp.replace_all(s, "<timestamp>");
                let replaced = self.uuid.replace_all(&replaced, "<uuid>").into_owned();
                *s = replaced;
            }
            Value::Number(n) => {
                // Epoch seconds or milliseconds between 2001 and 2096.
                if let Some(v) = n.as_u64()
                    && ((1_000_000_000..4_000_000_000).contains(&v)
                        || (1_000_000_000_000..4_000_000_000_000).contains(&v))
                {
                    *value = json!("<epoch>");
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.value(v)),
            _ => {}
        }
    }
}

/// Compares a recorded answer with a live one (both already normalised).
pub fn compare(recorded: &Value, live: &Value) -> (Outcome, Vec<String>) {
    match (recorded.get("error"), live.get("error")) {
        (None, None) => {
            let paths = differing_paths(&recorded["result"], &live["result"]);
            if paths.is_empty() {
                (Outcome::Match, paths)
            } else {
                (Outcome::Changed, paths)
            }
        }
        (Some(a), Some(b)) if a["code"] == b["code"] => (Outcome::Match, Vec::new()),
        _ => (Outcome::ErrorShapeChanged, Vec::new()),
    }
}

/// The live server a verification talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// Started from this argv, spoken to over stdio.
    Stdio(Vec<String>),
    /// A Streamable HTTP endpoint (`http://…/mcp`).
    Http(String),
}

#[expect(clippy::large_enum_variant, reason = "one value per verification")]
enum Live {
    Stdio {
        child: crate::server_process::ServerProcess,
        stdin: tokio::process::ChildStdin,
        stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    },
    Http {
        client: reqwest::Client,
        url: String,
        session: Option<String>,
    },
}

impl Live {
    fn start(target: &Target) -> Result<Self, EchoError> {
        match target {
            Target::Http(url) => Ok(Self::Http {
                client: reqwest::Client::new(),
                url: url.clone(),
                session: None,
            }),
            Target::Stdio(argv) => {
                let (program, rest) = argv.split_first().ok_or(EchoError::NoLiveServer)?;
                let mut child = crate::server_process::ServerProcess::spawn(
                    tokio::process::Command::new(program)
                        .args(rest)
                        .stdin(std::process::Stdio::piped())
                        .stdout(std::process::Stdio::piped())
                        .stderr(std::process::Stdio::null()),
                )
                .map_err(|e| EchoError::Spawn {
                    argv: argv.join(" "),
                    error: e.to_string(),
                })?;
                let stdin = child.stdin.take().ok_or(EchoError::NoLiveServer)?;
                let stdout =
                    tokio::io::BufReader::new(child.stdout.take().ok_or(EchoError::NoLiveServer)?).lines();
                Ok(Self::Stdio { child, stdin, stdout })
            }
        }
    }

    /// Sends `message`; for a request, returns the answer with its id (or `None`).
    async fn send(&mut self, message: &Value) -> Option<Value> {
        let id = message.get("id").cloned();
        match self {
            Self::Stdio { stdin, stdout, .. } => {
                let mut frame = serde_json::to_string(message).expect("JSON");
                frame.push('\n');
                stdin.write_all(frame.as_bytes()).await.ok()?;
                let id = id?;
                tokio::time::timeout(ANSWER_TIMEOUT, async {
                    while let Ok(Some(text)) = stdout.next_line().await {
                        if let Ok(answer) = serde_json::from_str::<Value>(&text)
                            && answer.get("method").is_none()
                            && answer["id"] == id
                        {
                            return Some(answer);
                        }
                    }
                    None
                })
                .await
                .ok()
                .flatten()
            }
            Self::Http { client, url, session } => {
                let mut request = client
                    .post(url.as_str())
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream")
                    .timeout(ANSWER_TIMEOUT)
                    .body(message.to_string());
                if let Some(session) = session.as_deref() {
                    request = request.header("Mcp-Session-Id", session);
                }
                let response = request.send().await.ok()?;
                if let Some(value) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    *session = Some(value.to_owned());
                }
                let body = response.text().await.ok()?;
                let id = id?;
                serde_json::from_str::<Value>(&body)
                    .ok()
                    .filter(|v| v["id"] == id)
                    .or_else(|| {
                        body.lines()
                            .filter_map(|l| l.strip_prefix("data:"))
                            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                            .find(|v| v.get("method").is_none() && v["id"] == id)
                    })
            }
        }
    }

    async fn close(self) {
        if let Self::Stdio { mut child, stdin, .. } = self {
            drop(stdin);
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        }
    }
}

/// Sends every recorded request to the live server, in order, and compares the
/// answers.
pub async fn verify(
    records: impl IntoIterator<Item = Result<Record, CassetteError>>,
    target: &Target,
    redactor: &Redactor,
) -> Result<Vec<Check>, EchoError> {
    let mut live = Live::start(target)?;
    let normaliser = Normaliser::default();
    let mut checks = Vec::new();
    // Record by record: a cassette of any size is verified in bounded memory.
    for record in records {
        let Record::Interaction(interaction) = record? else {
            continue;
        };
        let method = interaction.request["method"].as_str().unwrap_or("?").to_owned();
        let mut request = interaction.request.clone();
        request["id"] = json!(format!("dshkit-verify-{}", interaction.ordinal));
        let answer = live.send(&request).await;
        let check = match (answer, interaction.responses.last()) {
            (Some(mut now), Some(then)) => {
                let mut then = then.clone();
                redactor.value(&mut now);
                normaliser.value(&mut now);
                normaliser.value(&mut then);
                let (outcome, paths) = compare(&then, &now);
                Check {
                    ordinal: interaction.ordinal,
                    method,
                    outcome,
                    paths,
                    detail: None,
                }
            }
            (None, _) => Check {
                ordinal: interaction.ordinal,
                method,
                outcome: Outcome::Missing,
                paths: Vec::new(),
                detail: Some(format!("no answer within {} s", ANSWER_TIMEOUT.as_secs())),
            },
            (Some(_), None) => Check {
                ordinal: interaction.ordinal,
                method,
                outcome: Outcome::Changed,
                paths: Vec::new(),
                detail: Some("the recording holds no answer to compare with".into()),
            },
        };
        // The handshake is complete once initialize is answered.
        if interaction.request["method"] == "initialize" {
            live.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
        }
        checks.push(check);
    }
    live.close().await;
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_values_are_normalised_and_changes_classified() {
        let normaliser = Normaliser::default();
        let mut a = json!({"result": {"at": "2026-11-30T15:00:00Z", "id": "0f8fad5b-d9cb-469f-a165-70867728950e", "t": 1_796_050_532, "n": 3}});
        let mut b = json!({"result": {"at": "2027-01-01T00:00:01.5+01:00", "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "t": 1_796_099_999, "n": 3}});
        normaliser.value(&mut a);
        normaliser.value(&mut b);
        assert_eq!(compare(&a, &b).0, Outcome::Match);
        let c = json!({"result": {"at": "<timestamp>", "id": "<uuid>", "t": "<epoch>", "n": 4}});
        assert_eq!(compare(&a, &c), (Outcome::Changed, vec!["n".to_owned()]));
        let error = json!({"error": {"code": -32602, "message": "bad"}});
        assert_eq!(compare(&a, &error).0, Outcome::ErrorShapeChanged);
        assert_eq!(
            compare(
                &error,
                &json!({"error": {"code": -32602, "message": "other words"}})
            )
            .0,
            Outcome::Match
        );
    }
}
