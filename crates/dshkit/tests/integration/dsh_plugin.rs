//! The native DSH plugin (`dshkit dsh install`) in a real DSH: its tools are DSH's
//! own (no `mcp__` prefix), a verification's screenshot becomes a DSH attachment,
//! a dev-server start needs the user's approval, and nothing is left running.

use dshkit_test::{ANSWER_PREFIX, FakeModel, Peers};

use crate::dsh_agent::{dsh_turn, dsh_turn_in, headless_home};
use crate::support::{dshkit_command, output};

const PAGE: &str = "<!doctype html><title>Native</title><h1>Hello from the native plugin</h1>";

fn install(
    home: &std::path::Path,
    dsh_home: &std::path::Path,
    profile: &str,
    extra: &[&str],
) -> std::process::Output {
    output(
        dshkit_command(home)
            .env("PATH", Peers::get().path_var())
            .args(["dsh", "install", "--profile", profile])
            .args(extra)
            .arg("--dsh-home")
            .arg(dsh_home),
    )
}

/// A fresh HOME with the profile made by the real `dsh` and the plugin installed
/// (without the boot proof, which its own test covers).
fn installed_home(peers: &Peers, profile: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (home, dsh_home) = if profile == "web" {
        web_home(peers)
    } else {
        headless_home(peers)
    };
    let installed = install(home.path(), &dsh_home, profile, &["--no-boot-check"]);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    (home, dsh_home)
}

