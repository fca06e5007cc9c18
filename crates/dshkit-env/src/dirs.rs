//! The user's directories, from one place, by each platform's rule:
//!
//! | | config | state (evidence) | cache |
//! |---|---|---|---|
//! | Linux (XDG) | `$XDG_CONFIG_HOME`, else `~/.config` | `$XDG_STATE_HOME`, else `~/.local/state` | `$XDG_CACHE_HOME`, else `~/.cache` |
//! | macOS | `~/Library/Application Support` | `~/Library/Application Support` | `~/Library/Caches` |
//! | Windows | `%APPDATA%`, else `~\AppData\Roaming` | `%LOCALAPPDATA%`, else `~\AppData\Local` | `%LOCALAPPDATA%`, else `~\AppData\Local` |
//!
//! The home is `HOME`, else on Windows `USERPROFILE` (as Node's `os.homedir()`
//! finds it, so DSH's `~/.dsh` is the same directory). dshkit keeps its own
//! files in a `dshkit` folder under each.

use std::path::PathBuf;

use crate::env::Environment;
pub use crate::env::Platform;
use crate::vars;

/// Which of the user's directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Settings and the MCP token.
    Config,
    /// Evidence (screenshots, reports).
    State,
    /// What can be rebuilt (the Node built-ins list).
    Cache,
}

impl Environment {
    /// dshkit's own folder in `dir`: `<base>/dshkit`. `None` without a home
    /// (and, on Linux, without the XDG variable).
    pub fn dshkit_dir(&self, dir: Dir) -> Option<PathBuf> {
        self.user_dir(dir).map(|base| base.join("dshkit"))
    }

    /// The base directory `dir` by this platform's rule (the table above).
    pub fn user_dir(&self, dir: Dir) -> Option<PathBuf> {
        let home = || self.home();
        match self.platform() {
            Platform::Linux => {
                let (var, under_home) = match dir {
                    Dir::Config => (vars::XDG_CONFIG_HOME, ".config"),
                    Dir::State => (vars::XDG_STATE_HOME, ".local/state"),
                    Dir::Cache => (vars::XDG_CACHE_HOME, ".cache"),
                };
                self.path_var(var).or_else(|| home().map(|h| h.join(under_home)))
            }
            Platform::MacOs => {
                let under_home = match dir {
                    Dir::Config | Dir::State => "Library/Application Support",
                    Dir::Cache => "Library/Caches",
                };
                home().map(|h| h.join(under_home))
            }
            Platform::Windows => {
                let (var, under_home) = match dir {
                    Dir::Config => (vars::APPDATA, ["AppData", "Roaming"]),
                    Dir::State | Dir::Cache => (vars::LOCALAPPDATA, ["AppData", "Local"]),
                };
                self.path_var(var)
                    .or_else(|| home().map(|h| h.join(under_home[0]).join(under_home[1])))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(env: &Environment) -> [Option<PathBuf>; 3] {
        [Dir::Config, Dir::State, Dir::Cache].map(|d| env.dshkit_dir(d))
    }

    fn some(paths: [&str; 3]) -> [Option<PathBuf>; 3] {
        paths.map(|p| Some(PathBuf::from(p)))
    }

    #[test]
    fn linux_follows_xdg_then_the_home() {
        let home = Environment::from_pairs_on(Platform::Linux, [(vars::HOME, "/h")]);
        assert_eq!(
            dirs(&home),
            some(["/h/.config/dshkit", "/h/.local/state/dshkit", "/h/.cache/dshkit"])
        );
        let xdg = Environment::from_pairs_on(
            Platform::Linux,
            [
                (vars::HOME, "/h"),
                (vars::XDG_CONFIG_HOME, "/c"),
                (vars::XDG_STATE_HOME, "/s"),
                (vars::XDG_CACHE_HOME, "/k"),
            ],
        );
        assert_eq!(dirs(&xdg), some(["/c/dshkit", "/s/dshkit", "/k/dshkit"]));
        let none = Environment::from_pairs_on(Platform::Linux, [(vars::USERPROFILE, "/u")]);
        assert_eq!(dirs(&none), [None, None, None]);
    }

    #[test]
    fn macos_uses_the_library_and_ignores_xdg() {
        let env = Environment::from_pairs_on(
            Platform::MacOs,
            [(vars::HOME, "/Users/u"), (vars::XDG_CONFIG_HOME, "/c")],
        );
        assert_eq!(
            dirs(&env),
            some([
                "/Users/u/Library/Application Support/dshkit",
                "/Users/u/Library/Application Support/dshkit",
                "/Users/u/Library/Caches/dshkit",
            ])
        );
    }

    #[test]
    fn windows_uses_the_known_folders_without_home() {
        let env = Environment::from_pairs_on(
            Platform::Windows,
            [
                ("UserProfile", r"C:\Users\u"),
                ("AppData", r"D:\roaming"),
                ("LocalAppData", r"E:\local"),
                (vars::XDG_CONFIG_HOME, "/c"),
            ],
        );
        assert_eq!(
            dirs(&env),
            [r"D:\roaming", r"E:\local", r"E:\local"].map(|p| Some(PathBuf::from(p).join("dshkit")))
        );
        // Without the folder variables: their places in the profile.
        let bare = Environment::from_pairs_on(Platform::Windows, [(vars::USERPROFILE, "/p")]);
        assert_eq!(
            dirs(&bare),
            some([
                "/p/AppData/Roaming/dshkit",
                "/p/AppData/Local/dshkit",
                "/p/AppData/Local/dshkit",
            ])
        );
    }
}
