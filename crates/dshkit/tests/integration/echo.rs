//! `dshkit echo` against the real `@modelcontextprotocol/server-everything`, driven
//! by the official TypeScript SDK client and by raw JSON-RPC.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dshkit_test::Peers;
use serde_json::{Value, json};

use crate::support::{
    Home, Session, dshkit, dshkit_command, echo_http, everything_http, everything_launcher, output,
    stdout_json,
};

pub(crate) fn everything(peers: &Peers) -> PathBuf {
    peers.module("@modelcontextprotocol/server-everything/dist/index.js")
}

/// The SDK client's report of one session against `server argv`.
pub(crate) fn sdk_session(peers: &Peers, home: &Path, argv: &[&str]) -> Value {
    let out = output(
        Command::new(peers.node())
            .arg(peers.script("echo-client.mjs"))
            .arg("stdio")
            .args(argv)
            .env("HOME", home)
            .env("PATH", peers.path_var()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

/// The SDK client's report of one session with the server at `url` (Streamable HTTP).
pub(crate) fn sdk_session_http(peers: &Peers, home: &Path, url: &str) -> Value {
    let out = output(
        Command::new(peers.node())
            .arg(peers.script("echo-client.mjs"))
            .args(["http", url])
            .env("HOME", home),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

/// Records server-everything through `dshkit echo record` with the SDK client, then
/// deletes the server's launcher. Returns the cassette and the live session report.
fn record_everything_with_sdk(peers: &Peers, dir: &Path) -> (PathBuf, Value) {
    let server = everything_launcher(dir, peers);
    let cassette = dir.join("everything.jsonl");
    let bin = dshkit();
    let live = sdk_session(
        peers,
        dir,
        &[
            bin.to_str().unwrap(),
            "echo",
            "record",
            "-o",
            cassette.to_str().unwrap(),
            "--",
            server.to_str().unwrap(),
        ],
    );
    std::fs::remove_file(&server).unwrap();
    (cassette, live)
}

#[test]
fn a_recorded_server_everything_replays_identically_with_the_server_gone() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, mut live) = record_everything_with_sdk(&peers, dir.path());
    assert_eq!(live["sum"]["content"][0]["text"], "The sum of 2 and 40 is 42.");
    let bin = dshkit();
    let (bin, cassette_arg) = (bin.to_str().unwrap(), cassette.to_str().unwrap());

    let mut replayed = sdk_session(&peers, dir.path(), &[bin, "echo", "replay", cassette_arg]);
    // Progress notifications: the live client may drop the last one when it lands
    // with the response (a race in the client); the replay delivers all recorded.
    let (live_progress, replayed_progress) = (live["progress"].take(), replayed["progress"].take());
    assert_eq!(live, replayed, "every result is identical");
    for p in live_progress.as_array().unwrap() {
        assert!(
            replayed_progress.as_array().unwrap().contains(p),
            "{replayed_progress}"
        );
    }
    assert_eq!(
        replayed_progress.as_array().unwrap().len(),
        2,
        "{replayed_progress}"
    );

    let home = Home::new();
    let lint = home.run(["echo", "lint", cassette_arg]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    let inspect = home.run(["--json", "echo", "inspect", cassette_arg]);
    let timeline = stdout_json(&inspect);
    assert_eq!(timeline["header"]["era"], "2025");
    assert_eq!(timeline["header"]["serverInfo"]["name"], "mcp-servers/everything");
    let methods: Vec<&str> = timeline["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "interaction")
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods[0], "initialize");
    assert!(
        methods.contains(&"tools/list") && methods.contains(&"prompts/list"),
        "{methods:?}"
    );
    assert_eq!(methods.iter().filter(|m| **m == "tools/call").count(), 5);

    let again = home.run(["echo", "record", "-o", cassette_arg, "--", "true"]);
    assert_eq!(again.status.code(), Some(3), "mode once never overwrites");
}

/// Runs `dshkit <args>` with `lines` (and a garbage line) on stdin; returns the
/// JSON-RPC responses it printed, in order (notifications left out). Like a real
/// client, it keeps stdin open until every request has its answer (bounded), and
/// only then sends the garbage line and closes stdin.
pub(crate) fn exchange(
    home: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    lines: &[Value],
) -> (Vec<Value>, String) {
    let mut command = dshkit_command(home);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message.get("id").is_some()
                && tx.send(message).is_err()
            {
                break;
            }
        }
    });
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut text);
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    let expected = lines.iter().filter(|l| l.get("id").is_some()).count();
    let mut replies = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    while replies.len() < expected {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(reply) => replies.push(reply),
            Err(_) => break,
        }
    }
    writeln!(stdin, "not json at all").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "dshkit was killed");
    reader.join().unwrap();
    replies.extend(rx.try_iter());
    (replies, stderr_reader.join().unwrap())
}

pub(crate) fn handshake() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
pub(crate) fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// `dshkit echo record -o <cassette> -- <server>`, as arguments.
fn record_args<'a>(cassette: &'a Path, server: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["echo", "record", "-o", cassette.to_str().unwrap(), "--"];
    args.extend_from_slice(server);
    args
}

/// Records the handshake and one `echo` of server-everything over stdio into
/// `dir/c.jsonl`; returns the cassette and the server's argv.
fn record_one_echo(peers: &Peers, dir: &Path) -> (PathBuf, Vec<String>) {
    let cassette = dir.join("c.jsonl");
    let live = vec![
        peers.node().display().to_string(),
        everything(peers).display().to_string(),
        "stdio".to_owned(),
    ];
    let mut requests = handshake();
    requests.push(call(2, "echo", json!({"message": "one"})));
    let live_args: Vec<&str> = live.iter().map(String::as_str).collect();
    let (recorded, _) = exchange(dir, &[], &record_args(&cassette, &live_args), &requests);
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    (cassette, live)
}

/// How many interactions `cassette` holds.
fn interaction_count(cassette: &Path) -> usize {
    std::fs::read_to_string(cassette)
        .unwrap()
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).unwrap()["type"] == "interaction")
        .count()
}

/// A node server that answers every request with an empty result and ignores
/// lines that are not JSON.
const EMPTY_RESULT_SERVER: &str = r#"
    require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
        let m;
        try { m = JSON.parse(line); } catch { return; }
        if (m.id !== undefined) process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }) + "\n");
    });
"#;

