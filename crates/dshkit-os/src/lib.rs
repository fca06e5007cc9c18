//! dshkit's platform layer. Everything that differs between Linux, macOS and
//! Windows lives here, behind one API per concern, so the rest of the workspace
//! has no `cfg(unix)` or `cfg(windows)` of its own:
//!
//! - [`process`]: the process table (pid, parent, start time, command line,
//!   working directory), identities safe against pid reuse, killing a whole
//!   tree and proving it gone, process groups bound to dshkit's lifetime, and
//!   the TCP ports processes listen on;
//! - [`browsers`]: where Chromium-family browsers are installed;
//! - [`error`]: the classes of failure every domain error answers in (not a
//!   platform difference: it is here because every crate depends on this one);
//! - [`fs`]: private files and directories, the executable bit, links, free
//!   space and positioned reads;
//! - [`local_socket`]: a Unix socket or a Windows named pipe to a local process;
//! - [`loopback`]: the Host and Origin names an HTTP server on loopback answers
//!   to (DNS rebinding); the same everywhere, here because the crates with such a
//!   server share no other crate;
//! - [`open`]: a file in the person's browser (`$BROWSER`, else the platform's opener);
//! - [`pipe`]: how much of what dshkit wrote its peer has not been read yet;
//! - [`signal`]: a person's request to stop (SIGINT/SIGTERM, Ctrl-C).
//!
//! | | Linux | macOS | Windows |
//! |---|---|---|---|
//! | process table | `/proc` | libproc, `sysctl(KERN_PROCARGS2)` | Toolhelp32, the PEB via `NtQueryInformationProcess` |
//! | start time | clock ticks since boot | µs since the epoch | `FILETIME` (100 ns since 1601) |
//! | group | process group | process group | Job Object |
//! | bound to dshkit | watchdog; Chromium also the parent-death signal | watchdog | the job kills on close |
//! | graceful stop | SIGINT, SIGTERM | SIGINT, SIGTERM | Ctrl-Break to a group on dshkit's console; else the job is terminated, and the caller is told |
//! | listening ports | `/proc/net/tcp*` and descriptors | `lsof` | `GetExtendedTcpTable` |

pub mod browsers;
pub mod error;
pub mod fs;
pub mod link;
pub mod local_socket;
pub mod loopback;
pub mod open;
pub mod pipe;
pub mod process;
pub mod signal;
