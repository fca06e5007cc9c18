//! `cargo xtask bench echo`: Echo against the live server in one run, with one raw
//! JSON-RPC client: direct calls to server-everything over stdio, the same calls
//! through `dshkit echo record` (record overhead) and through a bare relay (the
//! floor of any proxy), and through `dshkit echo replay` of the cassette just
//! recorded; then a 100 000-interaction cassette loaded.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench::{StdioClient, mib, micros, percentile, signed_micros};

/// Calls per variant after the warm-up (each with its own message, so replay
/// never repeats); all but the first of each turn are timed.
const CALLS: usize = 2000;
/// Untimed calls first.
const WARMUP: usize = 200;
/// Calls a variant makes in a row before the next one takes its turn.
const TURN: usize = 16;
/// Interactions in the generated large cassette.
const LARGE: usize = 100_000;

fn call(id: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"message": format!("message {id}")}}})
}

/// One way to reach the echo tool, and its timed calls.
struct Variant {
    client: StdioClient,
    /// The answers must be the echo tool's (`cat`, the floor, sends each
    /// request back as it came).
    check: bool,
    latencies: Vec<Duration>,
}

/// Times `CALLS` echo calls (after the warm-up) through each server of
/// `commands`, in turns of [`TURN`] calls: a noisy spell of the shared machine
/// falls on every variant alike, so their ratios hold. The first call of a turn
/// is not timed: it pays for the caches the other variants' processes left
/// behind, a cost of this bench and not of a client that keeps talking to one
/// server. Each round starts one variant further on, so no variant always
/// follows the same one. (Turns of one call each, in a fixed order, had put the
/// direct calls 3-5 µs ahead on one CPU and two identical `cat`s 1.2x apart.)
fn sample_interleaved(commands: Vec<(&mut Command, bool)>) -> anyhow::Result<Vec<Vec<Duration>>> {
    let mut variants = Vec::new();
    for (command, check) in commands {
        let mut client = StdioClient::start(command)?;
        client.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        variants.push(Variant {
            client,
            check,
            latencies: Vec::with_capacity(CALLS),
        });
    }
    // Every variant sends every id in order: replay answers the ids record saw.
    for (round, turn_start) in (1..=WARMUP + CALLS).step_by(TURN).enumerate() {
        let turn = turn_start..=(turn_start + TURN - 1).min(WARMUP + CALLS);
        let first = round % variants.len();
        let (later, sooner) = variants.split_at_mut(first);
        for variant in sooner.iter_mut().chain(later) {
            for id in turn.clone() {
                let began = Instant::now();
                let reply = variant.client.request(&call(id))?;
                let elapsed = began.elapsed();
                if variant.check && reply["result"]["content"][0]["text"] != format!("Echo: message {id}") {
                    anyhow::bail!("unexpected reply to call {id}: {reply}");
                }
                if id > WARMUP && id != turn_start {
                    variant.latencies.push(elapsed);
                }
            }
        }
    }
    let mut samples = Vec::new();
    for variant in variants {
        variant.client.finish()?;
        samples.push(variant.latencies);
    }
    Ok(samples)
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
        "Echo over stdio: {CALLS} timed tools/call echo round trips after {WARMUP} warm-up, one raw JSON-RPC client; direct, relayed, recorded and the null server take turns call by call"
    );
    println!("\n1. wherever the scheduler puts each process");
    stdio_round_trips(&dshkit, &peers, &everything, &cassette, &work)?;
    // Across CPUs, a round trip's cost depends on where the scheduler placed the
    // two ends (two identical `cat`s above can differ fourfold). On one CPU every
    // variant pays only for its own work.
    let again = work.join("everything-one-cpu.jsonl");
    match crate::bench::current_cpu() {
        Some(cpu) => {
            println!("\n2. the client and every process it starts on CPU {cpu} alone");
            crate::bench::on_cpu(cpu, || {
                stdio_round_trips(&dshkit, &peers, &everything, &again, &work)
            })?;
        }
        None => println!("\n2. on one CPU: not measured (no CPU affinity on this system)"),
    }
    dsh_annotation(&dshkit, &work, &cassette)?;
    redaction_throughput(&dshkit, Some(&cassette), &work)?;
    large_cassette(&dshkit, &work)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(versus_mcp_recorder(&dshkit, &peers, &work, &cassette))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Echo in DSH pays one `dshkit echo annotate` process per call to a registered
