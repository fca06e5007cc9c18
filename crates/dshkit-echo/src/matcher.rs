//! Request matching for replay: ordered pools of recorded interactions per
//! key (the key is [`crate::key`]'s), the answer a live request takes from
//! them, and a near-miss explanation when nothing matches.

use std::borrow::Cow;
use std::hash::BuildHasherDefault;

use serde_json::{Value, json};

use crate::cassette::Interaction;
use crate::index::{CassetteIndex, Facts};
use crate::json_diff::differing_paths;
use crate::key::{ByKeyHash, MatchOptions, key, key_check, key_hash, method_only};
use crate::redact::Redactor;

/// Why a request found no recorded answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    UnknownTool {
        tool: String,
        recorded: Vec<String>,
    },
    ArgumentsDiffer {
        tool: String,
        paths: Vec<String>,
        /// The ordinal of the recorded call of the tool nearest to the live one.
        nearest: Option<u64>,
    },
    Exhausted {
        key: String,
        recorded: usize,
    },
    NotRecorded {
        method: String,
    },
    /// The recorded interaction that matched cannot be read or parsed.
    Damaged {
        reason: String,
    },
    /// The live request is JSON that cannot be matched (a number out of range).
    Unreadable {
        reason: String,
    },
}

impl Miss {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::ArgumentsDiffer { .. } => "arguments_differ",
            Self::Exhausted { .. } => "exhausted",
            Self::NotRecorded { .. } => "not_recorded",
            Self::Damaged { .. } => "damaged",
            Self::Unreadable { .. } => "unreadable",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::UnknownTool { tool, recorded } => {
                format!("tool `{tool}` was never called while recording; recorded tools: {recorded:?}")
            }
            Self::ArgumentsDiffer { tool, paths, .. } => {
                format!("`{tool}` was recorded, but with other arguments; they differ at {paths:?}")
            }
            Self::Exhausted { key, recorded } => {
                format!("`{key}` was recorded {recorded} time(s) and every answer is used")
            }
            Self::NotRecorded { method } => format!("no `{method}` request was recorded"),
            Self::Damaged { reason } => format!("the recorded answer is damaged: {reason}"),
            Self::Unreadable { reason } => format!("the request cannot be matched: {reason}"),
        }
    }

    /// The JSON-RPC error data of a miss.
    pub fn data(&self) -> Value {
        let mut data = json!({ "echo": "miss", "reason": self.reason(), "message": self.message() });
        match self {
            Self::UnknownTool { recorded, .. } => data["recordedTools"] = json!(recorded),
            Self::ArgumentsDiffer { paths, nearest, .. } => {
                data["differingPaths"] = json!(paths);
                data["nearestOrdinal"] = json!(nearest);
            }
            _ => {}
        }
        data
    }
}

/// Where the recorded interactions are: parsed in memory, or indexed in their
/// file and parsed when hit.
#[derive(Debug)]
enum Store {
    Memory(Vec<Interaction>),
    Indexed(Box<CassetteIndex>),
}

/// No next interaction in a pool.
const END: u32 = u32::MAX;
/// Most same-tool interactions read to explain a near miss.
pub const MAX_NEAR_MISS_CANDIDATES: usize = 256;

/// One key's pool: the unused interactions of that key, in recorded order, as a
/// chain through [`Matcher::next`].
#[derive(Debug, Clone, Copy)]
struct Pool {
    head: u32,
    tail: u32,
    recorded: u32,
}

/// The recorded interactions, in pools by key.
#[derive(Debug)]
pub struct Matcher {
    options: MatchOptions,
    store: Store,
    meta: Vec<Facts>,
    methods: Vec<String>,
    tools: Vec<String>,
    pools: ByKeyHash<Pool>,
    next: Vec<u32>,
    /// The last answer of each method-only key, repeated once its pool is used up.
    last_method_only: ByKeyHash<usize>,
    used: Vec<bool>,
}

