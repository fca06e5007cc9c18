//! The MCP server: composes tool families behind one `rmcp` handler, routes calls,
//! bounds results and turns failures into `isError` results.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, Prompt, PromptMessage, ProtocolVersion,
    Role, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::bound::{ResultLimits, bound_structured, bound_text};
use crate::family::{
    LogLevel, PromptSpec, ResourceBody, ResourceSpec, ToolCall, ToolFailure, ToolFamily, ToolLog, ToolOutput,
    ToolProgress, ToolSpec,
};

/// Longest a single tool call may run before it is abandoned with an `isError`
/// result. Families with long work (verification, live boots) bound themselves
/// more tightly; this is the backstop.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_mins(5);

/// The protocol versions dshkit speaks: the two `initialize` eras and the
/// stateless `server/discover` era.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Errors while assembling a server from families.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("tool `{tool}` is served by both `{first}` and `{second}`")]
    DuplicateTool {
        tool: String,
        first: &'static str,
        second: &'static str,
    },
    #[error("unknown tool family `{0}`; known families: {1}")]
    UnknownFamily(String, String),
    #[error("tool `{0}` has an input schema that is not a JSON object")]
    BadSchema(String),
    #[error("tool `{tool}`: {source}")]
    HostSeam {
        tool: String,
        #[source]
        source: crate::host::HostSeamError,
    },
}

impl RegistryError {
    /// A stable machine-readable code; a host seam that does not fit says which
    /// way in its own code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DuplicateTool { .. } => "DUPLICATE_TOOL",
            Self::UnknownFamily(..) => "UNKNOWN_FAMILY",
            Self::BadSchema(_) => "BAD_SCHEMA",
            Self::HostSeam { source, .. } => source.code(),
        }
    }

    /// A server that cannot be assembled as asked (the families named, or the
    /// tools they bring) is refused.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Refused
    }
}

dshkit_os::classified!(RegistryError);

/// Options of a server instance.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub name: String,
    pub version: String,
    pub instructions: String,
    pub limits: ResultLimits,
    pub tool_timeout: Duration,
}

struct Registry {
    options: ServerOptions,
    families: Vec<Arc<dyn ToolFamily>>,
    tools: Vec<Tool>,
    routes: HashMap<String, usize>,
    prompts: Vec<PromptSpec>,
    /// `--describe`'s host section (see [`crate::describe`]).
    host: Value,
    /// The lowest level each client (by subject) wants log messages at; absent:
    /// [`DEFAULT_LOG_LEVEL`]. As many entries as live clients (sessions are bounded).
    log_levels: std::sync::Mutex<HashMap<String, LogFloor>>,
}

/// The lowest level of log message a client receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogFloor {
    Info,
    Warning,
    /// Only errors and worse, which dshkit's tools do not log: nothing.
    Nothing,
}

/// What a client that never sent `logging/setLevel` receives.
const DEFAULT_LOG_LEVEL: LogFloor = LogFloor::Warning;
/// Resources `resources/list` returns per page.
const RESOURCE_PAGE: usize = 100;
/// Resource links one result carries at most.
const MAX_RESOURCE_LINKS: usize = 16;

/// Log messages one call may send (the rest are dropped; logs are advisory).
const MAX_LOG_MESSAGES_PER_CALL: usize = 16;

impl LogFloor {
    #[expect(
        deprecated,
        reason = "MCP logging, deprecated by SEP-2577, is still what hosts read"
    )]
    fn of(level: rmcp::model::LoggingLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            L::Debug | L::Info => Self::Info,
            L::Notice | L::Warning => Self::Warning,
            L::Error | L::Critical | L::Alert | L::Emergency => Self::Nothing,
        }
    }

    fn admits(self, level: LogLevel) -> bool {
        match self {
            Self::Info => true,
            Self::Warning => level >= LogLevel::Warning,
            Self::Nothing => false,
        }
    }
}

/// The dshkit MCP server. Cheap to clone: every transport session shares one
/// registry.
#[derive(Clone)]
pub struct DshkitServer {
    registry: Arc<Registry>,
}

