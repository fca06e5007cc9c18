//! `cargo xtask bench scale`: what `docs/scaling.md` states, measured.
//!
//! 1. Sessions per dshkit: previews opened one by one up to the largest session
//!    limit the settings allow, on the browser benchmark's fixture page, with the
//!    proportional memory (PSS) of dshkit and every process it started (Chromium
//!    and its helpers) after each, and the open and snapshot times as it fills.
//! 2. A browser pool: a Chromium started separately on loopback, as a pool's
//!    endpoint is, driven with `--browser-url`. What stays local is shown: the
//!    policy (a navigation to another origin is refused), the evidence (the
//!    screenshot file) and the cleanup (the contexts are gone when dshkit exits).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::bench::{Killed, StdioClient, micros};
use crate::bench_browser::median;

/// The largest `previewLimit` the settings accept.
pub(crate) const MAX_SESSIONS: usize = 64;
/// The session counts printed (every count is measured and returned).
const SHOWN: [usize; 9] = [1, 2, 4, 8, 16, 24, 32, 48, 64];
/// Snapshots timed at each step.
const SNAPSHOTS: usize = 5;

pub(crate) fn run() -> anyhow::Result<()> {
    let (_peers, dshkit) = crate::bench::prepare()?;
    let url = crate::bench_browser::serve_fixture()?;
    in_work_dir(|work| {
        sessions(&dshkit, work, &url)?;
        pool(&dshkit, work, &url)
    })
}

/// The memory of dshkit and its Chromium at 1 to [`MAX_SESSIONS`] previews of
/// the fixture page at `url`: (sessions, PSS in KiB) at each count.
pub(crate) fn session_curve(dshkit: &std::path::Path, url: &str) -> anyhow::Result<Vec<(usize, u64)>> {
    in_work_dir(|work| sessions(dshkit, work, url))
}

/// Runs `body` in a fresh work directory whose settings allow [`MAX_SESSIONS`]
/// previews, removed afterwards.
fn in_work_dir<T>(body: impl FnOnce(&std::path::Path) -> anyhow::Result<T>) -> anyhow::Result<T> {
    crate::bench::in_scratch_dir("scale", |work| {
        let settings = work.join("config/dshkit/settings.json");
        std::fs::create_dir_all(settings.parent().context("parent")?)?;
        std::fs::write(&settings, json!({ "previewLimit": MAX_SESSIONS }).to_string())?;
        body(work)
    })
}

fn dshkit_command(dshkit: &std::path::Path, work: &std::path::Path) -> Command {
    let mut command = Command::new(dshkit);
    command
        .args(["mcp", "--tools", "liveloop"])
        .env("XDG_CONFIG_HOME", work.join("config"))
        .env("DSHKIT_EVIDENCE_ROOT", work.join("evidence"))
        .env("HOME", work);
    command
}

