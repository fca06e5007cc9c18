//! The recorder behind both recording proxies (stdio and HTTP): it attributes
//! each message to the request it answers and appends what completes.
//!
//! It works on each message's text. A message is read once for the few members
//! that attribute it (`id`, `method`, the progress token) and once by the
//! redactor's check; a clean message is written as the text that passed, and
//! only one that holds a secret is parsed into a tree to be redacted. So a
//! recorded call costs no JSON tree and no second serialization.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cassette::Header;
use crate::error::{CassetteError, EchoError};
use crate::redact::Redactor;
use crate::writer::{Appender, RecordMode};

/// Client requests waiting for their answer, at most, while recording; past it
/// the oldest is recorded as an unanswered message.
pub const MAX_PENDING_REQUESTS: usize = 4096;

/// What to record.
#[derive(Debug)]
pub struct RecordOptions {
    /// The server's argv (stdio; empty for the HTTP proxy).
    pub argv: Vec<String>,
    pub cassette: PathBuf,
    pub mode: RecordMode,
    pub redactor: Redactor,
}

impl RecordOptions {
    /// Refuses to start a recording in mode `once` over an existing cassette.
    pub(crate) fn refuse_to_overwrite(&self) -> Result<(), CassetteError> {
        if self.mode == RecordMode::Once && self.cassette.exists() {
            return Err(CassetteError::Exists(self.cassette.clone()));
        }
        Ok(())
    }
}

/// What a recording did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub interactions: u64,
    pub messages: u64,
    pub raw_lines: u64,
    pub cassette: Option<PathBuf>,
}

/// One JSON-RPC message as it will be written (redacted), with the members
/// that attribute it.
pub(crate) struct Message {
    text: Box<RawValue>,
    /// The `id`, as a key (see [`key_of`]); `null` counts as an id.
    id: Option<String>,
    has_method: bool,
    /// `params._meta.progressToken` (a request's), as a key.
    meta_token: Option<String>,
    /// `params.progressToken` (a notification's), as a key.
    params_token: Option<String>,
}

/// The members a message is attributed by, borrowed from its text.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    id: Present<'a>,
    #[serde(default, borrow)]
    method: Present<'a>,
    #[serde(default, borrow)]
    params: Present<'a>,
}

/// The members of `params` (or of `params._meta`) that matter here.
#[derive(Deserialize)]
struct Params<'a> {
    #[serde(default, borrow, rename = "progressToken")]
    progress_token: Present<'a>,
    #[serde(default, borrow, rename = "_meta")]
    meta: Present<'a>,
}

impl<'a> Params<'a> {
    /// The members of `raw` if it is an object (JSON-RPC also allows an array).
    fn of(raw: Present<'a>) -> Option<Self> {
        raw.0
            .filter(|raw| raw.get().starts_with('{'))
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

/// A member's text if the member is there, `null` included (an `Option` field
/// would read `null` as absent).
#[derive(Default, Clone, Copy)]
struct Present<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Present<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&RawValue>::deserialize(deserializer).map(|raw| Self(Some(raw)))
    }
}

/// A JSON value's text as a key: the same value written two ways (escaped or
/// not, `1e2` or `100.0`) gives one key, as its JSON tree would. An integer or
/// a string without escapes is its own key; anything else takes a trip through
/// a tree.
fn key_of(raw: &RawValue) -> String {
    let text = raw.get();
    let plain = match text.as_bytes() {
        [b'"', inner @ .., b'"'] => !inner.contains(&b'\\'),
        [b'-', digits @ ..] | digits => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
    };
    if !plain && let Ok(value) = serde_json::from_str::<Value>(text) {
        return value.to_string();
    }
    text.to_owned()
}

/// A present, non-null token as a key.
fn token_key(token: Present<'_>) -> Option<String> {
    token.0.filter(|token| token.get() != "null").map(key_of)
}

