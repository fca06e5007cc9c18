//! A loader patch file as DSH reads it: a profile's `cordis.patch.yml` or a
//! bundle's `dsh.bundle.patch`. DSH parses it as YAML and then refuses anything
//! but a top-level array whose every entry is a mapping: an empty or
//! comment-only file (YAML null) is refused too, where an empty list is `[]`.

use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;
use serde_json::Value;

/// Why DSH refuses a patch file, in DSH's words.
#[derive(Debug, thiserror::Error)]
pub enum PatchListError {
    /// Not YAML, with its position when the parser gave one.
    #[error(transparent)]
    Yaml(dshkit_dsh::patch::PatchError),
    #[error(
        "{path} must be a top-level YAML array of loader patch entries, but it is {found} (DSH refuses it; a patch file with no entries is `[]`)"
    )]
    NotAnArray { path: PathBuf, found: &'static str },
    #[error("entry {number} in {path} must be a mapping (a loader patch entry), but it is {found}")]
    EntryNotAMapping {
        path: PathBuf,
        /// 1-based, as DSH counts.
        number: usize,
        found: &'static str,
    },
}

impl PatchListError {
    /// A stable machine-readable code; a file that is no YAML says so in the
    /// patch parser's code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Yaml(e) => e.code(),
            Self::NotAnArray { .. } => "PATCH_NOT_A_LIST",
            Self::EntryNotAMapping { .. } => "PATCH_ENTRY_NOT_A_MAPPING",
        }
    }

    /// A patch file DSH refuses is refused input.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Yaml(e) => e.class(),
            Self::NotAnArray { .. } | Self::EntryNotAMapping { .. } => ErrorClass::Refused,
        }
    }

    /// Where DSH's YAML parser stopped, when it says: the file, the 1-based
    /// line and column, and its message.
    pub fn place(&self) -> Option<(&std::path::Path, usize, usize, &str)> {
        match self {
            Self::Yaml(dshkit_dsh::patch::PatchError::Yaml {
                path,
                line,
                column,
                message,
            }) => Some((path, *line, *column, message)),
            _ => None,
        }
    }

    /// One evidence line: `file:line:column: message` when the place is known.
    pub fn evidence(&self) -> String {
        match self.place() {
            Some((path, line, column, message)) => format!("{}:{line}:{column}: {message}", path.display()),
            None => self.to_string(),
        }
    }
}

dshkit_os::classified!(PatchListError);

/// The patch entries of `text` (read from `path`), or why DSH refuses them.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Value>, PatchListError> {
    let entries = dshkit_dsh::patch::parse_list(path, text).map_err(|e| match e {
        dshkit_dsh::patch::PatchError::NotAList { path, found } => PatchListError::NotAnArray { path, found },
        other => PatchListError::Yaml(other),
    })?;
    // `parse_list` reads null as no entries; DSH does not.
    if entries.is_empty() && !is_empty_array(text) {
        return Err(PatchListError::NotAnArray {
            path: path.to_owned(),
            found: "empty (YAML null)",
        });
    }
    for (index, entry) in entries.iter().enumerate() {
        let found = match entry {
            Value::Object(_) => continue,
            Value::Array(_) => "a list",
            Value::Null => "null",
            _ => "a scalar",
        };
        return Err(PatchListError::EntryNotAMapping {
            path: path.to_owned(),
            number: index + 1,
            found,
        });
    }
    Ok(entries)
}

/// Whether a document that parsed to no entries is the empty list (`[]`), not null.
fn is_empty_array(text: &str) -> bool {
    matches!(
        yaml_serde::from_str::<Value>(text),
        Ok(Value::Array(items)) if items.is_empty()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<usize, PatchListError> {
        parse(Path::new("cordis.patch.yml"), text).map(|entries| entries.len())
    }

    #[test]
    fn an_empty_list_is_accepted_and_an_empty_file_is_refused_as_dsh_does() {
        assert_eq!(parsed("[]\n").unwrap(), 0);
        assert_eq!(parsed("# comment\n[]\n").unwrap(), 0);
        assert_eq!(parsed("- insert: []\n").unwrap(), 1);
        for null in ["", "# only a comment\n", "~\n", "null\n"] {
            let refused = parsed(null).unwrap_err();
            assert_eq!(refused.code(), "PATCH_NOT_A_LIST", "{null:?}: {refused}");
            assert!(
                refused
                    .to_string()
                    .contains("must be a top-level YAML array of loader patch entries"),
                "{null:?}: {refused}"
            );
        }
        let mapping = parsed("a: 1\n").unwrap_err();
        assert_eq!(mapping.code(), "PATCH_NOT_A_LIST", "{mapping}");
        assert!(mapping.to_string().contains("but it is a mapping"), "{mapping}");
    }

    #[test]
    fn every_entry_must_be_a_mapping() {
        let refused = parsed("- insert: []\n- foo\n").unwrap_err();
        assert_eq!(refused.code(), "PATCH_ENTRY_NOT_A_MAPPING", "{refused}");
        assert!(
            refused
                .to_string()
                .starts_with("entry 2 in cordis.patch.yml must be a mapping (a loader patch entry)"),
            "{refused}"
        );
    }

    #[test]
    fn yaml_that_does_not_parse_is_refused_with_the_parser_code() {
        let refused = parsed("- [unclosed\n").unwrap_err();
        assert_eq!(refused.code(), "PATCH_NOT_YAML", "{refused}");
        assert_eq!(refused.class(), ErrorClass::Refused, "{refused}");
        for error in [
            PatchListError::NotAnArray {
                path: "p".into(),
                found: "a mapping",
            },
            PatchListError::EntryNotAMapping {
                path: "p".into(),
                number: 1,
                found: "a scalar",
            },
        ] {
            assert_eq!(error.class(), ErrorClass::Refused, "{error}");
        }
    }
}
