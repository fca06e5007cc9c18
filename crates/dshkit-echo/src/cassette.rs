//! The cassette format, version 3: JSON Lines, one record per line, a header first.
//! Version 2 added the header's `paths`: the roots (the working directory, the
//! home) whose paths the records hold as tokens (see [`crate::paths`]); a
//! version 1 cassette reads as one with no roots. Version 3 replays what an
//! interaction's server requests asked (`serverRequestsAfter` places them among
//! its notifications) and an HTTP answer's status other than 200 (`status`,
//! with `contentType` and the `body` that answered instead of a JSON-RPC
//! response); a version 2 cassette reads as one whose server requests came
//! after its notifications. A reader older than version 3 refuses it rather
//! than replay it without them.
//! Read leniently where a crash can leave damage (a cut last line) and strictly
//! where a reader cannot know the meaning (a future format version); the header
//! is checked in one place ([`Header::from_line`]) for every reader. How
//! cassettes are written: [`crate::writer`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Action, CassetteError};
use crate::redact::Redactor;

/// The format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 3;
/// Longest line read (64 MiB); a longer one is damage, not data.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Always `"header"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub format_version: u32,
    /// `dshkit <version>`.
    pub recorder: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `2025` (initialize, sessions) or `2026` (server/discover, stateless).
    pub era: String,
    pub protocol_version: Option<String>,
    pub server_info: Option<Value>,
    /// Redaction ran on everything before it was written.
    pub redacted: bool,
    /// Seconds since the Unix epoch.
    pub created_at: u64,
    /// The roots (`cwd`, `home`) whose paths the records hold as their tokens
    /// (`{{dshkit:cwd}}`); replay and verify put this machine's paths there.
    /// Empty in version 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

impl Header {
    pub fn new(transport: &str) -> Self {
        Self {
            kind: "header".into(),
            format_version: FORMAT_VERSION,
            recorder: format!("dshkit {}", env!("CARGO_PKG_VERSION")),
            transport: transport.into(),
            era: "2025".into(),
            protocol_version: None,
            server_info: None,
            redacted: true,
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            paths: Vec::new(),
        }
    }

    /// This machine's paths of the roots the records hold as tokens.
    pub fn path_roots(&self) -> crate::paths::PathRoots {
        if self.paths.is_empty() {
            return crate::paths::PathRoots::none();
        }
        crate::paths::PathRoots::here().only(&self.paths)
    }

    /// Makes `redactor` normalise this machine's paths of the roots this header
    /// names, and no others: live requests are keyed as the recording was, live
    /// answers compared as it was written, and what is appended holds the same
    /// tokens. A version 1 cassette names none.
    pub fn scope_paths(&self, redactor: &mut Redactor) {
        let paths = self.path_roots();
        if *redactor.paths() != paths {
            redactor.set_paths(paths);
        }
    }

    /// Reads a cassette's first line (`path` names the file in errors): the
    /// one check of a header, for every reader. Not a header is
    /// [`CassetteError::NoHeader`], a newer format than this build reads
    /// [`CassetteError::FutureVersion`].
    pub fn from_line(path: &Path, line: &[u8]) -> Result<Self, CassetteError> {
        let no_header = |reason: String| CassetteError::NoHeader {
            path: path.to_owned(),
            reason,
        };
        let value: Value = serde_json::from_slice(line).map_err(|e| no_header(e.to_string()))?;
        let Some(found) = claimed_version(&value) else {
            return Err(no_header(format!("type is {}", value["type"])));
        };
        if found > u64::from(FORMAT_VERSION) {
            return Err(CassetteError::FutureVersion {
                path: path.to_owned(),
                found,
                newest: FORMAT_VERSION,
            });
        }
        serde_json::from_value(value).map_err(|e| no_header(e.to_string()))
    }
}

/// The format version a first line claims if it is a header's (0 for a header
/// that names none); `None` for any other line.
fn claimed_version(line: &Value) -> Option<u64> {
    (line["type"] == "header").then(|| line["formatVersion"].as_u64().unwrap_or(0))
}

/// Whether the file at `path` starts as a cassette does: its first line (in
/// the first 4 KiB) is a header that names its format version, whichever
/// version it is (a listing names a cassette this build cannot read, with
/// the reader's error).
pub fn is_cassette(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let n = file.read(&mut head).unwrap_or(0);
    let first = head[..n].split(|b| *b == b'\n').next().unwrap_or(&[]);
    serde_json::from_slice::<Value>(first)
        .is_ok_and(|line| claimed_version(&line).is_some() && line.get("formatVersion").is_some())
}

