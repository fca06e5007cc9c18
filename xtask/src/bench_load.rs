//! `cargo xtask bench load`: dshkit's Streamable HTTP server and server-everything's
//! under the same three loads, in one run, with one Rust client:
//!
//! 1. churn: sessions opened with `initialize` and abandoned (never `DELETE`d);
//!    server RSS before, at the peak and after dshkit's (short, for the run) idle
//!    expiry has passed;
//! 2. load: concurrent clients that each open a session, make calls and close it,
//!    in rounds; errors, latency, throughput and RSS after each round;
//! 3. slow clients: connections that send half a request head and stall; whether
//!    a normal client is still answered, and how many stalled ones the server closes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::bench::{Killed, initialize, mib, percentile, rss_kib, spawn_dshkit_http, spawn_everything_http};

/// Sessions opened and abandoned in the churn.
const CHURN_SESSIONS: usize = 5000;
/// Requests in flight at once during the churn.
const CHURN_CONCURRENCY: usize = 16;
/// dshkit's idle expiry for this run (the default is 10 minutes).
const SESSION_IDLE_SECS: u64 = 3;
/// Concurrent clients, calls per client and rounds of the load.
const CLIENTS: usize = 64;
const CALLS_PER_CLIENT: usize = 200;
const ROUNDS: usize = 3;
/// Sessions opened and left idle, twice, to measure an idle session's memory.
const IDLE_SESSIONS: usize = 128;
/// How long they are left idle: past dshkit's hibernation (60 s).
const IDLE_WAIT: Duration = Duration::from_secs(65);
/// Stateless (2026-07-28) calls of the stateless churn.
const STATELESS_CALLS: usize = 5000;
/// Stalled connections of the slow-client load.
const STALLED: usize = 900;
/// How long the stalled connections are watched for being closed by the server
/// (dshkit's header-read timeout is 10 s).
const STALL_WATCH: Duration = Duration::from_secs(15);

struct Target {
    label: &'static str,
    url: String,
    token: Option<String>,
    tool: &'static str,
    arguments: Value,
    process: Killed,
}

impl Target {
    fn pid(&self) -> u32 {
        self.process.0.id()
    }

    fn rss(&self) -> u64 {
        rss_kib(self.pid()).unwrap_or(0)
    }

