//! `cargo xtask bench browser`: dshkit's `liveloop_browser` against Playwright MCP
//! (`@playwright/mcp`) and agent-browser (`agent-browser mcp`), all on the same
//! Chromium and the same fixture page, in one run: the sequence open (or
//! navigate) → snapshot → click → screenshot, the snapshot size the model reads,
//! and the RSS of each tool's processes.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench::{StdioClient, mib, micros, rss_kib, signed_micros};

/// Timed sequences per tool (after one cold sequence that includes the browser launch).
const SEQUENCES: usize = 10;

/// A page with the parts real apps have: navigation, headings, a form, a list of
/// rows with buttons, and prose.
fn fixture_page() -> String {
    let mut rows = String::new();
    for i in 1..=40 {
        rows.push_str(&format!(
            "<li><span>Task number {i}: review the change and update the docs</span> <button>Done {i}</button></li>"
        ));
    }
    format!(
        "<!doctype html><html><head><title>Bench app</title></head><body>\
         <nav><a href='/'>Home</a> <a href='/tasks'>Tasks</a> <a href='/settings'>Settings</a></nav>\
         <main><h1>Tasks</h1><p>{}</p>\
         <form onsubmit='event.preventDefault()'><label for=t>New task</label> <input id=t placeholder='What needs doing?'>\
         <select aria-label=Priority><option>Low</option><option>High</option></select>\
         <button id=add onclick=\"document.getElementById('out').textContent='added'\">Add</button></form>\
         <p id=out></p><ul>{rows}</ul></main><footer>© bench</footer></body></html>",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(8)
    )
}

pub(crate) fn serve_fixture() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/", listener.local_addr()?);
    let page = fixture_page();
    let page: std::sync::Arc<str> = page.into();
    // A connection of its own thread each: a browser may open a connection and
    // send nothing on it for seconds (a preconnect), which must hold up no other.
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let page = std::sync::Arc::clone(&page);
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer);
                let (status, body) = if buffer.starts_with(b"GET / ") {
                    ("200 OK", &*page)
                } else {
                    ("404 Not Found", "")
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Ok(url)
}