impl Message {
    /// Reads `text` (one JSON object) and redacts it; `None` if it is not a
    /// JSON object.
    pub(crate) fn parse(text: &str, redactor: &Redactor) -> Option<Self> {
        let text = text.trim_ascii();
        if !text.starts_with('{') {
            return None;
        }
        // An object the lean read refuses (a member twice, say) is still a
        // message: its tree decides, as it would for any reader.
        let Ok(head) = serde_json::from_str::<Head<'_>>(text) else {
            return Self::from_value(serde_json::from_str(text).ok()?, redactor);
        };
        let params = Params::of(head.params);
        let meta = params.as_ref().and_then(|params| Params::of(params.meta));
        let text = if redactor.touches_json(text) {
            let mut value: Value = serde_json::from_str(text).ok()?;
            redactor.value(&mut value);
            serde_json::value::to_raw_value(&value).ok()?
        } else {
            RawValue::from_string(text.to_owned()).ok()?
        };
        Some(Self {
            text,
            id: head.id.0.map(key_of),
            has_method: head.method.0.is_some(),
            meta_token: meta.and_then(|meta| token_key(meta.progress_token)),
            params_token: params.and_then(|params| token_key(params.progress_token)),
        })
    }

    /// A message already parsed (by the HTTP proxy), redacted; `None` if it is
    /// not an object.
    pub(crate) fn from_value(mut message: Value, redactor: &Redactor) -> Option<Self> {
        if !message.is_object() {
            return None;
        }
        let token = |value: &Value| (!value.is_null()).then(|| value.to_string());
        let id = message.get("id").map(Value::to_string);
        let has_method = message.get("method").is_some();
        let meta_token = token(&message["params"]["_meta"]["progressToken"]);
        let params_token = token(&message["params"]["progressToken"]);
        redactor.value(&mut message);
        Some(Self {
            text: serde_json::value::to_raw_value(&message).ok()?,
            id,
            has_method,
            meta_token,
            params_token,
        })
    }

    fn value(&self) -> Value {
        serde_json::from_str(self.text.get()).unwrap_or(Value::Null)
    }
}

/// A client request waiting for its answer.
struct Pending {
    /// Its place among the requests recorded (the oldest is the lowest).
    seq: u64,
    request: Message,
    started: Instant,
    notifications: Vec<Box<RawValue>>,
    /// When each notification arrived.
    notified_at: Vec<Instant>,
    /// Requests the server made under it and the client's answers, in order.
    server_requests: Vec<Exchange>,
    /// For each of `server_requests`, how many notifications came before it.
    server_requests_after: Vec<u64>,
}

impl Pending {
    /// Keeps `exchange` in its place among the notifications.
    fn exchange(&mut self, exchange: Exchange) {
        self.server_requests.push(exchange);
        self.server_requests_after
            .push(u64::try_from(self.notifications.len()).unwrap_or(u64::MAX));
    }
}

/// A message of a server-initiated request made while a client request waited.
enum Exchange {
    /// The server's request.
    Request(Box<RawValue>),
    /// The client's answer to it.
    Response(Box<RawValue>),
}

impl Exchange {
    /// `{"request": …}` or `{"response": …}`, as an interaction's
    /// `serverRequests` holds them.
    fn recorded(&self) -> Box<RawValue> {
        let (member, message) = match self {
            Self::Request(message) => ("request", message),
            Self::Response(message) => ("response", message),
        };
        let text = format!("{{\"{member}\":{}}}", message.get());
        RawValue::from_string(text).expect("an object of JSON is JSON")
    }

    /// Who sent it, and the message.
    fn into_message(self) -> (&'static str, Box<RawValue>) {
        match self {
            Self::Request(message) => ("server", message),
            Self::Response(message) => ("client", message),
        }
    }
}

/// Microseconds from each instant in `arrivals` to `end`.
pub(crate) fn leads_us(arrivals: &[Instant], end: Instant) -> Vec<u64> {
    arrivals
        .iter()
        .map(|at| u64::try_from(end.saturating_duration_since(*at).as_micros()).unwrap_or(u64::MAX))
        .collect()
}

/// A cassette record as the recorder writes it: the messages as text. It
/// serializes as [`crate::cassette::Record`] does.
enum Written {
    Interaction(Box<WrittenInteraction>),
    Message {
        from: &'static str,
        message: Box<RawValue>,
    },
    Raw {
        line: String,
    },
}

