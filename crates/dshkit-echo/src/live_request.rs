//! A live request as replay reads it: its method, id and params borrowed from
//! its text, and its match key written from them. The JSON tree is built only
//! for what needs it: a request holding a secret, a miss to explain, an
//! annotation, a progress token, a passthrough, or text that reads no other way.
//! On a hit, building and dropping that tree was the largest part of replay's own
//! work per request.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::index::call_head;
use crate::matcher::{MatchOptions, method_only};
use crate::redact::Redactor;

/// What a frame from the client is.
pub(crate) enum Read<'a> {
    /// A request: it has a method and an id.
    Request(LiveRequest<'a>),
    /// A notification or an answer to a server request: nothing to reply.
    NoReply,
    /// Not JSON.
    NotJson,
}

/// A request read from `text`.
pub(crate) struct LiveRequest<'a> {
    text: &'a [u8],
    /// The members replay reads, borrowed; `None` when only the tree reads the
    /// text (not an object, a method that is not a string, duplicate members,
    /// text that is not UTF-8).
    head: Option<Head<'a>>,
    /// The tree, or why it cannot be built from text that reads as JSON: a
    /// number out of range, nesting deeper than the parser goes.
    tree: OnceLock<Result<Value, String>>,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    /// `Some` whenever the member is there, `null` included.
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// Parses one JSON-RPC frame as bytes; only a frame that is not UTF-8 takes a
/// second, lossy pass (its bad bytes read as the replacement character).
pub(crate) fn parse_frame(text: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice(text).or_else(|_| serde_json::from_str(&String::from_utf8_lossy(text)))
}

