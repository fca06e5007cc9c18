//! One preview session: an isolated browser context and page, its network policy
//! applied at the request stage, its observations, and serialised interactions.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use dshkit_cdp::{Event, PageCommands};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch};

use super::error::PreviewError;
use super::observe::Observations;
use super::policy::{Decision, NetworkPolicy};
use super::proxy::{PolicyProxy, Refusal};
use super::snapshot::{
    CLOSED_ROOTS_SCRIPT, SNAPSHOT_FUNCTION, Snapshot, error_overlay_probe_expression, parse_ref,
    snapshot_expression, text_includes_expression,
};
use super::world::{call_expression, page_value};

/// Script installed before any page script (no service workers, WebRTC, WebTransport).
pub const HARDEN_SCRIPT: &str = include_str!("harden.js");
/// Script installed before any page script that counts the work an action starts
/// (script requests, short timers) and waits for the document to stop changing.
pub const SETTLE_SCRIPT: &str = include_str!("settle.js");
/// Longest wait for the server's response to a navigation (a dev server may
/// compile the page first).
pub const NAVIGATION_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for `DOMContentLoaded` after a navigation's response.
pub const DEFAULT_NAVIGATION_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the network must be idle (long-lived streams excluded) for a
/// verification's load to count as settled (its `quietWindowMs` default).
pub const DEFAULT_QUIET_WINDOW: Duration = Duration::from_millis(100);
/// Longest settle after an interaction, or after a navigation's `DOMContentLoaded`.
pub const DEFAULT_SETTLE_DEADLINE: Duration = Duration::from_secs(3);
/// Most rounds of "the page's own work, then the requests it did not start from
/// script": each round's requests may start more work.
const MAX_SETTLE_ROUNDS: usize = 4;
/// Tallest full-page screenshot (CSS pixels); taller pages are cut and say so.
pub const DEFAULT_MAX_SCREENSHOT_HEIGHT: u32 = 16_384;
/// Longest text `fill`/`type` accept (characters).
pub const MAX_INPUT_CHARS: usize = 10_000;

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

/// One open preview.
/// What a preview was opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Browsing: its page is its owner's (opened at its URL).
    Browse,
    /// Verifications: each loads its own page fresh; reused by the next one
    /// (opened blank).
    Verify,
}

pub struct PreviewSession {
    pub id: String,
    pub owner: String,
    pub viewport: Viewport,
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

/// A preview's context and page, made before anyone knows which origin it will
/// show: behind its own policy proxy (refusing everything until armed), its
/// domains enabled, the hardening and settle scripts installed, its viewport set,
/// on `about:blank`. Dropped unused or abandoned midway, its context is disposed.
pub(crate) struct BlankPreview {
    shared: Arc<Mutex<Shared>>,
    proxy: PolicyProxy,
    context_id: String,
    page: dshkit_cdp::Page,
    viewport: Viewport,
    guard: dshkit_cdp::ContextGuard,
}

impl std::fmt::Debug for BlankPreview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlankPreview")
            .field("context_id", &self.context_id)
            .finish_non_exhaustive()
    }
}

impl BlankPreview {
    /// Makes the context and page for `viewport`. Nothing reads the page's events
    /// until it is opened: they wait, in order, in the page's channel.
    pub(crate) async fn make(
        contexts: &dshkit_cdp::Contexts,
        viewport: Viewport,
    ) -> Result<Self, PreviewError> {
        let shared = Arc::new(Mutex::new(Shared {
            observations: Observations::default(),
            generation: 0,
            last: None,
        }));
        let sink = Arc::clone(&shared);
        let record: super::proxy::Recorder = Arc::new(move |refusal| {
            let observations = &mut sink.lock().expect("lock").observations;
            match refusal {
                Refusal::Request { url, reason } => observations.record_blocked(&url, reason),
                Refusal::Socket { authority, reason } => observations.refused_socket(&authority, reason),
            }
        });
        let proxy = PolicyProxy::start(record).await.map_err(|e| {
            PreviewError::Interaction(format!("failed to start the preview's policy proxy: {e}"))
        })?;
        let context_id = contexts.create_context_with_proxy(Some(&proxy.url())).await?;
        // From here a failure or a cancelled call disposes the context.
        let guard = contexts.guard_context(&context_id);
        let page = contexts.create_page(&context_id).await?;
        // Independent of each other: sent together, answered together.
        let set_up = [
            (
                "Fetch.enable",
                json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
            ),
            ("Page.enable", json!({})),
            ("Runtime.enable", json!({})),
            ("Log.enable", json!({})),
            ("Network.enable", json!({})),
            ("Network.setBypassServiceWorker", json!({ "bypass": true })),
            // Workers are held at their start until the pump has subscribed to
            // their requests (see `attach`).
            (
                "Target.setAutoAttach",
                json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
            ),
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": HARDEN_SCRIPT }),
            ),
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": SETTLE_SCRIPT }),
            ),
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": CLOSED_ROOTS_SCRIPT }),
            ),
        ];
        let commands = page.commands();
        futures::future::try_join_all(
            set_up
                .into_iter()
                .chain(emulation(viewport))
                .map(|(method, params)| commands.call(method, params)),
        )
        .await?;
        Ok(Self {
            shared,
            proxy,
            context_id,
            page,
            viewport,
            guard,
        })
    }
}

/// The commands that give a page `viewport`'s size, scale and touch.
fn emulation(viewport: Viewport) -> [(&'static str, Value); 2] {
    let (width, height, scale, mobile) = viewport.metrics();
    [
        (
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile }),
        ),
        ("Emulation.setTouchEmulationEnabled", json!({ "enabled": mobile })),
    ]
}

impl PreviewSession {
    /// Creates the preview's context (behind its own policy proxy) and page, sets
    /// them up and opens `url` there. On failure the context is disposed.
    pub(crate) async fn open(
        contexts: &dshkit_cdp::Contexts,
        id: String,
        owner: String,
        policy: NetworkPolicy,
        viewport: Viewport,
        url: &str,
        purpose: Purpose,
    ) -> Result<Self, PreviewError> {
        let blank = BlankPreview::make(contexts, viewport).await?;
        Self::open_in(blank, id, owner, policy, viewport, url, purpose).await
    }

