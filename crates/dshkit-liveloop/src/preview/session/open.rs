//! Opening a preview: its context and page made ahead, behind their own policy
//! proxy ([`BlankPreview`]), then armed with the preview's policy, its event pump
//! started, and its page opened.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::events::pump;
use super::settle::SETTLE_SCRIPT;
use super::{PreviewSession, Purpose, Shared, Viewport};
use crate::preview::error::PreviewError;
use crate::preview::observe::Observations;
use crate::preview::policy::NetworkPolicy;
use crate::preview::proxy::{PolicyProxy, Recorder, Refusal};
use crate::preview::snapshot::CLOSED_ROOTS_SCRIPT;

/// Script installed before any page script (no service workers, WebRTC, WebTransport).
pub const HARDEN_SCRIPT: &str = include_str!("../harden.js");

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
        let record: Recorder = Arc::new(move |refusal| {
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
    /// The device this preview emulates now.
    pub fn viewport(&self) -> Viewport {
        *self.viewport.lock().expect("viewport lock")
    }

    /// Emulates `viewport` from now on: the page keeps its document and
    /// lays itself out again at the new size. It waits for a running
    /// interaction, and its caller for a running verification, so neither sees
    /// the device change under it.
    pub async fn set_viewport(&self, viewport: Viewport) -> Result<(), PreviewError> {
        let _one_at_a_time = self.operation.lock().await;
        // No capture is under way: its end would put the old device back.
        let _alone = self.emulating.write().await;
        self.touch();
        futures::future::try_join_all(
            emulation(viewport)
                .into_iter()
                .map(|(method, params)| self.page.call(method, params)),
        )
        .await?;
        *self.viewport.lock().expect("viewport lock") = viewport;
        Ok(())
    }

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
            viewport: Mutex::new(viewport),
            emulating: tokio::sync::RwLock::new(()),
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
            frames: std::sync::atomic::AtomicU64::new(0),
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
}
