//! Cordis DevTools on a real DSH: the plugin installed with `--devtools` runs the
//! collector; `dshkit mcp --tools devtools` lists the DSH process as a target,
//! snapshots its runtime, sees an agent turn's dispatches through
//! `cordis_wait_for_runtime_change`, keeps an experiment's lease after the core
//! that took it is killed only until the lease ends (restoring DSH's dispatch by
//! identity), and reports the target gone when DSH exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use dshkit_test::{FakeModel, Peers, wait_for, wait_until};
use serde_json::{Value, json};

use crate::support::{Home, Session, dsh_command, dshkit_command, headless_home, output, stdout_json};

fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(response["result"]["isError"], false, "{response}");
    &response["result"]["structuredContent"]
}

/// A fresh home with a DevTools registry directory (not yet made) inside it.
pub(crate) struct Registry {
    pub(crate) home: Home,
    pub(crate) dir: PathBuf,
}

impl Registry {
    pub(crate) fn new() -> Self {
        let home = Home::new();
        let dir = home.join("registry");
        Self { home, dir }
    }

    /// `dshkit devtools --devtools-dir REGISTRY ARGS` in the home.
    pub(crate) fn devtools(&self, args: &[&str]) -> Command {
        devtools_command(self.home.path(), &self.dir, args)
    }

    /// [`Self::devtools`], run to its end.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        output(&mut self.devtools(args))
    }
}

/// `dshkit devtools --devtools-dir REGISTRY ARGS` isolated in `home`.
fn devtools_command(home: &Path, registry: &Path, args: &[&str]) -> Command {
    let mut command = dshkit_command(home);
    command
        .arg("devtools")
        .arg("--devtools-dir")
        .arg(registry)
        .args(args);
    command
}

/// An initialized `dshkit mcp --tools devtools` on `registry`.
fn devtools_session(registry: &Path) -> Session {
    let registry = registry.display().to_string();
    Session::initialized(&["--tools", "devtools", "--devtools-dir", &registry], &[])
}

