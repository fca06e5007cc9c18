//! The leftover-instance audit: DSH processes found by identity in the process
//! table, classified, and (when asked) the strays killed and the kills verified.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use dshkit_os::process::{Identity, StartTime};

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
    /// Its start time ([`StartTime`]'s platform clock): with the pid, its identity.
    pub start_ticks: u64,
    pub class: Class,
    pub args: Vec<String>,
}

/// DSH processes: a `node` executable whose first argument resolves to DSH's
/// launcher script. A command line that merely mentions "dsh" is not one.
pub fn find(launcher_script: &Path) -> Vec<DshProcess> {
    let launcher_script =
        dshkit_os::fs::canonicalize(launcher_script).unwrap_or_else(|_| launcher_script.to_owned());
    dshkit_os::process::snapshot()
        .into_iter()
        .filter_map(|entry| identify(entry.identity(), &launcher_script))
        .collect()
}

fn identify(process: Identity, launcher_script: &Path) -> Option<DshProcess> {
    let argv = dshkit_os::process::argv(process.pid)?;
    // `node`, `node22`, `node.exe`, `C:\Program Files\nodejs\node.exe`: the
    // last path component, whichever separator the platform uses.
    let exe = argv.first()?.rsplit(['/', '\\']).next()?;
    if !exe.starts_with("node") {
        return None;
    }
    let script = Path::new(argv.get(1)?);
    let script = if script.is_absolute() {
        script.to_owned()
    } else {
        dshkit_os::process::cwd(process.pid)?.join(script)
    };
    if dshkit_os::fs::canonicalize(&script).ok()? != launcher_script {
        return None;
    }
    // Still the same process: the arguments were not read from a reused pid.
    if !process.is_running() {
        return None;
    }
    let dsh_args: Vec<String> = argv[2..].to_vec();
    Some(DshProcess {
        pid: process.pid,
        start_ticks: process.started.0,
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

fn identity(process: &DshProcess) -> Identity {
    Identity {
        pid: process.pid,
        started: StartTime(process.start_ticks),
    }
}

/// Kills `root`'s whole process tree and waits (bounded) until a fresh read
/// shows every member gone; returns the members that survived.
fn kill_tree(root: Identity) -> Vec<u32> {
    dshkit_os::process::kill_tree(root, KILL_PROOF_TIMEOUT)
        .into_iter()
        .map(|p| p.pid)
        .collect()
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
        |p: &DshProcess| p.class == Class::Smoke && identity(p).age().is_some_and(|a| a >= stray_age);
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
        let left = kill_tree(identity(stray));
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
