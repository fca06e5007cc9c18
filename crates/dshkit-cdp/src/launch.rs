//! Launching Chromium: a fresh temporary profile, a group of its own, and a
//! binding so the browser cannot outlive dshkit even when dshkit is killed: the
//! parent-death signal on Linux, a watchdog on macOS, a kill-on-close Job
//! Object on Windows (`dshkit_os::process`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dshkit_os::process::Group;

use crate::error::CdpError;

/// Longest Chromium may take to print its DevTools endpoint.
pub const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of Chromium's stderr kept for error messages.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 40;

/// The flags every launch uses. Background networking, sync, component updates
/// and QUIC would otherwise reach out to the network at start; WebRTC may only
/// use proxied UDP, which there is none of.
pub const BASE_FLAGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    // No initial tab: every page is made in a context of our own, and the
    // browser answers its first command about 0.25 s sooner without one.
    "--no-startup-window",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    // Browser-side services that phone home through a context's proxy (form
    // autofill fetches field types when a page has a form; Chromium 148 opens a
    // connection to its default search engine in every new context, and asks
    // www.google.com/async/folae whether its AI mode is available) and would
    // show up as blocked requests of the page. RenderDocument makes a new frame
    // host for every document: without it a same-site navigation keeps its frame,
    // as Playwright launches Chromium, and reaches DOMContentLoaded about 7 ms
    // sooner here (27 -> 19-21 ms with the preview's observation on).
    "--disable-features=AutofillServerCommunication,OptimizationHints,MediaRouter,Translate,PreconnectToSearch,SearchEnginePreconnect2,AimEnabled,RenderDocument",
    // A screenshot waits for a new surface of the page instead of forcing a
    // redraw through the whole pipeline: still a frame made after the request
    // (so never a stale image), in about 30 ms instead of 48 here. Playwright
    // launches with it by default.
    "--enable-features=CDPScreenshotNewSurface",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// How to launch.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// The executable; found like `dshkit doctor` finds it when `None`.
    pub executable: Option<PathBuf>,
    /// Extra flags after [`BASE_FLAGS`]; a feature list (`--enable-features=`,
    /// `--disable-features=`) is merged into the launch's own.
    pub extra_args: Vec<String>,
    /// Defaults to [`DEFAULT_LAUNCH_TIMEOUT`].
    pub launch_timeout: Option<Duration>,
}

/// A launched browser process. Dropping it kills the browser's whole process
/// group, reaps it and removes the temporary profile.
#[derive(Debug)]
pub struct BrowserProcess {
    child: Child,
    group: Group,
    profile: Option<tempfile::TempDir>,
    pub(crate) ws_url: String,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl BrowserProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary profile directory (unique to this launch).
    pub fn profile_dir(&self) -> Option<&std::path::Path> {
        self.profile.as_ref().map(tempfile::TempDir::path)
    }

    /// The browser's DevTools WebSocket endpoint.
    pub fn ws_url(&self) -> &str {
        &self.ws_url
    }

    /// Whether the browser process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// How the browser ended, waiting for it up to `limit` (blocking); `None` if
    /// it still runs then. Dropping the process afterwards kills what is left.
    fn exit_status(mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        dshkit_os::process::wait_exit(&mut self.child, limit)
    }

    /// The last lines Chromium printed on stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .expect("tail lock")
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        self.group.kill();
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(profile) = self.profile.take() {
            // Chromium's helpers may still be closing files: retry (bounded) until
            // the profile is gone.
            let path = profile.keep();
            let deadline = std::time::Instant::now() + PROFILE_REMOVAL;
            let mut pause = Duration::from_millis(5);
            while std::fs::remove_dir_all(&path).is_err()
                && path.exists()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
        }
    }
}

/// The name prefix of every launch's temporary profile directory.
pub const PROFILE_PREFIX: &str = "dshkit-chromium-";

/// How many stale profiles one launch removes at most: the sweep stays cheap.
const MAX_SWEPT: usize = 16;

