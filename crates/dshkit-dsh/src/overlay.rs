//! The Echo DSH overlay: a new patch file (plus a recovery manifest) whose MCP
//! row runs a server through `dshkit echo`, for `dsh --profile P --patch OVERLAY`.
//! The profile itself is never edited.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::patch::{PatchError, write_atomic};
use crate::row::{McpRow, Transport};

/// How the overlay's row runs the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlayMode {
    /// The real server through the recorder, into a new cassette.
    Record,
    /// The cassette only; the row holds no server command.
    Replay,
    /// The cassette, asking the real server on a miss.
    Passthrough,
}

impl OverlayMode {
    /// The same mode in Echo's registry.
    pub fn echo_mode(self) -> dshkit_echo::registry::Mode {
        use dshkit_echo::registry::Mode;
        match self {
            Self::Record => Mode::Record,
            Self::Replay => Mode::Replay,
            Self::Passthrough => Mode::Passthrough,
        }
    }

    /// What reaches the real server in this mode ([`dshkit_echo::registry::Mode::side_effects`]).
    pub fn side_effects(self) -> Option<&'static str> {
        self.echo_mode().side_effects()
    }

    fn name(self) -> &'static str {
        self.echo_mode().name()
    }
}

/// One overlay to write.
#[derive(Debug, Clone)]
pub struct OverlayRequest {
    /// The DSH home; `None` when none could be found.
    pub home: Option<PathBuf>,
    /// The profile the overlay is meant for (recorded in the manifest).
    pub profile: String,
    /// The MCP server name in DSH (tools appear as `mcp__NAME__TOOL`).
    pub server: String,
    pub mode: OverlayMode,
    pub cassette: PathBuf,
    /// Where to write it (default: `<home>/overlays/echo-<server>-<mode>.patch.yml`).
    pub output: Option<PathBuf>,
    /// Replay rows annotate each tool result with whether the cassette answered.
    pub annotate: bool,
    /// The real server's command line (record and passthrough).
    pub argv: Vec<String>,
    /// The dshkit executable the row runs (absolute).
    pub binary: PathBuf,
}

/// Why an overlay was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OverlayError {
    #[error("--server must be letters, digits, `-` or `_` (at most 64): it becomes mcp__{{server}}__<tool>")]
    InvalidServer,
    #[error("mode {0:?} needs the real server after --: dshkit echo dsh-overlay ... -- <server argv>")]
    NeedsServer(OverlayMode),
    #[error("{} does not exist: record it first (mode record)", .0.display())]
    NoCassette(PathBuf),
    #[error(
        "{} exists, and record never answers from or overwrites a cassette: use --mode passthrough to append what it does not answer, or move it away to record anew",
        .0.display()
    )]
    RecordedAlready(PathBuf),
    #[error("no DSH home: pass --dsh-home or set DSH_HOME or HOME")]
    NoHome,
    #[error(transparent)]
    Cassette(std::io::Error),
    #[error("creating {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Write(#[from] PatchError),
}

impl OverlayError {
    /// Whether the failure happened at run time (I/O) rather than being refused.
    pub fn is_runtime(&self) -> bool {
        matches!(self, Self::Cassette(_) | Self::CreateDir { .. } | Self::Write(_))
    }

    /// What the failure means for whoever asked: [`Self::is_runtime`] as a class.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        if self.is_runtime() {
            dshkit_os::error::ErrorClass::Runtime
        } else {
            dshkit_os::error::ErrorClass::Refused
        }
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Overlay {
    pub overlay: PathBuf,
    pub manifest_path: PathBuf,
    /// The recovery manifest as written.
    pub manifest: Value,
    profile: String,
    server: String,
    mode: OverlayMode,
}

impl Overlay {
    /// The text the CLI prints; passthrough and record say that calls reach
    /// the real server, whose side effects then happen.
    pub fn text(&self) -> String {
        let warning = self
            .mode
            .side_effects()
            .map_or_else(String::new, |what| format!("side effects: {what}\n"));
        format!(
            "wrote {} ({} {}) and {}\n{warning}run: dsh --profile {} --patch {}\n",
            self.overlay.display(),
            self.mode.name(),
            self.server,
            self.manifest_path.display(),
            self.profile,
            self.overlay.display()
        )
    }
}

