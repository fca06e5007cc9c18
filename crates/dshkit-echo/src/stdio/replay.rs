//! Replay over stdio: frames from the client answered out of the cassette by
//! [`crate::replay`], which decides; this module reads the frames and writes
//! what it decided. Without passthrough (on Unix), replay runs on a thread of
//! its own that blocks in `read` between requests ([`super::blocking_client`]);
//! with it, or elsewhere, on the event loop.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};

use crate::error::EchoError;
use crate::frame::{json_line, read_frame};
use crate::passthrough::Live;
use crate::replay::{Event, Outgoing, ReplayOptions, ReplaySummary, Replayer, Reply};
use crate::server_request::{ANSWER_TIMEOUT, Awaited, MAX_HELD_BYTES, answer_key};

/// Longest wait for the client to read the last notification before the response.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(2);

/// Where replayed frames go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// This process's stdout: a pipe or a socket whose unread bytes can be counted.
    Stdout,
    /// A stream whose reading cannot be observed (in-memory streams in tests).
    Unobserved,
}

/// Answers MCP requests from `client_in` on `client_out` out of the cassette;
/// `peer` says whether `client_out` is this process's stdout (see `answer`).
pub async fn replay(
    client_in: impl AsyncBufRead + Unpin,
    client_out: impl AsyncWrite + Unpin,
    mut options: ReplayOptions,
    peer: Peer,
) -> Result<ReplaySummary, EchoError> {
    let replayer = Replayer::open(&mut options)?;
    replay_opened(replayer, client_in, client_out, &options, peer).await
}

/// [`replay`] with the cassette opened. Frames the client sends while a hit
/// waits for its answer to a server request are held and read after it.
async fn replay_opened(
    mut replayer: Replayer,
    mut client_in: impl AsyncBufRead + Unpin,
    mut client_out: impl AsyncWrite + Unpin,
    options: &ReplayOptions,
    peer: Peer,
) -> Result<ReplaySummary, EchoError> {
    let mut live: Option<Live> = None;
    let mut frame = Vec::new();
    let mut held = Held::default();
    loop {
        if let Some(next) = held.frames.pop_front() {
            held.bytes -= next.len();
            frame = next;
        } else if !read_frame(&mut client_in, &mut frame, "the client's stdin").await? {
            break;
        }
        match replayer.step(&frame, options) {
            Reply::Nothing => {}
            Reply::Send(message) => write_message(&mut client_out, message).await?,
            Reply::Hit(outgoing) if outgoing.server_requests.is_empty() => {
                answer(&mut client_out, outgoing, peer).await?;
            }
            Reply::Hit(outgoing) => {
                let asked = Asked {
                    client_in: &mut client_in,
                    held: &mut held,
                    redactor: &options.redactor,
                };
                if !converse(&mut client_out, outgoing, peer, asked).await? {
                    replayer.server_request_failed();
                }
            }
            Reply::PassThrough(request) => {
                if live.is_none() {
                    live = Some(
                        Live::start(options.on_miss.argv(), replayer.handshake(), &options.cassette).await?,
                    );
                }
                let server = live.as_mut().expect("just started");
                let ordinal = replayer.next_ordinal();
                server
                    .pass_through(&request, ordinal, &mut client_out, options)
                    .await?;
            }
        }
    }
    if let Some(server) = live {
        server.finish().await?;
    }
    Ok(replayer.into_summary())
}

/// Frames read while a server request waited for its answer, to be read after
/// it (at most [`MAX_HELD_BYTES`]).
#[derive(Default)]
struct Held {
    frames: std::collections::VecDeque<Vec<u8>>,
    bytes: usize,
}

/// What a hit that asks the client reads its answers from.
struct Asked<'a, R> {
    client_in: &'a mut R,
    held: &'a mut Held,
    redactor: &'a crate::redact::Redactor,
}

