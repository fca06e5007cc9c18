//! The package-manager adapter: how `npm`, `pnpm` and `yarn` are started.
//!
//! On Unix the launchers on `PATH` are programs (scripts with a `#!` line) and
//! are run as they are. On Windows they are `.cmd` shims, which `CreateProcess`
//! does not run and which dshkit never hands to `cmd.exe /c`: the adapter maps
//! the standard install layouts to their JavaScript CLIs, run by `node`:
//!
//! - Yarn berry: the project's own release, `yarnPath` in `.yarnrc.yml`, else
//!   the one file in `.yarn/releases/`;
//! - a native launcher on `Path` (`pnpm.exe` from `@pnpm/exe`) runs as it is;
//! - beside the `.cmd` shim found on `Path` (folder `D`):
//!   - npm: `D\node_modules\npm\bin\npm-cli.js` (Node's own folder, a global
//!     prefix), `D\npm-cli.js` (npm's `bin` folder);
//!   - pnpm: `D\node_modules\pnpm\bin\pnpm.cjs` (`npm install -g pnpm`),
//!     `D\pnpm.cjs`;
//!   - Yarn classic: `D\node_modules\yarn\bin\yarn.js`, `D\yarn.js` (its `bin`
//!     folder and the installer's);
//!   - Corepack's shims: `D\node_modules\corepack\dist\<name>.js`;
//!   - else the script an npm-written shim names (`"%dp0%\…"`).
//!
//! Node is the `node.exe` beside the shim, as the shims themselves choose, else
//! `node` on `Path`. A layout the adapter does not know is an error naming what
//! it looked for.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;

use crate::dirs::Platform;
use crate::env::{Environment, is_executable};
use crate::vars;

/// The package managers the adapter starts.
pub const PACKAGE_MANAGERS: [&str; 3] = ["npm", "pnpm", "yarn"];
/// The most of `.yarnrc.yml` read for `yarnPath` (64 KiB).
pub const MAX_YARNRC_BYTES: u64 = 64 * 1024;

/// A package manager that cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "{manager} is not on Path: looked for {manager}.exe and {manager}.cmd in each folder of Path; install it (npm comes with Node.js) or put its folder on Path"
    )]
    NotFound { manager: String },
    #[error(
        "{} is not an install layout dshkit knows: looked for {} and for an npm shim naming its script; reinstall {manager} with npm, or start the dev server with a command of your own",
        shim.display(),
        looked_for.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    UnknownLayout {
        manager: String,
        shim: PathBuf,
        looked_for: Vec<PathBuf>,
    },
    #[error(
        "the project's Yarn release {} is missing (named by {}); run `yarn set version` again or fix yarnPath",
        release.display(),
        named_by.display()
    )]
    MissingRelease { release: PathBuf, named_by: PathBuf },
    #[error(
        "no node.exe beside {} nor on Path to run {}; install Node.js or put its folder on Path",
        shim.display(),
        script.display()
    )]
    NoNode { shim: PathBuf, script: PathBuf },
}

impl LaunchError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "PACKAGE_MANAGER_NOT_FOUND",
            Self::UnknownLayout { .. } => "PACKAGE_MANAGER_LAYOUT_UNKNOWN",
            Self::MissingRelease { .. } => "YARN_RELEASE_MISSING",
            Self::NoNode { .. } => "NODE_NOT_FOUND",
        }
    }

    /// Every case is the machine's setup, which the person fixes.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Refused
    }
}

dshkit_os::classified!(LaunchError);

/// The argv that runs `argv` in `project`: a package manager's launcher mapped
/// to `node <cli.js>` on Windows ([the module](self)); anything else unchanged.
pub fn command(argv: &[String], project: &Path, env: &Environment) -> Result<Vec<OsString>, LaunchError> {
    let Some((program, rest)) = argv.split_first() else {
        return Ok(Vec::new());
    };
    let mut out = match program.as_str() {
        manager if PACKAGE_MANAGERS.contains(&manager) => package_manager(manager, project, env)?,
        _ => vec![program.into()],
    };
    out.extend(rest.iter().map(OsString::from));
    Ok(out)
}

