//! `cargo xtask dist [PLATFORM...]`: dshkit's npm packages, as esbuild and Biome
//! ship theirs.
//!
//! - One package per platform, `@dshkit/<platform>`, holding only the native
//!   binary (`bin/dshkit`, `bin/dshkit.exe` on Windows) and declaring the `os`,
//!   `cpu` and (on Linux) `libc` it runs on, so a package manager installs only
//!   the one that fits.
//! - The main package, `dshkit`, with those as optional dependencies: its `bin` is
//!   a small launcher (`packages/dsh-plugin/bin/dshkit.js`) that runs the
//!   platform package's binary. It is a DSH bundle too (`dsh.bundle.patch`
//!   inserts the plugin row; `dsh.client` and `exports["./client"]` serve the
//!   browser half), carrying the plugin files of `packages/dsh-plugin/`: so
//!   `dsh plugin --profile web add dshkit` installs dshkit the way DSH installs
//!   its plugins. No install script anywhere.
//!
//! The binaries are built with the `dist` profile (LTO, one codegen unit,
//! stripped): Linux with cargo-zigbuild and Zig (glibc 2.31 as the oldest glibc
//! it needs; musl, static), Windows with mingw. macOS cannot be linked here (no
//! Apple SDK): its packages keep their names and are built on a Mac. The
//! version of every package is the workspace's. The tarballs go to
//! `target/dist/npm/`, with `manifest.json` naming each one, its size and sha256.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::setup::{cargo_zigbuild, is_root, quiet_step, ziglang};
use crate::{root, run};

/// Every package's version: the workspace's (xtask inherits it).
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The oldest glibc the Linux glibc binary may need.
const GLIBC_BASELINE: (u32, u32) = (2, 31);
/// The npm scope of the platform packages (the same in `platform.js`).
const SCOPE: &str = "@dshkit";
/// The plugin's and the launcher's files, copied into the main package as they are.
const PLUGIN_FILES: &[&str] = &[
    "index.js",
    "client.js",
    "devtools.js",
    "devtools-view.js",
    "echo.js",
    "platform.js",
    "bin/dshkit.js",
];
/// The main package's bundle patch: the plugin row, with no `config.binary`, so
/// the plugin finds the binary through its platform package.
const BUNDLE_PATCH: &str = "\
# The dshkit bundle patch: `dsh plugin --profile NAME add dshkit` applies it as
# one layer of the profile. The row names no `config.binary`: the plugin runs
# the binary of the platform package installed beside it (@dshkit/<platform>).
# Settings go in the profile's own cordis.patch.yml, by the row's id.

- insert:
    - id: dshkit
      name: dshkit
";

/// How a platform's binary is built here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Builder {
    /// `cargo zigbuild --target <zig_target>`.
    Zig(&'static str),
    /// `cargo build` with mingw as the linker (`.cargo/config.toml`).
    Mingw,
    /// Needs Apple's SDK: built on macOS only.
    MacOnly,
}

struct Platform {
    /// The package is `@dshkit/<name>` (the names `platform.js` resolves).
    name: &'static str,
    target: &'static str,
    os: &'static str,
    cpu: &'static str,
    libc: Option<&'static str>,
    binary: &'static str,
    builder: Builder,
}

const PLATFORMS: &[Platform] = &[
    Platform {
        name: "linux-x64-gnu",
        target: "x86_64-unknown-linux-gnu",
        os: "linux",
        cpu: "x64",
        libc: Some("glibc"),
        binary: "dshkit",
        builder: Builder::Zig("x86_64-unknown-linux-gnu.2.31"),
    },
    Platform {
        name: "linux-x64-musl",
        target: "x86_64-unknown-linux-musl",
        os: "linux",
        cpu: "x64",
        libc: Some("musl"),
        binary: "dshkit",
        builder: Builder::Zig("x86_64-unknown-linux-musl"),
    },
    Platform {
        name: "win32-x64",
        target: "x86_64-pc-windows-gnu",
        os: "win32",
        cpu: "x64",
        libc: None,
        binary: "dshkit.exe",
        builder: Builder::Mingw,
    },
    Platform {
        name: "darwin-x64",
        target: "x86_64-apple-darwin",
        os: "darwin",
        cpu: "x64",
        libc: None,
        binary: "dshkit",
        builder: Builder::MacOnly,
    },
    Platform {
        name: "darwin-arm64",
        target: "aarch64-apple-darwin",
        os: "darwin",
        cpu: "arm64",
        libc: None,
        binary: "dshkit",
        builder: Builder::MacOnly,
    },
];

/// The platform the packaging test installs on this machine.
pub(crate) const TEST_PLATFORM: &str = "linux-x64-gnu";

