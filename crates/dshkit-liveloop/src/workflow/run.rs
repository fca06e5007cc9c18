//! The run workflow: detect and choose the app, start its dev server (or
//! restart one), and wait until it is ready; [`watch_ready`] then keeps an eye on
//! it for `dshkit run`.

use std::path::PathBuf;
use std::time::Duration;

use super::error::WorkflowError;
use super::stage::{Stage, Stages};
use crate::runtime::failure::StartFailure;
use crate::runtime::{PortConflict, RunSpec, RuntimeError, RuntimeManager, ServerState, ServerStatus};

/// Which server to start.
#[derive(Debug, Clone)]
pub enum StartTarget {
    /// The app detected in `dir` (`app` names it when there are several).
    Detect { dir: PathBuf, app: Option<PathBuf> },
    /// A known server, started again.
    Restart(String),
}

/// A start and how long to wait for readiness.
#[derive(Debug, Clone)]
pub struct StartRequest {
    pub target: StartTarget,
    pub on_port_conflict: PortConflict,
    /// Longest wait for a starting server to become ready.
    pub wait: Duration,
}

/// What starting the app came to.
#[derive(Debug)]
pub enum Started {
    /// The server answers (a spawned one that became ready, an adopted or
    /// shared one, or one still starting past a zero wait).
    Ready {
        status: Box<ServerStatus>,
        /// The app's directory.
        source: Option<PathBuf>,
    },
    /// The start ended, or the wait did, without a ready server: its status
    /// then, which holds the failure. The server stays known to the runtime.
    NeverReady {
        failure: Box<StartFailure>,
        status: Box<ServerStatus>,
        source: Option<PathBuf>,
    },
}

/// What a start would run, said before anything runs (so a person approves
/// exactly that): the command, the app's directory and the port it is expected
/// on; for a restart, the server's own.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StartPlan {
    /// The program and its arguments (empty: dshkit serves a static site itself).
    pub argv: Vec<String>,
    pub dir: PathBuf,
    pub framework: Option<String>,
    pub expected_port: Option<u16>,
    /// The server a restart starts again.
    pub server: Option<String>,
}

impl StartPlan {
    /// One line a person reads in an approval: `npm run dev in /srv/app (port 5173)`.
    pub fn text(&self) -> String {
        let command = if self.argv.is_empty() {
            "dshkit's own static file server".to_owned()
        } else {
            format!("`{}`", self.argv.join(" "))
        };
        let port = self
            .expected_port
            .map_or_else(|| "port: the one it prints".to_owned(), |p| format!("port {p}"));
        format!("{command} in {} ({port})", self.dir.display())
    }
}

/// The app detected in `dir` (`app` names it among several) and its run profile.
fn chosen(
    dir: &std::path::Path,
    app: Option<&std::path::Path>,
) -> Result<(crate::detect::Candidate, RunSpec), WorkflowError> {
    let detection = crate::detect::detect(dir, None).map_err(WorkflowError::Workspace)?;
    let candidate = detection.choose(app).map_err(WorkflowError::Choose)?;
    let spec = RunSpec::of(&detection.root, candidate).map_err(WorkflowError::Start)?;
    Ok((candidate.clone(), spec))
}

/// What starting `target` would run, running nothing: the same detection and
/// choice [`start_app`] makes, or the known server's command.
pub async fn plan_start(runtime: &RuntimeManager, target: &StartTarget) -> Result<StartPlan, WorkflowError> {
    match target {
        StartTarget::Detect { dir, app } => {
            let (candidate, spec) = chosen(dir, app.as_deref())?;
            Ok(StartPlan {
                argv: spec.argv,
                dir: spec.dir,
                framework: Some(candidate.framework.to_string()),
                expected_port: spec.expected_port,
                server: None,
            })
        }
        StartTarget::Restart(id) => {
            let status = runtime
                .status(Some(id))
                .await
                .map_err(WorkflowError::Runtime)?
                .remove(0);
            let port = status
                .url
                .as_deref()
                .and_then(|u| url::Url::parse(u).ok())
                .and_then(|u| u.port_or_known_default());
            Ok(StartPlan {
                argv: status.argv,
                dir: status.dir.unwrap_or_default(),
                framework: None,
                expected_port: port,
                server: Some(status.id),
            })
        }
    }
}

/// Starts `request.target` and waits until it is ready, reporting its stages.
pub async fn start_app(
    runtime: &RuntimeManager,
    request: &StartRequest,
    stages: &Stages,
) -> Result<Started, WorkflowError> {
    let (started, source) = match &request.target {
        StartTarget::Detect { dir, app } => {
            stages.report(Stage::Detecting(dir));
            let (candidate, spec) = chosen(dir, app.as_deref())?;
            stages.report(Stage::Starting(&candidate, &spec));
            let source = spec.dir.clone();
            let started = runtime.start(spec, request.on_port_conflict).await;
            (started.map_err(WorkflowError::Start)?, Some(source))
        }
        StartTarget::Restart(id) => {
            let started = runtime.restart(id).await.map_err(WorkflowError::Start)?;
            let source = started.dir.clone();
            (started, source)
        }
    };
    if !started.owned {
        stages.report(Stage::Adopted(&started));
    }
    if started.state != ServerState::Starting {
        stages.report(Stage::Ready(&started));
        return Ok(Started::Ready {
            status: Box::new(started),
            source,
        });
    }
    stages.report(Stage::Spawned(&started));
    let waited = runtime
        .wait_ready_reporting(
            &started.id,
            request.wait,
            &stages.progress(|s| Stage::Readiness(s)),
        )
        .await;
    match waited {
        Ok(ready) => {
            stages.report(Stage::Ready(&ready));
            Ok(Started::Ready {
                status: Box::new(ready),
                source,
            })
        }
        Err(RuntimeError::NotReady(failure)) => {
            let mut status = runtime
                .status(Some(&started.id))
                .await
                .map_err(WorkflowError::Runtime)?
                .remove(0);
            status.failure = Some((*failure).clone());
            Ok(Started::NeverReady {
                failure,
                status: Box::new(status),
                source,
            })
        }
        Err(error) => Err(WorkflowError::Waiting {
            server: started.id,
            error,
        }),
    }
}

/// How watching a ready server ended.
#[derive(Debug)]
pub enum Watched {
    /// `stop` came first.
    Stopped,
    /// The server left the ready state (it exited or failed): its status then.
    LeftReady(Box<ServerStatus>),
}

/// How often [`watch_ready`] looks at the server's state.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Watches server `id` until `stop` completes or the server stops being ready.
pub async fn watch_ready(
    runtime: &RuntimeManager,
    id: &str,
    stop: impl Future,
) -> Result<Watched, WorkflowError> {
    tokio::pin!(stop);
    let mut ticker = tokio::time::interval(WATCH_EVERY);
    loop {
        tokio::select! {
            _ = &mut stop => return Ok(Watched::Stopped),
            _ = ticker.tick() => {
                let now = runtime.status(Some(id)).await.map_err(WorkflowError::Runtime)?;
                if let Some(status) = now.into_iter().next().filter(|s| s.state != ServerState::Ready) {
                    return Ok(Watched::LeftReady(Box::new(status)));
                }
            }
        }
    }
}