/// [`crate::cassette::Interaction`], its messages as text; its members in
/// the same order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WrittenInteraction {
    #[serde(rename = "type")]
    kind: &'static str,
    ordinal: u64,
    request: Box<RawValue>,
    responses: Vec<Box<RawValue>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notifications: Vec<Box<RawValue>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notification_lead_us: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    server_requests: Vec<Box<RawValue>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    server_requests_after: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    ms: u64,
    origin: &'static str,
}

/// What an HTTP answer held besides its JSON-RPC responses: its status when
/// it was not a success, its content type, and a body that was no answer.
#[derive(Default)]
struct HttpAnswer {
    status: Option<u16>,
    content_type: Option<String>,
    body: Option<String>,
}

#[derive(Serialize)]
struct WrittenMessage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    from: &'static str,
    message: &'a RawValue,
}

#[derive(Serialize)]
struct WrittenRaw<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    line: &'a str,
}

/// Attributes messages to requests and writes the cassette; shared by the stdio
/// and the HTTP recorders.
pub(crate) struct Recorder {
    header: Header,
    appender: Option<Appender>,
    /// Records completed before the header could be written.
    waiting: Vec<Written>,
    /// At most [`MAX_PENDING_REQUESTS`].
    pending: HashMap<String, Pending>,
    /// The `seq` of the next pending request.
    next_seq: u64,
    /// Server-initiated requests by id, and the client request they came under
    /// (at most [`MAX_PENDING_REQUESTS`]).
    server_requests: HashMap<String, Option<String>>,
    ordinal: u64,
    summary: RecordSummary,
    options: RecordOptions,
    error: Option<CassetteError>,
}

impl Recorder {
    pub(crate) fn new(options: RecordOptions, transport: &str) -> Self {
        let mut header = Header::new(transport);
        // The redactor writes these roots' paths as their tokens.
        header.paths = options.redactor.paths().names();
        Self {
            header,
            appender: None,
            waiting: Vec::new(),
            pending: HashMap::new(),
            next_seq: 0,
            server_requests: HashMap::new(),
            ordinal: 0,
            summary: RecordSummary::default(),
            options,
            error: None,
        }
    }

    /// Writes what is left and closes the cassette.
    pub(crate) fn finish(&mut self) -> Result<RecordSummary, EchoError> {
        let mut unanswered: Vec<Pending> = self.pending.drain().map(|(_, pending)| pending).collect();
        unanswered.sort_by_key(|pending| pending.seq);
        for pending in unanswered {
            self.unanswered(pending);
        }
        // A cassette that never saw an initialize still gets its header and records.
        self.open();
        if let Some(error) = self.error.take() {
            return Err(error.into());
        }
        let cassette = match self.appender.take() {
            Some(appender) => Some(appender.finish()?),
            None => None,
        };
        let mut summary = self.summary.clone();
        summary.cassette = cassette;
        Ok(summary)
    }

    pub(crate) fn redactor(&self) -> &Redactor {
        &self.options.redactor
    }

    /// Holds the cassette's lines until [`Self::write_held`], so that a batch
    /// of frames is written in one go.
    pub(crate) fn hold_writes(&mut self) {
        if let Some(appender) = self.appender.as_mut() {
            appender.hold();
        }
    }

    /// Writes the lines held since [`Self::hold_writes`].
    pub(crate) fn write_held(&mut self) {
        if let Some(Err(e)) = self.appender.as_mut().map(Appender::release) {
            tracing::error!(%e, "recording failed");
            self.error.get_or_insert(e);
        }
    }

    /// A line the server printed that is not JSON, recorded redacted.
    pub(crate) fn raw_line(&mut self, line: &str) {
        let line = self.options.redactor.redact(line).into_owned();
        self.write(Written::Raw { line });
    }

    fn write(&mut self, record: Written) {
        match &record {
            Written::Interaction(_) => self.summary.interactions += 1,
            Written::Message { .. } => self.summary.messages += 1,
            Written::Raw { .. } => self.summary.raw_lines += 1,
        }
        if self.appender.is_none() {
            self.waiting.push(record);
            return;
        }
        self.append(&record);
    }

