//! The command line: help, doctor, dsh mcp-row, dsh connect (checked by real DSH).

use std::process::{Command, Stdio};

use dshkit_test::Peers;

use crate::support::{Home, Session, dsh_command, dshkit, output, stdout_json, web_home};

#[test]
fn the_version_names_the_workspace_version_and_the_commit_git_names() {
    let git = |args: &[&str]| {
        let out = output(
            Command::new("git")
                .args(args)
                .current_dir(dshkit_test::workspace_root()),
        );
        let text = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let out = Home::new().run(["--version"]);
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let plain = format!("dshkit {}", env!("CARGO_PKG_VERSION"));
    // Where git cannot name a commit (no checkout), the version stands alone.
    if git(&["rev-parse", "HEAD"]).is_none() {
        assert_eq!(printed, plain);
        return;
    }
    let build = printed
        .strip_prefix(&format!("{plain} ("))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no (COMMIT DATE) after the version: {printed}"));
    let (commit, date) = build.split_once(' ').unwrap();
    assert_eq!(commit.len(), 12, "{printed}");
    // The commit is one git knows on this branch (HEAD or before it: a commit made
    // after the build moves HEAD on), and its date is git's.
    assert_eq!(
        git(&["log", "-1", "--format=%cs", commit]).as_deref(),
        Some(date),
        "{printed}"
    );
    assert!(
        output(
            Command::new("git")
                .args(["merge-base", "--is-ancestor", commit, "HEAD"])
                .current_dir(dshkit_test::workspace_root())
        )
        .status
        .success(),
        "{printed}: {commit} is not HEAD or an ancestor of it"
    );
}

#[test]
fn help_lists_the_commands_and_the_exit_codes() {
    let out = Home::new().run(["--help"]);
    assert!(out.status.success());
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}

#[test]
fn doctor_reports_the_real_chromium_node_and_dsh() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let out = output(
        home.dshkit()
            .args(["doctor", "--json"])
            .env("PATH", peers.path_var())
            .env("DSH_HOME", &dsh_home),
    );
    let report = stdout_json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    let fact = |id: &str| {
        report["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()
            .clone()
    };

    // Each version is checked against what the component itself says.
    let chromium = fact("chromium");
    let banner = output(Command::new(chromium["path"].as_str().unwrap()).arg("--version"));
    assert!(
        String::from_utf8_lossy(&banner.stdout).contains(chromium["version"].as_str().unwrap()),
        "{chromium}"
    );
    let node = fact("node");
    let node_banner = output(Command::new(peers.node()).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&node_banner.stdout).trim(),
        format!("v{}", node["version"].as_str().unwrap())
    );
    assert_eq!(node["status"], "ok");
    let dsh = fact("dsh");
    assert_eq!(dsh["status"], "ok", "{dsh}");
    assert_eq!(dsh["version"], "0.1.0-rc.8");
    let home_fact = fact("dsh_home");
    assert_eq!(home_fact["status"], "ok");
    assert!(
        home_fact["details"]
            .as_array()
            .unwrap()
            .contains(&"profile: web".into())
    );
    assert_eq!(fact("evidence_root")["status"], "ok");
    assert!(home.path().join(".state/dshkit/evidence").is_dir());
    assert!(fact("disk")["summary"].as_str().unwrap().contains("free of"));
}

