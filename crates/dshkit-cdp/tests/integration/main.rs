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
    // The full browser's singleton socket directory lives inside the profile, so
    // it goes with it. The headless shell makes none.
    let headless_shell = match dshkit_env::locate::chromium(&dshkit_env::Environment::from_process()) {
        dshkit_env::locate::Lookup::Found(found) => found.path.ends_with("chromium-headless-shell"),
        _ => false,
    };
    match std::fs::read_link(profile.join("SingletonSocket")) {
        Ok(socket) => assert!(
            socket.starts_with(profile.join(dshkit_cdp::PROFILE_TEMP)),
            "{} is outside the profile",
            socket.display()
        ),
        Err(err) => assert!(headless_shell, "the full browser made no singleton socket: {err}"),
    }

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
        .commands()
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

/// A stand-in executable: a shell script that counts its starts in `starts`,
/// then runs `body` (where `$CHROMIUM` is the real browser).
#[cfg(unix)]
fn browser_script(dir: &std::path::Path, body: &str) -> LaunchOptions {
    use std::os::unix::fs::PermissionsExt as _;
    let real = match dshkit_env::locate::chromium(&dshkit_env::Environment::from_process()) {
        dshkit_env::locate::Lookup::Found(found) => found.path,
        _ => panic!("Chromium is missing (run `cargo xtask setup`)"),
    };
    let script = dir.join("chromium");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nCHROMIUM='{}'\necho start >> '{}'\n{body}\n",
            real.display(),
            dir.join("starts").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    LaunchOptions {
        executable: Some(script),
        ..LaunchOptions::default()
    }
}

#[cfg(unix)]
fn starts(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap()
        .lines()
        .count()
}

#[cfg(unix)]
#[tokio::test]
async fn a_browser_that_crashes_while_starting_is_started_again() {
    let dir = tempfile::tempdir().unwrap();
    // The first start dies of SIGSEGV before it prints its endpoint, as Chromium
    // itself now and then does; the second is the real browser.
    let options = browser_script(
        dir.path(),
        "[ \"$(wc -l < \"$(dirname \"$0\")/starts\")\" -eq 1 ] && kill -SEGV $$\nexec \"$CHROMIUM\" \"$@\"",
    );
    let browser = Browser::launch(&options)
        .await
        .expect("the second start is ready");
    assert!(browser.product().contains("Chrome"), "{}", browser.product());
    assert_eq!(starts(dir.path()), 2);
}

#[cfg(unix)]
#[tokio::test]
async fn a_browser_that_crashes_on_every_start_is_reported_with_its_signal_after_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let options = browser_script(dir.path(), "echo 'about to crash' >&2\nkill -SEGV $$");
    let err = Browser::launch(&options).await.expect_err("every start crashes");
    let CdpError::EarlyExit {
        crashed,
        starts: made,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert!(crashed, "{err}");
    assert_eq!(*made, 3, "{err}");
    assert_eq!(starts(dir.path()), 3);
    let message = err.to_string();
    assert!(
        message.contains("SIGSEGV")
            && message.contains("on start 3 after 2 crashed")
            && message.contains("about to crash"),
        "{message}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_browser_that_exits_with_a_status_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let options = browser_script(dir.path(), "echo 'unknown flag' >&2\nexit 3");
    let err = Browser::launch(&options).await.expect_err("the start fails");
    assert!(
        matches!(
            err,
            CdpError::EarlyExit {
                crashed: false,
                starts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(starts(dir.path()), 1, "a status of its own is not retried");
    let message = err.to_string();
    assert!(
        message.contains("exit status: 3") && message.contains("unknown flag"),
        "{message}"
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

/// A pool that holds a connection's upgrade (its queue) never hangs a client:
/// past the admission deadline the connect fails, naming the endpoint and not
/// its token.
#[tokio::test]
async fn a_connection_no_endpoint_admits_fails_at_its_deadline_without_showing_the_token() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        // Accepted and read, never answered: a queued upgrade.
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 4096];
        let n = tokio::io::AsyncReadExt::read(&mut socket, &mut request)
            .await
            .unwrap();
        let request = String::from_utf8_lossy(&request[..n]).into_owned();
        std::future::pending::<()>().await;
        request
    });
    let token = "queued-secret-token";
    let endpoint = dshkit_cdp::Endpoint::new(format!("ws://127.0.0.1:{port}/chromium?token=also-secret"))
        .with_token(dshkit_cdp::Secret::new(token))
        .with_admit_deadline(Duration::from_millis(300));
    let error = Browser::connect(&endpoint).await.unwrap_err();
    assert!(matches!(error, CdpError::AdmitTimeout { .. }), "{error:?}");
    assert_eq!(error.code(), "BROWSER_POOL_TIMEOUT");
    assert!(error.is_not_admitted());
    let message = error.to_string();
    assert!(
        message.contains(&format!("ws://127.0.0.1:{port}/chromium?token=<redacted>")),
        "{message}"
    );
    for secret in [token, "also-secret"] {
        assert!(!message.contains(secret), "{message}");
        assert!(!format!("{error:?}").contains(secret), "{error:?}");
    }
    held.abort();
}

/// An endpoint that answers the upgrade with HTTP (a full pool's 429) is a
/// refusal carrying the engine's words, and the token went as a bearer header.
#[tokio::test]
async fn a_refused_upgrade_carries_the_engines_reason_and_the_token_went_as_a_header() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 4096];
        let n = tokio::io::AsyncReadExt::read(&mut socket, &mut request)
            .await
            .unwrap();
        tokio::io::AsyncWriteExt::write_all(
            &mut socket,
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\n\r\nToo many requests",
        )
        .await
        .unwrap();
        String::from_utf8_lossy(&request[..n]).into_owned()
    });
    let endpoint = dshkit_cdp::Endpoint::new(format!("ws://127.0.0.1:{port}/chromium"))
        .with_token(dshkit_cdp::Secret::new("header-secret"));
    let error = Browser::connect(&endpoint).await.unwrap_err();
    assert_eq!(error.code(), "BROWSER_POOL_REFUSED", "{error}");
    assert_eq!(
        error.to_string(),
        format!(
            "the browser endpoint ws://127.0.0.1:{port}/chromium refused the connection: HTTP 429: Too many requests"
        )
    );
    let request = served.await.unwrap();
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer header-secret"),
        "{request}"
    );
}
