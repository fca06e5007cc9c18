//! `dshkit dsh install` / `uninstall`: the native DSH plugin (`packages/dsh-plugin`,
//! embedded in the binary) written into a profile.
//!
//! What install writes, and all that uninstall removes:
//! - `plugins/dshkit/`: the package files, the dshkit binary the row names
//!   ([`INSTALLED_BINARY`]: a hard link to the installing binary where the file
//!   system allows, else a copy; so a rebuild, a `cargo clean` or a moved
//!   checkout never leaves the profile without its binary), plus
//!   [`INSTALL_MARKER`], which names them;
//! - `node_modules/@local/dshkit`, a link to `../../plugins/dshkit`;
//! - dshkit's block in `cordis.patch.yml`, now holding the plugin row (which
//!   replaces a `dshkit dsh connect` MCP row, so the tools are not loaded twice).
//!
//! The files and the link change nothing DSH loads until the patch row names them,
//! and the patch is written last and atomically (with a backup): a failed install
//! leaves the profile loading what it loaded before.

use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde_json::Value;

#[cfg(test)]
use crate::patch::Outcome;
use crate::patch::{self, ConnectReport, ManagedRow, PatchError};

/// The loader entry id and the plugin's directory name under `plugins/`.
pub const PLUGIN_ID: &str = "dshkit";
/// The package name the row loads.
pub const PLUGIN_PACKAGE: &str = "@local/dshkit";
/// The plugin's own copy of the dshkit binary, inside its directory.
pub const INSTALLED_BINARY: &str = if cfg!(windows) {
    "bin/dshkit.exe"
} else {
    "bin/dshkit"
};
/// The file in the plugin directory that says dshkit installed it.
pub const INSTALL_MARKER: &str = ".dshkit-install.json";

/// The plugin package, embedded: (path inside the package, contents).
pub const PLUGIN_FILES: &[(&str, &str)] = &[
    (
        "package.json",
        include_str!("../../../packages/dsh-plugin/package.json"),
    ),
    ("index.js", include_str!("../../../packages/dsh-plugin/index.js")),
    (
        "devtools.js",
        include_str!("../../../packages/dsh-plugin/devtools.js"),
    ),
    ("echo.js", include_str!("../../../packages/dsh-plugin/echo.js")),
    (
        "devtools-view.js",
        include_str!("../../../packages/dsh-plugin/devtools-view.js"),
    ),
    (
        "client.js",
        include_str!("../../../packages/dsh-plugin/client.js"),
    ),
    (
        "platform.js",
        include_str!("../../../packages/dsh-plugin/platform.js"),
    ),
];

/// The patch row that loads the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRow {
    /// The dshkit executable the plugin runs (absolute). Install copies it into
    /// the plugin directory and writes the row with the copy.
    pub binary: PathBuf,
    /// DSH home passed to the sidecar (DSH strips `DSH_*` from its children).
    pub dsh_home: Option<PathBuf>,
    /// Run the Cordis DevTools collector in the DSH process.
    pub devtools: bool,
    /// Let its cores run leased experiments (implies `devtools`).
    pub devtools_experiments: bool,
    /// Where the plugin serves the DevTools endpoint for MCP hosts outside DSH:
    /// `None` or `Some("off")` for nowhere, `Some("on")` for its default address
    /// (127.0.0.1:43127), else that address.
    pub devtools_endpoint: Option<String>,
    /// A collector that cannot start fails the plugin instead of being
    /// reported and left off (`failOnStartupError`).
    pub fail_on_startup_error: bool,
    /// The Echo registry (`{rootDir, cassettes}`), checked by the caller.
    pub echo: Option<Value>,
}

