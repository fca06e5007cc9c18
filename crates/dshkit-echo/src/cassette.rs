//! The cassette format, version 2: JSON Lines, one record per line, a header first.
//! Version 2 adds the header's `paths`: the roots (the working directory, the
//! home) whose paths the records hold as tokens (see [`crate::paths`]). A
//! version 1 cassette reads as one with no roots.
//! Written append-safe (each record one `write` of a whole line) or atomically (a
//! temporary file renamed over the old one). Read leniently where a crash can leave
//! damage (a cut last line) and strictly where a reader cannot know the meaning (a
//! future format version).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 2;
/// Longest line read (64 MiB); a longer one is damage, not data.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    #[error("{path}: failed to {action}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: cassette format version {found} is newer than this dshkit reads ({FORMAT_VERSION}); upgrade dshkit"
    )]
    FutureVersion { path: PathBuf, found: u64 },
    #[error("{path}: the first line is not a cassette header ({reason})")]
    NoHeader { path: PathBuf, reason: String },
    #[error("{path}:{line}: not a JSON record: {reason}")]
    BadRecord {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{0} already exists; record mode `once` never overwrites (use --mode all or new_episodes)")]
    Exists(PathBuf),
}

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
    /// Requests the server made while answering (sampling, elicitation, roots).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_requests: Vec<Value>,
    /// HTTP status when it was not 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
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
            action: "read",
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
        let value: Value = loop {
            if !records.next_line()? {
                return Err(no_header("the file is empty".into()));
            }
            if !records.line.iter().all(u8::is_ascii_whitespace) {
                break serde_json::from_slice(&records.line).map_err(|e| no_header(e.to_string()))?;
            }
        };
        if value["type"] != "header" {
            return Err(no_header(format!("type is {}", value["type"])));
        }
        let found = value["formatVersion"].as_u64().unwrap_or(0);
        if found > u64::from(FORMAT_VERSION) {
            return Err(CassetteError::FutureVersion {
                path: path.to_owned(),
                found,
            });
        }
        records.header = serde_json::from_value(value).map_err(|e| no_header(e.to_string()))?;
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
                action: "read",
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

/// Writes a whole cassette atomically: a temporary file beside it, then a rename.
pub fn write_atomic(path: &Path, cassette: &Cassette) -> Result<(), CassetteError> {
    let mut rewrite = Rewrite::create(path)?;
    rewrite.line(&serde_json::to_vec(&cassette.header).expect("a header serializes"))?;
    for record in &cassette.records {
        rewrite.line(&serde_json::to_vec(record).expect("a record serializes"))?;
    }
    rewrite.commit()
}

/// A new version of a file, written line by line beside it and renamed over it
/// by [`Rewrite::commit`]: readers see the old file or the new one, never a
/// part. Dropped uncommitted (an error on the way), it removes what it wrote.
#[derive(Debug)]
pub struct Rewrite {
    path: PathBuf,
    temp: PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
}

impl Rewrite {
    /// Starts the new version of `path`.
    pub fn create(path: &Path) -> Result<Self, CassetteError> {
        let temp = temp_path(path);
        let file = std::fs::File::create(&temp).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            action: "write a temporary file",
            source,
        })?;
        Ok(Self {
            path: path.to_owned(),
            temp,
            out: Some(std::io::BufWriter::with_capacity(256 * 1024, file)),
        })
    }

    fn io(&self, action: &'static str) -> impl FnOnce(std::io::Error) -> CassetteError + use<> {
        let path = self.path.clone();
        move |source| CassetteError::Io { path, action, source }
    }

    /// Appends `line` and a newline.
    pub fn line(&mut self, line: &[u8]) -> Result<(), CassetteError> {
        let error = self.io("write a temporary file");
        let out = self.out.as_mut().expect("open until committed");
        out.write_all(line)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(error)
    }

    /// Puts the new version in place of the old.
    pub fn commit(mut self) -> Result<(), CassetteError> {
        let out = self.out.take().expect("open until committed");
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)
            .map_err(self.io("write a temporary file"))?;
        // The new version keeps the old one's permissions (a private cassette stays so).
        if let Ok(old) = std::fs::metadata(&self.path) {
            std::fs::set_permissions(&self.temp, old.permissions())
                .map_err(self.io("keep the permissions"))?;
        }
        std::fs::rename(&self.temp, &self.path).map_err(self.io("rename into place"))
    }
}

