//! Replay without a transport: the logic that answers a client's frame from a
//! cassette, which the stdio and the HTTP transports both drive. A request is
//! read from its text (`LiveRequest`), keyed and matched ([`Matcher`]); a hit
//! becomes what to send, in order (notifications with the live progress token,
//! the pauses between them, the responses with the live id, this machine's
//! paths where the cassette holds tokens, the server requests to ask the
//! client first); a miss becomes the JSON-RPC error
//! that explains it, or, with `--on-miss passthrough`, the request to pass to
//! the real server (numbered after the cassette's interactions).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cassette::Interaction;
use crate::error::EchoError;
use crate::index::CassetteIndex;
use crate::json_diff::differing_paths;
use crate::key::{MatchOptions, key};
use crate::live_id::{id_place, splice, with_live_id};
use crate::live_request::{LiveRequest, Read};
use crate::matcher::{Matcher, Miss};
use crate::paths::PathRoots;
use crate::redact::Redactor;
use crate::server_request::{Failure, Placed, Step, steps};

/// Longest recorded gap reproduced between a replayed notification and the
/// message after it.
pub const MAX_NOTIFICATION_GAP: Duration = Duration::from_millis(250);
/// JSON-RPC error code of a replay miss.
pub const MISS_CODE: i64 = -32_001;
/// JSON-RPC error code of a recorded HTTP answer replayed where no HTTP status
/// can be (stdio) when its body was no JSON-RPC answer.
pub const HTTP_ERROR_CODE: i64 = -32_002;

/// How recorded timing is reproduced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// Answer at once.
    None,
    /// Wait the recorded time times `scale`, at most `cap`.
    Recorded { scale: f64, cap: Duration },
}

/// What to do when a request has no recorded answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnMiss {
    /// A JSON-RPC error with the near-miss explanation (the default).
    Error,
    /// Ask the real server (started on the first miss) and append its answer to the
    /// cassette, marked `origin: live`.
    Passthrough(Vec<String>),
}

impl OnMiss {
    /// The real server's argv (empty without passthrough).
    pub(crate) fn argv(&self) -> &[String] {
        match self {
            Self::Error => &[],
            Self::Passthrough(argv) => argv,
        }
    }
}

/// What to replay.
#[derive(Debug)]
pub struct ReplayOptions {
    pub cassette: PathBuf,
    pub timing: Timing,
    pub on_miss: OnMiss,
    pub annotate: bool,
    pub matching: MatchOptions,
    pub redactor: Redactor,
}

impl ReplayOptions {
    /// The cassette's file name, as annotations name it.
    pub(crate) fn cassette_id(&self) -> String {
        self.cassette
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// What a replay did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySummary {
    pub hits: u64,
    pub misses: u64,
    pub passthroughs: u64,
    pub parse_errors: u64,
    pub warnings: Vec<String>,
}

/// A replay between frames: the cassette's pools and what was answered.
pub(crate) struct Replayer {
    matcher: Matcher,
    summary: ReplaySummary,
    /// The cassette's file name, for annotations.
    cassette_id: String,
    /// What a passthrough opens the live server with.
    handshake: Option<Value>,
    /// The highest ordinal in the cassette so far (passthroughs are numbered
    /// after it).
    last_ordinal: u64,
    /// The protocol era the cassette was recorded in (`2025`, `2026`).
    era: String,
    /// The number of the last server request replayed (its id is made of it).
    server_requests_sent: u64,
    /// Whether an interaction of the cassette holds server requests.
    #[cfg_attr(
        not(unix),
        expect(dead_code, reason = "only the Unix stdio fast path reads it")
    )]
    asks_client: bool,
}

/// What the client is sent for one frame.
pub(crate) enum Reply {
    /// Nothing: a blank line, a notification, an answer to a server request.
    Nothing,
    /// This one message (without a newline): a parse error, or the JSON-RPC
    /// error of a miss.
    Send(Vec<u8>),
    /// A hit: what it recorded.
    Hit(Outgoing),
    /// A miss to ask the real server about (`--on-miss passthrough`): the
    /// request's tree.
    PassThrough(Value),
}

impl Replayer {
    /// Opens the cassette; `options.redactor` takes the roots its header names
    /// (see [`crate::cassette::Header::scope_paths`]).
    pub(crate) fn open(options: &mut ReplayOptions) -> Result<Self, EchoError> {
        let index = CassetteIndex::open(&options.cassette, &options.matching)?;
        index.header.scope_paths(&mut options.redactor);
        for warning in &index.warnings {
            tracing::warn!("{}: {warning}", options.cassette.display());
        }
        Ok(Self {
            summary: ReplaySummary {
                warnings: index.warnings.clone(),
                ..ReplaySummary::default()
            },
            cassette_id: options.cassette_id(),
            handshake: index.handshake.clone(),
            last_ordinal: index.max_ordinal,
            era: index.header.era.clone(),
            server_requests_sent: 0,
            asks_client: index.asks_client,
            matcher: Matcher::indexed(index, options.matching.clone()),
        })
    }

