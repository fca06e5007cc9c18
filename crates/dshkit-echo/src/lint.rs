//! Cassette checks (`dshkit echo lint`) and the readable timeline (`inspect`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cassette::{Cassette, Record};

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `error` or `warning`.
    pub level: &'static str,
    /// A stable rule id.
    pub rule: &'static str,
    pub message: String,
}

fn error(rule: &'static str, message: String) -> Finding {
    Finding {
        level: "error",
        rule,
        message,
    }
}

fn warning(rule: &'static str, message: String) -> Finding {
    Finding {
        level: "warning",
        rule,
        message,
    }
}

/// Most findings kept; the rest are counted in one last finding.
pub const MAX_FINDINGS: usize = 1000;

/// Checks that the header agrees with the frames, and looks for orphan responses,
/// id collisions, out-of-order ordinals and unpaired responses.
pub fn lint(cassette: &Cassette) -> Vec<Finding> {
    let mut linter = Linter::new(&cassette.header);
    for record in &cassette.records {
        linter.record(record);
    }
    linter.finish()
}

/// The checks of [`lint`], fed one record at a time: a cassette of any length
/// is linted in memory that grows only with its distinct request ids (a hash and
/// an ordinal each) and at most [`MAX_FINDINGS`] findings.
#[derive(Debug)]
pub struct Linter {
    header: crate::cassette::Header,
    /// Whether the first interaction was seen (the handshake is checked on it).
    started: bool,
    last_ordinal: u64,
    ids: HashMap<u64, u64>,
    findings: Vec<Finding>,
    /// Findings beyond [`MAX_FINDINGS`].
    dropped: usize,
}

impl Linter {
    pub fn new(header: &crate::cassette::Header) -> Self {
        let mut linter = Self {
            header: header.clone(),
            started: false,
            last_ordinal: 0,
            ids: HashMap::new(),
            findings: Vec::new(),
            dropped: 0,
        };
        if !matches!(header.transport.as_str(), "stdio" | "http") {
            linter.push(error(
                "header-transport",
                format!("unknown transport {:?}", header.transport),
            ));
        }
        linter
    }

    fn push(&mut self, finding: Finding) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(finding);
        } else {
            self.dropped += 1;
        }
    }

    /// Checks one record, in cassette order.
    pub fn record(&mut self, record: &Record) {
        match record {
            Record::Interaction(i) => {
                if !self.started {
                    self.started = true;
                    self.handshake(i);
                }
                if i.ordinal <= self.last_ordinal {
                    let last = self.last_ordinal;
                    self.push(error(
                        "ordinal-order",
                        format!("ordinal {} follows {last}", i.ordinal),
                    ));
                }
                self.last_ordinal = i.ordinal;
                let id = i.request["id"].to_string();
                if let Some(previous) = self.ids.insert(id_hash(&id), i.ordinal) {
                    self.push(warning(
                        "id-collision",
                        format!(
                            "request id {id} is used by interactions {previous} and {}",
                            i.ordinal
                        ),
                    ));
                }
                if i.responses.is_empty() && i.body.is_none() {
                    self.push(error(
                        "no-response",
                        format!("interaction {} has no response", i.ordinal),
                    ));
                }
                for response in &i.responses {
                    if response["id"] != i.request["id"] {
                        self.push(error(
                            "response-id",
                            format!(
                                "interaction {}: response id {} does not answer request id {}",
                                i.ordinal, response["id"], i.request["id"]
                            ),
                        ));
                    }
                }
            }
            Record::Message { from, message } if from == "server" && message.get("method").is_none() => {
                self.push(error(
                    "orphan-response",
                    format!(
                        "a server response with id {} answers no recorded request",
                        message["id"]
                    ),
                ));
            }
            Record::Raw { line } => self.push(warning(
                "raw-line",
                format!("the server printed a non-JSON line on stdout: {}", clip(line, 80)),
            )),
            Record::Message { .. } => {}
        }
    }

    /// The findings; the handshake's when the cassette held no interaction.
    pub fn finish(mut self) -> Vec<Finding> {
        if !self.started {
            self.push(warning("empty", "the cassette holds no interaction".into()));
        }
        if self.dropped > 0 {
            let dropped = self.dropped;
            self.findings.push(warning(
                "truncated",
                format!("{dropped} more finding(s) not shown (at most {MAX_FINDINGS})"),
            ));
        }
        self.findings
    }

    /// The header against the first interaction: the era and protocol it says.
    fn handshake(&mut self, first: &crate::cassette::Interaction) {
        let header = &self.header;
        let finding = match first.request["method"].as_str() {
            Some("initialize") => {
                let mut found = Vec::new();
                if header.era != "2025" {
                    found.push(error(
                        "header-era",
                        format!(
                            "the header says era {} but the cassette starts with initialize (2025)",
                            header.era
                        ),
                    ));
                }
                let negotiated = first
                    .responses
                    .first()
                    .and_then(|r| r["result"]["protocolVersion"].as_str());
                if negotiated != header.protocol_version.as_deref() {
                    found.push(error(
                        "header-protocol-version",
                        format!(
                            "the header says protocol {:?} but initialize negotiated {negotiated:?}",
                            header.protocol_version
                        ),
                    ));
                }
                found
            }
            Some("server/discover") if header.era != "2026" => vec![error(
                "header-era",
                format!(
                    "the header says era {} but the cassette starts with server/discover (2026)",
                    header.era
                ),
            )],
            Some("server/discover") => Vec::new(),
            other => vec![warning(
                "no-handshake",
                format!(
                    "the first interaction is {}, not initialize or server/discover",
                    other.unwrap_or("?")
                ),
            )],
        };
        for f in finding {
            self.push(f);
        }
    }
}

