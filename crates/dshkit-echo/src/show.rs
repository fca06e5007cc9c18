//! What the `dshkit echo` commands show of cassettes and contracts: each view
//! computed from the cassette, and its text as the CLI prints it (its JSON is
//! the view serialized). Every view reads record by record, so a cassette of
//! any size is shown in bounded memory.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cassette::Records;
use crate::contract::{Change, Contract, Severity, diff};
use crate::error::{CassetteError, ContractError, EchoError};
use crate::lint::{Finding, Linter, entry};
use crate::recorder::RecordSummary;
use crate::redact::{self, Redactor};
use crate::replay::ReplaySummary;
use crate::verify::{Check, Outcome, Target, VerifyOptions, verify};

/// Timeline lines handed to the writer at once by [`inspect`].
pub const INSPECT_CHUNK: usize = 1024;

/// The line saying what a recording wrote.
pub fn recorded_note(summary: &RecordSummary) -> String {
    format!(
        "recorded {} interaction(s), {} message(s){} into {}",
        summary.interactions,
        summary.messages,
        if summary.raw_lines > 0 {
            format!(", {} non-JSON line(s)", summary.raw_lines)
        } else {
            String::new()
        },
        summary
            .cassette
            .as_deref()
            .map_or_else(|| "(nothing)".into(), |p| p.display().to_string())
    )
}

/// The built-in rules and the environment's secrets, no pattern of the caller's.
pub(crate) fn plain_redactor() -> Redactor {
    Redactor::new(&[], &[]).expect("without a caller's pattern there is none to refuse")
}

