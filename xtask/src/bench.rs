//! `cargo xtask bench mcp`: `tools/call` round trips against dshkit and against
//! `@modelcontextprotocol/server-everything` doing an equivalent trivial call, over
//! stdio and over Streamable HTTP, with the same raw JSON-RPC client, in one run:
//! lines over pipes, and a blocking HTTP/1.1 client over one kept-alive connection
//! ([`crate::raw_http`]). Over HTTP both servers are timed in the 2025-11-25
//! revision (a session), and dshkit also in the stateless 2026-07-28 one, each
//! placement of client and server on CPUs on its own ([`Placement`]), each with
//! its floor ([`crate::bare_http`]).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::raw_http::RawHttp;
use crate::setup::{self, Peers};
use crate::{root, run as run_command};

/// The "tool" of the floor row: `cat` echoes each request line back unchanged.
const FLOOR_TOOL: &str = "(echo-line)";

/// Calls timed per server and transport.
const CALLS: usize = 2000;
/// Calls made first and not timed (JIT warm-up for Node, page faults for both).
const WARMUP: usize = 200;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    match args.first().map(String::as_str) {
        Some("mcp") => mcp(),
        Some("browser") => crate::bench_browser::run(),
        Some("browser-start") => crate::bench_browser::start(),
        Some("scale") => crate::bench_scale::run(),
        Some("check") => crate::bench_check::run(&args[1..]),
        Some("verify") => crate::bench_verify::verify(),
        Some("detect") => crate::bench_verify::detect(),
        Some("echo") => crate::bench_echo::run(),
        Some("load") => crate::bench_load::run(),
        Some("devtools") => crate::bench_devtools::run(),
        Some("redact") => crate::bench_echo::redaction(),
        Some("dsh-plugin") => crate::bench_dsh::run(),
        Some("parallel") => crate::bench_parallel::run(&args[1..]),
        Some("curves") => crate::bench_curves::run(&args[1..]),
        // In a release build of xtask (started by `redact`): the redactor in process.
        Some("redact-in-process") => crate::bench_echo::redaction_in_process(args.get(1).map(String::as_str)),
        _ => bail!(
            "usage: cargo xtask bench <mcp | browser | browser-start | scale | check | verify | detect | echo | redact | dsh-plugin | load | devtools | parallel [LEVELS] | curves [CURVE]>"
        ),
    }
}

struct Sample {
    label: String,
    latencies: Vec<Duration>,
    rss_kib: Option<u64>,
    /// Server CPU time (user + system) per timed call.
    cpu_per_call: Option<Duration>,
}

impl Sample {
    fn percentile(&self, p: f64) -> Duration {
        percentile(&mut self.latencies.clone(), p)
    }
}

/// The one Chromium binary every tool of the run uses: the one dshkit itself
/// finds (`DSHKIT_CHROMIUM`, else the first install it knows), else Debian's
/// launcher, which the peers' own error then names.
pub(crate) fn chromium() -> std::path::PathBuf {
    match dshkit_env::locate::chromium(&dshkit_env::Environment::from_process()) {
        dshkit_env::locate::Lookup::Found(found) => found.path,
        _ => "/usr/bin/chromium".into(),
    }
}

/// Installs the peers and builds dshkit in release mode; returns the peers and
/// the binary. Every benchmark starts here.
pub(crate) fn prepare() -> anyhow::Result<(Peers, std::path::PathBuf)> {
    let peers = setup::all()?;
    run_command(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--quiet", "--package", "dshkit"])
            .current_dir(root()),
    )?;
    Ok((peers, root().join("target/release/dshkit")))
}

