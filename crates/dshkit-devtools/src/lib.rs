//! Cordis DevTools core: runtime facts of a live Cordis/DSH process, for agents.
//!
//! A collector inside the process (`packages/dsh-plugin/devtools.js`) observes
//! Cordis's `internal/*` events, metadata only, and serves them on a private Unix
//! socket listed in a registry directory. This crate finds those targets
//! ([`DebugCore::targets`]), attaches debug sessions, keeps a bounded journal per
//! target ([`journal`]), answers snapshots with mechanical candidates
//! ([`topology`]) and waits on the journal (`found`, `timeout`, `gap` or
//! `cancelled`). Sessions have opaque ids bound to the MCP client that attached
//! them, their target and its epoch, and own their catalog cursors. It never
//! imports the MCP SDK; the `dshkit` binary serves it as the `devtools` tool family.
//!
//! What both adapters show lives here too: [`agent`], the tools' texts and
//! structured values (paged catalogs, error codes); [`text`], what `dshkit
//! devtools` prints and the saved checkpoint format; [`route`], a debug session
//! reached over the endpoint or the socket as one seam, over which [`show`]
//! (targets, snapshot, event, fiber) and [`profile`] (the finite profile of one
//! event) are written once; [`trace`], that profile as a Chrome trace;
//! [`doctor`], the facts of the set-up on this machine; [`endpoint`], where the
//! endpoint for hosts outside DSH is found; [`bridge`], the stdio server that
//! forwards a host's messages to that endpoint (reading the token file each
//! time it opens a session); [`client`], an MCP client of the endpoint, and
//! [`remote`], `dshkit devtools` through it.

pub mod agent;
pub mod bridge;
pub mod client;
mod core;
pub mod doctor;
pub mod endpoint;
mod error;
pub mod hosts;
pub mod journal;
mod limits;
mod link;
pub mod profile;
pub mod remote;
pub mod route;
pub mod schema;
mod sessions;
pub mod show;
mod target;
pub mod text;
pub mod topology;
pub mod trace;

pub use core::{Attachment, CheckpointInfo, DebugCore, LOCAL_OWNER, Search, Snapshot, WaitFor, WaitResult};
pub use error::DebugError;
pub use limits::{
    DEFAULT_LEASE, DEFAULT_WAIT, MAX_CHECKPOINTS, MAX_CURSORS, MAX_LEASE, MAX_PAGE, MAX_SESSIONS, MAX_WAIT,
    MAX_WAITERS, SESSION_IDLE,
};
pub use link::{COLLECTOR_PROTOCOL, LinkError, MAX_LINE_BYTES, REQUEST_TIMEOUT};
pub use target::{Target, TargetVersion};
pub use topology::{Comparison, Digest};
