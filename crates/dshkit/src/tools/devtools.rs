//! The `devtools` family: Cordis DevTools over MCP, with the original tools'
//! names. Runtime facts of a live DSH process whose dshkit plugin runs the
//! collector; metadata only, bounded, never a root cause.

use std::path::PathBuf;

use dshkit_devtools::agent::{self, AgentError, EXPERIMENT_START, EXPERIMENT_STOP};
use dshkit_devtools::{DebugCore, DebugError, schema};
use dshkit_mcp::{
    Approval, HostSeams, PromptSpec, SkillSpec, ToolCall, ToolFailure, ToolFamily, ToolHints, ToolOutput,
    ToolSpec,
};
use futures::future::BoxFuture;
use serde_json::Value;

use super::shared::structured;

/// The `dsh-runtime-debugging` skill, shipped as a file for hosts that read
/// skills and served as a prompt (front matter left out) to the rest.
const SKILL: &str = include_str!("../../../../skills/dsh-runtime-debugging/SKILL.md");

pub(crate) struct DevtoolsFamily {
    core: DebugCore,
}

impl DevtoolsFamily {
    /// Targets are found in `registry` (default: `<DSH home>/dshkit-devtools`).
    pub(crate) fn new(registry: PathBuf) -> Self {
        Self {
            core: DebugCore::new(registry),
        }
    }
}

fn failure(error: &DebugError) -> ToolFailure {
    let mut failure = ToolFailure::new(error.to_string());
    failure.structured = Some(error.facts());
    failure
}

fn output((text, value): agent::View) -> ToolOutput {
    let structured = match value {
        Value::Object(map) => map,
        other => structured(&other),
    };
    ToolOutput {
        text,
        structured,
        images: Vec::new(),
    }
}

impl ToolFamily for DevtoolsFamily {
    fn name(&self) -> &'static str {
        "devtools"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        schema::tools()
            .into_iter()
            .map(|tool| {
                let spec = ToolSpec {
                    name: tool.name,
                    title: tool.title,
                    description: tool.description,
                    input_schema: tool.input_schema,
                    output_schema: None,
                    hints: ToolHints::READ_ONLY,
                    host: HostSeams::NONE,
                };
                match tool.name {
                    EXPERIMENT_START => experiment_start(spec),
                    EXPERIMENT_STOP => ToolSpec {
                        hints: ToolHints {
                            idempotent: true,
                            ..CHANGES_THE_TARGET
                        },
                        ..spec
                    },
                    _ => spec,
                }
            })
            .collect()
    }

    fn prompts(&self) -> Vec<PromptSpec> {
        let body = SkillSpec::from_file(SKILL).map_or(SKILL, |skill| skill.text);
        vec![PromptSpec {
            name: "dsh-runtime-debugging",
            title: "Debug a live DSH runtime",
            description: "The Cordis DevTools loop: discover, attach, snapshot, wait, inspect, checkpoint and compare, a finite profile with consent, facts reported apart from source diagnosis, detach.",
            text: body,
        }]
    }

    fn skills(&self) -> Vec<SkillSpec> {
        SkillSpec::from_file(SKILL).into_iter().collect()
    }

    fn release<'a>(&'a self, subject: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.core.release(subject))
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            agent::answer(&self.core, &call.subject, &call.name, call.arguments)
                .await
                .map(output)
                .map_err(|error| match error {
                    AgentError::Arguments(e) => ToolFailure::invalid_arguments(&call.name, e),
                    AgentError::Incomplete(what) => ToolFailure::invalid_arguments(&call.name, what),
                    AgentError::Debug(e) => failure(&e),
                    other => ToolFailure::new(other.to_string()),
                })
        })
    }
}

/// An experiment's start and stop change what runs in the target.
const CHANGES_THE_TARGET: ToolHints = ToolHints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// A start instruments the live process: the host asks the user first.
fn experiment_start(spec: ToolSpec) -> ToolSpec {
    ToolSpec {
        hints: CHANGES_THE_TARGET,
        host: HostSeams {
            approval: Some(Approval {
                argument: "confirm",
                when: None,
                action: "profile the listeners of \"{event}\" in this DSH for a lease",
                shows: &["ttlMs"],
                reason: "the event's dispatch is wrapped for the lease (timing only, no values) and restored afterwards",
                otherwise: "ask the user to run `dshkit devtools profile` themselves",
                plan: None,
                host_words: &[(
                    "Ask the user first and pass confirm: true.",
                    "The user is asked for approval first.",
                )],
            }),
            ..HostSeams::NONE
        },
        ..spec
    }
}