    /// Opens `url` in a blank preview: arms its proxy with `policy`, starts
    /// reading its events under that policy, sets `viewport` if the blank was made
    /// for another, and navigates (a preview for verifications stays blank: each
    /// verification loads its page itself). On failure the context is disposed.
    pub(crate) async fn open_in(
        blank: BlankPreview,
        id: String,
        owner: String,
        policy: NetworkPolicy,
        viewport: Viewport,
        url: &str,
        purpose: Purpose,
    ) -> Result<Self, PreviewError> {
        let BlankPreview {
            shared,
            proxy,
            context_id,
            mut page,
            viewport: made_for,
            guard,
        } = blank;
        proxy.arm(policy.clone());
        let commands = page.commands();
        let events = std::mem::replace(&mut page.events, mpsc::channel(1).1);
        let (loads_tx, loads) = watch::channel(0u64);
        let requests_done = Arc::new(tokio::sync::Notify::new());
        let pump = tokio::spawn(pump(
            events,
            commands.clone(),
            policy.clone(),
            Arc::clone(&shared),
            loads_tx,
            Arc::clone(&requests_done),
        ));
        let session = Self {
            id,
            owner,
            viewport,
            purpose,
            context_id,
            policy,
            page: commands,
            shared,
            loads,
            requests_done,
            operation: tokio::sync::Mutex::new(()),
            verification: tokio::sync::Mutex::new(()),
            blank_sha256: Mutex::new(None),
            page_url: Mutex::new(url.to_owned()),
            last_used: Mutex::new(Instant::now()),
            pump,
            _page: page,
            _proxy: proxy,
        };
        if viewport != made_for {
            futures::future::try_join_all(
                emulation(viewport)
                    .into_iter()
                    .map(|(method, params)| session.page.call(method, params)),
            )
            .await?;
        }
        if purpose == Purpose::Browse {
            session.goto(url).await?;
        }
        guard.disarm();
        Ok(session)
    }

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

    /// Navigates and waits for the load; returns the snapshot taken as it
    /// settled, when there is one.
    async fn goto(&self, url: &str) -> Result<Option<Snapshot>, PreviewError> {
        if let Decision::Block(reason) = decide_off_thread(&self.policy, url).await {
            return Err(PreviewError::NavigationBlocked {
                url: url.to_owned(),
                hop: None,
                reason,
            });
        }
        self.name_page(url);
        let before = *self.loads.borrow();
        let requests = self.observe(Observations::request_mark);
        let blocked_before = self.observe(|o| o.blocked.pushed());
        self.navigate(url, NAVIGATION_RESPONSE_TIMEOUT, blocked_before)
            .await?;
        self.wait_loaded(before, requests).await
    }

    /// Starts the navigation to `url` and waits, at most `limit`, until Chromium
    /// has the server's response (`Page.navigate` answers then). A server that
    /// sends nothing in time has the navigation stopped, so the page takes the
    /// next operation, and the error names the server rather than the browser.
    async fn navigate(&self, url: &str, limit: Duration, blocked_before: u64) -> Result<(), PreviewError> {
        let started = Instant::now();
        let reply = match self
            .page
            .call_with_timeout("Page.navigate", json!({ "url": url }), limit)
            .await
        {
            Err(dshkit_cdp::CdpError::Timeout { .. }) => {
                let _ = self.page.call("Page.stopLoading", json!({})).await;
                return Err(PreviewError::NoResponse {
                    url: url.to_owned(),
                    ms: started.elapsed().as_millis(),
                });
            }
            reply => reply?,
        };
        match reply["errorText"].as_str().filter(|e| !e.is_empty()) {
            Some(error) => Err(self.navigation_error(url, error, blocked_before)),
            None => Ok(()),
        }
    }

    /// The error of a navigation Chromium refused: when the policy blocked one of
    /// its hops (Chromium only says `net::ERR_BLOCKED_BY_CLIENT`), which hop, which
    /// host and rule, and the fix.
    fn navigation_error(&self, url: &str, error: &str, blocked_before: u64) -> PreviewError {
        let blocked = self.observe(|o| {
            (o.blocked.pushed() > blocked_before)
                .then(|| o.blocked.iter().last().cloned())
                .flatten()
        });
        match blocked {
            Some(entry) if error.contains("BLOCKED_BY_CLIENT") => PreviewError::NavigationBlocked {
                url: url.to_owned(),
                hop: (entry.url != url).then_some(entry.url),
                reason: entry.reason,
            },
            _ => PreviewError::NavigationFailed {
                url: url.to_owned(),
                error: error.to_owned(),
            },
        }
    }

    /// Waits for the `DOMContentLoaded` after load count `before`, then settles on
    /// the new document's work and the requests started since `requests`.
    /// Returns the snapshot taken as it settled, when there is one.
    async fn wait_loaded(&self, before: u64, requests: u64) -> Result<Option<Snapshot>, PreviewError> {
        let mut loads = self.loads.clone();
        let started = Instant::now();
        tokio::time::timeout(DEFAULT_NAVIGATION_TIMEOUT, loads.wait_for(|n| *n > before))
            .await
            .map_err(|_| PreviewError::Timeout {
                what: "DOMContentLoaded".into(),
                ms: started.elapsed().as_millis(),
            })?
            .map_err(|_| PreviewError::BrowserGone)?;
        // A new document counts its work from its start.
        let mark = Mark { requests, page: 0 };
        Ok(self.settle(mark, DEFAULT_SETTLE_DEADLINE, true).await.snapshot)
    }

