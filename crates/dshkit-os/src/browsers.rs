//! Where Chromium-family browsers are installed on this platform, in order of
//! preference (Chromium's headless shell, Chromium, Chrome, then Edge).

use std::ffi::OsString;
use std::path::PathBuf;

/// How to install a Chromium-family browser on this platform, for a fix line.
#[cfg(target_os = "linux")]
pub const CHROMIUM_INSTALL_HINT: &str = "apt-get update && apt-get install -y chromium-headless-shell (or chromium; as root), or set DSHKIT_CHROMIUM=/path/to/chromium";
/// How to install a Chromium-family browser on this platform, for a fix line.
#[cfg(target_os = "macos")]
pub const CHROMIUM_INSTALL_HINT: &str =
    "brew install --cask chromium, or set DSHKIT_CHROMIUM=/path/to/chrome";
/// How to install a Chromium-family browser on this platform, for a fix line.
#[cfg(windows)]
pub const CHROMIUM_INSTALL_HINT: &str =
    r"install Google Chrome or Microsoft Edge, or set DSHKIT_CHROMIUM=C:\path\to\chrome.exe";

/// The install paths to try. `var` reads an environment variable: Windows
/// installs live under `%ProgramFiles%`, `%ProgramFiles(x86)%` and, per user,
/// `%LOCALAPPDATA%`; a macOS user may install under `~/Applications`.
///
/// On Linux, Chromium's headless shell (Debian's `chromium-headless-shell`)
/// comes first: a preview never shows a window, and the shell, built for
/// exactly that, loads and paints sooner. With the same flags, on this 2-core
/// machine, `cargo xtask bench browser` took 151 ms for the navigate →
/// snapshot → click → screenshot sequence against 192 ms with the full browser,
/// and a fresh `dshkit mcp` answered its first `open` in 308 ms against 639 ms.
/// Its `/usr/bin` launcher does not exec (the browser would outlive a kill of
/// the launcher), so only the binary itself is a candidate.
///
/// Then the browser binaries come before the shell launchers in `/usr/bin`
/// that exec them: Debian's launcher forks `uname`, `grep`, `findmnt`, `ls` and
/// `tr` and sources its flag files on every start: 6-18 ms more to the DevTools
/// endpoint here when idle (p50 of 30 starts each), 26-60 ms beside two CPU hogs.
/// It also adds flags (extension loading, GPU rasterization) a headless preview
/// does not want.
pub fn chromium_candidates(var: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        let _ = var;
        [
            "/usr/lib/chromium/chromium-headless-shell",
            "/usr/lib/chromium/chromium",
            "/usr/bin/chromium",
            "/usr/lib/chromium-browser/chromium-browser",
            "/usr/bin/chromium-browser",
            "/snap/bin/chromium",
            "/opt/google/chrome/chrome",
            "/usr/bin/google-chrome",
            "/usr/bin/google-chrome-stable",
            "/opt/microsoft/msedge/msedge",
            "/usr/bin/microsoft-edge",
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect()
    }
    #[cfg(target_os = "macos")]
    {
        let apps = [
            "Chromium.app/Contents/MacOS/Chromium",
            "Google Chrome.app/Contents/MacOS/Google Chrome",
            "Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
        ];
        let mut roots = vec![PathBuf::from("/Applications")];
        roots.extend(var("HOME").map(|home| PathBuf::from(home).join("Applications")));
        apps.iter()
            .flat_map(|app| roots.iter().map(move |root| root.join(app)))
            .collect()
    }
    #[cfg(windows)]
    {
        let installs = [
            r"Chromium\Application\chrome.exe",
            r"Google\Chrome\Application\chrome.exe",
            r"Microsoft\Edge\Application\msedge.exe",
        ];
        let mut roots: Vec<PathBuf> = ["ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"]
            .iter()
            .filter_map(|name| var(name).map(PathBuf::from))
            .collect();
        if roots.is_empty() {
            roots = vec![
                PathBuf::from(r"C:\Program Files"),
                PathBuf::from(r"C:\Program Files (x86)"),
            ];
        }
        installs
            .iter()
            .flat_map(|install| roots.iter().map(move |root| root.join(install)))
            .collect()
    }
}

/// The file names a program `name` may have on `PATH`: itself on Unix; with
/// Windows's executable extensions first there.
pub fn executable_names(name: &str) -> Vec<String> {
    #[cfg(unix)]
    {
        vec![name.to_owned()]
    }
    #[cfg(windows)]
    {
        [".exe", ".cmd", ".bat", ""]
            .iter()
            .map(|suffix| format!("{name}{suffix}"))
            .collect()
    }
}
