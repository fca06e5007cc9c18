//! A cassette read as an index, for replay: one pass over the file keeps, per
//! interaction, its match key's hash, its method and tool, and where its line is.
//! A recorded answer is read and parsed only when a request hits it, so a large
//! cassette costs a few dozen bytes per interaction in memory, not its parsed
//! JSON. The file is read with positioned reads; it is not changed while a replay
//! runs (passthroughs append to it, past every indexed line).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cassette::{Header, Interaction, MAX_LINE_BYTES};
use crate::error::{Action, CassetteError};
use crate::key::{MatchOptions, key_check, key_hash, key_of_text};

/// Where one interaction's line is.
#[derive(Debug, Clone, Copy)]
struct Location {
    /// Byte offset of its line.
    offset: u64,
    /// Length of its line (without the newline); at most [`MAX_LINE_BYTES`].
    len: u32,
    /// 1-based line number, for messages.
    line: u32,
    /// Where its answer is, when a hit can copy it unread.
    answer: AnswerSpan,
}

/// Where a plain interaction's one response is in its line: a hit sends the
/// response's text with the live id put in (see [`crate::live_id`]), without
/// reading the rest of the line. Plain is what replay would otherwise read to
/// the same bytes: one response; no notifications; no server requests (a hit
/// that has them asks the client first); no HTTP status; a valid `ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnswerSpan {
    /// Offset of the response from the line's start.
    start: u32,
    /// Its length; 0 for none.
    len: u32,
}

impl AnswerSpan {
    const NONE: Self = Self { start: 0, len: 0 };

    /// The span of `head`'s answer in `line`, which `head` was read from.
    fn of(line: &[u8], head: &Head<'_>) -> Self {
        let plain = head
            .ms
            .is_some_and(|ms| serde_json::from_str::<u64>(ms.get()).is_ok())
            && head.notifications.is_none_or(|notifications| {
                serde_json::from_str::<Vec<IgnoredAny>>(notifications.get()).is_ok_and(|n| n.is_empty())
            })
            && head
                .notification_lead_us
                .is_none_or(|leads| serde_json::from_str::<Vec<u64>>(leads.get()).is_ok())
            && head.status.is_none_or(|status| status.get() == "null")
            && head.server_requests.is_none_or(|requests| {
                serde_json::from_str::<Vec<IgnoredAny>>(requests.get()).is_ok_and(|r| r.is_empty())
            });
        let Some(OneResponse(Some(response))) = head.responses.as_ref().filter(|_| plain) else {
            return Self::NONE;
        };
        let start = response.get().as_ptr() as usize - line.as_ptr() as usize;
        match (u32::try_from(start), u32::try_from(response.get().len())) {
            (Ok(start), Ok(len)) => Self { start, len },
            _ => Self::NONE,
        }
    }
}

