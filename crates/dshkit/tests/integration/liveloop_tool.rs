//! `liveloop_browser` over MCP stdio against real Chromium and a fixture app.

use std::time::Duration;

use dshkit_test::{Fixture, FixtureServer, processes_mentioning, wait_until};
use serde_json::{Value, json};

use crate::support::{EnvDir, Session, copy_hello_app, walk_files};

const APP: &str = r#"<!doctype html><title>Todo</title>
<h1>Todo</h1>
<label for="item">New item</label> <input id="item">
<button onclick="const li = document.createElement('li'); li.textContent = document.getElementById('item').value; document.getElementById('list').append(li); console.error('added', li.textContent);">Add</button>
<ul id="list"></ul>
<script>fetch('http://tracker.example/pixel').catch(() => {});</script>"#;

fn structured(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn an_agent_opens_uses_and_inspects_a_preview_over_mcp() {
    let server = FixtureServer::page(APP);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);

    let opened = mcp.call(
        1,
        "liveloop_browser",
        &json!({"operation": "open", "url": server.url("/")}),
    );
    let page = structured(&opened);
    let session = page["session"].as_str().unwrap().to_owned();
    assert!(session.starts_with("pv-"));
    assert_eq!(page["untrustedContent"], true);
    assert!(
        opened["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("untrusted")
    );
    let outline = page["outline"].as_str().unwrap();
    assert!(outline.contains("textbox \"New item\" [ref=r1-1]"), "{outline}");

    let filled = mcp.call(
        2,
        "liveloop_browser",
        &json!({"operation": "fill", "session": session, "ref": "r1-1", "text": "buy milk"}),
    );
    assert!(
        structured(&filled)["outline"]
            .as_str()
            .unwrap()
            .contains("value=\"buy milk\"")
    );
    let clicked = mcp.call(
        3,
        "liveloop_browser",
        &json!({"operation": "click", "session": session, "role": "button", "name": "Add", "includeText": true}),
    );
    let after = structured(&clicked);
    assert!(after["text"].as_str().unwrap().contains("buy milk"), "{after}");
    assert!(
        clicked["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("page text")
    );
    assert!(page.get("text").is_none(), "page text only when asked");
    assert_eq!(after["consoleErrors"], 1);

    let stale = mcp.call(
        4,
        "liveloop_browser",
        &json!({"operation": "click", "session": session, "ref": "r1-1"}),
    );
    assert_eq!(stale["result"]["isError"], true);
    assert_eq!(stale["result"]["structuredContent"]["code"], "STALE_ELEMENT_REF");

    let console = mcp.call(
        5,
        "liveloop_browser",
        &json!({"operation": "console", "session": session, "level": "error"}),
    );
    let entries = structured(&console)["entries"].as_array().unwrap().clone();
    assert!(entries.iter().all(|e| e["level"] == "error"), "{entries:?}");
    assert!(
        entries
            .iter()
            .any(|e| e["text"] == "added buy milk" && e["source"] == "console"),
        "{entries:?}"
    );
    let network = mcp.call(
        6,
        "liveloop_browser",
        &json!({"operation": "network", "session": session}),
    );
    assert_eq!(
        structured(&network)["blocked"][0]["url"],
        "http://tracker.example/pixel"
    );
    assert_eq!(structured(&network)["blocked"][0]["rule"], "external_host");

    let shot = mcp.call(
        7,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session}),
    );
    let shot = structured(&shot);
    let png = std::fs::read(shot["path"].as_str().unwrap()).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    assert_eq!(shot["bytes"], png.len());
    assert!(shot["path"].as_str().unwrap().starts_with(&evidence.value));

    let foreign = mcp.call(
        8,
        "liveloop_browser",
        &json!({"operation": "snapshot", "session": session, "owner": "someone-else"}),
    );
    assert_eq!(foreign["result"]["structuredContent"]["code"], "NOT_OWNER");
    let closed = mcp.call(
        9,
        "liveloop_browser",
        &json!({"operation": "close", "session": session}),
    );
    assert_eq!(structured(&closed)["closed"], session);
    let listed = mcp.call(10, "liveloop_browser", &json!({"operation": "list"}));
    assert_eq!(structured(&listed)["sessions"], json!([]));

    let missing = mcp.call(11, "liveloop_browser", &json!({"operation": "open"}));
    assert_eq!(missing["result"]["isError"], true);
    assert!(
        missing["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("`url` is required")
    );
}

#[test]
fn sigkill_of_dshkit_leaves_no_chromium_behind() {
    let server = FixtureServer::page("<p>x</p>");
    // A private temp dir: Chromium's profile is created inside it, so its processes
    // carry it on their command lines and can be found.
    let tmp = EnvDir::tmpdir();
    let mut mcp = Session::initialized(&[], &[tmp.env()]);
    mcp.open_preview(1, &server.url("/"));
    assert!(
        !processes_mentioning(&tmp.value).is_empty(),
        "Chromium runs with its profile under {}",
        tmp.value
    );
    mcp.kill();
    dshkit_test::wait_for(Duration::from_secs(10), || {
        let left = processes_mentioning(&tmp.value);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("Chromium outlived the killed dshkit: {left:?}"))
        }
    });
}