/// `dshkit devtools setup`: the plugin with the collector, experiments and an
/// endpoint on a free port.
pub(crate) fn install_with_devtools(peers: &Peers, home: &Path, dsh_home: &Path) {
    let installed = output(
        dshkit_command(home)
            .env("PATH", peers.path_var())
            .args([
                "devtools",
                "setup",
                "--profile",
                "headless",
                "--no-boot-check",
                "--experiments",
                "--endpoint",
                "127.0.0.1:0",
            ])
            .arg("--dsh-home")
            .arg(dsh_home),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
}

/// A headless DSH turn in its own thread; joins to its output.
pub(crate) fn headless_turn(home: &Path, model_url: &str) -> std::thread::JoinHandle<std::process::Output> {
    let (home, model_url) = (home.to_owned(), model_url.to_owned());
    std::thread::spawn(move || {
        let mut command = dsh_command(&Peers::get(), &home);
        command
            .args(["--profile", "headless", "Look at the workspace."])
            .env("DEEPSEEK_BASE_URL", model_url)
            .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
        output(&mut command)
    })
}

/// A real headless DSH with the collector, experiments and an endpoint
/// ([`install_with_devtools`]), in a turn of two detections whose every reply
/// after a tool result waits for [`FakeModel::release`]: DSH stays up,
/// mid-turn, while a test attaches.
pub(crate) struct MidTurn {
    pub(crate) home: Home,
    /// Its DevTools registry (`<DSH home>/dshkit-devtools`).
    pub(crate) registry: PathBuf,
    pub(crate) model: FakeModel,
    turn: std::thread::JoinHandle<Output>,
}

impl MidTurn {
    pub(crate) fn start(peers: &Peers) -> Self {
        let (home, dsh_home) = headless_home(peers);
        install_with_devtools(peers, home.path(), &dsh_home);
        let model = FakeModel::scripted("liveloop_detect", &json!({}), 2, true);
        let turn = headless_turn(home.path(), &model.url);
        Self {
            home,
            registry: dsh_home.join("dshkit-devtools"),
            model,
            turn,
        }
    }

    /// Releases the rest of the turn and waits for DSH to exit, successfully.
    pub(crate) fn finish(self) {
        self.model.release();
        self.model.release();
        let finished = self.turn.join().unwrap();
        assert!(
            finished.status.success(),
            "{}",
            String::from_utf8_lossy(&finished.stderr)
        );
    }
}

#[test]
fn an_agent_turn_in_a_real_dsh_is_seen_through_the_devtools_tools() {
    let peers = Peers::get();
    let dsh = MidTurn::start(&peers);
    let (home, registry, model) = (&dsh.home, dsh.registry.clone(), &dsh.model);
    let mut mcp = devtools_session(&registry);
    let target = wait_for(Duration::from_mins(2), || {
        let listed = mcp.call(1, "cordis_list_debug_targets", &json!({}));
        let targets = result(&listed)["targets"].as_array().cloned().unwrap_or_default();
        targets
            .first()
            .cloned()
            .ok_or_else(|| format!("no debug target appeared: {listed}"))
    });
    assert_eq!(target["label"], "dsh");
    // With the collector, the plugin also offers the DevTools tools, guidance and
    // skill as the binary describes them (in the turn's first model request).
    let first = wait_for(Duration::from_mins(2), || {
        model
            .turn_requests()
            .first()
            .cloned()
            .ok_or_else(|| "the turn never asked the model".to_owned())
    });
    crate::support::the_model_gets_the_binarys_guidance_and_skills(home.path(), &first, true);

    the_plugins_endpoint_lists(&peers, home.path(), &registry, &target);

    let attached = mcp.call(
        2,
        "cordis_attach_debug_session",
        &json!({"targetId": target["id"]}),
    );
    let session = result(&attached)["debugSessionId"].as_str().unwrap().to_owned();
    let snapshot = mcp.call(3, "cordis_debug_snapshot", &json!({"debugSessionId": session}));
    let snapshot = result(&snapshot).clone();
    let fibers = snapshot["summary"]["fibers"].as_u64().unwrap();
    assert!(fibers > 50, "a booted DSH has many fibers: {snapshot}");
    assert_eq!(snapshot["fibers"]["returned"], 100, "catalogs page at 100");
    assert_eq!(snapshot["fibers"]["truncated"], true);
    // `session` is the deprecated alias of `debugSessionId`, accepted for one release.
    let dshkit = mcp.call(
        4,
        "cordis_inspect_fiber",
        &json!({"session": session, "name": "dshkit"}),
    );
    let found = &result(&dshkit)["fibers"]["items"];
    assert_eq!(found[0]["state"], "active", "{dshkit}");

    // The turn goes on: its dispatches reach the wait.
    model.release();
    let waited = mcp.call_within(
        5,
        "cordis_wait_for_runtime_change",
        &json!({"debugSessionId": session, "timeoutMs": 60_000}),
        Duration::from_mins(2),
    );
    let waited = result(&waited).clone();
    assert_eq!(waited["outcome"], "found", "{waited}");
    assert!(
        waited["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "dispatch-observed"),
        "{waited}"
    );

    let (mut mcp, session) = killed_core_leaves_no_lease(mcp, &session, &target, &registry, &waited);

    // The turn ends and DSH exits: the session's target is gone.
    dsh.finish();
    the_exit_is_reported(&mut mcp, &session, &registry);
}

/// DSH exited cleanly: the session reads `target-disposed` (host-disposed) to the
/// end, then is stale; the target is gone and so is the plugin's endpoint.
fn the_exit_is_reported(mcp: &mut Session, session: &str, registry: &Path) {
    let deadline = Instant::now() + Duration::from_mins(2);
    let gone = loop {
        assert!(Instant::now() < deadline, "the exit of DSH was never reported");
        let waited = mcp.call_within(
            6,
            "cordis_wait_for_runtime_change",
            &json!({"debugSessionId": session, "timeoutMs": 60_000}),
            Duration::from_mins(2),
        );
        assert_ne!(waited["result"]["isError"], true, "read past the end: {waited}");
        let records = result(&waited)["records"].as_array().cloned().unwrap_or_default();
        if records.iter().any(|r| r["kind"] == "target-disposed") {
            break waited;
        }
    };
    assert_eq!(result(&gone)["outcome"], "found");
    assert!(
        result(&gone)["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "target-disposed" && r["reason"] == "host-disposed"),
        "{gone}"
    );
    let stale = mcp.call(7, "cordis_debug_snapshot", &json!({"debugSessionId": session}));
    assert_eq!(stale["result"]["isError"], true, "{stale}");
    // DSH exited cleanly: it disposed its plugins, the collector with them.
    assert_eq!(
        stale["result"]["structuredContent"]["code"], "HOST_DISPOSED",
        "{stale}"
    );
    // The exited DSH is listed only as the stale target this server's session
    // is still on, with why it went.
    let listed = mcp.call(8, "cordis_list_debug_targets", &json!({}));
    let targets = result(&listed)["targets"].as_array().cloned().unwrap_or_default();
    assert_eq!(targets.len(), 1, "{listed}");
    assert_eq!(
        (&targets[0]["status"], &targets[0]["reason"]),
        (&json!("stale"), &json!("host-disposed")),
        "{listed}"
    );
    assert_eq!(
        targets[0]["capabilities"],
        json!(["target-discovery"]),
        "{listed}"
    );
    // Its endpoint stopped with it (and removed its URL file on the way out).
    wait_until(
        Duration::from_mins(1),
        "the plugin's endpoint outlived DSH",
        || !registry.join("endpoint").exists(),
    );
}

/// The plugin serves the endpoint too: a bridge finds it through the URL file in
/// the registry and lists the same target.
fn the_plugins_endpoint_lists(peers: &Peers, home: &Path, registry: &Path, target: &Value) {
    wait_until(
        Duration::from_mins(1),
        "the plugin's endpoint wrote no URL file",
        || registry.join("endpoint").exists(),
    );
    let mut bridge =
        LineChild::spawn(devtools_command(home, registry, &["bridge"]).env("PATH", peers.path_var()));
    bridge.ask(&initialize(1));
    let through = bridge.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "cordis_list_debug_targets", "arguments": {}}}));
    assert_eq!(
        through["result"]["structuredContent"]["targets"][0]["id"], target["id"],
        "{through}"
    );
    // `dshkit devtools snapshot` from another home, through the plugin's endpoint.
    let elsewhere = Home::new();
    let url = std::fs::read_to_string(registry.join("endpoint")).unwrap();
    let snapshot = output(
        dshkit_command(elsewhere.path())
            .args(["devtools", "snapshot", "--json", "--endpoint", url.trim()])
            .arg("--token-file")
            .arg(registry.join("token")),
    );
    assert!(
        snapshot.status.success(),
        "{}",
        String::from_utf8_lossy(&snapshot.stderr)
    );
    let snapshot = stdout_json(&snapshot);
    assert_eq!(snapshot["target"], target["id"], "{snapshot}");
    assert!(snapshot["summary"]["fibers"].as_u64().unwrap() > 50, "{snapshot}");
}

