//! The browser's own floor under `cargo xtask bench browser`'s sequence: the
//! same steps on the same fixture page and Chromium, driven by raw CDP commands
//! with nothing around them (no policy, no observation, no snapshot, no MCP).
//! Each step waits for what dshkit's result promises, no more:
//!
//! - navigate: `Page.navigate`, `DOMContentLoaded`, then a painted frame (a
//!   `requestAnimationFrame` and the task after it);
//! - snapshot: one `Runtime.evaluate` round trip (the wire alone);
//! - click: the element's centre (one evaluate), the mouse events, a painted frame;
//! - screenshot: `Page.captureScreenshot` of the viewport, as dshkit asks for it.
//!
//! What dshkit spends above this floor is its own; what the floor itself costs
//! no tool on this Chromium can avoid while it waits for the same evidence.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench_browser::median;

/// Timed rounds of the raw sequence (after one warm-up round).
const ROUNDS: usize = 10;

/// Resolves once a frame has been painted: a `requestAnimationFrame` and the task after it.
const PAINTED: &str = "new Promise((resolve) => requestAnimationFrame(() => { \
     const channel = new MessageChannel(); channel.port1.onmessage = () => resolve(true); channel.port2.postMessage(0); }))";

/// The centre of the fixture's Add button.
const ADD_CENTRE: &str = "(() => { const r = document.getElementById('add').getBoundingClientRect(); \
     return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; })()";

/// The medians of the raw steps, in the sequence's order (navigate, snapshot,
/// click, screenshot).
pub(crate) struct Floor {
    pub(crate) steps: [Duration; 4],
}

impl Floor {
    pub(crate) fn sequence(&self) -> Duration {
        self.steps.iter().sum()
    }
}

/// Launches `chromium` (dshkit's own launch flags) and times the raw sequence on `url`.
pub(crate) fn measure(chromium: &std::path::Path, url: &str) -> anyhow::Result<Floor> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions {
            executable: Some(chromium.to_owned()),
            ..Default::default()
        })
        .await
        .context("launching Chromium for the floor")?;
        let context = browser.create_context().await?;
        let mut page = browser.create_page(&context).await?;
        for (method, params) in [
            ("Page.enable", json!({})),
            ("Runtime.enable", json!({})),
            (
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false }),
            ),
        ] {
            page.call(method, params).await?;
        }
        let mut steps: [Vec<Duration>; 4] = Default::default();
        for round in 0..=ROUNDS {
            let timed = [
                navigate(&mut page, url).await?,
                timed(page.call("Runtime.evaluate", json!({ "expression": "1" }))).await?,
                click(&page).await?,
                timed(page.call(
                    "Page.captureScreenshot",
                    json!({ "format": "png", "optimizeForSpeed": true }),
                ))
                .await?,
            ];
            if round > 0 {
                for (all, one) in steps.iter_mut().zip(timed) {
                    all.push(one);
                }
            }
        }
        Ok(Floor {
            steps: steps.map(|all| median(&all)),
        })
    })
}

async fn timed(call: impl Future<Output = Result<Value, dshkit_cdp::CdpError>>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    call.await?;
    Ok(started.elapsed())
}

/// Evaluates `expression`, awaiting its promise; fails on an exception.
async fn evaluate(page: &dshkit_cdp::Page, expression: &str) -> anyhow::Result<Value> {
    let reply = page
        .call(
            "Runtime.evaluate",
            json!({ "expression": expression, "awaitPromise": true, "returnByValue": true }),
        )
        .await?;
    anyhow::ensure!(
        reply.get("exceptionDetails").is_none(),
        "{expression} threw: {reply}"
    );
    Ok(reply["result"]["value"].clone())
}

async fn navigate(page: &mut dshkit_cdp::Page, url: &str) -> anyhow::Result<Duration> {
    while page.events.try_recv().is_ok() {}
    let started = Instant::now();
    let reply = page.call("Page.navigate", json!({ "url": url })).await?;
    anyhow::ensure!(reply.get("errorText").is_none(), "navigating to {url}: {reply}");
    loop {
        let event = page.events.recv().await.context("the page closed")?;
        if event.method == "Page.domContentEventFired" {
            break;
        }
    }
    evaluate(page, PAINTED).await?;
    Ok(started.elapsed())
}

async fn click(page: &dshkit_cdp::Page) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let centre = evaluate(page, ADD_CENTRE).await?;
    let (x, y) = (centre["x"].as_f64(), centre["y"].as_f64());
    let (Some(x), Some(y)) = (x, y) else {
        anyhow::bail!("no Add button on the fixture page: {centre}");
    };
    let mouse = |kind: &str| {
        page.call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
        )
    };
    // Both in flight at once: the browser dispatches a page's input in order.
    tokio::try_join!(mouse("mousePressed"), mouse("mouseReleased"))?;
    evaluate(page, PAINTED).await?;
    let took = started.elapsed();
    anyhow::ensure!(
        evaluate(page, "document.getElementById('out').textContent").await? == "added",
        "the raw click did not reach the Add button"
    );
    Ok(took)
}
