//! The `devtools` family: Cordis DevTools over MCP, with the original tools'
//! names. Runtime facts of a live DSH process whose dshkit plugin runs the
//! collector; metadata only, bounded, never a root cause.

use std::path::PathBuf;
use std::time::Duration;

use dshkit_devtools::{
    DEFAULT_LEASE, DEFAULT_WAIT, DebugCore, DebugError, MAX_LEASE, MAX_PAGE, MAX_WAIT, Snapshot,
};
use dshkit_mcp::{
    Approval, HostSeams, PromptSpec, SkillSpec, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput,
    ToolSpec,
};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::shared::{arguments, structured};

/// The `dsh-runtime-debugging` skill, shipped as a file for hosts that read
/// skills and served as a prompt (front matter left out) to the rest.
const SKILL: &str = include_str!("../../../../skills/dsh-runtime-debugging/SKILL.md");

const LIST: &str = "cordis_list_debug_targets";
const ATTACH: &str = "cordis_attach_debug_session";
const SNAPSHOT: &str = "cordis_debug_snapshot";
const WAIT: &str = "cordis_wait_for_runtime_change";
const DETACH: &str = "cordis_detach_debug_session";
const SUMMARY: &str = "cordis_runtime_summary";
const EVENT: &str = "cordis_inspect_event";
const FIBER: &str = "cordis_inspect_fiber";
const SEARCH: &str = "cordis_search_dispatches";
const TRACES: &str = "cordis_profiler_traces";
const CHECKPOINT: &str = "cordis_capture_checkpoint";
const COMPARE: &str = "cordis_compare_current";
const EXPERIMENT_STATUS: &str = "cordis_waterfall_experiment_status";
const EXPERIMENT_START: &str = "cordis_start_waterfall_experiment";
const EXPERIMENT_STOP: &str = "cordis_stop_waterfall_experiment";

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
        DebugError::Stale { reason, .. } => match *reason {
            "target-replaced" => "TARGET_REPLACED",
            "host-disposed" => "HOST_DISPOSED",
            _ => "TARGET_DISPOSED",
        },
        DebugError::TooManySessions | DebugError::TooManyWaiters => "LIMIT",
        DebugError::UnknownCheckpoint(_) => "UNKNOWN_CHECKPOINT",
        DebugError::NotLeaseOwner(_) => "NOT_LEASE_OWNER",
        DebugError::ProtocolMismatch { .. } => "PROTOCOL_MISMATCH",
        _ => "COLLECTOR",
    };
    let mut failure = ToolFailure::new(error.to_string());
    let mut structured = Map::from_iter([("code".to_owned(), json!(code))]);
    if let DebugError::Stale {
        replacement: Some(replacement),
        ..
    } = error
    {
        structured.insert("replacement".into(), json!(replacement));
    }
    failure.structured = Some(structured);
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

    /// The journal and the checkpoints: search, capture, compare.
    async fn history(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let output = tool_output;
        match call.name.as_str() {
            SEARCH => {
                let args: SearchArgs = arguments(SEARCH, call.arguments)?;
                let found = self
                    .core
                    .search_dispatches(
                        &args.session,
                        args.event.as_deref(),
                        args.since,
                        args.limit.unwrap_or(50),
                    )
                    .await
                    .map_err(|e| failure(&e))?;
                let text = format!(
                    "{} of {} matching dispatch(es) retained (the journal keeps the last 500 records; what fell out is unknown, not absent)",
                    found.returned, found.total
                );
                Ok(output(text, json!(found)))
            }
            CHECKPOINT => {
                let args: SessionArgs = arguments(CHECKPOINT, call.arguments)?;
                let info = self
                    .core
                    .capture_checkpoint(&args.session)
                    .await
                    .map_err(|e| failure(&e))?;
                Ok(output(
                    format!("checkpoint {} ({} items)", info.checkpoint, info.items),
                    json!(info),
                ))
            }
            COMPARE => {
                let args: CompareArgs = arguments(COMPARE, call.arguments)?;
                let comparison = self
                    .core
                    .compare_current(&args.session, args.checkpoint.as_deref())
                    .await
                    .map_err(|e| failure(&e))?;
                let text = format!(
                    "since {}: {} added, {} removed, {} changed",
                    comparison.checkpoint,
                    comparison.totals["added"],
                    comparison.totals["removed"],
                    comparison.totals["changed"]
                );
                Ok(output(text, json!(comparison)))
            }
            other => Err(ToolFailure::new(format!("unknown tool {other}"))),
        }
    }

    /// Leased experiments and their traces.
    async fn experiment(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let output = tool_output;
        match call.name.as_str() {
            EXPERIMENT_STATUS => {
                let args: SessionArgs = arguments(EXPERIMENT_STATUS, call.arguments)?;
                let status = self
                    .core
                    .experiment_status(&args.session)
                    .await
                    .map_err(|e| failure(&e))?;
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
                Ok(output(text, status))
            }
            EXPERIMENT_START => {
                let args: StartArgs = arguments(EXPERIMENT_START, call.arguments)?;
                if args.confirm != Some(true) {
                    return Err(ToolFailure::new(
                        "an experiment wraps the listeners of a live event for its lease: ask the user, then call again with confirm: true",
                    ));
                }
                let lease = args.ttl_ms.map_or(DEFAULT_LEASE, Duration::from_millis);
                let started = self
                    .core
                    .start_experiment(&args.session, &args.event, lease)
                    .await
                    .map_err(|e| failure(&e))?;
                Ok(output(
                    format!(
                        "lease {} on {} until {} (the collector ends it then, whatever happens to this server)",
                        started["lease"], started["event"], started["expiresAt"]
                    ),
                    started,
                ))
            }
            EXPERIMENT_STOP => {
                let args: StopArgs = arguments(EXPERIMENT_STOP, call.arguments)?;
                let stopped = self
                    .core
                    .stop_experiment(&args.session, &args.lease)
                    .await
                    .map_err(|e| failure(&e))?;
                let restored = stopped["last"]["restored"].as_str().unwrap_or("unknown");
                Ok(output(
                    format!(
                        "lease {} stopped; original dispatch restored: {restored}",
                        args.lease
                    ),
                    stopped,
                ))
            }
            TRACES => {
                let args: TracesArgs = arguments(TRACES, call.arguments)?;
                let traces = self
                    .core
                    .traces(
                        &args.session,
                        args.lease.as_deref(),
                        args.cursor,
                        args.limit.unwrap_or(20),
                    )
                    .await
                    .map_err(|e| failure(&e))?;
                let text = format!(
                    "{} of {} trace(s) of lease {} (durations in µs; outside an experiment they are unknown)",
                    traces["returned"], traces["total"], traces["experiment"]["lease"]
                );
                Ok(output(text, traces))
            }
            other => Err(ToolFailure::new(format!("unknown tool {other}"))),
        }
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
                        .map(|t| match &t.problem {
                            Some(problem) => format!("{} ({}, pid {}): {problem}", t.id, t.label, t.pid),
                            None => format!("{} ({}, pid {})", t.id, t.label, t.pid),
                        })
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
            SEARCH | CHECKPOINT | COMPARE => self.history(call).await,
            EXPERIMENT_STATUS | EXPERIMENT_START | EXPERIMENT_STOP | TRACES => self.experiment(call).await,
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
            host: HostSeams::NONE,
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
                "The runtime now: summary, fibers (name, state, parent, effects), events (listener counts and owners) and mechanical candidates (failed fibers, duplicate live fibers, equivalent registrations, listeners of inactive owners, and from the last experiment repeated or late next() and instrumentation conflicts). Catalogs page at 100 items with total, returned, truncated and cursor. Candidates are facts to look at, never a root cause.",
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
        .into_iter()
        .chain(Self::history_and_experiment_tools())
        .collect()
    }

    fn prompts(&self) -> Vec<PromptSpec> {
        let body = SkillSpec::from_file(SKILL).map_or(SKILL, |skill| skill.text);
        vec![PromptSpec {
            name: "dsh-runtime-debugging",
            title: "Debug a live DSH runtime",
            description: "The Cordis DevTools loop: discover, attach, snapshot, wait, inspect, checkpoint and compare, a finite profile with consent, facts reported apart from source diagnosis, detach.",
            text: body,
        }]
    }

    fn skills(&self) -> Vec<SkillSpec> {
        SkillSpec::from_file(SKILL).into_iter().collect()
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(self.run(call))
    }
}

