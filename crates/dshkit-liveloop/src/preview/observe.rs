//! Observation of a preview in bounded ring buffers, with a resettable window:
//! console messages, exceptions and rejections, failed and >= 400 requests,
//! navigations and blocked requests (a socket the preview's proxy refused is
//! one only once a WebSocket of the page claims it).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::documents::{MainDocuments, is_outdated_module_answer};
use super::policy::BlockReason;
use super::world::MainWorld;

/// Console entries kept per window.
pub const DEFAULT_MAX_CONSOLE: usize = 200;
/// Failed or >= 400 requests kept per window.
pub const DEFAULT_MAX_NETWORK: usize = 200;
/// Navigations kept per window.
pub const DEFAULT_MAX_NAVIGATIONS: usize = 50;
/// Blocked requests kept per window.
pub const DEFAULT_MAX_BLOCKED: usize = 100;
/// Longest text kept of one entry (characters).
pub const DEFAULT_MAX_ENTRY_CHARS: usize = 2000;
/// Refused sockets no WebSocket of the page claimed, and WebSockets of the page
/// no refusal matched, each kept this many at most (the oldest go first).
pub(crate) const MAX_UNMATCHED_SOCKETS: usize = 32;

/// A ring buffer that counts what it had to drop.
#[derive(Debug, Clone)]
pub struct Ring<T> {
    /// Each entry with its number: how many were pushed before it.
    items: VecDeque<(u64, T)>,
    capacity: usize,
    dropped: u64,
    /// Entries ever pushed, across clears: tells a reader something new came.
    pushed: u64,
}

impl<T> Ring<T> {
    pub fn new(capacity: usize) -> Self {
        Self {
            items: VecDeque::with_capacity(capacity.min(64)),
            capacity,
            dropped: 0,
            pushed: 0,
        }
    }

    pub fn push(&mut self, item: T) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
            self.dropped += 1;
        }
        self.items.push_back((self.pushed, item));
        self.pushed += 1;
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(_, item)| item)
    }

    /// The entries still held that were pushed at or after `mark` (a [`Self::pushed`]).
    pub fn since(&self, mark: u64) -> impl Iterator<Item = &T> {
        self.items
            .iter()
            .filter(move |(seq, _)| *seq >= mark)
            .map(|(_, item)| item)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entries ever pushed (never reset).
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// Entries pushed out by newer ones since the last clear.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn clear(&mut self) {
        self.items.clear();
        self.dropped = 0;
    }

    fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.items.retain(|(_, item)| keep(item));
    }

    /// Removes the entries pushed since [`Self::pushed`] was `mark`.
    fn remove_since(&mut self, mark: u64) {
        self.items.retain(|(number, _)| *number < mark);
    }
}

/// Where a console entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleSource {
    /// `console.*` calls.
    Console,
    /// An uncaught exception.
    Exception,
    /// An unhandled promise rejection.
    Rejection,
    /// A browser log entry (network errors, interventions, ...).
    Browser,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleEntry {
    pub source: ConsoleSource,
    /// `error`, `warning`, `info`, `log`, `debug`, ...
    pub level: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// 1-based, as editors count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
}

/// Notices frameworks print on every page in development, which say nothing of
/// the app: the framework, and how its notice begins.
pub const FRAMEWORK_DEV_NOTICES: &[(&str, &str)] = &[("Lit", "Lit is in dev mode.")];

