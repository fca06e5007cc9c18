//! A profile as Chrome trace event JSON (`dshkit devtools profile --trace FILE`),
//! the format Perfetto, `chrome://tracing` and Chrome DevTools' performance
//! panel open: `{"traceEvents": [...]}` with one complete event (`ph: "X"`,
//! `ts` and `dur` in µs) per traced dispatch, named by its event, and one per
//! listener call inside it, named by the listener's owner fiber. A waterfall's
//! listeners nest (each runs inside the `next()` of the one before). Every
//! slice is on the target's pid and its event loop's thread; `args` hold the
//! trace's metadata only (mode, counts, durations), never argument values.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::profile::Profile;
use crate::show::{CommandFailed, Shown};

/// Slices (complete events) a trace file holds at most; the dispatches past
/// it are left out whole, and the file says so (`otherData.dshkit`).
pub const MAX_TRACE_SLICES: usize = 10_000;
/// Characters of a slice's name (an event or a fiber name) kept.
pub const MAX_SLICE_NAME_CHARS: usize = 256;
/// The thread every slice is on: Cordis dispatches on Node's event loop.
const EVENT_LOOP_TID: u64 = 1;

/// A profile as a Chrome trace.
#[derive(Debug, Clone)]
pub struct ChromeTrace {
    /// `{"traceEvents": [...], "displayTimeUnit", "otherData"}`.
    pub json: Value,
    /// The complete events written: one per dispatch, one per listener called.
    pub slices: usize,
    /// Dispatches left out to keep [`MAX_TRACE_SLICES`].
    pub left_out: usize,
}

/// One complete event before it is written.
#[derive(Debug, Clone, PartialEq)]
struct Slice {
    name: String,
    category: &'static str,
    ts: i64,
    dur: i64,
    args: Map<String, Value>,
}

impl Slice {
    fn end(&self) -> i64 {
        self.ts + self.dur
    }
}

/// The pid in a target id (`<pid>-<start time>-<epoch>`).
fn pid_of(target: &str) -> u64 {
    target
        .split('-')
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or(0)
}

fn bounded(name: &str) -> String {
    name.chars().take(MAX_SLICE_NAME_CHARS).collect()
}

fn micros(value: &Value) -> Option<i64> {
    if let Some(whole) = value.as_i64() {
        return Some(whole);
    }
    let fraction = value.as_f64()?;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "µs of a trace: far inside i64, saturating past it"
    )]
    let rounded = fraction.round() as i64;
    Some(rounded)
}

/// The slices of one trace: its dispatch, then each listener called, placed at
/// its `startUs` (a collector before it: one after the other, a waterfall's
/// next listener at its caller's `nextAtUs`) and kept inside the slice it
/// runs in, so the slices nest the way the calls did.
fn dispatch_slices(event: &str, lease: &str, trace: &Value, origin: i64) -> Vec<Slice> {
    let began = micros(&trace["atUs"])
        .or_else(|| micros(&trace["at"]).map(|ms| ms * 1000))
        .unwrap_or(origin)
        - origin;
    let waterfall = trace["mode"] == "waterfall";
    let mut listeners = Vec::new();
    let mut previous: Option<(i64, i64, Option<i64>)> = None;
    for l in trace["listeners"].as_array().into_iter().flatten() {
        if l["called"] != true {
            continue;
        }
        let dur = micros(&l["durationUs"]).unwrap_or(0).max(0);
        let offset = micros(&l["startUs"]).unwrap_or_else(|| match previous {
            Some((start, _, Some(next_at))) if waterfall => start + next_at,
            Some((start, dur, _)) => start + dur,
            None => 0,
        });
        previous = Some((offset, dur, micros(&l["nextAtUs"])));
        let mut args = Map::new();
        for key in [
            "index",
            "owner",
            "selfUs",
            "nextCalls",
            "lateNext",
            "async",
            "threw",
            "settledUs",
        ] {
            if !l[key].is_null() {
                args.insert(key.to_owned(), l[key].clone());
            }
        }
        let name = l["ownerName"].as_str().map_or_else(
            || match l["owner"].as_i64() {
                Some(owner) => format!("fiber {owner}"),
                None => format!("listener {}", l["index"]),
            },
            bounded,
        );
        listeners.push(Slice {
            name,
            category: "cordis.listener",
            ts: began + offset.max(0),
            dur,
            args,
        });
    }
    listeners.sort_by_key(|s| (s.ts, -s.dur));
    let end = listeners.iter().map(Slice::end).max().unwrap_or(began);
    let mut args = Map::new();
    args.insert("mode".into(), trace["mode"].clone());
    args.insert("trace".into(), trace["id"].clone());
    args.insert("lease".into(), json!(bounded(lease)));
    args.insert("listeners".into(), trace["listenerCount"].clone());
    args.insert("called".into(), json!(listeners.len()));
    let dispatch = Slice {
        name: bounded(event),
        category: "cordis.dispatch",
        ts: began,
        dur: end - began,
        args,
    };
    nest(dispatch, listeners)
}