/// A line's `responses` as the index reads them in its one pass: the response
/// when there is exactly one; `None` for any other count, or anything but an
/// array (which replay finds damaged when it is hit).
struct OneResponse<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for OneResponse<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = OneResponse<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<Self::Value, A::Error> {
                let first = items.next_element::<&'a RawValue>()?;
                let mut more = false;
                while items.next_element::<IgnoredAny>()?.is_some() {
                    more = true;
                }
                Ok(OneResponse(first.filter(|_| !more)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut members: A,
            ) -> Result<Self::Value, A::Error> {
                while members.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(OneResponse(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(OneResponse(None))
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// What matching needs of one interaction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    /// Hash of its match key (see [`crate::key::key_hash`]).
    pub(crate) key: u64,
    /// The key's second hash, which confirms a hit (see [`crate::key::key_check`]). With
    /// 32 bits the facts stay 24 bytes, as they were with one hash.
    pub(crate) check: u32,
    /// Index into [`CassetteIndex::methods`].
    pub(crate) method: u32,
    /// Index into [`CassetteIndex::tools`] for a `tools/call`.
    pub(crate) tool: Option<u32>,
}

/// An indexed cassette.
#[derive(Debug)]
pub struct CassetteIndex {
    path: PathBuf,
    file: std::fs::File,
    /// The whole file, when it is at most [`IN_MEMORY_BYTES`]: hits are parsed
    /// from here instead of read from `file`.
    bytes: Option<Vec<u8>>,
    pub header: Header,
    /// What the reader had to forgive (a cut last line, unknown record types).
    pub warnings: Vec<String>,
    locations: Vec<Location>,
    /// Per interaction, in file order; the matcher takes them (see
    /// [`CassetteIndex::take_facts`]).
    facts: Vec<Facts>,
    /// Each distinct method, once.
    pub(crate) methods: Vec<String>,
    /// Each distinct tool name, once.
    pub(crate) tools: Vec<String>,
    /// The first recorded `initialize` or `server/discover` request.
    pub handshake: Option<Value>,
    /// The highest recorded ordinal.
    pub max_ordinal: u64,
    /// Whether an interaction holds server requests (a hit may ask the client).
    pub asks_client: bool,
}

/// The part of a line the index reads; the rest is checked as JSON and skipped.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    ordinal: u64,
    #[serde(default, borrow)]
    request: Option<&'a RawValue>,
    /// What [`AnswerSpan::of`] reads.
    #[serde(default, borrow)]
    responses: Option<OneResponse<'a>>,
    /// `Some` whenever the member is there, `null` included (which replay refuses).
    #[serde(default, borrow, deserialize_with = "present")]
    notifications: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present", rename = "notificationLeadUs")]
    notification_lead_us: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present", rename = "serverRequests")]
    server_requests: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    status: Option<&'a RawValue>,
    #[serde(default, borrow)]
    ms: Option<&'a RawValue>,
}

impl Head<'_> {
    /// Whether the line holds server requests (anything but an empty list).
    fn asks_client(&self) -> bool {
        self.server_requests.is_some_and(|requests| {
            !requests
                .get()
                .trim_start_matches('[')
                .trim_start()
                .starts_with(']')
        })
    }
}

/// Reads a member that is there as `Some`, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// Interns `name` in `table`.
fn intern(table: &mut Vec<String>, seen: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&id) = seen.get(name) {
        return id;
    }
    let id = u32::try_from(table.len()).unwrap_or(u32::MAX);
    table.push(name.to_owned());
    seen.insert(name.to_owned(), id);
    id
}

impl CassetteIndex {
    /// Reads `path` once and indexes its interactions, keyed under `options`.
    /// Forgives what [`crate::cassette::read`] forgives and refuses what it refuses.
    /// A large file is split at line ends into stretches indexed side by side.
    pub fn open(path: &Path, options: &MatchOptions) -> Result<Self, CassetteError> {
        Self::open_in_stretches(path, options, MIN_CHUNK_BYTES)
    }

