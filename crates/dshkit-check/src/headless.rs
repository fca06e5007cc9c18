//! The boot proof of a headless profile. `dsh --profile headless` takes no
//! `--port` and serves no page: it loads its plugin tree, answers one task and
//! exits. So its proof is one real turn, run against a stand-in for the model on
//! loopback (no tokens spent, no network used): the turn must end with exit 0,
//! the stand-in's answer printed, and no process of its group left behind.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dshkit_os::process::{Identity, wait_exit, wait_gone};

use crate::live::{BootStderr, Dsh, read_capped};
use crate::report::{Check, Status};

/// The bundle that makes a profile headless (`dsh.profile.bundles` in the
/// profile's `package.json`).
const HEADLESS_BUNDLE: &str = "@deepseek-ai/dsh-headless";
/// The task of the proof turn.
const PROOF_TASK: &str = "dshkit boot proof: reply with the word ready";
/// What the stand-in model answers; the turn prints it.
const PROOF_ANSWER: &str = "dshkit-boot-proof-ready";
/// The key the turn is given: the stand-in takes any.
const PROOF_KEY: &str = "sk-dshkit-boot-proof";
/// Most bytes of one request the stand-in reads (the system prompt and tool
/// schemas of a large profile fit well within it).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// Most stdout of the turn kept.
const MAX_TURN_STDOUT: usize = 64 * 1024;
/// How long the processes DSH started may take to end after it exited.
const LEFTOVER_GRACE: Duration = Duration::from_secs(3);
/// How long the stand-in waits for a request's bytes.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the profile's `package.json` names the headless bundle.
pub(crate) fn is_headless(home: &Path, profile: &str) -> bool {
    let manifest = home.join("profiles").join(profile).join("package.json");
    std::fs::read(&manifest)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|m| m["dsh"]["profile"]["bundles"].as_array().cloned())
        .is_some_and(|bundles| bundles.iter().any(|b| b == HEADLESS_BUNDLE))
}

/// An OpenAI-compatible chat endpoint on loopback that answers every request
/// with [`PROOF_ANSWER`], streamed when asked. It stops when dropped.
struct StandInModel {
    url: String,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    address: std::net::SocketAddr,
    server: Option<std::thread::JoinHandle<()>>,
}

impl StandInModel {
    fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let address = listener.local_addr()?;
        let (requests, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (counted, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
        let server = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let counted = Arc::clone(&counted);
                    std::thread::spawn(move || serve(stream, &counted));
                }
            }
        });
        Ok(Self {
            url: format!("http://{address}"),
            requests,
            stop,
            address,
            server: Some(server),
        })
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for StandInModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the stop.
        let _ = TcpStream::connect(self.address);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// Answers the requests of one connection (keep-alive) until it closes.