/// Live processes started with this DSH home in their environment (the sidecar and
/// anything it started): DSH passes it to the sidecar, nothing else has it.
fn processes_of(dsh_home: &std::path::Path) -> Vec<String> {
    let needle = format!("DSH_HOME={}", dsh_home.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        if !zombie && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            found.push(format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

fn serve_page() -> dshkit_test::LoopbackServer {
    dshkit_test::LoopbackServer::start(
        axum::Router::new().route("/", axum::routing::get(|| async { axum::response::Html(PAGE) })),
        true,
    )
}

fn verify_arguments(app: &dshkit_test::LoopbackServer) -> serde_json::Value {
    serde_json::json!({
        "appUrl": format!("http://127.0.0.1:{}/", app.addr.port()),
        "assertions": [{ "kind": "text_present", "text": "Hello from the native plugin" }],
    })
}

fn tool_answer(stdout: &str) -> &str {
    stdout
        .split(ANSWER_PREFIX)
        .nth(1)
        .unwrap_or_else(|| panic!("no tool result in the answer:\n{stdout}"))
}

#[test]
fn a_dsh_agent_turn_verifies_through_the_native_tool_and_the_screenshot_is_attached() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");

    let app = serve_page();
    let model = FakeModel::start("liveloop_verify", &verify_arguments(&app));
    let stdout = dsh_turn(&peers, home.path(), None, &model, "Verify the app.");

    let offered: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    for tool in [
        "liveloop_verify",
        "liveloop_runtime",
        "plugin_check",
        "liveloop_browser",
    ] {
        assert!(
            offered.iter().any(|n| n == tool),
            "{tool} is not offered natively: {offered:?}"
        );
    }
    assert!(
        !offered.iter().any(|n| n.starts_with("mcp__dshkit__")),
        "the tools are not doubled through MCP: {offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n.starts_with("cordis_")),
        "the DevTools tools are offered only with the collector: {offered:?}"
    );
    let answer = tool_answer(&stdout);
    assert!(answer.contains("VERIFIED"), "{answer}");
    // The default model reads text only: it gets the attachment id, not the image.
    let attachment = answer
        .split("attached: screenshot ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ',', '\n']).next())
        .unwrap_or_else(|| panic!("no attachment id in the answer:\n{answer}"));
    assert!(attachment.starts_with("sha256:"), "{answer}");
    assert!(answer.contains("this model reads text only"), "{answer}");
    // DSH's attachment store holds the screenshot itself, byte for byte.
    let digest = attachment.trim_start_matches("sha256:");
    let bucket = dsh_home.join("attachments/v1/objects").join(&digest[..2]);
    let stored = std::fs::read_dir(&bucket)
        .unwrap_or_else(|e| panic!("no attachment bucket {}: {e}", bucket.display()))
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(digest))
        .unwrap_or_else(|| panic!("attachment {digest} is not stored under {}", bucket.display()));
    let screenshot = answer
        .split("screenshot: ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no screenshot path in the answer:\n{answer}"));
    assert_eq!(
        std::fs::read(stored.path()).unwrap(),
        std::fs::read(screenshot).unwrap(),
        "the attachment is the verification's screenshot"
    );
    let last = model.requests().last().cloned().unwrap();
    assert!(
        !last.to_string().contains("image_url"),
        "a text-only model never receives an image block"
    );
    let left = processes_of(&dsh_home);
    assert!(left.is_empty(), "DSH left dshkit processes behind: {left:#?}");
}

#[test]
fn ten_verifications_in_one_dsh_conversation_all_get_their_verdicts_and_the_model_never_picks_the_owner() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    let app = serve_page();
    // The model names an owner in every call (another one each time); the plugin
    // drops it and sets the conversation's, so all ten verifications share one
    // preview, and a listing under yet another owner still shows the
    // conversation's own previews.
    let mut calls: Vec<(&str, serde_json::Value)> = (0..10)
        .map(|n| {
            let mut arguments = verify_arguments(&app);
            arguments["owner"] = serde_json::json!(format!("model-owner-{n}"));
            ("liveloop_verify", arguments)
        })
        .collect();
    calls.push((
        "liveloop_browser",
        serde_json::json!({"operation": "list", "owner": "model-owner-list"}),
    ));
    let model = FakeModel::sequence(&calls, false);
    let stdout = dsh_turn(&peers, home.path(), None, &model, "Verify the app ten times.");

    let requests = model.requests();
    let offered = requests
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter(|t| {
            matches!(
                t["function"]["name"].as_str(),
                Some("liveloop_verify" | "liveloop_browser")
            )
        })
        .collect::<Vec<_>>();
    assert!(!offered.is_empty());
    for tool in &offered {
        assert!(
            tool["function"]["parameters"]["properties"]
                .get("owner")
                .is_none(),
            "the model is not offered an owner: {tool}"
        );
    }
    let last = requests.last().unwrap();
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(results.len(), 11, "{results:#?}");
    let mut previews = std::collections::BTreeSet::new();
    for (n, result) in results[..10].iter().enumerate() {
        assert!(result.contains("VERIFIED"), "verification {}: {result}", n + 1);
        let preview = result
            .split("preview session: ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("no preview session in verification {}: {result}", n + 1));
        previews.insert(preview.to_owned());
    }
    assert_eq!(
        previews.len(),
        1,
        "one preview served the conversation: {previews:?}"
    );
    let listed = tool_answer(&stdout);
    let preview = previews.first().unwrap();
    assert!(
        listed.contains(preview.as_str()),
        "the conversation's preview is listed: {listed}"
    );
    let left = processes_of(&dsh_home);
    assert!(left.is_empty(), "DSH left dshkit processes behind: {left:#?}");
}

#[test]
fn a_model_that_accepts_images_receives_the_screenshot() {
    use base64::Engine as _;
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "headless");
    // The default model, declared image-capable in the provider's catalog.
    let overlay = home.path().join("vision.patch.yml");
    std::fs::write(
        &overlay,
        "- id: llm-deepseek\n  config:\n    models:\n      - id: deepseek-v4-flash\n        name: DeepSeek-V4-Flash\n        inputModalities: [text, image]\n",
    )
    .unwrap();
    // A page far taller than DSH's 2000 px per side, verified as a full page: the
    // attachment is its top, fitted, and the agent is told so.
    let tall = format!("{PAGE}<div style=\"height: 9000px; background: linear-gradient(#fff, #36c)\"></div>");
    let app = dshkit_test::LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(move || async move { axum::response::Html(tall) }),
        ),
        true,
    );
    let mut arguments = verify_arguments(&app);
    arguments["fullPage"] = serde_json::json!(true);
    let model = FakeModel::start("liveloop_verify", &arguments);
    let stdout = dsh_turn(&peers, home.path(), Some(&overlay), &model, "Verify the app.");
    let answer = tool_answer(&stdout);
    assert!(answer.contains("attached: screenshot sha256:"), "{answer}");
    assert!(!answer.contains("reads text only"), "{answer}");
    assert!(
        answer.contains("image 1: screenshot, cropped to the top 2000 of"),
        "{answer}"
    );
    let last = model.requests().last().cloned().unwrap().to_string();
    let data = last
        .split("data:image/png;base64,")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "the model request after the tool call carries the PNG: {}",
                &last[..last.len().min(2000)]
            )
        });
    let png = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    let image = dshkit_liveloop::verify::diff::Rgba::from_png(&png).unwrap();
    assert_eq!(
        (image.width, image.height),
        (1280, 2000),
        "the image the model got is fitted"
    );
}