/// server: its cost with a 10-call history, beside a whole replay session of the
/// same 10 calls (spawn, handshake, answers) and the process floor, in turns.
fn dsh_annotation(
    dshkit: &std::path::Path,
    work: &std::path::Path,
    cassette: &std::path::Path,
) -> anyhow::Result<()> {
    const RUNS: usize = 30;
    let root = work.canonicalize()?;
    let name = cassette
        .file_name()
        .context("a cassette file name")?
        .to_string_lossy();
    let calls: Vec<Value> = std::fs::read_to_string(cassette)?
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["request"]["method"] == "tools/call")
        .map(|record| record["request"].clone())
        .take(10)
        .collect();
    let request = json!({
        "echo": {"rootDir": root, "cassettes": [{"id": "everything", "path": name, "server": "everything", "mode": "replay"}]},
        "server": "everything",
        "calls": calls.iter().map(|c| json!({"tool": c["params"]["name"], "arguments": c["params"]["arguments"]})).collect::<Vec<_>>(),
    })
    .to_string();
    let mut session = format!(
        "{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    for call in &calls {
        session.push_str(&format!("{call}\n"));
    }
    let timed = |args: &[&str], input: &str| -> anyhow::Result<(Duration, Vec<u8>)> {
        let began = Instant::now();
        let mut child = Command::new(dshkit)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child.stdin.take().context("stdin")?.write_all(input.as_bytes())?;
        let out = child.wait_with_output()?;
        anyhow::ensure!(out.status.success(), "dshkit {args:?} failed");
        Ok((began.elapsed(), out.stdout))
    };
    let cassette_arg = cassette.to_string_lossy();
    let (mut annotate, mut replay, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (took, out) = timed(&["--json", "echo", "annotate"], &request)?;
        let answer: Value = serde_json::from_slice(&out)?;
        anyhow::ensure!(
            answer["dshCassette"]["outcome"] == "hit",
            "the annotation is no hit: {answer}"
        );
        annotate.push(took);
        replay.push(timed(&["echo", "replay", &cassette_arg], &session)?.0);
        floor.push(timed(&["--version"], "")?.0);
    }
    let (annotate, replay, floor) = (
        percentile(&mut annotate, 0.5),
        percentile(&mut replay, 0.5),
        percentile(&mut floor, 0.5),
    );
    println!(
        "\nEcho in DSH: `dshkit echo annotate` (10-call history, process start included) takes {} at p50 per annotated call; a whole replay session of the same 10 calls {} ({:.2}x); the process floor (`dshkit --version`) {}",
        micros(annotate),
        micros(replay),
        annotate.as_secs_f64() / replay.as_secs_f64(),
        micros(floor)
    );
    Ok(())
}

