//! `liveloop_detect`, `liveloop_runtime` and `liveloop_verify` over MCP, and
//! `dshkit detect/run/verify`, against real Chromium and real dev servers.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dshkit_test::{spawn_guarded, spawn_ready, wait_until};
use serde_json::{Value, json};

use crate::support::{EnvDir, Home, Session, copy_hello_app, free_port, output, stdout_json};

fn ok(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

/// A generic app whose dev server prints its URL and records its pid.
fn node_app(dir: &Path) {
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "node-app", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("server.js"),
        r#"require("fs").writeFileSync("server.pid", String(process.pid));
const s = require("http").createServer((q, r) => r.end("<!doctype html><title>node app</title><h1>Hello from node</h1>"));
s.listen(0, "127.0.0.1", () => console.log(`Local: http://localhost:${s.address().port}/`));"#,
    )
    .unwrap();
}

#[test]
fn an_agent_detects_runs_verifies_and_stops_an_app_over_mcp() {
    let workspace = tempfile::tempdir().unwrap();
    node_app(workspace.path());
    let evidence = EnvDir::evidence_root();
    let ws = workspace.path().display().to_string();
    let mut mcp = Session::initialized(&["--workspace", &ws], &[evidence.env()]);

    let detected = mcp.call(1, "liveloop_detect", &json!({}));
    assert_eq!(
        ok(&detected)["candidates"][0]["framework"],
        "generic",
        "{detected}"
    );
    assert_eq!(ok(&detected)["ambiguous"], false);
    let escape = mcp.call(2, "liveloop_detect", &json!({"dir": "../.."}));
    assert_eq!(
        escape["result"]["isError"], true,
        "paths stay inside the workspace"
    );

    let unconfirmed = mcp.call(3, "liveloop_runtime", &json!({"operation": "start"}));
    assert_eq!(unconfirmed["result"]["isError"], true);
    assert!(unconfirmed.to_string().contains("confirm"), "{unconfirmed}");

    let started = mcp.call(
        4,
        "liveloop_runtime",
        &json!({"operation": "start", "confirm": true}),
    );
    let server = ok(&started)["servers"][0].clone();
    assert_eq!(server["state"], "ready", "{started}");
    let id = server["id"].as_str().unwrap().to_owned();
    let pid: u64 = std::fs::read_to_string(workspace.path().join("server.pid"))
        .unwrap()
        .parse()
        .unwrap();

    let verified = mcp.call(
        5,
        "liveloop_verify",
        &json!({"server": id, "assertions": [
            {"kind": "text_present", "text": "Hello from node"},
            {"kind": "element", "role": "heading", "name": "Hello from node"},
            {"kind": "status", "code": 200}
        ]}),
    );
    let report = ok(&verified);
    assert_eq!(report["verdict"], "VERIFIED", "{verified}");
    assert!(
        report["source"]["sha256"].is_string(),
        "the source is fingerprinted"
    );
    let report_path = report["reportPath"].as_str().unwrap();
    assert!(report_path.starts_with(&evidence.value), "{report_path}");
    assert!(Path::new(report_path).is_file());
    let session = verified["result"]["content"][0]["text"].as_str().unwrap();
    assert!(session.contains("untrusted"), "{session}");

    let failed = mcp.call(
        6,
        "liveloop_verify",
        &json!({"server": id, "assertions": [{"kind": "text_present", "text": "Goodbye"}]}),
    );
    assert_eq!(ok(&failed)["verdict"], "FAILED");
    assert!(ok(&failed)["nextAction"].as_str().unwrap().contains("Goodbye"));

    let logs = mcp.call(7, "liveloop_runtime", &json!({"operation": "logs", "server": id}));
    assert!(
        ok(&logs)["lines"]
            .to_string()
            .contains("Local: http://localhost:"),
        "{logs}"
    );

    assert!(alive(pid));
    let stopped = mcp.call(8, "liveloop_runtime", &json!({"operation": "stop", "server": id}));
    assert_eq!(ok(&stopped)["servers"][0]["state"], "stopped");
    assert!(!alive(pid), "the dev server is gone after stop");
}

