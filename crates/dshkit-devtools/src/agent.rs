//! What the DevTools tools answer an agent: each tool's arguments read into
//! its typed request, the debug core asked, and the result as a short text and
//! a structured value, catalogs paged, each error with a stable code. Knows
//! nothing of MCP; the binary lists the tools and wraps these as tool results.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::core::{
    DEFAULT_LEASE, DEFAULT_WAIT, DebugCore, DebugError, MAX_PAGE, Search, Snapshot, Target, WaitResult,
};

pub const LIST: &str = "cordis_list_debug_targets";
pub const ATTACH: &str = "cordis_attach_debug_session";
pub const SNAPSHOT: &str = "cordis_debug_snapshot";
pub const WAIT: &str = "cordis_wait_for_runtime_change";
pub const DETACH: &str = "cordis_detach_debug_session";
pub const SUMMARY: &str = "cordis_runtime_summary";
pub const EVENT: &str = "cordis_inspect_event";
pub const FIBER: &str = "cordis_inspect_fiber";
pub const SEARCH: &str = "cordis_search_dispatches";
pub const TRACES: &str = "cordis_profiler_traces";
pub const CHECKPOINT: &str = "cordis_capture_checkpoint";
pub const COMPARE: &str = "cordis_compare_current";
pub const EXPERIMENT_STATUS: &str = "cordis_waterfall_experiment_status";
pub const EXPERIMENT_START: &str = "cordis_start_waterfall_experiment";
pub const EXPERIMENT_STOP: &str = "cordis_stop_waterfall_experiment";

/// Dispatches a search returns when it names no `limit`.
const DEFAULT_SEARCH_LIMIT: usize = 50;
/// Traces a page holds when it names no `limit`.
const DEFAULT_TRACES_LIMIT: usize = 20;

