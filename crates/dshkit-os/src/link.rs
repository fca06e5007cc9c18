//! Directory links that need no rights: a symbolic link on Unix; on Windows a
//! junction, as DSH's own installs write them (a directory symbolic link there
//! needs developer mode or administrator rights). Removing one removes the
//! link, never what it points at.

use std::path::{Path, PathBuf};

/// Links the directory `link` to the directory `target` (relative to the
/// link's folder, or absolute). On Windows the junction holds the absolute
/// path of `target`, which must exist.
pub fn dir_link(target: &Path, link: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link)
    }
    #[cfg(windows)]
    {
        let folder = link.parent().unwrap_or(Path::new("."));
        let absolute = crate::fs::canonicalize(folder.join(target))?;
        junction::create(&absolute, link)
    }
}

/// Where a directory link (a symbolic link or a junction) points, as it is
/// written (a junction's target is absolute).
pub fn read_dir_link(link: &Path) -> std::io::Result<PathBuf> {
    let target = std::fs::read_link(link)?;
    // A junction's target reads back as `\??\C:\…` on some systems.
    Ok(match target.to_str().and_then(|t| t.strip_prefix(r"\??\")) {
        Some(plain) => PathBuf::from(plain),
        None => target,
    })
}

/// Removes the directory link `link` (a symbolic link or a junction) without
/// following it; anything else is refused.
pub fn remove_dir_link(link: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(link)?;
    if !meta.file_type().is_symlink() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a link", link.display()),
        ));
    }
    #[cfg(unix)]
    {
        std::fs::remove_file(link)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt as _;
        const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
        // A junction or a directory symbolic link is a directory entry:
        // removing that directory removes the link only.
        if meta.file_attributes() & FILE_ATTRIBUTE_DIRECTORY != 0 {
            std::fs::remove_dir(link)
        } else {
            std::fs::remove_file(link)
        }
    }
}

#[cfg(windows)]
#[expect(
    unsafe_code,
    reason = "a junction is made with FSCTL_SET_REPARSE_POINT, which has no safe wrapper"
)]
mod junction {
    use std::os::windows::ffi::OsStrExt as _;
    use std::path::Path;

