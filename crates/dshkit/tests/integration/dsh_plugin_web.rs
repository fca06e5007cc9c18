//! The native DSH plugin's browser half in a real `dsh web`, driven as a person
//! would: the Verification Card, the Live Preview, the Echo tab, the approval
//! card, the settings section, and a broken client half that leaves DSH's UI
//! working.

use std::path::PathBuf;
use std::time::Duration;

use dshkit_test::{
    ANSWER_PREFIX, ChildGuard, FakeModel, LoopbackServer, Peers, processes_mentioning, wait_for, wait_until,
};

use crate::support::{
    ConversationModels, PAGE, RECORDED_GREETING, Session, copy_hello_app, dsh_web, dsh_web_at, dshkit,
    echo_overlay, echo_root, everything_http, free_port, http_registry, install_with_echo, installed_home,
    model_verifying, output, processes_of, recorded_everything, serve_html, serve_page, walk_files, web_home,
    web_row,
};

/// Opens DSH's settings at dshkit's section (its fields shown).
fn open_dshkit_settings(ui: &mut WebUi) {
    ui.click_past_notice("button", "Settings", "dialog \"Settings\"");
    // The plugin's section joins the settings once the UI has its plugins'
    // settings, which may come after the dialog opens: it is waited for.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let nav = loop {
        let settings = ui.op(serde_json::json!({"operation": "snapshot"}));
        if let Some(role) = ["button", "tab", "link", "menuitem"]
            .into_iter()
            .find(|role| settings.contains(&format!("{role} \"dshkit\"")))
        {
            break role;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no dshkit section in the settings: {settings}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    ui.click_until(nav, "dshkit", "Quiet window");
}

/// Where the screenshots a person would look at are kept: `target/test-artifacts/dsh-plugin/`.
fn artifacts() -> PathBuf {
    let artifacts = dshkit_test::workspace_root().join("target/test-artifacts/dsh-plugin");
    std::fs::create_dir_all(&artifacts).unwrap();
    artifacts
}

/// `dsh web` for `home` with `model`, and dshkit's browser on its UI: the
/// running DSH (it stops when dropped) and the UI.
fn open_web_ui(peers: &Peers, home: &std::path::Path, model: &FakeModel) -> (ChildGuard, WebUi) {
    let (web, url) = dsh_web(peers, home, model);
    (web, WebUi::open(&url))
}

/// Runs a person's walk (`harness/dsh-ui/SCRIPT`, Playwright in the system
/// Chromium) on the DSH web UI at `url`, keeping its screenshots with the others;
/// returns the JSON line of what it saw, panicking with its stderr when it failed.
fn walk_as_a_person(peers: &Peers, script: &str, url: &str, args: &[&str]) -> serde_json::Value {
    let chromium = std::env::var("DSHKIT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let run = output(
        std::process::Command::new(peers.playwright_python())
            .arg(dshkit_test::workspace_root().join("harness/dsh-ui").join(script))
            .arg(url)
            .arg(&chromium)
            .arg(artifacts())
            .args(args),
    );
    assert!(
        run.status.success(),
        "the person's walk ({script}) failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// Drives DSH's web UI in dshkit's own headless browser, over MCP.
struct WebUi {
    mcp: Session,
    session: String,
    next_id: u64,
}

impl WebUi {
    fn open(url: &str) -> Self {
        let mut mcp = Session::initialized(&[], &[]);
        let opened = mcp.call_within(
            1,
            "liveloop_browser",
            &serde_json::json!({"operation": "open", "url": format!("{url}/")}),
            Duration::from_secs(90),
        );
        let session = opened["result"]["structuredContent"]["session"]
            .as_str()
            .unwrap_or_else(|| panic!("{opened}"))
            .to_owned();
        Self {
            mcp,
            session,
            next_id: 2,
        }
    }

    /// One operation; returns its text, panicking with it when it failed.
    /// A target the UI has not rendered yet (a slow machine), or that it
    /// re-rendered, is looked for again in a fresh snapshot, for a bounded time.
    /// DSH's welcome notice is a modal that opens once its settings arrive over
    /// the UI's WebSocket, which no settle waits for: when it covers the target
    /// (which then does not take the focus), it is acknowledged.
    #[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
    fn op(&mut self, arguments: serde_json::Value) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            match self.try_op(arguments.clone()) {
                Ok(text) => return text,
                Err(failure) if not_there_yet(&failure) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                    let outline = self
                        .try_op(serde_json::json!({"operation": "snapshot"}))
                        .unwrap_or_default();
                    if outline.contains("dialog \"Internal Testing Notice\"")
                        && arguments["name"] != "Continue"
                    {
                        let _ = self.try_op(
                            serde_json::json!({"operation": "click", "role": "button", "name": "Continue"}),
                        );
                    }
                }
                Err(failure) => panic!("{failure}"),
            }
        }
    }

    /// One operation; its text, or the whole failure. Answers may take long on a
    /// loaded machine: the bound is generous, never a measure of speed.
    fn try_op(&mut self, mut arguments: serde_json::Value) -> Result<String, String> {
        arguments["session"] = serde_json::json!(self.session);
        self.next_id += 1;
        let response = self.mcp.call_within(
            self.next_id,
            "liveloop_browser",
            &arguments,
            Duration::from_secs(90),
        );
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if response["result"]["isError"] == false {
            Ok(text)
        } else {
            Err(format!("{arguments}: {text}\n{response}"))
        }
    }

    fn click(&mut self, role: &str, name: &str) -> String {
        self.op(serde_json::json!({"operation": "click", "role": role, "name": name}))
    }

    /// Clicks the first of several elements with this role and name.
    fn click_first(&mut self, role: &str, name: &str) -> String {
        let outline = self.op(serde_json::json!({"operation": "snapshot"}));
        let marker = format!("{role} \"{name}\" [ref=");
        let reference = outline
            .split(&marker)
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_else(|| panic!("no {role} {name:?} in {outline}"))
            .to_owned();
        self.op(serde_json::json!({"operation": "click", "ref": reference}))
    }

    /// Waits for `text` on the page: up to four waits of 25 s (the tool's bound is
    /// 30 s), so a slow machine only makes the test slower.
    fn wait_for(&mut self, text: &str) {
        let wait = serde_json::json!({"operation": "wait", "text": text, "timeoutMs": 25_000});
        let mut last = String::new();
        for _ in 0..4 {
            match self.try_op(wait.clone()) {
                Ok(_) => return,
                Err(failure) if failure.contains("TIMEOUT") => last = failure,
                Err(failure) => panic!("{failure}"),
            }
        }
        // What the page showed instead, for whoever reads the failure.
        let shown = self.keep_screenshot("never-appeared");
        panic!(
            "{text:?} never appeared (the page as it was: {}): {last}",
            shown.display()
        );
    }

    /// Waits (bounded, generous) until a snapshot holds `needle`; returns it.
    fn wait_for_outline(&mut self, needle: &str) -> String {
        wait_for(Duration::from_secs(90), || {
            let outline = self.op(serde_json::json!({"operation": "snapshot"}));
            if outline.contains(needle) {
                Ok(outline)
            } else {
                Err(format!("{needle:?} never appeared in: {outline}"))
            }
        })
    }

    /// Clicks until `text` appears (a click on a card still being rendered can be
    /// lost on a slow machine); at most three clicks.
    fn click_until(&mut self, role: &str, name: &str, text: &str) {
        for _ in 0..3 {
            self.click(role, name);
            let wait = serde_json::json!({"operation": "wait", "text": text, "timeoutMs": 25_000});
            if self.try_op(wait).is_ok() {
                return;
            }
        }
        self.wait_for(text);
    }

    /// Picks the workspace of a new conversation: the directory picker's Open for
    /// the first one, else the workspace already known (a page snapshotted before
    /// its input showed looks like a first conversation). DSH's welcome notice may
    /// take a click, as in [`Self::click_past_notice`].
    fn choose_workspace(&mut self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            self.click("button", "Choose workspace");
            let outline = self.op(serde_json::json!({"operation": "snapshot"}));
            if outline.contains("button \"Open\"") {
                self.click("button", "Open");
                return;
            }
            let known = outline
                .split("menuitem \"")
                .skip(1)
                .filter_map(|rest| rest.split('"').next())
                .find(|name| !name.starts_with("Add workspace"));
            if let Some(known) = known.map(str::to_owned) {
                self.click("menuitem", &known);
                return;
            }
            if outline.contains("dialog \"Internal Testing Notice\"") {
                self.click("button", "Continue");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no workspace to choose after clicking \"Choose workspace\": {outline}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Clicks until a snapshot holds `expect`. DSH's welcome notice can open
    /// over the page at any moment before (see [`Self::op`]) and take the click:
    /// it is acknowledged and the click repeated, for a bounded time.
    fn click_past_notice(&mut self, role: &str, name: &str, expect: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let clicked = self.click(role, name);
            if clicked.contains(expect) {
                return;
            }
            let outline = self.op(serde_json::json!({"operation": "snapshot"}));
            if outline.contains(expect) {
                return;
            }
            if outline.contains("dialog \"Internal Testing Notice\"") {
                self.click("button", "Continue");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{expect:?} never appeared after clicking {role} {name:?}: {outline}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Starts a new conversation in the home workspace and sends `message`.
    fn send(&mut self, message: &str) {
        self.wait_for("New Session");
        let outline = self.op(serde_json::json!({"operation": "snapshot"}));
        if outline.contains("button \"Continue\"") {
            self.click("button", "Continue");
        }
        // The first conversation picks the workspace; later ones inherit it.
        if !outline.contains("textbox \"Describe what you want to build\"") {
            self.choose_workspace();
        }
        self.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Describe what you want to build", "text": message}));
        self.op(serde_json::json!({"operation": "press", "key": "Enter"}));
    }

    /// The page's text as a person reads it (bounded).
    fn page_text(&mut self) -> String {
        self.next_id += 1;
        let response = self.mcp.call_within(
            self.next_id,
            "liveloop_browser",
            &serde_json::json!({"operation": "snapshot", "includeText": true, "session": self.session}),
            Duration::from_secs(90),
        );
        response["result"]["structuredContent"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no page text: {response}"))
            .to_owned()
    }

    /// The Live Preview shows `verdict` for `url`, and nothing of `other`'s.
    fn shows_only_its_own_verification(&mut self, verdict: &str, url: &str, other: &str) {
        self.wait_for("Latest verdict:");
        let text = self.page_text();
        let line = |start: &str| {
            text.lines()
                .map(str::trim)
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start:?} in: {text}"))
        };
        assert_eq!(line("Target:"), format!("Target: {url}"), "{text}");
        assert!(
            line("Latest verdict:").starts_with(&format!("Latest verdict: {verdict}")),
            "{verdict}: {text}"
        );
        assert!(!text.contains(other), "another conversation's app: {text}");
    }

    /// A screenshot kept as a test artifact under `target/test-artifacts/dsh-plugin/`.
    fn keep_screenshot(&mut self, name: &str) -> std::path::PathBuf {
        self.next_id += 1;
        let response = self.mcp.call_within(
            self.next_id,
            "liveloop_browser",
            &serde_json::json!({"operation": "screenshot", "session": self.session}),
            Duration::from_secs(90),
        );
        let path = response["result"]["structuredContent"]["screenshot"]["path"]
            .as_str()
            .or_else(|| response["result"]["structuredContent"]["path"].as_str())
            .unwrap_or_else(|| panic!("no screenshot path: {response}"))
            .to_owned();
        let kept = artifacts().join(format!("{name}.png"));
        std::fs::copy(&path, &kept).unwrap();
        kept
    }
}

#[test]
fn the_web_ui_shows_the_verification_card_and_the_live_preview() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = serve_page();
    let model = model_verifying(&app);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    // The Verification Card: verdict, reason, next action and the thumbnail read
    // over the plugin's RPC channel.
    ui.wait_for("every criterion held");
    ui.wait_for("Next:");
    let chat = ui.wait_for_outline("img \"dshkit screenshot\"");
    assert!(!chat.contains("Failed to load plugins"), "{chat}");
    ui.keep_screenshot("verification-card");

    // The Live Preview tab: the target, the latest verdict, the buttons, and the app
    // framed (it sends no X-Frame-Options).
    ui.click("tab", "Live Preview");
    ui.wait_for("dshkit Live Preview");
    ui.wait_for("Latest verdict:");
    let preview = ui.wait_for_outline("button \"Stop\"");
    for button in ["button \"Reload\"", "button \"Verify\"", "button \"Stop\""] {
        assert!(preview.contains(button), "{button} missing: {preview}");
    }
    // The app is framed (dshkit's own test browser, whose policy admits one
    // loopback origin, leaves the frame empty; a person's browser shows the app).
    let app_url = format!("http://127.0.0.1:{}/", app.addr.port());
    ui.wait_for_outline(&format!("iframe content is not included: {app_url}"));
    ui.keep_screenshot("live-preview");
    // Verify again from the view: a new report, and the model is not involved.
    let reports = || verify_reports(home.path()).len();
    let (asked, written) = (model.turn_requests().len(), reports());
    assert!(written >= 1, "the agent's verification wrote its report");
    ui.click("button", "Verify");
    wait_until(
        Duration::from_secs(30),
        "the view's Verify wrote no report",
        || reports() != written,
    );
    assert_eq!(
        model.turn_requests().len(),
        asked,
        "the view's Verify does not go through the model"
    );
}

/// The verification reports dshkit wrote for the user of `home`.
fn verify_reports(home: &std::path::Path) -> std::collections::BTreeSet<PathBuf> {
    crate::support::walk_files(&home.join(".local/state/dshkit/evidence"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("verify-"))
        })
        .collect()
}

/// What the conversation that verifies a failing page asks for.
const FAILING_ASK: &str = "Verify the page without the greeting.";
/// What the conversation that verifies a passing page asks for.
const PASSING_ASK: &str = "Verify the page with the greeting.";

#[test]
fn each_conversations_live_preview_shows_only_its_own_verification() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    // Two apps, and a model that verifies the one the conversation asks for.
    let passing = serve_page();
    let failing = serve_html("<!doctype html><title>Other</title><h1>No greeting here</h1>");
    let models = ConversationModels::start(vec![
        ("with the greeting", model_verifying(&passing)),
        ("without the greeting", model_verifying(&failing)),
    ]);
    let (passing_url, failing_url) = (
        format!("http://127.0.0.1:{}/", passing.addr.port()),
        format!("http://127.0.0.1:{}/", failing.addr.port()),
    );
    let (_web, url) = dsh_web_at(&peers, home.path(), &models.url);

    // Two tabs of DSH's web UI, one conversation in each: the first verifies the
    // passing app, then the second the failing one.
    let mut first = WebUi::open(&url);
    first.send(PASSING_ASK);
    first.wait_for("Verification VERIFIED");
    first.click("tab", "Live Preview");
    first.shows_only_its_own_verification("VERIFIED", &passing_url, &failing_url);
    let mut second = WebUi::open(&url);
    second.send(FAILING_ASK);
    second.wait_for("Verification FAILED");
    second.click("tab", "Live Preview");
    second.shows_only_its_own_verification("FAILED", &failing_url, &passing_url);
    second.keep_screenshot("live-preview-conversation-failing");

    // The first conversation's Live Preview, opened again (it reads the host half
    // afresh), still shows its own verification, not the latest of the process.
    first.click("tab", "Chat");
    first.click("tab", "Live Preview");
    first.shows_only_its_own_verification("VERIFIED", &passing_url, &failing_url);
    first.keep_screenshot("live-preview-conversation-passing");

    // Its Verify runs its own verification again: the new report is of its app.
    let before = verify_reports(home.path());
    first.click("button", "Verify");
    let new = wait_for(Duration::from_secs(30), || {
        let new: Vec<_> = verify_reports(home.path()).difference(&before).cloned().collect();
        if new.is_empty() {
            Err("the view's Verify wrote no report".to_owned())
        } else {
            Ok(new)
        }
    });
    for report in new {
        let text = std::fs::read_to_string(&report).unwrap();
        assert!(
            text.contains(&passing_url) && !text.contains(&failing_url),
            "{}: {text}",
            report.display()
        );
    }
}

/// An app whose button tries to take DSH's tab away (`top.location`) and says
/// what its script saw.
const ESCAPING_APP: &str = "<!doctype html><title>Escaping app</title><h1>Framed app</h1>\
<button onclick=\"const out = document.getElementById('outcome'); try { top.location.href = location.origin + '/escaped'; out.textContent = 'navigation started'; } catch (e) { out.textContent = 'navigation refused: ' + e.name; }\">Leave DSH</button><p id=outcome></p>";

#[test]
fn an_app_framed_in_the_live_preview_cannot_navigate_dsh_away() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = serve_html(ESCAPING_APP);
    let model = FakeModel::start(
        "liveloop_verify",
        &serde_json::json!({
            "appUrl": format!("http://127.0.0.1:{}/", app.addr.port()),
            "assertions": [{ "kind": "element", "role": "button", "name": "Leave DSH" }],
        }),
    );
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let seen = walk_as_a_person(&peers, "live_preview_frame.py", &url, &[]);
    let sandbox = seen["sandbox"].as_str().unwrap_or_default();
    for token in ["allow-scripts", "allow-forms", "allow-same-origin"] {
        assert!(sandbox.split(' ').any(|t| t == token), "{token} missing: {seen}");
    }
    assert!(!sandbox.contains("allow-top-navigation"), "{seen}");
    assert_eq!(seen["outcome"], "navigation refused: SecurityError", "{seen}");
    assert_eq!(
        seen["after"], seen["before"],
        "DSH's tab stayed where it was: {seen}"
    );
    assert!(
        seen["after"].as_str().unwrap_or_default().starts_with(&url),
        "{seen}"
    );
}

