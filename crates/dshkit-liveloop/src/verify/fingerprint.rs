//! The source fingerprint: which version of the app a report speaks for. A report
//! whose fingerprint differs from the workspace's is stale.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::detect::PRUNED;

/// Most files fingerprinted; a larger tree is fingerprinted in part and says so.
pub const MAX_FILES: usize = 20_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fingerprint {
    /// SHA-256 over the sorted (path, size, modification time) of every source file.
    pub sha256: String,
    pub files: usize,
    pub truncated: bool,
}

/// Fingerprints the source files under `dir` (dependency and build folders skipped,
/// links never followed).
pub fn fingerprint(dir: &Path) -> Fingerprint {
    let mut entries: Vec<(String, u64, u128)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut truncated = false;
    'walk: while let Some(current) = stack.pop() {
        let Ok(children) = std::fs::read_dir(&current) else {
            continue;
        };
        for child in children.filter_map(Result::ok) {
            let Ok(kind) = child.file_type() else { continue };
            let name = child.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if !PRUNED.contains(&name.as_ref()) && !name.starts_with('.') {
                    stack.push(child.path());
                }
            } else if kind.is_file() {
                if entries.len() >= MAX_FILES {
                    truncated = true;
                    break 'walk;
                }
                let Ok(meta) = child.metadata() else { continue };
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                let path = child.path();
                let relative = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                entries.push((relative, meta.len(), modified));
            }
        }
    }
    entries.sort();
    let mut hasher = Sha256::new();
    for (path, size, modified) in &entries {
        hasher.update(format!("{path}\0{size}\0{modified}\n"));
    }
    Fingerprint {
        sha256: hex::encode(hasher.finalize()),
        files: entries.len(),
        truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_changes_the_fingerprint_and_dependencies_do_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "a").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        let first = fingerprint(dir.path());
        assert_eq!(first.files, 1);
        std::fs::write(dir.path().join("node_modules/x.js"), "x").unwrap();
        assert_eq!(fingerprint(dir.path()), first, "dependencies are not source");
        std::fs::write(dir.path().join("index.html"), "ab").unwrap();
        assert_ne!(fingerprint(dir.path()).sha256, first.sha256);
    }
}
