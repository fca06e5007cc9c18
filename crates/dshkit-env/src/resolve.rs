//! The one resolver of dshkit's configuration. For each setting, a flag given on
//! the command line wins over the environment, the environment over the settings
//! file, and the file over dshkit's built-in defaults. Every entry point that
//! previews, verifies or finds DevTools targets (`dshkit verify`, `dshkit mcp`,
//! `dshkit devtools`) resolves through [`resolve`], so a value a person sets in
//! one place means the same everywhere.

use std::path::PathBuf;
use std::time::Duration;

use crate::settings::{self, Settings, SettingsError};
use crate::{Environment, dsh};

/// The directory under the DSH home where DevTools collectors register.
pub const DEVTOOLS_DIR_NAME: &str = "dshkit-devtools";

/// What the command line said (each `None` or empty: not given).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// The network quiet window of a verification's load, in ms.
    pub quiet_window_ms: Option<u64>,
    /// External hosts previews may load from, added to the settings' list.
    pub allow_external_hosts: Vec<String>,
    /// Where DevTools collectors register.
    pub devtools_dir: Option<PathBuf>,
}

/// Whether the settings file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsFile {
    /// Read it; a broken one is an error.
    Read,
    /// Leave it alone: for a host that only lists the tools while it boots
    /// (`dshkit mcp --describe`), which a hand-broken file must not stop.
    Ignore,
}

/// Every setting with its winning value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The quiet window (`None`: the verification's own default).
    pub quiet_window_ms: Option<u64>,
    /// Preview sessions open at once (`None`: the preview manager's default).
    pub preview_limit: Option<usize>,
    /// How long an unused preview stays open (`None`: the default).
    pub idle_timeout: Option<Duration>,
    /// How long evidence is kept (`None`: the retention policy's default).
    pub evidence_max_age: Option<Duration>,
    /// External hosts previews may load from: the flags', then the file's.
    pub allow_external_hosts: Vec<String>,
    /// Where DevTools collectors register: the flag, else `<DSH home>/dshkit-devtools`
    /// (`DSH_HOME`, else `~/.dsh`).
    pub devtools_dir: PathBuf,
}

/// Resolves `flags` over `env` over the settings file over the defaults.
pub fn resolve(env: &Environment, flags: Flags, file: SettingsFile) -> Result<Resolved, SettingsError> {
    let stored = match (settings::path(env), file) {
        (Some(path), SettingsFile::Read) => settings::load(&path)?,
        _ => Settings::default(),
    };
    Ok(combine(env, flags, stored))
}

/// The merge itself, apart from reading the file.
fn combine(env: &Environment, flags: Flags, stored: Settings) -> Resolved {
    let mut allow_external_hosts = flags.allow_external_hosts;
    for host in stored.allow_external_hosts {
        if !allow_external_hosts.contains(&host) {
            allow_external_hosts.push(host);
        }
    }
    Resolved {
        quiet_window_ms: flags.quiet_window_ms.or(stored.quiet_window_ms),
        preview_limit: stored.preview_limit,
        idle_timeout: stored.idle_timeout_secs.map(Duration::from_secs),
        evidence_max_age: stored
            .evidence_retention_days
            .map(|days| Duration::from_secs(days * 24 * 3600)),
        allow_external_hosts,
        devtools_dir: flags.devtools_dir.unwrap_or_else(|| devtools_dir(env)),
    }
}

/// The default DevTools registry: `<DSH home>/dshkit-devtools`, the DSH home being
/// `DSH_HOME`, else `~/.dsh`, else `.dsh` here.
pub fn devtools_dir(env: &Environment) -> PathBuf {
    dsh::home(env)
        .unwrap_or_else(|| ".dsh".into())
        .join(DEVTOOLS_DIR_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars;

    fn env_with_config(dir: &std::path::Path) -> Environment {
        Environment::from_pairs([
            (vars::XDG_CONFIG_HOME, dir.to_str().unwrap()),
            (vars::DSH_HOME, "/srv/dsh"),
        ])
    }

    #[test]
    fn a_flag_wins_over_the_file_and_the_file_over_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with_config(dir.path());
        let path = settings::path(&env).unwrap();
        settings::store(
            &path,
            r#"{"quietWindowMs": 1234, "previewLimit": 2, "idleTimeoutSecs": 60,
                "evidenceRetentionDays": 2, "allowExternalHosts": ["cdn.example.com"]}"#,
        )
        .unwrap();

        let from_file = resolve(&env, Flags::default(), SettingsFile::Read).unwrap();
        assert_eq!(from_file.quiet_window_ms, Some(1234));
        assert_eq!(from_file.preview_limit, Some(2));
        assert_eq!(from_file.idle_timeout, Some(Duration::from_mins(1)));
        assert_eq!(from_file.evidence_max_age, Some(Duration::from_hours(48)));
        assert_eq!(from_file.allow_external_hosts, ["cdn.example.com"]);
        assert_eq!(from_file.devtools_dir, PathBuf::from("/srv/dsh/dshkit-devtools"));

        let flags = Flags {
            quiet_window_ms: Some(0),
            allow_external_hosts: vec!["fonts.example.com".into(), "cdn.example.com".into()],
            devtools_dir: Some("/tmp/registry".into()),
        };
        let flagged = resolve(&env, flags, SettingsFile::Read).unwrap();
        assert_eq!(flagged.quiet_window_ms, Some(0));
        assert_eq!(
            flagged.allow_external_hosts,
            ["fonts.example.com", "cdn.example.com"],
            "the flags' hosts first, each host once"
        );
        assert_eq!(flagged.devtools_dir, PathBuf::from("/tmp/registry"));

        let ignored = resolve(&env, Flags::default(), SettingsFile::Ignore).unwrap();
        assert_eq!(ignored.quiet_window_ms, None);
        assert!(ignored.allow_external_hosts.is_empty());
    }

    #[test]
    fn no_file_is_the_defaults_and_a_broken_file_is_an_error_unless_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with_config(dir.path());
        let defaults = resolve(&env, Flags::default(), SettingsFile::Read).unwrap();
        assert_eq!(defaults.quiet_window_ms, None);
        assert_eq!(defaults.preview_limit, None);
        assert_eq!(defaults.evidence_max_age, None);

        let path = settings::path(&env).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{ not json").unwrap();
        let err = resolve(&env, Flags::default(), SettingsFile::Read).unwrap_err();
        assert_eq!(err.code(), "SETTINGS_NOT_JSON");
        std::fs::write(&path, r#"{"quietWindowMs": 99999}"#).unwrap();
        let err = resolve(&env, Flags::default(), SettingsFile::Read).unwrap_err();
        assert_eq!(err.code(), "SETTINGS_INVALID");
        assert!(resolve(&env, Flags::default(), SettingsFile::Ignore).is_ok());
    }

    #[test]
    fn the_devtools_dir_follows_dsh_home_then_the_user_home() {
        let env = Environment::from_pairs([(vars::DSH_HOME, "/srv/dsh"), (vars::HOME, "/home/u")]);
        assert_eq!(devtools_dir(&env), PathBuf::from("/srv/dsh/dshkit-devtools"));
        let env = Environment::from_pairs([(vars::HOME, "/home/u")]);
        assert_eq!(devtools_dir(&env), PathBuf::from("/home/u/.dsh/dshkit-devtools"));
    }
}
