//! The file-system facts that differ between platforms, and the workspace's
//! one atomic write ([`write_atomic`]). On Windows, files under the user's
//! profile are private by its ACLs, so the Unix mode checks have no
//! counterpart there and report nothing.

use std::fs::{File, Metadata, OpenOptions};
use std::path::Path;

/// Makes `options` create the file readable and writable by its owner only
/// (mode 0600; Windows: the directory's ACLs).
pub fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Creates `dir` (and its parents) and makes it its owner's alone (0700).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    set_mode(dir, 0o700)
}

/// The permission bits of a file (Unix), `None` where the platform has none.
pub fn mode(metadata: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        Some(metadata.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

/// Sets the permission bits (Unix); does nothing where the platform has none.
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// Whether group or others may use the file (Unix mode bits 0o077).
pub fn open_to_others(metadata: &Metadata) -> bool {
    mode(metadata).is_some_and(|m| m & 0o077 != 0)
}

/// Whether the file can be run: an executable bit (Unix), any regular file
/// (Windows decides by extension when it runs it).
pub fn is_executable(metadata: &Metadata) -> bool {
    metadata.is_file() && mode(metadata).is_none_or(|m| m & 0o111 != 0)
}

/// Creates `link` pointing at `target` (relative targets resolve from the
/// link's directory). Windows needs to know whether the target is a directory,
/// and the right to create symbolic links (developer mode or administrator).
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
    let (target, link) = (target.as_ref(), link.as_ref());
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link)
    }
    #[cfg(windows)]
    {
        let resolved = link.parent().unwrap_or(Path::new(".")).join(target);
        if resolved.is_dir() {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    }
}

/// The real, absolute path of `path`, as people write it: on Windows the plain
/// `C:\dir` form rather than the verbatim `\\?\C:\dir` the system returns,
/// whenever the plain form names the same file (a drive or UNC path under 260
/// characters with no component Windows would reinterpret).
pub fn canonicalize(path: impl AsRef<Path>) -> std::io::Result<std::path::PathBuf> {
    let real = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    let real = plain_windows_path(real);
    Ok(real)
}

/// Whether the path [`resolve_inside`] resolves must exist already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// A file or directory to read.
    MustExist,
    /// A file that may be made: its directory must exist.
    MayBeNew,
}

/// Why [`resolve_inside`] refused a path.
#[derive(Debug)]
pub enum Refused {
    /// The root itself cannot be resolved.
    RootUnusable(std::io::Error),
    /// The path does not exist (or, for a new file, its directory).
    Missing,
    /// The path resolves outside the root: through `..`, a link, or a link
    /// whose target does not exist yet (writing through it would land
    /// wherever it points).
    Outside,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RootUnusable(e) => write!(f, "the root cannot be resolved: {e}"),
            Self::Missing => f.write_str("it does not exist"),
            Self::Outside => f.write_str("it resolves outside the root"),
        }
    }
}

/// The one containment check of the trust boundary: `path` (relative to
/// `root`, or absolute) with every link and `..` resolved, only if it stays
/// inside `root` (resolved the same way). A new file ([`Leaf::MayBeNew`]) is
/// resolved through its directory, and a dangling link in its place is
/// refused.
pub fn resolve_inside(root: &Path, path: &Path, leaf: Leaf) -> Result<std::path::PathBuf, Refused> {
    let root = canonicalize(root).map_err(Refused::RootUnusable)?;
    let joined = root.join(path);
    match canonicalize(&joined) {
        Ok(real) if real.starts_with(&root) => return Ok(real),
        Ok(_) => return Err(Refused::Outside),
        Err(_) if leaf == Leaf::MustExist => return Err(Refused::Missing),
        Err(_) => {}
    }
    if std::fs::symlink_metadata(&joined).is_ok() {
        return Err(Refused::Outside); // a link to nowhere (yet)
    }
    let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
        return Err(Refused::Outside); // ends in `..`: never a new file's name
    };
    let parent = canonicalize(parent).map_err(|_| Refused::Missing)?;
    if parent.starts_with(&root) {
        Ok(parent.join(name))
    } else {
        Err(Refused::Outside)
    }
}

