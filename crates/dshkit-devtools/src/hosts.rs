//! Registering the bridge (`dshkit devtools bridge`) with MCP hosts outside
//! DSH, in each host's own config file and documented format:
//!
//! - Claude Code: the project's `.mcp.json`, `{"mcpServers": {NAME: {"command",
//!   "args"}}}` (project scope, <https://code.claude.com/docs/en/mcp>);
//! - Codex: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), a
//!   `[mcp_servers.NAME]` table with `command` and `args`
//!   (<https://developers.openai.com/codex/mcp>).
//!
//! A file is merged, never replaced: everything else in it stays as it was
//! (a TOML file keeps its text, comments included; the entry is appended). A
//! file that does not parse, or already names the server with another command,
//! is refused and left untouched; registering again is a no-op. Writes are
//! atomic.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The name the bridge is registered under.
pub const SERVER_NAME: &str = "dsh-devtools";
/// Claude Code's project-scoped MCP file, in the project's root.
pub const CLAUDE_CODE_FILE: &str = ".mcp.json";
/// Codex's config file, in its home.
pub const CODEX_FILE: &str = "config.toml";
/// The hosts `setup --agent` knows.
pub const HOSTS: [&str; 2] = ["claude-code", "codex"];

/// An MCP host whose config file `setup --agent` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ClaudeCode,
    Codex,
}

impl Host {
    /// `claude-code` or `codex`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "claude-code" => Ok(Self::ClaudeCode),
            "codex" => Ok(Self::Codex),
            other => Err(format!(
                "unknown agent host {other:?}: known are {}",
                HOSTS.join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The host's file: `project/.mcp.json`, or `codex_home/config.toml`.
    pub fn config_file(self, project: &Path, codex_home: &Path) -> PathBuf {
        match self {
            Self::ClaudeCode => project.join(CLAUDE_CODE_FILE),
            Self::Codex => codex_home.join(CODEX_FILE),
        }
    }
}

/// Codex's home: `CODEX_HOME`, else `~/.codex`.
pub fn codex_home(env_codex_home: Option<PathBuf>, home: &Path) -> PathBuf {
    env_codex_home.unwrap_or_else(|| home.join(".codex"))
}

/// Why a host's file was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    #[error("failed to read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not valid {format} ({why}): left untouched; fix it, then run setup again", path.display())]
    Malformed {
        path: PathBuf,
        format: &'static str,
        why: String,
    },
    #[error(
        "{} already registers {SERVER_NAME} with another command: left untouched; remove that entry, then run setup again",
        path.display()
    )]
    Conflict { path: PathBuf },
    #[error("failed to write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What registering did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub host: &'static str,
    pub file: PathBuf,
    /// `false`: the file already had this very entry.
    pub changed: bool,
}

/// Where `setup --agent` registers: the project (Claude Code's `.mcp.json`) and
/// Codex's home.
#[derive(Debug, Clone)]
pub struct Places {
    pub project: PathBuf,
    pub codex_home: PathBuf,
}

/// Registers the bridge of `registry` (`<dshkit> devtools --devtools-dir
/// REGISTRY bridge`) with each host named in `agents`, in order; the first
/// refusal (an unknown host, a file left untouched) ends it.
pub fn register_bridge(
    agents: &[String],
    places: &Places,
    dshkit: &Path,
    registry: &Path,
) -> Result<Vec<Registered>, String> {
    let args: Vec<String> = vec![
        "devtools".into(),
        "--devtools-dir".into(),
        registry.display().to_string(),
        "bridge".into(),
    ];
    agents
        .iter()
        .map(|agent| {
            let host = Host::parse(agent)?;
            let file = host.config_file(&places.project, &places.codex_home);
            register(host, &file, &dshkit.display().to_string(), &args).map_err(|e| e.to_string())
        })
        .collect()
}

/// Registers `command args` as [`SERVER_NAME`] in `host`'s `file`.
pub fn register(host: Host, file: &Path, command: &str, args: &[String]) -> Result<Registered, HostError> {
    let existing = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(HostError::Read {
                path: file.to_owned(),
                source,
            });
        }
    };
    let merged = match host {
        Host::ClaudeCode => merge_json(file, existing.as_deref(), command, args)?,
        Host::Codex => merge_toml(file, existing.as_deref(), command, args)?,
    };
    let changed = merged.is_some();
    if let Some(text) = merged {
        write(file, &text)?;
    }
    Ok(Registered {
        host: host.name(),
        file: file.to_owned(),
        changed,
    })
}

