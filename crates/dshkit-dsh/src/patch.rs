//! Adding dshkit's row to a profile's `cordis.patch.yml` without touching anything
//! else: the row lives in a marked block, the result is re-parsed and compared with
//! the original before it is written, the write is atomic and a backup is kept.

use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde_json::Value;

pub use crate::managed_row::ManagedRow;

/// First line of the block `dshkit dsh connect` manages.
pub const BLOCK_BEGIN: &str =
    "# >>> dshkit: managed by `dshkit dsh connect`; this block is rewritten on reconnect";
/// Last line of the managed block.
pub const BLOCK_END: &str = "# <<< dshkit";
/// Suffix of the backup kept next to the patch file before each change.
pub const BACKUP_SUFFIX: &str = ".dshkit-bak";
/// Largest patch file we will edit (4 MiB); a bigger one is not a hand-kept layer.
pub const MAX_PATCH_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    #[error(
        "{path} is not valid YAML at line {line}, column {column}: {message}; fix it (a backup is not needed: nothing was written)"
    )]
    Yaml {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path} is not valid YAML: {message}")]
    YamlNoPosition { path: PathBuf, message: String },
    #[error("{path} must be a YAML list of loader patches, but its top level is {found}")]
    NotAList { path: PathBuf, found: &'static str },
    #[error(
        "{path} is a flow-style list (`[...]`) with entries; dshkit only appends block-style entries. Convert it to block style, or paste the row from `dshkit dsh mcp-row` yourself"
    )]
    FlowStyle { path: PathBuf },
    #[error(
        "{path} has a damaged dshkit block (markers missing or repeated); remove the lines between `{BLOCK_BEGIN}` and `{BLOCK_END}` and run again"
    )]
    DamagedBlock { path: PathBuf },
    #[error(
        "{path} already has an entry with id `{id}` outside dshkit's block; remove it, or connect under another id"
    )]
    ForeignRow { path: PathBuf, id: String },
    #[error(
        "refusing to write {path}: the edited file would not parse to the original entries plus dshkit's row"
    )]
    Verification { path: PathBuf },
    #[error("{path} is larger than {MAX_PATCH_BYTES} bytes; refusing to edit it")]
    TooLarge { path: PathBuf },
    #[error(
        "profile directory {0} does not exist; create the profile first, e.g. `dsh web --dump-default-config`"
    )]
    NoProfile(PathBuf),
    #[error("failed to {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PatchError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Yaml { .. } | Self::YamlNoPosition { .. } => "PATCH_NOT_YAML",
            Self::NotAList { .. } => "PATCH_NOT_A_LIST",
            Self::FlowStyle { .. } => "PATCH_FLOW_STYLE",
            Self::DamagedBlock { .. } => "PATCH_DAMAGED_BLOCK",
            Self::ForeignRow { .. } => "PATCH_FOREIGN_ROW",
            Self::Verification { .. } => "PATCH_UNVERIFIED_EDIT",
            Self::TooLarge { .. } => "PATCH_TOO_LARGE",
            Self::NoProfile(_) => "NO_PROFILE",
            Self::Io { .. } => "PATCH_IO",
        }
    }

    /// A patch file or profile dshkit will not edit is refused; reading or
    /// writing it failing is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Io { .. } => ErrorClass::Runtime,
            _ => ErrorClass::Refused,
        }
    }
}

dshkit_os::classified!(PatchError);

/// What `connect` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The file did not exist and now holds only dshkit's block.
    Created,
    /// dshkit's block was added.
    Added,
    /// dshkit's block existed with other content and was rewritten.
    Updated,
    /// dshkit's block already said exactly this; nothing was written.
    Unchanged,
    /// dshkit's block was removed.
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectReport {
    pub outcome: Outcome,
    pub path: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<PathBuf>,
}

impl ConnectReport {
    /// The text `dshkit dsh connect` prints: what happened to the file, its
    /// backup, and how the tools of `server_name` appear once `profile` restarts.
    pub fn connect_text(&self, server_name: &str, profile: &str) -> String {
        let what = match self.outcome {
            Outcome::Created => "created with dshkit's row",
            Outcome::Added => "dshkit's row added",
            Outcome::Updated => "dshkit's row updated",
            Outcome::Unchanged => "already connected; nothing changed",
            Outcome::Removed => "dshkit's row removed",
        };
        let mut text = format!("{}: {what}\n", self.path.display());
        if let Some(backup) = &self.backup {
            text.push_str(&format!("backup of the previous file: {}\n", backup.display()));
        }
        text.push_str(&format!(
            "DSH's model sees the tools as mcp__{server_name}__<tool>; restart the `{profile}` profile to load them.\n"
        ));
        text
    }
}

