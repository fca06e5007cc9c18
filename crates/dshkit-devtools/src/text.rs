//! What `dshkit devtools` shows people: each result of the debug core as the
//! text the command prints (its JSON is the result serialized), and the saved
//! checkpoint format.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::{DebugCore, WaitFor};
use crate::error::DebugError;
use crate::journal::Filter;
use crate::journal::Record;
use crate::limits::MAX_WAIT;
use crate::topology::{Comparison, Digest, Event, Fiber};

/// One target's line: id, label, pid and what keeps this dshkit from using it.
pub fn target_line(id: &str, label: &str, pid: impl std::fmt::Display, problem: Option<&str>) -> String {
    let mut line = format!("{id}  {label}  pid {pid}");
    if let Some(problem) = problem {
        let _ = write!(line, "  ({problem})");
    }
    line.push('\n');
    line
}

/// The counts of a runtime (fibers, events, services, loader entries) and its
/// candidates, each `{kind, subject, detail}`.
pub fn counts_text(
    target: &str,
    [fibers, events, services, entries]: [usize; 4],
    candidates: &[Value],
) -> String {
    let mut text = format!(
        "target {target}: {fibers} fibers, {events} events, {services} services, {entries} loader entries\n{} candidate(s) (facts to look at, never causes)\n",
        candidates.len()
    );
    for c in candidates {
        let show = |key: &str| c[key].as_str().unwrap_or_default().to_owned();
        let _ = writeln!(
            text,
            "  {}: {}: {}",
            show("kind"),
            show("subject"),
            show("detail")
        );
    }
    text
}

/// One event's listeners in dispatch order.
pub fn event_text(event: &Event) -> String {
    let mut text = format!(
        "{}: {} listener(s), in dispatch order\n",
        event.name,
        event.listeners.len()
    );
    for (i, l) in event.listeners.iter().enumerate() {
        text.push_str(&format!(
            "  {i}. fiber {} ({}) {}{}{}\n",
            l.owner.map_or("?".into(), |o| o.to_string()),
            l.owner_name.as_deref().unwrap_or("?"),
            l.owner_state.as_deref().unwrap_or("?"),
            if l.prepend { " prepend" } else { "" },
            if l.global { " global" } else { "" }
        ));
    }
    text
}

/// One line per fiber, or `no such fiber`.
pub fn fibers_text(fibers: &[Fiber]) -> String {
    let mut text = String::new();
    for f in fibers {
        let _ = writeln!(
            text,
            "fiber {} {} {} parent {} effects {}: {}",
            f.id,
            f.name,
            f.state,
            f.parent.map_or("-".into(), |p| p.to_string()),
            f.effects,
            f.effect_labels.join(", ")
        );
    }
    if text.is_empty() {
        "no such fiber\n".to_owned()
    } else {
        text
    }
}

/// What an emergency stop did.
pub fn stopped_text(stopped: &Value) -> String {
    if stopped["stopped"] == true {
        format!(
            "stopped lease {}; original dispatch restored: {}\n",
            stopped["last"]["lease"], stopped["last"]["restored"]
        )
    } else {
        "no experiment was running\n".to_owned()
    }
}

/// A checkpoint as `dshkit devtools checkpoint` saves it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedCheckpoint {
    pub target: String,
    pub at_ms: u64,
    pub digest: Digest,
}

/// Where a target's checkpoint is saved by default.
pub fn default_checkpoint(registry: &Path, target: &str) -> PathBuf {
    registry.join("checkpoints").join(format!("{target}.json"))
}

