//! The `devtools` family: Cordis DevTools over MCP, with the original tools'
//! names. Runtime facts of a live DSH process whose dshkit plugin runs the
//! collector; metadata only, bounded, never a root cause.

use std::path::PathBuf;
use std::time::Duration;

use dshkit_devtools::{DEFAULT_WAIT, DebugCore, DebugError, MAX_PAGE, MAX_WAIT, Snapshot};
use dshkit_mcp::{ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{arguments, structured};

const LIST: &str = "cordis_list_debug_targets";
const ATTACH: &str = "cordis_attach_debug_session";
const SNAPSHOT: &str = "cordis_debug_snapshot";
const WAIT: &str = "cordis_wait_for_runtime_change";
const DETACH: &str = "cordis_detach_debug_session";
const SUMMARY: &str = "cordis_runtime_summary";
const EVENT: &str = "cordis_inspect_event";
const FIBER: &str = "cordis_inspect_fiber";

pub(crate) struct DevtoolsFamily {
    core: DebugCore,
}

impl DevtoolsFamily {
    /// Targets are found in `registry` (default: `<DSH home>/dshkit-devtools`).
    pub(crate) fn new(registry: PathBuf) -> Self {
        Self {
            core: DebugCore::new(registry),
        }
    }
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

fn session_schema(extra: &Value) -> Value {
    let mut properties = Map::from_iter([(
        "session".to_owned(),
        json!({"type": "string", "maxLength": 64, "description": "the session cordis_attach_debug_session returned"}),
    )]);
    if let Value::Object(extra) = extra {
        properties.extend(extra.clone());
    }
    json!({"type": "object", "required": ["session"], "additionalProperties": false, "properties": properties})
}

fn failure(error: &DebugError) -> ToolFailure {
    let code = match error {
        DebugError::UnknownTarget(_) => "UNKNOWN_TARGET",
        DebugError::UnknownSession(_) => "UNKNOWN_SESSION",
        DebugError::Stale(_) => "TARGET_DISPOSED",
        DebugError::TooManySessions | DebugError::TooManyWaiters => "LIMIT",
        _ => "COLLECTOR",
    };
    let mut failure = ToolFailure::new(error.to_string());
    failure.structured = Some(Map::from_iter([("code".to_owned(), json!(code))]));
    failure
}

/// One page of a catalog: items from `cursor`, at most [`MAX_PAGE`].
fn page<T: serde::Serialize>(items: &[T], cursor: usize) -> Value {
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

fn summary(snapshot: &Snapshot) -> Value {
    let topology = &snapshot.topology;
    let mut states: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
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

fn tool_output(text: String, value: Value) -> ToolOutput {
    let structured = match value {
        Value::Object(map) => map,
        other => structured(&other),
    };
    ToolOutput {
        text,
        structured,
        images: Vec::new(),
    }
}

impl DevtoolsFamily {
    async fn snapshot_of(&self, session: &str) -> Result<Snapshot, ToolFailure> {
        self.core.snapshot(session).await.map_err(|e| failure(&e))
    }

    async fn snapshot_tool(&self, args: SnapshotArgs) -> Result<ToolOutput, ToolFailure> {
        let snapshot = self.snapshot_of(&args.session).await?;
        let wanted = |s: &str| {
            args.sections
                .as_ref()
                .is_none_or(|all| all.iter().any(|w| w == s))
        };
        let mut value = Map::new();
        if wanted("summary") {
            value.insert("summary".into(), summary(&snapshot));
        }
        if wanted("fibers") {
            value.insert("fibers".into(), page(&snapshot.topology.fibers, args.cursor));
        }
        if wanted("events") {
            let events: Vec<Value> = snapshot
                .topology
                .events
                .iter()
                .map(|e| json!({"name": e.name, "listeners": e.listeners.len(),
                    "owners": e.listeners.iter().filter_map(|l| l.owner_name.clone()).collect::<std::collections::BTreeSet<_>>()}))
                .collect();
            value.insert("events".into(), page(&events, args.cursor));
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
        Ok(tool_output(text, Value::Object(value)))
    }

    async fn wait_tool(&self, args: WaitArgs) -> Result<ToolOutput, ToolFailure> {
        let timeout = args.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis);
        let result = self
            .core
            .wait(&args.session, args.event.as_deref(), timeout)
            .await
            .map_err(|e| failure(&e))?;
        let text = match result.outcome {
            "gap" => "gap: records after the session's cursor fell out of the journal (500 kept) before they were read; the next wait reads on from the oldest retained record. Absence in the window never means something did not happen".to_owned(),
            "timeout" => "timeout: nothing matching arrived".to_owned(),
            _ => format!("found {} record(s)", result.records.len()),
        };
        Ok(tool_output(text, json!(result)))
    }

    async fn run(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let output = tool_output;
        match call.name.as_str() {
            LIST => {
                let _: NoArguments = arguments(LIST, call.arguments)?;
                let targets = self.core.targets();
                let text = if targets.is_empty() {
                    "no debug targets: no live DSH runs the dshkit plugin with `devtools: true`".to_owned()
                } else {
                    targets
                        .iter()
                        .map(|t| format!("{} ({}, pid {})", t.id, t.label, t.pid))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                Ok(output(text, json!({"targets": targets})))
            }
            ATTACH => {
                let args: AttachArgs = arguments(ATTACH, call.arguments)?;
                let attached = self
                    .core
                    .attach(args.target.as_deref())
                    .await
                    .map_err(|e| failure(&e))?;
                Ok(output(
                    format!("session {} on target {}", attached.session, attached.target.id),
                    json!(attached),
                ))
            }
            DETACH => {
                let args: SessionArgs = arguments(DETACH, call.arguments)?;
                self.core.detach(&args.session).await.map_err(|e| failure(&e))?;
                Ok(output(
                    format!("session {} detached", args.session),
                    json!({"detached": args.session}),
                ))
            }
            SNAPSHOT => self.snapshot_tool(arguments(SNAPSHOT, call.arguments)?).await,
            SUMMARY => {
                let args: SessionArgs = arguments(SUMMARY, call.arguments)?;
                let snapshot = self.snapshot_of(&args.session).await?;
                let value = summary(&snapshot);
                Ok(output(value.to_string(), value))
            }
            EVENT => {
                let args: EventArgs = arguments(EVENT, call.arguments)?;
                let snapshot = self.snapshot_of(&args.session).await?;
                let event = snapshot
                    .topology
                    .events
                    .iter()
                    .find(|e| e.name == args.name)
                    .ok_or_else(|| {
                        ToolFailure::new(format!("no listener is registered for `{}`", args.name))
                    })?;
                Ok(output(
                    format!("{}: {} listener(s)", event.name, event.listeners.len()),
                    json!({"name": event.name, "listeners": page(&event.listeners, 0)}),
                ))
            }
            FIBER => {
                let args: FiberArgs = arguments(FIBER, call.arguments)?;
                let snapshot = self.snapshot_of(&args.session).await?;
                let fibers: Vec<_> = snapshot
                    .topology
                    .fibers
                    .iter()
                    .filter(|f| {
                        args.uid.is_none_or(|uid| f.id == uid)
                            && args.name.as_ref().is_none_or(|n| &f.name == n)
                    })
                    .collect();
                if args.uid.is_none() && args.name.is_none() {
                    return Err(ToolFailure::invalid_arguments(FIBER, "give uid or name"));
                }
                Ok(output(
                    format!("{} fiber(s)", fibers.len()),
                    json!({"fibers": page(&fibers, 0)}),
                ))
            }
            WAIT => self.wait_tool(arguments(WAIT, call.arguments)?).await,
            other => Err(ToolFailure::new(format!("unknown tool {other}"))),
        }
    }
}

impl ToolFamily for DevtoolsFamily {
    fn name(&self) -> &'static str {
        "devtools"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let read = ToolHints::READ_ONLY;
        let spec = |name, title, description, input_schema| ToolSpec {
            name,
            title,
            description,
            input_schema,
            output_schema: None,
            hints: read,
        };
        vec![
            spec(
                LIST,
                "List live Cordis debug targets",
                "Lists the live DSH (Cordis) processes whose dshkit plugin runs the DevTools collector: target id (pid and start time; a restarted DSH is a new target), label, pid.",
                empty,
            ),
            spec(
                ATTACH,
                "Attach a debug session",
                "Attaches a debug session to a target (the only live one when `target` is omitted). Sessions expire after 15 idle minutes; at most 32.",
                json!({"type": "object", "additionalProperties": false, "properties": {"target": {"type": "string", "maxLength": 64}}}),
            ),
            spec(
                SNAPSHOT,
                "Snapshot the runtime",
                "The runtime now: summary, fibers (name, state, parent, effects), events (listener counts and owners) and mechanical candidates (failed fibers, duplicate live fibers, equivalent registrations, listeners of inactive owners). Catalogs page at 100 items with total, returned, truncated and cursor. Candidates are facts to look at, never a root cause.",
                session_schema(
                    &json!({"sections": {"type": "array", "maxItems": 4, "items": {"enum": ["summary", "fibers", "events", "candidates"]}}, "cursor": {"type": "integer", "minimum": 0, "maximum": 100_000}}),
                ),
            ),
            spec(
                WAIT,
                "Wait for a runtime change",
                "Waits for the next journal record after the session's cursor (a dispatch of `event`, a topology change of it, or anything when omitted): found, timeout (15 s default, 60 s at most) or gap (the records fell out of the 500-record journal). Moves the cursor past what it returns. Absence within the window never means something did not happen.",
                session_schema(
                    &json!({"event": {"type": "string", "maxLength": 256}, "timeoutMs": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT.as_millis()}}),
                ),
            ),
            spec(
                DETACH,
                "Detach a debug session",
                "Ends a debug session.",
                session_schema(&json!({})),
            ),
            spec(
                SUMMARY,
                "Summarize the runtime",
                "Counts: fibers per state, events, listeners, services, loader entries, candidates.",
                session_schema(&json!({})),
            ),
            spec(
                EVENT,
                "Inspect an event",
                "One event's listeners in dispatch order: owner fiber, its state, prepend, global.",
                session_schema(&json!({"name": {"type": "string", "maxLength": 256}})),
            ),
            spec(
                FIBER,
                "Inspect a fiber",
                "Fibers by uid or by name (names repeat: DSH has many Include fibers): state, parent, effect labels.",
                session_schema(
                    &json!({"uid": {"type": "integer"}, "name": {"type": "string", "maxLength": 256}}),
                ),
            ),
        ]
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(self.run(call))
    }
}
