//! Request matching for replay: a key per request, ordered pools of recorded
//! interactions per key, and a near-miss explanation when nothing matches.

use std::borrow::Cow;
use std::hash::BuildHasherDefault;

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use crate::cassette::Interaction;
use crate::index::{ByKeyHash, CassetteIndex, Facts, key_check, key_hash};
use crate::redact::Redactor;

/// Methods matched on the method alone.
pub(crate) fn method_only(method: &str) -> bool {
    matches!(method, "initialize" | "server/discover" | "ping") || method.ends_with("/list")
}

/// JSON with object keys sorted at every level, whatever order they came in.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value)).expect("JSON serializes")
}

/// Removes `path` (dot-separated keys, e.g. `params.arguments.requestedAt`).
fn remove_path(value: &mut Value, path: &str) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut current = value;
    for part in parts {
        match current.get_mut(part) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(map) = current.as_object_mut() {
        map.remove(last);
    }
}

/// How requests are matched.
#[derive(Debug, Default, Clone)]
pub struct MatchOptions {
    /// Paths removed from a request before keying (`params.arguments.now`).
    pub ignore_paths: Vec<String>,
    /// When a key's pool is exhausted, answer with the next unused interaction of
    /// the same method in recorded order.
    pub sequential_fallback: bool,
}

/// The key of a (redacted) request.
pub fn key(request: &Value, options: &MatchOptions) -> String {
    let method = request["method"].as_str().unwrap_or("");
    if method_only(method) {
        return method.to_owned();
    }
    if !options.ignore_paths.is_empty() {
        return key_without_paths(request, method, options);
    }
    // Written straight from the request, without copies: this runs once per
    // recorded interaction when a cassette is indexed.
    let params = request.get("params").unwrap_or(&Value::Null);
    if method == "tools/call" {
        return call_key(params["name"].as_str().unwrap_or(""), arguments(params));
    }
    let mut out = String::with_capacity(96);
    out.push_str(method);
    out.push(' ');
    write_canonical(params, &["_meta", "cursor"], &mut out);
    out
}

/// A call's arguments; `null` counts as none, as it does for the index.
fn arguments(params: &Value) -> Option<&Value> {
    params.get("arguments").filter(|arguments| !arguments.is_null())
}

/// The key of a `tools/call` of `tool` with `arguments`, when no paths are ignored.
pub(crate) fn call_key(tool: &str, arguments: Option<&Value>) -> String {
    let mut out = call_key_head(tool);
    match arguments {
        Some(arguments) => write_canonical(arguments, &[], &mut out),
        None => out.push_str("{}"),
    }
    out
}

/// [`call_key`] of the arguments' JSON text, written as the text is read,
/// without a tree; an error where the tree could not be built either.
pub(crate) fn call_key_of_text(tool: &str, arguments: Option<&str>) -> serde_json::Result<String> {
    let mut out = call_key_head(tool);
    match arguments {
        Some(text) => {
            let mut reader = serde_json::Deserializer::from_str(text);
            Canonical { out: &mut out }.deserialize(&mut reader)?;
            reader.end()?;
        }
        None => out.push_str("{}"),
    }
    Ok(out)
}

/// The start of a `tools/call` key: the method and the tool.
fn call_key_head(tool: &str) -> String {
    let mut out = String::with_capacity(96);
    out.push_str("tools/call ");
    out.push_str(tool);
    out.push(' ');
    out
}

/// [`key`] with `options.ignore_paths` removed from a copy of the params first.
fn key_without_paths(request: &Value, method: &str, options: &MatchOptions) -> String {
    let mut params = request.get("params").cloned().unwrap_or(Value::Null);
    if let Some(map) = params.as_object_mut() {
        map.remove("_meta");
        map.remove("cursor");
    }
    let mut wrapper = json!({ "params": params });
    for path in &options.ignore_paths {
        remove_path(&mut wrapper, path);
    }
    let params = &wrapper["params"];
    if method == "tools/call" {
        format!(
            "tools/call {} {}",
            params["name"].as_str().unwrap_or(""),
            canonical(arguments(params).unwrap_or(&json!({})))
        )
    } else {
        format!("{method} {}", canonical(params))
    }
}

/// Writes `value` as [`canonical`] does, leaving out the top-level keys in `skip`.
fn write_canonical(value: &Value, skip: &[&str], out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> =
                map.iter().filter(|(k, _)| !skip.contains(&k.as_str())).collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_canonical(v, &[], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, &[], out);
            }
            out.push(']');
        }
        Value::String(text) => write_json_string(text, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Writes `text` as a JSON string, as `serde_json` would.
fn write_json_string(text: &str, out: &mut String) {
    if text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&Value::from(text).to_string());
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

/// Writes one JSON value as [`write_canonical`] writes its tree, as it is read:
/// objects sorted by key (the last of equal keys kept, as in a tree), numbers
/// and strings written as `serde_json` writes them.
struct Canonical<'o> {
    out: &'o mut String,
}