/// The Live Preview's buttons as a person uses them (`harness/dsh-ui/live_preview_buttons.py`):
/// Open and Copy give the exact URL verified, Reload shows the page as it is now,
/// and a failed Reload stays visible through refreshes until dismissed.
#[test]
fn the_live_preview_buttons_act_on_exactly_the_verified_page_and_their_errors_stay() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    // The script serves the app itself (so it can stop it) at a path and query,
    // which every button must keep.
    let port = crate::support::free_port();
    let path = "/shop/?tab=2";
    let app_url = format!("http://127.0.0.1:{port}{path}");
    let model = FakeModel::start(
        "liveloop_verify",
        &serde_json::json!({ "appUrl": app_url, "assertions": [{ "kind": "text_present", "text": "Shop" }] }),
    );
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let seen = walk_as_a_person(
        &peers,
        "live_preview_buttons.py",
        &url,
        &[&port.to_string(), path],
    );
    for field in ["openHref", "openedUrl", "copied", "urlField"] {
        assert_eq!(seen[field], app_url.as_str(), "{field}: {seen}");
    }
    assert_eq!(seen["openRel"], "noopener noreferrer", "{seen}");
    let reloads = &seen["reloads"];
    let first = reloads[0]
        .as_u64()
        .unwrap_or_else(|| panic!("no count after Reload: {seen}"));
    assert_eq!(
        reloads[1].as_u64(),
        Some(first + 1),
        "each Reload loads the page again: {seen}"
    );
    assert!(
        seen["liveImageWidth"].as_u64() > Some(0),
        "the fresh screenshot shows: {seen}"
    );
    let error = seen["errorAfterRefreshes"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Reload failed: "),
        "the error outlived two refreshes: {seen}"
    );
    assert_eq!(seen["errorDismissed"], true, "{seen}");
}

