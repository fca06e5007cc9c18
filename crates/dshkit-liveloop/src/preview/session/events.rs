//! The CDP event pump of a preview: applies the network policy to paused
//! requests, counts loads, and records everything else (the page's events and
//! those of its workers) in the observations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dshkit_cdp::{Event, PageCommands};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::Shared;
use crate::preview::lookup;
use crate::preview::policy::{Decision, NetworkPolicy, Precheck};

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
pub(super) async fn pump(
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
                match policy.precheck(&url) {
                    Precheck::Decided(decision) => {
                        if answer_paused(&page, &shared, &request_id, &url, decision).await {
                            break;
                        }
                    }
                    Precheck::NeedsDns(query) => {
                        // A lookup may be slow: it runs on its own, bounded, so the
                        // page's other requests keep flowing.
                        let (page, shared, policy) = (page.clone(), Arc::clone(&shared), policy.clone());
                        tokio::spawn(async move {
                            let decision = lookup::decide_after(&policy, query).await;
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
