//! `cargo xtask bench curves` (also the end of `bench parallel`): how each
//! capability's cost grows with the size of its work, with the peer in the same
//! run, each curve printed and drawn as an SVG under `target/bench/`:
//!
//! - detection on a generated monorepo of 50 and 500 apps, dshkit against
//!   `@netlify/build-info`;
//! - a cassette of 10 000, 100 000 and 1 000 000 interactions replayed by a cold
//!   process over HTTP, dshkit against mcp-recorder: the time from the spawn to
//!   the answer of the last recorded call, and the peak RSS; and dshkit's first
//!   reply over stdio with two CPU hogs beside it (the 100k goal: <= 0.4 s,
//!   <= 80 MB on a busy machine);
//! - the memory of 1 to 64 preview sessions of the browser benchmark's page in
//!   one dshkit, against Playwright MCP (`--isolated`) and agent-browser holding
//!   1 and 16 isolated previews (a server and browser each: 64 of them would not
//!   fit the machine's 24 GiB).

use std::path::Path;
use std::time::Duration;

use crate::bench::{float, in_scratch_dir, mib, percentile};
use crate::plot::{XScale, YScale};

/// Apps in the generated monorepos, beside the same library packages.
const APPS: [usize; 2] = [50, 500];
/// Library packages in every generated monorepo.
const LIBS: usize = 400;
/// Interactions in the generated cassettes.
const CASSETTES: [usize; 3] = [10_000, 100_000, 1_000_000];
/// Previews the peers hold at once (dshkit goes from 1 to its limit, 64).
const PEER_SESSIONS: [usize; 2] = [1, 16];
/// Busy threads beside the stdio replays: the machine the cassette goal must hold on.
const CPU_HOGS: usize = 2;

/// `bench curves [detect | cassettes | sessions]`: every curve, or the one named.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let (peers, dshkit) = crate::bench::prepare()?;
    match args.first().map(String::as_str) {
        None => all(&peers, &dshkit, &crate::setup::agent_browser()?),
        Some("detect") => detection(&peers, &dshkit, &pictures()?),
        Some("cassettes") => cassettes(&dshkit, &pictures()?),
        Some("sessions") => sessions(&peers, &dshkit, &crate::setup::agent_browser()?, &pictures()?),
        Some(other) => anyhow::bail!("no curve `{other}`: detect, cassettes or sessions"),
    }
}

/// Every curve, in turn.
pub(crate) fn all(peers: &crate::setup::Peers, dshkit: &Path, agent_browser: &Path) -> anyhow::Result<()> {
    let out = pictures()?;
    detection(peers, dshkit, &out)?;
    cassettes(dshkit, &out)?;
    sessions(peers, dshkit, agent_browser, &out)
}

/// Where the pictures go (`target/bench`), made if missing.
fn pictures() -> anyhow::Result<std::path::PathBuf> {
    let out = crate::root().join("target/bench");
    std::fs::create_dir_all(&out)?;
    Ok(out)
}