impl std::fmt::Debug for DshkitServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DshkitServer")
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl DshkitServer {
    /// Builds a server from the `available` families, exposing those named in
    /// `selected` (all of them when `selected` is `None`).
    pub fn new(
        options: ServerOptions,
        available: Vec<Arc<dyn ToolFamily>>,
        selected: Option<&[String]>,
    ) -> Result<Self, RegistryError> {
        let families = match selected {
            None => available,
            Some(names) => {
                let known = available.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ");
                let mut chosen = Vec::new();
                for name in names {
                    let family = available
                        .iter()
                        .find(|f| f.name() == name)
                        .ok_or_else(|| RegistryError::UnknownFamily(name.clone(), known.clone()))?;
                    if !chosen.iter().any(|c: &Arc<dyn ToolFamily>| c.name() == name) {
                        chosen.push(Arc::clone(family));
                    }
                }
                chosen
            }
        };
        let mut tools = Vec::new();
        let mut host_tools = Vec::new();
        let mut routes: HashMap<String, usize> = HashMap::new();
        for (index, family) in families.iter().enumerate() {
            for spec in family.tools() {
                if let Some(&first) = routes.get(spec.name) {
                    return Err(RegistryError::DuplicateTool {
                        tool: spec.name.to_owned(),
                        first: families[first].name(),
                        second: family.name(),
                    });
                }
                routes.insert(spec.name.to_owned(), index);
                tools.push(to_rmcp_tool(&spec)?);
                spec.host
                    .check(spec.description, &spec.input_schema)
                    .map_err(|source| RegistryError::HostSeam {
                        tool: spec.name.to_owned(),
                        source,
                    })?;
                host_tools.push(crate::describe::host_tool(family.name(), &spec));
            }
        }
        let prompts = families.iter().flat_map(|f| f.prompts()).collect();
        let host = crate::describe::host_section(&host_tools, &families);
        Ok(Self {
            registry: Arc::new(Registry {
                options,
                families,
                tools,
                routes,
                prompts,
                host,
                log_levels: std::sync::Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The tools exactly as `tools/list` gives them, the prompts with their text
    /// and the host section (each tool's host seams, guidance and skills), as one
    /// JSON value: what a host that wraps the server (the DSH plugin) needs to
    /// offer the tools without starting the server.
    pub fn describe(&self) -> serde_json::Value {
        let prompts: Vec<serde_json::Value> = self
            .registry
            .prompts
            .iter()
            .map(|p| serde_json::json!({ "name": p.name, "title": p.title, "description": p.description, "text": p.text }))
            .collect();
        serde_json::json!({
            "server": { "name": self.registry.options.name, "version": self.registry.options.version },
            "tools": self.registry.tools,
            "prompts": prompts,
            "host": self.registry.host,
        })
    }

    /// Names of the exposed tools, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.registry.tools.iter().map(|t| t.name.to_string()).collect()
    }

    /// Runs one call and returns the bounded MCP result; `None` for an unknown tool.
    /// Shared by the MCP handler and by in-process callers such as benchmarks.
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        subject: &str,
    ) -> Option<CallToolResult> {
        self.call_cancellable(
            name,
            arguments,
            subject,
            CancellationToken::new(),
            ToolProgress::default(),
            ToolLog::default(),
        )
        .await
    }

    /// [`Self::call`], stopped when `cancel` fires (`notifications/cancelled`): the
    /// tool's task is aborted, as it is when the tool timeout passes, so its work
    /// (a verification, a boot) stops and releases what it holds. The tool reports
    /// its stages to `progress` and what the client should know to `log`.
    pub async fn call_cancellable(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        subject: &str,
        cancel: CancellationToken,
        progress: ToolProgress,
        log: ToolLog,
    ) -> Option<CallToolResult> {
        let index = *self.registry.routes.get(name)?;
        let family = Arc::clone(&self.registry.families[index]);
        let call = ToolCall {
            name: name.to_owned(),
            arguments,
            subject: subject.to_owned(),
            progress,
            log,
        };
        let timeout = self.registry.options.tool_timeout;
        // A task of its own: a panicking family fails its call, not the server.
        let linker = Arc::clone(&family);
        let mut task = tokio::spawn(async move { family.call(call).await });
        // A quick tool is done within a few rounds of the runtime's ready tasks:
        // it needs no timer. Arming one for every call made the runtime wake its
        // own driver each time (a syscall), the wheel being empty when it parked.
        for _ in 0..ROUNDS_BEFORE_TIMER {
            if task.is_finished() {
                break;
            }
            behind_ready_tasks().await;
        }
        let outcome = tokio::select! {
            joined = tokio::time::timeout(timeout, &mut task) => match joined {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(join)) => Err(ToolFailure::new(format!(
                    "{name} failed internally ({join}); this is a dshkit bug, please report it with the arguments used"
                ))),
                Err(_) => {
                    stop(task).await;
                    tracing::warn!(tool = %name, "{name} passed the tool timeout; its work was stopped");
                    Err(ToolFailure::new(format!(
                        "{name} did not finish within {}s and was stopped; retry, or run the matching `dshkit` CLI command to see progress",
                        timeout.as_secs()
                    )))
                }
            },
            () = cancel.cancelled() => {
                stop(task).await;
                tracing::info!(tool = %name, "{name} was cancelled by the client; its work was stopped");
                Err(ToolFailure::new(format!("{name} was cancelled by the client and stopped")))
            }
        };
        let links = match &outcome {
            Ok(output) => linker.resource_links(name, &output.structured),
            Err(_) => Vec::new(),
        };
        Some(self.finish(outcome, &links))
    }

    /// Lets every family release what `subject` owns: its client is gone (an
    /// MCP session ended, expired or was evicted).
    pub async fn release_subject(&self, subject: &str) {
        self.registry
            .log_levels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(subject);
        for family in &self.registry.families {
            family.release(subject).await;
        }
    }

    /// Lets every family prepare in the background; call once when serving starts.
    pub fn warm(&self) {
        for family in &self.registry.families {
            family.warm();
        }
    }

    /// Lets every family release what it holds; call once before exit.
    pub async fn shutdown(&self) {
        for family in &self.registry.families {
            family.shutdown().await;
        }
    }

    fn finish(&self, outcome: Result<ToolOutput, ToolFailure>, links: &[ResourceSpec]) -> CallToolResult {
        let limits = self.registry.options.limits;
        let (mut text, structured, images, is_error) = match outcome {
            Ok(output) => (output.text, Some(output.structured), output.images, false),
            Err(failure) => (failure.message, failure.structured, Vec::new(), true),
        };
        let mut truncated = bound_text(&mut text, limits.max_text_bytes);
        let structured = structured.map(|mut map| {
            truncated |= bound_structured(&mut map, limits.max_structured_bytes);
            Value::Object(map)
        });
        if truncated && !text.contains("[truncated") {
            text.push_str(
                "\n[truncated: structured result exceeded its cap; see `truncated` in structuredContent]",
            );
        }
        let mut content = vec![];
        let mut dropped = 0;
        for image in images {
            if image.data.len() > limits.max_image_bytes || content.len() >= limits.max_images {
                dropped += 1;
                continue;
            }
            content.push(ContentBlock::image(BASE64.encode(&image.data), image.mime_type));
        }
        if dropped > 0 {
            text.push_str(&format!(
                "\n[{dropped} image(s) not sent: above {} images or {} bytes each; the text says where they are saved]",
                limits.max_images, limits.max_image_bytes
            ));
        }
        content.insert(0, ContentBlock::text(text));
        content.extend(
            links
                .iter()
                .take(MAX_RESOURCE_LINKS)
                .map(|link| ContentBlock::resource_link(to_rmcp_resource(link))),
        );
        let mut result = if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        result.structured_content = structured;
        result
    }
}

/// The subject of the MCP session `id` (see [`crate::ToolCall::subject`]).
pub(crate) fn session_subject(id: &str) -> String {
    format!("mcp-session:{id}")
}

/// The calling client, for families that keep per-client state.
fn to_rmcp_resource(spec: &ResourceSpec) -> rmcp::model::Resource {
    let mut resource =
        rmcp::model::Resource::new(spec.uri.clone(), spec.name.clone()).with_mime_type(spec.mime_type);
    if let Some(size) = spec.size {
        resource = resource.with_size(size);
    }
    if let Some(description) = &spec.description {
        resource = resource.with_description(description.clone());
    }
    resource
}

/// Sends one `notifications/message` from tool `tool`.
#[expect(
    deprecated,
    reason = "MCP logging, deprecated by SEP-2577, is still what hosts read"
)]
async fn send_log(peer: &rmcp::Peer<RoleServer>, level: LogLevel, tool: &str, message: String) {
    let level = match level {
        LogLevel::Info => rmcp::model::LoggingLevel::Info,
        LogLevel::Warning => rmcp::model::LoggingLevel::Warning,
    };
    let mut param = rmcp::model::LoggingMessageNotificationParam::new(level, Value::String(message));
    param.logger = Some(format!("dshkit/{tool}"));
    let _ = peer.notify_logging_message(param).await;
}

