//! One preview session: an isolated browser context and page, its network policy
//! applied at the request stage, its observations, and serialised operations.
//! This core holds the session's state, what reads the page (evaluation, the
//! snapshot, the screenshot) and the locks; its roles live beside it: opening
//! ([`open`]), navigation ([`navigate`]), settling ([`settle`]), interaction
//! ([`interact`]), live frames ([`frame`]) and the CDP event pump ([`events`]).

pub(super) mod events;
pub(super) mod frame;
pub(super) mod interact;
pub(super) mod navigate;
pub(super) mod open;
pub(super) mod settle;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use dshkit_cdp::PageCommands;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::preview::error::PreviewError;
use crate::preview::observe::Observations;
use crate::preview::policy::NetworkPolicy;
use crate::preview::proxy::PolicyProxy;
use crate::preview::snapshot::{
    SNAPSHOT_FUNCTION, Snapshot, error_overlay_probe_expression, snapshot_expression,
    text_includes_expression,
};
use crate::preview::world::page_value;

/// Tallest full-page screenshot (CSS pixels); taller pages are cut and say so.
pub const DEFAULT_MAX_SCREENSHOT_HEIGHT: u32 = 16_384;

/// Most captures of one screenshot: a page without a frame yet gets one more
/// rendered frame before each next attempt.
const MAX_CAPTURE_ATTEMPTS: u32 = 3;
/// What Chromium answers a capture of a page that has no frame to capture.
const NO_FRAME_TO_CAPTURE: &str = "Unable to capture screenshot";
/// How often [`PreviewSession::wait_for_error_overlay`] looks again.
const OVERLAY_POLL: Duration = Duration::from_millis(25);

/// A viewport preset with a fixed device scale factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Viewport {
    #[default]
    Desktop,
    Tablet,
    Mobile,
}

impl Viewport {
    /// Width, height, device scale factor, mobile.
    pub fn metrics(self) -> (u32, u32, u32, bool) {
        match self {
            Self::Desktop => (1280, 800, 1, false),
            Self::Tablet => (820, 1180, 2, true),
            Self::Mobile => (390, 844, 3, true),
        }
    }
}

/// What an interaction acts on: a ref from the last snapshot, or a role and name
/// that must match exactly one element of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Ref(String),
    RoleName { role: String, name: String },
}

/// A screenshot and its identity.
#[derive(Debug, Clone)]
pub struct Screenshot {
    pub png: Vec<u8>,
    pub sha256: String,
    pub width: u32,
    pub height: u32,
    /// The page was taller than the guard and was cut.
    pub clipped: bool,
}

struct Shared {
    observations: Observations,
    generation: u64,
    last: Option<Snapshot>,
}

/// What a preview was opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Browsing: its page is its owner's (opened at its URL).
    Browse,
    /// Verifications: each loads its own page fresh; reused by the next one
    /// (opened blank).
    Verify,
}

/// One open preview.
pub struct PreviewSession {
    pub id: String,
    pub owner: String,
    /// The device it emulates: chosen at open, switched by [`PreviewSession::set_viewport`].
    viewport: Mutex<Viewport>,
    /// Held to read by every capture and to write by a viewport switch (see `capture`).
    emulating: tokio::sync::RwLock<()>,
    pub purpose: Purpose,
    pub(crate) context_id: String,
    policy: NetworkPolicy,
    page: PageCommands,
    shared: Arc<Mutex<Shared>>,
    loads: watch::Receiver<u64>,
    /// Woken whenever a request finishes or fails.
    requests_done: Arc<tokio::sync::Notify>,
    operation: tokio::sync::Mutex<()>,
    /// Held for a whole verification, so two verifications of one session never
    /// interleave (each keeps its own observation window).
    pub(crate) verification: tokio::sync::Mutex<()>,
    /// Digest of this session's wiped (blank) page, taken on the first verification.
    blank_sha256: Mutex<Option<String>>,
    /// The URL this preview was last sent to by name: where it was opened, the
    /// last navigation, the last verification's load. A verification given no
    /// URL loads this one.
    page_url: Mutex<String>,
    last_used: Mutex<Instant>,
    /// Live frames taken so far ([`PreviewSession::frame`]).
    frames: std::sync::atomic::AtomicU64,
    pump: tokio::task::JoinHandle<()>,
    _page: dshkit_cdp::Page,
    _proxy: PolicyProxy,
}

impl std::fmt::Debug for PreviewSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreviewSession")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Drop for PreviewSession {
    fn drop(&mut self) {
        self.pump.abort();
    }
}

