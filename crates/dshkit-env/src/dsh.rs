//! The DSH install (its package and version) and the DSH home (profiles).

use std::path::{Path, PathBuf};

use crate::env::Environment;
use crate::vars;

/// The npm package name of DeepSeek Harness.
pub const DSH_PACKAGE: &str = "@deepseek-ai/dsh";
/// How many directories up from the launcher we look for DSH's `package.json`.
const MAX_PACKAGE_SEARCH_DEPTH: usize = 8;
/// Most profiles listed from one home.
pub const MAX_LISTED_PROFILES: usize = 64;

/// The DSH home: `DSH_HOME`, else `~/.dsh`.
pub fn home(env: &Environment) -> Option<PathBuf> {
    env.path_var(vars::DSH_HOME)
        .or_else(|| env.home().map(|h| h.join(".dsh")))
}

/// The directory of one profile inside a home.
pub fn profile_dir(home: &Path, profile: &str) -> PathBuf {
    home.join("profiles").join(profile)
}

/// The profiles present in a home (directories under `profiles/` other than the
/// shared `node_modules` farm), sorted, at most [`MAX_LISTED_PROFILES`].
pub fn profiles(home: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(home.join("profiles")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name != "node_modules" && !name.starts_with('.'))
        .collect();
    names.sort();
    names.truncate(MAX_LISTED_PROFILES);
    names
}

/// The script Node runs for the `dsh` launcher, canonical. npm installs `dsh` as
/// a link to `node_modules/@deepseek-ai/dsh/<bin>` on Unix; on Windows it writes
/// a `dsh.cmd` shim that names the script relative to itself
/// (`"%dp0%\..\@deepseek-ai\dsh\dist\bin.js"`).
pub fn launcher_script(launcher: &Path) -> Option<PathBuf> {
    match shim_target(launcher) {
        Some(script) => dshkit_os::fs::canonicalize(script).ok(),
        None => dshkit_os::fs::canonicalize(launcher).ok(),
    }
}

/// The most of a launcher read to look for a shim's target (npm's shims are
/// well under 1 KiB; a script or a binary is not read through).
const MAX_SHIM_BYTES: u64 = 16 * 1024;