/// A client whose stdin is a file cannot be polled: the proxy relays it on the
/// event loop instead, and records the same.
#[test]
fn a_client_reading_from_a_file_is_recorded_through_the_event_loop() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let requests = dir.path().join("requests.jsonl");
    let mut lines = handshake();
    lines.push(call(2, "echo", json!({"message": "one"})));
    let text = lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(&requests, text).unwrap();
    let recorded = output(
        dir.dshkit()
            .args(["echo", "record", "-o", cassette.to_str().unwrap(), "--"])
            .arg(peers.node())
            .args(["-e", EMPTY_RESULT_SERVER])
            .stdin(std::fs::File::open(&requests).unwrap()),
    );
    assert!(recorded.status.success(), "{recorded:?}");
    let answered: Vec<Value> = String::from_utf8_lossy(&recorded.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone())
        .collect();
    assert_eq!(answered, [json!(1), json!(2)]);
    assert_eq!(interaction_count(&cassette), 2);
}

/// A line longer than the frame limit ends the recording with an error that
/// names the stream; what was recorded before it stays in the cassette.
#[test]
fn a_frame_over_the_limit_ends_the_recording_with_a_clear_error() {
    use std::io::BufRead;
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let mut child = dir
        .dshkit()
        .args(["echo", "record", "-o", cassette.to_str().unwrap(), "--"])
        .arg(peers.node())
        .args(["-e", EMPTY_RESULT_SERVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", handshake()[0]).unwrap();
    let mut answer = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");
    // 16 MiB and then some, without a newline; dshkit stops reading partway.
    let huge = vec![b'x'; 17 * 1024 * 1024];
    let _ = stdin.write_all(&huge);
    drop(stdin);
    let finished = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert_eq!(finished.status.code(), Some(4), "a runtime failure: {stderr}");
    assert!(
        stderr.contains("a frame longer than 16777216 bytes on the client's stdin"),
        "{stderr}"
    );
    assert_eq!(interaction_count(&cassette), 1, "{stderr}");
}

/// Replay waits for the next request in a blocking read on a thread of its
/// own; SIGTERM still ends it at once, with a clean exit.
#[cfg(unix)]
#[test]
fn a_replay_waiting_for_the_next_request_ends_on_sigterm() {
    use std::io::BufRead;
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, _) = record_one_echo(&peers, dir.path());
    let mut replay =
        dshkit_test::spawn_guarded(dir.dshkit().args(["echo", "replay", cassette.to_str().unwrap()]));
    let mut stdin = replay.child.stdin.take().unwrap();
    writeln!(stdin, "{}", handshake()[0]).unwrap();
    let mut answer = String::new();
    std::io::BufReader::new(replay.child.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");

    let status = replay.terminate(std::time::Duration::from_mins(1));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "replay did not end cleanly on SIGTERM while its stdin stayed open"
    );
    drop(stdin);
}

/// A recording stopped by SIGTERM while its client is still connected writes
/// every call it forwarded before it exits: those still waiting in a batch or
/// in the recording thread's queue included (2 MB of calls keep that thread
/// busy as the signal comes).
#[cfg(unix)]
#[test]
fn a_recording_stopped_by_sigterm_keeps_every_call_it_forwarded() {
    use std::io::{BufRead, Read};
    const CALLS: u64 = 200;
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let node = peers.node().display().to_string();
    let args = record_args(&cassette, &[&node, "-e", EMPTY_RESULT_SERVER]);
    let mut recording = dshkit_test::spawn_guarded(dir.dshkit().args(&args));
    let mut stdin = recording.child.stdin.take().unwrap();
    let mut answers = std::io::BufReader::new(recording.child.stdout.take().unwrap());
    let mut requests = handshake();
    let text = "x".repeat(10_000);
    for id in 2..=CALLS + 1 {
        requests.push(call(id, "echo", json!({ "message": format!("{id} {text}") })));
    }
    let writer = std::thread::spawn(move || {
        for request in &requests {
            writeln!(stdin, "{request}").unwrap();
        }
        stdin
    });
    let mut answer = String::new();
    for _ in 0..=CALLS {
        answer.clear();
        answers.read_line(&mut answer).unwrap();
        assert!(answer.contains(r#""id""#), "an answer, not {answer:?}");
    }
    let stdin = writer.join().unwrap();

    let status = recording.terminate(std::time::Duration::from_mins(1));
    let mut stderr = String::new();
    recording
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "the recording did not end cleanly on SIGTERM: {stderr}"
    );
    drop(stdin);
    let recorded = usize::try_from(CALLS + 1).unwrap();
    assert_eq!(interaction_count(&cassette), recorded, "{stderr}");
    assert!(
        stderr.contains(&format!("recorded {recorded} interaction(s)")),
        "{stderr}"
    );
}

/// A server that neither exits nor closes its stdout once its stdin closes is
/// killed after the grace; what it answered before is in the cassette.
#[test]
fn a_server_that_outlives_its_stdin_is_stopped_and_its_answers_are_kept() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let pid_file = dir.path().join("server.pid");
    let server = r#"
        require("fs").writeFileSync(process.argv[1], String(process.pid));
        setInterval(() => {}, 1000);
    "#;
    let server = format!("{EMPTY_RESULT_SERVER}{server}");
    let node = peers.node().display().to_string();
    let args = record_args(&cassette, &[&node, "-e", &server, pid_file.to_str().unwrap()]);
    let mut requests = handshake();
    requests.push(call(2, "echo", json!({"message": "one"})));
    let (replies, stderr) = exchange(dir.path(), &[], &args, &requests);
    assert_eq!(replies.len(), 2, "{stderr}");

    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server outlived the recording"
    );
    assert_eq!(interaction_count(&cassette), 2, "{stderr}");
}

/// Frames reach the recorder in the order they passed, whatever their size:
/// through the poll relay's batches and the recording thread here (and, in the
/// event loop's relay, small frames that pass while a large one is still being
/// recorded wait behind it).
#[test]
fn small_frames_behind_a_large_one_are_recorded_in_the_order_they_passed() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let large = "x".repeat(4 * 1024 * 1024);
    let mut requests = handshake();
    requests.push(call(2, "echo", json!({"message": "before"})));
    requests.push(call(3, "echo", json!({"message": large})));
    for id in 4..=12 {
        requests.push(call(id, "echo", json!({"message": format!("after {id}")})));
    }
    let (node, server) = (
        peers.node().display().to_string(),
        everything(&peers).display().to_string(),
    );
    let args = record_args(&cassette, &[&node, &server, "stdio"]);
    let (replies, stderr) = exchange(dir.path(), &[], &args, &requests);
    assert_eq!(replies.len(), 12, "{stderr}");
    let answered: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();

    let text = std::fs::read_to_string(&cassette).unwrap();
    let interactions: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["type"] == "interaction")
        .collect();
    let recorded: Vec<&Value> = interactions.iter().map(|i| &i["request"]["id"]).collect();
    assert_eq!(recorded, answered, "recorded in the order the answers passed");
    for interaction in &interactions[1..] {
        let message = interaction["request"]["params"]["arguments"]["message"]
            .as_str()
            .unwrap();
        assert_eq!(
            interaction["responses"][0]["result"]["content"][0]["text"],
            format!("Echo: {message}"),
            "each answer is recorded with its own request"
        );
    }
    let ordinals: Vec<u64> = interactions
        .iter()
        .map(|i| i["ordinal"].as_u64().unwrap())
        .collect();
    assert_eq!(ordinals, (1..=12).collect::<Vec<_>>());
}