fn mcp() -> anyhow::Result<()> {
    let (peers, dshkit) = prepare()?;
    let everything = peers
        .mcp_modules()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let home = std::env::temp_dir().join(format!("dshkit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;

    println!(
        "MCP tools/call round trips: {CALLS} timed calls after {WARMUP} warm-up, one raw JSON-RPC client for all"
    );
    println!(
        "dshkit calls dshkit_info; server-everything calls echo {{message: \"ping\"}}; the floors answer at once\n"
    );
    let mut runs = Vec::new();
    for placement in Placement::available() {
        // The stdio floor: a process that echoes each line back (`cat`); no
        // server can be faster over these pipes. dshkit runs without the preview
        // browser it keeps ready by default: its start would share the server's
        // CPU with the calls timed.
        let stdio = [
            stdio_sample(
                "pipe floor (cat)",
                &mut Command::new("cat"),
                FLOOR_TOOL,
                &json!({}),
                placement,
            )?,
            stdio_sample(
                "dshkit",
                Command::new(&dshkit)
                    .args(["mcp", "--stdio", "--no-prewarm"])
                    .env("HOME", &home),
                "dshkit_info",
                &json!({}),
                placement,
            )?,
            stdio_sample(
                "server-everything",
                Command::new(peers.node()).arg(&everything).arg("stdio"),
                "echo",
                &json!({"message": "ping"}),
                placement,
            )?,
        ];
        let http = [
            http_floor(placement)?,
            http_dshkit(&dshkit, &home, false, placement)?,
            http_dshkit(&dshkit, &home, true, placement)?,
            http_everything(&peers, &everything, placement)?,
        ];
        runs.push((placement, stdio, http));
    }
    let _ = std::fs::remove_dir_all(&home);

    println!(
        "{:<6} {:<18} {:>10} {:>10} {:>12} {:>10}",
        "", "server", "p50", "p99", "CPU/call", "RSS"
    );
    for (placement, stdio, http) in &runs {
        println!("{}:", placement.describe());
        for sample in stdio {
            print_row("stdio", sample);
        }
        for sample in http {
            print_row("http", sample);
        }
    }
    for (placement, stdio, http) in &runs {
        println!();
        print_stdio_summary(*placement, stdio);
        print_http_summary(*placement, http);
    }
    Ok(())
}

/// dshkit against its goals, the floor and server-everything over stdio.
fn print_stdio_summary(placement: Placement, [floor, ours, peer]: &[Sample; 3]) {
    let name = placement.name();
    let ratio = |p: f64| peer.percentile(p).as_secs_f64() / ours.percentile(p).as_secs_f64();
    println!(
        "stdio {name}: dshkit is {:.1}x faster at p50 and {:.1}x at p99 than server-everything (goal: >= 5x per call)",
        ratio(0.5),
        ratio(0.99)
    );
    if let (Some(a), Some(b)) = (ours.cpu_per_call, peer.cpu_per_call) {
        println!(
            "stdio {name}: dshkit uses {:.1}x less server CPU per call",
            b.as_secs_f64() / a.as_secs_f64().max(1e-9)
        );
    }
    let floor_p50 = floor.percentile(0.5).as_secs_f64();
    let added = |s: &Sample| (s.percentile(0.5).as_secs_f64() - floor_p50).max(1e-7);
    println!(
        "stdio {name}: above the {} pipe floor, dshkit adds {} (goal: <= 20 µs) and server-everything {} at p50 ({:.1}x)",
        micros(floor.percentile(0.5)),
        micros(Duration::from_secs_f64(added(ours))),
        micros(Duration::from_secs_f64(added(peer))),
        added(peer) / added(ours)
    );
}

/// dshkit against its goals, the floor and server-everything over HTTP.
fn print_http_summary(placement: Placement, [floor, ours, stateless, peer]: &[Sample; 4]) {
    let p50 = |s: &Sample| s.percentile(0.5).as_secs_f64();
    let ratio = |p: f64| peer.percentile(p).as_secs_f64() / ours.percentile(p).as_secs_f64();
    let above = |s: &Sample| micros(Duration::from_secs_f64((p50(s) - p50(floor)).max(0.0)));
    let name = placement.name();
    println!(
        "http {name}: dshkit {} at p50 (goal: <= 150 µs), {:.1}x faster at p50 and {:.1}x at p99 than server-everything (goal: >= 5x per call)",
        micros(ours.percentile(0.5)),
        ratio(0.5),
        ratio(0.99)
    );
    println!(
        "http {name}: above the {} floor, dshkit adds {} ({SESSION_VERSION}) and {} ({STATELESS_VERSION}), server-everything {}",
        micros(floor.percentile(0.5)),
        above(ours),
        above(stateless),
        above(peer)
    );
    if let (Some(a), Some(b)) = (ours.cpu_per_call, peer.cpu_per_call) {
        println!(
            "http {name}: dshkit uses {:.1}x less server CPU per call; over {STATELESS_VERSION} (no session) it is {:.1}x faster at p50 than server-everything over {SESSION_VERSION}",
            b.as_secs_f64() / a.as_secs_f64().max(1e-9),
            p50(peer) / p50(stateless)
        );
    }
}

fn print_row(transport: &str, sample: &Sample) {
    println!(
        "{transport:<6} {:<18} {:>10} {:>10} {:>12} {:>10}",
        sample.label,
        micros(sample.percentile(0.5)),
        micros(sample.percentile(0.99)),
        sample.cpu_per_call.map_or("?".into(), micros),
        sample.rss_kib.map_or("?".into(), mib),
    );
}

/// Where an HTTP sample's client and server run. Left to the scheduler, one
/// exchange at a time over loopback lands both on one CPU in some runs and on
/// two in others, and on a VM the two differ by about 2x (waking an idle CPU
/// costs tens of µs each way). So each placement is timed on its own, with its
/// floor; `Scheduler` only where CPU affinity cannot be set.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "CPU affinity is set on Linux only")
)]
enum Placement {
    /// The client on one CPU, the server on another: a host and its server on
    /// a machine with idle CPUs.
    Apart {
        client: usize,
        server: usize,
    },
    /// Both on one CPU: a host and its server on a busy machine.
    Together {
        cpu: usize,
    },
    Scheduler,
}