/// Waits (bounded) until no process carries this DSH home; panics with the survivors.
fn assert_nothing_left(dsh_home: &std::path::Path) {
    wait_for(Duration::from_secs(20), || {
        let left = processes_of(dsh_home);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("left behind: {left:#?}"))
        }
    });
}

#[test]
fn a_dev_server_start_asks_the_user_in_the_web_ui() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    // The workspace (DSH's working directory) holds the example app.
    let app = home.join("app");
    std::fs::create_dir(&app).unwrap();
    copy_hello_app(&app);
    let model = FakeModel::start(
        "liveloop_runtime",
        &serde_json::json!({ "operation": "start", "dir": "app", "confirm": true }),
    );
    let (mut web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);

    // Reject: nothing starts, and the agent is told what to ask. The question
    // names what would start.
    ui.send("Start the app.");
    ui.wait_for("Allow once");
    ui.wait_for("dshkit wants to start the dev server: dshkit's own static file server in ");
    ui.keep_screenshot("approval-card");
    ui.click_until("button", "Reject", "the user rejected it");

    // Allow once: the server starts and answers.
    ui.click_first("button", "New session");
    ui.send("Start the app.");
    ui.wait_for("Allow once");
    ui.click_until("button", "Allow once", "Ready http://127.0.0.1:");
    ui.click("tab", "Live Preview");
    ui.wait_for(": ready at http://127.0.0.1:");
    ui.keep_screenshot("live-preview-server");
    let server_url = ui
        .page_text()
        .split(": ready at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .unwrap();

    // Another conversation neither lists nor stops this conversation's server.
    let mut other = WebUi::open(&url);
    other.send("Start the app.");
    other.wait_for("Allow once");
    other.click_until("button", "Reject", "the user rejected it");
    other.click("tab", "Live Preview");
    other.wait_for("Dev servers: none started in this conversation");
    assert!(!other.page_text().contains(&server_url), "{}", other.page_text());
    drop(other);
    let answers = || {
        std::net::TcpStream::connect(server_url.trim_start_matches("http://").trim_end_matches('/')).is_ok()
    };
    assert!(answers(), "{server_url} still answers");
    // This conversation's Stop stops it.
    ui.click("button", "Stop");
    wait_until(Duration::from_secs(30), "Stop left the server answering", || {
        !answers()
    });

    // Disposing DSH (SIGTERM) takes the sidecar and everything it started with it.
    drop(ui);
    assert!(dshkit_os::process::Identity::of(web.pid()).unwrap().terminate());
    let _ = web.child.wait();
    assert_nothing_left(&dsh_home);
}

/// An app whose dev server (`npm run dev`) listens only once a file named `go`
/// exists in its directory: its start is seen starting, then ready.
fn gated_app(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "gated-app", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("server.js"),
        r#"const http = require("http"), fs = require("fs");
const listen = () => {
  const server = http.createServer((req, res) => res.end("<!doctype html><title>gated</title><h1>Gated app</h1>"));
  server.listen(0, "127.0.0.1", () => console.log(`  Local:   http://127.0.0.1:${server.address().port}/`));
};
const wait = setInterval(() => { if (fs.existsSync("go")) { clearInterval(wait); listen(); } }, 50);
"#,
    )
    .unwrap();
}