/// A time in the unit that reads best at its size.
fn readable(d: Duration) -> String {
    let seconds = d.as_secs_f64();
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else {
        format!("{:.1} ms", seconds * 1000.0)
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn detection(peers: &crate::setup::Peers, dshkit: &Path, out: &Path) -> anyhow::Result<()> {
    println!(
        "\nCost curve: detection on one generated monorepo (Next, Vite React, Astro, Nuxt, SvelteKit apps, {LIBS} library packages, 30 node_modules packages per app); p50 of 5 runs after one (1 run after one at 500 apps: the peer's time grows faster than the tree)"
    );
    println!(
        "{:>6} {:>12} {:>22} {:>7} {:>12}",
        "apps", "dshkit", "@netlify/build-info", "ratio", "candidates"
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for apps in APPS {
        let runs = if apps > 100 { 1 } else { 5 };
        let mut measured = crate::bench_verify::detection(peers, dshkit, apps, LIBS, runs)?;
        let (ours_p50, peer_p50) = (
            percentile(&mut measured.ours, 0.5),
            percentile(&mut measured.peer, 0.5),
        );
        println!(
            "{apps:>6} {:>12} {:>22} {:>6.1}x {:>12}",
            readable(ours_p50),
            readable(peer_p50),
            peer_p50.as_secs_f64() / ours_p50.as_secs_f64(),
            format!(
                "{}{}",
                measured.found["candidates"].as_array().map_or(0, Vec::len),
                if measured.found["truncated"] == true {
                    " (cut)"
                } else {
                    ""
                }
            )
        );
        ours.push((float(apps as u64), millis(ours_p50)));
        theirs.push((float(apps as u64), millis(peer_p50)));
    }
    let path = out.join("curve-detect.svg");
    crate::plot::lines(
        &path,
        "Detection time against monorepo size",
        ("apps in the monorepo", XScale::Log),
        "ms (p50, log scale)",
        YScale::Log,
        &[("dshkit", ours), ("@netlify/build-info", theirs)],
    )?;
    println!("picture: {}", path.display());
    Ok(())
}

fn cassettes(dshkit: &Path, out: &Path) -> anyhow::Result<()> {
    let recorder = crate::setup::mcp_recorder()?;
    println!(
        "\nCost curve: a cassette replayed by a cold process, spawn → answer to the last recorded call (HTTP: median of 3, 1 at 1M; stdio: median of 3, idle and with {CPU_HOGS} CPU hogs), peak RSS"
    );
    println!(
        "{:>10} {:>9} {:>22} {:>22} {:>7} {:>22} {:>22}",
        "calls", "file", "dshkit HTTP", "mcp-recorder HTTP", "ratio", "dshkit stdio idle", "stdio, 2 hogs"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut ours, mut theirs, mut busy) = (Vec::new(), Vec::new(), Vec::new());
    in_scratch_dir("curves", |work| {
        for interactions in CASSETTES {
            let cassette = work.join(format!("{interactions}.jsonl"));
            let peer_cassette = work.join(format!("{interactions}-mcp-recorder.json"));
            let bytes = crate::bench_echo::write_cassette(&cassette, interactions)?;
            crate::bench_echo::write_mcp_recorder_cassette(&peer_cassette, interactions)?;
            let rounds = if interactions >= 1_000_000 { 1 } else { 3 };
            let cold = runtime.block_on(crate::bench_echo::cold_http_replies(
                dshkit,
                &recorder,
                &cassette,
                &peer_cassette,
                interactions,
                rounds,
            ))?;
            let (mut idle, mut hogged, mut hogged_peak) = (Vec::new(), Vec::new(), 0);
            for _ in 0..3 {
                idle.push(crate::bench_echo::first_reply_of(dshkit, &cassette, interactions)?.0);
                let hogs = crate::CpuHogs::start(CPU_HOGS);
                let measured = crate::bench_echo::first_reply_of(dshkit, &cassette, interactions);
                drop(hogs);
                let (reply, peak) = measured?;
                hogged.push(reply);
                hogged_peak = hogged_peak.max(peak);
            }
            let (idle, hogged) = (percentile(&mut idle, 0.5), percentile(&mut hogged, 0.5));
            println!(
                "{interactions:>10} {:>9} {:>22} {:>22} {:>6.1}x {:>22} {:>22}",
                mib(bytes / 1024),
                format!("{} {}", readable(cold.ours.0), mib(cold.ours.1)),
                format!("{} {}", readable(cold.theirs.0), mib(cold.theirs.1)),
                cold.theirs.0.as_secs_f64() / cold.ours.0.as_secs_f64(),
                readable(idle),
                format!("{} {}", readable(hogged), mib(hogged_peak)),
            );
            let x = float(interactions as u64);
            ours.push((x, millis(cold.ours.0)));
            theirs.push((x, millis(cold.theirs.0)));
            busy.push((x, millis(hogged)));
            // The files are large (about 300 MiB each at 1M): gone before the next size.
            let _ = std::fs::remove_file(&cassette);
            let _ = std::fs::remove_file(&peer_cassette);
        }
        Ok(())
    })?;
    let path = out.join("curve-cassette.svg");
    crate::plot::lines(
        &path,
        "Cold replay: first reply against cassette size",
        ("interactions in the cassette", XScale::Log),
        "ms to the last call's answer (log scale)",
        YScale::Log,
        &[
            ("dshkit, HTTP", ours),
            ("mcp-recorder, HTTP", theirs),
            ("dshkit, stdio, 2 CPU hogs", busy),
        ],
    )?;
    println!("picture: {}", path.display());
    Ok(())
}

fn sessions(
    peers: &crate::setup::Peers,
    dshkit: &Path,
    agent_browser: &Path,
    out: &Path,
) -> anyhow::Result<()> {
    println!(
        "\nCost curve: memory (PSS of everything each tool started) against preview sessions held at once"
    );
    let url = crate::bench_browser::serve_fixture()?;
    let ours = crate::bench_scale::session_curve(dshkit, &url)?;
    // Per peer: (sessions, PSS in KiB) at each count.
    let mut theirs: Vec<(&str, Vec<(usize, u64)>)> = Vec::new();
    in_scratch_dir("curves-peers", |work| {
        for count in PEER_SESSIONS {
            for (tool, pss) in
                crate::bench_parallel::peer_session_memory(peers, agent_browser, work, &url, count)?
            {
                println!("{tool} holding {count}: {}", mib(pss));
                match theirs.iter_mut().find(|(name, _)| *name == tool) {
                    Some((_, points)) => points.push((count, pss)),
                    None => theirs.push((tool, vec![(count, pss)])),
                }
            }
        }
        Ok(())
    })?;
    for count in PEER_SESSIONS {
        let Some((_, dshkit_pss)) = ours.iter().find(|(n, _)| *n == count) else {
            continue;
        };
        let words: Vec<String> = theirs
            .iter()
            .filter_map(|(tool, points)| {
                let (_, theirs) = points.iter().find(|(n, _)| *n == count)?;
                Some(format!(
                    "{:.2}x {tool}'s memory",
                    float(*dshkit_pss) / float((*theirs).max(1))
                ))
            })
            .collect();
        println!("at {count} session(s), dshkit: {}", words.join("; "));
    }
    let in_mib = |points: &[(usize, u64)]| -> Vec<(f64, f64)> {
        points
            .iter()
            .map(|(n, pss)| (float(*n as u64), float(*pss) / 1024.0))
            .collect()
    };
    let mut series = vec![("dshkit (one process, one browser)", in_mib(&ours))];
    series.extend(theirs.iter().map(|(tool, points)| (*tool, in_mib(points))));
    let path = out.join("curve-sessions.svg");
    crate::plot::lines(
        &path,
        "Memory against preview sessions held at once",
        ("preview sessions", XScale::Linear),
        "MiB (PSS)",
        YScale::Linear,
        &series,
    )?;
    println!("picture: {}", path.display());
    Ok(())
}
