//! Tool routers: one module per family, each adapting a domain crate to MCP.

pub(crate) mod check;
mod core;
mod echo;
mod liveloop;
mod liveloop_app;

use std::sync::Arc;

use dshkit_mcp::{ToolFailure, ToolFamily};
use serde_json::{Map, Value};

/// Settings the families take from the command line.
#[derive(Debug, Clone, Default)]
pub struct ToolsConfig {
    /// An existing browser endpoint (`ws://…` or `http://host:port`) instead of a launch.
    pub browser_endpoint: Option<String>,
    /// External hosts previews may load from.
    pub allow_hosts: Vec<String>,
    /// The directory LiveLoop's app tools may detect, run and read references in
    /// (default: the current directory).
    pub workspace: Option<std::path::PathBuf>,
    /// Start dev servers without a per-call `confirm: true`.
    pub allow_run: bool,
    /// The person's settings file (flags above win over it).
    pub settings: dshkit_env::settings::Settings,
}

impl ToolsConfig {
    /// Evidence retention: the built-in policy, with the settings' age.
    pub(crate) fn retention(&self) -> dshkit_liveloop::verify::evidence::Retention {
        let mut retention = dshkit_liveloop::verify::evidence::Retention::default();
        if let Some(days) = self.settings.evidence_retention_days {
            retention.max_age = std::time::Duration::from_secs(days * 24 * 3600);
        }
        retention
    }
}

/// Every family this build can serve, in listing order.
pub fn all_families(config: &ToolsConfig) -> Vec<Arc<dyn ToolFamily>> {
    vec![
        Arc::new(core::CoreFamily),
        Arc::new(liveloop::LiveLoopFamily::new(config)),
        Arc::new(check::CheckFamily),
        Arc::new(echo::EchoFamily::new(
            config
                .workspace
                .clone()
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| ".".into()),
        )),
    ]
}

/// Deserializes a call's arguments into `T`, or fails with the schema hint.
pub(crate) fn arguments<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Map<String, Value>,
) -> Result<T, ToolFailure> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolFailure::invalid_arguments(tool, e))
}

/// A serializable report as a JSON object for `structuredContent`.
pub(crate) fn structured(value: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        other => Map::from_iter([("value".to_owned(), other.unwrap_or(Value::Null))]),
    }
}

/// The owner of previews for a call: the caller's subject, or a workstream the
/// caller named inside it. One MCP session can never reach another's previews by
/// naming its owner.
pub(crate) fn scoped_owner(subject: &str, owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!("{subject}/owner:{owner}"),
        None => subject.to_owned(),
    }
}

#[cfg(test)]
mod owner_tests {
    use super::scoped_owner;

    #[test]
    fn a_named_owner_stays_inside_the_callers_scope() {
        let a = scoped_owner("mcp-session:aaa", Some("build"));
        let b = scoped_owner("mcp-session:bbb", Some("build"));
        assert_ne!(a, b, "the same owner name in two sessions is two owners");
        assert_eq!(scoped_owner("stdio", None), "stdio");
    }
}
