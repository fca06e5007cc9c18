//! The DevTools v0.8 agent contract over MCP on a real DSH: two clients of one
//! `dshkit mcp --http --tools devtools` (two MCP sessions). Each tool's schema
//! has the design's parameter names; a session id is opaque and only its
//! client may use it (`NOT_OWNER`); `afterSequence` and the `type`/`event`
//! filters select exactly; a dispatch search pages on session cursors; a ninth
//! open cursor is refused; a detach cancels a
//! pending 60 s wait at once (the latency is printed, not asserted); a client
//! that ends takes its debug sessions with it.

use std::time::{Duration, Instant};

use dshkit_test::{Peers, wait_for};
use serde_json::{Value, json};

use crate::devtools::MidTurn;
use crate::support::{HttpSession, http_session_message as message, spawn_http};

/// The DevTools contract's calls, on one MCP client of the endpoint.
trait Contract {
    /// A call that must succeed: its structured content.
    async fn ok(&self, tool: &str, arguments: Value) -> Value;
    /// A call that must be refused: its error code.
    async fn refused(&self, tool: &str, arguments: Value) -> String;
    /// Attaches to `target`: the debug session's id.
    async fn attach(&self, target: &Value) -> String;
}

impl Contract for HttpSession {
    async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments).await;
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        answer["result"]["structuredContent"].clone()
    }

    async fn refused(&self, tool: &str, arguments: Value) -> String {
        let answer = self.call(tool, arguments).await;
        assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
        answer["result"]["structuredContent"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no code: {answer}"))
            .to_owned()
    }

    async fn attach(&self, target: &Value) -> String {
        let attached = self
            .ok("cordis_attach_debug_session", json!({"targetId": target}))
            .await;
        attached["debugSessionId"].as_str().unwrap().to_owned()
    }
}

/// Every tool's input schema names the design's parameters.
async fn the_schemas_name_the_designs_parameters(client: &HttpSession) {
    let listed = message(
        &client
            .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
            .await,
    );
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 15, "{listed}");
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no tool {name}"))["inputSchema"]
            .clone()
    };
    let names = |name: &str| -> Vec<String> {
        let mut names: Vec<String> = schema(name)["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    };
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        if name == "cordis_list_debug_targets" || name == "cordis_attach_debug_session" {
            continue;
        }
        assert_eq!(
            tool["inputSchema"]["required"][0], "debugSessionId",
            "{name}: {tool}"
        );
        assert!(
            tool["inputSchema"]["properties"].get("session").is_none(),
            "{name} still names `session`"
        );
    }
    assert_eq!(
        names("cordis_wait_for_runtime_change"),
        ["afterSequence", "debugSessionId", "event", "timeoutMs", "type"]
    );
    assert_eq!(
        schema("cordis_wait_for_runtime_change")["properties"]["timeoutMs"]["maximum"],
        60_000
    );
    assert_eq!(
        names("cordis_debug_snapshot"),
        ["cursor", "debugSessionId", "limit", "sections"]
    );
    assert_eq!(
        schema("cordis_debug_snapshot")["properties"]["sections"]["items"]["enum"],
        json!([
            "summary",
            "events",
            "fibers",
            "dispatches",
            "profiler",
            "candidates"
        ])
    );
    assert_eq!(
        names("cordis_inspect_event"),
        ["cursor", "debugSessionId", "limit", "name"]
    );
    assert_eq!(names("cordis_detach_debug_session"), ["debugSessionId"]);
    assert_eq!(names("cordis_attach_debug_session"), ["targetId"]);
    // The dispatch search and the traces are catalogs on session cursors too.
    assert_eq!(
        names("cordis_search_dispatches"),
        ["cursor", "debugSessionId", "event", "limit", "since"]
    );
    assert_eq!(
        names("cordis_profiler_traces"),
        ["cursor", "debugSessionId", "lease", "limit"]
    );
    for name in ["cordis_search_dispatches", "cordis_profiler_traces"] {
        let properties = &schema(name)["properties"];
        assert_eq!(properties["cursor"]["type"], "string", "{name}");
        assert_eq!(properties["limit"]["maximum"], 100, "{name}");
    }
}

