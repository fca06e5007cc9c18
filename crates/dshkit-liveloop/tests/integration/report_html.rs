//! The report for people of a real verification with steps, opened in real
//! Chromium: the timeline of steps and assertions with their durations and the
//! page after each step, the console and network lists with the page's text
//! shown as text, and the time in the reader's zone.

use dshkit_liveloop::preview::{PreviewConfig, PreviewManager, Viewport};
use dshkit_liveloop::verify::{Assertion, Verdict, VerifyRequest, verify};
use dshkit_test::{Fixture, FixtureServer};

use crate::verify::{context, html_report_opens_in_chromium, step};

/// What the page logs: markup that would run if the report took it as HTML.
const HOSTILE: &str = "<img src=x onerror=\"window.pwned=1;document.title='pwned'\">";

fn page() -> FixtureServer {
    let html = format!(
        "<!doctype html><title>Greeter</title><h1>Greeter</h1>\
         <label>Name <input aria-label=\"Name\"></label>\
         <button onclick=\"document.getElementById('out').textContent = 'Hi ' + document.querySelector('input').value\">Greet</button>\
         <p id=out></p><script>console.error({})</script><script src=\"/missing.js\"></script>",
        serde_json::to_string(HOSTILE).unwrap()
    );
    FixtureServer::start(vec![("/", Fixture::Html(html))])
}

#[tokio::test]
async fn the_report_shows_each_step_with_its_time_and_page_and_the_pages_console_and_404_as_text() {
    let workspace = tempfile::tempdir().unwrap();
    let server = page();
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let context = context(workspace.path());
    let request = VerifyRequest {
        steps: vec![
            step("fill", "textbox", "Name", Some("Ann")),
            step("click", "button", "Greet", None),
            step("fill", "textbox", "Name", Some("Bob")),
        ],
        assertions: vec![Assertion::TextPresent {
            text: "Hi Ann".into(),
        }],
        step_screenshots: Some(true),
        ..VerifyRequest::default()
    };
    let report = verify(&session, &request, &context).await.unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Failed, "{report:#?}");

    // Each step's page is evidence beside the report, named in its JSON.
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.report_path.as_ref().unwrap()).unwrap()).unwrap();
    let steps = saved["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{saved:#}");
    let report_dir = report.report_path.as_ref().unwrap().parent().unwrap();
    let mut shots = Vec::new();
    for step in steps {
        let file = std::path::PathBuf::from(step["screenshot"]["path"].as_str().unwrap());
        assert_eq!(file.parent(), Some(report_dir), "{step}");
        assert!(std::fs::read(&file).unwrap().starts_with(b"\x89PNG"), "{step}");
        shots.push(file);
    }
    assert_ne!(shots[0], shots[1], "the click changed the page: {shots:?}");
    assert!(
        saved["timings"]["stepScreenshotsMs"].as_u64().is_some(),
        "{saved:#}"
    );

    let shown = html_report_opens_in_chromium(report.html_path.as_ref().unwrap(), "FAILED").await;
    let rows = shown["steps"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{shown}");
    for (row, outcome) in rows.iter().zip(&report.steps) {
        assert_eq!(row["ms"], outcome.ms.to_string(), "{row}");
        assert!(row["text"].as_str().unwrap().contains(&outcome.step), "{row}");
        assert!(row["image"].as_u64() > Some(0), "the step's page renders: {row}");
    }
    let assertions = shown["assertions"].as_array().unwrap();
    assert!(
        assertions[0].as_str().unwrap().contains("Hi Ann")
            && assertions[0].as_str().unwrap().contains("passed"),
        "{shown}"
    );
    let console = shown["console"].as_array().unwrap();
    assert!(
        console.iter().any(|cell| cell == HOSTILE),
        "the logged markup is shown as text: {console:?}"
    );
    let network: Vec<&str> = shown["network"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let missing = server.url("/missing.js");
    let at = network
        .iter()
        .position(|cell| *cell == missing)
        .expect("the 404 is listed");
    assert_eq!(network[at + 1], "404", "{network:?}");
    assert_ne!(shown["title"], "pwned", "{shown}");
    previews.shutdown().await;
}

#[tokio::test]
async fn without_the_request_no_step_is_screenshot() {
    let workspace = tempfile::tempdir().unwrap();
    let server = page();
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let context = context(workspace.path());
    let request = VerifyRequest {
        steps: vec![step("click", "button", "Greet", None)],
        allow_console_errors: true,
        allow_failed_requests: true,
        ..VerifyRequest::default()
    };
    let report = verify(&session, &request, &context).await.unwrap();
    assert!(report.steps[0].screenshot.is_none(), "{report:#?}");
    assert_eq!(report.timings.step_screenshots_ms, 0);
    let html = std::fs::read_to_string(report.html_path.as_ref().unwrap()).unwrap();
    assert!(html.contains("<tr class=\"step\""), "the step is in the timeline");
    assert!(
        !html.contains("the page after it"),
        "no column of pages none was taken of"
    );
    previews.shutdown().await;
}
