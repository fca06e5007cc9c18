//! dshkit's own settings file (`settings.json` in dshkit's config directory,
//! [`crate::dirs`]: on Linux `$XDG_CONFIG_HOME/dshkit/settings.json`, else
//! `~/.config/dshkit/settings.json`; on Windows `%APPDATA%\dshkit\settings.json`): the defaults a person chooses for previews,
//! verification and evidence. [`crate::resolve`] merges it with the flags (which
//! win over it) for every entry point;
//! the DSH plugin's settings section edits it through `dshkit settings set
//! --fields`, so the rules of [`FIELDS`] are the only validation. A running
//! `dshkit mcp` reads it again for every call that uses it.

use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Environment;

/// Largest settings file read (a hand-kept file is tiny).
pub const MAX_SETTINGS_BYTES: u64 = 64 * 1024;
/// Most external hosts the allowlist may name.
pub const MAX_ALLOWED_HOSTS: usize = 32;
/// Longest evidence root accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// Every setting is optional: an absent one keeps dshkit's built-in default.
/// Each one's rule is its row of [`FIELDS`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Preview sessions open at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_limit: Option<usize>,
    /// Seconds an unused preview stays open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    /// The network quiet window of a verification's load, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_window_ms: Option<u64>,
    /// Days evidence is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_retention_days: Option<u64>,
    /// External hosts previews may load from (host names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_external_hosts: Vec<String>,
    /// Where reports and screenshots are kept (an absolute path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_root: Option<PathBuf>,
    /// The browser pool previews run on (`browser.pool`'s endpoint): its
    /// WebSocket or HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_pool_endpoint: Option<String>,
    /// The file holding the pool's token (`browser.pool`'s tokenFile; the
    /// token itself is never stored here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_pool_token_file: Option<PathBuf>,
}

/// What a setting's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A whole number from `low` to `high`, in `unit`.
    Whole { low: u64, high: u64, unit: &'static str },
    /// Host names (at most [`MAX_ALLOWED_HOSTS`]): no scheme, port, path or address.
    Hosts,
    /// An absolute path.
    AbsolutePath,
    /// A browser endpoint: a `ws://`, `wss://`, `http://` or `https://` URL.
    Endpoint,
}

/// One setting: its key in the file, what people read, and its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub key: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub rule: Rule,
}

/// The one table of settings and their rules: the file, `dshkit settings` and
/// DSH's settings section all validate through it.
pub const FIELDS: [Field; 8] = [
    Field {
        key: "previewLimit",
        label: "Preview session limit",
        help: "Previews open at once; at the limit, the owner's least recently used idle preview makes room",
        rule: Rule::Whole {
            low: 1,
            high: 64,
            unit: "previews",
        },
    },
    Field {
        key: "idleTimeoutSecs",
        label: "Preview idle timeout",
        help: "An unused preview closes after this long",
        rule: Rule::Whole {
            low: 30,
            high: 86_400,
            unit: "s",
        },
    },
    Field {
        key: "quietWindowMs",
        label: "Quiet window",
        help: "How long the network must be quiet before a page load counts as settled",
        rule: Rule::Whole {
            low: 0,
            high: 5_000,
            unit: "ms",
        },
    },
    Field {
        key: "evidenceRetentionDays",
        label: "Evidence retention",
        help: "Reports and screenshots older than this are removed",
        rule: Rule::Whole {
            low: 1,
            high: 365,
            unit: "days",
        },
    },
    Field {
        key: "allowExternalHosts",
        label: "External hosts previews may load from",
        help: "Host names, comma-separated; their addresses are checked after DNS and private ones stay refused",
        rule: Rule::Hosts,
    },
    Field {
        key: "evidenceRoot",
        label: "Evidence folder",
        help: "Where reports and screenshots are kept (DSHKIT_EVIDENCE_ROOT wins over it)",
        rule: Rule::AbsolutePath,
    },
    Field {
        key: "browserPoolEndpoint",
        label: "Browser pool endpoint",
        help: "A browser pool (browserless) previews run on, one connection each, instead of a local Chromium; --browser-ws or --browser-url wins over it",
        rule: Rule::Endpoint,
    },
    Field {
        key: "browserPoolTokenFile",
        label: "Browser pool token file",
        help: "The file holding the pool's token (DSHKIT_BROWSER_POOL_TOKEN wins over it); the token is never shown",
        rule: Rule::AbsolutePath,
    },
];