/// Adds or refreshes `row` in the patch file of `profile_dir`.
pub fn connect(profile_dir: &Path, row: &dyn ManagedRow) -> Result<ConnectReport, PatchError> {
    edit(profile_dir, Some(row))
}

/// Removes dshkit's block from the patch file of `profile_dir`, leaving every other
/// line as it was.
pub fn disconnect(profile_dir: &Path) -> Result<ConnectReport, PatchError> {
    edit(profile_dir, None)
}

fn edit(profile_dir: &Path, row: Option<&dyn ManagedRow>) -> Result<ConnectReport, PatchError> {
    if !profile_dir.is_dir() {
        return Err(PatchError::NoProfile(profile_dir.to_owned()));
    }
    let path = profile_dir.join("cordis.patch.yml");
    let io = |action, source| PatchError::Io {
        action,
        path: path.clone(),
        source,
    };
    let existing = match std::fs::metadata(&path) {
        Ok(meta) if meta.len() > MAX_PATCH_BYTES => return Err(PatchError::TooLarge { path }),
        Ok(_) => Some(std::fs::read_to_string(&path).map_err(|e| io("read", e))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("read", e)),
    };
    let (text, mut outcome) = plan_block(&path, existing.as_deref(), row)?;
    if outcome == Outcome::Unchanged {
        return Ok(ConnectReport {
            outcome,
            path,
            backup: None,
        });
    }
    let backup = match &existing {
        Some(original) => {
            let backup = PathBuf::from(format!("{}{BACKUP_SUFFIX}", path.display()));
            write_atomic(&backup, original.as_bytes())?;
            Some(backup)
        }
        None => {
            outcome = Outcome::Created;
            None
        }
    };
    write_atomic(&path, text.as_bytes())?;
    Ok(ConnectReport {
        outcome,
        path,
        backup,
    })
}

/// The new text of the patch file, or why it cannot be edited. Pure: the unit of
/// every rule above.
pub fn plan(
    path: &Path,
    existing: Option<&str>,
    row: &dyn ManagedRow,
) -> Result<(String, Outcome), PatchError> {
    plan_block(path, existing, Some(row))
}

/// The patch file without dshkit's block.
pub fn plan_removal(path: &Path, existing: Option<&str>) -> Result<(String, Outcome), PatchError> {
    plan_block(path, existing, None)
}

fn plan_block(
    path: &Path,
    existing: Option<&str>,
    row: Option<&dyn ManagedRow>,
) -> Result<(String, Outcome), PatchError> {
    let text = existing.unwrap_or("");
    parse_list(path, text)?;
    let lines: Vec<&str> = text.lines().collect();
    let begins: Vec<usize> = positions(&lines, BLOCK_BEGIN);
    let ends: Vec<usize> = positions(&lines, BLOCK_END);
    let block = match (begins.as_slice(), ends.as_slice()) {
        ([], []) => None,
        ([b], [e]) if b < e => Some((*b, *e)),
        _ => {
            return Err(PatchError::DamagedBlock {
                path: path.to_owned(),
            });
        }
    };
    let outside: Vec<&str> = match block {
        Some((b, e)) => lines[..b].iter().chain(&lines[e + 1..]).copied().collect(),
        None => lines.clone(),
    };
    let base = parse_list(path, &join(&outside))?;
    let Some(row) = row else {
        return Ok(match block {
            Some(_) => {
                let mut new_text = join(&outside);
                // The block replaced DSH's empty list (`[]`); an empty layer gets it back.
                if !outside.iter().any(|l| is_content(l)) {
                    new_text.push_str("[]\n");
                }
                if parse_list(path, &new_text)? != base {
                    return Err(PatchError::Verification {
                        path: path.to_owned(),
                    });
                }
                (new_text, Outcome::Removed)
            }
            None => (text.to_owned(), Outcome::Unchanged),
        });
    };
    if base.iter().any(|patch| inserts_id(patch, row.id())) {
        return Err(PatchError::ForeignRow {
            path: path.to_owned(),
            id: row.id().to_owned(),
        });
    }

    let block_text = format!("{BLOCK_BEGIN}\n{}{BLOCK_END}", row.to_patch_yaml());
    let new_lines: Vec<String> = match block {
        Some((b, e)) => lines[..b]
            .iter()
            .map(|l| (*l).to_owned())
            .chain([block_text])
            .chain(lines[e + 1..].iter().map(|l| (*l).to_owned()))
            .collect(),
        None => {
            let content: Vec<usize> = (0..lines.len()).filter(|&i| is_content(lines[i])).collect();
            let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            match content.as_slice() {
                [] => out.push(block_text),
                [only] if lines[*only].trim() == "[]" => out[*only] = block_text,
                [first, ..] if lines[*first].trim_start().starts_with('-') => out.push(block_text),
                _ => {
                    return Err(PatchError::FlowStyle {
                        path: path.to_owned(),
                    });
                }
            }
            out
        }
    };
    let new_text = join(&new_lines);

    // The edit is right only if the new file is the old entries, in order, plus
    // exactly one copy of our entry.
    let ours = serde_json::json!({ "insert": [row.to_value()] });
    let mut parsed = parse_list(path, &new_text)?;
    let at: Vec<usize> = (0..parsed.len()).filter(|&i| parsed[i] == ours).collect();
    if at.len() != 1 || {
        parsed.remove(at[0]);
        parsed != base
    } {
        return Err(PatchError::Verification {
            path: path.to_owned(),
        });
    }
    let outcome = match (new_text == text, block.is_some()) {
        (true, _) => Outcome::Unchanged,
        (false, true) => Outcome::Updated,
        (false, false) => Outcome::Added,
    };
    Ok((new_text, outcome))
}