/// [`replay`] without passthrough, over blocking streams: a frame is read,
/// answered and written with no event loop between, and `runtime` only runs
/// the answers that wait (recorded timing, notifications before a response).
#[cfg(unix)]
fn replay_blocking(
    mut replayer: Replayer,
    input: super::blocking_client::Blocking,
    mut output: super::blocking_client::Blocking,
    options: &ReplayOptions,
    runtime: &tokio::runtime::Runtime,
) -> Result<ReplaySummary, EchoError> {
    let mut input = std::io::BufReader::new(input);
    let mut frame = Vec::new();
    let write = |output: &mut super::blocking_client::Blocking, line: &[u8]| {
        std::io::Write::write_all(output, line).map_err(EchoError::io("the client's stdout"))
    };
    while crate::frame::read_frame_blocking(&mut input, &mut frame, "the client's stdin")? {
        match replayer.step(&frame, options) {
            Reply::Nothing => {}
            Reply::Send(mut message) => {
                message.push(b'\n');
                write(&mut output, &message)?;
            }
            Reply::Hit(outgoing) if outgoing.delay.is_none() && outgoing.notifications.is_empty() => {
                for mut response in outgoing.responses {
                    response.push(b'\n');
                    write(&mut output, &response)?;
                }
            }
            Reply::Hit(outgoing) => {
                debug_assert!(
                    outgoing.server_requests.is_empty(),
                    "chosen for a cassette without them"
                );
                runtime.block_on(answer(&mut output, outgoing, Peer::Stdout))?;
            }
            Reply::PassThrough(_) => unreachable!("replay_stdio never blocks with passthrough"),
        }
    }
    Ok(replayer.into_summary())
}

/// Like [`replay`], with this process's stdin and stdout as the client. Without
/// passthrough (on Unix), replay runs on a thread of its own that blocks in
/// `read` between requests (`blocking_client`); with it, or elsewhere, on the
/// event loop over the streams `streams` makes. Dropping this future (on a
/// signal) leaves that thread in `read` until the process exits: it holds
/// nothing to close or flush, as a hit writes nothing but the answer.
pub async fn replay_stdio<R, W>(
    streams: impl FnOnce() -> (R, W),
    options: ReplayOptions,
) -> Result<ReplaySummary, EchoError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut options = options;
    let replayer = Replayer::open(&mut options)?;
    // A hit that asks the client waits for its answer with a deadline, which
    // a blocking read has not.
    #[cfg(unix)]
    if !matches!(options.on_miss, crate::replay::OnMiss::Passthrough(_))
        && !replayer.asks_client()
        && let Some((input, output)) = super::blocking_client::of_this_process()
    {
        return replay_on_thread(replayer, input, output, options).await;
    }
    let (client_in, client_out) = streams();
    replay_opened(replayer, client_in, client_out, &options, Peer::Stdout).await
}

/// [`replay`] over blocking streams, on a thread with a runtime of its own (for
/// the recorded delays).
#[cfg(unix)]
async fn replay_on_thread(
    opened: Replayer,
    input: super::blocking_client::Blocking,
    output: super::blocking_client::Blocking,
    options: ReplayOptions,
) -> Result<ReplaySummary, EchoError> {
    let (done, replayed) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("echo-replay".into())
        .spawn(move || {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map_err(EchoError::io("the replay thread's runtime"))
                .and_then(|runtime| replay_blocking(opened, input, output, &options, &runtime));
            let _ = done.send(result);
        })
        .map_err(EchoError::io("the replay thread"))?;
    replayed.await.unwrap_or_else(|_| {
        Err(EchoError::Io {
            what: "the replay thread",
            error: "it ended without a result".into(),
        })
    })
}

/// Plays back one hit on stdio. A notification and the response that ends its
/// request never reach the client in one read: clients (the TypeScript SDK among
/// them) handle notifications asynchronously but responses at once, so a
/// progress notification read together with its response is dropped. Before the
/// response, replay waits until the client has read the notifications (bounded
/// by [`DELIVERY_TIMEOUT`]), then keeps the recorded gap.
async fn answer(
    client_out: &mut (impl AsyncWrite + Unpin),
    outgoing: Outgoing,
    peer: Peer,
) -> Result<(), EchoError> {
    if let Some(wait) = outgoing.delay {
        tokio::time::sleep(wait).await;
    }
    let count = outgoing.notifications.len();
    for (index, notification) in outgoing.notifications.iter().enumerate() {
        write_line(client_out, &json_line(notification)).await?;
        if index + 1 == count {
            until_read(peer).await;
        }
        if !outgoing.gaps[index].is_zero() {
            tokio::time::sleep(outgoing.gaps[index]).await;
        }
    }
    for mut response in outgoing.responses {
        response.push(b'\n');
        write_line(client_out, &response).await?;
    }
    Ok(())
}