    /// Waits for `DOMContentLoaded` and then the quiet window, all before
    /// `deadline`. Returns whether the network went quiet (false: the deadline cut
    /// the settle short).
    async fn wait_loaded_within(
        &self,
        before: u64,
        quiet: Duration,
        deadline: Duration,
    ) -> Result<bool, PreviewError> {
        let mut loads = self.loads.clone();
        let started = Instant::now();
        tokio::time::timeout(deadline, loads.wait_for(|n| *n > before))
            .await
            .map_err(|_| PreviewError::Timeout {
                what: "DOMContentLoaded".into(),
                ms: started.elapsed().as_millis(),
            })?
            .map_err(|_| PreviewError::BrowserGone)?;
        Ok(self
            .settle_idle(quiet, deadline.saturating_sub(started.elapsed()))
            .await)
    }

    /// Marks the start of an action: what the page starts from now on is its work.
    async fn mark(&self) -> Mark {
        let requests = self.observe(Observations::request_mark);
        let page = self
            .evaluate("globalThis[Symbol.for('dshkit.settle')]?.mark() ?? 0")
            .await
            .ok()
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        Mark { requests, page }
    }

    /// Settles on evidence, not on a fixed quiet window: waits until the script
    /// requests and short timers the action started are done, a task and a painted
    /// frame pass with the document unchanged, and no request started since the
    /// mark (an image, a document) is still in flight; each finished request may
    /// start more work, so this repeats (bounded). An action that starts nothing
    /// settles after one frame. Returns whether it settled before `deadline`.
    ///
    /// With `snapshot`, the page takes the snapshot in the task where it settled,
    /// which saves the action's result a round trip; it is kept only when no
    /// request is left in flight then.
    async fn settle(&self, mark: Mark, deadline: Duration, snapshot: bool) -> Settled {
        let started = Instant::now();
        for _ in 0..MAX_SETTLE_ROUNDS {
            // A request already in flight will outlast the page's settle: no
            // snapshot is asked for that would be thrown away.
            let generation = (snapshot && self.observe(|o| o.in_flight_since(mark.requests)) == 0)
                .then(|| self.next_generation());
            let (mut page, taken) = self
                .settle_page(mark.page, deadline.saturating_sub(started.elapsed()), generation)
                .await;
            if self.observe(|o| o.in_flight_since(mark.requests)) == 0 {
                if let (Some(value), Some(generation)) = (taken, generation) {
                    page.snapshot = self.commit_snapshot(value, generation).ok();
                }
                return page;
            }
            if !self
                .requests_finished(mark.requests, deadline.saturating_sub(started.elapsed()))
                .await
            {
                return Settled {
                    loading: page.loading,
                    ..Settled::default()
                };
            }
        }
        Settled::default()
    }

    /// The page's side of [`Self::settle`] (see `settle.js`). A page without the
    /// script (the first blank page) counts as settled; one whose document was
    /// replaced meanwhile counts as settled and loading: the caller then waits
    /// for the requests and the load. With `snapshot` (a generation), a page
    /// that settled and is not loading also returns what its snapshot script
    /// gave (nothing if it threw: the caller's own snapshot then reports why).
    async fn settle_page(
        &self,
        since: u64,
        budget: Duration,
        snapshot: Option<u64>,
    ) -> (Settled, Option<Value>) {
        if budget.is_zero() {
            return (Settled::default(), None);
        }
        let args = [json!(since), json!(budget.as_millis()), json!(snapshot)];
        let settle = async {
            match self.call_in_world(&SETTLE_FUNCTION, &args).await {
                Some(outcome) => outcome,
                None => self.evaluate(&call_expression(&SETTLE_FUNCTION, &args)).await,
            }
        };
        // The page's own budget ends the wait; the margin covers a hung renderer.
        match tokio::time::timeout(budget + Duration::from_secs(1), settle).await {
            Ok(Ok(mut outcome)) => (
                Settled {
                    complete: outcome["settled"].as_bool() == Some(true),
                    loading: outcome["loading"].as_bool() == Some(true),
                    snapshot: None,
                },
                Some(outcome["snapshot"].take()).filter(|v| !v.is_null()),
            ),
            Ok(Err(_)) => (
                Settled {
                    complete: true,
                    loading: true,
                    snapshot: None,
                },
                None,
            ),
            Err(_) => (Settled::default(), None),
        }
    }