/// 900 rows, one of them far down, and a script that throws while loading.
fn large_page() -> String {
    let mut rows = String::new();
    for i in 1..=900 {
        rows.push_str(&format!("<li><button>Row {i}</button></li>"));
    }
    format!(
        "<!doctype html><title>Large</title><h1>Large</h1><ul role=\"list\" aria-label=\"Rows\">{rows}</ul>\
         <a href=\"/second\">Second page</a><script src=\"/boom.js\"></script>"
    )
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn a_large_page_is_reachable_by_paging_scoping_and_find_and_errors_come_inline() {
    let server = FixtureServer::start(vec![
        ("/", Fixture::Html(large_page())),
        (
            "/boom.js",
            Fixture::Js("const rows = null;\nrows.length;\n".into()),
        ),
        (
            "/second",
            Fixture::Html("<!doctype html><title>Second</title><p>calm</p>".into()),
        ),
    ]);
    let evidence = EnvDir::evidence_root();
    // Sixty old preview sessions: the screenshot below applies retention to them.
    for i in 0..60 {
        let dir = evidence.path().join(format!("previews/pv-old-{i:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("0000000000000000.png");
        std::fs::write(&file, b"\x89PNG old").unwrap();
        let when = std::time::SystemTime::now() - Duration::from_secs(3600 + i);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let mut mcp = Session::initialized(&[], &[evidence.env()]);

    let opened = mcp.call(
        1,
        "liveloop_browser",
        &json!({"operation": "open", "url": server.url("/")}),
    );
    let page = structured(&opened);
    let session = page["session"].as_str().unwrap().to_owned();
    let text = opened["result"]["content"][0]["text"].as_str().unwrap();
    // The error is in the result itself, with where it happened.
    assert!(
        text.contains("uncaught exception")
            && text.contains("reading 'length'")
            && text.contains("/boom.js:2:"),
        "{text}"
    );
    assert_eq!(page["errors"][0]["source"], "exception", "{page}");
    assert_eq!(page["total"], 903, "heading, list, 900 rows, link: {page}");
    assert_eq!(page["next"], 400);
    assert!(text.contains("more: snapshot {from: 400}"), "{text}");
    let generation = page["generation"].clone();

    // Paging keeps the snapshot's generation, so its refs stay valid.
    let mut from = page["next"].clone();
    let mut seen = page["shown"].as_u64().unwrap();
    let mut id = 2;
    while let Some(next) = from.as_u64() {
        let paged = mcp.call(
            id,
            "liveloop_browser",
            &json!({"operation": "snapshot", "session": session, "from": next}),
        );
        id += 1;
        let view = structured(&paged);
        assert_eq!(view["generation"], generation);
        assert!(paged["result"]["content"][0]["text"].as_str().unwrap().len() < 32_000);
        seen += view["shown"].as_u64().unwrap();
        from = view["next"].clone();
    }
    assert_eq!(seen, 903);

    let found = mcp.call(
        id,
        "liveloop_browser",
        &json!({"operation": "find", "session": session, "text": "Row 733", "role": "button"}),
    );
    let found = structured(&found);
    assert_eq!(found["total"], 1, "{found}");
    let reference = found["matches"][0]["ref"].as_str().unwrap().to_owned();
    let list = mcp.call(
        id + 1,
        "liveloop_browser",
        &json!({"operation": "find", "session": session, "role": "list"}),
    );
    let list_ref = structured(&list)["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let part = mcp.call(
        id + 10,
        "liveloop_browser",
        &json!({"operation": "snapshot", "session": session, "within": list_ref, "from": 850}),
    );
    let part = structured(&part);
    assert_eq!(part["total"], 901, "the list and its 900 rows: {part}");
    assert_eq!(part["next"], Value::Null);
    assert!(part["outline"].as_str().unwrap().contains("Row 900"), "{part}");
    assert!(
        !part["outline"].as_str().unwrap().contains("Second page"),
        "{part}"
    );
    let clicked = mcp.call(
        id + 2,
        "liveloop_browser",
        &json!({"operation": "click", "session": session, "ref": reference}),
    );
    let clicked = structured(&clicked);
    assert!(
        clicked["outline"].as_str().unwrap().contains("Row 1"),
        "{clicked}"
    );

    // A new page starts a new observation window.
    let second = mcp.call(
        id + 3,
        "liveloop_browser",
        &json!({"operation": "navigate", "session": session, "url": "/second"}),
    );
    let second = structured(&second);
    assert_eq!(second["consoleErrors"], 0, "{second}");
    assert_eq!(
        second["observationWindow"],
        "the window restarts at open, navigate, reload and back"
    );

    let shot = mcp.call(
        id + 4,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session}),
    );
    let shot_dir = std::path::Path::new(structured(&shot)["path"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_owned();
    let sessions = std::fs::read_dir(evidence.path().join("previews"))
        .unwrap()
        .count();
    assert!(
        sessions <= 50,
        "retention keeps at most 50 preview sessions: {sessions}"
    );
    assert!(shot_dir.is_dir(), "the newest is kept");
}

/// Reads responses until the one with `id` (others are kept aside in `early`).
fn response_to(mcp: &Session, id: u64, early: &mut Vec<Value>) -> Value {
    if let Some(at) = early.iter().position(|r| r["id"] == id) {
        return early.remove(at);
    }
    loop {
        let message = mcp.recv();
        if message["id"] == id {
            return message;
        }
        early.push(message);
    }
}

/// Asks the preview's console (calls 10, 11, ...) until it logged `load 2`: the
/// page counts its loads, so a verification running in the preview has made its
/// fresh load. Answers to other requests are kept aside in `early`.
fn wait_for_fresh_load(mcp: &mut Session, session: &str, early: &mut Vec<Value>) {
    let mut id = 10;
    dshkit_test::wait_for(Duration::from_mins(1), || {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "liveloop_browser",
            "arguments": {"operation": "console", "session": session}}}).to_string());
        let console = response_to(mcp, id, early);
        id += 1;
        let entries = structured(&console)["entries"].as_array().unwrap().clone();
        if entries.iter().any(|e| e["text"] == "load 2") {
            Ok(())
        } else {
            Err(format!("the verification never loaded the page: {entries:?}"))
        }
    });
}

