//! The redactor against the generated corpus of secrets and their lookalikes.

use dshkit_test::secrets::{Rng, lookalikes, secret_corpus};

use super::*;

/// `text` as a JSON string with every character escaped.
fn escaped(text: &str) -> String {
    let mut out = String::from('"');
    for unit in text.encode_utf16() {
        out.push_str(&format!("\\u{unit:04x}"));
    }
    out.push('"');
    out
}

#[test]
fn a_text_cleared_at_once_holds_nothing_a_check_of_each_string_would_redact() {
    // Every generated secret, its line, every lookalike, every word the rules
    // and the secret keys look for (as written and in capitals), a secret
    // from the environment and a long string, each put where a request holds
    // strings (a value, a member name, an array item), as written and
    // escaped; with the built-in rules and with an environment variable's
    // value as a secret. Whatever is cleared at once, the check of each
    // string must leave.
    let built_in = Redactor::new(&[], &[]).unwrap();
    // A value only its name makes secret: short, plain, nothing the rules find
    // (the test runner sets several, `CARGO_MANIFEST_DIR` among them).
    let (name, value) = std::env::vars()
        .filter(|(_, value)| (MIN_ENV_SECRET_CHARS..MIN_UNCONDITIONAL_TEXT).contains(&value.len()))
        .find(|(_, value)| {
            let text = Value::from(value.as_str()).to_string();
            built_in.clears_json_text(text.as_bytes())
        })
        .expect("an environment variable with a short, plain value");
    let redactors = [built_in, Redactor::new(&[name], &[]).unwrap()];
    let mut rng = Rng::from_env();
    let mut pieces: Vec<String> = Vec::new();
    for sample in secret_corpus(&mut rng) {
        pieces.push(sample.secret);
        pieces.push(sample.line);
    }
    pieces.extend(lookalikes(&mut rng));
    let words = BUILT_IN.iter().flat_map(|(_, keywords, _)| keywords.iter());
    for word in words.chain(SECRET_KEY_WORDS).chain(&["auth", "pwd"]) {
        pieces.push((*word).to_owned());
        pieces.push(word.to_uppercase());
        pieces.push(format!("a {word} b"));
    }
    pieces.push(value);
    pieces.push("x".repeat(MIN_UNCONDITIONAL_TEXT));
    let templates = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":S}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{S:"value 1234"}}}"#,
        r#"{"a":[1,S],"b":"short"}"#,
    ];
    let (mut cleared, mut checked) = (0, 0);
    for redactor in &redactors {
        for piece in &pieces {
            for string in [Value::from(piece.as_str()).to_string(), escaped(piece)] {
                for template in templates {
                    let text = template.replace('S', &string);
                    if redactor.clears_json_text(text.as_bytes()) {
                        assert!(!redactor.touches_json(&text), "cleared: {text}");
                        cleared += 1;
                    } else {
                        checked += 1;
                    }
                }
            }
        }
    }
    // Both answers were given: the test saw the fast way and the close look.
    assert!(
        cleared > 100 && checked > 1000,
        "{cleared} cleared, {checked} checked"
    );
}

#[test]
fn common_requests_are_cleared_by_the_first_look_alone() {
    // The sieve must stay sparse enough to say no for ordinary requests, or
    // every request pays for the automata as well.
    let redactor = Redactor::new(&[], &[]).unwrap();
    let texts = [
        r#"{"jsonrpc":"2.0","id":4711,"method":"tools/call","params":{"name":"echo","arguments":{"message":"message 4711"}}}"#,
        r#"{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#,
    ];
    for text in texts {
        let sifted = redactor.clear_sieve.sift(text.as_bytes());
        assert!(!sifted.may_hold_word, "{text}");
        assert!(redactor.clears_json_text(text.as_bytes()), "{text}");
    }
    // `capabilities` holds `abi` (AWS's `ABIA`): the automata clear it.
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"client","version":"1.0.0"}}}"#;
    assert!(redactor.clear_sieve.sift(initialize.as_bytes()).may_hold_word);
    assert!(redactor.clears_json_text(initialize.as_bytes()));
    // And it says "maybe" for the words themselves, in any case.
    for text in [
        r#"{"Token":"x"}"#,
        r#"{"a":"sk-1"}"#,
        r#"{"a":"AC"}"#,
        r#"{"AUTH":"x"}"#,
    ] {
        assert!(redactor.clear_sieve.sift(text.as_bytes()).may_hold_word, "{text}");
    }
    assert!(
        !redactor.clear_sieve.sift(br#"{"a":"ac"}"#).may_hold_word,
        "AC is exact"
    );
}

