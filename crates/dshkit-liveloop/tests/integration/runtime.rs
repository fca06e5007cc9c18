//! The dev-server runtime against real Node processes.

use std::path::Path;
use std::time::Duration;

use dshkit_liveloop::detect::{Framework, PackageManager, detect};
use dshkit_liveloop::runtime::{PortConflict, RunSpec, RuntimeConfig, RuntimeManager, ServerState};
use dshkit_test::spawn_guarded;

/// A generic app whose `dev` script starts a server on `$PORT` (or 0), prints its
/// URL the way dev servers do, and forks a grandchild that must die with it.
fn generic_app(dir: &Path) {
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "generic-app", "private": true, "scripts": { "dev": "node server.js" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("server.js"),
        r#"
const http = require("http");
const { spawn } = require("child_process");
const helper = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
require("fs").writeFileSync("helper.pid", String(helper.pid));
const server = http.createServer((req, res) => res.end("<!doctype html><title>generic</title><h1>Generic app</h1>"));
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  console.log(`\x1b[32m  ➜  Local:   http://localhost:${server.address().port}/\x1b[0m`);
});
"#,
    )
    .unwrap();
}

fn alive(pid: u32) -> bool {
    dshkit_os::process::entry(pid).is_some()
}

fn runtime() -> RuntimeManager {
    RuntimeManager::new(RuntimeConfig {
        ready_timeout: Duration::from_secs(30),
        ..RuntimeConfig::default()
    })
}

#[tokio::test]
async fn a_detected_dev_script_starts_gets_ready_is_shared_and_stops_with_its_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    generic_app(dir.path());
    let detection = detect(dir.path(), None).unwrap();
    let candidate = &detection.candidates[0];
    assert_eq!(candidate.framework, Framework::Generic);
    let spec = RunSpec::of(&detection.root, candidate).unwrap();
    let runtime = runtime();
    let started = runtime.start(spec.clone(), PortConflict::Fail).await.unwrap();
    assert!(started.owned);
    let ready = runtime
        .wait_ready(&started.id, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(ready.state, ServerState::Ready);
    let url = ready.url.clone().unwrap();
    assert!(url.starts_with("http://localhost:"), "{url}");
    assert!(
        ready
            .url_reason
            .as_deref()
            .unwrap()
            .contains("printed in the server log"),
        "{ready:?}"
    );
    // An identical profile shares the server.
    let again = runtime.start(spec, PortConflict::Fail).await.unwrap();
    assert!(again.reused);
    assert_eq!(again.id, started.id);
    let (logs, _) = runtime.logs(&started.id, 10).await.unwrap();
    assert!(
        logs.iter().any(|l| l.contains("Local:   http://localhost:")),
        "{logs:?}"
    );
    assert!(
        !logs.iter().any(|l| l.contains('\u{1b}')),
        "ANSI is stripped: {logs:?}"
    );

    let helper: u32 = std::fs::read_to_string(dir.path().join("helper.pid"))
        .unwrap()
        .parse()
        .unwrap();
    let leader = started.pid.unwrap();
    assert!(alive(helper) && alive(leader));
    let stopped = runtime.stop(&started.id).await.unwrap();
    assert_eq!(stopped.state, ServerState::Stopped, "{stopped:?}");
    assert!(!alive(leader), "the dev script is gone");
    assert!(!alive(helper), "its grandchild is gone too");
    assert!(runtime.status(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_foreign_listener_on_the_expected_port_is_refused_adopted_or_avoided_but_never_killed() {
    let peers = dshkit_test::Peers::get();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut foreign = spawn_guarded(std::process::Command::new(peers.node()).args([
        "-e",
        &format!(
            "require('http').createServer((q, s) => s.end('foreign')).listen({port}, '127.0.0.1', () => console.log('up'))"
        ),
    ]));
    dshkit_test::read_ready_line(&mut foreign, "up", Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    generic_app(dir.path());
    let spec = RunSpec {
        dir: std::fs::canonicalize(dir.path()).unwrap(),
        framework: Framework::Generic,
        package_manager: Some(PackageManager::Npm),
        argv: vec!["npm".into(), "run".into(), "dev".into()],
        expected_port: Some(port),
    };
    let runtime = runtime();

    let refused = runtime.start(spec.clone(), PortConflict::Fail).await.unwrap_err();
    assert_eq!(refused.code(), "PORT_IN_USE");
    assert!(
        refused.to_string().contains(&format!("pid {}", foreign.pid())),
        "the holder is named: {refused}"
    );

    let adopted = runtime.start(spec.clone(), PortConflict::Adopt).await.unwrap();
    assert!(!adopted.owned);
    assert_eq!(adopted.pid, Some(foreign.pid()));
    assert_eq!(adopted.state, ServerState::Ready);
    assert_eq!(
        runtime.restart(&adopted.id).await.unwrap_err().code(),
        "NOT_OWNED"
    );
    runtime.stop(&adopted.id).await.unwrap();
    assert!(foreign.alive(), "releasing an adopted server never kills it");

    let moved = runtime.start(spec, PortConflict::OtherPort).await.unwrap();
    assert!(moved.owned);
    let ready = runtime
        .wait_ready(&moved.id, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(
        !ready.url.as_deref().unwrap().contains(&port.to_string()),
        "{ready:?}"
    );
    runtime.shutdown().await;
    assert!(foreign.alive(), "shutdown never kills a foreign process");
}

#[tokio::test]
async fn a_server_that_dies_before_ready_reports_its_exit_and_log_tail() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("package.json"),
        r#"{ "scripts": { "dev": "node -e \"console.error('Error: Cannot find module vite-plugin-missing'); process.exit(3)\"" } }"#,
    )
    .unwrap();
    let detection = detect(dir.path(), None).unwrap();
    let spec = RunSpec::of(&detection.root, &detection.candidates[0]).unwrap();
    let runtime = runtime();
    let started = runtime.start(spec, PortConflict::Fail).await.unwrap();
    let error = runtime
        .wait_ready(&started.id, Duration::from_secs(30))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("exited with code"), "{text}");
    assert!(text.contains("vite-plugin-missing"), "{text}");
    assert_eq!(error.code(), "EXITED_BEFORE_READY");
    let failure = error.start_failure().unwrap();
    assert!(failure.app_is_broken());
    assert_eq!(
        failure.error_lines,
        ["Error: Cannot find module vite-plugin-missing"],
        "the server's own line, not npm's epilogue: {failure:?}"
    );
    let status = &runtime.status(Some(&started.id)).await.unwrap()[0];
    assert_eq!(status.state, ServerState::Exited);
    assert_eq!(status.failure.as_ref(), Some(failure));
}

#[tokio::test]
async fn a_static_site_is_served_by_the_built_in_server_inside_its_root_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "<!doctype html><h1>static</h1>").unwrap();
    let detection = detect(dir.path(), None).unwrap();
    assert_eq!(detection.candidates[0].framework, Framework::StaticHtml);
    let spec = RunSpec::of(&detection.root, &detection.candidates[0]).unwrap();
    let runtime = runtime();
    let status = runtime.start(spec, PortConflict::Fail).await.unwrap();
    assert_eq!(status.state, ServerState::Ready);
    let url = url::Url::parse(status.url.as_deref().unwrap()).unwrap();
    assert_eq!(
        dshkit_liveloop::runtime::ready::probe(&url, Duration::from_secs(2)).await,
        Ok(200)
    );
    let escape = url.join("/../../etc/passwd").unwrap();
    assert_eq!(
        dshkit_liveloop::runtime::ready::probe(&escape, Duration::from_secs(2)).await,
        Ok(404)
    );
    runtime.stop(&status.id).await.unwrap();
    assert!(
        dshkit_liveloop::runtime::ready::probe(&url, Duration::from_secs(1))
            .await
            .is_err(),
        "stopped"
    );
}

