//! The `check` family: `plugin_check`.

use dshkit_check::{CheckRequest, compact_text};
use dshkit_env::Environment;
use dshkit_mcp::{
    GuidanceSpec, HostSeams, PromptSpec, SkillSpec, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput,
    ToolSpec,
};
use futures::future::BoxFuture;
use serde_json::json;

use super::shared::{arguments, structured};

const TOOL: &str = "plugin_check";

pub(crate) struct CheckFamily;

impl ToolFamily for CheckFamily {
    fn name(&self) -> &'static str {
        "check"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: TOOL,
            title: "Check a DSH plugin tree before restarting DSH",
            description: "Asks, before a restart, whether a DSH profile's plugin tree would break DSH. Always: patch references (cordis.patch.yml parsed as YAML; every inserted plugin must exist), JavaScript syntax of every local plugin file (positions as node --check gives them), manifests, config assembly (dsh --dump-config), and an audit of leftover DSH instances. With live: an isolated boot on a free port, then a clean-shutdown proof; with page: also the booted page in headless Chromium (exceptions, console errors, blank page). sweep runs only the audit; killStray kills only instances this run leaked and old smoke instances, never a host. Each check is pass, fail, warn or not_tested (not tested is neither pass nor fail). On ok: false, follow the plugin-fault-diagnosis playbook. A pass is evidence the tree loads, not a root-cause analysis.",
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "dshHome": { "type": "string", "maxLength": 4096, "description": "DSH home; default DSH_HOME, else ~/.dsh" },
                    "profile": { "type": "string", "maxLength": 64, "description": "profile to check; default web" },
                    "target": { "type": "string", "maxLength": 214, "description": "check one local plugin only (directory name or @local/NAME)" },
                    "live": { "type": "boolean", "description": "boot an isolated instance" },
                    "page": { "type": "boolean", "description": "also load the booted page in Chromium (implies live)" },
                    "sweep": { "type": "boolean", "description": "only audit leftover instances" },
                    "killStray": { "type": "boolean", "description": "kill leaked and old smoke instances during the audit" },
                    "bootTimeoutMs": { "type": "integer", "minimum": 1000, "maximum": 300_000 },
                    "observeMs": { "type": "integer", "minimum": 0, "maximum": 15000, "description": "how long the page smoke watches the booted page after load (default 3000)" },
                    "isolateHome": { "type": "boolean", "description": "boot against a temporary mirror of the profile instead of the real home" }
                }
            }),
            output_schema: None,
            hints: ToolHints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
            host: HostSeams::NONE,
        }]
    }

    fn prompts(&self) -> Vec<PromptSpec> {
        vec![PromptSpec {
            name: "plugin-fault-diagnosis",
            title: "What to do after plugin_check fails",
            description: "The playbook for a plugin_check result with ok: false: how to read each failed check and fix it.",
            text: dshkit_check::PLAYBOOK,
        }]
    }

    fn skills(&self) -> Vec<SkillSpec> {
        vec![SkillSpec {
            name: "plugin-fault-diagnosis",
            description: "What to do when plugin_check reports ok: false for a DSH plugin tree: how to read each failed check and fix it before restarting DSH.",
            text: dshkit_check::PLAYBOOK,
        }]
    }

    fn guidance(&self) -> Vec<GuidanceSpec> {
        vec![GuidanceSpec {
            name: "plugin-check",
            text: "Before restarting DSH after editing a DSH plugin, call plugin_check; on ok: false follow the plugin-fault-diagnosis skill.",
        }]
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let request: CheckRequest = arguments(TOOL, call.arguments)?;
            let mut options = request
                .options(&Environment::from_process())
                .map_err(|e| ToolFailure::new(e.to_string()))?;
            if call.progress.is_listened() {
                let progress = call.progress.clone();
                options.progress = dshkit_check::Progress::new(move |stage| progress.stage(stage));
            }
            let report = dshkit_check::run(options).await;
            Ok(ToolOutput {
                text: compact_text(&report),
                structured: structured(&report),
                images: Vec::new(),
            })
        })
    }
}
