//! The checks that run DSH: config assembly, an isolated live boot, the page smoke
//! in Chromium, and the shutdown proof.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use dshkit_os::process::{Group, Identity, StartTime, wait_exit};

use crate::report::{Check, Status};

/// Most output kept from `--dump-config` (256 KiB).
pub const MAX_DUMP_BYTES: usize = 256 * 1024;
/// Most stderr lines kept from a boot.
pub const MAX_STDERR_LINES: usize = 40;
/// Default time `--dump-config` may take.
pub const DEFAULT_DUMP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a boot may take to print its URL.
pub const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a booted instance is watched after its URL line (a URL can be printed
/// before a fatal error).
pub const BOOT_WATCH: Duration = Duration::from_millis(1500);
/// Stderr lines of a healthy boot that are not warnings about the plugin tree:
/// Node's notices of experimental features and its hint on how to trace them.
pub const STDERR_NOISE: &[&str] = &["ExperimentalWarning:", "(Use `node --trace-warnings"];

/// The URL of a `dsh web: http://…` line, wherever it stands in the line (a
/// launcher or a terminal may prefix it).
pub fn boot_url(line: &str) -> Option<&str> {
    let at = line.find("dsh web: ")?;
    line[at + "dsh web: ".len()..]
        .split_whitespace()
        .next()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
}

fn is_noise(line: &str) -> bool {
    STDERR_NOISE.iter().any(|noise| line.contains(noise)) || boot_url(line).is_some()
}

/// How to run DSH.
#[derive(Debug, Clone)]
pub struct Dsh {
    /// The `dsh` launcher.
    pub launcher: PathBuf,
    /// `PATH` for DSH (Node >= 22.19 first).
    pub path: std::ffi::OsString,
    pub home: PathBuf,
    /// `HOME` for DSH (an isolated one in tests).
    pub user_home: PathBuf,
}

impl Dsh {
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(&self.launcher);
        command
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.user_home)
            .env("DSH_HOME", &self.home)
            .env("DSH_TELEMETRY_DISABLED", "1")
            .stdin(Stdio::null());
        command
    }

    /// Starts `dsh args…` in a group of its own with stdout and stderr piped.
    fn spawn(&self, args: &[&str]) -> std::io::Result<(Child, Group)> {
        let mut command = self.command();
        command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        Group::prepare(&mut command);
        let mut child = command.spawn()?;
        match Group::adopt(child.id()) {
            Ok(group) => Ok((child, group)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }
}

/// Runs `dsh --profile P --dump-config` with a time limit and bounded output.
pub fn config_assembly(dsh: &Dsh, profile: &str, timeout: Duration) -> Check {
    let id = "config_assembly";
    let name = "Profile config assembles";
    let (mut child, group) = match dsh.spawn(&["--profile", profile, "--dump-config"]) {
        Ok(spawned) => spawned,
        Err(e) => {
            return Check::new(
                id,
                name,
                Status::NotTested,
                format!("could not run {}: {e}", dsh.launcher.display()),
            );
        }
    };
    let stdout = read_capped(child.stdout.take(), MAX_DUMP_BYTES);
    let stderr = read_capped(child.stderr.take(), 64 * 1024);
    let status = wait_timeout(&mut child, &group, timeout);
    let (out, err) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    match status {
        None => Check::new(
            id,
            name,
            Status::Fail,
            format!("--dump-config did not finish within {timeout:?}"),
        ),
        Some(status) if status.success() => {
            let entries = out.lines().filter(|l| l.starts_with("- id:")).count();
            Check::new(
                id,
                name,
                Status::Pass,
                format!(
                    "--dump-config composed {entries} loader entries ({} bytes)",
                    out.len()
                ),
            )
        }
        Some(status) => Check::new(
            id,
            name,
            Status::Fail,
            format!("--dump-config exited with {status}"),
        )
        .with_evidence(tail(&err, MAX_STDERR_LINES)),
    }
}

/// A booted DSH instance.
#[derive(Debug)]
pub struct Instance {
    pub child: Child,
    pub group: Group,
    pub url: String,
    pub pid: u32,
    /// The instance's start time ([`StartTime`]'s platform clock).
    pub start_ticks: u64,
}

/// Boots `dsh --profile P --port 0 --no-open` in its own process group and
/// watches it: the URL line must appear and the process must still be alive
/// `observe` later (a URL can be printed before a fatal error).
pub fn live_boot(
    dsh: &Dsh,
    profile: &str,
    boot_timeout: Duration,
    observe: Duration,
) -> (Check, Option<Instance>) {
    let id = "live_boot";
    let name = "Isolated boot";
    let (mut child, group) = match dsh.spawn(&["--profile", profile, "--port", "0", "--no-open"]) {
        Ok(spawned) => spawned,
        Err(e) => {
            return (
                Check::new(
                    id,
                    name,
                    Status::NotTested,
                    format!("could not run {}: {e}", dsh.launcher.display()),
                ),
                None,
            );
        }
    };
    let pid = child.id();
    let start_ticks = Identity::of(pid).map_or(0, |i| i.started.0);
    let (url_tx, url_rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let stdout_urls = url_tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = boot_url(&line) {
                let _ = stdout_urls.send(url.to_owned());
            }
        }
    });
    let (stderr, noise) = read_lines(child.stderr.take(), url_tx);
    let url = url_rx.recv_timeout(boot_timeout).ok();
    let failure = |child: &mut Child, detail: String| {
        terminate_group(child, &group);
        let lines = stderr.lock().map(|l| l.clone()).unwrap_or_default();
        (
            Check::new(id, name, Status::Fail, detail).with_evidence(lines),
            None,
        )
    };
    let Some(url) = url else {
        let exited = child.try_wait().ok().flatten();
        let detail = match exited {
            Some(status) => format!("DSH exited with {status} before printing its URL"),
            None => format!("DSH printed no URL within {boot_timeout:?}"),
        };
        return failure(&mut child, detail);
    };
    // Watch it for `observe`: an exit in that time is a failed boot.
    if let Some(status) = wait_exit(&mut child, observe) {
        return failure(
            &mut child,
            format!("DSH printed {url} but exited with {status} within {observe:?}"),
        );
    }
    let warnings: Vec<String> = stderr.lock().map(|l| l.clone()).unwrap_or_default();
    let noise = noise.load(std::sync::atomic::Ordering::Relaxed);
    let noise_note = if noise > 0 {
        format!(" ({noise} line(s) of known Node noise on stderr not counted)")
    } else {
        String::new()
    };
    let status = if warnings.is_empty() {
        Status::Pass
    } else {
        Status::Warn
    };
    let detail = if warnings.is_empty() {
        format!("booted at {url} and still alive after {observe:?}{noise_note}")
    } else {
        format!(
            "booted at {url} and still alive after {observe:?}; it wrote {} line(s) on stderr{noise_note}",
            warnings.len()
        )
    };
    (
        Check::new(id, name, status, detail).with_evidence(warnings),
        Some(Instance {
            child,
            group,
            url,
            pid,
            start_ticks,
        }),
    )
}

