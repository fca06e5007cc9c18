//! Opening a file in the person's web browser: `$BROWSER` when it is set (the
//! convention `xdg-open`, `git web--browse` and Python's `webbrowser` share: a
//! `:`-separated list of commands, `%s` standing for the location), else the
//! platform's own opener (`xdg-open` on Linux, `open` on macOS, `explorer` on
//! Windows). No shell runs: each command is split on whitespace and given the
//! location as one argument.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest an opener may take to hand the location to the browser and exit.
pub const OPENER_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a running opener is looked at.
const OPENER_POLL: Duration = Duration::from_millis(20);

/// Why a location could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "no browser could be started ({tried}): set BROWSER to your browser's command, or open {location} yourself"
    )]
    NoOpener { tried: String, location: String },
    #[error("{command} {location} exited with {status}: open {location} yourself")]
    Failed {
        command: String,
        location: String,
        status: String,
    },
    #[error("{command} did not exit within {}s: open {location} yourself", OPENER_TIMEOUT.as_secs())]
    TimedOut { command: String, location: String },
}

/// Opens `path` in the person's browser and returns the command that did it.
/// The opener is waited for (bounded): a browser it starts is the person's
/// and keeps running.
pub fn in_browser(path: &Path) -> Result<String, OpenError> {
    let location = path.display().to_string();
    let commands = openers(std::env::var("BROWSER").ok().as_deref());
    let mut tried = Vec::new();
    for argv in commands {
        let mut argv = argv;
        if argv.iter().any(|a| a.contains("%s")) {
            argv = argv.iter().map(|a| a.replace("%s", &location)).collect();
        } else {
            argv.push(location.clone());
        }
        let shown = argv[0].clone();
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            tried.push(shown);
            continue;
        };
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(shown),
                Ok(Some(status)) => {
                    return Err(OpenError::Failed {
                        command: shown,
                        location,
                        status: status.to_string(),
                    });
                }
                Ok(None) if started.elapsed() < OPENER_TIMEOUT => std::thread::sleep(OPENER_POLL),
                Ok(None) | Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(OpenError::TimedOut {
                        command: shown,
                        location,
                    });
                }
            }
        }
    }
    Err(OpenError::NoOpener {
        tried: tried.join(", "),
        location,
    })
}

/// The commands to try, in order: each of `$BROWSER`'s, then the platform's.
fn openers(browser: Option<&str>) -> Vec<Vec<String>> {
    let separator = if cfg!(windows) { ';' } else { ':' };
    let mut commands: Vec<Vec<String>> = browser
        .unwrap_or_default()
        .split(separator)
        .map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|argv| !argv.is_empty())
        .collect();
    let platform = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    commands.push(vec![platform.to_owned()]);
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_commands_come_first_split_without_a_shell() {
        let sep = if cfg!(windows) { ";" } else { ":" };
        let commands = openers(Some(&format!("firefox --new-tab %s{sep}{sep}chromium")));
        assert_eq!(commands[0], ["firefox", "--new-tab", "%s"]);
        assert_eq!(commands[1], ["chromium"]);
        assert_eq!(commands.len(), 3, "then the platform's opener: {commands:?}");
        assert_eq!(openers(None).len(), 1);
    }
}
