//! Discovery of the machine facts dshkit's capabilities depend on.
//!
//! - [`locate`]: Chromium, Node.js and the `dsh` launcher, by explicit variable,
//!   known install path, then `PATH`.
//! - [`dsh`]: the DSH package behind a launcher, the DSH home and its profiles.
//! - [`disk`]: the evidence root, its writability and free space.
//! - [`doctor`]: all of the above as one report, each missing piece with its fix.
//! - [`settings`]: dshkit's own settings file, validated;
//!   [`settings_view`]: each setting with its rule and default, for people.
//! - [`resolve`]: flags over environment over the settings file over defaults,
//!   the one resolver every entry point uses.
//!
//! - [`launch`]: the package-manager adapter (npm, pnpm, Yarn on Windows: `node
//!   <cli.js>`).
//! - [`dirs`]: the user's home, config, state and cache directories by each
//!   platform's rule; [`inherit`]: the environment a child of dshkit inherits.
//! - [`duration`]: durations as typed on the command line (`500ms`, `30s`, `2m`).
//! - [`terminal`]: colour (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`) and the log
//!   filter (`-q`, `-v`, `DSHKIT_LOG`).
//!
//! Every variable read is named in [`vars`]; on Windows names match without
//! regard to case.

mod command;
pub mod dirs;
pub mod disk;
pub mod doctor;
pub mod dsh;
pub mod duration;
mod env;
pub mod inherit;
pub mod launch;
pub mod locate;
pub mod resolve;
pub mod settings;
pub mod settings_view;
pub mod terminal;
pub mod vars;

pub use command::{
    DEFAULT_PROBE_OUTPUT_BYTES, DEFAULT_PROBE_TIMEOUT, ProbeError, parse_version, probe_output,
};
pub use dirs::Dir;
pub use env::{Environment, Platform, is_executable};