impl PluginRow {
    /// The row's `devtools` settings, by the design's keys (the plugin's
    /// `devtoolsSettings` reads them): `{failOnStartupError?, mcp: {enabled,
    /// listen?, experiments: {enabled}}}`.
    fn devtools_settings(&self) -> Value {
        let listen = match self.devtools_endpoint.as_deref() {
            None | Some("off") => None,
            Some("on") => Some(Value::Null),
            Some(address) => Some(Value::String(address.to_owned())),
        };
        let mut mcp = serde_json::Map::new();
        mcp.insert("enabled".into(), Value::Bool(listen.is_some()));
        if let Some(Value::String(address)) = listen {
            mcp.insert("listen".into(), Value::String(address));
        }
        mcp.insert(
            "experiments".into(),
            serde_json::json!({ "enabled": self.devtools_experiments }),
        );
        let mut settings = serde_json::Map::new();
        if self.fail_on_startup_error {
            settings.insert("failOnStartupError".into(), Value::Bool(true));
        }
        settings.insert("mcp".into(), Value::Object(mcp));
        Value::Object(settings)
    }
}

impl ManagedRow for PluginRow {
    fn id(&self) -> &str {
        PLUGIN_ID
    }

    fn to_value(&self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert("binary".into(), Value::String(self.binary.display().to_string()));
        if let Some(home) = &self.dsh_home {
            config.insert("dshHome".into(), Value::String(home.display().to_string()));
        }
        if self.devtools || self.devtools_experiments {
            config.insert("devtools".into(), self.devtools_settings());
        }
        if let Some(echo) = &self.echo {
            config.insert("echo".into(), echo.clone());
        }
        serde_json::json!({ "id": PLUGIN_ID, "name": PLUGIN_PACKAGE, "config": config })
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    #[error(
        "profile directory {0} does not exist; create the profile first, e.g. `dsh web --dump-default-config`"
    )]
    NoProfile(PathBuf),
    #[error(
        "{0} exists and dshkit did not install it (no {INSTALL_MARKER}); move it away, or install into another profile"
    )]
    ForeignPlugin(PathBuf),
    #[error(
        "{path} exists and is not dshkit's link to ../../plugins/{PLUGIN_ID}; remove it and install again"
    )]
    ForeignLink { path: PathBuf },
    #[error(transparent)]
    Patch(#[from] PatchError),
    #[error("failed to {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl InstallError {
    /// A stable machine-readable code; the patch edit's are its own.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoProfile(_) => "NO_PROFILE",
            Self::ForeignPlugin(_) => "FOREIGN_PLUGIN",
            Self::ForeignLink { .. } => "FOREIGN_LINK",
            Self::Patch(e) => e.code(),
            Self::Io { .. } => "INSTALL_IO",
        }
    }

    /// A profile that is missing or holds files dshkit did not install is
    /// refused; reading or writing failing is a runtime failure; the patch
    /// edit's are its own ([`PatchError::class`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::NoProfile(_) | Self::ForeignPlugin(_) | Self::ForeignLink { .. } => ErrorClass::Refused,
            Self::Patch(e) => e.class(),
            Self::Io { .. } => ErrorClass::Runtime,
        }
    }
}

dshkit_os::classified!(InstallError);

/// What install did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallReport {
    /// The plugin directory.
    pub plugin_dir: PathBuf,
    /// The binary the row names: the plugin directory's own.
    pub binary: PathBuf,
    /// Whether its files changed (false: they already were these).
    pub files_changed: bool,
    /// The `node_modules/@local/dshkit` link.
    pub link: PathBuf,
    /// The patch edit.
    pub patch: ConnectReport,
    /// The patch file before the edit (`None`: there was none), for [`restore`].
    #[serde(skip)]
    pub previous_patch: Option<String>,
}

/// What uninstall removed.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UninstallReport {
    pub patch: ConnectReport,
    pub removed: Vec<PathBuf>,
}

/// Writes the plugin into `profile_dir` and points dshkit's patch block at it.
pub fn install(profile_dir: &Path, row: &PluginRow) -> Result<InstallReport, InstallError> {
    if !profile_dir.is_dir() {
        return Err(InstallError::NoProfile(profile_dir.to_owned()));
    }
    let plugin_dir = profile_dir.join("plugins").join(PLUGIN_ID);
    let files_changed = write_plugin(&plugin_dir, &row.binary)?;
    let binary = plugin_dir.join(INSTALLED_BINARY);
    let row = PluginRow {
        binary: binary.clone(),
        ..row.clone()
    };
    let link = link_plugin(profile_dir)?;
    let patch_path = profile_dir.join("cordis.patch.yml");
    let previous_patch = match std::fs::read_to_string(&patch_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(InstallError::Io {
                action: "read",
                path: patch_path,
                source,
            });
        }
    };
    let patch = patch::connect(profile_dir, &row)?;
    Ok(InstallReport {
        plugin_dir,
        binary,
        files_changed,
        link,
        patch,
        previous_patch,
    })
}