/// One request and everything the server sent for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interaction {
    /// 1-based position in the cassette.
    pub ordinal: u64,
    pub request: Value,
    /// The response(s): one for JSON, each event for an SSE stream.
    pub responses: Vec<Value>,
    /// Server notifications attributed to this request, in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<Value>,
    /// For each notification, how many microseconds before the response it
    /// arrived. Replay keeps the notifications that far apart from the response
    /// (bounded), as the server did. Absent in cassettes recorded before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notification_lead_us: Vec<u64>,
    /// Requests the server made while answering (sampling, elicitation, roots,
    /// ping) and the client's answers, in arrival order: each `{"request": …}`
    /// or `{"response": …}`. Replay sends the requests and checks the answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_requests: Vec<Value>,
    /// For each entry of `server_requests`, how many of `notifications` arrived
    /// before it (version 3). Absent: every notification came first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_requests_after: Vec<u64>,
    /// HTTP status when it was not 200 (an HTTP upstream's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The answer's `Content-Type`, kept with a `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The answer's body as text (redacted) when it is no JSON-RPC answer to
    /// the request (a 404 page, an error without the request's id); then
    /// `responses` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Milliseconds from the request to its response.
    pub ms: u64,
    /// `recorded`, or `live` for a passthrough appended during replay.
    #[serde(default = "recorded")]
    pub origin: String,
}

fn recorded() -> String {
    "recorded".into()
}

/// A line of the cassette after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Interaction(Interaction),
    /// A message not tied to a request: a client notification, a server
    /// notification outside any request.
    Message {
        from: String,
        message: Value,
    },
    /// A line the server printed on stdout that is not JSON.
    Raw {
        line: String,
    },
}

impl Record {
    /// Redacts every message of the record in place; whether anything changed.
    pub fn redact(&mut self, redactor: &Redactor) -> bool {
        match self {
            Self::Interaction(i) => {
                let mut changed = redactor.value(&mut i.request);
                for value in i
                    .responses
                    .iter_mut()
                    .chain(i.notifications.iter_mut())
                    .chain(i.server_requests.iter_mut())
                {
                    changed |= redactor.value(value);
                }
                if let Some(body) = &mut i.body
                    && let std::borrow::Cow::Owned(redacted) = redactor.redact(body)
                    && redacted != *body
                {
                    *body = redacted;
                    changed = true;
                }
                changed
            }
            Self::Message { message, .. } => redactor.value(message),
            Self::Raw { line } => match redactor.redact(line) {
                std::borrow::Cow::Owned(redacted) if redacted != *line => {
                    *line = redacted;
                    true
                }
                _ => false,
            },
        }
    }
}

/// A cassette in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    pub header: Header,
    pub records: Vec<Record>,
}

impl Cassette {
    /// The interactions, taken out of the cassette (no copies).
    pub fn into_interactions(self) -> Vec<Interaction> {
        self.records
            .into_iter()
            .filter_map(|r| match r {
                Record::Interaction(i) => Some(i),
                _ => None,
            })
            .collect()
    }

    pub fn interactions(&self) -> impl Iterator<Item = &Interaction> {
        self.records.iter().filter_map(|r| match r {
            Record::Interaction(i) => Some(i),
            _ => None,
        })
    }
}

/// A cassette and what the reader had to forgive.
#[derive(Debug)]
pub struct Loaded {
    pub cassette: Cassette,
    pub warnings: Vec<String>,
}

/// Reads a cassette. A cut last line (a crash while recording) is dropped with a
/// warning; unknown record types are skipped with a warning; a future format
/// version is refused.
pub fn read(path: &Path) -> Result<Loaded, CassetteError> {
    Records::open(path)?.load()
}

/// Parses cassette bytes (see [`read`]).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Loaded, CassetteError> {
    Records::new(path, bytes)?.load()
}

/// A cassette read record by record, in memory bounded by its longest line: the
/// header when opened, then each record as it is read. It forgives what [`read`]
/// forgives, telling it in [`Records::warnings`], and stops at the first damage
/// it cannot forgive (that error is the last item).
#[derive(Debug)]
pub struct Records<R> {
    path: PathBuf,
    input: R,
    header: Header,
    /// The number of the last line read.
    number: usize,
    line: Vec<u8>,
    /// Whether the last line read ended with a newline (only the file's last
    /// line can lack one).
    line_ended: bool,
    warnings: Vec<String>,
    done: bool,
}

impl Records<std::io::BufReader<std::fs::File>> {
    /// Opens the cassette at `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, CassetteError> {
        let file = std::fs::File::open(path).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            action: Action::Read,
            source,
        })?;
        Self::new(path, std::io::BufReader::with_capacity(256 * 1024, file))
    }
}

