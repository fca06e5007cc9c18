//! The evidence store: one configured root, a directory per session, files written
//! atomically with their SHA-256 and size, and retention that deletes only files it
//! recognises in the directories it owns.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use dshkit_os::error::ErrorClass;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The folder of the evidence root that holds the verification store.
pub const VERIFY_DIR: &str = "verify";
/// Version of the report format (`formatVersion`).
pub const REPORT_FORMAT_VERSION: u32 = 1;
/// Sessions kept by default.
pub const DEFAULT_MAX_SESSIONS: usize = 50;
/// Age after which a session directory is deleted (7 days).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_hours(24 * 7);
/// Total bytes kept by default (512 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    #[error("`{0}` is not a valid evidence session name (letters, digits, `-` and `_`, at most 64)")]
    BadSession(String),
    #[error("{0} is a symbolic link; evidence directories must be real directories under the root")]
    Symlink(PathBuf),
    #[error("failed to {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl EvidenceError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadSession(_) => "BAD_EVIDENCE_SESSION",
            Self::Symlink(_) => "EVIDENCE_SYMLINK",
            Self::Io { .. } => "EVIDENCE_IO",
        }
    }

    /// A session name or directory the store will not use is refused; a write
    /// or removal that failed is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::BadSession(_) | Self::Symlink(_) => ErrorClass::Refused,
            Self::Io { .. } => ErrorClass::Runtime,
        }
    }
}

dshkit_os::classified!(EvidenceError);

/// A file written to the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceFile {
    pub path: PathBuf,
    pub sha256: String,
    pub bytes: u64,
}

/// What retention keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub max_sessions: usize,
    pub max_age: Duration,
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_age: DEFAULT_MAX_AGE,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// The store under one root.
#[derive(Debug, Clone)]
pub struct EvidenceStore {
    root: PathBuf,
}

/// Extensions the store writes; retention deletes nothing else.
const OWN_EXTENSIONS: &[&str] = &["png", "json", "html"];

impl EvidenceStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of `session`, created if needed; a symlink is refused.
    pub fn session_dir(&self, session: &str) -> Result<PathBuf, EvidenceError> {
        let valid = !session.is_empty()
            && session.len() <= 64
            && session
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(EvidenceError::BadSession(session.to_owned()));
        }
        let io = |action, path: PathBuf| move |source| EvidenceError::Io { action, path, source };
        std::fs::create_dir_all(&self.root).map_err(io("create", self.root.clone()))?;
        let dir = self.root.join(session);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(EvidenceError::Symlink(dir)),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&dir).map_err(io("create", dir.clone()))?;
            }
            Err(e) => return Err(io("inspect", dir)(e)),
        }
        Ok(dir)
    }

    /// Writes `bytes` as `<session>/<stem>.<extension>` through a temporary file and
    /// a rename.
    pub fn write(
        &self,
        session: &str,
        stem: &str,
        extension: &str,
        bytes: &[u8],
    ) -> Result<EvidenceFile, EvidenceError> {
        if !OWN_EXTENSIONS.contains(&extension)
            || stem.is_empty()
            || !stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(EvidenceError::BadSession(format!("{stem}.{extension}")));
        }
        let dir = self.session_dir(session)?;
        let path = dir.join(format!("{stem}.{extension}"));
        dshkit_os::fs::write_atomic(&path, bytes).map_err(|source| EvidenceError::Io {
            action: "write",
            path: path.clone(),
            source,
        })?;
        Ok(EvidenceFile {
            path,
            sha256: hex::encode(Sha256::digest(bytes)),
            bytes: bytes.len() as u64,
        })
    }

    /// Writes a PNG named by its digest.
    pub fn write_png(&self, session: &str, png: &[u8]) -> Result<EvidenceFile, EvidenceError> {
        let digest = hex::encode(Sha256::digest(png));
        self.write(session, &digest[..16], "png", png)
    }

    /// Applies retention at `now`: drops session directories older than the max
    /// age, then the oldest beyond the max count, then the oldest until the total
    /// fits the byte budget. Deletes only the store's own files inside real
    /// (non-symlink) session directories; returns the sessions removed.
    pub fn apply_retention(&self, policy: Retention, now: SystemTime) -> Result<Vec<String>, EvidenceError> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(Vec::new());
        };
        let mut sessions: Vec<(String, SystemTime, u64)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() && !t.is_symlink()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let files = own_files(&e.path());
                // A directory with none of our files left holds nothing to manage.
                (!files.is_empty()).then_some(())?;
                let (newest, bytes) = files
                    .iter()
                    .fold((SystemTime::UNIX_EPOCH, 0u64), |(t, b), (_, m, size)| {
                        (t.max(*m), b + size)
                    });
                Some((name, newest, bytes))
            })
            .collect();
        sessions.sort_by_key(|s| std::cmp::Reverse(s.1)); // newest first
        let mut kept: Vec<(String, u64)> = Vec::new();
        let mut doomed: Vec<(String, u64)> = Vec::new();
        for (name, newest, bytes) in sessions {
            let too_old = now.duration_since(newest).is_ok_and(|age| age > policy.max_age);
            if too_old || kept.len() >= policy.max_sessions {
                doomed.push((name, bytes));
            } else {
                kept.push((name, bytes));
            }
        }
        // Over the byte budget, the oldest of the kept go first.
        let mut total: u64 = kept.iter().map(|k| k.1).sum();
        while total > policy.max_bytes {
            let Some((name, bytes)) = kept.pop() else { break };
            total -= bytes;
            doomed.push((name, bytes));
        }
        let mut removed = Vec::new();
        for (name, _) in doomed {
            let dir = self.root.join(&name);
            for (file, _, _) in own_files(&dir) {
                std::fs::remove_file(&file).map_err(|source| EvidenceError::Io {
                    action: "remove",
                    path: file.clone(),
                    source,
                })?;
            }
            // Removes the directory only if nothing foreign is left in it.
            let _ = std::fs::remove_dir(&dir);
            removed.push(name);
        }
        removed.sort();
        Ok(removed)
    }
}