    pub(crate) fn open_in_stretches(
        path: &Path,
        options: &MatchOptions,
        min_chunk: u64,
    ) -> Result<Self, CassetteError> {
        let io = |action| io_error(path, action);
        let file = std::fs::File::open(path).map_err(io(Action::Open))?;
        let size = file.metadata().map_err(io(Action::Read))?.len();
        if size <= IN_MEMORY_BYTES && size < min_chunk {
            // Read once, indexed and answered from memory.
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            (&file).read_to_end(&mut bytes).map_err(io(Action::Read))?;
            let chunk = Chunk::scan(path, &bytes[..], 0, true, options);
            return Self::join(path, file, Some(bytes), vec![chunk]);
        }
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let wanted = usize::try_from(size / min_chunk.max(1)).unwrap_or(usize::MAX);
        let mut bounds = vec![0];
        for i in 1..wanted.clamp(1, threads.min(MAX_CHUNKS)) {
            let at = line_start_after(
                &file,
                size * i as u64 / wanted.clamp(1, threads.min(MAX_CHUNKS)) as u64,
            )
            .map_err(io(Action::Read))?;
            if at > *bounds.last().expect("starts with 0") && at < size {
                bounds.push(at);
            }
        }
        bounds.push(size);
        let chunks: Vec<Result<Chunk, CassetteError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = bounds
                .windows(2)
                .enumerate()
                .map(|(i, span)| {
                    let (start, end) = (span[0], span[1]);
                    scope.spawn(move || Chunk::scan_file(path, start, end, i == 0, options))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        Self::join(path, file, None, chunks)
    }

    /// The index of the file at `path` from its stretches, `chunks`, in order.
    fn join(
        path: &Path,
        file: std::fs::File,
        bytes: Option<Vec<u8>>,
        chunks: Vec<Result<Chunk, CassetteError>>,
    ) -> Result<Self, CassetteError> {
        let mut index = Self {
            path: path.to_owned(),
            file,
            bytes,
            header: Header::new("stdio"),
            warnings: Vec::new(),
            locations: Vec::new(),
            facts: Vec::new(),
            methods: Vec::new(),
            tools: Vec::new(),
            handshake: None,
            max_ordinal: 0,
            asks_client: false,
        };
        let (mut method_ids, mut tool_ids) = (HashMap::new(), HashMap::new());
        let mut lines_before = 0u32;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let chunk = chunk.map_err(|e| shift_line(e, lines_before))?;
            if i == 0 {
                index.header = chunk.header.clone().ok_or_else(|| CassetteError::NoHeader {
                    path: path.to_owned(),
                    reason: "the file is empty".into(),
                })?;
            }
            let methods: Vec<u32> = chunk
                .methods
                .iter()
                .map(|m| intern(&mut index.methods, &mut method_ids, m))
                .collect();
            let tools: Vec<u32> = chunk
                .tools
                .iter()
                .map(|t| intern(&mut index.tools, &mut tool_ids, t))
                .collect();
            index.locations.extend(chunk.locations.iter().map(|l| Location {
                line: l.line + lines_before,
                ..*l
            }));
            index.facts.extend(chunk.facts.iter().map(|f| Facts {
                method: methods[f.method as usize],
                tool: f.tool.map(|t| tools[t as usize]),
                ..*f
            }));
            index.warnings.extend(
                chunk
                    .forgiven
                    .iter()
                    .map(|(line, what)| format!("line {}{what}", line + lines_before)),
            );
            if index.handshake.is_none() {
                index.handshake = chunk.handshake;
            }
            index.max_ordinal = index.max_ordinal.max(chunk.max_ordinal);
            index.asks_client |= chunk.asks_client;
            lines_before += chunk.lines;
        }
        Ok(index)
    }

    /// Interactions indexed.
    pub fn len(&self) -> usize {
        self.locations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }

    /// The matching facts, moved out (a matcher keeps them; one copy, not two).
    pub(crate) fn take_facts(&mut self) -> Vec<Facts> {
        std::mem::take(&mut self.facts)
    }

    /// Reads and parses the interaction at `position` (in file order).
    pub fn interaction(&self, position: usize) -> Result<Interaction, CassetteError> {
        let mut buffer = Vec::new();
        self.parse(position, &mut buffer)
    }

    /// Reads the line of the interaction at `position` into `buffer` and parses
    /// it as `T`, which may borrow from it (replay reads only a hit's answer).
    /// The line's `type` tag, like any field `T` does not name, is skipped.
    pub(crate) fn parse<'b, T: Deserialize<'b>>(
        &'b self,
        position: usize,
        buffer: &'b mut Vec<u8>,
    ) -> Result<T, CassetteError> {
        let entry = self.locations[position];
        let line = self.bytes_at(entry.offset, entry.len, buffer)?;
        serde_json::from_slice::<T>(line).map_err(|e| CassetteError::BadRecord {
            path: self.path.clone(),
            line: entry.line as usize,
            reason: e.to_string(),
        })
    }

    /// The one response of the plain interaction at `position` (see
    /// [`AnswerSpan`]), as recorded; `None` for one that is not plain. Read from
    /// the file, it must still look like a JSON object, in UTF-8.
    pub(crate) fn answer<'b>(
        &'b self,
        position: usize,
        buffer: &'b mut Vec<u8>,
    ) -> Result<Option<&'b [u8]>, CassetteError> {
        let entry = self.locations[position];
        let span = entry.answer;
        if span.len == 0 {
            return Ok(None);
        }
        let response = self.bytes_at(entry.offset + u64::from(span.start), span.len, buffer)?;
        // Read from the file, which may have changed since it was indexed (the
        // bytes kept in memory were read as JSON when indexed).
        if self.bytes.is_none()
            && (response.first() != Some(&b'{')
                || response.last() != Some(&b'}')
                || std::str::from_utf8(response).is_err())
        {
            return Err(CassetteError::BadRecord {
                path: self.path.clone(),
                line: entry.line as usize,
                reason: "it changed after the cassette was read".into(),
            });
        }
        Ok(Some(response))
    }

