//! The verification engine against real Chromium: verdicts, evidence and the
//! reference diff.

use std::path::PathBuf;

use dshkit_liveloop::preview::{PreviewConfig, PreviewManager, Viewport};
use dshkit_liveloop::verify::evidence::EvidenceStore;
use dshkit_liveloop::verify::{
    Assertion, ReferenceSpec, Report, Step, Verdict, VerifyContext, VerifyRequest, verify,
};
use dshkit_test::{Fixture, FixtureServer};

pub(crate) fn context(workspace: &std::path::Path) -> VerifyContext {
    VerifyContext {
        evidence: EvidenceStore::new(workspace.join("evidence")),
        workspace: workspace.to_owned(),
        source_dir: None,
        runtime: None,
        progress: dshkit_liveloop::progress::Progress::default(),
    }
}

fn example_app() -> PathBuf {
    dshkit_test::workspace_root().join("examples/hello-app")
}

fn text(kind: &str, text: &str) -> Assertion {
    match kind {
        "present" => Assertion::TextPresent { text: text.into() },
        _ => Assertion::TextAbsent { text: text.into() },
    }
}

pub(crate) fn step(action: &str, role: &str, name: &str, text: Option<&str>) -> Step {
    Step {
        action: action.into(),
        role: Some(role.into()),
        name: Some(name.into()),
        text: text.map(Into::into),
        ..Step::default()
    }
}

/// Serves the example app from a copy of it, so a test may edit the copy.
fn served_copy(dir: &std::path::Path) -> FixtureServer {
    let mut routes = Vec::new();
    for file in ["index.html", "app.js", "style.css"] {
        let body = std::fs::read_to_string(dir.join(file)).unwrap();
        let fixture = match file {
            "index.html" => Fixture::Html(body),
            "app.js" => Fixture::Js(body),
            _ => Fixture::Css(body),
        };
        routes.push((
            if file == "index.html" {
                "/".to_owned()
            } else {
                format!("/{file}")
            },
            fixture,
        ));
    }
    FixtureServer::start(routes.iter().map(|(p, f)| (p.as_str(), f.clone())).collect())
}

