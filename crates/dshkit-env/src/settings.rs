//! dshkit's own settings file (`$XDG_CONFIG_HOME/dshkit/settings.json`, else
//! `~/.config/dshkit/settings.json`): the defaults a person chooses for previews,
//! verification and evidence. [`crate::resolve`] merges it with the flags (which
//! win over it) for every entry point;
//! the DSH plugin's settings section edits it through `dshkit settings set`, so the
//! rules below are the only validation.

use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde::{Deserialize, Serialize};

use crate::{Environment, vars};

/// Largest settings file read (a hand-kept file is tiny).
pub const MAX_SETTINGS_BYTES: u64 = 64 * 1024;
/// Most external hosts the allowlist may name.
pub const MAX_ALLOWED_HOSTS: usize = 32;

/// Every setting is optional: an absent one keeps dshkit's built-in default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Preview sessions open at once (1 to 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_limit: Option<usize>,
    /// Seconds an unused preview stays open (30 to 86400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    /// The network quiet window of a verification's load, in ms (0 to 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_window_ms: Option<u64>,
    /// Days evidence is kept (1 to 365).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_retention_days: Option<u64>,
    /// External hosts previews may load from (host names, at most 32).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_external_hosts: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    #[error("{path} is not valid settings: {message}")]
    Parse {
        path: PathBuf,
        message: String,
        /// Not JSON at all (rather than JSON of the wrong shape).
        syntax: bool,
    },
    #[error("invalid settings: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("{path} is larger than {MAX_SETTINGS_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("no settings file location: set HOME (USERPROFILE on Windows) or XDG_CONFIG_HOME")]
    NoLocation,
    #[error("failed to {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SettingsError {
    /// The stable code a person or a script matches on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Parse { syntax: true, .. } => "SETTINGS_NOT_JSON",
            Self::Parse { syntax: false, .. } | Self::Invalid(_) => "SETTINGS_INVALID",
            Self::TooLarge { .. } => "SETTINGS_TOO_LARGE",
            Self::NoLocation => "SETTINGS_NO_LOCATION",
            Self::Io { .. } => "SETTINGS_IO",
        }
    }

    /// The file's content or location is refused (a person fixes it); I/O on
    /// it is a runtime failure (the machine).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Io { .. } => ErrorClass::Runtime,
            Self::Parse { .. } | Self::Invalid(_) | Self::TooLarge { .. } | Self::NoLocation => {
                ErrorClass::Refused
            }
        }
    }

    /// Whether the trouble is the file's content (a person fixes it) rather than
    /// the machine (I/O): whether its [`Self::class`] is refused.
    pub fn is_refusal(&self) -> bool {
        self.class() == ErrorClass::Refused
    }
}

dshkit_os::classified!(SettingsError);

impl Settings {
    /// Every rule a value breaks, one message each (empty: valid).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut range = |name: &str, value: Option<u64>, low: u64, high: u64| {
            if let Some(v) = value
                && !(low..=high).contains(&v)
            {
                problems.push(format!("{name} must be between {low} and {high}, not {v}"));
            }
        };
        range("previewLimit", self.preview_limit.map(|v| v as u64), 1, 16);
        range("idleTimeoutSecs", self.idle_timeout_secs, 30, 86_400);
        range("quietWindowMs", self.quiet_window_ms, 0, 5_000);
        range("evidenceRetentionDays", self.evidence_retention_days, 1, 365);
        if self.allow_external_hosts.len() > MAX_ALLOWED_HOSTS {
            problems.push(format!(
                "allowExternalHosts names {} hosts; at most {MAX_ALLOWED_HOSTS}",
                self.allow_external_hosts.len()
            ));
        }
        for host in &self.allow_external_hosts {
            if let Some(why) = host_problem(host) {
                problems.push(format!("allowExternalHosts: {host:?} {why}"));
            }
        }
        problems
    }
}

/// Why `host` is not a plain host name, if it is not.
fn host_problem(host: &str) -> Option<&'static str> {
    if host.is_empty() || host.len() > 253 {
        return Some("must be 1 to 253 characters");
    }
    if host.contains("://") || host.contains('/') || host.contains(':') {
        return Some("must be a host name only (no scheme, port or path)");
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        return Some("may hold only letters, digits, '.' and '-'");
    }
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some("is an address; name the host (its addresses are checked after DNS)");
    }
    None
}

