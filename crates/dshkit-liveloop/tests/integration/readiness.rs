//! Readiness on real projects: a dev server pnpm 12 runs in a process group of
//! its own, a server that answers 503 while it starts, a start that never ends
//! well.

use std::path::Path;
use std::time::Duration;

use dshkit_liveloop::detect::{Framework, PackageManager, detect};
use dshkit_liveloop::runtime::failure::FailureCause;
use dshkit_liveloop::runtime::{PortConflict, RunSpec, RuntimeConfig, RuntimeManager, ServerState};
use dshkit_os::process::{Identity, entry, tree, wait_gone};

/// Far beyond any start on a loaded machine; an assertion says what happened.
const READY_WAIT: Duration = Duration::from_mins(2);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_pnpm_12_vite_app_is_ready_once_vite_listens_and_stops_with_its_whole_tree() {
    let peers = dshkit_test::Peers::get();
    let app = peers.app("vite-react-pnpm");
    let pnpm = peers.dir.join("pnpm/node_modules/.bin/pnpm");
    assert!(
        pnpm.exists(),
        "{} is missing: run `cargo xtask setup`",
        pnpm.display()
    );
    let detection = detect(&app, None).unwrap();
    let candidate = &detection.candidates[0];
    assert_eq!(
        (candidate.framework, candidate.package_manager),
        (Framework::ViteReact, Some(PackageManager::Pnpm))
    );
    assert_eq!(candidate.argv, ["pnpm", "run", "dev"]);
    // The detected profile, with this install's pnpm and a port of this test's
    // own (Vite's 5173 is other tests' too).
    let port = free_port();
    let mut spec = RunSpec::of(&detection.root, candidate).unwrap();
    spec.argv = vec![
        pnpm.display().to_string(),
        "run".into(),
        "dev".into(),
        "--port".into(),
        port.to_string(),
        "--strictPort".into(),
    ];
    spec.expected_port = Some(port);
    let runtime = RuntimeManager::new(RuntimeConfig {
        ready_timeout: READY_WAIT,
        ..RuntimeConfig::default()
    });
    let started = runtime.start(spec, PortConflict::Fail).await.unwrap();
    let ready = runtime.wait_ready(&started.id, READY_WAIT).await;
    let (logs, _) = runtime.logs(&started.id, 20).await.unwrap();
    let ready = ready.unwrap_or_else(|e| panic!("{e}; log: {logs:#?}"));
    assert_eq!(ready.state, ServerState::Ready);
    assert!(
        ready.url_reason.as_deref().unwrap().contains("process tree"),
        "{ready:?}"
    );

    // pnpm 12 runs the script in a group of its own: Vite is not in pnpm's.
    let leader = Identity::of(started.pid.unwrap()).unwrap();
    let members = tree(leader);
    let vite = members
        .iter()
        .find(|m| dshkit_os::process::command_line(m.pid).contains("vite"))
        .unwrap_or_else(|| panic!("no vite in {members:?}"));
    assert_ne!(
        entry(vite.pid).unwrap().group,
        Some(leader.pid),
        "Vite runs in pnpm's own group: this pnpm does not make the case"
    );

    let stopped = runtime.stop(&started.id).await.unwrap();
    assert_eq!(stopped.state, ServerState::Stopped, "{stopped:?}");
    let left = wait_gone(members, Duration::ZERO);
    assert!(left.is_empty(), "{left:?} outlived the stop");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} is still served"
    );
}

/// A server that answers as Nuxt's dev server does while it starts: a 503
/// loading page that polls its own URL and reloads. It starts serving the app
/// once a file `started` exists (a start that takes as long as the test wants),
/// and logs each 503 it answers.
fn starting_app(dir: &Path) {
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "starting-app", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("server.js"),
        r#"
const http = require("http");
const fs = require("fs");
const loading = `<!doctype html><title>starting</title><p>__LOADING__ Starting...</p><script>
const poll = async () => { try { if (!(await fetch(location.href).then((r) => r.text())).includes("__LOADING__")) return location.reload(); } catch {} setTimeout(poll, 200); }; poll();
</script>`;
let answered = 0;
const server = http.createServer((req, res) => {
  if (!fs.existsSync("started")) {
    console.log(`answered 503 (${++answered})`);
    res.writeHead(503, { "content-type": "text/html" });
    return res.end(loading);
  }
  res.writeHead(200, { "content-type": "text/html" });
  res.end("<!doctype html><title>app</title><h1>The app</h1>");
});
server.listen(0, "127.0.0.1", () => console.log(`Local: http://localhost:${server.address().port}/`));
"#,
    )
    .unwrap();
}

