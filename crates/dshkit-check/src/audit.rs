//! The leftover-instance audit: DSH processes found by identity in the process
//! table, classified, and (when asked) the strays killed and the kills verified.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::procs;
use crate::report::{Check, Status};

/// Pre-existing smoke instances younger than this are left alone by `killStray`.
pub const DEFAULT_STRAY_AGE: Duration = Duration::from_mins(10);

/// What a DSH process is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// `--port 0`: a smoke or check instance.
    Smoke,
    /// A user's running DSH: never touched.
    Host,
    /// A short command: `--dump-config`, `--help`, `plugin …`.
    Transient,
}

/// One DSH process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DshProcess {
    pub pid: u32,
    pub start_ticks: u64,
    pub class: Class,
    pub args: Vec<String>,
}

/// DSH processes: a `node` executable whose first argument resolves to DSH's
/// launcher script. A command line that merely mentions "dsh" is not one.
pub fn find(launcher_script: &Path) -> Vec<DshProcess> {
    procs::all()
        .into_iter()
        .filter_map(|pid| identify(pid, launcher_script))
        .collect()
}

fn identify(pid: u32, launcher_script: &Path) -> Option<DshProcess> {
    if !procs::alive(pid) {
        return None;
    }
    let argv = procs::argv(pid)?;
    let exe = Path::new(argv.first()?).file_name()?.to_str()?;
    if !(exe == "node" || exe.starts_with("node")) {
        return None;
    }
    let script = Path::new(argv.get(1)?);
    let script = if script.is_absolute() {
        script.to_owned()
    } else {
        procs::cwd(pid)?.join(script)
    };
    if std::fs::canonicalize(&script).ok()? != launcher_script {
        return None;
    }
    let dsh_args: Vec<String> = argv[2..].to_vec();
    Some(DshProcess {
        pid,
        start_ticks: procs::start_ticks(pid)?,
        class: classify(&dsh_args),
        args: dsh_args,
    })
}

/// Classifies DSH arguments.
pub fn classify(args: &[String]) -> Class {
    let transient = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "--dump-config" | "--dump-default-config" | "--help" | "-h" | "--version" | "-V"
        )
    }) || args
        .iter()
        .find(|a| !a.starts_with('-'))
        .is_some_and(|a| a == "plugin")
        && !args.windows(2).any(|w| w[0] == "--profile" && w[1] == "plugin");
    if transient {
        return Class::Transient;
    }
    if args.windows(2).any(|w| w[0] == "--port" && w[1] == "0") || args.iter().any(|a| a == "--port=0") {
        return Class::Smoke;
    }
    Class::Host
}

fn age(start_ticks: u64) -> Option<Duration> {
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let hz = rustix::param::clock_ticks_per_second();
    #[expect(
        clippy::cast_precision_loss,
        reason = "ticks since boot fit an f64 exactly for centuries"
    )]
    let started = start_ticks as f64 / hz as f64;
    Some(Duration::from_secs_f64((uptime - started).max(0.0)))
}

