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
