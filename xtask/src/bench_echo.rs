//! `cargo xtask bench echo`: Echo against the live server in one run, with one raw
//! JSON-RPC client: direct calls to server-everything over stdio, the same calls
//! through `dshkit echo record` (record overhead), and through `dshkit echo replay`
//! of the cassette just recorded; then a 100 000-interaction cassette loaded.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench::{StdioClient, micros};

/// Timed calls per variant (each with its own message, so replay never repeats).
const CALLS: usize = 2000;
/// Untimed calls first.
const WARMUP: usize = 200;
/// Interactions in the generated large cassette.
const LARGE: usize = 100_000;

fn percentile(values: &mut [Duration], p: f64) -> Duration {
    values.sort();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a short list"
    )]
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index]
}

fn call(id: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"message": format!("message {id}")}}})
}

/// Times `CALLS` echo calls (after the warm-up) through the server `command`.
fn sample(command: &mut Command) -> anyhow::Result<Vec<Duration>> {
    let mut client = StdioClient::start(command)?;
    client.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut latencies = Vec::with_capacity(CALLS);
    for id in 1..=WARMUP + CALLS {
        let began = Instant::now();
        let reply = client.request(&call(id))?;
        let elapsed = began.elapsed();
        if reply["result"]["content"][0]["text"] != format!("Echo: message {id}") {
            anyhow::bail!("unexpected reply to call {id}: {reply}");
        }
        if id > WARMUP {
            latencies.push(elapsed);
        }
    }
    drop(client);
    Ok(latencies)
}

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, dshkit) = crate::bench::prepare()?;
    let everything = peers
        .mcp_modules()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let work = std::env::temp_dir().join(format!("dshkit-bench-echo-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let cassette = work.join("everything.jsonl");
    println!(
        "Echo over stdio: {CALLS} timed tools/call echo round trips after {WARMUP} warm-up, one raw JSON-RPC client"
    );

    let mut direct = sample(Command::new(peers.node()).arg(&everything).arg("stdio"))?;
    let mut recorded = sample(
        Command::new(&dshkit)
            .args(["echo", "record", "-o"])
            .arg(&cassette)
            .arg("--")
            .arg(peers.node())
            .arg(&everything)
            .arg("stdio")
            .env("HOME", &work),
    )?;
    let mut replayed = sample(
        Command::new(&dshkit)
            .args(["echo", "replay"])
            .arg(&cassette)
            .env("HOME", &work),
    )?;
    let (d50, r50, p50) = (
        percentile(&mut direct, 0.5),
        percentile(&mut recorded, 0.5),
        percentile(&mut replayed, 0.5),
    );
    println!("{:<28} {:>12} {:>12}", "", "p50", "p99");
    for (label, values) in [
        ("live server, direct", &mut direct),
        ("through echo record", &mut recorded),
        ("echo replay (no server)", &mut replayed),
    ] {
        println!(
            "{label:<28} {:>12} {:>12}",
            micros(percentile(values, 0.5)),
            micros(percentile(values, 0.99))
        );
    }
    let overhead = r50.saturating_sub(d50);
    println!(
        "record adds {} per call at p50 ({:.1} % of a direct call; goal < 5 %)",
        micros(overhead),
        overhead.as_secs_f64() / d50.as_secs_f64() * 100.0
    );
    println!(
        "replay answers in {} at p50, {:.1}x faster than the live server",
        micros(p50),
        d50.as_secs_f64() / p50.as_secs_f64()
    );

    large_cassette(&dshkit, &work)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Writes a cassette of [`LARGE`] interactions and times a release `dshkit echo
/// replay` loading and indexing it (three runs; the first pays for a cold binary).
fn large_cassette(dshkit: &std::path::Path, work: &std::path::Path) -> anyhow::Result<()> {
    let big = work.join("large.jsonl");
    let mut text = serde_json::to_string(&dshkit_echo::cassette::Header::new("stdio"))?;
    text.push('\n');
    for i in 1..=LARGE {
        let record = dshkit_echo::cassette::Record::Interaction(dshkit_echo::cassette::Interaction {
            ordinal: u64::try_from(i)?,
            request: call(i),
            responses: vec![
                json!({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": format!("Echo: message {i}")}]}}),
            ],
            notifications: vec![],
            server_requests: vec![],
            status: None,
            ms: 1,
            origin: "recorded".into(),
        });
        text.push_str(&serde_json::to_string(&record)?);
        text.push('\n');
    }
    std::fs::write(&big, &text)?;
    // Load and index it the way a replay does, in the release binary: a replay
    // with no client reads the whole cassette, builds its pools and exits.
    let mut runs = Vec::new();
    let mut peak_kib: u64 = 0;
    for _ in 0..3 {
        let began = Instant::now();
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .arg(dshkit)
            .args(["echo", "replay"])
            .arg(&big)
            .stdin(std::process::Stdio::null())
            .output()
            .context("running /usr/bin/time dshkit echo replay")?;
        runs.push(began.elapsed());
        let stderr = String::from_utf8_lossy(&out.stderr);
        peak_kib = stderr
            .lines()
            .last()
            .and_then(|l| l.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    #[expect(clippy::cast_precision_loss, reason = "sizes for display")]
    let (file_mib, peak_rss_mib) = (text.len() as f64 / 1_048_576.0, peak_kib as f64 / 1024.0);
    println!(
        "a {LARGE}-interaction cassette ({file_mib:.1} MiB): `dshkit echo replay` loads and indexes it and exits in {} (median of {}, goal < 1 s), peak RSS {peak_rss_mib:.1} MiB ({:.1}x the file)",
        micros(percentile(&mut runs.clone(), 0.5)),
        runs.iter().map(|d| micros(*d)).collect::<Vec<_>>().join(", "),
        peak_rss_mib / file_mib
    );
    Ok(())
}
