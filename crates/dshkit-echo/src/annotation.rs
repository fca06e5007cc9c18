//! Echo in DSH: what a registered cassette says about one tool call DSH made
//! through a server Echo wraps, the `meta.dshCassette` DSH keeps on the call's
//! `tool/result`. It is computed beside the replay, never from its state: the
//! calls this DSH process made to the server so far are matched, oldest first,
//! against a matcher of the cassette's own, so pools are used up exactly as
//! the replay uses them, and the last call's answer (or miss) is the annotation.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::CassetteError;
use crate::index::CassetteIndex;
use crate::json_diff::differing_paths;
use crate::key::MatchOptions;
use crate::matcher::{Matcher, Miss};
use crate::redact::Redactor;
use crate::registry::{Mode, Registry, RegistryConfig, RegistryError};
use crate::replay::fingerprint;

/// At most this many calls of one server are matched for one annotation; older
/// ones are left out and the annotation says so.
pub const MAX_HISTORY: usize = 256;

/// One call DSH made to a server (its MCP tool name and arguments).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
}

/// What to annotate: the registry, the server, and its calls in this DSH
/// process, oldest first; the last is the one annotated.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotateRequest {
    pub echo: RegistryConfig,
    pub server: String,
    pub calls: Vec<Call>,
}

/// What became of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The cassette answered.
    Hit,
    /// The cassette had no answer, and the call failed with why.
    Miss,
    /// The cassette had no answer, and the real server was asked.
    Passthrough,
    /// The real server answered and the exchange was recorded.
    Recorded,
}

/// Why the cassette had no answer, and the nearest recorded call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MissNote {
    pub reason: &'static str,
    pub message: String,
    /// Where the arguments differ from the nearest recorded call of the tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differing_paths: Vec<String>,
    /// The tools recorded, when the tool never was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recorded_tools: Vec<String>,
    /// The ordinal of the recorded call of the tool nearest to this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest_ordinal: Option<u64>,
}

/// `meta.dshCassette`: the call's cassette by id, never by absolute path.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DshCassette {
    pub id: String,
    pub server: String,
    pub tool: String,
    pub mode: Mode,
    /// Relative to the Echo root.
    pub path: String,
    pub outcome: Outcome,
    /// The recorded interaction that answered (hits only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u64>,
    /// The first 16 hex digits of the SHA-256 of the call's match key.
    pub fingerprint: String,
    /// Hits only: where the live arguments differ from the recorded ones
    /// (paths the matching ignores).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss: Option<MissNote>,
    /// Earlier calls left out beyond [`MAX_HISTORY`]: pools may be counted short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub history_truncated: bool,
}

/// Largest request of the DSH plugin's seams read from their input.
pub const MAX_SEAM_BYTES: u64 = 4 * 1024 * 1024;

/// The two seams the DSH plugin asks the binary through (a JSON request on
/// stdin, a JSON answer on stdout).
#[derive(Debug, Clone, Copy)]
pub enum Seam {
    /// `echo annotate`: an [`AnnotateRequest`], answered `{"dshCassette": …}`.
    Annotate,
    /// `echo interaction`: an [`InteractionRequest`], answered `{"interaction": …}`.
    Interaction,
}

/// Reads `seam`'s request from `input` (at most [`MAX_SEAM_BYTES`]) and answers it.
pub fn answer_seam(seam: Seam, input: impl std::io::Read) -> Result<Value, AnnotateError> {
    let mut reader = serde_json::Deserializer::from_reader(input.take(MAX_SEAM_BYTES));
    Ok(match seam {
        Seam::Annotate => json!({"dshCassette": annotate(Deserialize::deserialize(&mut reader)?)?}),
        Seam::Interaction => {
            json!({"interaction": recorded_interaction(Deserialize::deserialize(&mut reader)?)?})
        }
    })
}

