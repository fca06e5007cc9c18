//! The one resolver of dshkit's configuration. For each setting, a flag given on
//! the command line wins over the environment, the environment over the settings
//! file, and the file over dshkit's built-in defaults. Every entry point that
//! previews, verifies or finds DevTools targets (`dshkit verify`, `dshkit mcp`,
//! `dshkit devtools`) resolves through [`resolve`], so a value a person sets in
//! one place means the same everywhere. A long-running server resolves through
//! [`Live`], which reads the file again for each use, so a change applies
//! without a restart.

use std::path::PathBuf;
use std::time::Duration;

use crate::settings::{self, Settings, SettingsError};
use crate::{Environment, disk, dsh, vars};

/// The directory under the DSH home where DevTools collectors register.
pub const DEVTOOLS_DIR_NAME: &str = "dshkit-devtools";
/// The directory under the DSH home where the DSH plugin keeps what its views
/// must find again after DSH restarts.
pub const PLUGIN_STATE_DIR_NAME: &str = "dshkit-plugin";

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
    /// Where evidence is kept: `DSHKIT_EVIDENCE_ROOT`, else the file's
    /// `evidenceRoot`, else [`disk::default_evidence_root`] (`None`: no home).
    pub evidence_root: Option<PathBuf>,
    /// The browser pool previews run on (`browser.pool`): the file's endpoint
    /// (the binary's `--browser-ws` / `--browser-url` win over it) and its token.
    pub browser_pool: BrowserPool,
}

/// A browser pool's endpoint and where its token comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserPool {
    /// `browserPoolEndpoint` from the settings file.
    pub endpoint: Option<String>,
    pub token: PoolToken,
}

/// Where a pool's token comes from: `DSHKIT_BROWSER_POOL_TOKEN` wins over the
/// file's `browserPoolTokenFile` (read at each connection, so a rotated token
/// needs no restart). Its `Debug` never shows a token.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum PoolToken {
    #[default]
    None,
    /// The variable's value.
    Env(String),
    /// A file holding it.
    File(PathBuf),
}

impl std::fmt::Debug for PoolToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Env(_) => write!(f, "Env({})", vars::DSHKIT_BROWSER_POOL_TOKEN),
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// Resolves `flags` over `env` over the settings file over the defaults.
pub fn resolve(env: &Environment, flags: Flags, file: SettingsFile) -> Result<Resolved, SettingsError> {
    let stored = match (settings::path(env), file) {
        (Some(path), SettingsFile::Read) => settings::load(&path)?,
        _ => Settings::default(),
    };
    Ok(combine(env, flags, stored))
}

/// The settings of a long-running server: the flags and environment it started
/// with over the settings file as it is now, read again at each
/// [`Live::current`] (a file of at most [`settings::MAX_SETTINGS_BYTES`], so a
/// read costs microseconds and no change is missed).
#[derive(Debug, Clone)]
pub struct Live {
    env: Environment,
    flags: Flags,
    path: Option<PathBuf>,
}

impl Live {
    pub fn new(env: Environment, flags: Flags, file: SettingsFile) -> Self {
        let path = match file {
            SettingsFile::Read => settings::path(&env),
            SettingsFile::Ignore => None,
        };
        Self { env, flags, path }
    }

    /// Every setting as it is now; a file broken since is an error.
    pub fn current(&self) -> Result<Resolved, SettingsError> {
        let stored = match &self.path {
            Some(path) => settings::load(path)?,
            None => Settings::default(),
        };
        Ok(combine(&self.env, self.flags.clone(), stored))
    }
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
        evidence_root: env
            .path_var(vars::DSHKIT_EVIDENCE_ROOT)
            .or(stored.evidence_root)
            .or_else(|| disk::default_evidence_root(env)),
        browser_pool: BrowserPool {
            endpoint: stored.browser_pool_endpoint,
            token: match (
                env.get(vars::DSHKIT_BROWSER_POOL_TOKEN),
                stored.browser_pool_token_file,
            ) {
                (Some(token), _) => PoolToken::Env(token.to_string_lossy().into_owned()),
                (None, Some(file)) => PoolToken::File(file),
                (None, None) => PoolToken::None,
            },
        },
    }
}

/// The default DevTools registry: `<DSH home>/dshkit-devtools`, the DSH home being
/// `DSH_HOME`, else `~/.dsh`, else `.dsh` here.
pub fn devtools_dir(env: &Environment) -> PathBuf {
    dsh::home(env)
        .unwrap_or_else(|| ".dsh".into())
        .join(DEVTOOLS_DIR_NAME)
}