#[test]
fn misses_explain_themselves_and_passthrough_appends_live_answers() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, live) = record_one_echo(&peers, dir.path());
    let cassette_arg = cassette.to_str().unwrap();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();

    let mut probes = handshake();
    probes.push(call(2, "echo", json!({"message": "two"})));
    probes.push(call(3, "delete-everything", json!({})));
    let (replies, _) = exchange(
        dir.path(),
        &[],
        &["echo", "replay", cassette_arg, "--annotate"],
        &probes,
    );
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(replies[1]["error"]["code"], -32_001);
    assert_eq!(replies[1]["error"]["data"]["reason"], "arguments_differ");
    assert_eq!(replies[1]["error"]["data"]["differingPaths"], json!(["message"]));
    // A miss is annotated as a hit is, in the error's data.
    let note = &replies[1]["error"]["data"]["dshkit/echo"];
    assert_eq!(note["outcome"], "miss", "{note}");
    assert_eq!(note["mode"], "replay");
    assert_eq!(note["reason"], "arguments_differ");
    assert_eq!(note["fingerprint"].as_str().map(str::len), Some(16), "{note}");
    assert_eq!(replies[2]["error"]["data"]["reason"], "unknown_tool");
    assert_eq!(replies[2]["error"]["data"]["recordedTools"], json!(["echo"]));
    assert_eq!(replies[3]["error"]["code"], -32_700, "garbage gets a parse error");

    let mut passthrough = vec![
        "echo",
        "replay",
        cassette_arg,
        "--on-miss",
        "passthrough",
        "--annotate",
        "--",
    ];
    passthrough.extend(live);
    let (replies, _) = exchange(dir.path(), &[], &passthrough, &probes[..3]);
    assert_eq!(
        replies[1]["result"]["content"][0]["text"], "Echo: two",
        "{replies:?}"
    );
    assert_eq!(
        replies[1]["result"]["_meta"]["dshkit/echo"]["outcome"],
        "passthrough"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.lines().last().unwrap().contains("\"origin\":\"live\""),
        "appended: {text}"
    );
    let (hit, _) = exchange(
        dir.path(),
        &[],
        &["echo", "replay", cassette_arg, "--annotate"],
        &probes[..3],
    );
    assert_eq!(hit[1]["result"]["content"][0]["text"], "Echo: two");
    assert_eq!(hit[1]["result"]["_meta"]["dshkit/echo"]["outcome"], "hit");
}

#[test]
fn over_http_a_miss_passes_through_to_the_real_server_and_is_appended() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, live) = record_one_echo(&peers, dir.path());
    let cassette_arg = cassette.to_str().unwrap();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();

    let mut args = vec![
        "echo",
        "replay",
        cassette_arg,
        "--http",
        "--on-miss",
        "passthrough",
        "--annotate",
        "--",
    ];
    args.extend(live);
    let (_replay, url) = echo_http(dir.path(), args);
    let post = |message: &Value| -> Value {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let response = reqwest::Client::new()
                .post(&url)
                .header("Accept", "application/json, text/event-stream")
                .json(message)
                .send()
                .await
                .unwrap();
            let text = response.text().await.unwrap();
            // JSON, or the last `data:` of an SSE stream.
            let body = text
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("data: "))
                .map_or(text.clone(), str::to_owned);
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {text}"))
        })
    };
    assert_eq!(post(&handshake()[0])["id"], 1);
    let hit = post(&call(2, "echo", json!({"message": "one"})));
    assert_eq!(hit["result"]["_meta"]["dshkit/echo"]["outcome"], "hit", "{hit}");
    let missed = post(&call(3, "echo", json!({"message": "two"})));
    assert_eq!(missed["result"]["content"][0]["text"], "Echo: two", "{missed}");
    assert_eq!(
        missed["result"]["_meta"]["dshkit/echo"]["outcome"], "passthrough",
        "{missed}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("\"origin\":\"live\"") && last.contains("Echo: two"),
        "appended: {last}"
    );
}