fn subject_of(context: &RequestContext<RoleServer>) -> String {
    match context.extensions.get::<http::request::Parts>() {
        Some(parts) => match parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            Some(session) => session_subject(session),
            None => "http".to_owned(),
        },
        None => "stdio".to_owned(),
    }
}

fn to_rmcp_tool(spec: &ToolSpec) -> Result<Tool, RegistryError> {
    let object = |value: &Value| -> Result<Arc<JsonObject>, RegistryError> {
        value
            .as_object()
            .cloned()
            .map(Arc::new)
            .ok_or_else(|| RegistryError::BadSchema(spec.name.to_owned()))
    };
    let mut annotations = ToolAnnotations::new();
    annotations.title = Some(spec.title.to_owned());
    annotations.read_only_hint = Some(spec.hints.read_only);
    annotations.destructive_hint = Some(spec.hints.destructive);
    annotations.idempotent_hint = Some(spec.hints.idempotent);
    annotations.open_world_hint = Some(spec.hints.open_world);
    let mut tool = Tool::new(spec.name, spec.description, object(&spec.input_schema)?)
        .with_title(spec.title)
        .with_annotations(annotations);
    if let Some(output) = &spec.output_schema {
        tool = tool.with_raw_output_schema(object(output)?);
    }
    Ok(tool)
}