impl Drop for Rewrite {
    fn drop(&mut self) {
        // Renamed away when committed; otherwise it is a part, and goes.
        let _ = std::fs::remove_file(&self.temp);
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "cassette".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Longest line buffer an [`Appender`] keeps between records.
const KEPT_LINE_BYTES: usize = 64 * 1024;

/// Appends records one whole line at a time, so a crash loses at most the line
/// being written (which the reader then drops), or the lines [held](Self::hold).
#[derive(Debug)]
pub struct Appender {
    file: std::fs::File,
    path: PathBuf,
    /// The line being written, kept to spare an allocation per record; while
    /// held, every line since [`Self::hold`].
    line: Vec<u8>,
    held: bool,
    /// Where the finished cassette goes when this appender writes a temporary file.
    finish_to: Option<PathBuf>,
}

/// How a recording treats an existing cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordMode {
    /// Refuse to touch an existing cassette.
    #[default]
    Once,
    /// Replay what is recorded; record and append only the misses.
    NewEpisodes,
    /// Record everything again; the old cassette is replaced only when the new one
    /// is complete.
    All,
}

impl Appender {
    /// Starts a new cassette at `path` with `header` (mode `once` or `all`).
    pub fn create(path: &Path, header: &Header, mode: RecordMode) -> Result<Self, CassetteError> {
        let (target, finish_to) = match mode {
            RecordMode::All => (temp_path(path), Some(path.to_owned())),
            _ => (path.to_owned(), None),
        };
        let mut options = std::fs::OpenOptions::new();
        options.append(true);
        if mode == RecordMode::All {
            options.create(true).truncate(false);
            let _ = std::fs::remove_file(&target);
        } else {
            options.create_new(true);
        }
        let file = options.open(&target).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                CassetteError::Exists(path.to_owned())
            } else {
                CassetteError::Io {
                    path: target.clone(),
                    action: "create",
                    source,
                }
            }
        })?;
        let mut appender = Self {
            file,
            path: target,
            line: Vec::new(),
            held: false,
            finish_to,
        };
        appender.append_line(header)?;
        Ok(appender)
    }

    /// Appends to an existing cassette (mode `new_episodes`, passthrough).
    pub fn open_existing(path: &Path) -> Result<Self, CassetteError> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| CassetteError::Io {
                path: path.to_owned(),
                action: "open for appending",
                source,
            })?;
        Ok(Self {
            file,
            path: path.to_owned(),
            line: Vec::new(),
            held: false,
            finish_to: None,
        })
    }

    pub fn append(&mut self, record: &Record) -> Result<(), CassetteError> {
        self.append_line(record)
    }

    /// Appends `item` (a header or anything that serializes as a record) as
    /// one line, written from one buffer.
    pub(crate) fn append_line(&mut self, item: &impl Serialize) -> Result<(), CassetteError> {
        if !self.held {
            self.line.clear();
        }
        serde_json::to_writer(&mut self.line, item).expect("a record serializes");
        self.line.push(b'\n');
        if self.held {
            return Ok(());
        }
        self.write_line()
    }

    /// Keeps the lines appended from now on until [`Self::release`], which
    /// writes them at once (a batch of records in one write).
    pub(crate) fn hold(&mut self) {
        if !self.held {
            self.line.clear();
            self.held = true;
        }
    }

    /// Writes the lines held since [`Self::hold`]; appends are written one by
    /// one again.
    pub(crate) fn release(&mut self) -> Result<(), CassetteError> {
        if !std::mem::replace(&mut self.held, false) || self.line.is_empty() {
            return Ok(());
        }
        self.write_line()
    }

    /// Writes what `line` holds.
    fn write_line(&mut self) -> Result<(), CassetteError> {
        let written = self.file.write_all(&self.line).and_then(|()| self.file.flush());
        if self.line.capacity() > KEPT_LINE_BYTES {
            self.line = Vec::new(); // a rare large record does not stay in memory
        }
        written.map_err(|source| CassetteError::Io {
            path: self.path.clone(),
            action: "append",
            source,
        })
    }

    /// Finishes the cassette: syncs it and, in mode `all`, renames it into place.
    pub fn finish(self) -> Result<PathBuf, CassetteError> {
        self.file.sync_all().map_err(|source| CassetteError::Io {
            path: self.path.clone(),
            action: "sync",
            source,
        })?;
        match self.finish_to {
            Some(final_path) => {
                std::fs::rename(&self.path, &final_path).map_err(|source| CassetteError::Io {
                    path: final_path.clone(),
                    action: "rename into place",
                    source,
                })?;
                Ok(final_path)
            }
            None => Ok(self.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn interaction(n: u64) -> Record {
        Record::Interaction(Interaction {
            ordinal: n,
            request: json!({"jsonrpc": "2.0", "id": n, "method": "ping"}),
            responses: vec![json!({"jsonrpc": "2.0", "id": n, "result": {}})],
            notifications: vec![],
            notification_lead_us: vec![],
            server_requests: vec![],
            status: None,
            ms: 1,
            origin: "recorded".into(),
        })
    }

    #[test]
    fn an_appended_cassette_reads_back_and_a_cut_last_line_is_dropped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut appender = Appender::create(&path, &Header::new("stdio"), RecordMode::Once).unwrap();
        appender.append(&interaction(1)).unwrap();
        appender.append(&interaction(2)).unwrap();
        appender.finish().unwrap();
        let loaded = read(&path).unwrap();
        assert_eq!(loaded.cassette.interactions().count(), 2);
        assert!(loaded.warnings.is_empty());

        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(br#"{"type":"interaction","ordinal":3,"request":{"jsonrpc":"2.0","#);
        let crashed = parse(&path, &bytes).unwrap();
        assert_eq!(crashed.cassette.interactions().count(), 2);
        assert!(
            crashed.warnings[0].contains("cut short"),
            "{:?}",
            crashed.warnings
        );

        assert!(matches!(
            Appender::create(&path, &Header::new("stdio"), RecordMode::Once),
            Err(CassetteError::Exists(_))
        ));
    }

    #[test]
    fn held_lines_are_written_together_on_release_and_appends_after_it_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let lines = || std::fs::read_to_string(&path).unwrap().lines().count();
        let mut appender = Appender::create(&path, &Header::new("stdio"), RecordMode::Once).unwrap();
        appender.hold();
        appender.append(&interaction(1)).unwrap();
        appender.append(&interaction(2)).unwrap();
        assert_eq!(lines(), 1, "only the header before the release");
        appender.release().unwrap();
        assert_eq!(lines(), 3);
        appender.append(&interaction(3)).unwrap();
        assert_eq!(lines(), 4, "not held any more");
        appender.finish().unwrap();
        let ordinals: Vec<u64> = read(&path)
            .unwrap()
            .cassette
            .interactions()
            .map(|i| i.ordinal)
            .collect();
        assert_eq!(ordinals, [1, 2, 3]);
    }

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
        let future = br#"{"type":"header","formatVersion":3}
"#;
        assert!(matches!(
            parse(path, future),
            Err(CassetteError::FutureVersion { found: 3, .. })
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
    fn numbers_survive_a_rewrite_digit_for_digit() {
        // Found by the `cassette` fuzz target: without exact float parsing a
        // rewrite (`echo redact`) changed 4.044444444444445e52.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let header = serde_json::to_string(&Header::new("stdio")).unwrap();
        let line = r#"{"type":"interaction","ordinal":1,"request":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":4.044444444444445e+52,"c":0.1}}},"responses":[{"jsonrpc":"2.0","id":1,"result":{}}],"ms":0}"#;
        let loaded = parse(&path, format!("{header}\n{line}\n").as_bytes()).unwrap();
        write_atomic(&path, &loaded.cassette).unwrap();
        let again = read(&path).unwrap();
        assert_eq!(again.cassette, loaded.cassette);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("4.044444444444445e"),
            "the digits are kept"
        );
    }

    #[test]
    fn a_rewrite_replaces_the_file_only_when_committed_and_keeps_its_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        #[cfg(unix)]
        dshkit_os::fs::set_mode(&path, 0o600).unwrap();
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };

        let mut abandoned = Rewrite::create(&path).unwrap();
        abandoned.line(b"half").unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(
            listing(),
            ["c.jsonl"],
            "an abandoned rewrite leaves nothing behind"
        );

        let mut rewrite = Rewrite::create(&path).unwrap();
        rewrite.line(b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "old\n",
            "not before the commit"
        );
        rewrite.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(listing(), ["c.jsonl"]);
        #[cfg(unix)]
        assert_eq!(
            dshkit_os::fs::mode(&std::fs::metadata(&path).unwrap()),
            Some(0o600)
        );
    }

    #[test]
    fn mode_all_replaces_the_old_cassette_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "old").unwrap();
        let mut appender = Appender::create(&path, &Header::new("stdio"), RecordMode::All).unwrap();
        appender.append(&interaction(1)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "old",
            "untouched while recording"
        );
        appender.finish().unwrap();
        assert_eq!(read(&path).unwrap().cassette.interactions().count(), 1);
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