    /// Waits until no request started since `mark` is in flight; false when
    /// `deadline` came first.
    async fn requests_finished(&self, mark: u64, deadline: Duration) -> bool {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let notified = self.requests_done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.observe(|o| o.in_flight_since(mark)) == 0 {
                return true;
            }
            if tokio::time::timeout_at(end, notified).await.is_err() {
                return false;
            }
        }
    }

    /// After a verification's load: the network quiet for `quiet` (the request's
    /// `quietWindowMs`), then the page's own work. Returns whether it settled.
    async fn settle_idle(&self, quiet: Duration, deadline: Duration) -> bool {
        let started = Instant::now();
        if !self.settle_for(quiet, deadline).await {
            return false;
        }
        let mark = Mark { requests: 0, page: 0 };
        self.settle(mark, deadline.saturating_sub(started.elapsed()), false)
            .await
            .complete
    }

    /// Waits until no request is in flight for `quiet`, or the deadline; returns
    /// whether it went quiet. Never waits for long-lived streams; waits for the
    /// reload a dev server announced.
    async fn settle_for(&self, quiet: Duration, deadline: Duration) -> bool {
        let end = Instant::now() + deadline;
        let mut quiet_since: Option<Instant> = None;
        while Instant::now() < end {
            let busy = self.observe(|o| o.in_flight() > 0 || o.awaiting_reload());
            match (busy, quiet_since) {
                (true, _) => quiet_since = None,
                (false, None) => quiet_since = Some(Instant::now()),
                (false, Some(since)) if since.elapsed() >= quiet => return true,
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    /// Loads `url` from a blank page, for a verification: blanks the page, takes
    /// the "before" screenshot, starts a new observation window, navigates, waits
    /// for `DOMContentLoaded` plus `quiet`, all before `deadline`.
    pub(crate) async fn load_fresh(
        &self,
        url: &str,
        quiet: Duration,
        deadline: Duration,
    ) -> Result<FreshLoad, PreviewError> {
        let _serial = self.operation.lock().await;
        self.touch();
        let started = Instant::now();
        // The old page's scripts keep running until the new document commits, and
        // the wipe below may make them throw: nothing they do is the new page's.
        self.shared.lock().expect("lock").observations.retire_contexts();
        // Wipe the old page in place (no navigation, no network): whatever the
        // final screenshot shows was painted after this point. The wiped frame's
        // digest is taken once per session; a final screenshot equal to it shows
        // that nothing was rendered.
        let wiped_at = self
            .evaluate(
                "(() => { const root = document.documentElement; if (root) { root.replaceChildren(); \
                 for (const a of [...root.attributes]) root.removeAttribute(a.name); document.adoptedStyleSheets = []; } return location.href; })()",
            )
            .await
            .ok()
            .and_then(|href| href.as_str().map(str::to_owned));
        let cached = self.blank_sha256.lock().expect("lock").clone();
        let before_sha256 = match cached {
            Some(digest) => digest,
            None => {
                let digest = self.screenshot_now(false).await?.sha256;
                *self.blank_sha256.lock().expect("lock") = Some(digest.clone());
                digest
            }
        };
        let blank_ms = started.elapsed().as_millis();
        {
            let mut shared = self.shared.lock().expect("lock");
            shared.observations.reset_window();
            // The old page's snapshot names elements that no longer exist.
            shared.last = None;
        }
        let window = self.observe(Observations::window_id);
        if let Decision::Block(reason) = decide_off_thread(&self.policy, url).await {
            return Err(PreviewError::NavigationBlocked {
                url: url.to_owned(),
                hop: None,
                reason,
            });
        }
        self.name_page(url);
        // A navigation to the document's own URL with a fragment would only
        // scroll (a same-document navigation, no load): leave the document first.
        if wiped_at.as_deref().is_some_and(|at| same_document(at, url)) {
            self.page
                .call("Page.navigate", json!({ "url": "about:blank" }))
                .await?;
        }
        let loads = *self.loads.borrow();
        let navigating = Instant::now();
        let blocked_before = self.observe(|o| o.blocked.pushed());
        self.navigate(url, deadline.saturating_sub(started.elapsed()), blocked_before)
            .await?;
        let mut settled = self
            .wait_loaded_within(loads, quiet, deadline.saturating_sub(started.elapsed()))
            .await?;
        // The blank page's own DOMContentLoaded may have been counted late; then
        // the target's is still to come.
        // The loaded document's URL, once it is no longer loading (null before).
        let probe =
            "location.href !== 'about:blank' && document.readyState !== 'loading' ? location.href : null";
        let mut loaded_url = self.evaluate(probe).await?;
        if loaded_url.is_null() {
            loop {
                if started.elapsed() >= deadline {
                    return Err(PreviewError::Timeout {
                        what: "DOMContentLoaded".into(),
                        ms: started.elapsed().as_millis(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                loaded_url = self.evaluate(probe).await?;
                if !loaded_url.is_null() {
                    break;
                }
            }
            settled = self
                .settle_for(quiet, deadline.saturating_sub(started.elapsed()))
                .await;
        }
        let pending = if settled {
            Vec::new()
        } else {
            self.observe(|o| o.pending(MAX_PENDING_SHOWN))
        };
        Ok(FreshLoad {
            url: loaded_url.as_str().unwrap_or_default().to_owned(),
            before_sha256,
            window,
            blank_ms,
            load_ms: navigating.elapsed().as_millis(),
            settled,
            pending,
        })
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

    /// The ref an interaction acts on, checked against the current generation.
    fn resolve(&self, target: &Target) -> Result<String, PreviewError> {
        let shared = self.shared.lock().expect("lock");
        match target {
            Target::Ref(reference) => {
                let (generation, _) =
                    parse_ref(reference).ok_or_else(|| PreviewError::BadRef(reference.clone()))?;
                if generation != shared.generation {
                    return Err(PreviewError::StaleElementRef {
                        reference: reference.clone(),
                        given: generation,
                        current: shared.generation,
                    });
                }
                Ok(reference.clone())
            }
            Target::RoleName { role, name } => {
                let found = shared
                    .last
                    .as_ref()
                    .map(|s| s.find(role, name))
                    .unwrap_or_default();
                match found.as_slice() {
                    [] => Err(PreviewError::ElementNotFound {
                        role: role.clone(),
                        name: name.clone(),
                    }),
                    [one] => Ok(one.reference.clone().expect("find returns nodes with refs")),
                    many => Err(PreviewError::AmbiguousElement {
                        role: role.clone(),
                        name: name.clone(),
                        count: many.len(),
                        refs: many
                            .iter()
                            .filter_map(|n| n.reference.clone())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }),
                }
            }
        }
    }

    /// Scrolls the element into view and returns its centre, or a stale-ref error
    /// when the page no longer has it.
    async fn element_center(&self, reference: &str) -> Result<(f64, f64), PreviewError> {
        let element = element_js(reference);
        let value = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return null; \
                 e.scrollIntoView({{block: 'center', inline: 'center'}}); const r = e.getBoundingClientRect(); \
                 return {{x: r.left + r.width / 2, y: r.top + r.height / 2}}; }})()"
            ))
            .await?;
        match (value["x"].as_f64(), value["y"].as_f64()) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(PreviewError::DetachedElementRef(reference.to_owned())),
        }
    }

    async fn mouse(&self, kind: &str, x: f64, y: f64, extra: Value) -> Result<(), PreviewError> {
        let mut params = json!({ "type": kind, "x": x, "y": y });
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        self.page.call("Input.dispatchMouseEvent", params).await?;
        Ok(())
    }

    /// Runs one interaction, serialised with the others, then settles and returns a
    /// fresh snapshot.
    pub async fn interact(&self, action: Action) -> Result<Snapshot, PreviewError> {
        let _serial = self.operation.lock().await;
        self.touch();
        let before = *self.loads.borrow();
        // The snapshot taken as the action settled, when there is one.
        let settled_snapshot = match action {
            Action::Navigate(url) => {
                let target = url::Url::parse(&self.origin())
                    .and_then(|base| base.join(&url))
                    .map_err(|_| PreviewError::BadUrl(super::policy::OriginError::Invalid(url.clone())))?;
                self.goto(target.as_str()).await?
            }
            Action::Reload => {
                let requests = self.observe(Observations::request_mark);
                self.page.call("Page.reload", json!({})).await?;
                self.wait_loaded(before, requests).await?
            }
            Action::Back => self.back(before).await?,
            Action::WaitFor { text, url, timeout } => {
                self.wait_for(text.as_deref(), url.as_deref(), timeout).await?;
                None
            }
            other => {
                // A role+name target is looked up in the last snapshot: take one if
                // there is none yet (there are no refs to retire then).
                if self.shared.lock().expect("lock").last.is_none() {
                    self.snapshot_now().await?;
                }
                // A role+name names whatever element has them now. When the page
                // re-rendered since the last snapshot (the element was replaced, or
                // has only just appeared), it is looked up again in a fresh one. No
                // input was sent then: each failure is found before the first event.
                let mut rereads = ROLE_NAME_REREADS;
                let mark = loop {
                    match self.mark_and_act(other.clone()).await {
                        Err(PreviewError::DetachedElementRef(_) | PreviewError::ElementNotFound { .. })
                            if rereads > 0 && other.targets_role_name() =>
                        {
                            rereads -= 1;
                            self.snapshot_now().await?;
                        }
                        acted => break acted?,
                    }
                };
                // A click may start a navigation: its document request holds the
                // settle, and then its load is awaited.
                let settled = self.settle(mark, DEFAULT_SETTLE_DEADLINE, true).await;
                if *self.loads.borrow() > before || settled.loading {
                    self.wait_loaded(before, mark.requests).await.ok().flatten()
                } else {
                    settled.snapshot
                }
            }
        };
        match settled_snapshot {
            Some(snapshot) => Ok(snapshot),
            None => self.snapshot_now().await,
        }
    }

    /// Marks the action's start and runs it.
    async fn mark_and_act(&self, action: Action) -> Result<Mark, PreviewError> {
        if action.starts_with_page_script() {
            // The action's first page command is a script, which the page runs
            // after the mark's (one session's scripts run in order): the two are
            // sent together.
            let (mark, ()) = futures::future::try_join(
                async { Ok::<_, PreviewError>(self.mark().await) },
                self.act(action),
            )
            .await?;
            Ok(mark)
        } else {
            let mark = self.mark().await;
            self.act(action).await?;
            Ok(mark)
        }
    }

    async fn wait_for(
        &self,
        text: Option<&str>,
        url: Option<&str>,
        timeout: Duration,
    ) -> Result<(), PreviewError> {
        if text.is_none() && url.is_none() {
            return Err(PreviewError::Interaction(
                "a wait needs `text`, `url` or both".into(),
            ));
        }
        let url_holds = url.map_or_else(
            || "true".to_owned(),
            |u| {
                let quoted = serde_json::to_string(u).expect("a string serializes");
                format!("location.href.includes({quoted})")
            },
        );
        let text_holds = text.map_or_else(|| "true".to_owned(), text_includes_expression);
        let expression = format!("({url_holds}) && ({text_holds})");
        let timeout = timeout.min(MAX_WAIT);
        let started = Instant::now();
        loop {
            if self.evaluate(&expression).await?.as_bool() == Some(true) {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                let what = match (text, url) {
                    (Some(t), None) => format!("text {t:?}"),
                    (None, Some(u)) => format!("URL containing {u:?}"),
                    (Some(t), Some(u)) => format!("text {t:?} at a URL containing {u:?}"),
                    (None, None) => unreachable!("checked above"),
                };
                return Err(PreviewError::Timeout {
                    what,
                    ms: started.elapsed().as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn back(&self, before: u64) -> Result<Option<Snapshot>, PreviewError> {
        let history = self.page.call("Page.getNavigationHistory", json!({})).await?;
        let current = history["currentIndex"].as_u64().unwrap_or(0);
        let index = current.checked_sub(1).and_then(|i| usize::try_from(i).ok());
        // The page starts on about:blank; that entry is not part of the preview.
        let Some(index) = index.filter(|i| history["entries"][*i]["url"] != "about:blank") else {
            return Err(PreviewError::Interaction(
                "there is no earlier page in this preview's history".into(),
            ));
        };
        let entry = history["entries"][index]["id"].clone();
        let requests = self.observe(Observations::request_mark);
        self.page
            .call("Page.navigateToHistoryEntry", json!({ "entryId": entry }))
            .await?;
        self.wait_loaded(before, requests).await
    }

    /// The in-page actions (everything but navigation).
    async fn act(&self, action: Action) -> Result<(), PreviewError> {
        match action {
            Action::Click(target) => {
                let (x, y) = self.element_center(&self.resolve(&target)?).await?;
                // Sent together: the browser dispatches one page's input in order.
                futures::future::try_join3(
                    self.mouse("mouseMoved", x, y, json!({})),
                    self.mouse("mousePressed", x, y, json!({ "button": "left", "clickCount": 1 })),
                    self.mouse(
                        "mouseReleased",
                        x,
                        y,
                        json!({ "button": "left", "clickCount": 1 }),
                    ),
                )
                .await?;
            }
            Action::Hover(target) => {
                let (x, y) = self.element_center(&self.resolve(&target)?).await?;
                self.mouse("mouseMoved", x, y, json!({})).await?;
            }
            Action::Fill(_, text) | Action::Type(_, text) if text.chars().count() > MAX_INPUT_CHARS => {
                return Err(PreviewError::Interaction(format!(
                    "text longer than {MAX_INPUT_CHARS} characters"
                )));
            }
            Action::Fill(target, text) => {
                self.focus(&self.resolve(&target)?, true).await?;
                if text.is_empty() {
                    self.key("Backspace").await?;
                } else {
                    self.page
                        .call("Input.insertText", json!({ "text": text }))
                        .await?;
                }
            }
            Action::Type(target, text) => {
                self.focus(&self.resolve(&target)?, false).await?;
                self.page
                    .call("Input.insertText", json!({ "text": text }))
                    .await?;
            }
            Action::Press(key) => self.key(&key).await?,
            Action::Select(target, option) => self.select(&self.resolve(&target)?, &option).await?,
            Action::Scroll { target, delta_y } => {
                let (x, y) = match target {
                    Some(target) => self.element_center(&self.resolve(&target)?).await?,
                    None => {
                        let (width, height, _, _) = self.viewport.metrics();
                        (f64::from(width) / 2.0, f64::from(height) / 2.0)
                    }
                };
                self.mouse("mouseWheel", x, y, json!({ "deltaX": 0, "deltaY": delta_y }))
                    .await?;
            }
            Action::Navigate(_) | Action::Reload | Action::Back | Action::WaitFor { .. } => {
                unreachable!("handled by interact")
            }
        }
        Ok(())
    }

    async fn select(&self, reference: &str, option: &str) -> Result<(), PreviewError> {
        let option = serde_json::to_string(option).expect("a string serializes");
        let element = element_js(reference);
        let chosen = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return 'detached'; \
                 if (e.tagName !== 'SELECT') return 'not a select element'; const want = {option}; \
                 const o = [...e.options].find(o => o.value === want || o.label.trim() === want); if (!o) return 'no option ' + want; \
                 e.value = o.value; e.dispatchEvent(new Event('input', {{bubbles: true}})); \
                 e.dispatchEvent(new Event('change', {{bubbles: true}})); return 'ok'; }})()"
            ))
            .await?;
        match chosen.as_str() {
            Some("ok") => Ok(()),
            Some("detached") => Err(PreviewError::DetachedElementRef(reference.to_owned())),
            other => Err(PreviewError::Interaction(
                other.unwrap_or("select failed").to_owned(),
            )),
        }
    }

    async fn focus(&self, reference: &str, select_all: bool) -> Result<(), PreviewError> {
        let element = element_js(reference);
        let focused = self
            .evaluate(&format!(
                "(() => {{ const e = {element}; if (!e) return 'detached'; \
                 e.scrollIntoView({{block: 'center'}}); e.focus(); let a = document.activeElement; \
                 while (a && a !== e && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; \
                 if (a !== e) return e.isConnected ? 'unfocused' : 'detached'; \
                 if ({select_all}) {{ if (typeof e.select === 'function') e.select(); \
                 else if (e.isContentEditable) document.execCommand('selectAll'); }} return 'focused'; }})()"
            ))
            .await?;
        match focused.as_str() {
            Some("focused") => Ok(()),
            Some("unfocused") => Err(PreviewError::Interaction(format!(
                "element `{reference}` did not take the focus, so nothing was typed: a modal dialog may cover it, \
                 or it is disabled or cannot be edited; take a new snapshot"
            ))),
            _ => Err(PreviewError::DetachedElementRef(reference.to_owned())),
        }
    }

    async fn key(&self, key: &str) -> Result<(), PreviewError> {
        let (code, key_code, text) = match key {
            "Enter" => ("Enter", 13, Some("\r")),
            "Tab" => ("Tab", 9, None),
            "Escape" => ("Escape", 27, None),
            "Backspace" => ("Backspace", 8, None),
            "Delete" => ("Delete", 46, None),
            "ArrowUp" => ("ArrowUp", 38, None),
            "ArrowDown" => ("ArrowDown", 40, None),
            "ArrowLeft" => ("ArrowLeft", 37, None),
            "ArrowRight" => ("ArrowRight", 39, None),
            "Home" => ("Home", 36, None),
            "End" => ("End", 35, None),
            "PageUp" => ("PageUp", 33, None),
            "PageDown" => ("PageDown", 34, None),
            " " | "Space" => ("Space", 32, Some(" ")),
            other => {
                return Err(PreviewError::Interaction(format!(
                    "unsupported key `{other}`; use Enter, Tab, Escape, Backspace, Delete, arrows, Home, End, PageUp, PageDown or Space"
                )));
            }
        };
        let key_name = if key == "Space" { " " } else { key };
        let mut down =
            json!({ "type": "keyDown", "key": key_name, "code": code, "windowsVirtualKeyCode": key_code });
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.page.call("Input.dispatchKeyEvent", down).await?;
        self.page
            .call(
                "Input.dispatchKeyEvent",
                json!({ "type": "keyUp", "key": key_name, "code": code, "windowsVirtualKeyCode": key_code }),
            )
            .await?;
        Ok(())
    }

    /// A PNG of the viewport or the full page (cut at the height guard).
    pub async fn screenshot(&self, full_page: bool) -> Result<Screenshot, PreviewError> {
        let _serial = self.operation.lock().await;
        self.touch();
        self.screenshot_now(full_page).await
    }

    async fn screenshot_now(&self, full_page: bool) -> Result<Screenshot, PreviewError> {
        let (vw, vh, _, _) = self.viewport.metrics();
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
        let reply = self.page.call("Page.captureScreenshot", params).await?;
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

/// The page side of [`PreviewSession::settle`] (see `settle.js`) as a function
/// of `(since, budget, generation)`: settles, then, when the page settled and is
/// not loading and `generation` is not null, takes the snapshot in the same task.
static SETTLE_FUNCTION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "function (since, budget, generation) {{ const s = globalThis[Symbol.for('dshkit.settle')]; \
         const done = (o) => {{ const loading = document.readyState === 'loading'; let snapshot = null; \
         if (o.settled && !loading && generation !== null) {{ try {{ snapshot = ({})(generation); }} catch {{}} }} \
         return {{ ...o, loading, snapshot }}; }}; \
         return s ? s.settle(since, budget).then(done) : done({{ settled: true }}); }}",
        *SNAPSHOT_FUNCTION
    )
});

