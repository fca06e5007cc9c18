//! Server-initiated requests replayed: the real server-everything's
//! `trigger-sampling-request` tool asks the client for a sampling
//! (`sampling/createMessage`) in the middle of the call. The official
//! TypeScript SDK client answers it while `dshkit echo record` records, and
//! again when the replay asks it, with the real server gone; an answer other
//! than the recorded one is a miss that names where it differs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dshkit_test::Peers;
use serde_json::{Value, json};

use crate::support::{Home, dshkit, echo_http, everything_http, everything_launcher, output, stdout_json};

/// What the client answers the sampling request with while recording.
const SAMPLED: &str = "blue, from the recording";

/// The sampling client's report (`harness/peers/sampling-client.mjs`): the
/// tool's result, or the error it got, and what it was asked to sample. It
/// answers each sampling request with `answer`; `target` is `stdio ARGV…`
/// or `http URL`.
fn sampling_session(peers: &Peers, home: &Path, answer: &str, target: &[&str]) -> Value {
    let out = output(
        Command::new(peers.node())
            .arg(peers.script("sampling-client.mjs"))
            .arg(answer)
            .args(target)
            .env("HOME", home)
            .env("PATH", peers.path_var()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

/// The one interaction of `cassette` that called `trigger-sampling-request`.
fn sampling_interaction(cassette: &Path) -> Value {
    let text = std::fs::read_to_string(cassette).unwrap();
    let calls: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["request"]["params"]["name"] == "trigger-sampling-request")
        .collect();
    assert_eq!(calls.len(), 1, "{text}");
    calls[0].clone()
}

/// The recorded call asked for one sampling and kept the client's answer.
fn assert_sampling_recorded(cassette: &Path) {
    let interaction = sampling_interaction(cassette);
    let exchanges = interaction["serverRequests"].as_array().unwrap();
    assert_eq!(exchanges.len(), 2, "{interaction}");
    assert_eq!(exchanges[0]["request"]["method"], "sampling/createMessage");
    assert_eq!(
        exchanges[1]["response"]["result"]["content"]["text"], SAMPLED,
        "{interaction}"
    );
}

/// The live result names the sampled answer; the replayed session asked the
/// client the same and got the same result; one that answers otherwise gets
/// the miss that names the differing member.
fn assert_replayed(live: &Value, replayed: &Value, differing: &Value) {
    assert!(
        live["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains(SAMPLED)),
        "{live}"
    );
    assert_eq!(live["asked"].as_array().map(Vec::len), Some(1), "{live}");
    assert_eq!(replayed, live, "the replay asked the same and answered the same");
    let error = &differing["result"]["error"];
    assert_eq!(error["code"], -32_001, "{differing}");
    assert_eq!(
        error["data"]["reason"], "server_request_answer_differs",
        "{error}"
    );
    assert_eq!(error["data"]["serverRequest"], "sampling/createMessage");
    assert_eq!(error["data"]["differingPaths"], json!(["result.content.text"]));
    assert_eq!(differing["asked"], live["asked"], "it was asked all the same");
}

#[test]
fn a_sampling_request_is_replayed_over_stdio_and_the_clients_answer_is_matched() {
    let peers = Peers::get();
    let dir = Home::new();
    let server = everything_launcher(dir.path(), &peers);
    let cassette = dir.path().join("sampling.jsonl");
    let bin = dshkit();
    let (bin, cassette_arg) = (bin.to_str().unwrap(), cassette.to_str().unwrap());
    let live = sampling_session(
        &peers,
        dir.path(),
        SAMPLED,
        &[
            "stdio",
            bin,
            "echo",
            "record",
            "-o",
            cassette_arg,
            "--",
            server.to_str().unwrap(),
        ],
    );
    std::fs::remove_file(&server).unwrap();
    assert_sampling_recorded(&cassette);

    let replay = ["stdio", bin, "echo", "replay", cassette_arg];
    let replayed = sampling_session(&peers, dir.path(), SAMPLED, &replay);
    let differing = sampling_session(&peers, dir.path(), "green, live", &replay);
    assert_replayed(&live, &replayed, &differing);
}

#[test]
fn a_sampling_request_is_replayed_over_streamable_http_and_the_answer_routed_to_its_call() {
    let peers = Peers::get();
    let dir = Home::new();
    let (mut server, server_url) = everything_http(&peers);
    let cassette = dir.path().join("sampling.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let (mut proxy, url) = echo_http(
        dir.path(),
        ["echo", "record", "--http", &server_url, "-o", cassette_arg],
    );
    let live = sampling_session(&peers, dir.path(), SAMPLED, &["http", &url]);
    let stopped = proxy
        .interrupt(Duration::from_secs(10))
        .expect("the recorder did not stop on SIGINT");
    assert!(stopped.success(), "{stopped:?}");
    let _ = server.terminate(Duration::from_secs(5));
    assert_sampling_recorded(&cassette);

    // One replay per session: a replay's recorded answers are used up as it
    // gives them.
    let replay = ["echo", "replay", cassette_arg, "--http"];
    let (_replay, url) = echo_http(dir.path(), replay);
    let replayed = sampling_session(&peers, dir.path(), SAMPLED, &["http", &url]);
    let (_replay, url) = echo_http(dir.path(), replay);
    let differing = sampling_session(&peers, dir.path(), "green, live", &["http", &url]);
    assert_replayed(&live, &replayed, &differing);
}
