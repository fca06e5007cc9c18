//! A verification is about exactly the page named, at every entry point (the CLI's
//! URL and `--path`, `appUrl`, `url`, a step's `navigate`), and an agent's loop of
//! verifications never runs out of previews.

use dshkit_test::{Fixture, FixtureServer};
use serde_json::{Value, json};

use crate::support::{EnvDir, Home, Session, stdout_json};

/// The path, query and fragment every test names.
const NAMED: &str = "/broken/?tab=2#details";

/// An app whose home page is healthy and whose page at `/broken/` shows the
/// query and fragment it was opened with, then throws and loads a missing
/// script; `/old` redirects home.
fn app() -> FixtureServer {
    FixtureServer::start(vec![
        (
            "/",
            Fixture::Html("<!doctype html><title>Home</title><h1>Home page</h1><p>All good</p>".into()),
        ),
        (
            "/broken/",
            Fixture::Html(
                "<!doctype html><title>Broken</title><h1>Broken page</h1><p id=at></p>\
                 <script>document.getElementById('at').textContent = 'at ' + location.search + location.hash;\
                 throw new Error('the broken page threw');</script><script src=/missing.js></script>"
                    .into(),
            ),
        ),
        ("/old", Fixture::Redirect("/".into())),
    ])
}

/// An initialized `dshkit mcp` that writes its evidence in `evidence`.
fn mcp(evidence: &EnvDir) -> Session {
    Session::initialized(&[], &[evidence.env()])
}