#[test]
fn record_over_http_refuses_new_episodes_with_what_to_do_instead() {
    let dir = Home::new();
    let out = dir.run([
        "echo",
        "record",
        "--http",
        "http://127.0.0.1:9/mcp",
        "--mode",
        "new-episodes",
        "-o",
        dir.path().join("c.jsonl").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--mode new-episodes is not available with --http")
            && stderr.contains("--on-miss passthrough"),
        "{stderr}"
    );
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn secrets_of_every_shape_never_reach_the_cassette_and_scan_finds_a_planted_one() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("secrets.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let secrets = [
        ("GITHUB_TOKEN", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12"),
        ("OPENAI_API_KEY", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
        ),
        ("DEEPSEEK_API_KEY", "sk-0123456789abcdef0123456789abcdef"),
        ("SLACK_BOT", "xoxb-1234567890-0987654321-abcdefghij"),
        ("AWS_ACCESS", "AKIAIOSFODNN7EXAMPLE"),
        ("GOOGLE_MAPS", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
        (
            "DATABASE_URL",
            "postgres://admin:hunter2hunter2@db.internal:5432/app",
        ),
        (
            "SESSION_JWT",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("AUTH_HEADER", "Bearer abcdefghijklmnop1234"),
        ("MY_CUSTOM_THING", "plain-but-named-secret-value"),
    ];
    let node = peers.node();
    let server = everything(&peers);
    let mut requests = handshake();
    requests.push(call(2, "get-env", json!({})));
    requests.push(call(
        3,
        "echo",
        json!({"message": "my key is sk-proj-ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210"}),
    ));
    let args = [
        "echo",
        "record",
        "-o",
        cassette_arg,
        "--redact-env",
        "MY_CUSTOM_THING",
        "--",
        node.to_str().unwrap(),
        server.to_str().unwrap(),
        "stdio",
    ];
    let (replies, _) = exchange(dir.path(), &secrets, &args, &requests);
    let env_text = replies[1]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        env_text.contains("ghp_ABCDEF"),
        "the live client sees the real values: record is transparent"
    );
    let written = std::fs::read_to_string(&cassette).unwrap();
    for (name, secret) in secrets {
        // The part that is secret: a URL's password, a header's token, else all of it.
        let needle = match name {
            "DATABASE_URL" => "hunter2hunter2",
            "AUTH_HEADER" => "abcdefghijklmnop1234",
            _ => secret,
        };
        let at = written.find(needle).unwrap_or(0);
        assert!(
            !written.contains(needle),
            "{name} leaked into the cassette: …{}…",
            &written[at.saturating_sub(120)..(at + 60).min(written.len())]
        );
    }
    assert!(
        !written.contains("ZYXWVUTSRQ"),
        "a secret in a request argument leaked"
    );
    assert!(written.contains("[REDACTED:env-GITHUB_TOKEN:"), "{written}");
    assert!(
        written.contains("[REDACTED:openai:"),
        "the key in the echo argument: {written}"
    );

    let home = Home::new();
    let scan = home.run(["echo", "redact", cassette_arg, "--scan"]);
    assert_eq!(
        scan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&scan.stdout)
    );
    std::fs::write(
        &cassette,
        written.replacen(
            "Echo: ",
            "Echo: token ghp_PLANTEDPLANTEDPLANTEDPLANTEDPLANTED12 ",
            1,
        ),
    )
    .unwrap();
    let planted = home.run(["echo", "redact", cassette_arg, "--scan"]);
    assert_eq!(planted.status.code(), Some(1));
    let report = String::from_utf8_lossy(&planted.stdout);
    assert!(
        report.contains("github") && !report.contains("PLANTEDPLANTED"),
        "the scan names, never prints, the secret: {report}"
    );
    assert!(home.run(["echo", "redact", cassette_arg]).status.success());
    let rescan = home.run(["echo", "redact", cassette_arg, "--scan"]);
    assert_eq!(rescan.status.code(), Some(0));
    let replayed = exchange(home.path(), &[], &["echo", "replay", cassette_arg], &requests).0;
    assert!(
        !replayed.iter().any(|r| r.to_string().contains("ghp_ABCDEF")),
        "replay shows placeholders only"
    );
}

#[test]
fn broken_cassettes_are_refused_or_recovered_with_a_clear_message() {
    let dir = Home::new();
    let home = Home::new();
    let future = dir.path().join("future.jsonl");
    std::fs::write(&future, "{\"type\":\"header\",\"formatVersion\":9}\n").unwrap();
    let out = output(
        home.dshkit()
            .args(["echo", "replay", future.to_str().unwrap()])
            .stdin(Stdio::null()),
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("format version 9 is newer"));
    // The same cassette is refused input wherever it is read: when new episodes
    // would be appended to it too.
    let out = output(
        home.dshkit()
            .args([
                "echo",
                "record",
                "-o",
                future.to_str().unwrap(),
                "--mode",
                "new-episodes",
                "--",
                "true",
            ])
            .stdin(Stdio::null()),
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("format version 9 is newer"));
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "hello\n").unwrap();
    let out = home.run(["echo", "lint", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a cassette header"));
    // A scan for secrets refuses it too: it is never called clean.
    for broken in [&garbage, &future] {
        let out = home.run(["echo", "redact", "--scan", broken.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("no secrets found"));
    }
}

#[test]
fn the_2026_era_is_recorded_and_replayed_in_discover_mode() {
    let dir = Home::new();
    let cassette = dir.path().join("discover.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let requests = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "dshkit_info", "arguments": {}, "_meta": meta}}),
    ];
    let bin = dshkit();
    let server = [
        "echo",
        "record",
        "-o",
        cassette_arg,
        "--",
        bin.to_str().unwrap(),
        "mcp",
        "--tools",
        "core",
    ];
    let (live, _) = exchange(dir.path(), &[], &server, &requests);
    assert_eq!(live.len(), 3, "{live:?}");
    assert_eq!(
        live[0]["result"]["supportedVersions"][2], "2026-07-28",
        "{live:?}"
    );
    assert_eq!(live[2]["result"]["structuredContent"]["name"], "dshkit");

    let (replayed, _) = exchange(dir.path(), &[], &["echo", "replay", cassette_arg], &requests);
    // The trailing garbage line: the replay answers it with a parse error (JSON-RPC
    // says to), the live rmcp server ignores it; everything else is identical.
    assert_eq!(
        replayed[..3],
        live[..3],
        "the replay answers exactly what the live server did"
    );
    assert_eq!(replayed[3]["error"]["code"], -32_700);
    let inspect = stdout_json(&dir.run(["--json", "echo", "inspect", cassette_arg]));
    assert_eq!(inspect["header"]["era"], "2026");
    assert_eq!(inspect["header"]["protocolVersion"], "2026-07-28");
    assert_eq!(inspect["header"]["serverInfo"]["name"], "dshkit");
    let lint = dir.run(["echo", "lint", cassette_arg]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
}

#[test]
fn verify_reports_match_against_the_same_server_and_drift_against_a_changed_one() {
    let peers = Peers::get();
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let node = peers.node();
    let server = everything(&peers);
    let live = [node.to_str().unwrap(), server.to_str().unwrap(), "stdio"];
    let mut requests = handshake();
    requests.push(call(2, "get-sum", json!({"a": 2, "b": 3})));
    requests.push(call(3, "echo", json!({"message": "same"})));
    let mut record = vec!["echo", "record", "-o", cassette_arg, "--"];
    record.extend(live);
    exchange(dir.path(), &[], &record, &requests);

    let mut verify = vec!["--json", "echo", "verify", cassette_arg, "--"];
    verify.extend(live);
    let clean = dir.run(&verify);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    assert_eq!(stdout_json(&clean)["drift"], 0);

    // The same cassette against a server whose answers changed: a tampered recording
    // stands in for the changed server (the recording is the contract).
    let text = std::fs::read_to_string(&cassette)
        .unwrap()
        .replace("The sum of 2 and 3 is 5.", "The sum is 5.");
    std::fs::write(&cassette, text).unwrap();
    let drifted = dir.run(&verify);
    assert_eq!(drifted.status.code(), Some(1));
    let report = stdout_json(&drifted);
    let checks = report["checks"].as_array().unwrap();
    let sum = checks
        .iter()
        .find(|c| c["method"] == "tools/call" && c["outcome"] != "MATCH")
        .unwrap();
    assert_eq!(sum["outcome"], "CHANGED", "{report}");
    assert_eq!(sum["tool"], "get-sum", "a row names the tool it called");
    assert_eq!(
        sum["paths"],
        json!(["/result/content/0/text"]),
        "where it changed, as --ignore takes it"
    );
    let text = dir.run(&verify[1..]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().any(|l| l.contains("CHANGED")
            && l.contains("tools/call get-sum")
            && l.contains("/result/content/0/text")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("MATCH") && l.contains("tools/call echo")),
        "{text}"
    );

    // The changed member, ignored: no drift.
    let mut ignoring = vec![
        "--json",
        "echo",
        "verify",
        cassette_arg,
        "--ignore",
        "/result/content/0/text",
        "--",
    ];
    ignoring.extend(live);
    let ignored = dir.run(&ignoring);
    assert_eq!(
        ignored.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ignored.stdout)
    );
    assert_eq!(stdout_json(&ignored)["drift"], 0);
    let broken = dir.run(["echo", "verify", cassette_arg, "--", "/nonexistent/server"]);
    assert_eq!(
        broken.status.code(),
        Some(2),
        "an unstartable server is an error, not drift"
    );
}

#[test]
fn verify_refuses_an_ignore_that_is_no_json_pointer() {
    // Refused input (exit 3) with what a pointer looks like, before the
    // cassette is read or any server starts.
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    std::fs::write(&cassette, "").unwrap();
    for bad in ["result/content/0/text", "/result/a~2b", "/a~", ""] {
        let refused = dir.run([
            "echo",
            "verify",
            cassette.to_str().unwrap(),
            "--ignore",
            "/result/fine",
            "--ignore",
            bad,
            "--",
            "/nonexistent/server",
        ]);
        assert_eq!(refused.status.code(), Some(3), "{bad:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("--ignore") && stderr.contains("pointer"),
            "{stderr}"
        );
        assert!(refused.stdout.is_empty(), "nothing was verified");
    }
}

#[test]
fn agents_list_and_inspect_cassettes_over_mcp_with_secrets_redacted_again() {
    let dir = Home::new();
    let recordings = dir.path().join("recordings");
    std::fs::create_dir(&recordings).unwrap();
    // A cassette written before a rule existed (redacted: false) still holds a key.
    let header = r#"{"type":"header","formatVersion":1,"recorder":"old","transport":"stdio","era":"2025","protocolVersion":"2025-11-25","serverInfo":{"name":"legacy","version":"1"},"redacted":false,"createdAt":0}"#;
    let call = r#"{"type":"interaction","ordinal":1,"request":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{"q":"key ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12"}}},"responses":[{"jsonrpc":"2.0","id":1,"result":{"content":[]}}],"ms":3}"#;
    std::fs::write(recordings.join("legacy.jsonl"), format!("{header}\n{call}\n")).unwrap();
    std::fs::write(recordings.join("notes.jsonl"), "{\"not\": \"a cassette\"}\n").unwrap();
    let workspace = dir.path().to_str().unwrap();
    let mut mcp = Session::initialized(&["--workspace", workspace, "--tools", "echo"], &[]);
    let listed = mcp.call(1, "echo_cassettes", &json!({}));
    let cassettes = listed["result"]["structuredContent"]["cassettes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(cassettes.len(), 1, "{listed}");
    assert_eq!(cassettes[0]["path"], "recordings/legacy.jsonl");
    assert_eq!(cassettes[0]["server"], "legacy");
    let inspected = mcp.call(2, "echo_inspect", &json!({"cassette": "recordings/legacy.jsonl"}));
    let text = inspected.to_string();
    assert!(!text.contains("ghp_ABCDEF"), "{text}");
    assert!(text.contains("[REDACTED:github:"), "{text}");
    let outside = mcp.call(3, "echo_inspect", &json!({"cassette": "../../etc/passwd"}));
    assert_eq!(outside["result"]["isError"], true);

    // The cassette is a resource too, redacted again when read; nothing else is.
    mcp.send(&json!({"jsonrpc": "2.0", "id": 20, "method": "resources/list"}).to_string());
    let resources = mcp.recv();
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["dshkit://cassettes/recordings/legacy.jsonl"],
        "{resources}"
    );
    let cassette = mcp.read_resource(21, "dshkit://cassettes/recordings/legacy.jsonl");
    let text = cassette["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        !text.contains("ghp_ABCDEF") && text.contains("[REDACTED:github:"),
        "{cassette}"
    );
    assert_eq!(text.lines().count(), 2, "the JSONL, line for line");
    for refused in [
        "dshkit://cassettes/recordings/notes.jsonl",
        "dshkit://cassettes/../../etc/passwd",
        "dshkit://cassettes/recordings/../../../etc/passwd",
    ] {
        let answer = mcp.read_resource(22, refused);
        assert!(answer["error"].is_object(), "{refused}: {answer}");
    }

    // The same recording with the tool's required argument list grown: breaking.
    let text = std::fs::read_to_string(recordings.join("legacy.jsonl")).unwrap();
    let listed = r#"{"type":"interaction","ordinal":2,"request":{"jsonrpc":"2.0","id":2,"method":"tools/list"},"responses":[{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"fetch","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}]}}],"ms":1}"#;
    std::fs::write(recordings.join("v1.jsonl"), format!("{text}{listed}\n")).unwrap();
    let grown = listed
        .replace(r#""required":["q"]"#, r#""required":["q","region"]"#)
        .replace(
            r#""q":{"type":"string"}"#,
            r#""q":{"type":"string"},"region":{"type":"string"}"#,
        );
    std::fs::write(recordings.join("v2.jsonl"), format!("{text}{grown}\n")).unwrap();
    let diffed = mcp.call(
        4,
        "echo_diff",
        &json!({"old": "recordings/v1.jsonl", "new": "recordings/v2.jsonl"}),
    );
    let result = &diffed["result"]["structuredContent"];
    assert_eq!(result["breaking"], 1, "{diffed}");
    assert_eq!(result["changes"][0]["rule"], "input-required-added");

    // A cassette damaged in its middle: the failure names its error by code.
    std::fs::write(
        recordings.join("broken.jsonl"),
        format!("{header}\n{{\"type\": \"interaction\", \n{call}\n"),
    )
    .unwrap();
    let broken = mcp.call(5, "echo_inspect", &json!({"cassette": "recordings/broken.jsonl"}));
    assert_eq!(broken["result"]["isError"], true, "{broken}");
    assert_eq!(
        broken["result"]["structuredContent"]["code"], "CASSETTE_DAMAGED",
        "{broken}"
    );
}

#[test]
fn a_stdio_recording_replays_over_streamable_http_to_the_sdk_client() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, mut live) = record_everything_with_sdk(&peers, dir.path());
    let cassette_arg = cassette.to_str().unwrap();

    let (_replay, url) = echo_http(dir.path(), ["echo", "replay", cassette_arg, "--http"]);
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let mut replayed = sdk_session_http(&peers, dir.path(), &url);
    let (_, replayed_progress) = (live["progress"].take(), replayed["progress"].take());
    assert_eq!(
        live, replayed,
        "the HTTP replay gives the SDK client the same results"
    );
    assert_eq!(
        replayed_progress.as_array().unwrap().len(),
        2,
        "progress arrives as SSE events: {replayed_progress}"
    );

    // DNS rebinding: another Host is refused, and so is a page's foreign Origin.
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let answer = |host: &str, origin: Option<&str>| {
        let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        let origin = origin.map_or_else(String::new, |origin| format!("Origin: {origin}\r\n"));
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ping}",
            ping.len()
        );
        std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
        answer
    };
    let ours = format!("127.0.0.1:{port}");
    let refused = answer("evil.example", None);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    let refused = answer(&ours, Some("http://evil.example"));
    assert!(
        refused.starts_with("HTTP/1.1 403") && refused.contains("Origin"),
        "{refused}"
    );
    let served = answer(&ours, Some(&format!("http://{ours}")));
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
}

#[test]
fn a_streamable_http_server_is_recorded_through_the_proxy_and_replays_identically() {
    let peers = Peers::get();
    let dir = Home::new();
    let (mut server, server_url) = everything_http(&peers);
    let cassette = dir.path().join("http.jsonl");
    let (mut proxy, url) = echo_http(
        dir.path(),
        [
            "echo",
            "record",
            "--http",
            &server_url,
            "-o",
            cassette.to_str().unwrap(),
        ],
    );
    let mut live = sdk_session_http(&peers, dir.path(), &url);
    // SIGINT ends the recording cleanly; then the server goes away.
    let status = proxy
        .interrupt(std::time::Duration::from_secs(10))
        .expect("the recorder did not stop on SIGINT");
    assert!(status.success(), "{status:?}");
    let _ = server.terminate(std::time::Duration::from_secs(5));

    let inspect = stdout_json(&dir.run(["--json", "echo", "inspect", cassette.to_str().unwrap()]));
    assert_eq!(inspect["header"]["transport"], "http");
    assert_eq!(inspect["header"]["serverInfo"]["name"], "mcp-servers/everything");
    let bin = dshkit();
    let mut replayed = sdk_session(
        &peers,
        dir.path(),
        &[
            bin.to_str().unwrap(),
            "echo",
            "replay",
            cassette.to_str().unwrap(),
        ],
    );
    let (_, progress) = (live["progress"].take(), replayed["progress"].take());
    assert_eq!(
        live, replayed,
        "recorded over HTTP, replayed over stdio: the same results"
    );
    assert_eq!(
        progress.as_array().unwrap().len(),
        2,
        "the SSE progress events were recorded: {progress}"
    );
}

#[test]
fn a_recorded_tool_contract_is_snapshotted_and_changes_are_classified() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, _) = record_everything_with_sdk(&peers, dir.path());
    let snapshot = dir.path().join("contract.json");
    let made = output(
        dir.dshkit()
            .args(["echo", "snapshot", cassette.to_str().unwrap(), "-o"])
            .arg(&snapshot),
    );
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let contract: Value = serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    let tools = contract["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "get-sum" && t["inputSchema"]["required"] == json!(["a", "b"])),
        "{contract}"
    );

    let same = output(dir.dshkit().args(["echo", "diff"]).arg(&snapshot).arg(&cassette));
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );

    // The next server version: echo gone, get-sum needs a new parameter, a new tool.
    let mut next = contract.clone();
    let list = next["tools"].as_array_mut().unwrap();
    list.retain(|t| t["name"] != "echo");
    let sum = list.iter_mut().find(|t| t["name"] == "get-sum").unwrap();
    sum["inputSchema"]["properties"]["precision"] = json!({"type": "integer"});
    sum["inputSchema"]["required"] = json!(["a", "b", "precision"]);
    list.push(json!({"name": "get-product", "inputSchema": {"type": "object"}}));
    let changed = dir.path().join("next.json");
    std::fs::write(&changed, next.to_string()).unwrap();
    let drift = output(
        dir.dshkit()
            .args(["--json", "echo", "diff"])
            .arg(&snapshot)
            .arg(&changed),
    );
    assert_eq!(drift.status.code(), Some(1));
    let report = stdout_json(&drift);
    let found: Vec<(String, String)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["rule"].as_str().unwrap().to_owned(),
                c["tool"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("tool-removed", "echo"),
        ("input-required-added", "get-sum"),
        ("tool-added", "get-product"),
    ] {
        assert!(
            found.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} in {found:?}"
        );
    }
    assert_eq!(report["breaking"], 2);
}

