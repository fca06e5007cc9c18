//! How cassettes are written: appended one whole line at a time while a
//! recording runs, or replaced whole (a cassette written anew, one redacted
//! again) through [`dshkit_os::fs::write_atomic`], the workspace's one atomic
//! write: readers see the old file or the new one, never a part.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cassette::{Cassette, Header, Record, Records};
use crate::error::{Action, CassetteError};
use crate::redact::Redactor;

/// Writes a whole cassette atomically (see [`dshkit_os::fs::write_atomic`]).
pub fn write_atomic(path: &Path, cassette: &Cassette) -> Result<(), CassetteError> {
    let mut bytes = serde_json::to_vec(&cassette.header).expect("a header serializes");
    bytes.push(b'\n');
    for record in &cassette.records {
        serde_json::to_writer(&mut bytes, record).expect("a record serializes");
        bytes.push(b'\n');
    }
    dshkit_os::fs::write_atomic(path, bytes.as_slice()).map_err(|source| CassetteError::Io {
        path: path.to_owned(),
        action: Action::Replace,
        source,
    })
}

/// Redacts the cassette at `path` again with `redactor` and rewrites it
/// atomically, record by record as it is read (in memory bounded by its
/// longest line): a record without secrets keeps its bytes, the header says
/// `redacted`. Whether a record changed; a record that cannot be read leaves
/// the file as it was.
pub fn redact_in_place(path: &Path, redactor: &Redactor) -> Result<bool, CassetteError> {
    // Closed once read to its end: Windows refuses to replace a file a reader
    // holds open.
    let mut records = Some(Records::open(path)?);
    let mut header = records.as_ref().map(|records| Header {
        redacted: true,
        ..records.header().clone()
    });
    let mut changed = false;
    let mut lines = Lines::new(|line: &mut Vec<u8>| {
        if let Some(header) = header.take() {
            serde_json::to_writer(&mut *line, &header).expect("a header serializes");
            return Some(Ok(()));
        }
        let reader = records.as_mut()?;
        let mut record = match reader.next() {
            Some(Ok(record)) => record,
            Some(Err(damage)) => return Some(Err(damage)),
            None => {
                records = None;
                return None;
            }
        };
        if record.redact(redactor) {
            changed = true;
            serde_json::to_writer(&mut *line, &record).expect("a record serializes");
        } else {
            line.extend_from_slice(reader.line());
        }
        Some(Ok(()))
    });
    let written = dshkit_os::fs::write_atomic(path, &mut lines);
    if let Some(damage) = lines.failed.take() {
        return Err(damage);
    }
    written.map_err(|source| CassetteError::Io {
        path: path.to_owned(),
        action: Action::Replace,
        source,
    })?;
    drop(lines);
    Ok(changed)
}

/// Lines made as they are read, for a file written as it is made: `next`
/// writes the next line (without its newline) into the buffer it is given,
/// `None` at the end. A line it cannot make fails the read, and is kept in
/// `failed`.
struct Lines<F> {
    next: F,
    line: Vec<u8>,
    /// How much of `line` was read.
    at: usize,
    failed: Option<CassetteError>,
}

impl<F> Lines<F> {
    fn new(next: F) -> Self {
        Self {
            next,
            line: Vec::new(),
            at: 0,
            failed: None,
        }
    }
}

