//! `liveloop_detect`, `liveloop_runtime` and `liveloop_verify`: the app side of the
//! liveloop family (the browser side is `liveloop_browser`). Each turns its
//! arguments into a request for a workflow of `dshkit_liveloop::workflow` and
//! wraps the rendered result into a tool result.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dshkit_env::resolve::Resolved;
use dshkit_liveloop::preview::{PreviewManager, Viewport};
use dshkit_liveloop::runtime::{PortConflict, RuntimeError, RuntimeManager, ServerStatus};
use dshkit_liveloop::verify::VerifyRequest;
use dshkit_liveloop::verify::evidence::EvidenceStore;
use dshkit_liveloop::workflow::schema;
use dshkit_liveloop::workflow::{
    self, AppTarget, DetectRequest, Stage, Stages, StartRequest, StartTarget, Started, Surface,
    VerifyAppRequest, VerifyTools, WorkflowError, render,
};
use dshkit_mcp::{
    Approval, HostSeams, Images, Owner, ToolFailure, ToolHints, ToolLog, ToolOutput, ToolProgress, ToolSpec,
    When,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::shared::{ImagePolicy, arguments, fitted_images, scoped_owner, settings_now, structured};

pub(crate) const DETECT: &str = schema::DETECT.name;
pub(crate) const RUNTIME: &str = schema::RUNTIME.name;
pub(crate) const VERIFY: &str = schema::VERIFY.name;

/// Candidates listed in a detection result.
const MAX_LISTED_CANDIDATES: usize = 20;
/// Default wait for readiness in `start`/`restart`.
const DEFAULT_WAIT_MS: u64 = 60_000;

/// What the app tools share: the workspace they may touch, the runtime, and
/// whether starting processes needs no per-call confirmation.
pub(crate) struct AppTools {
    pub(crate) workspace: PathBuf,
    pub(crate) allow_run: bool,
    pub(crate) runtime: Arc<RuntimeManager>,
    /// The settings as they are at each call: the evidence root and its
    /// retention, the default quiet window and the preview limits.
    pub(crate) settings: dshkit_env::resolve::Live,
    /// When screenshots travel as image content.
    pub(crate) images: ImagePolicy,
}

impl AppTools {
    /// The settings as they are now, with the previews' limits brought up to
    /// date: a change a person saved applies to this call.
    pub(crate) fn settings_now(&self, previews: &PreviewManager) -> Result<Resolved, ToolFailure> {
        let settings = settings_now(&self.settings)?;
        previews.set_limits(crate::config::preview_limits(&settings));
        Ok(settings)
    }
}

/// A workflow's error as tool `tool` fails with it.
pub(crate) fn failure(tool: &str, error: WorkflowError) -> ToolFailure {
    if error.is_invalid_input() {
        return ToolFailure::invalid_arguments(tool, error);
    }
    match render::refusal(&error, Surface::Mcp) {
        Some(refusal) => ToolFailure {
            message: refusal.text(),
            structured: Some(structured(&refusal)),
        },
        None => ToolFailure::new(error.to_string()),
    }
}

/// The stages MCP shows: progress, and an adopted server as a warning.
fn stages(progress: &ToolProgress, log: Option<&ToolLog>) -> Stages {
    let (progress, log) = (progress.clone(), log.cloned());
    Stages::new(move |stage| {
        let Some(line) = render::stage_line(stage, Surface::Mcp) else {
            return;
        };
        match (&stage, &log) {
            (Stage::Adopted(_), Some(log)) => log.warning(&line),
            (Stage::Adopted(_), None) => {}
            _ => progress.stage(&line),
        }
    })
}

fn output(text: String, structured: Map<String, Value>) -> ToolOutput {
    ToolOutput {
        text,
        structured,
        images: Vec::new(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetectArgs {
    dir: Option<String>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum RuntimeOp {
    Start,
    Stop,
    Restart,
    Status,
    Logs,
    Adopt,
    Plan,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuntimeArgs {
    operation: RuntimeOp,
    dir: Option<String>,
    app: Option<String>,
    server: Option<String>,
    url: Option<String>,
    on_port_conflict: Option<PortConflict>,
    confirm: Option<bool>,
    lines: Option<usize>,
    wait_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VerifyArgs {
    session: Option<String>,
    server: Option<String>,
    app_url: Option<String>,
    viewport: Option<Viewport>,
    owner: Option<String>,
    /// Send the screenshot (and the diff's Current and Diff) as image content.
    image: Option<bool>,
    #[serde(flatten)]
    request: VerifyRequest,
}

impl AppTools {
    pub(crate) fn detect(&self, args: Map<String, Value>) -> Result<ToolOutput, ToolFailure> {
        let args: DetectArgs = arguments(DETECT, args)?;
        let detected = workflow::inside(&self.workspace, args.dir.as_deref())
            .and_then(|dir| {
                workflow::detect_app(&DetectRequest {
                    dir,
                    max_listed: Some(MAX_LISTED_CANDIDATES),
                })
            })
            .map_err(|e| failure(DETECT, e))?;
        let text = render::detection_text(&detected.detection);
        Ok(output(text, render::detected_json(&detected)))
    }

    /// What `start` (with `dir`/`app`) or `restart` (with `server`) would run.
    async fn plan(&self, args: &RuntimeArgs) -> Result<ToolOutput, ToolFailure> {
        let target = match args.server.as_deref() {
            Some(server) => StartTarget::Restart(server.to_owned()),
            None => StartTarget::Detect {
                dir: workflow::inside(&self.workspace, args.dir.as_deref())
                    .map_err(|e| failure(RUNTIME, e))?,
                app: args.app.as_deref().map(PathBuf::from),
            },
        };
        let plan = workflow::plan_start(&self.runtime, &target)
            .await
            .map_err(|e| failure(RUNTIME, e))?;
        let text = plan.text();
        let mut structured = structured(&plan);
        structured.insert("plan".into(), json!(text));
        Ok(output(
            format!("would run {text}; nothing was started"),
            structured,
        ))
    }

    /// Starts the detected profile (or restarts `server`) and waits for it to be ready.
    async fn start(
        &self,
        args: &RuntimeArgs,
        progress: &ToolProgress,
        log: &ToolLog,
    ) -> Result<Vec<ServerStatus>, ToolFailure> {
        if !self.allow_run && args.confirm != Some(true) {
            return Err(ToolFailure::new(
                "starting a dev server runs a program in the workspace: ask the user, then call again with confirm: true (or serve with `dshkit mcp --allow-run`)",
            ));
        }
        let target = if args.operation == RuntimeOp::Start {
            let dir =
                workflow::inside(&self.workspace, args.dir.as_deref()).map_err(|e| failure(RUNTIME, e))?;
            StartTarget::Detect {
                dir,
                app: args.app.as_deref().map(PathBuf::from),
            }
        } else {
            StartTarget::Restart(need(args.server.as_deref(), "`server` is required")?.to_owned())
        };
        let request = StartRequest {
            target,
            on_port_conflict: args.on_port_conflict.unwrap_or_default(),
            wait: Duration::from_millis(args.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(120_000)),
        };
        match workflow::start_app(&self.runtime, &request, &stages(progress, Some(log))).await {
            Ok(Started::Ready { status, .. }) => Ok(vec![*status]),
            Ok(Started::NeverReady {
                failure: why, status, ..
            }) => {
                let error = RuntimeError::NotReady(why);
                Err(failure(
                    RUNTIME,
                    WorkflowError::Waiting {
                        server: status.id,
                        error,
                    },
                ))
            }
            Err(error) => Err(failure(RUNTIME, error)),
        }
    }

    pub(crate) async fn runtime(
        &self,
        args: Map<String, Value>,
        progress: &ToolProgress,
        log: &ToolLog,
    ) -> Result<ToolOutput, ToolFailure> {
        let args: RuntimeArgs = arguments(RUNTIME, args)?;
        let server = || need(args.server.as_deref(), "`server` is required");
        let fail = |e| failure(RUNTIME, WorkflowError::Runtime(e));
        let statuses = match args.operation {
            RuntimeOp::Plan => return self.plan(&args).await,
            RuntimeOp::Start | RuntimeOp::Restart => self.start(&args, progress, log).await?,
            RuntimeOp::Adopt => {
                let url = need(args.url.as_deref(), "`url` is required for adopt")?;
                let adopted = self.runtime.adopt(url).await.map_err(fail)?;
                log.info(&format!(
                    "adopted the server at {url} as {}: dshkit uses it and never stops it",
                    adopted.id
                ));
                vec![adopted]
            }
            RuntimeOp::Stop => vec![self.runtime.stop(server()?).await.map_err(fail)?],
            RuntimeOp::Status => self.runtime.status(args.server.as_deref()).await.map_err(fail)?,
            RuntimeOp::Logs => {
                let lines = args
                    .lines
                    .unwrap_or(50)
                    .min(dshkit_liveloop::runtime::DEFAULT_LOG_LINES);
                let (tail, dropped) = self.runtime.logs(server()?, lines).await.map_err(fail)?;
                let structured =
                    Map::from_iter([("lines".into(), json!(tail)), ("dropped".into(), json!(dropped))]);
                return Ok(output(render::logs_text(&tail, dropped), structured));
            }
        };
        Ok(servers(&statuses))
    }

    pub(crate) async fn verify(
        &self,
        previews: &PreviewManager,
        subject: String,
        args: Map<String, Value>,
        progress: ToolProgress,
    ) -> Result<ToolOutput, ToolFailure> {
        let args: VerifyArgs = arguments(VERIFY, args)?;
        let settings = self.settings_now(previews)?;
        let root = settings
            .evidence_root
            .clone()
            .ok_or_else(|| ToolFailure::new(crate::config::NO_EVIDENCE_ROOT))?;
        let evidence = EvidenceStore::new(root.join("verify"));
        let target = match (args.session, args.server, args.app_url) {
            (Some(id), None, None) => AppTarget::Session(id),
            (None, Some(id), None) => AppTarget::Server(id),
            (None, None, Some(url)) => AppTarget::Url(url),
            _ => {
                return Err(ToolFailure::invalid_arguments(
                    VERIFY,
                    "give exactly one of `session` (an open preview), `server` (from liveloop_runtime) or `appUrl` (a loopback URL)",
                ));
            }
        };
        let request = VerifyAppRequest {
            target,
            request: args.request,
            // A chosen owner names a workstream inside the caller's own scope (its
            // MCP session, or the token holder without sessions): never another client's.
            owner: scoped_owner(&subject, args.owner.as_deref()),
            viewport: args.viewport,
            workspace: self.workspace.clone(),
            detect_source: true,
            quiet_window_ms: settings.quiet_window_ms,
        };
        let tools = VerifyTools {
            previews,
            runtime: &self.runtime,
            evidence: &evidence,
            retention: crate::config::retention(&settings),
        };
        let verified = workflow::verify_app(request, tools, &stages(&progress, None))
            .await
            .map_err(|e| failure(VERIFY, e))?;
        let report = &verified.report;
        let text = render::report_tool_text(report, verified.session.as_deref());
        let mut output = output(text, structured(report));
        if verified.session.is_some() {
            fitted_images(self.images, args.image, &render::report_images(report)).add_to(&mut output, "  ");
        }
        Ok(output)
    }
}

/// `value`, or the tool's refusal of the call without it.
fn need<'a>(value: Option<&'a str>, missing: &str) -> Result<&'a str, ToolFailure> {
    value.ok_or_else(|| ToolFailure::invalid_arguments(RUNTIME, missing))
}

/// Servers' statuses as the result of `liveloop_runtime`.
fn servers(statuses: &[ServerStatus]) -> ToolOutput {
    let structured = Map::from_iter([("servers".into(), json!(statuses))]);
    output(render::servers_text(statuses), structured)
}

pub(crate) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: DETECT,
            title: schema::DETECT.title,
            description: schema::DETECT.description,
            input_schema: (schema::DETECT.input_schema)(),
            output_schema: None,
            hints: ToolHints {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            host: HostSeams::NONE,
        },
        ToolSpec {
            name: RUNTIME,
            title: schema::RUNTIME.title,
            description: schema::RUNTIME.description,
            input_schema: (schema::RUNTIME.input_schema)(),
            output_schema: None,
            hints: ToolHints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
            host: HostSeams {
                approval: Some(Approval {
                    argument: "confirm",
                    when: Some(When {
                        argument: "operation",
                        any_of: &["start", "restart"],
                    }),
                    action: "{operation} the dev server",
                    shows: &["dir", "app", "server"],
                    reason: "it runs the detected dev command (never a shell string) in the workspace",
                    otherwise: "ask the user whether to start it, or to start it themselves and give you the URL (liveloop_runtime adopt)",
                    plan: Some("plan"),
                    host_words: &[
                        (
                            "start {dir?, app?, onPortConflict?, confirm: true, waitMs?}",
                            "start {dir?, app?, onPortConflict?, waitMs?}",
                        ),
                        (
                            "ask the user first and pass confirm: true.",
                            "the user is asked for approval first.",
                        ),
                    ],
                }),
                ..HostSeams::NONE
            },
        },
        ToolSpec {
            name: VERIFY,
            title: schema::VERIFY.title,
            description: schema::VERIFY.description,
            input_schema: (schema::VERIFY.input_schema)(),
            output_schema: None,
            hints: ToolHints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
            // A host attaches every verification's screenshot and names the owner.
            host: HostSeams {
                images: Some(Images {
                    argument: "image",
                    when: None,
                }),
                owner: Some(Owner { argument: "owner" }),
                ..HostSeams::NONE
            },
        },
    ]
}