/// Where the settings file lives.
pub fn path(env: &Environment) -> Option<PathBuf> {
    env.path_var(vars::XDG_CONFIG_HOME)
        .or_else(|| env.home().map(|h| h.join(".config")))
        .map(|base| base.join("dshkit/settings.json"))
}

/// The settings at `path`; a missing file is the defaults.
pub fn load(path: &Path) -> Result<Settings, SettingsError> {
    let io = |action, source| SettingsError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_SETTINGS_BYTES => {
            return Err(SettingsError::TooLarge {
                path: path.to_owned(),
            });
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
        Err(e) => return Err(io("read", e)),
    }
    let text = std::fs::read_to_string(path).map_err(|e| io("read", e))?;
    let settings: Settings = serde_json::from_str(&text).map_err(|e| SettingsError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
        syntax: e.is_syntax() || e.is_eof(),
    })?;
    let problems = settings.problems();
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(SettingsError::Invalid(problems))
    }
}

/// Validates `text` (a JSON object of settings) and stores it at `path` with
/// [`dshkit_os::fs::write_atomic`]. Nothing is written when it is invalid.
pub fn store(path: &Path, text: &str) -> Result<Settings, SettingsError> {
    let settings: Settings = serde_json::from_str(text).map_err(|e| SettingsError::Parse {
        path: PathBuf::from("the new settings"),
        message: e.to_string(),
        syntax: e.is_syntax() || e.is_eof(),
    })?;
    let problems = settings.problems();
    if !problems.is_empty() {
        return Err(SettingsError::Invalid(problems));
    }
    let io = |action, source| SettingsError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().ok_or(SettingsError::NoLocation)?;
    std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
    let mut bytes = serde_json::to_vec_pretty(&settings).expect("settings serialize");
    bytes.push(b'\n');
    dshkit_os::fs::write_atomic(path, bytes.as_slice()).map_err(|e| io("write", e))?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        let parse = |syntax| SettingsError::Parse {
            path: "settings.json".into(),
            message: "x".into(),
            syntax,
        };
        let table = [
            (parse(true), "SETTINGS_NOT_JSON", ErrorClass::Refused),
            (parse(false), "SETTINGS_INVALID", ErrorClass::Refused),
            (
                SettingsError::Invalid(vec!["x".into()]),
                "SETTINGS_INVALID",
                ErrorClass::Refused,
            ),
            (
                SettingsError::TooLarge {
                    path: "settings.json".into(),
                },
                "SETTINGS_TOO_LARGE",
                ErrorClass::Refused,
            ),
            (
                SettingsError::NoLocation,
                "SETTINGS_NO_LOCATION",
                ErrorClass::Refused,
            ),
            (
                SettingsError::Io {
                    action: "read",
                    path: "settings.json".into(),
                    source: std::io::ErrorKind::PermissionDenied.into(),
                },
                "SETTINGS_IO",
                ErrorClass::Runtime,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.is_refusal(), class == ErrorClass::Refused, "{error}");
        }
    }

    #[test]
    fn every_broken_rule_is_named_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dshkit/settings.json");
        let err = store(
            &path,
            r#"{"previewLimit": 99, "quietWindowMs": 9000, "allowExternalHosts": ["https://x.dev", "10.0.0.1"]}"#,
        )
        .unwrap_err()
        .to_string();
        for needle in [
            "previewLimit must be between 1 and 16, not 99",
            "quietWindowMs",
            "no scheme",
            "is an address",
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert!(!path.exists());
        assert!(
            store(&path, r#"{"previewLimits": 3}"#)
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
        assert!(!path.exists());
    }

    #[test]
    fn valid_settings_round_trip_and_a_missing_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dshkit/settings.json");
        assert_eq!(load(&path).unwrap(), Settings::default());
        let stored = store(
            &path,
            r#"{"previewLimit": 3, "allowExternalHosts": ["cdn.example.com"]}"#,
        )
        .unwrap();
        assert_eq!(stored.preview_limit, Some(3));
        assert_eq!(load(&path).unwrap(), stored);
        std::fs::write(&path, "{ not json").unwrap();
        assert!(matches!(load(&path), Err(SettingsError::Parse { .. })));
    }
}