fn positions(lines: &[&str], marker: &str) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| lines[i].trim_end() == marker)
        .collect()
}

fn is_content(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

fn join<S: AsRef<str>>(lines: &[S]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line.as_ref());
        out.push('\n');
    }
    out
}

fn inserts_id(patch: &Value, id: &str) -> bool {
    patch.get("id").and_then(Value::as_str) == Some(id)
        || patch.get("insert").and_then(Value::as_array).is_some_and(|rows| {
            rows.iter()
                .any(|r| r.get("id").and_then(Value::as_str) == Some(id))
        })
}

/// Parses a patch file to its list of patches (`null` counts as empty).
pub fn parse_list(path: &Path, text: &str) -> Result<Vec<Value>, PatchError> {
    let value: Value = yaml_serde::from_str(text).map_err(|err| match err.location() {
        Some(at) => PatchError::Yaml {
            path: path.to_owned(),
            line: at.line(),
            column: at.column(),
            message: err.to_string(),
        },
        None => PatchError::YamlNoPosition {
            path: path.to_owned(),
            message: err.to_string(),
        },
    })?;
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items),
        Value::Object(_) => Err(PatchError::NotAList {
            path: path.to_owned(),
            found: "a mapping",
        }),
        _ => Err(PatchError::NotAList {
            path: path.to_owned(),
            found: "a scalar",
        }),
    }
}