/// The row of `key`, if it is a setting.
pub fn field(key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.key == key)
}

impl Rule {
    /// The rule in words, as a person reads it beside the field.
    pub fn describe(self) -> String {
        match self {
            Self::Whole { low, high, unit } => format!("a whole number from {low} to {high} {unit}"),
            Self::Hosts => format!("at most {MAX_ALLOWED_HOSTS} host names, without scheme, port or path"),
            Self::AbsolutePath => "an absolute path".to_owned(),
            Self::Endpoint => "a ws://, wss://, http:// or https:// URL".to_owned(),
        }
    }

    /// `raw` as this rule's stored value: a number or its text, host names as a
    /// list or comma-separated text, a path as text. `null` or empty text is
    /// no value (the default). The range is [`Rule::check`]'s.
    fn parse(self, raw: &Value) -> Result<Option<Value>, String> {
        let text = raw.as_str().map(str::trim);
        if raw.is_null() || text == Some("") {
            return Ok(None);
        }
        let shape = || format!("must be {}, not {}", self.describe(), shown(raw));
        match self {
            Self::Whole { .. } => match (raw.as_u64(), text) {
                (Some(n), _) => Ok(Some(n.into())),
                (None, Some(text)) => text.parse::<u64>().map(|n| Some(n.into())).map_err(|_| shape()),
                (None, None) => Err(shape()),
            },
            Self::Hosts => {
                let hosts: Vec<String> = match (raw.as_array(), text) {
                    (Some(list), _) => list
                        .iter()
                        .map(|h| h.as_str().map(|h| h.trim().to_owned()).ok_or_else(shape))
                        .collect::<Result<_, _>>()?,
                    (None, Some(text)) => text.split(',').map(|h| h.trim().to_owned()).collect(),
                    (None, None) => return Err(shape()),
                };
                let hosts: Vec<String> = hosts.into_iter().filter(|h| !h.is_empty()).collect();
                Ok((!hosts.is_empty()).then(|| hosts.into()))
            }
            Self::AbsolutePath | Self::Endpoint => text.map(|t| Some(t.into())).ok_or_else(shape),
        }
    }

    /// Why a stored `value` breaks this rule, if it does.
    fn check(self, value: &Value) -> Option<String> {
        match self {
            Self::Whole { low, high, .. } => {
                let n = value.as_u64()?;
                (!(low..=high).contains(&n)).then(|| format!("must be {}, not {n}", self.describe()))
            }
            Self::Hosts => {
                let hosts = value.as_array()?;
                if hosts.len() > MAX_ALLOWED_HOSTS {
                    return Some(format!(
                        "names {} hosts; at most {MAX_ALLOWED_HOSTS}",
                        hosts.len()
                    ));
                }
                let bad: Vec<String> = hosts
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(|host| host_problem(host).map(|why| format!("{host:?} {why}")))
                    .collect();
                (!bad.is_empty()).then(|| bad.join("; "))
            }
            Self::AbsolutePath => {
                let path = value.as_str()?;
                if path.len() > MAX_PATH_BYTES {
                    Some(format!("must be at most {MAX_PATH_BYTES} bytes"))
                } else if !Path::new(path).is_absolute() {
                    Some(format!("must be an absolute path, not {path:?}"))
                } else {
                    None
                }
            }
            Self::Endpoint => {
                let url = value.as_str()?;
                let schemes = ["ws://", "wss://", "http://", "https://"];
                if url.len() > MAX_PATH_BYTES {
                    Some(format!("must be at most {MAX_PATH_BYTES} bytes"))
                } else if !schemes.iter().any(|s| url.starts_with(s)) || url.contains(char::is_whitespace) {
                    // The value is not echoed: a URL may carry a token.
                    Some(format!("must be {}", self.describe()))
                } else {
                    None
                }
            }
        }
    }
}

