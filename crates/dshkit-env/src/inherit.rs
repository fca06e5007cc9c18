//! What a child of dshkit (a DSH instance `plugin_check` starts, a dev server
//! the runtime starts) inherits: the host environment less DSH's own names and
//! credential-shaped ones, by the rule DSH applies to its own children
//! (`scrubbedParentEnv` in `@deepseek-ai/dsh-subprocess`). Whatever dshkit sets
//! for the child is added after, so it survives.
//!
//! A child must not be started with a cleared environment: Windows programs
//! need `SystemRoot` (Winsock), `PATHEXT`, `TEMP`, `USERPROFILE` and `APPDATA`.

use std::ffi::OsString;

use crate::env::Environment;

/// DSH's own prefix: these facts are set for a child on purpose, never inherited.
pub const DSH_PREFIX: &str = "DSH_";
/// The parts of a name that make it credential-shaped (any case), as DSH's
/// `SENSITIVE_ENV_PATTERN` (`/KEY|PASSWORD|SECRET|TOKEN/i`).
pub const CREDENTIAL_PARTS: [&str; 4] = ["KEY", "PASSWORD", "SECRET", "TOKEN"];

/// Whether a child inherits the variable `name`: not `DSH_*` (in any case: on
/// Windows `dsh_home` is `DSH_HOME`) and not credential-shaped.
pub fn inherits(name: &str) -> bool {
    let upper = name.to_uppercase();
    !upper.starts_with(DSH_PREFIX) && !CREDENTIAL_PARTS.iter().any(|part| upper.contains(part))
}

/// The variables of `env` a child inherits, by the names as written.
pub fn inherited(env: &Environment) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = env
        .iter()
        .filter(|(name, _)| inherits(name))
        .map(|(name, value)| (name.into(), value.clone()))
        .collect();
    vars.sort();
    vars
}

/// `command` with the environment of a child of dshkit: cleared, then the
/// inherited variables of the process's environment. Set dshkit's own after.
pub fn inherit(command: &mut std::process::Command) -> &mut std::process::Command {
    command.env_clear().envs(inherited(&Environment::from_process()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Platform;

    #[test]
    fn dsh_names_and_credentials_are_not_inherited() {
        let env = Environment::from_pairs_on(
            Platform::Windows,
            [
                ("SystemRoot", "C:\\windows"),
                ("Path", "C:\\node"),
                ("PATHEXT", ".COM;.EXE;.CMD"),
                ("USERPROFILE", "C:\\Users\\u"),
                ("HTTPS_PROXY", "http://proxy"),
                ("LANG", "C.UTF-8"),
                ("DSH_HOME", "C:\\dsh"),
                ("dsh_profile", "web"),
                ("DEEPSEEK_API_KEY", "sk-1"),
                ("GITHUB_TOKEN", "t"),
                ("npm_config__authToken", "t"),
                ("DB_PASSWORD", "p"),
                ("client_secret", "s"),
                ("DSHKIT_MCP_TOKEN", "t"),
            ],
        );
        let names: Vec<String> = inherited(&env)
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "HTTPS_PROXY",
                "LANG",
                "PATHEXT",
                "Path",
                "SystemRoot",
                "USERPROFILE"
            ]
        );
    }
}
