//! `cargo xtask bench devtools`, on the real `@deepseek-ai/cordis`:
//! - the collector's cost per dispatch (1M emits of an event with one listener),
//!   against the same runtime without a collector, in one Node process, for one
//!   event over and over and for two in turn;
//! - wake latency: from an emit to the answer of a `cordis_wait_for_runtime_change`
//!   parked on it (through `dshkit mcp`), beside the floor of a line on a pipe;
//! - the core's memory across 1M dispatches (`dshkit mcp`'s RSS);
//! - a snapshot of a booted DSH web profile with the collector.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench::{Killed, StdioClient, call, mib, percentile, rss_kib};

/// Wakes timed per side.
const WAKES: usize = 200;
/// Dispatches per burst of the memory soak, and bursts.
const BURST: usize = 100_000;
const BURSTS: usize = 10;
/// Snapshots timed of the DSH web profile.
const SNAPSHOTS: usize = 30;

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, dshkit) = crate::bench::prepare()?;
    emit_cost(&peers)?;
    wake_and_memory(&peers, &dshkit)?;
    dsh_snapshot(&peers, &dshkit)
}

fn emit_cost(peers: &crate::setup::Peers) -> anyhow::Result<()> {
    for pattern in ["same", "mixed"] {
        emit_cost_of(peers, pattern)?;
    }
    Ok(())
}