/// The text blocks of a tool result, joined.
fn result_text(result: &Value) -> String {
    result["content"].as_array().map_or_else(String::new, |blocks| {
        blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Finds `[ref=…]` on the line that names the Add button.
fn ref_of_add(snapshot: &str) -> anyhow::Result<String> {
    let line = snapshot
        .lines()
        .find(|l| l.contains("button \"Add\""))
        .context("no Add button in the snapshot")?;
    let start = line.find("[ref=").context("no ref on the Add button")? + 5;
    let end = start + line[start..].find(']').context("unterminated ref")?;
    Ok(line[start..end].to_owned())
}

#[derive(Default)]
struct Run {
    cold: Duration,
    warm: Vec<Duration>,
    steps: [Vec<Duration>; 4],
    snapshot_chars: usize,
    snapshot_json_chars: usize,
    tool_rss_kib: Option<u64>,
}

fn timed<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, Duration)> {
    let start = Instant::now();
    let value = f()?;
    Ok((value, start.elapsed()))
}

pub(crate) fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

trait Driver {
    fn open(&mut self, url: &str) -> anyhow::Result<()>;
    fn snapshot(&mut self) -> anyhow::Result<Value>;
    fn click(&mut self, reference: &str) -> anyhow::Result<()>;
    fn screenshot(&mut self) -> anyhow::Result<()>;
    fn close(&mut self) -> anyhow::Result<()>;
    /// RSS of every process the tool runs (Chromium left out).
    fn rss_kib(&self) -> Option<u64>;
}

/// Starts a tool (its MCP handshake done), right before its first sequence.
type Start<'a> = Box<dyn FnOnce() -> anyhow::Result<Box<dyn Driver>> + 'a>;

impl Run {
    /// Times one sequence of `driver` on `url`, then closes it; the first
    /// (`cold`) also gives the snapshot's sizes.
    fn sequence(&mut self, driver: &mut dyn Driver, url: &str, cold: bool) -> anyhow::Result<()> {
        let start = Instant::now();
        let ((), open) = timed(|| driver.open(url))?;
        let (snapshot, snap) = timed(|| driver.snapshot())?;
        let text = result_text(&snapshot);
        let reference = ref_of_add(&text)?;
        let ((), click) = timed(|| driver.click(&reference))?;
        let ((), shot) = timed(|| driver.screenshot())?;
        let total = start.elapsed();
        driver.close()?;
        if cold {
            self.cold = total;
            self.snapshot_chars = text.chars().count();
            self.snapshot_json_chars = snapshot.to_string().chars().count();
        } else {
            self.warm.push(total);
            for (i, d) in [open, snap, click, shot].into_iter().enumerate() {
                self.steps[i].push(d);
            }
        }
        Ok(())
    }
}

/// One cold sequence per tool (each started just before it, one after the
/// other), then `SEQUENCES` warm rounds in which the tools take turns sequence
/// by sequence, each round starting one tool further on: a slow spell of the
/// shared machine falls on every tool alike, as it did not when each tool ran
/// its sequences in a block of its own. The runs come back in `starts`' order.
fn measure(starts: Vec<Start<'_>>, url: &str) -> anyhow::Result<Vec<Run>> {
    let mut drivers = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    for start in starts {
        let mut driver = start()?;
        let mut run = Run::default();
        run.sequence(driver.as_mut(), url, true)?;
        drivers.push(driver);
        runs.push(run);
    }
    for round in 0..SEQUENCES {
        let first = round % drivers.len();
        for index in (first..drivers.len()).chain(0..first) {
            runs[index].sequence(drivers[index].as_mut(), url, false)?;
        }
    }
    for (run, driver) in runs.iter_mut().zip(&drivers) {
        run.tool_rss_kib = driver.rss_kib();
    }
    Ok(runs)
}

struct Dshkit {
    client: StdioClient,
    session: String,
    id: usize,
    /// Navigate within one preview instead of opening a fresh one per sequence.
    reuse: bool,
}

impl Dshkit {
    fn call(&mut self, arguments: &Value) -> anyhow::Result<Value> {
        self.id += 1;
        self.client.call_tool(self.id, "liveloop_browser", arguments)
    }
}

impl Driver for Dshkit {
    fn open(&mut self, url: &str) -> anyhow::Result<()> {
        if self.reuse && !self.session.is_empty() {
            let session = self.session.clone();
            return self
                .call(&json!({"operation": "navigate", "session": session, "url": url}))
                .map(drop);
        }
        let result = self.call(&json!({"operation": "open", "url": url}))?;
        result["structuredContent"]["session"]
            .as_str()
            .context("session id")?
            .clone_into(&mut self.session);
        Ok(())
    }
    fn snapshot(&mut self) -> anyhow::Result<Value> {
        let session = self.session.clone();
        self.call(&json!({"operation": "snapshot", "session": session}))
    }
    fn click(&mut self, reference: &str) -> anyhow::Result<()> {
        let session = self.session.clone();
        self.call(&json!({"operation": "click", "session": session, "ref": reference}))
            .map(drop)
    }
    fn screenshot(&mut self) -> anyhow::Result<()> {
        let session = self.session.clone();
        self.call(&json!({"operation": "screenshot", "session": session}))
            .map(drop)
    }
    fn close(&mut self) -> anyhow::Result<()> {
        if self.reuse {
            return Ok(());
        }
        let session = std::mem::take(&mut self.session);
        self.call(&json!({"operation": "close", "session": session}))
            .map(drop)
    }
    fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.client.pid())
    }
}

struct Playwright {
    client: StdioClient,
    id: usize,
    /// Keep the page between sequences; otherwise `browser_close` after each, the
    /// peer's only way to start the next sequence isolated.
    reuse: bool,
}

impl Playwright {
    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<Value> {
        self.id += 1;
        self.client.call_tool(self.id, tool, arguments)
    }
}

impl Driver for Playwright {
    fn open(&mut self, url: &str) -> anyhow::Result<()> {
        self.call("browser_navigate", &json!({"url": url})).map(drop)
    }
    fn snapshot(&mut self) -> anyhow::Result<Value> {
        self.call("browser_snapshot", &json!({}))
    }
    fn click(&mut self, reference: &str) -> anyhow::Result<()> {
        self.call(
            "browser_click",
            &json!({"element": "Add button", "target": reference}),
        )
        .map(drop)
    }
    fn screenshot(&mut self) -> anyhow::Result<()> {
        self.call("browser_take_screenshot", &json!({})).map(drop)
    }
    fn close(&mut self) -> anyhow::Result<()> {
        if self.reuse {
            return Ok(());
        }
        self.call("browser_close", &json!({})).map(drop)
    }
    fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.client.pid())
    }
}