/// Record and replay over stdio against the live server and the floors, each
/// pair of figures from calls that took turns; records `cassette` on the way.
fn stdio_round_trips(
    dshkit: &std::path::Path,
    peers: &crate::setup::Peers,
    everything: &std::path::Path,
    cassette: &std::path::Path,
    work: &std::path::Path,
) -> anyhow::Result<()> {
    // The floor of any stdio server: a process that sends each line back. The
    // floor of any proxy: a process that copies bytes both ways, nothing else.
    let mut samples = sample_interleaved(vec![
        (Command::new(peers.node()).arg(everything).arg("stdio"), true),
        (
            Command::new(std::env::current_exe()?)
                .args(["bare-relay", "--"])
                .arg(peers.node())
                .arg(everything)
                .arg("stdio"),
            true,
        ),
        (
            Command::new(dshkit)
                .args(["echo", "record", "-o"])
                .arg(cassette)
                .arg("--")
                .arg(peers.node())
                .arg(everything)
                .arg("stdio")
                .env("HOME", work),
            true,
        ),
        (&mut Command::new("cat"), false),
    ])?
    .into_iter();
    let (mut direct, mut bare, mut recorded, mut floor) = (
        samples.next().context("direct")?,
        samples.next().context("bare relay")?,
        samples.next().context("recorded")?,
        samples.next().context("null server")?,
    );
    // Replay needs the finished cassette: it takes turns with two more null
    // servers. Two identical processes show what placement alone does.
    let mut samples = sample_interleaved(vec![
        (
            Command::new(dshkit)
                .args(["echo", "replay"])
                .arg(cassette)
                .env("HOME", work),
            true,
        ),
        (&mut Command::new("cat"), false),
        (&mut Command::new("cat"), false),
    ])?
    .into_iter();
    let (mut replayed, mut replay_floor, mut control) = (
        samples.next().context("replayed")?,
        samples.next().context("null server")?,
        samples.next().context("second null server")?,
    );
    let (d50, b50, r50, p50, f50) = (
        percentile(&mut direct, 0.5),
        percentile(&mut bare, 0.5),
        percentile(&mut recorded, 0.5),
        percentile(&mut replayed, 0.5),
        percentile(&mut replay_floor, 0.5),
    );
    println!("{:<28} {:>12} {:>12}", "", "p50", "p99");
    for (label, values) in [
        ("live server, direct", &mut direct),
        ("through a bare relay", &mut bare),
        ("through echo record", &mut recorded),
        ("null server (cat)", &mut floor),
        ("echo replay (no server)", &mut replayed),
        ("null server, beside replay", &mut replay_floor),
        ("a second null server", &mut control),
    ] {
        println!(
            "{label:<28} {:>12} {:>12}",
            micros(percentile(values, 0.5)),
            micros(percentile(values, 0.99))
        );
    }
    let overhead = r50.saturating_sub(d50);
    println!(
        "record adds {} per call at p50 ({:.1} % of a direct call, {:.2}x the null server's round trip beside it; goal <= 40 µs)",
        micros(overhead),
        overhead.as_secs_f64() / d50.as_secs_f64() * 100.0,
        overhead.as_secs_f64() / percentile(&mut floor, 0.5).as_secs_f64()
    );
    println!(
        "a bare relay (two threads copying bytes, no framing or recording) adds {} per call at p50; record costs {} more than it",
        micros(b50.saturating_sub(d50)),
        signed_micros(r50, b50)
    );
    println!(
        "replay answers in {} at p50, {:.1}x faster than the live server, {:.2}x the null server's round trip (goal <= 1.3x)",
        micros(p50),
        d50.as_secs_f64() / p50.as_secs_f64(),
        p50.as_secs_f64() / f50.as_secs_f64()
    );
    let c50 = percentile(&mut control, 0.5);
    println!(
        "placement: two identical null servers took {} and {} at p50 ({:.2}x)",
        micros(f50),
        micros(c50),
        f50.max(c50).as_secs_f64() / f50.min(c50).as_secs_f64()
    );
    Ok(())
}

/// `cargo xtask bare-relay -- ARGV…`: the floor any stdio proxy is measured
/// against. Starts ARGV and copies bytes both ways, each direction on a thread of
/// its own blocked in `read`: no framing, parsing or queue, only the wake-ups a
/// process in the middle costs.
pub(crate) fn bare_relay(command: &[String]) -> anyhow::Result<()> {
    let argv = command.strip_prefix(&["--".to_owned()]).unwrap_or(command);
    let (program, rest) = argv.split_first().context("bare-relay needs a command")?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let mut to_child = child.stdin.take().context("the child's stdin")?;
    let mut from_child = child.stdout.take().context("the child's stdout")?;
    // Dropping `to_child` when the client's input ends closes the child's.
    let upstream = std::thread::spawn(move || copy_flushed(&mut std::io::stdin().lock(), &mut to_child));
    let downstream = copy_flushed(&mut from_child, &mut std::io::stdout().lock());
    upstream
        .join()
        .map_err(|_| anyhow::anyhow!("the upstream copy panicked"))??;
    downstream?;
    child.wait()?;
    Ok(())
}

/// Copies `from` to `to` read by read, each read written and flushed at once.
fn copy_flushed(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = from.read(&mut buffer)?;
        if read == 0 {
            return Ok(());
        }
        to.write_all(&buffer[..read])?;
        to.flush()?;
    }
}

