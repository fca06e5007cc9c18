//! Server requests a hit replays (sampling, elicitation, roots, ping): the
//! recorded ones, each given an id of the replay's own and placed among the
//! hit's notifications as recorded, and the client's answers checked against
//! the answers recorded for them. The transports send and wait
//! ([`crate::stdio`], [`crate::http`]); this module decides what and checks.

use std::time::Duration;

use serde_json::{Value, json};

use crate::json_diff::differing_paths;
use crate::paths::PathRoots;
use crate::redact::Redactor;

/// Longest wait for the client's answer to a replayed server request; past it
/// the call is answered with a miss that says so.
pub const ANSWER_TIMEOUT: Duration = Duration::from_mins(1);
/// Most bytes of other messages a stdio replay holds while it waits for the
/// client's answer to a server request (they are read once the call is
/// answered); past it the call is answered with a miss that says so.
pub const MAX_HELD_BYTES: usize = 16 * 1024 * 1024;
/// The ids replay gives the server requests it sends: this prefix and a number
/// of the replay's own, so two calls that wait at once never share one, and
/// a client that numbers its own requests never meets one of them.
const ID_PREFIX: &str = "dshkit-echo-";

/// One step of a hit before its response.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this server request (with the replay's id) to the client.
    Ask(Value),
    /// Wait for the client's answer to the request sent with `id`, and check it.
    Await(Awaited),
}

/// A [`Step`] and its place: after how many of the hit's notifications.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) after: usize,
    pub(crate) step: Step,
}

/// A server request the client must answer as it answered while recording.
#[derive(Debug)]
pub(crate) struct Awaited {
    /// The id the request went out with.
    pub(crate) id: Value,
    /// The request's method, for messages.
    pub(crate) method: String,
    /// The client's recorded answer.
    recorded: Value,
}

/// Why a hit's server request went wrong: the call is answered with a miss
/// that says so.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    reason: &'static str,
    message: String,
    method: String,
    paths: Vec<String>,
}

impl Failure {
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The JSON-RPC error data of the miss, as [`crate::matcher::Miss::data`] writes one.
    pub(crate) fn data(&self) -> Value {
        let mut data = json!({
            "echo": "miss", "reason": self.reason, "message": self.message, "serverRequest": self.method,
        });
        if !self.paths.is_empty() {
            data["differingPaths"] = json!(self.paths);
        }
        data
    }
}

/// The steps of the recorded `exchanges` (an interaction's `serverRequests`:
/// each `{"request": …}` or `{"response": …}`, in arrival order), placed by
/// `after` (its `serverRequestsAfter`; absent or damaged: after all `notifications`).
/// Each request gets the id `next_id` numbers, its answer waits under that id;
/// a recorded request whose answer was not recorded is sent and not waited
/// for. This machine's paths go where the cassette holds tokens.
pub(crate) fn steps(
    exchanges: Vec<Value>,
    after: &[u64],
    notifications: usize,
    next_id: &mut u64,
    paths: &PathRoots,
) -> Vec<Placed> {
    let placed_by_recording = after.len() == exchanges.len();
    // Recorded id, the id it went out with, its method.
    let mut sent: Vec<(Value, Value, String)> = Vec::new();
    let mut placed = Vec::new();
    for (index, mut exchange) in exchanges.into_iter().enumerate() {
        let at = if placed_by_recording {
            usize::try_from(after[index]).map_or(notifications, |n| n.min(notifications))
        } else {
            notifications
        };
        if let Some(mut request) = exchange.get_mut("request").map(Value::take) {
            let Some(method) = request["method"].as_str().map(str::to_owned) else {
                continue;
            };
            *next_id += 1;
            let id = json!(format!("{ID_PREFIX}{next_id}"));
            let recorded_id = request.get("id").cloned().unwrap_or(Value::Null);
            request["id"] = id.clone();
            paths.expand_value(&mut request);
            sent.push((recorded_id, id, method));
            placed.push(Placed {
                after: at,
                step: Step::Ask(request),
            });
        } else if let Some(recorded) = exchange.get_mut("response").map(Value::take) {
            let Some((_, id, method)) = sent
                .iter()
                .find(|(recorded_id, _, _)| Some(recorded_id) == recorded.get("id"))
            else {
                continue;
            };
            placed.push(Placed {
                after: at,
                step: Step::Await(Awaited {
                    id: id.clone(),
                    method: method.clone(),
                    recorded,
                }),
            });
        }
    }
    placed
}

/// The id of `message` if it is an answer (no method, an id), as the key
/// [`Awaited::key`] gives the request it answers.
pub(crate) fn answer_key(message: &Value) -> Option<String> {
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").map(Value::to_string)
}

impl Awaited {
    /// The key an answer to it has ([`answer_key`]).
    pub(crate) fn key(&self) -> String {
        self.id.to_string()
    }

