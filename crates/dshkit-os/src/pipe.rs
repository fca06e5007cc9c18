//! How much of what this process wrote its peer has not read yet: the one fact
//! that tells replay a notification reached the client before its response.
//! Windows cannot tell from the writing end of a pipe: there it is `None`.

#[cfg(unix)]
use std::os::fd::AsFd;

/// Bytes written to `fd` that its reader has not consumed: `FIONREAD` for a pipe
/// (the count is shared by both ends), `SIOCOUTQ` for a Unix socket (Node spawns
/// children on socket pairs; a sent buffer stays charged to the sender until the
/// receiver reads it). `None` for anything else (a file, a terminal).
#[cfg(unix)]
pub fn unread_by_peer(fd: impl AsFd) -> Option<u64> {
    let fd = fd.as_fd();
    let stat = rustix::fs::fstat(fd).ok()?;
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::Fifo => rustix::io::ioctl_fionread(fd).ok(),
        rustix::fs::FileType::Socket => socket_send_queue(fd),
        _ => None,
    }
}

#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "rustix has no safe wrapper for SIOCOUTQ")]
fn socket_send_queue(fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
    /// `SIOCOUTQ` (= `TIOCOUTQ`) on Linux.
    const SIOCOUTQ: rustix::ioctl::Opcode = 0x5411;
    // SAFETY: SIOCOUTQ is a getter that writes one `c_int`, and `fd` is open.
    let queued =
        unsafe { rustix::ioctl::ioctl(fd, rustix::ioctl::Getter::<SIOCOUTQ, std::ffi::c_int>::new()) };
    queued.ok().and_then(|n| u64::try_from(n).ok())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn socket_send_queue(_fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
    None
}

/// Windows: unknown.
#[cfg(windows)]
pub fn unread_by_peer(_handle: impl std::os::windows::io::AsHandle) -> Option<u64> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn a_pipe_counts_what_its_reader_has_not_read() {
        let (mut reader, mut writer) = std::io::pipe().unwrap();
        assert_eq!(unread_by_peer(&writer), Some(0));
        writer.write_all(b"hello\n").unwrap();
        assert_eq!(unread_by_peer(&writer), Some(6));
        let mut buf = [0; 6];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(unread_by_peer(&writer), Some(0));
    }

    #[test]
    fn a_unix_socket_counts_what_its_peer_has_not_read() {
        let (mut ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(unread_by_peer(&ours), Some(0));
        ours.write_all(b"hello\n").unwrap();
        assert!(unread_by_peer(&ours).is_some_and(|n| n > 0), "queued until read");
        let mut buf = [0; 6];
        theirs.read_exact(&mut buf).unwrap();
        assert_eq!(unread_by_peer(&ours), Some(0));
    }

    #[test]
    fn a_file_is_not_observed() {
        let file = tempfile::tempfile().unwrap();
        assert_eq!(unread_by_peer(&file), None);
    }
}
