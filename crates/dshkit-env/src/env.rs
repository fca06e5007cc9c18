//! A snapshot of the variables discovery reads, so tests can inject their own.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::vars;

/// The environment discovery looks at.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: HashMap<String, OsString>,
}

impl Environment {
    /// The current process environment.
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                .collect(),
        }
    }

    /// An environment with exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<OsString>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self {
            vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// A non-empty variable.
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.vars.get(name).filter(|v| !v.is_empty())
    }

    pub fn path_var(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }

    /// The user's home: `HOME`, else on Windows (where `HOME` is rarely set)
    /// `USERPROFILE`, as Node's `os.homedir()` finds it for DSH.
    pub fn home(&self) -> Option<PathBuf> {
        self.home_on(cfg!(windows))
    }

    fn home_on(&self, windows: bool) -> Option<PathBuf> {
        self.path_var(vars::HOME)
            .or_else(|| windows.then(|| self.path_var(vars::USERPROFILE)).flatten())
    }

    /// Finds `program` on `PATH`, as a shell would (on Windows with its
    /// executable extensions).
    pub fn which(&self, program: &str) -> Option<PathBuf> {
        let path = self.get(vars::PATH)?;
        let names = dshkit_os::browsers::executable_names(program);
        std::env::split_paths(path)
            .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
            .find(|candidate| is_executable(candidate))
    }
}

/// A regular file we may execute.
pub fn is_executable(path: &std::path::Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    dshkit_os::fs::is_executable(&meta)
}

#[cfg(test)]
mod home_tests {
    use super::*;

    #[test]
    fn home_is_home_else_the_windows_user_profile() {
        let both = Environment::from_pairs([(vars::HOME, "/home/u"), (vars::USERPROFILE, r"C:\Users\u")]);
        assert_eq!(both.home_on(true), Some(PathBuf::from("/home/u")));
        let profile = Environment::from_pairs([(vars::USERPROFILE, r"C:\Users\u")]);
        assert_eq!(profile.home_on(true), Some(PathBuf::from(r"C:\Users\u")));
        assert_eq!(
            profile.home_on(false),
            None,
            "USERPROFILE means nothing off Windows"
        );
        let empty = Environment::from_pairs([(vars::HOME, ""), (vars::USERPROFILE, "")]);
        assert_eq!(empty.home_on(true), None);
    }
}
