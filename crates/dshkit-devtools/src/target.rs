//! Debug targets: the live collectors the registry lists, each with its status,
//! safe metadata (title, versions) and the capabilities it offers.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use dshkit_os::process::{Identity, StartClaim, StartTime};

use serde::Serialize;

use crate::error::DebugError;
use crate::limits::MAX_TARGETS;

/// What every usable target offers.
const BASE_CAPABILITIES: [&str; 5] = [
    "target-discovery",
    "debug-session",
    "runtime-snapshot",
    "runtime-wait",
    "checkpoint-compare",
];
/// What a target offers when its DSH enables experiments.
const PROFILER_CAPABILITY: &str = "waterfall-profiler";

/// A process with a collector, as the registry (and an attached channel) shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// `<pid>-<start time>-<collector epoch>`: a restarted process, or a collector
    /// started again inside the same process, is a new target.
    pub id: String,
    pub pid: u32,
    /// When the collector started (ms since the Unix epoch).
    pub epoch: u64,
    pub label: String,
    /// `live`, `stale` (a target this core attached that is gone: see
    /// `reason`) or `incompatible` (see `problem`).
    pub status: &'static str,
    /// Why a stale target is gone: `target-replaced`, `target-disposed` or `host-disposed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The live target that replaced a stale one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// A name for people: the label and the pid, nothing else.
    pub title: String,
    pub version: TargetVersion,
    /// What a client may do with it (`waterfall-profiler` only where DSH
    /// enables experiments, as far as this core knows).
    pub capabilities: Vec<&'static str>,
    /// The line protocol its collector announces in the registry (`None`: it
    /// announces none).
    pub protocol: Option<u64>,
    /// Why this core cannot use the target, when it cannot (a collector of
    /// another protocol version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    #[serde(skip)]
    pub socket: PathBuf,
    /// Whether its DSH enables experiments (`None`: not known yet).
    #[serde(skip)]
    pub experiments: Option<bool>,
}

/// The versions a target names: its collector's protocol and, once a channel
/// said so, its Node.js version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetVersion {
    pub collector_protocol: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Target {
    /// What the target offers in its status, with experiments as far as known.
    fn capabilities(status: &str, experiments: Option<bool>) -> Vec<&'static str> {
        match status {
            "live" => {
                let mut all = BASE_CAPABILITIES.to_vec();
                if experiments == Some(true) {
                    all.push(PROFILER_CAPABILITY);
                }
                all
            }
            _ => vec![BASE_CAPABILITIES[0]],
        }
    }

    /// The target with what its channel's `hello` said (experiments, Node version).
    pub(crate) fn with_hello(mut self, experiments: Option<bool>, node: Option<String>) -> Self {
        self.experiments = experiments.or(self.experiments);
        self.version.node = node.or(self.version.node);
        self.capabilities = Self::capabilities(self.status, self.experiments);
        self
    }

    /// The target marked gone, with why and its replacement.
    pub(crate) fn stale(mut self, reason: &'static str, replacement: Option<String>) -> Self {
        self.status = "stale";
        self.reason = Some(reason);
        self.replacement = replacement;
        self.capabilities = Self::capabilities(self.status, self.experiments);
        self
    }
}

/// Reads the registry: one JSON file per live collector. Files of processes that
/// are gone are removed.
pub(crate) fn discover(registry: &Path) -> Vec<Target> {
    let Ok(dir) = std::fs::read_dir(registry.join("targets")) else {
        return Vec::new();
    };
    let mut targets = Vec::new();
    for entry in dir.flatten().take(MAX_TARGETS) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(pid) = record["pid"].as_u64().and_then(|p| u32::try_from(p).ok()) else {
            continue;
        };
        let Some(process) = collector_process(pid, &record) else {
            tracing::debug!(
                pid,
                "pruned the registry file of a collector whose process is gone"
            );
            let _ = std::fs::remove_file(&path);
            continue;
        };
        let Some(socket) = record["socket"].as_str() else {
            continue;
        };
        let epoch = record["epoch"].as_u64().unwrap_or(0);
        let id = format!("{pid}-{}-{epoch}", process.started.0);
        let protocol = record["protocol"].as_u64();
        let problem = DebugError::protocol_mismatch(&id, protocol).map(|e| e.to_string());
        let status = if problem.is_some() { "incompatible" } else { "live" };
        let label = record["label"].as_str().unwrap_or("cordis").to_owned();
        let experiments = record["experiments"].as_bool();
        targets.push(Target {
            title: format!("{label} (pid {pid})"),
            capabilities: Target::capabilities(status, experiments),
            problem,
            id,
            pid,
            epoch,
            label,
            status,
            reason: None,
            replacement: None,
            version: TargetVersion {
                collector_protocol: protocol,
                node: None,
            },
            protocol,
            socket: PathBuf::from(socket),
            experiments,
        });
    }
    targets.sort_by(|a, b| a.id.cmp(&b.id));
    targets
}