/// How `manager` (`npm`, `pnpm` or `yarn`) is started in `project`.
pub fn package_manager(
    manager: &str,
    project: &Path,
    env: &Environment,
) -> Result<Vec<OsString>, LaunchError> {
    if env.platform() != Platform::Windows {
        return Ok(vec![manager.into()]);
    }
    if manager == "yarn"
        && let Some(release) = yarn_release(project)?
    {
        let node = on_path(env, "node", &["exe"]).ok_or_else(|| LaunchError::NoNode {
            shim: release.clone(),
            script: release.clone(),
        })?;
        let release = std::path::absolute(&release).unwrap_or(release);
        return Ok(vec![node.into(), release.into()]);
    }
    if let Some(native) = on_path(env, manager, &["exe"]) {
        return Ok(vec![native.into()]);
    }
    let shim = on_path(env, manager, &["cmd"]).ok_or_else(|| LaunchError::NotFound {
        manager: manager.into(),
    })?;
    let dir = shim.parent().unwrap_or(Path::new("."));
    let looked_for = layouts(manager, dir);
    let script = looked_for
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .or_else(|| crate::dsh::shim_target(&shim).filter(|p| p.is_file()))
        .ok_or_else(|| LaunchError::UnknownLayout {
            manager: manager.into(),
            shim: shim.clone(),
            looked_for,
        })?;
    let beside = dir.join("node.exe");
    let node = if beside.is_file() {
        beside
    } else {
        on_path(env, "node", &["exe"]).ok_or_else(|| LaunchError::NoNode {
            shim: shim.clone(),
            script: script.clone(),
        })?
    };
    Ok(vec![node.into(), script.into()])
}

/// The CLI scripts of `manager`'s standard layouts beside a shim in `dir`, in
/// the order they are tried.
fn layouts(manager: &str, dir: &Path) -> Vec<PathBuf> {
    let modules = dir.join("node_modules");
    let own: &[&str] = match manager {
        "npm" => &["npm", "bin", "npm-cli.js"],
        "pnpm" => &["pnpm", "bin", "pnpm.cjs"],
        _ => &["yarn", "bin", "yarn.js"],
    };
    let script = own[2];
    vec![
        own.iter().fold(modules.clone(), |p, part| p.join(part)),
        dir.join(script),
        modules
            .join("corepack")
            .join("dist")
            .join(format!("{manager}.js")),
    ]
}

/// The first `name.<ext>` in a folder of `Path` (in the order of `exts`
/// within each folder).
fn on_path(env: &Environment, name: &str, exts: &[&str]) -> Option<PathBuf> {
    let path = env.get(vars::PATH)?;
    split_windows_paths(path)
        .flat_map(|dir| exts.iter().map(move |ext| dir.join(format!("{name}.{ext}"))))
        .find(|candidate| is_executable(candidate) || candidate.is_file())
        // The child runs in the project, maybe on another drive: a folder of
        // `Path` without one (`\\nodejs`) means the drive of dshkit's own.
        .map(|found| std::path::absolute(&found).unwrap_or(found))
}

/// `Path`'s folders: split at `;` (Windows' separator, whatever the host),
/// quotes around a folder removed, empty entries skipped.
fn split_windows_paths(path: &std::ffi::OsStr) -> impl Iterator<Item = PathBuf> {
    path.to_string_lossy()
        .split(';')
        .map(|d| d.trim().trim_matches('"').to_owned())
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect::<Vec<_>>()
        .into_iter()
}

