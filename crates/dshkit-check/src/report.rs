//! The result of a check run: `{ok, checks}`, each check
//! `{id, name, status, detail, evidence}` with a stable English id.

use serde::Serialize;

/// What a check concluded. `not_tested` is neither a pass nor a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Warn,
    NotTested,
}

/// One check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable id, e.g. `syntax`.
    pub id: &'static str,
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    /// Positions and facts behind the status (`file:line:col: message`, ...),
    /// at most [`MAX_EVIDENCE`] entries.
    pub evidence: Vec<String>,
}

/// Most evidence lines one check keeps; the detail says how many were cut.
pub const MAX_EVIDENCE: usize = 50;

impl Check {
    pub fn new(id: &'static str, name: &'static str, status: Status, detail: impl Into<String>) -> Self {
        Self {
            id,
            name,
            status,
            detail: detail.into(),
            evidence: Vec::new(),
        }
    }

    /// Adds evidence, keeping at most [`MAX_EVIDENCE`] lines and saying when cut.
    #[must_use]
    pub fn with_evidence(mut self, evidence: Vec<String>) -> Self {
        let total = evidence.len();
        self.evidence = evidence.into_iter().take(MAX_EVIDENCE).collect();
        if total > MAX_EVIDENCE {
            self.detail
                .push_str(&format!(" ({} more not shown)", total - MAX_EVIDENCE));
        }
        self
    }
}

/// The whole result. `ok` is false when any check failed; `not_tested` and `warn`
/// do not make it false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Self {
        Self {
            ok: checks.iter().all(|c| c.status != Status::Fail),
            checks,
        }
    }

    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}