/// The tool list and a `dshkit_info` call made by rmcp's client in discover mode
/// against `command`.
async fn rmcp_discover_session(command: tokio::process::Command) -> (Vec<String>, Value) {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    let client = ()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover");
    let tools = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let info = client
        .call_tool(rmcp::model::CallToolRequestParams::new("dshkit_info"))
        .await
        .unwrap();
    let info = serde_json::to_value(&info).unwrap();
    client.cancel().await.unwrap();
    (tools, info)
}

#[tokio::test]
async fn an_rmcp_client_in_discover_mode_is_recorded_and_replayed() {
    let dir = Home::new();
    let cassette = dir.path().join("rmcp.jsonl");
    let mut record = tokio::process::Command::new(dshkit());
    crate::support::isolate(record.as_std_mut(), dir.path());
    record
        .args(["echo", "record", "-o"])
        .arg(&cassette)
        .arg("--")
        .arg(dshkit())
        .args(["mcp", "--tools", "core"]);
    let live = rmcp_discover_session(record).await;
    assert_eq!(live.0, ["dshkit_doctor", "dshkit_info"]);

    let mut replay = tokio::process::Command::new(dshkit());
    crate::support::isolate(replay.as_std_mut(), dir.path());
    replay.args(["echo", "replay"]).arg(&cassette);
    let replayed = rmcp_discover_session(replay).await;
    assert_eq!(
        replayed, live,
        "the rmcp client gets the same answers from the replay"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.lines().next().unwrap().contains("\"era\":\"2026\""),
        "{text}"
    );
    assert!(text.contains("\"method\":\"server/discover\""));
}

