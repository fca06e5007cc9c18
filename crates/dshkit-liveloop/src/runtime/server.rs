//! One server's record: its state and the watch on it, its bounded log, the
//! steps of getting ready, its process or static site, and its status for
//! callers; and the runtime's settings.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use super::failure::{FAILURE_LOG_TAIL, FailureCause, StartFailure};
use super::process::Spawned;
use super::spec::RunSpec;
use super::static_site::StaticSite;
use crate::preview::Ring;
use crate::progress::Progress;

/// How long a start may take to become ready (a first Next.js compile is slow).
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(90);

/// How long readiness waits on a server that answers with an error of its own
/// (HTTP 500, 501, 505 and up) for another answer before it takes that one as
/// ready: a page that fails to build answers so for good, and the verification
/// judges it. A 502, 503 or 504 says "not yet" and is waited on to the deadline.
pub const DEFAULT_ERROR_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Steps of getting ready a server records for progress reports.
pub(super) const MAX_READY_STEPS: usize = 8;

/// How long a stopped server gets between TERM and KILL.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(5);

/// Log lines kept per server (stdout and stderr together).
pub const DEFAULT_LOG_LINES: usize = 400;

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    Starting,
    Ready,
    /// The process ended on its own.
    Exited,
    /// It did not become ready in time, or could not be started; it was stopped.
    Failed,
    /// Stopped (owned) or released (adopted).
    Stopped,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogLine {
    pub stream: &'static str,
    pub text: String,
}

/// A server's state for callers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub id: String,
    /// Started by dshkit (stopped with it) or adopted (never stopped).
    pub owned: bool,
    pub dir: Option<PathBuf>,
    pub argv: Vec<String>,
    pub pid: Option<u32>,
    pub state: ServerState,
    pub url: Option<String>,
    /// Why this URL: where it was printed or probed.
    pub url_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// Why it never became ready, with the error the server printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<StartFailure>,
    pub uptime_ms: u128,
    /// A start of an identical profile found this server already running.
    pub reused: bool,
}

pub(super) struct Inner {
    pub(super) state: ServerState,
    pub(super) url: Option<url::Url>,
    pub(super) url_reason: Option<String>,
    pub(super) logged_urls: Vec<url::Url>,
    pub(super) logs: Ring<LogLine>,
    pub(super) exit_code: Option<i32>,
    pub(super) error: Option<String>,
    pub(super) failure: Option<StartFailure>,
    /// The last status an own URL answered while the server was not ready yet.
    pub(super) last_answer: Option<u16>,
}

pub(super) struct Server {
    pub(super) id: String,
    pub(super) owned: bool,
    pub(super) spec: Option<RunSpec>,
    pub(super) argv: Vec<String>,
    pub(super) pid: Option<u32>,
    pub(super) started: Instant,
    pub(super) inner: Mutex<Inner>,
    pub(super) state: watch::Sender<ServerState>,
    /// The steps of getting ready so far (the log's URL, the listening port, the
    /// HTTP answer; at most [`MAX_READY_STEPS`]), for callers reporting progress,
    /// and their count, which waiters watch.
    pub(super) steps: Mutex<Vec<String>>,
    pub(super) stage: watch::Sender<usize>,
    pub(super) process: tokio::sync::Mutex<Option<Spawned>>,
    pub(super) site: Mutex<Option<StaticSite>>,
}

impl Server {
    pub(super) fn status(&self, reused: bool) -> ServerStatus {
        let inner = self.inner.lock().expect("lock");
        ServerStatus {
            id: self.id.clone(),
            owned: self.owned,
            dir: self.spec.as_ref().map(|s| s.dir.clone()),
            argv: self.argv.clone(),
            pid: self.pid,
            state: inner.state,
            url: inner.url.as_ref().map(ToString::to_string),
            url_reason: inner.url_reason.clone(),
            exit_code: inner.exit_code,
            error: inner.error.clone(),
            failure: inner.failure.clone(),
            uptime_ms: self.started.elapsed().as_millis(),
            reused,
        }
    }

    pub(super) fn set_state(&self, state: ServerState, error: Option<String>) {
        let mut inner = self.inner.lock().expect("lock");
        inner.state = state;
        if error.is_some() {
            inner.error = error;
        }
        drop(inner);
        self.state.send_replace(state);
    }

    /// Records a step of getting ready.
    pub(super) fn step(&self, message: String) {
        let mut steps = self.steps.lock().expect("lock");
        if steps.len() < MAX_READY_STEPS {
            steps.push(message);
            self.stage.send_replace(steps.len());
        }
    }

    /// Reports the steps after the first `seen` to `progress`; returns how many there are.
    pub(super) fn report_steps(&self, seen: usize, progress: &Progress) -> usize {
        let steps = self.steps.lock().expect("lock");
        for step in steps.iter().skip(seen) {
            progress.stage(step);
        }
        steps.len()
    }

    pub(super) fn is_live(&self) -> bool {
        matches!(*self.state.borrow(), ServerState::Starting | ServerState::Ready)
    }

    pub(super) fn log_tail(&self, lines: usize) -> Vec<String> {
        let inner = self.inner.lock().expect("lock");
        let skip = inner.logs.len().saturating_sub(lines);
        inner
            .logs
            .iter()
            .skip(skip)
            .map(|l| format!("[{}] {}", l.stream, l.text))
            .collect()
    }

    /// The failure of a start that ended without a ready server, read from its log.
    pub(super) fn start_failure(&self, cause: FailureCause) -> StartFailure {
        let tail = self.log_tail(FAILURE_LOG_TAIL);
        let inner = self.inner.lock().expect("lock");
        StartFailure::from_log(cause, inner.logs.iter().map(|l| l.text.as_str()), tail)
    }

    /// Ends a start without a ready server: `state` (exited or failed), and why.
    pub(super) fn fail(&self, state: ServerState, failure: StartFailure) {
        let summary = failure.summary();
        self.inner.lock().expect("lock").failure = Some(failure);
        self.set_state(state, Some(summary));
    }
}

/// Runtime settings.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeConfig {
    pub ready_timeout: Duration,
    pub error_answer_wait: Duration,
    pub stop_grace: Duration,
    pub log_lines: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            ready_timeout: DEFAULT_READY_TIMEOUT,
            error_answer_wait: DEFAULT_ERROR_ANSWER_WAIT,
            stop_grace: DEFAULT_STOP_GRACE,
            log_lines: DEFAULT_LOG_LINES,
        }
    }
}