/// Writes `bytes` to `path` atomically, keeping the original's permissions
/// (through [`dshkit_os::fs::write_atomic`], the workspace's one atomic write).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PatchError> {
    dshkit_os::fs::write_atomic(path, bytes).map_err(|source| PatchError::Io {
        action: "write",
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        let path = || PathBuf::from("cordis.patch.yml");
        let table = [
            (
                PatchError::Yaml {
                    path: path(),
                    line: 1,
                    column: 2,
                    message: "x".into(),
                },
                "PATCH_NOT_YAML",
                ErrorClass::Refused,
            ),
            (
                PatchError::YamlNoPosition {
                    path: path(),
                    message: "x".into(),
                },
                "PATCH_NOT_YAML",
                ErrorClass::Refused,
            ),
            (
                PatchError::NotAList {
                    path: path(),
                    found: "a mapping",
                },
                "PATCH_NOT_A_LIST",
                ErrorClass::Refused,
            ),
            (
                PatchError::FlowStyle { path: path() },
                "PATCH_FLOW_STYLE",
                ErrorClass::Refused,
            ),
            (
                PatchError::DamagedBlock { path: path() },
                "PATCH_DAMAGED_BLOCK",
                ErrorClass::Refused,
            ),
            (
                PatchError::ForeignRow {
                    path: path(),
                    id: "dshkit".into(),
                },
                "PATCH_FOREIGN_ROW",
                ErrorClass::Refused,
            ),
            (
                PatchError::Verification { path: path() },
                "PATCH_UNVERIFIED_EDIT",
                ErrorClass::Refused,
            ),
            (
                PatchError::TooLarge { path: path() },
                "PATCH_TOO_LARGE",
                ErrorClass::Refused,
            ),
            (PatchError::NoProfile(path()), "NO_PROFILE", ErrorClass::Refused),
            (
                PatchError::Io {
                    action: "write",
                    path: path(),
                    source: std::io::ErrorKind::PermissionDenied.into(),
                },
                "PATCH_IO",
                ErrorClass::Runtime,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
        }
    }
    use crate::row::{McpRow, Transport};

    const DSH_DEFAULT: &str = "# Your patch layer for this dsh profile, applied after every bundle layer:\n# a top-level YAML array of loader patch entries.\n[]\n";

    fn row(command: &str) -> McpRow {
        McpRow::new(Transport::Stdio {
            command: command.into(),
            args: vec!["mcp".into()],
        })
    }

    fn p() -> PathBuf {
        PathBuf::from("cordis.patch.yml")
    }

    #[test]
    fn the_dsh_default_file_gets_the_row_and_keeps_its_comments() {
        let (text, outcome) = plan(&p(), Some(DSH_DEFAULT), &row("/bin/dshkit")).unwrap();
        assert_eq!(outcome, Outcome::Added);
        assert!(text.starts_with("# Your patch layer"));
        assert!(!text.contains("[]"));
        let list = parse_list(&p(), &text).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["insert"][0]["id"], "mcp-dshkit");
    }

    #[test]
    fn connecting_twice_changes_nothing_the_second_time() {
        let (once, _) = plan(&p(), Some(DSH_DEFAULT), &row("/bin/dshkit")).unwrap();
        let (twice, outcome) = plan(&p(), Some(&once), &row("/bin/dshkit")).unwrap();
        assert_eq!(outcome, Outcome::Unchanged);
        assert_eq!(once, twice);
    }

    #[test]
    fn a_new_binary_path_rewrites_only_the_block() {
        let user = "- insert:\n    - id: mine\n      name: '@local/mine'\n# keep me\n";
        let (once, _) = plan(&p(), Some(user), &row("/old/dshkit")).unwrap();
        let with_tail = format!("{once}- id: later\n  disabled: true\n");
        let (again, outcome) = plan(&p(), Some(&with_tail), &row("/new/dshkit")).unwrap();
        assert_eq!(outcome, Outcome::Updated);
        assert!(again.starts_with(user), "user lines moved:\n{again}");
        assert!(again.ends_with("- id: later\n  disabled: true\n"));
        assert!(again.contains("/new/dshkit") && !again.contains("/old/dshkit"));
    }

    #[test]
    fn broken_yaml_is_refused_with_its_position() {
        let err = plan(&p(), Some("- insert:\n  - id: [unclosed\n"), &row("/bin/dshkit")).unwrap_err();
        let PatchError::Yaml { line, .. } = err else {
            panic!("{err}")
        };
        assert!(line >= 2, "line {line}");
    }

    #[test]
    fn a_mapping_or_flow_list_is_refused() {
        assert!(matches!(
            plan(&p(), Some("a: 1\n"), &row("/x")),
            Err(PatchError::NotAList { .. })
        ));
        assert!(matches!(
            plan(&p(), Some("[{id: a, disabled: true}]\n"), &row("/x")),
            Err(PatchError::FlowStyle { .. })
        ));
    }

    #[test]
    fn a_foreign_row_with_our_id_is_not_overwritten() {
        let text = "- insert:\n    - id: mcp-dshkit\n      name: something-else\n";
        assert!(matches!(
            plan(&p(), Some(text), &row("/x")),
            Err(PatchError::ForeignRow { .. })
        ));
    }

    #[test]
    fn a_damaged_block_is_refused() {
        let text = format!("{BLOCK_BEGIN}\n- insert: []\n");
        assert!(matches!(
            plan(&p(), Some(&text), &row("/x")),
            Err(PatchError::DamagedBlock { .. })
        ));
    }

    #[test]
    fn connect_writes_atomically_keeps_a_backup_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("profiles/web");
        std::fs::create_dir_all(&profile).unwrap();
        let file = profile.join("cordis.patch.yml");
        std::fs::write(&file, DSH_DEFAULT).unwrap();
        let first = connect(&profile, &row("/bin/dshkit")).unwrap();
        assert_eq!(first.outcome, Outcome::Added);
        assert_eq!(
            std::fs::read_to_string(first.backup.unwrap()).unwrap(),
            DSH_DEFAULT
        );
        let after = std::fs::read_to_string(&file).unwrap();
        let second = connect(&profile, &row("/bin/dshkit")).unwrap();
        assert_eq!(second.outcome, Outcome::Unchanged);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
        let names: Vec<_> = std::fs::read_dir(&profile)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "stray files: {names:?}");
    }

    #[test]
    fn a_missing_file_is_created_and_a_missing_profile_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            connect(&dir.path().join("nope"), &row("/x")),
            Err(PatchError::NoProfile(_))
        ));
        let report = connect(dir.path(), &row("/x")).unwrap();
        assert_eq!(report.outcome, Outcome::Created);
        assert!(report.backup.is_none());
    }

    #[test]
    fn an_unparsable_file_is_left_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cordis.patch.yml");
        std::fs::write(&file, "- [broken\n").unwrap();
        assert!(connect(dir.path(), &row("/x")).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "- [broken\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