/// `\\?\C:\a` → `C:\a` and `\\?\UNC\host\share` → `\\host\share`, when safe.
#[cfg_attr(
    not(windows),
    allow(dead_code, reason = "tested on every platform, used on Windows")
)]
fn plain_windows_path(path: std::path::PathBuf) -> std::path::PathBuf {
    let Some(text) = path.to_str() else {
        return path;
    };
    let plain = if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        format!(r"\\{rest}")
    } else if let Some(rest) = text
        .strip_prefix(r"\\?\")
        .filter(|rest| rest.as_bytes().get(1) == Some(&b':') && rest.as_bytes()[0].is_ascii_alphabetic())
    {
        rest.to_owned()
    } else {
        return path;
    };
    let reinterpreted = plain.split('\\').any(|component| {
        let stem = component.split('.').next().unwrap_or("").to_ascii_uppercase();
        let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
            || ((stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.len() == 4
                && stem.as_bytes()[3].is_ascii_digit());
        device || component.ends_with(['.', ' ']) && component != "." && component != ".."
    });
    if plain.len() >= 260 || reinterpreted {
        return path;
    }
    std::path::PathBuf::from(plain)
}

/// Space on the file system holding `path`, which must exist: `(available to
/// this user, total)` in bytes.
pub fn space(path: &Path) -> std::io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        let stat = rustix::fs::statvfs(path)?;
        #[allow(
            clippy::useless_conversion,
            reason = "the field types differ between platforms"
        )]
        let (available, blocks, size) = (u64::from(stat.f_bavail), u64::from(stat.f_blocks), stat.f_frsize);
        Ok((available.saturating_mul(size), blocks.saturating_mul(size)))
    }
    #[cfg(windows)]
    {
        windows_space(path)
    }
}

#[cfg(windows)]
#[expect(unsafe_code, reason = "GetDiskFreeSpaceExW is the only way to ask")]
fn windows_space(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::windows::ffi::OsStrExt as _;
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    let (mut available, mut total, mut free) = (0u64, 0u64, 0u64);
    // SAFETY: `wide` is NUL-terminated; three valid out pointers.
    let ok = unsafe {
        windows_sys::Win32::Storage::FileSystem::GetDiskFreeSpaceExW(
            wide.as_ptr(),
            &raw mut available,
            &raw mut total,
            &raw mut free,
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((available, total))
}

/// Reads from `offset` without moving the file's cursor; may read less than
/// `buffer` holds.
pub fn read_some_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buffer, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buffer, offset)
    }
}