    fn append(&mut self, record: &Written) {
        let Some(appender) = self.appender.as_mut() else {
            return;
        };
        let result = match record {
            Written::Interaction(interaction) => appender.append_line(interaction),
            Written::Message { from, message } => appender.append_line(&WrittenMessage {
                kind: "message",
                from,
                message,
            }),
            Written::Raw { line } => appender.append_line(&WrittenRaw { kind: "raw", line }),
        };
        if let Err(e) = result {
            tracing::error!(%e, "recording failed");
            self.error.get_or_insert(e);
        }
    }

    /// Writes the header (once the server said who it is) and what waited for it.
    fn open(&mut self) {
        if self.appender.is_some() {
            return;
        }
        match Appender::create(&self.options.cassette, &self.header, self.options.mode) {
            Ok(appender) => {
                self.appender = Some(appender);
                for record in std::mem::take(&mut self.waiting) {
                    self.append(&record);
                }
            }
            Err(e) => {
                tracing::error!(%e, "cannot create the cassette");
                self.error.get_or_insert(e);
            }
        }
    }

    pub(crate) fn on_client(&mut self, message: &Value) {
        if let Some(message) = Message::from_value(message.clone(), &self.options.redactor) {
            self.on_client_at(message, Instant::now());
        }
    }

    /// A client message that passed the proxy at `at`.
    pub(crate) fn on_client_at(&mut self, message: Message, at: Instant) {
        match (message.has_method, message.id.clone()) {
            (true, Some(id)) => {
                self.next_seq += 1;
                let pending = Pending {
                    seq: self.next_seq,
                    request: message,
                    started: at,
                    notifications: Vec::new(),
                    notified_at: Vec::new(),
                    server_requests: Vec::new(),
                    server_requests_after: Vec::new(),
                };
                if let Some(displaced) = self.pending.insert(id, pending) {
                    self.unanswered(displaced); // its id was used again
                }
                if self.pending.len() > MAX_PENDING_REQUESTS
                    && let Some(oldest) = self
                        .pending
                        .iter()
                        .min_by_key(|(_, p)| p.seq)
                        .map(|(k, _)| k.clone())
                    && let Some(oldest) = self.pending.remove(&oldest)
                {
                    self.unanswered(oldest);
                }
            }
            (false, Some(id)) => {
                // The client's answer to a server-initiated request.
                let under_request = self.server_requests.remove(&id).flatten();
                match under_request.and_then(|k| self.pending.get_mut(&k)) {
                    Some(pending) => pending.exchange(Exchange::Response(message.text)),
                    None => self.write(Written::Message {
                        from: "client",
                        message: message.text,
                    }),
                }
            }
            (_, None) => self.write(Written::Message {
                from: "client",
                message: message.text,
            }),
        }
    }

    /// Writes a request that got no answer (the recording ended first, too many
    /// were waiting, or its id was used again) as the messages it gathered.
    fn unanswered(&mut self, pending: Pending) {
        self.write(Written::Message {
            from: "client",
            message: pending.request.text,
        });
        for message in pending.notifications {
            self.write(Written::Message {
                from: "server",
                message,
            });
        }
        for exchange in pending.server_requests {
            let (from, message) = exchange.into_message();
            self.write(Written::Message { from, message });
        }
    }

    /// The pending request a server message belongs to: the one whose progress
    /// token it carries, else the only one in flight.
    fn owner_of(&self, message: &Message) -> Option<String> {
        if let Some(token) = &message.params_token
            && let Some((key, _)) = self
                .pending
                .iter()
                .find(|(_, p)| p.request.meta_token.as_ref() == Some(token))
        {
            return Some(key.clone());
        }
        (self.pending.len() == 1)
            .then(|| self.pending.keys().next().cloned())
            .flatten()
    }

    pub(crate) fn on_server(&mut self, message: Value) {
        if let Some(message) = Message::from_value(message, &self.options.redactor) {
            self.on_server_at(message, Instant::now());
        }
    }