#[tokio::test]
async fn the_example_app_is_verified_with_steps_assertions_and_persisted_evidence() {
    let workspace = tempfile::tempdir().unwrap();
    let server = served_copy(&example_app());
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let request = VerifyRequest {
        steps: vec![
            step("fill", "textbox", "New task", Some("Water the plants")),
            step("click", "button", "Add task", None),
        ],
        assertions: vec![
            text("present", "Water the plants"),
            text("present", "1 task"),
            text("absent", "No tasks yet"),
            Assertion::Element {
                role: "heading".into(),
                name: "Task list".into(),
            },
            Assertion::Title {
                contains: "task list".into(),
            },
            Assertion::Status { code: 200 },
            // The app has no favicon: the browser's own 404 for it is not the app's.
            Assertion::NoFailedRequests,
        ],
        ..VerifyRequest::default()
    };
    let report = verify(&session, &request, &context(workspace.path()))
        .await
        .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Verified, "{report:#?}");
    assert!(
        report.assertions.iter().all(|a| a.passed),
        "{:#?}",
        report.assertions
    );
    assert_eq!(report.steps.len(), 2);
    let shot = report.screenshot.as_ref().unwrap();
    let png = std::fs::read(&shot.file.path).unwrap();
    assert_eq!(png.len() as u64, shot.file.bytes);
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.report_path.as_ref().unwrap()).unwrap()).unwrap();
    assert_eq!(saved["verdict"], "VERIFIED");
    assert_eq!(saved["formatVersion"], 1);
    assert_eq!(saved["screenshot"]["sha256"], shot.file.sha256);
    let shown = html_report_opens_in_chromium(report.html_path.as_ref().unwrap(), "VERIFIED").await;
    assert_eq!(
        shown["figures"][0]["caption"], "Screenshot",
        "{}",
        shown["figures"]
    );
    assert_eq!(shown["figures"][0]["src"], data_url(&shot.file.path).as_str());
    assert_eq!(
        shown["figures"].as_array().map(Vec::len),
        Some(1),
        "the screenshot once"
    );
    // A later verification starts from a fresh load (the task added above is gone)
    // and its steps resolve against the new page, not the old snapshot.
    let again = verify(
        &session,
        &VerifyRequest {
            steps: vec![
                step("fill", "textbox", "New task", Some("Call the bank")),
                step("click", "button", "Add task", None),
            ],
            assertions: vec![text("present", "1 task"), text("absent", "Water the plants")],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(again.judgement.verdict, Verdict::Verified, "{again:#?}");
    // Without criteria a clean page is only VERIFIED_WITH_WARNINGS.
    let bare = verify(&session, &VerifyRequest::default(), &context(workspace.path()))
        .await
        .unwrap();
    assert_eq!(bare.judgement.verdict, Verdict::VerifiedWithWarnings);
}

#[tokio::test]
async fn a_runtime_error_or_absent_text_fails_with_where_to_look() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FixtureServer::start(vec![
        (
            "/",
            Fixture::Html(
                "<!doctype html><title>t</title><h1>Broken</h1><script src=\"/app.js\"></script>".into(),
            ),
        ),
        ("/app.js", Fixture::Js("const ok = 1;\nrenderList(ok);\n".into())),
    ]);
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let report = verify(
        &session,
        &VerifyRequest {
            assertions: vec![text("present", "Broken")],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Failed, "{report:#?}");
    let first = &report.judgement.reasons[0];
    assert!(first.contains("renderList is not defined"), "{first}");
    assert!(first.contains("/app.js:2:"), "the location is named: {first}");
    assert!(
        report.judgement.next_action.contains("renderList"),
        "{}",
        report.judgement.next_action
    );

    let absent = verify(
        &session,
        &VerifyRequest {
            assertions: vec![text("present", "Saved!")],
            allow_console_errors: true,
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(absent.judgement.verdict, Verdict::Failed);
    assert!(
        absent.judgement.reasons[0].contains("\"Saved!\""),
        "{:?}",
        absent.judgement.reasons
    );
}

#[tokio::test]
async fn an_app_that_throws_while_loading_and_renders_nothing_fails_at_the_exception() {
    // A failure needs no screenshot to be proven: the exception is observed.
    let workspace = tempfile::tempdir().unwrap();
    let server = FixtureServer::start(vec![
        (
            "/",
            Fixture::Html("<!doctype html><title>t</title><script src=\"/app.js\"></script>".into()),
        ),
        (
            "/app.js",
            Fixture::Js("const items = null;\ndocument.title = items.length;\n".into()),
        ),
    ]);
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let report = verify(
        &session,
        &VerifyRequest {
            steps: vec![step("click", "button", "Add task", None)],
            assertions: vec![text("present", "Tasks")],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Failed, "{report:#?}");
    let first = &report.judgement.reasons[0];
    assert!(
        first.starts_with("uncaught exception"),
        "the exception comes first: {first}"
    );
    assert!(first.contains("reading 'length'"), "{first}");
    assert!(first.contains("/app.js:2:"), "with its location: {first}");
    assert!(
        report.judgement.next_action.contains("/app.js:2:"),
        "{}",
        report.judgement.next_action
    );
    assert!(
        report
            .judgement
            .reasons
            .iter()
            .any(|r| r.contains("byte-identical")),
        "the missing success evidence is still said: {:?}",
        report.judgement.reasons
    );
}

#[tokio::test]
async fn a_reference_update_that_cannot_be_written_is_not_a_pass() {
    let workspace = tempfile::tempdir().unwrap();
    // The reference path is a directory: the rename of the new PNG onto it fails.
    std::fs::create_dir(workspace.path().join("reference.png")).unwrap();
    let server = served_copy(&example_app());
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let report = verify(
        &session,
        &VerifyRequest {
            assertions: vec![text("present", "Task list")],
            reference: Some(ReferenceSpec {
                path: "reference.png".into(),
                max_mismatch_ratio: None,
                update: true,
            }),
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Unverified, "{report:#?}");
    assert!(
        report
            .judgement
            .reasons
            .iter()
            .any(|r| r.contains("reference diff (or update) did not complete")),
        "{:?}",
        report.judgement.reasons
    );
    assert!(
        report
            .diff
            .as_ref()
            .is_some_and(|d| d.note.contains("could not write the reference")),
        "{:?}",
        report.diff
    );
}

#[tokio::test]
async fn a_page_that_renders_nothing_is_not_proof() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FixtureServer::start(vec![(
        "/",
        Fixture::Html("<!doctype html><title>t</title>".into()),
    )]);
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let report = verify(
        &session,
        &VerifyRequest {
            assertions: vec![text("absent", "error")],
            ..VerifyRequest::default()
        },
        &context(workspace.path()),
    )
    .await
    .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Unverified, "{report:#?}");
    assert!(
        report.judgement.reasons[0].contains("byte-identical"),
        "{:?}",
        report.judgement.reasons
    );
}

#[tokio::test]
async fn a_reference_round_trip_passes_unchanged_and_fails_changed_with_a_diff_image() {
    let workspace = tempfile::tempdir().unwrap();
    let app = workspace.path().join("app");
    std::fs::create_dir(&app).unwrap();
    for file in ["index.html", "app.js", "style.css"] {
        std::fs::copy(example_app().join(file), app.join(file)).unwrap();
    }
    let reference = ReferenceSpec {
        path: "reference.png".into(),
        max_mismatch_ratio: None,
        update: false,
    };
    let previews = PreviewManager::new(PreviewConfig::default());
    let ctx = context(workspace.path());

    let server = served_copy(&app);
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let missing = verify(
        &session,
        &VerifyRequest {
            reference: Some(reference.clone()),
            ..VerifyRequest::default()
        },
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(
        missing.judgement.verdict,
        Verdict::Unverified,
        "a requested diff that cannot complete is no proof"
    );
    let created = verify(
        &session,
        &VerifyRequest {
            reference: Some(ReferenceSpec {
                update: true,
                ..reference.clone()
            }),
            ..VerifyRequest::default()
        },
        &ctx,
    )
    .await
    .unwrap();
    assert!(workspace.path().join("reference.png").is_file(), "{created:#?}");
    let unchanged = verify(
        &session,
        &VerifyRequest {
            reference: Some(reference.clone()),
            ..VerifyRequest::default()
        },
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(unchanged.judgement.verdict, Verdict::Verified, "{unchanged:#?}");
    assert_eq!(unchanged.diff.as_ref().unwrap().mismatch_ratio, Some(0.0));

    let edited = std::fs::read_to_string(app.join("index.html"))
        .unwrap()
        .replace("Task list", "Shopping list");
    std::fs::write(app.join("index.html"), edited).unwrap();
    let changed_server = served_copy(&app);
    let changed_session = previews
        .open("t", &changed_server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let changed = verify(
        &changed_session,
        &VerifyRequest {
            reference: Some(reference),
            ..VerifyRequest::default()
        },
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(changed.judgement.verdict, Verdict::Failed, "{changed:#?}");
    let diff = changed.diff.as_ref().unwrap();
    assert!(diff.mismatch_ratio.unwrap() > 0.0);
    shows_reference_current_and_diff(&changed, &workspace.path().join("reference.png")).await;

    let outside = verify(
        &changed_session,
        &VerifyRequest {
            reference: Some(ReferenceSpec {
                path: "../outside.png".into(),
                max_mismatch_ratio: None,
                update: true,
            }),
            ..VerifyRequest::default()
        },
        &ctx,
    )
    .await;
    assert!(outside.is_err(), "a reference outside the workspace is refused");
}

#[tokio::test]
async fn concurrent_verifications_of_one_session_run_one_at_a_time() {
    let workspace = tempfile::tempdir().unwrap();
    let server = served_copy(&example_app());
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let ctx = context(workspace.path());
    let request = VerifyRequest {
        assertions: vec![text("present", "No tasks yet")],
        ..VerifyRequest::default()
    };
    let (a, b) = tokio::join!(verify(&session, &request, &ctx), verify(&session, &request, &ctx));
    for report in [a.unwrap(), b.unwrap()] {
        assert_eq!(report.judgement.verdict, Verdict::Verified, "{report:#?}");
    }
}

/// Opens the report for people in a fresh Chromium (a file URL, no server) whose
/// zone is Asia/Kolkata and language en-US, checks its verdict, that every image
/// renders, that nothing runs but its own local-time script and that the time is
/// shown in the reader's zone; returns what it shows (`figures`: each one's role,
/// caption and image source; `steps`: each timeline step's text, duration and
/// image width; `console` and `network`: the lists' cells).
pub(crate) async fn html_report_opens_in_chromium(
    path: &std::path::Path,
    verdict: &str,
) -> serde_json::Value {
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let context = browser.create_context().await.unwrap();
    let page = browser.create_page(&context).await.unwrap();
    page.call(
        "Emulation.setTimezoneOverride",
        serde_json::json!({ "timezoneId": "Asia/Kolkata" }),
    )
    .await
    .unwrap();
    page.call(
        "Emulation.setLocaleOverride",
        serde_json::json!({ "locale": "en-US" }),
    )
    .await
    .unwrap();
    let url = url::Url::from_file_path(path).unwrap();
    page.call("Page.navigate", serde_json::json!({ "url": url.as_str() }))
        .await
        .unwrap();
    let probe = "JSON.stringify(document.readyState === 'complete' && [...document.images].every((i) => i.complete) ? { \
        verdict: document.getElementById('verdict')?.textContent, \
        images: [...document.images].map((i) => i.naturalWidth), \
        figures: [...document.querySelectorAll('figure')].map((f) => ({ role: f.dataset.role, \
            caption: f.querySelector('figcaption')?.textContent, src: f.querySelector('img')?.getAttribute('src') })), \
        steps: [...document.querySelectorAll('#timeline tr.step')].map((r) => ({ text: r.textContent, \
            ms: r.querySelector('.ms')?.textContent, image: r.querySelector('img')?.naturalWidth ?? 0 })), \
        assertions: [...document.querySelectorAll('#timeline tr.assertion')].map((r) => r.textContent), \
        console: [...document.querySelectorAll('#console td')].map((td) => td.textContent), \
        network: [...document.querySelectorAll('#network td')].map((td) => td.textContent), \
        created: document.getElementById('created-at')?.textContent, \
        createdUtc: document.getElementById('created-at')?.title, \
        pwned: window.pwned ?? null, title: document.title, \
        scripts: document.scripts.length } : null)";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let seen = loop {
        let value = page
            .call(
                "Runtime.evaluate",
                serde_json::json!({ "expression": probe, "returnByValue": true }),
            )
            .await
            .unwrap();
        let parsed: serde_json::Value =
            serde_json::from_str(value["result"]["value"].as_str().unwrap_or("null")).unwrap();
        if !parsed.is_null() {
            break parsed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the HTML report never finished loading"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(seen["verdict"], verdict, "{seen}");
    let images = seen["images"].as_array().unwrap();
    assert!(
        !images.is_empty() && images.iter().all(|w| w.as_u64() > Some(0)),
        "inline images render: {seen}"
    );
    assert_eq!(seen["scripts"], 1, "only the report's own script: {seen}");
    assert_eq!(
        seen["pwned"],
        serde_json::Value::Null,
        "nothing of the page ran: {seen}"
    );
    let utc = seen["createdUtc"].as_str().unwrap_or_default();
    assert!(
        utc.ends_with(" GMT") && utc.len() > 20,
        "the UTC date is kept: {utc:?}"
    );
    let created = seen["created"].as_str().unwrap_or_default();
    assert!(
        created.ends_with("GMT+5:30") && created.contains(", 20"),
        "the date in the reader's zone: {created:?}"
    );
    seen
}

/// The report for people of a failed reference diff puts the three side by side:
/// the reference on disk, what the page looks like now, and their difference; each once.
async fn shows_reference_current_and_diff(report: &Report, reference: &std::path::Path) {
    let diff = report.diff.as_ref().unwrap();
    let image = std::fs::read(&diff.diff.as_ref().unwrap().path).unwrap();
    assert!(
        image.starts_with(b"\x89PNG"),
        "the diff image is kept as evidence"
    );
    let shown = html_report_opens_in_chromium(report.html_path.as_ref().unwrap(), "FAILED").await;
    let figures = shown["figures"].as_array().unwrap();
    let captions: Vec<_> = figures
        .iter()
        .map(|f| f["caption"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(captions, ["Reference", "Current", "Diff"], "{captions:?}");
    let sources: Vec<_> = figures
        .iter()
        .map(|f| f["src"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(sources[0], data_url(reference), "Reference is the reference file");
    assert_eq!(
        sources[1],
        data_url(&diff.current.as_ref().unwrap().path),
        "Current is this page"
    );
    assert_eq!(
        sources[2],
        data_url(&diff.diff.as_ref().unwrap().path),
        "Diff is the diff image"
    );
    assert_ne!(
        sources[0], sources[1],
        "the changed page is not shown as its reference"
    );
}

/// The image `file` as the report inlines it.
fn data_url(file: &std::path::Path) -> String {
    use base64::Engine as _;
    let png = std::fs::read(file).unwrap();
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

#[tokio::test]
async fn what_the_previous_page_throws_while_it_is_replaced_is_not_the_new_pages() {
    // Like React rendering into a document whose head is gone: the page throws as
    // soon as the verification wipes it, before the fresh load replaces it.
    let page = "<!doctype html><html><head><title>steady</title></head><body><p>steady page</p>\
        <script>setInterval(() => { if (!document.head) throw new Error('the old page lost its head'); }, 1);</script>\
        </body></html>";
    let server = FixtureServer::start(vec![("/", Fixture::Html(page.into()))]);
    let workspace = tempfile::tempdir().unwrap();
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let request = VerifyRequest {
        assertions: vec![text("present", "steady page"), Assertion::NoConsoleErrors],
        ..VerifyRequest::default()
    };
    for round in 0..3 {
        let report = verify(&session, &request, &context(workspace.path()))
            .await
            .unwrap();
        assert_eq!(
            report.judgement.verdict,
            Verdict::Verified,
            "round {round}: {:#?}",
            report.console_errors
        );
    }
}

/// Serves a page at `/` and leaves every other path without a response, the
/// connection held open: a dev server stuck on a page. Returns the origin.
fn server_silent_but_for_the_root() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut unanswered = Vec::new();
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut head = [0u8; 4096];
            let read = stream.read(&mut head).unwrap_or(0);
            if head[..read].starts_with(b"GET / ") {
                let body = "<!doctype html><title>root</title><p>root page</p>";
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            } else {
                unanswered.push(stream);
            }
        }
    });
    origin
}

#[tokio::test]
async fn a_server_that_never_answers_is_named_within_the_deadline_and_the_session_goes_on() {
    let origin = server_silent_but_for_the_root();
    let workspace = tempfile::tempdir().unwrap();
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &format!("{origin}/"), Viewport::Desktop)
        .await
        .unwrap();
    let stuck = VerifyRequest {
        url: Some("/stuck".into()),
        deadline_ms: Some(3000),
        ..VerifyRequest::default()
    };
    let report = verify(&session, &stuck, &context(workspace.path()))
        .await
        .unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Unverified, "{report:#?}");
    let reason = report.judgement.reasons.last().unwrap();
    assert!(
        reason.starts_with("TIMEOUT: the server sent no response to the navigation to")
            && reason.contains("/stuck"),
        "the verification's deadline bounds the wait for the server, and the error names it: {:?}",
        report.judgement.reasons
    );
    let root = VerifyRequest {
        url: Some("/".into()),
        assertions: vec![text("present", "root page")],
        ..VerifyRequest::default()
    };
    let report = verify(&session, &root, &context(workspace.path())).await.unwrap();
    assert_eq!(report.judgement.verdict, Verdict::Verified, "{report:#?}");
}