impl<'de> DeserializeSeed<'de> for Canonical<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canonical<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.out.push_str(if value { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E>(self, value: i64) -> Result<(), E> {
        write_number(&Value::from(value), self.out);
        Ok(())
    }

    fn visit_u64<E>(self, value: u64) -> Result<(), E> {
        write_number(&Value::from(value), self.out);
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        write_number(&Value::from(value), self.out);
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        write_json_string(value, self.out);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let before = self.out.len();
            if !first {
                self.out.push(',');
            }
            if items.next_element_seed(Canonical { out: self.out })?.is_none() {
                self.out.truncate(before);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        // The values are written first, one after another, then put in key
        // order behind their keys.
        let start = self.out.len();
        let mut entries: Vec<(Cow<'de, str>, std::ops::Range<usize>)> = Vec::new();
        while let Some(key) = members.next_key::<Cow<'de, str>>()? {
            let at = self.out.len() - start;
            members.next_value_seed(Canonical { out: self.out })?;
            entries.push((key, at..self.out.len() - start));
        }
        let values = self.out.split_off(start);
        // Stable: of equal keys, the last is the one a tree keeps.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.out.push('{');
        let mut first = true;
        for (i, (key, range)) in entries.iter().enumerate() {
            if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                self.out.push(',');
            }
            first = false;
            write_json_string(key, self.out);
            self.out.push(':');
            self.out.push_str(&values[range.clone()]);
        }
        self.out.push('}');
        Ok(())
    }
}

/// A number, written as its tree writes it.
fn write_number(number: &Value, out: &mut String) {
    use std::fmt::Write as _;
    write!(out, "{number}").expect("a String takes any text");
}

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
            Self::ArgumentsDiffer { tool, paths } => {
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
            Self::ArgumentsDiffer { paths, .. } => data["differingPaths"] = json!(paths),
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
                differing_paths(
                    &i.request["params"].get("arguments").cloned().unwrap_or(json!({})),
                    &live,
                )
            })
            .min_by_key(Vec::len)
            .unwrap_or_default();
        Miss::ArgumentsDiffer { tool, paths: closest }
    }
}

/// JSON paths (`a.b[2]`) where two values differ (at most 20).
pub fn differing_paths(recorded: &Value, live: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(recorded, live, String::new(), PathStyle::Dotted, &mut out);
    out.truncate(20);
    out
}

/// JSON pointers (RFC 6901, each under `prefix`) where two values differ (at
/// most 20): `/content/0/text`.
pub fn differing_pointers(recorded: &Value, live: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(recorded, live, prefix.to_owned(), PathStyle::Pointer, &mut out);
    out.truncate(20);
    out
}

/// How [`diff_into`] writes a path.
#[derive(Clone, Copy)]
enum PathStyle {
    /// `a.b[2]`, `(root)` for the whole value.
    Dotted,
    /// `/a/b/2`, with `~` and `/` escaped.
    Pointer,
}

impl PathStyle {
    fn member(self, path: &str, key: &str) -> String {
        match self {
            Self::Dotted if path.is_empty() => key.to_owned(),
            Self::Dotted => format!("{path}.{key}"),
            Self::Pointer => format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
        }
    }

    fn item(self, path: &str, index: usize) -> String {
        match self {
            Self::Dotted => format!("{path}[{index}]"),
            Self::Pointer => format!("{path}/{index}"),
        }
    }

    fn whole(self, path: String) -> String {
        match self {
            Self::Dotted if path.is_empty() => "(root)".into(),
            _ => path,
        }
    }
}