#[test]
fn an_approval_names_what_will_run_and_the_server_shows_starting_then_ready() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = home.join("app");
    gated_app(&app);
    std::fs::create_dir(home.join("empty")).unwrap();
    // One turn: a start where there is no app, then the app's.
    let model = FakeModel::sequence(
        &[
            (
                "liveloop_runtime",
                serde_json::json!({"operation": "start", "dir": "empty"}),
            ),
            (
                "liveloop_runtime",
                serde_json::json!({"operation": "start", "dir": "app"}),
            ),
        ],
        false,
    );
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Start the app.");
    // What cannot run is refused before anyone is asked; what can is named:
    // the command, the directory and the port.
    ui.wait_for("did not start the dev server:");
    let app_dir = dshkit_os::fs::canonicalize(&app).unwrap();
    ui.wait_for(&format!(
        "dshkit wants to start the dev server: `npm run dev` in {} (port: the one it prints)",
        app_dir.display()
    ));
    ui.keep_screenshot("approval-names-the-command");
    let text = ui.page_text();
    assert_eq!(
        text.matches("dshkit wants to start the dev server").count(),
        1,
        "only the start that can run is asked about: {text}"
    );
    ui.click_until("button", "Allow once", "Live Preview");
    ui.click("tab", "Live Preview");
    ui.wait_for("Dev server starting: `npm run dev` in");
    ui.keep_screenshot("live-preview-server-starting");
    std::fs::write(app.join("go"), "").unwrap();
    ui.wait_for(": ready at http://127.0.0.1:");
    let text = ui.page_text();
    assert!(!text.contains("Dev server starting"), "{text}");
}

#[test]
fn a_person_starts_the_workspaces_app_from_the_live_preview_after_reading_what_will_run() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = home.join("app");
    gated_app(&app);
    let model = FakeModel::start("dshkit_info", &serde_json::json!({}));
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Hello.");
    ui.click_past_notice("tab", "Live Preview", "button \"Start app…\"");
    ui.click("button", "Start app…");
    // What would run is shown first, and nothing runs yet.
    let app_dir = dshkit_os::fs::canonicalize(&app).unwrap();
    ui.wait_for(&format!(
        "Start: `npm run dev` in {} (port: the one it prints)?",
        app_dir.display()
    ));
    ui.keep_screenshot("live-preview-start-plan");
    assert!(
        processes_mentioning(&app_dir.to_string_lossy()).is_empty(),
        "the plan started something"
    );
    ui.click("button", "Start");
    ui.wait_for("Dev server starting: `npm run dev` in");
    std::fs::write(app.join("go"), "").unwrap();
    ui.wait_for(": ready at http://127.0.0.1:");
    // It is this conversation's server: Restart names it and plans its command.
    let text = ui.page_text();
    let id = text
        .split("Server ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no server listed: {text}"))
        .to_owned();
    // Its log's last lines, as the server printed them.
    ui.click("button", "Log");
    ui.wait_for("Local:   http://127.0.0.1:");
    ui.keep_screenshot("live-preview-server-log");
    ui.click("button", "Hide log");
    ui.click("button", &format!("Restart {id}…"));
    ui.wait_for(&format!("Restart {id}: `npm run dev` in {}", app_dir.display()));
    ui.click("button", "Cancel");
    ui.click("button", "Stop");
    wait_until(Duration::from_mins(1), "Stop left the server ready", || {
        !ui.page_text().contains(": ready at ")
    });
}

#[test]
fn after_dsh_restarts_the_card_still_shows_its_screenshot_and_the_live_preview_its_verdict() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    let app = serve_page();
    let model = model_verifying(&app);
    let (web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    ui.wait_for("every criterion held");
    ui.wait_for_outline("img \"dshkit screenshot\"");
    let state = dsh_home.join("dshkit-plugin/live-preview.json");
    assert!(state.is_file(), "the plugin kept its views' state");
    // DSH titles a conversation in a model call of its own after the turn; the
    // title is how the conversation is found again, so it must be stored first.
    ui.wait_for_outline("treeitem \"dshkit check");
    drop(ui);
    drop(web);

    // A new DSH process on the same home: the conversation, opened again, shows
    // the card's thumbnail and its Live Preview the verdict.
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    // The sidebar names it by its title and age ("dshkit checknow").
    let outline = ui.wait_for_outline("treeitem \"dshkit check");
    let name = outline
        .split("treeitem \"")
        .filter_map(|rest| rest.split('"').next())
        .find(|name| name.starts_with("dshkit check"))
        .unwrap_or_else(|| panic!("no conversation to open again in: {outline}"))
        .to_owned();
    ui.click_first("treeitem", &name);
    ui.wait_for("every criterion held");
    let chat = ui.wait_for_outline("img \"dshkit screenshot\"");
    assert!(!chat.contains("no screenshot image is known"), "{chat}");
    ui.keep_screenshot("verification-card-after-restart");
    ui.click_past_notice("tab", "Live Preview", "button \"Verify\"");
    ui.wait_for("Latest verdict:");
    ui.wait_for("every criterion held and the evidence is complete");
}

#[test]
fn a_failing_client_half_leaves_the_dsh_ui_working() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    // Break the installed client half twice: its RPC channel does not exist, and
    // the Verification Card throws while rendering.
    let client = dsh_home.join("profiles/web/plugins/dshkit/client.js");
    let original = std::fs::read_to_string(&client).unwrap();
    let broken = original
        .replacen("const CHANNEL = '/dshkit';", "const CHANNEL = '/dshkit-gone';", 1)
        .replacen(
            "function VerificationCard({ block, dshkitRpc, sessionId: conversation }) {",
            "function VerificationCard({ block, dshkitRpc, sessionId: conversation }) {\n      throw new Error('card render failed on purpose');",
            1,
        );
    assert_ne!(broken, original, "the client half changed");
    std::fs::write(&client, broken).unwrap();

    let app = serve_page();
    let model = model_verifying(&app);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    // The card's failure stays inside the card; the conversation goes on.
    ui.wait_for("this view failed (card render failed on purpose)");
    ui.wait_for(ANSWER_PREFIX.trim_end());
    ui.click("tab", "Live Preview");
    ui.wait_for("dshkit Live Preview:");
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    assert!(!outline.contains("Failed to load plugins"), "{outline}");
    assert!(
        outline.contains("textbox \"Message the agent\""),
        "DSH's composer is still there: {outline}"
    );
    assert!(outline.contains("tab \"Chat\""), "{outline}");
    ui.keep_screenshot("client-half-failures");
}

#[test]
fn an_app_that_refuses_framing_is_shown_as_screenshots_and_says_why() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(|| async { ([("x-frame-options", "DENY")], axum::response::Html(PAGE)) }),
        ),
        true,
    );
    let model = model_verifying(&app);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    ui.wait_for("every criterion held");
    ui.click("tab", "Live Preview");
    ui.wait_for("does not allow framing (X-Frame-Options: DENY): showing screenshots");
    let outline = ui.wait_for_outline("img \"dshkit screenshot\"");
    assert!(
        !outline.contains("iframe content is not included"),
        "no frame: {outline}"
    );
}

/// The number of the live frame the Live Preview's caption names
/// ("Live · frame N · …"), once it names one, and the caption.
fn live_frame(ui: &mut WebUi) -> (u64, String) {
    wait_for(Duration::from_secs(90), || {
        let text = ui.page_text();
        let caption = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("Live · frame "))
            .map(str::to_owned);
        caption
            .and_then(|c| {
                let n = c.strip_prefix("Live · frame ")?.split(' ').next()?.parse().ok()?;
                Some((n, c))
            })
            .ok_or_else(|| format!("no live frame caption in: {text}"))
    })
}

