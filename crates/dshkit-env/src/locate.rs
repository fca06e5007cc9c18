//! Where the executables dshkit drives live.

use std::path::PathBuf;

use crate::env::{Environment, is_executable};
use crate::vars;

/// How an executable was found, so reports can say why that one was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// The variable that names it explicitly.
    Variable,
    /// A well-known install location.
    KnownPath,
    /// A search of `PATH`.
    SearchPath,
}

/// An executable and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    pub found_by: FoundBy,
}

const CHROMIUM_PATH_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "chrome",
    "msedge",
];

/// The outcome of a search that can fail because an explicit setting is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found(Located),
    /// An explicit variable names something that is not an executable.
    BadVariable {
        variable: &'static str,
        value: PathBuf,
    },
    NotFound,
}

fn lookup(env: &Environment, variable: &'static str, known: &[PathBuf], names: &[&str]) -> Lookup {
    if let Some(value) = env.path_var(variable) {
        return if is_executable(&value) {
            Lookup::Found(Located {
                path: value,
                found_by: FoundBy::Variable,
            })
        } else {
            Lookup::BadVariable { variable, value }
        };
    }
    if let Some(path) = known.iter().find(|p| is_executable(p)).cloned() {
        return Lookup::Found(Located {
            path,
            found_by: FoundBy::KnownPath,
        });
    }
    names
        .iter()
        .find_map(|name| env.which(name))
        .map_or(Lookup::NotFound, |path| {
            Lookup::Found(Located {
                path,
                found_by: FoundBy::SearchPath,
            })
        })
}

/// Chromium: `DSHKIT_CHROMIUM`, then this platform's install paths
/// ([`dshkit_os::browsers::chromium_candidates`]), then `PATH`.
pub fn chromium(env: &Environment) -> Lookup {
    let known = dshkit_os::browsers::chromium_candidates(&|name| env.get(name).cloned());
    lookup(env, vars::DSHKIT_CHROMIUM, &known, CHROMIUM_PATH_NAMES)
}

/// Node.js: `DSHKIT_NODE`, then `PATH`.
pub fn node(env: &Environment) -> Lookup {
    lookup(env, vars::DSHKIT_NODE, &[], &["node"])
}

/// The `dsh` launcher: `DSHKIT_DSH`, then `PATH`.
pub fn dsh(env: &Environment) -> Lookup {
    lookup(env, vars::DSHKIT_DSH, &[], &["dsh"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(dir: &std::path::Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        dshkit_os::fs::set_mode(&path, 0o755).unwrap();
        path
    }

    #[test]
    fn an_explicit_variable_wins_over_path() {
        let dir = tempfile::tempdir().unwrap();
        let explicit = executable(dir.path(), "my-node");
        executable(dir.path(), "node");
        let env = Environment::from_pairs([
            (vars::DSHKIT_NODE, explicit.as_os_str().to_owned()),
            (vars::PATH, dir.path().as_os_str().to_owned()),
        ]);
        assert_eq!(
            node(&env),
            Lookup::Found(Located {
                path: explicit,
                found_by: FoundBy::Variable
            })
        );
    }

    #[test]
    fn a_variable_naming_nothing_is_reported_not_skipped() {
        let env = Environment::from_pairs([(vars::DSHKIT_DSH, "/nonexistent/dsh")]);
        assert!(matches!(
            dsh(&env),
            Lookup::BadVariable {
                variable: vars::DSHKIT_DSH,
                ..
            }
        ));
    }

    #[test]
    fn path_is_searched_in_order() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        let want = executable(first.path(), "dsh");
        executable(second.path(), "dsh");
        let joined = std::env::join_paths([first.path(), second.path()]).unwrap();
        let env = Environment::from_pairs([(vars::PATH, joined)]);
        assert_eq!(
            dsh(&env),
            Lookup::Found(Located {
                path: want,
                found_by: FoundBy::SearchPath
            })
        );
    }

    #[test]
    fn nothing_found_is_not_found() {
        let env = Environment::from_pairs([(vars::PATH, "/nonexistent")]);
        assert_eq!(dsh(&env), Lookup::NotFound);
    }
}
