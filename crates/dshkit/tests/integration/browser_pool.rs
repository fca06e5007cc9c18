//! dshkit on a real browser pool engine: browserless 2.42 on Node 24
//! (`harness/browser-pool`, installed by `cargo xtask setup`), run on loopback
//! with the system Chromium, a token, a concurrency of [`CONCURRENT`] and a
//! queue of [`QUEUED`]. `dshkit mcp --browser-ws` drives it over one
//! connection per preview, as browserless counts and queues them.
//!
//! Outside `cargo xtask test` (which sets `DSHKIT_TEST_REQUIRE_PEERS`), a
//! machine without the engine skips these tests and says why; under it, a
//! missing engine fails them with the command that installs it.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dshkit_os::process::{Group, Identity};
use dshkit_test::{ChildGuard, LoopbackServer, read_ready_line, spawn_guarded};
use serde_json::{Value, json};

use crate::support::{HttpSession, spawn_http, walk_files};

/// Browsers the engine runs at once.
const CONCURRENT: usize = 4;
/// Connections it holds in its queue beyond those.
const QUEUED: usize = 4;
/// How long the engine may take to listen, and to show a state the test waits
/// for (a verification's answer is bounded by the MCP client's own limit).
const ENGINE_START: Duration = Duration::from_mins(1);
const STATE: Duration = Duration::from_mins(1);
/// dshkit's own preview limit: room for one more than the pool takes, so the
/// refusal the test sees is the engine's.
const PREVIEW_LIMIT: usize = CONCURRENT + QUEUED + 1;
/// Set by `cargo xtask test`: a missing engine fails rather than skips.
const REQUIRE_PEERS: &str = "DSHKIT_TEST_REQUIRE_PEERS";
/// The page the concurrent verifications load.
const PAGE: &str = "<!doctype html><title>pool</title><h1>Served through the pool</h1>";
/// A page with an image from an external host, which dshkit's network policy
/// must block in the pool's browser.
const TRACKED: &str = "<!doctype html><title>tracked</title><h1>Served through the pool</h1>\
    <img src='http://tracker.example/pixel.png' alt=''>";

/// The engine's install (`target/peers/browser-pool`), or `None` (with the
/// reason printed) when it is missing outside `cargo xtask test`.
fn engine_dir() -> Option<PathBuf> {
    let peers = std::env::var_os("DSHKIT_TEST_PEERS").map_or_else(
        || dshkit_test::workspace_root().join("target/peers"),
        PathBuf::from,
    );
    let dir = peers.join("browser-pool");
    if dir.join("node_modules/node/bin/node").is_file() && dir.join("start.mjs").is_file() {
        return Some(dir);
    }
    let missing = format!(
        "the browser pool engine (browserless) is not installed at {}: run `cargo xtask setup`",
        dir.display()
    );
    assert!(std::env::var_os(REQUIRE_PEERS).is_none(), "{missing}");
    let mut stderr = std::io::stderr();
    let _ = std::io::Write::write_all(&mut stderr, format!("skipped: {missing}\n").as_bytes());
    None
}

/// browserless on a free loopback port, its log kept.
struct Engine {
    /// The engine's whole process tree: browserless starts each Chromium in a
    /// process group of its own, which the child's group would not reach.
    tree: Group,
    guard: ChildGuard,
    port: u16,
    log: Arc<Mutex<Vec<u8>>>,
    _state: tempfile::TempDir,
}

impl Engine {
    fn start(dir: &std::path::Path, token: &str) -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut command = std::process::Command::new(dir.join("node_modules/node/bin/node"));
        command
            .arg("start.mjs")
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", state.path())
            .env("TMPDIR", state.path())
            .env("POOL_STATE_DIR", state.path())
            .env("TOKEN", token)
            .env("CONCURRENT", CONCURRENT.to_string())
            .env("QUEUED", QUEUED.to_string())
            // A session's longest life: far beyond this test's.
            .env("TIMEOUT", "300000");
        // The Chromium dshkit's own previews would use; else start.mjs picks
        // Debian's headless shell, or its full Chromium.
        if let Some(chromium) = std::env::var_os("DSHKIT_CHROMIUM") {
            command.env("CHROMIUM", chromium);
        }
        let mut guard = spawn_guarded(&mut command);
        let mut tree = Group::adopt_tree(guard.pid()).unwrap();
        tree.bind_to_dshkit().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut stderr = guard.child.stderr.take().unwrap();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = stderr.read(&mut chunk) {
                kept.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        let line = read_ready_line(&mut guard, "browser-pool: listening on ", ENGINE_START);
        let port = line.rsplit(':').next().unwrap().parse().unwrap();
        Self {
            tree,
            guard,
            port,
            log,
            _state: state,
        }
    }

