//! The static checks' cache: each file's [`Analysis`] kept by a key of every input
//! it was computed from, so an unchanged profile is not parsed again.
//!
//! [`analyze`](crate::syntax::analyze) is a pure function of the file's path, its
//! text, the kind it loads as and whether Node detects that kind by its syntax;
//! the key is a SHA-256 of exactly those (the text's bytes, not its size or
//! modification time) and of the analyser's identity (this format, dshkit's
//! version, the running executable's path, size and modification time), so a
//! changed input is a different key and a wrong hit cannot happen. The kind comes
//! from the nearest `package.json` `type`: a change there that changes a file's
//! kind changes its key. What the links check resolves (packages, `exports`,
//! links, files that are there) is never cached: it is asked of the file system
//! at each run.
//!
//! One store per profile directory, `<cache>/check/<digest>.jsonl`: a header line
//! (format and identity), then one line per entry, `<key> <sum> <analysis JSON>`,
//! where `sum` is a CRC-32 of the key and the JSON. An entry whose sum does not
//! match, or whose JSON does not read, is ignored (a miss) and written again. A
//! store whose header is another format or identity is ignored whole. Bounded:
//! [`MAX_ENTRIES`] and [`MAX_STORE_BYTES`] per store (the entries of the last run
//! first, the oldest dropped), [`MAX_STORES`] stores (the least recently written
//! removed). Written atomically, and only when a run missed or dropped something.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

use crate::syntax::{Analysis, ModuleKind, analyze};

/// The store's format; a store of another format is ignored.
pub const FORMAT: u32 = 2;
/// Most entries one store keeps.
pub const MAX_ENTRIES: usize = 20_000;
/// Largest store file (32 MiB); the entries that do not fit are dropped, oldest first.
pub const MAX_STORE_BYTES: usize = 32 * 1024 * 1024;
/// Most stores (profiles) kept; the least recently written are removed.
pub const MAX_STORES: usize = 16;
/// Most missed files a report names.
pub const MAX_MISSED_NAMED: usize = 20;

/// The digest that stands for one analysis's inputs.
type Key = [u8; 32];

/// What the cache did in one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Analyses taken from the store.
    pub hits: usize,
    /// Files analysed because the store held no entry for their inputs.
    pub misses: usize,
    /// Entries found damaged (sum or JSON), ignored and written again.
    pub ignored: usize,
    /// The first [`MAX_MISSED_NAMED`] files that missed (the first to be
    /// analysed, on whichever thread), sorted.
    pub missed: Vec<PathBuf>,
}

/// One run's view of a store: the entries read, the ones used or made. It may
/// be shared by the threads of one run: what was read is only read, and what the
/// run does to the store is kept under one lock.
#[derive(Debug)]
pub struct AnalysisCache {
    inner: Option<Store>,
}

#[derive(Debug)]
struct Store {
    file: PathBuf,
    /// The analyser's identity, in every key and the header.
    identity: String,
    /// The store's text as read.
    text: String,
    /// The store's entries as read: key → where the line's JSON part and its
    /// sum are in `text`.
    read: foldhash::HashMap<Key, (Range<usize>, Range<usize>)>,
    /// The keys in the order they were read (oldest use last).
    read_order: Vec<Key>,
    run: Mutex<RunState>,
}

/// What this run did to the store.
#[derive(Debug, Default)]
struct RunState {
    /// Entries this run used or made, in order.
    used: Vec<Key>,
    used_keys: foldhash::HashSet<Key>,
    /// The lines of the entries this run made.
    made: foldhash::HashMap<Key, String>,
    /// Entries read that were found damaged: never used or written again as read.
    damaged: foldhash::HashSet<Key>,
    stats: CacheStats,
    /// Something to write: a miss, a damaged entry, a store that did not read.
    dirty: bool,
}

impl RunState {
    fn use_key(&mut self, key: Key) {
        if self.used_keys.insert(key) {
            self.used.push(key);
        }
    }
}

impl AnalysisCache {
    /// No cache: every file is analysed.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// The store for the profile at `profile_dir` under `dir` (dshkit's
    /// `cache/check`). Without an identity for the running executable there is no
    /// cache; a store that cannot be read is an empty one.
    pub fn open(dir: &Path, profile_dir: &Path) -> Self {
        let Some(identity) = identity() else {
            return Self::disabled();
        };
        let scope = crate::realpath::real(profile_dir).unwrap_or_else(|_| profile_dir.to_owned());
        let digest = hex::encode(&Sha256::digest(scope.as_os_str().as_encoded_bytes())[..12]);
        let file = dir.join(format!("{digest}.jsonl"));
        let mut store = Store {
            file,
            identity,
            text: String::new(),
            read: foldhash::HashMap::default(),
            read_order: Vec::new(),
            run: Mutex::default(),
        };
        store.load();
        Self { inner: Some(store) }
    }

