//! Preview sessions against real Chromium and loopback fixture servers.

mod readiness;
mod report_html;
mod runtime;
mod shadow;
mod verify;

use std::net::IpAddr;
use std::sync::Arc;

use dshkit_liveloop::preview::{
    Action, BlockReason, BrowserSource, ConsoleSource, Eviction, PreviewConfig, PreviewManager,
    PreviewSession, Resolver, Target, Viewport,
};
use dshkit_test::{Fixture, FixtureServer};

const OWNER: &str = "client-a";

fn manager() -> PreviewManager {
    PreviewManager::new(PreviewConfig::default())
}

/// A click on the button named `name`, as the model asks for it.
fn click_button(name: &str) -> Action {
    Action::Click(Target::RoleName {
        role: "button".into(),
        name: name.into(),
    })
}

fn html(body: &str) -> Fixture {
    Fixture::Html(format!(
        "<!doctype html><html><head><title>fixture</title></head><body>{body}</body></html>"
    ))
}

/// The page text of `session` once `done` holds for it, or its last text after
/// about 10 s of looking (the caller's assertion then shows it).
async fn text_when(session: &PreviewSession, done: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    for _ in 0..200 {
        text = session.snapshot().await.unwrap().text;
        if done(&text) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    text
}

fn blocked(session: &PreviewSession) -> Vec<(String, BlockReason)> {
    session.observe(|o| {
        o.blocked
            .iter()
            .map(|b| (b.url.clone(), b.reason.clone()))
            .collect()
    })
}

/// How many browser contexts `browser` holds.
async fn context_count(browser: &dshkit_cdp::Browser) -> usize {
    let reply = browser
        .connection()
        .call("Target.getBrowserContexts", serde_json::json!({}), None)
        .await
        .unwrap();
    reply["browserContextIds"].as_array().map_or(0, Vec::len)
}

/// Polls until `browser` holds `want` contexts, for at most 30 s.
async fn contexts_become(browser: &dshkit_cdp::Browser, want: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let have = context_count(browser).await;
        if have == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{have} contexts, never {want}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Polls until `check` holds or 10 s pass.
async fn eventually(mut check: impl FnMut() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn redirect_hops_to_external_and_private_hosts_are_blocked_at_the_hop() {
    let server = FixtureServer::start(vec![
        (
            "/",
            html(
                "<p>start</p><script>fetch('/to-external').catch(() => {}); fetch('/to-private').catch(() => {});</script>",
            ),
        ),
        (
            "/to-external",
            Fixture::Redirect("http://external.example/steal".into()),
        ),
        ("/to-private", Fixture::Redirect("http://10.0.0.1/admin".into())),
        ("/nav-away", Fixture::Redirect("http://external.example/".into())),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    eventually(|| blocked(&session).len() >= 2, "two blocked hops").await;
    let hops = blocked(&session);
    assert!(
        hops.iter().any(|(url, r)| url == "http://external.example/steal"
            && matches!(r, BlockReason::ExternalHost { .. })),
        "{hops:?}"
    );
    assert!(
        hops.iter()
            .any(|(url, r)| url == "http://10.0.0.1/admin" && matches!(r, BlockReason::ExternalHost { .. })),
        "{hops:?}"
    );
    // The same-origin first hops themselves went through.
    assert!(!hops.iter().any(|(url, _)| url.contains("/to-")), "{hops:?}");

    // A top-level navigation that redirects away fails at the hop as well, and
    // says which hop, which host, which rule and the fix.
    let err = session
        .interact(Action::Navigate("/nav-away".into()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NAVIGATION_BLOCKED", "{err}");
    let message = err.to_string();
    for part in [
        "the redirect hop to http://external.example/",
        "external.example is outside the preview's origin",
        "rule external_host",
        "--allow-external-host external.example",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(
        blocked(&session)
            .iter()
            .any(|(url, _)| url == "http://external.example/")
    );
}

/// A resolver under test control: the allowlisted name resolves to loopback, as a
/// rebinding attacker's DNS would answer.
struct RebindingDns;

impl Resolver for RebindingDns {
    fn resolve(&self, host: &str, _port: u16) -> Result<Vec<IpAddr>, String> {
        match host {
            "rebind.test" => Ok(vec!["127.0.0.1".parse().unwrap()]),
            _ => Err("NXDOMAIN".into()),
        }
    }
}

#[tokio::test]
async fn an_allowlisted_host_that_rebinds_to_a_private_address_is_refused() {
    let server = FixtureServer::start(vec![(
        "/",
        html("<script>fetch('http://rebind.test:9/secret').catch(() => {});</script>"),
    )]);
    let manager = PreviewManager::new(PreviewConfig {
        allow_hosts: vec!["rebind.test".into()],
        resolver: Arc::new(RebindingDns),
        ..PreviewConfig::default()
    });
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    eventually(
        || !blocked(&session).is_empty(),
        "the rebinding request to be blocked",
    )
    .await;
    let hops = blocked(&session);
    assert!(
        matches!(&hops[0].1, BlockReason::PrivateAddress { host, address } if host == "rebind.test" && address == "127.0.0.1"),
        "{hops:?}"
    );
}

/// A resolver that never answers for `slow.test` until the test lets it go.
struct HangingDns(std::sync::Mutex<std::sync::mpsc::Receiver<()>>);

impl Resolver for HangingDns {
    fn resolve(&self, host: &str, _port: u16) -> Result<Vec<IpAddr>, String> {
        if host == "slow.test" {
            let _ = self
                .0
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_mins(1));
        }
        Err("NXDOMAIN".into())
    }
}

#[tokio::test]
async fn a_hanging_dns_lookup_is_bounded_and_never_holds_up_the_pages_other_requests() {
    let (release, hang) = std::sync::mpsc::channel();
    let server = FixtureServer::start(vec![
        (
            "/",
            html(
                "<script>fetch('http://slow.test/x').catch(() => {}); setTimeout(() => { const s = document.createElement('script'); s.src = '/late.js'; document.body.append(s); }, 50);</script>",
            ),
        ),
        ("/late.js", Fixture::Js("console.log('late script ran');".into())),
    ]);
    let manager = PreviewManager::new(PreviewConfig {
        allow_hosts: vec!["slow.test".into()],
        resolver: Arc::new(HangingDns(std::sync::Mutex::new(hang))),
        dns_timeout: std::time::Duration::from_secs(2),
        ..PreviewConfig::default()
    });
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    // The same-origin script requested while the lookup hangs still loads...
    eventually(
        || session.observe(|o| o.console.iter().any(|e| e.text == "late script ran")),
        "the late same-origin script to run",
    )
    .await;
    // ...and the lookup that never answers ends as a block, not a stall.
    eventually(
        || {
            blocked(&session).iter().any(|(url, reason)| {
                url == "http://slow.test/x"
                    && matches!(reason, BlockReason::Unresolvable { error, .. } if error.contains("DNS did not answer"))
            })
        },
        "the hanging lookup to be refused after its bound",
    )
    .await;
    drop(release);
}

#[tokio::test]
async fn console_errors_exceptions_and_rejections_are_captured_with_their_location() {
    let script = "console.warn('careful');\nconsole.error('bad thing', 42);\nPromise.reject(new Error('nobody caught me'));\nsetTimeout(() => { undefinedFunction(); }, 0);\n";
    let server = FixtureServer::start(vec![
        (
            "/",
            html("<script src=\"/app.js\"></script><img src=\"/missing.png\">"),
        ),
        ("/app.js", Fixture::Js(script.into())),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    eventually(|| session.observe(|o| o.errors().count() >= 3), "three errors").await;
    let console: Vec<_> = session.observe(|o| o.console.iter().cloned().collect());
    let app = server.url("/app.js");
    let error = console
        .iter()
        .find(|e| e.source == ConsoleSource::Console && e.level == "error")
        .unwrap();
    assert_eq!(
        (error.text.as_str(), error.url.as_deref(), error.line),
        ("bad thing 42", Some(app.as_str()), Some(2))
    );
    let warning = console.iter().find(|e| e.level == "warning").unwrap();
    assert_eq!(warning.line, Some(1));
    let rejection = console
        .iter()
        .find(|e| e.source == ConsoleSource::Rejection)
        .unwrap();
    assert!(rejection.text.contains("nobody caught me"), "{rejection:?}");
    let exception = console
        .iter()
        .find(|e| e.source == ConsoleSource::Exception)
        .unwrap();
    assert!(exception.text.contains("undefinedFunction"), "{exception:?}");
    assert_eq!(
        (exception.url.as_deref(), exception.line),
        (Some(app.as_str()), Some(4))
    );
    // The missing image is a failed request with its status.
    eventually(
        || session.observe(|o| o.network.iter().any(|n| n.status == Some(404))),
        "the 404",
    )
    .await;
}

#[tokio::test]
async fn two_previews_share_no_cookies_storage_or_history() {
    let server = FixtureServer::start(vec![
        (
            "/set",
            html(
                "<script>document.cookie = 'who=first'; localStorage.setItem('who', 'first');</script><p>set</p>",
            ),
        ),
        (
            "/read",
            html(
                "<p id=out></p><script>document.getElementById('out').textContent = 'cookie=[' + document.cookie + '] storage=[' + (localStorage.getItem('who') || '') + ']';</script>",
            ),
        ),
    ]);
    let manager = manager();
    let first = manager
        .open(OWNER, &server.url("/set"), Viewport::Desktop)
        .await
        .unwrap();
    let second = manager
        .open(OWNER, &server.url("/read"), Viewport::Mobile)
        .await
        .unwrap();
    assert_ne!(first.id, second.id);
    let mine = first.interact(Action::Navigate("/read".into())).await.unwrap();
    assert!(
        mine.text.contains("cookie=[who=first] storage=[first]"),
        "{}",
        mine.text
    );
    let theirs = second.snapshot().await.unwrap();
    assert!(theirs.text.contains("cookie=[] storage=[]"), "{}", theirs.text);
    let back = second.interact(Action::Back).await.unwrap_err();
    assert_eq!(
        back.code(),
        "INTERACTION_FAILED",
        "the second preview has no history of the first: {back}"
    );
    assert_eq!(manager.list(OWNER).await.len(), 2);
}

const FORM: &str = r#"
<h1>Account</h1>
<form onsubmit="event.preventDefault(); document.getElementById('out').textContent = 'saved ' + document.getElementById('email').value;">
  <label for="email">Email</label> <input id="email" type="email">
  <select aria-label="Plan"><option value="free">Free</option><option value="pro">Pro</option></select>
  <button type="submit">Save</button>
</form>
<ul><li>a <button>Delete</button></li><li>b <button>Delete</button></li></ul>
<p id="out"></p>
"#;

#[tokio::test]
async fn refs_go_stale_ambiguous_names_are_refused_and_a_real_form_works() {
    let server = FixtureServer::start(vec![("/", html(FORM))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let first = session.snapshot().await.unwrap();
    let outline = first.outline();
    assert!(outline.contains("- heading \"Account\" [level=1]"), "{outline}");
    let email = first.find("textbox", "Email")[0].reference.clone().unwrap();

    let filled = session
        .interact(Action::Fill(Target::Ref(email.clone()), "ada@example.com".into()))
        .await
        .unwrap();
    assert!(
        filled.outline().contains("value=\"ada@example.com\""),
        "{}",
        filled.outline()
    );
    let stale = session
        .interact(Action::Click(Target::Ref(email.clone())))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), "STALE_ELEMENT_REF", "{stale}");

    let ambiguous = session.interact(click_button("Delete")).await.unwrap_err();
    assert_eq!(ambiguous.code(), "AMBIGUOUS_ELEMENT", "{ambiguous}");

    let chosen = session
        .interact(Action::Select(
            Target::RoleName {
                role: "combobox".into(),
                name: "Plan".into(),
            },
            "Pro".into(),
        ))
        .await
        .unwrap();
    assert!(chosen.outline().contains("value=\"pro\""), "{}", chosen.outline());
    let saved = session.interact(click_button("Save")).await.unwrap();
    assert!(saved.text.contains("saved ada@example.com"), "{}", saved.text);

    let forged = session
        .interact(Action::Click(Target::Ref("r1-1'];alert(1)//".into())))
        .await
        .unwrap_err();
    assert_eq!(forged.code(), "BAD_ELEMENT_REF");
}

/// A page that re-renders behind the last snapshot: the first focus of each
/// input replaces it with a copy (as a framework remounting it would), and the
/// first focus of "Other" also adds a button.
const REMOUNTING: &str = r#"
<label>Name <input name="name"></label>
<label>Other <input name="other"></label>
<p id="out"></p>
<script>
const out = document.getElementById('out');
function arm(input, fresh) {
  input.addEventListener('input', () => { out.textContent = 'typed ' + input.value; });
  if (!fresh) return;
  input.addEventListener('focus', () => {
    const copy = input.cloneNode();
    input.replaceWith(copy);
    arm(copy, false);
    if (input.name === 'other') {
      const appeared = document.createElement('button');
      appeared.textContent = 'Appeared';
      appeared.onclick = () => { out.textContent = 'appeared clicked'; };
      document.body.append(appeared);
    }
  }, { once: true });
}
document.querySelectorAll('input').forEach((input) => arm(input, true));
</script>
"#;

#[tokio::test]
async fn a_role_and_name_reach_the_element_the_page_has_now_while_a_ref_stays_strict() {
    let server = FixtureServer::start(vec![("/", html(REMOUNTING))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let role_name = |role: &str, name: &str| Target::RoleName {
        role: role.into(),
        name: name.into(),
    };
    let fill_by_ref =
        |reference: String, text: &str| session.interact(Action::Fill(Target::Ref(reference), text.into()));
    let first = session.snapshot().await.unwrap();
    let name = first.find("textbox", "Name")[0].reference.clone().unwrap();

    // A ref names one element: replaced, it is refused.
    let stale = fill_by_ref(name, "ada").await.unwrap_err();
    assert_eq!(stale.code(), "STALE_ELEMENT_REF", "{stale}");

    // The last snapshot still holds the replaced input; by role and name, the
    // input the page has now is filled.
    let filled = session
        .interact(Action::Fill(role_name("textbox", "Name"), "ada".into()))
        .await
        .unwrap();
    assert!(filled.text.contains("typed ada"), "{}", filled.text);

    // Focusing "Other" by its ref replaces it and adds a button the last
    // snapshot does not hold; by role and name, the button is found and clicked.
    let other = filled.find("textbox", "Other")[0].reference.clone().unwrap();
    let stale = fill_by_ref(other, "x").await.unwrap_err();
    assert_eq!(stale.code(), "STALE_ELEMENT_REF", "{stale}");
    let clicked = session
        .interact(Action::Click(role_name("button", "Appeared")))
        .await
        .unwrap();
    assert!(clicked.text.contains("appeared clicked"), "{}", clicked.text);

    // An element that is not there still is not found, after looking again.
    let missing = session
        .interact(Action::Click(role_name("button", "Never")))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "ELEMENT_NOT_FOUND", "{missing}");
}

#[tokio::test]
async fn a_field_behind_a_modal_dialog_is_refused_as_unfocused_not_as_gone() {
    let page = r#"
<label>Name <input name="name"></label>
<button onclick="document.getElementById('notice').showModal()">Open notice</button>
<dialog id="notice"><p>Please read this first.</p><button onclick="this.closest('dialog').close()">Continue</button></dialog>
"#;
    let server = FixtureServer::start(vec![("/", html(page))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let role_name = |role: &str, name: &str| Target::RoleName {
        role: role.into(),
        name: name.into(),
    };
    let opened = session
        .interact(Action::Click(role_name("button", "Open notice")))
        .await
        .unwrap();
    let name = opened.find("textbox", "Name")[0].reference.clone().unwrap();
    let refused = session
        .interact(Action::Fill(Target::Ref(name), "ada".into()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "INTERACTION_FAILED", "{refused}");
    assert!(
        refused.to_string().contains("did not take the focus"),
        "{refused}"
    );
    // By role and name too: the field is there, so looking again cannot help.
    let refused = session
        .interact(Action::Fill(role_name("textbox", "Name"), "ada".into()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "INTERACTION_FAILED", "{refused}");

    session
        .interact(Action::Click(role_name("button", "Continue")))
        .await
        .unwrap();
    let filled = session
        .interact(Action::Fill(role_name("textbox", "Name"), "ada".into()))
        .await
        .unwrap();
    assert!(filled.outline().contains("value=\"ada\""), "{}", filled.outline());
}

#[tokio::test]
async fn an_open_event_stream_is_not_in_flight_work_and_works_same_origin() {
    let server = FixtureServer::start(vec![
        (
            "/",
            html(
                "<p id=out>waiting</p><script>new EventSource('/events').onmessage = (e) => { document.getElementById('out').textContent = 'got ' + e.data; };</script>",
            ),
        ),
        ("/events", Fixture::EventStream),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let mut snapshot = session.snapshot().await.unwrap();
    for _ in 0..40 {
        if snapshot.text.contains("got hello") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        snapshot = session.snapshot().await.unwrap();
    }
    assert!(snapshot.text.contains("got hello"), "{}", snapshot.text);
    assert_eq!(
        session.observe(dshkit_liveloop::preview::Observations::in_flight),
        0
    );
}

#[tokio::test]
async fn screenshots_are_png_with_their_digest_and_full_pages_are_guarded() {
    let server = FixtureServer::start(vec![(
        "/",
        html("<div style='height:3000px;background:linear-gradient(red,blue)'>tall</div>"),
    )]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let viewport = session.screenshot(false).await.unwrap();
    assert_eq!((viewport.width, viewport.height), (1280, 800));
    assert_eq!(viewport.sha256.len(), 64);
    let full = session.screenshot(true).await.unwrap();
    assert!(
        full.height >= 3000 && !full.clipped,
        "{} {}",
        full.height,
        full.clipped
    );
    assert_ne!(full.sha256, viewport.sha256);
    assert!(full.png.len() > viewport.png.len() / 2);
}

#[tokio::test]
async fn sessions_belong_to_their_owner_and_bad_urls_are_refused() {
    let server = FixtureServer::start(vec![("/", html("<p>mine</p>"))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Tablet)
        .await
        .unwrap();
    assert_eq!(
        manager.get("client-b", &session.id).await.unwrap_err().code(),
        "NOT_OWNER"
    );
    assert_eq!(
        manager.close("client-b", &session.id).await.unwrap_err().code(),
        "NOT_OWNER"
    );
    assert!(manager.list("client-b").await.is_empty());
    for bad in [
        "https://example.com/",
        "file:///etc/passwd",
        "http://user:pw@127.0.0.1:1/",
    ] {
        assert_eq!(
            manager
                .open(OWNER, bad, Viewport::Desktop)
                .await
                .unwrap_err()
                .code(),
            "BAD_URL",
            "{bad}"
        );
    }
    manager.close(OWNER, &session.id).await.unwrap();
    assert_eq!(
        manager.get(OWNER, &session.id).await.unwrap_err().code(),
        "UNKNOWN_SESSION"
    );
}

#[tokio::test]
async fn a_killed_browser_is_reported_and_the_next_open_relaunches() {
    let server = FixtureServer::start(vec![("/", html("<p>alive</p>"))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let pid = manager.browser_pid().await.unwrap();
    assert!(dshkit_os::process::Identity::of(pid).unwrap().kill());
    let err = loop {
        match session.snapshot().await {
            Err(err) => break err,
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    };
    assert_eq!(err.code(), "BROWSER_GONE", "{err}");
    manager.note_error(&err).await;
    assert_eq!(
        manager.get(OWNER, &session.id).await.unwrap_err().code(),
        "UNKNOWN_SESSION"
    );
    let again = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert!(again.snapshot().await.unwrap().text.contains("alive"));
    assert_ne!(manager.browser_pid().await, Some(pid));
}

#[tokio::test]
async fn an_existing_browser_endpoint_serves_previews() {
    let server = FixtureServer::start(vec![("/", html("<p>remote pool</p>"))]);
    let owner = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let ws = owner.process().unwrap().ws_url().to_owned();
    let manager = PreviewManager::new(PreviewConfig {
        browser: BrowserSource::Endpoint(ws),
        ..PreviewConfig::default()
    });
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert!(session.snapshot().await.unwrap().text.contains("remote pool"));
    assert_eq!(
        manager.browser_pid().await,
        None,
        "a connected browser is not ours"
    );
}

#[tokio::test]
async fn a_cross_origin_websocket_is_blocked_while_same_origin_ones_work() {
    let other = FixtureServer::start(vec![("/ws", Fixture::WebSocket)]);
    let page = format!(
        "<p id=same>same: waiting</p><p id=cross>cross: waiting</p><script>\
         const show = (id, text) => document.getElementById(id).textContent = text;\
         const same = new WebSocket('ws://' + location.host + '/ws'); same.onmessage = (e) => show('same', 'same: ' + e.data);\
         const cross = new WebSocket('ws://127.0.0.1:{}/ws'); cross.onmessage = (e) => show('cross', 'cross: ' + e.data);\
         cross.onerror = () => show('cross', 'cross: refused');</script>",
        other.port()
    );
    let server = FixtureServer::start(vec![("/", html(&page)), ("/ws", Fixture::WebSocket)]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let text = text_when(&session, |text| {
        text.contains("same: hello") && text.contains("cross: refused")
    })
    .await;
    assert!(text.contains("same: hello"), "{text}");
    assert!(text.contains("cross: refused"), "{text}");
    // Named by the URL the page gave its socket, not only by the tunnel's place.
    let cross = format!("ws://127.0.0.1:{}/ws", other.port());
    assert_eq!(
        blocked(&session),
        [(cross.clone(), BlockReason::CrossOriginWebSocket { url: cross })]
    );
}

#[tokio::test]
async fn a_workers_requests_and_sockets_are_observed_with_the_pages_and_its_script_holds_no_settle() {
    // A worker's requests and sockets show on its own target, not the page's:
    // each worker is held at its start until its events are subscribed to.
    let other = FixtureServer::start(vec![("/ws", Fixture::WebSocket)]);
    let page = format!(
        "<p id=page>page: waiting</p><p id=worker>worker: waiting</p><script>\
         const show = (id, text) => document.getElementById(id).textContent = text;\
         const own = new WebSocket('ws://127.0.0.1:{port}/ws?from=page'); own.onerror = () => show('page', 'page: refused');\
         const worker = new Worker('/worker.js'); worker.onmessage = (e) => show('worker', 'worker: ' + e.data);\
         new SharedWorker('/shared.js', {{ type: 'module' }});</script>",
        port = other.port()
    );
    let worker = format!(
        "fetch('/missing.json').then((r) => {{ const ws = new WebSocket('ws://127.0.0.1:{}/ws?from=worker'); \
         ws.onerror = () => postMessage('refused ' + r.status); ws.onopen = () => postMessage('open'); }});",
        other.port()
    );
    let server = FixtureServer::start(vec![
        ("/", html(&page)),
        ("/worker.js", Fixture::Js(worker)),
        ("/shared.js", Fixture::Js("onconnect = () => {};".into())),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let text = text_when(&session, |text| !text.contains("waiting")).await;
    assert!(
        text.contains("page: refused") && text.contains("worker: refused 404"),
        "{text}"
    );
    // A worker's script (a shared or module one too) ends on the worker's own
    // target: the page does not wait for it.
    assert_eq!(session.observe(|o| o.pending(3)), Vec::<String>::new());
    let mut hops = blocked(&session);
    hops.sort_by(|a, b| a.0.cmp(&b.0));
    let socket = |from: &str| {
        let url = format!("ws://127.0.0.1:{}/ws?from={from}", other.port());
        (url.clone(), BlockReason::CrossOriginWebSocket { url })
    };
    assert_eq!(hops, [socket("page"), socket("worker")]);
    let missing = server.url("/missing.json");
    let failed: Vec<_> = session.observe(|o| o.network.iter().map(|n| (n.url.clone(), n.status)).collect());
    assert!(failed.contains(&(missing, Some(404))), "{failed:?}");
}

#[tokio::test]
async fn workers_beyond_those_observed_run_all_the_same() {
    // Each worker is held at its start; those past the observed ones are let go.
    let count = dshkit_liveloop::preview::MAX_OBSERVED_WORKERS + 4;
    let page = format!(
        "<p id=out>0 of {count}</p><script>let done = 0;\
         for (let i = 0; i < {count}; i++) {{ new Worker('/worker.js').onmessage = () => \
           document.getElementById('out').textContent = ++done + ' of {count}'; }}</script>"
    );
    let server = FixtureServer::start(vec![
        ("/", html(&page)),
        ("/worker.js", Fixture::Js("postMessage('up');".into())),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let all = format!("{count} of {count}");
    let text = text_when(&session, |text| text.contains(&all)).await;
    assert!(text.contains(&all), "{text}");
}

#[tokio::test]
async fn a_workers_uncaught_error_is_an_uncaught_exception_of_the_page() {
    let server = FixtureServer::start(vec![
        ("/", html("<p>app</p><script>new Worker('/worker.js');</script>")),
        (
            "/worker.js",
            Fixture::Js("throw new Error('worker boom');".into()),
        ),
    ]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let worker = server.url("/worker.js");
    let uncaught = || {
        session.observe(|o| {
            o.errors()
                .filter(|e| e.is_uncaught() && e.url.as_deref() == Some(worker.as_str()))
                .map(dshkit_liveloop::preview::ConsoleEntry::summary)
                .collect::<Vec<_>>()
        })
    };
    for _ in 0..200 {
        if !uncaught().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        uncaught(),
        [format!(
            "uncaught exception: Uncaught Error: worker boom at {worker}:1"
        )]
    );
}

#[tokio::test]
async fn previews_have_no_service_workers_webrtc_or_webtransport_and_a_fixed_viewport() {
    let server = FixtureServer::start(vec![(
        "/",
        Fixture::Html("<!doctype html><meta name=viewport content='width=device-width'><title>hardened</title><p id=out></p><script>navigator.serviceWorker.register('/sw.js').then(() => 'registered', (e) => e.name).then((sw) => {\
              document.getElementById('out').textContent = [sw, typeof RTCPeerConnection, typeof WebTransport, innerWidth, devicePixelRatio].join(' ');});</script>".into()),
    )]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Mobile)
        .await
        .unwrap();
    let text = text_when(&session, |text| !text.trim().is_empty()).await;
    assert_eq!(text.trim(), "SecurityError undefined undefined 390 3");
}

#[tokio::test]
async fn the_session_limit_is_enforced_and_idle_sessions_are_closed() {
    let server = FixtureServer::start(vec![("/", html("<p>x</p>"))]);
    let manager = PreviewManager::new(PreviewConfig {
        max_sessions: 1,
        idle_timeout: std::time::Duration::from_millis(1500),
        ..PreviewConfig::default()
    });
    let first = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    // Another owner's preview never makes room.
    let err = manager
        .open("someone-else", &server.url("/"), Viewport::Desktop)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_LIMIT");
    tokio::time::sleep(std::time::Duration::from_millis(1700)).await;
    let second = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert_eq!(
        manager.get(OWNER, &first.id).await.unwrap_err().code(),
        "UNKNOWN_SESSION"
    );
    assert_eq!(manager.list(OWNER).await.len(), 1);
    assert_eq!(manager.list(OWNER).await[0].0, second.id);
    // The owner is told of the closed session once; another owner never.
    assert!(manager.take_evicted("someone-else").await.is_empty());
    let told = manager.take_evicted(OWNER).await;
    assert_eq!(
        told.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        [first.id.as_str()]
    );
    assert!(manager.take_evicted(OWNER).await.is_empty());
    assert!(told.iter().all(|e| e.why == Eviction::Idle), "{told:?}");

    // At the limit the owner's least recently used idle preview makes room; a
    // busy one never does.
    let busy = second.between_verifications().await;
    let err = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_LIMIT", "a preview in use is never closed");
    drop(busy);
    let third = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert_eq!(manager.list(OWNER).await[0].0, third.id);
    let told = manager.take_evicted(OWNER).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (told[0].id.as_str(), told[0].why),
        (second.id.as_str(), Eviction::Limit)
    );
}

#[tokio::test]
async fn real_screenshots_of_an_unchanged_page_match_and_a_changed_page_does_not() {
    use dshkit_liveloop::verify::diff::{DEFAULT_MAX_MISMATCH_RATIO, DEFAULT_PIXEL_THRESHOLD, Rgba, compare};
    let server = FixtureServer::start(vec![(
        "/",
        html(
            "<h1>Dashboard</h1><p id=msg>All systems normal</p><button onclick=\"document.getElementById('msg').textContent='ALERT: three services are down'\">Break</button>",
        ),
    )]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let reference = Rgba::from_png(&session.screenshot(false).await.unwrap().png).unwrap();
    let again = Rgba::from_png(&session.screenshot(false).await.unwrap().png).unwrap();
    let same = compare(
        &reference,
        &again,
        DEFAULT_PIXEL_THRESHOLD,
        DEFAULT_MAX_MISMATCH_RATIO,
    )
    .unwrap();
    assert!(
        same.passed,
        "an unchanged page must match itself: {} pixels differ",
        same.differing_pixels
    );

    session.interact(click_button("Break")).await.unwrap();
    let changed = Rgba::from_png(&session.screenshot(false).await.unwrap().png).unwrap();
    let result = compare(
        &reference,
        &changed,
        DEFAULT_PIXEL_THRESHOLD,
        DEFAULT_MAX_MISMATCH_RATIO,
    )
    .unwrap();
    assert!(
        !result.passed && result.differing_pixels > 50,
        "{} differing",
        result.differing_pixels
    );
    let diff_png = result.diff.to_png().unwrap();
    assert!(diff_png.starts_with(b"\x89PNG"));
    assert_eq!(Rgba::from_png(&diff_png).unwrap().width, 1280);
}

#[tokio::test]
async fn a_screenshot_waits_for_the_frame_of_a_change_made_just_before_the_page_blocked() {
    use dshkit_liveloop::verify::diff::Rgba;
    // The page turns red, says so with a synchronous request, then keeps its main
    // thread busy for 1.5 s; its timer is longer than the click's settle counts,
    // so the click returns before. A screenshot asked for while the page is busy
    // must wait for the frame that paints the red: a copy of the last frame drawn
    // (a screencast's first frame) would still be blue.
    const PAGE: &str = "<body style='margin:0;background:rgb(0,0,255)'><button onclick=\"setTimeout(() => { \
        document.body.style.background = 'rgb(255,0,0)'; \
        const reached = new XMLHttpRequest(); reached.open('GET', '/reached', false); reached.send(); \
        const end = Date.now() + 1500; while (Date.now() < end) {} }, 1100)\">Turn red</button></body>";
    let (reached_tx, mut reached) = tokio::sync::mpsc::unbounded_channel();
    let server = FixtureServer::start(vec![("/", html(PAGE)), ("/reached", Fixture::Notify(reached_tx))]);
    let manager = manager();
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let centre = |shot: &dshkit_liveloop::preview::Screenshot| {
        let image = Rgba::from_png(&shot.png).unwrap();
        let at = ((image.height / 2 * image.width + image.width / 2) * 4) as usize;
        image.pixels[at..at + 3].to_vec()
    };
    assert_eq!(centre(&session.screenshot(false).await.unwrap()), [0, 0, 255]);

    session.interact(click_button("Turn red")).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(30), reached.recv())
        .await
        .expect("the page's timer ran")
        .unwrap();
    assert_eq!(
        centre(&session.screenshot(false).await.unwrap()),
        [255, 0, 0],
        "the screenshot shows the page as it was before its last change"
    );
}

#[tokio::test]
async fn an_open_cancelled_during_its_navigation_leaves_no_browser_context() {
    // An app that accepts the connection and never answers: the open waits in
    // its navigation until the task is dropped, as a cancelled MCP call drops it.
    let app = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", app.local_addr().unwrap());
    let (accepted_tx, accepted) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in app.incoming().flatten() {
            held.push(stream);
            let _ = accepted_tx.send(());
        }
    });
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let manager = Arc::new(PreviewManager::new(PreviewConfig {
        browser: BrowserSource::Endpoint(browser.process().unwrap().ws_url().to_owned()),
        ..PreviewConfig::default()
    }));
    let contexts = || context_count(&browser);
    let before = contexts().await;

    let opening = tokio::spawn({
        let manager = Arc::clone(&manager);
        async move { manager.open(OWNER, &url, Viewport::Desktop).await.map(|_| ()) }
    });
    tokio::task::spawn_blocking(move || accepted.recv_timeout(std::time::Duration::from_mins(1)))
        .await
        .unwrap()
        .expect("the navigation reached the app");
    assert_eq!(contexts().await, before + 1, "the open made its context");
    opening.abort();
    assert!(opening.await.unwrap_err().is_cancelled());

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while contexts().await != before {
        assert!(
            std::time::Instant::now() < deadline,
            "the abandoned open's context was never disposed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(manager.list(OWNER).await.is_empty(), "no session was kept");
}

#[tokio::test]
async fn previews_opened_from_the_blank_kept_ready_are_isolated_confined_and_sized() {
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let contexts = || context_count(&browser);
    let manager = Arc::new(PreviewManager::new(PreviewConfig {
        browser: BrowserSource::Endpoint(browser.process().unwrap().ws_url().to_owned()),
        ..PreviewConfig::default()
    }));
    drop(manager.prewarm());
    contexts_become(&browser, 1).await;

    // The first open takes the blank: no second context appears.
    let first_server = FixtureServer::start(vec![(
        "/",
        html(
            "<script>document.cookie = 'who=first'; localStorage.setItem('who', 'first');</script><p>set</p>",
        ),
    )]);
    let first = manager
        .open(OWNER, &first_server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert_eq!(contexts().await, 1, "the open used the blank preview");
    manager.keep_blank_ready();
    contexts_become(&browser, 2).await;

    // The second takes the new blank, made for the desktop, as a phone. Its
    // proxy is armed with its own origin: the first server is foreign to it.
    let page = format!(
        "<p id=out>waiting</p><script>\
         const cross = new WebSocket('ws://127.0.0.1:{}/ws');\
         const show = (ws) => document.getElementById('out').textContent = [ws, 'cookie=[' + document.cookie + ']', \
           'storage=[' + (localStorage.getItem('who') || '') + ']', innerWidth, devicePixelRatio].join(' ');\
         cross.onopen = () => show('cross: open'); cross.onerror = () => show('cross: refused');</script>",
        first_server.port()
    );
    let second_server = FixtureServer::start(vec![(
        "/",
        Fixture::Html(format!(
            "<!doctype html><meta name=viewport content='width=device-width'><title>second</title>{page}"
        )),
    )]);
    let second = manager
        .open(OWNER, &second_server.url("/"), Viewport::Mobile)
        .await
        .unwrap();
    assert_eq!(contexts().await, 2, "the open used the blank preview");
    let text = text_when(&second, |text| !text.contains("waiting")).await;
    assert!(
        text.contains("cross: refused cookie=[] storage=[] 390 3"),
        "{text}"
    );
    let cross = format!("ws://127.0.0.1:{}/ws", first_server.port());
    assert!(
        blocked(&second).iter().any(|(url, _)| url == &cross),
        "{:?}",
        blocked(&second)
    );
    assert!(blocked(&first).is_empty(), "{:?}", blocked(&first));
}

#[tokio::test]
async fn an_idle_browser_is_closed_with_its_blank_and_the_next_open_brings_both_back() {
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let manager = Arc::new(PreviewManager::new(PreviewConfig {
        browser: BrowserSource::Endpoint(browser.process().unwrap().ws_url().to_owned()),
        idle_timeout: std::time::Duration::from_secs(2),
        ..PreviewConfig::default()
    }));
    drop(manager.prewarm());
    contexts_become(&browser, 1).await;
    // No session for the idle timeout: the connection is closed, and the
    // browser disposes the blank's context with it.
    contexts_become(&browser, 0).await;

    let server = FixtureServer::start(vec![("/", html("<p>back again</p>"))]);
    let session = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert!(session.snapshot().await.unwrap().text.contains("back again"));
    assert_eq!(manager.relaunches(), 0, "a deliberate close is no relaunch");
    manager.keep_blank_ready();
    contexts_become(&browser, 2).await;
}

#[tokio::test]
async fn a_reload_of_a_page_whose_server_is_gone_fails_and_names_the_page() {
    let page =
        axum::Router::new().fallback(|| async { axum::response::Html("<title>t</title><h1>Shop</h1>") });
    let server = dshkit_test::LoopbackServer::start(page, true);
    let url = format!("http://{}/shop/?tab=2", server.addr);
    let previews = manager();
    let session = previews.open(OWNER, &url, Viewport::Desktop).await.unwrap();
    let reloaded = session.interact(Action::Reload).await.unwrap();
    assert_eq!(reloaded.url, url, "a reload while the server answers is the page");
    // The server stops (its port is closed when this returns): Chromium would show
    // its own error page, which is no page of the app.
    drop(server);
    let err = session.interact(Action::Reload).await.unwrap_err();
    assert_eq!(err.code(), "NAVIGATION_FAILED", "{err}");
    assert!(err.to_string().contains(&url), "names the page: {err}");
    previews.shutdown().await;
}

/// On a pool each preview has a connection of its own: closing a preview
/// closes its connection (the browser then disposes its context, as a pool
/// ends its browser), a verification's own preview is given back after its
/// report, and a plain Chromium serves as a pool too.
#[tokio::test]
async fn a_pooled_preview_has_its_own_connection_and_gives_it_back_when_closed() {
    let server = FixtureServer::start(vec![("/", html("<p>pooled</p>"))]);
    let browser = dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions::default())
        .await
        .unwrap();
    let endpoint = dshkit_cdp::Endpoint::new(browser.process().unwrap().ws_url());
    let manager = Arc::new(PreviewManager::new(PreviewConfig {
        browser: BrowserSource::Pool(endpoint),
        ..PreviewConfig::default()
    }));
    assert!(manager.is_pooled());
    drop(manager.prewarm());
    let first = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    let second = manager
        .open(OWNER, &server.url("/"), Viewport::Desktop)
        .await
        .unwrap();
    assert!(second.snapshot().await.unwrap().text.contains("pooled"));
    assert_eq!(
        context_count(&browser).await,
        2,
        "no blank is kept ready on a pool"
    );
    manager.close(OWNER, &first.id).await.unwrap();
    contexts_become(&browser, 1).await;
    assert!(
        second.snapshot().await.unwrap().text.contains("pooled"),
        "the other preview's connection is its own"
    );
    assert!(manager.release_after_verification(OWNER, &second.id).await);
    contexts_become(&browser, 0).await;
    assert!(manager.list(OWNER).await.is_empty());
}
