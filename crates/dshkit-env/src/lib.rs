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
//! Every variable read is named in [`vars`].

mod command;
pub mod disk;
pub mod doctor;
pub mod dsh;
mod env;
pub mod locate;
pub mod resolve;
pub mod settings;
pub mod settings_view;
pub mod vars;

pub use command::{
    DEFAULT_PROBE_OUTPUT_BYTES, DEFAULT_PROBE_TIMEOUT, ProbeError, parse_version, probe_output,
};
pub use env::{Environment, is_executable};
