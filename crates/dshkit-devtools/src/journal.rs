//! The journal of one target: the last [`JOURNAL_CAPACITY`] facts, each with a
//! monotonic sequence number, and a signal waiters wake on.

use std::collections::VecDeque;

use serde::Serialize;

/// Records a target's journal keeps.
pub const JOURNAL_CAPACITY: usize = 500;

/// What a journal record says happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Change {
    /// An event was dispatched (before its listeners ran). Metadata only.
    DispatchObserved { mode: String, event: String, argc: u32 },
    /// The runtime's shape changed: a fiber's state, a new fiber, a listener, a service.
    TopologyInvalidated {
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        fiber: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        state: Option<String>,
    },
    /// An experiment traced a dispatch (or a traced dispatch went on: a late
    /// `next()`, a settled listener). The trace itself is read with `traces`.
    ProfilerTraceUpdated {
        lease: String,
        trace: u64,
        event: String,
        listeners: u32,
    },
    /// An experiment started or stopped (and how its original dispatch was restored).
    ProfilerStatusChanged {
        state: String,
        lease: String,
        event: String,
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        restored: Option<String>,
    },
    /// The collector dropped facts because this core read too slowly.
    FactsDropped { count: u64 },
    /// The channel closed: `host-disposed` when the collector said it was being
    /// disposed (DSH restarting in place, the plugin unloaded), else
    /// `target-disposed` (the process is gone).
    TargetDisposed { reason: String },
}

/// Every record type, as a wait's `type` filter names it.
pub const RECORD_TYPES: [&str; 6] = [
    "dispatch-observed",
    "topology-invalidated",
    "profiler-trace-updated",
    "profiler-status-changed",
    "facts-dropped",
    "target-disposed",
];

impl Change {
    /// The record's type (its `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::DispatchObserved { .. } => RECORD_TYPES[0],
            Self::TopologyInvalidated { .. } => RECORD_TYPES[1],
            Self::ProfilerTraceUpdated { .. } => RECORD_TYPES[2],
            Self::ProfilerStatusChanged { .. } => RECORD_TYPES[3],
            Self::FactsDropped { .. } => RECORD_TYPES[4],
            Self::TargetDisposed { .. } => RECORD_TYPES[5],
        }
    }

    /// The Cordis event the record is about, when it is about one.
    pub fn event(&self) -> Option<&str> {
        match self {
            Self::DispatchObserved { event, .. }
            | Self::ProfilerTraceUpdated { event, .. }
            | Self::ProfilerStatusChanged { event, .. } => Some(event),
            _ => None,
        }
    }
}

/// Which records a wait wants: of exactly this type and exactly this event
/// name, each when given (a record about no event never matches an event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub kind: Option<String>,
    pub event: Option<String>,
}

impl Filter {
    pub fn matches(&self, record: &Record) -> bool {
        self.kind
            .as_deref()
            .is_none_or(|kind| record.change.kind() == kind)
            && self
                .event
                .as_deref()
                .is_none_or(|event| record.change.event() == Some(event))
    }
}

/// One journal record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub seq: u64,
    /// Milliseconds since the Unix epoch, as the collector saw it.
    pub at_ms: u64,
    #[serde(flatten)]
    pub change: Change,
}

/// A bounded window of records.
#[derive(Debug)]
pub struct Journal {
    records: VecDeque<Record>,
    capacity: usize,
    next_seq: u64,
}

/// What a read of the window after a cursor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Sequence of the oldest and newest retained records (none when empty).
    pub oldest: Option<u64>,
    pub newest: Option<u64>,
    pub retained: usize,
    /// Records the journal keeps at most.
    pub capacity: usize,
    /// Records after the cursor fell out of the window before they were read.
    pub gap: bool,
}

impl Default for Journal {
    fn default() -> Self {
        Self::with_capacity(JOURNAL_CAPACITY)
    }
}