    /// The `len` bytes at `offset` of the cassette: in the bytes kept in memory,
    /// or read from the file into `buffer`.
    fn bytes_at<'b>(
        &'b self,
        offset: u64,
        len: u32,
        buffer: &'b mut Vec<u8>,
    ) -> Result<&'b [u8], CassetteError> {
        if let Some(bytes) = &self.bytes {
            return Ok(usize::try_from(offset)
                .ok()
                .and_then(|start| bytes.get(start..start + len as usize))
                .expect("indexed lines lie inside the bytes they were found in"));
        }
        buffer.clear();
        buffer.resize(len as usize, 0);
        dshkit_os::fs::read_exact_at(&self.file, buffer, offset).map_err(|source| CassetteError::Io {
            path: self.path.clone(),
            action: Action::ReadInteraction,
            source,
        })?;
        Ok(buffer)
    }
}

/// A cassette up to this size is kept in memory once indexed (its bytes, read
/// once): a hit is parsed from there, with no read from the file.
pub const IN_MEMORY_BYTES: u64 = 8 * 1024 * 1024;

/// The smallest stretch of a file indexed on a thread of its own. Below it a
/// second thread costs more than it gains: on two loaded cores, a 29 MB cassette
/// was indexed about as fast in two stretches as in one, in 24 MB more memory.
const MIN_CHUNK_BYTES: u64 = 64 * 1024 * 1024;
/// Most stretches (threads) one index is built with.
const MAX_CHUNKS: usize = 8;

/// One stretch of the file, indexed on its own: line numbers and interned ids
/// are its own until [`CassetteIndex::open`] joins the stretches.
struct Chunk {
    header: Option<Header>,
    locations: Vec<Location>,
    facts: Vec<Facts>,
    methods: Vec<String>,
    tools: Vec<String>,
    /// What was forgiven: the line, and the rest of the warning.
    forgiven: Vec<(u32, String)>,
    handshake: Option<Value>,
    max_ordinal: u64,
    asks_client: bool,
    /// Lines read (blank ones too).
    lines: u32,
}

impl Chunk {
    /// Indexes the lines in `start..end` of `path`; the first stretch begins
    /// with the header.
    fn scan_file(
        path: &Path,
        start: u64,
        end: u64,
        first: bool,
        options: &MatchOptions,
    ) -> Result<Self, CassetteError> {
        use std::io::Seek;
        let io = |action| io_error(path, action);
        let mut file = std::fs::File::open(path).map_err(io(Action::Open))?;
        file.seek(std::io::SeekFrom::Start(start))
            .map_err(io(Action::Read))?;
        let reader = BufReader::with_capacity(1 << 16, file.take(end - start));
        Self::scan(path, reader, start, first, options)
    }

