//! A verification request as callers write it: its steps, assertions and
//! reference, their limits and validation, the page it names, and the context it
//! runs in.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::evidence::{EvidenceError, EvidenceStore};
use crate::preview::{Action, Target};

/// Default quiet window after `DOMContentLoaded`.
pub const DEFAULT_QUIET_MS: u64 = 100;
/// Longest quiet window a request may ask for.
pub const MAX_QUIET_MS: u64 = 5_000;
/// Default hard deadline of the load (navigation plus quiet window).
pub const DEFAULT_DEADLINE_MS: u64 = 20_000;
/// Longest deadline a request may ask for.
pub const MAX_DEADLINE_MS: u64 = 60_000;
/// Most steps and most assertions in one request.
pub const MAX_STEPS: usize = 50;
pub const MAX_ASSERTIONS: usize = 50;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error("invalid verification request: {0}")]
    Invalid(String),
    /// The reference image's path breaks the workspace's containment rule
    /// ([`dshkit_os::fs::resolve_inside`]).
    #[error("the reference {path} is refused in the workspace {root}: {reason}")]
    ReferenceRefused {
        path: PathBuf,
        root: PathBuf,
        reason: dshkit_os::fs::Refused,
    },
    #[error("failed to persist the report: {0}")]
    Persist(#[from] EvidenceError),
}

impl VerifyError {
    /// A stable machine-readable code; a report that could not be persisted
    /// says why in the evidence store's code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "INVALID_REQUEST",
            Self::ReferenceRefused { .. } => "REFERENCE_OUTSIDE",
            Self::Persist(e) => e.code(),
        }
    }

    /// A request that is invalid or names a reference outside the workspace is
    /// refused; persisting is the evidence store's ([`EvidenceError::class`]).
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        match self {
            Self::Invalid(_) | Self::ReferenceRefused { .. } => dshkit_os::error::ErrorClass::Refused,
            Self::Persist(e) => e.class(),
        }
    }
}

dshkit_os::classified!(VerifyError);

/// One interaction, as callers write it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// click, fill, type, press, select, hover, scroll, navigate, reload, back, wait.
    pub action: String,
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_y: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl Step {
    fn target(&self) -> Result<Target, String> {
        match (&self.reference, &self.role, &self.name) {
            (Some(reference), None, None) => Ok(Target::Ref(reference.clone())),
            (None, Some(role), Some(name)) => Ok(Target::RoleName {
                role: role.clone(),
                name: name.clone(),
            }),
            _ => Err(format!(
                "step `{}` needs `ref` or both `role` and `name`",
                self.action
            )),
        }
    }

    fn need(&self, value: Option<&String>, what: &str) -> Result<String, String> {
        value
            .cloned()
            .ok_or_else(|| format!("step `{}` needs `{what}`", self.action))
    }

    /// The session action this step is.
    pub fn action(&self) -> Result<Action, String> {
        Ok(match self.action.as_str() {
            "click" => Action::Click(self.target()?),
            "hover" => Action::Hover(self.target()?),
            "fill" => Action::Fill(self.target()?, self.need(self.text.as_ref(), "text")?),
            "type" => Action::Type(self.target()?, self.need(self.text.as_ref(), "text")?),
            "press" => Action::Press(self.need(self.key.as_ref(), "key")?),
            "select" => Action::Select(self.target()?, self.need(self.option.as_ref(), "option")?),
            "scroll" => Action::Scroll {
                target: if self.reference.is_some() || self.role.is_some() {
                    Some(self.target()?)
                } else {
                    None
                },
                delta_y: self.delta_y.unwrap_or(600),
            },
            "navigate" => Action::Navigate(self.need(self.url.as_ref(), "url")?),
            "reload" => Action::Reload,
            "back" => Action::Back,
            "wait" => Action::WaitFor {
                text: self.text.clone(),
                url: self.url.clone(),
                timeout: Duration::from_millis(self.timeout_ms.unwrap_or(5000)),
            },
            other => {
                return Err(format!(
                    "unknown step action `{other}`; use click, fill, type, press, select, hover, scroll, navigate, reload, back or wait"
                ));
            }
        })
    }

    pub(super) fn describe(&self) -> String {
        let target = match (&self.reference, &self.role, &self.name) {
            (Some(r), _, _) => format!(" {r}"),
            (None, Some(role), Some(name)) => format!(" {role} {name:?}"),
            _ => String::new(),
        };
        let detail = self
            .text
            .as_ref()
            .or(self.key.as_ref())
            .or(self.option.as_ref())
            .or(self.url.as_ref())
            .map(|d| format!(" {d:?}"))
            .unwrap_or_default();
        format!("{}{target}{detail}", self.action)
    }
}

