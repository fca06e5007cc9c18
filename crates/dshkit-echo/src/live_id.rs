//! A recorded response with the live request's id put in: its recorded text,
//! byte for byte, but the `id` member's value. The id is found by a walk over
//! the bytes of text already read as JSON once (when the cassette was indexed,
//! or as the recorded line was parsed), so a hit copies its answer without
//! reading it as JSON again ([`crate::index::AnswerSpan`]).

use std::ops::Range;

use serde_json::Value;

/// Where a response's id goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdPlace {
    /// The byte range of its one `id` member's value.
    Value(Range<usize>),
    /// It has no `id`: the live one goes before the closing brace at `close`,
    /// after a comma unless the object is `empty`.
    Missing { close: usize, empty: bool },
}

/// Where the id goes in `response`, the text of a JSON value known to be valid;
/// `None` for anything but an object, or one with two `id` members or a member
/// name with an escape (which might spell `id`): those take [`with_live_id`]'s
/// way through a tree.
pub(crate) fn id_place(response: impl AsRef<[u8]>) -> Option<IdPlace> {
    let bytes = response.as_ref();
    if bytes.first() != Some(&b'{') || bytes.last() != Some(&b'}') {
        return None;
    }
    let close = bytes.len() - 1;
    let (mut at, mut members, mut found) = (skip_space(bytes, 1), 0, None);
    while at < close {
        // A member: its name, a colon, its value, then a comma or the end.
        let name_end = string_end(bytes, at)?;
        let name = &bytes[at + 1..name_end - 1];
        if name.contains(&b'\\') {
            return None;
        }
        at = skip_space(bytes, name_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = value_end(bytes, start)?;
        if name == b"id" {
            if found.is_some() {
                return None;
            }
            found = Some(start..end);
        }
        members += 1;
        at = skip_space(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') if at == close => {}
            _ => return None,
        }
    }
    Some(match found {
        Some(value) => IdPlace::Value(value),
        None => IdPlace::Missing {
            close,
            empty: members == 0,
        },
    })
}

/// The first byte at or after `at` that is not JSON whitespace.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// Just past the string that starts (with its quote) at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Just past the value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let length = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            (length > 0).then_some(at + length)
        }
    }
}

/// `response` with the live `id` (its JSON text) in place of the recorded one.
pub(crate) fn with_live_id(response: &str, id: &str) -> Vec<u8> {
    match id_place(response) {
        Some(place) => splice(response.as_bytes(), &place, id),
        None => {
            let mut tree: Value = serde_json::from_str(response).unwrap_or(Value::Null);
            if let Some(object) = tree.as_object_mut() {
                object.insert("id".into(), serde_json::from_str(id).unwrap_or(Value::Null));
            }
            serde_json::to_vec(&tree).expect("JSON serializes")
        }
    }
}

/// `response` with `id` at `place`.
pub(crate) fn splice(response: &[u8], place: &IdPlace, id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(response.len() + id.len() + 8);
    match place {
        IdPlace::Value(value) => {
            out.extend_from_slice(&response[..value.start]);
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(&response[value.end..]);
        }
        IdPlace::Missing { close, empty } => {
            out.extend_from_slice(&response[..*close]);
            out.extend_from_slice(if *empty { b"\"id\":" } else { b",\"id\":" });
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(&response[*close..]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spliced(response: &str, id: &str) -> String {
        String::from_utf8(with_live_id(response, id)).unwrap()
    }

    #[test]
    fn a_replayed_response_is_its_recorded_text_with_the_live_id() {
        assert_eq!(
            spliced(
                r#"{"result":{"n": 1.50, "s": "\u00e9"},"jsonrpc":"2.0","id":3}"#,
                r#""live-7""#
            ),
            r#"{"result":{"n": 1.50, "s": "\u00e9"},"jsonrpc":"2.0","id":"live-7"}"#,
            "members keep their order and their recorded text"
        );
        assert_eq!(
            spliced(r#"{"jsonrpc": "2.0", "id": 0, "result": {}}"#, "12"),
            r#"{"jsonrpc": "2.0", "id": 12, "result": {}}"#,
            "and the spaces between them"
        );
        assert_eq!(
            spliced(r#"{"jsonrpc":"2.0","error":{}}"#, "9"),
            r#"{"jsonrpc":"2.0","error":{},"id":9}"#,
            "a response without an id gets the live one"
        );
        assert_eq!(spliced("{ }", "9"), r#"{ "id":9}"#);
        let escaped = with_live_id(r#"{"res\u0075lt":{},"\u0069d":1}"#, "2");
        assert_eq!(
            serde_json::from_slice::<Value>(&escaped).unwrap(),
            json!({"result": {}, "id": 2}),
            "an escaped name (which might spell id) takes the way through a tree"
        );
        let twice = with_live_id(r#"{"id":1,"result":{},"id":2}"#, "5");
        assert_eq!(
            serde_json::from_slice::<Value>(&twice).unwrap(),
            json!({"result": {}, "id": 5}),
            "two ids take the way through a tree"
        );
    }

    #[test]
    fn only_an_object_has_a_place_for_the_id() {
        assert_eq!(id_place(r#"{"id":null}"#), Some(IdPlace::Value(6..10)));
        assert_eq!(
            id_place(r#"{ "id" : 12 , "a" : 1 }"#),
            Some(IdPlace::Value(9..11))
        );
        assert_eq!(
            id_place(r#"{"a":"}\"id\":1","id":-1.5e3}"#),
            Some(IdPlace::Value(22..28))
        );
        assert_eq!(
            id_place(r#"{"a":{"id":1},"b":["}"]}"#),
            Some(IdPlace::Missing {
                close: 23,
                empty: false
            })
        );
        assert_eq!(id_place("[1]"), None);
        assert_eq!(id_place(r#""id""#), None);
        assert_eq!(id_place(r#"{"id":1,"id":1}"#), None);
        // Text that is not JSON gets no place, and no panic.
        for broken in [
            r#"{"id"}"#,
            r#"{"id":}"#,
            r#"{"a":"}"#,
            r#"{"a":[}"#,
            "{,}",
            r#"{"a":1 2}"#,
        ] {
            assert_eq!(id_place(broken), None, "{broken}");
        }
    }

    #[test]
    fn the_walk_puts_the_id_where_a_tree_has_it() {
        let objects = [
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"}]\"{\\\"id\":9"}]}}"#,
            "{\r\n\t\"result\" :\t{ \"id\" : [ 1 , { } ] } ,\n \"id\" : \"a\\\"b\" \r\n}",
            r#"{"error":{"code":-32601,"message":"é ✓ \ud83d\ude00"},"jsonrpc":"2.0","id":null}"#,
            r#"{"result":true,"id":-0.5E-3}"#,
            r#"{"result":[[[]],{"a":{"b":{}}}],"jsonrpc":"2.0"}"#,
            r#"{"id":{"nested":"object id"},"result":{}}"#,
            "{}",
        ];
        for object in objects {
            let mut tree: Value = serde_json::from_str(object).unwrap();
            tree["id"] = json!("L");
            let place = id_place(object).unwrap_or_else(|| panic!("no place in {object}"));
            let spliced = splice(object.as_bytes(), &place, r#""L""#);
            assert_eq!(
                serde_json::from_slice::<Value>(&spliced).unwrap(),
                tree,
                "{object}"
            );
        }
    }
}
