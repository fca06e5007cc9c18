//! The shape of a Cordis runtime as the collector reports it, and the mechanical
//! candidates read from it. A candidate is a fact worth a look, never a cause.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One fiber (a loaded plugin instance).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fiber {
    /// Stable id: the first uid the collector saw (Cordis clears uids at disposal).
    pub id: i64,
    pub uid: Option<i64>,
    pub name: String,
    pub state: String,
    pub parent: Option<i64>,
    pub effects: u32,
    #[serde(rename = "effectLabels", default)]
    pub effect_labels: Vec<String>,
}

/// One registered listener of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    pub owner: Option<i64>,
    #[serde(rename = "ownerName")]
    pub owner_name: Option<String>,
    #[serde(rename = "ownerState")]
    pub owner_state: Option<String>,
    pub prepend: bool,
    pub global: bool,
}

/// An event and its listeners, in dispatch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub name: String,
    pub listeners: Vec<Listener>,
}

/// A loader entry (a row of the profile's configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub name: Option<String>,
    pub disabled: bool,
    pub group: bool,
}

/// The runtime at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub at: u64,
    pub fibers: Vec<Fiber>,
    #[serde(rename = "fibersTotal")]
    pub fibers_total: usize,
    pub events: Vec<Event>,
    #[serde(rename = "eventsTotal")]
    pub events_total: usize,
    pub services: Vec<String>,
    #[serde(default)]
    pub entries: Vec<Entry>,
    /// What the running or last experiment showed, when there was one.
    #[serde(default)]
    pub experiment: Option<ExperimentFindings>,
}

/// A listener an experiment saw call `next()` more than once in one dispatch, or
/// after it returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NextFinding {
    pub owner: Option<i64>,
    pub owner_name: Option<String>,
    /// Traced dispatches it took part in.
    pub traces: u32,
    pub max_next_calls: u32,
    /// Traced dispatches in which it called `next()` after returning.
    pub late_next: u32,
}

/// The running or last experiment, as far as candidates go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentFindings {
    pub lease: String,
    pub event: String,
    pub running: bool,
    /// `identical`, `mismatch` or `conflict` once it ended.
    pub restored: Option<String>,
    pub listeners: Vec<NextFinding>,
}

/// A mechanical finding: what was seen, where, and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub kind: &'static str,
    pub subject: String,
    pub detail: String,
}

impl Topology {
    pub fn fiber(&self, id: i64) -> Option<&Fiber> {
        self.fibers.iter().find(|f| f.id == id)
    }

    /// Live fibers (not disposed) per name.
    fn live_names(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for fiber in self.fibers.iter().filter(|f| f.state != "disposed") {
            *counts.entry(fiber.name.as_str()).or_default() += 1;
        }
        counts
    }

    /// Listeners per (event, owner, prepend, global).
    fn registrations(&self) -> BTreeMap<(&str, Option<i64>, bool, bool), usize> {
        let mut counts = BTreeMap::new();
        for event in &self.events {
            for l in &event.listeners {
                *counts
                    .entry((event.name.as_str(), l.owner, l.prepend, l.global))
                    .or_default() += 1;
            }
        }
        counts
    }

    /// Candidates in `self`, with `baseline` (the runtime when the collector
    /// started) as the normal counts.
    pub fn candidates(&self, baseline: &Self) -> Vec<Candidate> {
        let mut found = Vec::new();
        for fiber in self.fibers.iter().filter(|f| f.state == "failed") {
            found.push(Candidate {
                kind: "failed-fiber",
                subject: format!("fiber {} ({})", fiber.id, fiber.name),
                detail: "the fiber is in state failed".into(),
            });
        }
        let normal = baseline.live_names();
        for (name, count) in self.live_names() {
            let before = normal.get(name).copied().unwrap_or(0).max(1);
            if count > before {
                found.push(Candidate {
                    kind: "duplicate-fiber-name",
                    subject: format!("plugin {name}"),
                    detail: format!("{count} live fibers named {name}; {before} when collection started"),
                });
            }
        }
        let normal = baseline.registrations();
        for ((event, owner, prepend, global), count) in self.registrations() {
            let before = normal
                .get(&(event, owner, prepend, global))
                .copied()
                .unwrap_or(0)
                .max(1);
            if count > before {
                let owner_name = owner.and_then(|id| self.fiber(id)).map_or_else(
                    || owner.map_or("?".to_owned(), |id| format!("fiber {id}")),
                    |f| format!("fiber {} ({})", f.id, f.name),
                );
                let owner_name = if owner == Some(0) {
                    "root".to_owned()
                } else {
                    owner_name
                };
                found.push(Candidate {
                    kind: "equivalent-registrations",
                    subject: format!("event {event}"),
                    detail: format!(
                        "{count} listeners with the same owner ({owner_name}) and position (prepend {prepend}, global {global}); {} when collection started",
                        before.min(normal.get(&(event, owner, prepend, global)).copied().unwrap_or(0))
                    ),
                });
            }
        }
        if let Some(experiment) = &self.experiment {
            experiment.candidates(&mut found);
        }
        for event in &self.events {
            for l in &event.listeners {
                if let Some(state @ ("disposed" | "failed")) = l.owner_state.as_deref() {
                    found.push(Candidate {
                        kind: "listener-of-inactive-owner",
                        subject: format!("event {}", event.name),
                        detail: format!(
                            "a listener is owned by {} ({}), which is {state}",
                            l.owner.map_or("?".into(), |id| format!("fiber {id}")),
                            l.owner_name.as_deref().unwrap_or("?")
                        ),
                    });
                }
            }
        }
        found
    }
}