    /// The client's `answer` against the recorded one, both without their
    /// `id` and `jsonrpc`: the live one redacted (and its paths written as
    /// tokens) as the recording was.
    pub(crate) fn check(&self, mut answer: Value, redactor: &Redactor) -> Result<(), Failure> {
        redactor.value(&mut answer);
        let paths = differing_paths(&without_envelope(&self.recorded), &without_envelope(&answer));
        if paths.is_empty() {
            return Ok(());
        }
        Err(Failure {
            reason: "server_request_answer_differs",
            message: format!(
                "the client answered the replayed `{}` otherwise than it did while recording; they differ at {paths:?}",
                self.method
            ),
            method: self.method.clone(),
            paths,
        })
    }

    /// The failure of a request the client did not answer: `why` says what
    /// ended the wait.
    pub(crate) fn unanswered(&self, why: &str) -> Failure {
        Failure {
            reason: "server_request_unanswered",
            message: format!(
                "the client did not answer the replayed `{}` ({why}); a client that answered it while recording must answer it in a replay too",
                self.method
            ),
            method: self.method.clone(),
            paths: Vec::new(),
        }
    }
}

/// `message` without the members that differ between any two answers.
fn without_envelope(message: &Value) -> Value {
    let mut message = message.clone();
    if let Some(members) = message.as_object_mut() {
        members.remove("id");
        members.remove("jsonrpc");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling(id: u64) -> Value {
        json!({"request": {"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage", "params": {"maxTokens": 10}}})
    }

    fn sampled(id: u64, text: &str) -> Value {
        json!({"response": {"jsonrpc": "2.0", "id": id, "result": {"content": {"type": "text", "text": text}}}})
    }

    #[test]
    fn recorded_requests_go_out_with_ids_of_the_replays_own_each_answer_awaited_under_its_request() {
        let mut next = 0;
        let recorded = vec![sampling(0), sampling(1), sampled(1, "b"), sampled(0, "a")];
        let placed = steps(recorded, &[0, 1, 1, 2], 2, &mut next, &PathRoots::none());
        let ids: Vec<String> = placed
            .iter()
            .map(|p| match &p.step {
                Step::Ask(request) => format!("ask {}", request["id"].as_str().unwrap()),
                Step::Await(awaited) => format!("await {}", awaited.id.as_str().unwrap()),
            })
            .collect();
        assert_eq!(
            ids,
            [
                "ask dshkit-echo-1",
                "ask dshkit-echo-2",
                "await dshkit-echo-2",
                "await dshkit-echo-1"
            ]
        );
        assert_eq!(placed.iter().map(|p| p.after).collect::<Vec<_>>(), [0, 1, 1, 2]);
        // A second hit numbers on: no two waiting requests share an id.
        let again = steps(vec![sampling(0)], &[], 3, &mut next, &PathRoots::none());
        let Step::Ask(request) = &again[0].step else {
            panic!("{again:?}")
        };
        assert_eq!(request["id"], "dshkit-echo-3");
        assert_eq!(again[0].after, 3, "without places: after every notification");
    }

    #[test]
    fn an_answer_is_checked_without_its_id_and_a_different_one_names_where_it_differs() {
        let mut next = 0;
        let placed = steps(
            vec![sampling(4), sampled(4, "a")],
            &[],
            0,
            &mut next,
            &PathRoots::none(),
        );
        let Step::Await(awaited) = &placed[1].step else {
            panic!("{placed:?}")
        };
        let redactor = Redactor::new(&[], &[]).unwrap();
        let same = json!({"id": "dshkit-echo-1", "result": {"content": {"type": "text", "text": "a"}}});
        assert_eq!(awaited.check(same, &redactor), Ok(()));
        let other = json!({"jsonrpc": "2.0", "id": "dshkit-echo-1", "result": {"content": {"type": "text", "text": "z"}}});
        let failure = awaited.check(other, &redactor).unwrap_err();
        assert_eq!(failure.data()["reason"], "server_request_answer_differs");
        assert_eq!(failure.data()["differingPaths"], json!(["result.content.text"]));
        assert_eq!(failure.data()["serverRequest"], "sampling/createMessage");
        let error = json!({"jsonrpc": "2.0", "id": "dshkit-echo-1", "error": {"code": -1, "message": "no"}});
        assert_eq!(
            awaited.check(error, &redactor).unwrap_err().data()["differingPaths"],
            json!(["error", "result"])
        );
        let late = awaited.unanswered("no answer within 60 s");
        assert_eq!(late.data()["reason"], "server_request_unanswered");
        assert!(late.message().contains("no answer within 60 s"), "{late:?}");
        assert_eq!(
            answer_key(&json!({"id": "dshkit-echo-1", "result": {}})),
            Some(awaited.key())
        );
        assert_eq!(answer_key(&json!({"id": 1, "method": "ping"})), None);
    }
}