/// `agent-browser mcp`: one MCP process that hands each call to the session's
/// daemon, which drives the browser.
struct AgentBrowser {
    client: StdioClient,
    binary: std::path::PathBuf,
    id: usize,
    /// Keep the page between sequences; otherwise close the session after each
    /// (its next `open` launches a new browser, as Playwright MCP's does).
    reuse: bool,
}

impl AgentBrowser {
    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<Value> {
        self.id += 1;
        self.client.call_tool(self.id, tool, arguments)
    }
}

impl Driver for AgentBrowser {
    fn open(&mut self, url: &str) -> anyhow::Result<()> {
        self.call("agent_browser_open", &json!({"url": url})).map(drop)
    }
    fn snapshot(&mut self) -> anyhow::Result<Value> {
        self.call("agent_browser_snapshot", &json!({}))
    }
    fn click(&mut self, reference: &str) -> anyhow::Result<()> {
        self.call(
            "agent_browser_click",
            &json!({"selector": format!("@{reference}")}),
        )
        .map(drop)
    }
    fn screenshot(&mut self) -> anyhow::Result<()> {
        self.call("agent_browser_screenshot", &json!({})).map(drop)
    }
    fn close(&mut self) -> anyhow::Result<()> {
        if self.reuse {
            return Ok(());
        }
        self.call("agent_browser_close", &json!({})).map(drop)
    }
    /// The MCP process and its daemon (every process of the peer's executable).
    fn rss_kib(&self) -> Option<u64> {
        let mut total = 0;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == self.binary) {
                total += rss_kib(pid).unwrap_or(0);
            }
        }
        (total > 0).then_some(total)
    }
}

impl Drop for AgentBrowser {
    /// The daemon outlives the MCP process by design: close every session (which
    /// ends the daemon and its browser).
    fn drop(&mut self) {
        let _ = self.call("agent_browser_close", &json!({"all": true}));
    }
}

/// A short directory of this run for agent-browser's daemon socket.
fn socket_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ab-{}", std::process::id()))
}

/// `agent-browser mcp` on the same Chromium (its own `--no-sandbox`, as root), a
/// session and HOME of its own.
pub(crate) fn agent_browser_command(binary: &std::path::Path, work: &std::path::Path) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("mcp")
        .env("HOME", work.join("agent-browser"))
        .env("AGENT_BROWSER_EXECUTABLE_PATH", crate::bench::chromium())
        .env("AGENT_BROWSER_ARGS", "--no-sandbox,--disable-gpu")
        .env("AGENT_BROWSER_SESSION", "bench")
        // Its daemon's Unix socket path must stay under 104 bytes.
        .env("AGENT_BROWSER_SOCKET_DIR", socket_dir());
    command
}

