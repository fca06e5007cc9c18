//! `cargo xtask bench parallel [LEVELS]`: many verifications at once. At each
//! level (1, 2, 4, 8 and 16 concurrent clients by default, or a comma list), every
//! client verifies the real Vite React fixture app on one warm dev server, each
//! in its own isolated preview, a few times in a row, and every tool takes its
//! turn on the same machine:
//!
//! - dshkit: one `dshkit mcp --http` with one MCP session per client, one
//!   Chromium for all, one preview session (browser context) per client;
//! - dshkit on browserless (`harness/browser-pool`, admitting as many browsers
//!   as there are clients): the same server with `--browser-ws`, each
//!   verification a browser of the engine's;
//! - Playwright MCP (`--isolated`): one server per client, as an agent host
//!   starts it, each with its own browser;
//! - agent-browser: one `agent-browser mcp` per client with a session of its own,
//!   each session a daemon with its own browser.
//!
//! A verification is the same work for all: load the app, click Increment, see
//! "Count is 1", read the console, take a screenshot. Printed per tool and level:
//! verifications per minute, p50 and p95 latency, and the peak proportional memory
//! (PSS) of everything the tool started. It writes `parallel-throughput.svg` and
//! `parallel-memory.svg` under `target/bench/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::bench::{HttpClient, StdioClient, float, initialize, percentile};
use crate::bench_scale::trees_pss_kib;

/// Timed verifications each client makes in a row, after one untimed warm-up.
const ROUNDS: usize = 3;
/// The levels of concurrency measured unless named on the command line.
const LEVELS: &[usize] = &[1, 2, 4, 8, 16];
/// How often the memory sampler looks at the tools' processes.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// The tools, in the order of the table and the pictures.
const TOOLS: [&str; 4] = [
    "dshkit",
    "dshkit on browserless",
    "Playwright MCP",
    "agent-browser",
];
/// The peers dshkit's own-browser figures are compared with.
const PEERS: [&str; 2] = ["Playwright MCP", "agent-browser"];