#[test]
fn a_cancelled_verification_stops_and_frees_its_preview() {
    let server = FixtureServer::start(vec![(
        "/",
        Fixture::Html(
            "<!doctype html><title>slow</title><p>waiting</p><script>const n = Number(sessionStorage.n || 0) + 1; sessionStorage.n = n; console.log('load ' + n);</script>"
                .into(),
        ),
    )]);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let session = mcp.open_preview(1, &server.url("/"));
    // A verification whose wait step would hold the preview for 30 s.
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "liveloop_verify",
            "arguments": {"session": session, "steps": [{"action": "wait", "text": "never shown", "timeoutMs": 30_000}]}}})
        .to_string(),
    );
    // Once its fresh load has happened (the page counts its loads), it is in the wait.
    let mut early = Vec::new();
    wait_for_fresh_load(&mut mcp, &session, &mut early);
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user stopped it"}}"#);
    // The preview is free: a snapshot (which waits for a running verification) answers...
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "liveloop_browser",
        "arguments": {"operation": "snapshot", "session": session}}})
        .to_string(),
    );
    let snapshot = response_to(&mcp, 3, &mut early);
    assert_eq!(snapshot["result"]["isError"], false, "{snapshot}");
    // ...and the verification never finished: it wrote no report.
    let reports: Vec<_> = walk_files(evidence.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert!(reports.is_empty(), "the cancelled verification wrote {reports:?}");
    let verify_answer = early.iter().find(|r| r["id"] == 2);
    if let Some(answer) = verify_answer {
        assert!(
            answer["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("cancelled")),
            "{answer}"
        );
    }
}

#[test]
fn browser_actions_wait_for_a_running_verification_of_their_preview() {
    let workspace = tempfile::tempdir().unwrap();
    copy_hello_app(workspace.path());
    let server = FixtureServer::start(vec![
        (
            "/",
            Fixture::Html(
                "<!doctype html><title>slow</title><p id=\"s\">waiting</p><script>const n = Number(sessionStorage.n || 0) + 1; sessionStorage.n = n; console.log('load ' + n); setTimeout(() => { document.getElementById('s').textContent = 'ready'; }, 1500);</script>"
                    .into(),
            ),
        ),
        ("/other", Fixture::Html("<!doctype html><title>other</title><p>other</p>".into())),
    ]);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(
        &["--workspace", workspace.path().to_str().unwrap()],
        &[evidence.env()],
    );
    let session = mcp.open_preview(1, &server.url("/"));

    // A viewport the preview was not opened with is refused, not ignored.
    let other_viewport = mcp.call(
        2,
        "liveloop_verify",
        &json!({"session": session, "viewport": "mobile"}),
    );
    assert_eq!(other_viewport["result"]["isError"], true, "{other_viewport}");
    assert!(
        other_viewport["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("shows the Desktop viewport, not Mobile"),
        "{other_viewport}"
    );

    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "liveloop_verify",
            "arguments": {"session": session, "steps": [{"action": "wait", "text": "ready", "timeoutMs": 10_000}],
                          "assertions": [{"kind": "text_present", "text": "ready"}]}}})
        .to_string(),
    );
    let mut early = Vec::new();
    wait_for_fresh_load(&mut mcp, &session, &mut early);
    // A navigation sent while the verification waits for "ready"...
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "liveloop_browser",
        "arguments": {"operation": "navigate", "session": session, "url": "/other"}}})
        .to_string(),
    );
    let verified = response_to(&mcp, 3, &mut early);
    let navigated = response_to(&mcp, 4, &mut early);
    // ...runs after it: the verification's window stayed its own.
    let report = structured(&verified);
    assert_eq!(report["verdict"], "VERIFIED", "{report}");
    assert!(
        report["source"]["files"].as_u64().is_some_and(|n| n >= 3),
        "appUrl and session targets fingerprint the workspace app: {report}"
    );
    assert_eq!(structured(&navigated)["title"], "other");
}

