//! What each DevTools tool is called, says and takes: its name, title,
//! description and input schema with the v0.8 contract's parameter names
//! (`debugSessionId`, `afterSequence`, `type`, `cursor`). One home for them:
//! the binary lists these as MCP tools, adding only MCP's hints and host seams.

use serde_json::{Map, Value, json};

use crate::agent::{
    ATTACH, CHECKPOINT, COMPARE, DETACH, EVENT, EXPERIMENT_START, EXPERIMENT_STATUS, EXPERIMENT_STOP, FIBER,
    LIST, SEARCH, SECTIONS, SESSION_PARAMETER, SNAPSHOT, SUMMARY, TRACES, WAIT,
};
use crate::journal::RECORD_TYPES;
use crate::limits::{MAX_LEASE, MAX_PAGE, MAX_WAIT};

/// Longest opaque id a schema accepts (session ids, cursors, leases).
const MAX_ID_CHARS: usize = 64;
/// Longest event or fiber name a schema accepts.
const MAX_NAME_CHARS: usize = 256;

/// One tool as an agent sees it.
#[derive(Debug, Clone)]
pub struct ToolText {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The schema of a tool that takes `debugSessionId` and `extra`.
fn session_schema(extra: &Value) -> Value {
    let mut properties = Map::from_iter([(
        SESSION_PARAMETER.to_owned(),
        json!({"type": "string", "maxLength": MAX_ID_CHARS, "description": "the opaque id cordis_attach_debug_session returned; only the MCP client that attached it may use it (`session` is accepted as a deprecated alias until v0.9)"}),
    )]);
    if let Value::Object(extra) = extra {
        properties.extend(extra.clone());
    }
    json!({"type": "object", "required": [SESSION_PARAMETER], "additionalProperties": false, "properties": properties})
}

/// `cursor` and `limit` of a paged catalog.
fn paging() -> Value {
    json!({
        "cursor": {"type": "string", "maxLength": MAX_ID_CHARS, "description": "a nextCursor of this session's previous page of the same catalog (used once)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "items per page (100 at most, the default)"},
    })
}

fn with(mut base: Value, extra: &Value) -> Value {
    if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
        base.extend(extra.clone());
    }
    base
}

/// Every DevTools tool, in the order they are listed.
#[expect(clippy::too_many_lines, reason = "one table of fifteen tools")]
pub fn tools() -> Vec<ToolText> {
    let tool = |name, title, description, input_schema| ToolText {
        name,
        title,
        description,
        input_schema,
    };
    let name = json!({"type": "string", "maxLength": MAX_NAME_CHARS});
    vec![
        tool(
            LIST,
            "List Cordis debug targets",
            "Lists the DSH (Cordis) processes whose dshkit plugin runs the DevTools collector: target id (pid, start time and collector epoch; a restarted DSH is a new target), status (`live`; `stale` with its reason `target-replaced`, `target-disposed` or `host-disposed` for a target this server's sessions are still on; `incompatible` with its problem), title, version (collector protocol, Node.js once attached) and capabilities (target-discovery, debug-session, runtime-snapshot, runtime-wait, checkpoint-compare, and waterfall-profiler where DSH enables experiments).",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        tool(
            ATTACH,
            "Attach a debug session",
            "Attaches a debug session to a target (the only live one when `targetId` is omitted) and returns its `debugSessionId`: opaque, bound to the target id and epoch, and usable only by this MCP client (another gets NOT_OWNER). Sessions expire after 15 idle minutes; at most 32.",
            json!({"type": "object", "additionalProperties": false, "properties": {"targetId": {"type": "string", "maxLength": MAX_ID_CHARS, "description": "a target's id from cordis_list_debug_targets (`target` is accepted as a deprecated alias until v0.9)"}}}),
        ),
        tool(
            SNAPSHOT,
            "Snapshot the runtime",
            "The runtime now, in sections: summary (counts and the journal's retained window: oldest and newest sequence, retained, capacity), events (listener counts and owners), fibers (name, state, parent, effects), dispatches (retained in the journal), profiler (experiments enabled, the running or last experiment) and candidates (failed fibers, duplicate live fibers, equivalent registrations, listeners of inactive owners, and from the last experiment repeated or late next() and instrumentation conflicts). Catalogs page at 100 items with total, returned, truncated, cursor and nextCursor; pass a nextCursor back as `cursor` to read the next page of that catalog. Cursors belong to the session, are used once, and at most 8 are open (CURSOR_LIMIT past that). Candidates are facts to look at, never a root cause.",
            session_schema(&with(
                json!({"sections": {"type": "array", "maxItems": SECTIONS.len(), "items": {"enum": SECTIONS}}}),
                &paging(),
            )),
        ),
        tool(
            WAIT,
            "Wait for a runtime change",
            "Waits for journal records after `afterSequence` (default: the session's cursor) of exactly this `type` and exactly this `event` name (each when given): found, timeout (15 s default, 60 s at most), gap (the records fell out of the 500-record journal) or cancelled (with its reason: the session was detached or expired, or its target went away), each with the window (oldestSequence is `oldest`, then newest, retained, capacity) and nextAfterSequence. Moves the session's cursor past what it returns. Absence within the window never means something did not happen.",
            session_schema(&json!({
                "type": {"enum": RECORD_TYPES, "description": "the exact record type"},
                "event": {"type": "string", "maxLength": MAX_NAME_CHARS, "description": "the exact event name (not a substring)"},
                "afterSequence": {"type": "integer", "minimum": 0, "description": "read records with a greater sequence"},
                "timeoutMs": {"type": "integer", "minimum": 0, "maximum": millis(MAX_WAIT)},
            })),
        ),
        tool(
            DETACH,
            "Detach a debug session",
            "Ends a debug session: its pending waits return `cancelled` at once and its experiment is stopped by its exact lease.",
            session_schema(&json!({})),
        ),
        tool(
            SUMMARY,
            "Summarize the runtime",
            "Counts: fibers per state, events, listeners, services, loader entries, candidates, retained dispatches, and the journal's retained window.",
            session_schema(&json!({})),
        ),
        tool(
            EVENT,
            "Inspect an event",
            "One event's listeners in dispatch order: owner fiber, its state, prepend, global. Paged like the snapshot's catalogs.",
            session_schema(&with(json!({"name": name}), &paging())),
        ),
        tool(
            FIBER,
            "Inspect a fiber",
            "Fibers by uid or by name (names repeat: DSH has many Include fibers): state, parent, effect labels. Paged like the snapshot's catalogs.",
            session_schema(&with(
                json!({"uid": {"type": "integer"}, "name": name}),
                &paging(),
            )),
        ),
        tool(
            SEARCH,
            "Search dispatches",
            "Dispatches retained in the target's journal (the last 500 records), oldest first: events whose name contains `event`, from sequence `since`. A catalog (`dispatches`) paged like the snapshot's: at most 100 a page with total, returned, truncated, cursor and nextCursor (pass it back as `cursor` with the same event and since). Does not move the session's cursor. Metadata only (mode, event, argument count).",
            session_schema(&with(
                json!({"event": name, "since": {"type": "integer", "minimum": 0}}),
                &paging(),
            )),
        ),
        tool(
            CHECKPOINT,
            "Capture a checkpoint",
            "Records a digest of the runtime's shape (fibers, events and their listeners, services, loader entries) in the session, for cordis_compare_current. A session keeps 8. Read-only.",
            session_schema(&json!({})),
        ),
        tool(
            COMPARE,
            "Compare with a checkpoint",
            "What was added, removed and changed since a checkpoint (the newest when omitted), 100 items per kind at most with totals. Read-only; a difference is a fact, not a cause.",
            session_schema(&json!({"checkpoint": {"type": "string", "maxLength": 32}})),
        ),
        tool(
            EXPERIMENT_STATUS,
            "Waterfall experiment status",
            "Whether experiments are enabled in the target, the running experiment (lease, owner, event, expiry, traces) and how the last one ended (reason, and whether the original dispatch was restored identically).",
            session_schema(&json!({})),
        ),
        tool(
            EXPERIMENT_START,
            "Start a waterfall experiment",
            "Profiles the dispatches of one event (a waterfall such as internal/config shows next() facts) for a lease (15 s default, 60 s at most, enforced by the collector itself): per-listener durations, self time, next() calls, late next(), async results. The target's listener records are never touched; its dispatch is wrapped for the lease and restored by identity. One experiment at a time per target; the target must enable experiments. Detaching or the session's expiry stops it. Ask the user first and pass confirm: true.",
            session_schema(
                &json!({"event": name, "ttlMs": {"type": "integer", "minimum": 100, "maximum": millis(MAX_LEASE)}, "confirm": {"type": "boolean", "description": "the user agreed to instrument the live process for the lease"}}),
            ),
        ),
        tool(
            EXPERIMENT_STOP,
            "Stop a waterfall experiment",
            "Stops the experiment of the exact lease this session started; says whether the original dispatch was restored identically.",
            session_schema(&json!({"lease": {"type": "string", "maxLength": MAX_ID_CHARS}})),
        ),
        tool(
            TRACES,
            "Profiler traces",
            "Traces of the running or last experiment (pick one by lease): per dispatch, each listener's owner, called, startUs, durationUs, selfUs, nextCalls, nextAtUs, lateNext, async, settledUs (serial only), threw. A catalog (`traces`) paged like the snapshot's, 20 a page by default and 100 at most, with total, returned, truncated, cursor and nextCursor (pass it back as `cursor`; it pages the same lease). At most 200 traces are kept. A number as `cursor` (the collector's trace offset, before v0.8) is deprecated and goes in v0.9.",
            session_schema(&with(
                json!({"lease": {"type": "string", "maxLength": MAX_ID_CHARS}}),
                &paging(),
            )),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_session_tool_requires_debug_session_id_and_lists_no_session() {
        let tools = tools();
        assert_eq!(tools.len(), 15);
        for tool in tools.iter().filter(|t| t.name != LIST && t.name != ATTACH) {
            let schema = &tool.input_schema;
            assert_eq!(schema["required"], json!([SESSION_PARAMETER]), "{}", tool.name);
            assert!(schema["properties"].get("session").is_none(), "{}", tool.name);
        }
    }
}
