//! What the DevTools tools answer an agent: each tool's arguments read into
//! its typed request, the debug core asked, and the result as a short text and
//! a structured value, catalogs paged, each error with a stable code. Knows
//! nothing of MCP; the binary lists the tools and wraps these as tool results.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::core::{DebugCore, Search, Snapshot, WaitFor, WaitResult};
use crate::error::DebugError;
use crate::journal::{Filter, RECORD_TYPES};
use crate::limits::{DEFAULT_LEASE, DEFAULT_WAIT, MAX_PAGE};
use crate::target::Target;

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

/// The parameter that names a debug session in every session tool.
pub const SESSION_PARAMETER: &str = "debugSessionId";
/// Its deprecated alias, accepted for one release (until v0.9).
pub const DEPRECATED_SESSION_PARAMETER: &str = "session";
/// The sections of a snapshot, in the order a full one shows them.
pub const SECTIONS: [&str; 6] = [
    "summary",
    "events",
    "fibers",
    "dispatches",
    "profiler",
    "candidates",
];

/// Traces a page holds when it names no `limit` (a trace lists up to 64
/// listeners: 100 of them would pass the result's size bound).
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

/// Attach names its target `targetId` (the design's name); `target` is its
/// deprecated alias, accepted for one release (until v0.9). Naming both is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachArgs {
    #[serde(rename = "targetId", alias = "target")]
    target: Option<String>,
}

/// Every session tool names its session `debugSessionId`; `session` is its
/// deprecated alias, accepted for one release.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    sections: Option<Vec<String>>,
    cursor: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WaitArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    #[serde(rename = "type")]
    kind: Option<String>,
    event: Option<String>,
    after_sequence: Option<u64>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    name: String,
    cursor: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FiberArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    uid: Option<i64>,
    name: Option<String>,
    cursor: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    event: Option<String>,
    since: Option<u64>,
    cursor: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TracesArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    lease: Option<String>,
    /// A `nextCursor` of this session. **Deprecated** (goes in v0.9): a number,
    /// the collector's trace offset this tool paged by before v0.8.
    cursor: Option<Value>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    checkpoint: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StartArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    event: String,
    ttl_ms: Option<u64>,
    confirm: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StopArgs {
    #[serde(rename = "debugSessionId", alias = "session")]
    session: String,
    lease: String,
}

fn read<T: DeserializeOwned>(arguments: Map<String, Value>) -> Result<T, AgentError> {
    serde_json::from_value(Value::Object(arguments)).map_err(AgentError::Arguments)
}

/// The debug session a call names (`debugSessionId`, or its deprecated alias
/// `session`), when it names one.
fn named_session(arguments: &Map<String, Value>) -> Option<&str> {
    arguments
        .get(SESSION_PARAMETER)
        .or_else(|| arguments.get(DEPRECATED_SESSION_PARAMETER))
        .and_then(Value::as_str)
}

/// Answers the tool `tool` called by the MCP client `subject` with
/// `arguments`. A session is only ever used by the client that attached it.
pub async fn answer(
    core: &DebugCore,
    subject: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<View, AgentError> {
    answer_with(core, subject, tool, arguments, &mut None).await
}

/// The runtime `session` shows: the one `taken` holds, else a new snapshot,
/// kept there.
async fn taken<'a>(
    core: &DebugCore,
    session: &str,
    taken: &'a mut Option<Snapshot>,
) -> Result<&'a Snapshot, DebugError> {
    if taken.is_none() {
        *taken = Some(core.snapshot(session).await?);
    }
    Ok(taken.as_ref().expect("taken just now"))
}