#[test]
fn verify_runs_against_a_streamable_http_server_too() {
    let peers = Peers::get();
    let dir = Home::new();
    let (cassette, _) = record_everything_with_sdk(&peers, dir.path());
    let (mut server, server_url) = everything_http(&peers);
    let url = server_url.clone();
    let out = dir.run([
        "--json",
        "echo",
        "verify",
        cassette.to_str().unwrap(),
        "--url",
        &url,
    ]);
    let report = stdout_json(&out);
    let checks = report["checks"].as_array().unwrap();
    assert!(checks.len() >= 6, "{report}");
    // The stdio recording, verified over HTTP: every answer matches.
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let _ = server.terminate(std::time::Duration::from_secs(5));
}

#[test]
fn overlay_replay_rows_annotate_hits_and_misses_unless_told_not_to() {
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let overlay = |extra: &[&str]| {
        let path = dir.path().join(format!("overlay{}.yml", extra.len()));
        let mut args = vec![
            "echo",
            "dsh-overlay",
            "--server",
            "tools",
            "--mode",
            "replay",
            "--cassette",
            cassette.to_str().unwrap(),
            "--dsh-home",
            dir.path().to_str().unwrap(),
            "-o",
            path.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = dir.run(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(&path).unwrap()
    };
    assert!(overlay(&[]).contains("--annotate"), "annotated by default");
    assert!(!overlay(&["--no-annotate"]).contains("--annotate"), "opt-out");
}

#[test]
fn an_overlay_that_reaches_the_real_server_says_so_where_the_mode_is_chosen() {
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let fresh = dir.path().join("new.jsonl");
    let write = |mode: &str, into: &Path| {
        let path = dir.path().join(format!("{mode}.yml"));
        let mut args = vec![
            "echo",
            "dsh-overlay",
            "--server",
            "tools",
            "--mode",
            mode,
            "--cassette",
        ];
        args.extend([
            into.to_str().unwrap(),
            "--dsh-home",
            dir.path().to_str().unwrap(),
            "-o",
        ]);
        args.push(path.to_str().unwrap());
        if mode != "replay" {
            args.extend(["--", "/bin/true"]);
        }
        (dir.run(&args), path.with_extension("manifest.json"))
    };
    let overlay = |mode: &str, into: &Path| {
        let (out, manifest) = write(mode, into);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let manifest: Value = serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), manifest)
    };
    let (said, manifest) = overlay("passthrough", &cassette);
    assert!(
        said.contains("side effects: a call the cassette does not answer goes to the real server"),
        "{said}"
    );
    assert!(
        manifest["sideEffects"]
            .as_str()
            .is_some_and(|s| s.contains("real server")),
        "{manifest:#}"
    );
    let (said, manifest) = overlay("record", &fresh);
    assert!(
        said.contains("side effects: every call goes to the real server"),
        "{said}"
    );
    assert!(manifest["sideEffects"].is_string(), "{manifest:#}");
    let (said, manifest) = overlay("replay", &cassette);
    assert!(
        !said.contains("side effects"),
        "a replay reaches no server: {said}"
    );
    assert!(manifest["sideEffects"].is_null(), "{manifest:#}");
    // Record starts a new cassette: over one that exists it is refused, naming passthrough.
    let (out, _) = write("record", &cassette);
    assert_eq!(out.status.code(), Some(3), "refused input");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("record never answers from or overwrites a cassette: use --mode passthrough"),
        "{stderr}"
    );
}