fn image_blocks(response: &Value) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    response["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "image")
        .map(|block| {
            assert_eq!(block["mimeType"], "image/png");
            base64::engine::general_purpose::STANDARD
                .decode(block["data"].as_str().unwrap())
                .unwrap()
        })
        .collect()
}

#[test]
fn screenshots_come_as_image_content_fitted_to_the_bounds_when_asked() {
    // 900 rows: a full page far taller than the 2000 px an image may take.
    let server = FixtureServer::page(large_page());
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let session = mcp.open_preview(1, &server.url("/"));

    // Not asked: the path only (the server's default is `auto`).
    let plain = mcp.call(
        2,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session}),
    );
    assert!(image_blocks(&plain).is_empty(), "{plain}");

    // Asked: the viewport PNG is within the bounds and sent byte for byte.
    let shot = mcp.call(
        3,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session, "image": true}),
    );
    let saved = std::fs::read(structured(&shot)["path"].as_str().unwrap()).unwrap();
    assert_eq!(image_blocks(&shot), vec![saved]);
    assert_eq!(structured(&shot)["images"][0]["role"], "screenshot");
    assert_eq!(structured(&shot)["images"][0]["fitted"], Value::Null);

    // A full page is cropped to its top 2000 px, and the text says so.
    let full = mcp.call(
        4,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session, "image": true, "fullPage": true}),
    );
    let sent = image_blocks(&full);
    assert_eq!(sent.len(), 1);
    let image = dshkit_liveloop::verify::diff::Rgba::from_png(&sent[0]).unwrap();
    let height = structured(&full)["height"].as_u64().unwrap();
    assert!(height > 2000, "the page is taller than the bound: {height}");
    assert_eq!((image.width, image.height), (1280, 2000));
    let text = full["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("cropped to the top 2000 of {height} px")),
        "{text}"
    );
    assert!(sent[0].len() <= 1_000_000);

    // A server for text-only hosts never sends one, and says why.
    let mut never = Session::initialized(&["--images", "never"], &[evidence.env()]);
    let session = never.open_preview(1, &server.url("/"));
    let refused = never.call(
        2,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session, "image": true}),
    );
    assert!(image_blocks(&refused).is_empty());
    assert!(
        refused["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("--images never")
    );
}

#[test]
fn a_verification_reports_each_stage_as_progress_before_its_result() {
    let server = FixtureServer::page(APP);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let request = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "liveloop_verify",
            "_meta": { "progressToken": "verify-1" },
            "arguments": {
                "appUrl": server.url("/"),
                "steps": [
                    { "action": "fill", "role": "textbox", "name": "New item", "text": "milk" },
                    { "action": "click", "role": "button", "name": "Add" }
                ],
                "assertions": [{ "kind": "text_present", "text": "milk" }],
                "allowConsoleErrors": true,
                "allowFailedRequests": true
            }
        }
    });
    mcp.send(&request.to_string());
    let mut stages = Vec::new();
    let response = loop {
        let message = mcp.recv_within(Duration::from_mins(2));
        if message["id"] == 2 {
            break message;
        }
        if message["method"] == "notifications/resources/list_changed" {
            continue; // the evidence it wrote
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], "verify-1");
        stages.push((
            message["params"]["progress"].as_f64().unwrap(),
            message["params"]["message"].as_str().unwrap().to_owned(),
        ));
    };
    assert_eq!(response["result"]["isError"], false, "{response}");
    let messages: Vec<&str> = stages.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            format!("opening a preview of {}", server.url("/")).as_str(),
            format!("loading {}", server.url("/")).as_str(),
            "step 1/2: fill textbox \"New item\" \"milk\"",
            "step 2/2: click button \"Add\"",
            "checking 1 assertion(s)",
            "taking the screenshot",
            // The allowed console error is a warning.
            "verdict: VERIFIED_WITH_WARNINGS",
        ],
        "{response}"
    );
    assert!(
        stages.windows(2).all(|w| w[0].0 < w[1].0),
        "progress rises: {stages:?}"
    );
    // Nothing follows the result: the next message answers the next request.
    mcp.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string());
    assert_eq!(mcp.recv()["id"], 3);
}