/// A profile without a lock this old is stale, not one being launched.
const UNLOCKED_PROFILE_AGE: Duration = Duration::from_mins(1);

/// Removes profiles that killed owners left behind in `temp`. An owner killed with
/// SIGKILL takes its Chromium with it (the parent-death signal), but nothing of
/// it survives to remove the profile; the next launch does. A profile is stale when
/// Chromium's `SingletonLock` (`host-PID`), or else the launch's own
/// [`BROWSER_PID_FILE`], names a process that is gone, or when it has neither and
/// is older than [`UNLOCKED_PROFILE_AGE`].
pub fn sweep_stale_profiles(temp: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return 0;
    };
    let mut swept = 0;
    for entry in entries.flatten() {
        if swept == MAX_SWEPT {
            break;
        }
        let is_profile = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(PROFILE_PREFIX));
        if !is_profile || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let chromium_lock = std::fs::read_link(path.join("SingletonLock")).ok().map(|lock| {
            lock.to_str()
                .and_then(|l| l.rsplit_once('-'))
                .and_then(|(_, pid)| pid.parse::<u32>().ok())
        });
        let owner = chromium_lock.or_else(|| {
            std::fs::read_to_string(path.join(BROWSER_PID_FILE))
                .ok()
                .map(|pid| pid.trim().parse::<u32>().ok())
        });
        let stale = match owner {
            Some(pid) => pid.is_some_and(|pid| !running(pid)),
            None => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > UNLOCKED_PROFILE_AGE),
        };
        if stale && std::fs::remove_dir_all(&path).is_ok() {
            swept += 1;
        }
    }
    swept
}

/// Whether `pid` is a running process (a zombie is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
    })
}

/// The file in a profile that holds its browser's process id.
pub(crate) const BROWSER_PID_FILE: &str = "dshkit-browser.pid";

/// The profile's subdirectory Chromium gets as its `TMPDIR`.
pub const PROFILE_TEMP: &str = "tmp";

/// How long removing a closed browser's profile is retried.
const PROFILE_REMOVAL: Duration = Duration::from_secs(2);

/// How many times a browser that crashed before it was ready is started again.
/// Chromium 148 died of SIGSEGV before it printed its endpoint in 1 of 1,300
/// bare starts here (and once in a CI run); a fresh start succeeds. A browser that
/// exits with a status of its own (a bad flag, a missing library) is not retried.
pub(crate) const CRASH_RETRIES: u32 = 2;

/// How long a browser whose output has closed gets to finish exiting, so that the
/// error can name how it ended.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(2);

/// Starts Chromium and waits for its DevTools endpoint, starting it again (with a
/// fresh profile) when it crashed on the way.
pub(crate) async fn launch(options: &LaunchOptions) -> Result<BrowserProcess, CdpError> {
    let executable = executable(options)?;
    let mut starts = 1;
    loop {
        let mut started = start(&executable, options).await;
        if let Err(CdpError::EarlyExit { starts: made, .. }) = &mut started {
            *made = starts;
        }
        match started {
            Err(CdpError::EarlyExit {
                crashed: true,
                status,
                ..
            }) if starts <= CRASH_RETRIES => {
                tracing::warn!(%status, starts, "Chromium crashed while starting; starting it again");
                starts += 1;
            }
            other => return other,
        }
    }
}

fn executable(options: &LaunchOptions) -> Result<PathBuf, CdpError> {
    Ok(match &options.executable {
        Some(path) => path.clone(),
        None => match dshkit_env::locate::chromium(&dshkit_env::Environment::from_process()) {
            dshkit_env::locate::Lookup::Found(found) => found.path,
            dshkit_env::locate::Lookup::BadVariable { variable, value } => {
                return Err(CdpError::NoBrowser(format!(
                    "{variable}={} is not an executable",
                    value.display()
                )));
            }
            dshkit_env::locate::Lookup::NotFound => {
                return Err(CdpError::NoBrowser(
                    "install it (apt-get install -y chromium-headless-shell, or chromium) or set DSHKIT_CHROMIUM; `dshkit doctor` shows the details".into(),
                ));
            }
        },
    })
}