/// The JavaScript expression for the live element behind `reference` (from the
/// snapshot's registry), or `null` once it left the document.
fn element_js(reference: &str) -> String {
    // Only refs that passed `parse_ref` get here; quoting keeps any other text inert.
    let quoted = serde_json::to_string(reference).expect("a string serializes");
    format!(
        "((r) => {{ const w = globalThis[Symbol.for('dshkit.refs')]?.get(r); const el = w && w.deref(); return el && el.isConnected ? el : null; }})({quoted})"
    )
}

/// Where an action started: the page's work counter and the browser's request
/// count at that moment (see [`PreviewSession::settle`]).
#[derive(Debug, Clone, Copy)]
struct Mark {
    requests: u64,
    page: u64,
}

/// How a settle ended.
#[derive(Debug, Clone, Default)]
struct Settled {
    /// Everything it waited for was done before the deadline.
    complete: bool,
    /// The page's document was still loading (an action started a navigation).
    loading: bool,
    /// The snapshot taken as it settled, made the last one.
    snapshot: Option<Snapshot>,
}

/// What [`PreviewSession::load_fresh`] saw.
#[derive(Debug, Clone)]
pub(crate) struct FreshLoad {
    /// The loaded document's URL (after any redirect), before any step.
    pub(crate) url: String,
    /// The digest of the wiped page the navigation started from.
    pub(crate) before_sha256: String,
    /// The observation window the load started.
    pub(crate) window: u64,
    pub(crate) blank_ms: u128,
    pub(crate) load_ms: u128,
    pub(crate) settled: bool,
    /// When it did not settle: the oldest requests still in flight (at most
    /// [`MAX_PENDING_SHOWN`]).
    pub(crate) pending: Vec<String>,
}