/// `@playwright/mcp` on the same Chromium, headless, isolated, a desktop viewport.
pub(crate) fn playwright_command(peers: &crate::setup::Peers, work: &std::path::Path) -> Command {
    let mut command = Command::new(peers.node());
    command
        .arg(peers.mcp_modules().join("@playwright/mcp/cli.js"))
        .args(["--headless", "--isolated", "--no-sandbox", "--executable-path"])
        .arg(crate::bench::chromium())
        .args(["--viewport-size", "1280x800", "--output-dir"])
        .arg(work.join("playwright"))
        .env("HOME", work);
    command
}

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, dshkit_binary) = crate::bench::prepare()?;
    let agent_browser = crate::setup::agent_browser()?;
    let url = serve_fixture()?;
    let work = std::env::temp_dir().join(format!("dshkit-bench-browser-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    println!(
        "Browser tool sequence open → snapshot → click → screenshot on one fixture page, {SEQUENCES} warm sequences each, the tools taking turns sequence by sequence"
    );
    println!(
        "dshkit: liveloop_browser over MCP stdio; peers: @playwright/mcp 0.0.83 --headless --isolated and agent-browser 0.41.2 mcp, same {}",
        crate::bench::chromium().display()
    );
    let mut reused = None;
    for reuse in [false, true] {
        let starts: Vec<Start<'_>> = vec![
            Box::new(|| {
                Ok(Box::new(Dshkit {
                    client: StdioClient::start(
                        Command::new(&dshkit_binary)
                            .args(["mcp", "--tools", "liveloop"])
                            .env("DSHKIT_CHROMIUM", crate::bench::chromium())
                            .env("DSHKIT_EVIDENCE_ROOT", work.join("evidence"))
                            .env("HOME", &work),
                    )?,
                    session: String::new(),
                    id: 0,
                    reuse,
                }))
            }),
            Box::new(|| {
                Ok(Box::new(Playwright {
                    client: StdioClient::start(&mut playwright_command(&peers, &work))?,
                    id: 0,
                    reuse,
                }))
            }),
            Box::new(|| {
                std::fs::create_dir_all(work.join("agent-browser"))?;
                std::fs::create_dir_all(socket_dir())?;
                Ok(Box::new(AgentBrowser {
                    client: StdioClient::start(&mut agent_browser_command(&agent_browser, &work))?,
                    binary: agent_browser.clone(),
                    id: 0,
                    reuse,
                }))
            }),
        ];
        let [ours, peer, agent_run]: [Run; 3] = measure(starts, &url)?
            .try_into()
            .map_err(|_| anyhow::anyhow!("a run per tool"))?;
        if reuse {
            println!(
                "\nreuse: each tool keeps one page and navigates it (dshkit: navigate in one preview; the issue's sequence navigate → snapshot → click → screenshot)"
            );
        } else {
            println!(
                "\nfresh: every sequence starts isolated (dshkit: a new preview context; the peers: close, then a new browser)"
            );
        }
        report(&ours, &[("Playwright MCP", &peer), ("agent-browser", &agent_run)]);
        if reuse {
            reused = Some((ours, agent_run));
        }
    }
    spawn_to_first_open(&dshkit_binary, &work, &url)?;
    if let Some((ours, agent_run)) = reused {
        report_floor(&ours, &agent_run, &url)?;
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(socket_dir());
    println!(
        "\ngoals (reuse): sequence p50 <= 200 ms and <= 0.5x agent-browser's, click <= 40 ms, navigate <= 120 ms; snapshot <= 1/3 Playwright MCP's size"
    );
    Ok(())
}

/// The raw-CDP floor of the reuse sequence beside dshkit's steps: what dshkit
/// adds to each, and how far the 0.5x agent-browser goal lies from the floor.
fn report_floor(ours: &Run, agent_browser: &Run, url: &str) -> anyhow::Result<()> {
    let floor = crate::bench_browser_floor::measure(&crate::bench::chromium(), url)?;
    println!(
        "\nthe floor: the same sequence in raw CDP on the same Chromium (each step waits for what dshkit's result promises: a painted frame after a load or a click)"
    );
    println!(
        "{:<22} {:>12} {:>12} {:>12}",
        "", "raw CDP", "dshkit", "dshkit adds"
    );
    let ours_sequence = median(&ours.warm);
    println!(
        "{:<22} {:>12} {:>12} {:>12}",
        "sequence",
        micros(floor.sequence()),
        micros(ours_sequence),
        signed_micros(ours_sequence, floor.sequence())
    );
    for (i, step) in ["  navigate", "  snapshot", "  click", "  screenshot"]
        .iter()
        .enumerate()
    {
        let ours = median(&ours.steps[i]);
        println!(
            "{step:<22} {:>12} {:>12} {:>12}",
            micros(floor.steps[i]),
            micros(ours),
            signed_micros(ours, floor.steps[i])
        );
    }
    let half = median(&agent_browser.warm) / 2;
    println!(
        "0.5x agent-browser's sequence is {}: {} the raw floor ({:.2}x it)",
        micros(half),
        if half < floor.sequence() { "below" } else { "above" },
        half.as_secs_f64() / floor.sequence().as_secs_f64()
    );
    Ok(())
}