impl ServerHandler for DshkitServer {
    #[expect(
        deprecated,
        reason = "MCP logging, deprecated by SEP-2577, is still what hosts read"
    )]
    fn get_info(&self) -> ServerConfig {
        let options = &self.registry.options;
        let serves_resources = self.registry.families.iter().any(|f| f.serves_resources());
        let capabilities = match (self.registry.prompts.is_empty(), serves_resources) {
            (true, false) => ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
            (false, false) => ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_logging()
                .build(),
            (true, true) => ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_logging()
                .build(),
            (false, true) => ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_logging()
                .build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(options.name.clone(), options.version.clone()))
            .with_instructions(options.instructions.clone())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.registry.tools.clone()))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = self
            .registry
            .prompts
            .iter()
            .map(|p| {
                let mut prompt = Prompt::new(p.name, Some(p.description), None);
                prompt.title = Some(p.title.to_owned());
                prompt
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let prompt = self
            .registry
            .prompts
            .iter()
            .find(|p| p.name == request.name)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!("unknown prompt `{}`; call prompts/list", request.name),
                    None,
                )
            })?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, prompt.text)])
                .with_description(prompt.description)
                .into(),
        )
    }

    #[expect(
        deprecated,
        reason = "MCP logging, deprecated by SEP-2577, is still what hosts read"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let subject = subject_of(&context);
        self.registry
            .log_levels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(subject, LogFloor::of(request.level));
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let mut all: Vec<ResourceSpec> = self
            .registry
            .families
            .iter()
            .flat_map(|f| f.resources())
            .collect();
        all.sort_by(|a, b| a.uri.cmp(&b.uri));
        let start = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| McpError::invalid_params("not a cursor this server gave", None))?,
            None => 0,
        };
        let end = (start + RESOURCE_PAGE).min(all.len());
        let page = all.get(start..end).unwrap_or_default();
        let mut result =
            rmcp::model::ListResourcesResult::with_all_items(page.iter().map(to_rmcp_resource).collect());
        result.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        for family in &self.registry.families {
            let Some(reading) = family.read_resource(&request.uri) else {
                continue;
            };
            let read = reading
                .await
                .map_err(|failure| McpError::invalid_params(failure.message, None))?;
            let contents = match read.body {
                ResourceBody::Text(text) => rmcp::model::ResourceContents::text(text, request.uri.clone()),
                ResourceBody::Blob(bytes) => {
                    rmcp::model::ResourceContents::blob(BASE64.encode(bytes), request.uri.clone())
                }
            }
            .with_mime_type(read.mime_type);
            return Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into());
        }
        Err(McpError::resource_not_found(
            format!("no resource {}; resources/list names them", request.uri),
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let subject = subject_of(&context);
        tracing::debug!(tool = %name, %subject, "tools/call");
        let forwarder = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForwarder::start(token, context.peer.clone()));
        let progress = forwarder
            .as_ref()
            .map_or_else(ToolProgress::default, ProgressForwarder::progress);
        let floor = self
            .registry
            .log_levels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&subject)
            .copied()
            .unwrap_or(DEFAULT_LOG_LEVEL);
        let logged: Arc<std::sync::Mutex<Vec<(LogLevel, String)>>> = Arc::default();
        let log = {
            let logged = Arc::clone(&logged);
            ToolLog::new(move |level, message| {
                let mut logged = logged.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if floor.admits(level) && logged.len() < MAX_LOG_MESSAGES_PER_CALL {
                    logged.push((level, message.to_owned()));
                }
            })
        };
        let outcome = self
            .call_cancellable(
                &name,
                request.arguments.unwrap_or_default(),
                &subject,
                context.ct.clone(),
                progress,
                log,
            )
            .await;
        // Every stage reported and every message logged is sent before the
        // result, and none after it.
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        let logged = std::mem::take(&mut *logged.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for (level, message) in logged {
            send_log(&context.peer, level, &name, message).await;
        }
        let linked = outcome.as_ref().is_some_and(|result| {
            result
                .content
                .iter()
                .any(|c| matches!(c, ContentBlock::ResourceLink(_)))
        });
        if linked {
            // What the call wrote is new evidence: the resource list changed.
            let _ = context.peer.notify_resource_list_changed().await;
        }
        match outcome {
            Some(result) => Ok(result.into()),
            None => Err(McpError::invalid_params(
                format!("unknown tool `{name}`; call tools/list for the tools this server exposes"),
                None,
            )),
        }
    }
}

