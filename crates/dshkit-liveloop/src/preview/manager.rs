//! Preview sessions over one shared browser: a limit on contexts, idle sessions
//! closed, ownership by subject, and a relaunch after the browser dies.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dshkit_cdp::{Browser, LaunchOptions};

use super::error::PreviewError;
use super::policy::{NetworkPolicy, PreviewOrigin, Resolver, SystemResolver};
use super::session::open::BlankPreview;
use super::session::{PreviewSession, Purpose, Viewport};

/// Most preview sessions open at once (each context with a page costs ~60 MB).
pub const DEFAULT_MAX_SESSIONS: usize = 4;
/// Sessions unused this long are closed on the next manager call.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_mins(15);

/// Where the browser comes from.
#[derive(Debug, Clone)]
pub enum BrowserSource {
    Launch(LaunchOptions),
    /// An existing endpoint: `ws://…/devtools/browser/…` or `http://host:port`,
    /// one connection shared by every preview.
    Endpoint(String),
    /// A browser pool engine (browserless, Selenium Grid 4): one connection per
    /// preview session, as such engines count and queue them (browserless gives
    /// each connection a browser of its own). No blank preview is kept ready:
    /// it would hold one of the pool's browsers. A connection the engine refuses
    /// or does not admit within the endpoint's deadline fails the open with the
    /// engine's reason.
    Pool(dshkit_cdp::Endpoint),
}

impl BrowserSource {
    /// The browser `dshkit mcp` drives: `flag` (`--browser-ws` is a pool, one
    /// connection per preview; `--browser-url`, a browser's HTTP endpoint, is
    /// one shared connection), else the settings' `browserPoolEndpoint` (a
    /// pool), else `otherwise` (a launched Chromium). A pool's token is
    /// `pool.token`'s (`DSHKIT_BROWSER_POOL_TOKEN`, else the token file).
    pub fn chosen(flag: Option<&str>, pool: &dshkit_env::resolve::BrowserPool, otherwise: Self) -> Self {
        use dshkit_env::resolve::PoolToken;
        let endpoint = match flag {
            Some(url) if !url.starts_with("ws") => return Self::Endpoint(url.to_owned()),
            Some(url) => url,
            None => match &pool.endpoint {
                Some(url) => url,
                None => return otherwise,
            },
        };
        let endpoint = dshkit_cdp::Endpoint::new(endpoint);
        Self::Pool(match &pool.token {
            PoolToken::None => endpoint,
            PoolToken::Env(token) => endpoint.with_token(dshkit_cdp::Secret::new(token)),
            PoolToken::File(file) => endpoint.with_token_file(file.clone()),
        })
    }
}

/// The limits a person may change while previews run ([`PreviewManager::set_limits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewLimits {
    pub max_sessions: usize,
    pub idle_timeout: Duration,
    /// External hosts previews opened from now on may reach.
    pub allow_hosts: Vec<String>,
}

/// Manager settings.
#[derive(Clone)]
pub struct PreviewConfig {
    pub browser: BrowserSource,
    pub max_sessions: usize,
    pub idle_timeout: Duration,
    /// External hosts previews may reach (checked after DNS resolution).
    pub allow_hosts: Vec<String>,
    /// Resolves allowlisted hosts; the system resolver by default.
    pub resolver: Arc<dyn Resolver>,
    /// Bound of one DNS lookup of an allowlisted host.
    pub dns_timeout: Duration,
}

impl Default for PreviewConfig {
    fn default() -> Self {
        Self {
            browser: BrowserSource::Launch(LaunchOptions::default()),
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            allow_hosts: Vec::new(),
            resolver: Arc::new(SystemResolver),
            dns_timeout: super::policy::DEFAULT_DNS_TIMEOUT,
        }
    }
}

#[derive(Default)]
struct State {
    browser: Option<Browser>,
    /// With a pool: each session's own connection, by session id.
    pooled: HashMap<String, Browser>,
    sessions: HashMap<String, Arc<PreviewSession>>,
    /// Whether a browser was ever running, so the next launch is a relaunch.
    launched_before: bool,
    /// The last time a caller used the manager (the browser's idleness).
    last_used: Option<std::time::Instant>,
    /// Sessions closed for idleness that their owners have not been told of
    /// yet, oldest first (at most [`MAX_UNTOLD_EVICTIONS`]).
    evicted: std::collections::VecDeque<Evicted>,
}

/// Idle sessions remembered for [`PreviewManager::take_evicted`] at most.
pub const MAX_UNTOLD_EVICTIONS: usize = 64;

