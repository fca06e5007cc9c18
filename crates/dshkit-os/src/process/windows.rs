//! Windows: Toolhelp32 for the table, the target's PEB for its command line and
//! working directory, Job Objects for groups and lifetime.
#![expect(
    unsafe_code,
    reason = "the Win32 process API is C; each call is wrapped here once"
)]

use std::ffi::c_void;
use std::os::windows::process::CommandExt as _;
use std::path::PathBuf;
use std::time::Duration;

use windows_sys::Win32::Foundation::{
    CloseHandle, FILETIME, HANDLE, INVALID_HANDLE_VALUE, LocalFree, STILL_ACTIVE,
};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent, GetConsoleProcessList,
};
use windows_sys::Win32::System::Diagnostics::Debug::ReadProcessMemory;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
    TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::SystemInformation::GetSystemTimeAsFileTime;
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, GetExitCodeProcess, GetProcessTimes, OpenProcess, OpenThread,
    PROCESS_QUERY_INFORMATION, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SET_QUOTA, PROCESS_TERMINATE,
    PROCESS_VM_READ, ResumeThread, THREAD_SUSPEND_RESUME, TerminateProcess,
};

use super::identity::{Entry, Identity, StartTime};

/// A handle closed on drop.
struct Owned(HANDLE);

impl Owned {
    fn new(handle: HANDLE) -> Option<Self> {
        (!handle.is_null() && handle != INVALID_HANDLE_VALUE).then_some(Self(handle))
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the handle is open and owned by this value alone.
        unsafe { CloseHandle(self.0) };
    }
}

// SAFETY: a kernel handle may be used and closed from any thread.
unsafe impl Send for Owned {}
// SAFETY: the calls made through a shared `Owned` are thread-safe kernel calls.
unsafe impl Sync for Owned {}

impl std::fmt::Debug for Owned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle({:p})", self.0)
    }
}

fn open(pid: u32, access: u32) -> Option<Owned> {
    // SAFETY: plain call; the result is checked.
    Owned::new(unsafe { OpenProcess(access, 0, pid) })
}

fn filetime(time: FILETIME) -> u64 {
    (u64::from(time.dwHighDateTime) << 32) | u64::from(time.dwLowDateTime)
}

/// The creation time of a running process, `None` once it has exited.
fn started(process: &Owned) -> Option<StartTime> {
    let mut code = 0u32;
    // SAFETY: `code` is a valid out pointer. (A process that exited with code
    // 259, STILL_ACTIVE's value, would count as running: Windows cannot tell.)
    if unsafe { GetExitCodeProcess(process.0, &raw mut code) } == 0 || code != STILL_ACTIVE.cast_unsigned() {
        return None;
    }
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: four valid out pointers.
    let ok = unsafe {
        GetProcessTimes(
            process.0,
            &raw mut created,
            &raw mut exited,
            &raw mut kernel,
            &raw mut user,
        )
    };
    (ok != 0).then(|| StartTime(filetime(created)))
}

/// `(pid, parent)` of every process, from one Toolhelp32 snapshot.
fn toolhelp() -> Vec<(u32, u32)> {
    // SAFETY: plain call; the result is checked.
    let Some(snapshot) = Owned::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // SAFETY: PROCESSENTRY32W is plain data; all zeroes is valid.
    let mut row: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    row.dwSize = u32::try_from(std::mem::size_of::<PROCESSENTRY32W>()).expect("small struct");
    // SAFETY: `row` is a valid, sized entry.
    let mut more = unsafe { Process32FirstW(snapshot.0, &raw mut row) } != 0;
    while more {
        out.push((row.th32ProcessID, row.th32ParentProcessID));
        // SAFETY: as above.
        more = unsafe { Process32NextW(snapshot.0, &raw mut row) } != 0;
    }
    out
}

pub(super) fn snapshot() -> Vec<Entry> {
    toolhelp()
        .into_iter()
        .filter(|(pid, _)| *pid != 0)
        .filter_map(|(pid, parent)| {
            let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
            Some(Entry {
                pid,
                parent: (parent != 0).then_some(parent),
                started: started(&process)?,
                group: None,
                detached: false,
            })
        })
        .collect()
}

pub(super) fn start_time(pid: u32) -> Option<StartTime> {
    started(&open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?)
}

pub(super) fn entry(pid: u32) -> Option<Entry> {
    let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    let started = started(&process)?;
    let parent = toolhelp()
        .into_iter()
        .find(|(p, _)| *p == pid)
        .map(|(_, parent)| parent);
    Some(Entry {
        pid,
        parent: parent.filter(|p| *p != 0),
        started,
        group: None,
        detached: false,
    })
}

