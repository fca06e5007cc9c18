//! Echo: record and replay MCP servers so agent tests are deterministic and never
//! touch a live server by accident.
//!
//! - [`error`]: Echo's errors, each with a code and a kind the binary maps to
//!   an exit code;
//! - [`cassette`]: the versioned JSONL format, its one header check and its
//!   reader; [`writer`]: how cassettes are appended to and replaced
//!   (atomically);
//! - [`redact`]: secrets replaced by stable placeholders before anything is written;
//! - `env_secrets`: which environment variables hold secrets (name and value);
//! - `opaque`: placeholders and path tokens, which no rule reads into;
//! - [`paths`]: the working directory and the home as tokens, across machines;
//! - [`key`]: how a request is keyed for matching, on the recorded and the live side;
//! - [`index`]: a cassette indexed for replay, each answer parsed when hit;
//! - [`matcher`]: ordered pools per key, and near-miss explanations;
//! - `json_diff`: where two JSON values differ (paths, pointers);
//! - `live_id`: a recorded response with the live id put in, its text kept;
//! - `live_request`: a live request read from its text, its tree built on demand;
//! - [`registry`]: Echo in DSH: the root and the cassette ids, checked (no
//!   symlinked root, no path leaving it);
//! - [`replay`]: what a replay answers a frame with, without a transport;
//! - [`server_request`]: the server requests a hit replays, and the client's
//!   answers checked against the recorded ones;
//! - `passthrough`: the real server a replay passes a miss to (its stdio, or
//!   `passthrough_http`: a Streamable HTTP server);
//! - [`recorder`]: what both recording proxies share, each message kept as its text;
//! - `frame`, `server_process`: a stdio frame, and a server Echo starts;
//! - [`stdio`]: the recording proxy and the replaying server over stdio;
//! - [`http`]: the replaying server and the recording proxy over Streamable HTTP;
//! - [`lint`]: cassette checks and the readable timeline; [`page`]: the
//!   interactions as a self-contained page (`echo inspect --html`);
//! - [`upstream`]: a live server over HTTP: its URL, the CAs an `https://` one
//!   is checked against, the client built for it, what a failed connection means;
//! - [`verify`]: the recorded requests sent to the live server, the answers compared;
//!   [`junit`]: that comparison as JUnit XML for CI (`echo verify --junit`);
//! - [`volatile`]: timestamps, UUIDs and epochs normalised before that comparison;
//! - [`contract`]: tool contracts, snapshotted and diffed;
//! - [`show`]: what the `dshkit echo` commands show (verify, diff, lint,
//!   inspect, snapshot, scan), each view with its text;
//! - [`workspace`]: a workspace's cassettes as an agent sees them, listed and
//!   inspected, redacted again.

pub mod annotation;
pub mod cassette;
pub mod contract;
pub mod dsh_proxy;
mod env_secrets;
pub mod error;
mod frame;
pub mod http;
pub mod index;
mod json_diff;
pub mod junit;
pub mod key;
pub mod lint;
mod live_id;
mod live_request;
pub mod matcher;
mod opaque;
pub mod page;
mod passthrough;
pub mod passthrough_http;
pub mod paths;
pub mod recorder;
pub mod redact;
pub mod registry;
pub mod replay;
mod server_process;
pub mod server_request;
pub mod show;
pub mod stdio;
pub mod upstream;
pub mod verify;
pub mod volatile;
pub mod workspace;
pub mod writer;

pub use frame::MAX_FRAME_BYTES;
