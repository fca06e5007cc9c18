//! The browse workflow: one operation on a preview session (open, look, act,
//! read its console and network, screenshot), its result as text and JSON. The
//! `liveloop_browser` tool is its MCP surface.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::json;

use super::browse_render::{
    Browsed, VIEW_OF_LAST, console, find, frame, list, network, screenshot, snapshot_of, view_of,
};
use super::error::WorkflowError;
use crate::preview::{Action, DEFAULT_MAX_NODES, PreviewManager, PreviewSession, Target, Viewport};
use crate::verify::evidence::{EvidenceStore, Retention};

/// The operations of a preview session.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Open,
    Close,
    List,
    Snapshot,
    Click,
    Fill,
    Type,
    Press,
    Select,
    Hover,
    Scroll,
    Navigate,
    Reload,
    Back,
    Forward,
    /// Switch the session to another device (`viewport`).
    Viewport,
    Screenshot,
    Frame,
    Console,
    Network,
    Wait,
    Find,
}

/// One operation and what it acts on (the `liveloop_browser` arguments).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BrowseRequest {
    pub operation: Operation,
    pub session: Option<String>,
    /// A workstream inside the caller's scope; the surface scopes it.
    pub owner: Option<String>,
    pub url: Option<String>,
    pub viewport: Option<Viewport>,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub role: Option<String>,
    pub name: Option<String>,
    pub text: Option<String>,
    pub key: Option<String>,
    pub option: Option<String>,
    pub delta_y: Option<i32>,
    pub full_page: Option<bool>,
    pub level: Option<String>,
    pub timeout_ms: Option<u64>,
    pub include_text: Option<bool>,
    /// snapshot: the first node to show (paging through a large page).
    pub from: Option<usize>,
    /// snapshot: show only the part of the page under this ref.
    pub within: Option<String>,
    /// screenshot: send the PNG as image content (the surface decides).
    pub image: Option<bool>,
    /// frame: the id of the frame the caller has; an equal frame is not sent again.
    pub since: Option<String>,
}

/// Where screenshots are saved and how long they are kept.
#[derive(Debug, Clone)]
pub struct ScreenshotStore {
    /// The evidence root (`None`: screenshots cannot be saved).
    pub root: Option<PathBuf>,
    pub retention: Retention,
}

impl BrowseRequest {
    fn need<'a>(&self, value: Option<&'a String>, what: &str) -> Result<&'a str, WorkflowError> {
        value.map(String::as_str).ok_or_else(|| {
            WorkflowError::Target(format!("`{what}` is required for operation {:?}", self.operation))
        })
    }

    fn target(&self) -> Result<Target, WorkflowError> {
        match (&self.reference, &self.role, &self.name) {
            (Some(reference), None, None) => Ok(Target::Ref(reference.clone())),
            (None, Some(role), Some(name)) => Ok(Target::RoleName {
                role: role.clone(),
                name: name.clone(),
            }),
            _ => Err(WorkflowError::Target(
                "give either `ref` (from the last snapshot) or both `role` and `name`".into(),
            )),
        }
    }

    fn action(&self) -> Result<Action, WorkflowError> {
        let text = || Ok::<_, WorkflowError>(self.need(self.text.as_ref(), "text")?.to_owned());
        Ok(match self.operation {
            Operation::Click => Action::Click(self.target()?),
            Operation::Hover => Action::Hover(self.target()?),
            Operation::Fill => Action::Fill(self.target()?, text()?),
            Operation::Type => Action::Type(self.target()?, text()?),
            Operation::Press => Action::Press(self.need(self.key.as_ref(), "key")?.to_owned()),
            Operation::Select => Action::Select(
                self.target()?,
                self.need(self.option.as_ref(), "option")?.to_owned(),
            ),
            Operation::Scroll => Action::Scroll {
                target: if self.reference.is_some() || self.role.is_some() {
                    Some(self.target()?)
                } else {
                    None
                },
                delta_y: self.delta_y.unwrap_or(600),
            },
            Operation::Navigate => Action::Navigate(self.need(self.url.as_ref(), "url")?.to_owned()),
            Operation::Reload => Action::Reload,
            Operation::Back => Action::Back,
            Operation::Forward => Action::Forward,
            Operation::Wait => Action::WaitFor {
                text: self.text.clone(),
                url: self.url.clone(),
                timeout: std::time::Duration::from_millis(self.timeout_ms.unwrap_or(5000)),
            },
            other => return Err(WorkflowError::Target(format!("{other:?} is not an interaction"))),
        })
    }
}