impl Placement {
    /// Apart and together on the first two CPUs this process may use (together
    /// only, with one).
    #[cfg(target_os = "linux")]
    fn available() -> Vec<Self> {
        let Ok(allowed) = rustix::thread::sched_getaffinity(None) else {
            return vec![Self::Scheduler];
        };
        let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&cpu| allowed.is_set(cpu))
            .take(2)
            .collect();
        match cpus[..] {
            [client, server] => vec![Self::Apart { client, server }, Self::Together { cpu: client }],
            [cpu] => vec![Self::Together { cpu }],
            _ => vec![Self::Scheduler],
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn available() -> Vec<Self> {
        vec![Self::Scheduler]
    }

    fn name(self) -> &'static str {
        match self {
            Self::Apart { .. } => "apart",
            Self::Together { .. } => "together",
            Self::Scheduler => "unpinned",
        }
    }

    fn describe(self) -> String {
        match self {
            Self::Apart { client, server } => {
                format!("apart: the client on CPU {client}, the server on CPU {server}")
            }
            Self::Together { cpu } => format!("together: the client and the server on CPU {cpu}"),
            Self::Scheduler => "unpinned: placed by the scheduler".into(),
        }
    }

    /// Starts a server with `start`, where this placement puts servers (a
    /// process inherits the CPUs of the thread that starts it).
    fn start_server<T>(self, start: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        match self {
            Self::Apart { server: cpu, .. } | Self::Together { cpu } => on_cpu(cpu, start),
            Self::Scheduler => start(),
        }
    }

    /// Runs the client's `calls` where this placement puts the client.
    fn run_client<T>(self, calls: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        match self {
            Self::Apart { client: cpu, .. } | Self::Together { cpu } => on_cpu(cpu, calls),
            Self::Scheduler => calls(),
        }
    }
}