/// Sends SIGTERM to the instance's group, waits, sends it again; then the process
/// table, not the child's exit, decides whether the instance and its children are
/// gone. Nothing is killed here: survivors are named, and the run's leftover
/// audit removes them (they were leaked by this run).
pub fn shutdown(mut instance: Instance, grace: Duration) -> Check {
    let id = "shutdown";
    let name = "Clean shutdown";
    let leader = Identity {
        pid: instance.pid,
        started: StartTime(instance.start_ticks),
    };
    let mut before: Vec<Identity> = instance
        .group
        .members()
        .into_iter()
        .filter_map(Identity::of)
        .collect();
    for member in dshkit_os::process::tree(leader) {
        if !before.contains(&member) {
            before.push(member);
        }
    }
    for _ in 0..2 {
        instance.group.terminate();
        if wait_exit(&mut instance.child, grace).is_some() {
            break;
        }
    }
    let left = dshkit_os::process::wait_gone(before.clone(), grace);
    if left.is_empty() {
        let _ = instance.child.wait();
        return Check::new(
            id,
            name,
            Status::Pass,
            format!(
                "SIGTERM ended the instance and all {} process(es) of its group",
                before.len()
            ),
        );
    }
    let evidence = left
        .iter()
        .map(|p| format!("pid {}: {}", p.pid, dshkit_os::process::command_line(p.pid)))
        .collect();
    // Reap the instance whenever it dies (the audit kills it). The group goes
    // with it: on Windows, closing its job would kill the survivors now.
    let (mut child, group) = (instance.child, instance.group);
    std::thread::spawn(move || {
        let status = child.wait();
        drop(group);
        status
    });
    Check::new(
        id,
        name,
        Status::Fail,
        format!(
            "{} process(es) survived two SIGTERMs {grace:?} apart (the instance ignores SIGTERM or a child outlives it); the leftover audit removes them",
            left.len()
        ),
    )
    .with_evidence(evidence)
}

