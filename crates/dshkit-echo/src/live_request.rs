//! A live request as replay reads it: its method, id and params borrowed from
//! its text, and its match key written from them. The JSON tree is built only
//! for what needs it: a request holding a secret, a miss to explain, an
//! annotation, a progress token, a passthrough, or text that reads no other way.
//! On a hit, building and dropping that tree was the largest part of replay's own
//! work per request.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::key::{MatchOptions, call_key, call_key_of_text, method_only};
use crate::redact::{Redactor, Touches};

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

/// What one pass over a request's text reads: the members replay needs, and
/// whether redaction would change any of the rest.
struct Head<'a> {
    method: Option<Cow<'a, str>>,
    /// `Some` whenever the member is there, `null` included.
    id: Option<&'a RawValue>,
    params: Params<'a>,
    /// Whether redaction would change a member other than `params.arguments`
    /// (which [`LiveRequest::key`] checks as it reads them).
    touched: bool,
    /// Whether the redactor cleared the whole text at once: nothing in it,
    /// the arguments included, needs a check of its own.
    cleared: bool,
}

/// A request's `params`, as far as a key is read from them.
#[derive(Default)]
struct Params<'a> {
    /// The tool of a `tools/call`: `None` when `name` is no string or there
    /// are two, or `params` is no object.
    name: Option<Cow<'a, str>>,
    /// `None` when absent or `null`.
    arguments: Option<&'a RawValue>,
}

/// The secret checks of one pass: without a redactor when it cleared the
/// whole text at once ([`Redactor::clears_json_text`]), so no member needs its
/// own; each value is still read as the check reads it, so a text the check
/// refuses (a number out of range) is refused when cleared too.
#[derive(Clone, Copy)]
struct Checks<'r>(Option<&'r Redactor>);

impl<'r> Checks<'r> {
    /// The check of the member `key`'s value.
    fn of<'k>(self, key: &'k str) -> Touches<'r, 'k> {
        Touches::new(self.0, Some(key))
    }
}

/// Reads a request's [`Head`], checking the members it does not keep for
/// secrets as it goes.
struct ReadHead<'r> {
    checks: Checks<'r>,
}

impl<'de> DeserializeSeed<'de> for ReadHead<'_> {
    type Value = Head<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Head<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReadHead<'_> {
    type Value = Head<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Head<'de>, A::Error> {
        let checks = self.checks;
        let (mut method, mut id, mut params) = (None, None, None);
        let mut touched = false;
        while let Some(name) = members.next_key::<Cow<'de, str>>()? {
            match name.as_ref() {
                "method" => {
                    let value: Option<Cow<'de, str>> = members.next_value()?;
                    touched |= value
                        .as_deref()
                        .is_some_and(|value| checks.of("method").string(value));
                    once(&mut method, value, "method")?;
                }
                "id" => {
                    let value: &'de RawValue = members.next_value()?;
                    touched |= checks.of("id").json(value.get());
                    once(&mut id, value, "id")?;
                }
                "params" => {
                    let (value, params_touched) = members.next_value_seed(ReadParams { checks })?;
                    touched |= params_touched;
                    once(&mut params, value, "params")?;
                }
                other => touched |= members.next_value_seed(checks.of(other))?,
            }
        }
        Ok(Head {
            method: method.flatten(),
            id,
            params: params.unwrap_or_default(),
            touched,
            cleared: checks.0.is_none(),
        })
    }
}

/// Keeps `value` in `slot`; a second one is an error (the tree path reads it).
fn once<T, E: serde::de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    match slot.replace(value) {
        Some(_) => Err(E::duplicate_field(name)),
        None => Ok(()),
    }
}

/// Reads `params` (any JSON value) into [`Params`] and whether redaction would
/// change any of it but the arguments.
struct ReadParams<'r> {
    checks: Checks<'r>,
}

