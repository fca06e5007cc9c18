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

/// Audits the table. With `kill_stray`, kills only (a) `leaked` instances of this
/// run (pid and start time both match) and (b) smoke instances older than
/// `stray_age`, each verified against a fresh read. Hosts are never touched.
pub fn audit(launcher_script: &Path, leaked: &[(u32, u64)], kill_stray: bool, stray_age: Duration) -> Check {
    let id = "leftover_audit";
    let name = "Leftover DSH instances";
    let found = find(launcher_script);
    let mut evidence: Vec<String> = found
        .iter()
        .map(|p| format!("pid {} {:?} {}", p.pid, p.class, p.args.join(" ")))
        .collect();
    let strays: Vec<&DshProcess> = found
        .iter()
        .filter(|p| {
            leaked.contains(&(p.pid, p.start_ticks))
                || (p.class == Class::Smoke && age(p.start_ticks).is_some_and(|a| a >= stray_age))
        })
        .collect();
    if strays.is_empty() {
        let hosts = found.iter().filter(|p| p.class == Class::Host).count();
        return Check::new(
            id,
            name,
            Status::Pass,
            format!("{} DSH process(es), {hosts} host(s), no strays", found.len()),
        )
        .with_evidence(evidence);
    }
    if !kill_stray {
        return Check::new(
            id,
            name,
            Status::Warn,
            format!(
                "{} stray DSH instance(s); run again with killStray to remove them",
                strays.len()
            ),
        )
        .with_evidence(evidence);
    }
    let mut survivors = Vec::new();
    for stray in &strays {
        if let Some(pid) = i32::try_from(stray.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        // A fresh read decides: gone, or the pid now belongs to another process.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while procs::alive(stray.pid)
            && procs::start_ticks(stray.pid) == Some(stray.start_ticks)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        if procs::alive(stray.pid) && procs::start_ticks(stray.pid) == Some(stray.start_ticks) {
            survivors.push(stray.pid);
        }
        evidence.push(format!("killed stray pid {} ({:?})", stray.pid, stray.class));
    }
    if survivors.is_empty() {
        Check::new(
            id,
            name,
            Status::Pass,
            format!("killed {} stray instance(s), verified gone", strays.len()),
        )
        .with_evidence(evidence)
    } else {
        Check::new(
            id,
            name,
            Status::Fail,
            format!("{} stray instance(s) survived SIGKILL", survivors.len()),
        )
        .with_evidence(evidence)
    }
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