/// Plays back one hit that asks the client: its notifications and server
/// requests in recorded order, each answer waited for (at most
/// [`ANSWER_TIMEOUT`]) and checked against the recorded one, then its
/// responses. An answer that differs, or none, ends the call with the miss
/// that says so instead (false). Other frames read meanwhile are held.
async fn converse<R: AsyncBufRead + Unpin>(
    client_out: &mut (impl AsyncWrite + Unpin),
    outgoing: Outgoing,
    peer: Peer,
    asked: Asked<'_, R>,
) -> Result<bool, EchoError> {
    if let Some(wait) = outgoing.delay {
        tokio::time::sleep(wait).await;
    }
    let mut unread = false;
    for event in outgoing.events() {
        match event {
            Event::Notification(notification, gap) => {
                write_line(client_out, &json_line(notification)).await?;
                unread = true;
                if !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
            }
            Event::Ask(request) => write_line(client_out, &json_line(request)).await?,
            Event::Await(awaited) => {
                let answered = match wait_for(awaited, asked.client_in, asked.held, ANSWER_TIMEOUT).await? {
                    Ok(answer) => awaited.check(answer, asked.redactor),
                    Err(why) => Err(awaited.unanswered(&why)),
                };
                if let Err(failure) = answered {
                    write_message(client_out, outgoing.failed(&failure)).await?;
                    return Ok(false);
                }
            }
        }
    }
    if unread {
        until_read(peer).await;
    }
    for mut response in outgoing.responses {
        response.push(b'\n');
        write_line(client_out, &response).await?;
    }
    Ok(true)
}

/// Reads frames until the client's answer to `awaited`: the answer, or why
/// none came (`timeout` passed, the input ended, too much else held).
async fn wait_for(
    awaited: &Awaited,
    client_in: &mut (impl AsyncBufRead + Unpin),
    held: &mut Held,
    timeout: Duration,
) -> Result<Result<serde_json::Value, String>, EchoError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let key = awaited.key();
    loop {
        let mut frame = Vec::new();
        let read = tokio::time::timeout_at(deadline, read_frame(client_in, &mut frame, "the client's stdin"));
        let Ok(read) = read.await else {
            return Ok(Err(format!(
                "no answer within {} ms, ANSWER_TIMEOUT",
                timeout.as_millis()
            )));
        };
        if !read? {
            return Ok(Err("the client's input ended".into()));
        }
        if let Ok(message) = serde_json::from_slice::<serde_json::Value>(&frame)
            && answer_key(&message).as_ref() == Some(&key)
        {
            return Ok(Ok(message));
        }
        if held.bytes + frame.len() > MAX_HELD_BYTES {
            return Ok(Err(format!(
                "it sent more than {MAX_HELD_BYTES} bytes of other messages first, MAX_HELD_BYTES"
            )));
        }
        held.bytes += frame.len();
        held.frames.push_back(frame);
    }
}