/// [`answer`], where the snapshot, events and fibers tools read the runtime
/// `reuse` holds (taken by the first of them): the pages of one CLI command
/// then show one moment, and the collector is asked once. An MCP call passes
/// `&mut None`: each reads the runtime anew.
pub async fn answer_with(
    core: &DebugCore,
    subject: &str,
    tool: &str,
    arguments: Map<String, Value>,
    reuse: &mut Option<Snapshot>,
) -> Result<View, AgentError> {
    if let Some(session) = named_session(&arguments) {
        core.authorize(session, subject).await?;
    }
    match tool {
        LIST => {
            let _: NoArguments = read(arguments)?;
            Ok(targets(&core.list_targets().await))
        }
        ATTACH => {
            let args: AttachArgs = read(arguments)?;
            let attached = core.attach_for(subject, args.target.as_deref()).await?;
            Ok((
                format!(
                    "debug session {} on target {} (epoch {})",
                    attached.session, attached.target_id, attached.epoch
                ),
                json!(attached),
            ))
        }
        DETACH => {
            let args: SessionArgs = read(arguments)?;
            core.detach(&args.session).await?;
            Ok((
                format!("debug session {} detached", args.session),
                json!({"detached": args.session}),
            ))
        }
        SNAPSHOT => {
            let args: SnapshotArgs = read(arguments)?;
            let sections = match (&args.cursor, args.sections) {
                // A cursor pages the one catalog it belongs to.
                (Some(cursor), _) => {
                    let catalog = core.cursor_catalog(&args.session, cursor).await?;
                    if !SECTIONS.contains(&catalog.as_str()) {
                        return Err(DebugError::UnknownCursor(format!(
                            "{cursor} (it pages {catalog}, not a snapshot section: pass it to the tool that gave it)"
                        ))
                        .into());
                    }
                    vec![catalog]
                }
                (None, Some(sections)) => sections,
                (None, None) => SECTIONS.iter().map(|s| (*s).to_owned()).collect(),
            };
            let taken = taken(core, &args.session, reuse).await?;
            let page = Paging::new(core, &args.session, args.cursor.as_deref(), args.limit);
            snapshot(&page, taken, &sections).await
        }
        SUMMARY => {
            let args: SessionArgs = read(arguments)?;
            let value = summary(&core.snapshot(&args.session).await?);
            Ok((value.to_string(), value))
        }
        EVENT => {
            let args: EventArgs = read(arguments)?;
            let taken = taken(core, &args.session, reuse).await?;
            let page = Paging::new(core, &args.session, args.cursor.as_deref(), args.limit);
            event(&page, taken, &args.name)
                .await?
                .ok_or_else(|| AgentError::Refused(format!("no listener is registered for `{}`", args.name)))
        }
        FIBER => {
            let args: FiberArgs = read(arguments)?;
            if args.uid.is_none() && args.name.is_none() {
                return Err(AgentError::Incomplete("give uid or name"));
            }
            let taken = taken(core, &args.session, reuse).await?;
            let page = Paging::new(core, &args.session, args.cursor.as_deref(), args.limit);
            Ok(fibers(&page, taken, args.uid, args.name.as_deref()).await?)
        }
        WAIT => {
            let args: WaitArgs = read(arguments)?;
            if args
                .kind
                .as_deref()
                .is_some_and(|kind| !RECORD_TYPES.contains(&kind))
            {
                return Err(AgentError::Incomplete(
                    "type is one of dispatch-observed, topology-invalidated, profiler-trace-updated, profiler-status-changed, facts-dropped, target-disposed",
                ));
            }
            let request = WaitFor {
                filter: Filter {
                    kind: args.kind,
                    event: args.event,
                },
                after: args.after_sequence,
                timeout: args.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis),
            };
            Ok(wait(&core.wait(&args.session, &request).await?))
        }
        _ => history(core, tool, arguments).await,
    }
}

/// The journal, the checkpoints and the experiments.
async fn history(core: &DebugCore, tool: &str, arguments: Map<String, Value>) -> Result<View, AgentError> {
    match tool {
        SEARCH => {
            let args: SearchArgs = read(arguments)?;
            let session = args.session.as_str();
            // One catalog per search: its cursor keeps the sequence the next page starts at.
            let catalog = format!(
                "dispatches:{}:{}",
                args.since.unwrap_or(0),
                args.event.as_deref().unwrap_or_default()
            );
            let from = match args.cursor.as_deref() {
                Some(cursor) => Some(
                    u64::try_from(core.take_cursor(session, cursor, &catalog).await?).unwrap_or(u64::MAX),
                ),
                None => None,
            };
            let limit = args.limit.unwrap_or(MAX_PAGE);
            let found = core
                .search_dispatches(session, args.event.as_deref(), (args.since, from), limit)
                .await?;
            let next_cursor = match found.next {
                Some(next) => Some(
                    core.issue_cursor(session, &catalog, usize::try_from(next).unwrap_or(usize::MAX))
                        .await?,
                ),
                None => None,
            };
            Ok(search(&found, args.cursor.as_deref(), next_cursor.as_deref()))
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
            traces_page(core, args).await
        }
        other => Err(AgentError::Refused(format!("unknown tool {other}"))),
    }
}