/// Sends a tools/call and returns the `notifications/message` that came before
/// its answer, and the answer.
fn call_collecting_logs(mcp: &mut Session, id: u64, tool: &str, arguments: &Value) -> (Vec<Value>, Value) {
    mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string());
    let mut logs = Vec::new();
    loop {
        let message = mcp.recv_within(Duration::from_mins(2));
        if message["id"] == id {
            return (logs, message);
        }
        assert_eq!(message["method"], "notifications/message", "{message}");
        logs.push(message["params"].clone());
    }
}

#[test]
fn the_client_is_told_of_a_relaunched_browser_and_of_an_adopted_server_at_the_level_it_set() {
    let server = FixtureServer::page("<h1>x</h1>");
    let tmp = EnvDir::tmpdir();
    let mut mcp = Session::start(&[tmp.env()]);
    let init = mcp.initialize("2025-11-25");
    assert!(init["result"]["capabilities"]["logging"].is_object(), "{init}");

    let open = json!({"operation": "open", "url": server.url("/")});
    let (logs, opened) = call_collecting_logs(&mut mcp, 1, "liveloop_browser", &open);
    structured(&opened);
    assert!(logs.is_empty(), "the first launch is no news: {logs:?}");
    // The browser dies under dshkit: the next open relaunches it and says so.
    for pid in processes_mentioning(&tmp.value) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    wait_until(Duration::from_secs(10), "Chromium survived SIGKILL", || {
        processes_mentioning(&tmp.value).is_empty()
    });
    let (logs, reopened) = call_collecting_logs(&mut mcp, 2, "liveloop_browser", &open);
    structured(&reopened);
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["level"], "warning");
    assert_eq!(logs[0]["logger"], "dshkit/liveloop_browser");
    assert!(
        logs[0]["data"]
            .as_str()
            .unwrap()
            .contains("launched a new browser"),
        "{logs:?}"
    );

    // An adoption is information: silent at the default level (warning), told at info.
    let adopt = json!({"operation": "adopt", "url": server.url("/")});
    let (logs, _) = call_collecting_logs(&mut mcp, 3, "liveloop_runtime", &adopt);
    assert!(logs.is_empty(), "{logs:?}");
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "info"}})
            .to_string(),
    );
    assert_eq!(mcp.recv()["result"], json!({}));
    let (logs, adopted) = call_collecting_logs(&mut mcp, 5, "liveloop_runtime", &adopt);
    assert_eq!(adopted["result"]["isError"], false, "{adopted}");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["level"], "info");
    assert!(
        logs[0]["data"].as_str().unwrap().contains("never stops it"),
        "{logs:?}"
    );
    // At error, nothing dshkit logs is sent.
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel", "params": {"level": "error"}})
            .to_string(),
    );
    assert_eq!(mcp.recv()["result"], json!({}));
    let (logs, _) = call_collecting_logs(&mut mcp, 7, "liveloop_runtime", &adopt);
    assert!(logs.is_empty(), "{logs:?}");
}