#[test]
fn doctor_names_every_missing_piece_with_its_fix_and_exits_1() {
    let home = Home::new();
    let out = output(
        home.dshkit()
            .args(["doctor"])
            .env("PATH", home.path().join("empty-bin"))
            .env("DSHKIT_CHROMIUM", home.path().join("no-chromium")),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not ready"), "{text}");
    for (id, fix) in [
        ("chromium", "DSHKIT_CHROMIUM"),
        ("node", "npm install"),
        ("dsh", "DSHKIT_DSH"),
    ] {
        let line = text
            .lines()
            .position(|l| l.contains("missing") && l.contains(id))
            .unwrap_or_else(|| panic!("{id}: {text}"));
        assert!(
            text.lines().nth(line + 1).unwrap().contains(fix),
            "{id} fix: {text}"
        );
    }
    assert!(
        !text.contains("\x1b["),
        "NO_COLOR is set, yet colour codes were printed"
    );
}

#[test]
fn a_closed_stdout_is_not_a_crash() {
    let home = Home::new();
    let mut child = home
        .dshkit()
        .args(["doctor", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?} {stderr}",
        out.status
    );
}

#[test]
fn mcp_row_describes_this_binary_over_stdio_and_a_server_over_http() {
    let home = Home::new();
    let out = home.run(["dsh", "mcp-row", "--json", "--dsh-home", "/srv/dsh"]);
    assert!(out.status.success());
    let row = stdout_json(&out);
    assert_eq!(row["name"], "@deepseek-ai/dsh-mcp-client");
    assert_eq!(row["config"]["transport"], "stdio");
    assert_eq!(
        row["config"]["command"],
        std::fs::canonicalize(dshkit()).unwrap().display().to_string()
    );
    assert_eq!(
        row["config"]["args"],
        serde_json::json!(["mcp", "--stdio", "--images", "never"])
    );
    assert_eq!(row["config"]["env"]["DSH_HOME"], "/srv/dsh");

    let token_file = home.path().join("token");
    let out = output(
        home.dshkit()
            .args([
                "dsh",
                "mcp-row",
                "--http",
                "http://127.0.0.1:9/mcp",
                "--token-file",
            ])
            .arg(&token_file),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8_lossy(&out.stdout);
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert!(yaml.contains("transport: streamable-http"), "{yaml}");
    assert!(yaml.contains(&format!("Bearer {}", token.trim())), "{yaml}");
}

#[test]
fn dsh_connect_adds_a_row_real_dsh_accepts_and_is_idempotent() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let patch = dsh_home.join("profiles/web/cordis.patch.yml");
    let original = std::fs::read_to_string(&patch).unwrap();
    let connect = || {
        output(
            home.dshkit()
                .args(["dsh", "connect", "--profile", "web", "--json", "--dsh-home"])
                .arg(&dsh_home),
        )
    };

    let first = connect();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let report = stdout_json(&first);
    assert_eq!(report["outcome"], "added");
    assert_eq!(
        std::fs::read_to_string(report["backup"].as_str().unwrap()).unwrap(),
        original
    );
    let connected = std::fs::read_to_string(&patch).unwrap();
    assert!(
        connected.starts_with(original.lines().next().unwrap()),
        "the user's comments must stay:\n{connected}"
    );

    let second = connect();
    assert_eq!(stdout_json(&second)["outcome"], "unchanged");
    assert_eq!(std::fs::read_to_string(&patch).unwrap(), connected);

    // Real DSH composes the profile with our row in it.
    let dump = output(dsh_command(&peers, home.path()).args(["--profile", "web", "--dump-config"]));
    assert!(
        dump.status.success(),
        "dsh rejected the patch: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let tree = String::from_utf8_lossy(&dump.stdout);
    assert!(
        tree.contains("mcp-dshkit") && tree.contains("@deepseek-ai/dsh-mcp-client"),
        "{tree}"
    );
}

#[test]
fn dsh_connect_refuses_a_broken_patch_file_and_leaves_it_alone() {
    let home = Home::new();
    let profile = home.path().join("dsh/profiles/web");
    std::fs::create_dir_all(&profile).unwrap();
    let patch = profile.join("cordis.patch.yml");
    let broken = "- insert:\n    - id: mine\n      config: {unclosed: [1, 2\n";
    std::fs::write(&patch, broken).unwrap();
    let out = output(
        home.dshkit()
            .args(["dsh", "connect", "--dsh-home"])
            .arg(home.path().join("dsh")),
    );
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not valid YAML at line"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&patch).unwrap(), broken);
    assert_eq!(
        std::fs::read_dir(&profile).unwrap().count(),
        1,
        "no backup or temp file may be left"
    );

    let missing = output(
        home.dshkit()
            .args(["dsh", "connect", "--profile", "nope", "--dsh-home"])
            .arg(home.path().join("dsh")),
    );
    assert_eq!(missing.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("dump-default-config"));
}

#[test]
fn dshkit_check_reports_a_profile_and_explains_what_to_do() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let out = output(
        home.dshkit()
            .args(["check", "--json", "--dsh-home"])
            .arg(&dsh_home)
            .env("PATH", peers.path_var()),
    );
    let report = stdout_json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    let ids: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "patch_references",
            "syntax",
            "links",
            "manifest",
            "config_assembly",
            "live_boot",
            "page_smoke",
            "shutdown",
            "leftover_audit"
        ]
    );
    assert_eq!(
        report["checks"][5]["status"], "not_tested",
        "live was not asked for"
    );

    std::fs::write(
        dsh_home.join("profiles/web/cordis.patch.yml"),
        "- insert: [unclosed\n",
    )
    .unwrap();
    let broken = output(
        home.dshkit()
            .args(["check", "--dsh-home"])
            .arg(&dsh_home)
            .env("PATH", peers.path_var()),
    );
    assert_eq!(broken.status.code(), Some(1));
    let text = String::from_utf8_lossy(&broken.stdout);
    assert!(
        text.contains("fail") && text.contains("patch_references") && text.contains("--explain"),
        "{text}"
    );

    let explain = home.run(["check", "--explain"]);
    assert!(String::from_utf8_lossy(&explain.stdout).starts_with("# plugin-fault-diagnosis"));
}