/// Why no annotation could be made.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    #[error("the request is not one this seam reads: {0}")]
    Request(#[from] serde_json::Error),
    #[error("{0} [{rule}]", rule = .0.rule())]
    Registry(#[from] RegistryError),
    #[error("no call to annotate")]
    NoCall,
    #[error("no cassette {0:?} is registered")]
    UnknownId(String),
    #[error("cassette {id:?}: {source}")]
    Cassette {
        id: String,
        #[source]
        source: CassetteError,
    },
}

impl AnnotateError {
    /// A cassette that cannot be read as its own error says; the rest is
    /// refused input.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        match self {
            Self::Cassette { source, .. } => source.class(),
            _ => dshkit_os::error::ErrorClass::Refused,
        }
    }
}

/// The annotation of the request's last call, or `None` when no cassette is
/// registered for its server (DSH reaches that server directly).
pub fn annotate(request: AnnotateRequest) -> Result<Option<DshCassette>, AnnotateError> {
    let registry = Registry::check(request.echo)?;
    let Some(entry) = registry
        .entries()
        .iter()
        .find(|entry| entry.server == request.server)
    else {
        return Ok(None);
    };
    let path = registry.root().join(&entry.path);
    let history_truncated = request.calls.len() > MAX_HISTORY;
    let calls = &request.calls[request.calls.len().saturating_sub(MAX_HISTORY)..];
    let (last, earlier) = calls.split_last().ok_or(AnnotateError::NoCall)?;
    let matching = MatchOptions::default();
    let live = live_request(last);
    let mut note = DshCassette {
        id: entry.id.clone(),
        server: entry.server.clone(),
        tool: last.tool.clone(),
        mode: entry.mode,
        path: entry.path.to_string_lossy().into_owned(),
        outcome: Outcome::Recorded,
        ordinal: None,
        fingerprint: fingerprint(&live, &matching),
        diff: Vec::new(),
        miss: None,
        history_truncated,
    };
    if entry.mode == Mode::Record {
        return Ok(Some(note));
    }
    let cassette_error = |source| AnnotateError::Cassette {
        id: entry.id.clone(),
        source,
    };
    let index = CassetteIndex::open(&path, &matching).map_err(cassette_error)?;
    // The replay redacts a live request before matching it; so is this one.
    let mut redactor = Redactor::new(&[], &[]).expect("the built-in rules compile");
    index.header.scope_paths(&mut redactor);
    let mut matcher = Matcher::indexed(index, matching);
    for call in earlier {
        let _ = matcher.find(&live_request(call), Some(&redactor));
    }
    match matcher.find(&live, Some(&redactor)) {
        Ok(interaction) => {
            note.outcome = Outcome::Hit;
            note.ordinal = Some(interaction.ordinal);
            note.diff = differing_paths(
                &interaction.request["params"]["arguments"],
                &live["params"]["arguments"],
            );
        }
        Err(miss) => {
            note.outcome = if entry.mode == Mode::Passthrough {
                Outcome::Passthrough
            } else {
                Outcome::Miss
            };
            note.miss = Some(miss_note(&miss));
        }
    }
    Ok(Some(note))
}

/// Longest JSON text of a request or response the Echo tab is shown.
pub const MAX_DETAIL_CHARS: usize = 8 * 1024;

/// Which recorded interaction to show: a registered cassette's id and ordinal.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteractionRequest {
    pub echo: RegistryConfig,
    pub id: String,
    pub ordinal: u64,
}

/// One recorded interaction as the Echo tab shows it: its request and
/// responses redacted again (whatever the cassette says of its own redaction)
/// and each cut to [`MAX_DETAIL_CHARS`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    pub id: String,
    pub ordinal: u64,
    pub request: String,
    pub responses: Vec<String>,
    pub truncated: bool,
}