fn sessions(
    dshkit: &std::path::Path,
    work: &std::path::Path,
    url: &str,
) -> anyhow::Result<Vec<(usize, u64)>> {
    let mut client = StdioClient::start(&mut dshkit_command(dshkit, work))?;
    let pid = client.pid();
    let mut id = 0;
    let mut call = |client: &mut StdioClient, arguments: Value| {
        id += 1;
        client.request(&crate::bench::call(id, "liveloop_browser", &arguments))
    };
    call(&mut client, json!({"operation": "list"}))?;
    println!(
        "Preview sessions in one dshkit (`previewLimit` {MAX_SESSIONS}, the most the settings allow), the browser benchmark's page"
    );
    println!(
        "{:>8} {:>14} {:>14} {:>12} {:>14} {:>8}",
        "sessions", "PSS dshkit+", "of it dshkit", "open", "snapshot p50", "procs"
    );
    let mut first = String::new();
    let mut previous: Option<u64> = None;
    let mut slopes = Vec::new();
    let mut curve = Vec::new();
    for count in 1..=MAX_SESSIONS {
        let start = Instant::now();
        let reply = call(&mut client, json!({"operation": "open", "url": url}))?;
        let open = start.elapsed();
        let session = reply["result"]["structuredContent"]["session"]
            .as_str()
            .with_context(|| format!("open {count}: {reply}"))?
            .to_owned();
        if first.is_empty() {
            first.clone_from(&session);
        }
        let mut snapshots = Vec::new();
        for _ in 0..SNAPSHOTS {
            let start = Instant::now();
            call(&mut client, json!({"operation": "snapshot", "session": first}))?;
            snapshots.push(start.elapsed());
        }
        // The blank kept ready for the next open is made after each result:
        // measured once it is there (or at the limit, where none is made).
        wait_for_quiet_tree(pid);
        let (pss, own, processes) = tree_pss_kib(pid);
        if let Some(before) = previous {
            slopes.push(pss.saturating_sub(before));
        }
        previous = Some(pss);
        curve.push((count, pss));
        if SHOWN.contains(&count) {
            println!(
                "{count:>8} {:>11} MiB {:>10} MiB {:>12} {:>14} {processes:>8}",
                pss / 1024,
                own / 1024,
                micros(open),
                micros(median(&snapshots))
            );
        }
    }
    slopes.sort_unstable();
    println!(
        "memory per added session (median of the steps): {} MiB",
        slopes.get(slopes.len() / 2).copied().unwrap_or(0) / 1024
    );
    // Past the limit an open either makes room (the owner's least recently used
    // idle preview closes) or is refused: what happened, and how many are open.
    let reply = call(&mut client, json!({"operation": "open", "url": url}))?;
    let outcome = reply["result"]["structuredContent"]["code"]
        .as_str()
        .or_else(|| reply["result"]["content"][0]["text"].as_str())
        .unwrap_or("?");
    let listed = call(&mut client, json!({"operation": "list"}))?;
    println!(
        "open number {}: {}; open after it: {}",
        MAX_SESSIONS + 1,
        outcome.lines().next().unwrap_or(outcome),
        listed["result"]["structuredContent"]["sessions"]
            .as_array()
            .map_or_else(|| "?".to_owned(), |s| s.len().to_string())
    );
    client.finish()?;
    Ok(curve)
}

/// Waits (bounded) until the process tree's PSS stops growing between two looks,
/// so a renderer still starting is counted.
fn wait_for_quiet_tree(pid: u32) {
    settled_pss_kib(|| vec![pid]);
}

/// The PSS (KiB) of the process trees under `roots` once it stops changing
/// between two looks a quarter second apart (at most 5 s of looking).
pub(crate) fn settled_pss_kib(roots: impl Fn() -> Vec<u32>) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = trees_pss_kib(&roots());
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        let now = trees_pss_kib(&roots());
        if now.abs_diff(last) < 1024 {
            return now;
        }
        last = now;
    }
    last
}

/// The PSS of `root` and all its descendants, of `root` alone, and how many
/// processes there are.
fn tree_pss_kib(root: u32) -> (u64, u64, usize) {
    let tree = descendants(&[root]);
    (
        tree.iter().map(|pid| pss_kib(*pid)).sum(),
        pss_kib(root),
        tree.len(),
    )
}

/// The PSS of the processes `roots` and all their descendants, each counted once.
pub(crate) fn trees_pss_kib(roots: &[u32]) -> u64 {
    descendants(roots).iter().map(|pid| pss_kib(*pid)).sum()
}

/// `roots` and every process below them, each once.
fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(parent) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
        else {
            continue;
        };
        parents.push((pid, parent));
    }
    let mut tree: Vec<u32> = Vec::new();
    for root in roots {
        if !tree.contains(root) {
            tree.push(*root);
        }
    }
    let mut index = 0;
    while index < tree.len() {
        let parent = tree[index];
        for (pid, _) in parents.iter().filter(|(_, p)| *p == parent) {
            if !tree.contains(pid) {
                tree.push(*pid);
            }
        }
        index += 1;
    }
    tree
}

fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn pool(dshkit: &std::path::Path, work: &std::path::Path, url: &str) -> anyhow::Result<()> {
    let (pool, port) = start_pool_browser(work)?;
    let base = format!("http://127.0.0.1:{port}");
    let pages_before = pages(&port)?;
    println!("\nA browser pool: Chromium started separately, its endpoint {base} given as --browser-url");
    let mut command = dshkit_command(dshkit, work);
    command.args(["--browser-url", &base]);
    let start = Instant::now();
    let mut client = StdioClient::start(&mut command)?;
    let opened = client.call_tool(1, "liveloop_browser", &json!({"operation": "open", "url": url}))?;
    let first_open = start.elapsed();
    let session = opened["structuredContent"]["session"]
        .as_str()
        .context("session id")?
        .to_owned();
    let mut opens = Vec::new();
    for id in 0..5 {
        // An agent's pause between previews: the blank for the next open is
        // made meanwhile, as in ordinary use.
        std::thread::sleep(Duration::from_secs(1));
        let start = Instant::now();
        let reply = client.call_tool(
            10 + id,
            "liveloop_browser",
            &json!({"operation": "open", "url": url}),
        )?;
        opens.push(start.elapsed());
        let other = reply["structuredContent"]["session"]
            .as_str()
            .context("session id")?;
        client.call_tool(
            20 + id,
            "liveloop_browser",
            &json!({"operation": "close", "session": other}),
        )?;
    }
    let shot = client.call_tool(
        30,
        "liveloop_browser",
        &json!({"operation": "screenshot", "session": session}),
    )?;
    let path = shot["structuredContent"]["path"]
        .as_str()
        .context("screenshot path")?;
    let local = std::path::Path::new(path).starts_with(work.join("evidence"));
    // Another loopback origin than the preview's: the policy dshkit keeps refuses it.
    let foreign = std::net::TcpListener::bind("127.0.0.1:0")?;
    let refused = client.request(&crate::bench::call(
        31,
        "liveloop_browser",
        &json!({"operation": "navigate", "session": session, "url": format!("http://{}/", foreign.local_addr()?)}),
    ))?;
    let refusal = refused["result"]["content"][0]["text"].as_str().unwrap_or("?");
    let dshkit_pss = tree_pss_kib(client.pid()).0;
    let pool_pss = tree_pss_kib(pool.0.id()).0;
    println!(
        "spawn → first open {}; open after a 1 s pause p50 {}; screenshot written locally: {local}",
        micros(first_open),
        micros(median(&opens))
    );
    println!(
        "navigation to another loopback origin: {}",
        refusal.lines().next().unwrap_or(refusal)
    );
    println!(
        "PSS: dshkit {} MiB (no browser of its own), the pool's Chromium {} MiB",
        dshkit_pss / 1024,
        pool_pss / 1024
    );
    client.finish()?;
    // The contexts were made with disposeOnDetach: dshkit's exit closes them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = pages(&port)?;
    while after != pages_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = pages(&port)?;
    }
    println!("pool pages before dshkit: {pages_before}, after it exited: {after}");
    if after != pages_before {
        bail!("dshkit left {} pages in the pool", after - pages_before);
    }
    Ok(())
}

/// A Chromium started on its own, as a pool runs it: the process and its
/// DevTools port.
fn start_pool_browser(work: &std::path::Path) -> anyhow::Result<(Killed, String)> {
    let profile = work.join("pool-profile");
    let mut chromium = Command::new(crate::bench::chromium());
    chromium
        .args([
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--no-sandbox",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = chromium.spawn()?;
    let stderr = child.stderr.take().context("stderr")?;
    let pool = Killed(child);
    let endpoint = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("DevTools listening on ").map(str::to_owned))
        .context("the pool browser printed no DevTools endpoint")?;
    let port = endpoint
        .trim_start_matches("ws://127.0.0.1:")
        .split('/')
        .next()
        .context("port")?
        .to_owned();
    Ok((pool, port))
}

/// How many page targets the browser at `port` lists.
fn pages(port: &str) -> anyhow::Result<usize> {
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}"))?;
    write!(
        stream,
        "GET /json/list HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    // Read the head, then exactly its Content-Length: the browser keeps the
    // connection open.
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse()?;
        }
        line.clear();
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let targets: Value = serde_json::from_slice(&body).context("/json/list")?;
    Ok(targets
        .as_array()
        .map_or(0, |all| all.iter().filter(|t| t["type"] == "page").count()))
}