/// `cargo xtask bench redact`: the redaction figure alone, on synthetic traffic.
pub(crate) fn redaction() -> anyhow::Result<()> {
    let (_, dshkit) = crate::bench::prepare()?;
    let work = std::env::temp_dir().join(format!("dshkit-bench-redact-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let result = redaction_throughput(&dshkit, None, &work);
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// Runs `bench redact-in-process FILE` in a release build of xtask.
fn run_release_redactor(file: &std::path::Path) -> anyhow::Result<()> {
    crate::run(
        Command::new(env!("CARGO"))
            .args([
                "run",
                "--release",
                "--quiet",
                "--package",
                "xtask",
                "--",
                "bench",
                "redact-in-process",
            ])
            .arg(file)
            .current_dir(crate::root()),
    )
}

/// The check the recorder runs on each message's text (`Redactor::touches_json`,
/// a walk through its strings without a tree), here on each record's text; then
/// `Redactor::value` over every record of `file` parsed beforehand (only the
/// redaction is timed; the trees of the whole file are far larger than the
/// caches, which this pass pays for).
pub(crate) fn redaction_in_process(file: Option<&str>) -> anyhow::Result<()> {
    let file = file.context("bench redact-in-process FILE")?;
    let text = std::fs::read_to_string(file)?;
    #[expect(clippy::cast_precision_loss, reason = "a byte count as MB")]
    let megabytes = text.len() as f64 / 1e6;
    let redactor = dshkit_echo::redact::Redactor::new(&[], &[])?;
    let began = Instant::now();
    let touched = text.lines().filter(|line| redactor.touches_json(line)).count();
    let seconds = began.elapsed().as_secs_f64();
    println!(
        "the recorder's check (touches_json) on each record's text, {megabytes:.0} MB of ordinary JSON: {:.0} ms, {:.0} MB/s (goal >= 200 MB/s); {touched} record(s) to redact",
        seconds * 1e3,
        megabytes / seconds
    );
    let mut values: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let began = Instant::now();
    let mut changed = 0;
    for value in &mut values {
        if redactor.value(value) {
            changed += 1;
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    println!(
        "Redactor::value over the parsed trees of the same records: {:.0} ms, {:.0} MB/s; {changed} message(s) changed",
        seconds * 1e3,
        megabytes / seconds
    );
    Ok(())
}

/// Bytes of ordinary JSON the redaction throughput is measured on.
const REDACTION_BYTES: usize = 64 * 1024 * 1024;

/// Redaction of ordinary JSON (the recorded echo traffic, a tools/list answer with
/// descriptions and schemas, a base64 image) by the release binary: `dshkit echo
/// redact` rewriting a 64 MB cassette (read, parse, redact every string, write),
/// and `--scan` over it; detect-secrets on a slice of the same file for scale.
fn redaction_throughput(
    dshkit: &std::path::Path,
    cassette: Option<&std::path::Path>,
    work: &std::path::Path,
) -> anyhow::Result<()> {
    let mut samples: Vec<Value> = match cassette {
        Some(cassette) => std::fs::read_to_string(cassette)?
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        // Without a recording: echo traffic of the same shape.
        None => (1..=2000)
            .map(|id| json!({"type": "interaction", "ordinal": id, "request": call(id),
                "responses": [{"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!("Echo: message {id}")}]}}], "ms": 0}))
            .collect(),
    };
    let tools: Vec<Value> = (0..30)
        .map(|i| json!({"name": format!("tool-{i}"), "description": format!("Returns the {i}th item of the list, with its id, title, author and the date it was last changed. Use it when the user asks about item {i}."),
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "description": "the item id, e.g. 3f2a9c"}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}}, "required": ["id"]}}))
        .collect();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    samples.push(json!({"type": "interaction", "ordinal": 1, "request": list, "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}], "ms": 0}));
    let image: String = (0..40_000)
        .map(|i| char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i * 7 % 64]))
        .collect();
    let image_call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get-tiny-image", "arguments": {}}});
    samples.push(json!({"type": "interaction", "ordinal": 2, "request": image_call, "responses": [{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "image", "data": image, "mimeType": "image/png"}]}}], "ms": 0}));
    let header = serde_json::to_string(&dshkit_echo::cassette::Header::new("stdio"))?;
    let mut text = format!("{header}\n");
    let mut ordinal = 0;
    while text.len() < REDACTION_BYTES {
        for sample in &mut samples {
            ordinal += 1;
            sample["ordinal"] = json!(ordinal);
            text.push_str(&sample.to_string());
            text.push('\n');
        }
    }
    let file = work.join("ordinary.jsonl");
    std::fs::write(&file, &text)?;
    // The redactor itself, optimised: a release build of this task in process.
    run_release_redactor(&file)?;
    #[expect(clippy::cast_precision_loss, reason = "a byte count as MB")]
    let megabytes = text.len() as f64 / 1e6;
    let began = Instant::now();
    let out = Command::new(dshkit)
        .args(["echo", "redact"])
        .arg(&file)
        .env("HOME", work)
        .output()?;
    let seconds = began.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "echo redact failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let changed = !String::from_utf8_lossy(&out.stdout).contains("nothing to redact");
    println!(
        "\n`dshkit echo redact` on {megabytes:.0} MB of ordinary JSON (read, parse, redact, write): {:.0} ms, {:.0} MB/s (goal >= 200 MB/s){}",
        seconds * 1e3,
        megabytes / seconds,
        if changed {
            "; it CHANGED clean data"
        } else {
            "; nothing changed"
        }
    );
    let began = Instant::now();
    let scan = Command::new(dshkit)
        .args(["echo", "redact", "--scan"])
        .arg(&file)
        .env("HOME", work)
        .output()?;
    let scan_seconds = began.elapsed().as_secs_f64();
    println!(
        "`dshkit echo redact --scan` on the same file: {:.0} MB/s, exit {} (0: no finding, a false positive would be one)",
        megabytes / scan_seconds,
        scan.status.code().unwrap_or(-1)
    );
    // The peer: detect-secrets on a 4 MB slice of the same file.
    let detect = crate::setup::detect_secrets()?;
    let slice: String = text.chars().take(4 * 1024 * 1024).collect();
    let sliced = work.join("slice.jsonl");
    std::fs::write(&sliced, &slice)?;
    let began = Instant::now();
    let out = Command::new(&detect).arg("scan").arg(&sliced).output()?;
    let peer_seconds = began.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "detect-secrets failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    #[expect(clippy::cast_precision_loss, reason = "a byte count as MB")]
    let peer_rate = slice.len() as f64 / 1e6 / peer_seconds;
    println!(
        "detect-secrets 1.5.0 scan on 4 MB of it: {peer_rate:.1} MB/s (process start included); dshkit's scan {:.0}x, its full rewrite {:.0}x that rate",
        megabytes / scan_seconds / peer_rate,
        megabytes / seconds / peer_rate
    );
    Ok(())
}

/// Writes a dshkit cassette of `interactions` echo calls (`message 1` ... `message
/// N`), streamed to the file; its size in bytes.
pub(crate) fn write_cassette(path: &std::path::Path, interactions: usize) -> anyhow::Result<u64> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut file, &dshkit_echo::cassette::Header::new("stdio"))?;
    file.write_all(b"\n")?;
    for i in 1..=interactions {
        let record = dshkit_echo::cassette::Record::Interaction(dshkit_echo::cassette::Interaction {
            ordinal: u64::try_from(i)?,
            request: call(i),
            responses: vec![echo_answer(i)],
            notifications: vec![],
            notification_lead_us: vec![],
            server_requests: vec![],
            server_requests_after: vec![],
            status: None,
            content_type: None,
            body: None,
            ms: 1,
            origin: "recorded".into(),
        });
        serde_json::to_writer(&mut file, &record)?;
        file.write_all(b"\n")?;
    }
    file.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// The echo tool's answer to `call(id)`.
fn echo_answer(id: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!("Echo: message {id}")}]}})
}