/// One page of an experiment's traces as a catalog of the session: a cursor
/// pages the traces of the lease it was issued for (`traces:<lease>`) and
/// keeps the collector's offset of the page it starts.
async fn traces_page(core: &DebugCore, args: TracesArgs) -> Result<View, AgentError> {
    let session = args.session.as_str();
    let (lease, offset, cursor) = match args.cursor {
        None => (args.lease, 0, None),
        Some(Value::Number(offset)) => {
            let offset = offset
                .as_u64()
                .ok_or(AgentError::Incomplete("cursor is a nextCursor of this session"))?;
            (args.lease, usize::try_from(offset).unwrap_or(usize::MAX), None)
        }
        Some(Value::String(cursor)) => {
            let catalog = core.cursor_catalog(session, &cursor).await?;
            let Some(lease) = catalog.strip_prefix("traces:").map(str::to_owned) else {
                return Err(DebugError::UnknownCursor(format!(
                    "{cursor} (it pages {catalog}, not an experiment's traces)"
                ))
                .into());
            };
            if args.lease.as_ref().is_some_and(|named| *named != lease) {
                return Err(
                    DebugError::UnknownCursor(format!("{cursor} (it pages the traces of {lease})")).into(),
                );
            }
            let offset = core.take_cursor(session, &cursor, &catalog).await?;
            (Some(lease), offset, Some(cursor))
        }
        Some(_) => return Err(AgentError::Incomplete("cursor is a nextCursor of this session")),
    };
    let limit = args.limit.unwrap_or(DEFAULT_TRACES_LIMIT);
    let page = core.traces(session, lease.as_deref(), offset, limit).await?;
    let next_cursor = match (page["cursor"].as_u64(), page["experiment"]["lease"].as_str()) {
        (Some(next), Some(lease)) => Some(
            core.issue_cursor(
                session,
                &format!("traces:{lease}"),
                usize::try_from(next).unwrap_or(usize::MAX),
            )
            .await?,
        ),
        _ => None,
    };
    Ok(traces(&page, cursor.as_deref(), next_cursor.as_deref()))
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

/// The rows of one catalog page: `offset..end` of `total` items, at most
/// `limit` (1 to [`MAX_PAGE`]), and whether items follow.
fn page_range(total: usize, offset: usize, limit: usize) -> (std::ops::Range<usize>, bool) {
    let start = offset.min(total);
    let end = start.saturating_add(limit.clamp(1, MAX_PAGE)).min(total);
    (start..end, end < total)
}

/// How one call pages its catalogs: the session whose cursors they are, the
/// cursor it was given (for the catalog that cursor belongs to) and its limit.
pub struct Paging<'a> {
    core: &'a DebugCore,
    session: &'a str,
    cursor: Option<&'a str>,
    limit: usize,
}

impl<'a> Paging<'a> {
    pub fn new(core: &'a DebugCore, session: &'a str, cursor: Option<&'a str>, limit: Option<usize>) -> Self {
        Self {
            core,
            session,
            cursor,
            limit: limit.unwrap_or(MAX_PAGE),
        }
    }

    /// One page of `catalog`: `total`, `returned`, `truncated`, the `cursor` it
    /// was read from and the `nextCursor` (a new cursor of the session when
    /// items follow), and the `items`.
    pub async fn page<T: Serialize>(&self, catalog: &str, items: &[T]) -> Result<Value, DebugError> {
        let offset = match self.cursor {
            Some(cursor) => self.core.take_cursor(self.session, cursor, catalog).await?,
            None => 0,
        };
        let (rows, truncated) = page_range(items.len(), offset, self.limit);
        let next_cursor = if truncated {
            Some(self.core.issue_cursor(self.session, catalog, rows.end).await?)
        } else {
            None
        };
        Ok(json!({
            "total": items.len(),
            "returned": rows.len(),
            "truncated": truncated,
            "cursor": self.cursor,
            "nextCursor": next_cursor,
            "items": &items[rows],
        }))
    }
}

/// Counts: fibers per state, events, listeners, services, loader entries,
/// candidates, and the journal's retained window.
pub fn summary(snapshot: &Snapshot) -> Value {
    let topology = &snapshot.topology;
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for fiber in &topology.fibers {
        *states.entry(fiber.state.as_str()).or_default() += 1;
    }
    let journal = &snapshot.journal;
    json!({
        "target": snapshot.target,
        "fibers": topology.fibers_total,
        "fiberStates": states,
        "events": topology.events_total,
        "listeners": topology.events.iter().map(|e| e.listeners.len()).sum::<usize>(),
        "services": topology.services.len(),
        "entries": topology.entries.len(),
        "candidates": snapshot.candidates.len(),
        "dispatchesRetained": snapshot.dispatches.len(),
        "journal": {
            "oldestSequence": journal.oldest,
            "newestSequence": journal.newest,
            "retained": journal.retained,
            "capacity": journal.capacity,
        },
    })
}

