//! LiveLoop: let an agent see and use the web app it is building.
//!
//! Today: [`preview`] sessions in headless Chromium (isolated contexts, a
//! request-stage loopback-only network policy, bounded observation, stable element
//! refs). Detection, the dev-server runtime and verification build on it, and
//! [`workflow`] composes them into what the CLI and the MCP tools run.

pub mod detect;
pub mod fit;
pub mod preview;
pub mod progress;
pub mod runtime;
pub mod verify;
pub mod workflow;