    /// What to send for `frame`, one line from the client.
    pub(crate) fn step(&mut self, frame: &[u8], options: &ReplayOptions) -> Reply {
        if frame.iter().all(u8::is_ascii_whitespace) {
            return Reply::Nothing;
        }
        match LiveRequest::read(frame, &options.redactor) {
            Read::Request(request) => self.answer(request, options),
            Read::NoReply => Reply::Nothing,
            Read::NotJson => {
                self.summary.parse_errors += 1;
                Reply::Send(parse_error())
            }
        }
    }

    /// What to send for the live `request`: the recorded answer, or why there
    /// is none, or (with passthrough) the request to pass on.
    pub(crate) fn answer(&mut self, request: LiveRequest<'_>, options: &ReplayOptions) -> Reply {
        let miss = match outgoing(
            &mut self.matcher,
            &request,
            options,
            &self.cassette_id,
            &mut self.server_requests_sent,
        ) {
            Ok(outgoing) => {
                self.summary.hits += 1;
                return Reply::Hit(outgoing);
            }
            Err(miss) => miss,
        };
        let id = request.id();
        // A miss is annotated as a hit is (its fingerprint), in the error's data.
        let fingerprint = options
            .annotate
            .then(|| request.tree().ok())
            .flatten()
            .filter(|tree| tree["method"] == "tools/call")
            .map(|tree| fingerprint(tree, &options.matching));
        if matches!(options.on_miss, OnMiss::Passthrough(_))
            && let Ok(tree) = request.into_tree()
        {
            self.summary.passthroughs += 1;
            return Reply::PassThrough(tree);
        }
        self.summary.misses += 1;
        let mut message = miss_message(&id, &miss);
        if let Some(fingerprint) = fingerprint {
            message["error"]["data"]["dshkit/echo"] = json!({
                "cassette": self.cassette_id, "mode": "replay", "outcome": "miss",
                "fingerprint": fingerprint, "reason": miss.reason(),
            });
        }
        Reply::Send(serde_json::to_vec(&message).expect("JSON serializes"))
    }

    /// The ordinal of the next interaction appended to the cassette.
    pub(crate) fn next_ordinal(&mut self) -> u64 {
        self.last_ordinal += 1;
        self.last_ordinal
    }

    /// The recorded handshake, which a passthrough opens the live server with.
    pub(crate) fn handshake(&self) -> Option<&Value> {
        self.handshake.as_ref()
    }

    /// The protocol era the cassette was recorded in (`2025`, `2026`).
    pub(crate) fn era(&self) -> &str {
        &self.era
    }

    /// Whether a hit may ask the client something (the cassette holds server
    /// requests): a transport that cannot wait for an answer must not serve it.
    /// Only the Unix stdio fast path (a blocking read) asks.
    #[cfg(unix)]
    pub(crate) fn asks_client(&self) -> bool {
        self.asks_client
    }

    /// Counts a hit whose server request failed (see [`Outgoing::failed`]) as a miss.
    pub(crate) fn server_request_failed(&mut self) {
        self.summary.hits = self.summary.hits.saturating_sub(1);
        self.summary.misses += 1;
    }

    pub(crate) fn into_summary(self) -> ReplaySummary {
        self.summary
    }
}

/// The answer to a frame that is not JSON (one message, without a newline).
pub(crate) fn parse_error() -> Vec<u8> {
    let error =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32_700, "message": "Parse error: not JSON"}});
    serde_json::to_vec(&error).expect("JSON serializes")
}

/// The JSON-RPC error a miss of the request with `id` is answered with.
fn miss_message(id: &Value, miss: &Miss) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": MISS_CODE, "message": format!("echo: no recorded answer: {}", miss.message()), "data": miss.data()
    }})
}