/// A saved checkpoint that cannot be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    #[error("no checkpoint at {}: run `dshkit devtools checkpoint` first", path.display())]
    Missing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    NotJson(serde_json::Error),
    #[error("{} is not a dshkit checkpoint", path.display())]
    Foreign {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads the checkpoint saved at `path`: its digest and when it was taken.
pub fn read_checkpoint(path: &Path) -> Result<(Digest, u64), CheckpointError> {
    let bytes = std::fs::read(path).map_err(|source| CheckpointError::Missing {
        path: path.to_owned(),
        source,
    })?;
    let saved: Value = serde_json::from_slice(&bytes).map_err(CheckpointError::NotJson)?;
    let digest =
        serde_json::from_value(saved["digest"].clone()).map_err(|source| CheckpointError::Foreign {
            path: path.to_owned(),
            source,
        })?;
    Ok((digest, saved["atMs"].as_u64().unwrap_or(0)))
}

/// What changed since a checkpoint, one line per item.
pub fn comparison_text(comparison: &Comparison) -> String {
    let mut text = format!(
        "since the checkpoint: {} added, {} removed, {} changed{}\n",
        comparison.totals["added"],
        comparison.totals["removed"],
        comparison.totals["changed"],
        if comparison.truncated {
            " (100 of each listed)"
        } else {
            ""
        }
    );
    for (sign, items) in [
        ("+", &comparison.added),
        ("-", &comparison.removed),
        ("~", &comparison.changed),
    ] {
        for item in items {
            text.push_str(&format!(
                "{sign} {} {}: {}\n",
                item.scope,
                item.key,
                match (&item.was, &item.now) {
                    (Some(was), Some(now)) => format!("{was} -> {now}"),
                    (Some(one), None) | (None, Some(one)) => one.clone(),
                    (None, None) => String::new(),
                }
            ));
        }
    }
    text
}

/// One journal record of a watch: its sequence, its kind and the rest.
pub fn record_line(record: &Record) -> String {
    record_value_line(&serde_json::to_value(record).expect("json"))
}

/// [`record_line`] of a record as JSON (as a wait's answer carries it).
pub fn record_value_line(value: &Value) -> String {
    let kind = value["kind"].as_str().unwrap_or("?").to_owned();
    let mut rest = value.as_object().cloned().unwrap_or_default();
    for key in ["kind", "seq", "at_ms"] {
        rest.remove(key);
    }
    format!("{} {kind} {}\n", value["seq"], Value::Object(rest))
}

/// What a watch saw, in order.
#[derive(Debug)]
pub enum Seen<'a> {
    /// One journal record.
    Record(&'a Record),
    /// Records fell out of the journal before they were read; reading goes on
    /// from this cursor.
    Gap(u64),
    /// The target went away (the watch ends).
    Gone(&'a DebugError),
}

impl Seen<'_> {
    /// The line a program reads (`watch --json` prints JSON Lines): a record as
    /// the journal has it, or `{"kind": "gap", "cursor"}`, or `{"kind":
    /// "target-gone", "code", "message"}`.
    pub fn json(&self) -> Value {
        match self {
            Self::Record(record) => serde_json::to_value(record).expect("json"),
            Self::Gap(cursor) => serde_json::json!({"kind": "gap", "cursor": cursor}),
            Self::Gone(error) => {
                serde_json::json!({"kind": "target-gone", "code": error.code(), "message": error.to_string()})
            }
        }
    }

    /// The line a person reads.
    pub fn text(&self) -> String {
        match self {
            Self::Record(record) => record_line(record),
            Self::Gap(cursor) => gap_line(*cursor),
            Self::Gone(error) => format!("{error}\n"),
        }
    }
}

/// What a watch says of records that fell out before they were read.
pub fn gap_line(cursor: u64) -> String {
    format!("gap: records fell out of the journal before they were read; reading on from {cursor}\n")
}

/// Watches the session's journal for `event` (anything when `None`) for
/// `duration` (until stopped when `None`), telling `seen` each record, gap and
/// the target's end; waits at most [`MAX_WAIT`] at a time.
pub async fn watch(
    core: &DebugCore,
    session: &str,
    event: Option<&str>,
    duration: Option<Duration>,
    mut seen: impl FnMut(Seen<'_>),
) -> Result<(), DebugError> {
    let until = duration.map(|d| tokio::time::Instant::now() + d);
    loop {
        let left = until.map_or(MAX_WAIT, |u| {
            u.saturating_duration_since(tokio::time::Instant::now())
        });
        if left.is_zero() {
            return Ok(());
        }
        let request = WaitFor {
            filter: Filter {
                kind: None,
                event: event.map(str::to_owned),
            },
            after: None,
            timeout: left.min(MAX_WAIT),
        };
        let result = match core.wait(session, &request).await {
            Ok(result) => result,
            Err(error @ DebugError::Stale { .. }) => {
                seen(Seen::Gone(&error));
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        if result.outcome == "gap" {
            seen(Seen::Gap(result.cursor()));
        }
        for record in &result.records {
            seen(Seen::Record(record));
        }
    }
}