/// `root` and its `children` (sorted by start), each child cut to end within
/// the innermost slice it starts in, so no two slices overlap without one
/// holding the other (a reader would misplace them).
fn nest(root: Slice, children: Vec<Slice>) -> Vec<Slice> {
    let mut out = vec![root];
    // Indices in `out` of the slices open at the current start.
    let mut open = vec![0];
    for mut child in children {
        while open.len() > 1 && out[*open.last().expect("root")].end() <= child.ts {
            open.pop();
        }
        let holder = &out[*open.last().expect("root")];
        child.ts = child.ts.clamp(holder.ts, holder.end());
        child.dur = child.dur.min(holder.end() - child.ts);
        out.push(child);
        open.push(out.len() - 1);
    }
    out
}

/// `profile` of target `target` as a Chrome trace, at most [`MAX_TRACE_SLICES`]
/// slices (whole dispatches; the rest counted in `otherData.dshkit.leftOut`).
pub fn chrome_trace(profile: &Profile, target: &str) -> ChromeTrace {
    let pid = pid_of(target);
    let origin = profile
        .traces
        .iter()
        .filter_map(|t| micros(&t["atUs"]).or_else(|| micros(&t["at"]).map(|ms| ms * 1000)))
        .min()
        .unwrap_or(0);
    let mut events = vec![
        json!({"ph": "M", "name": "process_name", "pid": pid, "tid": EVENT_LOOP_TID, "ts": 0,
               "args": {"name": format!("DSH (Cordis) pid {pid}")}}),
        json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": EVENT_LOOP_TID, "ts": 0,
               "args": {"name": "Cordis dispatches (event loop)"}}),
    ];
    let (mut slices, mut left_out) = (0, 0);
    for trace in &profile.traces {
        let dispatch = dispatch_slices(&profile.event, &profile.lease, trace, origin);
        if slices + dispatch.len() > MAX_TRACE_SLICES {
            left_out += 1;
            continue;
        }
        slices += dispatch.len();
        events.extend(dispatch.into_iter().map(|s| {
            json!({"ph": "X", "name": s.name, "cat": s.category, "pid": pid, "tid": EVENT_LOOP_TID,
                   "ts": s.ts, "dur": s.dur, "args": s.args})
        }));
    }
    let json = json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"dshkit": {
            "target": target,
            "event": profile.event,
            "lease": profile.lease,
            "startedAtUs": origin,
            "dispatches": profile.traces.len(),
            "slices": slices,
            "maxSlices": MAX_TRACE_SLICES,
            "truncated": left_out > 0,
            "leftOut": left_out,
        }},
    });
    ChromeTrace {
        json,
        slices,
        left_out,
    }
}

impl Profile {
    /// What `dshkit devtools profile` shows of this profile of `target`: its
    /// text and its JSON, after writing it as a Chrome trace to `trace` when
    /// asked (the JSON then names the file, its slices and what was left out).
    pub fn shown(&self, target: &str, trace: Option<&Path>) -> Result<Shown, CommandFailed> {
        let (mut text, mut json) = (self.text(), self.to_json());
        if let Some(path) = trace {
            let written = chrome_trace(self, target);
            written
                .write(path)
                .map_err(|e| CommandFailed(format!("failed to write {}: {e}", path.display())))?;
            text.push_str(&written.summary(path));
            text.push('\n');
            json["trace"] = json!({"file": path, "slices": written.slices, "truncated": written.left_out > 0,
                                   "leftOut": written.left_out});
        }
        Ok((text, json))
    }
}

