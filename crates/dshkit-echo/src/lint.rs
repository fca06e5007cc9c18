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

/// Checks that the header agrees with the frames, and looks for orphan responses,
/// id collisions, out-of-order ordinals and unpaired responses.
pub fn lint(cassette: &Cassette) -> Vec<Finding> {
    let mut findings = Vec::new();
    lint_header(cassette, &mut findings);
    let mut last_ordinal = 0;
    let mut ids: HashMap<String, u64> = HashMap::new();
    for record in &cassette.records {
        match record {
            Record::Interaction(i) => {
                if i.ordinal <= last_ordinal {
                    findings.push(error(
                        "ordinal-order",
                        format!("ordinal {} follows {last_ordinal}", i.ordinal),
                    ));
                }
                last_ordinal = i.ordinal;
                let id = i.request["id"].to_string();
                if let Some(previous) = ids.insert(id.clone(), i.ordinal) {
                    findings.push(warning(
                        "id-collision",
                        format!(
                            "request id {id} is used by interactions {previous} and {}",
                            i.ordinal
                        ),
                    ));
                }
                if i.responses.is_empty() {
                    findings.push(error(
                        "no-response",
                        format!("interaction {} has no response", i.ordinal),
                    ));
                }
                for response in &i.responses {
                    if response["id"] != i.request["id"] {
                        findings.push(error(
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
                findings.push(error(
                    "orphan-response",
                    format!(
                        "a server response with id {} answers no recorded request",
                        message["id"]
                    ),
                ));
            }
            Record::Raw { line } => findings.push(warning(
                "raw-line",
                format!("the server printed a non-JSON line on stdout: {}", clip(line, 80)),
            )),
            Record::Message { .. } => {}
        }
    }
    findings
}

fn lint_header(cassette: &Cassette, findings: &mut Vec<Finding>) {
    let header = &cassette.header;
    if !matches!(header.transport.as_str(), "stdio" | "http") {
        findings.push(error(
            "header-transport",
            format!("unknown transport {:?}", header.transport),
        ));
    }
    let first = cassette.interactions().next();
    match first.and_then(|i| i.request["method"].as_str()) {
        Some("initialize") => {
            if header.era != "2025" {
                findings.push(error(
                    "header-era",
                    format!(
                        "the header says era {} but the cassette starts with initialize (2025)",
                        header.era
                    ),
                ));
            }
            let negotiated = first
                .and_then(|i| i.responses.first())
                .and_then(|r| r["result"]["protocolVersion"].as_str());
            if negotiated != header.protocol_version.as_deref() {
                findings.push(error(
                    "header-protocol-version",
                    format!(
                        "the header says protocol {:?} but initialize negotiated {negotiated:?}",
                        header.protocol_version
                    ),
                ));
            }
        }
        Some("server/discover") if header.era != "2026" => findings.push(error(
            "header-era",
            format!(
                "the header says era {} but the cassette starts with server/discover (2026)",
                header.era
            ),
        )),
        Some("server/discover") => {}
        Some(other) => findings.push(warning(
            "no-handshake",
            format!("the first interaction is {other}, not initialize or server/discover"),
        )),
        None => findings.push(warning("empty", "the cassette holds no interaction".into())),
    }
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

/// The cassette as a timeline.
pub fn timeline(cassette: &Cassette) -> Vec<Entry> {
    cassette
        .records
        .iter()
        .map(|record| match record {
            Record::Interaction(i) => {
                let method = i.request["method"].as_str().unwrap_or("?").to_owned();
                let response = i.responses.first().cloned().unwrap_or(Value::Null);
                let is_error =
                    response.get("error").is_some() || response["result"]["isError"] == json!(true);
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
        })
        .collect()
}