/// One tool at one level.
struct Measured {
    tool: &'static str,
    clients: usize,
    per_minute: f64,
    p50: Duration,
    p95: Duration,
    peak_pss_kib: u64,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let levels: Vec<usize> = match args.first() {
        Some(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .with_context(|| format!("a level is a number, not `{n}`"))
            })
            .collect::<anyhow::Result<_>>()?,
        None => LEVELS.to_vec(),
    };
    if levels.iter().any(|n| !(1..=16).contains(n)) {
        bail!(
            "levels go from 1 to 16 (each peer client starts a browser of its own: more do not fit the machine)"
        );
    }
    let (peers, dshkit) = crate::bench::prepare()?;
    let agent_browser = crate::setup::agent_browser()?;
    let app = peers.dir.join("apps/vite-react");
    let work = std::env::temp_dir().join(format!("dshkit-bench-parallel-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let path = std::env::join_paths(std::iter::once(peers.node_bin_dir()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    // The dev server belongs to a dshkit of its own, so no tool's memory counts it.
    let mut server_owner = StdioClient::start(
        Command::new(&dshkit)
            .args(["mcp", "--tools", "liveloop", "--allow-run", "--workspace"])
            .arg(&app)
            .env("HOME", work.join("server"))
            .env("PATH", &path),
    )?;
    let started = server_owner.call_tool(1, "liveloop_runtime", &json!({"operation": "start"}))?;
    let url = started["structuredContent"]["servers"][0]["url"]
        .as_str()
        .context("no URL from liveloop_runtime")?
        .to_owned();
    println!(
        "{ROUNDS} verifications in a row per client, after a warm-up, on one warm Vite React dev server ({url}); load, click Increment, see \"Count is 1\", console, screenshot"
    );
    println!(
        "dshkit: one `mcp --http`, one MCP session and preview per client (on browserless 2.42: a browser of the engine's per verification, the engine admitting one per client); Playwright MCP 0.0.83 --isolated: one server per client; agent-browser 0.41.2: one `mcp` and session per client; all on {}",
        crate::bench::chromium().display()
    );
    println!(
        "{:<22} {:>7} {:>14} {:>10} {:>10} {:>12}",
        "tool", "clients", "verif./minute", "p50", "p95", "peak PSS"
    );
    let mut results = Vec::new();
    for &clients in &levels {
        for tool in TOOLS {
            let measured = match tool {
                "dshkit" => dshkit_level(&dshkit, &work, &url, clients, None)?,
                "dshkit on browserless" => {
                    let pool = Pool::start(&peers, &work.join(format!("pool-{clients}")), clients)?;
                    dshkit_level(&dshkit, &work, &url, clients, Some(&pool))?
                }
                _ => peer_level(tool, clients, &url, |i| {
                    start_peer(tool, &peers, &agent_browser, &work, i)
                })?,
            };
            println!(
                "{:<22} {:>7} {:>14.1} {:>10} {:>10} {:>12}",
                measured.tool,
                measured.clients,
                measured.per_minute,
                millis(measured.p50),
                millis(measured.p95),
                crate::bench::mib(measured.peak_pss_kib)
            );
            results.push(measured);
        }
    }
    drop(server_owner);
    // Whatever session daemons of agent-browser are left end with its own close.
    StdioClient::start(&mut crate::bench_browser::agent_browser_command(
        &agent_browser,
        &work,
    ))?
    .call_tool(1, "agent_browser_close", &json!({"all": true}))?;
    let _ = std::fs::remove_dir_all(&work);
    ratios(&results);
    pictures(&results)?;
    crate::bench_curves::all(&peers, &dshkit, &agent_browser)
}

/// The throughput and memory curves as SVG under `target/bench/`.
fn pictures(results: &[Measured]) -> anyhow::Result<()> {
    let out = crate::root().join("target/bench");
    std::fs::create_dir_all(&out)?;
    crate::plot::lines(
        &out.join("parallel-throughput.svg"),
        "Verifications per minute against concurrent clients (2 cores)",
        ("concurrent clients", crate::plot::XScale::Log),
        "verifications per minute",
        crate::plot::YScale::Linear,
        &series(results, |m| m.per_minute),
    )?;
    crate::plot::lines(
        &out.join("parallel-memory.svg"),
        "Peak memory (PSS, MiB) against concurrent clients",
        ("concurrent clients", crate::plot::XScale::Log),
        "MiB",
        crate::plot::YScale::Linear,
        &series(results, |m| float(m.peak_pss_kib) / 1024.0),
    )?;
    println!(
        "pictures: {0}/parallel-throughput.svg, {0}/parallel-memory.svg",
        out.display()
    );
    Ok(())
}

/// dshkit's throughput at each level against each peer's, as ratios.
fn ratios(results: &[Measured]) {
    for clients in results
        .iter()
        .map(|m| m.clients)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let at = |tool: &str| results.iter().find(|m| m.tool == tool && m.clients == clients);
        let Some(ours) = at("dshkit") else { continue };
        let words: Vec<String> = PEERS
            .iter()
            .filter_map(|peer| {
                let theirs = at(peer)?;
                Some(format!(
                    "{:.2}x {peer}'s throughput at {:.2}x its memory",
                    ours.per_minute / theirs.per_minute,
                    float(ours.peak_pss_kib) / float(theirs.peak_pss_kib.max(1))
                ))
            })
            .collect();
        println!("at {clients} client(s), dshkit: {}", words.join("; "));
    }
}

fn series(results: &[Measured], value: impl Fn(&Measured) -> f64) -> Vec<(&'static str, Vec<(f64, f64)>)> {
    TOOLS
        .iter()
        .map(|tool| {
            let points = results
                .iter()
                .filter(|m| m.tool == *tool)
                .map(|m| (float(m.clients as u64), value(m)))
                .collect();
            (*tool, points)
        })
        .collect()
}

/// Samples the PSS of the processes `roots` names (and their descendants) until
/// stopped; returns the peak.
fn sample_peak(
    roots: impl Fn() -> Vec<u32> + Send + 'static,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        while !stopped.load(Ordering::Relaxed) {
            let now = trees_pss_kib(&roots());
            peak = peak.max(now);
            std::thread::sleep(SAMPLE_EVERY);
        }
        peak
    });
    (stop, sampler)
}

