//! How a request is keyed for matching, in one place: which methods are
//! matched on the method alone, what of a `tools/call` and of any other request
//! makes its key (canonical JSON: sorted members, `_meta` and `cursor` left
//! out, `null` arguments as none, ignored paths removed), the key written from
//! a tree or straight from the text as it is read (both give the same bytes),
//! and the two hashes that stand for a key in an index (one finds its pool, the
//! other confirms a hit). The recorded side (the index, the in-memory matcher)
//! and the live side (a live request read from its text) both key through here.

use std::borrow::Cow;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

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

/// The hash a match key is pooled by. Keys are hashed in one process only (an
/// index is built where it is used), so any fixed seed does.
pub(crate) fn key_hash(key: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x6563_686f_6b65_7931).hash_one(key)
}

/// A second hash of a match key, independent of [`key_hash`] (another seed),
/// that confirms a hit: a wrong answer needs two keys to collide in both, 96
/// bits in all. A hit thus needs neither the recorded request nor its key, only
/// the line's answer.
pub(crate) fn key_check(key: &str) -> u32 {
    use std::hash::BuildHasher;
    let hash = foldhash::quality::FixedState::with_seed(0x6563_686f_6b65_7932).hash_one(key);
    u32::try_from(hash >> 32).expect("the high 32 bits")
}

/// A map keyed by [`key_hash`]es, which it takes as their own hash.
pub(crate) type ByKeyHash<V> = std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<Prehashed>>;

/// Hashes a `u64` that is a hash already as itself.
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed here; any other input still hashes, poorly.
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// A `tools/call`'s tool and arguments, borrowed from its line.
#[derive(Deserialize)]
struct CallHead<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

/// The tool and match key of a `tools/call` with `params`, read from their text
/// (no ignored paths); `None` when only the tree gives them (a name that is no
/// string, params that are no object).
fn call_key_of_params(params: &RawValue) -> Option<(Cow<'_, str>, String)> {
    let call = serde_json::from_str::<CallHead<'_>>(params.get()).ok()?;
    let arguments: Option<Value> = match call.arguments {
        Some(arguments) => Some(serde_json::from_str(arguments.get()).ok()?),
        None => None,
    };
    let key = call_key(&call.name, arguments.as_ref());
    Some((call.name, key))
}

/// A request's method and params, borrowed from its text.
#[derive(Deserialize)]
struct RequestHead<'a> {
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// A recorded request as an index keeps it: its method, its tool (a
/// `tools/call`'s) and its key.
pub(crate) struct Keyed {
    pub(crate) method: String,
    pub(crate) tool: Option<String>,
    pub(crate) key: String,
}

/// [`key`] of the (redacted) request whose JSON text is `text`, with its method
/// and tool. The common cases (a method matched alone, a `tools/call` with no
/// ignored paths) read no more than the arguments; the rest build the tree.
pub(crate) fn key_of_text(text: &str, options: &MatchOptions) -> serde_json::Result<Keyed> {
    let head: RequestHead<'_> = serde_json::from_str(text)?;
    let method = head.method.as_deref().unwrap_or("");
    if method_only(method) {
        return Ok(Keyed {
            method: method.to_owned(),
            tool: None,
            key: method.to_owned(),
        });
    }
    if method == "tools/call"
        && options.ignore_paths.is_empty()
        && let Some((tool, key)) = head.params.and_then(call_key_of_params)
    {
        return Ok(Keyed {
            method: method.to_owned(),
            tool: Some(tool.into_owned()),
            key,
        });
    }
    let request: Value = serde_json::from_str(text)?;
    let method = request["method"].as_str().unwrap_or("").to_owned();
    let tool = (method == "tools/call").then(|| request["params"]["name"].as_str().unwrap_or("").to_owned());
    Ok(Keyed {
        key: key(&request, options),
        method,
        tool,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_recorded_request_keyed_from_its_text_has_its_trees_key() {
        let plain = MatchOptions::default();
        let ignoring = MatchOptions {
            ignore_paths: vec!["params.arguments.now".into()],
            ..MatchOptions::default()
        };
        let texts = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c2"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"b":[1,{"z":2,"a":"x"}],"now":1},"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nullargs","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7,"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///a","_meta":{"t":1}}}"#,
            r#"{"jsonrpc":"2.0","id":8}"#,
        ];
        for options in [&plain, &ignoring] {
            for text in texts {
                let tree: Value = serde_json::from_str(text).unwrap();
                let keyed = key_of_text(text, options).unwrap();
                assert_eq!(keyed.key, key(&tree, options), "{text}");
                assert_eq!(keyed.method, tree["method"].as_str().unwrap_or(""), "{text}");
                let tool = (keyed.method == "tools/call")
                    .then(|| tree["params"]["name"].as_str().unwrap_or("").to_owned());
                assert_eq!(keyed.tool, tool, "{text}");
            }
        }
        assert!(
            key_of_text(r#"{"method":5}"#, &plain).is_err(),
            "a method that is no string"
        );
    }
}
