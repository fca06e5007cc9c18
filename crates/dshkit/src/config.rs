//! The binary's side of the one settings resolver ([`dshkit_env::resolve`]): the
//! CLI and the MCP server both resolve here, refuse a broken settings file the
//! same way, and turn the resolved values into the preview and evidence
//! configurations of LiveLoop.

use dshkit_env::Environment;
use dshkit_env::resolve::{Flags, Live, Resolved, SettingsFile};
use dshkit_env::settings::SettingsError;
use dshkit_liveloop::preview::{BrowserSource, PreviewConfig, PreviewLimits};
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

    /// The broken rules, one per setting (empty when the file is not JSON,
    /// too large or unreadable).
    pub(crate) fn problems(&self) -> &[dshkit_env::settings::Problem] {
        self.error.problems()
    }

    fn new(error: SettingsError, env: &Environment) -> Self {
        Self {
            error,
            path: dshkit_env::settings::path(env),
        }
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
            name: Some(error.code()),
            error: BrokenSettings::new(error, &env).into(),
        }
    })
}

/// The settings of a running server: `flags` over the process environment over
/// the settings file as it is at each use (see [`current`]).
pub(crate) fn live(flags: Flags, file: SettingsFile) -> Live {
    Live::new(Environment::from_process(), flags, file)
}

/// The settings as they are now, or the file's trouble with its fix.
pub(crate) fn current(live: &Live) -> Result<Resolved, BrokenSettings> {
    live.current()
        .map_err(|error| BrokenSettings::new(error, &Environment::from_process()))
}

/// The previews' configuration: the resolved limits over the preview
/// manager's defaults, and the browser: `browser_flag` (`--browser-ws` or
/// `--browser-url`), else the settings' pool, else a Chromium of our own.
pub(crate) fn preview_config(resolved: &Resolved, browser_flag: Option<&str>) -> PreviewConfig {
    let limits = preview_limits(resolved);
    let pool = &resolved.browser_pool;
    PreviewConfig {
        max_sessions: limits.max_sessions,
        idle_timeout: limits.idle_timeout,
        allow_hosts: limits.allow_hosts,
        browser: BrowserSource::chosen(browser_flag, pool, PreviewConfig::default().browser),
        ..PreviewConfig::default()
    }
}

/// The resolved preview limit, idle timeout and external hosts over the
/// preview manager's defaults.
pub(crate) fn preview_limits(resolved: &Resolved) -> PreviewLimits {
    let defaults = PreviewConfig::default();
    PreviewLimits {
        max_sessions: resolved.preview_limit.unwrap_or(defaults.max_sessions),
        idle_timeout: resolved.idle_timeout.unwrap_or(defaults.idle_timeout),
        allow_hosts: resolved.allow_external_hosts.clone(),
    }
}

/// Evidence retention: the built-in policy, with the resolved age.
pub(crate) fn retention(resolved: &Resolved) -> Retention {
    let mut retention = Retention::default();
    if let Some(age) = resolved.evidence_max_age {
        retention.max_age = age;
    }
    retention
}

/// Why a command has no evidence root, and its fix.
pub(crate) const NO_EVIDENCE_ROOT: &str = "no evidence root: set one with `dshkit settings set --fields '{\"evidenceRoot\": \"/a/dir\"}'`, DSHKIT_EVIDENCE_ROOT or HOME";

/// Each setting's built-in default, as `dshkit settings` shows it beside the
/// field (`None`: the default is not one value, such as the evidence root's,
/// which follows the environment).
pub(crate) fn default_of(key: &str) -> Option<serde_json::Value> {
    let preview = PreviewConfig::default();
    Some(match key {
        "previewLimit" => preview.max_sessions.into(),
        "idleTimeoutSecs" => preview.idle_timeout.as_secs().into(),
        "quietWindowMs" => dshkit_liveloop::verify::engine::DEFAULT_QUIET_MS.into(),
        "evidenceRetentionDays" => (Retention::default().max_age.as_secs() / (24 * 3600)).into(),
        "allowExternalHosts" => serde_json::json!([]),
        _ => return None,
    })
}
