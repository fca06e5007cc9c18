//! One settings resolver for every entry point: what a person sets with
//! `dshkit settings set` is what `dshkit verify` and `dshkit mcp` use, a flag
//! wins over it, a broken file is refused the same way by both, and the DevTools
//! registry is resolved once and handed to the host.

use std::path::Path;

use dshkit_test::FixtureServer;
use serde_json::Value;

use crate::support::{Home, dshkit_command, output, stdout_json};

/// A page that shows "Ready".
fn page() -> FixtureServer {
    FixtureServer::page("<!doctype html><title>Settings</title><h1>Ready</h1>")
}

/// `dshkit settings set --value VALUE` in `home`, which must succeed.
fn settings_set(home: &Path, value: &str) {
    let out = output(dshkit_command(home).args(["settings", "set", "--value", value]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `dshkit verify URL --json` with `extra` flags: its exit code and report.
fn verify(home: &Path, url: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let out = output(
        dshkit_command(home)
            .args(["verify", url, "--json", "--expect-text", "Ready"])
            .args(extra)
            .env("DSHKIT_EVIDENCE_ROOT", home.join("evidence")),
    );
    (out.status.code(), stdout_json(&out))
}

/// `dshkit mcp --describe EXTRA_ARGS` in `home` with `extra_env`, which must
/// succeed: what it prints.
fn describe(home: &Path, extra_env: &[(&str, &Path)], extra_args: &[&str]) -> Value {
    let mut command = dshkit_command(home);
    command.args(["mcp", "--describe"]).args(extra_args);
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let out = output(&mut command);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

#[test]
fn dshkit_verify_uses_the_quiet_window_set_with_dshkit_settings_set_and_a_flag_wins() {
    let app = page();
    let home = Home::new();
    settings_set(home.path(), r#"{"quietWindowMs": 1234}"#);

    let (code, report) = verify(home.path(), &app.url("/"), &[]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["verdict"], "VERIFIED", "{report:#}");
    assert_eq!(report["timings"]["quietWindowMs"], 1234, "{report:#}");

    let (code, report) = verify(home.path(), &app.url("/"), &["--quiet-window-ms", "7"]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["timings"]["quietWindowMs"], 7, "{report:#}");
}

#[test]
fn a_broken_settings_file_is_refused_with_its_code_by_verify_and_mcp_but_not_by_describe() {
    let app = page();
    let home = Home::new();
    let file = home.path().join(".config/dshkit/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();

    for (text, code) in [
        ("{ not json", "SETTINGS_NOT_JSON"),
        (r#"{"quietWindowMs": 99999}"#, "SETTINGS_INVALID"),
        (r#"{"quietWindow": 10}"#, "SETTINGS_INVALID"),
    ] {
        std::fs::write(&file, text).unwrap();
        let (exit, answer) = verify(home.path(), &app.url("/"), &[]);
        assert_eq!(exit, Some(3), "{text}: {answer:#}");
        assert_eq!(answer["error"]["code"], code, "{text}: {answer:#}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("dshkit settings set"), "{message}");
        assert!(message.contains(&file.display().to_string()), "{message}");

        let served = home.run(["mcp", "--stdio"]);
        let stderr = String::from_utf8_lossy(&served.stderr);
        assert_eq!(served.status.code(), Some(3), "{text}: {stderr}");
        assert!(
            stderr.contains("is not valid settings") || stderr.contains("invalid settings"),
            "{stderr}"
        );
        assert!(stderr.contains("dshkit settings set"), "{stderr}");

        // A host lists the tools while it boots: a broken file does not stop it.
        describe(home.path(), &[], &[]);
    }
}

#[test]
fn the_devtools_registry_is_resolved_by_the_binary_and_handed_to_the_host() {
    let home = Home::new();
    let described = describe(home.path(), &[], &[]);
    assert_eq!(
        Path::new(described["host"]["devtoolsDir"].as_str().unwrap()),
        home.path().join(".dsh").join("dshkit-devtools"),
        "HOME's .dsh by default"
    );

    let dsh_home = home.path().join("elsewhere");
    let described = describe(home.path(), &[("DSH_HOME", &dsh_home)], &[]);
    assert_eq!(
        Path::new(described["host"]["devtoolsDir"].as_str().unwrap()),
        dsh_home.join("dshkit-devtools"),
        "DSH_HOME over HOME"
    );

    let flagged = home.path().join("registry");
    let described = describe(
        home.path(),
        &[("DSH_HOME", &dsh_home)],
        &["--devtools-dir", flagged.to_str().unwrap()],
    );
    assert_eq!(
        Path::new(described["host"]["devtoolsDir"].as_str().unwrap()),
        flagged,
        "the flag over the environment"
    );
}