/// The shortest idle timeout the settings allow is 30 s, so this test waits it out.
#[test]
fn the_client_is_told_once_that_its_idle_preview_session_was_closed() {
    let server = FixtureServer::page("<h1>x</h1>");
    let config = EnvDir::config_home();
    std::fs::create_dir_all(config.path().join("dshkit")).unwrap();
    std::fs::write(
        config.path().join("dshkit/settings.json"),
        r#"{"idleTimeoutSecs": 30}"#,
    )
    .unwrap();
    let mut mcp = Session::initialized(&[], &[config.env()]);
    let (_, opened) = call_collecting_logs(
        &mut mcp,
        1,
        "liveloop_browser",
        &json!({"operation": "open", "url": server.url("/")}),
    );
    let session = structured(&opened)["session"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_secs(31));
    let list = json!({"operation": "list"});
    let (logs, listed) = call_collecting_logs(&mut mcp, 2, "liveloop_browser", &list);
    assert!(
        !listed.to_string().contains(&session),
        "the session is gone: {listed}"
    );
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["level"], "warning");
    assert_eq!(
        logs[0]["data"],
        format!("preview session {session} was closed after 30 s without use; open a new one")
    );
    let (logs, _) = call_collecting_logs(&mut mcp, 3, "liveloop_browser", &list);
    assert!(logs.is_empty(), "told once: {logs:?}");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn a_verification_links_its_evidence_which_is_listed_paged_and_readable_as_resources() {
    use base64::Engine as _;
    let server = FixtureServer::page(APP);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::start(&[evidence.env()]);
    let init = mcp.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["resources"]["listChanged"], true,
        "{init}"
    );

    let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "liveloop_verify",
        "arguments": {"appUrl": server.url("/"), "assertions": [{"kind": "text_present", "text": "Todo"}], "allowConsoleErrors": true}}});
    mcp.send(&request.to_string());
    let mut changed = false;
    let verified = loop {
        let message = mcp.recv_within(Duration::from_mins(2));
        if message["id"] == 2 {
            break message;
        }
        changed |= message["method"] == "notifications/resources/list_changed";
    };
    assert!(
        changed,
        "new evidence changes the resource list, before the result"
    );
    let links: Vec<&Value> = verified["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "resource_link")
        .collect();
    let report_path = structured(&verified)["reportPath"].as_str().unwrap().to_owned();
    let report_uri = format!(
        "dshkit://evidence/{}",
        report_path.strip_prefix(&format!("{}/", evidence.value)).unwrap()
    );
    assert!(
        links
            .iter()
            .any(|l| l["uri"] == report_uri.as_str() && l["mimeType"] == "application/json"),
        "{links:?}"
    );
    let png = links
        .iter()
        .find(|l| l["mimeType"] == "image/png")
        .expect("the screenshot is linked");

    let report = mcp.read_resource(3, &report_uri);
    let text = report["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["verdict"],
        structured(&verified)["verdict"]
    );
    let image = mcp.read_resource(4, png["uri"].as_str().unwrap());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image["result"]["contents"][0]["blob"].as_str().unwrap())
        .unwrap();
    let on_disk = std::fs::read(
        evidence.path().join(
            png["uri"]
                .as_str()
                .unwrap()
                .strip_prefix("dshkit://evidence/")
                .unwrap(),
        ),
    )
    .unwrap();
    assert_eq!(bytes, on_disk, "the blob is the saved screenshot");

    // Paths stay inside the root: no `..`, no symbolic link out of it.
    dshkit_os::fs::symlink("/etc", evidence.path().join("verify/escape")).unwrap();
    for uri in [
        "dshkit://evidence/../../etc/passwd",
        "dshkit://evidence/verify/escape/passwd",
        "dshkit://evidence/verify/x",
    ] {
        assert!(mcp.read_resource(5, uri)["error"].is_object(), "{uri}");
    }

    // Listed in pages of 100 with a cursor.
    let many = evidence.path().join("verify/many");
    std::fs::create_dir_all(&many).unwrap();
    for i in 0..150 {
        std::fs::write(many.join(format!("r{i:03}.json")), "{}").unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 10.. {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        mcp.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/list", "params": params}).to_string(),
        );
        let page = mcp.recv();
        let items = page["result"]["resources"].as_array().unwrap();
        assert!(items.len() <= 100, "{}", items.len());
        seen.extend(items.iter().map(|r| r["uri"].as_str().unwrap().to_owned()));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(
        seen.len() >= 152,
        "150 files and the verification's own: {}",
        seen.len()
    );
    assert!(seen.contains(&report_uri));
    assert!(
        !seen.iter().any(|u| u.contains("escape")),
        "a symlinked directory is not listed"
    );
}

#[test]
fn the_preview_browser_is_launched_at_startup_unless_told_not_to() {
    let server = FixtureServer::page("<h1>x</h1>");
    let warm_tmp = EnvDir::tmpdir();
    let mut warm = Session::initialized(&[], &[warm_tmp.env()]);
    wait_until(
        Duration::from_mins(1),
        "no browser was launched at startup",
        || !processes_mentioning(&warm_tmp.value).is_empty(),
    );
    warm.open_preview(1, &server.url("/"));

    let cold_tmp = EnvDir::tmpdir();
    let mut cold = Session::initialized(&["--no-prewarm"], &[cold_tmp.env()]);
    cold.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string());
    assert_eq!(cold.recv()["id"], 1);
    assert!(
        processes_mentioning(&cold_tmp.value).is_empty(),
        "--no-prewarm launches nothing"
    );
    cold.open_preview(2, &server.url("/"));
    assert!(
        !processes_mentioning(&cold_tmp.value).is_empty(),
        "the first open launches it"
    );
}

/// Buttons whose effect comes late: after a `fetch` answered at 50 ms, 300 ms and
/// 2 s (read with `text()`), after an XHR, after a 30 ms timer, and after a timer
/// chain; and one whose effect is immediate, on a page that polls with a timer.
const LATE_EFFECTS: &str = r#"<!doctype html><title>late</title>
<p id="out">nothing yet</p>
<button onclick="fetch('/after/50').then(r => r.text()).then(t => { out.textContent = 'fetched ' + t; })">fetch 50</button>
<button onclick="fetch('/after/300').then(r => r.text()).then(t => { out.textContent = 'fetched ' + t; })">fetch 300</button>
<button onclick="fetch('/after/2000').then(r => r.text()).then(t => { out.textContent = 'fetched ' + t; })">fetch 2000</button>
<button onclick="const x = new XMLHttpRequest(); x.open('GET', '/after/300'); x.onload = () => { out.textContent = 'xhr ' + x.responseText; }; x.send()">xhr</button>
<button onclick="setTimeout(() => { out.textContent = 'timer 30'; }, 30)">timer</button>
<button onclick="setTimeout(() => setTimeout(() => { out.textContent = 'chained'; }, 20), 20)">chain</button>
<button onclick="out.textContent = 'at once'">now</button>
<script>const out = document.getElementById('out'); let ticks = 0; (function poll() { ticks += 1; setTimeout(poll, 50); })();</script>"#;

