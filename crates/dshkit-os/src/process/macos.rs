//! macOS: libproc for the table, `sysctl(KERN_PROCARGS2)` for arguments, and
//! `lsof` for listening sockets. Type-checked in CI; not run there.
#![expect(
    unsafe_code,
    reason = "libproc and sysctl are C; each call is wrapped here once"
)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::identity::{Entry, StartTime};

/// The most processes one listing reads.
const MAX_PROCESSES: usize = 65_536;
/// The most argument bytes read for one process (`kern.argmax` is 1 MiB).
const MAX_ARGUMENTS: usize = 1 << 20;

fn bsd_info(pid: u32) -> Option<libc::proc_bsdinfo> {
    let pid_c = libc::c_int::try_from(pid).ok()?;
    // SAFETY: plain data; all zeroes is valid.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: `info` is writable for `size` bytes.
    let written =
        unsafe { libc::proc_pidinfo(pid_c, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    (written == size).then_some(info)
}

pub(super) fn entry(pid: u32) -> Option<Entry> {
    let info = bsd_info(pid)?;
    if info.pbi_status == libc::SZOMB {
        return None;
    }
    // SAFETY: plain call.
    let session = unsafe { libc::getsid(libc::pid_t::try_from(pid).ok()?) };
    Some(Entry {
        pid,
        parent: Some(info.pbi_ppid).filter(|p| *p != 0),
        started: StartTime(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec),
        group: Some(info.pbi_pgid),
        detached: info.pbi_pgid == pid && u32::try_from(session).ok() == Some(pid),
    })
}

pub(super) fn start_time(pid: u32) -> Option<StartTime> {
    entry(pid).map(|e| e.started)
}

pub(super) fn snapshot() -> Vec<Entry> {
    let mut pids = vec![0 as libc::c_int; MAX_PROCESSES];
    let size =
        libc::c_int::try_from(pids.len() * std::mem::size_of::<libc::c_int>()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `pids` is writable for `size` bytes.
    let count = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), size) };
    pids.truncate(usize::try_from(count).unwrap_or(0));
    pids.into_iter()
        .filter_map(|pid| u32::try_from(pid).ok())
        .filter(|pid| *pid != 0)
        .filter_map(entry)
        .collect()
}

/// `KERN_PROCARGS2`: argc, the executable path, padding, then the arguments.
pub(super) fn argv(pid: u32) -> Option<Vec<String>> {
    let mut mib = [
        libc::CTL_KERN,
        libc::KERN_PROCARGS2,
        libc::c_int::try_from(pid).ok()?,
    ];
    let mut buffer = vec![0u8; MAX_ARGUMENTS];
    let mut size = buffer.len();
    // SAFETY: `mib` names three levels; `buffer` is writable for `size` bytes.
    let status = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buffer.as_mut_ptr().cast(),
            &raw mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if status != 0 || size < 4 {
        return None;
    }
    buffer.truncate(size);
    let argc = usize::try_from(i32::from_ne_bytes(buffer[..4].try_into().ok()?)).ok()?;
    let mut rest = &buffer[4..];
    // Skip the executable path and the NULs after it.
    let path_end = rest.iter().position(|b| *b == 0)?;
    rest = &rest[path_end..];
    let start = rest.iter().position(|b| *b != 0)?;
    Some(
        rest[start..]
            .split(|b| *b == 0)
            .take(argc)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

pub(super) fn cwd(pid: u32) -> Option<PathBuf> {
    let pid_c = libc::c_int::try_from(pid).ok()?;
    // SAFETY: plain data; all zeroes is valid.
    let mut info: libc::proc_vnodepathinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_vnodepathinfo>()).ok()?;
    // SAFETY: `info` is writable for `size` bytes.
    let written = unsafe {
        libc::proc_pidinfo(
            pid_c,
            libc::PROC_PIDVNODEPATHINFO,
            0,
            (&raw mut info).cast(),
            size,
        )
    };
    if written != size {
        return None;
    }
    let bytes: Vec<u8> = info
        .pvi_cdir
        .vip_path
        .iter()
        .flatten()
        .map(|c| c.cast_unsigned())
        .take_while(|b| *b != 0)
        .collect();
    (!bytes.is_empty()).then(|| PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
}

pub(super) fn age(started: StartTime) -> Option<Duration> {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some(now.saturating_sub(Duration::from_micros(started.0)))
}

pub(super) fn die_with_spawning_thread(_command: &mut std::process::Command) -> bool {
    false
}

/// `(port, pid)` of every listening TCP socket held by one of `pids` (all
/// processes when `None`), from `lsof`, which every macOS has.
pub(super) fn listeners(pids: Option<&[u32]>) -> Vec<(u16, u32)> {
    let Ok(output) = std::process::Command::new("lsof")
        .args(["-nP", "-iTCP", "-sTCP:LISTEN", "-F", "pn"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut pid = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if let Some(p) = line.strip_prefix('p') {
            pid = p.parse::<u32>().ok();
        } else if let (Some(name), Some(pid)) = (line.strip_prefix('n'), pid)
            && let Some(port) = name.rsplit(':').next().and_then(|p| p.parse::<u16>().ok())
            && pids.is_none_or(|p| p.contains(&pid))
        {
            out.push((port, pid));
        }
    }
    out
}