/// The recorded interaction `ordinal` of the registered cassette `id`; `None`
/// when the cassette holds no such interaction.
pub fn recorded_interaction(request: InteractionRequest) -> Result<Option<Shown>, AnnotateError> {
    let registry = Registry::check(request.echo)?;
    let (_, path) = registry
        .resolve(&request.id)
        .ok_or_else(|| AnnotateError::UnknownId(request.id.clone()))?;
    let cassette_error = |source| AnnotateError::Cassette {
        id: request.id.clone(),
        source,
    };
    let mut records = crate::cassette::Records::open(&path).map_err(cassette_error)?;
    let redactor = crate::show::plain_redactor();
    for record in records.by_ref() {
        let crate::cassette::Record::Interaction(mut interaction) = record.map_err(cassette_error)? else {
            continue;
        };
        if interaction.ordinal != request.ordinal {
            continue;
        }
        let mut truncated = false;
        let mut shown = |value: &mut Value| {
            redactor.value(value);
            let text = serde_json::to_string_pretty(value).expect("JSON serializes");
            if text.len() <= MAX_DETAIL_CHARS {
                return text;
            }
            truncated = true;
            let cut = text.floor_char_boundary(MAX_DETAIL_CHARS);
            format!("{}…", &text[..cut])
        };
        let request_text = shown(&mut interaction.request);
        let responses = interaction.responses.iter_mut().map(&mut shown).collect();
        return Ok(Some(Shown {
            id: request.id,
            ordinal: request.ordinal,
            request: request_text,
            responses,
            truncated,
        }));
    }
    Ok(None)
}

/// The `tools/call` request DSH's MCP client sends for `call`.
fn live_request(call: &Call) -> Value {
    let arguments = if call.arguments.is_null() {
        json!({})
    } else {
        call.arguments.clone()
    };
    json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": call.tool, "arguments": arguments}})
}