/// What replaying `interaction` for the live request `message` (id `id`) sends:
/// its notifications (progress tokens rewritten to the live request's), then its
/// response(s) with the live id, annotated when asked.
fn playback(
    interaction: &Interaction,
    message: &Value,
    id: &Value,
    options: &ReplayOptions,
    cassette_id: &str,
) -> (Vec<Value>, Vec<Value>) {
    let notifications = with_live_token(
        interaction.notifications.clone(),
        &message["params"]["_meta"]["progressToken"],
    );
    let responses = interaction
        .responses
        .iter()
        .map(|response| {
            let mut response = response.clone();
            response["id"] = id.clone();
            if options.annotate {
                annotate(
                    &mut response,
                    cassette_id,
                    interaction,
                    "hit",
                    message,
                    &options.matching,
                );
            }
            response
        })
        .collect();
    (notifications, responses)
}

/// Recorded `notifications` with the live request's progress `token`.
fn with_live_token(mut notifications: Vec<Value>, token: &Value) -> Vec<Value> {
    if !token.is_null() {
        for notification in &mut notifications {
            if !notification["params"]["progressToken"].is_null() {
                notification["params"]["progressToken"] = token.clone();
            }
        }
    }
    notifications
}

/// The recorded delay (`ms` from request to response) under `timing`.
fn recorded_delay(ms: u64, timing: Timing) -> Option<Duration> {
    match timing {
        Timing::None => None,
        Timing::Recorded { scale, cap } => Some(Duration::from_millis(ms).mul_f64(scale.max(0.0)).min(cap)),
    }
}

/// How long to wait after each of `count` replayed notifications: the recorded
/// gap (from `leads`, each notification's lead on the response in µs) to the
/// next notification or, after the last one, to the response; scaled like the
/// rest of the timing and at most [`MAX_NOTIFICATION_GAP`]. Zero for cassettes
/// recorded without the gaps.
fn notification_gaps(leads: &[u64], count: usize, timing: Timing) -> Vec<Duration> {
    if leads.len() != count {
        return vec![Duration::ZERO; count];
    }
    let scale = match timing {
        Timing::None => 1.0,
        Timing::Recorded { scale, .. } => scale.max(0.0),
    };
    leads
        .iter()
        .enumerate()
        .map(|(i, lead)| {
            let next = leads.get(i + 1).copied().unwrap_or(0);
            Duration::from_micros(lead.saturating_sub(next))
                .mul_f64(scale)
                .min(MAX_NOTIFICATION_GAP)
        })
        .collect()
}

/// The part of a cassette line a replay hit sends. The request is skipped
/// unread and each response is kept as its recorded text: a hit builds no JSON
/// tree but the (usually absent) notifications.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recorded<'a> {
    #[serde(borrow)]
    responses: Vec<&'a RawValue>,
    #[serde(default)]
    notifications: Vec<Value>,
    #[serde(default)]
    notification_lead_us: Vec<u64>,
    #[serde(default)]
    server_requests: Vec<Value>,
    #[serde(default)]
    server_requests_after: Vec<u64>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    body: Option<String>,
    ms: u64,
}

/// What replay sends for one hit, in order, and the pauses between.
pub(crate) struct Outgoing {
    /// Before anything (the recorded time to the response, under `--timing`).
    pub(crate) delay: Option<Duration>,
    pub(crate) notifications: Vec<Value>,
    /// After each notification.
    pub(crate) gaps: Vec<Duration>,
    /// Each response: one JSON line, without its newline.
    pub(crate) responses: Vec<Vec<u8>>,
    /// The server requests asked before the responses, each after so many of
    /// the notifications, and the answers waited for.
    pub(crate) server_requests: Vec<Placed>,
    /// The live request's id (what a failed server request's miss answers);
    /// `null` for a hit without server requests.
    pub(crate) call_id: Value,
    /// The recorded HTTP status other than 200, and what came with it.
    pub(crate) http: Option<HttpAnswer>,
}

/// A recorded HTTP answer that was not a plain 200: an HTTP replay answers
/// with its status, its content type, and its body or response.
pub(crate) struct HttpAnswer {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    /// The body that answered instead of a JSON-RPC response, as recorded
    /// (this machine's paths in place of tokens).
    pub(crate) body: Option<Vec<u8>>,
}

impl HttpAnswer {
    /// The answer of `status`, `content_type` and `body` (recorded), if
    /// there is a status.
    fn of(
        status: Option<u16>,
        content_type: Option<String>,
        body: Option<String>,
        paths: &PathRoots,
    ) -> Option<Self> {
        Some(Self {
            status: status?,
            content_type,
            body: body.map(|body| paths.expand(&body).into_owned().into_bytes()),
        })
    }

    /// What a transport without statuses (stdio) answers the call with when
    /// the body was no JSON-RPC answer: an error naming the status.
    fn as_error(&self, id: &Value) -> Vec<u8> {
        let body = self
            .body
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        serde_json::to_vec(&http_status_error(id, self.status, &body)).expect("JSON serializes")
    }
}

