//! Real paths, each directory entry asked of the file system once per run; and
//! each `package.json`, read once per run ([`manifest`]).
//!
//! The static checks ask for the real path of every file they read and every file
//! an import names (`./lib/a.js`, a link into `node_modules`): the libc's
//! `realpath` reads every component of each one again (a profile of 480 files cost
//! about 14 000 `readlink` calls). Inside [`scope`] a path is resolved as
//! `realpath` resolves it, component by component from the root (`.` skipped,
//! `..` the parent of what is resolved so far, a link followed from its real
//! directory), and each entry's answer (its real path, or that it is not there) is
//! kept for the rest of the run. Outside a scope, on a relative path, and on
//! Windows (drive prefixes and the case of names), `dshkit_os::fs::canonicalize`
//! answers.

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

/// Most links followed in one path, as Linux's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// What an entry is, its links followed (as `Path::is_dir` and `is_file` see it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    /// A socket, a FIFO, a device: neither.
    Other,
}

impl Kind {
    fn of(file_type: std::fs::FileType) -> Self {
        if file_type.is_dir() {
            Self::Dir
        } else if file_type.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

/// One entry's real path, and what it is.
type Entry = (PathBuf, Kind);

thread_local! {
    /// The entries resolved in this thread's current scope: a path whose parent
    /// is real → its real path and whether it is a directory, or `None` when it
    /// is not there.
    static MEMO: RefCell<Option<Memo<Option<Entry>>>> = const { RefCell::new(None) };
    /// The `package.json` files read in this thread's current scope, by path.
    static MANIFESTS: RefCell<Option<Memo<Manifest>>> = const { RefCell::new(None) };
}

/// A scope's answers by path, its bytes hashed (a path is hashed by its
/// components otherwise, a cost seen in profiles of the check).
type Memo<T> = foldhash::HashMap<OsString, T>;

/// A directory's `package.json` as a run reads it.
#[derive(Debug, Clone)]
pub(crate) enum Manifest {
    /// Not there, or not readable: why.
    Missing(String),
    /// Not valid JSON: the parser's error.
    Invalid(String),
    Parsed(Arc<Value>),
}

/// The `package.json` of `dir`; inside a [`scope`] each is read once.
pub(crate) fn manifest(dir: &Path) -> Manifest {
    let file = dir.join("package.json");
    if let Some(known) = MANIFESTS.with(|m| m.borrow().as_ref()?.get(file.as_os_str()).cloned()) {
        return known;
    }
    let found = match std::fs::read_to_string(&file) {
        Err(e) => Manifest::Missing(e.to_string()),
        Ok(text) => match serde_json::from_str(&text) {
            Ok(value) => Manifest::Parsed(Arc::new(value)),
            Err(e) => Manifest::Invalid(e.to_string()),
        },
    };
    MANIFESTS.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut() {
            m.insert(file.into_os_string(), found.clone());
        }
    });
    found
}

/// Runs `work` with real paths kept for its duration (on this thread).
pub(crate) fn scope<T>(work: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if self.0 {
                MEMO.with(|memo| memo.borrow_mut().take());
                MANIFESTS.with(|m| m.borrow_mut().take());
            }
        }
    }
    let opened = MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let fresh = memo.is_none();
        if fresh {
            *memo = Some(Memo::default());
            MANIFESTS.with(|m| *m.borrow_mut() = Some(Memo::default()));
        }
        fresh
    });
    let _reset = Reset(opened);
    work()
}

/// What a [`scope`] learned: its real paths and manifests. Work shared out
/// among threads starts each thread's scope from what the run knew then
/// ([`known`], [`scope_from`]), and the run keeps what they learned ([`adopt`]):
/// a path asked before the split has one answer on every thread, and the rest of
/// the run keeps the first answer to each.
#[derive(Debug, Default, Clone)]
pub(crate) struct Learned {
    entries: Memo<Option<Entry>>,
    manifests: Memo<Manifest>,
}