/// How long the Live Preview stays hidden while the test looks for frames.
const HIDDEN_FOR: Duration = Duration::from_secs(8);

/// A page whose text and title tick every 100 ms, refusing to be framed, with a
/// second page to go to.
fn ticking_app() -> LoopbackServer {
    const TICKING: &str = "<!doctype html><title>tick 0</title><h1 id=t>tick 0</h1>\
        <a href=\"/second\">Second page</a><script>let n = 0; setInterval(() => { n++; \
        document.title = 'tick ' + n; document.getElementById('t').textContent = 'tick ' + n; }, 100);</script>";
    const SECOND: &str = "<!doctype html><title>Second page</title><h1>The second page</h1>";
    let deny = [("x-frame-options", "DENY")];
    LoopbackServer::start(
        axum::Router::new()
            .route(
                "/",
                axum::routing::get(move || async move { (deny, axum::response::Html(TICKING)) }),
            )
            .route(
                "/second",
                axum::routing::get(move || async move { (deny, axum::response::Html(SECOND)) }),
            ),
        true,
    )
}

/// What a running DSH web test holds: its home, its model and its `dsh web`.
struct RunningDsh {
    _web: ChildGuard,
    _model: FakeModel,
    _home: crate::support::Home,
}

/// A `dsh web` whose agent verified `root` (that `text` is present) and whose
/// Live Preview is open once the card says `verdict`; the app refuses framing,
/// so the view shows live frames.
fn live_preview_after_a_verification(root: &str, text: &str, verdict: &str) -> (RunningDsh, WebUi) {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let model = FakeModel::start(
        "liveloop_verify",
        &serde_json::json!({"appUrl": root, "assertions": [{"kind": "text_present", "text": text}]}),
    );
    let (web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    ui.wait_for(verdict);
    ui.click_past_notice("tab", "Live Preview", "Live Preview");
    ui.wait_for("does not allow framing (X-Frame-Options: DENY)");
    (
        RunningDsh {
            _web: web,
            _model: model,
            _home: home,
        },
        ui,
    )
}

#[test]
fn the_live_preview_shows_live_frames_only_while_shown_and_its_url_bar_drives_the_preview() {
    let app = ticking_app();
    let root = format!("http://127.0.0.1:{}/", app.addr.port());
    let (_dsh, mut ui) = live_preview_after_a_verification(&root, "tick", "every criterion held");

    // Frames follow the page: its title, which the caption shows, moves on.
    let (first, caption) = live_frame(&mut ui);
    wait_for(Duration::from_secs(90), || {
        let (n, now) = live_frame(&mut ui);
        if n > first && now.rsplit(" · ").next() != caption.rsplit(" · ").next() {
            Ok(())
        } else {
            Err(format!("the frame did not change from {caption:?}: {now:?}"))
        }
    });
    ui.wait_for_outline(&format!("img \"Live preview of {root}\""));
    ui.keep_screenshot("live-preview-frames");

    // Hidden, the view asks for no frames. The rate while shown says how many
    // a pause would have had; the preview took at most the in-flight ones, and
    // those of the moments the view was shown around the pause.
    let (shown_from, shown_at) = (live_frame(&mut ui).0, std::time::Instant::now());
    std::thread::sleep(Duration::from_secs(4));
    let (before, before_at) = (live_frame(&mut ui).0, std::time::Instant::now());
    #[expect(clippy::cast_precision_loss, reason = "frame counts are small")]
    let rate = (before - shown_from) as f64 / (before_at - shown_at).as_secs_f64();
    assert!(before > shown_from, "no frames while shown");
    ui.click("tab", "Chat");
    std::thread::sleep(HIDDEN_FOR);
    ui.click("tab", "Live Preview");
    let (after, after_at) = (live_frame(&mut ui).0, std::time::Instant::now());
    let shown = (after_at - before_at).saturating_sub(HIDDEN_FOR).as_secs_f64();
    #[expect(clippy::cast_precision_loss, reason = "frame counts are small")]
    let taken = (after - before) as f64;
    assert!(
        taken <= rate * shown + 2.0,
        "frames were taken while the view was hidden: {taken} in {:?} at {rate:.2}/s while shown",
        after_at - before_at
    );

    // The URL bar drives the conversation's preview: Go, Back, Forward.
    ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Address", "text": "/second"}));
    ui.click("button", "Go");
    ui.wait_for("· Second page");
    ui.click("button", "Back");
    ui.wait_for_outline(&format!("img \"Live preview of {root}\""));
    ui.click("button", "Forward");
    ui.wait_for("· Second page");
    // Another origin is refused by the preview's policy, and the error stays.
    ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Address", "text": "http://example.com/"}));
    ui.click("button", "Go");
    ui.wait_for("Go failed:");
    ui.keep_screenshot("live-preview-url-bar");
}

/// An app that refuses framing, titles itself by the layout its CSS chose (wide
/// above 600 CSS px, narrow below), logs an error, asks for a page that is not
/// there and for an external host the preview's policy blocks.
fn busy_app() -> LoopbackServer {
    const PAGE: &str = "<!doctype html><meta name=viewport content=\"width=device-width\"><title>?</title>\
        <h1>Layouts</h1><script>const narrow = matchMedia('(max-width: 600px)');\
        const name = () => { document.title = narrow.matches ? 'Narrow layout' : 'Wide layout'; };\
        name(); narrow.addEventListener('change', name);\
        console.error('the app could not load its settings');\
        fetch('/settings.json').catch(() => {}); fetch('http://example.com/track').catch(() => {});</script>";
    let deny = [("x-frame-options", "DENY")];
    LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(move || async move { (deny, axum::response::Html(PAGE)) }),
        ),
        true,
    )
}

/// Waits until the live frame's caption holds `expected` (it names the frame's
/// viewport and the page's title).
fn caption_shows(ui: &mut WebUi, expected: &str) {
    wait_for(Duration::from_secs(90), || {
        let (_, caption) = live_frame(ui);
        if caption.contains(expected) {
            Ok(())
        } else {
            Err(format!("the caption is {caption:?}"))
        }
    });
}

#[test]
fn the_live_preview_switches_the_viewport_and_lists_what_the_pages_console_and_network_saw() {
    let app = busy_app();
    let root = format!("http://127.0.0.1:{}/", app.addr.port());
    // The page's console error and missing file fail it.
    let (_dsh, mut ui) = live_preview_after_a_verification(&root, "Layouts", "Verification FAILED");
    caption_shows(&mut ui, "Desktop 1280×800 · Wide layout");

    // What the page's console and network saw, each with its reason.
    ui.click("button", "▸ Console and network");
    ui.wait_for("the app could not load its settings");
    ui.wait_for(&format!("GET {root}settings.json"));
    ui.wait_for("http://example.com/track");
    ui.wait_for("external_host");
    ui.keep_screenshot("live-preview-activity");

    // The switch re-lays the page out as a phone: the app's own media query
    // answers, and its title (in the frame's caption) says so.
    ui.click("button", "Mobile");
    caption_shows(&mut ui, "Mobile 390×844 · Narrow layout");
    ui.keep_screenshot("live-preview-mobile");
    ui.click("button", "Desktop");
    caption_shows(&mut ui, "Desktop 1280×800 · Wide layout");
}

/// The newest verification report of `home` (by its `verify-<ms>` name) as JSON.
fn newest_report(home: &std::path::Path) -> serde_json::Value {
    let newest = verify_reports(home)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .max_by_key(|p| p.file_name().map(std::ffi::OsStr::to_os_string))
        .expect("a verification report");
    serde_json::from_slice(&std::fs::read(&newest).unwrap()).unwrap()
}