/// A cassette (header of `like`) whose interactions and raw lines carry `lines` in
/// clear text, as a cassette written before redaction existed would.
fn clear_cassette(like: &Path, lines: &[String], to: &Path) {
    let header = std::fs::read_to_string(like)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let mut text = format!("{header}\n");
    for (i, line) in lines.iter().enumerate() {
        let ordinal = i + 1;
        let interaction = json!({"type": "interaction", "ordinal": ordinal,
            "request": call(100 + ordinal as u64, "echo", json!({"message": line})),
            "responses": [{"jsonrpc": "2.0", "id": 100 + ordinal, "result": {"content": [{"type": "text", "text": format!("Echo: {line}")}]}}],
            "ms": 1});
        text.push_str(&format!("{interaction}\n"));
        text.push_str(&format!("{}\n", json!({"type": "raw", "line": line})));
    }
    std::fs::write(to, text).unwrap();
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn every_generated_secret_is_redacted_in_record_replay_redact_and_inspect() {
    use dshkit_test::secrets::{Rng, secret_corpus};
    let peers = Peers::get();
    let dir = Home::new();
    let corpus = secret_corpus(&mut Rng::from_env());
    let leaked = |text: &str| -> Vec<&'static str> {
        corpus
            .iter()
            .filter(|s| text.contains(&s.secret))
            .map(|s| s.family)
            .collect()
    };

    // Recorded over stdio: the live client sees each secret, the cassette none.
    let server = everything(&peers);
    let node = peers.node();
    let stdio_cassette = dir.path().join("stdio.jsonl");
    let mut requests = handshake();
    for (i, sample) in corpus.iter().enumerate() {
        requests.push(call(10 + i as u64, "echo", json!({"message": sample.line})));
    }
    let (replies, _) = exchange(
        dir.path(),
        &[],
        &[
            "echo",
            "record",
            "-o",
            stdio_cassette.to_str().unwrap(),
            "--",
            node.to_str().unwrap(),
            server.to_str().unwrap(),
            "stdio",
        ],
        &requests,
    );
    assert_eq!(replies.len(), corpus.len() + 1, "every call answered");
    assert!(
        replies[1]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&corpus[0].secret),
        "the live client gets the real value"
    );
    let recorded = std::fs::read_to_string(&stdio_cassette).unwrap();
    assert_eq!(leaked(&recorded), Vec::<&str>::new(), "recorded over stdio");

    // Recorded over Streamable HTTP through the proxy.
    let (mut http_server, server_url) = everything_http(&peers);
    let http_cassette = dir.path().join("http.jsonl");
    let (mut proxy, url) = echo_http(
        dir.path(),
        [
            "echo",
            "record",
            "--http",
            &server_url,
            "-o",
            http_cassette.to_str().unwrap(),
        ],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let post = |body: Value, session: Option<String>| {
            let mut request = client
                .post(&url)
                .header("Accept", "application/json, text/event-stream")
                .json(&body);
            if let Some(session) = session {
                request = request.header("Mcp-Session-Id", session);
            }
            request.send()
        };
        let initialized = post(handshake()[0].clone(), None).await.unwrap();
        let session = initialized
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let _ = initialized.text().await;
        let _ = post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            session.clone(),
        )
        .await
        .unwrap()
        .text()
        .await;
        for (i, sample) in corpus.iter().enumerate() {
            let answer = post(
                call(10 + i as u64, "echo", json!({"message": sample.line})),
                session.clone(),
            )
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
            assert!(answer.contains("Echo: "), "{answer}");
        }
    });
    proxy
        .interrupt(std::time::Duration::from_secs(10))
        .expect("the recorder did not stop");
    let _ = http_server.terminate(std::time::Duration::from_secs(5));
    let recorded = std::fs::read_to_string(&http_cassette).unwrap();
    assert!(recorded.lines().count() > corpus.len(), "the calls were recorded");
    assert_eq!(leaked(&recorded), Vec::<&str>::new(), "recorded over HTTP");

    // A cassette with the secrets in clear text: --scan finds them without
    // printing them, redact removes them, then --scan finds nothing.
    let lines: Vec<String> = corpus.iter().map(|s| s.line.clone()).collect();
    let clear = dir.path().join("clear.jsonl");
    clear_cassette(&stdio_cassette, &lines, &clear);
    let inspect_copy = dir.path().join("inspect.jsonl");
    std::fs::copy(&clear, &inspect_copy).unwrap();
    let scan = dir.run(["echo", "redact", "--scan", clear.to_str().unwrap()]);
    assert_eq!(scan.status.code(), Some(1));
    let report = String::from_utf8_lossy(&scan.stdout);
    assert!(report.lines().count() >= corpus.len(), "{report}");
    assert_eq!(leaked(&report), Vec::<&str>::new(), "scan never prints a secret");
    let redact = dir.run(["echo", "redact", clear.to_str().unwrap()]);
    assert!(
        redact.status.success(),
        "{}",
        String::from_utf8_lossy(&redact.stderr)
    );
    assert_eq!(
        leaked(&std::fs::read_to_string(&clear).unwrap()),
        Vec::<&str>::new(),
        "echo redact"
    );
    let rescan = dir.run(["echo", "redact", "--scan", clear.to_str().unwrap()]);
    assert_eq!(
        rescan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rescan.stdout)
    );

    // What echo_inspect shows an agent.
    let mut mcp = Session::initialized(&["--workspace", dir.path().to_str().unwrap()], &[]);
    let inspected = mcp.call(1, "echo_inspect", &json!({"cassette": "inspect.jsonl"}));
    assert_eq!(inspected["result"]["isError"], false, "{inspected}");
    assert_eq!(leaked(&inspected.to_string()), Vec::<&str>::new(), "echo_inspect");
}