/// `cargo xtask bench browser-start`: only the start-up figures (spawn → first
/// open, first open after an idle second), without the peers' sequences.
pub(crate) fn start() -> anyhow::Result<()> {
    let (_peers, dshkit_binary) = crate::bench::prepare()?;
    let url = serve_fixture()?;
    let work = std::env::temp_dir().join(format!("dshkit-bench-start-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let outcome = spawn_to_first_open(&dshkit_binary, &work, &url);
    let _ = std::fs::remove_dir_all(&work);
    outcome
}

/// Spawns of `dshkit mcp` timed to the first `open` result, with the browser
/// prewarmed at startup and without (`--no-prewarm`), interleaved.
fn spawn_to_first_open(binary: &std::path::Path, work: &std::path::Path, url: &str) -> anyhow::Result<()> {
    const SPAWNS: usize = 5;
    let mut at_once: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut after_idle: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let spawn = |extra: Option<&str>| {
        let mut command = Command::new(binary);
        command
            .args(["mcp", "--tools", "liveloop"])
            .args(extra)
            .env("DSHKIT_EVIDENCE_ROOT", work.join("evidence"))
            .env("HOME", work);
        StdioClient::start(&mut command)
    };
    let open = json!({"operation": "open", "url": url});
    for _ in 0..SPAWNS {
        for (slot, extra) in [(0, None), (1, Some("--no-prewarm"))] {
            let start = Instant::now();
            let mut client = spawn(extra)?;
            client.call_tool(1, "liveloop_browser", &open)?;
            at_once[slot].push(start.elapsed());
            client.finish()?;
            // A host that connects, then calls a second later.
            let mut client = spawn(extra)?;
            std::thread::sleep(Duration::from_secs(1));
            let start = Instant::now();
            client.call_tool(1, "liveloop_browser", &open)?;
            after_idle[slot].push(start.elapsed());
            client.finish()?;
        }
    }
    println!(
        "\nspawn → first open result, median of {SPAWNS}: prewarmed {}, --no-prewarm {} (goal: <= 800 ms)",
        micros(median(&at_once[0])),
        micros(median(&at_once[1]))
    );
    println!(
        "first open one idle second after the handshake: prewarmed {}, --no-prewarm {} (goal: <= 250 ms)",
        micros(median(&after_idle[0])),
        micros(median(&after_idle[1]))
    );
    Ok(())
}

/// One row per figure: dshkit, then each peer with its ratio to dshkit (above
/// 1.0x: dshkit is faster or smaller).
fn report(ours: &Run, peers: &[(&str, &Run)]) {
    let mut header = format!("{:<22} {:>12}", "", "dshkit");
    for (name, _) in peers {
        header.push_str(&format!(" {name:>15} {:>6}", "ratio"));
    }
    println!("{header}");
    let row = |name: &str, ours: String, theirs: &dyn Fn(&Run) -> (String, f64)| {
        let mut line = format!("{name:<22} {ours:>12}");
        for (_, run) in peers {
            let (text, ratio) = theirs(run);
            line.push_str(&format!(" {text:>15} {ratio:>5.2}x"));
        }
        println!("{line}");
    };
    let time = |name: &str, pick: &dyn Fn(&Run) -> Duration| {
        let a = pick(ours);
        row(name, micros(a), &|run| {
            let b = pick(run);
            (micros(b), b.as_secs_f64() / a.as_secs_f64())
        });
    };
    time("cold sequence", &|r| r.cold);
    time("warm sequence p50", &|r| median(&r.warm));
    for (i, step) in ["  open", "  snapshot", "  click", "  screenshot"]
        .iter()
        .enumerate()
    {
        time(step, &|r| median(&r.steps[i]));
    }
    #[expect(clippy::cast_precision_loss, reason = "a ratio for display")]
    let ratio = |a: u64, b: u64| b as f64 / a as f64;
    let count = |name: &str, pick: &dyn Fn(&Run) -> u64| {
        let a = pick(ours);
        row(name, a.to_string(), &|run| {
            (pick(run).to_string(), ratio(a, pick(run)))
        });
    };
    count("snapshot text (chars)", &|r| r.snapshot_chars as u64);
    count("snapshot result JSON", &|r| r.snapshot_json_chars as u64);
    if let Some(a) = ours.tool_rss_kib {
        row("tool processes RSS", mib(a), &|run| {
            run.tool_rss_kib
                .map_or_else(|| ("n/a".into(), f64::NAN), |b| (mib(b), ratio(a, b)))
        });
    }
}