    use windows_sys::Win32::Foundation::{CloseHandle, GENERIC_WRITE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Storage::FileSystem::{
        CreateFileW, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, OPEN_EXISTING,
    };
    use windows_sys::Win32::System::IO::DeviceIoControl;

    const FSCTL_SET_REPARSE_POINT: u32 = 0x0009_00A4;
    const IO_REPARSE_TAG_MOUNT_POINT: u32 = 0xA000_0003;
    /// The most a reparse point may hold (`MAXIMUM_REPARSE_DATA_BUFFER_SIZE`).
    const MAX_REPARSE_BYTES: usize = 16 * 1024;

    /// Makes `link` an empty directory, then a junction to `target` (absolute).
    pub(super) fn create(target: &Path, link: &Path) -> std::io::Result<()> {
        let data = reparse_data(target)?;
        std::fs::create_dir(link)?;
        let result = set(link, &data);
        if result.is_err() {
            let _ = std::fs::remove_dir(link);
        }
        result
    }

    /// A mount-point `REPARSE_DATA_BUFFER` naming `target` (`\??\C:\…`, and
    /// `C:\…` to print).
    pub(super) fn reparse_data(target: &Path) -> std::io::Result<Vec<u8>> {
        let print: Vec<u16> = target.as_os_str().encode_wide().collect();
        let substitute: Vec<u16> = r"\??\".encode_utf16().chain(print.iter().copied()).collect();
        let mut names: Vec<u16> = substitute.clone();
        names.push(0);
        names.extend(&print);
        names.push(0);
        let too_long =
            || std::io::Error::new(std::io::ErrorKind::InvalidInput, "the target path is too long");
        let length = |units: usize| u16::try_from(units * 2).map_err(|_| too_long());
        let data_length = length(names.len() + 4)?;
        let mut data = Vec::with_capacity(8 + usize::from(data_length));
        data.extend(IO_REPARSE_TAG_MOUNT_POINT.to_le_bytes());
        data.extend(data_length.to_le_bytes());
        data.extend(0u16.to_le_bytes());
        data.extend(0u16.to_le_bytes()); // substitute name offset
        data.extend(length(substitute.len())?.to_le_bytes());
        data.extend(length(substitute.len() + 1)?.to_le_bytes()); // print name offset
        data.extend(length(print.len())?.to_le_bytes());
        for unit in names {
            data.extend(unit.to_le_bytes());
        }
        if data.len() > MAX_REPARSE_BYTES {
            return Err(too_long());
        }
        Ok(data)
    }

    fn set(link: &Path, data: &[u8]) -> std::io::Result<()> {
        let wide: Vec<u16> = link.as_os_str().encode_wide().chain([0]).collect();
        // SAFETY: `wide` is NUL-terminated; no security attributes or template.
        let handle = unsafe {
            CreateFileW(
                wide.as_ptr(),
                GENERIC_WRITE,
                0,
                std::ptr::null(),
                OPEN_EXISTING,
                FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS,
                std::ptr::null_mut(),
            )
        };
        if handle == INVALID_HANDLE_VALUE {
            return Err(std::io::Error::last_os_error());
        }
        let mut returned = 0u32;
        // SAFETY: an open directory handle; `data` is a reparse buffer of the
        // length passed; no output buffer; synchronous.
        let ok = unsafe {
            DeviceIoControl(
                handle,
                FSCTL_SET_REPARSE_POINT,
                data.as_ptr().cast(),
                u32::try_from(data.len()).expect("bounded by MAX_REPARSE_BYTES"),
                std::ptr::null_mut(),
                0,
                &raw mut returned,
                std::ptr::null_mut(),
            )
        };
        let error = (ok == 0).then(std::io::Error::last_os_error);
        // SAFETY: the handle opened above, closed once.
        unsafe { CloseHandle(handle) };
        error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mount-point buffer `FSCTL_SET_REPARSE_POINT` takes: tag, data length,
    /// then the substitute name (`\??\` + the path) and the print name, each
    /// NUL-terminated, with their byte offsets and lengths.
    #[cfg(windows)]
    #[test]
    fn a_junction_names_its_target_as_windows_reads_it() {
        let data = junction::reparse_data(Path::new(r"C:\p")).unwrap();
        let u16_at = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]);
        assert_eq!(u32::from_le_bytes(data[..4].try_into().unwrap()), 0xA000_0003);
        assert_eq!(usize::from(u16_at(4)), data.len() - 8, "data length");
        assert_eq!((u16_at(8), u16_at(10)), (0, 16), r"\??\C:\p: 8 units");
        assert_eq!((u16_at(12), u16_at(14)), (18, 8), r"C:\p after the NUL");
        let names: Vec<u16> = data[16..]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(String::from_utf16(&names).unwrap(), "\\??\\C:\\p\0C:\\p\0");
    }

    #[test]
    fn a_directory_link_reads_through_and_its_removal_leaves_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("plugins").join("p");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("index.js"), "ok").unwrap();
        let link = dir.path().join("node_modules").join("p");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        dir_link(&Path::new("..").join("plugins").join("p"), &link).unwrap();
        assert_eq!(std::fs::read_to_string(link.join("index.js")).unwrap(), "ok");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let read = read_dir_link(&link).unwrap();
        let resolved = link.parent().unwrap().join(read);
        assert_eq!(
            crate::fs::canonicalize(resolved).unwrap(),
            crate::fs::canonicalize(&target).unwrap()
        );
        remove_dir_link(&link).unwrap();
        assert!(std::fs::symlink_metadata(&link).is_err(), "the link is gone");
        assert_eq!(
            std::fs::read_to_string(target.join("index.js")).unwrap(),
            "ok",
            "and only the link"
        );
        let err = remove_dir_link(&target).unwrap_err();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::InvalidInput,
            "a real directory is refused"
        );
        assert!(target.join("index.js").is_file());
    }
}