#[test]
fn a_headless_dev_server_start_is_refused_without_approval() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    // A workspace with a real app the model would like to start.
    let workspace = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-app");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), workspace.path().join(entry.file_name())).unwrap();
        }
    }
    // The model tries to approve its own start.
    let model = FakeModel::start(
        "liveloop_runtime",
        &serde_json::json!({ "operation": "start", "confirm": true }),
    );
    let stdout = dsh_turn_in(
        &peers,
        home.path(),
        Some(workspace.path()),
        None,
        &model,
        "Start the app.",
    );
    let answer = tool_answer(&stdout);
    assert!(
        answer.contains("did not start the dev server") && answer.contains("no one can approve it"),
        "{answer}"
    );
    // The model is never offered a way to approve itself.
    let runtime = model
        .requests()
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .find(|t| t["function"]["name"] == "liveloop_runtime")
        .expect("liveloop_runtime is offered");
    assert!(
        runtime["function"]["parameters"]["properties"]
            .get("confirm")
            .is_none(),
        "{runtime}"
    );
    assert!(
        dshkit_test::processes_mentioning(&workspace.path().display().to_string()).is_empty(),
        "nothing runs in the workspace"
    );
    let left = processes_of(&dsh_home);
    assert!(left.is_empty(), "{left:#?}");
}

/// A fresh HOME whose DSH home has the `web` profile, made by the real `dsh`.
fn web_home(peers: &Peers) -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let made = output(crate::cli::dsh_command(peers, home.path()).args(["web", "--dump-default-config"]));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let dsh_home = home.path().join("dsh");
    (home, dsh_home)
}