impl DevtoolsFamily {
    fn history_and_experiment_tools() -> Vec<ToolSpec> {
        let read = ToolHints::READ_ONLY;
        let lease_ms = u64::try_from(MAX_LEASE.as_millis()).unwrap_or(u64::MAX);
        let spec = |name, title, description, input_schema| ToolSpec {
            name,
            title,
            description,
            input_schema,
            output_schema: None,
            hints: read,
            host: HostSeams::NONE,
        };
        vec![
            spec(
                SEARCH,
                "Search dispatches",
                "Dispatches retained in the target's journal (the last 500 records), newest last: events whose name contains `event`, from sequence `since`. Does not move the session's cursor. Metadata only (mode, event, argument count).",
                session_schema(
                    &json!({"event": {"type": "string", "maxLength": 256}, "since": {"type": "integer", "minimum": 0}, "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}}),
                ),
            ),
            spec(
                CHECKPOINT,
                "Capture a checkpoint",
                "Records a digest of the runtime's shape (fibers, events and their listeners, services, loader entries) in the session, for cordis_compare_current. A session keeps 8. Read-only.",
                session_schema(&json!({})),
            ),
            spec(
                COMPARE,
                "Compare with a checkpoint",
                "What was added, removed and changed since a checkpoint (the newest when omitted), 100 items per kind at most with totals. Read-only; a difference is a fact, not a cause.",
                session_schema(&json!({"checkpoint": {"type": "string", "maxLength": 32}})),
            ),
            spec(
                EXPERIMENT_STATUS,
                "Waterfall experiment status",
                "Whether experiments are enabled in the target, the running experiment (lease, owner, event, expiry, traces) and how the last one ended (reason, and whether the original dispatch was restored identically).",
                session_schema(&json!({})),
            ),
            ToolSpec {
                hints: ToolHints {
                    read_only: false,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                },
                host: HostSeams {
                    approval: Some(Approval {
                        argument: "confirm",
                        when: None,
                        action: "profile the listeners of \"{event}\" in this DSH for a lease",
                        shows: &["ttlMs"],
                        reason: "the event's dispatch is wrapped for the lease (timing only, no values) and restored afterwards",
                        otherwise: "ask the user to run `dshkit devtools profile` themselves",
                        host_words: &[(
                            "Ask the user first and pass confirm: true.",
                            "The user is asked for approval first.",
                        )],
                    }),
                    ..HostSeams::NONE
                },
                ..spec(
                    EXPERIMENT_START,
                    "Start a waterfall experiment",
                    "Profiles the dispatches of one event (a waterfall such as internal/config shows next() facts) for a lease (15 s default, 60 s at most, enforced by the collector itself): per-listener durations, self time, next() calls, late next(), async results. The target's listener records are never touched; its dispatch is wrapped for the lease and restored by identity. One experiment at a time per target; the target must enable experiments. Ask the user first and pass confirm: true.",
                    session_schema(
                        &json!({"event": {"type": "string", "maxLength": 256}, "ttlMs": {"type": "integer", "minimum": 100, "maximum": lease_ms}, "confirm": {"type": "boolean", "description": "the user agreed to instrument the live process for the lease"}}),
                    ),
                )
            },
            ToolSpec {
                hints: ToolHints {
                    read_only: false,
                    destructive: false,
                    idempotent: true,
                    open_world: false,
                },
                ..spec(
                    EXPERIMENT_STOP,
                    "Stop a waterfall experiment",
                    "Stops the experiment of the exact lease this session started; says whether the original dispatch was restored identically.",
                    session_schema(&json!({"lease": {"type": "string", "maxLength": 64}})),
                )
            },
            spec(
                TRACES,
                "Profiler traces",
                "Traces of the running or last experiment (pick one by lease), 20 per page by default: per dispatch, each listener's owner, called, durationUs, selfUs, nextCalls, nextAtUs, lateNext, async, settledUs (serial only), threw. At most 200 traces are kept.",
                session_schema(
                    &json!({"lease": {"type": "string", "maxLength": 64}, "cursor": {"type": "integer", "minimum": 0, "maximum": 200}, "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}}),
                ),
            ),
        ]
    }
}