/// Switches whose value is a list of features. Chromium reads only the last of
/// each, so the lists of [`BASE_FLAGS`] and of the extra flags are merged.
const FEATURE_LIST_SWITCHES: [&str; 2] = ["--enable-features=", "--disable-features="];

/// [`BASE_FLAGS`], then `extra`, with each feature list switch given once: an
/// extra `--enable-features=X` adds X instead of dropping the features dshkit
/// launches with.
fn flags(extra: &[String]) -> Vec<String> {
    let mut merged: [Vec<&str>; 2] = Default::default();
    let mut flags = Vec::with_capacity(BASE_FLAGS.len() + extra.len());
    for flag in BASE_FLAGS.iter().copied().chain(extra.iter().map(String::as_str)) {
        let list = FEATURE_LIST_SWITCHES
            .iter()
            .zip(merged.iter_mut())
            .find_map(|(switch, merged)| flag.strip_prefix(switch).map(|value| (value, merged)));
        match list {
            Some((value, merged)) => {
                for feature in value.split(',').filter(|feature| !feature.is_empty()) {
                    if !merged.contains(&feature) {
                        merged.push(feature);
                    }
                }
            }
            None => flags.push(flag.to_owned()),
        }
    }
    for (switch, features) in FEATURE_LIST_SWITCHES.iter().zip(merged) {
        if !features.is_empty() {
            flags.push(format!("{switch}{}", features.join(",")));
        }
    }
    flags
}

/// One start: a fresh profile, the process, and its endpoint from its output.
async fn start(executable: &std::path::Path, options: &LaunchOptions) -> Result<BrowserProcess, CdpError> {
    sweep_stale_profiles(&std::env::temp_dir());
    let profile = tempfile::Builder::new()
        .prefix(PROFILE_PREFIX)
        .tempdir()
        .map_err(CdpError::Profile)?;
    // Chromium's own temporary files (its singleton socket directory, which a
    // killed browser never removes) go inside the profile, so removing the
    // profile removes everything this launch made.
    let temp = profile.path().join(PROFILE_TEMP);
    std::fs::create_dir(&temp).map_err(CdpError::Profile)?;
    let mut command = Command::new(executable);
    command
        .args(flags(&options.extra_args))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .env("TMPDIR", &temp);
    if dshkit_os::process::running_as_root() {
        // Chromium refuses to run as root with its sandbox on.
        command.arg("--no-sandbox");
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());

    let (mut child, group) = spawn_on_launcher(command).map_err(|source| CdpError::Spawn {
        path: executable.display().to_string(),
        source,
    })?;
    // Names the browser for the sweep of a killed owner's profile: the headless
    // shell makes no `SingletonLock` of its own. Written once the process exists;
    // a profile without it is judged by its age.
    std::fs::write(profile.path().join(BROWSER_PID_FILE), child.id().to_string())
        .map_err(CdpError::Profile)?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(DEFAULT_STDERR_TAIL_LINES)));
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<String, ()>>();
    let reader_tail = Arc::clone(&tail);
    std::thread::Builder::new()
        .name("chromium-stderr".into())
        .spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(Ok(url.trim().to_owned()));
                    }
                    continue;
                }
                let mut tail = reader_tail.lock().expect("tail lock");
                if tail.len() == DEFAULT_STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            if let Some(tx) = tx.take() {
                let _ = tx.send(Err(()));
            }
        })
        .map_err(|source| CdpError::Spawn {
            path: executable.display().to_string(),
            source,
        })?;

    let mut process = BrowserProcess {
        child,
        group,
        profile: Some(profile),
        ws_url: String::new(),
        stderr_tail: tail,
    };
    let timeout = options.launch_timeout.unwrap_or(DEFAULT_LAUNCH_TIMEOUT);
    match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(Ok(url))) => {
            process.ws_url = url;
            Ok(process)
        }
        Ok(_) => {
            let output = process.stderr_tail();
            let status = tokio::task::spawn_blocking(move || process.exit_status(EXIT_STATUS_WAIT))
                .await
                .ok()
                .flatten();
            Err(CdpError::EarlyExit {
                status: status.map_or_else(
                    || "still running after its output closed".to_owned(),
                    |s| s.to_string(),
                ),
                crashed: status.is_some_and(crashed),
                starts: 1,
                output,
            })
        }
        Err(_) => Err(CdpError::LaunchTimeout(timeout)),
    }
}