/// One tarball written.
struct Tarball {
    package: String,
    path: PathBuf,
    size: u64,
    sha256: String,
}

/// `cargo xtask dist [PLATFORM...]`: every platform this machine can build, or
/// those named.
pub(crate) fn main(args: &[String]) -> anyhow::Result<()> {
    let chosen: Vec<&Platform> = if args.is_empty() {
        PLATFORMS.iter().collect()
    } else {
        args.iter()
            .map(|name| {
                PLATFORMS.iter().find(|p| p.name == name).with_context(|| {
                    let names: Vec<&str> = PLATFORMS.iter().map(|p| p.name).collect();
                    format!(
                        "unknown platform `{name}`; the platforms are {}",
                        names.join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    dist(&chosen)
}

/// Before `cargo xtask test`: the Linux glibc packages the packaging test
/// installs, unless the nextest arguments select tests and none of them names
/// `packaging`.
pub(crate) fn for_tests(nextest_args: &[String]) -> anyhow::Result<()> {
    let selects = nextest_args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-E" | "--filterset" | "-p" | "--package" | "--test" | "--lib" | "--bins"
        ) || a.starts_with("--filterset=")
            || a.starts_with("--package=")
            || !a.starts_with('-')
    });
    if selects && !nextest_args.iter().any(|a| a.contains("packaging")) {
        return Ok(());
    }
    let platform = PLATFORMS
        .iter()
        .find(|p| p.name == TEST_PLATFORM)
        .expect("the test platform is listed");
    dist(&[platform])
}

fn dist(chosen: &[&Platform]) -> anyhow::Result<()> {
    let out = root().join("target/dist/npm");
    std::fs::create_dir_all(&out)?;
    for entry in std::fs::read_dir(&out)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tgz") || path.ends_with("manifest.json") {
            std::fs::remove_file(&path)?;
        }
    }
    let stage = root().join("target/dist/stage");
    let _ = std::fs::remove_dir_all(&stage);

    let mut built = Vec::new();
    let mut skipped = Vec::new();
    for platform in chosen {
        if platform.builder == Builder::MacOnly {
            skipped.push(platform);
            continue;
        }
        let started = Instant::now();
        let binary = build(platform)?;
        let seconds = started.elapsed().as_secs_f64();
        let size = std::fs::metadata(&binary)?.len();
        println!(
            "dist: built {} ({}) in {seconds:.0} s: {} ({})",
            platform.name,
            platform.target,
            binary.display(),
            megabytes(size)
        );
        if platform.libc == Some("glibc") {
            let (major, minor) = oldest_glibc(&binary)?;
            println!("dist: {} needs glibc {major}.{minor} or newer", platform.name);
            anyhow::ensure!(
                (major, minor) <= GLIBC_BASELINE,
                "{} needs glibc {major}.{minor}, newer than the {}.{} baseline",
                binary.display(),
                GLIBC_BASELINE.0,
                GLIBC_BASELINE.1
            );
        }
        built.push((*platform, binary));
    }
    for platform in &skipped {
        println!(
            "dist: skipped {SCOPE}/{} ({}): macOS binaries link against Apple's SDK, which this machine does not have; build them on a Mac (the package name and layout are kept)",
            platform.name, platform.target
        );
    }
    anyhow::ensure!(!built.is_empty(), "no platform could be built here");

    let mut tarballs = Vec::new();
    for (platform, binary) in &built {
        let dir = stage.join(platform.name);
        platform_package(platform, binary, &dir)?;
        tarballs.push(pack(&dir, &out)?);
    }
    let dir = stage.join("dshkit");
    let platforms: Vec<&Platform> = built.iter().map(|(p, _)| *p).collect();
    // The generated files come from a binary that runs here (Linux x64).
    let this_machine = built
        .iter()
        .find(|(p, _)| p.os == "linux" && p.cpu == "x64")
        .map(|(_, binary)| binary)
        .context("no Linux x64 binary was built to generate the completions and the man page with")?;
    main_package(&platforms, &dir, this_machine)?;
    tarballs.push(pack(&dir, &out)?);

    let manifest = json!({
        "version": VERSION,
        "packages": tarballs.iter().map(|t| json!({
            "name": t.package,
            "file": t.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "size": t.size,
            "sha256": t.sha256,
        })).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    for t in &tarballs {
        println!(
            "dist: {} ({}, sha256 {})",
            t.path.display(),
            megabytes(t.size),
            t.sha256
        );
    }
    Ok(())
}

fn megabytes(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!("{bytes} bytes, {mib:.1} MiB")
}

/// Builds one platform's binary with the `dist` profile; returns its path.
fn build(platform: &Platform) -> anyhow::Result<PathBuf> {
    run(Command::new("rustup").args(["target", "add", platform.target]))?;
    let mut command = match platform.builder {
        Builder::Zig(zig_target) => {
            let python = ziglang()?;
            let mut command = Command::new(cargo_zigbuild()?);
            command
                .args(["zigbuild", "--target", zig_target])
                .env("CARGO_ZIGBUILD_PYTHON_PATH", python)
                .env("CARGO", env!("CARGO"));
            command
        }
        Builder::Mingw => {
            mingw()?;
            let mut command = Command::new(env!("CARGO"));
            command.args(["build", "--target", platform.target]);
            command
        }
        Builder::MacOnly => bail!("{} is built on macOS only", platform.name),
    };
    eprintln!(
        "xtask: building dshkit for {} (profile dist: LTO, one codegen unit; several minutes)",
        platform.name
    );
    run(command
        .args(["--profile", "dist", "--locked", "--package", "dshkit"])
        .current_dir(root()))?;
    let binary = root()
        .join("target")
        .join(platform.target)
        .join("dist")
        .join(platform.binary);
    anyhow::ensure!(binary.is_file(), "the build left no {}", binary.display());
    Ok(binary)
}

/// mingw, the Windows linker (apt; as `cargo xtask test-windows` installs it).
fn mingw() -> anyhow::Result<()> {
    const MINGW: &str = "x86_64-w64-mingw32-gcc";
    if Command::new(MINGW)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Ok(());
    }
    if !is_root() {
        bail!("mingw is missing; run: sudo apt-get install -y --no-install-recommends gcc-mingw-w64-x86-64");
    }
    quiet_step(
        "mingw (apt-get update)",
        "apt-update-mingw",
        Command::new("apt-get").arg("update"),
    )?;
    quiet_step(
        "mingw (apt-get install)",
        "apt-mingw",
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "gcc-mingw-w64-x86-64"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// The newest `GLIBC_x.y` symbol version the binary imports: the oldest glibc it runs on.
fn oldest_glibc(binary: &Path) -> anyhow::Result<(u32, u32)> {
    let dump = Command::new("objdump")
        .arg("-T")
        .arg(binary)
        .output()
        .context("running objdump -T (apt-get install binutils)")?;
    anyhow::ensure!(dump.status.success(), "objdump -T {} failed", binary.display());
    newest_glibc_symbol(&String::from_utf8_lossy(&dump.stdout))
        .with_context(|| format!("{} imports no GLIBC_ symbol version", binary.display()))
}

fn newest_glibc_symbol(dump: &str) -> Option<(u32, u32)> {
    dump.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|version| {
            let mut parts = version.split('.').map(str::parse::<u32>);
            Some((
                parts.next()?.ok()?,
                parts.next().and_then(Result::ok).unwrap_or(0),
            ))
        })
        .max()
}

/// `@dshkit/<platform>`: the binary in `bin/` and a manifest with `os`, `cpu`, `libc`.
fn platform_package(platform: &Platform, binary: &Path, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("bin"))?;
    let target = dir.join("bin").join(platform.binary);
    std::fs::copy(binary, &target).with_context(|| format!("copying {}", binary.display()))?;
    dshkit_os::fs::set_mode(&target, 0o755)?;
    let mut manifest = json!({
        "name": format!("{SCOPE}/{}", platform.name),
        "version": VERSION,
        "description": format!("The dshkit binary for {} ({}); installed by the `dshkit` package", platform.name, platform.target),
        "license": "MIT OR Apache-2.0",
        "os": [platform.os],
        "cpu": [platform.cpu],
        "files": [format!("bin/{}", platform.binary)],
        "preferUnplugged": true,
    });
    if let Some(libc) = platform.libc {
        manifest["libc"] = json!([libc]);
    }
    write_json(&dir.join("package.json"), &manifest)?;
    std::fs::write(
        dir.join("README.md"),
        format!(
            "# {SCOPE}/{}\n\nThe dshkit binary for {} ({}). Install `dshkit`, which depends on it; see dshkit's docs/install.md.\n",
            platform.name, platform.name, platform.target
        ),
    )?;
    Ok(())
}

/// `dshkit`: the launcher, the DSH plugin and bundle, the platform packages as
/// optional dependencies.
/// Shell completions and the man page in the main package, each what the
/// binary built for this machine prints (`dshkit completions ...`). npm links
/// the man page (`man`) on a global install.
const GENERATED: &[(&str, &[&str])] = &[
    ("share/completions/dshkit.bash", &["completions", "bash"]),
    ("share/completions/_dshkit", &["completions", "zsh"]),
    ("share/completions/dshkit.fish", &["completions", "fish"]),
    ("share/completions/dshkit.ps1", &["completions", "powershell"]),
    ("share/man/man1/dshkit.1", &["completions", "--man"]),
];

fn generated_files(binary: &Path, dir: &Path) -> anyhow::Result<()> {
    for (file, args) in GENERATED {
        let made = std::process::Command::new(binary)
            .args(*args)
            .output()
            .with_context(|| format!("running {} {}", binary.display(), args.join(" ")))?;
        anyhow::ensure!(
            made.status.success() && !made.stdout.is_empty(),
            "{} {} failed: {}",
            binary.display(),
            args.join(" "),
            String::from_utf8_lossy(&made.stderr)
        );
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().expect("a file in a folder"))?;
        std::fs::write(&to, made.stdout)?;
    }
    Ok(())
}

fn main_package(platforms: &[&Platform], dir: &Path, this_machine: &Path) -> anyhow::Result<()> {
    generated_files(this_machine, dir)?;
    let source = root().join("packages/dsh-plugin");
    for file in PLUGIN_FILES {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().expect("a file in a folder"))?;
        std::fs::copy(source.join(file), &to).with_context(|| format!("copying {file}"))?;
    }
    dshkit_os::fs::set_mode(&dir.join("bin/dshkit.js"), 0o755)?;
    std::fs::write(dir.join("cordis.patch.yml"), BUNDLE_PATCH)?;
    let plugin: Value = serde_json::from_slice(&std::fs::read(source.join("package.json"))?)?;
    let optional: serde_json::Map<String, Value> = platforms
        .iter()
        .map(|p| (format!("{SCOPE}/{}", p.name), json!(VERSION)))
        .collect();
    let manifest = json!({
        "name": "dshkit",
        "version": VERSION,
        "description": plugin["description"],
        "license": "MIT OR Apache-2.0",
        "type": "module",
        "bin": { "dshkit": "bin/dshkit.js" },
        "main": "./index.js",
        "exports": {
            ".": "./index.js",
            "./client": "./client.js",
            "./devtools": "./devtools.js",
            "./echo": "./echo.js",
            "./platform": "./platform.js",
            "./cordis.patch.yml": "./cordis.patch.yml",
            "./package.json": "./package.json",
        },
        "files": PLUGIN_FILES
            .iter()
            .copied()
            .chain(["cordis.patch.yml"])
            .chain(GENERATED.iter().map(|(file, _)| *file))
            .collect::<Vec<_>>(),
        "man": ["./share/man/man1/dshkit.1"],
        "engines": { "node": ">=20.16" },
        "dsh": {
            "bundle": { "patch": "./cordis.patch.yml" },
            "client": plugin["dsh"]["client"],
        },
        "optionalDependencies": optional,
    });
    write_json(&dir.join("package.json"), &manifest)?;
    std::fs::write(
        dir.join("README.md"),
        "# dshkit\n\nLiveLoop (headless-Chromium preview and verify), Echo (MCP record and replay), plugin checks and DevTools for DeepSeek Harness (DSH) and any MCP host.\n\n```\ndsh plugin --profile web add dshkit   # the native DSH plugin\nnpm install -g dshkit                 # the `dshkit` command\n```\n\nThe binary comes from the platform package that fits this machine (`@dshkit/linux-x64-gnu`, `@dshkit/linux-x64-musl`, `@dshkit/win32-x64`, `@dshkit/darwin-x64`, `@dshkit/darwin-arm64`), an optional dependency; no install script runs.\n",
    )?;
    Ok(())
}

fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// `npm pack` of the staged package into `out`.
fn pack(dir: &Path, out: &Path) -> anyhow::Result<Tarball> {
    let packed = Command::new("npm")
        .args(["pack", "--json", "--loglevel=error", "--pack-destination"])
        .arg(out)
        .current_dir(dir)
        .output()
        .context("running npm pack (apt-get install nodejs npm)")?;
    anyhow::ensure!(
        packed.status.success(),
        "npm pack in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&packed.stderr)
    );
    let report: Value = serde_json::from_slice(&packed.stdout).context("npm pack --json")?;
    let entry = &report[0];
    let file = entry["filename"].as_str().context("npm pack named no file")?;
    let path = out.join(file);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Tarball {
        package: entry["name"].as_str().unwrap_or_default().to_owned(),
        size: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::newest_glibc_symbol;

    #[test]
    fn the_newest_glibc_symbol_version_is_the_oldest_glibc_needed() {
        let dump = "\
0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.2.5) write
0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.28) statx
0000000000000000      DF *UND*  0000000000000000  GLIBC_2.3   __tls_get_addr
0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.9)  pipe2
";
        assert_eq!(newest_glibc_symbol(dump), Some((2, 28)));
        assert_eq!(newest_glibc_symbol("nothing here"), None);
    }
}
