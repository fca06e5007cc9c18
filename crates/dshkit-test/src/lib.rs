//! Test support shared by dshkit's integration tests. Dev-dependency only.
//!
//! - [`Peers`]: the real components `cargo xtask setup` installs (Node 22, the MCP
//!   SDK client, Inspector CLI, conformance suite, server-everything, DSH).
//! - [`ChildGuard`]: a child in its own process group, killed with its whole tree
//!   when the guard drops, so a failing test leaks nothing.
//! - [`FakeModel`]: an OpenAI-compatible chat endpoint on loopback that scripts one
//!   tool call and then answers with the tool's result; it stands in for the LLM,
//!   the one part that cannot run here.

#![expect(
    clippy::missing_panics_doc,
    reason = "test support panics with a message on misuse"
)]

mod child;
mod fake_model;
mod fixture;
mod peers;
pub mod secrets;
mod serve;

pub use child::{ChildGuard, read_ready_line, spawn_guarded, spawn_ready, wait_for, wait_until};
pub use fake_model::{ANSWER_PREFIX, FakeModel, ModelRequest};
pub use fixture::{Fixture, FixtureServer};
pub use peers::{CiOutput, Peers, workspace_root};
pub use serve::{LoopbackServer, processes_mentioning};
