//! The dev-server runtime: start (or adopt) the app a detection found, know when it
//! is ready, keep bounded logs, and stop the whole process tree. A foreign process
//! is never stopped; only argv built by the detector is ever run.

mod error;
pub mod failure;
mod process;
mod readiness;
pub mod ready;
mod server;
mod spec;
pub mod static_site;

pub use error::RuntimeError;
pub use server::{
    DEFAULT_ERROR_ANSWER_WAIT, DEFAULT_LOG_LINES, DEFAULT_READY_TIMEOUT, DEFAULT_STOP_GRACE, LogLine,
    RuntimeConfig, ServerState, ServerStatus,
};
use server::{Inner, Server};
pub use spec::RunSpec;

use crate::progress::Progress;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use crate::detect::Framework;
use crate::preview::Ring;
use failure::FailureCause;
use static_site::StaticSite;

/// Longest log line kept (bytes); longer lines are cut and say so.
pub const MAX_LOG_LINE: usize = 2000;
/// Most servers one runtime manages at once.
pub const MAX_SERVERS: usize = 8;

/// What to do when the expected port already has a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortConflict {
    /// Refuse, naming the holder.
    #[default]
    Fail,
    /// Use the existing server as an unowned lease (it is never stopped).
    Adopt,
    /// Start on a free port through the framework's own port flag.
    OtherPort,
}

/// Every dev server of one dshkit process.
pub struct RuntimeManager {
    config: RuntimeConfig,
    servers: tokio::sync::Mutex<BTreeMap<String, Arc<Server>>>,
}

impl std::fmt::Debug for RuntimeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeManager").finish_non_exhaustive()
    }
}

impl Default for RuntimeManager {
    fn default() -> Self {
        Self::new(RuntimeConfig::default())
    }
}