/// What the profiler shows: whether the target enables experiments (`null`:
/// not known) and the running or last experiment's findings.
pub fn profiler(snapshot: &Snapshot) -> Value {
    let experiment = snapshot.topology.experiment.as_ref().map(|e| {
        json!({
            "lease": e.lease,
            "event": e.event,
            "running": e.running,
            "restored": e.restored,
            "listeners": e.listeners,
        })
    });
    json!({
        "enabled": snapshot.target.experiments,
        "experiment": experiment,
        "traces": "cordis_profiler_traces pages the traces",
    })
}

/// The live targets, one line each.
pub fn targets(targets: &[Target]) -> View {
    let text = if targets.is_empty() {
        "no debug targets: no live DSH runs the dshkit plugin with `devtools: true`".to_owned()
    } else {
        targets
            .iter()
            .map(|t| {
                let why = t
                    .problem
                    .as_deref()
                    .or(t.reason)
                    .map_or_else(String::new, |why| format!(": {why}"));
                format!("{} {} ({}, pid {}){why}", t.status, t.id, t.label, t.pid)
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    (text, json!({"targets": targets}))
}

/// The `sections` of a snapshot asked for, catalogs paged.
pub async fn snapshot(
    page: &Paging<'_>,
    snapshot: &Snapshot,
    sections: &[String],
) -> Result<View, AgentError> {
    let mut value = Map::new();
    for section in sections {
        let shown = match section.as_str() {
            "summary" => summary(snapshot),
            "profiler" => profiler(snapshot),
            "fibers" => page.page(section, &snapshot.topology.fibers).await?,
            "events" => {
                let events: Vec<Value> = snapshot
                    .topology
                    .events
                    .iter()
                    .map(|e| {
                        json!({"name": e.name, "listeners": e.listeners.len(),
                        "owners": e.listeners.iter().filter_map(|l| l.owner_name.clone()).collect::<BTreeSet<_>>()})
                    })
                    .collect();
                page.page(section, &events).await?
            }
            "dispatches" => page.page(section, &snapshot.dispatches).await?,
            "candidates" => page.page(section, &snapshot.candidates).await?,
            other => {
                return Err(AgentError::Refused(format!(
                    "no section {other}: the sections are {}",
                    SECTIONS.join(", ")
                )));
            }
        };
        value.insert(section.clone(), shown);
    }
    let text = format!(
        "{} fibers, {} events, {} retained dispatch(es), {} candidate(s) (facts to look at, not causes)",
        snapshot.topology.fibers_total,
        snapshot.topology.events_total,
        snapshot.dispatches.len(),
        snapshot.candidates.len()
    );
    Ok((text, Value::Object(value)))
}

/// One event's listeners, paged, or `None` when nothing listens to `name`.
pub async fn event(page: &Paging<'_>, snapshot: &Snapshot, name: &str) -> Result<Option<View>, DebugError> {
    let Some(event) = snapshot.topology.events.iter().find(|e| e.name == name) else {
        return Ok(None);
    };
    let listeners = page.page(&format!("event:{name}"), &event.listeners).await?;
    Ok(Some((
        format!("{}: {} listener(s)", event.name, event.listeners.len()),
        json!({"name": event.name, "listeners": listeners}),
    )))
}

/// The fibers with `uid` and `name` (each when given), paged.
pub async fn fibers(
    page: &Paging<'_>,
    snapshot: &Snapshot,
    uid: Option<i64>,
    name: Option<&str>,
) -> Result<View, DebugError> {
    let fibers: Vec<_> = snapshot
        .topology
        .fibers
        .iter()
        .filter(|f| uid.is_none_or(|uid| f.id == uid) && name.is_none_or(|n| f.name == n))
        .collect();
    let catalog = format!(
        "fiber:{}:{}",
        uid.map_or_else(String::new, |u| u.to_string()),
        name.unwrap_or_default()
    );
    Ok((
        format!("{} fiber(s)", fibers.len()),
        json!({"fibers": page.page(&catalog, &fibers).await?}),
    ))
}

/// What a wait found.
pub fn wait(result: &WaitResult) -> View {
    let text = match result.outcome {
        "gap" => "gap: records after the session's cursor fell out of the journal (500 kept) before they were read; the next wait reads on from the oldest retained record. Absence in the window never means something did not happen".to_owned(),
        "timeout" => "timeout: nothing matching arrived".to_owned(),
        "cancelled" => format!(
            "cancelled: {}",
            match result.reason {
                Some("detached") => "the debug session was detached",
                Some("expired") => "the debug session expired (15 idle minutes)",
                Some(other) => other,
                None => "the wait ended early",
            }
        ),
        _ => format!("found {} record(s)", result.records.len()),
    };
    (text, json!(result))
}

/// The dispatches a search found: a catalog page (`dispatches`) and the window.
pub fn search(found: &Search, cursor: Option<&str>, next_cursor: Option<&str>) -> View {
    let text = format!(
        "{} of {} matching dispatch(es) retained (the journal keeps the last 500 records; what fell out is unknown, not absent)",
        found.returned, found.total
    );
    let mut value = json!({
        "dispatches": {
            "total": found.total,
            "returned": found.returned,
            "truncated": found.truncated,
            "cursor": cursor,
            "nextCursor": next_cursor,
            "items": found.records,
        },
    });
    if let (Value::Object(value), Value::Object(window)) = (&mut value, json!(found.window)) {
        value.extend(window);
    }
    (text, value)
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

/// One page of an experiment's traces (the collector's page): the experiment
/// and a catalog page (`traces`).
pub fn traces(page: &Value, cursor: Option<&str>, next_cursor: Option<&str>) -> View {
    let text = format!(
        "{} of {} trace(s) of lease {} (durations in µs; outside an experiment they are unknown)",
        page["returned"], page["total"], page["experiment"]["lease"]
    );
    let value = json!({
        "experiment": page["experiment"],
        "traces": {
            "total": page["total"],
            "returned": page["returned"],
            "truncated": next_cursor.is_some(),
            "cursor": cursor,
            "nextCursor": next_cursor,
            "items": page["traces"],
        },
    });
    (text, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_holds_at_most_the_limit_and_at_most_100_and_says_when_items_follow() {
        assert_eq!(page_range(250, 0, 100), (0..100, true));
        assert_eq!(page_range(250, 200, 100), (200..250, false));
        assert_eq!(page_range(250, 0, 1000), (0..100, true), "never past 100");
        assert_eq!(page_range(3, 0, 0), (0..1, true), "at least one");
        assert_eq!(page_range(3, 2, 1), (2..3, false));
        assert_eq!(
            page_range(3, 9, 1),
            (3..3, false),
            "an offset past the end is empty"
        );
        assert_eq!(page_range(0, 0, 100), (0..0, false));
    }

    #[test]
    fn the_session_is_named_debug_session_id_and_the_target_target_id_each_with_a_deprecated_alias() {
        let args = |value: Value| match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let new: SessionArgs = read(args(json!({"debugSessionId": "dbg_1"}))).unwrap();
        let old: SessionArgs = read(args(json!({"session": "dbg_1"}))).unwrap();
        assert_eq!(
            (new.session, old.session),
            ("dbg_1".to_owned(), "dbg_1".to_owned())
        );
        assert!(read::<SessionArgs>(args(json!({}))).is_err());
        assert_eq!(named_session(&args(json!({"session": "dbg_2"}))), Some("dbg_2"));
        assert_eq!(
            named_session(&args(json!({"debugSessionId": "dbg_3", "session": "dbg_2"}))),
            Some("dbg_3"),
            "the one checked against the caller"
        );
        assert!(
            read::<SessionArgs>(args(json!({"debugSessionId": "dbg_3", "session": "dbg_2"}))).is_err(),
            "both names in one call are refused"
        );
        let new: AttachArgs = read(args(json!({"targetId": "1-2-3"}))).unwrap();
        let old: AttachArgs = read(args(json!({"target": "1-2-3"}))).unwrap();
        assert_eq!(
            (new.target, old.target),
            (Some("1-2-3".to_owned()), Some("1-2-3".to_owned()))
        );
        assert!(
            read::<AttachArgs>(args(json!({"targetId": "1-2-3", "target": "1-2-3"}))).is_err(),
            "both names of the target in one call are refused"
        );
        let wait: WaitArgs = read(args(
            json!({"debugSessionId": "dbg_1", "type": "dispatch-observed", "event": "e", "afterSequence": 7}),
        ))
        .unwrap();
        assert_eq!(
            (wait.kind.as_deref(), wait.event.as_deref(), wait.after_sequence),
            (Some("dispatch-observed"), Some("e"), Some(7))
        );
    }
}
