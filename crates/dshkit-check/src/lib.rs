//! Startup Check: catch a DSH plugin tree that would break DSH before it restarts.
//!
//! [`run`] performs, in order: the static checks ([`static_checks`]: patch
//! references (the patch file as DSH accepts it, [`patch_list`]; each `@local` row
//! where DSH loads it from, [`local_link`]), in-process JavaScript syntax
//! ([`syntax`]: parser plus semantic early errors, instead of one `node --check`
//! per file), links ([`link`]: what Node's loader refuses, resolved as Node does in
//! [`resolve`], built-ins from [`builtins`]), manifests (with `dsh.client` as DSH's
//! web host composes it, [`client`])); config assembly (`dsh --dump-config`); with
//! `live`, an isolated boot ([`live`]), with `page` the page smoke in Chromium
//! ([`smoke`]), and the shutdown proof; and always the leftover-instance audit
//! ([`audit`]). A check that did not run says `not_tested`. Each file's analysis
//! is cached by a key of all its inputs ([`cache`]).
//!
//! A [`CheckRequest`] is what the CLI and the MCP tool both receive; its
//! [`CheckRequest::options`] apply the environment's defaults, and
//! [`compact_text`] is the report as both print it; [`sarif`] writes it as
//! SARIF 2.1.0 for code-scanning UIs (`dshkit check --sarif`).

pub mod audit;
mod boot_output;
pub mod builtins;
pub mod cache;
pub mod client;
mod headless;
pub mod link;
pub mod live;
pub mod local_link;
mod manifest;
pub mod names;
pub mod patch_list;
mod plugins;
mod realpath;
mod report;
mod request;
pub mod resolve;
mod run;
pub mod sarif;
pub mod smoke;
pub mod static_checks;
pub mod syntax;

pub use cache::{AnalysisCache, CacheStats};
pub use plugins::{
    LocalPlugin, MAX_CHECK_THREADS, MAX_FILES_PER_PLUGIN, analyze_plugin, analyze_plugin_with, local_plugins,
};
pub use report::{Check, Located, MAX_EVIDENCE, Report, Status};
pub use request::{CheckRequest, RequestError, compact_text};
pub use run::{CheckOptions, Progress, run};

/// The diagnosis playbook `plugin-fault-diagnosis`: what to do after `ok: false`.
pub const PLAYBOOK: &str = include_str!("playbook.md");