/// `PROCESS_BASIC_INFORMATION`, declared here for its one field in use.
#[repr(C)]
struct BasicInformation {
    exit_status: i32,
    peb: usize,
    affinity_mask: usize,
    base_priority: i32,
    unique_process_id: usize,
    inherited_from: usize,
}

/// Offsets in a 64-bit process: `PEB.ProcessParameters`, and in
/// `RTL_USER_PROCESS_PARAMETERS` the `UNICODE_STRING`s `CurrentDirectory.DosPath`
/// and `CommandLine`.
const PEB_PROCESS_PARAMETERS: usize = 0x20;
const PARAMETERS_CURRENT_DIRECTORY: usize = 0x38;
const PARAMETERS_COMMAND_LINE: usize = 0x70;
/// The longest string read from another process (a command line is at most
/// 32 767 UTF-16 units).
const MAX_PEB_STRING: usize = 65_536;

fn read_memory(process: &Owned, address: usize, buffer: &mut [u8]) -> Option<()> {
    let mut read = 0usize;
    // SAFETY: `buffer` is valid for its length; the address is in the target.
    let ok = unsafe {
        ReadProcessMemory(
            process.0,
            address as *const c_void,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &raw mut read,
        )
    };
    (ok != 0 && read == buffer.len()).then_some(())
}

fn read_usize(process: &Owned, address: usize) -> Option<usize> {
    let mut bytes = [0u8; 8];
    read_memory(process, address, &mut bytes)?;
    Some(usize::from_le_bytes(bytes))
}

/// A `UNICODE_STRING` of another process: length (bytes), capacity, buffer.
fn read_unicode_string(process: &Owned, address: usize) -> Option<Vec<u16>> {
    let mut header = [0u8; 16];
    read_memory(process, address, &mut header)?;
    let length = usize::from(u16::from_le_bytes([header[0], header[1]]));
    let buffer = usize::from_le_bytes(header[8..16].try_into().ok()?);
    if length == 0 || buffer == 0 {
        return Some(Vec::new());
    }
    let mut bytes = vec![0u8; length.min(MAX_PEB_STRING)];
    read_memory(process, buffer, &mut bytes)?;
    Some(
        bytes
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect(),
    )
}

/// The command line and working directory of `pid`, read from its PEB.
fn peb_strings(pid: u32) -> Option<(Vec<u16>, Vec<u16>)> {
    let process = open(pid, PROCESS_QUERY_INFORMATION | PROCESS_VM_READ)?;
    let mut info = BasicInformation {
        exit_status: 0,
        peb: 0,
        affinity_mask: 0,
        base_priority: 0,
        unique_process_id: 0,
        inherited_from: 0,
    };
    let mut length = 0u32;
    // SAFETY: `info` is a PROCESS_BASIC_INFORMATION of the size passed.
    let status = unsafe {
        windows_sys::Wdk::System::Threading::NtQueryInformationProcess(
            process.0,
            windows_sys::Wdk::System::Threading::ProcessBasicInformation,
            (&raw mut info).cast(),
            u32::try_from(std::mem::size_of::<BasicInformation>()).expect("small struct"),
            &raw mut length,
        )
    };
    if status != 0 || info.peb == 0 {
        return None;
    }
    let parameters = read_usize(&process, info.peb + PEB_PROCESS_PARAMETERS)?;
    let command_line = read_unicode_string(&process, parameters + PARAMETERS_COMMAND_LINE)?;
    let directory = read_unicode_string(&process, parameters + PARAMETERS_CURRENT_DIRECTORY)?;
    Some((command_line, directory))
}

/// Splits a command line by the rules every C runtime uses.
fn split(command_line: &[u16]) -> Vec<String> {
    let mut wide: Vec<u16> = command_line.to_vec();
    wide.push(0);
    let mut count = 0i32;
    // SAFETY: `wide` is NUL-terminated; the result is freed with LocalFree.
    let list = unsafe { windows_sys::Win32::UI::Shell::CommandLineToArgvW(wide.as_ptr(), &raw mut count) };
    if list.is_null() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for index in 0..usize::try_from(count).unwrap_or(0) {
        // SAFETY: `list` holds `count` NUL-terminated strings.
        let arg = unsafe { *list.add(index) };
        let mut end = 0;
        // SAFETY: as above: read up to the terminator.
        while unsafe { *arg.add(end) } != 0 {
            end += 1;
        }
        // SAFETY: `end` units are initialised.
        out.push(String::from_utf16_lossy(unsafe {
            std::slice::from_raw_parts(arg, end)
        }));
    }
    // SAFETY: allocated by CommandLineToArgvW.
    unsafe { LocalFree(list.cast()) };
    out
}