fn miss_note(miss: &Miss) -> MissNote {
    let (differing_paths, recorded_tools, nearest_ordinal) = match miss {
        Miss::ArgumentsDiffer { paths, nearest, .. } => (paths.clone(), Vec::new(), *nearest),
        Miss::UnknownTool { recorded, .. } => (Vec::new(), recorded.clone(), None),
        _ => (Vec::new(), Vec::new(), None),
    };
    MissNote {
        reason: miss.reason(),
        message: miss.message(),
        differing_paths,
        recorded_tools,
        nearest_ordinal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::test_records::{recorded_line, write_cassette};
    use crate::registry::Entry;

    fn call(tool: &str, arguments: Value) -> Call {
        Call {
            tool: tool.into(),
            arguments,
        }
    }

    fn request(root: &std::path::Path, mode: Mode, calls: Vec<Call>) -> AnnotateRequest {
        AnnotateRequest {
            echo: RegistryConfig {
                root_dir: root.to_path_buf(),
                cassettes: vec![Entry {
                    id: "everything".into(),
                    path: "c.jsonl".into(),
                    server: "everything".into(),
                    mode,
                    http: None,
                }],
            },
            server: "everything".into(),
            calls,
        }
    }

    /// A root holding `c.jsonl`: `echo` recorded twice alike, then `add`.
    fn cassette_root() -> tempfile::TempDir {
        let tools_call = |id: u64, tool: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let lines = [
            recorded_line(1, tools_call(1, "echo", json!({"message": "hi"}))),
            recorded_line(2, tools_call(2, "echo", json!({"message": "hi"}))),
            recorded_line(3, tools_call(3, "add", json!({"a": 1, "b": 2}))),
        ];
        write_cassette(&lines, true).0
    }

    #[test]
    fn calls_are_hits_in_recorded_order_until_their_pool_is_used_up() {
        let dir = cassette_root();
        let root = dir.path().canonicalize().unwrap();
        let hi = || call("echo", json!({"message": "hi"}));
        let first = annotate(request(&root, Mode::Replay, vec![hi()]))
            .unwrap()
            .unwrap();
        assert_eq!((first.outcome, first.ordinal), (Outcome::Hit, Some(1)));
        assert_eq!(first.path, "c.jsonl");
        let second = annotate(request(&root, Mode::Replay, vec![hi(), hi()]))
            .unwrap()
            .unwrap();
        assert_eq!((second.outcome, second.ordinal), (Outcome::Hit, Some(2)));
        assert_eq!(
            first.fingerprint, second.fingerprint,
            "the same call, the same key"
        );
        let third = annotate(request(&root, Mode::Replay, vec![hi(), hi(), hi()]))
            .unwrap()
            .unwrap();
        assert_eq!(third.outcome, Outcome::Miss);
        assert_eq!(third.miss.unwrap().reason, "exhausted");
    }

    #[test]
    fn a_miss_names_the_differing_path_and_passthrough_mode_says_it_asked_the_server() {
        let dir = cassette_root();
        let root = dir.path().canonicalize().unwrap();
        let changed = || vec![call("add", json!({"a": 1, "b": 5}))];
        let missed = annotate(request(&root, Mode::Replay, changed()))
            .unwrap()
            .unwrap();
        assert_eq!(missed.outcome, Outcome::Miss);
        assert_eq!(missed.ordinal, None);
        let note = missed.miss.unwrap();
        assert_eq!(note.reason, "arguments_differ");
        assert_eq!(note.differing_paths, ["b"]);
        assert_eq!(note.nearest_ordinal, Some(3), "the recorded `add`");
        let passed = annotate(request(&root, Mode::Passthrough, changed()))
            .unwrap()
            .unwrap();
        assert_eq!(passed.outcome, Outcome::Passthrough);
        let unknown = annotate(request(&root, Mode::Replay, vec![call("sum", json!({}))]))
            .unwrap()
            .unwrap();
        assert_eq!(unknown.miss.unwrap().recorded_tools, ["add", "echo"]);
    }

    #[test]
    fn an_unregistered_server_has_no_annotation_and_a_bad_registry_names_its_rule() {
        let dir = cassette_root();
        let root = dir.path().canonicalize().unwrap();
        let mut other = request(&root, Mode::Replay, vec![call("echo", json!({}))]);
        other.server = "filesystem".into();
        assert!(annotate(other).unwrap().is_none());
        let mut escaping = request(&root, Mode::Replay, vec![call("echo", json!({}))]);
        escaping.echo.cassettes[0].path = "../elsewhere.jsonl".into();
        let error = annotate(escaping).unwrap_err().to_string();
        assert!(error.ends_with("[echo.path.inside-root]"), "{error}");
        let recording = annotate(request(&root, Mode::Record, vec![call("echo", json!({}))]));
        assert_eq!(
            recording.unwrap().unwrap().outcome,
            Outcome::Recorded,
            "a recording needs no cassette yet"
        );
    }

    #[test]
    fn a_recorded_interaction_is_shown_redacted_again_and_an_unknown_one_is_none() {
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4)[..36].to_owned());
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": token}}});
        let (dir, _) = write_cassette(&[recorded_line(7, call)], true);
        let root = dir.path().canonicalize().unwrap();
        let shown = |ordinal| {
            recorded_interaction(InteractionRequest {
                echo: request(&root, Mode::Replay, Vec::new()).echo,
                id: "everything".into(),
                ordinal,
            })
        };
        let seven = shown(7).unwrap().unwrap();
        assert!(seven.request.contains("\"echo\""), "{}", seven.request);
        assert!(
            !seven.request.contains(&token),
            "a secret left in a cassette is redacted when shown: {}",
            seven.request
        );
        assert_eq!(seven.responses.len(), 1);
        assert!(shown(8).unwrap().is_none());
        let mut unknown = InteractionRequest {
            echo: request(&root, Mode::Replay, Vec::new()).echo,
            id: "other".into(),
            ordinal: 7,
        };
        assert!(matches!(
            recorded_interaction(unknown.clone()),
            Err(AnnotateError::UnknownId(_))
        ));
        unknown.echo.root_dir = "relative".into();
        assert!(
            recorded_interaction(unknown)
                .unwrap_err()
                .to_string()
                .contains("[echo.root.absolute]")
        );
    }

    #[test]
    fn a_long_history_is_cut_to_its_newest_calls_and_says_so() {
        let dir = cassette_root();
        let root = dir.path().canonicalize().unwrap();
        let calls = (0..=MAX_HISTORY)
            .map(|_| call("add", json!({"a": 1, "b": 2})))
            .collect();
        let note = annotate(request(&root, Mode::Replay, calls)).unwrap().unwrap();
        assert!(note.history_truncated);
    }
}
