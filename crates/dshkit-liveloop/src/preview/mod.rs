//! Preview sessions: one isolated browser context and page per session, a
//! loopback-only network policy, bounded observation, and interaction through
//! element refs from a fixed snapshot script.

mod documents;
mod error;
mod lookup;
mod manager;
mod observe;
mod policy;
mod proxy;
mod session;
mod snapshot;
mod world;

pub use error::PreviewError;
pub use manager::{
    BrowserSource, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, Evicted, Eviction, MAX_UNTOLD_EVICTIONS,
    PreviewConfig, PreviewLimits, PreviewManager,
};
pub use observe::{
    BlockedEntry, ConsoleEntry, ConsoleSource, DEFAULT_MAX_BLOCKED, DEFAULT_MAX_CONSOLE,
    DEFAULT_MAX_ENTRY_CHARS, DEFAULT_MAX_NAVIGATIONS, DEFAULT_MAX_NETWORK, FRAMEWORK_DEV_NOTICES,
    NetworkEntry, Observations, Ring,
};
pub use policy::{
    BlockReason, DEFAULT_DNS_TIMEOUT, Decision, NetworkPolicy, OriginError, PreviewOrigin, Resolver,
    SystemResolver, is_public,
};
pub use proxy::MAX_HEAD_BYTES as MAX_PROXY_HEAD_BYTES;
pub use session::events::MAX_OBSERVED_WORKERS;
pub use session::frame::{FRAME_MAX_WIDTH, Frame, MAX_FRAME_BYTES};
pub use session::interact::{Action, MAX_INPUT_CHARS, MAX_WAIT};
pub use session::navigate::{DEFAULT_NAVIGATION_TIMEOUT, NAVIGATION_RESPONSE_TIMEOUT};
pub use session::open::HARDEN_SCRIPT;
pub use session::settle::{DEFAULT_QUIET_WINDOW, DEFAULT_SETTLE_DEADLINE, SETTLE_SCRIPT};
pub use session::{DEFAULT_MAX_SCREENSHOT_HEIGHT, PreviewSession, Purpose, Screenshot, Target, Viewport};
pub use snapshot::{
    CLOSED_ROOTS_SCRIPT, DEFAULT_MAX_NAME_CHARS, DEFAULT_MAX_NODES, DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_MAX_VISITED, ErrorOverlay, FRAMEWORK_ERROR_OVERLAYS, FRAMEWORK_TOOLING, MAX_FOUND,
    MAX_NAMED_CLOSED_HOSTS, MAX_OVERLAY_CHARS, MAX_SNAPSHOT_NODES, MAX_VIEW_CHARS, Node, OutlineView,
    PAGE_TEXT_SCRIPT, SNAPSHOT_SCRIPT, Snapshot, parse_ref, snapshot_expression, text_includes_expression,
};