/// What this thread's scope knows so far (nothing outside a scope).
pub(crate) fn known() -> Learned {
    Learned {
        entries: MEMO.with(|memo| memo.borrow().clone()).unwrap_or_default(),
        manifests: MANIFESTS.with(|m| m.borrow().clone()).unwrap_or_default(),
    }
}

/// Runs `work` in a scope on this thread that starts from `start` (in place of
/// any scope the thread had); returns what the scope knew at the end with the
/// result. For a thread of the run's own: the thread's scope ends with it.
pub(crate) fn scope_from<T>(start: Learned, work: impl FnOnce() -> T) -> (T, Learned) {
    fn take() -> Learned {
        Learned {
            entries: MEMO.with(|memo| memo.borrow_mut().take()).unwrap_or_default(),
            manifests: MANIFESTS.with(|m| m.borrow_mut().take()).unwrap_or_default(),
        }
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            take();
        }
    }
    MEMO.with(|memo| *memo.borrow_mut() = Some(start.entries));
    MANIFESTS.with(|m| *m.borrow_mut() = Some(start.manifests));
    let _reset = Reset;
    let result = work();
    (result, take())
}

/// Keeps what another thread's scope learned in this thread's scope, where
/// this one has no answer yet; outside a scope it is dropped.
pub(crate) fn adopt(learned: Learned) {
    MEMO.with(|memo| {
        if let Some(memo) = memo.borrow_mut().as_mut() {
            for (path, entry) in learned.entries {
                memo.entry(path).or_insert(entry);
            }
        }
    });
    MANIFESTS.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut() {
            for (path, manifest) in learned.manifests {
                m.entry(path).or_insert(manifest);
            }
        }
    });
}

/// The real path of `path`, as `std::fs::canonicalize` gives it.
pub(crate) fn real(path: &Path) -> std::io::Result<PathBuf> {
    lookup(path).map(|(real, _)| real).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} does not resolve", path.display()),
        )
    })
}

/// The real path of `path` and what it is; `None` when it does not resolve.
/// Inside a [`scope`] this asks the file system nothing [`real`] has asked
/// before, so `is_dir`, `is_file` and the real path cost one look together.
pub(crate) fn lookup(path: &Path) -> Option<Entry> {
    let scoped = MEMO.with(|memo| memo.borrow().is_some());
    // `a.js/` and `a.js/.` must be directories for realpath: it answers those.
    let text = path.as_os_str().as_encoded_bytes();
    if !scoped || cfg!(windows) || !path.is_absolute() || text.ends_with(b"/") || text.ends_with(b"/.") {
        return real_of(path);
    }
    let mut links = 0;
    resolve(path, &mut links)
}

/// A regular file (not a link) the listing of `real_dir`, a real directory,
/// names: its real path is `real_dir/name`, kept for the rest of the scope
/// without asking the file system again.
pub(crate) fn listed_file(real_dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let path = real_dir.join(name);
    MEMO.with(|memo| {
        if let Some(memo) = memo.borrow_mut().as_mut() {
            memo.entry(path.clone().into_os_string())
                .or_insert_with(|| Some((path.clone(), Kind::File)));
        }
    });
    path
}

/// `path` (absolute) resolved from the root, and whether it is a directory;
/// `None` when an entry is missing or more than [`MAX_LINKS`] links are followed.
fn resolve(path: &Path, links: &mut usize) -> Option<Entry> {
    // A plain path (the root, then names) is its real parent's entry: the
    // parent is resolved once for all its files, and the answer kept under the
    // path itself, which is what `entry` keeps for a path whose parent is real.
    let plain = path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if plain && let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        if let Some(known) = MEMO.with(|memo| memo.borrow().as_ref()?.get(path.as_os_str()).cloned()) {
            return known;
        }
        let found = match resolve(parent, links)? {
            (real_parent, Kind::Dir) => entry(real_parent.join(name), links),
            // Nothing is inside a file.
            _ => None,
        };
        // An answer cut short by the link limit is not kept (as in `entry`).
        if *links <= MAX_LINKS {
            MEMO.with(|memo| {
                if let Some(memo) = memo.borrow_mut().as_mut() {
                    memo.insert(path.as_os_str().to_owned(), found.clone());
                }
            });
        }
        return found;
    }
    let (mut resolved, mut kind) = (PathBuf::from("/"), Kind::Dir);
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            // realpath refuses `a.js/..` for a file: let it answer that case.
            Component::ParentDir if kind != Kind::Dir => return real_of(path),
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => (resolved, kind) = entry(resolved.join(name), links)?,
            Component::Prefix(_) => return real_of(path),
        }
    }
    Some((resolved, kind))
}