#[test]
fn check_refuses_a_missing_home_or_profile_once_naming_what_is_there() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let refused = |dsh_home: &std::path::Path, profile: &str| {
        let out = output(
            home.dshkit()
                .args(["check", "--profile", profile, "--dsh-home"])
                .arg(dsh_home)
                .env("PATH", peers.path_var()),
        );
        assert_eq!(out.status.code(), Some(3), "refused: {out:?}");
        assert!(
            out.stdout.is_empty(),
            "no report of checks that could not read it: {out:?}"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let gone = dsh_home.join("not-here");
    let stderr = refused(&gone, "web");
    assert_eq!(stderr.matches("no DSH home at").count(), 1, "{stderr}");
    assert!(stderr.contains(&gone.display().to_string()), "{stderr}");

    let stderr = refused(&dsh_home, "wbe");
    assert_eq!(stderr.matches("no profile wbe").count(), 1, "{stderr}");
    assert!(stderr.contains("its profiles are web;"), "{stderr}");

    // With --json the refusal is one object on stdout, with the same exit code.
    let out = output(
        home.dshkit()
            .args(["--json", "check", "--profile", "wbe", "--dsh-home"])
            .arg(&dsh_home)
            .env("PATH", peers.path_var()),
    );
    assert_eq!(out.status.code(), Some(3));
    let error = stdout_json(&out);
    assert_eq!(error["formatVersion"], 1, "{error:#}");
    assert_eq!(error["error"]["code"], "PROFILE_NOT_FOUND", "{error:#}");
    assert_eq!(error["error"]["exitCode"], 3, "{error:#}");

    // Over MCP the same rule refuses the call with its code.
    let mut mcp = Session::initialized(&[], &[]);
    let answer = mcp.call(
        1,
        "plugin_check",
        &serde_json::json!({"dshHome": dsh_home, "profile": "wbe"}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("no profile wbe"), "{answer}");
}

#[test]
fn with_json_every_commands_failure_is_one_object_on_stdout_with_its_exit_code() {
    let home = Home::new();
    let missing = home.join("no-such-cassette.jsonl");
    // A runtime failure and a refusal of commands with no error output of their own.
    for args in [
        vec![
            "--json".to_owned(),
            "echo".into(),
            "lint".into(),
            missing.display().to_string(),
        ],
        vec![
            "--json".into(),
            "settings".into(),
            "set".into(),
            "--fields".into(),
            "{\"previewLimit\": \"0\"}".into(),
        ],
    ] {
        let out = home.run(&args);
        let error = stdout_json(&out);
        assert_eq!(error["formatVersion"], 1, "{args:?}: {error:#}");
        assert_eq!(
            error["error"]["exitCode"].as_i64(),
            out.status.code().map(i64::from),
            "{args:?}: {error:#}"
        );
        assert!(
            error["error"]["code"].as_str().is_some_and(|c| !c.is_empty()),
            "{error:#}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches("dshkit: error:").count(),
            1,
            "the cause once: {stderr}"
        );
        assert!(
            stderr.matches("(os error").count() <= 1,
            "the OS error once: {stderr}"
        );
    }
    // A command line clap refuses is the same object, code USAGE, exit 2.
    let out = home.run(["--json", "settings", "nope"]);
    let error = stdout_json(&out);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(error["formatVersion"], 1, "{error:#}");
    assert_eq!(error["error"]["code"], "USAGE");
    assert_eq!(error["error"]["exitCode"], 2);
    assert!(
        error["error"]["message"].as_str().unwrap().contains("'nope'"),
        "{error:#}"
    );
    assert!(
        error["error"]["hint"].as_str().unwrap().contains("--help"),
        "{error:#}"
    );
}

/// Every JSON output of every command carries `formatVersion`: results of
/// objects, of lists (as `{formatVersion, items}`) and a seam's one line.
#[test]
fn every_json_output_carries_its_format_version() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let registry = home.join("registry");
    let example = dshkit_test::workspace_root().join("examples/hello-app");
    let commands: Vec<Vec<String>> = [
        vec!["doctor"],
        vec!["check", "--profile", "web"],
        vec!["detect", example.to_str().unwrap()],
        vec!["report"],
        vec!["settings"],
        vec!["mcp", "--describe"],
        vec!["dsh", "mcp-row"],
        vec![
            "devtools",
            "--devtools-dir",
            registry.to_str().unwrap(),
            "targets",
        ],
        vec!["devtools", "--devtools-dir", registry.to_str().unwrap(), "doctor"],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(str::to_owned).collect())
    .collect();
    for args in commands {
        let out = output(
            home.dshkit()
                .arg("--json")
                .args(&args)
                .env("DSH_HOME", &dsh_home)
                .env("PATH", peers.path_var()),
        );
        let value = stdout_json(&out);
        assert_eq!(value["formatVersion"], 1, "{args:?}: {value:#}");
    }
}

/// The same broken home the Windows suite checks under Wine: both faults at the
/// positions both suites expect, and `node --check` agrees on the syntax line.
#[test]
fn a_broken_home_is_reported_at_the_positions_every_platform_expects() {
    let dir = Home::new();
    let home = crate::broken_home::check(dir.dshkit(), dir.path());
    let node = Command::new(Peers::get().node())
        .arg("--check")
        .arg(&home.broken_index)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&node.stderr);
    assert!(
        stderr.starts_with(&format!(
            "{}:{}\n",
            home.broken_index.display(),
            crate::broken_home::SYNTAX_AT.0
        )),
        "{stderr}"
    );
}