#[tokio::test]
async fn a_helper_the_server_detaches_as_it_exits_is_stopped_too() {
    let dir = tempfile::tempdir().unwrap();
    generic_app(dir.path());
    // Like Next.js's telemetry flush: a detached process in its own session,
    // spawned from the exit handler, running a script of the app. It holds 512 MiB
    // so that its exit takes a while: an exiting process loses its command line
    // before it leaves the table, and the stop must wait for it all the same. The
    // server exits once the helper holds it and named itself (on a loaded machine
    // the helper may start late and fill the memory slowly).
    std::fs::write(
        dir.path().join("helper.js"),
        "globalThis.held = Buffer.alloc(512 << 20, 1); require('fs').writeFileSync('detached.pid', String(process.pid)); setInterval(() => {}, 1000);",
    )
    .unwrap();
    let server = std::fs::read_to_string(dir.path().join("server.js")).unwrap().replace(
        "const server =",
        "process.on('SIGINT', () => { spawn(process.execPath, [require('path').join(__dirname, 'helper.js')], { detached: true, stdio: 'ignore' }).unref(); setInterval(() => { if (require('fs').existsSync('detached.pid')) process.exit(0); }, 20); });\nconst server =",
    );
    std::fs::write(dir.path().join("server.js"), server).unwrap();
    let detection = detect(dir.path(), None).unwrap();
    let spec = RunSpec::of(&detection.root, &detection.candidates[0]).unwrap();
    let runtime = runtime();
    let started = runtime.start(spec, PortConflict::Fail).await.unwrap();
    runtime
        .wait_ready(&started.id, Duration::from_secs(30))
        .await
        .unwrap();
    runtime.stop(&started.id).await.unwrap();
    let helper: u32 = std::fs::read_to_string(dir.path().join("detached.pid"))
        .expect("the server detached its helper on exit")
        .parse()
        .unwrap();
    assert!(!alive(helper), "the detached helper was stopped");
}