/// The store's own regular files directly in `dir`: path, modified time, size.
fn own_files(dir: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| {
            e.path()
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| OWN_EXTENSIONS.contains(&x))
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((e.path(), meta.modified().ok()?, meta.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        dshkit_os::error::assert_classified([
            (
                EvidenceError::BadSession("../x".into()),
                "BAD_EVIDENCE_SESSION",
                ErrorClass::Refused,
            ),
            (
                EvidenceError::Symlink("/e/s".into()),
                "EVIDENCE_SYMLINK",
                ErrorClass::Refused,
            ),
            (
                EvidenceError::Io {
                    action: "write",
                    path: "/e/s/report.json".into(),
                    source: std::io::ErrorKind::StorageFull.into(),
                },
                "EVIDENCE_IO",
                ErrorClass::Runtime,
            ),
        ]);
    }

    fn set_mtime(path: &Path, when: SystemTime) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(when).unwrap();
    }

    #[test]
    fn writes_are_atomic_and_named_by_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = EvidenceStore::new(dir.path().join("evidence"));
        let file = store.write_png("s1", b"\x89PNG fake").unwrap();
        assert_eq!(std::fs::read(&file.path).unwrap(), b"\x89PNG fake");
        assert_eq!(file.bytes, 9);
        assert!(
            file.path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&file.sha256[..16])
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("evidence/s1")).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn hostile_names_and_symlinked_sessions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = EvidenceStore::new(dir.path().join("evidence"));
        for bad in ["../escape", "a/b", "", ".hidden"] {
            assert!(
                matches!(store.session_dir(bad), Err(EvidenceError::BadSession(_))),
                "{bad}"
            );
        }
        std::fs::create_dir_all(dir.path().join("evidence")).unwrap();
        dshkit_os::fs::symlink(dir.path(), dir.path().join("evidence/linked")).unwrap();
        assert!(matches!(
            store.write_png("linked", b"x"),
            Err(EvidenceError::Symlink(_))
        ));
        assert!(matches!(
            store.write("s", "x", "sh", b"x"),
            Err(EvidenceError::BadSession(_))
        ));
    }

    #[test]
    fn retention_by_age_count_and_bytes_with_an_injected_now() {
        let dir = tempfile::tempdir().unwrap();
        let store = EvidenceStore::new(dir.path());
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for (i, age_secs) in [10u64, 20, 30, 40].iter().enumerate() {
            let file = store
                .write(&format!("s{i}"), "report", "json", &[b'x'; 100])
                .unwrap();
            set_mtime(&file.path, now - Duration::from_secs(*age_secs));
        }
        // A foreign file in a session dir is never deleted.
        std::fs::write(dir.path().join("s3/notes.txt"), "mine").unwrap();
        let policy = Retention {
            max_sessions: 10,
            max_age: Duration::from_secs(35),
            max_bytes: 10_000,
        };
        assert_eq!(store.apply_retention(policy, now).unwrap(), ["s3"]);
        assert!(dir.path().join("s3/notes.txt").exists(), "foreign files stay");
        assert!(!dir.path().join("s3/report.json").exists());
        let policy = Retention {
            max_sessions: 2,
            max_age: Duration::from_hours(1),
            max_bytes: 10_000,
        };
        assert_eq!(store.apply_retention(policy, now).unwrap(), ["s2"]);
        let policy = Retention {
            max_sessions: 10,
            max_age: Duration::from_hours(1),
            max_bytes: 150,
        };
        assert_eq!(
            store.apply_retention(policy, now).unwrap(),
            ["s1"],
            "the oldest goes first"
        );
        assert!(dir.path().join("s0/report.json").exists());
    }
}