/// A request id's hash: ids are remembered as hashes, not strings.
fn id_hash(id: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(id)
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    format!("{}…", text.chars().take(max).collect::<String>())
}

/// One line of the timeline.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub ordinal: Option<u64>,
    pub kind: &'static str,
    pub method: String,
    pub summary: String,
    pub ms: Option<u64>,
    pub notifications: usize,
    pub is_error: bool,
    pub origin: Option<String>,
}

/// One record's line of the timeline.
pub fn entry(record: &Record) -> Entry {
    match record {
        Record::Interaction(i) => {
            let method = i.request["method"].as_str().unwrap_or("?").to_owned();
            let response = i.responses.first().cloned().unwrap_or(Value::Null);
            let is_error = response.get("error").is_some()
                || response["result"]["isError"] == json!(true)
                || i.status.is_some_and(|status| !(200..300).contains(&status));
            let summary = match method.as_str() {
                "tools/call" => format!(
                    "{} {}",
                    i.request["params"]["name"].as_str().unwrap_or("?"),
                    clip(&i.request["params"]["arguments"].to_string(), 60)
                ),
                "tools/list" => format!(
                    "{} tools",
                    response["result"]["tools"].as_array().map_or(0, Vec::len)
                ),
                "initialize" => format!(
                    "{} {}",
                    response["result"]["serverInfo"]["name"].as_str().unwrap_or("?"),
                    response["result"]["protocolVersion"].as_str().unwrap_or("")
                ),
                _ => clip(
                    &i.request
                        .get("params")
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    60,
                ),
            };
            Entry {
                ordinal: Some(i.ordinal),
                kind: "interaction",
                method,
                summary,
                ms: Some(i.ms),
                notifications: i.notifications.len(),
                is_error,
                origin: Some(i.origin.clone()),
            }
        }
        Record::Message { from, message } => Entry {
            ordinal: None,
            kind: if from == "client" {
                "client-message"
            } else {
                "server-message"
            },
            method: message["method"].as_str().unwrap_or("(response)").to_owned(),
            summary: clip(
                &message.get("params").map(ToString::to_string).unwrap_or_default(),
                60,
            ),
            ms: None,
            notifications: 0,
            is_error: false,
            origin: None,
        },
        Record::Raw { line } => Entry {
            ordinal: None,
            kind: "raw",
            method: String::new(),
            summary: clip(line, 80),
            ms: None,
            notifications: 0,
            is_error: false,
            origin: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cassette::Header;
    use crate::cassette::test_records::recorded;

    #[test]
    fn record_by_record_the_findings_are_bounded_and_the_rest_counted() {
        let mut linter = Linter::new(&Header::new("stdio"));
        // A ping first: no handshake (one warning).
        let mut ping = recorded(1, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        ping.responses = vec![json!({"jsonrpc": "2.0", "id": 1, "result": {}})];
        linter.record(&Record::Interaction(ping));
        for n in 0..1500 {
            linter.record(&Record::Raw {
                line: format!("noise {n}"),
            });
        }
        let findings = linter.finish();
        assert_eq!(findings.len(), MAX_FINDINGS + 1);
        assert_eq!(findings[0].rule, "no-handshake");
        let last = findings.last().unwrap();
        assert_eq!(
            (last.rule, last.message.as_str()),
            ("truncated", "501 more finding(s) not shown (at most 1000)")
        );
    }

    #[test]
    fn ids_remembered_as_hashes_still_find_every_reuse_and_no_other() {
        let cassette = Cassette {
            header: Header::new("stdio"),
            records: [(1, 7), (2, 8), (3, 7), (4, 70)]
                .into_iter()
                .map(|(ordinal, id)| {
                    let mut i = recorded(
                        ordinal,
                        json!({"jsonrpc": "2.0", "id": id, "method": "initialize"}),
                    );
                    i.responses = vec![json!({"jsonrpc": "2.0", "id": id, "result": {}})];
                    Record::Interaction(i)
                })
                .collect(),
        };
        let collisions: Vec<String> = lint(&cassette)
            .into_iter()
            .filter(|f| f.rule == "id-collision")
            .map(|f| f.message)
            .collect();
        assert_eq!(collisions, ["request id 7 is used by interactions 1 and 3"]);
    }
}