impl Matcher {
    /// Builds the pools; recorded requests are keyed as recorded (already redacted).
    pub fn new(interactions: Vec<Interaction>, options: MatchOptions) -> Self {
        let (mut methods, mut tools) = (Vec::new(), Vec::new());
        let intern = |table: &mut Vec<String>, name: &str| {
            let found = table.iter().position(|n| n == name);
            u32::try_from(found.unwrap_or_else(|| {
                table.push(name.to_owned());
                table.len() - 1
            }))
            .unwrap_or(u32::MAX)
        };
        let meta = interactions
            .iter()
            .map(|i| {
                let method = i.request["method"].as_str().unwrap_or("");
                let key = key(&i.request, &options);
                Facts {
                    key: key_hash(&key),
                    check: key_check(&key),
                    method: intern(&mut methods, method),
                    tool: (method == "tools/call")
                        .then(|| intern(&mut tools, i.request["params"]["name"].as_str().unwrap_or(""))),
                }
            })
            .collect();
        Self::build(Store::Memory(interactions), meta, methods, tools, options)
    }

    /// The pools of an indexed cassette (see [`CassetteIndex::open`], which must
    /// have keyed it under the same `options`).
    pub fn indexed(mut index: CassetteIndex, options: MatchOptions) -> Self {
        let meta = index.take_facts();
        let (methods, tools) = (
            std::mem::take(&mut index.methods),
            std::mem::take(&mut index.tools),
        );
        Self::build(Store::Indexed(Box::new(index)), meta, methods, tools, options)
    }

    fn build(
        store: Store,
        meta: Vec<Facts>,
        methods: Vec<String>,
        tools: Vec<String>,
        options: MatchOptions,
    ) -> Self {
        let mut pools =
            ByKeyHash::<Pool>::with_capacity_and_hasher(meta.len(), BuildHasherDefault::default());
        let mut next = vec![END; meta.len()];
        for (position, m) in meta.iter().enumerate() {
            let position = u32::try_from(position).unwrap_or(END);
            pools
                .entry(m.key)
                .and_modify(|pool| {
                    next[pool.tail as usize] = position;
                    pool.tail = position;
                    pool.recorded += 1;
                })
                .or_insert(Pool {
                    head: position,
                    tail: position,
                    recorded: 1,
                });
        }
        let used = vec![false; meta.len()];
        Self {
            options,
            store,
            meta,
            methods,
            tools,
            pools,
            next,
            last_method_only: ByKeyHash::default(),
            used,
        }
    }

    pub fn len(&self) -> usize {
        self.meta.len()
    }

    pub fn is_empty(&self) -> bool {
        self.meta.is_empty()
    }