impl RuntimeManager {
    pub fn new(config: RuntimeConfig) -> Self {
        Self {
            config,
            servers: tokio::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// Starts `spec`, or returns the live server already running the identical
    /// profile. Returns at once (state `starting`); see [`Self::wait_ready`].
    pub async fn start(
        &self,
        spec: RunSpec,
        on_conflict: PortConflict,
    ) -> Result<ServerStatus, RuntimeError> {
        let mut servers = self.servers.lock().await;
        servers.retain(|_, s| s.is_live());
        if let Some(existing) = servers.values().find(|s| s.spec.as_ref() == Some(&spec)) {
            return Ok(existing.status(true));
        }
        if servers.len() >= MAX_SERVERS {
            return Err(RuntimeError::TooMany(MAX_SERVERS));
        }
        let mut argv = spec.argv.clone();
        let mut env = Vec::new();
        let mut port = spec.expected_port;
        if let Some(expected) = spec.expected_port {
            let holders = process::port_holders(expected);
            let in_use = !holders.is_empty() || port_answers(expected).await;
            if in_use {
                match on_conflict {
                    PortConflict::Fail => {
                        return Err(RuntimeError::PortInUse {
                            port: expected,
                            holder: describe_holders(&holders),
                        });
                    }
                    PortConflict::Adopt => {
                        drop(servers);
                        return self.adopt(&format!("http://localhost:{expected}/")).await;
                    }
                    PortConflict::OtherPort => {
                        let free = free_port().map_err(|e| RuntimeError::Spawn {
                            argv: argv.join(" "),
                            dir: spec.dir.clone(),
                            error: format!("no free port: {e}"),
                        })?;
                        (argv, env) = spec.on_port(free);
                        port = Some(free);
                    }
                }
            }
        }
        let id = new_id("rt")?;
        let server = if spec.argv.is_empty() {
            if spec.framework != Framework::StaticHtml {
                return Err(RuntimeError::EmptyProfile);
            }
            let site = StaticSite::start(&spec.dir, port.unwrap_or(0))
                .await
                .map_err(|e| RuntimeError::Spawn {
                    argv: "(built-in static server)".into(),
                    dir: spec.dir.clone(),
                    error: e.to_string(),
                })?;
            let url = url::Url::parse(&format!("http://127.0.0.1:{}/", site.port)).expect("a valid URL");
            let server = self.server(id, true, Some(spec), vec![], None, ServerState::Ready);
            {
                let mut inner = server.inner.lock().expect("lock");
                inner.url = Some(url);
                inner.url_reason = Some("dshkit's built-in static server for this directory".into());
            }
            *server.site.lock().expect("lock") = Some(site);
            server
        } else {
            // npm, pnpm and Yarn through the package-manager adapter: on
            // Windows `node <cli.js>`, never a `.cmd` shim through a shell.
            let command =
                dshkit_env::launch::command(&argv, &spec.dir, &dshkit_env::Environment::from_process())?;
            let mut spawned = process::spawn(&command, &spec.dir, &env).map_err(|e| RuntimeError::Spawn {
                argv: argv.join(" "),
                dir: spec.dir.clone(),
                error: e.to_string(),
            })?;
            let stdout = spawned.child.stdout.take();
            let stderr = spawned.child.stderr.take();
            let pid = Some(spawned.group.leader());
            let server = self.server(id, true, Some(spec), argv, pid, ServerState::Starting);
            *server.process.lock().await = Some(spawned);
            let mut pumps = Vec::new();
            if let Some(out) = stdout {
                pumps.push(tokio::spawn(pump_logs(out, "stdout", Arc::clone(&server))));
            }
            if let Some(err) = stderr {
                pumps.push(tokio::spawn(pump_logs(err, "stderr", Arc::clone(&server))));
            }
            tokio::spawn(readiness::watch(Arc::clone(&server), port, self.config, pumps));
            server
        };
        let status = server.status(false);
        servers.insert(server.id.clone(), server);
        Ok(status)
    }

    fn server(
        &self,
        id: String,
        owned: bool,
        spec: Option<RunSpec>,
        argv: Vec<String>,
        pid: Option<u32>,
        state: ServerState,
    ) -> Arc<Server> {
        Arc::new(Server {
            id,
            owned,
            spec,
            argv,
            pid,
            started: Instant::now(),
            inner: Mutex::new(Inner {
                state,
                url: None,
                url_reason: None,
                logged_urls: Vec::new(),
                logs: Ring::new(self.config.log_lines),
                exit_code: None,
                error: None,
                failure: None,
                last_answer: None,
            }),
            state: watch::Sender::new(state),
            steps: Mutex::new(Vec::new()),
            stage: watch::Sender::new(0),
            process: tokio::sync::Mutex::new(None),
            site: Mutex::new(None),
        })
    }

    /// Waits until server `id` is ready (or ends), at most `timeout`.
    pub async fn wait_ready(&self, id: &str, timeout: Duration) -> Result<ServerStatus, RuntimeError> {
        self.wait_ready_reporting(id, timeout, &Progress::default()).await
    }

    /// [`Self::wait_ready`], reporting each step of getting ready to `progress`
    /// (the URL the log printed, the port the process group listens on, the HTTP
    /// answer).
    pub async fn wait_ready_reporting(
        &self,
        id: &str,
        timeout: Duration,
        progress: &Progress,
    ) -> Result<ServerStatus, RuntimeError> {
        let server = self.get(id).await?;
        let mut state = server.state.subscribe();
        let mut steps = server.stage.subscribe();
        let mut seen = server.report_steps(0, progress);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if !matches!(*state.borrow_and_update(), ServerState::Starting) {
                break;
            }
            tokio::select! {
                changed = state.changed() => if changed.is_err() { break },
                changed = steps.changed() => match changed {
                    Ok(()) => seen = server.report_steps(seen, progress),
                    Err(_) => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        // The last step (the HTTP answer) and the state change come together.
        server.report_steps(seen, progress);
        let status = server.status(false);
        match (status.state, &status.failure) {
            (ServerState::Ready, _) => Ok(status),
            (ServerState::Exited | ServerState::Failed, Some(failure)) => {
                Err(RuntimeError::NotReady(Box::new(failure.clone())))
            }
            // Still starting when the caller's wait ended: the server goes on.
            (ServerState::Starting, _) => {
                let last_answer = server.inner.lock().expect("lock").last_answer;
                Err(RuntimeError::NotReady(Box::new(server.start_failure(
                    FailureCause::TimedOut {
                        after_secs: timeout.as_secs(),
                        last_answer,
                        stopped: false,
                    },
                ))))
            }
            _ => Err(RuntimeError::StoppedBeforeReady(status.id)),
        }
    }

    /// Leases an existing loopback server at `url` without owning it.
    pub async fn adopt(&self, url: &str) -> Result<ServerStatus, RuntimeError> {
        let parsed = url::Url::parse(url).map_err(|_| RuntimeError::NotLoopback(url.to_owned()))?;
        let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        let Some(port) = parsed
            .port_or_known_default()
            .filter(|_| loopback && parsed.scheme() == "http")
        else {
            return Err(RuntimeError::NotLoopback(url.to_owned()));
        };
        let status = ready::probe(&parsed, Duration::from_secs(5))
            .await
            .map_err(|error| RuntimeError::NoAnswer {
                url: url.to_owned(),
                error,
            })?;
        let mut servers = self.servers.lock().await;
        servers.retain(|_, s| s.is_live());
        let holders = process::port_holders(port);
        let server = self.server(
            new_id("rt")?,
            false,
            None,
            Vec::new(),
            holders.first().copied(),
            ServerState::Ready,
        );
        {
            let mut inner = server.inner.lock().expect("lock");
            inner.url = Some(parsed);
            inner.url_reason = Some(format!(
                "adopted: an existing listener ({}) answered HTTP {status}; dshkit never stops it",
                describe_holders(&holders)
            ));
        }
        let out = server.status(false);
        servers.insert(server.id.clone(), server);
        Ok(out)
    }

    async fn get(&self, id: &str) -> Result<Arc<Server>, RuntimeError> {
        self.servers
            .lock()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownServer(id.to_owned()))
    }

    /// Stops server `id` (its whole process tree) or releases an adopted lease.
    pub async fn stop(&self, id: &str) -> Result<ServerStatus, RuntimeError> {
        let server = self.get(id).await?;
        stop_server(&server, self.config.stop_grace).await;
        self.servers.lock().await.remove(id);
        Ok(server.status(false))
    }

    /// Stops an owned server and starts its profile again.
    pub async fn restart(&self, id: &str) -> Result<ServerStatus, RuntimeError> {
        let server = self.get(id).await?;
        let spec = match (&server.spec, server.owned) {
            (Some(spec), true) => spec.clone(),
            _ => return Err(RuntimeError::NotOwned(id.to_owned())),
        };
        self.stop(id).await?;
        self.start(spec, PortConflict::Fail).await
    }

    /// One server, or all of them.
    pub async fn status(&self, id: Option<&str>) -> Result<Vec<ServerStatus>, RuntimeError> {
        match id {
            Some(id) => Ok(vec![self.get(id).await?.status(false)]),
            None => Ok(self
                .servers
                .lock()
                .await
                .values()
                .map(|s| s.status(false))
                .collect()),
        }
    }

    /// The last `lines` log lines of server `id`, and how many older ones were dropped.
    pub async fn logs(&self, id: &str, lines: usize) -> Result<(Vec<String>, u64), RuntimeError> {
        let server = self.get(id).await?;
        let dropped = server.inner.lock().expect("lock").logs.dropped();
        Ok((server.log_tail(lines), dropped))
    }

    /// Stops every owned server and releases every lease.
    pub async fn shutdown(&self) {
        let servers: Vec<_> = std::mem::take(&mut *self.servers.lock().await)
            .into_values()
            .collect();
        for server in servers {
            stop_server(&server, self.config.stop_grace).await;
        }
    }
}

async fn stop_server(server: &Server, grace: Duration) {
    if server.owned {
        if let Some(mut spawned) = server.process.lock().await.take() {
            let began = Instant::now();
            let left = spawned.stop(grace).await;
            tracing::debug!(id = %server.id, ms = began.elapsed().as_millis(), ?left, "stopped a dev server");
            if !left.is_empty() {
                tracing::warn!(?left, "processes of a stopped dev server remain");
                server.set_state(
                    ServerState::Stopped,
                    Some(format!("processes still alive after the stop: {left:?}")),
                );
                return;
            }
        }
        server.site.lock().expect("lock").take();
    }
    if server.is_live() {
        server.set_state(ServerState::Stopped, None);
    }
}

/// Whether anything answers TCP on the loopback port (v4 or v6).
async fn port_answers(port: u16) -> bool {
    let connect = |addr: &'static str| async move {
        tokio::time::timeout(
            Duration::from_millis(300),
            tokio::net::TcpStream::connect((addr, port)),
        )
        .await
        .is_ok_and(|r| r.is_ok())
    };
    connect("127.0.0.1").await || connect("::1").await
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

fn describe_holders(holders: &[u32]) -> String {
    match holders.first() {
        Some(pid) => format!("pid {pid} ({})", process::command_line(*pid)),
        None => "a process dshkit cannot see".to_owned(),
    }
}

/// Reads one stream into the server's bounded log, cutting long lines, and notes
/// every loopback URL printed.
async fn pump_logs(mut stream: impl AsyncRead + Unpin, name: &'static str, server: Arc<Server>) {
    let mut buffer = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let n = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &byte in &buffer[..n] {
            if byte == b'\n' {
                push_line(&server, name, &line, cut);
                line.clear();
                cut = false;
            } else if line.len() < MAX_LOG_LINE {
                line.push(byte);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        push_line(&server, name, &line, cut);
    }
}

fn push_line(server: &Server, stream: &'static str, raw: &[u8], cut: bool) {
    let mut text = ready::strip_ansi(String::from_utf8_lossy(raw).trim_end_matches('\r'));
    if cut {
        text.push_str("…[line cut]");
    }
    let urls = ready::urls_in(&text);
    let mut inner = server.inner.lock().expect("lock");
    for url in urls {
        if inner.logged_urls.len() < 8 && !inner.logged_urls.contains(&url) {
            inner.logged_urls.push(url);
        }
    }
    inner.logs.push(LogLine { stream, text });
}

/// A random id: `prefix-` and 16 hex digits.
fn new_id(prefix: &str) -> Result<String, RuntimeError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| RuntimeError::Spawn {
        argv: String::new(),
        dir: PathBuf::new(),
        error: format!("no randomness for an id: {e}"),
    })?;
    Ok(format!("{prefix}-{}", hex::encode(bytes)))
}
