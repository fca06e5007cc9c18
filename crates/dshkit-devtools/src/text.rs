//! What `dshkit devtools` shows people: each result of the debug core as the
//! text the command prints (its JSON is the result serialized), the saved
//! checkpoint format, and the finite profile of one event.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::core::{DebugCore, Snapshot, WaitFor};
use crate::error::DebugError;
use crate::journal::Filter;
use crate::journal::Record;
use crate::limits::{MAX_LEASE, MAX_PAGE, MAX_WAIT};
use crate::target::Target;
use crate::topology::{Comparison, Digest, Event, Fiber};

/// The targets of `registry`, one line each.
pub fn targets_text(registry: &Path, targets: &[Target]) -> String {
    if targets.is_empty() {
        return format!(
            "no debug targets in {}: no live DSH runs the dshkit plugin with the collector (`dshkit dsh install --devtools`)\n",
            registry.display()
        );
    }
    let mut lines = String::new();
    for t in targets {
        lines.push_str(&target_line(&t.id, &t.label, t.pid, t.problem.as_deref()));
    }
    lines
}

/// One target's line: id, label, pid and what keeps this dshkit from using it.
pub fn target_line(id: &str, label: &str, pid: impl std::fmt::Display, problem: Option<&str>) -> String {
    let mut line = format!("{id}  {label}  pid {pid}");
    if let Some(problem) = problem {
        let _ = write!(line, "  ({problem})");
    }
    line.push('\n');
    line
}

/// The counts of a snapshot and its candidates.
pub fn snapshot_text(target: &str, snapshot: &Snapshot) -> String {
    let t = &snapshot.topology;
    let candidates: Vec<Value> = snapshot.candidates.iter().map(|c| json!(c)).collect();
    counts_text(
        target,
        [t.fibers_total, t.events_total, t.services.len(), t.entries.len()],
        &candidates,
    )
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

/// A finite profile of one event: its lease, how long it was held, and every trace.
#[derive(Debug)]
pub struct Profile {
    pub event: String,
    pub lease: String,
    pub held: Duration,
    pub stopped: Value,
    pub traces: Vec<Value>,
}

/// Why a profile did not run to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("a profile lasts at most {}s", MAX_LEASE.as_secs())]
    TooLong,
    #[error(transparent)]
    Debug(#[from] DebugError),
}

/// Profiles `event` for `ttl`: a lease a little longer than the window (so the
/// window's own end, not the collector's timer, stops it; the collector's timer
/// covers this process's death), then every trace of it, page by page.
/// `started` is told the lease once it runs.
pub async fn profile(
    core: &DebugCore,
    session: &str,
    event: &str,
    ttl: Duration,
    started: impl FnOnce(&str),
) -> Result<Profile, ProfileError> {
    if ttl > MAX_LEASE {
        return Err(ProfileError::TooLong);
    }
    let lease_for = (ttl + Duration::from_secs(2)).min(MAX_LEASE);
    let lease = core.start_experiment(session, event, lease_for).await?["lease"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    started(&lease);
    let began = tokio::time::Instant::now();
    tokio::time::sleep(ttl).await;
    let held = began.elapsed();
    let stopped = core.stop_experiment(session, &lease).await?;
    let mut traces = Vec::new();
    let mut cursor = 0;
    loop {
        let page = core.traces(session, Some(&lease), cursor, MAX_PAGE).await?;
        traces.extend(page["traces"].as_array().cloned().unwrap_or_default());
        match page["cursor"].as_u64() {
            Some(next) => cursor = usize::try_from(next).unwrap_or(usize::MAX),
            None => break,
        }
    }
    Ok(Profile {
        event: event.to_owned(),
        lease,
        held,
        stopped,
        traces,
    })
}

impl Profile {
    pub fn to_json(&self) -> Value {
        json!({
            "lease": self.lease,
            "event": self.event,
            "heldMs": self.held.as_millis(),
            "restored": self.stopped["last"]["restored"],
            "tracesDropped": self.stopped["last"]["tracesDropped"],
            "traces": self.traces,
        })
    }

    /// Each trace with its listeners: time, self time, `next()` facts.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{}: {} dispatch(es) traced in {} ms (lease {}; original dispatch restored: {})\n",
            self.event,
            self.traces.len(),
            self.held.as_millis(),
            self.lease,
            self.stopped["last"]["restored"].as_str().unwrap_or("unknown")
        );
        for trace in &self.traces {
            text.push_str(&format!(
                "#{} {} at {}\n",
                trace["id"], trace["mode"], trace["at"]
            ));
            for l in trace["listeners"].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "  {}. {} (fiber {}): {}{}{}{}\n",
                    l["index"],
                    l["ownerName"].as_str().unwrap_or("?"),
                    l["owner"],
                    if l["called"] == true {
                        format!("{} µs, self {} µs", l["durationUs"], l["selfUs"])
                    } else {
                        "not called".to_owned()
                    },
                    if l["nextCalls"].is_null() {
                        String::new()
                    } else {
                        format!(", next() x{}", l["nextCalls"])
                    },
                    if l["lateNext"] == true {
                        ", next() after return"
                    } else {
                        ""
                    },
                    if l["async"] == true {
                        ", returned a promise"
                    } else {
                        ""
                    },
                ));
            }
        }
        text
    }
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