/// Whether navigating from the document at `from` to `to` would stay in that
/// document (the two differ at most in their fragment, and `to` has one).
fn same_document(from: &str, to: &str) -> bool {
    match (url::Url::parse(from), url::Url::parse(to)) {
        (Ok(mut from), Ok(mut to)) if to.fragment().is_some() => {
            from.set_fragment(None);
            to.set_fragment(None);
            from == to
        }
        _ => false,
    }
}

/// How many unfinished requests a load that did not settle names.
pub(crate) const MAX_PENDING_SHOWN: usize = 3;

/// An interaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Click(Target),
    Fill(Target, String),
    Type(Target, String),
    Press(String),
    Select(Target, String),
    Hover(Target),
    Scroll {
        target: Option<Target>,
        delta_y: i32,
    },
    Navigate(String),
    Reload,
    Back,
    /// Waits until the page text contains `text` and/or its URL contains `url`,
    /// at most `timeout` (capped at [`MAX_WAIT`]).
    WaitFor {
        text: Option<String>,
        url: Option<String>,
        timeout: Duration,
    },
}

impl Action {
    /// Whether the first thing the action does in the page is a script (finding
    /// or focusing its element), before any input event.
    fn starts_with_page_script(&self) -> bool {
        matches!(
            self,
            Self::Click(_) | Self::Hover(_) | Self::Fill(..) | Self::Type(..) | Self::Select(..)
        )
    }