fn diff_into(recorded: &Value, live: &Value, path: String, style: PathStyle, out: &mut Vec<String>) {
    match (recorded, live) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = style.member(&path, key);
                match (old.get(key), new.get(key)) {
                    (Some(before), Some(after)) => diff_into(before, after, child, style, out),
                    _ => out.push(child),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (index, (before, after)) in old.iter().zip(new).enumerate() {
                diff_into(before, after, style.item(&path, index), style, out);
            }
        }
        _ if recorded == live => {}
        _ => out.push(style.whole(path)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A recorded interaction answering `request` with `{"n": ordinal}`.
    pub(crate) fn recorded(ordinal: u64, request: Value) -> Interaction {
        Interaction {
            ordinal,
            request,
            responses: vec![json!({"result": {"n": ordinal}})],
            notifications: vec![],
            notification_lead_us: vec![],
            server_requests: vec![],
            status: None,
            ms: 0,
            origin: "recorded".into(),
        }
    }

    #[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
    fn call(id: u64, tool: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": id}}})
    }

    /// Generated JSON text: objects with members out of order and repeated
    /// (`\u0061` is `a` again), nesting, numbers in many notations (some out of
    /// any tree's range), strings with escapes.
    fn generated_json(rng: &mut dshkit_test::secrets::Rng, depth: u32) -> String {
        const NUMBERS: &[&str] = &[
            "0",
            "-0",
            "7",
            "-12",
            "1.5e3",
            "1E+2",
            "-1.0",
            "0.1",
            "1e-7",
            "2.5e-310",
            "0.000",
            "3.141592653589793238",
            "123456789012345678901234",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1e400",
        ];
        const STRINGS: &[&str] = &[
            r#""""#,
            r#""hi""#,
            r#""\"q\" \u00e9""#,
            r#""tab\tnew\nline""#,
            r#""é😀""#,
            r#""\ud83d\ude00""#,
        ];
        const KEYS: &[&str] = &[
            r#""b""#,
            r#""a""#,
            r#""c""#,
            r#""\u0061""#,
            r#""é""#,
            r#""A""#,
            r#""a b""#,
        ];
        fn pick(rng: &mut dshkit_test::secrets::Rng, items: &[&str]) -> String {
            items[usize::try_from(rng.draw() % items.len() as u64).unwrap()].to_owned()
        }
        let kind = if depth >= 3 { 0 } else { rng.draw() % 3 };
        match (kind, rng.draw() % 4) {
            (0, 0) => pick(rng, NUMBERS),
            (0, 1) => pick(rng, STRINGS),
            (0, _) => pick(rng, &["true", "false", "null", "42"]),
            (1, _) => {
                let items: Vec<String> = (0..rng.draw() % 4)
                    .map(|_| generated_json(rng, depth + 1))
                    .collect();
                format!("[{}]", items.join(" , "))
            }
            _ => {
                let members: Vec<String> = (0..rng.draw() % 5)
                    .map(|_| {
                        let key = pick(rng, KEYS);
                        format!("{key}: {}", generated_json(rng, depth + 1))
                    })
                    .collect();
                format!("{{{}}}", members.join(","))
            }
        }
    }

    #[test]
    fn a_key_written_as_the_arguments_are_read_is_the_trees_key() {
        let mut rng = dshkit_test::secrets::Rng::from_env();
        let (mut keyed, mut refused) = (0, 0);
        for _ in 0..3000 {
            let text = generated_json(&mut rng, 0);
            match serde_json::from_str::<Value>(&text) {
                Ok(tree) => {
                    let read = call_key_of_text("t", Some(&text)).unwrap_or_else(|e| panic!("{e}: {text}"));
                    assert_eq!(read, call_key("t", Some(&tree)), "{text}");
                    keyed += 1;
                }
                Err(_) => {
                    assert!(call_key_of_text("t", Some(&text)).is_err(), "{text}");
                    refused += 1;
                }
            }
        }
        assert!(keyed > 1000 && refused > 10, "{keyed} keyed, {refused} refused");
        assert_eq!(call_key_of_text("t", None).unwrap(), call_key("t", None));
        assert!(
            call_key_of_text("t", Some("{} x")).is_err(),
            "text after the value"
        );
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
    fn the_direct_key_writer_gives_the_canonical_form() {
        let nested =
            json!({"z": [3, {"b": "x\"y", "a": null}], "a": {"d": 1.5, "c": true}, "_meta": {"t": 1}});
        let options = MatchOptions::default();
        let with_paths = MatchOptions {
            ignore_paths: vec!["params.nothing".into()],
            ..MatchOptions::default()
        };
        for request in [
            call(1, "sum", nested.clone()),
            json!({"method": "tools/call", "params": {"name": "bare"}}),
            json!({"method": "resources/read", "params": {"uri": "a", "cursor": "c", "_meta": {}, "x": nested}}),
            json!({"method": "prompts/get"}),
        ] {
            assert_eq!(key(&request, &options), key(&request, &with_paths), "{request}");
        }
    }

    #[test]
    fn keys_ignore_ids_meta_cursors_key_order_and_configured_paths() {
        let options = MatchOptions {
            ignore_paths: vec!["params.arguments.now".into()],
            ..MatchOptions::default()
        };
        assert_eq!(
            key(&call(1, "sum", json!({"a": 1, "b": 2, "now": 5})), &options),
            key(&call(9, "sum", json!({"b": 2, "a": 1, "now": 6})), &options)
        );
        assert_eq!(
            key(
                &json!({"method": "tools/list", "params": {"cursor": "x"}}),
                &options
            ),
            "tools/list"
        );
        assert_ne!(
            key(
                &json!({"method": "resources/read", "params": {"uri": "a"}}),
                &options
            ),
            key(
                &json!({"method": "resources/read", "params": {"uri": "b"}}),
                &options
            )
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
                paths: vec!["message".into()]
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
}