/// A value as a person typed it, bounded for a message.
fn shown(raw: &Value) -> String {
    let text = raw.to_string();
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// One broken rule: the setting's key, its label and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub key: String,
    pub label: &'static str,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}) {}", self.key, self.label, self.message)
    }
}

/// One setting a change moved: its value before and after (`None`: the default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub key: &'static str,
    pub label: &'static str,
    pub from: Option<Value>,
    pub to: Option<Value>,
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
    #[error("invalid settings: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<Problem>),
    #[error("{path} is larger than {MAX_SETTINGS_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error(
        "no settings file location: set HOME (USERPROFILE or APPDATA on Windows, XDG_CONFIG_HOME on Linux)"
    )]
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

    /// The broken rules, one per setting, when that is the trouble.
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Invalid(problems) => problems,
            _ => &[],
        }
    }
}

dshkit_os::classified!(SettingsError);

impl Settings {
    /// The settings as their JSON object (absent ones left out).
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self).expect("settings serialize") {
            Value::Object(map) => map,
            _ => unreachable!("settings are an object"),
        }
    }

    /// Every rule a value breaks, one problem each (empty: valid).
    pub fn problems(&self) -> Vec<Problem> {
        let map = self.to_map();
        FIELDS
            .iter()
            .filter_map(|f| {
                let message = f.rule.check(map.get(f.key)?)?;
                Some(Problem {
                    key: f.key.to_owned(),
                    label: f.label,
                    message,
                })
            })
            .collect()
    }

    /// These settings with `changes` (setting key → a value as typed; `null` or
    /// `""` restores the default) applied, and what moved. Nothing is applied
    /// when any change breaks its rule: every broken one is named.
    pub fn patched(&self, changes: &Map<String, Value>) -> Result<(Self, Vec<Change>), SettingsError> {
        let mut after = self.to_map();
        let mut problems = Vec::new();
        for (key, raw) in changes {
            let Some(f) = field(key) else {
                problems.push(Problem {
                    key: key.clone(),
                    label: "unknown setting",
                    message: format!(
                        "is not a setting; the settings are {}",
                        FIELDS.map(|f| f.key).join(", ")
                    ),
                });
                continue;
            };
            match f.rule.parse(raw) {
                Ok(Some(value)) => {
                    after.insert(key.clone(), value);
                }
                Ok(None) => {
                    after.remove(key);
                }
                Err(message) => problems.push(Problem {
                    key: key.clone(),
                    label: f.label,
                    message,
                }),
            }
        }
        let patched: Self =
            serde_json::from_value(Value::Object(after)).map_err(|e| SettingsError::Parse {
                path: PathBuf::from("the changed settings"),
                message: e.to_string(),
                syntax: false,
            })?;
        // A change that failed to parse left its stored (valid) value: each
        // setting is named once.
        problems.extend(patched.problems());
        if !problems.is_empty() {
            return Err(SettingsError::Invalid(problems));
        }
        let moved = self::changes(self, &patched);
        Ok((patched, moved))
    }
}

/// What moved from `before` to `after`, in [`FIELDS`] order.
pub fn changes(before: &Settings, after: &Settings) -> Vec<Change> {
    let (before, after) = (before.to_map(), after.to_map());
    FIELDS
        .iter()
        .filter(|f| before.get(f.key) != after.get(f.key))
        .map(|f| Change {
            key: f.key,
            label: f.label,
            from: before.get(f.key).cloned(),
            to: after.get(f.key).cloned(),
        })
        .collect()
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
    env.dshkit_dir(crate::dirs::Dir::Config)
        .map(|dir| dir.join("settings.json"))
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

/// Validates `text` (a JSON object of settings) and stores it at `path` in
/// place of what was there. Nothing is written when it is invalid.
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
    write(path, &settings)?;
    Ok(settings)
}

/// Applies `changes` ([`Settings::patched`]) to the settings stored at `path`
/// and stores the result: the new settings and what moved. Nothing is written
/// when a change is invalid or nothing moved.
pub fn update(path: &Path, changes: &Map<String, Value>) -> Result<(Settings, Vec<Change>), SettingsError> {
    let (settings, moved) = load(path)?.patched(changes)?;
    if !moved.is_empty() {
        write(path, &settings)?;
    }
    Ok((settings, moved))
}