fn write(file: &Path, text: &str) -> Result<(), HostError> {
    let failed = |source| HostError::Write {
        path: file.to_owned(),
        source,
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    dshkit_os::fs::write_atomic(file, text.as_bytes()).map_err(failed)
}

/// The new text of a Claude Code `.mcp.json`, or `None` when it already has the entry.
fn merge_json(
    file: &Path,
    existing: Option<&str>,
    command: &str,
    args: &[String],
) -> Result<Option<String>, HostError> {
    let malformed = |why: String| HostError::Malformed {
        path: file.to_owned(),
        format: "JSON",
        why,
    };
    let mut root: Map<String, Value> = match existing {
        None => Map::new(),
        Some(text) if text.trim().is_empty() => Map::new(),
        Some(text) => match serde_json::from_str(text).map_err(|e| malformed(e.to_string()))? {
            Value::Object(root) => root,
            _ => return Err(malformed("not a JSON object".into())),
        },
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| malformed("mcpServers is not an object".into()))?;
    let entry = json!({"command": command, "args": args});
    match servers.get(SERVER_NAME) {
        Some(present) if present["command"] == entry["command"] && present["args"] == entry["args"] => {
            return Ok(None);
        }
        Some(_) => {
            return Err(HostError::Conflict {
                path: file.to_owned(),
            });
        }
        None => {
            servers.insert(SERVER_NAME.to_owned(), entry);
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).expect("json");
    text.push('\n');
    Ok(Some(text))
}

/// The new text of a Codex `config.toml`, or `None` when it already has the
/// entry: the table appended to the file's own text, checked by parsing it.
fn merge_toml(
    file: &Path,
    existing: Option<&str>,
    command: &str,
    args: &[String],
) -> Result<Option<String>, HostError> {
    let malformed = |why: String| HostError::Malformed {
        path: file.to_owned(),
        format: "TOML",
        why,
    };
    let text = existing.unwrap_or_default();
    let parsed: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| malformed(e.message().to_owned()))?;
    let wanted_args: Vec<toml::Value> = args.iter().map(|a| toml::Value::String(a.clone())).collect();
    let is_ours = |table: &toml::Table| {
        let entry = table.get("mcp_servers").and_then(|s| s.get(SERVER_NAME));
        entry.map(|e| {
            e.get("command").and_then(toml::Value::as_str) == Some(command)
                && e.get("args").and_then(toml::Value::as_array) == Some(&wanted_args)
        })
    };
    match is_ours(&parsed) {
        Some(true) => return Ok(None),
        Some(false) => {
            return Err(HostError::Conflict {
                path: file.to_owned(),
            });
        }
        None => {}
    }
    let mut merged = text.to_owned();
    if !merged.is_empty() && !merged.ends_with('\n') {
        merged.push('\n');
    }
    if !merged.is_empty() {
        merged.push('\n');
    }
    merged.push_str(&format!(
        "# The Cordis DevTools bridge of a live DSH (written by `dshkit devtools setup --agent codex`).\n[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = {}\n",
        toml::Value::String(command.to_owned()),
        toml::Value::Array(wanted_args.clone())
    ));
    // An existing `mcp_servers` written inline, say, cannot take the table.
    let reparsed: toml::Table = merged.parse().map_err(|e: toml::de::Error| {
        malformed(format!(
            "its mcp_servers cannot take a [mcp_servers.{SERVER_NAME}] table: {}",
            e.message()
        ))
    })?;
    if is_ours(&reparsed) == Some(true) {
        Ok(Some(merged))
    } else {
        Err(malformed("the merged file does not read back".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Vec<String> {
        vec![
            "devtools".into(),
            "--devtools-dir".into(),
            "/r \"q\"".into(),
            "bridge".into(),
        ]
    }

    #[test]
    fn a_codex_config_keeps_its_text_and_comments_and_registering_twice_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let before = "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        std::fs::write(&file, before).unwrap();
        let first = register(Host::Codex, &file, "/bin/dshkit", &args()).unwrap();
        assert!(first.changed);
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(after.starts_with(before), "{after}");
        let table: toml::Table = after.parse().unwrap();
        assert_eq!(table["model"].as_str(), Some("o3"));
        assert_eq!(table["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        let ours = &table["mcp_servers"][SERVER_NAME];
        assert_eq!(ours["command"].as_str(), Some("/bin/dshkit"));
        assert_eq!(ours["args"][2].as_str(), Some("/r \"q\""));
        let again = register(Host::Codex, &file, "/bin/dshkit", &args()).unwrap();
        assert!(!again.changed);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    }

    #[test]
    fn malformed_or_conflicting_files_are_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        for (host, name, text) in [
            (Host::Codex, "config.toml", "model = \n"),
            (
                Host::Codex,
                "inline.toml",
                "mcp_servers = { other = { command = \"x\" } }\n",
            ),
            (Host::ClaudeCode, ".mcp.json", "{\"mcpServers\": "),
            (Host::ClaudeCode, "list.json", "[1]"),
            (
                Host::ClaudeCode,
                "taken.json",
                "{\"mcpServers\": {\"dsh-devtools\": {\"command\": \"other\"}}}",
            ),
        ] {
            let file = dir.path().join(name);
            std::fs::write(&file, text).unwrap();
            let error = register(host, &file, "/bin/dshkit", &args()).unwrap_err();
            assert!(error.to_string().contains("left untouched"), "{name}: {error}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{name}");
        }
    }

    #[test]
    fn a_claude_code_file_keeps_its_other_servers_and_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".mcp.json");
        std::fs::write(&file, "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}, \"z\": 1}").unwrap();
        assert!(
            register(Host::ClaudeCode, &file, "/bin/dshkit", &args())
                .unwrap()
                .changed
        );
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(value["z"], 1);
        assert_eq!(value["mcpServers"]["a"]["command"], "a");
        assert_eq!(value["mcpServers"][SERVER_NAME]["args"], json!(args()));
        assert!(
            !register(Host::ClaudeCode, &file, "/bin/dshkit", &args())
                .unwrap()
                .changed
        );
    }
}
