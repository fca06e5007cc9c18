//! `cargo xtask bench dsh-plugin`: the native DSH plugin's cost, in one run:
//! - a native tool call through the plugin's host half against the same call made
//!   directly to `dshkit mcp` (the plugin's overhead; goal under 1 ms p50);
//! - the sidecar's start (spawn to the `initialize` answer) and the plugin's apply
//!   (`dshkit mcp --describe` and the tool registrations);
//! - the real DSH's boot (`dsh web` to its URL line) without and with the plugin.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::bench::prepare;
use crate::root;

/// Native calls timed per side.
const CALLS: usize = 1000;
/// DSH boots timed per configuration.
const BOOTS: usize = 5;

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, dshkit) = prepare()?;
    let work = std::env::temp_dir().join(format!("dshkit-bench-dsh-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let home = work.join("dsh");
    let dsh = |args: &[&str]| peers.dsh(&work, &home, args);
    let made = dsh(&["web", "--dump-default-config"])
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(made.success(), "dsh --dump-default-config failed");

    let without = boots(&dsh)?;
    let installed = Command::new(&dshkit)
        .args(["dsh", "install", "--no-boot-check", "--dsh-home"])
        .arg(&home)
        .env("HOME", &work)
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(installed.success(), "dshkit dsh install failed");
    let with = boots(&dsh)?;

    let out = Command::new(peers.node())
        .arg(root().join("harness/dsh-plugin-bench/bench.mjs"))
        .arg(root().join("packages/dsh-plugin/index.js"))
        .arg(&dshkit)
        .arg(CALLS.to_string())
        .env("HOME", &work)
        .output()
        .context("running the Node half")?;
    anyhow::ensure!(
        out.status.success(),
        "the Node half failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: serde_json::Value = serde_json::from_slice(&out.stdout).context("the Node half's JSON")?;
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let (direct, plugin) = (&figures["direct"], &figures["plugin"]);
    println!("dsh plugin ({CALLS} calls of liveloop_browser list per side, after warm-up):");
    println!(
        "  direct MCP call      p50 {:.3} ms  p99 {:.3} ms",
        number(&direct["p50"]),
        number(&direct["p99"])
    );
    println!(
        "  native plugin call   p50 {:.3} ms  p99 {:.3} ms  (overhead p50 {:+.3} ms; goal < 1 ms)",
        number(&plugin["p50"]),
        number(&plugin["p99"]),
        number(&plugin["p50"]) - number(&direct["p50"])
    );
    println!(
        "  sidecar start (spawn to initialize answer, direct) {:.1} ms; first native call (lazy start included) {:.1} ms",
        number(&direct["startMs"]),
        number(&plugin["firstCallMs"])
    );
    println!(
        "  plugin apply (mcp --describe + {} registrations) {:.1} ms",
        plugin["toolsRegistered"],
        number(&plugin["applyMs"])
    );
    let (a, b) = (median(without), median(with));
    println!(
        "  dsh web boot, median of {BOOTS}: {} ms without the plugin, {} ms with it ({:+} ms, x{:.2})",
        a.as_millis(),
        b.as_millis(),
        i128::try_from(b.as_millis()).unwrap_or(0) - i128::try_from(a.as_millis()).unwrap_or(0),
        b.as_secs_f64() / a.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Times `dsh web --port 0` to its URL line, [`BOOTS`] times; each boot is ended
/// with SIGTERM and reaped.
fn boots(dsh: &dyn Fn(&[&str]) -> Command) -> anyhow::Result<Vec<Duration>> {
    (0..BOOTS)
        .map(|_| {
            let started = Instant::now();
            let mut child = dsh(&["web", "--port", "0", "--no-open"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            let stdout = child.stdout.take().context("stdout")?;
            let booted = BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|line| line.starts_with("dsh web: "));
            let elapsed = started.elapsed();
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
            anyhow::ensure!(booted, "dsh web printed no URL");
            Ok(elapsed)
        })
        .collect()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}