#[test]
fn an_action_settles_when_its_requests_and_timers_are_done_and_sees_their_effect() {
    let server = FixtureServer::start(vec![
        ("/", Fixture::Html(LATE_EFFECTS.into())),
        (
            "/after/50",
            Fixture::Delayed(Duration::from_millis(50), "50".into()),
        ),
        (
            "/after/300",
            Fixture::Delayed(Duration::from_millis(300), "300".into()),
        ),
        (
            "/after/2000",
            Fixture::Delayed(Duration::from_secs(2), "2000".into()),
        ),
    ]);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let session = mcp.open_preview(1, &server.url("/"));
    let cases = [
        ("fetch 50", "fetched 50"),
        ("fetch 300", "fetched 300"),
        ("fetch 2000", "fetched 2000"),
        ("xhr", "xhr 300"),
        ("timer", "timer 30"),
        ("chain", "chained"),
        ("now", "at once"),
    ];
    for (id, (button, effect)) in (2..).zip(cases) {
        let clicked = mcp.call(
            id,
            "liveloop_browser",
            &json!({"operation": "click", "session": session, "role": "button", "name": button, "includeText": true}),
        );
        let text = structured(&clicked)["text"].as_str().unwrap().to_owned();
        assert!(text.contains(effect), "after {button:?}: {text}");
    }
}