    /// Indexes the lines `reader` gives, the first of them at byte `start` of
    /// the file at `path`; the first stretch begins with the header.
    fn scan(
        path: &Path,
        mut reader: impl BufRead,
        start: u64,
        first: bool,
        options: &MatchOptions,
    ) -> Result<Self, CassetteError> {
        let io = |action| io_error(path, action);
        let mut chunk = Self {
            header: None,
            locations: Vec::new(),
            facts: Vec::new(),
            methods: Vec::new(),
            tools: Vec::new(),
            forgiven: Vec::new(),
            handshake: None,
            max_ordinal: 0,
            asks_client: false,
            lines: 0,
        };
        let (mut method_ids, mut tool_ids) = (HashMap::new(), HashMap::new());
        let mut line = Vec::new();
        let mut offset = start;
        loop {
            line.clear();
            let read = reader
                .by_ref()
                .take(MAX_LINE_BYTES as u64 + 2)
                .read_until(b'\n', &mut line)
                .map_err(io(Action::Read))?;
            if read == 0 {
                break;
            }
            chunk.lines += 1;
            let number = chunk.lines;
            let line_start = offset;
            offset += read as u64;
            let cut = line.last() != Some(&b'\n');
            if !cut {
                line.pop();
            }
            let bad = |reason: String| CassetteError::BadRecord {
                path: path.to_owned(),
                line: number as usize,
                reason,
            };
            if line.len() > MAX_LINE_BYTES {
                return Err(bad(format!("longer than {MAX_LINE_BYTES} bytes")));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if first && chunk.header.is_none() {
                chunk.header = Some(Header::from_line(path, &line)?);
                continue;
            }
            let head: Head<'_> = match serde_json::from_slice(&line) {
                Ok(head) => head,
                Err(e) if cut => {
                    chunk.forgiven.push((
                        number,
                        format!(" is cut short ({e}); dropped it, as a crash while recording leaves it"),
                    ));
                    continue;
                }
                Err(e) => return Err(bad(e.to_string())),
            };
            match head.kind.as_ref() {
                "interaction" => {}
                "message" | "raw" => continue,
                other => {
                    chunk
                        .forgiven
                        .push((number, format!(": unknown record type {other:?}, skipped")));
                    continue;
                }
            }
            let request = head
                .request
                .ok_or_else(|| bad("an interaction without a request".into()))?;
            let keyed = key_of_text(request.get(), options).map_err(|e| bad(e.to_string()))?;
            if matches!(keyed.method.as_str(), "initialize" | "server/discover") {
                // The live server of a passthrough is opened with the first one.
                let handshake: Value = serde_json::from_str(request.get()).map_err(|e| bad(e.to_string()))?;
                chunk.handshake.get_or_insert(handshake);
            }
            chunk.asks_client |= head.asks_client();
            chunk.locations.push(Location {
                offset: line_start,
                len: u32::try_from(line.len()).unwrap_or(u32::MAX),
                line: number,
                answer: AnswerSpan::of(&line, &head),
            });
            chunk.facts.push(Facts {
                key: key_hash(&keyed.key),
                check: key_check(&keyed.key),
                method: intern(&mut chunk.methods, &mut method_ids, &keyed.method),
                tool: keyed
                    .tool
                    .map(|name| intern(&mut chunk.tools, &mut tool_ids, &name)),
            });
            chunk.max_ordinal = chunk.max_ordinal.max(head.ordinal);
        }
        Ok(chunk)
    }
}

/// Turns an I/O error while doing `action` to the cassette at `path` into its error.
fn io_error(path: &Path, action: Action) -> impl FnOnce(std::io::Error) -> CassetteError + use<> {
    let path = path.to_owned();
    move |source| CassetteError::Io { path, action, source }
}

/// The offset of the first line that starts after `at`, or the file's end.
fn line_start_after(file: &std::fs::File, at: u64) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut position = at;
    loop {
        let read = dshkit_os::fs::read_some_at(file, &mut buffer, position)?;
        if read == 0 {
            return Ok(position);
        }
        if let Some(newline) = buffer[..read].iter().position(|b| *b == b'\n') {
            return Ok(position + newline as u64 + 1);
        }
        position += read as u64;
    }
}