impl Journal {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            records: VecDeque::with_capacity(capacity.min(JOURNAL_CAPACITY)),
            capacity: capacity.max(1),
            next_seq: 1,
        }
    }

    /// Appends a record; the oldest falls out past the capacity. Returns its sequence.
    pub fn push(&mut self, at_ms: u64, change: Change) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.records.len() == self.capacity {
            self.records.pop_front();
        }
        self.records.push_back(Record { seq, at_ms, change });
        seq
    }

    /// Appends `count` records of the same change (a run of identical
    /// dispatches), each with its own sequence; of a run longer than the
    /// capacity only the newest are kept, the others count as fallen out.
    /// Returns the sequence of the last (of the one record if `count` is 0).
    pub fn push_repeated(&mut self, at_ms: u64, change: Change, count: u64) -> u64 {
        let count = count.max(1);
        let kept = count.min(self.capacity as u64);
        self.next_seq += count - kept;
        for _ in 1..kept {
            self.push(at_ms, change.clone());
        }
        self.push(at_ms, change)
    }

    /// The sequence the next record will get; a cursor at it has seen everything.
    pub fn head(&self) -> u64 {
        self.next_seq
    }

    pub fn window(&self, cursor: u64) -> Window {
        let oldest = self.records.front().map(|r| r.seq);
        Window {
            oldest,
            newest: self.records.back().map(|r| r.seq),
            retained: self.records.len(),
            capacity: self.capacity,
            // The first record the cursor has not seen (`cursor`) is gone.
            gap: oldest.is_some_and(|oldest| cursor < oldest) && cursor < self.next_seq,
        }
    }

    /// Records at or after `cursor` that match, oldest first, at most `limit`.
    pub fn after(&self, cursor: u64, limit: usize, matches: impl Fn(&Record) -> bool) -> Vec<Record> {
        self.records
            .iter()
            .filter(|r| r.seq >= cursor && matches(r))
            .take(limit)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(event: &str) -> Change {
        Change::DispatchObserved {
            mode: "emit".into(),
            event: event.into(),
            argc: 0,
        }
    }

    #[test]
    fn the_window_keeps_the_newest_records_and_reports_a_gap_for_an_old_cursor() {
        let mut journal = Journal::with_capacity(3);
        let cursor = journal.head();
        for event in ["a", "b", "c", "d"] {
            journal.push(0, dispatch(event));
        }
        let window = journal.window(cursor);
        assert_eq!(
            (window.oldest, window.newest, window.retained),
            (Some(2), Some(4), 3)
        );
        assert_eq!(window.capacity, 3);
        assert!(window.gap, "record 1 fell out before the cursor read it");
        assert!(!journal.window(2).gap);
        assert!(!journal.window(journal.head()).gap);
        let read = journal.after(3, 10, |_| true);
        assert_eq!(read.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4]);
    }

    #[test]
    fn a_run_of_dispatches_gets_one_sequence_each_and_only_the_newest_are_kept() {
        let mut journal = Journal::with_capacity(3);
        journal.push(0, dispatch("a"));
        let cursor = journal.head();
        assert_eq!(journal.push_repeated(0, dispatch("b"), 2), 3);
        assert_eq!(journal.after(cursor, 10, |_| true).len(), 2);
        assert!(!journal.window(cursor).gap);
        // Longer than the capacity: seqs 4..=8 were dispatched, 6..=8 are kept.
        assert_eq!(journal.push_repeated(0, dispatch("c"), 5), 8);
        let window = journal.window(cursor);
        assert_eq!(
            (window.oldest, window.newest, window.retained),
            (Some(6), Some(8), 3)
        );
        assert!(window.gap, "the cursor's records fell out");
        assert_eq!(journal.head(), 9);
        assert_eq!(
            journal.push_repeated(0, dispatch("d"), 0),
            9,
            "a count of 0 is one record"
        );
    }

    #[test]
    fn the_filter_selects_exactly_by_type_and_by_event_name() {
        let mut journal = Journal::with_capacity(10);
        journal.push(0, dispatch("custom/ping"));
        journal.push(0, dispatch("custom/ping-pong"));
        journal.push(
            0,
            Change::TopologyInvalidated {
                reason: "fiber".into(),
                fiber: Some(1),
                name: Some("custom/ping".into()),
                state: None,
            },
        );
        journal.push(
            0,
            Change::TargetDisposed {
                reason: "host-disposed".into(),
            },
        );
        let seqs = |filter: &Filter| -> Vec<u64> {
            journal
                .after(0, 10, |r| filter.matches(r))
                .iter()
                .map(|r| r.seq)
                .collect()
        };
        let filter = |kind: Option<&str>, event: Option<&str>| Filter {
            kind: kind.map(str::to_owned),
            event: event.map(str::to_owned),
        };
        assert_eq!(seqs(&filter(None, None)), [1, 2, 3, 4]);
        assert_eq!(
            seqs(&filter(None, Some("custom/ping"))),
            [1],
            "exact, not a substring, and a fiber name is no event"
        );
        assert_eq!(seqs(&filter(None, Some("custom/pi"))), Vec::<u64>::new());
        assert_eq!(seqs(&filter(Some("topology-invalidated"), None)), [3]);
        assert_eq!(
            seqs(&filter(Some("dispatch-observed"), Some("custom/ping-pong"))),
            [2]
        );
        assert_eq!(seqs(&filter(Some("dispatch"), None)), Vec::<u64>::new());
        assert_eq!(seqs(&filter(Some("target-disposed"), None)), [4]);
        for change in journal.after(0, 10, |_| true) {
            assert!(RECORD_TYPES.contains(&change.change.kind()));
            let kind = serde_json::to_value(&change).unwrap()["kind"].clone();
            assert_eq!(
                kind,
                change.change.kind(),
                "the type a filter names is the record's kind"
            );
        }
    }
}