    /// A server message that passed the proxy at `at`.
    pub(crate) fn on_server_at(&mut self, message: Message, at: Instant) {
        match (message.has_method, message.id.clone()) {
            (false, Some(id)) => {
                let Some(pending) = self.pending.remove(&id) else {
                    self.write(Written::Message {
                        from: "server",
                        message: message.text,
                    });
                    return;
                };
                if self.appender.is_none() {
                    self.learn_header(&pending.request.value(), &message.value());
                }
                self.complete(pending, vec![message.text], HttpAnswer::default(), at);
            }
            (true, Some(id)) => {
                let owner = self.owner_of(&message);
                if self.server_requests.len() >= MAX_PENDING_REQUESTS {
                    // Only a hint for attributing the client's answer: an
                    // answer that finds none is recorded on its own.
                    self.server_requests.clear();
                }
                self.server_requests.insert(id, owner.clone());
                match owner.and_then(|k| self.pending.get_mut(&k)) {
                    Some(pending) => pending.exchange(Exchange::Request(message.text)),
                    None => self.write(Written::Message {
                        from: "server",
                        message: message.text,
                    }),
                }
            }
            (_, None) => match self.owner_of(&message).and_then(|k| self.pending.get_mut(&k)) {
                Some(pending) => {
                    pending.notifications.push(message.text);
                    pending.notified_at.push(at);
                }
                None => self.write(Written::Message {
                    from: "server",
                    message: message.text,
                }),
            },
        }
    }

    /// Writes the interaction of `pending`, answered with `responses` (and,
    /// over HTTP, what else the answer held) at `at`.
    fn complete(&mut self, pending: Pending, responses: Vec<Box<RawValue>>, http: HttpAnswer, at: Instant) {
        self.ordinal += 1;
        let interaction = WrittenInteraction {
            kind: "interaction",
            ordinal: self.ordinal,
            request: pending.request.text,
            responses,
            notification_lead_us: leads_us(&pending.notified_at, at),
            notifications: pending.notifications,
            server_requests: pending.server_requests.iter().map(Exchange::recorded).collect(),
            server_requests_after: pending.server_requests_after,
            status: http.status,
            content_type: http.content_type,
            body: http.body,
            ms: u64::try_from(at.saturating_duration_since(pending.started).as_millis()).unwrap_or(u64::MAX),
            origin: "recorded",
        };
        self.open();
        self.write(Written::Interaction(Box::new(interaction)));
    }