#[test]
fn install_proves_the_boot_and_uninstall_leaves_a_profile_that_boots() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let profile = dsh_home.join("profiles/web");
    let patch = profile.join("cordis.patch.yml");
    let original = std::fs::read_to_string(&patch).unwrap();

    let installed = install(home.path(), &dsh_home, "web", &["--json"]);
    let report = crate::support::stdout_json(&installed);
    assert_eq!(installed.status.code(), Some(0), "{report}");
    assert_eq!(report["installed"], true);
    assert_eq!(report["bootProof"]["status"], "pass", "{report}");
    // DSH itself composes the plugin row into the tree it boots.
    let dumped =
        output(crate::cli::dsh_command(&peers, home.path()).args(["--profile", "web", "--dump-config"]));
    let tree = String::from_utf8_lossy(&dumped.stdout);
    assert!(
        tree.contains("'@local/dshkit'")
            || tree.contains("\"@local/dshkit\"")
            || tree.contains("@local/dshkit"),
        "{tree}"
    );

    // Evidence written meanwhile is never touched by uninstall.
    let evidence = home.path().join(".local/state/dshkit/evidence/keep.json");
    std::fs::create_dir_all(evidence.parent().unwrap()).unwrap();
    std::fs::write(&evidence, "{}").unwrap();
    let removed = output(
        dshkit_command(home.path())
            .args(["dsh", "uninstall", "--profile", "web", "--dsh-home"])
            .arg(&dsh_home),
    );
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&patch).unwrap(),
        original,
        "the patch file is as before"
    );
    assert!(!profile.join("plugins/dshkit").exists());
    assert!(
        profile
            .join("node_modules/@local/dshkit")
            .symlink_metadata()
            .is_err()
    );
    assert!(evidence.is_file(), "evidence is kept");
    let check = output(
        dshkit_command(home.path())
            .env("PATH", peers.path_var())
            .args(["check", "--live", "--json", "--dsh-home"])
            .arg(&dsh_home),
    );
    let check = crate::support::stdout_json(&check);
    assert_eq!(check["ok"], true, "the uninstalled profile boots: {check}");
}

#[test]
fn an_install_into_a_profile_that_does_not_boot_is_rolled_back() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let profile = dsh_home.join("profiles/web");
    // The user's own broken plugin: the profile would not boot with or without dshkit.
    let broken = profile.join("plugins/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("package.json"),
        r#"{"name":"@local/broken","type":"module","main":"index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        broken.join("index.js"),
        "export const name = 'broken';\nexport function apply() {\n",
    )
    .unwrap();
    let patch = profile.join("cordis.patch.yml");
    std::fs::write(
        &patch,
        "- insert:\n    - id: broken\n      name: '@local/broken'\n",
    )
    .unwrap();
    let before = std::fs::read_to_string(&patch).unwrap();

    let installed = install(home.path(), &dsh_home, "web", &["--json"]);
    assert_eq!(
        installed.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&installed.stdout)
    );
    let report = crate::support::stdout_json(&installed);
    assert_eq!(report["installed"], false, "{report}");
    assert!(
        report["reason"].as_str().unwrap().contains("does not pass"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(&patch).unwrap(),
        before,
        "the patch file is exactly as before"
    );
    assert!(
        !profile.join("plugins/dshkit").exists(),
        "the unused plugin files are removed"
    );
    assert!(broken.join("index.js").is_file(), "the user's files are kept");
}