/// Kills the group of an instance that is still there (the last resort when the
/// audit could not run).
pub fn kill_instance_group(pid: u32, start_ticks: u64) {
    dshkit_os::process::kill_group_led_by(Identity {
        pid,
        started: StartTime(start_ticks),
    });
}

fn terminate_group(child: &mut Child, group: &Group) {
    group.kill();
    let _ = child.wait();
}

/// Waits up to `timeout` for `child` to exit, then kills its group.
fn wait_timeout(child: &mut Child, group: &Group, timeout: Duration) -> Option<std::process::ExitStatus> {
    let status = wait_exit(child, timeout);
    if status.is_none() {
        terminate_group(child, group);
    }
    status
}

fn read_capped(pipe: Option<impl Read + Send + 'static>, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let Some(mut pipe) = pipe else {
            return String::new();
        };
        let mut kept = Vec::new();
        let _ = (&mut pipe).take(cap as u64).read_to_end(&mut kept);
        let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// Stderr lines of a boot: the first [`MAX_STDERR_LINES`] that are not noise,
/// and the count of noise lines; a boot URL found there is sent on `urls`.
fn read_lines(
    pipe: Option<impl Read + Send + 'static>,
    urls: mpsc::Sender<String>,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let noise = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (sink, noise_count) = (std::sync::Arc::clone(&lines), std::sync::Arc::clone(&noise));
    std::thread::spawn(move || {
        let Some(pipe) = pipe else { return };
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Some(url) = boot_url(&line) {
                let _ = urls.send(url.to_owned());
            }
            if line.trim().is_empty() {
                continue;
            }
            if is_noise(&line) {
                noise_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                continue;
            }
            let mut lines = sink.lock().expect("lock");
            if lines.len() < MAX_STDERR_LINES {
                lines.push(line);
            }
        }
    });
    (lines, noise)
}

fn tail(text: &str, lines: usize) -> Vec<String> {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

/// The launcher's real script (`…/@deepseek-ai/dsh/lib/bin.js`), the identity of
/// DSH processes in the process table.
pub fn launcher_script(launcher: &Path) -> Option<PathBuf> {
    dshkit_env::dsh::launcher_script(launcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_url_is_found_anywhere_in_a_line() {
        assert_eq!(
            boot_url("dsh web: http://127.0.0.1:4000"),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(
            boot_url("[launcher] dsh web: http://127.0.0.1:4000 (ready)"),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(boot_url("dsh web: starting"), None);
        assert_eq!(boot_url("nothing here"), None);
    }

    #[test]
    fn node_notices_are_noise_and_plugin_messages_are_not() {
        assert!(is_noise(
            "(node:123) ExperimentalWarning: Type Stripping is an experimental feature"
        ));
        assert!(is_noise(
            "(Use `node --trace-warnings ...` to show where the warning was created)"
        ));
        assert!(!is_noise(
            "dsh: plugin tree failed to load: failed to import loader entry x"
        ));
        assert!(!is_noise(
            "(node:1) [DEP0128] DeprecationWarning: Invalid 'main' field"
        ));
    }
}