/// Waits until the peer has read everything written to it, or
/// [`DELIVERY_TIMEOUT`] passed, or its reading cannot be observed.
async fn until_read(peer: Peer) {
    if peer == Peer::Unobserved {
        return;
    }
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    let mut pause = Duration::from_micros(100);
    while dshkit_os::pipe::unread_by_peer(std::io::stdout()).is_some_and(|unread| unread > 0)
        && Instant::now() < deadline
    {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Writes one message (without its newline) to the client as a line.
async fn write_message(out: &mut (impl AsyncWrite + Unpin), mut message: Vec<u8>) -> Result<(), EchoError> {
    message.push(b'\n');
    write_line(out, &message).await
}

/// Writes one whole line (its newline included) to the client and flushes it.
async fn write_line(out: &mut (impl AsyncWrite + Unpin), line: &[u8]) -> Result<(), EchoError> {
    out.write_all(line)
        .await
        .map_err(EchoError::io("the client's stdout"))?;
    out.flush().await.map_err(EchoError::io("the client's stdout"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::key::MatchOptions;
    use crate::redact::Redactor;
    use crate::replay::{OnMiss, Timing};

    /// What `replay` writes for `requests` (one per line) out of a cassette of
    /// `interactions`.
    async fn replayed(interactions: Vec<Value>, requests: &[&str]) -> Vec<Value> {
        replayed_under(
            &crate::cassette::Header::new("stdio"),
            false,
            interactions,
            requests,
        )
        .await
    }

    /// [`replayed`] with the cassette's `header`, annotated or not.
    async fn replayed_under(
        header: &crate::cassette::Header,
        annotate: bool,
        interactions: Vec<Value>,
        requests: &[&str],
    ) -> Vec<Value> {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let mut text = serde_json::to_string(header).unwrap();
        for interaction in interactions {
            text.push('\n');
            text.push_str(&interaction.to_string());
        }
        text.push('\n');
        std::fs::write(&cassette, text).unwrap();
        let options = ReplayOptions {
            cassette,
            timing: Timing::None,
            on_miss: OnMiss::Error,
            annotate,
            matching: MatchOptions::default(),
            redactor: Redactor::new(&[], &[]).unwrap(),
        };
        let input = requests.join("\n");
        let mut out = Vec::new();
        replay(input.as_bytes(), &mut out, options, Peer::Unobserved)
            .await
            .unwrap();
        out.split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn replay_answers_with_the_live_id_and_progress_token_whichever_way_a_request_is_keyed() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let redactor = Redactor::new(&[], &[]).unwrap();
        let mut login = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "login", "arguments": {"token": token}}});
        assert!(redactor.value(&mut login), "the recorded request holds a secret");
        let interactions = vec![
            json!({"type": "interaction", "ordinal": 1,
                "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"n": 1}, "_meta": {"progressToken": "recorded"}}},
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"done": true}}],
                "notifications": [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "recorded", "progress": 1}}],
                "ms": 0}),
            json!({"type": "interaction", "ordinal": 2, "request": login,
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"ok": true}}], "ms": 0}),
        ];
        let login_live = format!(
            r#"{{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{{"name":"login","arguments":{{"token":"{token}"}}}}}}"#
        );
        let out = replayed(
            interactions,
            &[
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"_meta":{"progressToken":"live-7"},"arguments":{"n":1},"name":"slow"}}"#,
                &login_live,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"n":2}}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"n":1e400}}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            ],
        )
        .await;
        assert_eq!(out[0]["params"]["progressToken"], "live-7", "{out:?}");
        assert_eq!(
            out[1],
            json!({"jsonrpc": "2.0", "id": "a", "result": {"done": true}})
        );
        assert_eq!(
            out[2],
            json!({"jsonrpc": "2.0", "id": "b", "result": {"ok": true}}),
            "a live secret meets its recorded placeholder"
        );
        assert_eq!(out[3]["id"], 3);
        assert_eq!(out[3]["error"]["data"]["differingPaths"], json!(["n"]), "{out:?}");
        // JSON with a number no tree holds is a miss that says so, and replay goes on.
        assert_eq!(out[4]["id"], 4);
        assert_eq!(out[4]["error"]["data"]["reason"], "unreadable", "{out:?}");
        assert_eq!(out[5]["id"], 5);
        assert_eq!(out[5]["error"]["data"]["reason"], "not_recorded", "{out:?}");
        assert_eq!(out.len(), 6);
    }

    #[tokio::test]
    async fn a_cassette_recorded_elsewhere_answers_with_the_paths_of_this_directory() {
        // Recorded in another directory: the cassette holds the working
        // directory as its token. The live request names a file here; replay
        // keys it with the token and answers with this directory's path, in
        // the response and in the notification before it.
        let here = std::env::current_dir().unwrap();
        let here = here.to_str().unwrap();
        let interactions = || {
            vec![json!({"type": "interaction", "ordinal": 1,
                "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_text_file",
                    "arguments": {"path": "{{dshkit:cwd}}/notes.txt"}}},
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "{{dshkit:cwd}}/notes.txt: hello"}]}}],
                "notifications": [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "reading {{dshkit:cwd}}"}}],
                "ms": 0})]
        };
        let live = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": format!("{here}/notes.txt")}}})
        .to_string();
        let mut header = crate::cassette::Header::new("stdio");
        header.paths = vec!["cwd".into()];
        for annotate in [false, true] {
            let out = replayed_under(&header, annotate, interactions(), &[&live]).await;
            assert_eq!(out.len(), 2, "{out:?}");
            assert_eq!(out[0]["params"]["data"], format!("reading {here}"));
            assert_eq!(out[1]["id"], 7, "{out:?}");
            assert_eq!(
                out[1]["result"]["content"][0]["text"],
                format!("{here}/notes.txt: hello"),
                "annotated: {annotate}"
            );
        }
        // Without the header's `paths` (format 1) nothing is normalised or
        // expanded: the token is text like any other.
        let old = crate::cassette::Header {
            format_version: 1,
            ..crate::cassette::Header::new("stdio")
        };
        let token = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"{{dshkit:cwd}}/notes.txt"}}}"#;
        let out = replayed_under(&old, false, interactions(), &[&live, token]).await;
        assert_eq!(out[0]["error"]["data"]["reason"], "arguments_differ", "{out:?}");
        assert_eq!(
            out[2]["result"]["content"][0]["text"],
            "{{dshkit:cwd}}/notes.txt: hello"
        );
    }

    /// What replay writes for `requests` out of a cassette of `lines`, under `timing`.
    async fn replay_bytes(lines: &[String], requests: &[String], timing: Timing) -> String {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let header = serde_json::to_string(&crate::cassette::Header::new("stdio")).unwrap();
        std::fs::write(&cassette, format!("{header}\n{}\n", lines.join("\n"))).unwrap();
        let options = ReplayOptions {
            cassette,
            timing,
            on_miss: OnMiss::Error,
            annotate: false,
            matching: MatchOptions::default(),
            redactor: Redactor::new(&[], &[]).unwrap(),
        };
        let mut out = Vec::new();
        replay(
            requests.join("\n").as_bytes(),
            &mut out,
            options,
            Peer::Unobserved,
        )
        .await
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn a_hit_copied_unread_sends_the_bytes_that_reading_it_sends() {
        // Under recorded timing (scaled to nothing) every hit is read as JSON;
        // without, a plain one is copied from where the index found it.
        let responses = [
            r#"[{"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "a \"q\" \u00e9"}]}}]"#,
            r#"[ {"result":{"id":7},"\u0069d":"r-1","jsonrpc":"2.0"} ]"#,
            r#"[{"jsonrpc":"2.0","error":{"code":-1,"message":"no"}}]"#,
            r#"[{"id":1,"result":{}},{"id":1,"result":{"second":true}}]"#,
            r#"[{"id":1,"id":2,"result":{}}]"#,
        ];
        let lines: Vec<String> = responses
            .iter()
            .enumerate()
            .map(|(i, responses)| {
                format!(
                    r#"{{"type":"interaction","ordinal":{i},"request":{{"method":"tools/call","params":{{"name":"t","arguments":{{"n":{i}}}}}}},"responses":{responses},"ms":5}}"#
                )
            })
            .collect();
        let requests: Vec<String> = (0..responses.len())
            .flat_map(|i| {
                [format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t","arguments":{{"n":{i}}}}}}}"#)]
            })
            .chain([r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"t","arguments":{"n":0}}}"#.to_owned()])
            .collect();
        let copied = replay_bytes(&lines, &requests, Timing::None).await;
        let read = replay_bytes(
            &lines,
            &requests,
            Timing::Recorded {
                scale: 0.0,
                cap: Duration::ZERO,
            },
        )
        .await;
        assert_eq!(copied, read);
        let first = copied.lines().next().unwrap();
        assert_eq!(
            first,
            r#"{"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "a \"q\" \u00e9"}]}}"#,
            "the recorded text, spaces and escapes kept"
        );
        assert_eq!(copied.lines().count(), 7, "{copied}");
        assert!(
            copied.lines().last().unwrap().contains(r#""error""#),
            "an answer hit once is used up: {copied}"
        );
    }

    /// A call whose server asked the client for a sampling between two
    /// notifications, recorded with the client's answer `"a"`.
    fn sampling_interaction() -> Value {
        let progress =
            |n: u64| json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": n}});
        json!({"type": "interaction", "ordinal": 1,
            "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sample", "arguments": {}}},
            "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"sampled": "a"}}],
            "notifications": [progress(1), progress(2)],
            "serverRequests": [
                {"request": {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {"maxTokens": 5}}},
                {"response": {"jsonrpc": "2.0", "id": 0, "result": {"content": {"type": "text", "text": "a"}}}}
            ],
            "serverRequestsAfter": [1, 1],
            "ms": 0})
    }

    const CALL: &str =
        r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"sample","arguments":{}}}"#;

    #[tokio::test]
    async fn a_server_request_is_asked_in_its_recorded_place_and_a_request_sent_meanwhile_waits() {
        let ping = r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#;
        let answer =
            r#"{"jsonrpc":"2.0","id":"dshkit-echo-1","result":{"content":{"type":"text","text":"a"}}}"#;
        let header = crate::cassette::Header::new("stdio");
        for annotate in [false, true] {
            let requests = [CALL, ping, answer];
            let out = replayed_under(&header, annotate, vec![sampling_interaction()], &requests).await;
            let kinds: Vec<String> = out
                .iter()
                .map(|m| format!("{} {}", m["method"].as_str().unwrap_or("-"), m["id"]))
                .collect();
            assert_eq!(
                kinds,
                [
                    "notifications/message null",
                    "sampling/createMessage \"dshkit-echo-1\"",
                    "notifications/message null",
                    "- \"c\"",
                    "- \"p\"",
                ],
                "annotated: {annotate}: {out:?}"
            );
            assert_eq!(out[3]["result"]["sampled"], "a");
            assert_eq!(
                out[4]["error"]["data"]["reason"], "not_recorded",
                "the ping, read after the call"
            );
        }
    }

    #[tokio::test]
    async fn an_answer_that_differs_or_never_comes_ends_the_call_with_a_miss_that_says_so() {
        let other =
            r#"{"jsonrpc":"2.0","id":"dshkit-echo-1","result":{"content":{"type":"text","text":"b"}}}"#;
        let out = replayed(vec![sampling_interaction()], &[CALL, other]).await;
        assert_eq!(out.len(), 3, "{out:?}");
        let error = &out[2]["error"];
        assert_eq!(out[2]["id"], "c");
        assert_eq!(error["code"], crate::replay::MISS_CODE);
        assert_eq!(error["data"]["reason"], "server_request_answer_differs");
        assert_eq!(error["data"]["differingPaths"], json!(["result.content.text"]));
        // The input ends before the answer.
        let out = replayed(vec![sampling_interaction()], &[CALL]).await;
        assert_eq!(out[2]["error"]["data"]["reason"], "server_request_unanswered");
        assert!(
            out[2]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("input ended"),
            "{out:?}"
        );
        // A client that keeps its input open and never answers: bounded.
        let mut next = 0;
        let placed = crate::server_request::steps(
            sampling_interaction()["serverRequests"]
                .as_array()
                .unwrap()
                .clone(),
            &[],
            0,
            &mut next,
            &crate::paths::PathRoots::none(),
        );
        let crate::server_request::Step::Await(awaited) = &placed[1].step else {
            panic!("{placed:?}")
        };
        let (_open, quiet) = tokio::io::duplex(64);
        let mut quiet = tokio::io::BufReader::new(quiet);
        let why = wait_for(
            awaited,
            &mut quiet,
            &mut Held::default(),
            Duration::from_millis(20),
        )
        .await
        .unwrap()
        .unwrap_err();
        assert_eq!(why, "no answer within 20 ms, ANSWER_TIMEOUT");
    }

    #[tokio::test]
    async fn a_recorded_http_status_without_a_json_rpc_answer_is_an_error_naming_it_over_stdio() {
        let interaction = json!({"type": "interaction", "ordinal": 1,
            "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            "responses": [], "status": 404, "contentType": "text/plain", "body": "Cannot POST /mcp",
            "ms": 0});
        let out = replayed(
            vec![interaction],
            &[r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#],
        )
        .await;
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0]["id"], 9);
        assert_eq!(out[0]["error"]["code"], crate::replay::HTTP_ERROR_CODE);
        assert_eq!(out[0]["error"]["data"]["status"], 404);
        assert_eq!(out[0]["error"]["data"]["body"], "Cannot POST /mcp");
    }
}
