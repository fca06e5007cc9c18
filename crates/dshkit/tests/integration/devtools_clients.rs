//! The clients of the DevTools endpoint: `dshkit devtools` as an MCP client of
//! it (from another home, with a token file or the environment, loopback only,
//! its transient sessions detached on every way out), and the bridge reading the
//! token and URL again when its host opens a session.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dshkit_test::wait_for;
use serde_json::{Value, json};

use crate::devtools::{
    FixtureRuntime, LineChild, Registry, SNAPSHOT_KEYS, TARGETS_KEYS, initialize, keys, serve_endpoint,
};
use crate::support::{Home, dshkit_command, output, stdout_json};

/// A fixture runtime, its endpoint, and a home that knows neither.
struct Served {
    registry: Registry,
    runtime: FixtureRuntime,
    _serve: LineChild,
    url: String,
    token_file: PathBuf,
    elsewhere: Home,
}

impl Served {
    fn start() -> Self {
        let registry = Registry::new();
        let runtime = FixtureRuntime::start(&registry.dir);
        let serve = serve_endpoint(&registry);
        let url = std::fs::read_to_string(registry.dir.join("endpoint"))
            .unwrap()
            .trim()
            .to_owned();
        let token_file = registry.dir.join("token");
        Self {
            registry,
            runtime,
            _serve: serve,
            url,
            token_file,
            elsewhere: Home::new(),
        }
    }

    /// `dshkit devtools ARGS --endpoint URL --token-file FILE` in the other home.
    fn cli(&self, args: &[&str], token_file: &Path) -> Command {
        let mut command = dshkit_command(self.elsewhere.path());
        command
            .arg("devtools")
            .args(args)
            .arg("--endpoint")
            .arg(&self.url)
            .arg("--token-file")
            .arg(token_file);
        command
    }

    fn token(&self) -> String {
        std::fs::read_to_string(&self.token_file)
            .unwrap()
            .trim()
            .to_owned()
    }

    /// How many cores the collector has attached now.
    fn cores(&mut self) -> u64 {
        self.runtime.say("cores");
        self.runtime.expect("cores ")["cores ".len()..].parse().unwrap()
    }

    fn cores_become(&mut self, wanted: u64, why: &str) {
        wait_for(Duration::from_secs(30), || match self.cores() {
            n if n == wanted => Ok(()),
            n => Err(format!("{why}: {n} core(s) attached, not {wanted}")),
        });
    }
}

fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_devtools_cli_snapshots_through_the_endpoint_from_another_home_and_detaches() {
    let mut served = Served::start();
    let token_file = served.token_file.clone();
    // The other home has no registry: the socket route finds nothing there.
    let direct = stdout_json(&output(
        dshkit_command(served.elsewhere.path()).args(["devtools", "targets", "--json"]),
    ));
    assert_eq!(direct["targets"], json!([]), "{direct}");

    let listed = stdout_json(&output(&mut served.cli(&["targets", "--json"], &token_file)));
    assert_eq!(listed["route"]["endpoint"], served.url.as_str(), "{listed}");
    assert_eq!(keys(&listed), TARGETS_KEYS, "as the socket route: {listed}");
    assert_eq!(
        listed["targets"][0]["pid"],
        served.runtime.guard.pid(),
        "{listed}"
    );
    let target = listed["targets"][0]["id"].as_str().unwrap().to_owned();

    let snapshot = output(&mut served.cli(&["snapshot", "--json"], &token_file));
    assert!(snapshot.status.success(), "{}", said(&snapshot));
    let snapshot = stdout_json(&snapshot);
    assert_eq!(snapshot["target"], target.as_str(), "{snapshot}");
    assert!(snapshot["summary"]["fibers"].as_u64().unwrap() >= 4, "{snapshot}");
    assert!(snapshot["candidates"].is_array(), "{snapshot}");
    assert_eq!(keys(&snapshot), SNAPSHOT_KEYS, "as the socket route: {snapshot}");
    assert_eq!(snapshot["route"]["endpoint"], served.url.as_str(), "{snapshot}");
    assert!(snapshot["fibers"].as_array().unwrap().len() >= 4, "{snapshot}");
    let text = output(&mut served.cli(&["snapshot"], &token_file));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.starts_with(&format!("target {target}: ")), "{text}");
    assert!(
        text.contains("candidate(s) (facts to look at, never causes)"),
        "{text}"
    );

    let event = stdout_json(&output(
        &mut served.cli(&["event", "custom/pipe", "--json"], &token_file),
    ));
    assert_eq!(event["listeners"].as_array().unwrap().len(), 4, "{event}");
    let fibers = stdout_json(&output(
        &mut served.cli(&["fiber", "--name", "steady", "--json"], &token_file),
    ));
    assert_eq!(
        fibers["formatVersion"], 1,
        "a list is {{formatVersion, items}}: {fibers}"
    );
    assert_eq!(fibers["items"][0]["state"], "active", "{fibers}");
    // Every command detached its session: the endpoint let go of the collector.
    served.cores_become(0, "a command left its session attached");

    // A watch interrupted with Ctrl-C still detaches (its finally path).
    let watch = LineChild::spawn(
        served
            .cli(&["watch", "--event", "custom/ping", "--json"], &token_file)
            .stderr(std::process::Stdio::piped()),
    );
    served.cores_become(1, "the watch never attached");
    served.runtime.say("ping");
    let seen: Value = serde_json::from_str(&watch.next()).unwrap();
    assert_eq!(
        (&seen["kind"], &seen["event"]),
        (&json!("dispatch-observed"), &json!("custom/ping")),
        "{seen}"
    );
    #[cfg(unix)]
    interrupted_still_detaches(&mut served, watch);
    #[cfg(not(unix))]
    drop(watch);
}

