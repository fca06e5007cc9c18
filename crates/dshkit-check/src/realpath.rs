//! Real paths, each directory entry asked of the file system once per run.
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
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Most links followed in one path, as Linux's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// One entry's real path, and whether it is a directory.
type Entry = (PathBuf, bool);

thread_local! {
    /// The entries resolved in this thread's current scope: a path whose parent
    /// is real → its real path and whether it is a directory, or `None` when it
    /// is not there.
    static MEMO: RefCell<Option<HashMap<PathBuf, Option<Entry>>>> = const { RefCell::new(None) };
}

/// Runs `work` with real paths kept for its duration (on this thread).
pub(crate) fn scope<T>(work: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if self.0 {
                MEMO.with(|memo| memo.borrow_mut().take());
            }
        }
    }
    let opened = MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let fresh = memo.is_none();
        if fresh {
            *memo = Some(HashMap::new());
        }
        fresh
    });
    let _reset = Reset(opened);
    work()
}

/// The real path of `path`, as `std::fs::canonicalize` gives it.
pub(crate) fn real(path: &Path) -> std::io::Result<PathBuf> {
    let scoped = MEMO.with(|memo| memo.borrow().is_some());
    // `a.js/` and `a.js/.` must be directories for realpath: it answers those.
    let text = path.as_os_str().as_encoded_bytes();
    if !scoped || cfg!(windows) || !path.is_absolute() || text.ends_with(b"/") || text.ends_with(b"/.") {
        return dshkit_os::fs::canonicalize(path);
    }
    let mut links = 0;
    resolve(path, &mut links).map(|(real, _)| real).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} does not resolve", path.display()),
        )
    })
}

/// `path` (absolute) resolved from the root, and whether it is a directory;
/// `None` when an entry is missing or more than [`MAX_LINKS`] links are followed.
fn resolve(path: &Path, links: &mut usize) -> Option<Entry> {
    let (mut resolved, mut is_dir) = (PathBuf::from("/"), true);
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            // realpath refuses `a.js/..` for a file: let it answer that case.
            Component::ParentDir if !is_dir => return real_of(path),
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => (resolved, is_dir) = entry(resolved.join(name), links)?,
            Component::Prefix(_) => return real_of(path),
        }
    }
    Some((resolved, is_dir))
}

/// `path` as `dshkit_os::fs::canonicalize` resolves it.
fn real_of(path: &Path) -> Option<Entry> {
    let real = dshkit_os::fs::canonicalize(path).ok()?;
    let is_dir = real.is_dir();
    Some((real, is_dir))
}

/// The real path of `candidate`, whose parent is real.
fn entry(candidate: PathBuf, links: &mut usize) -> Option<Entry> {
    if let Some(known) = MEMO.with(|memo| memo.borrow().as_ref()?.get(&candidate).cloned()) {
        return known;
    }
    let found = match std::fs::symlink_metadata(&candidate) {
        Err(_) => None,
        Ok(meta) if !meta.file_type().is_symlink() => Some((candidate.clone(), meta.is_dir())),
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
            memo.insert(candidate, found.clone());
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
                }
            }
        });
        MEMO.with(|memo| assert!(memo.borrow().is_none(), "the scope ends with its memo"));
    }
}