/// `path` as `dshkit_os::fs::canonicalize` resolves it.
fn real_of(path: &Path) -> Option<Entry> {
    let real = dshkit_os::fs::canonicalize(path).ok()?;
    let kind = Kind::of(std::fs::metadata(&real).ok()?.file_type());
    Some((real, kind))
}

/// The real path of `candidate`, whose parent is real.
fn entry(candidate: PathBuf, links: &mut usize) -> Option<Entry> {
    if let Some(known) = MEMO.with(|memo| memo.borrow().as_ref()?.get(candidate.as_os_str()).cloned()) {
        return known;
    }
    let found = match std::fs::symlink_metadata(&candidate) {
        Err(_) => None,
        Ok(meta) if !meta.file_type().is_symlink() => Some((candidate.clone(), Kind::of(meta.file_type()))),
        Ok(_) => {
            *links += 1;
            if *links > MAX_LINKS {
                return None; // not kept: another path may reach it with fewer links
            }
            let target = std::fs::read_link(&candidate).ok()?;
            let from = candidate.parent().unwrap_or(Path::new("/"));
            resolve(&from.join(target), links)
        }
    };
    MEMO.with(|memo| {
        if let Some(memo) = memo.borrow_mut().as_mut() {
            memo.insert(candidate.into_os_string(), found.clone());
        }
    });
    found
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Every path as `std::fs::canonicalize` resolves it, or fails as it fails.
    #[test]
    fn paths_resolve_as_realpath_resolves_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("plugins/p/lib")).unwrap();
        std::fs::write(root.join("plugins/p/lib/a.js"), "").unwrap();
        std::fs::write(root.join("plugins/p/index.js"), "").unwrap();
        std::fs::create_dir_all(root.join("node_modules/@local")).unwrap();
        std::os::unix::fs::symlink("../../plugins/p", root.join("node_modules/@local/p")).unwrap();
        std::os::unix::fs::symlink(root.join("plugins"), root.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        std::os::unix::fs::symlink("gone", root.join("dangling")).unwrap();
        let paths = [
            "plugins/p/index.js",
            "plugins/p/./lib/a.js",
            "plugins/p/lib/../index.js",
            "node_modules/@local/p/lib/a.js",
            "node_modules/@local/p/../p/index.js",
            "node_modules/@local/p/lib/../../q",
            "abs/p/lib/a.js",
            "plugins/p/index.js/x",
            "plugins/p/missing.js",
            "loop/a",
            "dangling",
            "plugins/p/lib/a.js/..",
            "plugins/p/lib/a.js/../a.js",
            "plugins/p/lib/",
            "plugins/p/lib/a.js/",
            "plugins/p/lib/a.js/.",
            "node_modules/@local/p/./lib/./a.js",
        ];
        scope(|| {
            for round in 0..2 {
                for path in paths {
                    let path = root.join(path);
                    let expected = std::fs::canonicalize(&path).ok();
                    assert_eq!(real(&path).ok(), expected, "{} (round {round})", path.display());
                    let kind = lookup(&path).map(|(_, kind)| kind);
                    let seen = (path.is_dir(), path.is_file());
                    assert_eq!(
                        (kind == Some(Kind::Dir), kind == Some(Kind::File)),
                        seen,
                        "is_dir and is_file of {} (round {round})",
                        path.display()
                    );
                }
            }
        });
        MEMO.with(|memo| assert!(memo.borrow().is_none(), "the scope ends with its memo"));
    }
}