/// The script an npm `.cmd` shim runs: its last `"%dp0%\…"` path (the first
/// names a `node.exe` beside the shim, when there is one).
pub(crate) fn shim_target(launcher: &Path) -> Option<PathBuf> {
    use std::io::Read as _;
    let is_shim = launcher
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("cmd"));
    if !is_shim {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(launcher)
        .ok()?
        .take(MAX_SHIM_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let start = text.rfind("\"%dp0%\\")? + "\"%dp0%\\".len();
    let end = start + text[start..].find('"')?;
    let relative: PathBuf = text[start..end].split('\\').collect();
    Some(launcher.parent()?.join(relative))
}

/// The file extensions of a script Node runs as the launcher.
const SCRIPT_EXTENSIONS: [&str; 3] = ["js", "mjs", "cjs"];

/// The argv that starts the `dsh` launcher, `path` the `PATH` DSH gets. A
/// program (npm's link on Unix, a native binary) runs as it is. On Windows an
/// npm `dsh.cmd` shim, or DSH's script itself (`…\@deepseek-ai\dsh\lib\bin.js`),
/// runs as `node <script>`, never through `cmd.exe`: Node is the `node.exe`
/// beside the shim, as the shim chooses, else `node.exe` on `path`. The script
/// is the one [`launcher_script`] names, so the audit's identity rule knows
/// the instance.
pub fn launch_command(launcher: &Path, path: &std::ffi::OsStr) -> Vec<std::ffi::OsString> {
    launch_command_on(crate::Platform::CURRENT, launcher, path)
}

fn launch_command_on(
    platform: crate::Platform,
    launcher: &Path,
    path: &std::ffi::OsStr,
) -> Vec<std::ffi::OsString> {
    let is_script = launcher
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_EXTENSIONS.iter().any(|s| s.eq_ignore_ascii_case(e)));
    let script = match shim_target(launcher) {
        Some(script) if platform == crate::Platform::Windows => script,
        _ if platform == crate::Platform::Windows && is_script => launcher.to_owned(),
        _ => return vec![launcher.into()],
    };
    let beside = launcher.parent().map(|d| d.join("node.exe"));
    let node = beside
        .filter(|n| n.is_file())
        .or_else(|| {
            std::env::split_paths(path)
                .map(|d| d.join("node.exe"))
                .find(|n| n.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("node.exe"));
    let script = std::path::absolute(&script).unwrap_or(script);
    vec![node.into(), script.into()]
}

/// DSH's package root and version, found from its launcher: the script it runs
/// ([`launcher_script`]) lies inside the package, under its `package.json`.
pub fn package_of_launcher(launcher: &Path) -> Option<(PathBuf, String)> {
    let real = launcher_script(launcher)?;
    real.ancestors().take(MAX_PACKAGE_SEARCH_DEPTH).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        (manifest["name"] == DSH_PACKAGE)
            .then(|| Some((dir.to_owned(), manifest["version"].as_str()?.to_owned())))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_prefers_dsh_home_over_the_user_home() {
        let env = Environment::from_pairs([(vars::DSH_HOME, "/srv/dsh"), (vars::HOME, "/home/u")]);
        assert_eq!(home(&env), Some(PathBuf::from("/srv/dsh")));
        let env = Environment::from_pairs([(vars::HOME, "/home/u")]);
        assert_eq!(home(&env), Some(PathBuf::from("/home/u/.dsh")));
    }

    #[test]
    fn profiles_skip_the_module_farm() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["web", "headless", "node_modules", ".tmp"] {
            std::fs::create_dir_all(dir.path().join("profiles").join(name)).unwrap();
        }
        assert_eq!(profiles(dir.path()), vec!["headless", "web"]);
    }

    /// DSH's package as npm lays it out (`node_modules/@deepseek-ai/dsh`, with
    /// `dist/bin.js`), and an empty `node_modules/.bin` beside it.
    fn installed_package() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("node_modules/@deepseek-ai/dsh");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::write(
            package.join("package.json"),
            r#"{"name":"@deepseek-ai/dsh","version":"0.1.0-rc.8"}"#,
        )
        .unwrap();
        std::fs::write(package.join("dist/bin.js"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
        (dir, package)
    }

    #[test]
    fn the_package_is_found_through_the_launcher_link() {
        let (dir, package) = installed_package();
        let bin = dir.path().join("node_modules/.bin");
        dshkit_os::fs::symlink("../@deepseek-ai/dsh/dist/bin.js", bin.join("dsh")).unwrap();
        let (root, version) = package_of_launcher(&bin.join("dsh")).unwrap();
        assert_eq!(root, dshkit_os::fs::canonicalize(&package).unwrap());
        assert_eq!(version, "0.1.0-rc.8");
    }

    /// What npm's cmd-shim writes for a package's bin on Windows.
    const NPM_CMD_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\..\\@deepseek-ai\\dsh\\dist\\bin.js\" %*\r\n";

    #[test]
    fn a_windows_shim_or_script_runs_through_node_and_a_program_as_it_is() {
        let (dir, package) = installed_package();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::write(bin.join("dsh.cmd"), NPM_CMD_SHIM).unwrap();
        let node = bin.join("node.exe");
        std::fs::write(&node, "").unwrap();
        let windows = crate::Platform::Windows;
        let real = |p: &std::ffi::OsString| dshkit_os::fs::canonicalize(Path::new(p)).unwrap();
        let argv = launch_command_on(windows, &bin.join("dsh.cmd"), "".as_ref());
        assert_eq!(
            argv.iter().map(real).collect::<Vec<_>>(),
            [
                real(&node.into_os_string()),
                real(&package.join("dist/bin.js").into_os_string())
            ],
            "node.exe beside the shim runs the script the shim names"
        );
        let bin_js = package.join("dist/bin.js");
        let argv = launch_command_on(windows, &bin_js, "".as_ref());
        assert_eq!(Path::new(&argv[1]), bin_js, "DSH's script, run by node");
        // Off Windows a launcher is a program.
        let argv = launch_command_on(crate::Platform::Linux, &bin.join("dsh.cmd"), "".as_ref());
        assert_eq!(argv, [bin.join("dsh.cmd").into_os_string()]);
    }

    #[test]
    fn the_package_is_found_through_an_npm_cmd_shim() {
        let (dir, package) = installed_package();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::write(bin.join("dsh.cmd"), NPM_CMD_SHIM).unwrap();
        assert_eq!(
            launcher_script(&bin.join("dsh.cmd")),
            Some(dshkit_os::fs::canonicalize(package.join("dist/bin.js")).unwrap()),
            "the script the shim runs, not the shim"
        );
        let (root, version) = package_of_launcher(&bin.join("dsh.cmd")).unwrap();
        assert_eq!(root, dshkit_os::fs::canonicalize(&package).unwrap());
        assert_eq!(version, "0.1.0-rc.8");
    }
}