    /// The WebSocket dshkit connects to (browserless's chromium route).
    fn ws(&self) -> String {
        format!("ws://127.0.0.1:{}/chromium", self.port)
    }

    /// The engine's own account of its load: `(running, queued)`.
    async fn pressure(&self, token: &str) -> (u64, u64) {
        let answer: Value = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{}/pressure", self.port))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let pressure = &answer["pressure"];
        (
            pressure["running"].as_u64().unwrap(),
            pressure["queued"].as_u64().unwrap(),
        )
    }

    /// Waits until the engine runs and queues `load` and `also` holds.
    async fn wait_for_load(&self, token: &str, load: (usize, usize), also: impl Fn() -> bool) {
        let want = (load.0 as u64, load.1 as u64);
        let deadline = std::time::Instant::now() + STATE;
        loop {
            // Each look lets the tree see the browsers the engine started.
            let _ = self.tree.members();
            let seen = self.pressure(token).await;
            if seen == want && also() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the engine never came to (running, queued) {want:?}: it shows {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }
}

impl Drop for Engine {
    /// SIGTERM first (browserless closes its browsers), then the whole tree
    /// killed: nothing of the engine outlives the test, failed or not.
    fn drop(&mut self) {
        let _ = self.tree.members();
        let _ = self.guard.terminate(Duration::from_secs(10));
        if let Some(root) = Identity::of(self.guard.pid()) {
            dshkit_os::process::kill_tree(root, Duration::from_secs(10));
        }
        self.tree.kill();
    }
}

/// A loopback app whose page is held at the gate until [`Gate::open`]: the
/// verifications that reach it keep their pool browsers busy meanwhile.
struct Gate {
    server: LoopbackServer,
    open: tokio::sync::watch::Sender<bool>,
    arrived: Arc<AtomicUsize>,
}

impl Gate {
    fn start() -> Self {
        let (open, opened) = tokio::sync::watch::channel(false);
        let arrived = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&arrived);
        let page = axum::routing::get(move || {
            let mut opened = opened.clone();
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                let _ = opened.wait_for(|open| *open).await;
                axum::response::Html(PAGE)
            }
        });
        let tracked = axum::routing::get(|| async { axum::response::Html(TRACKED) });
        let router = axum::Router::new().route("/", page).route("/tracked", tracked);
        let server = LoopbackServer::start(router, false);
        Self {
            server,
            open,
            arrived,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.server.addr.port())
    }

    fn open(&self) {
        self.open.send_replace(true);
    }
}

/// A `tools/call` in `client`'s MCP session: the raw body (kept to look for
/// the token) and the result.
async fn call(client: &HttpSession, tool: &str, arguments: Value) -> (String, Value) {
    let (body, answer) = client.call_with_body(tool, arguments).await;
    (body, answer["result"].clone())
}

/// A token no output may contain.
fn fresh_token(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{what}-{}-{nanos:08x}", std::process::id())
}

/// Where the pool's token goes.
enum Given {
    /// `--browser-ws WS` and `DSHKIT_BROWSER_POOL_TOKEN`.
    FlagAndVariable,
    /// The settings' `browserPoolEndpoint` and `browserPoolTokenFile` (the
    /// file [`POOL_TOKEN_FILE`] in dshkit's home).
    Settings,
}

/// The token file of [`Given::Settings`], in dshkit's home.
const POOL_TOKEN_FILE: &str = "pool-token";

/// `dshkit mcp --http` on the pool at `ws` in a home of its own, with room for
/// more previews than the pool has browsers (so the refusal the test sees is
/// the engine's): the home, the server, its URL and its MCP token.
fn dshkit_on(ws: &str, pool_token: &str, given: &Given) -> (tempfile::TempDir, ChildGuard, String, String) {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".config/dshkit");
    std::fs::create_dir_all(&config).unwrap();
    let (guard, url, token) = match given {
        Given::FlagAndVariable => {
            let settings = json!({"previewLimit": PREVIEW_LIMIT});
            std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
            spawn_http(
                home.path(),
                &["--browser-ws", ws],
                &[("DSHKIT_BROWSER_POOL_TOKEN", pool_token)],
            )
        }
        Given::Settings => {
            let file = home.path().join(POOL_TOKEN_FILE);
            std::fs::write(&file, format!("{pool_token}\n")).unwrap();
            let settings = json!({"previewLimit": PREVIEW_LIMIT, "browserPoolEndpoint": ws, "browserPoolTokenFile": file});
            std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
            spawn_http(home.path(), &[], &[])
        }
    };
    (home, guard, url, token)
}