/// Why a tool gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The arguments do not fit the tool's schema.
    #[error(transparent)]
    Arguments(serde_json::Error),
    /// The arguments fit, but say too little.
    #[error("{0}")]
    Incomplete(&'static str),
    /// The debug core refused or failed.
    #[error(transparent)]
    Debug(#[from] DebugError),
    /// Nothing to answer with (no such tool, event, or no consent).
    #[error("{0}")]
    Refused(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachArgs {
    target: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    session: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SnapshotArgs {
    session: String,
    #[serde(default)]
    sections: Option<Vec<String>>,
    #[serde(default)]
    cursor: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WaitArgs {
    session: String,
    event: Option<String>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventArgs {
    session: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FiberArgs {
    session: String,
    uid: Option<i64>,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    session: String,
    event: Option<String>,
    since: Option<u64>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TracesArgs {
    session: String,
    lease: Option<String>,
    #[serde(default)]
    cursor: usize,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareArgs {
    session: String,
    checkpoint: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StartArgs {
    session: String,
    event: String,
    ttl_ms: Option<u64>,
    confirm: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StopArgs {
    session: String,
    lease: String,
}

fn read<T: DeserializeOwned>(arguments: Map<String, Value>) -> Result<T, AgentError> {
    serde_json::from_value(Value::Object(arguments)).map_err(AgentError::Arguments)
}

/// Answers the tool `tool` called with `arguments`.
pub async fn answer(core: &DebugCore, tool: &str, arguments: Map<String, Value>) -> Result<View, AgentError> {
    match tool {
        LIST => {
            let _: NoArguments = read(arguments)?;
            Ok(targets(&core.targets()))
        }
        ATTACH => {
            let args: AttachArgs = read(arguments)?;
            let attached = core.attach(args.target.as_deref()).await?;
            Ok((
                format!("session {} on target {}", attached.session, attached.target.id),
                json!(attached),
            ))
        }
        DETACH => {
            let args: SessionArgs = read(arguments)?;
            core.detach(&args.session).await?;
            Ok((
                format!("session {} detached", args.session),
                json!({"detached": args.session}),
            ))
        }
        SNAPSHOT => {
            let args: SnapshotArgs = read(arguments)?;
            let taken = core.snapshot(&args.session).await?;
            Ok(snapshot(&taken, args.sections.as_deref(), args.cursor))
        }
        SUMMARY => {
            let args: SessionArgs = read(arguments)?;
            let value = summary(&core.snapshot(&args.session).await?);
            Ok((value.to_string(), value))
        }
        EVENT => {
            let args: EventArgs = read(arguments)?;
            let taken = core.snapshot(&args.session).await?;
            event(&taken, &args.name)
                .ok_or_else(|| AgentError::Refused(format!("no listener is registered for `{}`", args.name)))
        }
        FIBER => {
            let args: FiberArgs = read(arguments)?;
            let taken = core.snapshot(&args.session).await?;
            if args.uid.is_none() && args.name.is_none() {
                return Err(AgentError::Incomplete("give uid or name"));
            }
            Ok(fibers(&taken, args.uid, args.name.as_deref()))
        }
        WAIT => {
            let args: WaitArgs = read(arguments)?;
            let timeout = args.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis);
            Ok(wait(
                &core.wait(&args.session, args.event.as_deref(), timeout).await?,
            ))
        }
        _ => history(core, tool, arguments).await,
    }
}

/// The journal, the checkpoints and the experiments.
async fn history(core: &DebugCore, tool: &str, arguments: Map<String, Value>) -> Result<View, AgentError> {
    match tool {
        SEARCH => {
            let args: SearchArgs = read(arguments)?;
            let limit = args.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
            let found = core.search_dispatches(&args.session, args.event.as_deref(), args.since, limit);
            Ok(search(&found.await?))
        }
        CHECKPOINT => {
            let args: SessionArgs = read(arguments)?;
            let info = core.capture_checkpoint(&args.session).await?;
            Ok((
                format!("checkpoint {} ({} items)", info.checkpoint, info.items),
                json!(info),
            ))
        }
        COMPARE => {
            let args: CompareArgs = read(arguments)?;
            let comparison = core
                .compare_current(&args.session, args.checkpoint.as_deref())
                .await?;
            let text = format!(
                "since {}: {} added, {} removed, {} changed",
                comparison.checkpoint,
                comparison.totals["added"],
                comparison.totals["removed"],
                comparison.totals["changed"]
            );
            Ok((text, json!(comparison)))
        }
        EXPERIMENT_STATUS => {
            let args: SessionArgs = read(arguments)?;
            Ok(experiment_status(core.experiment_status(&args.session).await?))
        }
        EXPERIMENT_START => {
            let args: StartArgs = read(arguments)?;
            if args.confirm != Some(true) {
                return Err(AgentError::Refused(
                    "an experiment wraps the listeners of a live event for its lease: ask the user, then call again with confirm: true".to_owned(),
                ));
            }
            let lease = args.ttl_ms.map_or(DEFAULT_LEASE, Duration::from_millis);
            Ok(experiment_started(
                core.start_experiment(&args.session, &args.event, lease).await?,
            ))
        }
        EXPERIMENT_STOP => {
            let args: StopArgs = read(arguments)?;
            let stopped = core.stop_experiment(&args.session, &args.lease).await?;
            Ok(experiment_stopped(&args.lease, stopped))
        }
        TRACES => {
            let args: TracesArgs = read(arguments)?;
            let limit = args.limit.unwrap_or(DEFAULT_TRACES_LIMIT);
            let page = core.traces(&args.session, args.lease.as_deref(), args.cursor, limit);
            Ok(traces(page.await?))
        }
        other => Err(AgentError::Refused(format!("unknown tool {other}"))),
    }
}

/// A view for an agent: its text and its structured result.
pub type View = (String, Value);

impl DebugError {
    /// The error's structured facts: its code, and the replacement of a
    /// replaced target.
    pub fn facts(&self) -> Map<String, Value> {
        let mut facts = Map::from_iter([("code".to_owned(), json!(self.code()))]);
        if let Self::Stale {
            replacement: Some(replacement),
            ..
        } = self
        {
            facts.insert("replacement".into(), json!(replacement));
        }
        facts
    }
}

/// One page of a catalog: items from `cursor`, at most [`MAX_PAGE`].
pub fn page<T: Serialize>(items: &[T], cursor: usize) -> Value {
    let returned: Vec<&T> = items.iter().skip(cursor).take(MAX_PAGE).collect();
    let next = cursor + returned.len();
    json!({
        "total": items.len(),
        "returned": returned.len(),
        "truncated": next < items.len(),
        "cursor": (next < items.len()).then_some(next),
        "items": returned,
    })
}

/// Counts: fibers per state, events, listeners, services, loader entries, candidates.
pub fn summary(snapshot: &Snapshot) -> Value {
    let topology = &snapshot.topology;
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for fiber in &topology.fibers {
        *states.entry(fiber.state.as_str()).or_default() += 1;
    }
    json!({
        "target": snapshot.target,
        "fibers": topology.fibers_total,
        "fiberStates": states,
        "events": topology.events_total,
        "listeners": topology.events.iter().map(|e| e.listeners.len()).sum::<usize>(),
        "services": topology.services.len(),
        "entries": topology.entries.len(),
        "candidates": snapshot.candidates.len(),
    })
}

/// The live targets, one line each.
pub fn targets(targets: &[Target]) -> View {
    let text = if targets.is_empty() {
        "no debug targets: no live DSH runs the dshkit plugin with `devtools: true`".to_owned()
    } else {
        targets
            .iter()
            .map(|t| match &t.problem {
                Some(problem) => format!("{} ({}, pid {}): {problem}", t.id, t.label, t.pid),
                None => format!("{} ({}, pid {})", t.id, t.label, t.pid),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    (text, json!({"targets": targets}))
}

/// The `sections` of a snapshot asked for (all when `None`), catalogs paged from `cursor`.
pub fn snapshot(snapshot: &Snapshot, sections: Option<&[String]>, cursor: usize) -> View {
    let wanted = |s: &str| sections.is_none_or(|all| all.iter().any(|w| w == s));
    let mut value = Map::new();
    if wanted("summary") {
        value.insert("summary".into(), summary(snapshot));
    }
    if wanted("fibers") {
        value.insert("fibers".into(), page(&snapshot.topology.fibers, cursor));
    }
    if wanted("events") {
        let events: Vec<Value> = snapshot
            .topology
            .events
            .iter()
            .map(|e| {
                json!({"name": e.name, "listeners": e.listeners.len(),
                "owners": e.listeners.iter().filter_map(|l| l.owner_name.clone()).collect::<BTreeSet<_>>()})
            })
            .collect();
        value.insert("events".into(), page(&events, cursor));
    }
    if wanted("candidates") {
        value.insert("candidates".into(), page(&snapshot.candidates, 0));
    }
    let text = format!(
        "{} fibers, {} events, {} candidate(s) (facts to look at, not causes)",
        snapshot.topology.fibers_total,
        snapshot.topology.events_total,
        snapshot.candidates.len()
    );
    (text, Value::Object(value))
}

/// One event's listeners, or `None` when nothing listens to `name`.
pub fn event(snapshot: &Snapshot, name: &str) -> Option<View> {
    let event = snapshot.topology.events.iter().find(|e| e.name == name)?;
    Some((
        format!("{}: {} listener(s)", event.name, event.listeners.len()),
        json!({"name": event.name, "listeners": page(&event.listeners, 0)}),
    ))
}

/// The fibers with `uid` and `name` (each when given).
pub fn fibers(snapshot: &Snapshot, uid: Option<i64>, name: Option<&str>) -> View {
    let fibers: Vec<_> = snapshot
        .topology
        .fibers
        .iter()
        .filter(|f| uid.is_none_or(|uid| f.id == uid) && name.is_none_or(|n| f.name == n))
        .collect();
    (
        format!("{} fiber(s)", fibers.len()),
        json!({"fibers": page(&fibers, 0)}),
    )
}

/// What a wait found.
pub fn wait(result: &WaitResult) -> View {
    let text = match result.outcome {
        "gap" => "gap: records after the session's cursor fell out of the journal (500 kept) before they were read; the next wait reads on from the oldest retained record. Absence in the window never means something did not happen".to_owned(),
        "timeout" => "timeout: nothing matching arrived".to_owned(),
        _ => format!("found {} record(s)", result.records.len()),
    };
    (text, json!(result))
}

/// The dispatches a search found.
pub fn search(found: &Search) -> View {
    let text = format!(
        "{} of {} matching dispatch(es) retained (the journal keeps the last 500 records; what fell out is unknown, not absent)",
        found.returned, found.total
    );
    (text, json!(found))
}

/// Whether experiments are on, and the one running.
pub fn experiment_status(status: Value) -> View {
    let text = match (&status["running"], status["enabled"].as_bool()) {
        (_, Some(false)) => {
            "experiments are off in this DSH (install with --devtools-experiments)".to_owned()
        }
        (Value::Object(running), _) => format!(
            "running: lease {} on {} until {}",
            running["lease"], running["event"], running["expiresAt"]
        ),
        _ => "no experiment is running".to_owned(),
    };
    (text, status)
}

/// The lease an experiment start got.
pub fn experiment_started(started: Value) -> View {
    (
        format!(
            "lease {} on {} until {} (the collector ends it then, whatever happens to this server)",
            started["lease"], started["event"], started["expiresAt"]
        ),
        started,
    )
}

/// How a stopped experiment ended.
pub fn experiment_stopped(lease: &str, stopped: Value) -> View {
    let restored = stopped["last"]["restored"].as_str().unwrap_or("unknown");
    (
        format!("lease {lease} stopped; original dispatch restored: {restored}"),
        stopped,
    )
}

/// One page of an experiment's traces.
pub fn traces(traces: Value) -> View {
    let text = format!(
        "{} of {} trace(s) of lease {} (durations in µs; outside an experiment they are unknown)",
        traces["returned"], traces["total"], traces["experiment"]["lease"]
    );
    (text, traces)
}
