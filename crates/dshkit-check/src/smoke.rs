//! The page smoke: the booted DSH page in headless Chromium, observed from before
//! the navigation on.

use std::time::{Duration, Instant};

use dshkit_cdp::{Browser, CdpError, LaunchOptions};
use serde_json::json;

use crate::report::{Check, Status};

/// Longest the page may take to load and render.
pub const DEFAULT_PAGE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long after load the page is observed (`observeMs`).
pub const DEFAULT_PAGE_OBSERVE: Duration = Duration::from_secs(3);
/// Longest observation a caller may ask for.
pub const MAX_PAGE_OBSERVE: Duration = Duration::from_secs(15);

const ID: &str = "page_smoke";
const NAME: &str = "Page renders in Chromium";

/// Opens `url` in a fresh context, observes it for `observe` after load (at most
/// [`MAX_PAGE_OBSERVE`]) and reports exceptions, console and browser-log errors
/// and warnings, the title, `window.__DSH_BOOT__` and its keys, the body text
/// length and plugin markers. No browser, or a browser that fails under us, means
/// `not_tested`, never a failure of the plugin tree.
pub async fn page_smoke(url: &str, launch: &LaunchOptions, observe: Duration) -> Check {
    let observe = observe.min(MAX_PAGE_OBSERVE);
    let browser = match Browser::launch(launch).await {
        Ok(browser) => browser,
        Err(
            e @ (CdpError::NoBrowser(_)
            | CdpError::Spawn { .. }
            | CdpError::EarlyExit { .. }
            | CdpError::LaunchTimeout(_)),
        ) => {
            return Check::new(ID, NAME, Status::NotTested, format!("no usable browser: {e}"));
        }
        Err(e) => {
            return Check::new(
                ID,
                NAME,
                Status::NotTested,
                format!("browser failed to start: {e}"),
            );
        }
    };
    match watch(&browser, url, observe).await {
        Ok(check) => check,
        Err(e) => Check::new(
            ID,
            NAME,
            Status::NotTested,
            format!("the browser failed while loading {url} (not the page's fault): {e}"),
        ),
    }
}

async fn watch(browser: &Browser, url: &str, observe: Duration) -> Result<Check, CdpError> {
    let context = browser.create_context().await?;
    let mut page = browser.create_page(&context).await?;
    // Enabled before navigating, so nothing the boot prints is missed.
    for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
        page.call(domain, json!({})).await?;
    }
    page.call("Page.navigate", json!({ "url": url })).await?;
    let (errors, warnings, loaded) = collect(&mut page, observe).await;
    let facts = page
        .call(
            "Runtime.evaluate",
            json!({ "returnByValue": true, "expression": "({ title: document.title, boot: typeof window.__DSH_BOOT__ !== 'undefined', \
                    text: document.body ? document.body.innerText.trim().length : 0, \
                    markers: document.querySelectorAll('[data-plugin], [data-dsh-plugin]').length, \
                    bootKeys: window.__DSH_BOOT__ && typeof window.__DSH_BOOT__ === 'object' ? Object.keys(window.__DSH_BOOT__).slice(0, 50) : [] })" }),
        )
        .await?;
    let _ = browser.dispose_context(&context).await;
    let facts = &facts["result"]["value"];
    let boot_keys: Vec<&str> = facts["bootKeys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(|k| k.as_str()).collect())
        .unwrap_or_default();
    let summary = format!(
        "title {:?}, __DSH_BOOT__ {}, body text {} chars, {} plugin marker(s), observed {observe:?} after load",
        facts["title"].as_str().unwrap_or(""),
        if facts["boot"] == true {
            format!("present (keys: {})", boot_keys.join(", "))
        } else {
            "absent".to_owned()
        },
        facts["text"],
        facts["markers"]
    );
    let blank = facts["text"].as_u64() == Some(0) && facts["boot"] != true;
    let mut evidence = vec![summary.clone()];
    evidence.extend(errors.iter().cloned());
    evidence.extend(warnings.iter().cloned());
    Ok(if !loaded {
        Check::new(
            ID,
            NAME,
            Status::Fail,
            format!("{url} did not finish loading within {DEFAULT_PAGE_TIMEOUT:?}"),
        )
        .with_evidence(evidence)
    } else if !errors.is_empty() {
        Check::new(
            ID,
            NAME,
            Status::Fail,
            format!("{} error(s) while rendering; {summary}", errors.len()),
        )
        .with_evidence(evidence)
    } else if blank {
        Check::new(ID, NAME, Status::Fail, format!("the page is blank; {summary}")).with_evidence(evidence)
    } else if !warnings.is_empty() {
        Check::new(
            ID,
            NAME,
            Status::Warn,
            format!("{} console warning(s); {summary}", warnings.len()),
        )
        .with_evidence(evidence)
    } else {
        Check::new(ID, NAME, Status::Pass, summary).with_evidence(evidence)
    })
}

/// Collects errors and warnings until the page has loaded and `observe` has
/// passed after that (or the load deadline); returns whether it loaded.
async fn collect(page: &mut dshkit_cdp::Page, observe: Duration) -> (Vec<String>, Vec<String>, bool) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut loaded_at: Option<Instant> = None;
    let started = Instant::now();
    while started.elapsed() < DEFAULT_PAGE_TIMEOUT && loaded_at.is_none_or(|t| t.elapsed() < observe) {
        let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(100), page.events.recv()).await
        else {
            continue;
        };
        let p = &event.params;
        match event.method.as_str() {
            "Page.loadEventFired" => loaded_at = Some(Instant::now()),
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                errors.push(format!(
                    "exception: {} {} ({}:{})",
                    d["text"].as_str().unwrap_or(""),
                    d["exception"]["description"].as_str().unwrap_or(""),
                    d["url"].as_str().unwrap_or(""),
                    d["lineNumber"].as_u64().map_or(0, |l| l + 1)
                ));
            }
            "Runtime.consoleAPICalled" => {
                let text: Vec<String> = p["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| {
                                v["value"].as_str().map_or_else(
                                    || v["description"].as_str().unwrap_or("").to_owned(),
                                    str::to_owned,
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                match p["type"].as_str() {
                    Some("error" | "assert") => errors.push(format!("console.error: {}", text.join(" "))),
                    Some("warning" | "warn") => warnings.push(format!("console.warn: {}", text.join(" "))),
                    _ => {}
                }
            }
            "Log.entryAdded" if p["entry"]["level"] == "error" => {
                errors.push(format!(
                    "browser: {} {}",
                    p["entry"]["text"].as_str().unwrap_or(""),
                    p["entry"]["url"].as_str().unwrap_or("")
                ));
            }
            "Log.entryAdded" if p["entry"]["level"] == "warning" => {
                warnings.push(format!(
                    "browser warning: {} {}",
                    p["entry"]["text"].as_str().unwrap_or(""),
                    p["entry"]["url"].as_str().unwrap_or("")
                ));
            }
            _ => {}
        }
    }
    (errors, warnings, loaded_at.is_some())
}
