//! MCP over stdio, a transport only: the recording proxy (byte-for-byte
//! transparent, it only adds latency) and the replaying server (the real
//! server is never started unless passthrough is explicitly asked for). What
//! is recorded is [`crate::recorder`]'s, what a replay answers
//! [`crate::replay`]'s.
//!
//! - `queue`: the recorder and the bounded queue a recording's relay and its
//!   recording thread share;
//! - `record`: the proxy over the event loop, and where it runs;
//! - `poll_relay`: the proxy's poll(2) loop for pipes and sockets (Unix);
//! - `replay`: frames read from the client, answers written as replay decides;
//! - `blocking_client`: this process's stdin and stdout read and written in
//!   place, for a replay on a thread of its own (Unix).

#[cfg(unix)]
mod blocking_client;
#[cfg(unix)]
mod poll_relay;
mod queue;
mod record;
mod replay;

pub use queue::{
    INLINE_RECORD_BYTES, RECORD_BATCH_AGE, RECORD_BATCH_BYTES, RECORD_BATCH_FRAMES, RECORD_BATCH_IDLE,
    RECORD_QUEUE_BYTES,
};
pub use record::{record, record_stdio};
pub use replay::{DELIVERY_TIMEOUT, Peer, replay, replay_stdio};