/// Writes a cassette of [`LARGE`] interactions and times a release `dshkit echo
/// replay` loading and indexing it (three runs; the first pays for a cold binary).
fn large_cassette(dshkit: &std::path::Path, work: &std::path::Path) -> anyhow::Result<()> {
    let big = work.join("large.jsonl");
    let bytes = write_cassette(&big, LARGE)?;
    let mut runs = Vec::new();
    let mut peaks = Vec::new();
    let mut idle_runs = Vec::new();
    // The goal holds on a busy machine: two threads spinning beside every run
    // (on top of whatever else the machine runs), and the same runs without them.
    for _ in 0..3 {
        idle_runs.push(first_reply_of(dshkit, &big, LARGE)?.0);
        let hogs = crate::CpuHogs::start(CPU_HOGS);
        let (first_reply, peak_kib) = first_reply_of(dshkit, &big, LARGE)?;
        drop(hogs);
        runs.push(first_reply);
        peaks.push(peak_kib);
    }
    let peak_kib = peaks.iter().copied().max().unwrap_or(0);
    #[expect(clippy::cast_precision_loss, reason = "sizes for display")]
    let (file_mib, peak_rss_mib) = (bytes as f64 / 1_048_576.0, peak_kib as f64 / 1024.0);
    let busy = percentile(&mut runs.clone(), 0.5);
    let idle = percentile(&mut idle_runs.clone(), 0.5);
    println!(
        "a {LARGE}-interaction cassette ({file_mib:.1} MiB), {CPU_HOGS} CPU hogs running: a cold `dshkit echo replay` answers the last recorded call in {} (median of {}; goal <= 0.4 s, {}), peak RSS {peak_rss_mib:.1} MiB ({:.2}x the file; goal <= 80 MB, {}); without the hogs {} ({:.2}x)",
        micros(busy),
        runs.iter().map(|d| micros(*d)).collect::<Vec<_>>().join(", "),
        if busy <= Duration::from_millis(400) {
            "met"
        } else {
            "NOT met"
        },
        peak_rss_mib / file_mib,
        if peak_kib * 1024 <= 80_000_000 {
            "met"
        } else {
            "NOT met"
        },
        micros(idle),
        busy.as_secs_f64() / idle.as_secs_f64().max(1e-9)
    );
    for command in ["lint", "inspect"] {
        let (elapsed, peak_kib) = whole_file_command(dshkit, command, &big)?;
        #[expect(clippy::cast_precision_loss, reason = "sizes for display")]
        let command_mib = peak_kib as f64 / 1024.0;
        println!(
            "the same cassette: `dshkit echo {command}` (output to /dev/null) takes {}, peak RSS {command_mib:.1} MiB ({:.2}x the file)",
            micros(elapsed),
            command_mib / file_mib
        );
    }
    Ok(())
}

