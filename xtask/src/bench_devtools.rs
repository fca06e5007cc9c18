//! `cargo xtask bench devtools`: the Cordis DevTools collector's cost per dispatch
//! on the real `@deepseek-ai/cordis` (1M emits of an event with one listener),
//! against the same runtime without a collector, in one Node process.

use std::process::Command;

use anyhow::Context;

pub(crate) fn run() -> anyhow::Result<()> {
    let (peers, _dshkit) = crate::bench::prepare()?;
    let root = crate::root();
    let cordis = root.join("target/peers/dsh-testbed/node_modules/@deepseek-ai/cordis/lib/index.js");
    let registry = std::env::temp_dir().join(format!("dshkit-bench-devtools-{}", std::process::id()));
    let output = Command::new(peers.node())
        .arg(root.join("harness/devtools-bench/emit.mjs"))
        .arg(&cordis)
        .arg(root.join("packages/dsh-plugin/devtools.js"))
        .arg(&registry)
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
    let (none, idle, attached, floor) = (ns("none"), ns("idle"), ns("attached"), ns("floor"));
    println!(
        "Cordis emit with one listener, median of 100 batches of 10 000 (Node {}):",
        peers.node().display()
    );
    println!("  no collector:                 {none:>9.0} ns per emit");
    println!(
        "  collector, no core attached:  {idle:>9.0} ns per emit ({:+.0} ns, {:.2}x)",
        idle - none,
        idle / none
    );
    println!(
        "  collector, one core attached: {attached:>9.0} ns per emit ({:+.0} ns, {:.2}x; {} bytes of facts sent)",
        attached - none,
        attached / none,
        result["attachedBytes"]
    );
    println!(
        "  floor, a no-op internal/dispatch observer: {floor:>9.0} ns per emit ({:+.0} ns): what Cordis costs any observer",
        floor - none
    );
    println!(
        "attached, the collector adds {:+.0} ns over that floor (goal: under 1000 ns added per dispatch at p50)",
        attached - floor
    );
    Ok(())
}
