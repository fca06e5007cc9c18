//! Free space and writability of the evidence root.

use std::path::{Path, PathBuf};

use crate::dirs::Dir;
use crate::env::Environment;
use crate::vars;

/// Below this much free space the evidence root is reported as a warning (1 GiB).
pub const DEFAULT_MIN_FREE_BYTES: u64 = 1024 * 1024 * 1024;

/// The evidence root: `DSHKIT_EVIDENCE_ROOT`, else [`default_evidence_root`].
pub fn evidence_root(env: &Environment) -> Option<PathBuf> {
    env.path_var(vars::DSHKIT_EVIDENCE_ROOT)
        .or_else(|| default_evidence_root(env))
}

/// The evidence root when neither `DSHKIT_EVIDENCE_ROOT` nor the settings name
/// one: `evidence` in dshkit's state directory ([`crate::dirs`]: on Linux
/// `$XDG_STATE_HOME/dshkit/evidence`, else `~/.local/state/dshkit/evidence`; on
/// Windows `%LOCALAPPDATA%\\dshkit\\evidence`).
pub fn default_evidence_root(env: &Environment) -> Option<PathBuf> {
    env.dshkit_dir(Dir::State).map(|state| state.join("evidence"))
}

/// Space on the filesystem holding `path` (or its nearest existing ancestor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub available_bytes: u64,
    pub total_bytes: u64,
}

pub fn space(path: &Path) -> std::io::Result<Space> {
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no existing ancestor"))?;
    let (available_bytes, total_bytes) = dshkit_os::fs::space(existing)?;
    Ok(Space {
        available_bytes,
        total_bytes,
    })
}

/// Creates `root` if needed and proves it writable by writing and removing a probe
/// file in it.
pub fn ensure_writable(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    let probe = root.join(format!(".dshkit-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe")?;
    std::fs::remove_file(&probe)
}

/// Bytes as a short human string (`1.5 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[expect(clippy::cast_precision_loss, reason = "a display approximation")]
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_root_follows_the_documented_order() {
        let env = Environment::from_pairs_on(
            crate::Platform::Linux,
            [
                (vars::DSHKIT_EVIDENCE_ROOT, "/e"),
                (vars::XDG_STATE_HOME, "/s"),
                (vars::HOME, "/h"),
            ],
        );
        assert_eq!(evidence_root(&env), Some(PathBuf::from("/e")));
        let env = Environment::from_pairs_on(
            crate::Platform::Linux,
            [(vars::XDG_STATE_HOME, "/s"), (vars::HOME, "/h")],
        );
        assert_eq!(evidence_root(&env), Some(PathBuf::from("/s/dshkit/evidence")));
        let env = Environment::from_pairs_on(crate::Platform::Linux, [(vars::HOME, "/h")]);
        assert_eq!(
            evidence_root(&env),
            Some(PathBuf::from("/h/.local/state/dshkit/evidence"))
        );
    }

    #[test]
    fn space_of_a_missing_path_uses_its_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let space = space(&dir.path().join("not/yet/made")).unwrap();
        assert!(space.total_bytes > 0);
        assert!(space.available_bytes <= space.total_bytes);
    }

    #[test]
    fn writability_is_proven_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("evidence");
        ensure_writable(&root).unwrap();
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }
}
