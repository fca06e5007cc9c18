//! An MCP client of the DevTools endpoint (Streamable HTTP): `initialize`,
//! `tools/list` and `tools/call` with the bearer token, JSON or SSE answers.
//! Loopback only; the token is sent, never shown in an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dshkit_echo::http::SseParser;
use dshkit_os::error::ErrorClass;
use futures::StreamExt as _;
use serde_json::{Map, Value, json};

use crate::endpoint::TOKEN_FILE;

/// The MCP protocol version this client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// Longest one call may take: the longest wait plus a margin.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(90);
/// Longest the connection to the endpoint may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The shortest token sent (the endpoint's own tokens are far longer).
pub const MIN_TOKEN_CHARS: usize = 16;
/// Characters of an endpoint's error body quoted in an error.
const QUOTED_BODY: usize = 300;

/// Why a call to the endpoint failed. Never carries the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error(
        "the DevTools endpoint {0} is not on loopback: dshkit talks to it only on this machine (http://127.0.0.1, http://[::1] or http://localhost)"
    )]
    NotLoopback(String),
    #[error("no DevTools endpoint token: {} cannot be read (`dshkit devtools rotate-token` writes one; the endpoint reads it when it starts)", path.display())]
    NoToken {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the DevTools endpoint token from {0} is empty or too short")]
    BadToken(String),
    #[error("the DevTools endpoint {url} does not answer ({why})")]
    Unreachable { url: String, why: String },
    #[error(
        "the DevTools endpoint {0} refused the token (HTTP 401): the token given is not the one it started with; give the right one (--token-file, DSH_CORDIS_DEBUG_TOKEN), or `dshkit devtools rotate-token` and restart DSH (or `dshkit devtools serve`)"
    )]
    Unauthorized(String),
    #[error("the DevTools endpoint {url} answered HTTP {status}: {body}")]
    Http { url: String, status: u16, body: String },
    #[error("the DevTools endpoint {url} answered something unreadable: {why}")]
    Protocol { url: String, why: String },
    #[error("{message}")]
    Tool {
        /// The tool error's code (`UNKNOWN_TARGET`, `HOST_DISPOSED`...), when it has one.
        code: Option<String>,
        message: String,
    },
}

impl ClientError {
    /// The endpoint could not be reached at all (nothing listens there).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// A stable code for scripts and the exit code's class.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotLoopback(_) => "ENDPOINT_NOT_LOOPBACK",
            Self::NoToken { .. } | Self::BadToken(_) => "NO_TOKEN",
            Self::Unreachable { .. } => "ENDPOINT_UNREACHABLE",
            Self::Unauthorized(_) => "UNAUTHORIZED",
            Self::Http { .. } | Self::Protocol { .. } => "ENDPOINT_PROTOCOL",
            Self::Tool { .. } => "TOOL_ERROR",
        }
    }

    /// What the error means for whoever asked: a refused token or tool is the
    /// caller's to fix; an endpoint that does not answer is unreachable.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Unreachable { .. } => ErrorClass::Unreachable,
            Self::Http { .. } | Self::Protocol { .. } => ErrorClass::Runtime,
            _ => ErrorClass::Refused,
        }
    }

    /// The code of a tool's error (`HOST_DISPOSED`...).
    pub fn tool_code(&self) -> Option<&str> {
        match self {
            Self::Tool { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

dshkit_os::classified!(ClientError);

/// Where the token comes from: a token file, or the token itself (from the
/// environment). Debug never shows the token.
#[derive(Clone)]
pub enum TokenSource {
    File(PathBuf),
    Value(String),
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "File({})", path.display()),
            Self::Value(_) => f.write_str("Value(<redacted>)"),
        }
    }
}

impl TokenSource {
    /// `file`, else the token `value`, else the devtools directory's token file.
    pub fn resolve(file: Option<PathBuf>, value: Option<String>, registry: &Path) -> Self {
        match (file, value.filter(|v| !v.trim().is_empty())) {
            (Some(file), _) => Self::File(file),
            (None, Some(value)) => Self::Value(value),
            (None, None) => Self::File(registry.join(TOKEN_FILE)),
        }
    }

    /// The token now (a file is read each time: a rotated token needs no restart).
    pub fn read(&self) -> Result<String, ClientError> {
        let token = match self {
            Self::File(path) => std::fs::read_to_string(path).map_err(|source| ClientError::NoToken {
                path: path.clone(),
                source,
            })?,
            Self::Value(value) => value.clone(),
        };
        let token = token.trim().to_owned();
        if token.len() < MIN_TOKEN_CHARS {
            return Err(ClientError::BadToken(match self {
                Self::File(path) => path.display().to_string(),
                Self::Value(_) => "the environment".to_owned(),
            }));
        }
        Ok(token)
    }
}

/// Refuses an endpoint URL that is not `http://` on a loopback host.
pub fn check_loopback(url: &str) -> Result<(), ClientError> {
    let refused = || ClientError::NotLoopback(url.to_owned());
    let parsed = url::Url::parse(url).map_err(|_| refused())?;
    if parsed.scheme() != "http" {
        return Err(refused());
    }
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if loopback { Ok(()) } else { Err(refused()) }
}

