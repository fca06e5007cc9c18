//! `dshkit echo verify`: send the recorded requests to the live server and compare
//! its answers with the recording, volatile values (timestamps, UUIDs, epochs)
//! normalised first (see [`crate::volatile`]) and the members the caller
//! expects to change left out.
//!
//! A cassette that holds path tokens (format 2) is verified from anywhere: the
//! requests go out with this machine's paths where the tokens stand, and the
//! live answers are normalised to the tokens before they are compared.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::cassette::{Record, Records};
use crate::error::{EchoError, PointerError};
use crate::json_diff::differing_pointers;
use crate::redact::Redactor;
use crate::upstream::{Client, SendError, Upstream};
pub use crate::volatile::Normaliser;
use http::{HeaderName, HeaderValue, header};

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
    /// The tool a `tools/call` called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub outcome: Outcome,
    /// Where the answers differ, for CHANGED: JSON pointers into the answer
    /// (`/result/content/0/text`), as `--ignore` takes them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A member of an answer that `--ignore` leaves out of the comparison: a JSON
/// pointer (RFC 6901) into the JSON-RPC answer, e.g. `/result/content/0/text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    pub fn parse(text: &str) -> Result<Self, PointerError> {
        if text.is_empty() {
            return Err(PointerError::WholeAnswer);
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(PointerError::NoLeadingSlash(text.to_owned()));
        };
        let tokens = rest
            .split('/')
            .map(|token| {
                let mut out = String::with_capacity(token.len());
                let mut chars = token.chars();
                while let Some(c) = chars.next() {
                    if c != '~' {
                        out.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(PointerError::BadEscape(text.to_owned())),
                    }
                }
                Ok(out)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: text.to_owned(),
            tokens,
        })
    }

    /// Leaves the member it names out of `answer`: a member of an object is
    /// removed, an item of an array becomes `null`; nothing when `answer`
    /// holds no such member.
    pub fn leave_out(&self, answer: &mut Value) {
        let Some((last, parents)) = self.tokens.split_last() else {
            return;
        };
        let mut at = answer;
        for token in parents {
            let next = match at {
                Value::Object(map) => map.get_mut(token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
                _ => None,
            };
            let Some(next) = next else { return };
            at = next;
        }
        match at {
            Value::Object(map) => {
                map.remove(last);
            }
            Value::Array(items) => {
                if let Some(item) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    *item = Value::Null;
                }
            }
            _ => {}
        }
    }
}

impl std::fmt::Display for Pointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a verification leaves out and how it reads the answers.
#[derive(Debug)]
pub struct VerifyOptions {
    /// Applied to each live answer as the recording was redacted; it takes
    /// the roots the cassette's header names.
    pub redactor: Redactor,
    /// Members of each answer left out of the comparison.
    pub ignore: Vec<Pointer>,
}

