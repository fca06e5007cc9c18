//! The verify-an-app workflow: find or start the app, open its preview, verify,
//! and report; an app whose server never became ready gets a report too.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::WorkflowError;
use super::run::{StartRequest, StartTarget, Started, start_app};
use super::stage::{Stage, Stages};
use crate::preview::{PreviewManager, PreviewSession, Viewport};
use crate::runtime::{RuntimeManager, ServerState, ServerStatus};
use crate::verify::evidence::{EvidenceStore, Retention};
use crate::verify::{
    Report, VerifyContext, VerifyRequest, engine::report_without_server, page_url,
    unverified_without_browser, verify,
};

/// What to verify.
#[derive(Debug, Clone)]
pub enum AppTarget {
    /// A running app at this loopback URL.
    Url(String),
    /// The app detected in a directory, started for this verification.
    Start(StartRequest),
    /// A server the runtime knows.
    Server(String),
    /// An open preview session.
    Session(String),
}

impl AppTarget {
    /// What a person names on the command line: an `http(s)://` URL of a
    /// running app, else a workspace directory whose app `start` starts; with
    /// the workspace references resolve in (for a URL, the current directory).
    pub fn named(
        target: &str,
        start: impl FnOnce(PathBuf) -> StartRequest,
    ) -> std::io::Result<(Self, PathBuf)> {
        if target.starts_with("http://") || target.starts_with("https://") {
            return Ok((Self::Url(target.to_owned()), std::env::current_dir()?));
        }
        let dir = PathBuf::from(target);
        Ok((Self::Start(start(dir.clone())), dir))
    }
}

/// One verification of an app.
#[derive(Debug, Clone)]
pub struct VerifyAppRequest {
    pub target: AppTarget,
    /// Steps, assertions, reference; its `url` is resolved against the page named.
    pub request: VerifyRequest,
    /// Who owns the preview the verification runs in.
    pub owner: String,
    /// A new preview's viewport (an open one must already have it).
    pub viewport: Option<Viewport>,
    /// Where references are read (a started app's own directory instead).
    pub workspace: PathBuf,
    /// Fingerprint the one app detection finds in `workspace` when the target
    /// names no app directory.
    pub detect_source: bool,
    /// The quiet window when the request gives none.
    pub quiet_window_ms: Option<u64>,
}

/// What a verification works with.
#[derive(Debug, Clone, Copy)]
pub struct VerifyTools<'a> {
    pub previews: &'a PreviewManager,
    pub runtime: &'a RuntimeManager,
    pub evidence: &'a EvidenceStore,
    pub retention: Retention,
}

/// A verification's report, and the preview it ran in when one was opened and
/// kept (a pool's preview is closed after its verification).
#[derive(Debug)]
pub struct Verified {
    pub report: Report,
    pub session: Option<String>,
}

/// Verifies the app `request.target` names.
pub async fn verify_app(
    mut request: VerifyAppRequest,
    tools: VerifyTools<'_>,
    stages: &Stages,
) -> Result<Verified, WorkflowError> {
    let mut context = VerifyContext {
        evidence: tools.evidence.clone(),
        workspace: request.workspace.clone(),
        source_dir: None,
        runtime: None,
        progress: stages.progress(|s| Stage::Verifying(s)),
    };
    let (named, server) = match &request.target {
        AppTarget::Url(url) => (Some(url.clone()), None),
        AppTarget::Session(_) => (None, None),
        AppTarget::Server(id) => {
            let server = tools
                .runtime
                .status(Some(id))
                .await
                .map_err(WorkflowError::Runtime)?
                .remove(0);
            (server.url.clone(), Some(server))
        }
        AppTarget::Start(start) => {
            let dir = match &start.target {
                StartTarget::Detect { dir, .. } => dir.clone(),
                StartTarget::Restart(_) => request.workspace.clone(),
            };
            let started = start_app(tools.runtime, start, stages).await?;
            context.workspace = dshkit_os::fs::canonicalize(&dir).map_err(WorkflowError::Io)?;
            match started {
                Started::Ready { status, source } => {
                    context.source_dir = source;
                    (Some(status.url.clone().unwrap_or_default()), Some(*status))
                }
                Started::NeverReady {
                    failure,
                    status,
                    source,
                } => {
                    context.source_dir = source;
                    context.runtime = serde_json::to_value(&status).ok();
                    let report = report_without_server(&failure, "", &context);
                    apply_retention(tools);
                    return verified(report, None);
                }
            }
        }
    };
    let started_here = matches!(request.target, AppTarget::Start(_));
    if !started_here {
        context.source_dir = server.as_ref().and_then(|s| s.dir.clone());
        if context.source_dir.is_none() && request.detect_source {
            context.source_dir = the_one_app(&request.workspace);
        }
    }
    context.runtime = server.as_ref().and_then(|s| serde_json::to_value(s).ok());
    if let Some(server) = &server
        && server.state != ServerState::Ready
    {
        let verified = not_ready(server, &context)?;
        apply_retention(tools);
        return Ok(verified);
    }
    // The page named, exactly, with the request's `url` resolved against it.
    if let Some(base) = named {
        let page = page_url(&base, request.request.url.as_deref()).map_err(WorkflowError::Page)?;
        request.request.url = Some(page.to_string());
    }
    let session = match &request.target {
        AppTarget::Session(id) => session_for(tools.previews, &request, id).await?,
        _ => {
            let url = request.request.url.clone().unwrap_or_default();
            match open(tools.previews, &request, &url, &context, stages).await? {
                Ok(session) => session,
                Err(report) => {
                    apply_retention(tools);
                    return Ok(Verified {
                        report,
                        session: None,
                    });
                }
            }
        }
    };
    request.request.quiet_window_ms = request.request.quiet_window_ms.or(request.quiet_window_ms);
    let report = verify(&session, &request.request, &context).await;
    // A preview opened for this verification on a pool gives its browser back.
    let opened_here = !matches!(request.target, AppTarget::Session(_));
    let released = opened_here
        && tools
            .previews
            .release_after_verification(&request.owner, &session.id)
            .await;
    let report = report.map_err(WorkflowError::Verify)?;
    apply_retention(tools);
    Ok(Verified {
        report,
        session: (!released).then(|| session.id.clone()),
    })
}

