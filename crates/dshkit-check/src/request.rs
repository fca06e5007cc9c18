//! One `plugin_check` request as both adapters receive it (the CLI's flags, the
//! MCP tool's arguments), turned into [`CheckOptions`] with the environment's
//! defaults; and the compact text of a [`Report`] both adapters print.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dshkit_env::{Environment, dsh, locate, vars};
use serde::Deserialize;

use crate::report::{Report, Status};
use crate::run::CheckOptions;

/// The inputs of `plugin_check` (its MCP arguments, camelCase on the wire).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one documented input of plugin_check"
)]
pub struct CheckRequest {
    pub dsh_home: Option<PathBuf>,
    pub profile: Option<String>,
    pub target: Option<String>,
    #[serde(default)]
    pub live: bool,
    #[serde(default)]
    pub page: bool,
    #[serde(default)]
    pub sweep: bool,
    #[serde(default)]
    pub kill_stray: bool,
    pub boot_timeout_ms: Option<u64>,
    pub observe_ms: Option<u64>,
    #[serde(default)]
    pub isolate_home: bool,
}

/// A request that cannot become options.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    #[error("no DSH home: pass dshHome or set DSH_HOME")]
    NoHome,
    #[error("no DSH home at {}: name the home DSH uses (dshHome, --dsh-home; DSH's own DSH_HOME, by default ~/.dsh)", .0.display())]
    HomeNotFound(PathBuf),
    #[error("no profile {profile} in the DSH home {}: {}", home.display(), profiles_there(profiles))]
    ProfileNotFound {
        home: PathBuf,
        profile: String,
        /// The profiles the home has, sorted (at most [`MAX_PROFILES_NAMED`]).
        profiles: Vec<String>,
    },
}

/// Profiles a [`RequestError::ProfileNotFound`] names at most.
const MAX_PROFILES_NAMED: usize = 20;

fn profiles_there(profiles: &[String]) -> String {
    if profiles.is_empty() {
        "it has no profile yet (`dsh web --dump-default-config` makes the web profile)".to_owned()
    } else {
        format!(
            "its profiles are {}; name one (profile, --profile)",
            profiles.join(", ")
        )
    }
}

impl RequestError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoHome => "NO_DSH_HOME",
            Self::HomeNotFound(_) => "DSH_HOME_NOT_FOUND",
            Self::ProfileNotFound { .. } => "PROFILE_NOT_FOUND",
        }
    }

    /// A request without a DSH home, or naming a home or profile that is not
    /// there, is refused once: the caller names the right one.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Refused
    }
}

/// The home and the profile a check reads must be there: a missing one is one
/// refusal with what is there, not a failure of every check that reads it.
fn present(home: &Path, profile: &str) -> Result<(), RequestError> {
    if !home.is_dir() {
        return Err(RequestError::HomeNotFound(home.to_path_buf()));
    }
    if home.join("profiles").join(profile).is_dir() {
        return Ok(());
    }
    let mut profiles: Vec<String> = std::fs::read_dir(home.join("profiles"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name != "node_modules")
        .collect();
    profiles.sort();
    profiles.truncate(MAX_PROFILES_NAMED);
    Err(RequestError::ProfileNotFound {
        home: home.to_path_buf(),
        profile: profile.to_owned(),
        profiles,
    })
}

dshkit_os::classified!(RequestError);

impl CheckRequest {
    /// The options of this request, with the environment's defaults (`DSH_HOME`,
    /// `DSHKIT_DSH`, `PATH`, `HOME`); timeouts are clamped to their bounds.
    pub fn options(self, env: &Environment) -> Result<CheckOptions, RequestError> {
        let home = self
            .dsh_home
            .or_else(|| dsh::home(env))
            .ok_or(RequestError::NoHome)?;
        let profile = self.profile.unwrap_or_else(|| "web".into());
        // A sweep reads no profile: it looks for leftover DSH processes only.
        if !self.sweep {
            present(&home, &profile)?;
        }
        let launcher = match locate::dsh(env) {
            locate::Lookup::Found(found) => Some(found.path),
            _ => None,
        };
        let mut options = CheckOptions::new(
            home,
            profile,
            launcher,
            env.get(vars::PATH).cloned().unwrap_or_default(),
            env.home().unwrap_or_else(|| PathBuf::from("/")),
        );
        options.target = self.target;
        options.live = self.live || self.page;
        options.page = self.page;
        options.sweep = self.sweep;
        options.kill_stray = self.kill_stray;
        options.isolate_home = self.isolate_home;
        options.cache = env
            .dshkit_dir(dshkit_env::Dir::Cache)
            .map(|dir| dir.join("check"));
        if let Some(ms) = self.boot_timeout_ms {
            options.boot_timeout = Duration::from_millis(ms.clamp(1000, 300_000));
        }
        if let Some(ms) = self.observe_ms {
            options.observe = Duration::from_millis(ms).min(crate::smoke::MAX_PAGE_OBSERVE);
        }
        Ok(options)
    }
}

/// One line per check: `fail   syntax            2 problem(s) in 3 file(s)`.
pub fn compact_text(report: &Report) -> String {
    let mut text = format!("plugin_check: {}\n", if report.ok { "ok" } else { "NOT OK" });
    for check in &report.checks {
        let word = match check.status {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::NotTested => "not_tested",
        };
        text.push_str(&format!("{word:<10} {:<17} {}\n", check.id, check.detail));
        if check.status == Status::Fail {
            for line in check.evidence.iter().take(5) {
                text.push_str(&format!("{:<28} {line}\n", ""));
            }
        }
    }
    if !report.ok {
        text.push_str("next: read the plugin-fault-diagnosis playbook (dshkit check --explain)\n");
    }
    text
}
