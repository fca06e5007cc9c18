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