fn report(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

/// The report is about the broken page: FAILED for its own exception and its
/// own 404, naming exactly the URL asked for.
fn assert_about_the_broken_page(report: &Value, named: &str) {
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(report["requestedUrl"], named, "{report:#}");
    assert_eq!(report["loadedUrl"], named, "{report:#}");
    assert_eq!(report["title"], "Broken", "{report:#}");
    let reasons = report["reasons"].to_string();
    assert!(reasons.contains("the broken page threw"), "{reasons}");
    assert!(reasons.contains("missing.js"), "{reasons}");
}

#[test]
fn the_cli_verifies_the_url_it_is_given_with_its_path_query_and_fragment() {
    let app = app();
    let home = Home::new();
    let named = app.url(NAMED);
    let out = home.run(["verify", &named, "--expect-text", "at ?tab=2#details", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_about_the_broken_page(&report, &named);
    assert_eq!(
        report["assertions"][0]["passed"], true,
        "the page saw its query and fragment: {report:#}"
    );

    // `--path` is resolved against the URL given; the text names the page.
    let out = home.run(["verify", &app.url("/"), "--path", NAMED]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(&format!("FAILED  {named}  ")), "{text}");
}

#[test]
fn liveloop_verify_checks_the_named_page_through_app_url_url_and_a_navigate_step() {
    let app = app();
    let evidence = EnvDir::evidence_root();
    let mut mcp = mcp(&evidence);
    let named = app.url(NAMED);

    let by_app_url = mcp.call(1, "liveloop_verify", &json!({ "appUrl": named }));
    assert_about_the_broken_page(report(&by_app_url), &named);

    let by_url = mcp.call(
        2,
        "liveloop_verify",
        &json!({ "appUrl": app.url("/"), "url": NAMED }),
    );
    assert_about_the_broken_page(report(&by_url), &named);

    // The same preview, verified again without a URL, loads the page it was
    // last sent to: the broken one, not its origin's root.
    let session = report(&by_url)["session"].as_str().unwrap().to_owned();
    let again = mcp.call(3, "liveloop_verify", &json!({ "session": session }));
    assert_about_the_broken_page(report(&again), &named);

    let navigated = mcp.call(
        4,
        "liveloop_verify",
        &json!({ "appUrl": app.url("/"), "steps": [{ "action": "navigate", "url": NAMED }],
                 "assertions": [{ "kind": "text_present", "text": "at ?tab=2#details" }] }),
    );
    let navigated = report(&navigated);
    assert_eq!(navigated["requestedUrl"], app.url("/"), "{navigated:#}");
    assert_eq!(
        navigated["url"], named,
        "the step went exactly where it was told: {navigated:#}"
    );
    assert_eq!(navigated["assertions"][0]["passed"], true, "{navigated:#}");
    assert_eq!(
        navigated["verdict"], "FAILED",
        "the broken page's exception counts: {navigated:#}"
    );

    // The healthy home page of the same app passes: the failure above was the
    // named page's own.
    let home = mcp.call(
        5,
        "liveloop_verify",
        &json!({ "appUrl": app.url("/"), "assertions": [{ "kind": "text_present", "text": "All good" }] }),
    );
    assert_eq!(report(&home)["verdict"], "VERIFIED", "{home}");
}

#[test]
fn a_redirect_is_said_in_the_verdict_and_the_report_names_both_urls() {
    let app = app();
    let evidence = EnvDir::evidence_root();
    let mut mcp = mcp(&evidence);
    let named = app.url("/old");
    let redirected = mcp.call(
        1,
        "liveloop_verify",
        &json!({ "appUrl": named, "assertions": [{ "kind": "text_present", "text": "All good" }] }),
    );
    let redirected = report(&redirected);
    assert_eq!(redirected["verdict"], "VERIFIED_WITH_WARNINGS", "{redirected:#}");
    assert_eq!(redirected["requestedUrl"], named);
    assert_eq!(redirected["loadedUrl"], app.url("/"));
    let reasons = redirected["reasons"].to_string();
    assert!(
        reasons.contains("redirected") && reasons.contains(&named),
        "{reasons}"
    );
    let html = std::fs::read_to_string(redirected["htmlPath"].as_str().unwrap()).unwrap();
    assert!(
        html.contains(&format!("<code id=\"requested-url\">{named}</code>")),
        "{html}"
    );
}

#[test]
fn ten_verifications_in_a_row_in_one_mcp_session_all_get_their_verdicts() {
    let app = app();
    let evidence = EnvDir::evidence_root();
    let mut mcp = mcp(&evidence);
    let mut sessions = std::collections::BTreeSet::new();
    for id in 1..=10u64 {
        // Alternate pages of the one origin, as an agent's loop does.
        let page = if id % 2 == 0 { "/" } else { NAMED };
        let response = mcp.call(id, "liveloop_verify", &json!({ "appUrl": app.url(page) }));
        let report = report(&response);
        let expected = if id % 2 == 0 {
            "VERIFIED_WITH_WARNINGS"
        } else {
            "FAILED"
        };
        assert_eq!(report["verdict"], expected, "verification {id}: {report:#}");
        assert_eq!(report["requestedUrl"], app.url(page), "verification {id}");
        sessions.insert(report["session"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        sessions.len(),
        1,
        "every verification reused the one preview: {sessions:?}"
    );
}

#[test]
fn at_the_limit_the_owners_least_recently_used_idle_preview_is_closed_and_said() {
    let app = app();
    let evidence = EnvDir::evidence_root();
    let mut mcp = mcp(&evidence);
    // Four previews opened to browse fill the default limit.
    let mut opened = Vec::new();
    for id in 1..=4u64 {
        opened.push(mcp.open_preview(id, &app.url("/")));
    }
    // The oldest one is used again, so the second is now the least recently used.
    let used = mcp.call(
        5,
        "liveloop_browser",
        &json!({ "operation": "snapshot", "session": opened[0] }),
    );
    assert_eq!(used["result"]["isError"], false, "{used}");

    mcp.send(
        &json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"liveloop_verify","arguments":{"appUrl": app.url("/")}}})
            .to_string(),
    );
    let mut told = Vec::new();
    let verified = loop {
        let message = mcp.recv();
        if message.get("id").is_some() {
            break message;
        }
        if message["method"] == "notifications/message" {
            told.push(message["params"]["data"].to_string());
        }
    };
    assert_eq!(
        report(&verified)["verdict"],
        "VERIFIED_WITH_WARNINGS",
        "{verified}"
    );
    assert!(
        told.iter()
            .any(|m| m.contains(&opened[1]) && m.contains("least recently used")),
        "the owner is told which preview was closed: {told:?}"
    );
    let listed = mcp.call(7, "liveloop_browser", &json!({ "operation": "list" }));
    let listed = listed["result"]["structuredContent"].to_string();
    assert!(!listed.contains(&opened[1]), "{listed}");
    for kept in [&opened[0], &opened[2], &opened[3]] {
        assert!(listed.contains(kept.as_str()), "{kept} is still open: {listed}");
    }
}