/// A dispatch search pages like every catalog: at most `limit` a page, oldest
/// first, a single-use `nextCursor` of the session that reads on from there,
/// and `total` the same on every page. In a session of its own (detached
/// after), so the cursor count of the others is untouched.
async fn the_dispatch_search_pages_on_session_cursors(
    alice: &HttpSession,
    mallory: &HttpSession,
    target: &Value,
) {
    let session = alice.attach(target).await;
    let search = |cursor: Option<&str>, limit: u64| {
        let mut arguments = json!({"debugSessionId": session, "limit": limit});
        if let Some(cursor) = cursor {
            arguments["cursor"] = json!(cursor);
        }
        alice.ok("cordis_search_dispatches", arguments)
    };
    let first = search(None, 1).await;
    let page = &first["dispatches"];
    assert!(page["total"].as_u64() >= Some(2), "{first}");
    assert_eq!(
        (&page["returned"], &page["truncated"], &page["cursor"]),
        (&json!(1), &json!(true), &Value::Null),
        "{first}"
    );
    assert_eq!(first["capacity"], 500, "the window beside the page: {first}");
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    assert!(cursor.starts_with("cur_"), "{first}");
    let second = search(Some(&cursor), 1).await;
    assert_eq!(second["dispatches"]["cursor"], cursor.as_str(), "{second}");
    assert_eq!(second["dispatches"]["total"], page["total"], "{second}");
    assert!(
        second["dispatches"]["items"][0]["seq"].as_u64() > page["items"][0]["seq"].as_u64(),
        "the next page reads on: {first} then {second}"
    );
    let used = alice
        .refused(
            "cordis_search_dispatches",
            json!({"debugSessionId": session, "cursor": cursor}),
        )
        .await;
    assert!(used.contains("UNKNOWN_CURSOR"), "a cursor is used once: {used}");
    if let Some(next) = second["dispatches"]["nextCursor"].as_str() {
        let other = mallory.attach(target).await;
        let theirs = mallory
            .refused(
                "cordis_search_dispatches",
                json!({"debugSessionId": other, "cursor": next}),
            )
            .await;
        assert!(theirs.contains("UNKNOWN_CURSOR"), "another session's: {theirs}");
        mallory
            .ok("cordis_detach_debug_session", json!({"debugSessionId": other}))
            .await;
    }
    alice
        .ok("cordis_detach_debug_session", json!({"debugSessionId": session}))
        .await;
}

/// A second client can use neither the first's session (by either name) nor
/// its cursor.
async fn another_client_is_refused(alice: &HttpSession, mallory: &HttpSession, session: &str) {
    for tool in [
        "cordis_debug_snapshot",
        "cordis_wait_for_runtime_change",
        "cordis_detach_debug_session",
        "cordis_runtime_summary",
    ] {
        assert_eq!(
            mallory.refused(tool, json!({"debugSessionId": session})).await,
            "NOT_OWNER",
            "{tool}"
        );
    }
    assert_eq!(
        mallory
            .refused("cordis_runtime_summary", json!({"session": session}))
            .await,
        "NOT_OWNER",
        "through the deprecated alias too"
    );
    // Still alice's, and still there.
    alice
        .ok("cordis_runtime_summary", json!({"debugSessionId": session}))
        .await;
}