/// Stage reports a client's progress token is waiting for.
const MAX_QUEUED_PROGRESS: usize = 64;

/// Sends a call's stage reports to its client as `notifications/progress`, in
/// order, with a progress count that rises by one per stage. Reports past
/// [`MAX_QUEUED_PROGRESS`] unsent ones are dropped (progress is advisory).
struct ProgressForwarder {
    queue: tokio::sync::mpsc::Sender<String>,
    done: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    fn start(token: ProgressToken, peer: rmcp::Peer<RoleServer>) -> Self {
        let (queue, mut reports) = tokio::sync::mpsc::channel::<String>(MAX_QUEUED_PROGRESS);
        let (done, mut finished) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut count = 0u32;
            let mut send = async |message: String| {
                count += 1;
                let param =
                    ProgressNotificationParam::new(token.clone(), f64::from(count)).with_message(message);
                peer.notify_progress(param).await.is_ok()
            };
            loop {
                tokio::select! {
                    biased;
                    report = reports.recv() => match report {
                        Some(message) => if !send(message).await { return },
                        None => return,
                    },
                    _ = &mut finished => break,
                }
            }
            // The call ended: what it reported before is still sent, in order.
            while let Ok(message) = reports.try_recv() {
                if !send(message).await {
                    return;
                }
            }
        });
        Self { queue, done, task }
    }

    fn progress(&self) -> ToolProgress {
        let queue = self.queue.clone();
        ToolProgress::new(move |message| {
            let _ = queue.try_send(message.to_owned());
        })
    }

    /// Sends what is queued, then stops; clones of the progress a call left
    /// behind (a detached task) report into the void from here on.
    async fn finish(self) {
        let _ = self.done.send(());
        drop(self.queue);
        let _ = self.task.await;
    }
}