    fn post(&self, client: &reqwest::Client, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .body(body.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request
    }

    /// `initialize`; returns the new session's id.
    async fn open(&self, client: &reqwest::Client) -> anyhow::Result<String> {
        let response = self.post(client, None, &initialize(0)).send().await?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await?;
        if !status.is_success() {
            bail!("initialize: HTTP {status}: {body}");
        }
        session.context("initialize: no Mcp-Session-Id")
    }

    async fn call(&self, client: &reqwest::Client, session: &str, id: usize) -> anyhow::Result<()> {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": self.tool, "arguments": self.arguments}});
        let response = self.post(client, Some(session), &message).send().await?;
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() || !body.contains("\"result\"") || body.contains("\"isError\":true") {
            bail!("tools/call: HTTP {status}: {body}");
        }
        Ok(())
    }

    async fn session_client(&self, client: &reqwest::Client) -> anyhow::Result<String> {
        let session = self.open(client).await?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(client, Some(&session), &initialized)
            .send()
            .await?
            .error_for_status()?;
        Ok(session)
    }

    async fn close(&self, client: &reqwest::Client, session: &str) -> anyhow::Result<()> {
        let mut request = client.delete(&self.url).header("Mcp-Session-Id", session);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await?.error_for_status()?;
        Ok(())
    }
}

fn start_dshkit(dshkit: &Path, home: &Path) -> anyhow::Result<Target> {
    let idle = SESSION_IDLE_SECS.to_string();
    let (process, url, token) = spawn_dshkit_http(dshkit, home, &["--session-idle", &idle])?;
    Ok(Target {
        label: "dshkit",
        url,
        token: Some(token),
        tool: "dshkit_info",
        arguments: json!({}),
        process,
    })
}

fn start_everything(node: &Path, everything: &Path) -> anyhow::Result<Target> {
    let (process, url) = spawn_everything_http(node, everything)?;
    Ok(Target {
        label: "server-everything",
        url,
        token: None,
        tool: "echo",
        arguments: json!({"message": "ping"}),
        process,
    })
}

/// Opens `IDLE_SESSIONS` sessions and leaves them idle for `IDLE_WAIT`, twice:
/// RSS per idle session in KiB after the first wave, after both, and of the
/// second wave alone (what one more idle session costs once the allocator's
/// pages are in use). The sessions are closed afterwards.
async fn idle_sessions(target: &Arc<Target>) -> anyhow::Result<[f64; 3]> {
    let client = reqwest::Client::new();
    let first = target.session_client(&client).await?;
    target.close(&client, &first).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = target.rss();
    let mut sessions = Vec::with_capacity(2 * IDLE_SESSIONS);
    let mut after = [0u64; 2];
    for wave in &mut after {
        for _ in 0..IDLE_SESSIONS {
            sessions.push(target.session_client(&client).await?);
        }
        tokio::time::sleep(IDLE_WAIT).await;
        *wave = target.rss();
    }
    for session in &sessions {
        target.close(&client, session).await?;
    }
    #[expect(clippy::cast_precision_loss, reason = "display figures")]
    let per = |bytes: u64, sessions: usize| bytes as f64 / sessions as f64;
    Ok([
        per(after[0].saturating_sub(baseline), IDLE_SESSIONS),
        per(after[1].saturating_sub(baseline), 2 * IDLE_SESSIONS),
        per(after[1].saturating_sub(after[0]), IDLE_SESSIONS),
    ])
}

/// `STATELESS_CALLS` calls of the sessionless 2026-07-28 era, 16 at a time:
/// RSS before and after.
async fn stateless_churn(target: &Arc<Target>) -> anyhow::Result<(u64, u64, usize)> {
    let client = reqwest::Client::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "dshkit-bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let before = target.rss();
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..CHURN_CONCURRENCY {
        let (target, client, next, failed, meta) = (
            Arc::clone(target),
            client.clone(),
            Arc::clone(&next),
            Arc::clone(&failed),
            meta.clone(),
        );
        workers.spawn(async move {
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= STATELESS_CALLS {
                    return;
                }
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": target.tool, "arguments": target.arguments, "_meta": meta}});
                let mut request = client
                    .post(&target.url)
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream")
                    .header("MCP-Protocol-Version", "2026-07-28")
                    .header("Mcp-Method", "tools/call")
                    .header("Mcp-Name", target.tool)
                    .body(call.to_string());
                if let Some(token) = &target.token {
                    request = request.bearer_auth(token);
                }
                let ok = match request.send().await {
                    Ok(response) => {
                        response.status().is_success()
                            && response.text().await.is_ok_and(|b| b.contains("\"result\""))
                    }
                    Err(_) => false,
                };
                if !ok {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok((before, target.rss(), failed.load(Ordering::Relaxed)))
}

struct Churn {
    baseline: u64,
    peak: u64,
    after: u64,
    failed: usize,
}

/// Opens `CHURN_SESSIONS` sessions and abandons them; RSS after the idle expiry
/// (for a server without one, after the same wait).
async fn churn(target: &Arc<Target>) -> anyhow::Result<Churn> {
    let client = reqwest::Client::new();
    // One session first, so the baseline includes what any first request sets up.
    let first = target.session_client(&client).await?;
    target.close(&client, &first).await?;
    let baseline = target.rss();
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..CHURN_CONCURRENCY {
        let (target, client, next, failed) = (
            Arc::clone(target),
            client.clone(),
            Arc::clone(&next),
            Arc::clone(&failed),
        );
        workers.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < CHURN_SESSIONS {
                if target.open(&client).await.is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    let mut peak = target.rss();
    while !workers.is_empty() {
        tokio::select! {
            _ = workers.join_next() => {}
            () = tokio::time::sleep(Duration::from_millis(100)) => peak = peak.max(target.rss()),
        }
    }
    peak = peak.max(target.rss());
    drop(client);
    // The expiry plus the time to close 5000 sessions, and the allocator's purge delay.
    tokio::time::sleep(Duration::from_secs(SESSION_IDLE_SECS * 3 + 3)).await;
    Ok(Churn {
        baseline,
        peak,
        after: target.rss(),
        failed: failed.load(Ordering::Relaxed),
    })
}

struct Round {
    errors: usize,
    latencies: Vec<Duration>,
    elapsed: Duration,
    rss_after: u64,
}

/// `CLIENTS` clients at once, each opening a session, calling `CALLS_PER_CLIENT`
/// times and closing its session.
async fn load_round(target: &Arc<Target>) -> Round {
    let began = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let target = Arc::clone(target);
        clients.spawn(async move {
            let client = reqwest::Client::new();
            let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT);
            let mut errors = 0;
            let Ok(session) = target.session_client(&client).await else {
                return (CALLS_PER_CLIENT + 1, latencies);
            };
            for id in 1..=CALLS_PER_CLIENT {
                let start = Instant::now();
                match target.call(&client, &session, id).await {
                    Ok(()) => latencies.push(start.elapsed()),
                    Err(_) => errors += 1,
                }
            }
            if target.close(&client, &session).await.is_err() {
                errors += 1;
            }
            (errors, latencies)
        });
    }
    let mut round = Round {
        errors: 0,
        latencies: Vec::new(),
        elapsed: Duration::ZERO,
        rss_after: 0,
    };
    while let Some(joined) = clients.join_next().await {
        let (errors, latencies) = joined.unwrap_or((CALLS_PER_CLIENT + 1, Vec::new()));
        round.errors += errors;
        round.latencies.extend(latencies);
    }
    round.elapsed = began.elapsed();
    // What the closed sessions freed settles first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    round.rss_after = target.rss();
    round
}

struct Slow {
    opened: usize,
    answered_in: Option<Duration>,
    closed_by_server: usize,
    watched: Duration,
}

/// `STALLED` connections that send half a request head; then one normal client.
async fn slow_clients(target: &Arc<Target>) -> anyhow::Result<Slow> {
    let addr = target
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .context("url")?
        .to_owned();
    let mut stalled = Vec::with_capacity(STALLED);
    for _ in 0..STALLED {
        let Ok(mut stream) = tokio::net::TcpStream::connect(&addr).await else {
            continue;
        };
        let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: appl");
        if stream.write_all(head.as_bytes()).await.is_ok() {
            stalled.push(stream);
        }
    }
    let opened = stalled.len();
    let began = Instant::now();
    let client = reqwest::Client::new();
    let answered = async {
        let session = target.session_client(&client).await?;
        target.call(&client, &session, 1).await?;
        target.close(&client, &session).await
    };
    let answered_in = match tokio::time::timeout(Duration::from_secs(30), answered).await {
        Ok(Ok(())) => Some(began.elapsed()),
        _ => None,
    };
    // Watch the stalled connections: a read that ends (EOF or reset) means closed.
    let watched_from = Instant::now();
    let closed = Arc::new(AtomicUsize::new(0));
    let mut watchers = tokio::task::JoinSet::new();
    for mut stream in stalled {
        let closed = Arc::clone(&closed);
        watchers.spawn(async move {
            let mut buf = [0u8; 512];
            let deadline = tokio::time::Instant::now() + STALL_WATCH;
            loop {
                match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
                    Ok(Ok(0) | Err(_)) => {
                        closed.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Ok(Ok(_)) => {} // an error response before the close
                    Err(_) => return,
                }
            }
        });
    }
    while watchers.join_next().await.is_some() {}
    Ok(Slow {
        opened,
        answered_in,
        closed_by_server: closed.load(Ordering::Relaxed),
        watched: watched_from.elapsed(),
    })
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

#[expect(clippy::cast_precision_loss, reason = "display ratios")]
async fn bench(target: Target) -> anyhow::Result<()> {
    let target = Arc::new(target);
    let label = target.label;
    println!("\n== {label}");
    let [first, both, second] = idle_sessions(&target).await?;
    println!(
        "idle: RSS per session left idle {} s: {first:.1} KiB over the first {IDLE_SESSIONS}, {both:.1} KiB over all {}, {second:.1} KiB for each of the second {IDLE_SESSIONS} (goal <= 16 KiB)",
        IDLE_WAIT.as_secs(),
        2 * IDLE_SESSIONS
    );
    let churn = churn(&target).await?;
    println!(
        "churn: {CHURN_SESSIONS} sessions opened and abandoned ({} failed): RSS {} before, {} at peak, {} after {} s ({:.2}x baseline; {:.1} KiB per session at peak)",
        churn.failed,
        mib(churn.baseline),
        mib(churn.peak),
        mib(churn.after),
        SESSION_IDLE_SECS * 3 + 3,
        churn.after as f64 / churn.baseline.max(1) as f64,
        churn.peak.saturating_sub(churn.baseline) as f64 / CHURN_SESSIONS as f64,
    );
    let mut rss_rounds = Vec::new();
    for round in 1..=ROUNDS {
        let mut result = load_round(&target).await;
        let calls = result.latencies.len();
        println!(
            "load round {round}: {CLIENTS} clients x {CALLS_PER_CLIENT} calls: {} errors, p50 {}, p99 {}, {:.0} calls/s, RSS after {}",
            result.errors,
            millis(percentile(&mut result.latencies, 0.5)),
            millis(percentile(&mut result.latencies, 0.99)),
            calls as f64 / result.elapsed.as_secs_f64(),
            mib(result.rss_after),
        );
        rss_rounds.push(result.rss_after);
    }
    let (low, high) = (
        *rss_rounds.iter().min().unwrap_or(&0),
        *rss_rounds.iter().max().unwrap_or(&0),
    );
    println!(
        "load: RSS across rounds {} .. {} ({:+.1} % spread; goal within ±10 %)",
        mib(low),
        mib(high),
        (high as f64 / low.max(1) as f64 - 1.0) * 100.0
    );
    let slow = slow_clients(&target).await?;
    println!(
        "slow clients: {} of {STALLED} stalled connections opened; a normal client answered {}; {} of them closed by the server within {:.1} s",
        slow.opened,
        slow.answered_in
            .map_or("never (30 s)".into(), |d| format!("in {}", millis(d))),
        slow.closed_by_server,
        slow.watched.as_secs_f64() + slow.answered_in.unwrap_or_default().as_secs_f64(),
    );
    if label == "dshkit" {
        let (before, after, failed) = stateless_churn(&target).await?;
        println!(
            "stateless churn (2026-07-28): {STATELESS_CALLS} sessionless calls ({failed} failed): RSS {} before, {} after",
            mib(before),
            mib(after)
        );
    }
    println!("RSS at the end: {}", mib(target.rss()));
    Ok(())
}

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, dshkit) = crate::bench::prepare()?;
    let everything = peers
        .mcp_modules()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let home = std::env::temp_dir().join(format!("dshkit-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    println!(
        "MCP over Streamable HTTP under load: churn of {CHURN_SESSIONS} abandoned sessions (dshkit with --session-idle {SESSION_IDLE_SECS}), {ROUNDS} rounds of {CLIENTS} clients x {CALLS_PER_CLIENT} calls, {STALLED} stalled connections; one Rust client"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        bench(start_dshkit(&dshkit, &home)?).await?;
        bench(start_everything(&peers.node(), &everything)?).await
    })?;
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}