/// Busy threads beside the large cassette's replay: the machine a goal must hold on.
const CPU_HOGS: usize = 2;

/// Runs `dshkit echo COMMAND CASSETTE` under `/usr/bin/time`, its output thrown
/// away: its wall time and peak RSS (KiB).
fn whole_file_command(
    dshkit: &std::path::Path,
    command: &str,
    cassette: &std::path::Path,
) -> anyhow::Result<(Duration, u64)> {
    let began = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(dshkit)
        .args(["echo", command])
        .arg(cassette)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("running /usr/bin/time dshkit echo {command}"))?;
    let elapsed = began.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let peak_kib = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse::<u64>().ok())
        .with_context(|| format!("dshkit echo {command}: {stderr}"))?;
    Ok((elapsed, peak_kib))
}

/// Starts `dshkit echo replay CASSETTE` (of `interactions` echo calls) under
/// `/usr/bin/time`, asks for the handshake and the last recorded call, and returns
/// the time from the spawn to that answer, and the peak RSS (KiB) once stdin is
/// closed and the replay has exited.
pub(crate) fn first_reply_of(
    dshkit: &std::path::Path,
    cassette: &std::path::Path,
    interactions: usize,
) -> anyhow::Result<(Duration, u64)> {
    use std::io::BufRead;
    // The handshake, then the last recorded call.
    let ask = format!(
        "{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}),
        call(interactions)
    );
    let began = Instant::now();
    let mut child = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(dshkit)
        .args(["echo", "replay"])
        .arg(cassette)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("running /usr/bin/time dshkit echo replay")?;
    let mut stdin = child.stdin.take().context("stdin")?;
    stdin.write_all(ask.as_bytes())?;
    stdin.flush()?;
    let mut stdout = std::io::BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    for _ in 0..ask.lines().count() {
        line.clear();
        anyhow::ensure!(
            stdout.read_line(&mut line)? > 0,
            "the replay closed stdout without an answer"
        );
    }
    let answered = began.elapsed();
    anyhow::ensure!(
        line.contains(&format!("message {interactions}\"")),
        "unexpected answer: {line}"
    );
    drop(stdin);
    let out = child.wait_with_output()?;
    let peak_kib = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .and_then(|l| l.trim().parse::<u64>().ok())
        .unwrap_or(0);
    Ok((answered, peak_kib))
}

/// Calls in the HTTP replay comparison (after the warm-up), each with its own message.
const HTTP_CALLS: usize = 500;

/// Waits until something accepts connections on `port`.
async fn wait_for_port(port: u16) -> anyhow::Result<()> {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("nothing listens on port {port}")
}

/// An MCP session over Streamable HTTP at `url`, past its handshake.
async fn http_session(url: String) -> anyhow::Result<crate::bench::HttpClient> {
    let mut client = crate::bench::HttpClient {
        client: reqwest::Client::new(),
        url,
        token: None,
        session: None,
    };
    client.post(&crate::bench::initialize(0)).await?;
    client
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    Ok(client)
}

/// The same replay workload over Streamable HTTP: initialize, then timed echo calls.
async fn http_replay(url: String) -> anyhow::Result<Vec<Duration>> {
    let mut client = http_session(url).await?;
    let mut latencies = Vec::with_capacity(HTTP_CALLS);
    for id in 1..=WARMUP + HTTP_CALLS {
        let began = Instant::now();
        let reply = client.post(&call(id)).await?.context("no reply")?;
        let elapsed = began.elapsed();
        if reply["result"]["content"][0]["text"] != format!("Echo: message {id}") {
            anyhow::bail!("unexpected replay of call {id}: {reply}");
        }
        if id > WARMUP {
            latencies.push(elapsed);
        }
    }
    Ok(latencies)
}

