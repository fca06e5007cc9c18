//! `cargo xtask <task>`: the developer entry points.
//!
//! - `setup`: install what the tests need (Chromium via apt, the npm peers with
//!   Node 22, the DSH testbed), cached under `target/peers/` by lock hash.
//! - `demo`: set up, build dshkit, run its main job (`dshkit verify` on the example app).
//! - `test [--corpus] [ARGS]`: set up, then run the whole suite with cargo-nextest;
//!   `--corpus` installs every app of the real-framework corpus and runs its slow
//!   (`#[ignore]`d) cases too.
//! - `soak [N] [ARGS]`: the suite (or the tests ARGS select) N times while a CPU hog
//!   keeps every core busy; a test that passes only on an idle machine fails here.
//! - `test-windows`: the Windows build's tests under Wine (see `windows.rs`).
//! - `house`: the house rules measured from the code (see `house.rs`); CI runs it.
//! - `bench <mcp | browser | check>`: set up, build release, run a benchmark against its peer.
//! - `dist [PLATFORM...]`: the npm packages (see `dist.rs`) under `target/dist/npm/`.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a developer CLI reports progress"
)]

mod bare_http;
mod bench;
mod bench_browser;
mod bench_browser_floor;
mod bench_check;
mod bench_curves;
mod bench_devtools;
mod bench_dsh;
mod bench_echo;
mod bench_load;
mod bench_parallel;
mod bench_scale;
mod bench_verify;
mod dist;
mod house;
mod plot;
mod raw_http;
mod setup;
mod windows;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup(&args[1..]),
        Some("demo") => demo(),
        Some("test") => test(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("test-windows") => windows::test(),
        Some("house") => house::run(&args[1..]),
        Some("dist") => dist::main(&args[1..]),
        // The floor `bench echo` measures record against; not for people.
        Some("bare-relay") => bench_echo::bare_relay(&args[1..]),
        // The floor `bench mcp` measures MCP over HTTP against; not for people.
        Some("bare-http") => bare_http::serve(),
        _ => {
            eprintln!(
                "usage: cargo xtask <setup [--corpus] | demo | test [--corpus] [nextest args] | test-windows | house | dist [linux-x64-gnu | linux-x64-musl | win32-x64 ...] | soak [N] [nextest args] | bench <mcp | browser | check | verify | detect | echo> | fuzz [cassette | framing | all] [seconds]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

/// Runs a command, failing with its command line when it fails.
pub(crate) fn run(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .map_err(|e| anyhow::anyhow!("failed to start {command:?}: {e}"))?;
    anyhow::ensure!(status.success(), "{command:?} failed with {status}");
    Ok(())
}

/// `PATH` with Node 22 first, so `node` and `dsh` run on the version DSH needs.
pub(crate) fn path_with(peers: &setup::Peers) -> std::ffi::OsString {
    let mut dirs = vec![peers.node_bin_dir(), peers.dsh_bin_dir()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("PATH entries never contain the separator")
}

/// Builds dshkit and runs its main job: `dshkit verify` on the example app that
/// ships in the repository (a static task list served by dshkit's own loopback
/// server), with steps and assertions; it prints the verdict and the evidence.
fn demo() -> anyhow::Result<()> {
    let peers = setup::all()?;
    run(Command::new(env!("CARGO"))
        .args(["build", "--release", "--package", "dshkit"])
        .current_dir(root()))?;
    let dshkit = root().join("target/release/dshkit");
    let args = [
        "verify",
        "examples/hello-app",
        "--step",
        "fill:textbox=New task=Water the plants",
        "--step",
        "click:button=Add task",
        "--expect-text",
        "Water the plants",
        "--expect-text",
        "1 task",
    ];
    println!(
        "\n$ dshkit {}",
        args.map(|a| if a.contains(' ') {
            format!("'{a}'")
        } else {
            a.to_owned()
        })
        .join(" ")
    );
    let status = Command::new(&dshkit)
        .args(args)
        .current_dir(root())
        .env("PATH", path_with(&peers))
        .status()?;
    anyhow::ensure!(
        status.success(),
        "dshkit verify did not verify the example app (exit {status}); run `dshkit doctor` for the machine's missing pieces"
    );
    Ok(())
}

/// Runs the Echo fuzz targets with cargo-fuzz (libFuzzer, nightly): `cassette`
/// (the reader) and `framing` (JSON-RPC lines into replay), each for `seconds`
/// (default 60), seeded from `fuzz/seeds/`. Installs cargo-fuzz when missing.
fn fuzz(args: &[String]) -> anyhow::Result<()> {
    let targets: Vec<&str> = match args.first().map(String::as_str) {
        None | Some("all") => vec!["cassette", "framing"],
        Some(one @ ("cassette" | "framing")) => vec![one],
        Some(other) => anyhow::bail!("unknown fuzz target `{other}`; use cassette, framing or all"),
    };
    let seconds: u64 = args
        .get(1)
        .map_or(Ok(60), |s| s.parse())
        .map_err(|_| anyhow::anyhow!("seconds must be a number"))?;
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output();
    anyhow::ensure!(
        nightly.is_ok_and(|o| o.status.success()),
        "fuzzing needs the nightly toolchain: rustup toolchain install nightly"
    );
    if Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .map_or(true, |o| !o.status.success())
    {
        eprintln!("xtask: installing cargo-fuzz");
        run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    let fuzz_dir = root().join("fuzz");
    for target in targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        for seed in std::fs::read_dir(fuzz_dir.join("seeds").join(target))? {
            let seed = seed?;
            std::fs::copy(seed.path(), corpus.join(seed.file_name()))?;
        }
        println!("\n$ cargo +nightly fuzz run {target} -- -max_total_time={seconds}");
        run(Command::new("cargo")
            .args([
                "+nightly",
                "fuzz",
                "run",
                target,
                "--",
                &format!("-max_total_time={seconds}"),
            ])
            .current_dir(root()))?;
    }
    Ok(())
}

/// Runs the suite `N` times (default 5) under load: one busy thread per core spins
/// for the whole soak, so every test competes for the CPU as on a shared CI
/// machine. Extra arguments go to nextest (a filter such as `-E 'test(/echo/)'`).
/// Prints one line per run and a summary; fails if any run failed.
fn soak(args: &[String]) -> anyhow::Result<()> {
    let (runs, extra) = match args.first().map(|a| a.parse::<u32>()) {
        Some(Ok(n)) => (n, &args[1..]),
        _ => (5, args),
    };
    setup::all()?;
    let nextest = || {
        let mut command = Command::new(env!("CARGO"));
        command
            .args(["nextest", "run", "--workspace", "--profile", "ci"])
            .args(extra)
            .current_dir(root());
        command
    };
    // Build before the hog starts: the soak measures the tests, not the compiler.
    run(nextest().arg("--no-run"))?;
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let hogs = CpuHogs::start(cores);
    println!("soak: {runs} run(s) with {cores} busy thread(s) hogging the CPU");
    let mut failed = 0;
    for index in 1..=runs {
        let started = std::time::Instant::now();
        let status = nextest().status()?;
        let verdict = if status.success() { "passed" } else { "FAILED" };
        if !status.success() {
            failed += 1;
        }
        println!(
            "soak: run {index}/{runs} {verdict} in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    drop(hogs);
    println!("soak: {} passed, {failed} failed", runs - failed);
    anyhow::ensure!(failed == 0, "{failed} of {runs} soak run(s) failed");
    Ok(())
}

/// `setup [--corpus]`: installs the peers; `--corpus` adds every corpus app.
fn setup(args: &[String]) -> anyhow::Result<()> {
    let (corpus, rest) = corpus_flag(args);
    anyhow::ensure!(rest.is_empty(), "usage: cargo xtask setup [--corpus]");
    let peers = setup::all()?;
    if corpus {
        setup::corpus(&peers, setup::CorpusSet::All)?;
    }
    Ok(())
}

/// Splits `--corpus` from the other arguments.
fn corpus_flag(args: &[String]) -> (bool, Vec<String>) {
    let rest: Vec<String> = args.iter().filter(|a| *a != "--corpus").cloned().collect();
    (rest.len() < args.len(), rest)
}

/// Runs the whole suite: every crate's unit and integration tests, with the real
/// peers. With `--corpus`, every corpus app is installed and the corpus cases the
/// suite skips (`#[ignore]`d as slow) run after it, in a second nextest run that
/// fails when it finds none; both runs must pass.
fn test(args: &[String]) -> anyhow::Result<()> {
    let (corpus, extra) = corpus_flag(args);
    let peers = setup::all()?;
    if corpus {
        setup::corpus(&peers, setup::CorpusSet::All)?;
    }
    // The packaging test installs the npm packages `dist` makes.
    dist::for_tests(&extra)?;
    let nextest = || {
        let mut command = Command::new(env!("CARGO"));
        command
            .args(["nextest", "run", "--profile", "ci"])
            // setup installed every peer: a test that finds one missing fails.
            .env("DSHKIT_TEST_REQUIRE_PEERS", "1")
            .current_dir(root());
        command
    };
    let suite = run(nextest().arg("--workspace").args(&extra));
    if !corpus {
        return suite;
    }
    let slow = run(nextest().args([
        "--package",
        "dshkit",
        "--run-ignored",
        "only",
        "--no-tests",
        "fail",
        "-E",
        "test(/^corpus::/)",
    ]));
    match (suite, slow) {
        (Ok(()), slow) => slow,
        (Err(suite), Ok(())) => Err(suite),
        (Err(suite), Err(slow)) => Err(suite.context(format!("and the slow corpus cases: {slow:#}"))),
    }
}

/// Threads that spin until dropped.
pub(crate) struct CpuHogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHogs {
    pub(crate) fn start(count: usize) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x: u64 = 1;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for _ in 0..100_000 {
                            x = std::hint::black_box(
                                x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                            );
                        }
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