impl ExperimentFindings {
    fn candidates(&self, found: &mut Vec<Candidate>) {
        let subject = || format!("event {}", self.event);
        for l in &self.listeners {
            let owner = format!(
                "{} ({})",
                l.owner.map_or("?".into(), |o| format!("fiber {o}")),
                l.owner_name.as_deref().unwrap_or("?")
            );
            if l.max_next_calls > 1 {
                found.push(Candidate {
                    kind: "repeated-next",
                    subject: subject(),
                    detail: format!(
                        "the listener of {owner} called next() up to {} times in one dispatch (lease {}, {} traced dispatches)",
                        l.max_next_calls, self.lease, l.traces
                    ),
                });
            }
            if l.late_next > 0 {
                found.push(Candidate {
                    kind: "late-next",
                    subject: subject(),
                    detail: format!(
                        "the listener of {owner} called next() after it returned in {} of {} traced dispatches (lease {})",
                        l.late_next, l.traces, self.lease
                    ),
                });
            }
        }
        match self.restored.as_deref() {
            Some("conflict") => found.push(Candidate {
                kind: "instrumentation-conflict",
                subject: subject(),
                detail: format!(
                    "something replaced events.dispatch during lease {}; it was left in place and the experiment's wrapper became a pass-through",
                    self.lease
                ),
            }),
            Some("mismatch") => found.push(Candidate {
                kind: "instrumentation-conflict",
                subject: subject(),
                detail: format!(
                    "after lease {} events.dispatch is not the one found before it",
                    self.lease
                ),
            }),
            _ => {}
        }
    }
}

/// A checkpoint's record of the runtime's shape: one canonical line per item
/// (`fiber:<id>`, `event:<name>`, `service:<name>`, `entry:<id>`), so two
/// digests compare item by item.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Digest(BTreeMap<String, String>);

/// Items a comparison lists per kind of change at most.
pub const MAX_COMPARED: usize = 100;

/// One item that differs between a checkpoint and now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemChange {
    /// `fiber`, `event`, `service` or `entry`.
    pub scope: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
}

/// What changed between a checkpoint and now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    pub checkpoint: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub added: Vec<ItemChange>,
    pub removed: Vec<ItemChange>,
    pub changed: Vec<ItemChange>,
    /// Counts before the lists were cut at [`MAX_COMPARED`].
    pub totals: BTreeMap<&'static str, usize>,
    pub truncated: bool,
}

impl Digest {
    pub fn of(topology: &Topology) -> Self {
        let mut items = BTreeMap::new();
        for f in &topology.fibers {
            items.insert(
                format!("fiber:{}", f.id),
                format!(
                    "{} {} parent={} effects={}",
                    f.name,
                    f.state,
                    f.parent.map_or("-".into(), |p| p.to_string()),
                    f.effects
                ),
            );
        }
        for e in &topology.events {
            let owners: Vec<String> = e
                .listeners
                .iter()
                .map(|l| {
                    format!(
                        "{}{}{}",
                        l.owner.map_or("?".into(), |o| o.to_string()),
                        if l.prepend { "^" } else { "" },
                        if l.global { "*" } else { "" }
                    )
                })
                .collect();
            items.insert(
                format!("event:{}", e.name),
                format!("{} listener(s): {}", e.listeners.len(), owners.join(" ")),
            );
        }
        for s in &topology.services {
            items.insert(format!("service:{s}"), "present".into());
        }
        for e in &topology.entries {
            items.insert(
                format!("entry:{}", e.id),
                format!(
                    "{}{}{}",
                    e.name.as_deref().unwrap_or("?"),
                    if e.disabled { " disabled" } else { "" },
                    if e.group { " group" } else { "" }
                ),
            );
        }
        Self(items)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `self` (the checkpoint) against `now`.
    pub fn compare(&self, now: &Self, checkpoint: &str, from_ms: u64, to_ms: u64) -> Comparison {
        let split = |key: &str| {
            let (scope, key) = key.split_once(':').unwrap_or(("?", key));
            (scope.to_owned(), key.to_owned())
        };
        let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
        for (key, value) in &now.0 {
            match self.0.get(key) {
                None => added.push((key, None, Some(value))),
                Some(was) if was != value => changed.push((key, Some(was), Some(value))),
                Some(_) => {}
            }
        }
        for (key, value) in &self.0 {
            if !now.0.contains_key(key) {
                removed.push((key, Some(value), None));
            }
        }
        let totals = BTreeMap::from([
            ("added", added.len()),
            ("removed", removed.len()),
            ("changed", changed.len()),
        ]);
        let truncated = totals.values().any(|n| *n > MAX_COMPARED);
        let list = |items: Vec<(&String, Option<&String>, Option<&String>)>| {
            items
                .into_iter()
                .take(MAX_COMPARED)
                .map(|(key, was, now)| {
                    let (scope, key) = split(key);
                    ItemChange {
                        scope,
                        key,
                        was: was.cloned(),
                        now: now.cloned(),
                    }
                })
                .collect()
        };
        Comparison {
            checkpoint: checkpoint.to_owned(),
            from_ms,
            to_ms,
            added: list(added),
            removed: list(removed),
            changed: list(changed),
            totals,
            truncated,
        }
    }
}
