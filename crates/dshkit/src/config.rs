//! The binary's side of the one settings resolver ([`dshkit_env::resolve`]): the
//! CLI and the MCP server both resolve here, refuse a broken settings file the
//! same way, and turn the resolved values into the preview and evidence
//! configurations of LiveLoop.

use dshkit_env::Environment;
use dshkit_env::resolve::{Flags, Resolved, SettingsFile};
use dshkit_env::settings::SettingsError;
use dshkit_liveloop::preview::PreviewConfig;
use dshkit_liveloop::verify::evidence::Retention;

use crate::exit::{self, Failure};

/// A settings file that cannot be used, with how to fix it.
#[derive(Debug)]
pub(crate) struct BrokenSettings {
    error: SettingsError,
    path: Option<std::path::PathBuf>,
}

impl BrokenSettings {
    /// The stable code (`SETTINGS_NOT_JSON`, `SETTINGS_INVALID`, ...).
    pub(crate) fn code(&self) -> &'static str {
        self.error.code()
    }
}

impl std::fmt::Display for BrokenSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)?;
        if let Some(path) = &self.path
            && self.error.is_refusal()
        {
            write!(
                f,
                "; fix it with `dshkit settings set --value '{{...}}'`, or remove {}",
                path.display()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for BrokenSettings {}

/// Resolves `flags` over the process environment over the settings file over
/// the defaults. A broken file is refused (exit 3) with its fix; one that
/// cannot be read is a runtime failure (exit 4).
pub(crate) fn resolve(flags: Flags, file: SettingsFile) -> Result<Resolved, Failure> {
    let env = Environment::from_process();
    dshkit_env::resolve::resolve(&env, flags, file).map_err(|error| {
        let class = error.class();
        Failure {
            code: exit::for_class(class),
            error: BrokenSettings {
                error,
                path: dshkit_env::settings::path(&env),
            }
            .into(),
        }
    })
}

/// The previews' configuration: the resolved limit, idle timeout and external
/// hosts over the preview manager's defaults.
pub(crate) fn preview_config(resolved: &Resolved) -> PreviewConfig {
    let mut preview = PreviewConfig {
        allow_hosts: resolved.allow_external_hosts.clone(),
        ..PreviewConfig::default()
    };
    if let Some(limit) = resolved.preview_limit {
        preview.max_sessions = limit;
    }
    if let Some(idle) = resolved.idle_timeout {
        preview.idle_timeout = idle;
    }
    preview
}

/// Evidence retention: the built-in policy, with the resolved age.
pub(crate) fn retention(resolved: &Resolved) -> Retention {
    let mut retention = Retention::default();
    if let Some(age) = resolved.evidence_max_age {
        retention.max_age = age;
    }
    retention
}

/// The evidence root of this process's environment, where verification
/// reports and preview screenshots are kept.
pub(crate) fn evidence_root() -> Option<std::path::PathBuf> {
    dshkit_env::disk::evidence_root(&Environment::from_process())
}