/// An explicit success criterion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// The rendered page text contains `text`.
    TextPresent { text: String },
    /// The rendered page text does not contain `text`.
    TextAbsent { text: String },
    /// An element with this ARIA role and accessible name is on the page.
    Element { role: String, name: String },
    /// The final URL contains `contains`.
    Url { contains: String },
    /// The title contains `contains`.
    Title { contains: String },
    /// The page's own document answered with this HTTP status.
    Status { code: u16 },
    /// No console error, exception or unhandled rejection.
    NoConsoleErrors,
    /// No request failed or answered >= 400.
    NoFailedRequests,
}

impl Assertion {
    /// The assertion in words.
    pub fn describe(&self) -> String {
        match self {
            Self::TextPresent { text } => format!("text {text:?} is present"),
            Self::TextAbsent { text } => format!("text {text:?} is absent"),
            Self::Element { role, name } => format!("a {role} named {name:?} exists"),
            Self::Url { contains } => format!("the URL contains {contains:?}"),
            Self::Title { contains } => format!("the title contains {contains:?}"),
            Self::Status { code } => format!("the document answered HTTP {code}"),
            Self::NoConsoleErrors => "no console errors".into(),
            Self::NoFailedRequests => "no failed requests".into(),
        }
    }
}

/// A reference image to compare with.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReferenceSpec {
    /// A PNG inside the workspace.
    pub path: PathBuf,
    #[serde(default)]
    pub max_mismatch_ratio: Option<f64>,
    /// Write the current screenshot as the new reference instead of comparing.
    #[serde(default)]
    pub update: bool,
}

/// What to verify.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyRequest {
    /// A path or a URL on the preview's origin, resolved against the page the
    /// caller named (an app URL, a server's URL, or the preview's page); that
    /// page itself, exactly, by default.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub assertions: Vec<Assertion>,
    #[serde(default)]
    pub reference: Option<ReferenceSpec>,
    #[serde(default)]
    pub quiet_window_ms: Option<u64>,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    #[serde(default)]
    pub full_page: bool,
    /// Console errors are failures unless this is set.
    #[serde(default)]
    pub allow_console_errors: bool,
    /// Failed requests are failures unless this is set.
    #[serde(default)]
    pub allow_failed_requests: bool,
    /// A screenshot of the page after each step (the first
    /// [`super::report::MAX_STEP_SCREENSHOTS`]) for the report's timeline.
    /// Off unless `true`: each costs about 35 ms (a capture and its evidence
    /// file), a quarter more time for a three-step verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_screenshots: Option<bool>,
}

/// Where the verification runs and what it may touch.
#[derive(Debug, Clone)]
pub struct VerifyContext {
    pub evidence: EvidenceStore,
    /// References resolve inside this root.
    pub workspace: PathBuf,
    /// The app's source, fingerprinted into the report.
    pub source_dir: Option<PathBuf>,
    /// The runtime server behind the preview (its status as JSON), if any.
    pub runtime: Option<Value>,
    /// Told each stage as the verification enters it.
    pub progress: crate::progress::Progress,
}

/// The page a verification loads: `url` (a path, or a whole URL) resolved
/// against `base` (the URL the caller named: an app URL, a server's URL, the
/// preview's page), or `base` itself, exactly, when no `url` is given.
pub fn page_url(base: &str, url: Option<&str>) -> Result<url::Url, VerifyError> {
    let base = url::Url::parse(base).map_err(|e| VerifyError::Invalid(format!("bad URL {base:?}: {e}")))?;
    match url {
        None => Ok(base),
        Some(url) => base
            .join(url)
            .map_err(|e| VerifyError::Invalid(format!("bad url {url:?}: {e}"))),
    }
}