impl<R: std::io::BufRead> Records<R> {
    /// Reads the header from `input` (the cassette at `path`, named in errors).
    pub fn new(path: &Path, input: R) -> Result<Self, CassetteError> {
        let no_header = |reason: String| CassetteError::NoHeader {
            path: path.to_owned(),
            reason,
        };
        let mut records = Self {
            path: path.to_owned(),
            input,
            header: Header::new(""),
            number: 0,
            line: Vec::new(),
            line_ended: true,
            warnings: Vec::new(),
            done: false,
        };
        loop {
            if !records.next_line()? {
                return Err(no_header("the file is empty".into()));
            }
            if !records.line.iter().all(u8::is_ascii_whitespace) {
                break;
            }
        }
        records.header = Header::from_line(path, &records.line)?;
        Ok(records)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The line of the record last returned, as it was read (without its newline).
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// What the reader forgave so far.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Reads every record into a [`Loaded`] cassette.
    pub fn load(mut self) -> Result<Loaded, CassetteError> {
        let records = self.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok(Loaded {
            cassette: Cassette {
                header: self.header,
                records,
            },
            warnings: self.warnings,
        })
    }

    /// Reads the next line (without its newline) into `self.line`; false at the
    /// end. A line longer than [`MAX_LINE_BYTES`] is damage.
    fn next_line(&mut self) -> Result<bool, CassetteError> {
        use std::io::{BufRead as _, Read as _};
        self.line.clear();
        let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 2;
        let read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.line)
            .map_err(|source| CassetteError::Io {
                path: self.path.clone(),
                action: Action::Read,
                source,
            })?;
        if read == 0 {
            return Ok(false);
        }
        self.number += 1;
        self.line_ended = self.line.last() == Some(&b'\n');
        if self.line_ended {
            self.line.pop();
        }
        if self.line.len() > MAX_LINE_BYTES {
            return Err(self.bad_record(format!("longer than {MAX_LINE_BYTES} bytes")));
        }
        Ok(true)
    }

    fn bad_record(&self, reason: String) -> CassetteError {
        CassetteError::BadRecord {
            path: self.path.clone(),
            line: self.number,
            reason,
        }
    }

    /// The next record, `None` at the end.
    fn next_record(&mut self) -> Result<Option<Record>, CassetteError> {
        loop {
            if !self.next_line()? {
                return Ok(None);
            }
            let line = &self.line;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // The common case straight into the typed record, without the
            // buffering an internally tagged enum costs: read the tag, then the
            // one struct it names.
            if let Some(record) = fast_record(line) {
                return Ok(Some(record));
            }
            let value: Value = match serde_json::from_slice(line) {
                Ok(v) => v,
                // A line without its newline is the file's last: a crash while
                // recording cuts it.
                Err(e) if !self.line_ended => {
                    let number = self.number;
                    self.warnings.push(format!(
                        "line {number} is cut short ({e}); dropped it, as a crash while recording leaves it"
                    ));
                    return Ok(None);
                }
                Err(e) => return Err(self.bad_record(e.to_string())),
            };
            let kind = value["type"].as_str().unwrap_or("").to_owned();
            match serde_json::from_value::<Record>(value) {
                Ok(record) => return Ok(Some(record)),
                Err(_) if !matches!(kind.as_str(), "interaction" | "message" | "raw") => {
                    let number = self.number;
                    self.warnings
                        .push(format!("line {number}: unknown record type {kind:?}, skipped"));
                }
                Err(e) => return Err(self.bad_record(e.to_string())),
            }
        }
    }
}

impl<R: std::io::BufRead> Iterator for Records<R> {
    type Item = Result<Record, CassetteError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_record().transpose();
        if !matches!(next, Some(Ok(_))) {
            self.done = true;
        }
        next
    }
}

/// A record parsed by its `type` tag; `None` sends the line to the careful path.
fn fast_record(line: &[u8]) -> Option<Record> {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Message {
        from: String,
        message: Value,
    }
    #[derive(Deserialize)]
    struct Raw {
        line: String,
    }
    let tag: Tag<'_> = serde_json::from_slice(line).ok()?;
    match tag.kind.as_ref() {
        "interaction" => serde_json::from_slice::<Interaction>(line)
            .ok()
            .map(Record::Interaction),
        "message" => serde_json::from_slice::<Message>(line)
            .ok()
            .map(|m| Record::Message {
                from: m.from,
                message: m.message,
            }),
        "raw" => serde_json::from_slice::<Raw>(line)
            .ok()
            .map(|r| Record::Raw { line: r.line }),
        _ => None,
    }
}

/// Records and cassette files for the crate's unit tests.
#[cfg(test)]
pub(crate) mod test_records {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use super::{Header, Interaction, Record};

