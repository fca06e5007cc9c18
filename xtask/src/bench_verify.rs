//! `cargo xtask bench verify`: a verification on a warm dev server (the real Vite
//! React fixture app) through `liveloop_verify`, against the same steps done through
//! Playwright MCP, in one run.
//!
//! `cargo xtask bench detect`: dshkit's detector against `@netlify/build-info` on
//! the same generated monorepo.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::bench::{StdioClient, micros};

/// Timed verifications per tool, after one untimed warm-up each.
const VERIFICATIONS: usize = 15;

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub(crate) fn text_of(result: &Value) -> String {
    result["content"].as_array().map_or_else(String::new, |blocks| {
        blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The `[ref=…]` on the line naming `button "<name>"` in a Playwright snapshot.
pub(crate) fn playwright_ref(snapshot: &str, name: &str) -> anyhow::Result<String> {
    let needle = format!("button \"{name}\"");
    let line = snapshot
        .lines()
        .find(|l| l.contains(&needle))
        .with_context(|| format!("no {needle} in the snapshot"))?;
    let start = line.find("[ref=").context("no ref")? + 5;
    let end = start + line[start..].find(']').context("unterminated ref")?;
    Ok(line[start..end].to_owned())
}

#[expect(clippy::too_many_lines, reason = "one benchmark reads best as one story")]
pub(crate) fn verify() -> anyhow::Result<()> {
    let (peers, dshkit_binary) = crate::bench::prepare()?;
    let app = peers.dir.join("apps/vite-react");
    let work = std::env::temp_dir().join(format!("dshkit-bench-verify-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let path = std::env::join_paths(std::iter::once(peers.node_bin_dir()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    let mut dshkit = StdioClient::start(
        Command::new(&dshkit_binary)
            .args(["mcp", "--tools", "liveloop", "--allow-run", "--workspace"])
            .arg(&app)
            .env("DSHKIT_CHROMIUM", crate::bench::chromium())
            .env("DSHKIT_EVIDENCE_ROOT", work.join("evidence"))
            .env("HOME", &work)
            .env("PATH", &path),
    )?;
    let started = dshkit.call_tool(1, "liveloop_runtime", &json!({"operation": "start"}))?;
    let server = &started["structuredContent"]["servers"][0];
    let url = server["url"].as_str().context("no URL")?.to_owned();
    let server_id = server["id"].as_str().context("no id")?.to_owned();
    println!(
        "Verify on a warm Vite React dev server ({url}): load fresh, click Increment, check \"Count is 1\", no console errors, screenshot"
    );
    println!(
        "dshkit: one liveloop_verify call per verification (preview reused); peer: @playwright/mcp 0.0.83, the same steps as tool calls"
    );

    let request = json!({
        "steps": [{"action": "click", "role": "button", "name": "Increment"}],
        "assertions": [{"kind": "text_present", "text": "Count is 1"}, {"kind": "no_console_errors"}]
    });
    let mut first = request.clone();
    first["server"] = json!(server_id);
    let warm = dshkit.call_tool(2, "liveloop_verify", &first)?;
    let session = warm["structuredContent"]["session"]
        .as_str()
        .context("session")?
        .to_owned();
    let mut ours = Vec::new();
    let mut overhead = Vec::new();
    let mut loads = Vec::new();
    let mut parts: Vec<(&str, Vec<Duration>)> = ["blankMs", "loadMs", "stepsMs", "collectMs", "screenshotMs"]
        .into_iter()
        .map(|k| (k, Vec::new()))
        .collect();
    for i in 0..VERIFICATIONS {
        let mut call = request.clone();
        call["session"] = json!(session);
        let began = Instant::now();
        let result = dshkit.call_tool(10 + i, "liveloop_verify", &call)?;
        ours.push(began.elapsed());
        let report = &result["structuredContent"];
        if report["verdict"] != "VERIFIED" {
            bail!("dshkit verdict {}: {}", report["verdict"], report["reasons"]);
        }
        let timings = &report["timings"];
        let ms = |key: &str| Duration::from_millis(timings[key].as_u64().unwrap_or(0));
        // One quiet window, after the load; steps settle on evidence, no window.
        overhead.push(ms("totalMs").saturating_sub(ms("quietWindowMs")));
        loads.push(ms("loadMs"));
        for (key, values) in &mut parts {
            values.push(ms(key));
        }
    }

    let mut playwright = StdioClient::start(&mut crate::bench_browser::playwright_command(&peers, &work))?;
    let mut id = 100;
    let mut peer_once = |client: &mut StdioClient| -> anyhow::Result<Duration> {
        let began = Instant::now();
        let mut call = |tool: &str, args: Value| {
            id += 1;
            client.call_tool(id, tool, &args)
        };
        call("browser_navigate", json!({"url": url}))?;
        // The peer answers a navigation before the app has rendered; its snapshot
        // then has no button yet, so ask for snapshots until it appears.
        let mut target = None;
        for _ in 0..50 {
            let snapshot = text_of(&call("browser_snapshot", json!({}))?);
            if let Ok(found) = playwright_ref(&snapshot, "Increment") {
                target = Some(found);
                break;
            }
        }
        let target = target.context("the peer never saw the Increment button")?;
        let clicked = call(
            "browser_click",
            json!({"element": "Increment button", "target": target}),
        )?;
        let mut after = text_of(&clicked);
        if !after.contains("Count is 1") {
            after = text_of(&call("browser_snapshot", json!({}))?);
        }
        if !after.contains("Count is 1") {
            bail!("Playwright MCP did not see the count change");
        }
        call("browser_console_messages", json!({"level": "error"}))?;
        call("browser_take_screenshot", json!({}))?;
        Ok(began.elapsed())
    };
    peer_once(&mut playwright)?;
    let mut peer = Vec::new();
    for _ in 0..VERIFICATIONS {
        peer.push(peer_once(&mut playwright)?);
    }
    drop(playwright);
    dshkit.call_tool(
        1000,
        "liveloop_runtime",
        &json!({"operation": "stop", "server": server_id}),
    )?;
    drop(dshkit);
    let _ = std::fs::remove_dir_all(&work);

    let (ours_p50, peer_p50) = (median(&mut ours), median(&mut peer));
    println!(
        "{:<40} {:>12} {:>14} {:>7}",
        "", "dshkit", "Playwright MCP", "ratio"
    );
    println!(
        "{:<40} {:>12} {:>14} {:>6.1}x",
        "verification p50 (wall, client side)",
        micros(ours_p50),
        micros(peer_p50),
        peer_p50.as_secs_f64() / ours_p50.as_secs_f64()
    );
    println!(
        "dshkit: time beyond its quiet window (100 ms after the load) p50 {}; the load stage p50 {}",
        micros(median(&mut overhead)),
        micros(median(&mut loads))
    );
    let breakdown: Vec<String> = parts
        .iter_mut()
        .map(|(key, values)| format!("{} {}", key.trim_end_matches("Ms"), micros(median(values))))
        .collect();
    println!("dshkit stages p50: {}", breakdown.join(", "));
    println!(
        "dshkit also writes a report, a digest-named PNG and checks a blank-page control; the peer only returns results"
    );
    println!(
        "goal: overhead beyond the quiet window < 150 ms p50 (it includes the app's own module loading here)"
    );
    Ok(())
}

/// Frameworks the generated monorepo mixes, as (dependency, version, config file).
const APPS: &[(&str, &str, &str)] = &[
    ("next", "16.4.6", "next.config.js"),
    ("vite", "8.4.0", "vite.config.js"),
    ("astro", "5.0.0", "astro.config.mjs"),
    ("nuxt", "4.0.0", "nuxt.config.ts"),
    ("@sveltejs/kit", "2.0.0", "svelte.config.js"),
];

/// Writes a monorepo: `apps` apps over the frameworks above, `libs` library
/// packages, each with sources, and `node_modules` folders a detector must prune.
fn monorepo(root: &Path, apps: usize, libs: usize) -> anyhow::Result<()> {
    let write = |path: PathBuf, text: &str| -> anyhow::Result<()> {
        std::fs::create_dir_all(path.parent().context("parent")?)?;
        Ok(std::fs::write(path, text)?)
    };
    write(
        root.join("package.json"),
        r#"{ "name": "bench-monorepo", "private": true, "workspaces": ["apps/*", "packages/*"] }"#,
    )?;
    write(
        root.join("package-lock.json"),
        r#"{ "lockfileVersion": 3, "packages": {} }"#,
    )?;
    for i in 0..apps {
        let (dep, version, config) = APPS[i % APPS.len()];
        let dir = root.join(format!("apps/app-{i}"));
        let extra = if dep == "vite" {
            r#", "react": "19.3.1", "@vitejs/plugin-react": "6.3.0""#
        } else {
            ""
        };
        write(
            dir.join("package.json"),
            &format!(
                r#"{{ "name": "app-{i}", "private": true, "scripts": {{ "dev": "{}", "build": "x" }}, "dependencies": {{ "{dep}": "{version}"{extra} }} }}"#,
                dep.trim_start_matches("@sveltejs/").replace("kit", "vite dev")
            ),
        )?;
        write(dir.join(config), "export default {};\n")?;
        for f in 0..20 {
            write(
                dir.join(format!("src/components/c{f}.jsx")),
                "export const C = () => null;\n",
            )?;
        }
        for m in 0..30 {
            write(
                dir.join(format!("node_modules/dep-{m}/package.json")),
                r#"{ "name": "dep", "scripts": { "dev": "vite" }, "dependencies": { "vite": "1" } }"#,
            )?;
        }
    }
    for i in 0..libs {
        let dir = root.join(format!("packages/lib-{i}"));
        write(
            dir.join("package.json"),
            &format!(r#"{{ "name": "lib-{i}", "version": "1.0.0", "main": "src/index.js" }}"#),
        )?;
        for f in 0..10 {
            write(dir.join(format!("src/m{f}.js")), "export const x = 1;\n")?;
        }
    }
    Ok(())
}

/// What [`detection`] measured.
pub(crate) struct Detection {
    /// dshkit's whole process (`dshkit detect --json`), exec included.
    pub(crate) ours: Vec<Duration>,
    /// The peer in process, Node's start excluded.
    pub(crate) peer: Vec<Duration>,
    /// dshkit's last report.
    pub(crate) found: Value,
    /// The peer's report (`frameworks`, `packages`, `times`).
    pub(crate) peer_report: Value,
}

/// Detection on one generated monorepo of `apps` apps and `libs` library
/// packages: `runs` timed runs of dshkit and of `@netlify/build-info`, each
/// after one untimed.
pub(crate) fn detection(
    peers: &crate::setup::Peers,
    dshkit_binary: &Path,
    apps: usize,
    libs: usize,
    runs: usize,
) -> anyhow::Result<Detection> {
    let root = std::env::temp_dir().join(format!("dshkit-bench-detect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    monorepo(&root, apps, libs)?;
    let mut ours = Vec::new();
    let mut found = Value::Null;
    for _ in 0..=runs {
        let began = Instant::now();
        let out = Command::new(dshkit_binary)
            .args(["detect", "--json"])
            .arg(&root)
            .output()?;
        ours.push(began.elapsed());
        found = serde_json::from_slice(&out.stdout).context("dshkit detect --json")?;
    }
    ours.remove(0);
    let out = Command::new(peers.node())
        .arg(peers.dir.join("detect-peer/detect.mjs"))
        .arg(&root)
        .arg((runs + 1).to_string())
        .output()?;
    let _ = std::fs::remove_dir_all(&root);
    if !out.status.success() {
        bail!(
            "the detection peer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let peer_report: Value = serde_json::from_slice(&out.stdout).context("peer output")?;
    let peer = peer_report["times"]
        .as_array()
        .context("times")?
        .iter()
        .skip(1)
        .filter_map(Value::as_f64)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .collect();
    Ok(Detection {
        ours,
        peer,
        found,
        peer_report,
    })
}

pub(crate) fn detect() -> anyhow::Result<()> {
    let (peers, dshkit_binary) = crate::bench::prepare()?;
    let (apps, libs, runs) = (50, 400, 10);
    println!(
        "Detection on one generated monorepo: {apps} apps (Next, Vite React, Astro, Nuxt, SvelteKit), {libs} library packages, 30 node_modules packages per app"
    );
    let Detection {
        mut ours,
        mut peer,
        found,
        peer_report,
    } = detection(&peers, &dshkit_binary, apps, libs, runs)?;
    let (ours_p50, peer_p50) = (median(&mut ours), median(&mut peer));
    println!(
        "{:<34} {:>12} {:>22} {:>7}",
        "", "dshkit", "@netlify/build-info", "ratio"
    );
    println!(
        "{:<34} {:>12} {:>22} {:>6.1}x",
        "detection p50",
        micros(ours_p50),
        micros(peer_p50),
        peer_p50.as_secs_f64() / ours_p50.as_secs_f64()
    );
    println!(
        "dshkit (whole process, exec included): {} candidates, ambiguous: {}, {} directories visited",
        found["candidates"].as_array().map_or(0, Vec::len),
        found["ambiguous"],
        found["dirsVisited"]
    );
    println!(
        "peer (in-process, Node start excluded): frameworks {}, {} workspace packages",
        peer_report["frameworks"], peer_report["packages"]
    );
    println!("goal: detection >= 10x faster than the peer");
    Ok(())
}