/// Writes the overlay and its recovery manifest; never touches the profile.
pub fn write(request: &OverlayRequest) -> Result<Overlay, OverlayError> {
    let server = &request.server;
    let valid_name = !server.is_empty()
        && server.len() <= 64
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return Err(OverlayError::InvalidServer);
    }
    if request.mode != OverlayMode::Replay && request.argv.is_empty() {
        return Err(OverlayError::NeedsServer(request.mode));
    }
    if request.mode != OverlayMode::Record && !request.cassette.is_file() {
        return Err(OverlayError::NoCassette(request.cassette.clone()));
    }
    // Record means every call reaches the real server: it starts a new cassette
    // and never answers from (or overwrites) one that exists.
    if request.mode == OverlayMode::Record && request.cassette.exists() {
        return Err(OverlayError::RecordedAlready(request.cassette.clone()));
    }
    let home = request.home.as_deref().ok_or(OverlayError::NoHome)?;
    let cassette = std::path::absolute(&request.cassette).map_err(OverlayError::Cassette)?;
    let row = row(request, &cassette);
    let mode_name = request.mode.name();
    let overlay = match &request.output {
        Some(path) => path.clone(),
        None => home
            .join("overlays")
            .join(format!("echo-{server}-{mode_name}.patch.yml")),
    };
    if let Some(parent) = overlay.parent() {
        std::fs::create_dir_all(parent).map_err(|source| OverlayError::CreateDir {
            path: parent.to_owned(),
            source,
        })?;
    }
    let profile_patch = dshkit_env::dsh::profile_dir(home, &request.profile).join("cordis.patch.yml");
    let yaml = format!(
        "# Written by `dshkit echo dsh-overlay` ({mode_name} {server}). Use: dsh --profile {} --patch {}\n# The profile is untouched; delete this file (and its .manifest.json) to undo.\n{}",
        request.profile,
        overlay.display(),
        row.to_patch_yaml()
    );
    write_atomic(&overlay, yaml.as_bytes())?;
    let manifest = json!({
        "formatVersion": 1,
        "tool": format!("dshkit {}", env!("CARGO_PKG_VERSION")),
        "overlay": overlay,
        "profile": request.profile,
        "profilePatch": profile_patch,
        "profilePatchSha256": digest(&profile_patch),
        "server": server,
        "mode": mode_name,
        "sideEffects": request.mode.side_effects(),
        "cassette": cassette,
        "row": row.to_value(),
        "undo": format!("delete {} and this manifest; run dsh without --patch", overlay.display()),
    });
    let manifest_path = overlay.with_extension("manifest.json");
    write_atomic(
        &manifest_path,
        serde_json::to_string_pretty(&manifest)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(Overlay {
        overlay,
        manifest_path,
        manifest,
        profile: request.profile.clone(),
        server: server.clone(),
        mode: request.mode,
    })
}

/// The SHA-256 of the profile's patch file as it is, if there is one.
fn digest(path: &Path) -> Option<String> {
    use sha2::Digest as _;
    std::fs::read(path)
        .ok()
        .map(|bytes| hex::encode(sha2::Sha256::digest(bytes)))
}

/// The MCP row of an overlay: the server run through `dshkit echo` in its mode.
fn row(request: &OverlayRequest, cassette: &Path) -> McpRow {
    let cassette_text = cassette.display().to_string();
    let mut command: Vec<String> = match request.mode {
        OverlayMode::Record => vec![
            "echo".into(),
            "record".into(),
            "-o".into(),
            cassette_text,
            "--mode".into(),
            "once".into(),
            "--".into(),
        ],
        OverlayMode::Replay => vec!["echo".into(), "replay".into(), cassette_text],
        OverlayMode::Passthrough => vec![
            "echo".into(),
            "replay".into(),
            cassette_text,
            "--on-miss".into(),
            "passthrough".into(),
            "--".into(),
        ],
    };
    if request.mode != OverlayMode::Record && request.annotate {
        // An agent in DSH sees in each tool result whether the cassette answered.
        let at = command.iter().position(|a| a == "--").unwrap_or(command.len());
        command.insert(at, "--annotate".into());
    }
    if request.mode != OverlayMode::Replay {
        command.extend(request.argv.iter().cloned());
    }
    let mut row = McpRow::new(Transport::Stdio {
        command: request.binary.clone(),
        args: command,
    });
    row.id = format!("mcp-{}", request.server);
    row.server_name.clone_from(&request.server);
    row
}