/// The CPU this thread runs on now; `None` where CPU affinity is not available.
#[cfg(target_os = "linux")]
pub(crate) fn current_cpu() -> Option<usize> {
    rustix::thread::sched_getaffinity(None)
        .ok()
        .map(|_| rustix::thread::sched_getcpu())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn current_cpu() -> Option<usize> {
    None
}

/// Runs `f` with this thread, and every process it starts, held to `cpu`, then
/// gives the thread back the CPUs it had.
#[cfg(target_os = "linux")]
pub(crate) fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let before = sched_getaffinity(None).context("the thread's CPUs")?;
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).with_context(|| format!("hold the thread to CPU {cpu}"))?;
    let result = f();
    sched_setaffinity(None, &before).context("give the thread its CPUs back")?;
    result
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn on_cpu<T>(_cpu: usize, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    f()
}

/// The `p` quantile (0..=1) of `values`, sorting them; zero when empty.
pub(crate) fn percentile(values: &mut [Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a list"
    )]
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index]
}

#[expect(clippy::cast_precision_loss, reason = "a display approximation")]
pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A count as a float for ratios and pictures (exact below 2^32; the counts
/// and KiB measured here are far below it).
pub(crate) fn float(n: u64) -> f64 {
    f64::from(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Runs `body` in a fresh scratch directory `dshkit-bench-NAME-PID` under the
/// system's temp dir, removed afterwards whatever `body` returned.
pub(crate) fn in_scratch_dir<T>(
    name: &str,
    body: impl FnOnce(&std::path::Path) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let dir = std::env::temp_dir().join(format!("dshkit-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let outcome = body(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

pub(crate) fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// `a - b` as signed microseconds (`+12.3 µs`, `-4.5 µs`).
pub(crate) fn signed_micros(a: Duration, b: Duration) -> String {
    format!("{:+.1} µs", (a.as_secs_f64() - b.as_secs_f64()) * 1e6)
}

/// User + system CPU time of a process so far, from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = 100; // USER_HZ on Linux
    Some(Duration::from_micros(ticks * 1_000_000 / hz))
}

fn per_call(before: Option<Duration>, after: Option<Duration>) -> Option<Duration> {
    Some(after?.checked_sub(before?)? / u32::try_from(CALLS).ok()?)
}

pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

pub(crate) struct StdioClient {
    pub(crate) child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl StdioClient {
    /// Spawns `command` with piped stdio, without a handshake.
    fn spawn(command: &mut Command) -> anyhow::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        })
    }

    /// Ends the session as a host does (stdin closed) and waits until the server
    /// has exited, killing it after 10 s: the next measurement starts on a quiet
    /// machine, not beside this server's shutdown.
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        let Self { mut child, stdin, .. } = self;
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                child.kill()?;
                child.wait()?;
                bail!("the server did not exit within 10 s of its stdin closing");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Spawns `command` and completes the MCP handshake.
    pub(crate) fn start(command: &mut Command) -> anyhow::Result<Self> {
        let mut client = Self::spawn(command)?;
        client.request(&initialize(0))?;
        client.notify(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))?;
        Ok(client)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Calls a tool; fails on a JSON-RPC error or an `isError` result.
    pub(crate) fn call_tool(&mut self, id: usize, tool: &str, arguments: &Value) -> anyhow::Result<Value> {
        let reply = self.request(&call(id, tool, arguments))?;
        check(&reply).with_context(|| format!("{tool} {arguments}"))?;
        Ok(reply["result"].clone())
    }

    pub(crate) fn request(&mut self, message: &Value) -> anyhow::Result<Value> {
        send_line(&mut self.stdin, message)?;
        self.reply_to(&message["id"])
    }

    /// Writes `line` and reads lines until one names `marker` (`"id":N`, not
    /// followed by a digit), left in `self.line`: nothing is formatted or parsed
    /// between the write and the reply's last byte.
    fn exchange_line(&mut self, line: &str, marker: &str) -> anyhow::Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                bail!("server closed stdout");
            }
            let names = |(at, _): (usize, &str)| {
                !self.line[at + marker.len()..].starts_with(|c: char| c.is_ascii_digit())
            };
            if self.line.match_indices(marker).any(names) {
                return Ok(());
            }
        }
    }

    /// Reads lines until the reply to request `id`.
    pub(crate) fn reply_to(&mut self, id: &Value) -> anyhow::Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                bail!("server closed stdout");
            }
            let reply: Value = serde_json::from_str(&self.line)?;
            if reply["id"] == *id {
                return Ok(reply);
            }
        }
    }

    pub(crate) fn notify(&mut self, message: &Value) -> anyhow::Result<()> {
        send_line(&mut self.stdin, message)
    }
}

