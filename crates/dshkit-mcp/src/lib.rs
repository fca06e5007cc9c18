//! MCP server plumbing for dshkit.
//!
//! Capabilities contribute [`ToolFamily`] implementations; [`DshkitServer`]
//! composes them behind one `rmcp` handler that routes calls, bounds every result
//! under [`ResultLimits`] and turns failures into `isError` results. Two transports
//! serve it: [`serve_stdio`] and the secured Streamable HTTP [`serve_http`].
//!
//! Domain crates never depend on this crate or on `rmcp`; the `dshkit` binary wires
//! them to families.

mod bound;
mod describe;
mod family;
pub mod files;
mod host;
mod http;
mod server;
mod stdio;
mod token;

pub use bound::{
    DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGES, DEFAULT_MAX_STRUCTURED_BYTES, DEFAULT_MAX_TEXT_BYTES,
    ResultLimits, bound_structured, bound_text,
};
pub use describe::HOST_FORMAT;
pub use family::{
    LogLevel, PromptSpec, ResourceBody, ResourceRead, ResourceSpec, ToolCall, ToolFailure, ToolFamily,
    ToolHints, ToolImage, ToolLog, ToolOutput, ToolProgress, ToolSpec,
};
pub use host::{Approval, GuidanceSpec, HostSeamError, HostSeams, Images, Owner, SkillSpec, When};
pub use http::{
    ConnectionLimits, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE,
    HIBERNATE_AFTER, HttpError, HttpOptions, HttpServer, MAX_DRAIN_BYTES, MCP_PATH, RETRY_AFTER_SECS,
    SessionLimits, serve_http,
};
pub use server::{
    DEFAULT_TOOL_TIMEOUT, DshkitServer, RegistryError, SUPPORTED_PROTOCOL_VERSIONS, ServerOptions,
};
pub use stdio::{StdioError, serve_stdio, stdio_streams};
pub use token::{MIN_TOKEN_CHARS, TOKEN_BYTES, Token, TokenError, TokenOrigin, load_or_create_token_file};
