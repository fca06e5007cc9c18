//! The LiveLoop workflows that both surfaces run: [`detect_app`], [`start_app`]
//! (with [`watch_ready`] for `dshkit run`), [`verify_app`], and [`browse`] for
//! the operations of a preview session. Each takes a typed
//! request and returns a typed result, reporting its [`Stage`]s to a [`Stages`]
//! sink on the way. The CLI and the MCP tools only turn their input into a
//! request and render the result with [`render`], each in its own words
//! ([`Surface`]).

mod browse;
mod browse_render;
mod detect;
mod error;
pub mod render;
mod run;
pub mod schema;
mod stage;
mod steps;
mod verify_app;

pub use browse::{BrowseRequest, Operation, ScreenshotStore, browse};
pub use browse_render::Browsed;
pub use detect::{DetectRequest, Detected, detect_app, inside};
pub use error::{Surface, WorkflowError};
pub use run::{StartPlan, StartRequest, StartTarget, Started, Watched, plan_start, start_app, watch_ready};
pub use stage::{Stage, Stages};
pub use steps::{parse_role_name, parse_step};
pub use verify_app::{AppTarget, Verified, VerifyAppRequest, VerifyTools, verify_app};