#[test]
fn the_verify_command_prints_the_verdict_and_evidence_for_the_example_app() {
    let home = Home::new();
    let app = tempfile::tempdir().unwrap();
    copy_hello_app(app.path());
    let out = home.run([
        "verify",
        app.path().to_str().unwrap(),
        "--step",
        "fill:textbox=New task=Water the plants",
        "--step",
        "click:button=Add task",
        "--expect-text",
        "1 task",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("VERIFIED "), "{stdout}");
    assert!(stdout.contains("report: "), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ready at http://127.0.0.1:"),
        "progress is shown: {stderr}"
    );

    let failed = home.run([
        "verify",
        app.path().to_str().unwrap(),
        "--expect-text",
        "Shopping list",
        "--json",
    ]);
    assert_eq!(failed.status.code(), Some(1));
    let report = stdout_json(&failed);
    assert_eq!(report["verdict"], "FAILED");
}

#[test]
fn without_a_browser_the_verdict_is_unverified() {
    let home = Home::new();
    let app = tempfile::tempdir().unwrap();
    copy_hello_app(app.path());
    let out = output(
        home.dshkit()
            .env("DSHKIT_CHROMIUM", "/nonexistent/chromium")
            .args([
                "verify",
                app.path().to_str().unwrap(),
                "--expect-text",
                "Task list",
                "--json",
            ]),
    );
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "UNVERIFIED");
    assert!(report["reasons"].to_string().contains("no browser"), "{report}");
    assert!(Path::new(report["reportPath"].as_str().unwrap()).is_file());
}