/// Everything `dshkit` printed on stderr once it stopped.
fn stopped_stderr(mut guard: ChildGuard) -> String {
    let _ = guard.terminate(Duration::from_secs(10));
    let mut stderr = String::new();
    if let Some(mut pipe) = guard.child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    stderr
}

fn reasons(result: &Value) -> String {
    result["structuredContent"]["reasons"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_real_pool_engine_runs_and_queues_verifications_refuses_one_more_and_keeps_the_policy() {
    let Some(dir) = engine_dir() else { return };
    let pool_token = fresh_token("pool-token");
    let engine = Engine::start(&dir, &pool_token);
    let app = Gate::start();
    let (home, dshkit, url, mcp_token) = dshkit_on(&engine.ws(), &pool_token, &Given::FlagAndVariable);
    let mut clients = Vec::new();
    for _ in 0..=CONCURRENT + QUEUED {
        clients.push(Arc::new(HttpSession::open(&url, &mcp_token, "pool-test").await));
    }
    // The longest load a verification may ask for: the first ones wait at the gate.
    let verify = json!({"appUrl": app.url(), "deadlineMs": 60_000,
        "assertions": [{"kind": "text_present", "text": "Served through the pool"}]});

    // CONCURRENT verifications take the pool's browsers and wait at the gate;
    // QUEUED more wait in the engine's queue.
    let mut pending = Vec::new();
    for client in clients.iter().take(CONCURRENT + QUEUED) {
        let (client, verify) = (Arc::clone(client), verify.clone());
        pending.push(tokio::spawn(async move {
            call(&client, "liveloop_verify", verify).await
        }));
    }
    engine
        .wait_for_load(&pool_token, (CONCURRENT, QUEUED), || {
            app.arrived.load(Ordering::SeqCst) == CONCURRENT
        })
        .await;

    // One more is refused by the engine: UNVERIFIED with its reason, at once.
    let extra = &clients[CONCURRENT + QUEUED];
    let (refused_body, refused) = call(extra, "liveloop_verify", verify.clone()).await;
    assert_eq!(refused["structuredContent"]["verdict"], "UNVERIFIED", "{refused}");
    let why = reasons(&refused);
    for part in [
        "BROWSER_POOL_REFUSED",
        "HTTP 429",
        "Too many requests",
        "/chromium",
    ] {
        assert!(why.contains(part), "{part} in {why}");
    }
    // The browser tool says the same as an error.
    let (opened_body, opened) = call(
        extra,
        "liveloop_browser",
        json!({"operation": "open", "url": app.url()}),
    )
    .await;
    assert_eq!(opened["isError"], true, "{opened}");
    assert_eq!(
        opened["structuredContent"]["code"], "BROWSER_POOL_REFUSED",
        "{opened}"
    );
    assert!(opened_body.contains("Too many requests"), "{opened_body}");

    // The gate opens: the running ones finish, give their browsers back, and
    // the queued ones run. Each gives its real verdict.
    app.open();
    let mut bodies = vec![refused_body, opened_body];
    for answer in pending {
        let (body, result) = answer.await.unwrap();
        assert_eq!(result["structuredContent"]["verdict"], "VERIFIED", "{result}");
        bodies.push(body);
    }
    assert_eq!(
        app.arrived.load(Ordering::SeqCst),
        CONCURRENT + QUEUED,
        "every verification loaded the page once"
    );
    // Each verification gave its browser back to the pool.
    engine.wait_for_load(&pool_token, (0, 0), || true).await;

    // The settings' endpoint and token file reach the pool as the flag and the
    // variable do, and the network policy holds in the pool's browser.
    let tracked = json!({"appUrl": format!("{}tracked", app.url()),
        "assertions": [{"kind": "text_present", "text": "Served through the pool"}]});
    let (set_home, set_dshkit, set_url, set_mcp) = dshkit_on(&engine.ws(), &pool_token, &Given::Settings);
    let set_client = HttpSession::open(&set_url, &set_mcp, "pool-test").await;
    bodies.push(the_policy_holds_in_the_pools_browser(&set_client, &tracked).await);
    engine.wait_for_load(&pool_token, (0, 0), || true).await;

    // A wrong token is the engine's refusal too, and is not shown either.
    let wrong_token = fresh_token("wrong-token");
    let (wrong_home, wrong, wrong_url, wrong_mcp) =
        dshkit_on(&engine.ws(), &wrong_token, &Given::FlagAndVariable);
    let wrong_client = HttpSession::open(&wrong_url, &wrong_mcp, "pool-test").await;
    let (wrong_body, unauthorized) = call(&wrong_client, "liveloop_verify", tracked).await;
    assert_eq!(
        unauthorized["structuredContent"]["verdict"], "UNVERIFIED",
        "{unauthorized}"
    );
    assert!(reasons(&unauthorized).contains("HTTP 401"), "{unauthorized}");

    // The tokens appear nowhere: not in a result, dshkit's log, a report or the engine's log.
    bodies.push(wrong_body);
    for server in [dshkit, set_dshkit, wrong] {
        bodies.push(stopped_stderr(server));
    }
    bodies.push(engine.log());
    let homes = [home.path(), set_home.path(), wrong_home.path()];
    assert_no_token_in(bodies, &homes, &[&pool_token, &wrong_token]);
}

/// The real Vite React fixture, served by its own dev server, verified through
/// the pool: its counter clicked twice in the pool's browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_real_vite_app_is_verified_through_the_pool_engine() {
    let Some(dir) = engine_dir() else { return };
    let pool_token = fresh_token("pool-token");
    let engine = Engine::start(&dir, &pool_token);
    let vite = tokio::task::spawn_blocking(|| crate::liveloop_app::vite_copy(str::to_owned, None, ""))
        .await
        .unwrap();
    let (home, dshkit, url, mcp_token) = dshkit_on(&engine.ws(), &pool_token, &Given::FlagAndVariable);
    let client = HttpSession::open(&url, &mcp_token, "pool-test").await;
    let (body, result) = call(
        &client,
        "liveloop_verify",
        json!({"appUrl": format!("http://127.0.0.1:{}/", vite.port),
                "steps": [{"action": "click", "role": "button", "name": "Increment"},
                          {"action": "click", "role": "button", "name": "Increment"}],
                "assertions": [{"kind": "text_present", "text": "Count is 2"}]}),
    )
    .await;
    assert_eq!(result["structuredContent"]["verdict"], "VERIFIED", "{result}");
    assert_eq!(
        result["structuredContent"]["title"], "Vite React counter",
        "{result}"
    );
    engine.wait_for_load(&pool_token, (0, 0), || true).await;
    let outputs = vec![body, stopped_stderr(dshkit), engine.log()];
    assert_no_token_in(outputs, &[home.path()], &[&pool_token]);
}

/// No token in `outputs` nor in any file under `homes` (but the token files
/// themselves); a failure says where without printing the output.
fn assert_no_token_in(mut outputs: Vec<String>, homes: &[&std::path::Path], tokens: &[&str]) {
    for file in homes.iter().flat_map(|home| walk_files(home)) {
        if file.file_name().is_some_and(|name| name == POOL_TOKEN_FILE) {
            continue; // the secret's own file
        }
        if let Ok(bytes) = std::fs::read(&file) {
            outputs.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    for (i, output) in outputs.iter().enumerate() {
        for token in tokens {
            let at = output.find(token);
            assert!(
                at.is_none(),
                "output {i} of {} shows a token at byte {at:?}",
                outputs.len()
            );
        }
    }
}

/// The network policy holds in the pool's browser: the request stage there
/// blocks the page's external image, and the verdict says so (a failed request
/// fails a verification, as on dshkit's own Chromium). The answer's body.
async fn the_policy_holds_in_the_pools_browser(client: &HttpSession, tracked: &Value) -> String {
    let (body, result) = call(client, "liveloop_verify", tracked.clone()).await;
    let report = &result["structuredContent"];
    assert_eq!(report["verdict"], "FAILED", "{result}");
    let blocked = &report["blockedRequests"][0];
    assert_eq!(blocked["url"], "http://tracker.example/pixel.png", "{result}");
    assert_eq!(blocked["rule"], "external_host", "{result}");
    let why = reasons(&result);
    assert!(
        why.contains("tracker.example/pixel.png failed: net::ERR_BLOCKED_BY_CLIENT"),
        "{why}"
    );
    assert!(
        why.contains("1 request(s) blocked by the loopback-only network policy"),
        "{why}"
    );
    assert_eq!(report["assertions"][0]["passed"], true, "{result}");
    body
}