fn millis(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

fn measured(
    tool: &'static str,
    clients: usize,
    wall: Duration,
    mut latencies: Vec<Duration>,
    peak: u64,
) -> Measured {
    Measured {
        tool,
        clients,
        per_minute: float(latencies.len() as u64) * 60.0 / wall.as_secs_f64(),
        p50: percentile(&mut latencies, 0.50),
        p95: percentile(&mut latencies, 0.95),
        peak_pss_kib: peak,
    }
}

/// browserless on loopback (`harness/browser-pool`), admitting `clients`
/// browsers at once, with a token of this run.
struct Pool {
    engine: crate::bench::Killed,
    endpoint: String,
    token: String,
}

impl Pool {
    fn start(peers: &crate::setup::Peers, state: &Path, clients: usize) -> anyhow::Result<Self> {
        let dir = crate::setup::browser_pool(peers)?;
        std::fs::create_dir_all(state)?;
        let token = format!("bench-{}-{clients}", std::process::id());
        let mut engine = crate::bench::Killed(
            Command::new(dir.join("node_modules/node/bin/node"))
                .arg("start.mjs")
                .current_dir(&dir)
                .env("HOME", state)
                .env("TMPDIR", state)
                .env("POOL_STATE_DIR", state)
                .env("TOKEN", &token)
                .env("CONCURRENT", clients.to_string())
                .env("QUEUED", clients.to_string())
                .env("TIMEOUT", "300000")
                .env("CHROMIUM", crate::bench::chromium())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()?,
        );
        let stdout = engine.0.stdout.take().context("the engine's stdout")?;
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        let endpoint = loop {
            let line = lines.next().context("the engine ended before it listened")??;
            if let Some(at) = line.split("browser-pool: listening on ").nth(1) {
                break at.trim().to_owned();
            }
        };
        // Keep reading, so the engine never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Self {
            engine,
            endpoint,
            token,
        })
    }
}

fn dshkit_level(
    dshkit: &Path,
    work: &Path,
    url: &str,
    clients: usize,
    pool: Option<&Pool>,
) -> anyhow::Result<Measured> {
    let home = work.join(format!("dshkit-{clients}-{}", pool.is_some()));
    std::fs::create_dir_all(&home)?;
    let (process, endpoint, token) = spawn_dshkit(dshkit, &home, pool)?;
    let mut roots = vec![process.0.id()];
    roots.extend(pool.map(|pool| pool.engine.0.id()));
    let (stop, sampler) = sample_peak(move || roots.clone());
    // On a pool each verification's preview is a browser of the engine's, given
    // back after its report: every round names the app, not a kept session.
    let reuse = pool.is_none();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (wall, latencies) = runtime.block_on(async {
        let mut sessions = Vec::new();
        for _ in 0..clients {
            let mut client = HttpClient {
                client: reqwest::Client::new(),
                url: endpoint.clone(),
                token: Some(token.clone()),
                session: None,
            };
            client.post(&initialize(0)).await?;
            client
                .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await?;
            // The warm-up opens the client's preview; the timed rounds reuse it.
            let warm = verify_over_http(&mut client, 1, &json!({"appUrl": url})).await?;
            let target = match warm["session"].as_str() {
                Some(session) if reuse => json!({"session": session}),
                _ => json!({"appUrl": url}),
            };
            sessions.push((client, target));
        }
        let began = Instant::now();
        let tasks: Vec<_> = sessions
            .into_iter()
            .map(|(mut client, target)| {
                tokio::spawn(async move {
                    let mut times = Vec::new();
                    for round in 0..ROUNDS {
                        let start = Instant::now();
                        verify_over_http(&mut client, 10 + round, &target).await?;
                        times.push(start.elapsed());
                    }
                    anyhow::Ok(times)
                })
            })
            .collect();
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await??);
        }
        anyhow::Ok((began.elapsed(), latencies))
    })?;
    stop.store(true, Ordering::Relaxed);
    let peak = sampler
        .join()
        .map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?;
    drop(process);
    let tool = if pool.is_some() { TOOLS[1] } else { TOOLS[0] };
    Ok(measured(tool, clients, wall, latencies, peak))
}

/// One `liveloop_verify` of the Increment story; fails unless VERIFIED.
async fn verify_over_http(client: &mut HttpClient, id: usize, target: &Value) -> anyhow::Result<Value> {
    let mut arguments = json!({
        "steps": [{"action": "click", "role": "button", "name": "Increment"}],
        "assertions": [{"kind": "text_present", "text": "Count is 1"}, {"kind": "no_console_errors"}]
    });
    for (key, value) in target.as_object().into_iter().flatten() {
        arguments[key] = value.clone();
    }
    let reply = client
        .post(&crate::bench::call(id, "liveloop_verify", &arguments))
        .await?
        .context("no reply")?;
    let report = reply["result"]["structuredContent"].clone();
    if report["verdict"] != "VERIFIED" {
        bail!("dshkit verdict {}: {}", report["verdict"], reply);
    }
    Ok(report)
}