impl<F: FnMut(&mut Vec<u8>) -> Option<Result<(), CassetteError>>> std::io::Read for Lines<F> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.line.len() {
            self.line.clear();
            self.at = 0;
            match (self.next)(&mut self.line) {
                None => return Ok(0),
                Some(Err(damage)) => {
                    let error = std::io::Error::other(damage.to_string());
                    self.failed = Some(damage);
                    return Err(error);
                }
                Some(Ok(())) => self.line.push(b'\n'),
            }
        }
        let n = buffer.len().min(self.line.len() - self.at);
        buffer[..n].copy_from_slice(&self.line[self.at..self.at + n]);
        self.at += n;
        Ok(n)
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
                    action: Action::Create,
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
                action: Action::OpenForAppending,
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
            action: Action::Append,
            source,
        })
    }

    /// Finishes the cassette: syncs it or, in mode `all`, puts it in place of
    /// the old one with [`dshkit_os::fs::write_atomic`] (the recording's
    /// temporary file is then removed).
    pub fn finish(self) -> Result<PathBuf, CassetteError> {
        let Some(final_path) = self.finish_to else {
            self.file.sync_all().map_err(|source| CassetteError::Io {
                path: self.path.clone(),
                action: Action::Sync,
                source,
            })?;
            return Ok(self.path);
        };
        drop(self.file);
        let recorded = std::fs::File::open(&self.path).map_err(|source| CassetteError::Io {
            path: self.path.clone(),
            action: Action::Open,
            source,
        })?;
        dshkit_os::fs::write_atomic(&final_path, recorded).map_err(|source| CassetteError::Io {
            path: final_path.clone(),
            action: Action::RenameIntoPlace,
            source,
        })?;
        let _ = std::fs::remove_file(&self.path);
        Ok(final_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::test_records::ping as interaction;
    use crate::cassette::{parse, read};

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
    fn a_redacted_rewrite_keeps_clean_records_bytes_and_the_files_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let header = r#"{"type":"header","formatVersion":2,"recorder":"dshkit","transport":"stdio","era":"2025","redacted":false,"createdAt":1}"#;
        // Spaced as a hand edit leaves it.
        let clean = r#"{"type": "interaction", "ordinal": 1, "request": {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "responses": [{"jsonrpc": "2.0", "id": 1, "result": {}}], "ms": 1}"#;
        let secret =
            r#"{"type":"message","from":"client","message":{"params":{"password":"correct-horse-battery"}}}"#;
        std::fs::write(&path, format!("{header}\n{clean}\n{secret}\n")).unwrap();
        dshkit_os::fs::set_mode(&path, 0o600).unwrap();
        let redactor = Redactor::new(&[], &[]).unwrap();
        assert!(redact_in_place(&path, &redactor).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(crate::cassette::read(&path).unwrap().cassette.header.redacted);
        assert_eq!(lines[1], clean, "a record without secrets keeps its bytes");
        assert!(!lines[2].contains("correct-horse") && lines[2].contains("[REDACTED:"));
        if let Some(mode) = dshkit_os::fs::mode(&std::fs::metadata(&path).unwrap()) {
            assert_eq!(mode, 0o600);
        }
        assert!(
            !redact_in_place(&path, &redactor).unwrap(),
            "nothing left to redact"
        );
    }

    #[test]
    fn a_redacted_rewrite_that_meets_damage_leaves_the_cassette_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let header = serde_json::to_string(&Header::new("stdio")).unwrap();
        let record = serde_json::to_string(&interaction(1)).unwrap();
        // Far more than the write's buffer before the damage: some of the
        // new file was written when the damage is met.
        let mut damaged = format!("{header}\n");
        for _ in 0..4000 {
            damaged.push_str(&record);
            damaged.push('\n');
        }
        damaged.push_str("{\"type\": \"interaction\", \n");
        damaged.push_str(&record);
        damaged.push('\n');
        std::fs::write(&path, &damaged).unwrap();
        let redactor = Redactor::new(&[], &[]).unwrap();
        let error = redact_in_place(&path, &redactor).unwrap_err();
        assert!(
            matches!(error, CassetteError::BadRecord { line: 4002, .. }),
            "{error}"
        );
        assert_eq!(error.class(), crate::error::ErrorClass::Refused);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            names,
            [std::ffi::OsString::from("c.jsonl")],
            "nothing left beside it"
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
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            names,
            [std::ffi::OsString::from("c.jsonl")],
            "the recording's temporary file went"
        );
    }
}