/// Kills `root`'s whole process tree with SIGKILL and waits (bounded) until a
/// fresh read shows every member gone; returns the members that survived.
fn kill_tree(root: u32, root_ticks: u64) -> Vec<u32> {
    if !procs::same_alive(root, root_ticks) {
        return Vec::new();
    }
    let members = procs::tree(root);
    for (pid, ticks) in &members {
        if procs::same_alive(*pid, *ticks)
            && let Some(pid) = i32::try_from(*pid).ok().and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    let deadline = std::time::Instant::now() + KILL_PROOF_TIMEOUT;
    let mut left: Vec<(u32, u64)> = members;
    loop {
        left.retain(|(pid, ticks)| procs::same_alive(*pid, *ticks));
        if left.is_empty() || std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    left.into_iter().map(|(pid, _)| pid).collect()
}

/// How long a killed tree may take to disappear from the process table.
pub const KILL_PROOF_TIMEOUT: Duration = Duration::from_secs(5);

/// Audits the table. Instances `leaked` by this run (pid and start time both
/// match) are always killed: this run started them. With `kill_stray`, smoke
/// instances older than `stray_age` are killed too. Every kill takes the whole
/// process tree and is verified against a fresh read. Hosts are never touched;
/// younger smoke instances are reported and left alone.
pub fn audit(launcher_script: &Path, leaked: &[(u32, u64)], kill_stray: bool, stray_age: Duration) -> Check {
    let id = "leftover_audit";
    let name = "Leftover DSH instances";
    let found = find(launcher_script);
    let mut evidence: Vec<String> = found
        .iter()
        .map(|p| format!("pid {} {:?} {}", p.pid, p.class, p.args.join(" ")))
        .collect();
    let is_leaked = |p: &DshProcess| leaked.contains(&(p.pid, p.start_ticks));
    let is_old_smoke =
        |p: &DshProcess| p.class == Class::Smoke && age(p.start_ticks).is_some_and(|a| a >= stray_age);
    let ours: Vec<&DshProcess> = found.iter().filter(|p| is_leaked(p)).collect();
    let old: Vec<&DshProcess> = found
        .iter()
        .filter(|p| !is_leaked(p) && is_old_smoke(p))
        .collect();
    let young = found
        .iter()
        .filter(|p| p.class == Class::Smoke && !is_leaked(p) && !is_old_smoke(p))
        .count();
    let hosts = found.iter().filter(|p| p.class == Class::Host).count();
    let young_note = if young > 0 {
        format!(
            "; {young} smoke instance(s) younger than {} min left alone (another check may be running; they count as strays at that age)",
            stray_age.as_secs() / 60
        )
    } else {
        String::new()
    };
    let to_kill: Vec<&DshProcess> = if kill_stray {
        ours.iter().chain(&old).copied().collect()
    } else {
        ours.clone()
    };
    let mut survivors = Vec::new();
    for stray in &to_kill {
        let left = kill_tree(stray.pid, stray.start_ticks);
        evidence.push(format!(
            "killed the process tree of {} pid {} ({:?}){}",
            if is_leaked(stray) { "leaked" } else { "stray" },
            stray.pid,
            stray.class,
            if left.is_empty() {
                ", verified gone".to_owned()
            } else {
                format!(", survivors {left:?}")
            }
        ));
        survivors.extend(left);
    }
    let (status, detail) = if !survivors.is_empty() {
        (
            Status::Fail,
            format!("{} process(es) survived SIGKILL of their tree", survivors.len()),
        )
    } else if !ours.is_empty() {
        (
            Status::Fail,
            format!(
                "{} instance(s) leaked by this run: killed with their process tree and verified gone{young_note}",
                ours.len()
            ),
        )
    } else if !old.is_empty() && !kill_stray {
        (
            Status::Warn,
            format!(
                "{} stray DSH instance(s); run again with killStray to remove them{young_note}",
                old.len()
            ),
        )
    } else if !old.is_empty() {
        (
            Status::Pass,
            format!(
                "killed {} stray instance(s) with their process trees, verified gone{young_note}",
                old.len()
            ),
        )
    } else {
        (
            Status::Pass,
            format!(
                "{} DSH process(es), {hosts} host(s), no strays{young_note}",
                found.len()
            ),
        )
    };
    Check::new(id, name, status, detail).with_evidence(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn instances_are_classified_by_their_arguments() {
        assert_eq!(
            classify(&args(&["--profile", "web", "--port", "0", "--no-open"])),
            Class::Smoke
        );
        assert_eq!(classify(&args(&["web", "--port=0"])), Class::Smoke);
        assert_eq!(classify(&args(&["web"])), Class::Host);
        assert_eq!(
            classify(&args(&["--profile", "web", "--port", "3000"])),
            Class::Host
        );
        assert_eq!(
            classify(&args(&["--profile", "web", "--dump-config"])),
            Class::Transient
        );
        assert_eq!(
            classify(&args(&["plugin", "--profile", "web", "add", "./x"])),
            Class::Transient
        );
        assert_eq!(classify(&args(&["--help"])), Class::Transient);
    }
}
