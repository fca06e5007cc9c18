//! `dshkit.exe verify` over `--browser-ws`. No registry here has a Windows
//! Chromium, so the Windows build drives the Linux Chromium that `cargo xtask
//! test-windows` launches on loopback (`DSHKIT_WINDOWS_BROWSER_WS`): the
//! preview's network policy, the assertions and the verdict run in
//! `dshkit.exe`, the page in that browser (docs/platforms.md).

use std::path::Path;

use dshkit_test::{Fixture, FixtureServer};
use serde_json::Value;

use super::dshkit;
use super::stock::Stock;

fn browser_ws() -> String {
    std::env::var("DSHKIT_WINDOWS_BROWSER_WS").expect(
        "DSHKIT_WINDOWS_BROWSER_WS names a Chromium's DevTools WebSocket (cargo xtask test-windows sets it)",
    )
}

/// An app whose home page is healthy, whose `/about/` page shows the query it
/// was opened with, and whose `/tracked` page loads an external image.
fn app() -> FixtureServer {
    FixtureServer::start(vec![
        (
            "/",
            Fixture::Html("<!doctype html><title>Home</title><h1>Home page</h1>".into()),
        ),
        (
            "/about/",
            Fixture::Html(
                "<!doctype html><title>About</title><h1>About page</h1><p id=at></p>\
                 <script>document.getElementById('at').textContent = 'at ' + location.search;</script>"
                    .into(),
            ),
        ),
        (
            "/tracked",
            Fixture::Html(
                "<!doctype html><title>Tracked</title><h1>Tracked page</h1>\
                 <img src=http://tracker.example/pixel.png alt=pixel>"
                    .into(),
            ),
        ),
    ])
}

/// `dshkit.exe --json verify ARGS --browser-ws WS` in a stock Windows
/// environment: its exit code and report.
fn verify(stock: &Stock, args: &[&str]) -> (Option<i32>, Value) {
    let out = super::spawn(
        stock
            .apply(dshkit().args(["--json", "verify"]).args(args), &[])
            .args(["--browser-ws", &browser_ws()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    )
    .wait_with_output()
    .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: exit {:?}, stderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

#[test]
fn verify_from_windows_judges_exactly_the_page_named_on_a_remote_chromium() {
    let stock = Stock::new();
    let app = app();
    let named = app.url("/about/?tab=2");

    let (code, report) = verify(
        &stock,
        &[
            &named,
            "--expect-text",
            "About page",
            "--expect-text",
            "at ?tab=2",
        ],
    );
    assert_eq!(report["verdict"], "VERIFIED", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["requestedUrl"], named, "{report:#}");
    assert_eq!(report["loadedUrl"], named, "{report:#}");
    assert_eq!(report["title"], "About", "{report:#}");
    let evidence = stock.local.join("dshkit").join("evidence");
    for path in [&report["reportPath"], &report["screenshot"]["path"]] {
        let path = Path::new(path.as_str().unwrap_or_else(|| panic!("{report:#}")));
        assert!(
            path.is_file() && path.starts_with(&evidence),
            "{} is evidence under {}",
            path.display(),
            evidence.display()
        );
    }

    // The home page's text is not on the page named: a failure, never a pass
    // about another page of the app.
    let (code, report) = verify(&stock, &[&named, "--expect-text", "Home page"]);
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["loadedUrl"], named, "{report:#}");
    assert_eq!(report["assertions"][0]["passed"], false, "{report:#}");
}

#[test]
fn the_windows_build_blocks_an_external_request_in_the_remote_chromium() {
    let stock = Stock::new();
    let app = app();
    let (code, report) = verify(&stock, &[&app.url("/tracked"), "--expect-text", "Tracked page"]);
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(code, Some(1), "{report:#}");
    let blocked = &report["blockedRequests"][0];
    assert_eq!(blocked["url"], "http://tracker.example/pixel.png", "{report:#}");
    assert_eq!(blocked["rule"], "external_host", "{report:#}");
    let reasons = report["reasons"].to_string();
    assert!(
        reasons.contains("1 request(s) blocked by the loopback-only network policy"),
        "{reasons}"
    );
    assert_eq!(report["assertions"][0]["passed"], true, "{report:#}");
}