/// An experiment whose core is killed mid-lease: another core sees the collector
/// end the lease itself and restore DSH's dispatch by identity. Returns that
/// other core and its session.
fn killed_core_leaves_no_lease(
    mut mcp: Session,
    session: &str,
    target: &Value,
    registry: &Path,
    waited: &Value,
) -> (Session, String) {
    let event = waited["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "dispatch-observed")
        .unwrap()["event"]
        .clone();
    let mut observer = devtools_session(registry);
    // `target` is the deprecated alias of `targetId`, accepted for one release.
    let watching = observer.call(1, "cordis_attach_debug_session", &json!({"target": target["id"]}));
    let watching = result(&watching)["debugSessionId"].as_str().unwrap().to_owned();
    let refused = mcp.call(
        9,
        "cordis_start_waterfall_experiment",
        &json!({"debugSessionId": session, "event": event, "ttlMs": 3000}),
    );
    assert_eq!(refused["result"]["isError"], true, "needs confirm: {refused}");
    let started = mcp.call(
        10,
        "cordis_start_waterfall_experiment",
        &json!({"debugSessionId": session, "event": event, "ttlMs": 3000, "confirm": true}),
    );
    let lease = result(&started)["lease"].clone();
    mcp.kill();
    let deadline = Instant::now() + Duration::from_mins(1);
    let ended = loop {
        assert!(Instant::now() < deadline, "the lease never ended");
        let waited = observer.call_within(
            2,
            "cordis_wait_for_runtime_change",
            &json!({"debugSessionId": watching, "event": event, "timeoutMs": 30_000}),
            Duration::from_mins(1),
        );
        if let Some(stop) = result(&waited)["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "profiler-status-changed" && r["state"] == "stopped")
        {
            break stop.clone();
        }
    };
    assert_eq!(ended["lease"], lease, "{ended}");
    assert_eq!(ended["reason"], "lease-expired", "{ended}");
    assert_eq!(ended["restored"], "identical", "{ended}");
    let status = observer.call(
        3,
        "cordis_waterfall_experiment_status",
        &json!({"debugSessionId": watching}),
    );
    assert!(result(&status)["running"].is_null(), "{status}");
    (observer, watching)
}

/// The collector's fixture runtime (the real Cordis) with experiments enabled,
/// driven through its stdin.
pub(crate) struct FixtureRuntime {
    pub(crate) guard: dshkit_test::ChildGuard,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl FixtureRuntime {
    pub(crate) fn start(registry: &Path) -> Self {
        Self::start_with(
            registry,
            &dshkit_test::workspace_root().join("packages/dsh-plugin/devtools.js"),
        )
    }

    /// The fixture runtime with `collector` as its collector module.
    fn start_with(registry: &Path, collector: &Path) -> Self {
        use std::io::BufRead as _;
        let peers = Peers::get();
        let root = dshkit_test::workspace_root();
        let mut command = std::process::Command::new(peers.node());
        command
            .arg(root.join("crates/dshkit-devtools/tests/fixtures/runtime.mjs"))
            .arg(peers.cordis())
            .arg(collector)
            .arg(registry)
            .arg("profiled");
        let mut guard = dshkit_test::spawn_guarded(&mut command);
        let stdin = guard.child.stdin.take().unwrap();
        let stdout = guard.child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let runtime = Self { guard, stdin, lines };
        runtime.expect("ready ");
        runtime
    }

    pub(crate) fn expect(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_mins(1))
                .unwrap_or_else(|e| panic!("no line {prefix:?} from the runtime: {e}"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    pub(crate) fn say(&mut self, command: &str) {
        use std::io::Write as _;
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }
}

/// The keys of `targets --json` and `snapshot --json`, on either route.
pub(crate) const TARGETS_KEYS: [&str; 3] = ["formatVersion", "route", "targets"];
pub(crate) const SNAPSHOT_KEYS: [&str; 9] = [
    "candidates",
    "dispatches",
    "events",
    "fibers",
    "formatVersion",
    "profiler",
    "route",
    "summary",
    "target",
];

/// The keys of a JSON object, sorted.
pub(crate) fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn the_cli_profiles_for_the_whole_window_and_compares_with_a_checkpoint() {
    let registry = Registry::new();
    let mut runtime = FixtureRuntime::start(&registry.dir);

    let listed = stdout_json(&registry.run(&["targets", "--json"]));
    assert_eq!(listed["targets"][0]["pid"], runtime.guard.pid(), "{listed}");
    // The socket route prints what the endpoint's does, the route named in one field.
    assert_eq!(keys(&listed), TARGETS_KEYS, "{listed}");
    assert_eq!(
        listed["route"]["registry"],
        registry.dir.to_str().unwrap(),
        "{listed}"
    );
    let snapshot = stdout_json(&registry.run(&["snapshot", "--json"]));
    assert_eq!(keys(&snapshot), SNAPSHOT_KEYS, "{snapshot}");
    assert!(snapshot["fibers"].as_array().unwrap().len() >= 4, "{snapshot}");
    assert_eq!(
        snapshot["route"]["registry"],
        registry.dir.to_str().unwrap(),
        "{snapshot}"
    );

    let saved = registry.run(&["checkpoint"]);
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    runtime.say("load");
    runtime.expect("loaded");
    let compared = stdout_json(&registry.run(&["compare", "--json"]));
    assert_eq!(compared["totals"]["added"], 1, "{compared}");
    assert_eq!(compared["added"][0]["scope"], "fiber", "{compared}");

    // The profile holds its lease for the whole 2 s window while the runtime pipes.
    let mut profiling = registry
        .devtools(&["profile", "custom/pipe", "--ttl", "2s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut sent = 0;
    while profiling.try_wait().unwrap().is_none() {
        runtime.say("pipe");
        runtime.expect("piped ");
        sent += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let finished = profiling.wait_with_output().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );
    let profile = stdout_json(&finished);
    assert!(profile["heldMs"].as_u64().unwrap() >= 2000, "{profile}");
    assert_eq!(profile["restored"], "identical", "{profile}");
    let traced = profile["traces"].as_array().unwrap();
    assert!(
        !traced.is_empty() && traced.len() <= sent,
        "{} traces of {sent} pipes: {profile}",
        traced.len()
    );
    assert!(
        traced
            .iter()
            .all(|t| t["listeners"].as_array().unwrap().len() == 4),
        "{profile}"
    );
    // Every page was read: as many traces as the collector kept.
    assert_eq!(traced.len(), profile["tracesKept"], "{profile}");
    // The CLI is gone, so its channel closes and the collector's dispatch
    // observer goes too (in the collector's own time: asked until it has).
    wait_for(Duration::from_secs(30), || {
        runtime.say("identity");
        let said = runtime.expect("identity ");
        if said == "identity dispatch=prototype callbacks=true" {
            Ok(())
        } else {
            Err(format!("still {said}"))
        }
    });

    // The transient sessions were all detached: nothing runs, nothing is held.
    let stop = registry.run(&["stop", "--json"]);
    assert_eq!(stdout_json(&stop)["stopped"], false);
}

/// A child whose stdout lines arrive on a channel.
pub(crate) struct LineChild {
    pub(crate) guard: dshkit_test::ChildGuard,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    /// Everything it printed on stdout so far.
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl LineChild {
    pub(crate) fn spawn(command: &mut std::process::Command) -> Self {
        use std::io::BufRead as _;
        let mut guard = dshkit_test::spawn_guarded(command);
        let stdin = guard.child.stdin.take();
        let stdout = guard.child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let record = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                record.lock().unwrap().push_str(&line);
                let _ = tx.send(line);
            }
        });
        Self {
            guard,
            stdin,
            lines,
            seen,
        }
    }

    /// Closes stdin, waits for the exit and returns all stdout and stderr.
    pub(crate) fn finish(mut self) -> String {
        use std::io::Read as _;
        drop(self.stdin.take());
        let guard = &mut self.guard;
        wait_until(
            Duration::from_mins(1),
            "still running after its stdin closed",
            || !guard.alive(),
        );
        let mut all = self.seen.lock().unwrap().clone();
        if let Some(mut stderr) = self.guard.child.stderr.take() {
            stderr.read_to_string(&mut all).unwrap();
        }
        all
    }

    pub(crate) fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_mins(1))
            .expect("a line within a minute")
    }

    pub(crate) fn send(&mut self, message: &Value) {
        use std::io::Write as _;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn ask(&mut self, message: &Value) -> Value {
        self.send(message);
        loop {
            let answer: Value = serde_json::from_str(&self.next()).unwrap();
            if answer["id"] == message["id"] {
                return answer;
            }
        }
    }
}

pub(crate) fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bridge-test", "version": "1"}}})
}

#[test]
fn the_bridge_forwards_stdio_to_the_token_guarded_endpoint_without_showing_the_token_or_retrying() {
    let registry = Registry::new();
    let runtime = FixtureRuntime::start(&registry.dir);
    let serve = LineChild::spawn(&mut registry.devtools(&["serve", "--listen", "127.0.0.1:0"]));
    let url = serve
        .next()
        .strip_prefix("dshkit mcp: ")
        .expect("the endpoint's URL line")
        .to_owned();
    let token_file = registry.dir.join("token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    if let Some(mode) = dshkit_os::fs::mode(&std::fs::metadata(&token_file).unwrap()) {
        assert_eq!(mode & 0o777, 0o600);
    }

    let mut bridge = LineChild::spawn(
        registry
            .devtools(&["bridge", "--endpoint", &url])
            .stderr(std::process::Stdio::piped()),
    );
    let init = bridge.ask(&initialize(1));
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = bridge.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 15, "the devtools tools only: {names:?}");
    assert!(names.iter().all(|n| n.starts_with("cordis_")), "{names:?}");
    let targets = bridge.ask(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "cordis_list_debug_targets", "arguments": {}}}));
    assert_eq!(
        targets["result"]["structuredContent"]["targets"][0]["pid"],
        runtime.guard.pid(),
        "{targets}"
    );

    // A rotated token: the running endpoint keeps the old one, so a bridge that
    // reads the new one is refused, and says so without showing either.
    let rotated = registry.run(&["rotate-token"]);
    assert!(rotated.status.success());
    let mut refused = LineChild::spawn(
        registry
            .devtools(&["bridge", "--endpoint", &url])
            .stderr(std::process::Stdio::piped()),
    );
    let answer = refused.ask(&initialize(1));
    let message = answer["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("401"), "{answer}");
    let new_token = std::fs::read_to_string(&token_file).unwrap();
    assert_ne!(token, new_token);

    // The endpoint dies: the call fails at once, once.
    drop(serve);
    let failed = bridge.ask(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "cordis_list_debug_targets", "arguments": {}}}));
    let message = failed["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("not retried"), "{failed}");

    for child in [bridge, refused] {
        let finished = child.finish();
        for secret in [token.trim(), new_token.trim()] {
            assert!(!finished.contains(secret), "the token was shown: {finished}");
        }
    }
}

