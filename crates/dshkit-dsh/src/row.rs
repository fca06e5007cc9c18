//! The `@deepseek-ai/dsh-mcp-client` loader row that makes DSH's own MCP client
//! connect to dshkit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::managed_row::ManagedRow;

/// The loader plugin DSH uses for MCP servers.
pub const MCP_CLIENT_PLUGIN: &str = "@deepseek-ai/dsh-mcp-client";
/// The loader entry id dshkit's row uses; tools appear as `mcp__dshkit__<tool>`.
pub const DEFAULT_ROW_ID: &str = "mcp-dshkit";
/// The `serverName` in DSH (the middle of `mcp__dshkit__<tool>`).
pub const DEFAULT_SERVER_NAME: &str = "dshkit";

/// How DSH reaches dshkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// DSH spawns `command args…` and speaks MCP over its stdio.
    Stdio { command: PathBuf, args: Vec<String> },
    /// DSH connects to a running `dshkit mcp --http` with a bearer token.
    Http { url: String, token: String },
}

/// One MCP server row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpRow {
    pub id: String,
    pub server_name: String,
    pub transport: Transport,
    /// Variables passed to a stdio server explicitly: DSH strips `DSH_*` and
    /// credential-shaped names from the environment of its children.
    pub env: BTreeMap<String, String>,
}

impl McpRow {
    /// The default row for `transport`.
    pub fn new(transport: Transport) -> Self {
        Self {
            id: DEFAULT_ROW_ID.to_owned(),
            server_name: DEFAULT_SERVER_NAME.to_owned(),
            transport,
            env: BTreeMap::new(),
        }
    }

    /// The row as the JSON value DSH's loader reads.
    pub fn to_value(&self) -> serde_json::Value {
        ManagedRow::to_value(self)
    }

    /// The patch entry (`- insert: [row]`) as YAML text, ending in a newline.
    pub fn to_patch_yaml(&self) -> String {
        ManagedRow::to_patch_yaml(self)
    }
}

impl ManagedRow for McpRow {
    fn id(&self) -> &str {
        &self.id
    }

    fn to_value(&self) -> serde_json::Value {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Config<'a> {
            server_name: &'a str,
            transport: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            command: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            args: Option<&'a [String]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            url: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            headers: Option<BTreeMap<&'static str, String>>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            env: &'a BTreeMap<String, String>,
            fail_on_startup_error: bool,
        }
        let config = match &self.transport {
            Transport::Stdio { command, args } => Config {
                server_name: &self.server_name,
                transport: "stdio",
                command: Some(command.display().to_string()),
                args: Some(args),
                url: None,
                headers: None,
                env: &self.env,
                fail_on_startup_error: true,
            },
            Transport::Http { url, token } => Config {
                server_name: &self.server_name,
                transport: "streamable-http",
                command: None,
                args: None,
                url: Some(url),
                headers: Some(BTreeMap::from([("Authorization", format!("Bearer {token}"))])),
                env: &self.env,
                fail_on_startup_error: true,
            },
        };
        serde_json::json!({ "id": self.id, "name": MCP_CLIENT_PLUGIN, "config": config })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_row_has_the_fields_dsh_reads() {
        let mut row = McpRow::new(Transport::Stdio {
            command: PathBuf::from("/opt/dshkit/bin/dshkit"),
            args: vec!["mcp".into(), "--stdio".into()],
        });
        row.env.insert("DSH_HOME".into(), "/home/u/.dsh".into());
        let value = row.to_value();
        assert_eq!(value["name"], MCP_CLIENT_PLUGIN);
        assert_eq!(value["config"]["transport"], "stdio");
        assert_eq!(value["config"]["command"], "/opt/dshkit/bin/dshkit");
        assert_eq!(value["config"]["args"], serde_json::json!(["mcp", "--stdio"]));
        assert_eq!(value["config"]["env"]["DSH_HOME"], "/home/u/.dsh");
        assert_eq!(value["config"]["failOnStartupError"], true);
        let yaml = row.to_patch_yaml();
        let back: serde_json::Value = yaml_serde::from_str(&yaml).unwrap();
        assert_eq!(back[0]["insert"][0], value);
    }

    #[test]
    fn http_row_carries_the_bearer_header() {
        let row = McpRow::new(Transport::Http {
            url: "http://127.0.0.1:7000/mcp".into(),
            token: "abc".into(),
        });
        let value = row.to_value();
        assert_eq!(value["config"]["transport"], "streamable-http");
        assert_eq!(value["config"]["headers"]["Authorization"], "Bearer abc");
        assert!(value["config"].get("command").is_none());
        assert!(value["config"].get("env").is_none());
    }
}