/// The serialized name of a unit enum value (`"breaking"`, `"match"`).
pub(crate) fn wire_name(value: impl Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// What a replay over stdio did, for its note on stderr.
pub fn replayed_note(summary: &ReplaySummary) -> String {
    format!(
        "{} hit(s), {} miss(es), {} passthrough(s)",
        summary.hits, summary.misses, summary.passthroughs
    )
}

/// What `echo record --mode new-episodes` over an existing cassette did.
pub fn appended_note(summary: &ReplaySummary, cassette: &Path) -> String {
    format!(
        "{} replayed, {} new episode(s) appended to {}",
        summary.hits,
        summary.passthroughs,
        cassette.display()
    )
}

/// The line `echo redact` prints: whether anything in the cassette was replaced.
pub fn redacted_text(cassette: &Path, changed: bool) -> String {
    let what = if changed {
        "secrets replaced by placeholders"
    } else {
        "nothing to redact"
    };
    format!("{}: {what}\n", cassette.display())
}

/// `echo verify`: the recorded requests sent to the live server, each answer compared.
#[derive(Debug, Serialize)]
pub struct Verified {
    pub checks: Vec<Check>,
    /// Requests whose answer did not match.
    pub drift: usize,
}

/// Refuses a damaged cassette before any request reaches the server (one pass),
/// then sends its requests (a second pass); neither holds the cassette in memory.
pub async fn verify_cassette(
    path: &Path,
    target: &Target,
    options: VerifyOptions,
) -> Result<Verified, EchoError> {
    let records = Records::open(path).and_then(|mut records| {
        records.try_for_each(|record| record.map(drop))?;
        Records::open(path)
    })?;
    let checks = verify(records, target, options).await?;
    let drift = checks.iter().filter(|c| c.outcome != Outcome::Match).count();
    Ok(Verified { checks, drift })
}

impl Verified {
    pub fn text(&self) -> String {
        let mut text = String::new();
        for check in &self.checks {
            let request = match &check.tool {
                Some(tool) => format!("{} {tool}", check.method),
                None => check.method.clone(),
            };
            text.push_str(&format!(
                "#{:<4} {:<22} {:<36}{}{}\n",
                check.ordinal,
                wire_name(check.outcome),
                request,
                if check.paths.is_empty() {
                    String::new()
                } else {
                    format!(" at {:?}", check.paths)
                },
                check
                    .detail
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        }
        text.push_str(&format!(
            "{} request(s), {} drifted\n",
            self.checks.len(),
            self.drift
        ));
        text
    }
}

/// The changes between two tool contracts, counted by severity.
#[derive(Debug)]
pub struct ContractDiff {
    pub changes: Vec<Change>,
    pub breaking: usize,
    pub dangerous: usize,
    pub minor: usize,
    pub info: usize,
}

impl ContractDiff {
    /// Reads both contracts (cassettes or snapshots) and compares them.
    pub fn read(old: &Path, new: &Path) -> Result<Self, ContractError> {
        Ok(Self::new(diff(&Contract::read(old)?, &Contract::read(new)?)))
    }

    pub fn new(changes: Vec<Change>) -> Self {
        let count = |s: Severity| changes.iter().filter(|c| c.severity == s).count();
        Self {
            breaking: count(Severity::Breaking),
            dangerous: count(Severity::Dangerous),
            minor: count(Severity::Minor),
            info: count(Severity::Info),
            changes,
        }
    }

    /// Whether a change breaks or endangers a client.
    pub fn has_risk(&self) -> bool {
        self.breaking + self.dangerous > 0
    }

    /// `echo diff --json`.
    pub fn to_json(&self) -> Value {
        json!({ "changes": self.changes, "breaking": self.breaking, "dangerous": self.dangerous })
    }

    /// `echo diff`: one aligned line per change, then the counts.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for change in &self.changes {
            text.push_str(&format!(
                "{:<9} {:<36} {}{}: {}\n",
                wire_name(change.severity),
                change.rule,
                change.tool,
                if change.path.is_empty() {
                    String::new()
                } else {
                    format!(" {}", change.path)
                },
                change.message
            ));
        }
        text.push_str(&format!(
            "{} change(s): {} breaking, {} dangerous, {} minor, {} info\n",
            self.changes.len(),
            self.breaking,
            self.dangerous,
            self.minor,
            self.info
        ));
        text
    }

    /// The diff for an agent: at most `max` changes listed, the text and the
    /// structured result redacted.
    pub fn bounded(self, max: usize) -> (String, Value) {
        let total = self.changes.len();
        let truncated = total > max;
        let mut text = format!(
            "{total} change(s): {} breaking, {} dangerous, {} minor, {} info{}\n",
            self.breaking,
            self.dangerous,
            self.minor,
            self.info,
            if truncated {
                format!(" (first {max} listed)")
            } else {
                String::new()
            }
        );
        let shown: Vec<_> = self.changes.into_iter().take(max).collect();
        for change in &shown {
            text.push_str(&format!(
                "{:?} {} {} {}: {}\n",
                change.severity, change.rule, change.tool, change.path, change.message
            ));
        }
        let mut structured = json!({ "changes": shown, "total": total, "breaking": self.breaking, "dangerous": self.dangerous, "truncated": truncated });
        let redactor = plain_redactor();
        redactor.value(&mut structured);
        (redactor.text(&text), structured)
    }
}

/// A contract snapshot of `path` (redacted, pretty JSON and a newline), with its
/// number of tools; `None` when the cassette holds no `tools/list` answer.
pub fn snapshot(path: &Path) -> Result<Option<(String, usize)>, ContractError> {
    let contract = Contract::read(path)?;
    if contract.tools.is_empty() {
        return Ok(None);
    }
    let mut snapshot = contract.to_snapshot();
    plain_redactor().value(&mut snapshot);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&snapshot).expect("a snapshot serializes")
    );
    Ok(Some((text, contract.tools.len())))
}

/// `echo lint`: the linter's findings, then the reader's warnings.
pub fn lint(path: &Path) -> Result<Vec<Finding>, CassetteError> {
    let mut records = Records::open(path)?;
    let mut linter = Linter::new(records.header());
    for record in records.by_ref() {
        linter.record(&record?);
    }
    let mut findings = linter.finish();
    for warning in records.warnings().iter().cloned() {
        findings.push(Finding {
            level: "warning",
            rule: "reader",
            message: warning,
        });
    }
    Ok(findings)
}