#[test]
fn a_settings_change_is_refused_with_its_rule_or_applies_to_the_next_verification_without_a_restart() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = serve_page();
    let model = model_verifying(&app);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    // The agent verifies first, so dshkit's sidecar runs before the change.
    ui.send("Verify the app.");
    ui.wait_for("every criterion held");
    let before = newest_report(home.path());
    assert_eq!(
        before["timings"]["quietWindowMs"], 100,
        "the default quiet window: {before:#}"
    );

    open_dshkit_settings(&mut ui);
    // Each field shows its rule and its default.
    ui.wait_for("A whole number from 0 to 5000 ms; default 100 ms.");
    ui.wait_for("A whole number from 1 to 64 previews; default 4 previews.");
    let fill = |ui: &mut WebUi, field: &str, value: &str| {
        ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": field, "text": value}));
    };
    // What a person may type by mistake: each refused under its field with the
    // Rust side's rule, and nothing is stored.
    fill(&mut ui, "Quiet window", "abc");
    fill(&mut ui, "Preview session limit", "1,200");
    ui.click("button", "Save dshkit settings");
    ui.wait_for("Quiet window must be a whole number from 0 to 5000 ms, not \"abc\"");
    ui.wait_for("Preview session limit must be a whole number from 1 to 64 previews, not \"1,200\"");
    ui.wait_for("Not saved: 2 values break their rules (Preview session limit, Quiet window; each rule is under its field). The stored settings are unchanged.");
    ui.keep_screenshot("settings-refused");
    let settings_file = home.path().join(".config/dshkit/settings.json");
    assert!(!settings_file.exists(), "an invalid value is never written");

    fill(&mut ui, "Preview session limit", "");
    fill(&mut ui, "Quiet window", "30.5");
    ui.click("button", "Save dshkit settings");
    ui.wait_for("Quiet window must be a whole number from 0 to 5000 ms, not \"30.5\"");
    fill(&mut ui, "Quiet window", "1234");
    ui.click("button", "Save dshkit settings");
    ui.wait_for("Quiet window: default → 1234 ms");
    ui.wait_for("no restart is needed");
    ui.keep_screenshot("settings");
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&settings_file).unwrap()).unwrap();
    assert_eq!(stored, serde_json::json!({"quietWindowMs": 1234}));

    // The running sidecar applies it: the Live Preview's Verify (no model, no
    // restart) loads the page with the new quiet window.
    ui.op(serde_json::json!({"operation": "press", "key": "Escape"}));
    let reports = || verify_reports(home.path()).len();
    let written = reports();
    ui.click_past_notice("tab", "Live Preview", "button \"Verify\"");
    ui.click("button", "Verify");
    wait_until(
        Duration::from_mins(1),
        "the view's Verify wrote no report",
        || reports() > written,
    );
    let after = newest_report(home.path());
    assert_eq!(after["timings"]["quietWindowMs"], 1234, "{after:#}");
    assert_eq!(after["verdict"], "VERIFIED", "{after:#}");
}

#[test]
fn a_running_verification_shows_its_stage_and_a_stop_cancels_it_in_the_sidecar() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    // A step that waits (up to 30 s) for text the page never shows: the call runs
    // until something stops it.
    let app = serve_page();
    let mut arguments = crate::support::verify_arguments(&app);
    arguments["steps"] = serde_json::json!([{ "action": "wait", "text": "never shown", "timeoutMs": 30000 }]);
    let model = FakeModel::start("liveloop_verify", &arguments);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);

    // The running Verification Card shows the stage the sidecar reported.
    ui.send("Verify the app.");
    ui.wait_for("(step 1/1: wait \"never shown\")");
    ui.keep_screenshot("verification-card-running");
    // DSH's own stop aborts the call; the sidecar hears it as
    // notifications/cancelled, stops the work and says so in its log.
    ui.click("button", "Stop generating");
    ui.click("tab", "Live Preview");
    ui.wait_for("liveloop_verify was cancelled by the client; its work was stopped");
    ui.keep_screenshot("sidecar-log-cancelled");
}

/// Whether a failed operation's target may only not be there yet: not rendered,
/// re-rendered, or covered by DSH's welcome notice.
fn not_there_yet(failure: &str) -> bool {
    failure.contains("ELEMENT_NOT_FOUND")
        || failure.contains("STALE_ELEMENT_REF")
        || failure.contains("did not take the focus")
}

/// What the reworded dshkit says instead of every tool result's text.
const REWORDED: &str = "dshkit said this in words the plugin has never seen";

/// A dshkit whose tool results say [`REWORDED`] instead of their text, as a
/// change of the Rust side's wording would: everything else (the structured
/// content, the images, every other command) is the real binary's.
fn reworded_dshkit(dir: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("reworded-dshkit");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env python3
import json, os, subprocess, sys
REAL = {real:?}
if "--stdio" not in sys.argv[1:]:
    os.execv(REAL, [REAL, *sys.argv[1:]])
child = subprocess.Popen([REAL, *sys.argv[1:]], stdout=subprocess.PIPE)
for line in child.stdout:
    try:
        message = json.loads(line)
        for block in (message.get("result") or {{}}).get("content") or []:
            if block.get("type") == "text":
                block["text"] = {reworded:?}
        line = (json.dumps(message) + "\n").encode()
    except (ValueError, AttributeError):
        pass
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait())
"#,
            real = dshkit().display().to_string(),
            reworded = REWORDED,
        ),
    )
    .unwrap();
    dshkit_os::fs::set_mode(&script, 0o755).unwrap();
    script
}

#[test]
fn the_verification_card_and_the_live_preview_show_the_structured_report_whatever_its_text_says() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    // The plugin row runs the reworded dshkit instead of the binary it names
    // (the one the install put beside the plugin).
    let patch = dsh_home.join("profiles/web/cordis.patch.yml");
    let row = std::fs::read_to_string(&patch).unwrap();
    let binary = row
        .lines()
        .find_map(|line| line.trim().strip_prefix("binary: "))
        .unwrap_or_else(|| panic!("the row names no binary: {row}"))
        .to_owned();
    let reworded = reworded_dshkit(home.path());
    std::fs::write(&patch, row.replace(&binary, &reworded.display().to_string())).unwrap();

    let app = serve_page();
    let model = model_verifying(&app);
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.send("Verify the app.");
    // The text was reworded on its way: the model's answer carries the new words.
    ui.wait_for(REWORDED);
    let answered = model.turn_requests().last().cloned().unwrap().to_string();
    assert!(
        answered.contains(REWORDED) && !answered.contains("every criterion held"),
        "the model got the reworded text only: {answered}"
    );
    // The card still shows the verdict, the reasons, the checks and the next
    // action, and the thumbnail of the report's screenshot.
    ui.wait_for("Verification VERIFIED");
    ui.wait_for("every criterion held and the evidence is complete");
    ui.wait_for("✓ text_present \"Hello from the native plugin\": found in the page text");
    ui.wait_for("Next: Done: cite this report as evidence.");
    ui.wait_for_outline("img \"dshkit screenshot\"");
    ui.keep_screenshot("verification-card-reworded");
    // So does the Live Preview.
    ui.click("tab", "Live Preview");
    ui.wait_for("Latest verdict: VERIFIED every criterion held and the evidence is complete");
    ui.keep_screenshot("live-preview-reworded");
}