/// Writes `message` and its newline in one write, as MCP clients do: formatting
/// it straight into the unbuffered pipe would make one write per JSON token, and
/// a server (or proxy) would be timed waking up for each.
pub(crate) fn send_line(to: &mut impl Write, message: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    to.write_all(line.as_bytes())?;
    Ok(to.flush()?)
}

pub(crate) fn initialize(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"dshkit-bench","version":"1"}}})
}

pub(crate) fn call(id: usize, tool: &str, arguments: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}})
}

fn check(reply: &Value) -> anyhow::Result<()> {
    if reply["result"]["isError"] == true || reply.get("error").is_some() {
        bail!("call failed: {reply}");
    }
    Ok(())
}

fn stdio_sample(
    label: &str,
    command: &mut Command,
    tool: &str,
    arguments: &Value,
    placement: Placement,
) -> anyhow::Result<Sample> {
    // The floor (`cat`) speaks no MCP: it gets no handshake.
    let client = placement.start_server(|| {
        if tool == FLOOR_TOOL {
            StdioClient::spawn(command)
        } else {
            StdioClient::start(command)
        }
    })?;
    placement.run_client(|| stdio_calls(label, client, tool, arguments))
}

/// Times `tool` over `client`'s pipes, then stops the server. The clock runs from the
/// request line's write to the reply line's last byte; the reply is parsed after.
fn stdio_calls(
    label: &str,
    mut client: StdioClient,
    tool: &str,
    arguments: &Value,
) -> anyhow::Result<Sample> {
    let pid = client.child.id();
    let mut latencies = Vec::with_capacity(CALLS);
    let mut cpu_before = None;
    for i in 1..=WARMUP + CALLS {
        if i == WARMUP + 1 {
            cpu_before = cpu_time(pid);
        }
        let message = call(i, tool, arguments);
        let line = format!("{message}\n");
        let marker = format!("\"id\":{i}");
        let start = Instant::now();
        client.exchange_line(&line, &marker)?;
        let elapsed = start.elapsed();
        let reply: Value = serde_json::from_str(&client.line)?;
        if reply["id"] != message["id"] {
            bail!("a line naming id {i} that is not its reply: {reply}");
        }
        if tool != FLOOR_TOOL {
            check(&reply)?;
        }
        if i > WARMUP {
            latencies.push(elapsed);
        }
    }
    let cpu_per_call = per_call(cpu_before, cpu_time(pid));
    let rss_kib = rss_kib(pid);
    let _ = client.child.kill();
    let _ = client.child.wait();
    Ok(Sample {
        label: label.into(),
        latencies,
        rss_kib,
        cpu_per_call,
    })
}

pub(crate) struct HttpClient {
    pub(crate) client: reqwest::Client,
    pub(crate) url: String,
    pub(crate) token: Option<String>,
    pub(crate) session: Option<String>,
}