/// mcp-recorder (from `PyPI`) records the same calls through its own proxy; then both
/// replays serve the same workload over HTTP (mcp-recorder replays over HTTP only).
async fn versus_mcp_recorder(
    dshkit: &std::path::Path,
    peers: &crate::setup::Peers,
    work: &std::path::Path,
    ours: &std::path::Path,
) -> anyhow::Result<()> {
    let recorder = crate::setup::mcp_recorder()?;
    let everything = peers
        .mcp_modules()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let theirs = work.join("mcp-recorder.json");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut recording = crate::bench::Killed(
        Command::new(&recorder)
            .args(["record", "--target-stdio"])
            .arg(format!(
                "{} {} stdio",
                peers.node().display(),
                everything.display()
            ))
            .args(["--port", &port.to_string(), "--output"])
            .arg(&theirs)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?,
    );
    wait_for_port(port).await?;
    http_replay(format!("http://127.0.0.1:{port}/mcp"))
        .await
        .context("recording through mcp-recorder")?;
    // mcp-recorder saves its cassette when interrupted.
    let _ = Command::new("kill")
        .args(["-INT", &recording.0.id().to_string()])
        .status();
    let _ = recording.0.wait();
    anyhow::ensure!(theirs.is_file(), "mcp-recorder wrote no cassette");

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let _peer = crate::bench::Killed(
        Command::new(&recorder)
            .args(["replay", "--cassette"])
            .arg(&theirs)
            .args(["--port", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?,
    );
    wait_for_port(port).await?;
    let mut peer = http_replay(format!("http://127.0.0.1:{port}/mcp"))
        .await
        .context("mcp-recorder replay")?;

    let (_replay, url) = spawn_http_replay(dshkit, ours)?;
    let mut dshkit_http = http_replay(url).await?;

    let (ours_p50, peer_p50) = (percentile(&mut dshkit_http, 0.5), percentile(&mut peer, 0.5));
    println!("\nThe same replay workload over Streamable HTTP ({HTTP_CALLS} timed calls, one client):");
    println!("{:<28} {:>12} {:>12}", "", "p50", "p99");
    println!(
        "{:<28} {:>12} {:>12}",
        "dshkit echo replay --http",
        micros(ours_p50),
        micros(percentile(&mut dshkit_http, 0.99))
    );
    println!(
        "{:<28} {:>12} {:>12}",
        "mcp-recorder 0.5.0 replay",
        micros(peer_p50),
        micros(percentile(&mut peer, 0.99))
    );
    println!(
        "dshkit replays {:.1}x faster than mcp-recorder at p50 (goal >= 10x)",
        peer_p50.as_secs_f64() / ours_p50.as_secs_f64()
    );
    large_versus_mcp_recorder(dshkit, &recorder, work).await
}

/// What [`cold_http_replies`] measured, for dshkit and for mcp-recorder: the
/// median time from the spawn to the answer of the last recorded call, and the
/// process's peak RSS (KiB) then.
pub(crate) struct ColdReplies {
    pub(crate) ours: (Duration, u64),
    pub(crate) theirs: (Duration, u64),
}

/// A cassette of `interactions` echo calls in both formats (`ours`, `theirs`),
/// each replayed over HTTP by a cold process, `rounds` times in turn.
pub(crate) async fn cold_http_replies(
    dshkit: &std::path::Path,
    recorder: &std::path::Path,
    ours: &std::path::Path,
    theirs: &std::path::Path,
    interactions: usize,
    rounds: usize,
) -> anyhow::Result<ColdReplies> {
    let ask = |url: String| async move {
        let mut client = http_session(url).await?;
        let reply = client.post(&call(interactions)).await?.context("no reply")?;
        anyhow::ensure!(
            reply["result"]["content"][0]["text"] == format!("Echo: message {interactions}"),
            "unexpected answer: {reply}"
        );
        anyhow::Ok(())
    };
    let mut rows = Vec::new();
    for _ in 0..rounds {
        // dshkit: its ready line names the URL once the cassette is indexed.
        let began = Instant::now();
        let (replay, url) = spawn_http_replay(dshkit, ours)?;
        ask(url).await?;
        let ours_time = began.elapsed();
        let ours_peak = peak_rss_kib(replay.0.id());
        drop(replay);
        // mcp-recorder: polled until its port answers.
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let began = Instant::now();
        let peer = crate::bench::Killed(
            Command::new(recorder)
                .args(["replay", "--cassette"])
                .arg(theirs)
                .args(["--port", &port.to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()?,
        );
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            anyhow::ensure!(
                began.elapsed() < Duration::from_mins(15),
                "mcp-recorder never listened"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        ask(format!("http://127.0.0.1:{port}/mcp")).await?;
        let peer_time = began.elapsed();
        let peer_peak = peak_rss_kib(peer.0.id());
        drop(peer);
        rows.push((ours_time, ours_peak, peer_time, peer_peak));
    }
    rows.sort_by_key(|r| r.0);
    let (ours_time, ours_peak, _, _) = rows[rows.len() / 2];
    rows.sort_by_key(|r| r.2);
    let (_, _, peer_time, peer_peak) = rows[rows.len() / 2];
    Ok(ColdReplies {
        ours: (ours_time, ours_peak),
        theirs: (peer_time, peer_peak),
    })
}

async fn large_versus_mcp_recorder(
    dshkit: &std::path::Path,
    recorder: &std::path::Path,
    work: &std::path::Path,
) -> anyhow::Result<()> {
    let ours = work.join("large.jsonl");
    let theirs = work.join("large-mcp-recorder.json");
    write_mcp_recorder_cassette(&theirs, LARGE)?;
    let rounds = 3;
    let ColdReplies {
        ours: (ours_time, ours_peak),
        theirs: (peer_time, peer_peak),
    } = cold_http_replies(dshkit, recorder, &ours, &theirs, LARGE, rounds).await?;
    println!(
        "\nA {LARGE}-interaction cassette replayed over HTTP by a cold process: spawn → answer to the last recorded call (median of {rounds}), peak RSS"
    );
    println!("{:<28} {:>12} {:>12}", "", "first reply", "peak RSS");
    println!(
        "{:<28} {:>12} {:>12}",
        "dshkit echo replay --http",
        micros(ours_time),
        mib(ours_peak)
    );
    println!(
        "{:<28} {:>12} {:>12}",
        "mcp-recorder 0.5.0 replay",
        micros(peer_time),
        mib(peer_peak)
    );
    #[expect(clippy::cast_precision_loss, reason = "a ratio for display")]
    let memory = peer_peak as f64 / ours_peak.max(1) as f64;
    println!(
        "dshkit answers {:.1}x sooner in {memory:.1}x less memory (goals: <= 0.4 s, <= 80 MB)",
        peer_time.as_secs_f64() / ours_time.as_secs_f64()
    );
    Ok(())
}

/// `interactions` echo calls (after a handshake) as an mcp-recorder 0.5.0
/// cassette, streamed to the file.
pub(crate) fn write_mcp_recorder_cassette(path: &std::path::Path, interactions: usize) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let handshake = [
        json!({"type": "jsonrpc_request", "request": crate::bench::initialize(0),
               "response": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "mcp-servers/everything", "version": "2026.8.31"}}}}),
        json!({"type": "notification", "request": {"jsonrpc": "2.0", "method": "notifications/initialized"}}),
    ];
    file.write_all(br#"{"version": "1.0", "metadata": {"transport_type": "stdio"}, "interactions": ["#)?;
    for (index, interaction) in handshake.iter().enumerate() {
        if index > 0 {
            file.write_all(b",")?;
        }
        serde_json::to_writer(&mut file, interaction)?;
    }
    for i in 1..=interactions {
        file.write_all(b",")?;
        serde_json::to_writer(
            &mut file,
            &json!({"type": "jsonrpc_request", "request": call(i), "latency_ms": 1, "response": echo_answer(i)}),
        )?;
    }
    file.write_all(b"]}")?;
    file.flush()?;
    Ok(())
}

/// `dshkit echo replay CASSETTE --http` on a free port, once its ready line
/// names the URL (the cassette is indexed by then).
fn spawn_http_replay(
    dshkit: &std::path::Path,
    cassette: &std::path::Path,
) -> anyhow::Result<(crate::bench::Killed, String)> {
    let mut child = Command::new(dshkit)
        .args(["echo", "replay"])
        .arg(cassette)
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().context("stdout")?),
        &mut line,
    )?;
    let replay = crate::bench::Killed(child);
    let url = line
        .trim()
        .strip_prefix("dshkit echo: ")
        .context("ready line")?
        .to_owned();
    Ok((replay, url))
}

/// The peak RSS (`VmHWM`, KiB) of a live process.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}