/// A Yarn berry project's own release: `yarnPath` in `.yarnrc.yml` (an error
/// when that file is missing), else the only file in `.yarn/releases/`.
fn yarn_release(project: &Path) -> Result<Option<PathBuf>, LaunchError> {
    use std::io::Read as _;
    let rc = project.join(".yarnrc.yml");
    let mut text = String::new();
    if let Ok(file) = std::fs::File::open(&rc) {
        let _ = file.take(MAX_YARNRC_BYTES).read_to_string(&mut text);
    }
    let named = text.lines().find_map(|line| {
        let value = line.strip_prefix("yarnPath:")?.trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        (!value.is_empty()).then(|| value.to_owned())
    });
    if let Some(named) = named {
        let release = named
            .split(['/', '\\'])
            .fold(project.to_owned(), |p, part| p.join(part));
        return if release.is_file() {
            Ok(Some(release))
        } else {
            Err(LaunchError::MissingRelease {
                release,
                named_by: rc,
            })
        };
    }
    let releases: Vec<PathBuf> = std::fs::read_dir(project.join(".yarn").join("releases"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .take(2)
        .collect();
    Ok(match releases.as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &Path) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
        dshkit_os::fs::set_mode(path, 0o755).unwrap();
        path.to_owned()
    }

    fn windows(path: &[&Path]) -> Environment {
        let joined = path
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(";");
        Environment::from_pairs_on(Platform::Windows, [("Path", joined)])
    }

    fn argv(manager: &str, project: &Path, env: &Environment) -> Result<Vec<PathBuf>, LaunchError> {
        Ok(package_manager(manager, project, env)?
            .into_iter()
            .map(PathBuf::from)
            .collect())
    }

    #[test]
    fn each_standard_layout_maps_to_node_and_its_cli_script() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("app");
        std::fs::create_dir_all(&project).unwrap();
        // Node's own folder: node.exe, npm.cmd and npm's package beside them.
        let nodejs = dir.path().join("nodejs");
        let node = file(&nodejs.join("node.exe"));
        file(&nodejs.join("npm.cmd"));
        let npm_cli = file(&nodejs.join("node_modules/npm/bin/npm-cli.js"));
        // A global prefix with pnpm and Yarn classic, and no node.exe.
        let prefix = dir.path().join("prefix");
        file(&prefix.join("pnpm.cmd"));
        let pnpm = file(&prefix.join("node_modules/pnpm/bin/pnpm.cjs"));
        file(&prefix.join("yarn.cmd"));
        let yarn = file(&prefix.join("node_modules/yarn/bin/yarn.js"));
        let env = windows(&[&prefix, &nodejs]);
        assert_eq!(argv("npm", &project, &env).unwrap(), [node.clone(), npm_cli]);
        assert_eq!(argv("pnpm", &project, &env).unwrap(), [node.clone(), pnpm]);
        assert_eq!(argv("yarn", &project, &env).unwrap(), [node.clone(), yarn]);
        // Yarn berry: the project's release wins over the global Yarn.
        let release = file(&project.join(".yarn/releases/yarn-4.5.0.cjs"));
        assert_eq!(argv("yarn", &project, &env).unwrap(), [node.clone(), release]);
        std::fs::write(
            project.join(".yarnrc.yml"),
            "nodeLinker: node-modules\nyarnPath: \".yarn/releases/yarn-4.9.1.cjs\"\n",
        )
        .unwrap();
        let err = argv("yarn", &project, &env).unwrap_err();
        assert_eq!(err.code(), "YARN_RELEASE_MISSING", "{err}");
        assert!(err.to_string().contains("yarn-4.9.1.cjs"), "{err}");
        // A native pnpm.exe runs as it is.
        let native = file(&prefix.join("pnpm.exe"));
        assert_eq!(argv("pnpm", &project, &env).unwrap(), [native]);
        // Off Windows the launcher is a program: run as it is.
        let unix = Environment::from_pairs_on(Platform::Linux, [("PATH", "/usr/bin")]);
        assert_eq!(argv("npm", &project, &unix).unwrap(), [PathBuf::from("npm")]);
    }

    #[test]
    fn a_shim_npm_wrote_is_followed_to_its_script() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix");
        let node = file(&dir.path().join("nodejs/node.exe"));
        std::fs::create_dir_all(&prefix).unwrap();
        std::fs::write(
            prefix.join("pnpm.cmd"),
            "@ECHO off\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\lib\\pnpm\\dist\\pnpm.cjs\" %*\r\n",
        )
        .unwrap();
        let script = file(&prefix.join("lib/pnpm/dist/pnpm.cjs"));
        let env = windows(&[&prefix, node.parent().unwrap()]);
        assert_eq!(argv("pnpm", dir.path(), &env).unwrap(), [node, script]);
    }

    #[test]
    fn what_the_adapter_cannot_map_is_an_error_naming_what_it_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let err = argv("npm", dir.path(), &windows(&[dir.path()])).unwrap_err();
        assert_eq!(err.code(), "PACKAGE_MANAGER_NOT_FOUND");
        assert!(err.to_string().contains("npm.cmd"), "{err}");
        file(&dir.path().join("npm.cmd"));
        let err = argv("npm", dir.path(), &windows(&[dir.path()])).unwrap_err();
        assert_eq!(err.code(), "PACKAGE_MANAGER_LAYOUT_UNKNOWN");
        let text = err.to_string();
        assert!(text.contains("npm-cli.js") && text.contains("npm.cmd"), "{text}");
        file(&dir.path().join("node_modules/npm/bin/npm-cli.js"));
        let err = argv("npm", dir.path(), &windows(&[dir.path()])).unwrap_err();
        assert_eq!(err.code(), "NODE_NOT_FOUND", "{err}");
    }

    #[test]
    fn each_error_has_its_code_and_class() {
        let p = PathBuf::from("x");
        dshkit_os::error::assert_classified([
            (
                LaunchError::NotFound {
                    manager: "npm".into(),
                },
                "PACKAGE_MANAGER_NOT_FOUND",
                ErrorClass::Refused,
            ),
            (
                LaunchError::UnknownLayout {
                    manager: "npm".into(),
                    shim: p.clone(),
                    looked_for: vec![],
                },
                "PACKAGE_MANAGER_LAYOUT_UNKNOWN",
                ErrorClass::Refused,
            ),
            (
                LaunchError::MissingRelease {
                    release: p.clone(),
                    named_by: p.clone(),
                },
                "YARN_RELEASE_MISSING",
                ErrorClass::Refused,
            ),
            (
                LaunchError::NoNode {
                    shim: p.clone(),
                    script: p,
                },
                "NODE_NOT_FOUND",
                ErrorClass::Refused,
            ),
        ]);
    }
}