pub(super) fn argv(pid: u32) -> Option<Vec<String>> {
    let (command_line, _) = peb_strings(pid)?;
    Some(split(&command_line))
}

pub(super) fn cwd(pid: u32) -> Option<PathBuf> {
    let (_, directory) = peb_strings(pid)?;
    (!directory.is_empty()).then(|| PathBuf::from(String::from_utf16_lossy(&directory)))
}

#[expect(
    clippy::unnecessary_wraps,
    reason = "the Linux and macOS clocks can fail to read"
)]
pub(super) fn age(started: StartTime) -> Option<Duration> {
    let mut now = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    // SAFETY: a valid out pointer.
    unsafe { GetSystemTimeAsFileTime(&raw mut now) };
    Some(Duration::from_nanos(
        filetime(now).saturating_sub(started.0).saturating_mul(100),
    ))
}

pub(super) fn kill(process: Identity) -> bool {
    let Some(handle) = open(process.pid, PROCESS_TERMINATE | PROCESS_QUERY_LIMITED_INFORMATION) else {
        return false;
    };
    // Checked again on the handle: the pid cannot be reused while it is open.
    if started(&handle) != Some(process.started) {
        return false;
    }
    // SAFETY: an open handle with terminate access.
    unsafe { TerminateProcess(handle.0, 1) != 0 }
}

pub(super) fn interrupt(process: Identity) -> bool {
    kill(process)
}

pub(super) fn terminate(process: Identity) -> bool {
    kill(process)
}

pub(super) fn kill_group_led_by(leader: Identity) {
    if !leader.is_running() {
        return;
    }
    for member in leader.tree_in(&snapshot()) {
        member.kill();
    }
}

pub(super) fn running_as_root() -> bool {
    false
}

pub(super) fn prepare_group(command: &mut std::process::Command) {
    command.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
}

pub(super) fn die_with_spawning_thread(_command: &mut std::process::Command) -> bool {
    false
}

/// Resumes every thread of a process started suspended.
fn resume(pid: u32) {
    // SAFETY: plain call; the result is checked.
    let Some(snapshot) = Owned::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) }) else {
        return;
    };
    // SAFETY: THREADENTRY32 is plain data; all zeroes is valid.
    let mut row: THREADENTRY32 = unsafe { std::mem::zeroed() };
    row.dwSize = u32::try_from(std::mem::size_of::<THREADENTRY32>()).expect("small struct");
    // SAFETY: `row` is a valid, sized entry.
    let mut more = unsafe { Thread32First(snapshot.0, &raw mut row) } != 0;
    while more {
        if row.th32OwnerProcessID == pid {
            // SAFETY: plain call; the result is checked.
            if let Some(thread) =
                Owned::new(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, row.th32ThreadID) })
            {
                // SAFETY: an open thread handle with resume access.
                unsafe { ResumeThread(thread.0) };
            }
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot.0, &raw mut row) } != 0;
    }
}

/// A Job Object that kills its members when its last handle closes: ours, held
/// by no one else, so when dshkit exits or is killed the group dies with it.
#[derive(Debug)]
pub(super) struct Group {
    leader: u32,
    job: Owned,
}

/// The most members [`Group::members`] reads at once.
const MAX_MEMBERS: usize = 1024;

impl Group {
    pub(super) fn adopt(leader: u32) -> std::io::Result<Self> {
        let result = Self::make_job(leader);
        // Resumed whatever happened, so a failure leaves a running child the
        // caller can kill, not a frozen one.
        resume(leader);
        result
    }