/// The JSON-RPC error that answers the request with `id` where the server
/// answered HTTP `status` with `body`, no JSON-RPC answer.
pub(crate) fn http_status_error(id: &Value, status: u16, body: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": HTTP_ERROR_CODE,
        "message": format!("echo: the server answered HTTP {status} without a JSON-RPC answer"),
        "data": {"echo": "http_status", "status": status, "body": body},
    }})
}

/// The event of a placed server request.
fn event(placed: &Placed) -> Event<'_> {
    match &placed.step {
        Step::Ask(request) => Event::Ask(request),
        Step::Await(awaited) => Event::Await(awaited),
    }
}

/// One thing a hit sends or waits for before its responses, in order.
pub(crate) enum Event<'a> {
    /// A notification, and the pause after it.
    Notification(&'a Value, Duration),
    /// A server request to send.
    Ask(&'a Value),
    /// The client's answer to wait for.
    Await(&'a crate::server_request::Awaited),
}

impl Outgoing {
    /// A hit of `responses` alone.
    fn plain(responses: Vec<Vec<u8>>) -> Self {
        Self {
            delay: None,
            notifications: Vec::new(),
            gaps: Vec::new(),
            responses,
            server_requests: Vec::new(),
            call_id: Value::Null,
            http: None,
        }
    }

    /// This hit with the recorded server requests, `exchanges` (with their
    /// places), numbered on from `sent`, and the recorded HTTP answer `http`
    /// (a body that was no JSON-RPC answer becomes the error stdio sends).
    fn with_recorded(
        mut self,
        exchanges: (Vec<Value>, &[u64]),
        http: Option<HttpAnswer>,
        request: &LiveRequest<'_>,
        paths: &PathRoots,
        sent: &mut u64,
    ) -> Self {
        let (exchanges, after) = exchanges;
        if !exchanges.is_empty() {
            self.server_requests = steps(exchanges, after, self.notifications.len(), sent, paths);
            self.call_id = request.id();
        }
        if let Some(http) = &http
            && self.responses.is_empty()
        {
            self.responses.push(http.as_error(&request.id()));
        }
        self.http = http;
        self
    }

    /// The notifications and server requests, in the order they were recorded.
    pub(crate) fn events(&self) -> Vec<Event<'_>> {
        let mut steps = self.server_requests.iter().peekable();
        let mut events = Vec::with_capacity(self.notifications.len() + self.server_requests.len());
        for (index, notification) in self.notifications.iter().enumerate() {
            while let Some(placed) = steps.next_if(|placed| placed.after <= index) {
                events.push(event(placed));
            }
            let gap = self.gaps.get(index).copied().unwrap_or_default();
            events.push(Event::Notification(notification, gap));
        }
        events.extend(steps.map(event));
        events
    }

    /// The message that answers the call instead of its responses when one of
    /// its server requests went wrong (one JSON line, without its newline).
    pub(crate) fn failed(&self, failure: &Failure) -> Vec<u8> {
        let message = json!({"jsonrpc": "2.0", "id": self.call_id, "error": {
            "code": MISS_CODE, "message": format!("echo: no recorded answer: {}", failure.message()),
            "data": failure.data(),
        }});
        serde_json::to_vec(&message).expect("JSON serializes")
    }
}

/// What replay (over stdio or HTTP) sends for the live `request`: the recorded
/// answer `matcher` finds for it, or why there is none. Annotated answers are
/// built as JSON trees (their result gains `_meta`); the others copy the
/// recorded responses' text with the live id put in.
fn outgoing(
    matcher: &mut Matcher,
    request: &LiveRequest<'_>,
    options: &ReplayOptions,
    cassette_id: &str,
    server_requests_sent: &mut u64,
) -> Result<Outgoing, Miss> {
    // Most requests are keyed from their text; the rest, and every miss (which
    // `position_of` leaves as it was), go through the tree.
    let found = request
        .key(&options.matching, &options.redactor)
        .and_then(|(key, method)| matcher.position_of(&key, method));
    let position = match found {
        Some(position) => position,
        None => matcher.find_position(tree_of(request)?, Some(&options.redactor))?,
    };
    let matcher = &*matcher;
    let paths = options.redactor.paths();
    let mut line = Vec::new();
    if !options.annotate
        && options.timing == Timing::None
        && let Some(response) = matcher.answer(position, &mut line)?
        && let Some(place) = id_place(response)
    {
        let response = splice(response, &place, &request.id_json());
        return Ok(Outgoing::plain(vec![expand_paths(paths, response)]));
    }
    if options.annotate {
        let interaction: Interaction = matcher.parse(position, &mut line)?;
        let (mut notifications, mut responses) = playback(
            &interaction,
            tree_of(request)?,
            &request.id(),
            options,
            cassette_id,
        );
        for message in notifications.iter_mut().chain(&mut responses) {
            paths.expand_value(message);
        }
        let http = HttpAnswer::of(
            interaction.status,
            interaction.content_type,
            interaction.body,
            paths,
        );
        let outgoing = Outgoing {
            delay: recorded_delay(interaction.ms, options.timing),
            gaps: notification_gaps(
                &interaction.notification_lead_us,
                notifications.len(),
                options.timing,
            ),
            notifications,
            responses: responses
                .iter()
                .map(|r| serde_json::to_vec(r).expect("JSON serializes"))
                .collect(),
            ..Outgoing::plain(Vec::new())
        };
        let exchanges = (
            interaction.server_requests,
            &interaction.server_requests_after[..],
        );
        return Ok(outgoing.with_recorded(exchanges, http, request, paths, server_requests_sent));
    }
    let reply: Recorded<'_> = matcher.parse(position, &mut line)?;
    let mut notifications = if reply.notifications.is_empty() {
        reply.notifications
    } else {
        with_live_token(reply.notifications, request.progress_token())
    };
    for notification in &mut notifications {
        paths.expand_value(notification);
    }
    let id = request.id_json();
    let outgoing = Outgoing {
        delay: recorded_delay(reply.ms, options.timing),
        gaps: notification_gaps(&reply.notification_lead_us, notifications.len(), options.timing),
        notifications,
        responses: reply
            .responses
            .iter()
            .map(|r| expand_paths(paths, with_live_id(r.get(), &id)))
            .collect(),
        ..Outgoing::plain(Vec::new())
    };
    let http = HttpAnswer::of(reply.status, reply.content_type, reply.body, paths);
    let exchanges = (reply.server_requests, &reply.server_requests_after[..]);
    Ok(outgoing.with_recorded(exchanges, http, request, paths, server_requests_sent))
}

/// A recorded response's text with this machine's paths where the cassette
/// holds tokens; the same bytes when it holds none.
fn expand_paths(paths: &PathRoots, response: Vec<u8>) -> Vec<u8> {
    match paths.expand_json_text(&response) {
        std::borrow::Cow::Borrowed(_) => response,
        std::borrow::Cow::Owned(expanded) => expanded,
    }
}

/// The tree of the live `request`, or the miss of one that has none.
fn tree_of<'r>(request: &'r LiveRequest<'_>) -> Result<&'r Value, Miss> {
    request.tree().map_err(|reason| Miss::Unreadable {
        reason: reason.to_owned(),
    })
}

/// The fingerprint annotations give a request: the first 16 hex digits of the
/// SHA-256 of its match key.
pub(crate) fn fingerprint(request: &Value, matching: &MatchOptions) -> String {
    let digest = hex::encode(Sha256::digest(key(request, matching).as_bytes()));
    digest[..16].to_owned()
}

pub(crate) fn annotate(
    response: &mut Value,
    cassette: &str,
    interaction: &Interaction,
    outcome: &str,
    live_request: &Value,
    matching: &MatchOptions,
) {
    if live_request["method"] != "tools/call" {
        return;
    }
    let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    let fingerprint = fingerprint(live_request, matching);
    let diff = differing_paths(
        &interaction.request["params"]["arguments"],
        &live_request["params"]["arguments"],
    );
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "dshkit/echo".into(),
            json!({
                "cassette": cassette, "mode": "replay", "ordinal": interaction.ordinal,
                "outcome": outcome, "fingerprint": fingerprint, "diff": diff,
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_keep_their_recorded_distance_to_what_follows_them() {
        // Two progress notifications, 1 s and 300 µs before the response.
        let gaps = notification_gaps(&[1_000_000, 300], 2, Timing::None);
        assert_eq!(gaps, [MAX_NOTIFICATION_GAP, Duration::from_micros(300)]);
        let halved = notification_gaps(
            &[100_000, 300],
            2,
            Timing::Recorded {
                scale: 0.5,
                cap: Duration::from_secs(10),
            },
        );
        assert_eq!(
            halved,
            [Duration::from_micros(49_850), Duration::from_micros(150)]
        );
    }

    #[test]
    fn a_cassette_without_recorded_gaps_replays_without_pauses() {
        let gaps = notification_gaps(&[], 2, Timing::None);
        assert_eq!(gaps, [Duration::ZERO, Duration::ZERO]);
    }
}