/// Aborts a tool's task and waits until it is gone: its future is dropped, so
/// what it holds (a verification's lock, child processes killed on drop) is
/// released before the caller hears of the stop.
async fn stop(task: tokio::task::JoinHandle<Result<ToolOutput, ToolFailure>>) {
    task.abort();
    let _ = task.await;
}

/// How many rounds of the runtime's ready tasks a tool call gets before its
/// timeout's timer is armed.
const ROUNDS_BEFORE_TIMER: usize = 4;

/// Lets the tasks that are ready now run before this one goes on: the task wakes
/// itself, so it is queued behind them, and the runtime does not poll its I/O
/// driver for it (`tokio::task::yield_now` defers its wake-up until it has).
async fn behind_ready_tasks() {
    let mut queued = false;
    std::future::poll_fn(|cx| {
        if queued {
            return std::task::Poll::Ready(());
        }
        queued = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

#[cfg(test)]
mod cancel_tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use futures::future::BoxFuture;

    use super::*;
    use crate::family::ToolHints;

    /// A tool that never finishes and says when its work was dropped.
    struct Forever(Arc<AtomicBool>);

    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    impl ToolFamily for Forever {
        fn name(&self) -> &'static str {
            "forever"
        }
        fn tools(&self) -> Vec<ToolSpec> {
            vec![ToolSpec {
                name: "forever",
                title: "Never finishes",
                description: "test",
                input_schema: serde_json::json!({"type": "object"}),
                output_schema: None,
                hints: ToolHints {
                    read_only: true,
                    destructive: false,
                    idempotent: true,
                    open_world: false,
                },
                host: crate::host::HostSeams::NONE,
            }]
        }
        fn call(&self, _call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
            let dropped = SetOnDrop(Arc::clone(&self.0));
            Box::pin(async move {
                let _held = dropped;
                std::future::pending::<()>().await;
                unreachable!()
            })
        }
    }

    fn forever_server(dropped: &Arc<AtomicBool>, tool_timeout: Duration) -> DshkitServer {
        let options = ServerOptions {
            name: "t".into(),
            version: "0".into(),
            instructions: String::new(),
            limits: ResultLimits::default(),
            tool_timeout,
        };
        DshkitServer::new(options, vec![Arc::new(Forever(Arc::clone(dropped)))], None).unwrap()
    }

    #[tokio::test]
    async fn a_cancelled_call_stops_its_work_before_it_answers() {
        let dropped = Arc::new(AtomicBool::new(false));
        let server = forever_server(&dropped, Duration::from_mins(5));
        let cancel = CancellationToken::new();
        let call = server.call_cancellable(
            "forever",
            Map::new(),
            "test",
            cancel.clone(),
            ToolProgress::default(),
            ToolLog::default(),
        );
        let canceller = async {
            tokio::task::yield_now().await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(call, canceller);
        let result = result.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(dropped.load(Ordering::SeqCst), "the tool's work was dropped");
    }

    #[tokio::test]
    async fn a_call_past_the_tool_timeout_stops_its_work() {
        let dropped = Arc::new(AtomicBool::new(false));
        let server = forever_server(&dropped, Duration::from_millis(1));
        let result = server.call("forever", Map::new(), "test").await.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(dropped.load(Ordering::SeqCst), "the tool's work was dropped");
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_is_refused() {
        let table = [
            (
                RegistryError::DuplicateTool {
                    tool: "t".into(),
                    first: "a",
                    second: "b",
                },
                "DUPLICATE_TOOL",
            ),
            (
                RegistryError::UnknownFamily("x".into(), "a, b".into()),
                "UNKNOWN_FAMILY",
            ),
            (RegistryError::BadSchema("t".into()), "BAD_SCHEMA"),
            (
                RegistryError::HostSeam {
                    tool: "t".into(),
                    source: crate::host::HostSeamError::UnknownArgument("url"),
                },
                "HOST_SEAM_UNKNOWN_ARGUMENT",
            ),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), dshkit_os::error::ErrorClass::Refused, "{error}");
        }
    }
}