impl ChromeTrace {
    /// Writes the trace to `path` atomically (a file beside it, renamed over it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&self.json).map_err(std::io::Error::other)?;
        dshkit_os::fs::write_atomic(path, bytes.as_slice())
    }

    /// What was written, in a line.
    pub fn summary(&self, path: &Path) -> String {
        let cut = if self.left_out > 0 {
            format!(
                " ({} dispatch(es) left out: a trace holds at most {MAX_TRACE_SLICES} slices)",
                self.left_out
            )
        } else {
            String::new()
        };
        format!(
            "Chrome trace with {} slices in {} (open it in Perfetto or chrome://tracing){cut}",
            self.slices,
            path.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn profile(traces: Vec<Value>) -> Profile {
        Profile {
            event: "custom/pipe".into(),
            lease: "lease-1".into(),
            held: Duration::from_secs(1),
            stopped: json!({}),
            traces,
        }
    }

    fn listener(index: u64, owner: &str, start: Option<i64>, dur: i64, next_at: Option<i64>) -> Value {
        json!({"index": index, "owner": index + 10, "ownerName": owner, "called": true,
               "startUs": start, "durationUs": dur, "selfUs": dur, "nextAtUs": next_at})
    }

    fn slices(trace: &ChromeTrace) -> Vec<(String, i64, i64)> {
        trace.json["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_owned(),
                    e["ts"].as_i64().unwrap(),
                    e["dur"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_dispatch_holds_its_listeners_where_they_ran_named_by_their_owners() {
        let trace = json!({"id": 1, "mode": "emit", "atUs": 5_000_000, "listenerCount": 3, "listeners": [
            listener(0, "dshkit", Some(2), 10, None),
            listener(1, "echo", Some(14), 5, None),
            {"index": 2, "called": false},
        ]});
        let written = chrome_trace(&profile(vec![trace]), "4242-77-9");
        assert_eq!(
            slices(&written),
            [
                ("custom/pipe".to_owned(), 0, 19),
                ("dshkit".to_owned(), 2, 10),
                ("echo".to_owned(), 14, 5)
            ]
        );
        assert_eq!(written.slices, 3);
        let events = written.json["traceEvents"].as_array().unwrap();
        assert!(
            events.iter().all(|e| e["pid"] == 4242 && e["tid"] == 1),
            "{events:?}"
        );
        assert_eq!(written.json["otherData"]["dshkit"]["truncated"], false);
    }

    #[test]
    fn a_waterfalls_listeners_nest_inside_the_next_that_called_them() {
        // Without startUs (a collector before it): the next one starts at nextAtUs.
        let trace = json!({"id": 1, "mode": "waterfall", "at": 7, "listenerCount": 2, "listeners": [
            listener(0, "outer", None, 30, Some(4)),
            listener(1, "inner", None, 40, None),
        ]});
        let written = chrome_trace(&profile(vec![trace]), "1-2-3");
        assert_eq!(
            slices(&written),
            [
                ("custom/pipe".to_owned(), 0, 44),
                ("outer".to_owned(), 0, 30),
                // Cut to end inside the slice it ran in.
                ("inner".to_owned(), 4, 26)
            ]
        );
    }

    #[test]
    fn a_trace_is_bounded_by_whole_dispatches_and_says_so() {
        let listeners: Vec<Value> = (0..64)
            .map(|i| listener(i, "many", Some(i64::try_from(i).unwrap() * 2), 1, None))
            .collect();
        let one = json!({"id": 1, "mode": "emit", "atUs": 0, "listenerCount": 64, "listeners": listeners});
        let traces = vec![one; MAX_TRACE_SLICES / 65 + 3];
        let written = chrome_trace(&profile(traces), "1-2-3");
        assert!(written.slices <= MAX_TRACE_SLICES);
        assert_eq!(written.slices % 65, 0, "no dispatch is cut in two");
        assert_eq!(written.left_out, 3);
        assert_eq!(written.json["otherData"]["dshkit"]["truncated"], true);
        assert!(
            written
                .summary(Path::new("t.json"))
                .contains("3 dispatch(es) left out")
        );
    }

    #[test]
    fn names_are_bounded_and_a_file_is_written_whole() {
        let long = "x".repeat(MAX_SLICE_NAME_CHARS * 2);
        let trace = json!({"id": 1, "mode": "emit", "atUs": 0, "listenerCount": 1,
                           "listeners": [listener(0, &long, Some(0), 1, None)]});
        let written = chrome_trace(&profile(vec![trace]), "1-2-3");
        assert_eq!(slices(&written)[1].0.len(), MAX_SLICE_NAME_CHARS);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.json");
        written.write(&path).unwrap();
        let read: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read, written.json);
    }
}