/// Fills `buffer` from `offset`, or fails with `UnexpectedEof`.
pub fn read_exact_at(file: &File, mut buffer: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buffer.is_empty() {
        match read_some_at(file, buffer, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buffer = &mut buffer[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Bytes [`write_atomic`] gathers before each write to the new file.
const ATOMIC_WRITE_BUFFER: usize = 256 * 1024;

/// Replaces `path` with `bytes`, atomically: readers see the old file or the
/// new one, never a part of it, and after a crash (a power cut included) the
/// one that was in place last. `bytes` is read to its end (a slice, a file, or
/// a reader that makes the content as it goes, so a large file needs no buffer
/// of its size).
///
/// The content goes to a new file beside `path` (the same directory, so the
/// rename cannot cross file systems) that takes the old file's permissions
/// before anything is written; the new file is synced, renamed over `path`,
/// and then the directory is synced, so the rename survives a crash too (on
/// Unix; Windows gives no handle to a directory to sync, and NTFS journals the
/// rename). A file system that cannot sync a directory is not an error. On an
/// error before the rename the new file is removed and `path` is left as it
/// was; one in syncing the directory is returned with the new file in place.
pub fn write_atomic(path: &Path, mut bytes: impl std::io::Read) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (temp, file) = create_beside(path, dir)?;
    let written = (|| {
        if let Ok(old) = std::fs::metadata(path) {
            file.set_permissions(old.permissions())?;
        }
        let mut out = std::io::BufWriter::with_capacity(ATOMIC_WRITE_BUFFER, file);
        std::io::copy(&mut bytes, &mut out)?;
        let file = out.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        atomic_step("write");
        synced(&file, "sync the file")?;
        drop(file);
        rename_over(&temp, path)?;
        atomic_step("rename");
        Ok(())
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    sync_dir(dir)
}

/// How long a rename over a file another writer is replacing at the same
/// moment is retried (Windows).
#[cfg(windows)]
const MAX_RENAME_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Renames `from` over `to`. On Windows a file being replaced by another
/// rename (or opened without sharing its deletion) refuses a second one with
/// "access denied" until that finishes: the rename is retried, backing off,
/// for at most [`MAX_RENAME_RETRY`] (never over a directory, which no
/// retry moves).
fn rename_over(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(windows)]
    {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            match std::fs::rename(from, to) {
                Err(e)
                    if e.kind() == std::io::ErrorKind::PermissionDenied
                        && !to.is_dir()
                        && started.elapsed() + pause < MAX_RENAME_RETRY =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                other => return other,
            }
        }
    }
    #[cfg(not(windows))]
    std::fs::rename(from, to)
}

/// A new file for [`write_atomic`] in `dir`, named after `path`
/// (`.NAME.PID-N.tmp`): never one that exists, so two writes of one path at
/// once never share it.
fn create_beside(path: &Path, dir: &Path) -> std::io::Result<(std::path::PathBuf, File)> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = path.file_name().map_or_else(
        || std::borrow::Cow::Borrowed("file"),
        std::ffi::OsStr::to_string_lossy,
    );
    let mut attempts = 0;
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => {
                atomic_step("create");
                return Ok((temp, file));
            }
            // Left by an earlier process that had this pid.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 16 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Makes a rename in `dir` durable (Unix).
#[cfg_attr(
    not(unix),
    expect(clippy::unnecessary_wraps, reason = "a directory is synced on Unix only")
)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        match File::open(dir).and_then(|dir| synced(&dir, "sync the directory")) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::Unsupported
                ) => {}
            Err(e) => return Err(e),
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Syncs `file` (a file or a directory) to the disk: the step of
/// [`write_atomic`] named `step`.
fn synced(file: &File, step: &'static str) -> std::io::Result<()> {
    file.sync_all()?;
    atomic_step(step);
    Ok(())
}

/// Notes a step of [`write_atomic`] for the tests, which check their order.
#[cfg(test)]
fn atomic_step(step: &'static str) {
    tests::ATOMIC_STEPS.with(|steps| steps.borrow_mut().push(step));
}

#[cfg(not(test))]
fn atomic_step(_: &'static str) {}

#[cfg(test)]
mod tests {

    #[test]
    fn a_path_is_resolved_inside_its_root_or_refused_the_same_way_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let real_root = canonicalize(&root).unwrap();
        let ok = |path: &str, leaf| resolve_inside(&root, Path::new(path), leaf);
        assert_eq!(
            ok("sub/a.txt", Leaf::MustExist).unwrap(),
            real_root.join("sub").join("a.txt")
        );
        assert_eq!(
            ok("sub/../sub/a.txt", Leaf::MustExist).unwrap(),
            real_root.join("sub").join("a.txt")
        );
        assert_eq!(ok("", Leaf::MustExist).unwrap(), real_root);
        assert!(matches!(
            ok("../secret.txt", Leaf::MustExist),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            ok("sub/missing.txt", Leaf::MustExist),
            Err(Refused::Missing)
        ));
        // A new file: its directory must exist inside.
        assert_eq!(
            ok("sub/new.png", Leaf::MayBeNew).unwrap(),
            real_root.join("sub").join("new.png")
        );
        assert!(matches!(ok("../new.png", Leaf::MayBeNew), Err(Refused::Outside)));
        assert!(matches!(
            ok("nowhere/new.png", Leaf::MayBeNew),
            Err(Refused::Missing)
        ));
        assert!(ok("sub/..", Leaf::MayBeNew).is_ok(), "the root itself exists");
        assert!(matches!(ok("..", Leaf::MayBeNew), Err(Refused::Outside)));
        // An absolute path elsewhere.
        let elsewhere = dir.path().join("secret.txt");
        assert!(matches!(
            resolve_inside(&root, &elsewhere, Leaf::MustExist),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            resolve_inside(&dir.path().join("no-root"), Path::new("a"), Leaf::MustExist),
            Err(Refused::RootUnusable(_))
        ));
    }

    #[test]
    #[cfg(unix)] // Wine cannot show links faithfully (docs/platforms.md)
    fn links_out_of_the_root_are_refused_also_when_they_point_nowhere_yet() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        symlink(dir.path(), root.join("up")).unwrap();
        symlink(dir.path().join("planted.png"), root.join("dangling.png")).unwrap();
        let resolve = |path: &str, leaf| resolve_inside(&root, Path::new(path), leaf);
        assert!(matches!(
            resolve("link.txt", Leaf::MustExist),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            resolve("up/secret.txt", Leaf::MustExist),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            resolve("up/new.png", Leaf::MayBeNew),
            Err(Refused::Outside)
        ));
        // Writing through a dangling link would make a file outside the root.
        assert!(matches!(
            resolve("dangling.png", Leaf::MayBeNew),
            Err(Refused::Outside)
        ));
        assert!(!dir.path().join("planted.png").exists());
    }
    use super::*;

    #[test]
    fn a_private_file_is_its_owners_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        private_file(OpenOptions::new().write(true).create_new(true))
            .open(&path)
            .unwrap();
        let metadata = std::fs::metadata(&path).unwrap();
        assert!(!open_to_others(&metadata));
        if let Some(mode) = mode(&metadata) {
            assert_eq!(mode, 0o600);
            set_mode(&path, 0o644).unwrap();
            assert!(open_to_others(&std::fs::metadata(&path).unwrap()));
        }
    }

    #[test]
    fn verbatim_windows_paths_are_made_plain_only_when_that_is_safe() {
        let plain = |p: &str| {
            plain_windows_path(std::path::PathBuf::from(p))
                .to_string_lossy()
                .into_owned()
        };
        assert_eq!(plain(r"\\?\C:\Users\a\dsh\index.js"), r"C:\Users\a\dsh\index.js");
        assert_eq!(plain(r"\\?\UNC\host\share\x"), r"\\host\share\x");
        assert_eq!(
            plain(r"\\?\C:\dir\NUL.txt"),
            r"\\?\C:\dir\NUL.txt",
            "a device name"
        );
        assert_eq!(plain(r"\\?\C:\dir\trailing. "), r"\\?\C:\dir\trailing. ");
        assert_eq!(plain(r"\\?\Volume{x}\a"), r"\\?\Volume{x}\a", "no drive letter");
        assert_eq!(plain("/tmp/a"), "/tmp/a");
    }

    #[test]
    fn positioned_reads_leave_the_cursor_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, b"0123456789").unwrap();
        let file = File::open(&path).unwrap();
        let mut four = [0u8; 4];
        read_exact_at(&file, &mut four, 3).unwrap();
        assert_eq!(&four, b"3456");
        let err = read_exact_at(&file, &mut four, 8).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        let (available, total) = space(dir.path()).unwrap();
        assert!(available <= total && total > 0);
    }

    thread_local! {
        /// The steps [`write_atomic`] took on this thread, in order.
        pub(super) static ATOMIC_STEPS: std::cell::RefCell<Vec<&'static str>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    /// The names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_atomic_write_syncs_the_file_renames_it_then_syncs_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "old").unwrap();
        ATOMIC_STEPS.with(|steps| steps.borrow_mut().clear());
        write_atomic(&path, b"new".as_slice()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(listing(dir.path()), ["settings.json"], "no temporary file left");
        let steps = ATOMIC_STEPS.with(|steps| steps.borrow().clone());
        let mut expected = vec!["create", "write", "sync the file", "rename"];
        if cfg!(unix) {
            expected.push("sync the directory");
        }
        assert_eq!(steps, expected);
    }

    #[test]
    fn an_atomic_write_keeps_the_old_files_permissions_and_makes_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private");
        std::fs::write(&path, "old").unwrap();
        set_mode(&path, 0o600).unwrap();
        write_atomic(&path, b"new".as_slice()).unwrap();
        let metadata = std::fs::metadata(&path).unwrap();
        assert!(!open_to_others(&metadata));
        if let Some(mode) = mode(&metadata) {
            assert_eq!(mode, 0o600);
        }
        // A path that did not exist is made; a reader of any kind is taken.
        let fresh = dir.path().join("fresh.jsonl");
        write_atomic(&fresh, std::io::Cursor::new(vec![b'x'; 300_000])).unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap().len(), 300_000);
    }

    /// A reader that gives `good` bytes and then fails.
    struct FailingAfter(usize);

    impl std::io::Read for FailingAfter {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("the content could not be made"));
            }
            let n = self.0.min(buffer.len());
            buffer[..n].fill(b'y');
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_failed_atomic_write_leaves_the_old_file_and_removes_the_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "old").unwrap();
        let error = write_atomic(&path, FailingAfter(100_000)).unwrap_err();
        assert_eq!(error.to_string(), "the content could not be made");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(listing(dir.path()), ["c.jsonl"]);

        // The rename fails: a directory that is not empty stands at the path.
        let occupied = dir.path().join("occupied");
        std::fs::create_dir(&occupied).unwrap();
        std::fs::write(occupied.join("inside"), "kept").unwrap();
        assert!(write_atomic(&occupied, b"new".as_slice()).is_err());
        assert_eq!(std::fs::read_to_string(occupied.join("inside")).unwrap(), "kept");
        assert_eq!(listing(dir.path()), ["c.jsonl", "occupied"]);

        // No directory to write in: nothing is made.
        let nowhere = dir.path().join("missing").join("c.jsonl");
        assert!(write_atomic(&nowhere, b"new".as_slice()).is_err());
        assert_eq!(listing(dir.path()), ["c.jsonl", "occupied"]);
    }

    #[test]
    fn atomic_writes_of_one_path_at_once_never_share_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared");
        std::thread::scope(|scope| {
            for n in 0..8u8 {
                let path = &path;
                scope.spawn(move || write_atomic(path, vec![n; 64 * 1024].as_slice()).unwrap());
            }
        });
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len(), 64 * 1024);
        assert!(
            written.iter().all(|b| *b == written[0]),
            "one writer's whole content"
        );
        assert_eq!(listing(dir.path()), ["shared"]);
    }
}