/// A stretch's error with its line counted from the start of the file.
fn shift_line(error: CassetteError, lines_before: u32) -> CassetteError {
    match error {
        CassetteError::BadRecord { path, line, reason } => CassetteError::BadRecord {
            path,
            line: line + lines_before as usize,
            reason,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cassette::test_records::write_cassette as write;

    #[expect(clippy::needless_pass_by_value, reason = "reads best with json! literals")]
    fn call(tool: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    }

    /// A line with `responses` and the members `rest` after them.
    fn answered(ordinal: u64, responses: &str, rest: &str) -> String {
        let request = call("echo", json!({"message": ordinal}));
        format!(
            r#"{{"type":"interaction","ordinal":{ordinal},"request":{request},"responses":{responses}{rest}}}"#
        )
    }

    #[test]
    fn a_plain_answer_is_found_where_the_line_holds_it_and_no_other_is() {
        let plain = r#"[ {"jsonrpc": "2.0", "id": 41, "result": {"id": "inner"}} ]"#;
        let lines = [
            answered(1, plain, r#","ms":3"#),
            answered(2, plain, r#","notifications":[],"notificationLeadUs":[],"ms":0"#),
            answered(3, r#"[{"id":1,"id":2}]"#, r#","ms":0"#),
            // Each of these takes more than its one response's text.
            answered(
                4,
                plain,
                r#","notifications":[{"method":"notifications/progress"}],"ms":0"#,
            ),
            answered(5, &format!("[{0},{0}]", &plain[2..plain.len() - 2]), r#","ms":0"#),
            answered(6, "[]", r#","ms":0"#),
            answered(7, r#""oops""#, r#","ms":0"#),
            answered(8, plain, ""),
            answered(9, plain, r#","ms":-1"#),
            answered(10, plain, r#","notifications":null,"ms":0"#),
            answered(11, plain, r#","notificationLeadUs":"x","ms":0"#),
            answered(
                12,
                plain,
                r#","serverRequests":[{"request":{"id":0,"method":"ping"}}],"ms":0"#,
            ),
            answered(13, plain, r#","serverRequests":[],"ms":0"#),
            answered(
                14,
                plain,
                r#","status":400,"contentType":"application/json","ms":0"#,
            ),
        ];
        let (_dir, path) = write(&lines, true);
        let options = MatchOptions::default();
        for min_chunk in [MIN_CHUNK_BYTES, 1] {
            // In memory, and read from the file.
            let index = CassetteIndex::open_in_stretches(&path, &options, min_chunk).unwrap();
            assert_eq!(index.bytes.is_some(), min_chunk == MIN_CHUNK_BYTES);
            let mut buffer = Vec::new();
            let answers: Vec<Option<String>> = (0..lines.len())
                .map(|position| {
                    let response = index.answer(position, &mut buffer).unwrap()?;
                    Some(String::from_utf8(response.to_vec()).unwrap())
                })
                .collect();
            let response = &plain[2..plain.len() - 2];
            assert_eq!(answers[0].as_deref(), Some(response));
            assert_eq!(answers[1].as_deref(), Some(response));
            assert_eq!(answers[2].as_deref(), Some(r#"{"id":1,"id":2}"#));
            assert_eq!(answers[3..11], [None, None, None, None, None, None, None, None]);
            assert_eq!(answers[11], None, "a hit with a server request asks it first");
            assert_eq!(answers[12].as_deref(), Some(response));
            assert_eq!(answers[13], None, "a hit with a status answers with it");
        }
    }

    #[test]
    fn an_answer_changed_in_the_file_after_indexing_is_damaged_not_sent() {
        let lines = [answered(1, r#"[{"id":1,"result":{"text":"abc"}}]"#, r#","ms":0"#)];
        let (_dir, path) = write(&lines, true);
        let index = CassetteIndex::open_in_stretches(&path, &MatchOptions::default(), 1).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let not_an_object = text.replace(r#"{"id":1,"#, r#"["id",1,"#).into_bytes();
        // The same length as before, with 0xff in place of the "b".
        let mut not_utf8 = text.clone().into_bytes();
        not_utf8[text.find("abc").unwrap() + 1] = 0xff;
        for changed in [not_an_object, not_utf8] {
            std::fs::write(&path, changed).unwrap();
            let error = index.answer(0, &mut Vec::new()).unwrap_err();
            assert!(
                matches!(&error, CassetteError::BadRecord { line: 2, reason, .. } if reason.contains("changed")),
                "{error}"
            );
        }
    }
}
