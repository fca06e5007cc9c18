//! dshkit's files as MCP resources: `dshkit://evidence/<area>/<session>/<file>`
//! for what verifications and previews wrote under the evidence root, and
//! `dshkit://cassettes/<path>` for Echo cassettes in the workspace. Paths stay
//! inside their root (no `..`, no symbolic links), sizes are capped, and text
//! passes the caller's redaction before it is shown.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{ResourceBody, ResourceRead, ResourceSpec, ToolFailure};

/// What text passes before it is shown: the caller's redaction.
pub type Redact<'a> = &'a dyn Fn(&str) -> Result<String, ToolFailure>;

pub const EVIDENCE: &str = "dshkit://evidence/";
pub const CASSETTES: &str = "dshkit://cassettes/";
/// Evidence files listed at most (retention keeps 50 sessions per area).
pub const MAX_LISTED_EVIDENCE: usize = 1000;
/// The largest resource read; a bigger one is refused with its path.
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;
/// Strings of a result scanned for evidence paths.
const MAX_SCANNED: usize = 256;

fn mime_of(path: &Path) -> Option<&'static str> {
    match path.extension()?.to_str()? {
        "png" => Some("image/png"),
        "json" => Some("application/json"),
        "html" => Some("text/html"),
        "jsonl" => Some("application/jsonl"),
        _ => None,
    }
}

/// A name part dshkit writes: letters, digits, `-`, `_` and one `.` before the extension.
fn plain(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 128
        && !part.starts_with('.')
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !part.contains("..")
}

fn spec(uri: String, path: &Path, mime_type: &'static str, size: u64) -> ResourceSpec {
    ResourceSpec {
        name: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        uri,
        mime_type,
        size: Some(size),
        description: None,
    }
}

/// The evidence files under `root` (`<area>/<session>/<file>`), newest sessions
/// first, at most [`MAX_LISTED_EVIDENCE`].
pub fn evidence(root: &Path) -> Vec<ResourceSpec> {
    let mut found = Vec::new();
    let real_dirs = |dir: &Path| -> Vec<(std::time::SystemTime, PathBuf)> {
        let mut dirs: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && plain(&e.file_name().to_string_lossy()))
            .map(|e| {
                let modified = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (modified, e.path())
            })
            .collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
        dirs
    };
    for (_, area) in real_dirs(root) {
        for (_, session) in real_dirs(&area) {
            for entry in std::fs::read_dir(&session)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
            {
                if found.len() >= MAX_LISTED_EVIDENCE {
                    return found;
                }
                let path = entry.path();
                let (Ok(kind), Some(mime)) = (entry.file_type(), mime_of(&path)) else {
                    continue;
                };
                if !kind.is_file() || !plain(&entry.file_name().to_string_lossy()) {
                    continue;
                }
                let Ok(relative) = path.strip_prefix(root) else {
                    continue;
                };
                let size = entry.metadata().map_or(0, |m| m.len());
                found.push(spec(
                    format!("{EVIDENCE}{}", relative.display()),
                    &path,
                    mime,
                    size,
                ));
            }
        }
    }
    found
}

/// The file `uri` names under `root`, refusing anything that leaves it.
fn resolve(root: &Path, relative: &str, depth: Option<usize>) -> Result<PathBuf, ToolFailure> {
    let parts: Vec<&str> = relative.split('/').collect();
    if depth.is_some_and(|d| parts.len() != d) || !parts.iter().all(|p| plain(p)) {
        return Err(ToolFailure::new(format!(
            "`{relative}` is not a path this server lists"
        )));
    }
    let mut path = root.to_owned();
    for part in parts {
        path.push(part);
        // Each component must be real: a symbolic link could lead out of the root.
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|_| ToolFailure::new(format!("no resource at `{relative}`")))?;
        if meta.file_type().is_symlink() {
            return Err(ToolFailure::new(format!("`{relative}` passes a symbolic link")));
        }
    }
    Ok(path)
}

fn read_file(path: &Path, redact: Redact<'_>) -> Result<ResourceRead, ToolFailure> {
    let mime_type = mime_of(path).ok_or_else(|| ToolFailure::new("not a file type this server serves"))?;
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    if size > MAX_READ_BYTES {
        return Err(ToolFailure::new(format!(
            "{} is {size} bytes, above the {MAX_READ_BYTES}-byte bound of a resource read; read it from disk",
            path.display()
        )));
    }
    let bytes =
        std::fs::read(path).map_err(|e| ToolFailure::new(format!("cannot read {}: {e}", path.display())))?;
    let body = if mime_type == "image/png" {
        ResourceBody::Blob(bytes)
    } else {
        ResourceBody::Text(redact(&String::from_utf8_lossy(&bytes))?)
    };
    Ok(ResourceRead { mime_type, body })
}

/// Reads an evidence URI (text redacted again).
pub fn read_evidence(root: &Path, uri: &str, redact: Redact<'_>) -> Result<ResourceRead, ToolFailure> {
    let relative = uri.strip_prefix(EVIDENCE).unwrap_or(uri);
    read_file(&resolve(root, relative, Some(3))?, redact)
}

/// The evidence files a result names (any string value that is a path under
/// `root`), as links.
pub fn evidence_links(root: &Path, structured: &Map<String, Value>) -> Vec<ResourceSpec> {
    let mut strings = Vec::new();
    let mut stack: Vec<&Value> = structured.values().collect();
    while let Some(value) = stack.pop() {
        if strings.len() >= MAX_SCANNED {
            break;
        }
        match value {
            Value::String(s) if s.starts_with('/') => strings.push(s.as_str()),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    let mut links: Vec<ResourceSpec> = strings
        .into_iter()
        .filter_map(|s| {
            let path = Path::new(s);
            let relative = path.strip_prefix(root).ok()?.to_str()?;
            let resolved = resolve(root, relative, Some(3)).ok()?;
            let meta = std::fs::metadata(&resolved)
                .ok()
                .filter(std::fs::Metadata::is_file)?;
            let mime = mime_of(&resolved)?;
            Some(spec(format!("{EVIDENCE}{relative}"), &resolved, mime, meta.len()))
        })
        .collect();
    links.sort_by(|a, b| a.uri.cmp(&b.uri));
    links.dedup_by(|a, b| a.uri == b.uri);
    links
}

/// Cassettes in `workspace` as resources.
pub fn cassettes(workspace: &Path, paths: Vec<PathBuf>) -> Vec<ResourceSpec> {
    let Ok(root) = dshkit_os::fs::canonicalize(workspace) else {
        return Vec::new();
    };
    paths
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(&root).ok()?.to_str()?.to_owned();
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            let mut spec = spec(format!("{CASSETTES}{relative}"), &path, "application/jsonl", size);
            spec.description = Some("an Echo cassette, redacted again when read".into());
            Some(spec)
        })
        .collect()
}

/// Reads a cassette URI: the cassette as JSONL, every line redacted again.
pub fn read_cassette(
    workspace: &Path,
    uri: &str,
    is_cassette: impl Fn(&Path) -> bool,
    redact: Redact<'_>,
) -> Result<ResourceRead, ToolFailure> {
    let root = dshkit_os::fs::canonicalize(workspace)
        .map_err(|e| ToolFailure::new(format!("the workspace is unusable: {e}")))?;
    let relative = uri.strip_prefix(CASSETTES).unwrap_or(uri);
    let path = resolve(&root, relative, None)?;
    if mime_of(&path) != Some("application/jsonl") || !is_cassette(&path) {
        return Err(ToolFailure::new(format!("`{relative}` is not a cassette")));
    }
    read_file(&path, redact)
}
