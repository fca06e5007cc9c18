//! The `core` family: facts about dshkit itself and the machine it runs on.

use dshkit_env::Environment;
use dshkit_env::doctor::{self, DoctorReport};
use dshkit_mcp::{HostSeams, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::shared::{arguments, structured};

pub(crate) struct CoreFamily;

/// `dshkit_doctor` takes no arguments; unknown ones are refused, not ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

const DOCTOR: &str = "dshkit_doctor";
const INFO: &str = "dshkit_info";

impl ToolFamily for CoreFamily {
    fn name(&self) -> &'static str {
        "core"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: DOCTOR,
                title: "Check dshkit's prerequisites",
                description: "Reports, from this machine, the facts dshkit's capabilities depend on: the Chromium path and version, the Node.js path and version, whether a DSH (DeepSeek Harness) install is present and its version, the DSH home and its profiles, whether the evidence root is writable, and free disk space. Every fact has a status (ok, warn, missing) and, when not ok, the exact command or setting that fixes it. Read-only except that it creates the evidence root if absent. Takes no arguments.",
                input_schema: json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                output_schema: Some(doctor_output_schema()),
                hints: ToolHints::READ_ONLY,
                host: HostSeams::NONE,
            },
            ToolSpec {
                name: INFO,
                title: "Describe this dshkit server",
                description: "Returns this dshkit server's name, version, supported MCP protocol versions and result limits. Instant; takes no arguments.",
                input_schema: json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                output_schema: None,
                hints: ToolHints::READ_ONLY,
                host: HostSeams::NONE,
            },
        ]
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let _: NoArguments = arguments(&call.name, call.arguments)?;
            match call.name.as_str() {
                DOCTOR => {
                    let report: DoctorReport = doctor::diagnose(&Environment::from_process()).await;
                    Ok(ToolOutput {
                        text: report.compact_text(),
                        structured: structured(&report),
                        images: Vec::new(),
                    })
                }
                INFO => {
                    let versions: Vec<String> = dshkit_mcp::SUPPORTED_PROTOCOL_VERSIONS
                        .iter()
                        .map(ToString::to_string)
                        .collect();
                    let limits = dshkit_mcp::ResultLimits::default();
                    let info = json!({
                        "name": "dshkit",
                        "version": env!("CARGO_PKG_VERSION"),
                        "protocolVersions": versions,
                        "limits": {
                            "maxStructuredBytes": limits.max_structured_bytes,
                            "maxTextBytes": limits.max_text_bytes,
                        },
                    });
                    Ok(ToolOutput {
                        text: format!(
                            "dshkit {} (MCP {})",
                            env!("CARGO_PKG_VERSION"),
                            versions.join(", ")
                        ),
                        structured: structured(&info),
                        images: Vec::new(),
                    })
                }
                other => Err(ToolFailure::new(format!("the core family has no tool `{other}`"))),
            }
        })
    }
}

fn doctor_output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "required": ["formatVersion", "dshkitVersion", "ok", "facts"],
        "properties": {
            "formatVersion": { "type": "integer" },
            "dshkitVersion": { "type": "string" },
            "ok": { "type": "boolean", "description": "false when any fact is missing" },
            "truncated": { "type": "boolean" },
            "truncatedBytes": { "type": "integer" },
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "status", "summary"],
                    "properties": {
                        "id": { "enum": ["chromium", "node", "dsh", "dsh_home", "evidence_root", "disk"] },
                        "status": { "enum": ["ok", "warn", "missing"] },
                        "summary": { "type": "string" },
                        "path": { "type": "string" },
                        "version": { "type": "string" },
                        "foundBy": { "enum": ["variable", "known_path", "search_path"] },
                        "details": { "type": "array", "items": { "type": "string" } },
                        "fix": { "type": "string" }
                    }
                }
            }
        }
    })
}
