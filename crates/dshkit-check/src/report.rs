//! The result of a check run: `{ok, checks}`, each check
//! `{id, name, status, detail, evidence}` with a stable English id.

use std::path::PathBuf;

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
    /// The findings among them that have a place in a file, with their rule
    /// (at most [`MAX_EVIDENCE`]); what SARIF carries. Not in the JSON report,
    /// whose evidence lines say the same.
    #[serde(skip)]
    pub located: Vec<Located>,
    /// Evidence lines beyond the [`MAX_EVIDENCE`] kept.
    #[serde(skip)]
    pub omitted: usize,
}

/// A finding at a place in a file: its rule, how bad it is, where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// A stable rule id: a finer one than the check's (`import.not_found`),
    /// or the check's own (`syntax`).
    pub rule: &'static str,
    /// [`Status::Fail`] or [`Status::Warn`].
    pub status: Status,
    pub file: PathBuf,
    /// 1-based, and the column in characters, as editors count.
    pub line: usize,
    pub column: usize,
    pub message: String,
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
            located: Vec::new(),
            omitted: 0,
        }
    }

    /// Adds evidence, keeping at most [`MAX_EVIDENCE`] lines and saying when cut.
    #[must_use]
    pub fn with_evidence(mut self, evidence: Vec<String>) -> Self {
        let total = evidence.len();
        self.evidence = evidence.into_iter().take(MAX_EVIDENCE).collect();
        if total > MAX_EVIDENCE {
            self.omitted = total - MAX_EVIDENCE;
            self.detail
                .push_str(&format!(" ({} more not shown)", self.omitted));
        }
        self
    }

    /// Adds the findings that have a place, keeping at most [`MAX_EVIDENCE`].
    #[must_use]
    pub fn with_located(mut self, located: Vec<Located>) -> Self {
        self.located = located.into_iter().take(MAX_EVIDENCE).collect();
        self
    }
}

/// The whole result. `ok` is false when any check failed; `not_tested` and `warn`
/// do not make it false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub ok: bool,
    pub checks: Vec<Check>,
    /// What the static checks' cache did (hits, misses, damaged entries
    /// ignored), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::cache::CacheStats>,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Self {
        Self {
            ok: checks.iter().all(|c| c.status != Status::Fail),
            checks,
            cache: None,
        }
    }

    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}