#[test]
fn a_monorepo_with_two_apps_is_ambiguous_and_nothing_is_started() {
    let home = Home::new();
    let repo = tempfile::tempdir().unwrap();
    for app in ["apps/web", "apps/admin"] {
        let dir = repo.path().join(app);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{ "scripts": { "dev": "vite" }, "devDependencies": { "vite": "^7" } }"#,
        )
        .unwrap();
    }
    std::fs::write(
        repo.path().join("package.json"),
        r#"{ "private": true, "workspaces": ["apps/*"] }"#,
    )
    .unwrap();
    let detect = home.run(["detect", repo.path().to_str().unwrap()]);
    assert_eq!(detect.status.code(), Some(1));
    let listing = String::from_utf8_lossy(&detect.stdout);
    assert!(listing.contains("ambiguous"), "{listing}");
    assert!(
        listing.contains(
            "apps/web  Vite via npm (default (no lockfile)), confidence 90: npm run dev on port 5173"
        ),
        "names as people write them: {listing}"
    );
    let verify = home.run(["verify", repo.path().to_str().unwrap()]);
    assert_eq!(verify.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(
        stderr.contains("apps/admin (Vite, confidence 90)") && stderr.contains("apps/web"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --app DIR"), "the CLI's own flag: {stderr}");
    assert!(verify.stdout.is_empty(), "no report without --json");

    // With --json a refusal is a JSON object on stdout, with the candidates.
    let verify = home.run(["verify", repo.path().to_str().unwrap(), "--json"]);
    assert_eq!(verify.status.code(), Some(3));
    let refusal = stdout_json(&verify);
    assert_eq!(refusal["error"]["code"], "AMBIGUOUS_APP", "{refusal}");
    assert_eq!(refusal["error"]["exitCode"], 3);
    assert_eq!(refusal["error"]["candidates"][0]["dir"], "apps/admin");
    assert_eq!(refusal["error"]["candidates"][1]["dir"], "apps/web");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--app DIR"),
        "{refusal}"
    );

    // Over MCP the same refusal names `app`, the tool's own argument.
    let ws = repo.path().display().to_string();
    let mut mcp = Session::initialized(&["--workspace", &ws, "--allow-run"], &[]);
    let refused = mcp.call(1, "liveloop_runtime", &json!({"operation": "start"}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let message = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("pass `app`") && !message.contains("--app"),
        "{message}"
    );
    assert_eq!(
        refused["result"]["structuredContent"]["candidates"][0]["dir"], "apps/admin",
        "{refused}"
    );
}

/// A copy of the Vite React fixture whose `vite.config.ts` misses a `}`, its
/// dependencies linked from the shared install.
fn broken_vite_app(dir: &Path) {
    let peers = dshkit_test::Peers::get();
    let fixture = peers.app("vite-react");
    for file in ["index.html", "package.json", "package-lock.json"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    std::fs::create_dir(dir.join("src")).unwrap();
    for file in ["main.jsx", "App.jsx"] {
        std::fs::copy(fixture.join("src").join(file), dir.join("src").join(file)).unwrap();
    }
    std::fs::write(
        dir.join("vite.config.ts"),
        "import { defineConfig } from \"vite\";\nimport react from \"@vitejs/plugin-react\";\n\nexport default defineConfig({\n  plugins: [react()],\n  server: { port: 5173\n});\n",
    )
    .unwrap();
    dshkit_os::fs::symlink(fixture.join("node_modules"), dir.join("node_modules")).unwrap();
}

#[test]
fn a_real_vite_app_whose_config_does_not_parse_is_failed_with_vites_own_error() {
    let peers = dshkit_test::Peers::get();
    let app = tempfile::tempdir().unwrap();
    broken_vite_app(app.path());
    let home = Home::new();
    let verify = |json: bool| {
        let mut command = home.dshkit();
        // Vite's port may be another test's: the server dies before it listens
        // either way.
        command.env("PATH", peers.path_var()).args([
            "verify",
            app.path().to_str().unwrap(),
            "--on-port-conflict",
            "other-port",
            "--expect-text",
            "Count is 0",
        ]);
        if json {
            command.arg("--json");
        }
        output(&mut command)
    };

    let out = verify(false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("FAILED  (no page was loaded)"), "{text}");
    for line in [
        "why: the dev server exited with code 1 before it was ready, so no page was loaded; it printed:",
        "[PARSE_ERROR] Expected `,` or `}` but found `)`",
        "╭─[ vite.config.ts:7:2 ]",
        "next: Fix vite.config.ts:7:2 ([PARSE_ERROR] Expected `,` or `}` but found `)`)",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    assert!(!text.contains("    at "), "no stack frame: {text}");

    let out = verify(true);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(report["runtime"]["state"], "exited", "{report:#}");
    assert_eq!(report["runtime"]["failure"]["location"], "vite.config.ts:7:2");
    assert!(
        report["nextAction"]
            .as_str()
            .unwrap()
            .starts_with("Fix vite.config.ts:7:2"),
        "{report:#}"
    );
    assert!(Path::new(report["reportPath"].as_str().unwrap()).is_file());
}

#[test]
fn a_broken_app_over_mcp_gives_the_servers_error_from_runtime_and_verify() {
    let peers = dshkit_test::Peers::get();
    let workspace = tempfile::tempdir().unwrap();
    broken_vite_app(workspace.path());
    let evidence = EnvDir::evidence_root();
    let ws = workspace.path().display().to_string();
    let path = peers.path_var();
    let mut mcp = Session::initialized(
        &["--workspace", &ws, "--allow-run"],
        &[evidence.env(), ("PATH", path.to_str().unwrap())],
    );
    let started = mcp.call(
        1,
        "liveloop_runtime",
        &json!({"operation": "start", "onPortConflict": "other_port"}),
    );
    assert_eq!(started["result"]["isError"], true, "{started}");
    let facts = &started["result"]["structuredContent"];
    assert_eq!(facts["code"], "EXITED_BEFORE_READY", "{started}");
    assert_eq!(facts["failure"]["location"], "vite.config.ts:7:2", "{started}");
    assert!(
        facts["failure"]["errorLines"]
            .to_string()
            .contains("[PARSE_ERROR] Expected"),
        "{started}"
    );
    let message = started["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("vite.config.ts:7:2") && !message.contains("    at "),
        "{message}"
    );

    // The server that never became ready is a FAILED verdict, with the same facts.
    let server = facts["server"].as_str().expect("the server's id").to_owned();
    let verified = mcp.call(2, "liveloop_verify", &json!({"server": server}));
    let report = ok(&verified);
    assert_eq!(report["verdict"], "FAILED", "{verified}");
    assert!(
        report["reasons"][0]
            .as_str()
            .unwrap()
            .contains("[PARSE_ERROR] Expected"),
        "{verified}"
    );
    assert!(
        report["nextAction"]
            .as_str()
            .unwrap()
            .starts_with("Fix vite.config.ts:7:2"),
        "{verified}"
    );
}

#[test]
fn a_killed_dshkit_run_takes_its_dev_server_tree_with_it() {
    let home = Home::new();
    let app = tempfile::tempdir().unwrap();
    node_app(app.path());
    let (mut run, url) = spawn_ready(
        home.dshkit().args(["run", app.path().to_str().unwrap()]),
        "http://",
        Duration::from_mins(1),
    );
    assert!(url.starts_with("localhost:"), "http://{url}");
    let pid: u64 = std::fs::read_to_string(app.path().join("server.pid"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(alive(pid));
    // SIGKILL: dshkit gets no chance to clean up; its watchdog must.
    assert!(dshkit_os::process::Identity::of(run.pid()).unwrap().kill());
    let _ = run.child.wait();
    wait_until(Duration::from_secs(10), "the dev server died with dshkit", || {
        !alive(pid)
    });
}

/// `dshkit verify` on a real fixture app from npm: VERIFIED, and afterwards no
/// process of the app is left and its port is free.
fn verify_real_app(name: &str, framework: &str, port: u16, steps: &[&str], expect: &[&str]) {
    let peers = dshkit_test::Peers::get();
    let app = peers.app(name);
    let home = Home::new();
    let detect =
        output(
            home.dshkit()
                .env("PATH", peers.path_var())
                .args(["detect", app.to_str().unwrap(), "--json"]),
        );
    let detection = stdout_json(&detect);
    assert_eq!(detection["candidates"][0]["framework"], framework, "{detection}");
    assert_eq!(detection["candidates"][0]["expectedPort"], port);

    let mut command = home.dshkit();
    command
        .env("PATH", peers.path_var())
        .args(["verify", app.to_str().unwrap(), "--json"]);
    for step in steps {
        command.args(["--step", step]);
    }
    for text in expect {
        command.args(["--expect-text", text]);
    }
    let out = output(&mut command);
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "VERIFIED", "{report:#}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report["runtime"]["owned"], true);
    assert!(
        report["url"].as_str().unwrap().contains(&format!(":{port}/")),
        "{report}"
    );

    let left: Vec<String> = dshkit_test::processes_mentioning(app.to_str().unwrap())
        .into_iter()
        .map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            format!(
                "{pid}: {} [{stat}]",
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            )
        })
        .collect();
    assert!(left.is_empty(), "processes of {name} left behind: {left:#?}");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} is still served"
    );
}

#[test]
fn a_real_vite_react_app_is_detected_started_verified_and_stopped() {
    verify_real_app(
        "vite-react",
        "vite-react",
        5173,
        &["click:button=Increment", "click:button=Increment"],
        &["Count is 2"],
    );
}

#[test]
fn a_real_next_app_is_detected_started_verified_and_stopped() {
    verify_real_app(
        "next",
        "next",
        3000,
        &["fill:textbox=Your name=Ada", "click:button=Sign"],
        &["Ada", "Next.js guestbook"],
    );
}

/// A copy of the Vite React fixture with `main.jsx` and `App.jsx` rewritten and
/// `middleware` (a Connect handler's body, `(req, res, next)`) in its dev
/// server, running on a free port; its own dependency cache, so the shared
/// install is never written.
pub(crate) struct ViteCopy {
    _dir: tempfile::TempDir,
    _vite: dshkit_test::ChildGuard,
    pub(crate) port: u16,
}

pub(crate) fn vite_copy(
    rewrite_main: impl Fn(&str) -> String,
    app: Option<&str>,
    middleware: &str,
) -> ViteCopy {
    let peers = dshkit_test::Peers::get();
    let fixture = peers.app("vite-react");
    let dir = tempfile::tempdir().unwrap();
    for file in ["index.html", "package.json"] {
        std::fs::copy(fixture.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let original_app = std::fs::read_to_string(fixture.join("src/App.jsx")).unwrap();
    std::fs::write(dir.path().join("src/App.jsx"), app.unwrap_or(&original_app)).unwrap();
    let main = std::fs::read_to_string(fixture.join("src/main.jsx")).unwrap();
    std::fs::write(dir.path().join("src/main.jsx"), rewrite_main(&main)).unwrap();
    std::fs::write(
        dir.path().join("vite.config.js"),
        format!(
            "import {{ defineConfig }} from \"vite\";\nimport react from \"@vitejs/plugin-react\";\n\
             const api = {{ name: \"api\", configureServer(server) {{ server.middlewares.use((req, res, next) => {{ {middleware} next(); }}); }} }};\n\
             export default defineConfig({{ plugins: [react(), api], cacheDir: \".vite-cache\" }});\n"
        ),
    )
    .unwrap();
    dshkit_os::fs::symlink(fixture.join("node_modules"), dir.path().join("node_modules")).unwrap();
    let port = free_port();
    let mut vite = spawn_guarded(
        Command::new(peers.node())
            .arg(fixture.join("node_modules/vite/bin/vite.js"))
            .args(["--port", &port.to_string(), "--strictPort", "--host", "127.0.0.1"])
            .current_dir(dir.path())
            .env("PATH", peers.path_var()),
    );
    dshkit_test::read_ready_line(&mut vite, "", Duration::from_mins(1));
    wait_until(Duration::from_mins(1), "vite never listened", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    ViteCopy {
        _dir: dir,
        _vite: vite,
        port,
    }
}

#[test]
fn a_real_vite_app_that_throws_while_loading_fails_at_the_exception() {
    // The Vite fixture whose entry throws before React renders anything.
    let app = vite_copy(
        |main| format!("const items = null;\nconsole.info(items.length);\n{main}"),
        None,
        "",
    );
    let port = app.port;
    let out = Home::new().run([
        "verify",
        &format!("http://127.0.0.1:{port}/"),
        "--json",
        "--expect-text",
        "Count is 0",
    ]);
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(out.status.code(), Some(1));
    let first = report["reasons"][0].as_str().unwrap();
    assert!(
        first.starts_with("uncaught exception")
            && first.contains("reading 'length'")
            && first.contains("/src/main.jsx:"),
        "{first}"
    );
    assert!(
        report["nextAction"].as_str().unwrap().contains("/src/main.jsx:"),
        "{report:#}"
    );
}

#[test]
fn a_real_vite_app_with_a_syntax_error_fails_first_at_the_module_vite_could_not_build() {
    // The Vite fixture with an unclosed call in `App.jsx`: Vite answers 500 for
    // the module and draws its error overlay; the text asserted is missing too.
    let original =
        std::fs::read_to_string(dshkit_test::Peers::get().app("vite-react").join("src/App.jsx")).unwrap();
    let broken = original.replace("useState(0);", "useState(0;");
    assert_ne!(broken, original, "the fixture's App.jsx calls useState(0)");
    let app = vite_copy(str::to_owned, Some(&broken), "");
    let out = Home::new().run([
        "verify",
        &format!("http://127.0.0.1:{}/", app.port),
        "--json",
        "--expect-text",
        "Count is 0",
        // In the overlay's code frame only: the overlay is not the app's text.
        "--expect-text",
        "setCount",
    ]);
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "FAILED", "{report:#}");
    assert_eq!(report["assertions"][1]["passed"], false, "{report:#}");
    let reasons: Vec<&str> = report["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        reasons[0].contains("/src/App.jsx failed: HTTP 500") && reasons[0].contains("source module"),
        "the module Vite could not build comes first: {reasons:#?}"
    );
    assert!(
        reasons[1].starts_with("Vite's error overlay shows:") && reasons[1].contains("/src/App.jsx:4:"),
        "then the overlay's message with file and line: {reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("\"Count is 0\"")),
        "the missing text is still said: {reasons:#?}"
    );
    let next = report["nextAction"].as_str().unwrap();
    assert!(
        next.contains("/src/App.jsx:4:") && !next.contains("Count is 0"),
        "{next}"
    );
}

/// Sends `request` (a tools/call with a progress token) and returns the progress
/// messages that came before its answer, and the answer.
fn call_with_progress(mcp: &mut Session, request: &Value) -> (Vec<String>, Value) {
    mcp.send(&request.to_string());
    let token = request["params"]["_meta"]["progressToken"].clone();
    let mut stages = Vec::new();
    loop {
        let message = mcp.recv_within(Duration::from_mins(2));
        if message["id"] == request["id"] {
            return (stages, message);
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], token);
        stages.push(message["params"]["message"].as_str().unwrap().to_owned());
    }
}

#[test]
fn a_runtime_start_and_a_plugin_check_report_their_stages_as_progress() {
    let workspace = tempfile::tempdir().unwrap();
    node_app(workspace.path());
    let ws = workspace.path().display().to_string();
    let mut mcp = Session::initialized(&["--workspace", &ws], &[]);
    let (stages, started) = call_with_progress(
        &mut mcp,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "liveloop_runtime", "_meta": {"progressToken": "start-1"},
            "arguments": {"operation": "start", "confirm": true}}}),
    );
    let server = ok(&started)["servers"][0].clone();
    assert_eq!(server["state"], "ready", "{started}");
    let url = server["url"].as_str().unwrap();
    let port = reqwest::Url::parse(url).unwrap().port().unwrap();
    assert!(
        stages[0].starts_with("spawned `") && stages[0].contains("process tree"),
        "{stages:?}"
    );
    assert_eq!(
        stages.last().unwrap(),
        &format!("{url} answered HTTP 200"),
        "{stages:?}"
    );
    assert!(
        stages.contains(&format!("the server log printed {url}")),
        "{stages:?}"
    );
    assert!(
        stages.contains(&format!("its process tree listens on port {port}")),
        "{stages:?}"
    );
    let id = server["id"].as_str().unwrap();
    ok(&mcp.call(3, "liveloop_runtime", &json!({"operation": "stop", "server": id})));

    // plugin_check names each check as it starts.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("profiles/web")).unwrap();
    let (stages, checked) = call_with_progress(
        &mut mcp,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "plugin_check", "_meta": {"progressToken": "check-1"},
            "arguments": {"dshHome": home.path(), "profile": "web"}}}),
    );
    assert!(
        checked["result"]["structuredContent"]["checks"].is_array(),
        "{checked}"
    );
    assert_eq!(
        stages.first().map(String::as_str),
        Some("static checks: syntax, manifests, patch references"),
        "{stages:?}"
    );
    assert_eq!(
        stages.last().map(String::as_str),
        Some("leftover audit"),
        "{stages:?}"
    );
}