/// Whether an exit status is a crash: a signal on Unix, an NTSTATUS error code
/// (`0xC...`) on Windows.
fn crashed(status: std::process::ExitStatus) -> bool {
    match status.code() {
        None => true,
        Some(code) => cfg!(windows) && code < 0,
    }
}

type LaunchRequest = (Command, std_mpsc::Sender<std::io::Result<(Child, Group)>>);

/// Spawns on one long-lived thread: Linux delivers the parent-death signal when
/// the *thread* that forked the child exits, so a pool thread would kill the
/// browser when it idles out.
fn spawn_on_launcher(command: Command) -> std::io::Result<(Child, Group)> {
    static LAUNCHER: OnceLock<Mutex<std_mpsc::Sender<LaunchRequest>>> = OnceLock::new();
    let sender = LAUNCHER.get_or_init(|| {
        let (tx, rx) = std_mpsc::channel::<LaunchRequest>();
        std::thread::Builder::new()
            .name("dshkit-launcher".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(spawn_dying_with_parent(&mut command));
                }
            })
            .expect("spawn the launcher thread");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = std_mpsc::channel();
    sender
        .lock()
        .expect("launcher lock")
        .send((command, reply_tx))
        .map_err(|_| std::io::Error::other("launcher thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("launcher thread is gone"))?
}

/// Spawns `command` in a group of its own, bound to dshkit's lifetime.
fn spawn_dying_with_parent(command: &mut Command) -> std::io::Result<(Child, Group)> {
    Group::prepare(command);
    let by_signal = dshkit_os::process::die_with_spawning_thread(command);
    let mut child = command.spawn()?;
    let adopted = Group::adopt(child.id()).and_then(|mut group| {
        if !by_signal {
            group.bind_to_dshkit()?;
        }
        Ok(group)
    });
    match adopted {
        Ok(group) => Ok((child, group)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switch<'a>(flags: &'a [String], prefix: &str) -> Vec<&'a str> {
        flags
            .iter()
            .filter_map(|flag| flag.strip_prefix(prefix))
            .collect()
    }

    #[test]
    fn extra_feature_lists_are_merged_into_the_launch_lists() {
        let flags = flags(&[
            "--enable-features=WebMCPTesting,CDPScreenshotNewSurface".into(),
            "--disable-features=PaintHolding".into(),
            "--window-size=800,600".into(),
        ]);
        assert_eq!(
            switch(&flags, "--enable-features="),
            ["CDPScreenshotNewSurface,WebMCPTesting"]
        );
        let disabled = switch(&flags, "--disable-features=");
        assert_eq!(disabled.len(), 1, "{flags:?}");
        assert!(
            disabled[0].starts_with("AutofillServerCommunication,"),
            "{disabled:?}"
        );
        assert!(disabled[0].ends_with(",PaintHolding"), "{disabled:?}");
        assert!(flags.contains(&"--window-size=800,600".to_owned()));
        assert!(flags.contains(&"--headless".to_owned()));
    }

    #[test]
    fn without_extra_flags_the_launch_lists_are_kept_as_they_are() {
        let flags = flags(&[]);
        assert_eq!(switch(&flags, "--enable-features="), ["CDPScreenshotNewSurface"]);
        let base_disabled = BASE_FLAGS
            .iter()
            .find_map(|flag| flag.strip_prefix("--disable-features="))
            .unwrap();
        assert_eq!(switch(&flags, "--disable-features="), [base_disabled]);
        assert_eq!(flags.len(), BASE_FLAGS.len());
    }
}