    /// An HTTP upstream answered the client's `request` with `status` (not a
    /// success), `content_type` and `body`: the request's interaction is
    /// written with them. A body that is the JSON-RPC answer to the request is
    /// its response; any other is kept as text, redacted. A request that
    /// waits for nothing (a notification, one already answered) records the
    /// body as the server's message.
    pub(crate) fn on_http_answer(
        &mut self,
        request: &Value,
        status: u16,
        content_type: Option<String>,
        body: &[u8],
    ) {
        let redactor = &self.options.redactor;
        let answer = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|answer| Message::from_value(answer, redactor));
        let id = request.get("id").map(Value::to_string);
        let pending = id.as_ref().and_then(|id| self.pending.remove(id));
        let Some(pending) = pending else {
            if let Some(answer) = answer {
                self.on_server_at(answer, Instant::now());
            }
            return;
        };
        let mut http = HttpAnswer {
            status: Some(status),
            content_type,
            body: None,
        };
        let responses = match answer {
            Some(answer) if !answer.has_method && answer.id == id => vec![answer.text],
            _ => {
                http.body = Some(redactor.redact(&String::from_utf8_lossy(body)).into_owned());
                Vec::new()
            }
        };
        self.complete(pending, responses, http, Instant::now());
    }

    fn learn_header(&mut self, request: &Value, response: &Value) {
        let result = &response["result"];
        match request["method"].as_str() {
            Some("initialize") => {
                self.header.era = "2025".into();
                self.header.protocol_version = result["protocolVersion"].as_str().map(str::to_owned);
                self.header.server_info = result.get("serverInfo").cloned();
            }
            Some("server/discover") => {
                // 2026-07-28: the version is the client's per-request choice (in
                // `_meta`), the server's identity is in the result's `_meta`.
                self.header.era = "2026".into();
                self.header.protocol_version =
                    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                        .as_str()
                        .or_else(|| result["supportedVersions"].as_array()?.last()?.as_str())
                        .map(str::to_owned);
                self.header.server_info = result["_meta"]
                    .get("io.modelcontextprotocol/serverInfo")
                    .or_else(|| result.get("serverInfo"))
                    .cloned();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A stdio recorder writing `c.jsonl` in `dir`, with the default rules.
    fn recorder_in(dir: &tempfile::TempDir) -> (Recorder, std::path::PathBuf) {
        let cassette = dir.path().join("c.jsonl");
        let options = RecordOptions {
            argv: Vec::new(),
            cassette: cassette.clone(),
            mode: RecordMode::Once,
            redactor: Redactor::new(&[], &[]).unwrap(),
        };
        (Recorder::new(options, "stdio"), cassette)
    }

    /// Messages that take every way through [`Message::parse`].
    fn messages() -> Vec<String> {
        let bearer = format!("Bearer {}", "a1B2".repeat(6));
        vec![
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}"#.into(),
            json!({"jsonrpc": "2.0", "id": "x", "result": {"content": [{"type": "text", "text": bearer}]}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "login", "params": {"password": "hunter2-hunter2", "user": "ann"}})
                .to_string(),
            // A secret key word and a token that only decoding the escapes reveals.
            r#"{"id":3,"method":"x","params":{"api\u005fkey":"k3y-v4lue-long","note":"\u0042earer abcdefgh12345678"}}"#
                .into(),
            r#"{"id":null,"method":"x","params":["positional", {"progressToken": 9}]}"#.into(),
            r#"{"id":4,"id":5,"result":{}}"#.into(),
            r#"{"method":"notifications/progress","params":{"progressToken":"t\u0031","progress":1}}"#.into(),
            r#"{"id":6,"method":"x","params":{"_meta":"not an object"}}"#.into(),
        ]
    }

    #[test]
    fn a_message_is_written_as_its_tree_would_be_after_redaction() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        for text in messages() {
            let mut tree: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                redactor.touches_json(&text),
                redactor.touches(&tree),
                "the lean check and the tree's agree on {text}"
            );
            redactor.value(&mut tree);
            let message = Message::parse(&text, &redactor).expect("an object");
            let written: Value = serde_json::from_str(message.text.get()).unwrap();
            assert_eq!(written, tree, "{text}");
            assert_eq!(
                message.id,
                tree.get("id").map(Value::to_string),
                "the id key of {text}"
            );
            assert_eq!(message.has_method, tree.get("method").is_some(), "{text}");
        }
    }

    #[test]
    #[cfg(unix)] // Unix-spelled paths: the Windows spelling is pinned in paths.rs
    fn a_recording_writes_the_roots_paths_as_tokens_and_names_them_in_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let roots = crate::paths::PathRoots::new(
            Some(std::path::Path::new("/tmp/rec-1")),
            Some(std::path::Path::new("/home/ana")),
        );
        let redactor = Redactor::new(&[], &[]).unwrap().with_paths(roots);
        let options = RecordOptions {
            argv: Vec::new(),
            cassette: cassette.clone(),
            mode: RecordMode::Once,
            redactor: redactor.clone(),
        };
        let mut recorder = Recorder::new(options, "stdio");
        let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/rec-1/a.txt"}}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"/tmp/rec-1/a.txt in /home/ana"}]}}"#;
        let now = Instant::now();
        recorder.on_client_at(Message::parse(request, &redactor).unwrap(), now);
        recorder.on_server_at(Message::parse(answer, &redactor).unwrap(), now);
        recorder.finish().unwrap();
        let loaded = crate::cassette::read(&cassette).unwrap();
        assert_eq!(loaded.cassette.header.paths, ["cwd", "home"]);
        assert_eq!(loaded.cassette.header.format_version, 3);
        let interaction = &loaded.cassette.into_interactions()[0];
        assert_eq!(
            interaction.request["params"]["arguments"]["path"],
            "{{dshkit:cwd}}/a.txt"
        );
        assert_eq!(
            interaction.responses[0]["result"]["content"][0]["text"],
            "{{dshkit:cwd}}/a.txt in {{dshkit:home}}"
        );
        let text = std::fs::read_to_string(&cassette).unwrap();
        assert!(
            !text.contains("/tmp/rec-1") && !text.contains("REDACTED"),
            "{text}"
        );
    }

    #[test]
    fn one_value_written_two_ways_is_one_key() {
        let key = |text: &str| key_of(&RawValue::from_string(text.to_owned()).unwrap());
        assert_eq!(key(r#""\u0061b""#), key(r#""ab""#));
        assert_eq!(key("1e2"), key("100.0"));
        assert_ne!(key("1"), key(r#""1""#));
        assert_eq!(key("-12"), "-12");
    }

    #[test]
    fn text_that_is_not_an_object_is_no_message() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        for text in ["[1, 2]", "42", "not json", "{\"id\": 1", ""] {
            assert!(Message::parse(text, &redactor).is_none(), "{text}");
        }
    }

    #[test]
    fn an_answer_is_attributed_to_its_request_when_the_server_writes_the_id_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let (mut recorder, cassette) = recorder_in(&dir);
        let redactor = Redactor::new(&[], &[]).unwrap();
        let request = r#"{"jsonrpc":"2.0","id":"r\u00e9q","method":"tools/list","params":{"_meta":{"progressToken":1e0}}}"#;
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.0,"progress":1}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":"réq","result":{"tools":[]}}"#;
        let other = r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#;
        let now = Instant::now();
        recorder.on_client_at(Message::parse(request, &redactor).unwrap(), now);
        // A second request in flight: the notification is attributed by its token.
        recorder.on_client_at(Message::parse(other, &redactor).unwrap(), now);
        recorder.on_server_at(Message::parse(progress, &redactor).unwrap(), now);
        recorder.on_server_at(Message::parse(answer, &redactor).unwrap(), now);
        let summary = recorder.finish().unwrap();
        assert_eq!(
            (summary.interactions, summary.messages),
            (1, 1),
            "the ping, never answered, is kept as a message"
        );
        let loaded = crate::cassette::read(&cassette).unwrap();
        let interaction = &loaded.cassette.into_interactions()[0];
        assert_eq!(interaction.request["id"], json!("réq"));
        assert_eq!(
            interaction.responses,
            [serde_json::from_str::<Value>(answer).unwrap()]
        );
        assert_eq!(interaction.notifications.len(), 1);
    }

    #[test]
    fn requests_left_unanswered_are_kept_as_messages_and_only_so_many_wait() {
        let dir = tempfile::tempdir().unwrap();
        let (mut recorder, cassette) = recorder_in(&dir);
        let redactor = Redactor::new(&[], &[]).unwrap();
        let request = |id: usize| {
            let text =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow"}}}}"#);
            Message::parse(&text, &redactor).unwrap()
        };
        let now = Instant::now();
        for id in 0..=MAX_PENDING_REQUESTS {
            recorder.on_client_at(request(id), now);
        }
        assert_eq!(recorder.pending.len(), MAX_PENDING_REQUESTS);
        assert!(!recorder.pending.contains_key("0"), "the oldest made room");
        // The id of a request still waiting, used again: the first is kept too.
        recorder.on_client_at(request(7), now);
        let answer = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        recorder.on_server_at(Message::parse(answer, &redactor).unwrap(), now);
        let summary = recorder.finish().unwrap();
        assert_eq!(
            (summary.interactions, summary.messages),
            (1, MAX_PENDING_REQUESTS as u64 + 1)
        );
        let loaded = crate::cassette::read(&cassette).unwrap();
        let ids: Vec<Value> = loaded
            .cassette
            .records
            .iter()
            .filter_map(|record| match record {
                crate::cassette::Record::Message { from, message } if from == "client" => {
                    Some(message["id"].clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            ids[..3],
            [json!(0), json!(7), json!(1)],
            "in the order they were given up"
        );
        assert_eq!(ids.len(), MAX_PENDING_REQUESTS + 1);
    }

    #[test]
    fn a_server_request_is_kept_with_the_request_it_came_under_answered_or_not() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        let parse = |text: &str| Message::parse(text, &redactor).unwrap();
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sampleLLM"}}"#;
        let sampling = r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}"#;
        let sampled = r#"{"jsonrpc":"2.0","id":"s1","result":{"content":{"type":"text","text":"hi"}}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let logged = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"asking"}}"#;
        let tree = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        for answered in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let (mut recorder, cassette) = recorder_in(&dir);
            let now = Instant::now();
            recorder.on_client_at(parse(call), now);
            recorder.on_server_at(parse(logged), now);
            recorder.on_server_at(parse(sampling), now);
            recorder.on_client_at(parse(sampled), now);
            if answered {
                recorder.on_server_at(parse(answer), now);
            }
            recorder.finish().unwrap();
            let records = crate::cassette::read(&cassette).unwrap().cassette.records;
            if answered {
                let [crate::cassette::Record::Interaction(interaction)] = &records[..] else {
                    panic!("one interaction: {records:?}");
                };
                assert_eq!(
                    interaction.server_requests,
                    [
                        json!({"request": tree(sampling)}),
                        json!({"response": tree(sampled)})
                    ]
                );
                assert_eq!(
                    interaction.server_requests_after,
                    [1, 1],
                    "both came after the one notification"
                );
            } else {
                let messages: Vec<(String, Value)> = records
                    .into_iter()
                    .filter_map(|record| match record {
                        crate::cassette::Record::Message { from, message } => Some((from, message)),
                        _ => None,
                    })
                    .collect();
                let expected = [
                    ("client", call),
                    ("server", logged),
                    ("server", sampling),
                    ("client", sampled),
                ]
                .map(|(from, text)| (from.to_owned(), tree(text)));
                assert_eq!(messages, expected);
            }
        }
    }

    #[test]
    fn the_recorder_keeps_when_each_notification_came_before_its_response() {
        let dir = tempfile::tempdir().unwrap();
        let (mut recorder, cassette) = recorder_in(&dir);
        let arrived = Instant::now();
        let redactor = Redactor::new(&[], &[]).unwrap();
        let parse = |text: &str| Message::parse(text, &redactor).unwrap();
        recorder.on_client_at(
            parse(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":3}}}"#),
            arrived,
        );
        recorder.on_server_at(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}"#),
            arrived,
        );
        recorder.on_server_at(
            parse(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            arrived + std::time::Duration::from_millis(20),
        );
        recorder.finish().unwrap();
        let loaded = crate::cassette::read(&cassette).unwrap();
        let interaction = &loaded.cassette.into_interactions()[0];
        assert_eq!(interaction.notifications.len(), 1);
        assert_eq!(interaction.notification_lead_us, [20_000]);
        assert_eq!(interaction.ms, 20);
    }

    #[test]
    fn an_http_answer_that_is_no_success_is_kept_with_its_status_and_a_body_that_is_no_answer_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let (mut recorder, cassette) = recorder_in(&dir);
        let request = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        for id in [1, 2] {
            recorder.on_client(&request(id));
        }
        let answer = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32_000, "message": "no session"}});
        recorder.on_http_answer(
            &request(1),
            404,
            Some("application/json".into()),
            answer.to_string().as_bytes(),
        );
        let page = format!("<h1>Bad gateway</h1> token {token}");
        recorder.on_http_answer(&request(2), 502, Some("text/html".into()), page.as_bytes());
        recorder.finish().unwrap();
        let interactions = crate::cassette::read(&cassette)
            .unwrap()
            .cassette
            .into_interactions();
        assert_eq!(interactions.len(), 2);
        assert_eq!(interactions[0].status, Some(404));
        assert_eq!(
            interactions[0].responses,
            [answer],
            "the JSON-RPC answer to its request"
        );
        assert_eq!(interactions[0].body, None);
        assert_eq!(interactions[1].status, Some(502));
        assert_eq!(interactions[1].content_type.as_deref(), Some("text/html"));
        assert!(interactions[1].responses.is_empty());
        let body = interactions[1].body.as_deref().unwrap();
        assert!(
            body.starts_with("<h1>Bad gateway</h1> token [REDACTED:") && !body.contains(&token),
            "{body}"
        );
    }
}
