//! What `dshkit settings` shows: each setting of [`crate::settings::FIELDS`] as a
//! person reads it (its rule, its default and its value), and the text of a
//! change.

use std::path::Path;

use serde_json::{Value, json};

use crate::settings::{Change, FIELDS, Rule, Settings};
use crate::{Environment, disk, vars};

/// Every setting as a person reads it: key, label, help, rule in words,
/// default (`default_of` names the built-in ones; the evidence root's follows
/// the environment), stored value (`null`: the default), and what overrides it.
pub fn described(
    env: &Environment,
    stored: &Settings,
    default_of: impl Fn(&str) -> Option<Value>,
) -> Vec<Value> {
    let values = serde_json::to_value(stored).unwrap_or_default();
    FIELDS
        .iter()
        .map(|f| {
            let default = match f.key {
                "evidenceRoot" => disk::default_evidence_root(env).map(|p| json!(p)),
                key => default_of(key),
            };
            let mut field = json!({
                "key": f.key,
                "label": f.label,
                "help": f.help,
                "rule": f.rule.describe(),
                "default": default,
                "value": values.get(f.key),
            });
            if let Rule::Whole { low, high, unit } = f.rule {
                field["min"] = json!(low);
                field["max"] = json!(high);
                field["unit"] = json!(unit);
            }
            if f.key == "evidenceRoot" && env.get(vars::DSHKIT_EVIDENCE_ROOT).is_some() {
                field["overriddenBy"] = json!(vars::DSHKIT_EVIDENCE_ROOT);
            }
            field
        })
        .collect()
}

/// The settings at `path` as text: what a change moved (when there was one,
/// then `applies`), and each setting with its value, rule and default.
pub fn text(path: &Path, fields: &[Value], changed: Option<&[Change]>, applies: &str) -> String {
    let mut text = String::new();
    match changed {
        Some([]) => text.push_str("Nothing changed.\n"),
        Some(changed) => {
            for change in changed {
                text.push_str(&format!(
                    "Changed {}: {} -> {}\n",
                    change.label,
                    shown(change.from.as_ref()),
                    shown(change.to.as_ref())
                ));
            }
            text.push_str(&format!("({applies})\n"));
        }
        None => {}
    }
    text.push_str(&format!("{}:\n", path.display()));
    for field in fields {
        text.push_str(&format!(
            "  {:<24} {}  [{}; default {}]{}\n",
            field["key"].as_str().unwrap_or_default(),
            shown(field.get("value").filter(|v| !v.is_null())),
            field["rule"].as_str().unwrap_or_default(),
            shown(field.get("default").filter(|v| !v.is_null())),
            field["overriddenBy"]
                .as_str()
                .map(|by| format!(" (overridden by {by})"))
                .unwrap_or_default(),
        ));
    }
    text
}

/// A value for the text (`default` when absent).
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "default".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) if items.is_empty() => "none".to_owned(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}