/// The request's steps as session actions, once its limits hold.
pub(super) fn validate(request: &VerifyRequest) -> Result<Vec<Action>, VerifyError> {
    if request.steps.len() > MAX_STEPS || request.assertions.len() > MAX_ASSERTIONS {
        return Err(VerifyError::Invalid(format!(
            "at most {MAX_STEPS} steps and {MAX_ASSERTIONS} assertions"
        )));
    }
    if let Some(ratio) = request.reference.as_ref().and_then(|r| r.max_mismatch_ratio)
        && !(0.0..=1.0).contains(&ratio)
    {
        return Err(VerifyError::Invalid(
            "maxMismatchRatio must be within 0..1".into(),
        ));
    }
    request
        .steps
        .iter()
        .map(Step::action)
        .collect::<Result<_, _>>()
        .map_err(VerifyError::Invalid)
}

/// The reference image `path` (relative to `root`, or absolute), resolved inside
/// `root`: it may not exist yet (a reference is written on update), its directory
/// must.
pub(super) fn inside(root: &Path, path: &Path) -> Result<PathBuf, VerifyError> {
    dshkit_os::fs::resolve_inside(root, path, dshkit_os::fs::Leaf::MayBeNew).map_err(|reason| {
        VerifyError::ReferenceRefused {
            path: path.to_owned(),
            root: root.to_owned(),
            reason,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{inside, page_url};

    #[test]
    fn a_reference_resolves_inside_the_workspace_even_before_it_exists() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join("refs")).unwrap();
        let resolved = inside(workspace.path(), Path::new("refs/home.png")).unwrap();
        let real = dshkit_os::fs::canonicalize(workspace.path()).unwrap();
        assert_eq!(resolved, real.join("refs").join("home.png"));
    }

    #[test]
    fn a_reference_outside_the_workspace_is_refused_naming_the_path_and_the_root() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().join("app");
        std::fs::create_dir(&root).unwrap();
        for (path, why) in [
            ("../outside.png", "outside the root"),
            ("missing/home.png", "does not exist"),
        ] {
            let message = inside(&root, Path::new(path)).unwrap_err().to_string();
            assert!(message.contains(path), "{message}");
            assert!(message.contains(&root.display().to_string()), "{message}");
            assert!(message.contains(why), "{message}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_reference_through_a_link_out_of_the_workspace_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), workspace.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("new.png"),
            workspace.path().join("dangling.png"),
        )
        .unwrap();
        for path in ["out/home.png", "dangling.png"] {
            assert!(inside(workspace.path(), Path::new(path)).is_err(), "{path}");
        }
    }

    #[test]
    fn each_error_has_its_code_and_class() {
        use super::{EvidenceError, VerifyError};
        use dshkit_os::error::ErrorClass;
        dshkit_os::error::assert_classified([
            (
                VerifyError::Invalid("no".into()),
                "INVALID_REQUEST",
                ErrorClass::Refused,
            ),
            (
                VerifyError::ReferenceRefused {
                    path: "/etc/x.png".into(),
                    root: "/w".into(),
                    reason: dshkit_os::fs::Refused::Outside,
                },
                "REFERENCE_OUTSIDE",
                ErrorClass::Refused,
            ),
            (
                VerifyError::Persist(EvidenceError::BadSession("../x".into())),
                "BAD_EVIDENCE_SESSION",
                ErrorClass::Refused,
            ),
            (
                VerifyError::Persist(EvidenceError::Io {
                    action: "write",
                    path: "/e/report.json".into(),
                    source: std::io::ErrorKind::StorageFull.into(),
                }),
                "EVIDENCE_IO",
                ErrorClass::Runtime,
            ),
        ]);
    }

    #[test]
    fn the_page_named_is_kept_whole_and_a_url_resolves_against_it() {
        let base = "http://127.0.0.1:5173/broken/?tab=2#details";
        assert_eq!(page_url(base, None).unwrap().as_str(), base);
        for (url, expected) in [
            ("/other?x=1#y", "http://127.0.0.1:5173/other?x=1#y"),
            ("sibling", "http://127.0.0.1:5173/broken/sibling"),
            ("?tab=3", "http://127.0.0.1:5173/broken/?tab=3"),
            ("#top", "http://127.0.0.1:5173/broken/?tab=2#top"),
            ("http://127.0.0.1:5173/", "http://127.0.0.1:5173/"),
        ] {
            assert_eq!(page_url(base, Some(url)).unwrap().as_str(), expected, "{url}");
        }
        assert!(page_url("not a url", None).is_err());
    }
}