/// The process of the collector whose registry file is `record`, when it still
/// runs and is not a later process given its pid. What the collector said of
/// its process's start: `startTime`, the platform's own record where Node can
/// read it (Linux), else `startedAtMs`, else its `epoch` (both ms since the
/// Unix epoch, on the wall clock). The rule is `dshkit-os`'s
/// ([`StartClaim::is_made_by`]).
fn collector_process(pid: u32, record: &serde_json::Value) -> Option<Identity> {
    let ms = |key: &str| record[key].as_u64().filter(|ms| *ms > 0);
    let claim = StartClaim {
        started: record["startTime"].as_u64().map(StartTime),
        at: ms("startedAtMs")
            .or_else(|| ms("epoch"))
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
    };
    Identity::claimed(pid, &claim)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    fn ms(at: SystemTime) -> u64 {
        u64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
    }

    /// A registry holding one collector's file, as the collector writes it
    /// (`startTime` only where Node can read it).
    fn registry_with(
        pid: u32,
        start_time: Option<u64>,
        started_at_ms: u64,
        epoch: u64,
    ) -> (tempfile::TempDir, PathBuf) {
        let registry = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(registry.path().join("targets")).unwrap();
        let file = registry.path().join(format!("targets/{pid}.json"));
        let record = serde_json::json!({
            "protocol": crate::link::COLLECTOR_PROTOCOL,
            "pid": pid,
            "socket": "/nowhere/c.sock",
            "label": "unit",
            "epoch": epoch,
            "startedAtMs": started_at_ms,
            "startTime": start_time,
        });
        std::fs::write(&file, record.to_string()).unwrap();
        (registry, file)
    }

    #[test]
    fn a_live_collector_process_is_a_target_named_by_pid_start_and_epoch() {
        let me = Identity::of(std::process::id()).unwrap();
        let started = ms(me.started_at().unwrap());
        // Node's own account of its start comes later than the platform's.
        for start_time in [None, Some(me.started.0)] {
            let (registry, file) = registry_with(me.pid, start_time, started + 150, started + 900);
            let [target] = <[_; 1]>::try_from(discover(registry.path())).unwrap();
            assert_eq!(
                target.id,
                format!("{}-{}-{}", me.pid, me.started.0, started + 900)
            );
            assert_eq!(target.status, "live");
            assert!(file.is_file(), "a live target's file stays");
        }
    }

    #[test]
    fn a_reused_pid_is_not_the_collectors_process_and_its_file_is_removed() {
        // The collector's process said it started an hour before the process
        // now running as its pid: that one took the pid after it died.
        let me = Identity::of(std::process::id()).unwrap();
        let before = ms(me.started_at().unwrap()) - 3_600_000;
        let (registry, file) = registry_with(me.pid, None, before, before + 500);
        assert!(discover(registry.path()).is_empty());
        assert!(!file.exists(), "the reused pid's registry file is removed");
        // With no `startedAtMs`, the epoch bounds the start the same way.
        let (registry, file) = registry_with(me.pid, None, 0, before + 500);
        assert!(discover(registry.path()).is_empty());
        assert!(!file.exists());
        // The platform's record, where the collector wrote it, is compared
        // exactly: one tick off is another process, whatever the wall clock says.
        let now = ms(SystemTime::now());
        let (registry, file) = registry_with(me.pid, Some(me.started.0 - 1), now, now);
        assert!(discover(registry.path()).is_empty());
        assert!(!file.exists());
    }

    #[test]
    fn a_dead_processs_file_is_removed() {
        let before = ms(SystemTime::now());
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let (registry, file) = registry_with(pid, None, before, before);
        assert!(discover(registry.path()).is_empty());
        assert!(!file.exists(), "the dead process's registry file is removed");
    }

    #[test]
    fn capabilities_follow_the_status_and_the_profiler_needs_experiments() {
        let live = Target::capabilities("live", None);
        assert_eq!(live, BASE_CAPABILITIES);
        assert_eq!(
            Target::capabilities("live", Some(true)).last(),
            Some(&"waterfall-profiler")
        );
        assert!(!Target::capabilities("live", Some(false)).contains(&"waterfall-profiler"));
        for status in ["stale", "incompatible"] {
            assert_eq!(Target::capabilities(status, Some(true)), ["target-discovery"]);
        }
    }
}