    /// The interaction at `position`: borrowed from memory, or read from the file.
    fn load(&self, position: usize) -> Result<Cow<'_, Interaction>, Miss> {
        match &self.store {
            Store::Memory(interactions) => Ok(Cow::Borrowed(&interactions[position])),
            Store::Indexed(index) => index
                .interaction(position)
                .map(Cow::Owned)
                .map_err(|e| Miss::Damaged {
                    reason: e.to_string(),
                }),
        }
    }

    /// Takes the first unused interaction of a key out of its pool: `hash` finds
    /// the pool, `check` (the key's second hash) confirms the match.
    fn take(&mut self, hash: u64, check: u32) -> Option<usize> {
        let pool = self.pools.get(&hash).copied()?;
        let (mut previous, mut current) = (END, pool.head);
        while current != END {
            let position = current as usize;
            if self.meta[position].check == check {
                let after = self.next[position];
                let pool = self.pools.get_mut(&hash).expect("found above");
                if previous == END {
                    pool.head = after;
                } else {
                    self.next[previous as usize] = after;
                }
                if pool.tail == current {
                    pool.tail = previous;
                }
                return Some(position);
            }
            previous = current;
            current = self.next[position];
        }
        None
    }

    /// The recorded answer for a live `request` (redacted with `redactor` first, so
    /// a live secret meets its recorded placeholder), or why there is none.
    pub fn find(
        &mut self,
        request: &Value,
        redactor: Option<&Redactor>,
    ) -> Result<Cow<'_, Interaction>, Miss> {
        let position = self.find_position(request, redactor)?;
        self.load(position)
    }

    /// Where the recorded answer for a live `request` is (see [`Self::find`]);
    /// read it with [`Self::parse`].
    pub(crate) fn find_position(
        &mut self,
        request: &Value,
        redactor: Option<&Redactor>,
    ) -> Result<usize, Miss> {
        // Most requests hold no secret: those are keyed as they came, uncopied.
        let redacted;
        let request = match redactor {
            Some(redactor) if redactor.touches(request) => {
                let mut copy = request.clone();
                redactor.value(&mut copy);
                redacted = copy;
                &redacted
            }
            _ => request,
        };
        let key_text = key(request, &self.options);
        let method = request["method"].as_str().unwrap_or("");
        match self.position_of(&key_text, method) {
            Some(position) => Ok(position),
            None => Err(self.explain(request, &key_text, key_hash(&key_text), method)),
        }
    }

    /// Where the recorded answer for the (redacted) request with `key_text` and
    /// `method` is; `None` changes nothing, so the request can be looked up again
    /// (by [`Self::find_position`], to explain the miss).
    pub(crate) fn position_of(&mut self, key_text: &str, method: &str) -> Option<usize> {
        let hash = key_hash(key_text);
        if let Some(position) = self.take(hash, key_check(key_text)) {
            self.used[position] = true;
            if method_only(method) {
                self.last_method_only.insert(hash, position);
            }
            return Some(position);
        }
        if let Some(&position) = self.last_method_only.get(&hash) {
            return Some(position);
        }
        let method_id = self.methods.iter().position(|m| m == method);
        if self.options.sequential_fallback
            && let Some(position) = method_id.and_then(|id| {
                (0..self.meta.len()).find(|&i| !self.used[i] && self.meta[i].method as usize == id)
            })
        {
            self.used[position] = true;
            return Some(position);
        }
        None
    }

    /// The interaction at `position` parsed as `T`, which may borrow from its
    /// line: in the cassette's bytes kept in memory, or read (or, for parsed
    /// interactions, written) into `buffer`.
    pub(crate) fn parse<'b, T: serde::Deserialize<'b>>(
        &'b self,
        position: usize,
        buffer: &'b mut Vec<u8>,
    ) -> Result<T, Miss> {
        let damaged = |reason: String| Miss::Damaged { reason };
        match &self.store {
            Store::Memory(interactions) => {
                buffer.clear();
                serde_json::to_writer(&mut *buffer, &interactions[position])
                    .map_err(|e| damaged(e.to_string()))?;
                let line: &'b [u8] = buffer;
                serde_json::from_slice(line).map_err(|e| damaged(e.to_string()))
            }
            Store::Indexed(index) => index.parse(position, buffer).map_err(|e| damaged(e.to_string())),
        }
    }

    /// The one response of the plain interaction at `position`, unread (see
    /// [`crate::index::AnswerSpan`]); `None` for one that is not plain or not indexed.
    pub(crate) fn answer<'b>(
        &'b self,
        position: usize,
        buffer: &'b mut Vec<u8>,
    ) -> Result<Option<&'b [u8]>, Miss> {
        match &self.store {
            Store::Memory(_) => Ok(None),
            Store::Indexed(index) => index.answer(position, buffer).map_err(|e| Miss::Damaged {
                reason: e.to_string(),
            }),
        }
    }

    fn explain(&self, request: &Value, key_text: &str, hash: u64, method: &str) -> Miss {
        if let Some(pool) = self.pools.get(&hash) {
            return Miss::Exhausted {
                key: key_text.to_owned(),
                recorded: pool.recorded as usize,
            };
        }
        if method != "tools/call" {
            return Miss::NotRecorded {
                method: method.to_owned(),
            };
        }
        let tool = request["params"]["name"].as_str().unwrap_or("").to_owned();
        let Some(tool_id) = self.tools.iter().position(|t| *t == tool) else {
            let mut recorded = self.tools.clone();
            recorded.sort();
            return Miss::UnknownTool { tool, recorded };
        };
        let live = request["params"].get("arguments").cloned().unwrap_or(json!({}));
        let closest = self
            .meta
            .iter()
            .enumerate()
            .filter(|(_, m)| m.tool.is_some_and(|t| t as usize == tool_id))
            .take(MAX_NEAR_MISS_CANDIDATES)
            .filter_map(|(position, _)| self.load(position).ok())
            .map(|i| {
                let paths = differing_paths(
                    &i.request["params"].get("arguments").cloned().unwrap_or(json!({})),
                    &live,
                );
                (paths, i.ordinal)
            })
            .min_by_key(|(paths, _)| paths.len());
        let (paths, nearest) = closest.map_or((Vec::new(), None), |(paths, ordinal)| (paths, Some(ordinal)));
        Miss::ArgumentsDiffer { tool, paths, nearest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::test_records::{recorded, recorded_line as line, write_cassette as write};
    use crate::error::CassetteError;

    #[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
    fn call(id: u64, tool: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": id}}})
    }

    #[test]
    fn a_hit_in_a_pool_is_confirmed_by_the_keys_second_hash() {
        let options = MatchOptions::default();
        let (first, second) = (
            recorded(1, call(1, "echo", json!({"message": "a"}))),
            recorded(2, call(2, "echo", json!({"message": "b"}))),
        );
        // Both pooled under the second's hash, as if the first's key collided with it.
        let pooled = key_hash(&key(&second.request, &options));
        let facts = [&first, &second]
            .map(|i| Facts {
                key: pooled,
                check: key_check(&key(&i.request, &options)),
                method: 0,
                tool: Some(0),
            })
            .to_vec();
        let mut matcher = Matcher::build(
            Store::Memory(vec![first, second]),
            facts,
            vec!["tools/call".into()],
            vec!["echo".into()],
            options,
        );
        let live = call(9, "echo", json!({"message": "b"}));
        assert_eq!(matcher.find(&live, None).map(|i| i.ordinal), Ok(2));
        assert!(
            matches!(
                matcher.find(&live, None),
                Err(Miss::Exhausted { recorded: 2, .. })
            ),
            "the colliding first interaction is never the answer"
        );
    }

    #[test]
    fn pools_answer_in_order_lists_repeat_and_misses_explain_themselves() {
        let mut matcher = Matcher::new(
            vec![
                recorded(1, json!({"method": "tools/list"})),
                recorded(2, call(2, "sum", json!({"a": 1, "b": 2}))),
                recorded(3, call(3, "sum", json!({"a": 1, "b": 2}))),
                recorded(4, call(4, "echo", json!({"message": "hi"}))),
            ],
            MatchOptions::default(),
        );
        assert_eq!(
            matcher
                .find(&call(7, "sum", json!({"b": 2, "a": 1})), None)
                .unwrap()
                .ordinal,
            2
        );
        assert_eq!(
            matcher
                .find(&call(8, "sum", json!({"a": 1, "b": 2})), None)
                .unwrap()
                .ordinal,
            3
        );
        assert!(matches!(
            matcher.find(&call(9, "sum", json!({"a": 1, "b": 2})), None),
            Err(Miss::Exhausted { recorded: 2, .. })
        ));
        for _ in 0..3 {
            assert_eq!(
                matcher
                    .find(&json!({"method": "tools/list"}), None)
                    .unwrap()
                    .ordinal,
                1
            );
        }
        assert_eq!(
            matcher
                .find(&call(10, "echo", json!({"message": "bye"})), None)
                .unwrap_err(),
            Miss::ArgumentsDiffer {
                tool: "echo".into(),
                paths: vec!["message".into()],
                nearest: Some(4),
            }
        );
        let unknown = matcher
            .find(&call(11, "delete-everything", json!({})), None)
            .unwrap_err();
        assert_eq!(unknown.reason(), "unknown_tool");
        assert!(unknown.message().contains("echo") && unknown.message().contains("sum"));
    }

    #[test]
    fn a_live_secret_matches_its_recorded_placeholder() {
        let redactor = Redactor::new(&[], &[]).unwrap();
        let mut request = call(1, "fetch", json!({"auth": "Bearer abcdefghijklmnop1234"}));
        let live = request.clone();
        redactor.value(&mut request);
        let mut matcher = Matcher::new(vec![recorded(1, request)], MatchOptions::default());
        assert!(matcher.find(&live, None).is_err(), "unredacted it would miss");
        assert_eq!(matcher.find(&live, Some(&redactor)).unwrap().ordinal, 1);
    }

    #[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
    fn indexed_call(tool: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    }

    #[test]
    fn an_indexed_cassette_answers_as_the_parsed_one_does() {
        let lines = [
            line(1, json!({"method": "initialize", "params": {}})),
            r#"{"type":"message","from":"client","message":{"method":"notifications/initialized"}}"#
                .to_owned(),
            line(2, json!({"method": "tools/list"})),
            line(3, indexed_call("sum", json!({"a": 1, "b": 2}))),
            line(4, indexed_call("sum", json!({"b": 2, "a": 1}))),
            line(5, indexed_call("echo", json!({"message": "hi"}))),
            line(6, indexed_call("now", Value::Null)),
        ];
        let (_dir, path) = write(&lines, true);
        let options = MatchOptions::default();
        let index = CassetteIndex::open(&path, &options).unwrap();
        assert_eq!(index.len(), 6);
        assert_eq!(index.max_ordinal, 6);
        assert_eq!(index.handshake.as_ref().unwrap()["method"], "initialize");
        assert!(index.warnings.is_empty());
        let mut matcher = Matcher::indexed(index, options);
        let ordinal = |m: &mut Matcher, request: &Value| m.find(request, None).map(|i| i.ordinal);
        assert_eq!(
            ordinal(&mut matcher, &indexed_call("sum", json!({"b": 2, "a": 1}))),
            Ok(3)
        );
        assert_eq!(
            ordinal(&mut matcher, &indexed_call("sum", json!({"a": 1, "b": 2}))),
            Ok(4)
        );
        assert!(matches!(
            matcher.find(&indexed_call("sum", json!({"a": 1, "b": 2})), None),
            Err(Miss::Exhausted { recorded: 2, .. })
        ));
        for _ in 0..2 {
            assert_eq!(ordinal(&mut matcher, &json!({"method": "tools/list"})), Ok(2));
        }
        assert_eq!(
            ordinal(&mut matcher, &indexed_call("now", Value::Null)),
            Ok(6),
            "null arguments are keyed as none, on both sides"
        );
        let hit = matcher
            .find(&indexed_call("echo", json!({"message": "hi"})), None)
            .unwrap();
        assert_eq!(
            hit.responses[0]["result"]["n"], 5,
            "the answer is read from its line"
        );
        assert_eq!(
            matcher
                .find(&indexed_call("echo", json!({"message": "bye"})), None)
                .unwrap_err(),
            Miss::ArgumentsDiffer {
                tool: "echo".into(),
                paths: vec!["message".into()],
                nearest: Some(5),
            }
        );
        assert_eq!(
            matcher.find(&indexed_call("drop", json!({})), None).unwrap_err(),
            Miss::UnknownTool {
                tool: "drop".into(),
                recorded: vec!["echo".into(), "now".into(), "sum".into()]
            }
        );
    }

    #[test]
    fn a_file_indexed_in_stretches_keeps_its_order_line_numbers_and_pools() {
        // Split into stretches of 256 KiB (on a machine with two cores or more).
        let count = 5000;
        let padding = "p".repeat(60);
        let mut lines: Vec<String> = (1..=count)
            .map(|i| {
                let tool = if i % 2 == 0 { "even" } else { "odd" };
                line(
                    u64::try_from(i).unwrap(),
                    indexed_call(tool, json!({"n": i % 1000, "pad": padding})),
                )
            })
            .collect();
        let unknown = count - 10;
        lines[unknown] = r#"{"type":"future-record"}"#.to_owned();
        let (_dir, path) = write(&lines, true);
        let index = CassetteIndex::open_in_stretches(&path, &MatchOptions::default(), 256 * 1024).unwrap();
        assert_eq!(index.len(), count - 1);
        assert_eq!(index.max_ordinal, u64::try_from(count).unwrap());
        // The header is line 1: the replaced record is on line `unknown + 2`.
        assert_eq!(
            index.warnings,
            vec![format!(
                "line {}: unknown record type \"future-record\", skipped",
                unknown + 2
            )]
        );
        let mut matcher = Matcher::indexed(index, MatchOptions::default());
        // Each key was recorded count/1000 times, across both halves: in order.
        let mut seen = Vec::new();
        while let Ok(hit) = matcher.find(&indexed_call("odd", json!({"n": 7, "pad": padding})), None) {
            seen.push(hit.ordinal);
        }
        assert_eq!(seen, [7, 1007, 2007, 3007, 4007]);
        assert_eq!(seen.last().copied().map(|o| o % 1000), Some(7));

        lines[count - 5] = "{broken".to_owned();
        let (_dir, path) = write(&lines, true);
        let error =
            CassetteIndex::open_in_stretches(&path, &MatchOptions::default(), 256 * 1024).unwrap_err();
        assert!(
            matches!(error, CassetteError::BadRecord { line, .. } if line == count - 5 + 2),
            "{error}"
        );
    }

    #[test]
    fn damage_is_refused_forgiven_or_told_as_the_reader_does() {
        let good = line(1, indexed_call("echo", json!({"message": "a"})));
        // Valid JSON whose answer is not an interaction's: found at the hit.
        let damaged = r#"{"type":"interaction","ordinal":2,"request":{"method":"tools/call","params":{"name":"echo","arguments":{"message":"b"}}},"responses":"oops","ms":0}"#.to_owned();
        let cut = line(3, indexed_call("echo", json!({"message": "c"})))[..40].to_owned();
        let (_dir, path) = write(&[good.clone(), damaged.clone(), cut], false);
        let index = CassetteIndex::open(&path, &MatchOptions::default()).unwrap();
        assert_eq!(index.len(), 2);
        assert!(
            index.warnings[0].contains("line 4 is cut short"),
            "{:?}",
            index.warnings
        );
        let mut matcher = Matcher::indexed(index, MatchOptions::default());
        let miss = matcher
            .find(&indexed_call("echo", json!({"message": "b"})), None)
            .unwrap_err();
        assert_eq!(miss.reason(), "damaged");
        assert!(
            miss.message().contains(":3: not a JSON record"),
            "{}",
            miss.message()
        );
        assert_eq!(
            matcher
                .find(&indexed_call("echo", json!({"message": "a"})), None)
                .unwrap()
                .ordinal,
            1
        );

        let (_dir, path) = write(&[good, "{not json".into(), damaged], true);
        let error = CassetteIndex::open(&path, &MatchOptions::default()).unwrap_err();
        assert!(
            matches!(error, CassetteError::BadRecord { line: 3, .. }),
            "{error}"
        );

        let dir = tempfile::tempdir().unwrap();
        let future = dir.path().join("f.jsonl");
        std::fs::write(&future, "{\"type\":\"header\",\"formatVersion\":99}\n").unwrap();
        assert!(matches!(
            CassetteIndex::open(&future, &MatchOptions::default()),
            Err(CassetteError::FutureVersion { found: 99, .. })
        ));
        std::fs::write(&future, "").unwrap();
        assert!(matches!(
            CassetteIndex::open(&future, &MatchOptions::default()),
            Err(CassetteError::NoHeader { .. })
        ));
    }
}