#[test]
fn a_killed_sidecar_is_restarted_by_the_next_call() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "headless");
    // Two doctor calls in one turn; the model waits after the first result.
    let model = FakeModel::scripted("dshkit_doctor", &serde_json::json!({}), 2, true);
    std::thread::scope(|scope| {
        let turn = scope.spawn(|| dsh_turn(&peers, home.path(), None, &model, "Run the doctor twice."));
        let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
        let sidecar = loop {
            let answered = model
                .requests()
                .iter()
                .any(|r| r.to_string().contains("\"role\":\"tool\""));
            let sidecars: Vec<u32> = processes_of(&dsh_home)
                .iter()
                .filter(|p| p.contains("mcp --stdio"))
                .filter_map(|p| p.split(':').next()?.parse().ok())
                .collect();
            if answered && let [pid] = sidecars[..] {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the first call never completed"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        // Kill it between the two calls, then let the model call again.
        assert!(dshkit_os::process::Identity::of(sidecar).unwrap().kill());
        model.release();
        model.release();
        let stdout = turn.join().unwrap();
        let answer = tool_answer(&stdout);
        assert!(
            answer.contains("dshkit doctor:"),
            "the second call was answered: {answer}"
        );
    });
    let left = processes_of(&dsh_home);
    assert!(left.is_empty(), "{left:#?}");
}

/// `dsh web` on a free port for `home`, with the fake model; returns it and its URL.
fn dsh_web(peers: &Peers, home: &std::path::Path, model: &FakeModel) -> (dshkit_test::ChildGuard, String) {
    let mut command = crate::cli::dsh_command(peers, home);
    command
        .args(["web", "--port", "0", "--no-open"])
        .current_dir(home)
        .env("DEEPSEEK_BASE_URL", &model.url)
        .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
    let mut web = dshkit_test::spawn_guarded(&mut command);
    let line = dshkit_test::read_ready_line(&mut web, "dsh web: ", std::time::Duration::from_mins(1));
    let url = line.trim_start_matches("dsh web: ").to_owned();
    (web, url)
}

/// Drives DSH's web UI in dshkit's own headless browser, over MCP.
struct WebUi {
    mcp: crate::mcp_stdio::Session,
    session: String,
    next_id: u64,
}

impl WebUi {
    fn open(url: &str) -> Self {
        let mut mcp = crate::mcp_stdio::Session::start(&[]);
        mcp.initialize("2025-11-25");
        let opened = mcp.call_within(
            1,
            "liveloop_browser",
            &serde_json::json!({"operation": "open", "url": format!("{url}/")}),
            std::time::Duration::from_secs(90),
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
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        loop {
            match self.try_op(arguments.clone()) {
                Ok(text) => return text,
                Err(failure) if not_there_yet(&failure) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
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
            std::time::Duration::from_secs(90),
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
        panic!("{text:?} never appeared: {last}");
    }

    /// Waits (bounded, generous) until a snapshot holds `needle`; returns it.
    fn wait_for_outline(&mut self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        loop {
            let outline = self.op(serde_json::json!({"operation": "snapshot"}));
            if outline.contains(needle) {
                return outline;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{needle:?} never appeared in: {outline}"
            );
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
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

    /// Clicks until a snapshot holds `expect`. DSH's welcome notice can open
    /// over the page at any moment before (see [`Self::op`]) and take the click:
    /// it is acknowledged and the click repeated, for a bounded time.
    fn click_past_notice(&mut self, role: &str, name: &str, expect: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
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
            std::thread::sleep(std::time::Duration::from_millis(250));
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
            self.click_past_notice("button", "Choose workspace", "button \"Open\"");
            self.click("button", "Open");
        }
        self.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Describe what you want to build", "text": message}));
        self.op(serde_json::json!({"operation": "press", "key": "Enter"}));
    }

    /// A screenshot kept as a test artifact under `target/test-artifacts/dsh-plugin/`.
    fn keep_screenshot(&mut self, name: &str) -> std::path::PathBuf {
        self.next_id += 1;
        let response = self.mcp.call_within(
            self.next_id,
            "liveloop_browser",
            &serde_json::json!({"operation": "screenshot", "session": self.session}),
            std::time::Duration::from_secs(90),
        );
        let path = response["result"]["structuredContent"]["screenshot"]["path"]
            .as_str()
            .or_else(|| response["result"]["structuredContent"]["path"].as_str())
            .unwrap_or_else(|| panic!("no screenshot path: {response}"))
            .to_owned();
        let artifacts =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts/dsh-plugin");
        std::fs::create_dir_all(&artifacts).unwrap();
        let kept = artifacts.join(format!("{name}.png"));
        std::fs::copy(&path, &kept).unwrap();
        kept
    }
}

#[test]
fn the_web_ui_shows_the_verification_card_and_the_live_preview() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = serve_page();
    let model = FakeModel::start("liveloop_verify", &verify_arguments(&app));
    let (_web, url) = dsh_web(&peers, home.path(), &model);

    let mut ui = WebUi::open(&url);
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
    let reports = || {
        crate::liveloop_tool::walk_files(&home.path().join(".local/state/dshkit/evidence"))
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("verify-"))
            })
            .count()
    };
    let (asked, written) = (model.requests().len(), reports());
    assert!(written >= 1, "the agent's verification wrote its report");
    ui.click("button", "Verify");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while reports() == written {
        assert!(
            std::time::Instant::now() < deadline,
            "the view's Verify wrote no report"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        model.requests().len(),
        asked,
        "the view's Verify does not go through the model"
    );
}

/// An app whose button tries to take DSH's tab away (`top.location`) and says
/// what its script saw.
const ESCAPING_APP: &str = "<!doctype html><title>Escaping app</title><h1>Framed app</h1>\
<button onclick=\"const out = document.getElementById('outcome'); try { top.location.href = location.origin + '/escaped'; out.textContent = 'navigation started'; } catch (e) { out.textContent = 'navigation refused: ' + e.name; }\">Leave DSH</button><p id=outcome></p>";

#[test]
fn an_app_framed_in_the_live_preview_cannot_navigate_dsh_away() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let app = dshkit_test::LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(|| async { axum::response::Html(ESCAPING_APP) }),
        ),
        true,
    );
    let model = FakeModel::start(
        "liveloop_verify",
        &serde_json::json!({
            "appUrl": format!("http://127.0.0.1:{}/", app.addr.port()),
            "assertions": [{ "kind": "element", "role": "button", "name": "Leave DSH" }],
        }),
    );
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let artifacts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts/dsh-plugin");
    std::fs::create_dir_all(&artifacts).unwrap();
    let chromium = std::env::var("DSHKIT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let run = output(
        std::process::Command::new(peers.playwright_python())
            .arg(dshkit_test::workspace_root().join("harness/dsh-ui/live_preview_frame.py"))
            .arg(&url)
            .arg(&chromium)
            .arg(&artifacts),
    );
    assert!(
        run.status.success(),
        "the person's walk to the framed app failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
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

/// Waits (bounded) until no process carries this DSH home; panics with the survivors.
fn assert_nothing_left(dsh_home: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let left = processes_of(dsh_home);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "left behind: {left:#?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_dev_server_start_asks_the_user_in_the_web_ui() {
    let peers = Peers::get();
    let (home, dsh_home) = installed_home(&peers, "web");
    // The workspace (DSH's working directory) holds the example app.
    let app = home.path().join("app");
    std::fs::create_dir(&app).unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-app");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        std::fs::copy(entry.path(), app.join(entry.file_name())).unwrap();
    }
    let model = FakeModel::start(
        "liveloop_runtime",
        &serde_json::json!({ "operation": "start", "dir": "app", "confirm": true }),
    );
    let (mut web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);

    // Reject: nothing starts, and the agent is told what to ask.
    ui.send("Start the app.");
    ui.wait_for("Allow once");
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

    // Disposing DSH (SIGTERM) takes the sidecar and everything it started with it.
    drop(ui);
    assert!(dshkit_os::process::Identity::of(web.pid()).unwrap().terminate());
    let _ = web.child.wait();
    assert_nothing_left(&dsh_home);
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
            "function VerificationCard({ block, dshkitRpc }) {",
            "function VerificationCard({ block, dshkitRpc }) {\n      throw new Error('card render failed on purpose');",
            1,
        );
    assert_ne!(broken, original, "the client half changed");
    std::fs::write(&client, broken).unwrap();

    let app = serve_page();
    let model = FakeModel::start("liveloop_verify", &verify_arguments(&app));
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);
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
    let app = dshkit_test::LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(|| async { ([("x-frame-options", "DENY")], axum::response::Html(PAGE)) }),
        ),
        true,
    );
    let model = FakeModel::start("liveloop_verify", &verify_arguments(&app));
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);
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

