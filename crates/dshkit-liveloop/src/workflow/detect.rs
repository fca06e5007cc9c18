//! The detect workflow: the web app(s) in a directory, and the one rule for a
//! directory given inside a workspace.

use std::path::{Path, PathBuf};

use dshkit_os::fs::{Leaf, Refused, resolve_inside};

use super::error::WorkflowError;
use crate::detect::{Detection, detect};

/// What to detect.
#[derive(Debug, Clone)]
pub struct DetectRequest {
    /// The directory to walk.
    pub dir: PathBuf,
    /// Most candidates kept in the result (all when `None`).
    pub max_listed: Option<usize>,
}

/// A detection, with how many candidates it found before any were left out.
#[derive(Debug, Clone)]
pub struct Detected {
    pub detection: Detection,
    /// Candidates found, listed or not.
    pub total: usize,
}

impl Detected {
    /// Whether exactly one app is the likely one (the CLI's exit code).
    pub fn found_one(&self) -> bool {
        !self.detection.candidates.is_empty() && !self.detection.ambiguous
    }

    /// Whether candidates were left out of the listing.
    pub fn truncated(&self) -> bool {
        self.total > self.detection.candidates.len()
    }
}

/// Detects the web app(s) in `request.dir`.
pub fn detect_app(request: &DetectRequest) -> Result<Detected, WorkflowError> {
    let mut detection = detect(&request.dir, None).map_err(WorkflowError::Workspace)?;
    let total = detection.candidates.len();
    if let Some(max) = request.max_listed {
        detection.candidates.truncate(max);
    }
    Ok(Detected { detection, total })
}

/// `dir` (relative to `workspace`, default: the workspace itself), refused
/// when it is missing or resolves outside the workspace.
pub fn inside(workspace: &Path, dir: Option<&str>) -> Result<PathBuf, WorkflowError> {
    let path = Path::new(dir.unwrap_or(""));
    resolve_inside(workspace, path, Leaf::MustExist).map_err(|refused| {
        let root = workspace.display();
        let dir = dir.unwrap_or_default();
        WorkflowError::Outside(match refused {
            Refused::RootUnusable(e) => format!("the workspace {root} is unusable: {e}"),
            Refused::Missing => format!("`{dir}` does not exist in the workspace {root}"),
            Refused::Outside => format!("`{dir}` resolves outside the workspace {root}"),
        })
    })
}
