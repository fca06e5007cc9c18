//! Where two JSON values differ: as dotted paths (`a.b[2]`, in a replay miss
//! and an annotation) or as JSON pointers (`/result/content/0/text`, in a
//! verification and the `--ignore` it takes).

use serde_json::Value;

/// JSON paths (`a.b[2]`) where two values differ (at most 20).
pub(crate) fn differing_paths(recorded: &Value, live: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(recorded, live, String::new(), PathStyle::Dotted, &mut out);
    out.truncate(20);
    out
}

/// JSON pointers (RFC 6901, each under `prefix`) where two values differ (at
/// most 20): `/content/0/text`.
pub(crate) fn differing_pointers(recorded: &Value, live: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(recorded, live, prefix.to_owned(), PathStyle::Pointer, &mut out);
    out.truncate(20);
    out
}

/// How [`diff_into`] writes a path.
#[derive(Clone, Copy)]
enum PathStyle {
    /// `a.b[2]`, `(root)` for the whole value.
    Dotted,
    /// `/a/b/2`, with `~` and `/` escaped.
    Pointer,
}

impl PathStyle {
    fn member(self, path: &str, key: &str) -> String {
        match self {
            Self::Dotted if path.is_empty() => key.to_owned(),
            Self::Dotted => format!("{path}.{key}"),
            Self::Pointer => format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
        }
    }

    fn item(self, path: &str, index: usize) -> String {
        match self {
            Self::Dotted => format!("{path}[{index}]"),
            Self::Pointer => format!("{path}/{index}"),
        }
    }

    fn whole(self, path: String) -> String {
        match self {
            Self::Dotted if path.is_empty() => "(root)".into(),
            _ => path,
        }
    }
}

fn diff_into(recorded: &Value, live: &Value, path: String, style: PathStyle, out: &mut Vec<String>) {
    match (recorded, live) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = style.member(&path, key);
                match (old.get(key), new.get(key)) {
                    (Some(before), Some(after)) => diff_into(before, after, child, style, out),
                    _ => out.push(child),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (index, (before, after)) in old.iter().zip(new).enumerate() {
                diff_into(before, after, style.item(&path, index), style, out);
            }
        }
        _ if recorded == live => {}
        _ => out.push(style.whole(path)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_and_pointers_name_each_difference_their_own_way() {
        let recorded = json!({"a": {"b": [1, 2, 3]}, "c/d": "x", "gone": 1});
        let live = json!({"a": {"b": [1, 5, 3]}, "c/d": "y", "new": 2});
        assert_eq!(
            differing_paths(&recorded, &live),
            ["a.b[1]", "c/d", "gone", "new"]
        );
        assert_eq!(
            differing_pointers(&recorded, &live, "/result"),
            ["/result/a/b/1", "/result/c~1d", "/result/gone", "/result/new"]
        );
        assert_eq!(differing_paths(&json!(1), &json!(2)), ["(root)"]);
        assert!(differing_paths(&recorded, &recorded).is_empty());
    }
}