/// `afterSequence`, `type` and `event` select exactly: no record at or before
/// the sequence, of another type, or of an event whose name merely contains
/// the one asked for.
async fn the_wait_filters_select_exactly(alice: &HttpSession, session: &str) {
    let everything = alice
        .ok(
            "cordis_wait_for_runtime_change",
            json!({"debugSessionId": session, "afterSequence": 0, "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(everything["outcome"], "found", "{everything}");
    assert_eq!(everything["capacity"], 500, "the window's facts: {everything}");
    let records = everything["records"].as_array().unwrap();
    let dispatch = records
        .iter()
        .filter(|r| r["kind"] == "dispatch-observed")
        .nth(1)
        .unwrap_or_else(|| panic!("two dispatches: {everything}"))
        .clone();
    let (event, seq) = (
        dispatch["event"].as_str().unwrap().to_owned(),
        dispatch["seq"].as_u64().unwrap(),
    );
    let wait = |arguments: Value| async move {
        let mut arguments = arguments;
        arguments["debugSessionId"] = json!(session);
        arguments["timeoutMs"] = json!(300);
        alice.ok("cordis_wait_for_runtime_change", arguments).await
    };
    let from_it = wait(json!({"type": "dispatch-observed", "event": event, "afterSequence": seq - 1})).await;
    let found = from_it["records"].as_array().unwrap();
    assert_eq!(
        found.first().map(|r| r["seq"].clone()),
        Some(json!(seq)),
        "the first record after {}: {from_it}",
        seq - 1
    );
    assert_eq!(from_it["afterSequence"], seq - 1, "{from_it}");
    assert!(
        found
            .iter()
            .all(|r| r["kind"] == "dispatch-observed" && r["event"] == event.as_str()),
        "{from_it}"
    );
    let after_it = wait(json!({"type": "dispatch-observed", "event": event, "afterSequence": seq})).await;
    assert!(
        after_it["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["seq"].as_u64().unwrap() > seq && r["event"] == event.as_str()),
        "{after_it}"
    );
    let prefix = &event[..event.len() - 1];
    let by_prefix = wait(json!({"event": prefix, "afterSequence": 0})).await;
    assert!(
        by_prefix["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["event"] == prefix),
        "an event filter is exact, not a substring: {by_prefix}"
    );
    let topology = wait(json!({"type": "topology-invalidated", "afterSequence": 0})).await;
    assert!(
        topology["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] == "topology-invalidated"),
        "{topology}"
    );
}

/// Eight cursors may be open in a session; a ninth catalog is refused, and a
/// cursor of another session is unknown there.
async fn a_ninth_cursor_is_refused(
    alice: &HttpSession,
    mallory: &HttpSession,
    session: &str,
    target: &Value,
) {
    let events = alice
        .ok(
            "cordis_debug_snapshot",
            json!({"debugSessionId": session, "sections": ["events"]}),
        )
        .await;
    let crowded: Vec<String> = events["events"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["listeners"].as_u64().unwrap() >= 2)
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(crowded.len() >= 6, "events with two listeners or more: {events}");
    // Three catalogs of one page each: fibers, events, dispatches.
    let first = alice
        .ok(
            "cordis_debug_snapshot",
            json!({"debugSessionId": session, "sections": ["fibers", "events", "dispatches"], "limit": 1}),
        )
        .await;
    for catalog in ["fibers", "events", "dispatches"] {
        assert_eq!(first[catalog]["returned"], 1, "{first}");
        assert!(first[catalog]["nextCursor"].is_string(), "{catalog}: {first}");
    }
    let mut open = 3;
    let mut listeners_cursor = None;
    for name in &crowded[..5] {
        let page = alice
            .ok(
                "cordis_inspect_event",
                json!({"debugSessionId": session, "name": name, "limit": 1}),
            )
            .await;
        listeners_cursor = page["listeners"]["nextCursor"].as_str().map(str::to_owned);
        assert!(listeners_cursor.is_some(), "{page}");
        open += 1;
    }
    assert_eq!(open, 8);
    assert_eq!(
        alice
            .refused(
                "cordis_inspect_event",
                json!({"debugSessionId": session, "name": crowded[5], "limit": 1}),
            )
            .await,
        "CURSOR_LIMIT"
    );
    // The fibers cursor pages on, once.
    let fibers = first["fibers"]["nextCursor"].as_str().unwrap();
    let next = alice
        .ok(
            "cordis_debug_snapshot",
            json!({"debugSessionId": session, "cursor": fibers, "limit": 1}),
        )
        .await;
    assert_eq!(next["fibers"]["cursor"], fibers, "{next}");
    assert_eq!(next["fibers"]["returned"], 1, "{next}");
    assert_ne!(
        next["fibers"]["items"][0], first["fibers"]["items"][0],
        "the next page"
    );
    assert_eq!(
        alice
            .refused(
                "cordis_debug_snapshot",
                json!({"debugSessionId": session, "cursor": fibers}),
            )
            .await,
        "UNKNOWN_CURSOR",
        "a cursor is used once"
    );
    // Another session, of this client or another, does not know it.
    let listeners_cursor = listeners_cursor.unwrap();
    let second = alice.attach(target).await;
    let theirs = mallory.attach(target).await;
    for (client, other) in [(alice, &second), (mallory, &theirs)] {
        assert_eq!(
            client
                .refused(
                    "cordis_inspect_event",
                    json!({"debugSessionId": other, "name": crowded[4], "cursor": listeners_cursor}),
                )
                .await,
            "UNKNOWN_CURSOR"
        );
    }
    for (client, other) in [(alice, second), (mallory, theirs)] {
        client
            .ok("cordis_detach_debug_session", json!({"debugSessionId": other}))
            .await;
    }
}

/// A detach cancels a pending 60 s wait of its session: the wait answers
/// `cancelled` (`detached`), not a timeout. The latency is printed.
#[expect(
    clippy::print_stderr,
    reason = "the cancellation latency is a figure the report names"
)]
async fn a_detach_cancels_a_pending_wait(alice: &HttpSession, target: &Value) {
    // A detach that overtakes the wait's arrival leaves no wait to cancel (the
    // wait then finds no session): try again with a fresh session.
    for _ in 0..5 {
        let session = alice.attach(target).await;
        let waiter = alice.clone();
        let waiting = session.clone();
        let started = Instant::now();
        let pending = tokio::spawn(async move {
            waiter
                .call(
                    "cordis_wait_for_runtime_change",
                    json!({"debugSessionId": waiting, "event": "never/emitted", "timeoutMs": 60_000}),
                )
                .await
        });
        // The wait is on its way before the detach is sent.
        tokio::task::yield_now().await;
        let sent_at = Instant::now();
        let detached = alice
            .ok("cordis_detach_debug_session", json!({"debugSessionId": session}))
            .await;
        let detached_at = Instant::now();
        assert_eq!(detached["detached"], session.as_str());
        let answer = pending.await.unwrap();
        let (latency, after_answer) = (sent_at.elapsed(), detached_at.elapsed());
        if answer["result"]["structuredContent"]["code"] == "UNKNOWN_SESSION" {
            continue;
        }
        let result = &answer["result"]["structuredContent"];
        assert_eq!(
            (&result["outcome"], &result["reason"]),
            (&json!("cancelled"), &json!("detached")),
            "{answer}"
        );
        eprintln!(
            "devtools contract: a detach ended a pending 60 s wait {latency:?} after the detach was sent ({after_answer:?} after it answered, {:?} after the wait was sent)",
            started.elapsed()
        );
        return;
    }
    panic!("every detach overtook its wait");
}

/// A client that ends its MCP session takes its debug sessions with it: the id
/// goes from another client's `NOT_OWNER` to `UNKNOWN_SESSION`.
async fn a_gone_client_takes_its_sessions_with_it(
    url: &str,
    token: &str,
    mallory: &HttpSession,
    target: &Value,
) {
    let carol = HttpSession::open(url, token, "contract").await;
    let session = carol.attach(target).await;
    let summary = json!({"debugSessionId": session});
    assert_eq!(
        mallory.refused("cordis_runtime_summary", summary.clone()).await,
        "NOT_OWNER"
    );
    carol.end().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let code = mallory.refused("cordis_runtime_summary", summary.clone()).await;
        if code == "UNKNOWN_SESSION" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the ended client's session is still there: {code}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v0_8_contract_holds_over_mcp_on_a_real_dsh() {
    let dsh = MidTurn::start(&Peers::get());
    let (home, model) = (&dsh.home, &dsh.model);
    let registry = dsh.registry.display().to_string();
    let (_server, url, token) = spawn_http(
        home.path(),
        &["--tools", "devtools", "--devtools-dir", &registry],
        &[],
    );
    let alice = HttpSession::open(&url, &token, "contract").await;
    let mallory = HttpSession::open(&url, &token, "contract").await;
    the_schemas_name_the_designs_parameters(&alice).await;

    let runtime = tokio::runtime::Handle::current();
    let target = tokio::task::block_in_place(|| {
        wait_for(Duration::from_mins(2), || {
            let listed = runtime.block_on(alice.ok("cordis_list_debug_targets", json!({})));
            listed["targets"]
                .as_array()
                .and_then(|t| t.first().cloned())
                .ok_or_else(|| format!("no debug target appeared: {listed}"))
        })
    });
    assert_eq!(target["status"], "live", "{target}");
    assert_eq!(target["version"]["collectorProtocol"], 1, "{target}");
    // Before any attach, the registry file says the DSH enables experiments.
    assert!(
        target["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("waterfall-profiler")),
        "{target}"
    );
    let session = alice.attach(&target["id"]).await;
    assert!(
        session.starts_with("dbg_") && session.len() > 30,
        "opaque: {session}"
    );
    // Attached, the core knows the DSH enables experiments.
    let listed = alice.ok("cordis_list_debug_targets", json!({})).await;
    assert_eq!(
        listed["targets"][0]["capabilities"],
        json!([
            "target-discovery",
            "debug-session",
            "runtime-snapshot",
            "runtime-wait",
            "checkpoint-compare",
            "waterfall-profiler"
        ]),
        "{listed}"
    );
    assert!(listed["targets"][0]["version"]["node"].is_string(), "{listed}");
    another_client_is_refused(&alice, &mallory, &session).await;

    // The turn goes on: its dispatches reach the journal.
    model.release();
    let seen = alice
        .ok(
            "cordis_wait_for_runtime_change",
            json!({"debugSessionId": session, "type": "dispatch-observed", "timeoutMs": 60_000}),
        )
        .await;
    assert_eq!(seen["outcome"], "found", "{seen}");
    let snapshot = alice
        .ok("cordis_debug_snapshot", json!({"debugSessionId": session}))
        .await;
    for section in [
        "summary",
        "events",
        "fibers",
        "dispatches",
        "profiler",
        "candidates",
    ] {
        assert!(snapshot.get(section).is_some(), "no {section}: {snapshot}");
    }
    assert_eq!(snapshot["summary"]["journal"]["capacity"], 500, "{snapshot}");
    assert!(
        snapshot["summary"]["journal"]["newestSequence"].as_u64() >= Some(1),
        "{snapshot}"
    );
    assert_eq!(snapshot["profiler"]["enabled"], true, "{snapshot}");
    assert!(snapshot["dispatches"]["total"].as_u64() >= Some(1), "{snapshot}");

    the_wait_filters_select_exactly(&alice, &session).await;
    the_dispatch_search_pages_on_session_cursors(&alice, &mallory, &target["id"]).await;
    a_ninth_cursor_is_refused(&alice, &mallory, &session, &target["id"]).await;
    a_detach_cancels_a_pending_wait(&alice, &target["id"]).await;
    a_gone_client_takes_its_sessions_with_it(&url, &token, &mallory, &target["id"]).await;

    tokio::task::block_in_place(|| dsh.finish());
}