impl<'de> DeserializeSeed<'de> for ReadParams<'_> {
    type Value = (Params<'de>, bool);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ReadParams<'_> {
    type Value = (Params<'de>, bool);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON-RPC params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Self::Value, A::Error> {
        let checks = self.checks;
        let (mut names, mut arguments_seen) = (0, 0);
        let mut params = Params::default();
        let mut touched = false;
        while let Some(key) = members.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "name" => {
                    names += 1;
                    let value: &'de RawValue = members.next_value()?;
                    params.name = string_of(value);
                    touched |= match &params.name {
                        Some(name) => checks.of("name").string(name),
                        None => checks.of("name").json(value.get()),
                    };
                }
                "arguments" => {
                    arguments_seen += 1;
                    params.arguments = members.next_value()?;
                }
                other => touched |= members.next_value_seed(checks.of(other))?,
            }
        }
        if names > 1 || arguments_seen > 1 {
            // Keyed from the tree, whose last member counts, and redacted there.
            params.name = None;
            touched = true;
        }
        Ok((params, touched))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<Self::Value, A::Error> {
        let touched = self.checks.of("params").visit_seq(items)?;
        Ok((Params::default(), touched))
    }

    fn visit_str<E>(self, value: &str) -> Result<Self::Value, E> {
        Ok((Params::default(), self.checks.of("params").string(value)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok((Params::default(), false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok((Params::default(), false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok((Params::default(), false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok((Params::default(), false))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Params::default(), false))
    }
}

/// The string `value` is, borrowed unless it holds an escape; `None` for any
/// other value.
fn string_of(value: &RawValue) -> Option<Cow<'_, str>> {
    let text = value.get();
    if !text.starts_with('"') {
        return None;
    }
    serde_json::from_str::<&str>(text)
        .map(Cow::Borrowed)
        .or_else(|_| serde_json::from_str::<String>(text).map(Cow::Owned))
        .ok()
}

/// Parses one JSON-RPC frame as bytes; only a frame that is not UTF-8 takes a
/// second, lossy pass (its bad bytes read as the replacement character).
pub(crate) fn parse_frame(text: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice(text).or_else(|_| serde_json::from_str(&String::from_utf8_lossy(text)))
}

impl<'a> LiveRequest<'a> {
    /// Reads one frame from the client; `redactor` says whether any of it is a
    /// secret (see [`Self::key`]).
    pub(crate) fn read(text: &'a [u8], redactor: &Redactor) -> Read<'a> {
        let head = if text.trim_ascii_start().first() == Some(&b'{') {
            let mut reader = serde_json::Deserializer::from_slice(text);
            let checks = Checks((!redactor.clears_json_text(text)).then_some(redactor));
            ReadHead { checks }
                .deserialize(&mut reader)
                .and_then(|head| reader.end().map(|()| head))
                .ok()
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

    /// The request's tree, taken (see [`Self::tree`]).
    pub(crate) fn into_tree(self) -> Result<Value, String> {
        match self.tree.into_inner() {
            Some(tree) => tree,
            None => parse_frame(self.text).map_err(|e| e.to_string()),
        }
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

    /// The request's match key (see [`crate::key::key`]), written from its
    /// text, and its method; `None` when only the tree gives the key: ignored
    /// paths, a method that is neither matched alone nor `tools/call`, a secret
    /// to redact first (the tree path checks again). `redactor` is the one the
    /// request was read with.
    pub(crate) fn key(&self, options: &MatchOptions, redactor: &Redactor) -> Option<(String, &str)> {
        let head = self.head.as_ref().filter(|head| !head.touched)?;
        let method = head.method.as_deref()?;
        let arguments = head.params.arguments;
        if method_only(method) {
            let checks = Checks((!head.cleared).then_some(redactor));
            let touched = arguments.is_some_and(|arguments| checks.of("arguments").json(arguments.get()));
            return (!touched).then(|| (method.to_owned(), method));
        }
        if method != "tools/call" || !options.ignore_paths.is_empty() {
            return None;
        }
        let name = head.params.name.as_deref()?;
        if head.cleared {
            // Nothing to redact: the key is written as the arguments are read.
            return Some((call_key_of_text(name, arguments.map(RawValue::get)).ok()?, method));
        }
        let arguments: Option<Value> = match arguments {
            Some(arguments) => Some(serde_json::from_str(arguments.get()).ok()?),
            None => None,
        };
        if arguments
            .as_ref()
            .is_some_and(|arguments| redactor.touches_under("arguments", arguments))
        {
            return None;
        }
        Some((call_key(name, arguments.as_ref()), method))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::key::key;

    /// The built-in rules, which the tests read requests with.
    fn built_in() -> &'static Redactor {
        static REDACTOR: OnceLock<Redactor> = OnceLock::new();
        REDACTOR.get_or_init(|| Redactor::new(&[], &[]).expect("the built-in rules"))
    }

    fn request(text: &str) -> LiveRequest<'_> {
        match LiveRequest::read(text.as_bytes(), built_in()) {
            Read::Request(request) => request,
            Read::NoReply => panic!("read as no request: {text}"),
            Read::NotJson => panic!("read as not JSON: {text}"),
        }
    }

    #[test]
    fn a_key_read_from_the_text_is_the_key_of_the_tree() {
        let redactor = built_in();
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
            let (from_text, method) = live.key(&options, redactor).expect("read from the text");
            assert_eq!(Some(method), live.method());
            // Without an escape, nothing in these asks for a check of its own.
            let cleared = live.head.as_ref().is_some_and(|head| head.cleared);
            assert_eq!(cleared, !text.contains('\\'), "{text}");
            let tree: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(from_text, key(&tree, &options), "{text}");
        }
    }

    #[test]
    fn what_the_text_cannot_key_alone_is_keyed_from_the_tree() {
        let redactor = built_in();
        let plain = MatchOptions::default();
        let secret = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2-hunter2"}}}"#;
        assert_eq!(
            request(secret).key(&plain, redactor),
            None,
            "a secret is redacted first"
        );
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}"#;
        assert_eq!(request(other).key(&plain, redactor), None);
        let ignoring = MatchOptions {
            ignore_paths: vec!["params.arguments.now".into()],
            ..MatchOptions::default()
        };
        let call =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"now":1}}}"#;
        assert_eq!(request(call).key(&ignoring, redactor), None);
        assert!(request(call).key(&plain, redactor).is_some());
    }

    #[test]
    fn frames_read_as_requests_notifications_or_not_json_as_their_trees_do() {
        let request_of = |text: &str| match LiveRequest::read(text.as_bytes(), built_in()) {
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
        let Read::Request(live) = LiveRequest::read(lossy, built_in()) else {
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

    #[test]
    fn a_cleared_request_goes_where_a_checked_one_goes() {
        // A number no tree holds: in a member the key does not read, the check
        // of each member refuses the text (the tree's way then calls it not
        // JSON); in the id or a listing's arguments, it sends the request the
        // tree's way (an `unreadable` miss). Cleared at once, a request must go
        // the same way: the first look changes the speed, never the answer.
        let redactor = built_in();
        for extra in [r#""x":1e400"#, r#""x":[1,-1e400]"#, r#""x":{"y":{"z":1e400}}"#] {
            for params in [r#"{"name":"t","arguments":{"a":1}}"#, "[1,{}]"] {
                let cleared =
                    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params},{extra}}}"#);
                let checked = cleared.replace(r#""jsonrpc""#, r#""pass":"no","jsonrpc""#);
                assert!(redactor.clears_json_text(cleared.as_bytes()), "{cleared}");
                assert!(!redactor.clears_json_text(checked.as_bytes()), "{checked}");
                for text in [&cleared, &checked] {
                    let read = LiveRequest::read(text.as_bytes(), redactor);
                    assert!(matches!(read, Read::NotJson), "{text}");
                }
                let id = cleared
                    .replace(r#""id":1"#, r#""id":-1e400"#)
                    .replace(&format!(",{extra}"), "");
                let checked_id = id.replace(r#""jsonrpc""#, r#""pass":"no","jsonrpc""#);
                for text in [&id, &checked_id] {
                    let Read::Request(request) = LiveRequest::read(text.as_bytes(), redactor) else {
                        panic!("not read as a request: {text}");
                    };
                    assert!(
                        request.key(&MatchOptions::default(), redactor).is_none(),
                        "{text}"
                    );
                }
                let listed =
                    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":[1e400]}}"#;
                for text in [
                    listed.to_owned(),
                    listed.replace(r#""jsonrpc""#, r#""pass":"no","jsonrpc""#),
                ] {
                    let Read::Request(request) = LiveRequest::read(text.as_bytes(), redactor) else {
                        panic!("not read as a request: {text}");
                    };
                    assert!(
                        request.key(&MatchOptions::default(), redactor).is_none(),
                        "{text}"
                    );
                }
                let in_params = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[{extra_value}]}}"#,
                    extra_value = &extra[4..]
                );
                assert!(
                    matches!(LiveRequest::read(in_params.as_bytes(), redactor), Read::NotJson),
                    "{in_params}"
                );
            }
        }
    }

    #[test]
    fn a_request_keyed_from_its_text_holds_nothing_the_whole_text_check_would_redact() {
        // Each template with a secret put in at `S`: wherever it stands, one pass
        // over the text must find what `touches_json` over all of it finds, and
        // whatever it keys must be the tree's key. Without secrets, the same
        // templates are keyed from their text (the fast way is the one tested).
        let templates = [
            r#"{"jsonrpc":"2.0","id":S,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#,
            r#"{"jsonrpc":S,"id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":S,"arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":S}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":S}]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":S}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"password":S}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"note":S}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}},"extra":[S]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}},"api_key":S}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"token":S}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"secret":S},"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":S},"arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":S}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{"x":S}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[S]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":S}"#,
            r#"{"\u0070arams":{"name":"t","arguments":{"a":S}},"id":1,"method":"tools/call"}"#,
        ];
        let mut rng = dshkit_test::secrets::Rng::from_env();
        let secrets: Vec<String> = dshkit_test::secrets::secret_corpus(&mut rng)
            .into_iter()
            .map(|sample| sample.line)
            .collect();
        let redactor = built_in();
        let options = MatchOptions::default();
        let mut keyed_with_secret = 0;
        for template in templates {
            let plain = template.replace('S', r#""plain value""#);
            let text_key = request(&plain).key(&options, redactor).map(|(key, _)| key);
            let tree: Value = serde_json::from_str(&plain).unwrap();
            if let Some(key_text) = &text_key {
                assert_eq!(*key_text, key(&tree, &options), "{plain}");
            }
            for secret in &secrets {
                let text = template.replace('S', &Value::from(secret.as_str()).to_string());
                let whole = redactor.touches_json(&text);
                let live = request(&text);
                match live.key(&options, redactor) {
                    Some((key_text, _)) => {
                        assert!(!whole, "keyed from its text with a secret in it: {text}");
                        let tree: Value = serde_json::from_str(&text).unwrap();
                        assert_eq!(key_text, key(&tree, &options), "{text}");
                        keyed_with_secret += 1;
                    }
                    None => assert!(
                        whole || text_key.is_none(),
                        "a secret the whole text does not hold sent it the slow way: {text}"
                    ),
                }
            }
        }
        assert!(secrets.len() > 20, "{} secrets", secrets.len());
        // The generated corpus holds a few texts the rules leave alone where they
        // stand (as a `jsonrpc` value, say); most are found.
        assert!(
            keyed_with_secret < secrets.len() * templates.len() / 4,
            "{keyed_with_secret}"
        );
    }
}