/// Where the DSH plugin keeps its state: `<DSH home>/dshkit-plugin`, the DSH
/// home found as for [`devtools_dir`].
pub fn plugin_state_dir(env: &Environment) -> PathBuf {
    dsh::home(env)
        .unwrap_or_else(|| ".dsh".into())
        .join(PLUGIN_STATE_DIR_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_config(dir: &std::path::Path) -> Environment {
        Environment::from_pairs_on(
            crate::Platform::Linux,
            [
                (vars::XDG_CONFIG_HOME, dir.to_str().unwrap()),
                (vars::DSH_HOME, "/srv/dsh"),
            ],
        )
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
    fn a_live_resolver_sees_the_file_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with_config(dir.path());
        let live = Live::new(env.clone(), Flags::default(), SettingsFile::Read);
        assert_eq!(live.current().unwrap().quiet_window_ms, None);
        let path = settings::path(&env).unwrap();
        let root = dir.path().join("kept");
        let value = serde_json::json!({"quietWindowMs": 40, "evidenceRoot": root});
        settings::store(&path, &value.to_string()).unwrap();
        let now = live.current().unwrap();
        assert_eq!(now.quiet_window_ms, Some(40));
        assert_eq!(now.evidence_root.as_deref(), Some(root.as_path()));
        std::fs::write(&path, "{ broken").unwrap();
        assert_eq!(live.current().unwrap_err().code(), "SETTINGS_NOT_JSON");
        let ignoring = Live::new(env, Flags::default(), SettingsFile::Ignore);
        assert_eq!(ignoring.current().unwrap().quiet_window_ms, None);
    }

    #[test]
    fn the_evidence_root_is_the_variable_then_the_file_then_the_state_home() {
        let stored = Settings {
            evidence_root: Some("/srv/kept".into()),
            ..Settings::default()
        };
        let env = Environment::from_pairs_on(crate::Platform::Linux, [(vars::HOME, "/home/u")]);
        let from_file = combine(&env, Flags::default(), stored.clone());
        assert_eq!(from_file.evidence_root, Some(PathBuf::from("/srv/kept")));
        let env = Environment::from_pairs_on(
            crate::Platform::Linux,
            [(vars::HOME, "/home/u"), (vars::DSHKIT_EVIDENCE_ROOT, "/srv/var")],
        );
        let from_var = combine(&env, Flags::default(), stored);
        assert_eq!(from_var.evidence_root, Some(PathBuf::from("/srv/var")));
        let env = Environment::from_pairs_on(crate::Platform::Linux, [(vars::HOME, "/home/u")]);
        let default = combine(&env, Flags::default(), Settings::default());
        assert_eq!(
            default.evidence_root,
            Some(PathBuf::from("/home/u/.local/state/dshkit/evidence"))
        );
    }

    #[test]
    fn the_pool_token_is_the_variable_then_the_file_and_never_shown() {
        let stored = Settings {
            browser_pool_endpoint: Some("ws://127.0.0.1:3000/chromium".into()),
            browser_pool_token_file: Some("/srv/pool-token".into()),
            ..Settings::default()
        };
        let env = Environment::from_pairs_on(crate::Platform::Linux, [(vars::HOME, "/home/u")]);
        let from_file = combine(&env, Flags::default(), stored.clone());
        assert_eq!(
            from_file.browser_pool.endpoint.as_deref(),
            Some("ws://127.0.0.1:3000/chromium")
        );
        assert_eq!(
            from_file.browser_pool.token,
            PoolToken::File("/srv/pool-token".into())
        );
        let env = Environment::from_pairs_on(
            crate::Platform::Linux,
            [
                (vars::HOME, "/home/u"),
                (vars::DSHKIT_BROWSER_POOL_TOKEN, "s3cret-value"),
            ],
        );
        let from_var = combine(&env, Flags::default(), stored);
        assert_eq!(from_var.browser_pool.token, PoolToken::Env("s3cret-value".into()));
        let shown = format!("{from_var:?}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
        assert!(shown.contains("DSHKIT_BROWSER_POOL_TOKEN"), "{shown}");
        let none = combine(
            &env_with_config(std::path::Path::new("/x")),
            Flags::default(),
            Settings::default(),
        );
        assert_eq!(none.browser_pool, BrowserPool::default());
    }

    #[test]
    fn the_devtools_dir_follows_dsh_home_then_the_user_home() {
        let env = Environment::from_pairs([(vars::DSH_HOME, "/srv/dsh"), (vars::HOME, "/home/u")]);
        assert_eq!(devtools_dir(&env), PathBuf::from("/srv/dsh/dshkit-devtools"));
        let env = Environment::from_pairs([(vars::HOME, "/home/u")]);
        assert_eq!(devtools_dir(&env), PathBuf::from("/home/u/.dsh/dshkit-devtools"));
        assert_eq!(
            plugin_state_dir(&env),
            PathBuf::from("/home/u/.dsh/dshkit-plugin")
        );
    }
}