/// Completes `words` (the last one partial) with dshkit's bash completion
/// script, in a real bash; returns the candidates.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; _dshkit dshkit '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = crate::support::output(std::process::Command::new("bash").args(["--norc", "-c", &program]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_dshkits_commands_and_the_man_page_names_each_of_them() {
    let dir = Home::new();
    let script = dir.path().join("dshkit.bash");
    let out = dir.run(["completions", "bash"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&script, &out.stdout).unwrap();
    assert_eq!(bash_completes(&script, &["dshkit", "ec"]), ["echo"]);
    let echo = bash_completes(&script, &["dshkit", "echo", "re"]);
    assert!(
        ["record", "redact", "replay"]
            .iter()
            .all(|c| echo.iter().any(|e| e == c)),
        "{echo:?}"
    );
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let out = dir.run(["completions", shell]);
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
    let refused = dir.run(["completions", "tcsh"]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a shell clap does not know is a usage error"
    );

    let man = dir.run(["completions", "--man"]);
    let man = String::from_utf8_lossy(&man.stdout);
    assert!(man.contains(".TH dshkit 1"), "{man}");
    for command in [
        "mcp", "doctor", "dsh", "check", "detect", "run", "verify", "report", "echo", "devtools", "settings",
    ] {
        assert!(
            man.contains(&format!("dshkit\\-{command}(1)")),
            "the man page names {command}: {man}"
        );
    }
}