#[test]
fn every_generated_secret_is_redacted_and_nothing_is_left_to_find() {
    let redactor = Redactor::new(&[], &[]).unwrap();
    let mut rng = Rng::from_env();
    let mut missed = Vec::new();
    for _ in 0..20 {
        for sample in secret_corpus(&mut rng) {
            let redacted = redactor.text(&sample.line);
            if redacted.contains(&sample.secret) || !redactor.scan(&redacted).is_empty() {
                missed.push(format!("{}: {redacted}", sample.family));
            }
            // Inside JSON (a cassette line), too.
            let mut value = serde_json::json!({"params": {"arguments": {"message": sample.line}}});
            let touched = redactor.touches(&value);
            if touched != redactor.value(&mut value) {
                missed.push(format!(
                    "{}: `touches` said {touched}, `value` did otherwise",
                    sample.family
                ));
            }
            if value.to_string().contains(&sample.secret) {
                missed.push(format!("{} in JSON", sample.family));
            }
        }
    }
    assert!(missed.is_empty(), "{} missed: {missed:#?}", missed.len());
}

#[test]
fn ordinary_data_survives_verbatim() {
    let redactor = Redactor::new(&[], &[]).unwrap();
    let mut rng = Rng::from_env();
    for _ in 0..20 {
        for clean in lookalikes(&mut rng) {
            assert_eq!(redactor.text(&clean), clean);
            assert!(
                !redactor.touches(&serde_json::json!({"message": clean})),
                "{clean}"
            );
            assert!(
                redactor.scan(&clean).is_empty(),
                "{clean}: {:?}",
                redactor.scan(&clean)
            );
        }
    }
}

#[test]
fn the_fixture_apps_sources_survive_verbatim() {
    let redactor = Redactor::new(&[], &[]).unwrap();
    let apps = dshkit_test::workspace_root().join("harness/apps");
    let mut files = 0;
    let mut stack = vec![apps];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == "node_modules") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                files += 1;
                assert_eq!(redactor.text(&text), text, "{}", path.display());
            }
        }
    }
    assert!(files >= 10, "{files} files");
}

#[test]
fn the_entropy_rule_takes_a_random_value_under_a_secret_sounding_name_only() {
    let redactor = Redactor::new(&[], &[]).unwrap();
    let mut rng = Rng::from_env();
    for _ in 0..20 {
        let random = format!("{}9Z", rng.alnum(30));
        for (name, secret) in [
            ("signingKey", true),
            ("WEBHOOK_SALT", true),
            ("x-auth", true),
            ("sha", false),
            ("etag", false),
            ("integrity", false),
            ("data", false),
        ] {
            let texts = [
                format!("{name}={random}"),
                format!("{name}: {random}"),
                format!("{{\"{name}\": \"{random}\"}}"),
            ];
            for text in &texts {
                let redacted = redactor.text(text);
                assert_eq!(!redacted.contains(&random), secret, "{text} -> {redacted}");
            }
            let mut tree = serde_json::json!({ name: random });
            assert_eq!(redactor.touches(&tree), secret, "{tree}");
            assert_eq!(redactor.touches_json(&tree.to_string()), secret, "{tree}");
            assert_eq!(redactor.value(&mut tree), secret, "{tree}");
            if secret {
                assert!(
                    tree[name]
                        .as_str()
                        .unwrap()
                        .starts_with("[REDACTED:high-entropy:"),
                    "{tree}"
                );
            }
        }
        // Under a secret-sounding name, a value that is not random survives.
        for plain in [
            "user-settings-profile-2",
            "1.2.3-rc.4+build.20261207",
            "3f2a9c1e-8b7d-4e6f-a5c4-1d2e3f4a5b6c",
        ] {
            let text = format!("{{\"signingKey\": \"{plain}\"}}");
            assert_eq!(redactor.text(&text), text);
            assert!(!redactor.touches_json(&text), "{text}");
        }
    }
}