impl PreviewSession {
    pub(crate) fn touch(&self) {
        *self.last_used.lock().expect("lock") = Instant::now();
    }

    /// Whether an operation or a verification holds the preview right now.
    pub(crate) fn busy(&self) -> bool {
        self.operation.try_lock().is_err() || self.verification.try_lock().is_err()
    }

    pub(crate) fn idle_for(&self) -> Duration {
        self.last_used.lock().expect("lock").elapsed()
    }

    /// The origin this preview may talk to.
    pub fn origin(&self) -> String {
        self.policy.origin.as_string()
    }

    /// The URL this preview was last sent to by name (opened at, navigated to,
    /// or loaded by a verification), whatever the page did since.
    pub fn page_url(&self) -> String {
        self.page_url.lock().expect("lock").clone()
    }

    /// Whether `url` is on this preview's origin.
    pub fn on_origin(&self, url: &url::Url) -> bool {
        self.policy.origin.same_origin(url)
    }

    fn name_page(&self, url: &str) {
        url.clone_into(&mut self.page_url.lock().expect("lock"));
    }

    /// Reads the observations under the lock.
    pub fn observe<T>(&self, read: impl FnOnce(&Observations) -> T) -> T {
        read(&self.shared.lock().expect("lock").observations)
    }

    /// Waits for a running verification of this session to end and keeps the next
    /// one from starting while the guard lives: browser actions never interleave
    /// with a verification (its observation window stays its own).
    pub async fn between_verifications(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.verification.lock().await
    }

    /// Starts a new observation window.
    pub fn reset_observations(&self) {
        self.shared.lock().expect("lock").observations.reset_window();
    }

    /// Whether the page's rendered text contains `text` (the whole text, open
    /// shadow roots included, not the bounded snapshot).
    pub(crate) async fn text_contains(&self, text: &str) -> Result<bool, PreviewError> {
        let _serial = self.operation.lock().await;
        let found = self.evaluate(&text_includes_expression(text)).await?;
        Ok(found.as_bool() == Some(true))
    }

    /// Waits, at most `limit`, until a framework's error overlay is on the page,
    /// when the page may still draw one (see [`error_overlay_probe_expression`]);
    /// returns at once on any other page. Returns whether one is shown.
    pub(crate) async fn wait_for_error_overlay(&self, limit: Duration) -> Result<bool, PreviewError> {
        let _serial = self.operation.lock().await;
        let probe = error_overlay_probe_expression();
        let started = Instant::now();
        loop {
            match self.evaluate(&probe).await?.as_str() {
                Some("shown") => return Ok(true),
                Some("awaited") if started.elapsed() < limit => {
                    tokio::time::sleep(OVERLAY_POLL).await;
                }
                _ => return Ok(false),
            }
        }
    }

    /// The last snapshot, whose refs are the live ones; a new one when there is
    /// none. Paging, scoping and searching read it, so they keep its refs.
    pub async fn last_snapshot(&self) -> Result<Snapshot, PreviewError> {
        let _serial = self.operation.lock().await;
        let last = self.shared.lock().expect("lock").last.clone();
        match last {
            Some(snapshot) => Ok(snapshot),
            None => self.snapshot_now().await,
        }
    }

    /// Takes a new snapshot: bumps the generation, which retires every older ref.
    pub async fn snapshot(&self) -> Result<Snapshot, PreviewError> {
        let _serial = self.operation.lock().await;
        self.snapshot_now().await
    }

    async fn snapshot_now(&self) -> Result<Snapshot, PreviewError> {
        let generation = self.next_generation();
        let value = match self.call_in_world(&SNAPSHOT_FUNCTION, &[json!(generation)]).await {
            Some(Ok(value)) => value,
            // The context went with its document before the call ran: the
            // current document is asked.
            None | Some(Err(PreviewError::Cdp(dshkit_cdp::CdpError::Protocol { .. }))) => {
                self.evaluate(&snapshot_expression(generation)).await?
            }
            Some(Err(error)) => return Err(error),
        };
        self.commit_snapshot(value, generation)
    }

    /// Starts a snapshot generation: from now on, older refs are stale. The
    /// snapshot script replaces the page's ref registry as it runs, so the last
    /// snapshot is dropped too, even when this one is never committed.
    fn next_generation(&self) -> u64 {
        let mut shared = self.shared.lock().expect("lock");
        shared.generation += 1;
        shared.last = None;
        shared.generation
    }