/// Polls until the server logged `text` or left the `starting` state, for at
/// most `READY_WAIT`; returns its state then.
async fn logged_or_settled(runtime: &RuntimeManager, id: &str, text: &str) -> ServerState {
    let deadline = std::time::Instant::now() + READY_WAIT;
    loop {
        let (lines, _) = runtime.logs(id, 50).await.unwrap();
        let state = runtime.status(Some(id)).await.unwrap()[0].state;
        if state != ServerState::Starting || lines.iter().any(|l| l.contains(text)) {
            return state;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never logged {text:?}: {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_server_that_answers_503_while_it_starts_is_ready_only_once_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    starting_app(dir.path());
    let detection = detect(dir.path(), None).unwrap();
    let spec = RunSpec::of(&detection.root, &detection.candidates[0]).unwrap();
    let runtime = RuntimeManager::new(RuntimeConfig {
        ready_timeout: READY_WAIT,
        ..RuntimeConfig::default()
    });
    let started = runtime.start(spec, PortConflict::Fail).await.unwrap();
    // Only readiness asks the server anything: a second 503 is a second probe,
    // made after the first answer was taken as "not yet".
    let state = logged_or_settled(&runtime, &started.id, "answered 503 (2)").await;
    let status = &runtime.status(Some(&started.id)).await.unwrap()[0];
    assert_eq!(state, ServerState::Starting, "a 503 is not ready: {status:?}");
    std::fs::write(dir.path().join("started"), "").unwrap();
    let ready = runtime.wait_ready(&started.id, READY_WAIT).await.unwrap();
    assert!(
        ready
            .url_reason
            .as_deref()
            .unwrap()
            .ends_with("answered HTTP 200"),
        "{ready:?}"
    );
    runtime.stop(&started.id).await.unwrap();
}

#[tokio::test]
async fn a_server_that_answers_503_to_its_deadline_fails_naming_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    starting_app(dir.path());
    let detection = detect(dir.path(), None).unwrap();
    let spec = RunSpec::of(&detection.root, &detection.candidates[0]).unwrap();
    let runtime = RuntimeManager::new(RuntimeConfig {
        ready_timeout: Duration::from_secs(15),
        ..RuntimeConfig::default()
    });
    let started = runtime.start(spec, PortConflict::Fail).await.unwrap();
    let leader = Identity::of(started.pid.unwrap()).unwrap();
    let error = runtime.wait_ready(&started.id, READY_WAIT).await.unwrap_err();
    assert_eq!(error.code(), "NOT_READY", "{error}");
    let failure = error.start_failure().unwrap();
    assert_eq!(
        failure.cause,
        FailureCause::TimedOut {
            after_secs: 15,
            last_answer: Some(503),
            stopped: true
        },
        "{failure}"
    );
    assert!(!failure.app_is_broken());
    let status = &runtime.status(Some(&started.id)).await.unwrap()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert!(
        wait_gone(vec![leader], Duration::from_secs(30)).is_empty(),
        "the server was stopped at its deadline"
    );
}

/// A verification that meets a server's starting page judges the page that
/// replaced it: the 503 loading page's own document and polls, superseded by
/// the same URL loaded again, are no failures of the verified page.
#[tokio::test]
async fn a_starting_page_the_server_replaced_leaves_no_failure_in_the_verdict() {
    use dshkit_liveloop::preview::{PreviewConfig, PreviewManager, Viewport};
    use dshkit_liveloop::verify::evidence::EvidenceStore;
    use dshkit_liveloop::verify::{Assertion, Verdict, VerifyContext, VerifyRequest, verify};

    // `/` answers its loading page (as Nuxt's does while it starts) to the
    // document and the first poll, then serves the app; `/blank` always serves.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("server.js"),
        r#"
const loading = `<!doctype html><title>starting</title><p>__LOADING__ Starting...</p><script>
const poll = async () => { try { if (!(await fetch(location.href).then((r) => r.text())).includes("__LOADING__")) return location.reload(); } catch {} setTimeout(poll, 200); }; poll();
</script>`;
let starting = 2;
const server = require("http").createServer((req, res) => {
  if (req.url === "/" && starting > 0) {
    starting--;
    res.writeHead(503, { "content-type": "text/html" });
    return res.end(loading);
  }
  res.writeHead(req.url === "/" || req.url === "/blank" ? 200 : 404, { "content-type": "text/html" });
  res.end("<!doctype html><title>app</title><h1>The app</h1>");
});
server.listen(0, "127.0.0.1", () => console.log(`port ${server.address().port}`));
"#,
    )
    .unwrap();
    let peers = dshkit_test::Peers::get();
    let mut node = dshkit_test::spawn_guarded(
        std::process::Command::new(peers.node())
            .arg(dir.path().join("server.js"))
            .current_dir(dir.path()),
    );
    let port = dshkit_test::read_ready_line(&mut node, "port ", Duration::from_mins(1));
    let origin = format!("http://127.0.0.1:{}", port.trim().trim_start_matches("port "));
    let previews = PreviewManager::new(PreviewConfig::default());
    let session = previews
        .open("t", &format!("{origin}/blank"), Viewport::Desktop)
        .await
        .unwrap();
    let request = VerifyRequest {
        url: Some("/".into()),
        assertions: vec![
            Assertion::TextPresent {
                text: "The app".into(),
            },
            Assertion::Status { code: 200 },
        ],
        ..VerifyRequest::default()
    };
    let context = VerifyContext {
        evidence: EvidenceStore::new(dir.path().join("evidence")),
        workspace: dir.path().to_owned(),
        source_dir: None,
        runtime: None,
        progress: dshkit_liveloop::progress::Progress::default(),
    };
    let report = verify(&session, &request, &context).await.unwrap();
    assert_eq!(
        report.judgement.verdict,
        Verdict::Verified,
        "{:#?}",
        report.judgement
    );
    assert!(report.failed_requests.is_empty(), "{:?}", report.failed_requests);
    previews.shutdown().await;
}
