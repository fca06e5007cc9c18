//! The checks that run DSH: config assembly, an isolated live boot, the page smoke
//! in Chromium, and the shutdown proof.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dshkit_os::process::{Group, Identity, POLL, StartTime, wait_exit};

pub use crate::boot_output::{BootStderr, MAX_ERROR_BLOCK_LINES, MAX_STDERR_LINES, STDERR_NOISE};
use crate::report::{Check, Status};

/// Most output kept from `--dump-config` (256 KiB).
pub const MAX_DUMP_BYTES: usize = 256 * 1024;
/// Default time `--dump-config` may take.
pub const DEFAULT_DUMP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a boot may take to print its URL.
pub const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a booted instance is watched after its URL line (a URL can be printed
/// before a fatal error).
pub const BOOT_WATCH: Duration = Duration::from_millis(1500);

/// The URL of a `dsh web: http://…` line, wherever it stands in the line (a
/// launcher or a terminal may prefix it).
pub fn boot_url(line: &str) -> Option<&str> {
    let at = line.find("dsh web: ")?;
    line[at + "dsh web: ".len()..]
        .split_whitespace()
        .next()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
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
    /// The launcher with the environment a child of dshkit inherits
    /// ([`dshkit_env::inherit`]: the host's, less `DSH_*` and credential-shaped
    /// names), then `PATH`, `HOME` and DSH's own variables set for this run.
    pub(crate) fn command(&self) -> Command {
        // On Windows a `dsh.cmd` shim or DSH's script runs as `node <script>`.
        let argv = dshkit_env::dsh::launch_command(&self.launcher, &self.path);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        dshkit_env::inherit::inherit(&mut command)
            .env("PATH", &self.path)
            .env("HOME", &self.user_home)
            .env("DSH_HOME", &self.home)
            .env("DSH_TELEMETRY_DISABLED", "1")
            .stdin(Stdio::null());
        command
    }

    /// The check `id` not tested because the launcher could not be started.
    pub(crate) fn not_started(&self, id: &'static str, name: &'static str, error: &std::io::Error) -> Check {
        Check::new(
            id,
            name,
            Status::NotTested,
            format!("could not run {}: {error}", self.launcher.display()),
        )
    }

    /// Starts `dsh args…` in a group of its own with stdout and stderr piped.
    fn spawn(&self, args: &[&str]) -> std::io::Result<(Child, Group)> {
        self.spawn_with(args, |_| {})
    }

    /// [`spawn`](Self::spawn), with the command adjusted by `configure` first.
    pub(crate) fn spawn_with(
        &self,
        args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> std::io::Result<(Child, Group)> {
        let mut command = self.command();
        command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        configure(&mut command);
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
            return dsh.not_started(id, name, &e);
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

/// What a reader of DSH's output tells the boot.
enum Output {
    /// A `dsh web: URL` line.
    Url(String),
    /// The pipe reached its end.
    Closed,
}

/// How the wait for the URL line ended.
enum Wait {
    Url(String),
    Exited(ExitStatus),
    /// Both outputs closed, and DSH was still running at the deadline.
    ClosedOutputs,
    TimedOut,
}

/// Boots `dsh --profile P --port 0 --no-open` in its own process group and
/// watches it: the URL line must appear and the process must still be alive
/// `observe` later (a URL can be printed before a fatal error). An exit before
/// the deadline is reported as an exit, with its status and DSH's first error
/// block, never as a timeout.
pub fn live_boot(
    dsh: &Dsh,
    profile: &str,
    boot_timeout: Duration,
    observe: Duration,
) -> (Check, Option<Instance>) {
    let id = "live_boot";
    let name = "Isolated boot";
    let started = Instant::now();
    let (mut child, group) = match dsh.spawn(&["--profile", profile, "--port", "0", "--no-open"]) {
        Ok(spawned) => spawned,
        Err(e) => {
            return (dsh.not_started(id, name, &e), None);
        }
    };
    let pid = child.id();
    let start_ticks = Identity::of(pid).map_or(0, |i| i.started.0);
    let (events_tx, events) = mpsc::channel();
    read_stdout(child.stdout.take(), events_tx.clone());
    let stderr = read_stderr(child.stderr.take(), events_tx);
    let mut open = 2;
    let waited = wait_for_url(&mut child, &events, &mut open, started + boot_timeout);
    // A failed boot: its group goes, then what DSH wrote is read to its end.
    let mut fail = |child: &mut Child, describe: &dyn Fn(Option<String>) -> String| {
        terminate_group(child, &group);
        let printed = drain(&events, &mut open);
        let stderr = stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let (evidence, note) = stderr.failure_evidence();
        let header = stderr
            .error_block()
            .first()
            .map(|line| format!(": {}", bounded(line, MAX_DETAIL_LINE_CHARS)))
            .unwrap_or_default();
        let detail = format!("{}{header} (evidence: {note})", describe(printed));
        (
            Check::new(id, name, Status::Fail, detail).with_evidence(evidence),
            None,
        )
    };
    let after = || format!("{:.1}s", started.elapsed().as_secs_f64());
    let url = match waited {
        Wait::Url(url) => url,
        Wait::Exited(status) => {
            let after = after();
            // The URL line may still be in the pipe when the exit is seen.
            return fail(&mut child, &|printed| match printed {
                Some(url) => format!("DSH printed {url} but exited ({status}) {after} after it started"),
                None => format!("DSH exited ({status}) {after} after it started, before printing its URL"),
            });
        }
        Wait::ClosedOutputs => {
            return fail(&mut child, &|_| {
                format!(
                    "DSH closed its stdout and stderr without printing a URL and was still running {boot_timeout:?} after it started"
                )
            });
        }
        Wait::TimedOut => {
            return fail(&mut child, &|_| {
                format!("DSH printed no URL within {boot_timeout:?} and was still running")
            });
        }
    };
    // Watch it for `observe`: an exit in that time is a failed boot.
    if let Some(status) = wait_exit(&mut child, observe) {
        return fail(&mut child, &|_| {
            format!("DSH printed {url} but exited ({status}) within {observe:?}")
        });
    }
    let stderr = stderr.lock().map(|s| s.clone()).unwrap_or_default();
    let warnings = stderr.first_lines().to_vec();
    let noise = stderr.noise_count();
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
            stderr.line_count()
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

/// Most characters of DSH's error line quoted in a detail.
const MAX_DETAIL_LINE_CHARS: usize = 400;
/// Most time the rest of DSH's output is read after its group is gone (a
/// process outside the group could hold the pipes open).
const MAX_DRAIN: Duration = Duration::from_secs(2);

/// Waits for the first of: a URL line, DSH's exit, both outputs closed, the
/// deadline. The outputs closing is not an answer by itself: a process closes
/// them as it exits, before its exit can be read, so DSH's exit is waited for.
fn wait_for_url(
    child: &mut Child,
    events: &mpsc::Receiver<Output>,
    open: &mut usize,
    deadline: Instant,
) -> Wait {
    loop {
        let now = Instant::now();
        match events.recv_timeout(POLL.min(deadline.saturating_duration_since(now))) {
            Ok(Output::Url(url)) => return Wait::Url(url),
            Ok(Output::Closed) => *open = open.saturating_sub(1),
            Err(_) => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Wait::Exited(status);
        }
        if *open == 0 {
            return match wait_exit(child, deadline.saturating_duration_since(Instant::now())) {
                Some(status) => Wait::Exited(status),
                None => Wait::ClosedOutputs,
            };
        }
        if Instant::now() >= deadline {
            return Wait::TimedOut;
        }
    }
}

/// Reads DSH's outputs to their end (at most [`MAX_DRAIN`]); the URL line
/// among them, if one was still unread.
fn drain(events: &mpsc::Receiver<Output>, open: &mut usize) -> Option<String> {
    let until = Instant::now() + MAX_DRAIN;
    let mut url = None;
    while *open > 0 {
        match events.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Output::Url(found)) => url = url.or(Some(found)),
            Ok(Output::Closed) => *open -= 1,
            Err(_) => break,
        }
    }
    url
}

fn bounded(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// Asks the instance's group to stop (SIGTERM; Ctrl-Break on Windows), waits,
/// asks again; then the process table, not the child's exit, decides whether the
/// instance and its children are gone. Nothing is killed here: survivors are
/// named, and the run's leftover audit removes them (they were leaked by this
/// run). Where the group cannot be asked (Windows, the instance not on dshkit's
/// console) its end proves nothing: the check is not tested, never a pass.
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
    let request = Group::STOP_REQUEST;
    for _ in 0..2 {
        if !instance.group.terminate() {
            // The group could not be asked, so it was ended outright.
            let _ = instance.child.wait();
            let left = dshkit_os::process::wait_gone(before, grace);
            return Check::new(
                id,
                name,
                Status::NotTested,
                format!(
                    "no {request} could reach the instance (it is not on dshkit's console), so its job was ended instead, which proves nothing about a clean shutdown{}",
                    if left.is_empty() {
                        String::new()
                    } else {
                        format!("; {} process(es) outlived the job", left.len())
                    }
                ),
            );
        }
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
                "{request} ended the instance and all {} process(es) of its group",
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
            "{} process(es) survived two {request}s {grace:?} apart (the instance ignores {request} or a child outlives it); the leftover audit removes them",
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

pub(crate) fn read_capped(
    pipe: Option<impl Read + Send + 'static>,
    cap: usize,
) -> std::thread::JoinHandle<String> {
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

/// Reads a boot's stdout for its URL line; sends it on `events`, and the end of
/// the pipe too.
fn read_stdout(pipe: Option<impl Read + Send + 'static>, events: mpsc::Sender<Output>) {
    std::thread::spawn(move || {
        if let Some(pipe) = pipe {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = boot_url(&line) {
                    let _ = events.send(Output::Url(url.to_owned()));
                }
            }
        }
        let _ = events.send(Output::Closed);
    });
}

/// Reads a boot's stderr into a [`BootStderr`]; a boot URL found there is sent
/// on `events`, and the end of the pipe too.
fn read_stderr(
    pipe: Option<impl Read + Send + 'static>,
    events: mpsc::Sender<Output>,
) -> std::sync::Arc<std::sync::Mutex<BootStderr>> {
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(BootStderr::default()));
    let sink = std::sync::Arc::clone(&stderr);
    std::thread::spawn(move || {
        if let Some(pipe) = pipe {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let url = boot_url(&line);
                if let Some(url) = url {
                    let _ = events.send(Output::Url(url.to_owned()));
                }
                sink.lock().expect("lock").push(&line, url.is_some());
            }
        }
        let _ = events.send(Output::Closed);
    });
    stderr
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
        let mut stderr = BootStderr::default();
        for line in [
            "(node:123) ExperimentalWarning: Type Stripping is an experimental feature",
            "(Use `node --trace-warnings ...` to show where the warning was created)",
            "dsh: plugin tree failed to load: failed to import loader entry x",
            "(node:1) [DEP0128] DeprecationWarning: Invalid 'main' field",
        ] {
            stderr.push(line, false);
        }
        stderr.push("dsh web: http://127.0.0.1:4000", true);
        assert_eq!(stderr.noise_count(), 2);
        assert_eq!(stderr.first_lines().len(), 2, "{stderr:#?}");
        assert!(stderr.first_lines()[1].contains("DEP0128"));
    }
}