/// A live frame's image and what its result says of it.
fn frame_of(mcp: &mut Session, id: u64, session: &str, since: Option<&str>) -> (Value, Option<Vec<u8>>) {
    use base64::Engine as _;
    let mut args = json!({"operation": "frame", "session": session});
    if let Some(since) = since {
        args["since"] = json!(since);
    }
    let answer = mcp.call(id, "liveloop_browser", &args);
    let described = structured(&answer).clone();
    let image = answer["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "image")
        .map(|c| {
            assert_eq!(c["mimeType"], "image/jpeg", "{answer}");
            base64::engine::general_purpose::STANDARD
                .decode(c["data"].as_str().unwrap())
                .unwrap()
        });
    (described, image)
}

#[test]
fn a_frame_is_a_bounded_jpeg_of_the_page_now_sent_once_and_forward_undoes_back() {
    let server = FixtureServer::start(vec![
        (
            "/",
            Fixture::Html(
                "<!doctype html><title>First</title><h1>First</h1><a href=\"/second\">Second</a>".into(),
            ),
        ),
        (
            "/second",
            Fixture::Html("<!doctype html><title>Second</title><h1>Second</h1>".into()),
        ),
    ]);
    let mut mcp = Session::initialized(&[], &[]);
    let opened = mcp.call(
        1,
        "liveloop_browser",
        &json!({"operation": "open", "url": server.url("/")}),
    );
    let session = structured(&opened)["session"].as_str().unwrap().to_owned();

    // A desktop page (1280 px wide) is scaled to 800; the JPEG is the one described.
    let (first, jpeg) = frame_of(&mut mcp, 2, &session, None);
    let jpeg = jpeg.expect("the first frame carries its image");
    assert!(jpeg.starts_with(&[0xFF, 0xD8]), "a JPEG");
    assert_eq!(first["bytes"], jpeg.len(), "{first}");
    assert_eq!(
        (first["width"].as_u64(), first["height"].as_u64()),
        (Some(800), Some(500)),
        "{first}"
    );
    assert_eq!(first["title"], "First", "{first}");
    assert_eq!(first["url"], server.url("/"), "{first}");
    assert_eq!(first["seq"], 1, "{first}");
    assert_eq!(
        (first["canGoBack"].as_bool(), first["canGoForward"].as_bool()),
        (Some(false), Some(false))
    );

    // The same page again: said unchanged, and no image is sent.
    let (same, none) = frame_of(&mut mcp, 3, &session, first["frame"].as_str());
    assert_eq!(same["unchanged"], true, "{same}");
    assert!(none.is_none(), "an unchanged frame is not sent again");
    assert_eq!(same["seq"], 2, "{same}");

    let clicked = mcp.call(
        4,
        "liveloop_browser",
        &json!({"operation": "click", "session": session, "role": "link", "name": "Second"}),
    );
    structured(&clicked);
    let (second, image) = frame_of(&mut mcp, 5, &session, first["frame"].as_str());
    assert!(image.is_some(), "a changed page is sent: {second}");
    assert_eq!(second["url"], server.url("/second"), "{second}");
    assert_eq!(
        (second["canGoBack"].as_bool(), second["canGoForward"].as_bool()),
        (Some(true), Some(false))
    );

    let back = mcp.call(
        6,
        "liveloop_browser",
        &json!({"operation": "back", "session": session}),
    );
    structured(&back);
    let (behind, _) = frame_of(&mut mcp, 7, &session, None);
    assert_eq!(behind["url"], server.url("/"), "{behind}");
    assert_eq!(behind["canGoForward"], true, "{behind}");
    let forward = mcp.call(
        8,
        "liveloop_browser",
        &json!({"operation": "forward", "session": session}),
    );
    assert!(
        structured(&forward)["url"].as_str().unwrap().ends_with("/second"),
        "{forward}"
    );
    let beyond = mcp.call(
        9,
        "liveloop_browser",
        &json!({"operation": "forward", "session": session}),
    );
    assert_eq!(beyond["result"]["isError"], true, "{beyond}");
    assert!(beyond.to_string().contains("no later page"), "{beyond}");

    // A phone (three device pixels to a CSS pixel) is bounded too.
    let phone = mcp.call(
        10,
        "liveloop_browser",
        &json!({"operation": "open", "url": server.url("/"), "viewport": "mobile"}),
    );
    let phone = structured(&phone)["session"].as_str().unwrap().to_owned();
    let (small, _) = frame_of(&mut mcp, 11, &phone, None);
    let width = small["width"].as_u64().unwrap();
    assert!((300..=800).contains(&width), "{small}");
}

/// A page that says which layout its CSS chose: wide above 600 CSS px, narrow below
/// (laid out at the device's width, as apps made for phones ask).
const LAYOUTS: &str = "<!doctype html><meta name=viewport content=\"width=device-width\"><title>Layouts</title><style>.narrow{display:none}\
@media (max-width:600px){.wide{display:none}.narrow{display:block}}</style>\
<p class=wide>Wide layout</p><p class=narrow>Narrow layout</p>";

#[test]
fn a_viewport_switch_lays_the_page_out_again_and_a_verification_never_runs_on_a_switched_preview_of_another_viewport()
 {
    let server = FixtureServer::page(LAYOUTS);
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let session = mcp.open_preview(1, &server.url("/"));
    let text = |answer: &Value| structured(answer)["text"].to_string();

    let snapshot = mcp.call(
        2,
        "liveloop_browser",
        &json!({"operation": "snapshot", "session": session, "includeText": true}),
    );
    assert!(text(&snapshot).contains("Wide layout"), "{snapshot}");
    assert!(!text(&snapshot).contains("Narrow layout"), "{snapshot}");

    // Switched to a phone, the page lays itself out for it, and says so.
    let phone = mcp.call(
        3,
        "liveloop_browser",
        &json!({"operation": "viewport", "session": session, "viewport": "mobile", "includeText": true}),
    );
    assert_eq!(structured(&phone)["viewport"], "mobile", "{phone}");
    assert!(text(&phone).contains("Narrow layout"), "{phone}");
    assert!(!text(&phone).contains("Wide layout"), "{phone}");
    let (frame, _) = frame_of(&mut mcp, 4, &session, None);
    assert_eq!(frame["viewport"], "mobile", "{frame}");
    assert!(
        frame["height"].as_u64() > frame["width"].as_u64(),
        "a phone's frame is portrait: {frame}"
    );
    let missing = mcp.call(
        5,
        "liveloop_browser",
        &json!({"operation": "viewport", "session": session}),
    );
    assert_eq!(missing["result"]["isError"], true, "{missing}");

    // A verification asked for the desktop never runs in a preview switched to a
    // phone: its evidence is about the viewport it names.
    let verify = |mcp: &mut Session, id: u64| {
        let answer = mcp.call(
            id,
            "liveloop_verify",
            &json!({"appUrl": server.url("/"), "assertions": [{"kind": "text_present", "text": "Wide layout"}]}),
        );
        structured(&answer).clone()
    };
    let first = verify(&mut mcp, 6);
    assert_eq!(first["verdict"], "VERIFIED", "{first}");
    assert_eq!(first["viewport"], "desktop", "{first}");
    let verified_in = first["session"].as_str().unwrap().to_owned();
    let switched = mcp.call(
        7,
        "liveloop_browser",
        &json!({"operation": "viewport", "session": verified_in, "viewport": "mobile"}),
    );
    assert_eq!(structured(&switched)["viewport"], "mobile", "{switched}");
    let again = verify(&mut mcp, 8);
    assert_eq!(again["verdict"], "VERIFIED", "{again}");
    assert_eq!(again["viewport"], "desktop", "{again}");
    assert_ne!(
        again["session"], verified_in,
        "the switched preview is not the desktop's: {again}"
    );
}
