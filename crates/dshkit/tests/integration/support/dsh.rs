//! The real DSH, isolated in a temp home: its profiles made by `dsh` itself, the
//! plugin installed, headless turns and `dsh web` against the fake model, and a
//! page for it to verify.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use dshkit_test::{ANSWER_PREFIX, ChildGuard, FakeModel, LoopbackServer, Peers, spawn_guarded, spawn_ready};

use super::command::{dshkit_command, output};
use super::home::{Home, describe};

/// Longest a headless DSH turn may take here (boot ~2 s, plus the MCP handshake).
const TURN_DEADLINE: Duration = Duration::from_mins(2);

/// The page the plugin's tests verify.
pub(crate) const PAGE: &str = "<!doctype html><title>Native</title><h1>Hello from the native plugin</h1>";

/// The real `dsh`, isolated in `home` (its `DSH_HOME` is `home/dsh`).
pub(crate) fn dsh_command(peers: &Peers, home: &Path) -> Command {
    peers.dsh_command(home, &home.join("dsh"))
}

/// A fresh HOME whose DSH home (`<home>/dsh`, returned too) has the `web`
/// profile, made by the real `dsh`.
pub(crate) fn web_home(peers: &Peers) -> (Home, PathBuf) {
    let home = Home::new();
    let made = output(
        dsh_command(peers, home.path())
            .args(["web", "--dump-default-config"])
            .stdout(Stdio::null()),
    );
    assert!(
        made.status.success(),
        "dsh --dump-default-config failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let dsh_home = home.path().join("dsh");
    assert!(dsh_home.join("profiles/web/cordis.patch.yml").is_file());
    (home, dsh_home)
}

/// A fresh HOME whose DSH home (`<home>/dsh`, returned too) has the headless
/// profile, made by the real `dsh`.
pub(crate) fn headless_home(peers: &Peers) -> (Home, PathBuf) {
    let home = Home::new();
    let dsh_home = home.path().join("dsh");
    let made =
        output(dsh_command(peers, home.path()).args(["--profile", "headless", "--dump-default-config"]));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    (home, dsh_home)
}

/// A fresh HOME with the `web` or the `headless` profile, made by the real `dsh`.
pub(crate) fn profile_home(peers: &Peers, profile: &str) -> (Home, PathBuf) {
    match profile {
        "web" => web_home(peers),
        "headless" => headless_home(peers),
        other => panic!("no test profile `{other}`: web or headless"),
    }
}

/// `dshkit dsh install --profile PROFILE EXTRA` into `dsh_home`.
pub(crate) fn install(home: &Path, dsh_home: &Path, profile: &str, extra: &[&str]) -> Output {
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
pub(crate) fn installed_home(peers: &Peers, profile: &str) -> (Home, PathBuf) {
    let (home, dsh_home) = profile_home(peers, profile);
    let installed = install(home.path(), &dsh_home, profile, &["--no-boot-check"]);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    (home, dsh_home)
}

/// Runs one headless DSH turn (with `patch` as an extra overlay when given) against
/// the fake model; returns stdout.
pub(crate) fn dsh_turn(
    peers: &Peers,
    home: &Path,
    patch: Option<&Path>,
    model: &FakeModel,
    task: &str,
) -> String {
    dsh_turn_in(peers, home, None, patch, model, task)
}

/// [`dsh_turn`] with DSH started in `cwd` (its workspace).
pub(crate) fn dsh_turn_in(
    peers: &Peers,
    home: &Path,
    cwd: Option<&Path>,
    patch: Option<&Path>,
    model: &FakeModel,
    task: &str,
) -> String {
    let (status, stdout, stderr) = dsh_run_in(peers, home, cwd, patch, model, task);
    assert!(
        status.success(),
        "dsh exited with {status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

/// [`dsh_turn_in`] that may fail: its exit status, stdout and stderr.
pub(crate) fn dsh_run_in(
    peers: &Peers,
    home: &Path,
    cwd: Option<&Path>,
    patch: Option<&Path>,
    model: &FakeModel,
    task: &str,
) -> (std::process::ExitStatus, String, String) {
    let mut command = dsh_command(peers, home);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command.args(["--profile", "headless"]);
    if let Some(patch) = patch {
        command.arg("--patch").arg(patch);
    }
    command
        .arg(task)
        .env("DEEPSEEK_BASE_URL", &model.url)
        .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
    let mut turn = spawn_guarded(&mut command);
    drop(turn.child.stdin.take());
    let status = dshkit_test::wait_for(TURN_DEADLINE, || {
        turn.child
            .try_wait()
            .unwrap()
            .ok_or_else(|| "the DSH turn did not finish".to_owned())
    });
    let (mut stdout, mut stderr) = (String::new(), String::new());
    turn.child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    turn.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stdout, stderr)
}

/// `dsh web` on a free port for `home`, with the fake model; returns it and its URL.
pub(crate) fn dsh_web(peers: &Peers, home: &Path, model: &FakeModel) -> (ChildGuard, String) {
    dsh_web_at(peers, home, &model.url)
}

/// `dsh web` on a free port for `home`, with the model at `model_url`; returns it and its URL.
pub(crate) fn dsh_web_at(peers: &Peers, home: &Path, model_url: &str) -> (ChildGuard, String) {
    let mut command = dsh_command(peers, home);
    command
        .args(["web", "--port", "0", "--no-open"])
        .current_dir(home)
        .env("DEEPSEEK_BASE_URL", model_url)
        .env("DEEPSEEK_API_KEY", "sk-fake-loopback");
    spawn_ready(&mut command, "dsh web: ", Duration::from_mins(1))
}

/// The text of the tool result in a DSH answer (after [`ANSWER_PREFIX`]).
pub(crate) fn tool_answer(stdout: &str) -> &str {
    stdout
        .split(ANSWER_PREFIX)
        .nth(1)
        .unwrap_or_else(|| panic!("no tool result in the answer:\n{stdout}"))
}

/// Live processes started with this DSH home in their environment (the sidecar and
/// anything it started): DSH passes it to the sidecar, nothing else has it.
/// Asserts that no process of this DSH home runs any more (DSH, its sidecars, their children).
pub(crate) fn assert_no_process_left(dsh_home: &Path) {
    let left = processes_of(dsh_home);
    assert!(left.is_empty(), "DSH left dshkit processes behind: {left:#?}");
}

pub(crate) fn processes_of(dsh_home: &Path) -> Vec<String> {
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

/// A loopback server of `html` at `/`.
pub(crate) fn serve_html(html: impl Into<String>) -> LoopbackServer {
    let html: String = html.into();
    LoopbackServer::start(
        axum::Router::new().route(
            "/",
            axum::routing::get(move || {
                let html = html.clone();
                async move { axum::response::Html(html) }
            }),
        ),
        true,
    )
}

/// A loopback server of [`PAGE`].
pub(crate) fn serve_page() -> LoopbackServer {
    serve_html(PAGE)
}

/// `liveloop_verify` arguments for `app`: its root must show [`PAGE`]'s heading.
pub(crate) fn verify_arguments(app: &LoopbackServer) -> serde_json::Value {
    serde_json::json!({
        "appUrl": format!("http://127.0.0.1:{}/", app.addr.port()),
        "assertions": [{ "kind": "text_present", "text": "Hello from the native plugin" }],
    })
}

/// A fake model that calls `liveloop_verify` on `app` (see [`verify_arguments`]).
pub(crate) fn model_verifying(app: &LoopbackServer) -> FakeModel {
    FakeModel::start("liveloop_verify", &verify_arguments(app))
}

/// The model's request carries each guidance text of the binary's, DSH lists its
/// skills, and the tools it is offered have the descriptions the binary gives
/// hosts, without the arguments the plugin owns; the DevTools family's only where
/// the collector runs.
pub(crate) fn the_model_gets_the_binarys_guidance_and_skills(
    home: &std::path::Path,
    request: &serde_json::Value,
    collector: bool,
) {
    let described = describe(home);
    let offered: std::collections::HashMap<&str, &serde_json::Value> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["function"]["name"].as_str().unwrap(), &t["function"]))
        .collect();
    for tool in described["host"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let served = collector || tool["family"] != "devtools";
        assert_eq!(offered.contains_key(name), served, "{name}: {offered:?}");
        let Some(function) = offered.get(name) else {
            continue;
        };
        assert_eq!(function["description"], tool["description"], "{name}");
        for seam in ["approval", "images", "owner"] {
            if let Some(argument) = tool[seam]["argument"].as_str() {
                assert!(
                    function["parameters"]["properties"].get(argument).is_none(),
                    "{name} offers {argument}, which the plugin owns"
                );
            }
        }
    }
    let request = request.to_string();
    for guidance in described["host"]["guidance"].as_array().unwrap() {
        let text = serde_json::Value::from(guidance["text"].as_str().unwrap()).to_string();
        assert!(
            request.contains(text.trim_matches('"')),
            "guidance {} is not in the model's request: {request}",
            guidance["name"]
        );
    }
    for skill in described["host"]["skills"].as_array().unwrap() {
        let description = serde_json::Value::from(skill["description"].as_str().unwrap()).to_string();
        let listed = request.contains(description.trim_matches('"'));
        assert_eq!(
            listed,
            collector || skill["family"] != "devtools",
            "skill {}: {request}",
            skill["name"]
        );
    }
}
