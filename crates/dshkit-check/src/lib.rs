//! Startup Check: catch a DSH plugin tree that would break DSH before it restarts.
//!
//! Today: the static checks ([`static_checks`]): patch references (YAML parsed, with
//! positions), in-process JavaScript syntax ([`syntax`], the parser plus semantic
//! early errors, replacing one `node --check` per file) and plugin manifests. The
//! config assembly, live boot, page smoke, shutdown proof and leftover audit come
//! next.

mod plugins;
mod report;
pub mod static_checks;
pub mod syntax;

pub use plugins::{LocalPlugin, MAX_FILES_PER_PLUGIN, analyze_plugin, local_plugins};
pub use report::{Check, MAX_EVIDENCE, Report, Status};
