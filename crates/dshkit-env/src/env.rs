//! A snapshot of the variables discovery reads, so tests can inject their own.
//!
//! Names are matched as the platform matches them: exactly on Unix, without
//! regard to case on Windows (where `PATH` is usually spelled `Path`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::vars;

/// The environment discovery looks at.
#[derive(Debug, Clone)]
pub struct Environment {
    /// By the name as the platform compares it (upper case on Windows): the
    /// name as written, and the value.
    vars: HashMap<String, (String, OsString)>,
    platform: Platform,
}

impl Default for Environment {
    fn default() -> Self {
        Self::from_pairs_on(Platform::CURRENT, std::iter::empty::<(String, OsString)>())
    }
}

impl Environment {
    /// The current process environment.
    pub fn from_process() -> Self {
        Self::from_pairs_on(
            Platform::CURRENT,
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))),
        )
    }

    /// An environment with exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<OsString>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self::from_pairs_on(Platform::CURRENT, pairs)
    }

    /// An environment with exactly these variables, read by `platform`'s rules
    /// (its name matching, its directories).
    pub fn from_pairs_on<K: Into<String>, V: Into<OsString>>(
        platform: Platform,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let vars = pairs
            .into_iter()
            .map(|(k, v)| {
                let name: String = k.into();
                (platform.env_key(&name), (name, v.into()))
            })
            .collect();
        Self { vars, platform }
    }

    /// The platform whose rules this environment is read by.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// A non-empty variable (on Windows, whatever the case of its name).
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.vars
            .get(&self.platform.env_key(name))
            .map(|(_, v)| v)
            .filter(|v| !v.is_empty())
    }

    pub fn path_var(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }

    /// Every variable, by the name as written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &OsString)> {
        self.vars.values().map(|(k, v)| (k.as_str(), v))
    }

    /// The user's home: `HOME`, else on Windows (where `HOME` is rarely set)
    /// `USERPROFILE`, as Node's `os.homedir()` finds it for DSH.
    pub fn home(&self) -> Option<PathBuf> {
        self.path_var(vars::HOME).or_else(|| {
            (self.platform == Platform::Windows)
                .then(|| self.path_var(vars::USERPROFILE))
                .flatten()
        })
    }

    /// Finds `program` on `PATH` (`Path` on Windows), as a shell would (on
    /// Windows with its executable extensions).
    pub fn which(&self, program: &str) -> Option<PathBuf> {
        let path = self.get(vars::PATH)?;
        let names = dshkit_os::browsers::executable_names(program);
        std::env::split_paths(path)
            .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
            .find(|candidate| is_executable(candidate))
    }
}

/// Whose rules an [`Environment`] is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Linux and every other Unix: the XDG base directories, exact names.
    Linux,
    /// `~/Library`, exact names.
    MacOs,
    /// The profile's known folders, names without regard to case.
    Windows,
}

impl Platform {
    /// The platform dshkit was built for.
    pub const CURRENT: Self = if cfg!(windows) {
        Self::Windows
    } else if cfg!(target_os = "macos") {
        Self::MacOs
    } else {
        Self::Linux
    };

    /// The key a variable's name is stored and looked up by.
    pub(crate) fn env_key(self, name: &str) -> String {
        match self {
            Self::Windows => name.to_uppercase(),
            Self::Linux | Self::MacOs => name.to_owned(),
        }
    }

    /// Whether two variable names are the same variable here.
    pub fn same_name(self, a: &str, b: &str) -> bool {
        self.env_key(a) == self.env_key(b)
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
        let pairs = [(vars::HOME, "/home/u"), (vars::USERPROFILE, r"C:\Users\u")];
        let both = Environment::from_pairs_on(Platform::Windows, pairs);
        assert_eq!(both.home(), Some(PathBuf::from("/home/u")));
        let profile = [(vars::USERPROFILE, r"C:\Users\u")];
        assert_eq!(
            Environment::from_pairs_on(Platform::Windows, profile).home(),
            Some(PathBuf::from(r"C:\Users\u"))
        );
        for other in [Platform::Linux, Platform::MacOs] {
            assert_eq!(
                Environment::from_pairs_on(other, profile).home(),
                None,
                "USERPROFILE means nothing off Windows"
            );
        }
        let empty = [(vars::HOME, ""), (vars::USERPROFILE, "")];
        assert_eq!(Environment::from_pairs_on(Platform::Windows, empty).home(), None);
    }

    #[test]
    fn names_match_without_case_on_windows_only() {
        let pairs = [("Path", "C:\\node"), ("userprofile", "C:\\Users\\u")];
        let windows = Environment::from_pairs_on(Platform::Windows, pairs);
        assert_eq!(windows.get(vars::PATH), Some(&OsString::from("C:\\node")));
        assert_eq!(windows.home(), Some(PathBuf::from("C:\\Users\\u")));
        assert_eq!(
            windows
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("path"))
                .unwrap()
                .0,
            "Path",
            "the name as written is kept for passing on"
        );
        let linux = Environment::from_pairs_on(Platform::Linux, pairs);
        assert_eq!(linux.get(vars::PATH), None, "Unix names are exact");
    }
}