impl ConsoleEntry {
    /// The framework whose development-mode notice this is, when it is one.
    pub fn framework_notice(&self) -> Option<&'static str> {
        FRAMEWORK_DEV_NOTICES
            .iter()
            .find(|(_, start)| self.text.starts_with(start))
            .map(|(framework, _)| *framework)
    }

    /// ` at url:line:column`, as much of it as is known; empty when nothing is.
    pub fn place(&self) -> String {
        match (&self.url, self.line, self.column) {
            (Some(url), Some(line), Some(column)) => format!(" at {url}:{line}:{column}"),
            (Some(url), Some(line), None) => format!(" at {url}:{line}"),
            (Some(url), None, _) => format!(" at {url}"),
            _ => String::new(),
        }
    }

    /// An uncaught exception or unhandled rejection (not a `console.error` call).
    pub fn is_uncaught(&self) -> bool {
        matches!(self.source, ConsoleSource::Exception | ConsoleSource::Rejection)
    }

    /// One line for a result: the source, the message and where.
    pub fn summary(&self) -> String {
        let source = match self.source {
            ConsoleSource::Console => "console.error",
            ConsoleSource::Exception => "uncaught exception",
            ConsoleSource::Rejection => "unhandled rejection",
            ConsoleSource::Browser => "browser error",
        };
        let mut text: String = self.text.chars().take(300).collect();
        if text.len() < self.text.len() {
            text.push('…');
        }
        // An exception's description often ends in its stack, which names the
        // place already.
        let place = self.place();
        let named = self
            .url
            .as_ref()
            .zip(self.line)
            .is_some_and(|(url, line)| text.contains(&format!("{url}:{line}")));
        if named {
            format!("{source}: {text}")
        } else {
            format!("{source}: {text}{place}")
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkEntry {
    pub url: String,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The loader of the document that made the request.
    #[serde(skip)]
    loader: Option<String>,
}

impl NetworkEntry {
    /// What the request loaded, when it is the app's code: the page itself, or a
    /// source module or stylesheet it loads (a dev server builds these on request).
    pub fn code_kind(&self) -> Option<&'static str> {
        match self.resource_type.as_deref() {
            Some("Document") => Some("the page itself"),
            Some("Script") => Some("a source module"),
            Some("Stylesheet") => Some("a stylesheet"),
            _ => None,
        }
    }

    /// An HTTP 5xx for the app's code (see [`Self::code_kind`]): the dev server
    /// could not build or serve it, which is likely why the rest failed.
    pub fn is_code_server_error(&self) -> bool {
        self.status.is_some_and(|status| status >= 500) && self.code_kind().is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedEntry {
    pub url: String,
    #[serde(flatten)]
    pub reason: BlockReason,
}

#[derive(Debug, Clone)]
struct InFlight {
    url: String,
    method: String,
    resource_type: Option<String>,
    since: Instant,
    /// The order in which the page started it (see [`Observations::request_mark`]).
    seq: u64,
    loader: Option<String>,
}

impl InFlight {
    /// Whether a load waits for this request. Long-lived streams never finish by
    /// design, and the browser's own `/favicon.ico` request is not the page's (a
    /// dev server may compile its not-found route for it, for many seconds).
    fn holds_settle(&self) -> bool {
        let stream = self.resource_type.as_deref() == Some("EventSource");
        let favicon = matches!(self.resource_type.as_deref(), None | Some("Other"))
            && url::Url::parse(&self.url).is_ok_and(|u| u.path() == "/favicon.ico");
        !stream && !favicon
    }
}

/// Everything observed in the current window.
#[derive(Debug)]
pub struct Observations {
    pub console: Ring<ConsoleEntry>,
    pub network: Ring<NetworkEntry>,
    pub navigations: Ring<String>,
    pub blocked: Ring<BlockedEntry>,
    /// HTTP status of the first document response in the window (the page itself).
    pub document_status: Option<u16>,
    in_flight: HashMap<String, InFlight>,
    /// Requests started so far, in this page's life.
    requests_started: u64,
    window_started: Instant,
    /// Bumped by every reset, so a reader can tell its window was not restarted.
    window_id: u64,
    /// JavaScript contexts of the page (at most [`MAX_TRACKED_CONTEXTS`]).
    contexts: HashSet<i64>,
    /// Contexts of a document being replaced: what they still log or throw belongs
    /// to the old page, not to the window.
    retired: HashSet<i64>,
    /// Sockets the preview's proxy refused (authority, reason) that no WebSocket
    /// of the page or its observed workers claimed (yet): the browser's own
    /// connections, or an unobserved worker's socket. The two sides of a refused
    /// WebSocket arrive on separate paths, in either order.
    refused_unclaimed: VecDeque<(String, BlockReason)>,
    /// WebSockets the page (or an observed worker) opened (authority, URL) that no
    /// refusal matched yet.
    page_sockets: VecDeque<(String, String)>,
    /// The main frame's documents: a starting page's "not yet" that the same
    /// URL replaced is no failure of the window.
    documents: MainDocuments,
    /// [`Ring::pushed`] of the console when the current main document
    /// committed: what came after is that document's (or its frames').
    document_console_mark: u64,
    /// The top document's main-world context, where the preview's scripts run.
    world: MainWorld,
}

/// Most JavaScript contexts tracked per page (frames and workers each have one).
pub(crate) const MAX_TRACKED_CONTEXTS: usize = 256;

impl Default for Observations {
    fn default() -> Self {
        Self {
            console: Ring::new(DEFAULT_MAX_CONSOLE),
            network: Ring::new(DEFAULT_MAX_NETWORK),
            navigations: Ring::new(DEFAULT_MAX_NAVIGATIONS),
            blocked: Ring::new(DEFAULT_MAX_BLOCKED),
            document_status: None,
            in_flight: HashMap::new(),
            requests_started: 0,
            window_started: Instant::now(),
            window_id: 0,
            contexts: HashSet::new(),
            retired: HashSet::new(),
            refused_unclaimed: VecDeque::new(),
            page_sockets: VecDeque::new(),
            documents: MainDocuments::default(),
            document_console_mark: 0,
            world: MainWorld::default(),
        }
    }
}

/// Whether a `Network.requestWillBeSent` is a worker's main script: the page's
/// events show it start, but it ends on the worker's own target (a shared
/// worker's is never attached); kept in flight, it would hold every settle
/// until its deadline. It is the script's own document, with no loader.
fn is_worker_script(params: &Value) -> bool {
    params["type"] == "Script"
        && params["loaderId"] == ""
        && params["documentURL"].is_string()
        && params["documentURL"] == params["request"]["url"]
}

/// `host:port` of a WebSocket URL, lowercase, as the proxy names a tunnel.
fn socket_authority(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let port = url.port_or_known_default()?;
    Some(format!("{}:{port}", url.host_str()?).to_ascii_lowercase())
}

/// Pushes `item`, dropping the oldest beyond [`MAX_UNMATCHED_SOCKETS`].
fn push_bounded<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() >= MAX_UNMATCHED_SOCKETS {
        queue.pop_front();
    }
    queue.push_back(item);
}

fn clip(text: &str) -> String {
    if text.chars().count() <= DEFAULT_MAX_ENTRY_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(DEFAULT_MAX_ENTRY_CHARS).collect();
    out.push_str("…[truncated]");
    out
}

fn one_based(value: &Value) -> Option<u64> {
    value.as_u64().map(|v| v + 1)
}

impl Observations {
    /// Starts a new observation window. Requests in flight stay tracked.
    pub fn reset_window(&mut self) {
        self.console.clear();
        self.network.clear();
        self.navigations.clear();
        self.blocked.clear();
        self.refused_unclaimed.clear();
        self.page_sockets.clear();
        self.document_status = None;
        self.window_started = Instant::now();
        self.window_id += 1;
    }

    /// Marks every JavaScript context of the current document as the old page's:
    /// called before a navigation replaces it, so what the old page still logs or
    /// throws before the new document commits is not the new page's.
    pub fn retire_contexts(&mut self) {
        self.retired.extend(self.contexts.drain());
    }

    fn is_retired_context(&self, context: &Value) -> bool {
        context.as_i64().is_some_and(|id| self.retired.contains(&id))
    }

    /// Whether the page waits for the reload its dev server announced (it
    /// answered one of the page's modules "outdated"): the page is not settled.
    pub fn awaiting_reload(&self) -> bool {
        self.documents.awaiting_reload()
    }

    /// Identifies the current window; changes on every reset.
    pub fn window_id(&self) -> u64 {
        self.window_id
    }

    /// Milliseconds since the window started.
    pub fn window_ms(&self) -> u128 {
        self.window_started.elapsed().as_millis()
    }

    /// Requests in flight, not counting long-lived streams (EventSource), which
    /// never finish by design; WebSockets never enter the table.
    pub fn in_flight(&self) -> usize {
        self.in_flight.values().filter(|r| r.holds_settle()).count()
    }

    /// A mark for [`Self::in_flight_since`]: requests started after it are newer.
    pub fn request_mark(&self) -> u64 {
        self.requests_started
    }

    /// Requests started after `mark` and still in flight (streams excluded): the
    /// ones an action set off.
    pub fn in_flight_since(&self, mark: u64) -> usize {
        self.in_flight
            .values()
            .filter(|r| r.seq >= mark && r.holds_settle())
            .count()
    }

    /// The oldest `limit` requests still in flight (streams excluded), as
    /// `METHOD url (type, N ms)`: what a load that did not settle was waiting for.
    pub fn pending(&self, limit: usize) -> Vec<String> {
        let mut pending: Vec<&InFlight> = self.in_flight.values().filter(|r| r.holds_settle()).collect();
        pending.sort_by_key(|r| r.since);
        pending
            .into_iter()
            .take(limit)
            .map(|r| {
                format!(
                    "{} {} ({}, {} ms)",
                    r.method,
                    clip(&r.url),
                    r.resource_type.as_deref().unwrap_or("Other"),
                    r.since.elapsed().as_millis()
                )
            })
            .collect()
    }

    pub fn record_blocked(&mut self, url: &str, reason: BlockReason) {
        self.blocked.push(BlockedEntry {
            url: clip(url),
            reason,
        });
    }

    /// A socket the preview's proxy refused: the page's blocked request once a
    /// WebSocket the page opened to `authority` claims it, under the page's URL.
    pub fn refused_socket(&mut self, authority: &str, reason: BlockReason) {
        match self.page_sockets.iter().position(|(a, _)| a == authority) {
            Some(at) => {
                let (_, url) = self.page_sockets.remove(at).expect("a found index");
                self.record_blocked_socket(&url, reason);
            }
            None => push_bounded(&mut self.refused_unclaimed, (authority.to_owned(), reason)),
        }
    }

    /// A WebSocket the page opened (`Network.webSocketCreated`): it claims a
    /// refusal of its authority, now or when one comes.
    fn page_socket(&mut self, url: &str) {
        let Some(authority) = socket_authority(url) else {
            return;
        };
        match self.refused_unclaimed.iter().position(|(a, _)| *a == authority) {
            Some(at) => {
                let (_, reason) = self.refused_unclaimed.remove(at).expect("a found index");
                self.record_blocked_socket(url, reason);
            }
            None => push_bounded(&mut self.page_sockets, (authority, url.to_owned())),
        }
    }

    /// A refused WebSocket of the page, named by the URL the page gave it.
    fn record_blocked_socket(&mut self, url: &str, reason: BlockReason) {
        let reason = match reason {
            BlockReason::CrossOriginWebSocket { .. } => BlockReason::CrossOriginWebSocket { url: clip(url) },
            other => other,
        };
        self.record_blocked(url, reason);
    }

    /// Sockets the proxy refused in the window that no WebSocket of the page or
    /// its observed workers claimed, oldest first (at most
    /// [`MAX_UNMATCHED_SOCKETS`]): the browser's own connections, or an
    /// unobserved worker's socket.
    pub fn refused_unclaimed(&self) -> impl Iterator<Item = (&str, &BlockReason)> {
        self.refused_unclaimed.iter().map(|(a, r)| (a.as_str(), r))
    }

    /// Console errors, exceptions and rejections in the window. The browser's own
    /// "Failed to load resource" lines are left out: each is already a network entry.
    pub fn errors(&self) -> impl Iterator<Item = &ConsoleEntry> {
        self.console.iter().filter(|e| {
            e.level == "error"
                && !(e.source == ConsoleSource::Browser && e.text.starts_with("Failed to load resource"))
        })
    }

    /// Failed and >= 400 requests of the app itself: the 404 for `/favicon.ico`,
    /// which the browser asks for on its own, is left out (an app without a
    /// favicon is fine).
    pub fn failed_requests(&self) -> impl Iterator<Item = &NetworkEntry> {
        self.network.iter().filter(|n| {
            !(n.status == Some(404) && url::Url::parse(&n.url).is_ok_and(|u| u.path() == "/favicon.ico"))
        })
    }

    /// The top document's main-world JavaScript context, when it is known.
    pub(crate) fn main_world(&self) -> Option<i64> {
        self.world.context()
    }

    /// Takes one CDP event of the page.
    pub fn ingest(&mut self, method: &str, params: &Value) {
        if method.starts_with("Runtime.executionContext") || method == "Page.frameNavigated" {
            self.world.ingest(method, params);
        }
        match method {
            "Runtime.consoleAPICalled" if self.is_retired_context(&params["executionContextId"]) => {}
            "Runtime.exceptionThrown"
                if self.is_retired_context(&params["exceptionDetails"]["executionContextId"]) => {}
            "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" | "Log.entryAdded" => {
                self.ingest_console(method, params);
            }
            "Runtime.executionContextCreated" => {
                if let Some(id) = params["context"]["id"].as_i64()
                    && self.contexts.len() < MAX_TRACKED_CONTEXTS
                {
                    self.contexts.insert(id);
                }
            }
            "Runtime.executionContextDestroyed" => {
                if let Some(id) = params["executionContextId"].as_i64() {
                    self.contexts.remove(&id);
                    self.retired.remove(&id);
                }
            }
            "Runtime.executionContextsCleared" => {
                self.contexts.clear();
                self.retired.clear();
            }
            "Page.frameNavigated" => {
                let frame = &params["frame"];
                if frame.get("parentId").is_none() {
                    let url = frame["url"].as_str().unwrap_or_default();
                    self.navigations.push(clip(url));
                    let text = |key: &str| frame[key].as_str().unwrap_or_default();
                    if let Some(old) = self.documents.committed(text("id"), text("loaderId"), url) {
                        self.network
                            .retain(|entry| entry.loader.as_deref() != Some(old.loader.as_str()));
                        self.console.remove_since(self.document_console_mark);
                        self.document_status = old.successor_status;
                    }
                    self.document_console_mark = self.console.pushed();
                }
            }
            "Network.webSocketCreated" => self.page_socket(params["url"].as_str().unwrap_or_default()),
            _ => self.ingest_network(method, params),
        }
    }

    fn ingest_console(&mut self, method: &str, params: &Value) {
        match method {
            "Runtime.consoleAPICalled" => {
                let text = params["args"]
                    .as_array()
                    .map(|args| args.iter().map(remote_object_text).collect::<Vec<_>>().join(" "))
                    .unwrap_or_default();
                let frame = &params["stackTrace"]["callFrames"][0];
                let level = match params["type"].as_str().unwrap_or("log") {
                    "warning" | "warn" => "warning",
                    "assert" => "error",
                    other => other,
                };
                self.console.push(ConsoleEntry {
                    source: ConsoleSource::Console,
                    level: level.to_owned(),
                    text: clip(&text),
                    url: frame["url"].as_str().filter(|u| !u.is_empty()).map(str::to_owned),
                    line: one_based(&frame["lineNumber"]),
                    column: one_based(&frame["columnNumber"]),
                });
            }
            "Runtime.exceptionThrown" => {
                let details = &params["exceptionDetails"];
                let description = details["exception"]["description"].as_str();
                let headline = details["text"].as_str().unwrap_or("Uncaught");
                let rejection = headline.contains("(in promise)");
                let text = match (description, details["exception"]["value"].as_str()) {
                    (Some(d), _) => format!("{headline} {d}"),
                    (None, Some(v)) => format!("{headline} {v}"),
                    (None, None) => headline.to_owned(),
                };
                let frame = &details["stackTrace"]["callFrames"][0];
                let url = details["url"]
                    .as_str()
                    .or_else(|| frame["url"].as_str())
                    .filter(|u| !u.is_empty());
                self.console.push(ConsoleEntry {
                    source: if rejection {
                        ConsoleSource::Rejection
                    } else {
                        ConsoleSource::Exception
                    },
                    level: "error".into(),
                    text: clip(&text),
                    url: url.map(str::to_owned),
                    line: one_based(&details["lineNumber"]),
                    column: one_based(&details["columnNumber"]),
                });
            }
            "Log.entryAdded" => {
                let entry = &params["entry"];
                let text = entry["text"].as_str().unwrap_or_default();
                // A worker's console calls and uncaught errors reach the page
                // only as log entries: they keep their kind.
                let source = match entry["source"].as_str() {
                    Some("worker") if text.starts_with("Uncaught (in promise)") => ConsoleSource::Rejection,
                    Some("worker") if text.starts_with("Uncaught") => ConsoleSource::Exception,
                    Some("worker") => ConsoleSource::Console,
                    _ => ConsoleSource::Browser,
                };
                self.console.push(ConsoleEntry {
                    source,
                    level: entry["level"]
                        .as_str()
                        .unwrap_or("info")
                        .replace("verbose", "debug"),
                    text: clip(text),
                    url: entry["url"].as_str().map(str::to_owned),
                    line: one_based(&entry["lineNumber"]),
                    column: None,
                });
            }
            _ => {}
        }
    }

    fn ingest_network(&mut self, method: &str, params: &Value) {
        match method {
            "Network.requestWillBeSent" if is_worker_script(params) => {}
            "Network.requestWillBeSent" => {
                let id = params["requestId"].as_str().unwrap_or_default().to_owned();
                let seq = self.requests_started;
                self.requests_started += 1;
                self.in_flight.insert(
                    id,
                    InFlight {
                        url: params["request"]["url"].as_str().unwrap_or_default().to_owned(),
                        method: params["request"]["method"].as_str().unwrap_or("GET").to_owned(),
                        resource_type: params["type"].as_str().map(str::to_owned),
                        since: Instant::now(),
                        seq,
                        loader: params["loaderId"].as_str().map(str::to_owned),
                    },
                );
            }
            "Network.responseReceived" => {
                let status = params["response"]["status"].as_u64().unwrap_or(0);
                let loader = params["loaderId"].as_str();
                if params["type"] == "Document" {
                    self.documents.response(
                        params["frameId"].as_str().unwrap_or_default(),
                        loader.unwrap_or_default(),
                        u16::try_from(status).unwrap_or(0),
                    );
                    if self.document_status.is_none() {
                        self.document_status = u16::try_from(status).ok();
                    }
                }
                let status_text = params["response"]["statusText"].as_str().unwrap_or_default();
                if let Some(loader) = loader.filter(|_| is_outdated_module_answer(status, status_text)) {
                    self.documents.outdated(loader);
                }
                if status >= 400 && !self.documents.is_superseded(loader) {
                    let request = self
                        .in_flight
                        .get(params["requestId"].as_str().unwrap_or_default());
                    self.network.push(NetworkEntry {
                        url: clip(params["response"]["url"].as_str().unwrap_or_default()),
                        method: request.map_or_else(|| "GET".into(), |r| r.method.clone()),
                        status: u16::try_from(status).ok(),
                        error: None,
                        resource_type: params["type"].as_str().map(str::to_owned),
                        loader: loader.map(str::to_owned),
                    });
                }
            }
            "Network.loadingFinished" => {
                self.in_flight
                    .remove(params["requestId"].as_str().unwrap_or_default());
            }
            "Network.loadingFailed" => {
                if let Some(request) = self
                    .in_flight
                    .remove(params["requestId"].as_str().unwrap_or_default())
                {
                    let canceled = params["canceled"].as_bool().unwrap_or(false);
                    if !canceled && !self.documents.is_superseded(request.loader.as_deref()) {
                        self.network.push(NetworkEntry {
                            url: clip(&request.url),
                            method: request.method,
                            status: None,
                            error: params["errorText"].as_str().map(str::to_owned),
                            resource_type: request.resource_type,
                            loader: request.loader,
                        });
                    }
                }
            }
            "Page.frameNavigated" => {
                let frame = &params["frame"];
                if frame.get("parentId").is_none() {
                    self.navigations
                        .push(clip(frame["url"].as_str().unwrap_or_default()));
                }
            }
            _ => {}
        }
    }
}

fn remote_object_text(object: &Value) -> String {
    match &object["value"] {
        Value::String(s) => s.clone(),
        Value::Null => object["description"]
            .as_str()
            .or_else(|| object["type"].as_str())
            .unwrap_or("")
            .to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod superseded_documents;

#[cfg(test)]
mod retired_contexts;

#[cfg(test)]
mod refused_sockets;

#[cfg(test)]
mod workers;