#[test]
fn the_settings_section_stores_what_the_rust_side_accepts() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    let model = FakeModel::start("dshkit_doctor", &serde_json::json!({}));
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);
    let outline = ui.op(serde_json::json!({"operation": "snapshot"}));
    if outline.contains("button \"Continue\"") {
        ui.click("button", "Continue");
    }
    // The plugin's section joins the settings once the UI has its plugins'
    // settings, which may come after the dialog opens: it is waited for. A
    // click the welcome notice took, or that a slow page lost, is repeated.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    ui.click("button", "Settings");
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
        if settings.contains("dialog \"Internal Testing Notice\"") {
            ui.click("button", "Continue");
        }
        if !settings.contains("dialog \"Settings\"") {
            ui.click("button", "Settings");
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    ui.click_until(nav, "dshkit", "Preview session limit");
    let fill = |ui: &mut WebUi, value: &str| {
        ui.op(serde_json::json!({"operation": "fill", "role": "textbox", "name": "Preview session limit", "text": value}));
        ui.click("button", "Save dshkit settings");
    };
    // The Rust side's rule, shown as it says it; nothing is written.
    fill(&mut ui, "99");
    ui.wait_for("previewLimit must be between 1 and 16, not 99");
    let settings_file = home.path().join(".config/dshkit/settings.json");
    assert!(!settings_file.exists(), "an invalid value is never written");
    fill(&mut ui, "3");
    ui.wait_for("Saved to");
    ui.keep_screenshot("settings");
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&settings_file).unwrap()).unwrap();
    assert_eq!(stored, serde_json::json!({"previewLimit": 3}));
}

