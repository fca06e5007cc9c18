//! The verification report (`formatVersion` 1): what was asked, what each step,
//! assertion and the reference diff gave, the observations kept, the judgement
//! and the timings, as it is persisted (JSON, and HTML by [`super::html`]).

use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use super::evidence::{EvidenceFile, REPORT_FORMAT_VERSION};
use super::fingerprint::{Fingerprint, fingerprint};
use super::request::{Assertion, VerifyContext};
use super::verdict::{Judgement, Observed, judge};

/// Entries of each kind (console errors, failed requests, ...) kept in a report.
pub const MAX_REPORT_ENTRIES: usize = 20;
/// Steps whose page a report keeps a screenshot of (the first ones).
pub const MAX_STEP_SCREENSHOTS: usize = 20;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutcome {
    pub index: usize,
    pub step: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub ms: u128,
    /// The page right after this step (the first [`MAX_STEP_SCREENSHOTS`]
    /// steps of a request that asks for them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<EvidenceFile>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssertionOutcome {
    pub assertion: Assertion,
    pub passed: bool,
    pub detail: String,
    /// How long checking it took.
    pub ms: u128,
}

/// Entries observed beyond the [`MAX_REPORT_ENTRIES`] a report keeps of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Omitted {
    pub console_errors: usize,
    pub failed_requests: usize,
    pub blocked_requests: usize,
}

impl Omitted {
    fn is_none(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffOutcome {
    pub reference: PathBuf,
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch_ratio: Option<f64>,
    pub max_mismatch_ratio: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<EvidenceFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<EvidenceFile>,
    pub note: String,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub blank_ms: u128,
    /// Navigation, `DOMContentLoaded` and the quiet window.
    pub load_ms: u128,
    pub quiet_window_ms: u64,
    pub steps_ms: u128,
    /// Of `steps_ms`, the screenshots after the steps.
    pub step_screenshots_ms: u128,
    pub collect_ms: u128,
    pub screenshot_ms: u128,
    pub diff_ms: u128,
    pub total_ms: u128,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Screenshot {
    #[serde(flatten)]
    pub file: EvidenceFile,
    pub width: u32,
    pub height: u32,
    pub clipped: bool,
}

/// The persisted report (`formatVersion` 1).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub format_version: u32,
    pub id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u128,
    pub session: String,
    /// The URL named: exactly what was asked for (path, query and fragment).
    pub requested_url: String,
    /// The document's URL once loaded, before any step (differs from the
    /// requested one after a redirect).
    pub loaded_url: String,
    /// The page's URL when it was checked, after the steps.
    pub url: String,
    pub title: String,
    pub viewport: crate::preview::Viewport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Fingerprint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Value>,
    pub document_status: Option<u16>,
    pub steps: Vec<StepOutcome>,
    pub assertions: Vec<AssertionOutcome>,
    pub console_errors: Vec<Value>,
    pub console_warnings: usize,
    /// Development-mode notices of the app's framework (not the app's warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub framework_notices: Vec<String>,
    pub failed_requests: Vec<Value>,
    pub blocked_requests: Vec<Value>,
    /// What the lists above left out.
    #[serde(skip_serializing_if = "Omitted::is_none")]
    pub omitted: Omitted,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<Screenshot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffOutcome>,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub timings: Timings,
    /// Where this report is stored.
    pub report_path: Option<PathBuf>,
    /// The same report for people: self-contained HTML beside the JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html_path: Option<PathBuf>,
}

impl Report {
    /// A report before anything was observed (its judgement says so).
    pub(super) fn blank(
        session: &str,
        viewport: crate::preview::Viewport,
        requested_url: &str,
        context: &VerifyContext,
    ) -> Self {
        Self {
            format_version: REPORT_FORMAT_VERSION,
            id: format!("verify-{}", now_ms()),
            created_at_ms: now_ms(),
            session: session.to_owned(),
            requested_url: requested_url.to_owned(),
            loaded_url: String::new(),
            url: String::new(),
            title: String::new(),
            viewport,
            source: context.source_dir.as_deref().map(fingerprint),
            runtime: context.runtime.clone(),
            document_status: None,
            steps: Vec::new(),
            assertions: Vec::new(),
            console_errors: Vec::new(),
            console_warnings: 0,
            framework_notices: Vec::new(),
            failed_requests: Vec::new(),
            blocked_requests: Vec::new(),
            omitted: Omitted::default(),
            screenshot: None,
            diff: None,
            judgement: judge(&Observed::default()),
            timings: Timings::default(),
            report_path: None,
            html_path: None,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}