/// The text of [`lint`]'s findings for the cassette at `path`.
pub fn lint_text(path: &Path, findings: &[Finding]) -> String {
    if findings.is_empty() {
        return format!("{}: ok\n", path.display());
    }
    findings.iter().fold(String::new(), |mut text, f| {
        text.push_str(&format!(
            "{}: {} [{}] {}\n",
            path.display(),
            f.level,
            f.rule,
            f.message
        ));
        text
    })
}

/// `echo redact --scan`: the secrets left in the cassette at `path`. It is read
/// as a cassette first, so a file that is none is refused as `lint`, `replay`
/// and `redact` refuse it, never called clean.
pub fn scan(path: &Path, redactor: &Redactor) -> Result<Vec<redact::Finding>, CassetteError> {
    let mut records = Records::open(path)?;
    for record in records.by_ref() {
        record?;
    }
    let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
        path: path.to_owned(),
        action: crate::error::Action::Read,
        source,
    })?;
    Ok(redactor.scan(&text))
}

/// The text of a secret scan of the file at `path`.
pub fn scan_text(path: &Path, found: &[redact::Finding]) -> String {
    if found.is_empty() {
        return format!("{}: no secrets found\n", path.display());
    }
    found.iter().fold(String::new(), |mut text, f| {
        let place = if f.column > 0 {
            format!("{}:{}", f.line, f.column)
        } else {
            f.line.to_string()
        };
        text.push_str(&format!(
            "{}:{place}: secret ({}) {}\n",
            path.display(),
            f.rule,
            f.hint
        ));
        text
    })
}

/// `echo inspect`: the cassette's header and timeline, as text or as one JSON
/// document, handed to `write` in chunks of [`INSPECT_CHUNK`] entries as they
/// are read.
pub fn inspect(path: &Path, as_json: bool, mut write: impl FnMut(&str)) -> Result<(), CassetteError> {
    let mut records = Records::open(path)?;
    let header = records.header().clone();
    let mut chunk = String::new();
    if as_json {
        let header = serde_json::to_string(&header).expect("a header serializes");
        chunk.push_str(&format!("{{\n  \"header\": {header},\n  \"timeline\": ["));
    } else {
        chunk.push_str(&format!(
            "{} · {} · era {} · protocol {} · server {} · recorded by {}{}\n",
            path.display(),
            header.transport,
            header.era,
            header.protocol_version.as_deref().unwrap_or("?"),
            header.server_info.as_ref().map_or_else(
                || "?".into(),
                |s| format!(
                    "{} {}",
                    s["name"].as_str().unwrap_or("?"),
                    s["version"].as_str().unwrap_or("")
                )
            ),
            header.recorder,
            if header.redacted { " · redacted" } else { "" }
        ));
    }
    for (index, record) in records.by_ref().enumerate() {
        let entry = entry(&record?);
        if as_json {
            let separator = if index == 0 { "\n    " } else { ",\n    " };
            chunk.push_str(separator);
            chunk.push_str(&serde_json::to_string(&entry).expect("an entry serializes"));
        } else {
            chunk.push_str(&format!(
                "{:>5} {:<16} {:<26} {}{}{}{}\n",
                entry.ordinal.map_or_else(|| "-".into(), |o| format!("#{o}")),
                entry.kind,
                entry.method,
                entry.summary,
                entry.ms.map(|ms| format!("  {ms} ms")).unwrap_or_default(),
                if entry.notifications > 0 {
                    format!("  +{} notification(s)", entry.notifications)
                } else {
                    String::new()
                },
                if entry.is_error { "  ERROR" } else { "" }
            ));
        }
        if index % INSPECT_CHUNK == INSPECT_CHUNK - 1 {
            write(&std::mem::take(&mut chunk));
        }
    }
    if as_json {
        let warnings = serde_json::to_string(records.warnings()).expect("strings serialize");
        chunk.push_str(&format!("\n  ],\n  \"warnings\": {warnings}\n}}\n"));
    } else {
        for warning in records.warnings() {
            chunk.push_str(&format!("warning: {warning}\n"));
        }
    }
    write(&chunk);
    Ok(())
}
