//! Any bytes as a client's stdin to `replay`: it never panics or hangs, and every
//! line that is a JSON-RPC request gets exactly one answer with its id.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn cassette() -> &'static std::path::PathBuf {
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dshkit-fuzz-framing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.jsonl");
        let header = r#"{"type":"header","formatVersion":1,"recorder":"fuzz","transport":"stdio","era":"2025","protocolVersion":"2025-11-25","serverInfo":{"name":"fuzz","version":"1"},"redacted":true,"createdAt":0}"#;
        let init = r#"{"type":"interaction","ordinal":1,"request":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},"responses":[{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}],"ms":0}"#;
        let call = r#"{"type":"interaction","ordinal":2,"request":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}},"responses":[{"jsonrpc":"2.0","id":2,"result":{"content":[]}}],"notifications":[{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}],"ms":0}"#;
        std::fs::write(&path, format!("{header}\n{init}\n{call}\n")).unwrap();
        path
    })
}

fn redactor() -> &'static dshkit_echo::redact::Redactor {
    static REDACTOR: OnceLock<dshkit_echo::redact::Redactor> = OnceLock::new();
    REDACTOR.get_or_init(|| dshkit_echo::redact::Redactor::new(&[], &[]).unwrap())
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime =
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
}

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let options = dshkit_echo::replay::ReplayOptions {
        cassette: cassette().clone(),
        timing: dshkit_echo::replay::Timing::None,
        on_miss: dshkit_echo::replay::OnMiss::Error,
        annotate: true,
        matching: dshkit_echo::key::MatchOptions::default(),
        redactor: redactor().clone(),
    };
    let unobserved = dshkit_echo::stdio::Peer::Unobserved;
    let result =
        RUNTIME.with(|runtime| runtime.block_on(dshkit_echo::stdio::replay(data, &mut out, options, unobserved)));
    if result.is_err() {
        return; // an over-long frame is refused, not answered
    }
    // As replay reads it: line by line, invalid UTF-8 replaced.
    let requests = data
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_str::<Value>(String::from_utf8_lossy(line).trim()).ok())
        .filter(|m| m.get("method").is_some() && m.get("id").is_some_and(|id| !id.is_null()))
        .count();
    let answers = out
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|m| m.get("method").is_none() && m.get("id").is_some_and(|id| !id.is_null()))
        .count();
    assert_eq!(answers, requests, "every request gets exactly one answer");
});
