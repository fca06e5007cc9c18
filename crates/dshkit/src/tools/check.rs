//! The `check` family: `plugin_check`.

use std::path::PathBuf;
use std::time::Duration;

use dshkit_check::{CheckOptions, Report, Status};
use dshkit_env::{Environment, dsh, locate, vars};
use dshkit_mcp::{
    GuidanceSpec, HostSeams, PromptSpec, SkillSpec, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput,
    ToolSpec,
};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::shared::{arguments, structured};

const TOOL: &str = "plugin_check";

pub(crate) struct CheckFamily;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one documented input of plugin_check"
)]
pub(crate) struct CheckArgs {
    pub(crate) dsh_home: Option<PathBuf>,
    pub(crate) profile: Option<String>,
    pub(crate) target: Option<String>,
    #[serde(default)]
    pub(crate) live: bool,
    #[serde(default)]
    pub(crate) page: bool,
    #[serde(default)]
    pub(crate) sweep: bool,
    #[serde(default)]
    pub(crate) kill_stray: bool,
    pub(crate) boot_timeout_ms: Option<u64>,
    pub(crate) observe_ms: Option<u64>,
    #[serde(default)]
    pub(crate) isolate_home: bool,
}

/// Builds the options from arguments and the environment (`DSH_HOME`, `DSHKIT_DSH`).
pub(crate) fn options(args: CheckArgs, env: &Environment) -> Result<CheckOptions, String> {
    let home = args
        .dsh_home
        .or_else(|| dsh::home(env))
        .ok_or("no DSH home: pass dshHome or set DSH_HOME")?;
    let launcher = match locate::dsh(env) {
        locate::Lookup::Found(found) => Some(found.path),
        _ => None,
    };
    let mut options = CheckOptions::new(
        home,
        args.profile.unwrap_or_else(|| "web".into()),
        launcher,
        env.get(vars::PATH).cloned().unwrap_or_default(),
        env.home().unwrap_or_else(|| PathBuf::from("/")),
    );
    options.target = args.target;
    options.live = args.live || args.page;
    options.page = args.page;
    options.sweep = args.sweep;
    options.kill_stray = args.kill_stray;
    options.isolate_home = args.isolate_home;
    if let Some(ms) = args.boot_timeout_ms {
        options.boot_timeout = Duration::from_millis(ms.clamp(1000, 300_000));
    }
    if let Some(ms) = args.observe_ms {
        options.observe = Duration::from_millis(ms).min(dshkit_check::smoke::MAX_PAGE_OBSERVE);
    }
    Ok(options)
}

/// One line per check: `fail   syntax            2 problem(s) in 3 file(s)`.
pub(crate) fn compact_text(report: &Report) -> String {
    let mut text = format!("plugin_check: {}\n", if report.ok { "ok" } else { "NOT OK" });
    for check in &report.checks {
        let word = match check.status {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::NotTested => "not_tested",
        };
        text.push_str(&format!("{word:<10} {:<17} {}\n", check.id, check.detail));
        if check.status == Status::Fail {
            for line in check.evidence.iter().take(5) {
                text.push_str(&format!("{:<28} {line}\n", ""));
            }
        }
    }
    if !report.ok {
        text.push_str("next: read the plugin-fault-diagnosis playbook (dshkit check --explain)\n");
    }
    text
}

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
            let args: CheckArgs = arguments(TOOL, call.arguments)?;
            let mut options = options(args, &Environment::from_process()).map_err(ToolFailure::new)?;
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