/// Colour follows `--color`, then `NO_COLOR`, then `CLICOLOR_FORCE`, then whether
/// stdout is a terminal (a pipe here); `-q` leaves only errors on stderr and `-v`
/// adds logs, each over `DSHKIT_LOG`; `-q` and `-v` together are a usage error.
#[test]
fn colour_and_logs_follow_the_global_flags_then_the_environment() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = home.dshkit();
        command
            .args(args)
            .env("DSH_HOME", &dsh_home)
            .env("PATH", peers.path_var())
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("DSHKIT_LOG")
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE");
        for (name, value) in env {
            command.env(name, value);
        }
        output(&mut command)
    };
    let colored = |args: &[&str], env: &[(&str, &str)]| {
        let out = run(&[args, &["doctor"]].concat(), env);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("doctor"), "{text}");
        text.contains("\x1b[")
    };
    assert!(!colored(&[], &[]), "a pipe gets no colour");
    assert!(colored(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(colored(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!colored(&[], &[("CLICOLOR_FORCE", "0")]));
    assert!(!colored(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(!colored(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]));

    let plain = run(&["check"], &[]);
    let quiet = run(&["-q", "check"], &[]);
    assert!(String::from_utf8_lossy(&plain.stderr).contains("dshkit: static checks"));
    assert_eq!(
        String::from_utf8_lossy(&quiet.stderr),
        "",
        "-q: nothing but errors"
    );
    assert_eq!(quiet.stdout, plain.stdout, "-q keeps the result");

    let missing = ["check", "--profile", "nope"];
    let debug = run(&[&["-vv"], &missing[..]].concat(), &[("DSHKIT_LOG", "error")]);
    let debug = String::from_utf8_lossy(&debug.stderr);
    assert!(
        debug.contains("DEBUG") && debug.contains("command failed"),
        "{debug}"
    );
    let quiet_failure = run(&[&["-q"], &missing[..]].concat(), &[("DSHKIT_LOG", "debug")]);
    let quiet_failure = String::from_utf8_lossy(&quiet_failure.stderr);
    assert!(!quiet_failure.contains("DEBUG"), "{quiet_failure}");
    assert!(
        quiet_failure.contains("dshkit: error:"),
        "the error stays: {quiet_failure}"
    );
    assert_eq!(run(&["-q", "-v", "check"], &[]).status.code(), Some(2));
}

/// Kills its tmux server when dropped.
struct TmuxServer<'a>(&'a dyn Fn(&[&str]) -> std::process::Output);

impl Drop for TmuxServer<'_> {
    fn drop(&mut self) {
        (self.0)(&["kill-server"]);
    }
}

/// On a terminal (a real one: tmux) each long stage of `check --live` is a
/// spinner with its elapsed time, ending as a ✓ line with the time it took; on a
/// pipe the same stages are the plain lines of before.
#[test]
fn a_terminal_gets_a_spinner_with_elapsed_time_and_a_pipe_gets_plain_lines() {
    let peers = Peers::get();
    let (home, dsh_home) = web_home(&peers);
    let args = ["check", "--live", "--isolate-home", "--profile", "web"];
    let piped = output(
        home.dshkit()
            .args(args)
            .env("DSH_HOME", &dsh_home)
            .env("PATH", peers.path_var()),
    );
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(
        stderr.contains("dshkit: isolated boot\n") && !stderr.contains('\r') && !stderr.contains('✓'),
        "a pipe gets plain lines: {stderr}"
    );

    let socket = format!("dshkit-spinner-{}", std::process::id());
    let tmux = |tmux_args: &[&str]| {
        let mut command = Command::new("tmux");
        command.args(["-L", &socket, "-f", "/dev/null"]).args(tmux_args);
        crate::support::isolate(&mut command, home.path());
        command
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env("DSH_HOME", &dsh_home)
            .env("PATH", peers.path_var());
        output(&mut command)
    };
    let script = format!(
        "{} {}; echo EXIT=$?; sleep 600",
        crate::support::dshkit().display(),
        args.join(" ")
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-x",
        "160",
        "-y",
        "40",
        "-s",
        "spin",
        &script,
    ]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let _server = TmuxServer(&tmux);
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let running = |screen: &str| {
        screen.lines().any(|line| {
            line.starts_with(frames)
                && line.contains("dshkit: isolated boot (")
                && line.trim_end().ends_with("s)")
        })
    };
    let mut seen_running = false;
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(3);
    let screen = loop {
        let screen =
            String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "spin"]).stdout).into_owned();
        seen_running |= running(&screen);
        if screen.contains("EXIT=") {
            break screen;
        }
        assert!(std::time::Instant::now() < deadline, "never ended: {screen}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        screen.contains("EXIT=0") && screen.contains("plugin_check: ok"),
        "{screen}"
    );
    assert!(
        seen_running,
        "the boot was shown as a spinner with its elapsed time while it ran: {screen}"
    );
    let boot = screen
        .lines()
        .find(|line| line.contains("dshkit: isolated boot"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        boot.starts_with("✓ dshkit: isolated boot (") && boot.trim_end().ends_with("s)"),
        "the finished stage keeps its time: {boot:?}"
    );
}