/// Puts the patch file back as it was before an install (removing it if there was
/// none), for an install whose profile then failed its check.
pub fn restore(profile_dir: &Path, previous: Option<&str>) -> Result<(), InstallError> {
    let path = profile_dir.join("cordis.patch.yml");
    match previous {
        Some(text) => patch::write_atomic(&path, text.as_bytes())?,
        None => match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(InstallError::Io {
                    action: "remove",
                    path,
                    source,
                });
            }
        },
    }
    Ok(())
}

/// Removes what install wrote, and nothing else: dshkit's patch block, the link if it
/// is dshkit's, and the plugin directory if it carries the install marker. Evidence
/// lives elsewhere and is never touched.
pub fn uninstall(profile_dir: &Path) -> Result<UninstallReport, InstallError> {
    if !profile_dir.is_dir() {
        return Err(InstallError::NoProfile(profile_dir.to_owned()));
    }
    let patch = patch::disconnect(profile_dir)?;
    let removed = remove_files(profile_dir)?;
    Ok(UninstallReport { patch, removed })
}

/// Removes the plugin directory (if it carries the install marker) and the link
/// (if it is dshkit's); returns what it removed.
pub fn remove_files(profile_dir: &Path) -> Result<Vec<PathBuf>, InstallError> {
    let mut removed = Vec::new();
    let link = link_path(profile_dir);
    if is_our_link(&link, profile_dir) == Some(true) {
        // A symbolic link or (on Windows) a junction: the link goes, never
        // what it points at.
        dshkit_os::link::remove_dir_link(&link).map_err(|source| InstallError::Io {
            action: "remove",
            path: link.clone(),
            source,
        })?;
        removed.push(link);
    }
    let plugin_dir = profile_dir.join("plugins").join(PLUGIN_ID);
    if plugin_dir.join(INSTALL_MARKER).is_file() {
        std::fs::remove_dir_all(&plugin_dir).map_err(|source| InstallError::Io {
            action: "remove",
            path: plugin_dir.clone(),
            source,
        })?;
        removed.push(plugin_dir);
    }
    Ok(removed)
}

/// The marker's content: which files dshkit wrote, so a reinstall can tell ours.
fn marker() -> String {
    let files: Vec<&str> = PLUGIN_FILES
        .iter()
        .map(|(name, _)| *name)
        .chain([INSTALLED_BINARY])
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "installedBy": "dshkit dsh install",
        "version": env!("CARGO_PKG_VERSION"),
        "files": files,
    }))
    .expect("JSON")
}