/// One run of `harness/devtools-bench/emit.mjs`: `same` emits one event over and
/// over (a burst the collector sends as one fact), `mixed` two in turn (a fact
/// per dispatch).
fn emit_cost_of(peers: &crate::setup::Peers, pattern: &str) -> anyhow::Result<()> {
    let root = crate::root();
    let cordis = root.join("target/peers/dsh-testbed/node_modules/@deepseek-ai/cordis/lib/index.js");
    let registry = std::env::temp_dir().join(format!("dshkit-bench-devtools-{}", std::process::id()));
    let output = Command::new(peers.node())
        .arg(root.join("harness/devtools-bench/emit.mjs"))
        .arg(&cordis)
        .arg(root.join("packages/dsh-plugin/devtools.js"))
        .arg(&registry)
        .env("EMIT_PATTERN", pattern)
        .output()
        .context("running the Node half")?;
    let _ = std::fs::remove_dir_all(&registry);
    anyhow::ensure!(
        output.status.success(),
        "the Node half failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let ns = |key: &str| result[key].as_f64().unwrap_or(f64::NAN);
    println!(
        "Cordis emit with one listener, 1M emits ({pattern}: {}), medians over rounds of 5 000 per mode, modes interleaved:",
        if pattern == "same" {
            "one event over and over"
        } else {
            "two events in turn"
        }
    );
    println!("  no collector:                 {:>9.0} ns per emit", ns("none"));
    println!(
        "  collector, no core attached:  {:>9.0} ns per emit ({:+.0} ns added, paired median)",
        ns("idle"),
        ns("addedIdle")
    );
    println!(
        "  collector, one core attached: {:>9.0} ns per emit ({:+.0} ns added, paired median; {} dispatches seen by the core, {} facts dropped, {} bytes)",
        ns("attached"),
        ns("addedAttached"),
        result["attachedDispatchesSeen"],
        result["attachedFactsDropped"],
        result["attachedBytes"]
    );
    println!(
        "  for scale, a no-op internal/dispatch listener: {:>9.0} ns per emit ({:+.0} ns added)",
        ns("floor"),
        ns("addedFloor")
    );
    println!(
        "attached, the collector adds {:+.0} ns per dispatch, {:+.0} ns beyond what Cordis charges any internal/dispatch listener (goal: under 1000 ns beyond it at p50); an empty loop iteration took {:.1} ns",
        ns("addedAttached"),
        ns("addedAttached") - ns("addedFloor"),
        ns("loopNs")
    );
    Ok(())
}

/// The wake runtime (`harness/devtools-bench/wake.mjs`) and its stdio.
struct WakeRuntime {
    _child: Killed,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl WakeRuntime {
    fn say(&mut self, line: &str) -> anyhow::Result<String> {
        crate::bench::send_line(&mut self.stdin, line)?;
        let mut answer = String::new();
        anyhow::ensure!(self.stdout.read_line(&mut answer)? > 0, "the runtime exited");
        Ok(answer.trim().to_owned())
    }
}

fn epoch_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn devtools_mcp(dshkit: &std::path::Path, registry: &std::path::Path) -> anyhow::Result<StdioClient> {
    StdioClient::start(
        Command::new(dshkit)
            .args(["mcp", "--tools", "devtools", "--devtools-dir"])
            .arg(registry),
    )
}

fn wake_and_memory(peers: &crate::setup::Peers, dshkit: &std::path::Path) -> anyhow::Result<()> {
    let root = crate::root();
    let registry = std::env::temp_dir().join(format!("dshkit-bench-wake-{}", std::process::id()));
    let mut child = Command::new(peers.node())
        .arg(root.join("harness/devtools-bench/wake.mjs"))
        .arg(root.join("target/peers/dsh-testbed/node_modules/@deepseek-ai/cordis/lib/index.js"))
        .arg(root.join("packages/dsh-plugin/devtools.js"))
        .arg(&registry)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the wake runtime")?;
    let mut runtime = WakeRuntime {
        stdin: child.stdin.take().context("stdin")?,
        stdout: BufReader::new(child.stdout.take().context("stdout")?),
        _child: Killed(child),
    };
    let mut ready = String::new();
    runtime.stdout.read_line(&mut ready)?;
    anyhow::ensure!(ready.starts_with("ready "), "the wake runtime said {ready:?}");

    let mut mcp = devtools_mcp(dshkit, &registry)?;
    let attached = mcp.call_tool(1, "cordis_attach_debug_session", &json!({}))?;
    let session = attached["structuredContent"]["session"].clone();

    // The floor: the emit's own line on a pipe.
    let mut floor = Vec::with_capacity(WAKES);
    for _ in 0..WAKES {
        let line = runtime.say("wake")?;
        let read = epoch_micros();
        let emitted: u64 = line.strip_prefix("woke ").context("woke line")?.parse()?;
        floor.push(Duration::from_micros(read.saturating_sub(emitted)));
    }
    // Catch the session up past those wakes.
    mcp.call_tool(
        2,
        "cordis_wait_for_runtime_change",
        &json!({"session": session, "timeoutMs": 200}),
    )?;
    while mcp.call_tool(
        3,
        "cordis_wait_for_runtime_change",
        &json!({"session": session, "timeoutMs": 100}),
    )?["structuredContent"]["outcome"]
        == "found"
    {}

    let mut wakes = Vec::with_capacity(WAKES);
    for i in 0..WAKES {
        let id = json!(1000 + i);
        mcp.notify(&call(
            1000 + i,
            "cordis_wait_for_runtime_change",
            &json!({"session": session, "event": "bench/wake", "timeoutMs": 10_000}),
        ))?;
        // Give the wait time to park (a bench pause, not a synchronisation).
        std::thread::sleep(Duration::from_millis(10));
        let line = runtime.say("wake")?;
        let emitted: u64 = line.strip_prefix("woke ").context("woke line")?.parse()?;
        let reply = mcp.reply_to(&id)?;
        let answered = epoch_micros();
        anyhow::ensure!(
            reply["result"]["structuredContent"]["outcome"] == "found",
            "the wait: {reply}"
        );
        wakes.push(Duration::from_micros(answered.saturating_sub(emitted)));
    }
    let (floor50, wake50, wake95) = (
        percentile(&mut floor, 0.5),
        percentile(&mut wakes, 0.5),
        percentile(&mut wakes, 0.95),
    );
    println!("wake latency, emit to the answered wait through dshkit mcp ({WAKES} wakes):");
    println!(
        "  p50 {:.2} ms, p95 {:.2} ms (goal: under 5 ms p50); floor, a line on a pipe: p50 {:.2} ms; ratio {:.1}x",
        wake50.as_secs_f64() * 1e3,
        wake95.as_secs_f64() * 1e3,
        floor50.as_secs_f64() * 1e3,
        wake50.as_secs_f64() / floor50.as_secs_f64().max(1e-9)
    );

    core_memory(&mut mcp, &mut runtime, &session)?;
    drop(mcp);
    drop(runtime);
    let _ = std::fs::remove_dir_all(&registry);
    Ok(())
}

/// The core's RSS across `BURSTS` bursts of `BURST` dispatches.
fn core_memory(mcp: &mut StdioClient, runtime: &mut WakeRuntime, session: &Value) -> anyhow::Result<()> {
    // Memory: the core's RSS across BURSTS bursts of BURST dispatches.
    let pid = mcp.pid();
    let mut rss = Vec::new();
    let mut call_id = 5000;
    let started = Instant::now();
    for burst in 1..=BURSTS {
        let said = runtime.say(&format!("burst {BURST} {burst}"))?;
        anyhow::ensure!(said == format!("burst {burst} done"), "{said}");
        // Read on until this burst's marker (its argument count is its number).
        loop {
            call_id += 1;
            let seen = mcp.call_tool(
                call_id,
                "cordis_wait_for_runtime_change",
                &json!({"session": session, "event": "bench/marker", "timeoutMs": 30_000}),
            )?;
            let records = seen["structuredContent"]["records"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if records.iter().any(|r| r["argc"] == burst) {
                break;
            }
            anyhow::ensure!(
                seen["structuredContent"]["outcome"] != "timeout",
                "marker {burst} never arrived: {seen}"
            );
        }
        rss.push(rss_kib(pid).unwrap_or(0));
    }
    let (warm, last) = (rss[0], *rss.last().unwrap_or(&0));
    #[expect(clippy::cast_precision_loss, reason = "a display ratio")]
    let change = (last as f64 - warm as f64) / (warm as f64).max(1.0) * 100.0;
    println!(
        "core memory across {}M dispatches ({:.1} s): RSS {} after the first 100k, {} after the last ({change:+.1} %; goal ±5 %); per burst: {}",
        BURST * BURSTS / 1_000_000,
        started.elapsed().as_secs_f64(),
        mib(warm),
        mib(last),
        rss.iter().map(|k| mib(*k)).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

fn dsh_snapshot(peers: &crate::setup::Peers, dshkit: &std::path::Path) -> anyhow::Result<()> {
    let work = std::env::temp_dir().join(format!("dshkit-bench-devtools-dsh-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let home = work.join("dsh");
    let made = peers
        .dsh(&work, &home, &["web", "--dump-default-config"])
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(made.success(), "dsh --dump-default-config failed");
    let installed = Command::new(dshkit)
        .args(["dsh", "install", "--no-boot-check", "--devtools", "--dsh-home"])
        .arg(&home)
        .env("HOME", &work)
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(installed.success(), "dshkit dsh install --devtools failed");
    let mut child = peers
        .dsh(&work, &home, &["web", "--port", "0", "--no-open"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let dsh = Killed(child);
    let booted = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("dsh web: "));
    anyhow::ensure!(booted, "dsh web printed no URL");
    let mut mcp = devtools_mcp(dshkit, &home.join("dshkit-devtools"))?;
    let deadline = Instant::now() + Duration::from_mins(1);
    let target = loop {
        let listed = mcp.call_tool(1, "cordis_list_debug_targets", &json!({}))?;
        if let Some(target) = listed["structuredContent"]["targets"].get(0) {
            break target["id"].clone();
        }
        anyhow::ensure!(Instant::now() < deadline, "DSH listed no debug target");
        std::thread::sleep(Duration::from_millis(100));
    };
    let attached = mcp.call_tool(2, "cordis_attach_debug_session", &json!({"target": target}))?;
    let session = attached["structuredContent"]["session"].clone();
    let mut times = Vec::with_capacity(SNAPSHOTS);
    let mut summary = Value::Null;
    for i in 0..SNAPSHOTS + 3 {
        let began = Instant::now();
        let snapshot = mcp.call_tool(10 + i, "cordis_debug_snapshot", &json!({"session": session}))?;
        if i >= 3 {
            times.push(began.elapsed());
        }
        summary = snapshot["structuredContent"]["summary"].clone();
    }
    let (p50, p95) = (percentile(&mut times, 0.5), percentile(&mut times, 0.95));
    println!(
        "snapshot of a booted DSH web profile ({} fibers, {} events, {} listeners; all sections, through dshkit mcp, {SNAPSHOTS} after 3 warm-ups): p50 {:.2} ms, p95 {:.2} ms (goal: under 20 ms)",
        summary["fibers"],
        summary["events"],
        summary["listeners"],
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3
    );
    drop(mcp);
    drop(dsh);
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
