//! Navigation: going to a URL the policy allows, waiting for its load, going back
//! in history, and a verification's fresh load from a blank page.

use std::time::{Duration, Instant};

use serde_json::json;

use super::PreviewSession;
use super::settle::{DEFAULT_SETTLE_DEADLINE, Mark};
use crate::preview::error::PreviewError;
use crate::preview::lookup;
use crate::preview::observe::Observations;
use crate::preview::policy::Decision;
use crate::preview::snapshot::Snapshot;

/// Longest wait for the server's response to a navigation (a dev server may
/// compile the page first).
pub const NAVIGATION_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for `DOMContentLoaded` after a navigation's response.
pub const DEFAULT_NAVIGATION_TIMEOUT: Duration = Duration::from_secs(20);

/// How many unfinished requests a load that did not settle names.
pub(crate) const MAX_PENDING_SHOWN: usize = 3;

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

impl PreviewSession {
    /// Navigates and waits for the load; returns the snapshot taken as it
    /// settled, when there is one.
    pub(super) async fn goto(&self, url: &str) -> Result<Option<Snapshot>, PreviewError> {
        if let Decision::Block(reason) = lookup::decide(&self.policy, url).await {
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
    pub(super) async fn wait_loaded(
        &self,
        before: u64,
        requests: u64,
    ) -> Result<Option<Snapshot>, PreviewError> {
        self.wait_content_loaded(before, DEFAULT_NAVIGATION_TIMEOUT)
            .await?;
        // A new document counts its work from its start.
        let mark = Mark { requests, page: 0 };
        Ok(self.settle(mark, DEFAULT_SETTLE_DEADLINE, true).await.snapshot)
    }

    /// Waits until a document after load number `before` fired
    /// `DOMContentLoaded`, at most `deadline`; returns when the wait started.
    async fn wait_content_loaded(&self, before: u64, deadline: Duration) -> Result<Instant, PreviewError> {
        let mut loads = self.loads.clone();
        let started = Instant::now();
        tokio::time::timeout(deadline, loads.wait_for(|n| *n > before))
            .await
            .map_err(|_| PreviewError::Timeout {
                what: "DOMContentLoaded".into(),
                ms: started.elapsed().as_millis(),
            })?
            .map_err(|_| PreviewError::BrowserGone)?;
        Ok(started)
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
        let started = self.wait_content_loaded(before, deadline).await?;
        Ok(self
            .settle_idle(quiet, deadline.saturating_sub(started.elapsed()))
            .await)
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
        if let Decision::Block(reason) = lookup::decide(&self.policy, url).await {
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

    /// Goes one page back in the preview's history and waits for its load.
    pub(super) async fn back(&self, before: u64) -> Result<Option<Snapshot>, PreviewError> {
        self.through_history(before, -1).await
    }

    /// Goes one page forward in the preview's history and waits for its load.
    pub(super) async fn forward(&self, before: u64) -> Result<Option<Snapshot>, PreviewError> {
        self.through_history(before, 1).await
    }

    /// Goes `step` entries through the history (-1: back, 1: forward).
    async fn through_history(&self, before: u64, step: i64) -> Result<Option<Snapshot>, PreviewError> {
        let history = self.page.call("Page.getNavigationHistory", json!({})).await?;
        let current = history["currentIndex"].as_i64().unwrap_or(0);
        let entries = history["entries"].as_array().map_or(0, Vec::len);
        let index = usize::try_from(current + step).ok().filter(|i| *i < entries);
        // The page starts on about:blank; that entry is not part of the preview.
        let Some(index) = index.filter(|i| history["entries"][*i]["url"] != "about:blank") else {
            let which = if step < 0 { "earlier" } else { "later" };
            return Err(PreviewError::Interaction(format!(
                "there is no {which} page in this preview's history"
            )));
        };
        let entry = history["entries"][index]["id"].clone();
        let requests = self.observe(Observations::request_mark);
        self.page
            .call("Page.navigateToHistoryEntry", json!({ "entryId": entry }))
            .await?;
        self.wait_loaded(before, requests).await
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