/// `dshkit devtools serve` tied to its stdin on a free loopback port, once ready.
pub(crate) fn serve_endpoint(registry: &Registry) -> LineChild {
    let serve = LineChild::spawn(&mut registry.devtools(&[
        "serve",
        "--exit-on-stdin-eof",
        "--listen",
        "127.0.0.1:0",
    ]));
    assert!(serve.next().starts_with("dshkit mcp: "));
    serve
}

#[test]
fn an_endpoint_tied_to_its_stdin_stops_when_the_host_is_gone() {
    let registry = Registry::new();
    let serve = serve_endpoint(&registry);
    assert!(registry.dir.join("endpoint").exists());
    // The host dies: the write end of the endpoint's stdin closes.
    let output = serve.finish();
    assert!(!registry.dir.join("endpoint").exists(), "{output}");
}

#[test]
fn the_doctor_checks_the_directory_the_targets_and_the_endpoint_and_fails_on_what_is_wrong() {
    let registry = Registry::new();
    let doctor = || {
        let done = registry.run(&["doctor", "--json"]);
        let report = stdout_json(&done);
        let status = |id: &str| -> Vec<String> {
            report["facts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["id"] == id)
                .map(|f| f["status"].as_str().unwrap().to_owned())
                .collect()
        };
        let summary = (
            status("directory"),
            status("target"),
            status("endpoint"),
            status("token"),
        );
        (done.status.code(), summary, report)
    };

    // Nothing set up yet: a warning, not a failure.
    let (code, (directory, ..), report) = doctor();
    assert_eq!((code, directory), (Some(0), vec!["warn".to_owned()]), "{report}");

    // A live collector and an endpoint: all answer.
    let _runtime = FixtureRuntime::start(&registry.dir);
    let serve = serve_endpoint(&registry);
    let (code, (directory, target, endpoint, token), report) = doctor();
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(
        (directory, target, endpoint, token),
        (
            vec!["ok".into()],
            vec!["ok".into()],
            vec!["ok".into()],
            vec!["ok".into()]
        ),
        "{report}"
    );
    assert!(report.to_string().contains("experiments on"), "{report}");

    // A token others can read fails, and says how to fix it.
    let token = registry.dir.join("token");
    dshkit_os::fs::set_mode(&token, 0o644).unwrap();
    let (code, (.., token_status), report) = doctor();
    assert_eq!(
        (code, token_status),
        (Some(1), vec!["fail".to_owned()]),
        "{report}"
    );
    assert!(report.to_string().contains("chmod 600"), "{report}");
    dshkit_os::fs::set_mode(&token, 0o600).unwrap();

    // A token the endpoint did not start with: its authenticated tools/list is
    // refused (401), the fix named, neither token shown.
    let started_with = std::fs::read_to_string(&token).unwrap();
    assert!(registry.run(&["rotate-token"]).status.success());
    let rotated = std::fs::read_to_string(&token).unwrap();
    let (code, (_, _, endpoint, _), report) = doctor();
    assert_eq!((code, endpoint), (Some(1), vec!["fail".to_owned()]), "{report}");
    let said = report.to_string();
    assert!(
        said.contains("401") && said.contains("dshkit devtools rotate-token"),
        "{report}"
    );
    for secret in [started_with.trim(), rotated.trim()] {
        assert!(!said.contains(secret), "a token was shown: {report}");
    }

    // An endpoint file left behind by an endpoint that is gone fails.
    let url = std::fs::read_to_string(registry.dir.join("endpoint")).unwrap();
    drop(serve.finish());
    std::fs::write(registry.dir.join("endpoint"), &url).unwrap();
    let (code, (_, _, endpoint, _), report) = doctor();
    assert_eq!((code, endpoint), (Some(1), vec!["fail".to_owned()]), "{report}");
}

#[test]
fn a_collector_of_another_protocol_version_is_refused_with_both_versions_and_the_fix() {
    let registry = Registry::new();
    // The collector of a later plugin: this one, announcing protocol 2.
    let original =
        std::fs::read_to_string(dshkit_test::workspace_root().join("packages/dsh-plugin/devtools.js"))
            .unwrap();
    let later = original.replacen("export const PROTOCOL = 1;", "export const PROTOCOL = 2;", 1);
    assert_ne!(later, original, "the collector names its protocol");
    let collector = registry.home.join("devtools.js");
    std::fs::write(&collector, later).unwrap();
    let _runtime = FixtureRuntime::start_with(&registry.dir, &collector);
    let says_it_all = |said: &str| {
        for part in [
            "speaks protocol 2",
            "speaks protocol 1",
            "install the DSH plugin again with this dshkit (`dshkit dsh install --devtools`)",
        ] {
            assert!(said.contains(part), "{part:?} is missing from: {said}");
        }
    };

    // The agent: the target is listed with its problem, and attaching is refused.
    let mut mcp = devtools_session(&registry.dir);
    let listed = mcp.call(1, "cordis_list_debug_targets", &json!({}));
    let target = result(&listed)["targets"][0].clone();
    assert_eq!(target["protocol"], 2, "{listed}");
    says_it_all(target["problem"].as_str().unwrap_or_default());
    says_it_all(
        listed["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default(),
    );
    let attached = mcp.call(2, "cordis_attach_debug_session", &json!({"target": target["id"]}));
    assert_eq!(attached["result"]["isError"], true, "{attached}");
    assert_eq!(
        attached["result"]["structuredContent"]["code"], "PROTOCOL_MISMATCH",
        "{attached}"
    );
    says_it_all(
        attached["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default(),
    );

    // A person: the target list, a refused command and the doctor say the same.
    let targets = registry.run(&["targets"]);
    assert!(targets.status.success());
    says_it_all(&String::from_utf8_lossy(&targets.stdout));
    let snapshot = registry.run(&["snapshot"]);
    assert!(!snapshot.status.success(), "a snapshot is refused");
    says_it_all(&String::from_utf8_lossy(&snapshot.stderr));
    let doctor = registry.run(&["doctor", "--json"]);
    assert_eq!(doctor.status.code(), Some(1));
    let report = stdout_json(&doctor);
    let fact = report["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "target")
        .cloned()
        .unwrap_or_else(|| panic!("no target fact: {report}"));
    assert_eq!(fact["status"], "fail", "{fact}");
    says_it_all(&fact.to_string());
}

/// A collector whose registry cannot be written (its directory is a plain file)
/// no longer takes the plugin down: the turn's LiveLoop call is answered by the
/// tool in that DSH, and the failure is reported on DSH's stderr.
#[test]
fn a_collector_that_cannot_write_its_registry_leaves_liveloop_working() {
    let peers = Peers::get();
    let (home, dsh_home) = headless_home(&peers);
    install_with_devtools(&peers, home.path(), &dsh_home);
    std::fs::write(dsh_home.join("dshkit-devtools"), "not a directory").unwrap();
    let model = FakeModel::start("liveloop_detect", &json!({}));
    let finished = headless_turn(home.path(), &model.url).join().unwrap();
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(finished.status.success(), "{stderr}");
    assert!(stderr.contains("Cordis DevTools did not start"), "{stderr}");
    let requests = model.turn_requests();
    let answered = requests.iter().find_map(|r| {
        r["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].to_string())
    });
    let answered = answered.unwrap_or_else(|| panic!("the tool call was never answered: {requests:?}"));
    assert!(
        answered.contains("app(s) in"),
        "liveloop_detect answered: {answered}"
    );
}
