//! Watching a started server until it is ready: a URL it printed, or the
//! expected port, listened on by its own process tree, answering HTTP with
//! something other than "not yet".

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::failure::FailureCause;
use super::process;
use super::ready::{self, Answer};
use super::server::{RuntimeConfig, Server, ServerState};

/// How long an exited server's log pumps get to read its last lines.
const LOG_DRAIN: Duration = Duration::from_secs(2);
/// How long one probe of a candidate URL may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often readiness looks again.
const POLL: Duration = Duration::from_millis(150);

/// Moves a started server to `ready` once a candidate URL held by its process
/// tree answers HTTP (a 502, 503 or 504 is "not yet"; another 5xx only once it
/// has answered so for `config.error_answer_wait`); to `exited` if it ends first;
/// to `failed` (and stops it) at the deadline.
pub(super) async fn watch(
    server: Arc<Server>,
    port: Option<u16>,
    config: RuntimeConfig,
    log_pumps: Vec<tokio::task::JoinHandle<()>>,
) {
    let deadline = Instant::now() + config.ready_timeout;
    let mut told = Told::default();
    let mut first_error_answer: Option<Instant> = None;
    loop {
        let mut process = server.process.lock().await;
        let Some(spawned) = process.as_mut() else {
            return; // stopped meanwhile
        };
        if let Ok(Some(exit)) = spawned.child.try_wait() {
            let code = exit.code();
            server.inner.lock().expect("lock").exit_code = code;
            drop(process);
            // The last lines are in the log once the pumps reach the end of the
            // pipes (bounded: a grandchild may hold them open).
            let _ = tokio::time::timeout(LOG_DRAIN, futures::future::join_all(log_pumps)).await;
            let failure = server.start_failure(FailureCause::Exited { code });
            server.fail(ServerState::Exited, failure);
            return;
        }
        let members = spawned.group.members();
        drop(process);
        let ours = process::listening_ports(&members);
        let candidates = candidates(&server, port);
        told.url(&server, &candidates);
        told.ports(&server, &ours);
        for (url, why) in candidates {
            if !url.port().is_some_and(|p| ours.contains(&p)) {
                continue;
            }
            let Ok(status) = ready::probe(&url, PROBE_TIMEOUT).await else {
                continue;
            };
            let reason = match ready::classify(status) {
                Answer::Ready => {
                    format!("{why}, listened on by the server's process tree, answered HTTP {status}")
                }
                Answer::NotYet => {
                    told.answer(&server, &url, status, "not ready yet; waiting");
                    server.inner.lock().expect("lock").last_answer = Some(status);
                    continue;
                }
                Answer::AppError => {
                    let since = *first_error_answer.get_or_insert_with(Instant::now);
                    if since.elapsed() < config.error_answer_wait {
                        told.answer(&server, &url, status, "waiting for another answer");
                        server.inner.lock().expect("lock").last_answer = Some(status);
                        continue;
                    }
                    format!(
                        "{why}, listened on by the server's process tree, answered HTTP {status} for {} s (an error of the app's own, for the verification to judge)",
                        config.error_answer_wait.as_secs()
                    )
                }
            };
            server.step(format!("{url} answered HTTP {status}"));
            {
                let mut inner = server.inner.lock().expect("lock");
                inner.url = Some(url);
                inner.url_reason = Some(reason);
            }
            server.set_state(ServerState::Ready, None);
            return;
        }
        if Instant::now() >= deadline {
            let last_answer = server.inner.lock().expect("lock").last_answer;
            let failure = server.start_failure(FailureCause::TimedOut {
                after_secs: config.ready_timeout.as_secs(),
                last_answer,
                stopped: true,
            });
            server.fail(ServerState::Failed, failure);
            if let Some(mut spawned) = server.process.lock().await.take() {
                spawned.stop(config.stop_grace).await;
            }
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The URLs the server printed, then its expected port, each with why.
fn candidates(server: &Server, port: Option<u16>) -> Vec<(url::Url, String)> {
    let mut candidates: Vec<(url::Url, String)> = server
        .inner
        .lock()
        .expect("lock")
        .logged_urls
        .iter()
        .map(|u| (u.clone(), "printed in the server log".to_owned()))
        .collect();
    if let Some(url) = port.and_then(|p| url::Url::parse(&format!("http://localhost:{p}/")).ok()) {
        let why = format!("the expected port {}", url.port().unwrap_or_default());
        candidates.push((url, why));
    }
    candidates
}

/// The steps of getting ready already reported, each once.
#[derive(Default)]
struct Told {
    url: bool,
    ports: bool,
    answers: Vec<u16>,
}

impl Told {
    fn url(&mut self, server: &Server, candidates: &[(url::Url, String)]) {
        if !self.url
            && let Some((url, _)) = candidates.iter().find(|(_, why)| why.starts_with("printed"))
        {
            self.url = true;
            server.step(format!("the server log printed {url}"));
        }
    }

    fn ports(&mut self, server: &Server, ours: &std::collections::BTreeSet<u16>) {
        if !self.ports && !ours.is_empty() {
            self.ports = true;
            let ports: Vec<String> = ours.iter().map(u16::to_string).collect();
            server.step(format!("its process tree listens on port {}", ports.join(", ")));
        }
    }

    fn answer(&mut self, server: &Server, url: &url::Url, status: u16, what: &str) {
        if !self.answers.contains(&status) {
            self.answers.push(status);
            server.step(format!("{url} answered HTTP {status}: {what}"));
        }
    }
}