#[test]
fn a_running_verification_shows_its_stage_and_a_stop_cancels_it_in_the_sidecar() {
    let peers = Peers::get();
    let (home, _dsh_home) = installed_home(&peers, "web");
    // A step that waits (up to 30 s) for text the page never shows: the call runs
    // until something stops it.
    let app = serve_page();
    let mut arguments = verify_arguments(&app);
    arguments["steps"] = serde_json::json!([{ "action": "wait", "text": "never shown", "timeoutMs": 30000 }]);
    let model = FakeModel::start("liveloop_verify", &arguments);
    let (_web, url) = dsh_web(&peers, home.path(), &model);
    let mut ui = WebUi::open(&url);

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

/// The host section of `dshkit mcp --describe`: what the plugin takes over for
/// each tool, the descriptions DSH shows, the guidance and the skills. A
/// description the plugin shows as the server lists it reads `(as listed)`; a
/// skill's text is its file, checked whole here and shortened in the snapshot.
#[test]
fn the_binary_describes_the_host_seams_guidance_and_skills_the_plugin_interprets() {
    let home = tempfile::tempdir().unwrap();
    let described =
        crate::support::stdout_json(&output(dshkit_command(home.path()).args(["mcp", "--describe"])));
    let mut host = described["host"].clone();
    let listed: std::collections::HashMap<String, serde_json::Value> = described["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["description"].clone()))
        .collect();
    let tools = host["tools"].as_array_mut().unwrap();
    assert_eq!(tools.len(), listed.len(), "every listed tool has its entry");
    for tool in tools {
        let name = tool["name"].as_str().unwrap().to_owned();
        if tool["description"] == listed[&name] {
            tool["description"] = "(as listed)".into();
        }
    }
    let file = |path: &str| {
        let text = std::fs::read_to_string(dshkit_test::workspace_root().join(path)).unwrap();
        let (_, body) = text.split_once("\n---\n").unwrap();
        body.trim_start().to_owned()
    };
    for skill in host["skills"].as_array_mut().unwrap() {
        let expected = match skill["name"].as_str().unwrap() {
            "live-loop" => file("skills/live-loop/SKILL.md"),
            "dsh-runtime-debugging" => file("skills/dsh-runtime-debugging/SKILL.md"),
            "plugin-fault-diagnosis" => dshkit_check::PLAYBOOK.to_owned(),
            other => panic!("a skill with no known source: {other}"),
        };
        assert_eq!(skill["text"], expected.as_str(), "{}", skill["name"]);
        skill["text"] = format!("({} lines)", expected.lines().count()).into();
    }
    insta::assert_json_snapshot!(host);
}