/// Compares a recorded answer with a live one (both already normalised).
pub fn compare(recorded: &Value, live: &Value) -> (Outcome, Vec<String>) {
    match (recorded.get("error"), live.get("error")) {
        (None, None) => {
            let paths = differing_pointers(&recorded["result"], &live["result"], "/result");
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
    /// A Streamable HTTP endpoint (`http://…/mcp` or `https://…/mcp`).
    Http(Upstream),
}

/// What the live server did with a request.
#[derive(Debug)]
enum Heard {
    /// Its answer.
    Answer(Value),
    /// No answer, and why: the wait ran out, the server closed its side, or
    /// it answered something that is not the answer (an HTTP error status).
    Nothing(String),
}

enum Live {
    Stdio {
        child: crate::server_process::ServerProcess,
        stdin: tokio::process::ChildStdin,
        stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    },
    Http {
        client: Client,
        session: Option<String>,
    },
}

impl Live {
    fn start(target: &Target) -> Result<Self, EchoError> {
        match target {
            Target::Http(upstream) => Ok(Self::Http {
                client: upstream.client()?,
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

    /// Sends `message`; for a request, what the server answered with its id.
    /// A server that cannot be reached at all fails the verification
    /// ([`EchoError::Unreachable`]): that is no missing answer.
    async fn send(&mut self, message: &Value) -> Result<Heard, EchoError> {
        let id = message.get("id").cloned();
        match self {
            Self::Stdio { stdin, stdout, .. } => {
                let mut frame = serde_json::to_string(message).expect("JSON");
                frame.push('\n');
                if let Err(e) = stdin.write_all(frame.as_bytes()).await {
                    return Ok(Heard::Nothing(format!("the server's stdin is closed ({e})")));
                }
                let Some(id) = id else {
                    return Ok(Heard::Nothing("a notification has no answer".into()));
                };
                let answer = tokio::time::timeout(ANSWER_TIMEOUT, async {
                    loop {
                        match stdout.next_line().await {
                            Ok(Some(text)) => {
                                if let Ok(answer) = serde_json::from_str::<Value>(&text)
                                    && answer.get("method").is_none()
                                    && answer["id"] == id
                                {
                                    return Heard::Answer(answer);
                                }
                            }
                            Ok(None) => return Heard::Nothing("the server closed its stdout".into()),
                            Err(e) => return Heard::Nothing(format!("the server's stdout failed ({e})")),
                        }
                    }
                })
                .await;
                Ok(answer.unwrap_or_else(|_| Heard::Nothing(no_answer_in_time())))
            }
            Self::Http { client, session } => {
                let mut headers = vec![
                    (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
                    (
                        header::ACCEPT,
                        HeaderValue::from_static("application/json, text/event-stream"),
                    ),
                ];
                if let Some(session) = session.as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
                    headers.push((HeaderName::from_static("mcp-session-id"), session));
                }
                let exchange = async {
                    let response = client
                        .send(http::Method::POST, headers, message.to_string().into())
                        .await?;
                    let (head, body) = response.into_parts();
                    let body = http_body_util::BodyExt::collect(body)
                        .await
                        .map_err(|e| SendError::Failed(format!("the answer broke off ({e})")))?
                        .to_bytes();
                    Ok::<_, SendError>((head, body))
                };
                let (head, body) = match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
                    Ok(Ok(answered)) => answered,
                    Ok(Err(SendError::Unreachable(unreachable))) => return Err(unreachable.into()),
                    Ok(Err(SendError::Failed(why))) => {
                        return Ok(Heard::Nothing(format!("the request failed ({why})")));
                    }
                    Err(_) => return Ok(Heard::Nothing(no_answer_in_time())),
                };
                if let Some(value) = head.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                    *session = Some(value.to_owned());
                }
                let status = head.status;
                let body = String::from_utf8_lossy(&body);
                let Some(id) = id else {
                    return Ok(Heard::Nothing("a notification has no answer".into()));
                };
                let answer = serde_json::from_str::<Value>(&body)
                    .ok()
                    .filter(|v| v["id"] == id)
                    .or_else(|| {
                        body.lines()
                            .filter_map(|l| l.strip_prefix("data:"))
                            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                            .find(|v| v.get("method").is_none() && v["id"] == id)
                    });
                Ok(match answer {
                    Some(answer) => Heard::Answer(answer),
                    None if !status.is_success() => Heard::Nothing(format!(
                        "HTTP {status}: {}",
                        body.chars().take(MAX_DETAIL_CHARS).collect::<String>()
                    )),
                    None => Heard::Nothing(format!("HTTP {status} without the answer")),
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

/// Most characters of an HTTP error body quoted in a check's detail.
pub const MAX_DETAIL_CHARS: usize = 200;

fn no_answer_in_time() -> String {
    format!("no answer within {} s", ANSWER_TIMEOUT.as_secs())
}

/// Sends every recorded request to the live server, in order, and compares the
/// answers.
pub async fn verify<R: std::io::BufRead>(
    mut records: Records<R>,
    target: &Target,
    options: VerifyOptions,
) -> Result<Vec<Check>, EchoError> {
    let VerifyOptions { mut redactor, ignore } = options;
    records.header().scope_paths(&mut redactor);
    let paths = redactor.paths().clone();
    let mut live = Live::start(target)?;
    let normaliser = Normaliser::default();
    let mut checks = Vec::new();
    // Record by record: a cassette of any size is verified in bounded memory.
    for record in records.by_ref() {
        let Record::Interaction(interaction) = record? else {
            continue;
        };
        let method = interaction.request["method"].as_str().unwrap_or("?").to_owned();
        let tool = (method == "tools/call")
            .then(|| interaction.request["params"]["name"].as_str().map(str::to_owned))
            .flatten();
        let mut request = interaction.request.clone();
        // The live server is here: it gets this machine's paths.
        paths.expand_value(&mut request);
        request["id"] = json!(format!("dshkit-verify-{}", interaction.ordinal));
        let answer = live.send(&request).await?;
        let check = |outcome, paths, detail| Check {
            ordinal: interaction.ordinal,
            method: method.clone(),
            tool: tool.clone(),
            outcome,
            paths,
            detail,
        };
        let check = match (answer, interaction.responses.last()) {
            (Heard::Answer(mut now), Some(then)) => {
                let mut then = then.clone();
                redactor.value(&mut now);
                for answer in [&mut now, &mut then] {
                    normaliser.value(answer);
                    for pointer in &ignore {
                        pointer.leave_out(answer);
                    }
                }
                let (outcome, paths) = compare(&then, &now);
                check(outcome, paths, None)
            }
            (Heard::Nothing(why), _) => check(Outcome::Missing, Vec::new(), Some(why)),
            (Heard::Answer(_), None) => check(
                Outcome::Changed,
                Vec::new(),
                Some("the recording holds no answer to compare with".into()),
            ),
        };
        // The handshake is complete once initialize is answered.
        if interaction.request["method"] == "initialize" {
            live.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await?;
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
    fn pointers_are_read_as_rfc_6901_writes_them_and_leave_out_what_they_name() {
        let pointer = Pointer::parse("/result/content/0/a~1b~0c").unwrap();
        let mut answer = json!({"result": {"content": [{"a/b~c": 1, "d": 2}], "n": 3}});
        pointer.leave_out(&mut answer);
        assert_eq!(answer, json!({"result": {"content": [{"d": 2}], "n": 3}}));
        Pointer::parse("/result/content/0")
            .unwrap()
            .leave_out(&mut answer);
        assert_eq!(answer, json!({"result": {"content": [null], "n": 3}}));
        // What the answer does not hold is left as it is.
        for absent in ["/result/none/x", "/result/content/7", "/result/n/x", "/error"] {
            Pointer::parse(absent).unwrap().leave_out(&mut answer);
        }
        assert_eq!(answer, json!({"result": {"content": [null], "n": 3}}));
        assert_eq!(Pointer::parse("/").unwrap().tokens, [""]);
        assert_eq!(
            Pointer::parse("result/content"),
            Err(PointerError::NoLeadingSlash("result/content".into()))
        );
        assert_eq!(
            Pointer::parse("/a~2"),
            Err(PointerError::BadEscape("/a~2".into()))
        );
        assert_eq!(Pointer::parse("/a~"), Err(PointerError::BadEscape("/a~".into())));
        assert_eq!(Pointer::parse(""), Err(PointerError::WholeAnswer));
    }

    #[test]
    fn a_changed_answer_names_the_pointers_it_changed_at() {
        let recorded = json!({"result": {"content": [{"text": "a"}], "m/x": 1}});
        let live = json!({"result": {"content": [{"text": "b"}], "m/x": 2}});
        assert_eq!(
            compare(&recorded, &live),
            (
                Outcome::Changed,
                vec!["/result/content/0/text".to_owned(), "/result/m~1x".to_owned()]
            )
        );
    }

    #[test]
    fn volatile_values_are_normalised_and_changes_classified() {
        let normaliser = Normaliser::default();
        let mut a = json!({"result": {"at": "2026-11-30T15:00:00Z", "id": "0f8fad5b-d9cb-469f-a165-70867728950e", "t": 1_796_050_532, "n": 3}});
        let mut b = json!({"result": {"at": "2027-01-01T00:00:01.5+01:00", "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "t": 1_796_099_999, "n": 3}});
        normaliser.value(&mut a);
        normaliser.value(&mut b);
        assert_eq!(compare(&a, &b).0, Outcome::Match);
        let c = json!({"result": {"at": "<timestamp>", "id": "<uuid>", "t": "<epoch>", "n": 4}});
        assert_eq!(compare(&a, &c), (Outcome::Changed, vec!["/result/n".to_owned()]));
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