/// `dshkit mcp --http` with the LiveLoop tools, its own Chromium and evidence
/// root, and the most preview sessions the settings allow.
fn spawn_dshkit(
    dshkit: &Path,
    home: &Path,
    pool: Option<&Pool>,
) -> anyhow::Result<(crate::bench::Killed, String, String)> {
    let settings = home.join("config/dshkit");
    std::fs::create_dir_all(&settings)?;
    std::fs::write(
        settings.join("settings.json"),
        json!({"previewLimit": 16}).to_string(),
    )?;
    let mut flags = vec!["--tools", "liveloop"];
    let mut env = vec![
        ("XDG_CONFIG_HOME", home.join("config").into_os_string()),
        ("DSHKIT_CHROMIUM", crate::bench::chromium().into_os_string()),
        ("DSHKIT_EVIDENCE_ROOT", home.join("evidence").into_os_string()),
    ];
    if let Some(pool) = pool {
        flags.extend(["--browser-ws", pool.endpoint.as_str()]);
        env.push(("DSHKIT_BROWSER_POOL_TOKEN", pool.token.clone().into()));
    }
    crate::bench::spawn_dshkit_http_with(dshkit, home, &flags, &env)
}

#[derive(Clone, Copy)]
enum Flavour {
    Playwright,
    AgentBrowser,
}

/// One peer MCP server of one client.
struct Peer {
    client: StdioClient,
    flavour: Flavour,
    id: usize,
}

impl Peer {
    fn start(mut command: Command, flavour: Flavour) -> anyhow::Result<Self> {
        Ok(Self {
            client: StdioClient::start(&mut command)?,
            flavour,
            id: 0,
        })
    }

    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<String> {
        self.id += 1;
        let result = self.client.call_tool(self.id, tool, arguments)?;
        Ok(crate::bench_verify::text_of(&result))
    }

    /// Opens `url` and reads its snapshot once: a preview kept open.
    fn open(&mut self, url: &str) -> anyhow::Result<()> {
        let (open, snapshot) = match self.flavour {
            Flavour::Playwright => ("browser_navigate", "browser_snapshot"),
            Flavour::AgentBrowser => ("agent_browser_open", "agent_browser_snapshot"),
        };
        self.call(open, &json!({"url": url}))?;
        self.call(snapshot, &json!({}))?;
        Ok(())
    }

    /// The same story as dshkit's verification, as the peer's tool calls.
    fn verify(&mut self, url: &str) -> anyhow::Result<()> {
        let (open, snapshot, click, screenshot) = match self.flavour {
            Flavour::Playwright => (
                "browser_navigate",
                "browser_snapshot",
                "browser_click",
                "browser_take_screenshot",
            ),
            Flavour::AgentBrowser => (
                "agent_browser_open",
                "agent_browser_snapshot",
                "agent_browser_click",
                "agent_browser_screenshot",
            ),
        };
        self.call(open, &json!({"url": url}))?;
        // A peer answers a navigation before the app has rendered: ask for
        // snapshots until the button shows (bounded).
        let mut target = None;
        for _ in 0..50 {
            let text = self.call(snapshot, &json!({}))?;
            if let Ok(found) = crate::bench_verify::playwright_ref(&text, "Increment") {
                target = Some(found);
                break;
            }
        }
        let target = target.context("the peer never saw the Increment button")?;
        let arguments = match self.flavour {
            Flavour::Playwright => json!({"element": "Increment button", "target": target}),
            Flavour::AgentBrowser => json!({"selector": format!("@{target}")}),
        };
        let mut after = self.call(click, &arguments)?;
        if !after.contains("Count is 1") {
            after = self.call(snapshot, &json!({}))?;
        }
        if !after.contains("Count is 1") {
            bail!("the peer did not see the count change");
        }
        // agent-browser's MCP has no console tool: its story reads no console.
        if matches!(self.flavour, Flavour::Playwright) {
            self.call("browser_console_messages", &json!({"level": "error"}))?;
        }
        self.call(screenshot, &json!({}))?;
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if matches!(self.flavour, Flavour::AgentBrowser) {
            // Its daemon outlives the MCP process by design: end this client's
            // session (and only it: `all` would end the other clients' too).
            let _ = self.call("agent_browser_close", &json!({}));
        }
    }
}

