//! Echo in DSH: the root cassettes live under and the registry of cassette ids
//! (each a path under the root, a server name and a mode), checked in this one
//! place. A symlinked root and a path that leaves the root are refused with the
//! rule they break named, so the web API can address cassette ids and never paths.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// At most this many cassettes in one registry.
pub const MAX_CASSETTES: usize = 256;
/// A cassette id is 1 to this many characters of `[A-Za-z0-9_-]`.
pub const MAX_ID_CHARS: usize = 64;

/// How the `dshkit echo` wrapper runs a registered server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Record,
    Replay,
    Passthrough,
}

impl Mode {
    /// Every mode, in the order people are offered them.
    pub const ALL: [Self; 3] = [Self::Replay, Self::Record, Self::Passthrough];

    /// What reaches the real server in this mode, said wherever the mode is
    /// chosen: the boundary past which calls have side effects.
    pub fn side_effects(self) -> Option<&'static str> {
        match self {
            Self::Replay => None,
            Self::Passthrough => Some(
                "a call the cassette does not answer goes to the real server, and what it does (writes, sends, spends) happens; each such call is annotated `passthrough`",
            ),
            Self::Record => {
                Some("every call goes to the real server, and what it does (writes, sends, spends) happens")
            }
        }
    }

    /// The mode's name in the registry.
    pub fn name(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Replay => "replay",
            Self::Passthrough => "passthrough",
        }
    }
}

/// One registered cassette, its path relative to the root.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub id: String,
    pub path: PathBuf,
    pub server: String,
    pub mode: Mode,
    /// A Streamable HTTP server: reached through a loopback proxy the DSH
    /// plugin runs. Absent for a stdio server (its DSH row runs `dshkit echo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpProxy>,
}

/// The loopback proxy of an HTTP server: DSH's row for the server points at
/// `http://127.0.0.1:PORT/mcp`, and the proxy answers from the cassette or asks
/// the real server at `upstream`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpProxy {
    /// The loopback port the proxy listens on (fixed, so DSH's row can name it).
    pub port: u16,
    /// The real server's URL (`http://…` or `https://…`); record needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

impl HttpProxy {
    /// The URL DSH's row for the server names.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// The registry as configured (the plugin row's `echo` object).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistryConfig {
    pub root_dir: PathBuf,
    #[serde(default)]
    pub cassettes: Vec<Entry>,
}

/// A registry whose root and every path were checked.
#[derive(Debug, Clone)]
pub struct Registry {
    root: PathBuf,
    entries: Vec<Entry>,
}

/// Why a registry was refused; [`RegistryError::rule`] names the rule.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("echo rootDir {0} is not an absolute path")]
    RootNotAbsolute(PathBuf),
    #[error("echo rootDir {0} is not a directory that exists")]
    RootMissing(PathBuf),
    #[error("echo rootDir {0} is or passes through a symlink (resolves to {1})")]
    RootSymlinked(PathBuf, PathBuf),
    #[error("cassette id {0:?} is not 1-{MAX_ID_CHARS} characters of [A-Za-z0-9_-]")]
    BadId(String),
    #[error("cassette id {0:?} is registered twice")]
    DuplicateId(String),
    #[error("cassette {id:?}: path {path} leaves the Echo root")]
    PathEscapesRoot { id: String, path: PathBuf },
    #[error("cassette {id:?}: path {path} passes through a symlink under the Echo root")]
    PathSymlinked { id: String, path: PathBuf },
    #[error("{0} cassettes registered, more than {MAX_CASSETTES}")]
    TooMany(usize),
    #[error("cassette {0:?}: http.port must be a port from 1 to 65535 (DSH's row names it)")]
    HttpPortZero(String),
    #[error("cassettes {0:?} and {1:?} both proxy on port {2}")]
    HttpPortTaken(String, String, u16),
    #[error("cassette {id:?}: {why}")]
    HttpUpstream { id: String, why: &'static str },
}

