//! `dshkit devtools profile`: the finite profile of one event, one workflow on
//! either route ([`Route`]): a lease a little longer than the window is taken,
//! held for the whole window, stopped by its owner, and every page of its
//! traces read. What it found is shown as text, as JSON, or written as a Chrome
//! trace ([`crate::trace`]).

use std::time::Duration;

use serde_json::{Value, json};

use crate::agent::{EXPERIMENT_START, EXPERIMENT_STOP, TRACES};
use crate::limits::MAX_LEASE;
use crate::route::{Route, object as arguments};
use crate::show::{CommandFailed, all_pages};

/// How much longer the lease is than the window, so that the window's own end
/// (not the collector's timer) stops it; the collector's timer covers this
/// process's death.
const LEASE_MARGIN: Duration = Duration::from_secs(2);
/// Traces read a page at a time: a trace lists up to 64 listeners of about
/// 250 bytes each, so 3 fit the endpoint's 64 KiB bound on a tool's result
/// (`dshkit_mcp::DEFAULT_MAX_STRUCTURED_BYTES`), which would cut a longer page.
pub const PROFILE_PAGE_TRACES: usize = 3;

/// A finite profile of one event: its lease, how long it was held, and every trace.
#[derive(Debug)]
pub struct Profile {
    pub event: String,
    pub lease: String,
    pub held: Duration,
    pub stopped: Value,
    pub traces: Vec<Value>,
}

/// Profiles `event` for `ttl` over `route`. `started` is told the lease once it runs.
pub async fn profile<R: Route>(
    route: &mut R,
    event: &str,
    ttl: Duration,
    started: impl FnOnce(&str),
) -> Result<Profile, R::Error>
where
    R::Error: From<CommandFailed>,
{
    if ttl > MAX_LEASE {
        return Err(CommandFailed(format!("a profile lasts at most {}s", MAX_LEASE.as_secs())).into());
    }
    let lease_for = (ttl + LEASE_MARGIN).min(MAX_LEASE);
    let start = arguments(json!({"event": event, "ttlMs": lease_for.as_millis(), "confirm": true}));
    let lease = route.call(EXPERIMENT_START, start).await?["lease"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    started(&lease);
    let began = tokio::time::Instant::now();
    // The window itself: the profile holds its lease this long.
    tokio::time::sleep(ttl).await;
    let held = began.elapsed();
    let stopped = route
        .call(EXPERIMENT_STOP, arguments(json!({"lease": lease})))
        .await?;
    let traces = all_pages(
        route,
        TRACES,
        (&arguments(json!({"lease": lease})), PROFILE_PAGE_TRACES),
        "traces",
    )
    .await?;
    Ok(Profile {
        event: event.to_owned(),
        lease,
        held,
        stopped,
        traces,
    })
}

impl Profile {
    pub fn to_json(&self) -> Value {
        json!({
            "lease": self.lease,
            "event": self.event,
            "heldMs": self.held.as_millis(),
            "restored": self.stopped["last"]["restored"],
            "tracesDropped": self.stopped["last"]["tracesDropped"],
            "tracesKept": self.stopped["last"]["traces"],
            "traces": self.traces,
        })
    }

    /// Each trace with its listeners: time, self time, `next()` facts.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{}: {} dispatch(es) traced in {} ms (lease {}; original dispatch restored: {})\n",
            self.event,
            self.traces.len(),
            self.held.as_millis(),
            self.lease,
            self.stopped["last"]["restored"].as_str().unwrap_or("unknown")
        );
        for trace in &self.traces {
            text.push_str(&format!(
                "#{} {} at {}\n",
                trace["id"], trace["mode"], trace["at"]
            ));
            for l in trace["listeners"].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "  {}. {} (fiber {}): {}{}{}{}\n",
                    l["index"],
                    l["ownerName"].as_str().unwrap_or("?"),
                    l["owner"],
                    if l["called"] == true {
                        format!("{} µs, self {} µs", l["durationUs"], l["selfUs"])
                    } else {
                        "not called".to_owned()
                    },
                    if l["nextCalls"].is_null() {
                        String::new()
                    } else {
                        format!(", next() x{}", l["nextCalls"])
                    },
                    if l["lateNext"] == true {
                        ", next() after return"
                    } else {
                        ""
                    },
                    if l["async"] == true {
                        ", returned a promise"
                    } else {
                        ""
                    },
                ));
            }
        }
        text
    }
}
