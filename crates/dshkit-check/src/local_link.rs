//! Where DSH loads an inserted `@local/NAME` row from.
//!
//! DSH imports a row's package from the profile directory, so Node finds it as
//! it finds any package: the first `node_modules/@local/NAME` that is a directory,
//! walking up from the profile (the profile's own link first; a dangling link is
//! passed over). The profile's layout is the plugin in `plugins/NAME` and the link
//! `node_modules/@local/NAME -> ../../plugins/NAME`. The static checks read
//! `plugins/NAME`, so they speak for the row only when the link leads there.

use std::path::{Path, PathBuf};

/// What Node finds for one `@local/NAME` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `plugins/NAME` (by its real path).
    Plugin,
    /// Nothing: DSH stops with `Cannot find package`. `dangling` is the target of
    /// the profile's link when the link is there but leads nowhere.
    Nothing { dangling: Option<PathBuf> },
    /// Another directory than `plugins/NAME`.
    Elsewhere {
        /// The directory Node loads.
        dir: PathBuf,
        /// What the profile's link says, when the profile's own entry is a link.
        link_target: Option<PathBuf>,
        /// The `name` in that directory's `package.json`.
        package: Option<String>,
    },
}

/// One `@local/NAME` row, located as DSH will load it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRow {
    /// `@local/NAME`.
    pub package: String,
    /// `NAME`.
    pub local: String,
    pub profile_dir: PathBuf,
    /// `profiles/P/node_modules/@local/NAME`.
    pub link: PathBuf,
    /// `profiles/P/plugins/NAME`.
    pub plugin_dir: PathBuf,
    pub found: Found,
}

