//! Request matching for replay: a key per request, ordered pools of recorded
//! interactions per key, and a near-miss explanation when nothing matches.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde_json::{Value, json};

use crate::cassette::Interaction;
use crate::redact::Redactor;

/// Methods matched on the method alone.
fn method_only(method: &str) -> bool {
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
            canonical(params.get("arguments").unwrap_or(&json!({})))
        )
    } else {
        format!("{method} {}", canonical(params))
    }
}

/// Why a request found no recorded answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    UnknownTool { tool: String, recorded: Vec<String> },
    ArgumentsDiffer { tool: String, paths: Vec<String> },
    Exhausted { key: String, recorded: usize },
    NotRecorded { method: String },
}

impl Miss {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::ArgumentsDiffer { .. } => "arguments_differ",
            Self::Exhausted { .. } => "exhausted",
            Self::NotRecorded { .. } => "not_recorded",
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

/// The recorded interactions, in pools by key.
#[derive(Debug)]
pub struct Matcher {
    options: MatchOptions,
    interactions: Vec<Interaction>,
    pools: HashMap<String, VecDeque<usize>>,
    /// How many each key had, for messages.
    sizes: HashMap<String, usize>,
    /// The last answer of each method-only key, repeated once its pool is used up.
    last_method_only: HashMap<String, usize>,
    used: Vec<bool>,
}

impl Matcher {
    /// Builds the pools; recorded requests are keyed as recorded (already redacted).
    pub fn new(interactions: Vec<Interaction>, options: MatchOptions) -> Self {
        let mut pools: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (index, interaction) in interactions.iter().enumerate() {
            pools
                .entry(key(&interaction.request, &options))
                .or_default()
                .push_back(index);
        }
        let sizes = pools.iter().map(|(k, v)| (k.clone(), v.len())).collect();
        let used = vec![false; interactions.len()];
        Self {
            options,
            interactions,
            pools,
            sizes,
            last_method_only: HashMap::new(),
            used,
        }
    }

    pub fn len(&self) -> usize {
        self.interactions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.interactions.is_empty()
    }

    /// The recorded answer for a live `request` (redacted with `redactor` first, so
    /// a live secret meets its recorded placeholder), or why there is none.
    pub fn find(&mut self, request: &Value, redactor: Option<&Redactor>) -> Result<&Interaction, Miss> {
        let mut request = request.clone();
        if let Some(redactor) = redactor {
            redactor.value(&mut request);
        }
        let key = key(&request, &self.options);
        let method = request["method"].as_str().unwrap_or("").to_owned();
        if let Some(index) = self.pools.get_mut(&key).and_then(VecDeque::pop_front) {
            self.used[index] = true;
            if method_only(&method) {
                self.last_method_only.insert(key, index);
            }
            return Ok(&self.interactions[index]);
        }
        if let Some(&index) = self.last_method_only.get(&key) {
            return Ok(&self.interactions[index]);
        }
        if self.options.sequential_fallback
            && let Some(index) = (0..self.interactions.len())
                .find(|&i| !self.used[i] && self.interactions[i].request["method"] == method.as_str())
        {
            self.used[index] = true;
            return Ok(&self.interactions[index]);
        }
        Err(self.explain(&request, &key, &method))
    }

    fn explain(&self, request: &Value, key: &str, method: &str) -> Miss {
        if let Some(&recorded) = self.sizes.get(key) {
            return Miss::Exhausted {
                key: key.to_owned(),
                recorded,
            };
        }
        if method != "tools/call" {
            return Miss::NotRecorded {
                method: method.to_owned(),
            };
        }
        let tool = request["params"]["name"].as_str().unwrap_or("").to_owned();
        let same_tool: Vec<&Interaction> = self
            .interactions
            .iter()
            .filter(|i| i.request["method"] == "tools/call" && i.request["params"]["name"] == tool.as_str())
            .collect();
        if same_tool.is_empty() {
            let mut recorded: Vec<String> = self
                .interactions
                .iter()
                .filter(|i| i.request["method"] == "tools/call")
                .filter_map(|i| i.request["params"]["name"].as_str().map(str::to_owned))
                .collect();
            recorded.sort();
            recorded.dedup();
            return Miss::UnknownTool { tool, recorded };
        }
        let live = request["params"].get("arguments").cloned().unwrap_or(json!({}));
        let closest = same_tool
            .iter()
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

    /// How often each recorded key was used: (key, recorded, unused).
    pub fn unused(&self) -> BTreeMap<String, usize> {
        self.pools
            .iter()
            .filter(|(_, pool)| !pool.is_empty())
            .map(|(k, pool)| (k.clone(), pool.len()))
            .collect()
    }
}

/// JSON paths (`a.b[2]`) where two values differ.
pub fn differing_paths(recorded: &Value, live: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(recorded, live, String::new(), &mut out);
    out.truncate(20);
    out
}

fn diff_into(recorded: &Value, live: &Value, path: String, out: &mut Vec<String>) {
    match (recorded, live) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (old.get(key), new.get(key)) {
                    (Some(before), Some(after)) => diff_into(before, after, child, out),
                    _ => out.push(child),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (index, (before, after)) in old.iter().zip(new).enumerate() {
                diff_into(before, after, format!("{path}[{index}]"), out);
            }
        }
        _ if recorded == live => {}
        _ => out.push(if path.is_empty() { "(root)".into() } else { path }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(ordinal: u64, request: Value) -> Interaction {
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