/// Starts client `index`'s own server of the peer `tool`, as the parallel
/// verifications and the session curve start it.
fn start_peer(
    tool: &str,
    peers: &crate::setup::Peers,
    agent_browser: &Path,
    work: &Path,
    index: usize,
) -> anyhow::Result<Peer> {
    if tool == "Playwright MCP" {
        Peer::start(
            crate::bench_browser::playwright_command(peers, &work.join(format!("pw-{index}"))),
            Flavour::Playwright,
        )
    } else {
        let mut command = crate::bench_browser::agent_browser_command(agent_browser, work);
        command.env("AGENT_BROWSER_SESSION", format!("parallel-{index}"));
        Peer::start(command, Flavour::AgentBrowser)
    }
}

/// The memory of each peer holding `count` isolated previews of the page at
/// `url` at once (a server and browser each, started side by side), once it
/// settles: (tool, PSS in KiB) per peer.
pub(crate) fn peer_session_memory(
    peers: &crate::setup::Peers,
    agent_browser: &Path,
    work: &Path,
    url: &str,
    count: usize,
) -> anyhow::Result<Vec<(&'static str, u64)>> {
    let mut measured = Vec::new();
    for tool in PEERS {
        let opened: Vec<anyhow::Result<Peer>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..count)
                .map(|i| {
                    scope.spawn(move || {
                        let mut peer = start_peer(tool, peers, agent_browser, work, i)?;
                        peer.open(url)?;
                        anyhow::Ok(peer)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a client panicked")))
                })
                .collect()
        });
        let opened: Vec<Peer> = opened.into_iter().collect::<anyhow::Result<_>>()?;
        let pids: Vec<u32> = opened.iter().map(|p| p.client.pid()).collect();
        let pss = crate::bench_scale::settled_pss_kib(peer_roots(&pids, tool));
        drop(opened);
        measured.push((tool, pss));
    }
    Ok(measured)
}

fn peer_level(
    tool: &'static str,
    clients: usize,
    url: &str,
    start: impl Fn(usize) -> anyhow::Result<Peer> + Sync,
) -> anyhow::Result<Measured> {
    let barrier = Arc::new(Barrier::new(clients + 1));
    let mut latencies = Vec::new();
    let mut pids = Vec::new();
    let mut peak = 0;
    let mut wall = Duration::ZERO;
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let (pid_tx, pid_rx) = std::sync::mpsc::channel();
        let handles: Vec<_> = (0..clients)
            .map(|i| {
                let (barrier, pid_tx, start) = (Arc::clone(&barrier), pid_tx.clone(), &start);
                scope.spawn(move || -> anyhow::Result<Vec<Duration>> {
                    let warmed = start(i).and_then(|mut peer| {
                        peer.verify(url)?;
                        Ok(peer)
                    });
                    let _ = pid_tx.send(warmed.as_ref().map(|p| p.client.pid()).ok());
                    barrier.wait();
                    let mut peer = warmed?;
                    let mut times = Vec::new();
                    for _ in 0..ROUNDS {
                        let began = Instant::now();
                        peer.verify(url)?;
                        times.push(began.elapsed());
                    }
                    Ok(times)
                })
            })
            .collect();
        drop(pid_tx);
        pids.extend(pid_rx.iter().take(clients).flatten());
        let roots = peer_roots(&pids, tool);
        let (stop, sampler) = sample_peak(roots);
        barrier.wait();
        let began = Instant::now();
        for handle in handles {
            latencies.extend(
                handle
                    .join()
                    .map_err(|_| anyhow::anyhow!("a client panicked"))??,
            );
        }
        wall = began.elapsed();
        stop.store(true, Ordering::Relaxed);
        peak = sampler
            .join()
            .map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?;
        Ok(())
    })?;
    Ok(measured(tool, clients, wall, latencies, peak))
}

/// The processes whose trees make up a peer's cost: its MCP servers, and for
/// agent-browser also its session daemons (which are not their children).
fn peer_roots(pids: &[u32], tool: &str) -> impl Fn() -> Vec<u32> + Send + 'static {
    let servers = pids.to_vec();
    let daemons = tool == "agent-browser";
    let binary: Option<PathBuf> = servers
        .first()
        .and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok());
    move || {
        let mut roots = servers.clone();
        if daemons && let Some(binary) = &binary {
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                if !roots.contains(&pid)
                    && std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == *binary)
                {
                    roots.push(pid);
                }
            }
        }
        roots
    }
}
