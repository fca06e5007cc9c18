//! The CDP client against real Chromium.

use std::time::{Duration, Instant};

use base64::Engine;
use dshkit_cdp::{Browser, CdpError, Event, LaunchOptions, Page};
use serde_json::{Value, json};

async fn launch() -> Browser {
    Browser::launch(&LaunchOptions::default())
        .await
        .expect("Chromium launches (run `cargo xtask setup` if it is missing)")
}

/// Waits for the first event named `method` on `page`.
async fn wait_for(page: &mut Page, method: &str) -> Event {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = page
                .events
                .recv()
                .await
                .expect("page events end only with the page");
            if event.method == method {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {method} within 20 s"))
}

async fn navigate(page: &mut Page, url: &str) {
    page.call("Page.enable", json!({})).await.unwrap();
    page.call("Page.navigate", json!({ "url": url })).await.unwrap();
    wait_for(page, "Page.loadEventFired").await;
}

async fn title(page: &Page) -> Value {
    page.call(
        "Runtime.evaluate",
        json!({ "expression": "document.title", "returnByValue": true }),
    )
    .await
    .unwrap()["result"]["value"]
        .clone()
}

#[tokio::test]
async fn a_launched_browser_renders_a_page_and_cleans_up_after_itself() {
    let browser = launch().await;
    assert!(browser.product().contains("Chrome"), "{}", browser.product());
    let profile = browser.process().unwrap().profile_dir().unwrap().to_owned();
    let pid = browser.process().unwrap().pid();
    assert!(profile.is_dir());
    // Chromium's singleton socket directory lives inside the profile, so it goes with it.
    let socket =
        std::fs::read_link(profile.join("SingletonSocket")).expect("Chromium made its singleton socket");
    assert!(
        socket.starts_with(profile.join(dshkit_cdp::PROFILE_TEMP)),
        "{} is outside the profile",
        socket.display()
    );

    let context = browser.create_context().await.unwrap();
    let mut page = browser.create_page(&context).await.unwrap();
    navigate(
        &mut page,
        "data:text/html,<title>dshkit fixture</title><h1>hello</h1>",
    )
    .await;
    assert_eq!(title(&page).await, "dshkit fixture");

    let shot = page
        .call("Page.captureScreenshot", json!({ "format": "png" }))
        .await
        .unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    browser.dispose_context(&context).await.unwrap();
    drop(page);
    drop(browser);
    assert!(!profile.exists(), "the temporary profile must be removed");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie_or_gone(pid),
        "Chromium {pid} still runs"
    );
}

fn is_zombie_or_gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn protocol_errors_and_timeouts_are_clear_and_the_connection_survives_them() {
    let browser = launch().await;
    let err = browser
        .connection()
        .call("Nope.notAMethod", json!({}), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CdpError::Protocol { code: -32601, .. }), "{err}");

    let context = browser.create_context().await.unwrap();
    let page = browser.create_page(&context).await.unwrap();
    let never = json!({ "expression": "new Promise(() => {})", "awaitPromise": true });
    let err = page
        .call_with_timeout("Runtime.evaluate", never, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(err, CdpError::Timeout { .. }), "{err}");
    let two = page
        .call(
            "Runtime.evaluate",
            json!({ "expression": "1 + 1", "returnByValue": true }),
        )
        .await
        .unwrap();
    assert_eq!(two["result"]["value"], 2);
}

#[tokio::test]
async fn a_killed_browser_gives_disconnected_and_a_relaunch_works() {
    let browser = launch().await;
    let pid = dshkit_os::process::Identity::of(browser.process().unwrap().pid()).unwrap();
    assert!(pid.kill());
    let deadline = Instant::now() + Duration::from_secs(10);
    let err = loop {
        match browser
            .connection()
            .call("Browser.getVersion", json!({}), None)
            .await
        {
            Err(err) => break err,
            Ok(_) => assert!(Instant::now() < deadline, "the dead browser still answers"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(err.is_disconnect(), "{err}");
    drop(browser);
    let again = launch().await;
    assert!(
        again
            .connection()
            .call("Browser.getVersion", json!({}), None)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn an_existing_endpoint_is_used_over_ws_and_http() {
    let owner = launch().await;
    let ws_url = owner.process().unwrap().ws_url().to_owned();
    let http_base = ws_url
        .replacen("ws://", "http://", 1)
        .split("/devtools")
        .next()
        .unwrap()
        .to_owned();
    for remote in [
        Browser::connect_ws(&ws_url).await.unwrap(),
        Browser::connect_http(&http_base).await.unwrap(),
    ] {
        assert!(
            remote.process().is_none(),
            "a connected browser is not ours to kill"
        );
        let context = remote.create_context().await.unwrap();
        let mut page = remote.create_page(&context).await.unwrap();
        navigate(&mut page, "data:text/html,<title>remote</title>").await;
        assert_eq!(title(&page).await, "remote");
        remote.dispose_context(&context).await.unwrap();
    }
}

/// Run as a child by the test below: launches Chromium, reports its profile on
/// stdout, then waits to be killed.
#[tokio::test]
#[ignore = "helper: run by sigkill_of_the_owner_leaves_no_chromium_behind"]
#[expect(
    clippy::print_stdout,
    reason = "the helper reports to its parent test on stdout"
)]
async fn hold_a_browser_until_killed() {
    let browser = launch().await;
    println!(
        "PROFILE={}",
        browser.process().unwrap().profile_dir().unwrap().display()
    );
    tokio::time::sleep(Duration::from_mins(10)).await;
}

#[test]
fn sigkill_of_the_owner_leaves_no_chromium_behind() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hold_a_browser_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let profile = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("PROFILE=").map(str::to_owned))
        .expect("the helper reports its browser profile");
    assert!(
        !browser_processes(&profile).is_empty(),
        "the helper's Chromium is running"
    );
    child.kill().unwrap(); // SIGKILL: no destructor runs in the owner.
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !browser_processes(&profile).is_empty() {
        assert!(
            Instant::now() < deadline,
            "Chromium outlived its killed owner: {:?}",
            browser_processes(&profile)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing of the killed owner removed its profile; the next launch's sweep does
    // (a concurrent test's launch may sweep it first).
    let profile = std::path::Path::new(&profile);
    dshkit_cdp::sweep_stale_profiles(profile.parent().unwrap());
    assert!(!profile.exists(), "the stale profile was swept");
}

fn browser_processes(profile: &str) -> Vec<u32> {
    dshkit_test::processes_mentioning(profile)
}