/// Runs `request` on `owner`'s previews. A preview error is noted by the
/// manager (a gone browser is relaunched on the next call).
pub async fn browse(
    previews: &PreviewManager,
    owner: &str,
    request: &BrowseRequest,
    screenshots: &ScreenshotStore,
) -> Result<Browsed, WorkflowError> {
    let include_text = request.include_text.unwrap_or(false);
    let session = || async {
        let id = request.need(request.session.as_ref(), "session")?;
        previews.get(owner, id).await.map_err(WorkflowError::Preview)
    };
    let outcome = match request.operation {
        Operation::Open => {
            let url = request.need(request.url.as_ref(), "url")?;
            let session = previews
                .open(owner, url, request.viewport.unwrap_or_default())
                .await
                .map_err(WorkflowError::Preview)?;
            let headline = format!("opened preview {} ({:?})", session.id, session.viewport());
            // The load took it as it settled.
            session
                .last_snapshot()
                .await
                .map(|s| snapshot_of(&session, &s, &headline, include_text))
        }
        Operation::Close => {
            let id = request.need(request.session.as_ref(), "session")?;
            previews.close(owner, id).await.map_err(WorkflowError::Preview)?;
            return Ok(Browsed::new(
                format!("closed preview {id}"),
                json!({ "closed": id }),
            ));
        }
        Operation::List => return Ok(list(previews.list(owner).await)),
        Operation::Snapshot if request.from.is_some() || request.within.is_some() => {
            return read_last(&*session().await?, request, include_text).await;
        }
        Operation::Snapshot => {
            let session = session().await?;
            let _no_verification = session.between_verifications().await;
            session
                .snapshot()
                .await
                .map(|s| snapshot_of(&session, &s, "snapshot", include_text))
        }
        Operation::Find => return read_last(&*session().await?, request, include_text).await,
        Operation::Screenshot => {
            let session = session().await?;
            let _no_verification = session.between_verifications().await;
            match session.screenshot(request.full_page.unwrap_or(false)).await {
                Ok(shot) => return save_screenshot(&session, &shot, screenshots),
                Err(e) => Err(e),
            }
        }
        Operation::Frame => {
            let session = session().await?;
            session
                .frame()
                .await
                .map(|taken| frame(&session, taken, request.since.as_deref()))
        }
        Operation::Console => {
            let level = request.level.as_deref().unwrap_or("all");
            return Ok(console(&*session().await?, level));
        }
        Operation::Network => return Ok(network(&*session().await?)),
        Operation::Viewport => {
            let viewport = request.viewport.ok_or_else(|| {
                WorkflowError::Target(
                    "`viewport` (desktop, tablet or mobile) is required for operation Viewport".into(),
                )
            })?;
            switch_viewport(&*session().await?, viewport, include_text).await
        }
        operation => {
            let session = session().await?;
            let action = request.action()?;
            let _no_verification = session.between_verifications().await;
            if matches!(
                action,
                Action::Navigate(_) | Action::Reload | Action::Back | Action::Forward
            ) {
                // The observation window is per page: a new page starts a new one.
                session.reset_observations();
            }
            let headline = format!("{operation:?} done").to_lowercase();
            session
                .interact(action)
                .await
                .map(|s| snapshot_of(&session, &s, &headline, include_text))
        }
    };
    match outcome {
        Ok(browsed) => Ok(browsed),
        Err(error) => {
            previews.note_error(&error).await;
            Err(WorkflowError::Preview(error))
        }
    }
}

/// `viewport`: the session emulates another device from now on, once no
/// verification runs in it; the result is the page as it lays itself out again
/// (loaded again when the switch is between a desktop and a touch device).
async fn switch_viewport(
    session: &PreviewSession,
    viewport: Viewport,
    include_text: bool,
) -> Result<Browsed, crate::preview::PreviewError> {
    let _no_verification = session.between_verifications().await;
    let (.., was_mobile) = session.viewport().metrics();
    session.set_viewport(viewport).await?;
    let (width, height, scale, mobile) = viewport.metrics();
    let mut headline = format!("viewport {viewport:?} ({width}x{height} CSS px at {scale}x)").to_lowercase();
    // A page lays out for a touch device (its viewport tag, its touch media
    // features) when it loads: between a desktop and a phone or tablet, only
    // a load shows what that device would (a page left as it was can keep the
    // other device's layout).
    let snapshot = if mobile == was_mobile {
        session.snapshot().await?
    } else {
        headline.push_str("; the page was loaded again for the new device");
        session.reset_observations();
        session.interact(Action::Reload).await?
    };
    Ok(snapshot_of(session, &snapshot, &headline, include_text))
}

/// `snapshot {from | within}` and `find`: read the last snapshot (taken if there
/// is none), so its refs stay valid while the model pages through a large page.
async fn read_last(
    session: &PreviewSession,
    request: &BrowseRequest,
    include_text: bool,
) -> Result<Browsed, WorkflowError> {
    let finding = request.operation == Operation::Find;
    if finding && request.text.is_none() && request.role.is_none() {
        return Err(WorkflowError::Target(
            "find needs `text` (in an element's name or value) and/or `role`".into(),
        ));
    }
    let _no_verification = session.between_verifications().await;
    let snapshot = session.last_snapshot().await.map_err(WorkflowError::Preview)?;
    if finding {
        return Ok(find(
            session,
            &snapshot,
            request.text.as_deref(),
            request.role.as_deref(),
        ));
    }
    let within = request.within.as_deref();
    let view = snapshot
        .view(request.from.unwrap_or(0), DEFAULT_MAX_NODES, within)
        .map_err(WorkflowError::Target)?;
    Ok(view_of(
        session,
        &snapshot,
        &view,
        within,
        VIEW_OF_LAST,
        include_text,
    ))
}

/// Writes the PNG under the evidence root (atomically) and returns its identity.
fn save_screenshot(
    session: &PreviewSession,
    shot: &crate::preview::Screenshot,
    screenshots: &ScreenshotStore,
) -> Result<Browsed, WorkflowError> {
    let root = screenshots.root.as_ref().ok_or_else(|| {
        WorkflowError::Evidence("no evidence root: set DSHKIT_EVIDENCE_ROOT or HOME".into())
    })?;
    let store = EvidenceStore::new(root.join("previews"));
    let saved = store.write_png(&session.id, &shot.png).map_err(|e| {
        WorkflowError::Evidence(format!("failed to save the screenshot: {e}; run dshkit_doctor"))
    })?;
    // Preview screenshots are kept like verification evidence: by age, count and size.
    if let Err(e) = store.apply_retention(screenshots.retention, std::time::SystemTime::now()) {
        tracing::warn!(%e, "preview screenshot retention failed");
    }
    let mut browsed = screenshot(session, shot, &saved.path);
    browsed.screenshot = Some(saved.path);
    Ok(browsed)
}