    /// Makes what the snapshot script returned for `generation` the last snapshot.
    fn commit_snapshot(&self, value: Value, generation: u64) -> Result<Snapshot, PreviewError> {
        let mut snapshot: Snapshot = serde_json::from_value(value).map_err(|e| {
            PreviewError::Interaction(format!("the snapshot script returned an unexpected shape: {e}"))
        })?;
        snapshot.generation = generation;
        self.shared.lock().expect("lock").last = Some(snapshot.clone());
        Ok(snapshot)
    }

    async fn evaluate(&self, expression: &str) -> Result<Value, PreviewError> {
        let reply = self
            .page
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await?;
        page_value(reply)
    }

    /// Calls `function`, a constant declaration, with `args` in the top
    /// document's main world through `Runtime.callFunctionOn`: V8 compiles its
    /// source once per document, where an expression with the arguments in it is
    /// compiled on every call. `None` when that world is not known yet.
    async fn call_in_world(&self, function: &str, args: &[Value]) -> Option<Result<Value, PreviewError>> {
        let context = self.observe(Observations::main_world)?;
        let arguments: Vec<Value> = args.iter().map(|value| json!({ "value": value })).collect();
        let reply = self
            .page
            .call(
                "Runtime.callFunctionOn",
                json!({ "functionDeclaration": function, "executionContextId": context, "arguments": arguments,
                        "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        Some(reply.map_err(PreviewError::from).and_then(page_value))
    }

    /// `Page.captureScreenshot` with `params`. A page whose compositor has no
    /// frame yet (a page just made or resized, on a loaded machine) cannot be
    /// captured: it is asked for the next rendered frame and captured again, at
    /// most [`MAX_CAPTURE_ATTEMPTS`] times.
    async fn capture(&self, params: &Value) -> Result<Value, PreviewError> {
        // Chromium emulates a capture's clip and scale for its duration and then
        // puts back the emulation it began under: a viewport switch meanwhile
        // would be undone. Captures share the lock; a switch takes it alone.
        let _no_switch = self.emulating.read().await;
        let mut attempt = 1;
        loop {
            match self.page.call("Page.captureScreenshot", params.clone()).await {
                Err(dshkit_cdp::CdpError::Protocol { ref message, .. })
                    if attempt < MAX_CAPTURE_ATTEMPTS && message.contains(NO_FRAME_TO_CAPTURE) =>
                {
                    attempt += 1;
                    // Two animation frames: the second runs after the first was
                    // painted. The timer ends the wait in a page that paints none.
                    self.evaluate(
                        "new Promise(done => { requestAnimationFrame(() => requestAnimationFrame(done)); \
                         setTimeout(done, 250); })",
                    )
                    .await?;
                }
                reply => return Ok(reply?),
            }
        }
    }

    /// A PNG of the viewport or the full page (cut at the height guard).
    pub async fn screenshot(&self, full_page: bool) -> Result<Screenshot, PreviewError> {
        let _serial = self.operation.lock().await;
        self.touch();
        self.screenshot_now(full_page).await
    }

    async fn screenshot_now(&self, full_page: bool) -> Result<Screenshot, PreviewError> {
        let (vw, vh, _, _) = self.viewport().metrics();
        let (mut width, mut height, mut clipped) = (vw, vh, false);
        // Fast encoding: lossless all the same, the file a quarter larger, the capture
        // about 40 % shorter (a 1280x800 page here: 107 -> 67 ms).
        let mut params =
            json!({ "format": "png", "captureBeyondViewport": full_page, "optimizeForSpeed": true });
        if full_page {
            let metrics = self.page.call("Page.getLayoutMetrics", json!({})).await?;
            let size = &metrics["cssContentSize"];
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "page sizes are small positive numbers"
            )]
            let (w, h) = (
                size["width"].as_f64().unwrap_or(f64::from(vw)).ceil() as u32,
                size["height"].as_f64().unwrap_or(f64::from(vh)).ceil() as u32,
            );
            clipped = h > DEFAULT_MAX_SCREENSHOT_HEIGHT;
            width = w.max(1);
            height = h.clamp(1, DEFAULT_MAX_SCREENSHOT_HEIGHT);
            params["clip"] = json!({ "x": 0, "y": 0, "width": width, "height": height, "scale": 1 });
        }
        let reply = self.capture(&params).await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(reply["data"].as_str().unwrap_or_default())
            .map_err(|e| PreviewError::Interaction(format!("screenshot data is not base64: {e}")))?;
        if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err(PreviewError::Interaction("the browser returned no PNG".into()));
        }
        let sha256 = hex::encode(Sha256::digest(&png));
        Ok(Screenshot {
            png,
            sha256,
            width,
            height,
            clipped,
        })
    }
}