    /// Whether the action names its element by role and name.
    fn targets_role_name(&self) -> bool {
        let target = match self {
            Self::Click(target)
            | Self::Hover(target)
            | Self::Fill(target, _)
            | Self::Type(target, _)
            | Self::Select(target, _) => Some(target),
            Self::Scroll { target, .. } => target.as_ref(),
            Self::Press(_) | Self::Navigate(_) | Self::Reload | Self::Back | Self::WaitFor { .. } => None,
        };
        matches!(target, Some(Target::RoleName { .. }))
    }
}

/// How many times an action by role and name looks its element up again in a
/// fresh snapshot when the page changed since the last one.
const ROLE_NAME_REREADS: usize = 2;

/// The longest a wait may last.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// How often [`PreviewSession::wait_for_error_overlay`] looks again.
const OVERLAY_POLL: Duration = Duration::from_millis(25);

/// Most workers of one preview whose requests are observed; later ones run
/// unobserved (the proxy still decides their connections).
pub const MAX_OBSERVED_WORKERS: usize = 16;

/// The tasks observing a preview's workers, by session; each is aborted when its
/// worker goes, and all of them when the pump ends.
#[derive(Default)]
struct Workers(HashMap<String, tokio::task::JoinHandle<()>>);

impl Drop for Workers {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// Applies the network policy to paused requests and records everything else.
async fn pump(
    mut events: mpsc::Receiver<Event>,
    page: PageCommands,
    policy: NetworkPolicy,
    shared: Arc<Mutex<Shared>>,
    loads: watch::Sender<u64>,
    requests_done: Arc<tokio::sync::Notify>,
) {
    let mut workers = Workers::default();
    while let Some(event) = events.recv().await {
        match event.method.as_str() {
            "Target.attachedToTarget" => attach(&page, &shared, &requests_done, &event.params, &mut workers),
            "Target.detachedFromTarget" => {
                if let Some(task) = event.params["sessionId"]
                    .as_str()
                    .and_then(|s| workers.0.remove(s))
                {
                    task.abort();
                }
            }
            "Fetch.requestPaused" => {
                let request_id = event.params["requestId"].as_str().unwrap_or_default().to_owned();
                let url = event.params["request"]["url"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                match decide_without_dns(&policy, &url) {
                    Some(decision) => {
                        if answer_paused(&page, &shared, &request_id, &url, decision).await {
                            break;
                        }
                    }
                    None => {
                        // A lookup may be slow: it runs on its own, bounded, so the
                        // page's other requests keep flowing.
                        let (page, shared, policy) = (page.clone(), Arc::clone(&shared), policy.clone());
                        tokio::spawn(async move {
                            let decision = decide_with_dns(policy, url.clone()).await;
                            answer_paused(&page, &shared, &request_id, &url, decision).await;
                        });
                    }
                }
            }
            "Page.domContentEventFired" => {
                loads.send_modify(|n| *n += 1);
            }
            method => observe(&shared, &requests_done, method, &event.params),
        }
    }
}

/// Records an event of the page (or of one of its workers), and wakes those
/// waiting for requests to finish when one did.
fn observe(shared: &Mutex<Shared>, requests_done: &tokio::sync::Notify, method: &str, params: &Value) {
    shared.lock().expect("lock").observations.ingest(method, params);
    if matches!(method, "Network.loadingFinished" | "Network.loadingFailed") {
        requests_done.notify_waiters();
    }
}

/// A target the browser attached under the page, held at its start. A worker's
/// requests and sockets (which the page's events do not show) are observed with
/// the page's, up to [`MAX_OBSERVED_WORKERS`]: its network events are subscribed
/// to before it runs. Its console and uncaught errors already reach the page as
/// log entries, so its own Runtime domain stays off (it would count them twice).
/// Anything else (an iframe of its own) is let go. Either way the target is
/// resumed.
fn attach(
    page: &PageCommands,
    shared: &Arc<Mutex<Shared>>,
    requests_done: &Arc<tokio::sync::Notify>,
    params: &Value,
    workers: &mut Workers,
) {
    let Some(session) = params["sessionId"].as_str() else {
        return;
    };
    let observed = params["targetInfo"]["type"] == "worker" && workers.0.len() < MAX_OBSERVED_WORKERS;
    if !observed {
        let (page, target, session) = (page.clone(), page.of_session(session), session.to_owned());
        drop(tokio::spawn(async move {
            let _ = target.call("Runtime.runIfWaitingForDebugger", json!({})).await;
            let _ = page
                .call("Target.detachFromTarget", json!({ "sessionId": session }))
                .await;
        }));
        return;
    }
    let target = page.attached(session);
    let (shared, requests_done) = (Arc::clone(shared), Arc::clone(requests_done));
    let task = tokio::spawn(async move {
        let mut target = target;
        let _ = target.commands.call("Network.enable", json!({})).await;
        let _ = target
            .commands
            .call("Runtime.runIfWaitingForDebugger", json!({}))
            .await;
        while let Some(event) = target.events.recv().await {
            if event.method.starts_with("Network.") {
                observe(&shared, &requests_done, &event.method, &event.params);
            }
        }
    });
    workers.0.insert(session.to_owned(), task);
}

/// Continues or fails one paused request; a block is recorded before the browser
/// hears of it. Returns true when the browser is gone.
async fn answer_paused(
    page: &PageCommands,
    shared: &Mutex<Shared>,
    request_id: &str,
    url: &str,
    decision: Decision,
) -> bool {
    let reply = match decision {
        Decision::Allow => {
            page.call("Fetch.continueRequest", json!({ "requestId": request_id }))
                .await
        }
        Decision::Block(reason) => {
            tracing::debug!(%url, ?reason, "preview request blocked");
            shared
                .lock()
                .expect("lock")
                .observations
                .record_blocked(url, reason);
            page.call(
                "Fetch.failRequest",
                json!({ "requestId": request_id, "errorReason": "BlockedByClient" }),
            )
            .await
        }
    };
    match reply {
        Err(err) if err.is_disconnect() => true,
        Err(err) => {
            tracing::debug!(%err, "answering a paused request failed");
            false
        }
        Ok(_) => false,
    }
}

/// The decision when it needs no DNS; `None` for an allowlisted external host,
/// which does.
fn decide_without_dns(policy: &NetworkPolicy, url: &str) -> Option<Decision> {
    struct Deferred;
    impl super::policy::Resolver for Deferred {
        fn resolve(&self, _host: &str, _port: u16) -> Result<Vec<std::net::IpAddr>, String> {
            Err(NEEDS_DNS.into())
        }
    }
    const NEEDS_DNS: &str = "needs DNS";
    match policy.decide_with(url, &Deferred) {
        Decision::Block(super::policy::BlockReason::Unresolvable { error, .. }) if error == NEEDS_DNS => None,
        decided => Some(decided),
    }
}

/// The decision with DNS, on a blocking thread and bounded by the policy's
/// `dns_timeout` (a lookup that does not answer in time refuses the request).
async fn decide_with_dns(policy: NetworkPolicy, url: String) -> Decision {
    let host = url::Url::parse(&url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let timeout = policy.dns_timeout;
    let lookup = tokio::task::spawn_blocking(move || policy.decide(&url));
    let error = match tokio::time::timeout(timeout, lookup).await {
        Ok(Ok(decision)) => return decision,
        Ok(Err(_)) => "the resolver task failed".to_owned(),
        Err(_) => format!("DNS did not answer within {} ms", timeout.as_millis()),
    };
    Decision::Block(super::policy::BlockReason::Unresolvable { host, error })
}

/// Decides a navigation target or a proxied connection: at once unless it needs
/// DNS, which is bounded.
pub(super) async fn decide_off_thread(policy: &NetworkPolicy, url: &str) -> Decision {
    match decide_without_dns(policy, url) {
        Some(decision) => decision,
        None => decide_with_dns(policy.clone(), url.to_owned()).await,
    }
}

#[cfg(test)]
mod same_document_tests {
    use super::same_document;

    #[test]
    fn only_a_fragment_of_the_same_url_stays_in_the_document() {
        let at = "http://127.0.0.1:1/a?q=1#x";
        assert!(same_document(at, "http://127.0.0.1:1/a?q=1#x"));
        assert!(same_document(
            "http://127.0.0.1:1/a?q=1",
            "http://127.0.0.1:1/a?q=1#y"
        ));
        assert!(
            !same_document(at, "http://127.0.0.1:1/a?q=1"),
            "no fragment: a new load"
        );
        assert!(!same_document(at, "http://127.0.0.1:1/a?q=2#x"));
        assert!(!same_document("about:blank", "http://127.0.0.1:1/#x"));
    }
}