    /// [`analyze`], from the store when it holds these exact inputs.
    pub fn analyze(&self, file: &Path, source: &str, kind: ModuleKind, detect: bool) -> Analysis {
        let Some(store) = &self.inner else {
            return analyze(file, source, kind, detect);
        };
        let key = store.key(file, source, kind, detect);
        if let Some(analysis) = store.get(&key) {
            return analysis;
        }
        let analysis = analyze(file, source, kind, detect);
        store.put(key, file, &analysis);
        analysis
    }

    /// What the cache did so far; `None` when there is none.
    pub fn stats(&self) -> Option<CacheStats> {
        self.inner.as_ref().map(|s| {
            let mut stats = s.run().stats.clone();
            stats.missed.sort();
            stats
        })
    }

    /// Writes the store when this run changed it; a failure only costs a parse
    /// next time.
    pub fn save(self) {
        if let Some(store) = self.inner
            && store.run().dirty
        {
            store.write();
        }
    }
}

/// This analyser: the format, dshkit's version and the running executable (its
/// real path, size and modification time), so a rebuilt dshkit keys anew.
fn identity() -> Option<String> {
    let exe = file_identity(&std::env::current_exe().ok()?)?;
    Some(format!(
        "format {FORMAT}; dshkit {}; {exe}",
        env!("CARGO_PKG_VERSION")
    ))
}

/// A binary as the caches know it: its real path, size and modification time.
pub(crate) fn file_identity(path: &Path) -> Option<String> {
    let real = dshkit_os::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(format!("{}\n{}\n{modified}", real.display(), meta.len()))
}

/// The header line of a store with `identity`.
fn header(identity: &str) -> String {
    serde_json::json!({ "dshkitCheckCache": FORMAT, "identity": identity }).to_string()
}

/// The sum that guards one entry against damage: a CRC-32 of its key and JSON,
/// as 8 hex digits. (The key itself is the SHA-256 of the inputs; the sum only
/// has to notice changed bytes, and is the cheapest part of a hit.)
fn sum(key: &Key, json: &str) -> String {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(key);
    hasher.update(json.as_bytes());
    format!("{:08x}", hasher.finalize())
}

fn parse_key(text: &str) -> Option<Key> {
    let mut key = [0; 32];
    hex::decode_to_slice(text, &mut key).ok()?;
    Some(key)
}

impl Store {
    fn load(&mut self) {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return;
        };
        let mut lines = text.lines();
        // About one entry per 512 bytes: room for most stores without regrowing.
        self.read.reserve(text.len() / 512);
        let run = self.run.get_mut().unwrap_or_else(PoisonError::into_inner);
        if lines.next() != Some(header(&self.identity).as_str()) {
            // Another format or another dshkit: nothing in it is ours.
            run.dirty = true;
            return;
        }
        let at = |part: &str| {
            let start = part.as_ptr() as usize - text.as_ptr() as usize;
            start..start + part.len()
        };
        for line in lines {
            let mut parts = line.splitn(3, ' ');
            let (Some(key), Some(sum), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
                run.stats.ignored += 1;
                run.dirty = true;
                continue;
            };
            let Some(key) = parse_key(key) else {
                run.stats.ignored += 1;
                run.dirty = true;
                continue;
            };
            if self.read.insert(key, (at(json), at(sum))).is_none() {
                self.read_order.push(key);
            }
        }
        self.text = text;
    }

    fn run(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.run.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The line of an entry this run made, or read and found sound.
    fn line(&self, run: &RunState, key: &Key) -> Option<String> {
        if let Some(line) = run.made.get(key) {
            return Some(line.clone());
        }
        if run.damaged.contains(key) {
            return None;
        }
        let (json, sum) = self.read.get(key)?;
        Some(format!(
            "{} {} {}",
            hex::encode(key),
            &self.text[sum.clone()],
            &self.text[json.clone()]
        ))
    }

    fn key(&self, file: &Path, source: &str, kind: ModuleKind, detect: bool) -> Key {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"dshkit-check analysis");
        field(self.identity.as_bytes());
        field(file.as_os_str().as_encoded_bytes());
        field(match kind {
            ModuleKind::Module => b"module",
            ModuleKind::CommonJs => b"commonjs",
        });
        field(if detect { b"detect" } else { b"fixed" });
        field(source.as_bytes());
        hasher.finalize().into()
    }

    /// The entry for `key` when it is there and sound; a damaged one is dropped.
    fn get(&self, key: &Key) -> Option<Analysis> {
        let (json, stored_sum) = self.read.get(key)?;
        let (json, stored_sum) = (&self.text[json.clone()], &self.text[stored_sum.clone()]);
        let analysis = (sum(key, json) == stored_sum)
            .then(|| serde_json::from_str::<Analysis>(json).ok())
            .flatten();
        let mut run = self.run();
        let Some(analysis) = analysis else {
            if run.damaged.insert(*key) {
                run.stats.ignored += 1;
            }
            run.dirty = true;
            return None;
        };
        run.stats.hits += 1;
        run.use_key(*key);
        Some(analysis)
    }

    fn put(&self, key: Key, file: &Path, analysis: &Analysis) {
        let line = serde_json::to_string(analysis)
            .ok()
            .map(|json| format!("{} {} {json}", hex::encode(key), sum(&key, &json)));
        let mut run = self.run();
        run.stats.misses += 1;
        if run.stats.missed.len() < MAX_MISSED_NAMED {
            run.stats.missed.push(file.to_owned());
        }
        run.dirty = true;
        if let Some(line) = line {
            run.made.insert(key, line);
            run.use_key(key);
        }
    }

    /// The store as it is now: this run's entries first, then the older ones,
    /// within the bounds; then the other stores, within theirs.
    fn write(self) {
        let Some(dir) = self.file.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let run = self.run();
        let mut text = header(&self.identity);
        text.push('\n');
        let older = self.read_order.iter().filter(|key| !run.used_keys.contains(*key));
        for line in run
            .used
            .iter()
            .chain(older)
            .filter_map(|key| self.line(&run, key))
            .take(MAX_ENTRIES)
        {
            if text.len() + line.len() + 1 > MAX_STORE_BYTES {
                break;
            }
            text.push_str(&line);
            text.push('\n');
        }
        if dshkit_os::fs::write_atomic(&self.file, text.as_bytes()).is_ok() {
            evict(dir, MAX_STORES);
        }
    }
}