/// Every subcommand's `--help`, walked from the top: each argument and option
/// says what it is (a default alone does not), and each subcommand ends with at
/// least two examples (their syntax is checked by the binary's own unit test).
#[test]
fn every_subcommand_documents_each_argument_and_shows_examples() {
    let home = Home::new();
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    let (mut problems, mut walked) = (Vec::new(), 0);
    while let Some(path) = paths.pop() {
        let out = home.run(path.iter().map(String::as_str).chain(["--help"]));
        assert_eq!(out.status.code(), Some(0), "{path:?}");
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = help.lines().collect();
        let mut section = "";
        for (i, line) in lines.iter().enumerate() {
            let indent = line.len() - line.trim_start().len();
            if indent == 0 && line.ends_with(':') {
                section = line;
                continue;
            }
            let entry = line.trim_start();
            if section == "Commands:" && indent == 2 {
                let name = entry.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    paths.push(path.iter().cloned().chain([name.to_owned()]).collect());
                }
            }
            let is_entry = (2..10).contains(&indent) && entry.starts_with(['-', '<', '[']);
            if !matches!(section, "Arguments:" | "Options:") || !is_entry {
                continue;
            }
            let said = |text: &str| !text.is_empty() && !text.starts_with('[');
            let inline = entry.split_once("  ").is_some_and(|(_, text)| said(text.trim()));
            let below = lines
                .get(i + 1)
                .is_some_and(|next| next.len() - next.trim_start().len() >= 10 && said(next.trim()));
            if !inline && !below {
                problems.push(format!("dshkit {}: {} has no help", path.join(" "), entry));
            }
        }
        if !path.is_empty() {
            let examples = help.split("Examples:").nth(1).map_or(0, |e| {
                e.lines()
                    .filter(|l| l.trim_start().starts_with("dshkit "))
                    .count()
            });
            if examples < 2 {
                problems.push(format!("dshkit {}: {examples} example(s)", path.join(" ")));
            }
        }
        walked += 1;
    }
    assert!(walked > 40, "{walked} commands walked");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
