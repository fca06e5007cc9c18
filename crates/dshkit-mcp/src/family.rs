//! Tool families: the unit of composition. Each capability (doctor, echo, liveloop,
//! check, devtools) contributes one family; `--tools` selects which are exposed.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::host::{GuidanceSpec, HostSeams, SkillSpec};

#[expect(
    clippy::struct_excessive_bools,
    reason = "mirrors the four MCP tool annotation hints"
)]
/// What a tool promises about its side effects, surfaced to clients as MCP tool
/// annotations so hosts can ask for confirmation where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolHints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolHints {
    /// A tool that only reads local state.
    pub const READ_ONLY: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// The static description of one tool.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool promises one.
    pub output_schema: Option<Value>,
    pub hints: ToolHints,
    /// What a host that wraps the server takes over for this tool (asking the
    /// user, attaching images, naming the owner); [`HostSeams::NONE`] for most.
    pub host: HostSeams,
}

/// A fixed prompt a family serves (a playbook, say): no arguments, one message.
#[derive(Debug, Clone)]
pub struct PromptSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub text: &'static str,
}

/// One call routed to a family.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Map<String, Value>,
    /// Who is calling: `mcp-session:<id>` over HTTP with a session, `stdio` for the
    /// one client of a stdio server, `http` for stateless HTTP requests. Families
    /// that keep per-client state (preview sessions) use it for ownership.
    pub subject: String,
    /// Where a long tool reports its stages: `notifications/progress` when the
    /// client sent a progress token, nowhere otherwise.
    pub progress: ToolProgress,
    /// Where a tool tells the client something it should know beyond the result
    /// (a relaunched browser, an adopted server): `notifications/message`, at or
    /// above the level the client set.
    pub log: ToolLog,
}

/// How much a log message matters to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Info,
    Warning,
}

/// Where log messages go.
type LogSink = std::sync::Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

/// A call's log messages for its client. Cheap to clone; silent by default.
/// Messages name what happened (a URL, a process), never page content or secrets.
#[derive(Clone, Default)]
pub struct ToolLog {
    sink: Option<LogSink>,
}

impl std::fmt::Debug for ToolLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLog")
            .field("listened", &self.sink.is_some())
            .finish()
    }
}

impl ToolLog {
    pub fn new(sink: impl Fn(LogLevel, &str) + Send + Sync + 'static) -> Self {
        Self {
            sink: Some(std::sync::Arc::new(sink)),
        }
    }

    pub fn info(&self, message: &str) {
        if let Some(sink) = &self.sink {
            sink(LogLevel::Info, message);
        }
    }

    pub fn warning(&self, message: &str) {
        if let Some(sink) = &self.sink {
            sink(LogLevel::Warning, message);
        }
    }
}

/// Where stage messages go.
type StageSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// A tool's stage reports. Cheap to clone; silent unless the client listens.
#[derive(Clone, Default)]
pub struct ToolProgress {
    sink: Option<StageSink>,
}

impl std::fmt::Debug for ToolProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolProgress")
            .field("listened", &self.sink.is_some())
            .finish()
    }
}

impl ToolProgress {
    /// Stage reports that go to `sink`.
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            sink: Some(std::sync::Arc::new(sink)),
        }
    }

    /// Whether anyone listens (work that only exists to report may be skipped).
    pub fn is_listened(&self) -> bool {
        self.sink.is_some()
    }

    /// Reports that the work entered a stage.
    pub fn stage(&self, message: &str) {
        if let Some(sink) = &self.sink {
            sink(message);
        }
    }
}

/// A successful result: structured data for machines and a compact text for models.
/// The server bounds both before they leave.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub structured: Map<String, Value>,
    pub text: String,
    /// Images sent as MCP `image` content after the text, already fitted to the
    /// host's bounds by the family; the text and `structured` still say where
    /// each one is saved.
    pub images: Vec<ToolImage>,
}

/// One image of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolImage {
    pub mime_type: &'static str,
    pub data: Vec<u8>,
}

/// A tool-level failure: returned to the client as `isError: true` with text that
/// says what to do next. Protocol-level problems (unknown tool) never reach a family.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub message: String,
    pub structured: Option<Map<String, Value>>,
}

impl ToolFailure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            structured: None,
        }
    }

    /// Arguments that do not fit the tool's schema.
    pub fn invalid_arguments(tool: &str, problem: impl std::fmt::Display) -> Self {
        Self::new(format!(
            "invalid arguments for {tool}: {problem}; see the tool's inputSchema"
        ))
    }
}

/// A resource a family serves (evidence, cassettes): listed by `resources/list`,
/// read by `resources/read`, linked from the results that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    /// `dshkit://<kind>/<path>`.
    pub uri: String,
    pub name: String,
    pub mime_type: &'static str,
    pub size: Option<u64>,
    pub description: Option<String>,
}

/// What a resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    Text(String),
    Blob(Vec<u8>),
}

/// A resource read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRead {
    pub mime_type: &'static str,
    pub body: ResourceBody,
}

/// A family of tools served by dshkit.
pub trait ToolFamily: Send + Sync + 'static {
    /// The name `--tools` selects the family by, e.g. `core`.
    fn name(&self) -> &'static str;
    /// The tools this family serves. Names are unique across families.
    fn tools(&self) -> Vec<ToolSpec>;
    /// Runs one call of a tool this family listed.
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>>;

    /// The prompts this family serves. Names are unique across families.
    fn prompts(&self) -> Vec<PromptSpec> {
        Vec::new()
    }

    /// The skills this family gives a host's skill catalog.
    fn skills(&self) -> Vec<SkillSpec> {
        Vec::new()
    }

    /// The guidance this family gives a host's model instructions.
    fn guidance(&self) -> Vec<GuidanceSpec> {
        Vec::new()
    }

    /// Prepares what the first calls will need (a browser) in the background;
    /// called once when the server starts serving.
    fn warm(&self) {}

    /// Whether the family serves resources (so the server declares them).
    fn serves_resources(&self) -> bool {
        false
    }

    /// The family's resources now, at most the family's own bound.
    fn resources(&self) -> Vec<ResourceSpec> {
        Vec::new()
    }

    /// Reads `uri` if it is one of the family's resources (`None` otherwise). The
    /// family checks the path stays inside its root, caps the size and redacts.
    fn read_resource<'a>(
        &'a self,
        _uri: &'a str,
    ) -> Option<BoxFuture<'a, Result<ResourceRead, ToolFailure>>> {
        None
    }

    /// Resources a successful result of `tool` wrote, linked from the result.
    fn resource_links(&self, _tool: &str, _structured: &Map<String, Value>) -> Vec<ResourceSpec> {
        Vec::new()
    }

    /// Releases what `subject` owns (preview sessions): its client is gone.
    /// Owners scoped inside the subject (`<subject>/owner:<name>`) go with it.
    fn release<'a>(&'a self, _subject: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Releases what the family holds (browsers, child processes) before exit.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