/// Ctrl-C (SIGINT) to a running command: it detaches on its way out.
#[cfg(unix)]
fn interrupted_still_detaches(served: &mut Served, mut watch: LineChild) {
    let interrupted = Command::new("kill")
        .args(["-INT", &watch.guard.pid().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let guard = &mut watch.guard;
    dshkit_test::wait_until(Duration::from_secs(30), "the watch outlived Ctrl-C", || {
        !guard.alive()
    });
    served.cores_become(0, "Ctrl-C left the watch's session attached");
}

#[test]
fn the_devtools_cli_refuses_a_wrong_token_and_a_non_loopback_endpoint_without_showing_a_token() {
    let served = Served::start();
    let token = served.token();
    let wrong_file = served.elsewhere.join("wrong-token");
    let wrong = "w".repeat(43);
    std::fs::write(&wrong_file, &wrong).unwrap();

    let refused = output(&mut served.cli(&["snapshot"], &wrong_file));
    let all = said(&refused);
    assert_eq!(refused.status.code(), Some(3), "{all}");
    assert!(all.contains("HTTP 401"), "{all}");
    assert!(all.contains("dshkit devtools rotate-token"), "{all}");
    assert!(
        !all.contains(&token) && !all.contains(&wrong),
        "a token was shown: {all}"
    );

    // The environment's endpoint and token (no flags), wrong then right.
    let by_env = |token: &str| {
        let mut command = dshkit_command(served.elsewhere.path());
        command
            .args(["devtools", "targets", "--json"])
            .env("DSH_CORDIS_DEBUG_ENDPOINT", &served.url)
            .env("DSH_CORDIS_DEBUG_TOKEN", token);
        output(&mut command)
    };
    let refused = by_env(&wrong);
    assert_eq!(refused.status.code(), Some(3), "{}", said(&refused));
    assert!(!said(&refused).contains(&wrong));
    let listed = by_env(&token);
    assert!(listed.status.success(), "{}", said(&listed));
    assert_eq!(
        stdout_json(&listed)["targets"][0]["pid"],
        served.runtime.guard.pid()
    );

    // Anything but loopback is refused before the token leaves this process.
    let mut far = dshkit_command(served.elsewhere.path());
    far.args(["devtools", "snapshot", "--endpoint", "http://192.0.2.1:43127/mcp"])
        .arg("--token-file")
        .arg(&served.token_file);
    let far = output(&mut far);
    assert_eq!(far.status.code(), Some(3), "{}", said(&far));
    assert!(said(&far).contains("not on loopback"), "{}", said(&far));
    drop(served.registry);
}

#[test]
fn the_bridge_reads_the_token_and_url_again_when_its_host_opens_a_session() {
    let registry = Registry::new();
    let runtime = FixtureRuntime::start(&registry.dir);
    let serve = serve_endpoint(&registry);
    let mut bridge = LineChild::spawn(
        registry
            .devtools(&["bridge"])
            .stderr(std::process::Stdio::piped()),
    );
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cordis_list_debug_targets", "arguments": {}}});
    let init = bridge.ask(&initialize(1));
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = std::fs::read_to_string(registry.dir.join("token")).unwrap();

    // A rotated token, and the endpoint restarted with it on another port.
    assert!(registry.run(&["rotate-token"]).status.success());
    drop(serve.finish());
    let _serve = serve_endpoint(&registry);
    let after = std::fs::read_to_string(registry.dir.join("token")).unwrap();
    assert_ne!(before, after);

    // The same bridge: the host's next session reaches the new endpoint.
    let init = bridge.ask(&initialize(2));
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = bridge.ask(&list(3));
    assert_eq!(
        listed["result"]["structuredContent"]["targets"][0]["pid"],
        runtime.guard.pid(),
        "{listed}"
    );
    let finished = bridge.finish();
    for secret in [before.trim(), after.trim()] {
        assert!(!finished.contains(secret), "the token was shown: {finished}");
    }
}

/// `dshkit devtools setup --agent claude-code --agent codex`: the bridge in each
/// host's file, merged with what was there, read back by real JSON and TOML
/// parsers, the same on a second run; the registered command is a working
/// bridge; a malformed file is refused and left as it was.
#[test]
fn setup_registers_the_bridge_with_claude_code_and_codex_merging_their_files() {
    let peers = dshkit_test::Peers::get();
    let (home, dsh_home) = crate::support::headless_home(&peers);
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mcp_json = project.join(".mcp.json");
    std::fs::write(
        &mcp_json,
        r#"{"mcpServers": {"other": {"command": "other-server"}}, "keep": true}"#,
    )
    .unwrap();
    let codex_toml = home.join(".codex/config.toml");
    std::fs::create_dir_all(codex_toml.parent().unwrap()).unwrap();
    let codex_before = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\n";
    std::fs::write(&codex_toml, codex_before).unwrap();
    let setup = || {
        output(
            dshkit_command(home.path())
                .env("PATH", peers.path_var())
                .args(["devtools", "setup", "--profile", "headless", "--no-boot-check"])
                .args([
                    "--endpoint",
                    "127.0.0.1:0",
                    "--agent",
                    "claude-code",
                    "--agent",
                    "codex",
                ])
                .arg("--project")
                .arg(&project)
                .arg("--dsh-home")
                .arg(&dsh_home),
        )
    };
    let first = setup();
    assert!(first.status.success(), "{}", said(&first));
    assert!(
        said(&first).contains("registered dsh-devtools"),
        "{}",
        said(&first)
    );

    let registry = dsh_home.join("dshkit-devtools").display().to_string();
    let claude: Value = serde_json::from_str(&std::fs::read_to_string(&mcp_json).unwrap()).unwrap();
    assert_eq!(claude["keep"], true, "{claude}");
    assert_eq!(
        claude["mcpServers"]["other"]["command"], "other-server",
        "{claude}"
    );
    let entry = &claude["mcpServers"]["dsh-devtools"];
    assert_eq!(
        entry["args"],
        json!(["devtools", "--devtools-dir", registry, "bridge"]),
        "{claude}"
    );
    let codex_text = std::fs::read_to_string(&codex_toml).unwrap();
    assert!(codex_text.starts_with(codex_before), "{codex_text}");
    let codex: toml::Table = codex_text.parse().unwrap();
    assert_eq!(codex["model"].as_str(), Some("o3"));
    assert_eq!(
        codex["mcp_servers"]["other"]["command"].as_str(),
        Some("other-server")
    );
    let ours = &codex["mcp_servers"]["dsh-devtools"];
    assert_eq!(ours["command"].as_str(), entry["command"].as_str());
    assert_eq!(ours["args"][2].as_str(), Some(registry.as_str()));

    codex_lists_it(home.path(), ours);
    claude_code_lists_it(home.path(), &project, entry);

    // Again: nothing changes.
    let claude_text = std::fs::read_to_string(&mcp_json).unwrap();
    let again = setup();
    assert!(again.status.success(), "{}", said(&again));
    assert!(said(&again).contains("already registers"), "{}", said(&again));
    assert_eq!(std::fs::read_to_string(&mcp_json).unwrap(), claude_text);
    assert_eq!(std::fs::read_to_string(&codex_toml).unwrap(), codex_text);

    the_registered_command_is_a_bridge(home.path(), &dsh_home, entry);

    // A malformed Codex file is refused and left untouched.
    std::fs::write(&codex_toml, "model = \n").unwrap();
    let refused = setup();
    assert_eq!(refused.status.code(), Some(3), "{}", said(&refused));
    assert!(said(&refused).contains("is not valid TOML"), "{}", said(&refused));
    assert_eq!(std::fs::read_to_string(&codex_toml).unwrap(), "model = \n");
}

/// Where the real Codex CLI (npm `@openai/codex`, a 400 MB native binary, so not
/// among the peers CI installs) is, to read the file back itself; runs offline.
const CODEX_FOR_TESTS: &str = "DSHKIT_TEST_CODEX";

/// With [`CODEX_FOR_TESTS`] set, `codex mcp list --json` lists the entry as written.
fn codex_lists_it(home: &Path, ours: &toml::Value) {
    let Some(codex) = std::env::var_os(CODEX_FOR_TESTS) else {
        return;
    };
    let listed = output(
        Command::new(codex)
            .args(["mcp", "list", "--json"])
            .env("CODEX_HOME", home.join(".codex")),
    );
    assert!(listed.status.success(), "{}", said(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "dsh-devtools")
        .unwrap_or_else(|| panic!("codex does not list dsh-devtools: {listed}"));
    assert_eq!(entry["transport"]["type"], "stdio", "{entry}");
    assert_eq!(entry["transport"]["command"].as_str(), ours["command"].as_str());
    assert_eq!(entry["transport"]["args"][3], "bridge", "{entry}");
}

/// Where the real Claude Code CLI (npm `@anthropic-ai/claude-code`, a native
/// binary of 200 MB and more, not among CI's peers) is; `claude mcp list` runs offline.
const CLAUDE_CODE_FOR_TESTS: &str = "DSHKIT_TEST_CLAUDE_CODE";

/// With [`CLAUDE_CODE_FOR_TESTS`] set, `claude mcp list` in the project lists
/// the entry (pending the person's approval, as every project-scope server is).
fn claude_code_lists_it(home: &Path, project: &Path, entry: &Value) {
    let Some(claude) = std::env::var_os(CLAUDE_CODE_FOR_TESTS) else {
        return;
    };
    let mut command = Command::new(claude);
    crate::support::isolate(&mut command, home);
    command.args(["mcp", "list"]).current_dir(project);
    let listed = output(&mut command);
    assert!(listed.status.success(), "{}", said(&listed));
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let line = format!(
        "dsh-devtools: {} {}",
        entry["command"].as_str().unwrap(),
        args.join(" ")
    );
    assert!(
        said(&listed).contains(&line),
        "{line:?} not in: {}",
        said(&listed)
    );
}

/// The command a host would start from `entry` is a bridge to the endpoint of
/// `dsh_home`'s registry.
fn the_registered_command_is_a_bridge(home: &Path, dsh_home: &Path, entry: &Value) {
    let registry = Registry {
        home: Home::new(),
        dir: dsh_home.join("dshkit-devtools"),
    };
    let _serve = serve_endpoint(&registry);
    let mut host_started = Command::new(entry["command"].as_str().unwrap());
    crate::support::isolate(&mut host_started, home);
    host_started.args(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    let mut bridge = LineChild::spawn(&mut host_started);
    assert!(bridge.ask(&initialize(1))["result"]["serverInfo"].is_object());
    bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = bridge.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(
        listed["result"]["tools"].as_array().unwrap().len(),
        15,
        "{listed}"
    );
    drop(bridge.finish());
}