impl HttpClient {
    pub(crate) async fn post(&mut self, message: &Value) -> anyhow::Result<Option<Value>> {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .body(message.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let response = request.send().await?;
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str()?.to_owned());
        }
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("HTTP {status}: {body}");
        }
        if message.get("id").is_none() {
            return Ok(None);
        }
        let reply = serde_json::from_str(&body).ok().or_else(|| {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v["id"] == message["id"])
        });
        reply.map(Some).with_context(|| format!("no reply in: {body}"))
    }
}

/// An MCP client over [`RawHttp`]: the 2025-11-25 revision with its session, or the
/// stateless 2026-07-28 one, where every request names its version and method in
/// headers and `_meta`.
struct RawMcp {
    http: RawHttp,
    token: Option<String>,
    session: Option<String>,
    stateless: bool,
}

/// The revision with sessions, and the one without.
const SESSION_VERSION: &str = "2025-11-25";
const STATELESS_VERSION: &str = "2026-07-28";

impl RawMcp {
    /// Sends `message` and returns the reply's body, failing on an HTTP error.
    fn send(&mut self, message: &Value) -> anyhow::Result<Vec<u8>> {
        self.prepare(message)?;
        self.exchange()
    }

    /// Formats `message` as the next request.
    fn prepare(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut message = message.clone();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let name = message["params"]["name"].as_str().map(str::to_owned);
        let authorization = self.token.as_ref().map(|token| format!("Bearer {token}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(authorization) = &authorization {
            headers.push(("Authorization", authorization));
        }
        if self.stateless {
            message["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "dshkit-bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            });
            headers.push(("MCP-Protocol-Version", STATELESS_VERSION));
            headers.push(("Mcp-Method", &method));
            if let Some(name) = &name {
                headers.push(("Mcp-Name", name));
            }
        } else {
            headers.push(("MCP-Protocol-Version", SESSION_VERSION));
            if let Some(session) = &self.session {
                headers.push(("Mcp-Session-Id", session));
            }
        }
        self.http.prepare(&headers, message.to_string().as_bytes())
    }

    /// Sends the prepared request; returns the reply's body, failing on an HTTP error.
    fn exchange(&mut self) -> anyhow::Result<Vec<u8>> {
        let reply = self.http.exchange()?;
        if let Some(session) = reply.session {
            self.session = Some(session);
        }
        if !(200..300).contains(&reply.status) {
            bail!("HTTP {}: {}", reply.status, String::from_utf8_lossy(&reply.body));
        }
        Ok(reply.body)
    }
}

/// The reply to `request` in a JSON or SSE body.
fn reply_in(body: &[u8], request: &Value) -> anyhow::Result<Value> {
    let body = std::str::from_utf8(body)?;
    serde_json::from_str(body)
        .ok()
        .or_else(|| {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v["id"] == request["id"])
        })
        .with_context(|| format!("no reply in: {body}"))
}

/// Times `tool` over HTTP. The clock runs from the request's write to the last
/// byte of its answer; the reply is read and checked after it stops.
fn http_sample(
    label: &str,
    mut client: RawMcp,
    tool: &str,
    arguments: &Value,
    pid: u32,
) -> anyhow::Result<Sample> {
    if client.stateless {
        let discover = json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}});
        reply_in(&client.send(&discover)?, &discover)?;
    } else {
        let init = initialize(0);
        reply_in(&client.send(&init)?, &init)?;
        client.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))?;
    }
    let mut latencies = Vec::with_capacity(CALLS);
    let mut cpu_before = None;
    for i in 1..=WARMUP + CALLS {
        if i == WARMUP + 1 {
            cpu_before = cpu_time(pid);
        }
        let message = call(i, tool, arguments);
        client.prepare(&message)?;
        let start = Instant::now();
        let body = client.exchange()?;
        let elapsed = start.elapsed();
        check(&reply_in(&body, &message)?)?;
        if i > WARMUP {
            latencies.push(elapsed);
        }
    }
    let cpu_per_call = per_call(cpu_before, cpu_time(pid));
    Ok(Sample {
        label: label.into(),
        latencies,
        rss_kib: rss_kib(pid),
        cpu_per_call,
    })
}

pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `dshkit mcp --http` with `extra` flags, its token file in `home`: the process,
/// its endpoint and its token, once it is ready.
pub(crate) fn spawn_dshkit_http(
    dshkit: &Path,
    home: &Path,
    extra: &[&str],
) -> anyhow::Result<(Killed, String, String)> {
    spawn_dshkit_http_with(dshkit, home, extra, &[])
}

/// [`spawn_dshkit_http`] with `env` set for the server too.
pub(crate) fn spawn_dshkit_http_with(
    dshkit: &Path,
    home: &Path,
    extra: &[&str],
    env: &[(&str, std::ffi::OsString)],
) -> anyhow::Result<(Killed, String, String)> {
    let token_file = home.join("token");
    let mut child = Killed(
        Command::new(dshkit)
            .args(["mcp", "--http"])
            .args(extra)
            .arg("--token-file")
            .arg(&token_file)
            .env("HOME", home)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().context("stdout")?).read_line(&mut line)?;
    let url = line
        .trim()
        .strip_prefix("dshkit mcp: ")
        .context("ready line")?
        .to_owned();
    let token = std::fs::read_to_string(&token_file)?.trim().to_owned();
    Ok((child, url, token))
}

/// server-everything over Streamable HTTP on a free port: the process and its
/// endpoint, once it listens.
pub(crate) fn spawn_everything_http(node: &Path, everything: &Path) -> anyhow::Result<(Killed, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Killed(
        Command::new(node)
            .arg(everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?,
    );
    let mut stderr = BufReader::new(child.0.stderr.take().context("stderr")?);
    let mut line = String::new();
    while !line.contains("listening on port") {
        line.clear();
        if stderr.read_line(&mut line)? == 0 {
            bail!("server-everything exited before listening");
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

/// The floor: [`crate::bare_http`] in its own process, timed as the servers are.
fn http_floor(placement: Placement) -> anyhow::Result<Sample> {
    let mut child = placement.start_server(|| {
        Ok(Killed(
            Command::new(std::env::current_exe()?)
                .arg("bare-http")
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()?,
        ))
    })?;
    let mut url = String::new();
    BufReader::new(child.0.stdout.take().context("stdout")?).read_line(&mut url)?;
    let client = RawMcp {
        http: RawHttp::connect(url.trim())?,
        token: None,
        session: None,
        stateless: false,
    };
    placement.run_client(|| http_sample("floor (bare HTTP)", client, "echo", &json!({}), child.0.id()))
}

/// dshkit over HTTP. Without the preview browser it keeps ready by default: its
/// start would share the server's CPU with the calls timed.
fn http_dshkit(dshkit: &Path, home: &Path, stateless: bool, placement: Placement) -> anyhow::Result<Sample> {
    let (child, url, token) =
        placement.start_server(|| spawn_dshkit_http(dshkit, home, &["--no-prewarm"]))?;
    let client = RawMcp {
        http: RawHttp::connect(&url)?,
        token: Some(token),
        session: None,
        stateless,
    };
    let label = if stateless {
        "dshkit (2026-07-28)"
    } else {
        "dshkit"
    };
    placement.run_client(|| http_sample(label, client, "dshkit_info", &json!({}), child.0.id()))
}

fn http_everything(peers: &Peers, everything: &Path, placement: Placement) -> anyhow::Result<Sample> {
    let (child, url) = placement.start_server(|| spawn_everything_http(&peers.node(), everything))?;
    let client = RawMcp {
        http: RawHttp::connect(&url)?,
        token: None,
        session: None,
        stateless: false,
    };
    placement.run_client(|| {
        http_sample(
            "server-everything",
            client,
            "echo",
            &json!({"message": "ping"}),
            child.0.id(),
        )
    })
}