fn serve(stream: TcpStream, requests: &AtomicUsize) {
    let _ = stream.set_read_timeout(Some(REQUEST_READ_TIMEOUT));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(stream_wanted) = read_request(&mut reader) {
        requests.fetch_add(1, Ordering::SeqCst);
        let (content_type, body) = if stream_wanted {
            ("text/event-stream", streamed_answer())
        } else {
            ("application/json", whole_answer())
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(body.as_bytes()))
            .is_err()
        {
            return;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

/// Reads one request; whether it asked for a stream. `None` at the end of the
/// connection or on a request too large or malformed.
fn read_request(reader: &mut impl BufRead) -> Option<bool> {
    let mut length = 0usize;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 || line.len() > 16 * 1024 {
            return None;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    if length > MAX_REQUEST_BYTES {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    Some(request["stream"].as_bool().unwrap_or(false))
}

fn streamed_answer() -> String {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        serde_json::json!({
            "id": "dshkit-boot-proof", "object": "chat.completion.chunk", "created": 0, "model": "dshkit-boot-proof",
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    };
    let usage = serde_json::json!({
        "id": "dshkit-boot-proof", "object": "chat.completion.chunk", "created": 0, "model": "dshkit-boot-proof",
        "choices": [], "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
    });
    format!(
        "data: {}\n\ndata: {}\n\ndata: {usage}\n\ndata: [DONE]\n\n",
        chunk(
            serde_json::json!({ "role": "assistant", "content": PROOF_ANSWER }),
            serde_json::Value::Null
        ),
        chunk(serde_json::json!({}), serde_json::json!("stop")),
    )
}

fn whole_answer() -> String {
    serde_json::json!({
        "id": "dshkit-boot-proof", "object": "chat.completion", "created": 0, "model": "dshkit-boot-proof",
        "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": PROOF_ANSWER } }],
        "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
    })
    .to_string()
}

/// The `live_boot` check of a headless profile: one turn against the stand-in,
/// within `timeout`. Its group is killed whatever the outcome, and any process
/// of it still there after DSH exited fails the proof (as a web boot's shutdown
/// check would).
pub(crate) fn headless_turn(dsh: &Dsh, profile: &str, timeout: Duration) -> Check {
    let (id, name) = ("live_boot", "Isolated boot");
    let model = match StandInModel::start() {
        Ok(model) => model,
        Err(e) => {
            return Check::new(
                id,
                name,
                Status::NotTested,
                format!("could not serve the stand-in model on loopback: {e}"),
            );
        }
    };
    let started = Instant::now();
    let spawned = dsh.spawn_with(&["--profile", profile, PROOF_TASK], |command| {
        command
            .env("DEEPSEEK_BASE_URL", &model.url)
            .env("DEEPSEEK_API_KEY", PROOF_KEY);
    });
    let (mut child, group) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            return dsh.not_started(id, name, &e);
        }
    };
    let leader = child.id();
    let stdout = read_capped(child.stdout.take(), MAX_TURN_STDOUT);
    let stderr = read_capped(child.stderr.take(), MAX_TURN_STDOUT);
    let status = wait_exit(&mut child, timeout);
    // What DSH started must end with it; a moment is allowed for their exits.
    let members: Vec<Identity> = group
        .members()
        .into_iter()
        .filter(|pid| *pid != leader)
        .filter_map(Identity::of)
        .collect();
    let left = wait_gone(members, LEFTOVER_GRACE);
    group.kill();
    let _ = child.wait();
    let (out, err) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    let mut boot_stderr = BootStderr::default();
    for line in err.lines() {
        boot_stderr.push(line, false);
    }
    let (evidence, note) = boot_stderr.failure_evidence();
    let header = boot_stderr
        .error_block()
        .first()
        .map(|line| format!(": {line}"))
        .unwrap_or_default();
    let seconds = started.elapsed().as_secs_f64();
    let asked = model.requests();
    drop(model);
    let fail = |detail: String| Check::new(id, name, Status::Fail, detail).with_evidence(evidence.clone());
    match status {
        None => fail(format!(
            "the headless turn did not end within {timeout:?}{header} (evidence: {note})"
        )),
        Some(status) if !status.success() => fail(format!(
            "the headless turn exited ({status}) after {seconds:.1}s{header} (evidence: {note})"
        )),
        Some(_) if asked == 0 || !out.contains(PROOF_ANSWER) => fail(format!(
            "the headless turn exited 0 after {seconds:.1}s without the stand-in model's answer ({asked} request(s) reached it): the profile's model route may not be DeepSeek's, so its tree was not proven"
        )),
        Some(_) if !left.is_empty() => fail(format!(
            "the headless turn answered in {seconds:.1}s, but {} process(es) of its group outlived it (killed now)",
            left.len()
        )),
        Some(_) => Check::new(
            id,
            name,
            Status::Pass,
            format!(
                "a headless turn loaded the plugin tree and answered in {seconds:.1}s ({asked} request(s) to a stand-in model on loopback; no process left)"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    #[test]
    fn the_stand_in_answers_streamed_and_whole_requests_on_one_connection() {
        let model = StandInModel::start().unwrap();
        let mut stream = TcpStream::connect(model.url.trim_start_matches("http://")).unwrap();
        for stream_wanted in [true, false] {
            let body = format!(r#"{{"model":"x","stream":{stream_wanted},"messages":[]}}"#);
            write!(
                stream,
                "POST /chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut content_type = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("content-length: ") {
                    length = v.trim().parse().unwrap();
                }
                if let Some(v) = line.strip_prefix("content-type: ") {
                    content_type = v.trim().to_owned();
                }
            }
            let mut answer = vec![0; length];
            reader.read_exact(&mut answer).unwrap();
            let answer = String::from_utf8(answer).unwrap();
            assert!(answer.contains(PROOF_ANSWER), "{answer}");
            if stream_wanted {
                assert_eq!(content_type, "text/event-stream");
                assert!(answer.ends_with("data: [DONE]\n\n"));
            } else {
                assert_eq!(content_type, "application/json");
                let parsed: serde_json::Value = serde_json::from_str(&answer).unwrap();
                assert_eq!(parsed["choices"][0]["message"]["content"], PROOF_ANSWER);
            }
        }
        assert_eq!(model.requests(), 2);
    }

    #[test]
    fn a_profile_is_headless_when_it_names_the_headless_bundle() {
        let home = tempfile::tempdir().unwrap();
        let write = |profile: &str, manifest: &str| {
            let dir = home.path().join("profiles").join(profile);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("package.json"), manifest).unwrap();
        };
        write(
            "headless",
            r#"{"dsh":{"profile":{"bundles":["@deepseek-ai/dsh-base","@deepseek-ai/dsh-headless"]}}}"#,
        );
        write(
            "web",
            r#"{"dsh":{"profile":{"bundles":["@deepseek-ai/dsh-base","@deepseek-ai/dsh-web"]}}}"#,
        );
        write("broken", "{");
        assert!(is_headless(home.path(), "headless"));
        assert!(!is_headless(home.path(), "web"));
        assert!(!is_headless(home.path(), "broken"));
        assert!(!is_headless(home.path(), "missing"));
    }
}