fn verified(
    report: Result<Report, crate::verify::VerifyError>,
    session: Option<String>,
) -> Result<Verified, WorkflowError> {
    Ok(Verified {
        report: report.map_err(WorkflowError::Verify)?,
        session,
    })
}

/// The source the report fingerprints when none is named: the one app
/// detection finds (none when it is ambiguous).
fn the_one_app(workspace: &std::path::Path) -> Option<PathBuf> {
    let detection = crate::detect::detect(workspace, None).ok()?;
    detection.choose(None).ok().map(|c| detection.root.join(&c.dir))
}

/// A verification of a server that is not ready. One that never became ready
/// is a verdict on the app (its build is broken) or on the wait, with what the
/// server printed; one still starting or stopped is refused.
fn not_ready(server: &ServerStatus, context: &VerifyContext) -> Result<Verified, WorkflowError> {
    let Some(failure) = &server.failure else {
        return Err(WorkflowError::ServerNotReady(format!(
            "server {} is {:?}, not ready: {}",
            server.id,
            server.state,
            server.error.clone().unwrap_or_default()
        )));
    };
    verified(
        report_without_server(failure, server.url.as_deref().unwrap_or(""), context),
        None,
    )
}

/// The open preview `id`, which must have the viewport asked for.
async fn session_for(
    previews: &PreviewManager,
    request: &VerifyAppRequest,
    id: &str,
) -> Result<Arc<PreviewSession>, WorkflowError> {
    let session = previews
        .get(&request.owner, id)
        .await
        .map_err(WorkflowError::Preview)?;
    if let Some(viewport) = request.viewport
        && viewport != session.viewport()
    {
        return Err(WorkflowError::Target(format!(
            "preview {id} shows the {:?} viewport, not {viewport:?}: switch it first (`liveloop_browser` operation `viewport`), verify with `server` or `appUrl` and this viewport (a new preview), or leave `viewport` out",
            session.viewport()
        )));
    }
    Ok(session)
}

/// A preview for a verification of `url`: the owner's idle one of that origin
/// when there is one, else a new one. A missing browser becomes an UNVERIFIED
/// report rather than an error.
async fn open(
    previews: &PreviewManager,
    request: &VerifyAppRequest,
    url: &str,
    context: &VerifyContext,
    stages: &Stages,
) -> Result<Result<Arc<PreviewSession>, Report>, WorkflowError> {
    stages.report(Stage::Opening(url));
    match previews
        .open_for_verification(&request.owner, url, request.viewport.unwrap_or_default())
        .await
    {
        Ok((session, _reused)) => Ok(Ok(session)),
        Err(error) if error.is_browser_failure() => {
            previews.note_error(&error).await;
            unverified_without_browser(&format!("{}: {error}", error.code()), url, context)
                .map(Err)
                .map_err(WorkflowError::Verify)
        }
        Err(error) => Err(WorkflowError::Preview(error)),
    }
}

/// Evidence retention after a report was written, then the index of the
/// reports kept; a failure of either is only logged.
fn apply_retention(tools: VerifyTools<'_>) {
    if let Err(e) = tools
        .evidence
        .apply_retention(tools.retention, std::time::SystemTime::now())
    {
        tracing::warn!(%e, "evidence retention failed");
    }
    if let Err(e) = crate::verify::index::write(tools.evidence.root()) {
        tracing::warn!(%e, "the index of reports was not written");
    }
}