    fn make_job(leader: u32) -> std::io::Result<Self> {
        // SAFETY: default security, unnamed; the result is checked.
        let job = Owned::new(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })
            .ok_or_else(std::io::Error::last_os_error)?;
        // SAFETY: plain data; all zeroes is valid.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: `limits` is the structure named by the class, of the size passed.
        let ok = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                u32::try_from(std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>())
                    .expect("small struct"),
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        let process =
            open(leader, PROCESS_SET_QUOTA | PROCESS_TERMINATE).ok_or_else(std::io::Error::last_os_error)?;
        // SAFETY: two open handles with the access the call needs.
        if unsafe { AssignProcessToJobObject(job.0, process.0) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { leader, job })
    }

    pub(super) fn leader(&self) -> u32 {
        self.leader
    }

    pub(super) fn members(&self) -> Vec<u32> {
        // The list header (two u32) then one usize per pid.
        let mut buffer = vec![0usize; 1 + MAX_MEMBERS];
        let mut length = 0u32;
        // SAFETY: `buffer` is a JOBOBJECT_BASIC_PROCESS_ID_LIST of the size passed.
        let ok = unsafe {
            QueryInformationJobObject(
                self.job.0,
                JobObjectBasicProcessIdList,
                buffer.as_mut_ptr().cast(),
                u32::try_from(buffer.len() * std::mem::size_of::<usize>()).expect("small buffer"),
                &raw mut length,
            )
        };
        if ok == 0 {
            return Vec::new();
        }
        let listed = (buffer[0] >> 32).min(MAX_MEMBERS);
        buffer[1..=listed]
            .iter()
            .filter_map(|pid| u32::try_from(*pid).ok())
            .collect()
    }

    pub(super) fn interrupt(&self) -> bool {
        self.ask_or_kill()
    }

    pub(super) fn terminate(&self) -> bool {
        self.ask_or_kill()
    }

    /// Ctrl-Break to the group, as a person at its console would stop it (Node
    /// raises SIGBREAK): the leader leads a console process group of its own
    /// ([`prepare_group`]). It reaches only processes on dshkit's console, so
    /// when the leader is not on it (dshkit has no console, or Windows gave the
    /// child its own) nothing can ask: the job is terminated instead and the
    /// answer is `false`.
    fn ask_or_kill(&self) -> bool {
        // SAFETY: plain call on the leader's group id; the result is checked.
        if on_our_console(self.leader)
            && unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.leader) } != 0
        {
            return true;
        }
        self.kill();
        false
    }

    pub(super) fn kill(&self) {
        // SAFETY: an open job handle.
        unsafe { TerminateJobObject(self.job.0, 1) };
    }
}

/// Whether `pid` is attached to dshkit's console (none: not attached).
fn on_our_console(pid: u32) -> bool {
    let mut attached = vec![0u32; 64];
    loop {
        let room = u32::try_from(attached.len()).unwrap_or(u32::MAX);
        // SAFETY: `attached` is writable for `room` pids.
        let count = unsafe { GetConsoleProcessList(attached.as_mut_ptr(), room) } as usize;
        if count == 0 {
            return false;
        }
        if count <= attached.len() {
            return attached[..count].contains(&pid);
        }
        // More processes share the console than fit: the count says how many.
        attached.resize(count + 16, 0);
    }
}

/// `(port, pid)` of every listening TCP socket held by one of `pids` (all
/// processes when `None`), IPv4 and IPv6.
pub(super) fn listeners(pids: Option<&[u32]>) -> Vec<(u16, u32)> {
    use windows_sys::Win32::NetworkManagement::IpHelper::{
        GetExtendedTcpTable, MIB_TCP6ROW_OWNER_PID, MIB_TCPROW_OWNER_PID, TCP_TABLE_OWNER_PID_LISTENER,
    };
    use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        let mut size = 0u32;
        // SAFETY: a null table asks for the size.
        unsafe {
            GetExtendedTcpTable(
                std::ptr::null_mut(),
                &raw mut size,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            )
        };
        // Room for sockets opened since; u64s keep the rows aligned.
        let mut table = vec![0u64; (size as usize + 4096) / 8 + 1];
        size = u32::try_from(table.len() * 8).unwrap_or(u32::MAX);
        // SAFETY: `table` is writable for `size` bytes.
        let status = unsafe {
            GetExtendedTcpTable(
                table.as_mut_ptr().cast(),
                &raw mut size,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            )
        };
        if status != 0 {
            continue;
        }
        let base = table.as_ptr().cast::<u8>();
        // SAFETY: the table starts with its row count.
        let count = unsafe { base.cast::<u32>().read_unaligned() } as usize;
        for index in 0..count {
            // Rows start after the count, at the row type's alignment (4).
            let (port, pid) = if family == AF_INET {
                // SAFETY: `count` rows follow, inside the buffer the call filled.
                let row = unsafe {
                    base.add(4 + index * std::mem::size_of::<MIB_TCPROW_OWNER_PID>())
                        .cast::<MIB_TCPROW_OWNER_PID>()
                        .read_unaligned()
                };
                (row.dwLocalPort, row.dwOwningPid)
            } else {
                // SAFETY: as above.
                let row = unsafe {
                    base.add(4 + index * std::mem::size_of::<MIB_TCP6ROW_OWNER_PID>())
                        .cast::<MIB_TCP6ROW_OWNER_PID>()
                        .read_unaligned()
                };
                (row.dwLocalPort, row.dwOwningPid)
            };
            // The port is in network order in the low 16 bits.
            let port = u16::from_be(u16::try_from(port & 0xffff).unwrap_or(0));
            if pids.is_none_or(|p| p.contains(&pid)) {
                out.push((port, pid));
            }
        }
    }
    out
}
