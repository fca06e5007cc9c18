//! Redaction that cannot loop: which environment values are secrets, that a
//! placeholder (or a path token) is never redacted again, and that the paths of
//! the working directory and the home are normalised, never taken for secrets.

use std::path::Path;

use dshkit_test::secrets::{Rng, lookalikes, secret_corpus};
use serde_json::{Value, json};

use super::*;
use crate::opaque;

/// The environment of a shell in `/tmp/rec-1`, with two secrets in it.
fn shell_environment() -> Vec<(String, String)> {
    [
        ("PWD", "/tmp/rec-1"),
        ("OLDPWD", "/home/ana/src"),
        ("HOME", "/home/ana"),
        ("PATH", "/home/ana/.cargo/bin:/usr/local/bin:/usr/bin:/bin"),
        ("TMPDIR", "/tmp/user-1000"),
        ("USER", "anastasia"),
        ("LOGNAME", "anastasia"),
        ("SHELL", "/bin/bash"),
        ("LANG", "en_US.UTF-8"),
        ("TERM", "xterm-256color"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-XXXXabcd/agent.1234"),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/home/ana/.config/gcloud/key.json",
        ),
        ("TOKENIZERS_PARALLELISM", "false-but-long"),
        ("XDG_SESSION_ID", "c2-session-17"),
        ("GITHUB_TOKEN", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12"),
        ("MYSQL_PWD", "s3cr3t-value-1"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

fn shell_redactor() -> Redactor {
    Redactor::with_environment(&[], &[], shell_environment()).unwrap()
}

#[test]
fn the_working_directory_and_the_shells_variables_are_never_taken_for_secrets() {
    // Until environment names had to look secret and values had to look like
    // one, `PWD` (its name matched `^pwd$`) made every path of the working
    // directory `[REDACTED:env-PWD:[REDACTED:secret-assignment:…]]`.
    let redactor = shell_redactor();
    let names: Vec<&str> = redactor.literals.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["GITHUB_TOKEN", "MYSQL_PWD"],
        "only the secrets are literals"
    );
    let text = "Allowed directories:\n/tmp/rec-1\n[FILE] /tmp/rec-1/notes.txt by anastasia in /home/ana \
                (PATH /home/ana/.cargo/bin:/usr/local/bin:/usr/bin:/bin, en_US.UTF-8, xterm-256color, \
                /tmp/ssh-XXXXabcd/agent.1234, /home/ana/.config/gcloud/key.json, c2-session-17)";
    assert_eq!(redactor.redact(text), text);
    let mut value = json!({"path": "/tmp/rec-1/notes.txt", "pwd": "/tmp/rec-1", "cwd": "/tmp/rec-1"});
    assert!(!redactor.value(&mut value), "{value}");
    // `PWD=` followed by a path is the shell's working directory, not a password.
    for text in [
        "PWD=/tmp/rec-1",
        "export PWD=/srv/other",
        "pwd: /srv/other",
        "\"PWD\": \"/srv/x\"",
    ] {
        assert_eq!(redactor.redact(text), text);
        assert!(redactor.scan(text).is_empty(), "{text}");
    }
    // The secrets still go.
    let secrets =
        "MYSQL_PWD=s3cr3t-value-1 and ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12, PWD=hunter2hunter2";
    let redacted = redactor.redact(secrets);
    for gone in ["s3cr3t-value-1", "ghp_ABCDEF", "hunter2hunter2"] {
        assert!(!redacted.contains(gone), "{redacted}");
    }
    assert!(redacted.contains("[REDACTED:env-MYSQL_PWD:"), "{redacted}");
}

#[test]
fn a_variable_named_on_the_command_line_is_redacted_whatever_its_name() {
    let redactor = Redactor::with_environment(
        &["TENANT".to_owned(), "PWD".to_owned()],
        &[],
        [
            ("TENANT".to_owned(), "tenant-4711-north".to_owned()),
            ("PWD".to_owned(), "/tmp/rec-1".to_owned()),
        ],
    )
    .unwrap();
    assert_eq!(
        redactor.redact("tenant-4711-north"),
        placeholder("env-TENANT", "tenant-4711-north")
    );
    // Asked for, the working directory is one placeholder, never one inside
    // another (`env-PWD:` is not a `PWD:` assignment).
    let once = redactor.redact("/tmp/rec-1/notes.txt").into_owned();
    assert_eq!(
        once,
        format!("{}/notes.txt", placeholder("env-PWD", "/tmp/rec-1"))
    );
    assert_eq!(redactor.redact(&once), once);
}

#[test]
fn a_placeholder_is_never_redacted_again_by_any_rule() {
    // Each rule's keywords, and the names the assignment rules look for, put
    // right before and after a placeholder of each rule: the placeholder stays
    // whole and nothing is redacted inside it or across it.
    let redactor =
        Redactor::with_environment(&[], &[r"[0-9a-f]{8}".to_owned()], shell_environment()).unwrap();
    let mut ids: Vec<String> = redactor.rule_ids().into_iter().map(str::to_owned).collect();
    ids.extend(["secret-key", "env-PWD", "env-GITHUB_TOKEN"].map(str::to_owned));
    let mut words: Vec<&str> = BUILT_IN
        .iter()
        .flat_map(|(_, keywords, _)| keywords.iter().copied())
        .collect();
    words.extend([
        "password=",
        "PWD=",
        "pwd:",
        "token: ",
        "Bearer ",
        "https://user:",
        "AccountKey=",
        "api_key=",
    ]);
    let mut checked = 0;
    for (n, id) in ids.iter().enumerate() {
        let held = placeholder(id, &format!("secret number {n}"));
        for word in &words {
            for text in [
                format!("{word}{held}"),
                format!("{held}{word}"),
                format!("{word}{held}@host"),
                format!("{word} {held} {word}"),
            ] {
                let out = redactor.redact(&text);
                assert!(out.contains(&held), "{held} was redacted in {text}: {out}");
                assert_placeholders_whole(&out);
                assert_eq!(redactor.redact(&out), out, "twice is once: {text}");
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// Every `[REDACTED:` in `text` starts a whole placeholder: none is cut or
/// holds another.
fn assert_placeholders_whole(text: &str) {
    let whole = std::iter::successors(opaque::next(text, 0), |span| opaque::next(text, span.end))
        .filter(|span| text[span.clone()].starts_with("[REDACTED:"))
        .count();
    assert_eq!(text.matches("[REDACTED:").count(), whole, "{text}");
}

#[test]
fn redacting_generated_text_twice_gives_what_redacting_once_gave() {
    // A property over the rules: texts made of generated secrets, look-alikes,
    // placeholders, path tokens, the rules' keywords and the environment's
    // secrets, joined at random. Redacted, each keeps the placeholders and
    // tokens it held, holds only whole ones, is left as it is by a second
    // redaction, and a scan finds nothing in it.
    let redactor = shell_redactor().with_paths(PathRoots::new(
        Some(Path::new("/tmp/rec-1")),
        Some(Path::new("/home/ana")),
    ));
    let mut rng = Rng::from_env();
    let mut pieces: Vec<String> = Vec::new();
    for sample in secret_corpus(&mut rng) {
        pieces.push(sample.line);
        pieces.push(sample.secret);
    }
    pieces.extend(lookalikes(&mut rng));
    for id in redactor.rule_ids() {
        pieces.push(placeholder(id, &rng.alnum(12)));
    }
    pieces.extend(
        BUILT_IN
            .iter()
            .flat_map(|(_, keywords, _)| keywords.iter().map(|k| (*k).to_owned())),
    );
    pieces.extend(
        [
            "{{dshkit:cwd}}",
            "{{dshkit:home}}",
            "/tmp/rec-1",
            "/home/ana/.npmrc",
            "PWD=",
            "password=",
            "token: ",
            "s3cr3t-value-1",
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12",
        ]
        .map(str::to_owned),
    );
    let separators = ["", " ", "=", ":", "/", "@", "\"", "\n", ", ", "://"];
    let pick = |rng: &mut Rng, n: usize| usize::try_from(rng.draw() % n as u64).unwrap_or(0);
    for _ in 0..2000 {
        let mut text = String::new();
        for _ in 0..=pick(&mut rng, 6) {
            text.push_str(separators[pick(&mut rng, separators.len())]);
            text.push_str(&pieces[pick(&mut rng, pieces.len())]);
        }
        let out = redactor.redact(&text).into_owned();
        let held = |text: &str| -> Vec<String> {
            std::iter::successors(opaque::next(text, 0), |span| opaque::next(text, span.end))
                .map(|span| text[span].to_owned())
                .collect()
        };
        let (before, after) = (held(&text), held(&out));
        let mut rest = after.iter();
        for kept in &before {
            assert!(
                rest.any(|a| a == kept),
                "{kept} did not survive in order: {text:?} -> {out:?}"
            );
        }
        assert_placeholders_whole(&out);
        assert_eq!(redactor.redact(&out), out, "twice is once: {text:?}");
        assert!(
            redactor.scan(&out).is_empty(),
            "{text:?} -> {out:?}: {:?}",
            redactor.scan(&out)
        );
        let mut value = json!({"a": text, "token": text});
        redactor.value(&mut value);
        let once = value.clone();
        assert!(!redactor.value(&mut value), "a redacted tree stays: {once}");
        assert_eq!(value, once);
    }
}

#[test]
#[cfg(unix)] // Unix-spelled paths: the Windows spelling is pinned in paths.rs
fn paths_of_the_roots_become_tokens_before_any_rule_and_clear_nothing_at_once() {
    let plain = Redactor::with_environment(&[], &[], shell_environment()).unwrap();
    let redactor = plain.clone().with_paths(PathRoots::new(
        Some(Path::new("/tmp/rec-1")),
        Some(Path::new("/home/ana")),
    ));
    assert_eq!(redactor.paths().names(), ["cwd", "home"]);
    let mut value = json!({
        "path": "/tmp/rec-1/notes.txt",
        "text": "Allowed directories:\n/tmp/rec-1\nconfig in /home/ana/.npmrc",
        "password": "/tmp/rec-1/pw.txt",
        "token": "copied from /tmp/rec-1",
        "pwd": "/tmp/rec-1",
        "other": "/tmp/rec-10/x"
    });
    assert!(redactor.value(&mut value));
    assert_eq!(
        value,
        json!({
            "path": "{{dshkit:cwd}}/notes.txt",
            "text": "Allowed directories:\n{{dshkit:cwd}}\nconfig in {{dshkit:home}}/.npmrc",
            // A root's path is no secret, even under a secret key; a value
            // hidden there is hidden as its normalised text: the same
            // placeholder on every machine.
            "password": "{{dshkit:cwd}}/pw.txt",
            "token": placeholder("secret-key", "copied from {{dshkit:cwd}}"),
            "pwd": "{{dshkit:cwd}}",
            "other": "/tmp/rec-10/x"
        })
    );
    // A request holding a root's path is never cleared at once: replay must
    // key it from its normalised tree.
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/tmp/rec-1/a.txt"}}}"#;
    assert!(plain.clears_json_text(request.as_bytes()));
    assert!(!redactor.clears_json_text(request.as_bytes()));
    assert!(redactor.touches_json(request));
    let elsewhere = request.replace("/tmp/rec-1", "/tmp/rec-2");
    assert!(redactor.clears_json_text(elsewhere.as_bytes()));
}

#[test]
fn the_tree_and_the_text_checks_agree_with_paths_and_placeholders() {
    let redactor = shell_redactor().with_paths(PathRoots::new(Some(Path::new("/tmp/rec-1")), None));
    for text in [
        r#"{"a":"/tmp/rec-1/x"}"#,
        r#"{"a":"[REDACTED:github:0123abcd]"}"#,
        r#"{"a":"PWD=[REDACTED:env-PWD:0123abcd]"}"#,
        r#"{"token":"{{dshkit:cwd}}"}"#,
        r#"{"a":"{{dshkit:cwd}}/x","b":["/home/ana"]}"#,
        r#"{"pwd":"/srv/x","k":"MYSQL_PWD=s3cr3t-value-1"}"#,
    ] {
        let mut tree: Value = serde_json::from_str(text).unwrap();
        assert_eq!(redactor.touches_json(text), redactor.touches(&tree), "{text}");
        let touched = redactor.touches(&tree);
        assert_eq!(redactor.value(&mut tree), touched, "{text}");
    }
}