/// A session the manager closed without its owner asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evicted {
    pub id: String,
    pub owner: String,
    pub why: Eviction,
}

/// Why the manager closed a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Unused for the idle timeout.
    Idle,
    /// The least recently used idle session of its owner, closed to open another
    /// at the session limit.
    Limit,
}

/// The blank preview kept ready for the next open, made for the running browser.
#[derive(Default)]
struct BlankSlot {
    /// Browsers set so far; the running one is number `current` (0: none).
    launches: u64,
    current: u64,
    /// A blank preview in browser `current`.
    ready: Option<BlankPreview>,
    /// A blank is being made.
    making: bool,
}

/// The blank slot and the signal that a blank was made (or failed to be).
#[derive(Default)]
struct Blanks {
    slot: std::sync::Mutex<BlankSlot>,
    made: tokio::sync::Notify,
}

impl Blanks {
    fn slot(&self) -> std::sync::MutexGuard<'_, BlankSlot> {
        self.slot.lock().expect("blank lock")
    }

    /// The ready blank; if one is being made, waits for it.
    async fn take(&self) -> Option<BlankPreview> {
        loop {
            let made = self.made.notified();
            tokio::pin!(made);
            made.as_mut().enable();
            {
                let mut slot = self.slot();
                if slot.ready.is_some() || !slot.making {
                    return slot.ready.take();
                }
            }
            made.await;
        }
    }
}

/// All preview sessions of one dshkit process.
pub struct PreviewManager {
    config: PreviewConfig,
    /// The config's limits, as last set.
    limits: std::sync::RwLock<PreviewLimits>,
    state: tokio::sync::Mutex<State>,
    /// Held apart from `state`, so a blank is made without holding the sessions.
    blank: Arc<Blanks>,
    /// Keep a blank preview ready (set by [`PreviewManager::prewarm`]).
    keep_blank: std::sync::atomic::AtomicBool,
    /// Browsers launched after an earlier one had exited or disconnected.
    relaunches: std::sync::atomic::AtomicU64,
    /// Pool connections being made for opens (off the state lock): they count
    /// against the session limit.
    opening: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for PreviewManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreviewManager")
            .field("browser", &self.config.browser)
            .finish_non_exhaustive()
    }
}

impl PreviewManager {
    pub fn new(config: PreviewConfig) -> Self {
        Self {
            limits: std::sync::RwLock::new(PreviewLimits {
                max_sessions: config.max_sessions,
                idle_timeout: config.idle_timeout,
                allow_hosts: config.allow_hosts.clone(),
            }),
            config,
            state: tokio::sync::Mutex::new(State::default()),
            blank: Arc::default(),
            keep_blank: std::sync::atomic::AtomicBool::new(false),
            relaunches: std::sync::atomic::AtomicU64::new(0),
            opening: Arc::default(),
        }
    }