/// Removes the least recently written stores of `dir` beyond `keep`.
fn evict(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut stores: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if stores.len() <= keep {
        return;
    }
    stores.sort();
    for (_, path) in &stores[..stores.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "export const a = 1;\n";

    fn cache(dir: &Path) -> AnalysisCache {
        AnalysisCache::open(dir, Path::new("/profile"))
    }

    /// A store made by one analysis of `file`, then rewritten by `edit`.
    fn stored(dir: &Path, file: &Path, edit: impl Fn(String) -> String) -> Analysis {
        let first = cache(dir);
        let analysis = first.analyze(file, SOURCE, ModuleKind::Module, false);
        first.save();
        let store = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path();
        std::fs::write(&store, edit(std::fs::read_to_string(&store).unwrap())).unwrap();
        analysis
    }

    #[test]
    fn a_key_reads_back_from_its_hex_and_nothing_else_does() {
        let key: Key = std::array::from_fn(|i| u8::try_from(i * 7 + 5).unwrap());
        assert_eq!(parse_key(&hex::encode(key)), Some(key));
        for bad in [&hex::encode(key)[1..], "", &"g".repeat(64), &"0".repeat(66)] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_unchanged_file_hits_and_a_changed_byte_misses() {
        let dir = tempfile::tempdir().unwrap();
        let file = Path::new("/profile/plugins/p/index.js");
        let first = cache(dir.path());
        let cold = first.analyze(file, SOURCE, ModuleKind::Module, false);
        assert_eq!(first.stats().unwrap().misses, 1);
        first.save();

        let second = cache(dir.path());
        assert_eq!(second.analyze(file, SOURCE, ModuleKind::Module, false), cold);
        let changed = SOURCE.replace('1', "2");
        second.analyze(file, &changed, ModuleKind::Module, false);
        // The same text as another kind, or at another path, is another input.
        second.analyze(file, SOURCE, ModuleKind::CommonJs, false);
        second.analyze(
            Path::new("/profile/plugins/p/other.js"),
            SOURCE,
            ModuleKind::Module,
            false,
        );
        let stats = second.stats().unwrap();
        assert_eq!((stats.hits, stats.misses, stats.ignored), (1, 3, 0), "{stats:?}");
    }

    #[test]
    fn a_damaged_entry_is_ignored_and_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = Path::new("/profile/a.js");
        // A JSON that still reads, but is not what was written: its sum tells.
        let good = stored(dir.path(), file, |text| text.replace("\"a\"", "\"b\""));

        let second = cache(dir.path());
        assert_eq!(second.analyze(file, SOURCE, ModuleKind::Module, false), good);
        let stats = second.stats().unwrap();
        assert_eq!((stats.hits, stats.misses, stats.ignored), (0, 1, 1), "{stats:?}");
        second.save();

        let third = cache(dir.path());
        assert_eq!(third.analyze(file, SOURCE, ModuleKind::Module, false), good);
        assert_eq!(third.stats().unwrap().hits, 1, "the entry was written again");
    }

    #[test]
    fn a_store_of_another_identity_is_ignored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = Path::new("/profile/a.js");
        stored(dir.path(), file, |text| {
            let ours = format!("format {FORMAT};");
            assert!(text.contains(&ours), "the header names this format: {text}");
            text.replacen(&ours, "format 0;", 1)
        });
        let second = cache(dir.path());
        second.analyze(file, SOURCE, ModuleKind::Module, false);
        assert_eq!(second.stats().unwrap().hits, 0);
    }

    #[test]
    fn stores_beyond_the_bound_are_evicted_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..4 {
            std::fs::write(dir.path().join(format!("{i}.jsonl")), "").unwrap();
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i);
            std::fs::File::options()
                .write(true)
                .open(dir.path().join(format!("{i}.jsonl")))
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
        evict(dir.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["2.jsonl", "3.jsonl"]);
    }
}
