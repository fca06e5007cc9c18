//! The `devtools` family: Cordis DevTools over MCP, with the original tools'
//! names. Runtime facts of a live DSH process whose dshkit plugin runs the
//! collector; metadata only, bounded, never a root cause.

use std::path::PathBuf;

use dshkit_devtools::agent::{
    self, ATTACH, AgentError, CHECKPOINT, COMPARE, DETACH, EVENT, EXPERIMENT_START, EXPERIMENT_STATUS,
    EXPERIMENT_STOP, FIBER, LIST, SEARCH, SNAPSHOT, SUMMARY, TRACES, WAIT,
};
use dshkit_devtools::{DebugCore, DebugError, MAX_LEASE, MAX_PAGE, MAX_WAIT};
use dshkit_mcp::{
    Approval, HostSeams, PromptSpec, SkillSpec, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput,
    ToolSpec,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::shared::structured;

/// The `dsh-runtime-debugging` skill, shipped as a file for hosts that read
/// skills and served as a prompt (front matter left out) to the rest.
const SKILL: &str = include_str!("../../../../skills/dsh-runtime-debugging/SKILL.md");

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
    let mut failure = ToolFailure::new(error.to_string());
    failure.structured = Some(error.facts());
    failure
}

fn output((text, value): agent::View) -> ToolOutput {
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
        Box::pin(async move {
            agent::answer(&self.core, &call.name, call.arguments)
                .await
                .map(output)
                .map_err(|error| match error {
                    AgentError::Arguments(e) => ToolFailure::invalid_arguments(&call.name, e),
                    AgentError::Incomplete(what) => ToolFailure::invalid_arguments(&call.name, what),
                    AgentError::Debug(e) => failure(&e),
                    other => ToolFailure::new(other.to_string()),
                })
        })
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
                        plan: None,
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