/// Stores valid `settings` at `path` with [`dshkit_os::fs::write_atomic`].
fn write(path: &Path, settings: &Settings) -> Result<(), SettingsError> {
    let io = |action, source| SettingsError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().ok_or(SettingsError::NoLocation)?;
    std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
    let mut bytes = serde_json::to_vec_pretty(settings).expect("settings serialize");
    bytes.push(b'\n');
    dshkit_os::fs::write_atomic(path, bytes.as_slice()).map_err(|e| io("write", e))
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
                SettingsError::Invalid(Vec::new()),
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
            "previewLimit (Preview session limit) must be a whole number from 1 to 64 previews, not 99",
            "quietWindowMs (Quiet window)",
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

    #[test]
    fn a_field_as_typed_is_refused_with_its_rule_and_the_stored_value_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dshkit/settings.json");
        store(&path, r#"{"quietWindowMs": 500}"#).unwrap();
        let changes = |json: &str| -> Map<String, Value> { serde_json::from_str(json).unwrap() };
        for (typed, why) in [
            (
                r#""abc""#,
                r#"must be a whole number from 0 to 5000 ms, not "abc""#,
            ),
            (r#""1,200""#, r#"not "1,200""#),
            ("30.5", "not 30.5"),
            ("-1", "not -1"),
            ("9000", "must be a whole number from 0 to 5000 ms, not 9000"),
        ] {
            let err = update(&path, &changes(&format!(r#"{{"quietWindowMs": {typed}}}"#))).unwrap_err();
            let [problem] = err.problems() else {
                panic!("{typed}: {err}")
            };
            assert_eq!(problem.key, "quietWindowMs", "{typed}");
            assert_eq!(problem.label, "Quiet window", "{typed}");
            assert!(problem.message.contains(why), "{typed}: {}", problem.message);
            assert_eq!(
                load(&path).unwrap().quiet_window_ms,
                Some(500),
                "{typed} kept the stored value"
            );
        }
        let err = update(
            &path,
            &changes(r#"{"previewLimit": "0", "evidenceRoot": "relative/dir", "quietWindow": 1}"#),
        )
        .unwrap_err();
        let mut keys: Vec<&str> = err.problems().iter().map(|p| p.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["evidenceRoot", "previewLimit", "quietWindow"], "{err}");
        assert!(
            err.to_string()
                .contains("is not a setting; the settings are previewLimit"),
            "{err}"
        );
    }

    #[test]
    fn a_change_names_what_moved_and_an_empty_field_restores_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dshkit/settings.json");
        store(&path, r#"{"quietWindowMs": 500, "previewLimit": 2}"#).unwrap();
        let root = dir.path().join("evidence");
        let changes: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "quietWindowMs": " 1200 ",
            "previewLimit": "",
            "idleTimeoutSecs": 60,
            "allowExternalHosts": "cdn.example.com, fonts.example.com",
            "evidenceRoot": root.to_str().unwrap(),
        }))
        .unwrap();
        let (stored, moved) = update(&path, &changes).unwrap();
        assert_eq!(stored.quiet_window_ms, Some(1200));
        assert_eq!(stored.preview_limit, None);
        assert_eq!(
            stored.allow_external_hosts,
            ["cdn.example.com", "fonts.example.com"]
        );
        assert_eq!(stored.evidence_root.as_deref(), Some(root.as_path()));
        let moved: Vec<(&str, Option<Value>, Option<Value>)> = moved
            .iter()
            .map(|c| (c.key, c.from.clone(), c.to.clone()))
            .collect();
        assert_eq!(moved[0], ("previewLimit", Some(2.into()), None));
        assert_eq!(moved[1], ("idleTimeoutSecs", None, Some(60.into())));
        assert_eq!(moved[2], ("quietWindowMs", Some(500.into()), Some(1200.into())));
        assert_eq!(moved.len(), 5, "{moved:?}");
        assert_eq!(load(&path).unwrap(), stored);
        let (_, again) = update(&path, &changes).unwrap();
        assert!(again.is_empty(), "the same change again moves nothing");
    }
}