    /// How many times a browser was launched after an earlier one had gone: a
    /// caller comparing it before and after an operation can tell its client.
    pub fn relaunches(&self) -> u64 {
        self.relaunches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The sessions closed for idleness whose owner is `scope` or inside it
    /// (`<scope>/...`), each returned once: a caller tells its client.
    pub async fn take_evicted(&self, scope: &str) -> Vec<Evicted> {
        let mut state = self.state.lock().await;
        let inside = |owner: &str| {
            owner == scope
                || owner
                    .strip_prefix(scope)
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        let (told, kept): (Vec<Evicted>, Vec<Evicted>) =
            state.evicted.drain(..).partition(|e| inside(&e.owner));
        state.evicted = kept.into();
        told
    }

    /// The limits in force.
    pub fn limits(&self) -> PreviewLimits {
        self.limits.read().expect("limits lock").clone()
    }

    /// Changes the limits from the next call on: a lower session limit closes
    /// nothing open (it makes room at the next open), a new idle timeout counts
    /// for every session, new hosts count for previews opened afterwards.
    /// Whether anything changed.
    pub fn set_limits(&self, limits: PreviewLimits) -> bool {
        let mut current = self.limits.write().expect("limits lock");
        if *current == limits {
            return false;
        }
        tracing::info!(?limits, "preview limits changed");
        *current = limits;
        true
    }

    /// The most sessions open at once.
    pub fn max_sessions(&self) -> usize {
        self.limits().max_sessions
    }

    /// The idle timeout after which sessions are closed.
    pub fn idle_timeout(&self) -> Duration {
        self.limits().idle_timeout
    }

    /// Opens `url` in a fresh, isolated context owned by `owner`. At the session
    /// limit, the least recently used idle session of `owner` is closed first.
    pub async fn open(
        &self,
        owner: &str,
        url: &str,
        viewport: Viewport,
    ) -> Result<Arc<PreviewSession>, PreviewError> {
        if let BrowserSource::Pool(endpoint) = &self.config.browser {
            return self
                .open_pooled(endpoint, owner, url, viewport, Purpose::Browse)
                .await;
        }
        let mut state = self.state.lock().await;
        self.open_locked(&mut state, owner, url, viewport, Purpose::Browse)
            .await
    }

    /// Whether previews are served by a pool engine, one connection each.
    pub fn is_pooled(&self) -> bool {
        matches!(self.config.browser, BrowserSource::Pool(_))
    }

    /// Opens `url` on a connection of its own to the pool at `endpoint`. The
    /// connection is made off the state lock: the engine may hold it in its
    /// queue until one of its browsers is free, and meanwhile other previews
    /// open and close (a closing one frees the browser this one waits for).
    async fn open_pooled(
        &self,
        endpoint: &dshkit_cdp::Endpoint,
        owner: &str,
        url: &str,
        viewport: Viewport,
        purpose: Purpose,
    ) -> Result<Arc<PreviewSession>, PreviewError> {
        let (origin, parsed) = PreviewOrigin::of(url)?;
        let _opening = {
            let mut state = self.state.lock().await;
            self.sweep(&mut state).await;
            self.make_room(&mut state, owner).await?;
            Opening::count(&self.opening)
        };
        let policy = self.policy(origin);
        let browser = Browser::connect(endpoint).await?;
        let id = new_id()?;
        let opened = PreviewSession::open(
            &browser.contexts(),
            id.clone(),
            owner.to_owned(),
            policy,
            viewport,
            parsed.as_str(),
            purpose,
        )
        .await;
        let session = match opened {
            Ok(session) => Arc::new(session),
            Err(error) => {
                browser.close();
                return Err(error);
            }
        };
        session.touch();
        let mut state = self.state.lock().await;
        state.sessions.insert(id.clone(), Arc::clone(&session));
        state.pooled.insert(id, browser);
        Ok(session)
    }

    /// A preview for a verification of `url` by `owner`: an idle preview that
    /// `owner` opened for verifications, on the same origin and viewport, else a
    /// new one on a blank page (the verification loads `url` itself). Previews
    /// opened to browse are never taken: their page is their owner's.
    /// Returns the preview and whether it was reused.
    pub async fn open_for_verification(
        &self,
        owner: &str,
        url: &str,
        viewport: Viewport,
    ) -> Result<(Arc<PreviewSession>, bool), PreviewError> {
        let (origin, _) = PreviewOrigin::of(url)?;
        if let BrowserSource::Pool(endpoint) = &self.config.browser {
            // Never reused: a verification gives its pool browser back when done.
            return self
                .open_pooled(endpoint, owner, url, viewport, Purpose::Verify)
                .await
                .map(|session| (session, false));
        }
        let mut state = self.state.lock().await;
        self.sweep(&mut state).await;
        let reusable = state
            .sessions
            .values()
            .filter(|s| {
                s.owner == owner
                    && s.purpose == Purpose::Verify
                    && s.viewport() == viewport
                    && s.origin() == origin.as_string()
                    && !s.busy()
            })
            .min_by_key(|s| s.idle_for());
        if let Some(session) = reusable {
            session.touch();
            return Ok((Arc::clone(session), true));
        }
        self.open_locked(&mut state, owner, url, viewport, Purpose::Verify)
            .await
            .map(|session| (session, false))
    }

    /// The network policy of a preview of `origin`: this manager's allowed
    /// hosts, resolver and DNS deadline.
    fn policy(&self, origin: PreviewOrigin) -> NetworkPolicy {
        NetworkPolicy {
            origin,
            allow_hosts: self.limits().allow_hosts,
            resolver: Arc::clone(&self.config.resolver),
            dns_timeout: self.config.dns_timeout,
        }
    }

    async fn open_locked(
        &self,
        state: &mut State,
        owner: &str,
        url: &str,
        viewport: Viewport,
        purpose: Purpose,
    ) -> Result<Arc<PreviewSession>, PreviewError> {
        let (origin, parsed) = PreviewOrigin::of(url)?;
        self.sweep(state).await;
        self.make_room(state, owner).await?;
        let policy = self.policy(origin);
        let mut retried = false;
        let session = loop {
            let contexts = self.browser(state).await?.contexts();
            let (id, owner, url) = (new_id()?, owner.to_owned(), parsed.as_str());
            let blank = self.blank.take().await;
            let opened = match blank {
                Some(blank) => {
                    PreviewSession::open_in(blank, id, owner, policy.clone(), viewport, url, purpose).await
                }
                None => {
                    PreviewSession::open(&contexts, id, owner, policy.clone(), viewport, url, purpose).await
                }
            };
            match opened {
                // The browser died so recently that the sweep still saw it alive:
                // forget it and open in a new one, once.
                Err(error) if error.is_browser_gone() && !retried => {
                    tracing::warn!("the preview browser is gone; launching a new one for this open");
                    self.forget_browser(state);
                    retried = true;
                }
                other => break other?,
            }
        };
        let session = Arc::new(session);
        session.touch();
        state.sessions.insert(session.id.clone(), Arc::clone(&session));
        Ok(session)
    }

    /// At the session limit, closes the least recently used idle session of
    /// `owner` (said in the log, and to the owner through
    /// [`PreviewManager::take_evicted`]); refuses when `owner` has none to give.
    async fn make_room(&self, state: &mut State, owner: &str) -> Result<(), PreviewError> {
        let max_sessions = self.max_sessions();
        let opening = self.opening.load(std::sync::atomic::Ordering::Relaxed);
        if state.sessions.len() + opening < max_sessions {
            return Ok(());
        }
        let Some(id) = state
            .sessions
            .values()
            .filter(|s| s.owner == owner && !s.busy())
            .max_by_key(|s| s.idle_for())
            .map(|s| s.id.clone())
        else {
            return Err(PreviewError::SessionLimit(max_sessions));
        };
        tracing::info!(
            %id,
            owner,
            "closing the least recently used preview session of its owner: {max_sessions} are open, the limit",
        );
        self.evict(state, &id, Eviction::Limit).await;
        Ok(())
    }

    /// Closes session `id` without its owner asking, and remembers it for the
    /// owner's next call.
    async fn evict(&self, state: &mut State, id: &str, why: Eviction) {
        let Some(session) = state.sessions.remove(id) else {
            return;
        };
        if state.evicted.len() == MAX_UNTOLD_EVICTIONS {
            state.evicted.pop_front();
        }
        state.evicted.push_back(Evicted {
            id: id.to_owned(),
            owner: session.owner.clone(),
            why,
        });
        dispose(state, &session).await;
    }

    /// Makes a blank preview in the background for the next open, when the
    /// manager keeps one ready ([`PreviewManager::prewarm`]) and none is ready or
    /// being made. A caller calls it once its own result is out: making a page
    /// takes the browser's time, which the result should not wait for.
    pub fn keep_blank_ready(self: &Arc<Self>) {
        if !self.keep_blank.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let manager = Arc::clone(self);
        tokio::spawn(async move {
            let state = manager.state.lock().await;
            manager.refill_blank(&state);
        });
    }

    /// Starts making a blank preview when one should be kept ready and is
    /// neither ready nor being made, and a session could still use it.
    fn refill_blank(&self, state: &State) {
        if !self.keep_blank.load(std::sync::atomic::Ordering::Relaxed)
            || state.sessions.len() >= self.max_sessions()
        {
            return;
        }
        let Some(browser) = &state.browser else { return };
        let launch = {
            let mut slot = self.blank.slot();
            if slot.ready.is_some() || slot.making || slot.current == 0 {
                return;
            }
            slot.making = true;
            slot.current
        };
        tokio::spawn(make_blank(Arc::clone(&self.blank), browser.contexts(), launch));
    }

    /// Forgets the browser (gone, or closed on purpose) with its sessions and its
    /// blank preview.
    fn forget_browser(&self, state: &mut State) {
        state.sessions.clear();
        state.browser = None;
        for (_, browser) in state.pooled.drain() {
            browser.close();
        }
        let mut slot = self.blank.slot();
        slot.current = 0;
        slot.ready = None;
    }

    /// The session `id`, if `owner` owns it. A dead browser closes every session.
    pub async fn get(&self, owner: &str, id: &str) -> Result<Arc<PreviewSession>, PreviewError> {
        let mut state = self.state.lock().await;
        self.sweep(&mut state).await;
        let session = owned(&state, owner, id)?;
        session.touch();
        Ok(Arc::clone(session))
    }

    /// Closes the session `id` of `owner`.
    pub async fn close(&self, owner: &str, id: &str) -> Result<(), PreviewError> {
        let mut state = self.state.lock().await;
        owned(&state, owner, id)?;
        let session = state.sessions.remove(id).expect("present");
        dispose(&mut state, &session).await;
        Ok(())
    }

    /// Closes every session of `subject` and of the owners scoped inside it
    /// (`<subject>/owner:<name>`); returns how many were closed.
    pub async fn close_subject(&self, subject: &str) -> usize {
        let scoped = format!("{subject}/owner:");
        let mut state = self.state.lock().await;
        let owned: Vec<String> = state
            .sessions
            .values()
            .filter(|s| s.owner == subject || s.owner.starts_with(&scoped))
            .map(|s| s.id.clone())
            .collect();
        for id in &owned {
            let session = state.sessions.remove(id).expect("present");
            dispose(&mut state, &session).await;
        }
        owned.len()
    }

    /// The sessions `owner` owns: id, origin and viewport.
    pub async fn list(&self, owner: &str) -> Vec<(String, String, Viewport)> {
        let mut state = self.state.lock().await;
        self.sweep(&mut state).await;
        let mut sessions: Vec<_> = state
            .sessions
            .values()
            .filter(|s| s.owner == owner)
            .map(|s| (s.id.clone(), s.origin(), s.viewport()))
            .collect();
        sessions.sort_by(|a, b| a.0.cmp(&b.0));
        sessions
    }

    /// Closes every session and the browser.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        self.forget_browser(&mut state);
    }

    /// Launches the browser now, in the background, with a blank preview ready,
    /// so the first open finds both; from then on keeps a blank ready for the
    /// next open, and closes the browser whenever it has held no session for the
    /// idle timeout (the next open launches it again). Ends with the manager.
    /// With a pool, nothing: a browser or a blank kept ready would hold one of
    /// the pool's browsers.
    pub fn prewarm(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        if self.is_pooled() {
            return tokio::spawn(async {});
        }
        self.keep_blank.store(true, std::sync::atomic::Ordering::Relaxed);
        let manager = Arc::downgrade(self);
        tokio::spawn(async move {
            {
                let Some(this) = manager.upgrade() else { return };
                // Held while the blank is made too: an open arriving meanwhile
                // waits for it rather than making a second one beside it.
                let mut state = this.state.lock().await;
                state.last_used = Some(std::time::Instant::now());
                match this.browser(&mut state).await.map(dshkit_cdp::Browser::contexts) {
                    Ok(contexts) => {
                        let launch = {
                            let mut slot = this.blank.slot();
                            slot.making = true;
                            slot.current
                        };
                        make_blank(Arc::clone(&this.blank), contexts, launch).await;
                        tracing::debug!("prewarmed the preview browser");
                    }
                    Err(e) => {
                        tracing::warn!(%e, "could not prewarm the preview browser; the first open launches it");
                    }
                }
            }
            loop {
                let deadline = {
                    let Some(this) = manager.upgrade() else { return };
                    let idle = this.idle_timeout();
                    let mut state = this.state.lock().await;
                    let since = state.last_used.unwrap_or_else(std::time::Instant::now);
                    if state.browser.is_some() && state.sessions.is_empty() && since.elapsed() >= idle {
                        tracing::info!("closing the preview browser: no session for {}s", idle.as_secs());
                        this.forget_browser(&mut state);
                        // A deliberate close: the next launch is no relaunch.
                        state.launched_before = false;
                    }
                    // Next look: when the browser would have been idle long enough
                    // (with no browser, one idle timeout from now).
                    let now = std::time::Instant::now();
                    if state.browser.is_none() {
                        now + idle
                    } else {
                        (since + idle).max(now + Duration::from_secs(1))
                    }
                };
                tokio::time::sleep_until(deadline.into()).await;
            }
        })
    }

    /// Checks the browser is alive (dropping every session if not) and closes idle
    /// sessions.
    async fn sweep(&self, state: &mut State) {
        state.last_used = Some(std::time::Instant::now());
        if state.browser.as_mut().is_some_and(|browser| !browser.is_alive()) {
            tracing::warn!("the preview browser is gone; closing its sessions");
            self.forget_browser(state);
        }
        let mut gone = Vec::new();
        for (id, browser) in &mut state.pooled {
            if !browser.is_alive() {
                gone.push(id.clone());
            }
        }
        for id in gone {
            tracing::warn!(%id, "the pool closed this preview's connection (its session timeout?); closing the preview");
            state.pooled.remove(&id);
            state.sessions.remove(&id);
        }
        let timeout = self.idle_timeout();
        let idle: Vec<String> = state
            .sessions
            .values()
            .filter(|s| s.idle_for() > timeout)
            .map(|s| s.id.clone())
            .collect();
        for id in idle {
            tracing::info!(%id, "closing idle preview session");
            self.evict(state, &id, Eviction::Idle).await;
        }
    }

    async fn browser<'a>(&self, state: &'a mut State) -> Result<&'a Browser, PreviewError> {
        if state.browser.is_none() {
            let browser = match &self.config.browser {
                BrowserSource::Launch(options) => Browser::launch(options).await?,
                BrowserSource::Endpoint(url) if url.starts_with("ws") => Browser::connect_ws(url).await?,
                BrowserSource::Endpoint(url) => Browser::connect_http(url).await?,
                // Pooled previews connect one by one (`open_pooled`).
                BrowserSource::Pool(_) => return Err(PreviewError::Cdp(dshkit_cdp::CdpError::Disconnected)),
            };
            state.browser = Some(browser);
            let mut slot = self.blank.slot();
            slot.launches += 1;
            slot.current = slot.launches;
            slot.ready = None;
            drop(slot);
            if std::mem::replace(&mut state.launched_before, true) {
                self.relaunches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        Ok(state.browser.as_ref().expect("just set"))
    }

    /// The launched browser's process id, when a browser is running and ours.
    pub async fn browser_pid(&self) -> Option<u32> {
        self.state
            .lock()
            .await
            .browser
            .as_ref()?
            .process()
            .map(dshkit_cdp::BrowserProcess::pid)
    }

    /// Whether an operation's error means the browser is gone; if so the manager
    /// forgets every session so the next open relaunches.
    pub async fn note_error(&self, error: &PreviewError) {
        if error.is_browser_gone() {
            let mut state = self.state.lock().await;
            if self.is_pooled() {
                // One pool connection gone says nothing of the others.
                self.sweep(&mut state).await;
            } else {
                self.forget_browser(&mut state);
            }
        }
    }

    /// After a verification on a preview it opened for itself: with a pool, the
    /// preview is closed so its browser goes back to the pool at once; whether
    /// it was.
    pub async fn release_after_verification(&self, owner: &str, id: &str) -> bool {
        self.is_pooled() && self.close(owner, id).await.is_ok()
    }
}

/// Ends what `session` held in its browser: with a pool its own connection
/// (the engine ends its browser), else its context.
async fn dispose(state: &mut State, session: &PreviewSession) {
    if let Some(browser) = state.pooled.remove(&session.id) {
        browser.close();
    } else if let Some(browser) = &state.browser {
        let _ = browser.dispose_context(&session.context_id).await;
    }
}

/// A pool connection being made, counted in [`PreviewManager`]'s `opening`
/// until dropped (made, failed or abandoned).
struct Opening(Arc<std::sync::atomic::AtomicUsize>);

impl Opening {
    fn count(opening: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        opening.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(Arc::clone(opening))
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Makes a blank preview in `contexts` and keeps it in `slot` if browser
/// `launch` is still the running one (else drops it, which disposes it).
async fn make_blank(blanks: Arc<Blanks>, contexts: dshkit_cdp::Contexts, launch: u64) {
    let made = BlankPreview::make(&contexts, Viewport::default()).await;
    {
        let mut slot = blanks.slot();
        slot.making = false;
        match made {
            Ok(blank) if slot.current == launch && slot.ready.is_none() => slot.ready = Some(blank),
            Ok(_) => {}
            Err(e) => tracing::debug!(%e, "could not make a blank preview; the next open makes its own"),
        }
    }
    blanks.made.notify_waiters();
}

/// The session `id` if it exists and `owner` owns it.
fn owned<'a>(state: &'a State, owner: &str, id: &str) -> Result<&'a Arc<PreviewSession>, PreviewError> {
    let session = state
        .sessions
        .get(id)
        .ok_or_else(|| PreviewError::UnknownSession(id.to_owned()))?;
    if session.owner != owner {
        return Err(PreviewError::NotOwner(id.to_owned()));
    }
    Ok(session)
}

/// A random opaque session id (`pv-` and 16 hex digits).
fn new_id() -> Result<String, PreviewError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| PreviewError::Interaction(format!("no randomness for a session id: {e}")))?;
    Ok(format!("pv-{}", hex::encode(bytes)))
}