/// Writes the package and `binary` into `plugin_dir` through a staged sibling
/// directory and a rename; returns false when it already held exactly these.
fn write_plugin(plugin_dir: &Path, binary: &Path) -> Result<bool, InstallError> {
    let io = |action, path: &Path, source| InstallError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    if plugin_dir.exists() {
        if !plugin_dir.join(INSTALL_MARKER).is_file() {
            return Err(InstallError::ForeignPlugin(plugin_dir.to_owned()));
        }
        let same = std::iter::once((INSTALL_MARKER, marker().as_str().to_owned()))
            .chain(PLUGIN_FILES.iter().map(|(n, c)| (*n, (*c).to_owned())))
            .all(|(name, content)| {
                std::fs::read_to_string(plugin_dir.join(name)).is_ok_and(|c| c == content)
            })
            && same_contents(binary, &plugin_dir.join(INSTALLED_BINARY));
        if same {
            return Ok(false);
        }
    }
    let parent = plugin_dir.parent().expect("plugins/dshkit has a parent");
    std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
    let staged = parent.join(format!(".{PLUGIN_ID}.dshkit-new-{}", std::process::id()));
    let old = parent.join(format!(".{PLUGIN_ID}.dshkit-old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staged);
    let result = (|| {
        std::fs::create_dir(&staged).map_err(|e| io("create", &staged, e))?;
        for (name, content) in PLUGIN_FILES {
            patch::write_atomic(&staged.join(name), content.as_bytes())?;
        }
        place_binary(binary, &staged.join(INSTALLED_BINARY))?;
        patch::write_atomic(&staged.join(INSTALL_MARKER), marker().as_bytes())?;
        if plugin_dir.exists() {
            std::fs::rename(plugin_dir, &old).map_err(|e| io("move aside", plugin_dir, e))?;
        }
        std::fs::rename(&staged, plugin_dir).map_err(|e| io("install", plugin_dir, e))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(true)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staged);
        if !plugin_dir.exists() && old.exists() {
            let _ = std::fs::rename(&old, plugin_dir);
        }
    }
    result
}

/// Puts `binary` at `to`: a hard link where the file system allows (no space
/// used, and the build directory's next binary is a new file, so this one
/// stays), else a copy. Either keeps the source's permissions.
fn place_binary(binary: &Path, to: &Path) -> Result<(), InstallError> {
    let io = |action, path: &Path, source| InstallError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    let dir = to.parent().expect("bin/ is inside the plugin directory");
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    if std::fs::hard_link(binary, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(binary, to).map_err(|e| io("copy the dshkit binary from", binary, e))?;
    Ok(())
}

/// Whether two files hold the same bytes (false when either cannot be read).
fn same_contents(left: &Path, right: &Path) -> bool {
    use std::io::Read as _;
    let (Ok(left), Ok(right)) = (std::fs::File::open(left), std::fs::File::open(right)) else {
        return false;
    };
    let length = |file: &std::fs::File| file.metadata().map(|m| m.len()).ok();
    if length(&left) != length(&right) {
        return false;
    }
    let mut left = std::io::BufReader::new(left);
    let mut right = std::io::BufReader::new(right);
    let (mut ours, mut theirs) = (vec![0; 64 * 1024], vec![0; 64 * 1024]);
    loop {
        let Ok(read) = left.read(&mut ours) else {
            return false;
        };
        if read == 0 {
            return right.read(&mut theirs).is_ok_and(|more| more == 0);
        }
        if right.read_exact(&mut theirs[..read]).is_err() || ours[..read] != theirs[..read] {
            return false;
        }
    }
}

fn link_path(profile_dir: &Path) -> PathBuf {
    profile_dir.join("node_modules/@local").join(PLUGIN_ID)
}

fn link_target() -> PathBuf {
    Path::new("../../plugins").join(PLUGIN_ID)
}

/// Whether `link` is a link to this profile's plugin directory: the relative
/// symbolic link dshkit writes on Unix, or a junction (absolute) on Windows.
/// `None` when it is no link.
fn is_our_link(link: &Path, profile_dir: &Path) -> Option<bool> {
    let target = dshkit_os::link::read_dir_link(link).ok()?;
    if target == link_target() {
        return Some(true);
    }
    let plugin = profile_dir.join("plugins").join(PLUGIN_ID);
    let resolved = link.parent()?.join(target);
    Some(
        match (
            dshkit_os::fs::canonicalize(&resolved),
            dshkit_os::fs::canonicalize(&plugin),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => resolved == plugin,
        },
    )
}

/// `node_modules/@local/dshkit -> ../../plugins/dshkit`, the way DSH links local
/// plugins: a symbolic link on Unix, a junction on Windows (no rights needed).
fn link_plugin(profile_dir: &Path) -> Result<PathBuf, InstallError> {
    let link = link_path(profile_dir);
    match is_our_link(&link, profile_dir) {
        Some(true) => return Ok(link),
        Some(false) => return Err(InstallError::ForeignLink { path: link }),
        None if link.symlink_metadata().is_ok() => return Err(InstallError::ForeignLink { path: link }),
        None => {}
    }
    let parent = link.parent().expect("the link has a parent");
    std::fs::create_dir_all(parent).map_err(|source| InstallError::Io {
        action: "create",
        path: parent.to_owned(),
        source,
    })?;
    dshkit_os::link::dir_link(&link_target(), &link).map_err(|source| InstallError::Io {
        action: "link",
        path: link.clone(),
        source,
    })?;
    Ok(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let table = [
            (
                InstallError::NoProfile("p".into()),
                "NO_PROFILE",
                ErrorClass::Refused,
            ),
            (
                InstallError::ForeignPlugin("p".into()),
                "FOREIGN_PLUGIN",
                ErrorClass::Refused,
            ),
            (
                InstallError::ForeignLink { path: "l".into() },
                "FOREIGN_LINK",
                ErrorClass::Refused,
            ),
            (
                InstallError::Patch(PatchError::FlowStyle { path: "p".into() }),
                "PATCH_FLOW_STYLE",
                ErrorClass::Refused,
            ),
            (
                InstallError::Patch(PatchError::Io {
                    action: "write",
                    path: "p".into(),
                    source: io(),
                }),
                "PATCH_IO",
                ErrorClass::Runtime,
            ),
            (
                InstallError::Io {
                    action: "link",
                    path: "l".into(),
                    source: io(),
                },
                "INSTALL_IO",
                ErrorClass::Runtime,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
        }
    }

    fn profile() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cordis.patch.yml"),
            "# mine\n- insert:\n    - id: other\n      name: '@local/other'\n",
        )
        .unwrap();
        dir
    }

    /// A stand-in for the dshkit binary, in a directory of its own.
    fn built_binary() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("dshkit");
        std::fs::write(&binary, b"the dshkit binary, version 1").unwrap();
        (dir, binary)
    }

    fn row_for(binary: &Path) -> PluginRow {
        PluginRow {
            binary: binary.to_owned(),
            dsh_home: Some("/home/u/.dsh".into()),
            devtools: false,
            devtools_experiments: false,
            devtools_endpoint: None,
            fail_on_startup_error: false,
            echo: None,
        }
    }

    /// A row whose binary is one stand-in shared by the tests that do not change it.
    fn row() -> PluginRow {
        static BUILT: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
        row_for(&BUILT.get_or_init(built_binary).1)
    }

    #[test]
    fn the_plugin_package_is_of_the_workspaces_release() {
        let manifest = PLUGIN_FILES
            .iter()
            .find(|(name, _)| *name == "package.json")
            .unwrap()
            .1;
        let manifest: Value = serde_json::from_str(manifest).unwrap();
        assert_eq!(
            manifest["version"],
            env!("CARGO_PKG_VERSION"),
            "packages/dsh-plugin/package.json"
        );
        let files: Vec<&str> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for (name, _) in PLUGIN_FILES.iter().filter(|(name, _)| *name != "package.json") {
            assert!(files.contains(name), "{name} is not in the package's files");
        }
    }

    #[test]
    fn the_row_names_the_plugins_own_binary_which_outlives_the_build_directory() {
        let dir = profile();
        let (build, binary) = built_binary();
        let report = install(dir.path(), &row_for(&binary)).unwrap();
        let installed = dir.path().join("plugins/dshkit").join(INSTALLED_BINARY);
        assert_eq!(report.binary, installed);
        let text = std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap();
        let parsed = patch::parse_list(Path::new("p"), &text).unwrap();
        assert_eq!(
            parsed[1]["insert"][0]["config"]["binary"],
            installed.display().to_string()
        );
        // A rebuild writes a new file; `cargo clean` removes the directory.
        std::fs::remove_file(&binary).unwrap();
        std::fs::write(&binary, b"the dshkit binary, version 2").unwrap();
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            b"the dshkit binary, version 1"
        );
        let again = install(dir.path(), &row_for(&binary)).unwrap();
        assert!(again.files_changed, "a new binary is installed");
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            b"the dshkit binary, version 2"
        );
        assert!(!install(dir.path(), &row_for(&binary)).unwrap().files_changed);
        drop(build);
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            b"the dshkit binary, version 2"
        );
        let missing = install(dir.path(), &row_for(&dir.path().join("no-such-dshkit")));
        assert!(matches!(&missing, Err(InstallError::Io { .. })), "{missing:?}");
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            b"the dshkit binary, version 2",
            "a failed install keeps the plugin as it was"
        );
    }

    #[test]
    fn install_writes_the_package_the_link_and_the_row_and_is_idempotent() {
        let dir = profile();
        let (_build, binary) = built_binary();
        let first = install(dir.path(), &row_for(&binary)).unwrap();
        assert!(first.files_changed);
        assert_eq!(first.patch.outcome, Outcome::Added);
        for (name, content) in PLUGIN_FILES {
            assert_eq!(
                &std::fs::read_to_string(first.plugin_dir.join(name)).unwrap(),
                content
            );
        }
        assert_eq!(std::fs::read_link(&first.link).unwrap(), link_target());
        assert!(first.link.join("index.js").is_file(), "the link resolves");
        let text = std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap();
        assert!(text.starts_with("# mine\n- insert:\n    - id: other\n"), "{text}");
        let parsed = patch::parse_list(Path::new("p"), &text).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            parsed[1]["insert"][0]["config"]["binary"],
            first.binary.display().to_string()
        );

        let again = install(dir.path(), &row_for(&binary)).unwrap();
        assert!(!again.files_changed);
        assert_eq!(again.patch.outcome, Outcome::Unchanged);
    }

    #[test]
    fn install_replaces_the_connect_row_and_uninstall_removes_only_its_own() {
        let dir = profile();
        let mcp = crate::row::McpRow::new(crate::row::Transport::Stdio {
            command: "/opt/dshkit".into(),
            args: vec!["mcp".into()],
        });
        patch::connect(dir.path(), &mcp).unwrap();
        let report = install(dir.path(), &row()).unwrap();
        assert_eq!(report.patch.outcome, Outcome::Updated);
        let text = std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap();
        assert!(
            !text.contains("dsh-mcp-client"),
            "the MCP row is replaced: {text}"
        );
        // Someone else's file beside ours stays.
        std::fs::write(dir.path().join("plugins/keep.txt"), "x").unwrap();

        let removed = uninstall(dir.path()).unwrap();
        assert_eq!(removed.patch.outcome, Outcome::Removed);
        assert_eq!(removed.removed.len(), 2, "{removed:?}");
        let text = std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap();
        assert_eq!(
            text,
            "# mine\n- insert:\n    - id: other\n      name: '@local/other'\n"
        );
        assert!(dir.path().join("plugins/keep.txt").is_file());
        assert!(!dir.path().join("plugins/dshkit").exists());
        let nothing = uninstall(dir.path()).unwrap();
        assert_eq!(nothing.patch.outcome, Outcome::Unchanged);
        assert!(nothing.removed.is_empty());
    }

    #[test]
    fn a_plugin_directory_or_link_dshkit_did_not_write_is_refused_and_kept() {
        let dir = profile();
        std::fs::create_dir_all(dir.path().join("plugins/dshkit")).unwrap();
        std::fs::write(dir.path().join("plugins/dshkit/index.js"), "theirs").unwrap();
        let before = std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap();
        assert!(matches!(
            install(dir.path(), &row()),
            Err(InstallError::ForeignPlugin(_))
        ));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("plugins/dshkit/index.js")).unwrap(),
            "theirs"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap(),
            before
        );
        let removed = uninstall(dir.path()).unwrap();
        assert!(removed.removed.is_empty(), "not ours: {removed:?}");
        assert!(dir.path().join("plugins/dshkit/index.js").is_file());

        let other = profile();
        std::fs::create_dir_all(other.path().join("node_modules/@local")).unwrap();
        dshkit_os::fs::symlink("/elsewhere", other.path().join("node_modules/@local/dshkit")).unwrap();
        assert!(matches!(
            install(other.path(), &row()),
            Err(InstallError::ForeignLink { .. })
        ));
    }

    #[test]
    fn restore_puts_the_patch_back() {
        let dir = profile();
        let report = install(dir.path(), &row()).unwrap();
        restore(dir.path(), report.previous_patch.as_deref()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cordis.patch.yml")).unwrap(),
            report.previous_patch.unwrap()
        );
        let empty = tempfile::tempdir().unwrap();
        let report = install(empty.path(), &row()).unwrap();
        assert!(report.previous_patch.is_none());
        restore(empty.path(), None).unwrap();
        assert!(!empty.path().join("cordis.patch.yml").exists());
    }
}