/// A React app whose button loads data: `fetch`, then `json()`, then a state
/// update that React renders in a later task.
const REACT_LOADER: &str = r#"import { useState } from "react";

export default function App() {
  const [count, setCount] = useState(0);
  const [data, setData] = useState("not loaded");
  const load = () =>
    fetch("/api/slow")
      .then((r) => r.json())
      .then((d) => setData(`loaded ${d.items.length} items`));
  return (
    <main>
      <button type="button" onClick={() => setCount((n) => n + 1)}>Increment</button>
      <button type="button" onClick={load}>Load</button>
      <p>Count is {count}</p>
      <p>Data: {data}</p>
    </main>
  );
}
"#;

#[test]
fn a_react_state_update_after_a_slow_request_is_in_the_result_of_the_click() {
    let app = vite_copy(
        str::to_owned,
        Some(REACT_LOADER),
        "if (req.url === \"/api/slow\") { setTimeout(() => { res.setHeader(\"Content-Type\", \"application/json\"); res.end(JSON.stringify({ items: [1, 2, 3] })); }, 300); return; }",
    );
    let evidence = EnvDir::evidence_root();
    let mut mcp = Session::initialized(&[], &[evidence.env()]);
    let opened = mcp.call(
        1,
        "liveloop_browser",
        &json!({"operation": "open", "url": format!("http://127.0.0.1:{}/", app.port), "includeText": true}),
    );
    let page = ok(&opened);
    assert!(
        page["text"].as_str().unwrap().contains("Data: not loaded"),
        "{page}"
    );
    let session = page["session"].as_str().unwrap().to_owned();
    for (id, (button, effect)) in (2..).zip([("Increment", "Count is 1"), ("Load", "Data: loaded 3 items")]) {
        let clicked = mcp.call(
            id,
            "liveloop_browser",
            &json!({"operation": "click", "session": session, "role": "button", "name": button, "includeText": true}),
        );
        let text = ok(&clicked)["text"].as_str().unwrap().to_owned();
        assert!(text.contains(effect), "after {button:?}: {text}");
    }
}

#[test]
fn a_dev_server_not_ready_in_time_is_unverified_with_a_report() {
    let app = tempfile::tempdir().unwrap();
    // A server that says "not yet" for good, as a start that never ends would.
    std::fs::write(
        app.path().join("package.json"),
        r#"{ "name": "never-ready", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        app.path().join("server.js"),
        r#"const s = require("http").createServer((q, r) => { r.writeHead(503); r.end("starting"); });
s.listen(0, "127.0.0.1", () => console.log(`Local: http://localhost:${s.address().port}/`));"#,
    )
    .unwrap();
    let out = Home::new().run([
        "verify",
        app.path().to_str().unwrap(),
        "--ready-timeout-secs",
        "3",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_eq!(report["verdict"], "UNVERIFIED", "{report:#}");
    assert_eq!(
        report["runtime"]["failure"]["cause"]["kind"], "timed_out",
        "{report:#}"
    );
    assert_eq!(
        report["runtime"]["failure"]["cause"]["stopped"], true,
        "{report:#}"
    );
    assert!(
        report["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("the dev server was not ready within 3 s"),
        "{report:#}"
    );
}
