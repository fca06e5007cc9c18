//! The platform's half of the process layer, chosen at compile time: `/proc`
//! (Linux) or libproc (macOS) with what Unix shares, or Toolhelp32 with Job
//! Objects (Windows).

#[cfg(target_os = "linux")]
pub(super) use super::linux::*;
#[cfg(target_os = "macos")]
pub(super) use super::macos::*;
#[cfg(unix)]
pub(super) use super::unix::{
    Group, interrupt, kill, kill_group_led_by, prepare_group, running_as_root, terminate,
};
#[cfg(windows)]
pub(super) use super::windows::*;