/// One MCP session with the endpoint.
pub struct McpClient {
    url: String,
    token: String,
    http: reqwest::Client,
    session: Option<String>,
    version: Option<String>,
    next_id: u64,
}

impl McpClient {
    /// Opens a session: `initialize`, then `notifications/initialized`.
    pub async fn connect(url: &str, token: &TokenSource) -> Result<Self, ClientError> {
        check_loopback(url)?;
        let token = token.read()?;
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ClientError::Unreachable {
                url: url.to_owned(),
                why: e.without_url().to_string(),
            })?;
        let mut client = Self {
            url: url.to_owned(),
            token,
            http,
            session: None,
            version: None,
            next_id: 0,
        };
        let init = client
            .request(
                "initialize",
                json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "dshkit-devtools-cli", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await?;
        client.version = init["protocolVersion"].as_str().map(str::to_owned);
        client
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(client)
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The names of the tools the endpoint lists.
    pub async fn tool_names(&mut self) -> Result<Vec<String>, ClientError> {
        let listed = self.request("tools/list", json!({})).await?;
        Ok(listed["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Calls `tool` with `arguments`: its structured result, or its error as
    /// [`ClientError::Tool`].
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, ClientError> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if result["isError"] == true {
            return Err(ClientError::Tool {
                code: result["structuredContent"]["code"].as_str().map(str::to_owned),
                message: if text.is_empty() { result.to_string() } else { text },
            });
        }
        Ok(result["structuredContent"].clone())
    }

    /// Ends the MCP session (the endpoint then detaches its debug sessions too).
    pub async fn close(self) {
        if let Some(session) = &self.session {
            let _ = self
                .http
                .delete(&self.url)
                .bearer_auth(&self.token)
                .header("mcp-session-id", session)
                .timeout(CONNECT_TIMEOUT)
                .send()
                .await;
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = self.next_id;
        let answers = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let answer = answers
            .into_iter()
            .find(|a| a["id"] == id)
            .ok_or_else(|| self.unreadable("no answer to the request"))?;
        if let Some(error) = answer.get("error") {
            return Err(ClientError::Tool {
                code: None,
                message: format!(
                    "the DevTools endpoint {} refused {method}: {}",
                    self.url,
                    error["message"].as_str().unwrap_or("no reason given")
                ),
            });
        }
        Ok(answer["result"].clone())
    }

    fn unreadable(&self, why: &str) -> ClientError {
        ClientError::Protocol {
            url: self.url.clone(),
            why: why.to_owned(),
        }
    }

    /// Posts one message and reads every message of the answer (none for a
    /// notification).
    async fn post(&mut self, message: &Value) -> Result<Vec<Value>, ClientError> {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .json(message);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(version) = &self.version {
            request = request.header("mcp-protocol-version", version);
        }
        // The error names the URL, never the request's headers.
        let response = request.send().await.map_err(|e| ClientError::Unreachable {
            url: self.url.clone(),
            why: e.without_url().to_string(),
        })?;
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session = Some(session.to_owned());
        }
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Unauthorized(self.url.clone()));
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Ok(Vec::new());
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(ClientError::Http {
                url: self.url.clone(),
                status: status.as_u16(),
                body: body.chars().take(QUOTED_BODY).collect(),
            });
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let answer: Value = response
                .json()
                .await
                .map_err(|e| self.unreadable(&e.without_url().to_string()))?;
            return Ok(vec![answer]);
        }
        let mut parser = SseParser::default();
        let mut stream = response.bytes_stream();
        let mut answers = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|_| self.unreadable("the stream closed early"))?;
            answers.extend(parser.feed(&chunk));
            // A request's answer ends its stream's use for us.
            if message.get("id").is_some() && answers.iter().any(|a| a["id"] == message["id"]) {
                break;
            }
        }
        Ok(answers)
    }
}

/// The arguments of a call on debug session `session`.
pub fn on_session(session: &str, mut rest: Map<String, Value>) -> Value {
    rest.insert("debugSessionId".to_owned(), Value::String(session.to_owned()));
    Value::Object(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_endpoints_are_accepted() {
        for ok in [
            "http://127.0.0.1:43127/mcp",
            "http://[::1]:1/mcp",
            "http://localhost:9/mcp",
            "http://127.1.2.3/mcp",
        ] {
            assert!(check_loopback(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://10.0.0.1:43127/mcp",
            "http://example.com/mcp",
            "https://127.0.0.1/mcp",
            "http://0.0.0.0:1/mcp",
            "127.0.0.1:43127",
        ] {
            let error = check_loopback(refused).unwrap_err();
            assert!(
                error.to_string().contains("not on loopback"),
                "{refused}: {error}"
            );
        }
    }

    #[test]
    fn a_token_from_the_environment_is_never_shown_in_debug() {
        let token = TokenSource::Value("abcdefghijklmnopqrstuvwxyz".into());
        assert!(!format!("{token:?}").contains("abcdef"));
        assert!(matches!(
            TokenSource::Value("short".into()).read(),
            Err(ClientError::BadToken(_))
        ));
    }
}
