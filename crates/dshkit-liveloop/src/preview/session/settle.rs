//! Settling after an action or a load, on evidence rather than a fixed wait: the
//! page's own work (see `settle.js`), the requests started since the action's
//! mark, and, for a verification's load, a quiet network that no announced
//! dev-server reload still holds.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::PreviewSession;
use crate::preview::observe::Observations;
use crate::preview::snapshot::{SNAPSHOT_FUNCTION, Snapshot};
use crate::preview::world::call_expression;

/// Script installed before any page script that counts the work an action starts
/// (script requests, short timers) and waits for the document to stop changing.
pub const SETTLE_SCRIPT: &str = include_str!("../settle.js");

/// How long the network must be idle (long-lived streams excluded) for a
/// verification's load to count as settled (its `quietWindowMs` default).
pub const DEFAULT_QUIET_WINDOW: Duration = Duration::from_millis(100);

/// Longest settle after an interaction, or after a navigation's `DOMContentLoaded`.
pub const DEFAULT_SETTLE_DEADLINE: Duration = Duration::from_secs(3);

/// Most rounds of "the page's own work, then the requests it did not start from
/// script": each round's requests may start more work.
const MAX_SETTLE_ROUNDS: usize = 4;

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

/// Where an action started: the page's work counter and the browser's request
/// count at that moment (see [`PreviewSession::settle`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pub(super) requests: u64,
    pub(super) page: u64,
}

/// How a settle ended.
#[derive(Debug, Clone, Default)]
pub(super) struct Settled {
    /// Everything it waited for was done before the deadline.
    pub(super) complete: bool,
    /// The page's document was still loading (an action started a navigation).
    pub(super) loading: bool,
    /// The snapshot taken as it settled, made the last one.
    pub(super) snapshot: Option<Snapshot>,
}

impl PreviewSession {
    /// Marks the start of an action: what the page starts from now on is its work.
    pub(super) async fn mark(&self) -> Mark {
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
    pub(super) async fn settle(&self, mark: Mark, deadline: Duration, snapshot: bool) -> Settled {
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
    pub(super) async fn settle_idle(&self, quiet: Duration, deadline: Duration) -> bool {
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
    pub(super) async fn settle_for(&self, quiet: Duration, deadline: Duration) -> bool {
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
}