#[test]
fn echo_redact_rewrites_only_records_with_secrets_and_leaves_a_damaged_cassette_as_it_was() {
    let dir = Home::new();
    let cassette = dir.path().join("c.jsonl");
    let header = r#"{"type":"header","formatVersion":1,"recorder":"dshkit","transport":"stdio","era":"2025","redacted":false,"createdAt":1}"#;
    // Spaced as a hand edit leaves it: a record without secrets keeps its bytes.
    let clean = r#"{"type": "interaction", "ordinal": 1, "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}], "ms": 1}"#;
    let secret = json!({"type": "interaction", "ordinal": 2,
        "request": call(2, "login", json!({"password": "correct-horse-battery"})),
        "responses": [{"jsonrpc": "2.0", "id": 2, "result": {"content": []}}], "ms": 1})
    .to_string();
    std::fs::write(&cassette, format!("{header}\n{clean}\n{secret}\n")).unwrap();
    let redact = dir.run(["echo", "redact", cassette.to_str().unwrap()]);
    assert!(
        redact.status.success(),
        "{}",
        String::from_utf8_lossy(&redact.stderr)
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(serde_json::from_str::<Value>(lines[0]).unwrap()["redacted"], true);
    assert_eq!(lines[1], clean, "the record without secrets is copied as it was");
    assert!(!lines[2].contains("correct-horse-battery"), "{}", lines[2]);
    assert!(lines[2].contains("[REDACTED:"), "{}", lines[2]);

    // A damaged line in the middle: refused, and the file is left as it was,
    // with nothing left beside it.
    let damaged = format!("{header}\n{secret}\n{{\"type\": \"interaction\", \n{clean}\n");
    std::fs::write(&cassette, &damaged).unwrap();
    let refused = dir.run(["echo", "redact", cassette.to_str().unwrap()]);
    assert_eq!(
        refused.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(std::fs::read_to_string(&cassette).unwrap(), damaged);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(files, [std::ffi::OsString::from("c.jsonl")]);
}

/// Sends `request` and returns the progress messages before its answer, and the answer.
fn with_progress(mcp: &mut Session, request: &Value) -> (Vec<String>, Value) {
    mcp.send(&request.to_string());
    let mut stages = Vec::new();
    loop {
        let message = mcp.recv_within(std::time::Duration::from_mins(2));
        if message["id"] == request["id"] {
            return (stages, message);
        }
        if message["method"] == "notifications/progress" {
            stages.push(message["params"]["message"].as_str().unwrap().to_owned());
        }
    }
}

#[test]
fn a_recorded_verification_replays_its_progress_notifications() {
    let app = dshkit_test::FixtureServer::page("<!doctype html><title>Todo</title><h1>Todo</h1>");
    let dir = Home::new();
    let cassette = dir.path().join("verify.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let evidence = dir.path().join("evidence");
    let evidence_arg = evidence.to_str().unwrap();
    let bin = crate::support::dshkit();
    let bin_arg = bin.to_str().unwrap();
    let verify = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "liveloop_verify", "_meta": {"progressToken": "v"},
        "arguments": {"appUrl": app.url("/"), "assertions": [{"kind": "text_present", "text": "Todo"}]}}});

    let mut recording = Session::start_dshkit(
        &["echo", "record", "-o", cassette_arg, "--", bin_arg, "mcp"],
        &[("DSHKIT_EVIDENCE_ROOT", evidence_arg)],
    );
    recording.initialize("2025-11-25");
    let (live_stages, live) = with_progress(&mut recording, &verify);
    assert_eq!(
        live["result"]["structuredContent"]["verdict"], "VERIFIED",
        "{live}"
    );
    assert!(live_stages.len() >= 5, "{live_stages:?}");
    assert!(recording.finish(std::time::Duration::from_mins(1)).success());

    // The app is gone: only the cassette answers, stage for stage.
    drop(app);
    let mut replaying = Session::start_dshkit(&["echo", "replay", cassette_arg], &[]);
    replaying.initialize("2025-11-25");
    let (replayed_stages, replayed) = with_progress(&mut replaying, &verify);
    assert_eq!(replayed_stages, live_stages);
    assert_eq!(
        replayed["result"]["structuredContent"]["verdict"],
        live["result"]["structuredContent"]["verdict"]
    );
}