impl<'a> LiveRequest<'a> {
    /// Reads one frame from the client.
    pub(crate) fn read(text: &'a [u8]) -> Read<'a> {
        // A struct also reads from a JSON array; a request is an object.
        let head = if text.trim_ascii_start().first() == Some(&b'{') {
            serde_json::from_slice::<Head<'_>>(text).ok()
        } else {
            None
        };
        if let Some(head) = head {
            return if head.method.is_some() && head.id.is_some() {
                Read::Request(Self {
                    text,
                    head: Some(head),
                    tree: OnceLock::new(),
                })
            } else {
                Read::NoReply
            };
        }
        match parse_frame(text) {
            Ok(tree) if tree.get("method").is_some() && tree.get("id").is_some() => Read::Request(Self {
                text,
                head: None,
                tree: OnceLock::from(Ok(tree)),
            }),
            Ok(_) => Read::NoReply,
            Err(_) => Read::NotJson,
        }
    }

    /// The request as a JSON tree, parsed on the first call; why there is none
    /// when the text reads as JSON but not as a tree (a number out of range).
    pub(crate) fn tree(&self) -> Result<&Value, &str> {
        self.tree
            .get_or_init(|| parse_frame(self.text).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The member `name` of the tree; `null` without one.
    fn member(&self, name: &str) -> &Value {
        self.tree().map_or(&Value::Null, |tree| &tree[name])
    }

    /// The method, when it is a string.
    pub(crate) fn method(&self) -> Option<&str> {
        match &self.head {
            Some(head) => head.method.as_deref(),
            None => self.member("method").as_str(),
        }
    }

    /// The id as the client wrote it.
    pub(crate) fn id_json(&self) -> Cow<'_, str> {
        match self.head.as_ref().and_then(|head| head.id) {
            Some(id) => Cow::Borrowed(id.get()),
            None => Cow::Owned(self.member("id").to_string()),
        }
    }

    /// The id as a JSON value (`null` for one out of range).
    pub(crate) fn id(&self) -> Value {
        match self.head.as_ref().and_then(|head| head.id) {
            Some(id) => serde_json::from_str(id.get()).unwrap_or(Value::Null),
            None => self.member("id").clone(),
        }
    }

    /// The progress token the request asked notifications to carry (`null` if none).
    pub(crate) fn progress_token(&self) -> &Value {
        &self.member("params")["_meta"]["progressToken"]
    }

    /// The request's match key (see [`crate::matcher::key`]), written from its
    /// text, and its method; `None` when only the tree gives the key: ignored
    /// paths, a method that is neither matched alone nor `tools/call`, a secret
    /// to redact first (checked last, as the tree path checks again).
    pub(crate) fn key(&self, options: &MatchOptions, redactor: &Redactor) -> Option<(String, &str)> {
        let head = self.head.as_ref()?;
        let method = head.method.as_deref()?;
        let key = if method_only(method) {
            method.to_owned()
        } else if method == "tools/call" && options.ignore_paths.is_empty() {
            call_head(head.params?)?.1
        } else {
            return None;
        };
        let text = std::str::from_utf8(self.text).ok()?;
        (!redactor.touches_json(text)).then_some((key, method))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::matcher::key;

    fn request(text: &str) -> LiveRequest<'_> {
        match LiveRequest::read(text.as_bytes()) {
            Read::Request(request) => request,
            Read::NoReply => panic!("read as no request: {text}"),
            Read::NotJson => panic!("read as not JSON: {text}"),
        }
    }

    #[test]
    fn a_key_read_from_the_text_is_the_key_of_the_tree() {
        let redactor = Redactor::new(&[], &[]).expect("the built-in rules");
        let options = MatchOptions::default();
        let texts = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"b":[1,{"z":2,"a":"x"}],"a":"hi"}}}"#,
            r#"{"method":"tools/call","id":"s-1","params":{"arguments":{"n":1.5e3,"t":"\"q\" \u00e9"},"name":"get-sum","_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noargs"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nullargs","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c2"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        ];
        for text in texts {
            let live = request(text);
            let (from_text, method) = live.key(&options, &redactor).expect("read from the text");
            assert_eq!(Some(method), live.method());
            let tree: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(from_text, key(&tree, &options), "{text}");
        }
    }

    #[test]
    fn what_the_text_cannot_key_alone_is_keyed_from_the_tree() {
        let redactor = Redactor::new(&[], &[]).expect("the built-in rules");
        let plain = MatchOptions::default();
        let secret = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2-hunter2"}}}"#;
        assert_eq!(
            request(secret).key(&plain, &redactor),
            None,
            "a secret is redacted first"
        );
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}"#;
        assert_eq!(request(other).key(&plain, &redactor), None);
        let ignoring = MatchOptions {
            ignore_paths: vec!["params.arguments.now".into()],
            ..MatchOptions::default()
        };
        let call =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"now":1}}}"#;
        assert_eq!(request(call).key(&ignoring, &redactor), None);
        assert!(request(call).key(&plain, &redactor).is_some());
    }

    #[test]
    fn frames_read_as_requests_notifications_or_not_json_as_their_trees_do() {
        let request_of = |text: &str| match LiveRequest::read(text.as_bytes()) {
            Read::Request(request) => Some((
                request.method().map(str::to_owned),
                request.id_json().into_owned(),
                request.id(),
            )),
            Read::NoReply => None,
            Read::NotJson => Some((None, "not JSON".into(), Value::Null)),
        };
        let id = |text: &str, value: Value| Some((Some("tools/list".to_owned()), text.to_owned(), value));
        assert_eq!(
            request_of(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#),
            id("4", json!(4))
        );
        assert_eq!(
            request_of(r#" {"id" : "a\"b" ,"method":"tools/list"}"#),
            id(r#""a\"b""#, json!("a\"b"))
        );
        assert_eq!(
            request_of(r#"{"id":null,"method":"tools/list"}"#),
            id("null", Value::Null)
        );
        // Duplicate members read as the tree does: the last one counts.
        assert_eq!(
            request_of(r#"{"id":1,"id":2,"method":"tools/list"}"#),
            id("2", json!(2))
        );
        // A method that is not a string still asks for an answer (a miss).
        assert_eq!(
            request_of(r#"{"id":1,"method":5}"#),
            Some((None, "1".into(), json!(1)))
        );
        assert_eq!(
            request_of(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(request_of(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(
            request_of(r#"["tools/list",1,{}]"#),
            None,
            "an array is no request"
        );
        assert_eq!(
            request_of("{\"id\":1,"),
            Some((None, "not JSON".into(), Value::Null))
        );
        let lossy = b"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\xffcho\"}}";
        let Read::Request(live) = LiveRequest::read(lossy) else {
            panic!("text that is not UTF-8 reads with its bad bytes replaced");
        };
        assert_eq!(live.tree().unwrap()["params"]["name"], json!("e\u{fffd}cho"));
        // JSON whose number no tree holds: read as a request, and its tree says why not.
        let huge = request(r#"{"id":7,"method":"tools/call","params":{"name":"n","arguments":{"n":1e400}}}"#);
        assert_eq!(huge.id(), json!(7));
        assert!(
            huge.tree().unwrap_err().contains("number out of range"),
            "{:?}",
            huge.tree()
        );
    }
}
