//! dshkit's own Chrome DevTools Protocol client.
//!
//! - [`launch`](crate::LaunchOptions): Chromium with a fresh temporary profile, in
//!   its own process group, killed with its tree when dropped and, on Linux, by a
//!   parent-death signal when dshkit itself is killed.
//! - [`Connection`]: the WebSocket actor; commands are matched to responses by id
//!   with per-command timeouts; events are routed per flattened session. Nothing is
//!   dropped silently: unrouted and overflowing events are counted.
//! - [`Browser`]: launch or connect (`ws://` or `http://host:port`), contexts, pages.
//! - [`Endpoint`]: an existing browser or a pool engine's endpoint, its token
//!   (a bearer header, never shown) and its admission deadline; a refusal or a
//!   queue that never admits is an error with the engine's reason.
//!
//! Commands and events are raw JSON (`serde_json::Value`): every message the
//! browser sends is kept, including those this crate has no type for.

mod browser;
mod connection;
mod endpoint;
mod error;
mod launch;

pub use browser::{AttachedTarget, Browser, ContextGuard, Contexts, Page, PageCommands};
pub use connection::{Connection, DEFAULT_COMMAND_TIMEOUT, DEFAULT_EVENT_BUFFER, Event, MAX_MESSAGE_BYTES};
pub use endpoint::{
    DEFAULT_ADMIT_DEADLINE, Endpoint, MAX_REFUSAL_CHARS, MAX_TOKEN_FILE_BYTES, REDACTED, Secret,
};
pub use error::CdpError;
pub use launch::{
    BASE_FLAGS, BrowserProcess, DEFAULT_LAUNCH_TIMEOUT, DEFAULT_STDERR_TAIL_LINES, LaunchOptions,
    PROFILE_PREFIX, PROFILE_TEMP, sweep_stale_profiles,
};
