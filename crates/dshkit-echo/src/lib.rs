//! Echo: record and replay MCP servers so agent tests are deterministic and never
//! touch a live server by accident.
//!
//! - [`cassette`]: the versioned JSONL format, its reader and writers;
//! - [`redact`]: secrets replaced by stable placeholders before anything is written;
//! - `env_secrets`: which environment variables hold secrets (name and value);
//! - `opaque`: placeholders and path tokens, which no rule reads into;
//! - [`paths`]: the working directory and the home as tokens, across machines;
//! - [`index`]: a cassette indexed for replay, each answer parsed when hit;
//! - `live_id`: a recorded response with the live id put in, its text kept;
//! - `live_request`: a live request read from its text, its tree built on demand;
//! - [`matcher`]: request keys, ordered pools and near-miss explanations;
//! - `recorder`: what both recording proxies share, each message kept as its text;
//! - [`stdio`]: the transparent recording proxy and the replaying server over stdio;
//! - [`http`]: the replaying server over Streamable HTTP;
//! - [`lint`]: cassette checks and the readable timeline;
//! - [`verify`]: the recorded requests sent to the live server, the answers compared;
//! - [`volatile`]: timestamps, UUIDs and epochs normalised before that comparison.

pub mod cassette;
pub mod contract;
mod env_secrets;
pub mod http;
pub mod index;
pub mod lint;
mod live_id;
mod live_request;
pub mod matcher;
mod opaque;
pub mod paths;
mod recorder;
pub mod redact;
mod server_process;
pub mod stdio;
pub mod verify;
pub mod volatile;