#[test]
fn the_echo_tab_lists_the_conversations_replayed_calls_with_hit_miss_and_the_nearest_recorded_call() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let (root, registry) = recorded_everything(&peers, &home, &dsh_home);
    install_with_echo(&home, &dsh_home, "web", &registry);
    // `dsh web` takes no `--patch`: the replay row joins the web profile's own patch.
    let replay = echo_overlay(&home, &dsh_home, &root.join("everything.jsonl"), "replay", None);
    let profile_patch = dsh_home.join("profiles/web/cordis.patch.yml");
    let mut patch = std::fs::read_to_string(&profile_patch).unwrap();
    patch.push('\n');
    patch.push_str(&std::fs::read_to_string(&replay).unwrap());
    std::fs::write(&profile_patch, patch).unwrap();
    // The secret rides in a call that misses: the tab shows no argument DSH
    // stored, only the recorded call nearest to it, redacted again.
    let model = FakeModel::sequence(
        &[
            (
                "mcp__everything__echo",
                serde_json::json!({"message": RECORDED_GREETING}),
            ),
            (
                "mcp__everything__echo",
                serde_json::json!({"message": "a greeting never recorded"}),
            ),
        ],
        false,
    );
    let (_web, url) = dsh_web_at(&peers, home.path(), &model.url);
    let mut ui = WebUi::open(&url);
    ui.send("Echo two greetings.");
    ui.wait_for(ANSWER_PREFIX.trim_end());
    ui.click_past_notice("tab", "Echo", "combobox \"Outcome\"");
    ui.wait_for("2 call(s) through Echo: 1 hit, 1 miss");
    ui.wait_for("was recorded, but with other arguments");
    let text = ui.page_text();
    assert!(text.contains("everything/echo"), "{text}");
    assert!(text.contains("Differs at: message"), "{text}");
    // The hit names the recorded call that answered; the miss the one nearest to it.
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    let ordinal = outline
        .split("button \"▸ Recorded call #")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the hit names no recorded call: {outline}"))
        .to_owned();
    assert!(
        outline.contains(&format!("button \"▸ Nearest recorded call #{ordinal}\"")),
        "{outline}"
    );
    ui.click("button", &format!("▸ Nearest recorded call #{ordinal}"));
    ui.wait_for("Recorded request (redacted again)");
    let text = ui.page_text();
    assert!(
        text.contains(&format!("\"message\": \"{RECORDED_GREETING}\"")),
        "the nearest recorded call's request is shown: {text}"
    );
    ui.keep_screenshot("echo-tab");
    // Only the misses: the hit and its recorded call leave the list.
    ui.op(
        serde_json::json!({"operation": "select", "role": "combobox", "name": "Outcome", "option": "miss"}),
    );
    wait_until(
        Duration::from_secs(30),
        "the outcome filter left the hit listed",
        || {
            !ui.op(serde_json::json!({"operation": "snapshot"}))
                .contains("Recorded call #")
        },
    );
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    assert!(
        outline.contains(&format!("Nearest recorded call #{ordinal}")),
        "the miss stays: {outline}"
    );
}

#[test]
fn a_person_switches_an_http_servers_echo_mode_in_the_settings_and_confirms_before_it_reaches_the_real_server()
 {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let root = echo_root(&home);
    let (_server, upstream) = everything_http(&peers);
    let port = free_port();
    install_with_echo(
        &home,
        &dsh_home,
        "web",
        &http_registry(&home, &root, "record", port, &upstream),
    );
    // DSH's own row for the server, in the web profile's patch, waits for the proxy.
    let profile_patch = dsh_home.join("profiles/web/cordis.patch.yml");
    let mut patch = std::fs::read_to_string(&profile_patch).unwrap();
    patch.push('\n');
    patch.push_str(&std::fs::read_to_string(web_row(&home, port)).unwrap());
    std::fs::write(&profile_patch, patch).unwrap();
    let model = FakeModel::sequence(
        &[("mcp__web__echo", serde_json::json!({"message": "never recorded"}))],
        false,
    );
    let (_web, url) = dsh_web_at(&peers, home.path(), &model.url);
    let mut ui = WebUi::open(&url);
    open_dshkit_settings(&mut ui);
    // Recording reaches the real server, and the section says so.
    ui.wait_for(
        "record: every call goes to the real server, and what it does (writes, sends, spends) happens",
    );

    // To replay: nothing reaches a server, so no confirmation is asked.
    let mode = |ui: &mut WebUi, option: &str| {
        ui.op(serde_json::json!({"operation": "select", "role": "combobox", "name": "Echo mode of web", "option": option}));
    };
    mode(&mut ui, "replay");
    ui.wait_for("Switched web: record → replay. Its proxy restarted; DSH reconnects to it.");
    let kept = walk_files(home.path())
        .into_iter()
        .find(|file| file.ends_with("echo-modes.json"))
        .expect("the switch is kept");
    let kept: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(kept).unwrap()).unwrap();
    assert_eq!(
        kept,
        serde_json::json!({"version": 1, "modes": {"web": "replay"}})
    );

    // Back to record: asked first, and Cancel changes nothing.
    mode(&mut ui, "record");
    ui.wait_for("Switch web to record? In record, every call goes to the real server");
    ui.keep_screenshot("echo-mode-confirm");
    ui.click("button", "Cancel");
    wait_until(
        Duration::from_secs(30),
        "the confirmation stayed after Cancel",
        || !ui.page_text().contains("Switch web to record?"),
    );
    // Confirmed, it is refused for a reason the person can act on, and replay stays.
    mode(&mut ui, "record");
    ui.click_past_notice("button", "Switch to record", "alert");
    ui.wait_for("web stays replay: cassette \"web\" records over HTTP into web.jsonl, which exists");
    ui.keep_screenshot("echo-modes");

    // The switch is what runs: a call now misses the cassette instead of reaching the server.
    ui.op(serde_json::json!({"operation": "press", "key": "Escape"}));
    ui.send("Echo a greeting.");
    ui.wait_for(ANSWER_PREFIX.trim_end());
    ui.click_past_notice("tab", "Echo", "combobox \"Outcome\"");
    ui.wait_for("1 call(s) through Echo: 1 miss");
    let text = ui.page_text();
    assert!(text.contains("replay · cassette web"), "{text}");
    assert!(!text.contains("is in record mode"), "{text}");

    // Passthrough, confirmed: the proxy restarts, and the Echo tab says what now
    // reaches the real server.
    open_dshkit_settings(&mut ui);
    mode(&mut ui, "passthrough");
    ui.wait_for("Switch web to passthrough? In passthrough, a call the cassette does not answer goes to the real server");
    ui.click("button", "Switch to passthrough");
    ui.wait_for("Switched web: replay → passthrough.");
    ui.op(serde_json::json!({"operation": "press", "key": "Escape"}));
    ui.wait_for("web is in passthrough mode: a call the cassette does not answer goes to the real server");
}

/// The structured content of a successful tool call.
fn tool_result(response: &serde_json::Value) -> &serde_json::Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