/// Locates the row `@local/<local>` of the profile at `profile_dir`.
pub fn locate(profile_dir: &Path, local: &str) -> LocalRow {
    let package = format!("@local/{local}");
    let link = profile_dir.join("node_modules").join(&package);
    let plugin_dir = profile_dir.join("plugins").join(local);
    let link_target = std::fs::read_link(&link).ok();
    let found = match crate::resolve::package_dir(&package, profile_dir) {
        None => Found::Nothing {
            dangling: link_target,
        },
        Some(dir) if same_dir(&dir, &plugin_dir) => Found::Plugin,
        Some(dir) => {
            let real = crate::realpath::real(&dir).unwrap_or(dir);
            let package =
                crate::resolve::read_manifest(&real).and_then(|m| m["name"].as_str().map(str::to_owned));
            Found::Elsewhere {
                // Only the profile's own entry's link explains a find there.
                link_target: link_target.filter(|_| same_dir(&link, &real)),
                dir: real,
                package,
            }
        }
    };
    LocalRow {
        package,
        local: local.to_owned(),
        profile_dir: profile_dir.to_owned(),
        link,
        plugin_dir,
        found,
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (crate::realpath::real(a), crate::realpath::real(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl LocalRow {
    /// What DSH prints when Node finds nothing for the row.
    pub fn cannot_find(&self) -> String {
        format!(
            "Cannot find package '{}' imported from {}{}",
            self.package,
            self.profile_dir.display(),
            std::path::MAIN_SEPARATOR
        )
    }

    /// The link as the profile's layout wants it, relative to its folder.
    fn wanted_target(&self) -> PathBuf {
        Path::new("..").join("..").join("plugins").join(&self.local)
    }

    /// The command that makes the link lead to `plugins/NAME`; `replace` when a
    /// link is already there.
    pub fn link_command(&self, replace: bool) -> String {
        let (target, link) = (self.wanted_target(), &self.link);
        if cfg!(windows) {
            let remove = if replace {
                format!("rmdir \"{}\" && ", link.display())
            } else {
                String::new()
            };
            format!(
                "{remove}mklink /D \"{}\" \"{}\"",
                link.display(),
                target.display()
            )
        } else if replace {
            format!("ln -sfn {} {}", target.display(), link.display())
        } else {
            let parent = link.parent().unwrap_or(link);
            format!(
                "mkdir -p {} && ln -s {} {}",
                parent.display(),
                target.display(),
                link.display()
            )
        }
    }

    /// Why the row does not load `plugins/NAME`, with what DSH does and the fix;
    /// `None` when it does.
    pub fn problem(&self) -> Option<String> {
        let (package, link, plugin_dir) = (&self.package, self.link.display(), self.plugin_dir.display());
        let has_plugin = self.plugin_dir.join("package.json").is_file();
        match &self.found {
            Found::Plugin if has_plugin => None,
            Found::Plugin => Some(format!(
                "{package}: no local plugin at {plugin_dir} (it has no package.json)"
            )),
            Found::Nothing { dangling } if !has_plugin => Some(format!(
                "{package}: no local plugin at {plugin_dir}{}, so DSH stops with \"{}\"; add the plugin there and link it ({}), or remove the row",
                match dangling {
                    Some(target) => format!(", and the link {link} -> {} leads nowhere", target.display()),
                    None => format!(" and no link {link}"),
                },
                self.cannot_find(),
                self.link_command(dangling.is_some()),
            )),
            Found::Nothing { dangling: None } => Some(format!(
                "{package}: the link {link} is missing, so DSH stops with \"{}\" (it loads a row's package through node_modules, not from plugins/); restore it: {}",
                self.cannot_find(),
                self.link_command(false),
            )),
            Found::Nothing {
                dangling: Some(target),
            } => Some(format!(
                "{package}: the link {link} -> {} leads nowhere, so DSH stops with \"{}\"; point it at the plugin: {}",
                target.display(),
                self.cannot_find(),
                self.link_command(true),
            )),
            Found::Elsewhere {
                dir,
                link_target,
                package: found_name,
            } => {
                let how = match link_target {
                    Some(target) => format!("the link {link} -> {}", target.display()),
                    None if self.link.symlink_metadata().is_ok() => {
                        format!("{link} is a directory, not a link")
                    }
                    None => format!("no link {link}, and Node finds it in a node_modules further up"),
                };
                let which = match found_name {
                    Some(name) if name != package => format!(", the plugin {name}"),
                    _ => String::new(),
                };
                let fix = if link_target.is_some() {
                    self.link_command(true)
                } else if self.link.symlink_metadata().is_ok() {
                    format!(
                        "move {link} out of node_modules, then {}",
                        self.link_command(false)
                    )
                } else {
                    self.link_command(false)
                };
                Some(format!(
                    "{package}: DSH loads {}{which} for this row ({how}), not {plugin_dir}: the code in {plugin_dir} never runs, and these checks read it; make the link lead there: {fix}",
                    dir.display(),
                ))
            }
        }
    }
}

// The commands and paths asserted are the Unix ones.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn profile() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in ["p", "q"] {
            let plugin = dir.path().join("plugins").join(name);
            std::fs::create_dir_all(&plugin).unwrap();
            std::fs::write(
                plugin.join("package.json"),
                format!(r#"{{"name":"@local/{name}"}}"#),
            )
            .unwrap();
        }
        std::fs::create_dir_all(dir.path().join("node_modules/@local")).unwrap();
        dir
    }

    fn link(profile: &Path, name: &str, target: &str) {
        dshkit_os::fs::symlink(target, profile.join("node_modules/@local").join(name)).unwrap();
    }

    #[test]
    fn a_link_to_the_plugin_is_what_dsh_loads() {
        let dir = profile();
        link(dir.path(), "p", "../../plugins/p");
        let row = locate(dir.path(), "p");
        assert_eq!(row.found, Found::Plugin);
        assert_eq!(row.problem(), None);
    }

    #[test]
    fn a_missing_link_says_what_dsh_prints_and_how_to_restore_it() {
        let dir = profile();
        let row = locate(dir.path(), "p");
        assert_eq!(row.found, Found::Nothing { dangling: None });
        let problem = row.problem().unwrap();
        assert!(
            problem.contains(&format!(
                "Cannot find package '@local/p' imported from {}/",
                dir.path().display()
            )),
            "{problem}"
        );
        assert!(
            problem.contains(&format!(
                "ln -s ../../plugins/p {}",
                dir.path().join("node_modules/@local/p").display()
            )),
            "{problem}"
        );
    }

    #[test]
    fn a_dangling_link_is_passed_over_as_node_does() {
        let dir = profile();
        link(dir.path(), "p", "../../plugins/gone");
        let row = locate(dir.path(), "p");
        assert_eq!(
            row.found,
            Found::Nothing {
                dangling: Some("../../plugins/gone".into())
            }
        );
        let problem = row.problem().unwrap();
        assert!(
            problem.contains("-> ../../plugins/gone leads nowhere"),
            "{problem}"
        );
        assert!(problem.contains("ln -sfn ../../plugins/p "), "{problem}");
    }

    #[test]
    fn a_link_to_another_plugin_names_what_dsh_loads_instead() {
        let dir = profile();
        link(dir.path(), "p", "../../plugins/q");
        let row = locate(dir.path(), "p");
        let problem = row.problem().unwrap();
        let q = dshkit_os::fs::canonicalize(dir.path().join("plugins/q")).unwrap();
        assert!(
            problem.contains(&format!("DSH loads {}, the plugin @local/q", q.display())),
            "{problem}"
        );
        assert!(problem.contains("ln -sfn ../../plugins/p "), "{problem}");
    }

    #[test]
    fn a_package_further_up_is_found_as_node_finds_it() {
        let dir = profile();
        let profile_dir = dir.path().join("profiles/web");
        std::fs::create_dir_all(profile_dir.join("plugins/p")).unwrap();
        std::fs::write(profile_dir.join("plugins/p/package.json"), "{}").unwrap();
        // `dir/node_modules/@local/p` is above the profile.
        link(dir.path(), "p", "../../plugins/q");
        let row = locate(&profile_dir, "p");
        assert!(
            matches!(
                &row.found,
                Found::Elsewhere {
                    link_target: None,
                    ..
                }
            ),
            "{row:#?}"
        );
        assert!(
            row.problem().unwrap().contains("in a node_modules further up"),
            "{row:#?}"
        );
    }
}