    /// A recorded interaction answering `request` with `{"n": ordinal}`.
    pub(crate) fn recorded(ordinal: u64, request: Value) -> Interaction {
        Interaction {
            ordinal,
            request,
            responses: vec![json!({"result": {"n": ordinal}})],
            notifications: vec![],
            notification_lead_us: vec![],
            server_requests: vec![],
            server_requests_after: vec![],
            status: None,
            content_type: None,
            body: None,
            ms: 0,
            origin: "recorded".into(),
        }
    }

    /// The cassette line of [`recorded`].
    pub(crate) fn recorded_line(ordinal: u64, request: Value) -> String {
        serde_json::to_string(&Record::Interaction(recorded(ordinal, request))).unwrap()
    }

    /// A cassette `c.jsonl` in a new directory: a header, then `lines`; its last
    /// line ends with a newline if `clean_end`.
    pub(crate) fn write_cassette(lines: &[String], clean_end: bool) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut text = serde_json::to_string(&Header::new("stdio")).unwrap();
        for line in lines {
            text.push('\n');
            text.push_str(line);
        }
        if clean_end {
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// A `ping` answered with an empty result, as interaction `n` of a cassette.
    pub(crate) fn ping(n: u64) -> Record {
        Record::Interaction(Interaction {
            ordinal: n,
            request: json!({"jsonrpc": "2.0", "id": n, "method": "ping"}),
            responses: vec![json!({"jsonrpc": "2.0", "id": n, "result": {}})],
            notifications: vec![],
            notification_lead_us: vec![],
            server_requests: vec![],
            server_requests_after: vec![],
            status: None,
            content_type: None,
            body: None,
            ms: 1,
            origin: "recorded".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::test_records::ping as interaction;
    use super::*;

    #[test]
    fn a_version_1_cassette_reads_as_one_without_path_tokens() {
        let path = Path::new("old.jsonl");
        let old = br#"{"type":"header","formatVersion":1,"recorder":"dshkit 0.1.0","transport":"stdio","era":"2025","redacted":true,"createdAt":1}
{"type":"interaction","ordinal":1,"request":{"jsonrpc":"2.0","id":1,"method":"ping"},"responses":[{"jsonrpc":"2.0","id":1,"result":{}}],"ms":1}
"#;
        let loaded = parse(path, old).unwrap();
        assert_eq!(loaded.cassette.header.format_version, 1);
        assert!(loaded.cassette.header.paths.is_empty());
        assert!(loaded.cassette.header.path_roots().is_empty());
        assert_eq!(loaded.cassette.interactions().count(), 1);
        // Written again, a header without roots leaves `paths` out.
        let written = serde_json::to_value(&loaded.cassette.header).unwrap();
        assert!(written.get("paths").is_none(), "{written}");
    }

    #[test]
    fn future_versions_are_refused_unknown_records_skipped_and_damage_in_the_middle_is_an_error() {
        let path = Path::new("t.jsonl");
        let future = br#"{"type":"header","formatVersion":4}
"#;
        assert!(matches!(
            parse(path, future),
            Err(CassetteError::FutureVersion { found: 4, .. })
        ));
        let mut header = serde_json::to_string(&Header::new("stdio")).unwrap();
        header.push('\n');
        let unknown = format!("{header}{{\"type\":\"hologram\",\"x\":1}}\n");
        let loaded = parse(path, unknown.as_bytes()).unwrap();
        assert!(loaded.warnings[0].contains("hologram"));
        let broken = format!(
            "{header}{{broken\n{}\n",
            serde_json::to_string(&interaction(1)).unwrap()
        );
        assert!(matches!(
            parse(path, broken.as_bytes()),
            Err(CassetteError::BadRecord { line: 2, .. })
        ));
        assert!(matches!(
            parse(path, b"not json\n"),
            Err(CassetteError::NoHeader { .. })
        ));
        assert!(matches!(parse(path, b""), Err(CassetteError::NoHeader { .. })));
    }

    #[test]
    fn a_cassette_is_read_record_by_record_up_to_its_damage() {
        let mut text = serde_json::to_string(&Header::new("stdio")).unwrap();
        text.push('\n');
        for n in 1..=3 {
            text.push_str(&serde_json::to_string(&interaction(n)).unwrap());
            text.push('\n');
        }
        text.push_str("{not json\n");
        text.push_str(&serde_json::to_string(&interaction(5)).unwrap());
        text.push('\n');
        let mut records = Records::new(Path::new("c.jsonl"), text.as_bytes()).unwrap();
        for n in 1..=3 {
            assert_eq!(records.next().unwrap().unwrap(), interaction(n));
        }
        let damage = records.next().unwrap().unwrap_err().to_string();
        assert!(damage.starts_with("c.jsonl:5: not a JSON record"), "{damage}");
        assert!(records.next().is_none(), "nothing after the damage");
        // The same damage refuses the whole cassette when it is read at once.
        assert!(parse(Path::new("c.jsonl"), text.as_bytes()).is_err());
    }
}