/// `dsh web` with DevTools (collector, experiments) after one turn, its UI on the
/// conversation's DevTools tab; returns the home, DSH, the UI and the registry.
/// A web home with the plugin installed with DevTools (experiments on, an
/// endpoint on a free port).
fn devtools_home(peers: &Peers) -> (crate::support::Home, PathBuf) {
    let (home, dsh_home) = web_home(peers);
    let installed = output(
        crate::support::dshkit_command(home.path())
            .env("PATH", peers.path_var())
            .args([
                "devtools",
                "setup",
                "--profile",
                "web",
                "--no-boot-check",
                "--experiments",
            ])
            .args(["--endpoint", "127.0.0.1:0", "--dsh-home"])
            .arg(&dsh_home),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    (home, dsh_home)
}

fn devtools_tab(peers: &Peers) -> (crate::support::Home, ChildGuard, WebUi, PathBuf) {
    let (home, dsh_home) = devtools_home(peers);
    let model = FakeModel::sequence(&[("liveloop_detect", serde_json::json!({}))], false);
    let (web, mut ui) = open_web_ui(peers, home.path(), &model);
    ui.send("Look at the workspace.");
    ui.wait_for(ANSWER_PREFIX.trim_end());
    ui.click_past_notice("tab", "DevTools", "button \"Emergency stop\"");
    (home, web, ui, dsh_home.join("dshkit-devtools"))
}

/// An agent's core over MCP (`dshkit mcp --tools devtools`) attached to the one
/// DSH in `registry`: the MCP session and its debug session.
fn agent_core(registry: &std::path::Path) -> (Session, String) {
    let mut agent = Session::initialized(
        &[
            "--tools",
            "devtools",
            "--devtools-dir",
            &registry.display().to_string(),
        ],
        &[],
    );
    let target = wait_for(Duration::from_mins(1), || {
        let listed = agent.call(1, "cordis_list_debug_targets", &serde_json::json!({}));
        tool_result(&listed)["targets"][0]
            .as_object()
            .cloned()
            .ok_or_else(|| format!("no target: {listed}"))
    });
    let attached = agent.call(
        2,
        "cordis_attach_debug_session",
        &serde_json::json!({"targetId": target["id"]}),
    );
    let session = tool_result(&attached)["debugSessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    (agent, session)
}

#[test]
fn the_devtools_tab_shows_the_runtime_and_a_persons_emergency_stop_ends_an_agents_experiment() {
    let peers = Peers::get();
    let (_home, _web, mut ui, registry) = devtools_tab(&peers);
    // The running DSH as its own collector sees it: its fibers and events.
    ui.wait_for("core(s) attached, this view's included");
    for shown in [
        "Fibers (",
        "active · ",
        "Events (",
        "listener(s)",
        "tools/execute",
        "Recent dispatches (",
        "Journal (the newest",
        "Candidates (",
    ] {
        ui.wait_for(shown);
    }
    // The candidates are the Rust core's (a real DSH has duplicate fiber names),
    // and a turn's dispatches reach the view's own core while the tab is open.
    ui.wait_for("duplicate-fiber-name");
    ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Message the agent", "text": "Look again."}));
    ui.op(serde_json::json!({"operation": "press", "key": "Enter"}));
    ui.wait_for("argument(s)");
    ui.wait_for("dispatch-observed");
    ui.keep_screenshot("devtools-live");

    // An agent starts an experiment over MCP; the person's emergency stop ends it.
    let (mut agent, session) = agent_core(&registry);
    let started = agent.call(
        3,
        "cordis_start_waterfall_experiment",
        &serde_json::json!({"debugSessionId": session, "event": "tools/execute", "ttlMs": 60_000, "confirm": true}),
    );
    let lease = tool_result(&started)["lease"].as_str().unwrap().to_owned();
    ui.wait_for("Profiling tools/execute, owned by an agent (dshkit-");
    ui.click("button", "Emergency stop");
    ui.wait_for("Emergency stop: tools/execute ended; DSH's dispatch restored (identical).");
    let status = agent.call(
        4,
        "cordis_waterfall_experiment_status",
        &serde_json::json!({"debugSessionId": session}),
    );
    let status = tool_result(&status);
    assert!(
        status["running"].is_null(),
        "the agent's next call sees it stopped: {status}"
    );
    assert_eq!(status["last"]["lease"], lease.as_str(), "{status}");
    assert_eq!(status["last"]["reason"], "emergency-stop", "{status}");

    // A person's own profile: the agent can neither take over nor stop it.
    ui.op(serde_json::json!({"operation": "fill", "role": "spinbutton", "name": "Seconds to profile", "text": "30"}));
    ui.click("button", "Profile");
    ui.wait_for("as a person: an agent can neither take it over nor stop it");
    ui.wait_for("owned by you (a person)");
    ui.keep_screenshot("devtools-tab");
    let refused = agent.call(
        5,
        "cordis_start_waterfall_experiment",
        &serde_json::json!({"debugSessionId": session, "event": "tools/execute", "ttlMs": 5000, "confirm": true}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused.to_string().contains("owner human"),
        "the refusal names the owner: {refused}"
    );
    let status = agent.call(
        6,
        "cordis_waterfall_experiment_status",
        &serde_json::json!({"debugSessionId": session}),
    );
    assert_eq!(
        tool_result(&status)["running"]["owner"],
        "human",
        "the person's runs on: {status}"
    );
    ui.click("button", "Emergency stop");
    ui.wait_for("Nothing runs. The last, on");
}

/// DSH's own inspection reads the live runtime through dshkit's read-only
/// `CordisRuntime` provider: an agent in Creator mode (the preset with DSH's
/// `cordis_inspect_*` tools) finds it with `cordis_inspect_list` and queries its
/// summary, an exact event's listeners and an exact fiber name.
#[test]
fn dshs_own_inspection_lists_and_queries_the_cordis_runtime_provider() {
    let peers = Peers::get();
    let (home, dsh_home) = devtools_home(&peers);
    let query = |method: &str, input: serde_json::Value| {
        (
            "cordis_inspect_query",
            serde_json::json!({"platform": "host", "provider": "CordisRuntime", "method": method, "input": input}),
        )
    };
    let model = FakeModel::sequence(
        &[
            ("cordis_inspect_list", serde_json::json!({})),
            query("summary", serde_json::json!({})),
            query("listEvents", serde_json::json!({"event": "tools/execute"})),
            query("listFibers", serde_json::json!({"name": "dshkit"})),
        ],
        false,
    );
    let (_web, mut ui) = open_web_ui(&peers, home.path(), &model);
    ui.wait_for("New Session");
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    if outline.contains("button \"Continue\"") {
        ui.click("button", "Continue");
    }
    ui.click_past_notice("button", "Choose workspace", "button \"Open\"");
    ui.click("button", "Open");
    ui.click("button", "Standard mode");
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    let creator = outline
        .split("menuitem \"Creator mode")
        .nth(1)
        .and_then(|rest| rest.split("[ref=").nth(1))
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no Creator mode in {outline}"))
        .to_owned();
    ui.op(serde_json::json!({"operation": "click", "ref": creator}));
    ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Describe what you want to build", "text": "Inspect the runtime."}));
    ui.op(serde_json::json!({"operation": "press", "key": "Enter"}));
    ui.wait_for(ANSWER_PREFIX.trim_end());

    let requests = model.turn_requests();
    let last = requests.last().expect("the model was asked");
    let results: Vec<serde_json::Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
        })
        .collect();
    assert_eq!(results.len(), 4, "{results:#?}");
    let listed = results[0]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "CordisRuntime")
        .unwrap_or_else(|| panic!("not listed: {}", results[0]));
    assert_eq!(listed["platform"], "host");
    let methods: Vec<&str> = listed["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(methods, ["summary", "listFibers", "listEvents"]);

    // The summary is this DSH's: the pid its collector registered.
    let summary = &results[1]["data"];
    let registered: Vec<String> = std::fs::read_dir(dsh_home.join("dshkit-devtools/targets"))
        .unwrap()
        .filter_map(|e| e.ok()?.path().file_stem()?.to_str().map(str::to_owned))
        .collect();
    assert_eq!(registered, [summary["collector"]["pid"].to_string()], "{summary}");
    assert!(summary["fibers"].as_u64().unwrap() > 50, "{summary}");
    assert!(
        summary["fiberStates"]["active"].as_u64().unwrap() > 50,
        "{summary}"
    );
    let listeners = &results[2]["data"]["listeners"];
    assert!(listeners["total"].as_u64().unwrap() > 0, "{listeners}");
    assert!(
        listeners["items"][0]["ownerName"].is_string(),
        "each listener names its owner: {listeners}"
    );
    let dshkit = &results[3]["data"]["fibers"];
    assert!(
        dshkit["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["state"] == "active"),
        "{dshkit}"
    );
}