impl RegistryError {
    /// The rule broken, stable for programs and shown to people.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::RootNotAbsolute(_) => "echo.root.absolute",
            Self::RootMissing(_) => "echo.root.exists",
            Self::RootSymlinked(..) => "echo.root.no-symlink",
            Self::BadId(_) => "echo.id.charset",
            Self::DuplicateId(_) => "echo.id.unique",
            Self::PathEscapesRoot { .. } => "echo.path.inside-root",
            Self::PathSymlinked { .. } => "echo.path.no-symlink",
            Self::TooMany(_) => "echo.registry.limit",
            Self::HttpPortZero(_) => "echo.http.port",
            Self::HttpPortTaken(..) => "echo.http.port-unique",
            Self::HttpUpstream { .. } => "echo.http.upstream",
        }
    }
}

impl Registry {
    /// Checks a configured registry: the root absolute, an existing directory
    /// reached through no symlink; each id well formed and unique; each path
    /// relative, without `..`, and through no symlink that exists under the root.
    pub fn check(config: RegistryConfig) -> Result<Self, RegistryError> {
        let RegistryConfig {
            root_dir: root,
            cassettes,
        } = config;
        if !root.is_absolute() {
            return Err(RegistryError::RootNotAbsolute(root));
        }
        let Ok(resolved) = root.canonicalize() else {
            return Err(RegistryError::RootMissing(root));
        };
        if !resolved.is_dir() {
            return Err(RegistryError::RootMissing(root));
        }
        if resolved != root {
            return Err(RegistryError::RootSymlinked(root, resolved));
        }
        if cassettes.len() > MAX_CASSETTES {
            return Err(RegistryError::TooMany(cassettes.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for entry in &cassettes {
            if !valid_id(&entry.id) {
                return Err(RegistryError::BadId(entry.id.clone()));
            }
            if !seen.insert(entry.id.as_str()) {
                return Err(RegistryError::DuplicateId(entry.id.clone()));
            }
            check_path(&root, entry)?;
            check_http(entry, &cassettes)?;
        }
        Ok(Self {
            root,
            entries: cassettes,
        })
    }

    /// Reads and checks a registry file (`{"rootDir", "cassettes": [...]}`), for
    /// the plugin row's `echo` object; the error names the file and the rule.
    pub fn read(path: &Path) -> Result<RegistryConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let config: RegistryConfig = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is no Echo registry ({{\"rootDir\", \"cassettes\"}}): {e}",
                path.display()
            )
        })?;
        Self::check(config.clone()).map_err(|e| format!("{}: {e} [{}]", path.display(), e.rule()))?;
        Ok(config)
    }

    /// The checked root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The registered cassettes, in configured order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry for an id and its absolute path; `None` for an unknown id.
    pub fn resolve(&self, id: &str) -> Option<(&Entry, PathBuf)> {
        let entry = self.entries.iter().find(|entry| entry.id == id)?;
        Some((entry, self.root.join(&entry.path)))
    }
}

fn valid_id(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// An HTTP entry proxies on a port of its own, and record names the real server.
fn check_http(entry: &Entry, all: &[Entry]) -> Result<(), RegistryError> {
    let Some(http) = &entry.http else {
        return Ok(());
    };
    if http.port == 0 {
        return Err(RegistryError::HttpPortZero(entry.id.clone()));
    }
    if let Some(other) = all
        .iter()
        .find(|other| other.id != entry.id && other.http.as_ref().is_some_and(|o| o.port == http.port))
    {
        return Err(RegistryError::HttpPortTaken(
            entry.id.clone(),
            other.id.clone(),
            http.port,
        ));
    }
    let why = match (&http.upstream, entry.mode) {
        (None, Mode::Record | Mode::Passthrough) => {
            "record and passthrough need http.upstream, the real server's URL"
        }
        (Some(url), _) if !(url.starts_with("http://") || url.starts_with("https://")) => {
            "http.upstream must be an http:// or https:// URL"
        }
        _ => return Ok(()),
    };
    Err(RegistryError::HttpUpstream {
        id: entry.id.clone(),
        why,
    })
}

fn check_path(root: &Path, entry: &Entry) -> Result<(), RegistryError> {
    let escapes = || RegistryError::PathEscapesRoot {
        id: entry.id.clone(),
        path: entry.path.clone(),
    };
    let mut here = root.to_path_buf();
    let mut any = false;
    for component in entry.path.components() {
        match component {
            Component::Normal(part) => here.push(part),
            Component::CurDir => continue,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(escapes()),
        }
        any = true;
        if here
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink())
        {
            return Err(RegistryError::PathSymlinked {
                id: entry.id.clone(),
                path: entry.path.clone(),
            });
        }
    }
    if any { Ok(()) } else { Err(escapes()) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(root: &Path, cassettes: &serde_json::Value) -> RegistryConfig {
        serde_json::from_value(json!({"rootDir": root, "cassettes": cassettes})).unwrap()
    }

    fn entry(id: &str, path: &str) -> serde_json::Value {
        json!({"id": id, "path": path, "server": "everything", "mode": "replay"})
    }

    #[test]
    fn a_checked_registry_resolves_ids_to_paths_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let registry = Registry::check(config(&root, &json!([entry("ev-1", "cassettes/ev.jsonl")]))).unwrap();
        let (found, path) = registry.resolve("ev-1").unwrap();
        assert_eq!(found.mode, Mode::Replay);
        assert_eq!(path, root.join("cassettes/ev.jsonl"));
        assert!(registry.resolve("nope").is_none());
    }

    #[test]
    fn paths_leaving_the_root_are_refused_with_the_rule_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for path in ["../outside.jsonl", "a/../../b.jsonl", "/etc/passwd", ".", ""] {
            let error = Registry::check(config(&root, &json!([entry("x", path)]))).unwrap_err();
            assert_eq!(error.rule(), "echo.path.inside-root", "{path}: {error}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_roots_and_symlinks_under_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = real.with_file_name("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let error = Registry::check(config(&link, &json!([]))).unwrap_err();
        assert_eq!(error.rule(), "echo.root.no-symlink", "{error}");

        std::os::unix::fs::symlink("/tmp", real.join("out")).unwrap();
        let error = Registry::check(config(&real, &json!([entry("x", "out/c.jsonl")]))).unwrap_err();
        assert_eq!(error.rule(), "echo.path.no-symlink", "{error}");
    }

    #[test]
    fn ids_are_well_formed_unique_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let rule = |cassettes| Registry::check(config(&root, &cassettes)).unwrap_err().rule();
        assert_eq!(rule(json!([entry("a/b", "c.jsonl")])), "echo.id.charset");
        assert_eq!(
            rule(json!([entry("a", "c.jsonl"), entry("a", "d.jsonl")])),
            "echo.id.unique"
        );
        let many: Vec<_> = (0..=MAX_CASSETTES)
            .map(|n| entry(&format!("c{n}"), "c.jsonl"))
            .collect();
        assert_eq!(rule(json!(many)), "echo.registry.limit");
        let relative = Registry::check(config(Path::new("rel"), &json!([]))).unwrap_err();
        assert_eq!(relative.rule(), "echo.root.absolute");
    }

    #[test]
    fn an_http_entry_proxies_on_a_port_of_its_own_and_record_names_the_real_server() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let http = |id: &str, mode: &str, http: serde_json::Value| json!({"id": id, "path": format!("{id}.jsonl"), "server": id, "mode": mode, "http": http});
        let rule = |cassettes| Registry::check(config(&root, &cassettes)).unwrap_err().rule();
        let upstream = "https://mcp.example/mcp";
        let ok = Registry::check(config(
            &root,
            &json!([
                http("a", "replay", json!({"port": 41001})),
                http("b", "record", json!({"port": 41002, "upstream": upstream})),
            ]),
        ))
        .unwrap();
        assert_eq!(
            ok.entries()[0].http.as_ref().unwrap().url(),
            "http://127.0.0.1:41001/mcp"
        );
        assert_eq!(
            rule(json!([http("a", "replay", json!({"port": 0}))])),
            "echo.http.port"
        );
        assert_eq!(
            rule(json!([
                http("a", "replay", json!({"port": 41001})),
                http("b", "replay", json!({"port": 41001}))
            ])),
            "echo.http.port-unique"
        );
        assert_eq!(
            rule(json!([http("a", "record", json!({"port": 41001}))])),
            "echo.http.upstream"
        );
        assert_eq!(
            rule(json!([http(
                "a",
                "replay",
                json!({"port": 41001, "upstream": "ftp://x"})
            )])),
            "echo.http.upstream"
        );
        let unknown = serde_json::from_value::<RegistryConfig>(
            json!({"rootDir": root, "cassettes": [http("a", "replay", json!({"port": 1, "host": "0.0.0.0"}))]}),
        );
        assert!(unknown.is_err(), "an unknown http key is refused, not ignored");
    }
}
