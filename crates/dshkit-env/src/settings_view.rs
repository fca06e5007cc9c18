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
                // No pool: dshkit launches a Chromium of its own.
                "browserPoolEndpoint" => Some(json!("none (dshkit's own Chromium)")),
                "browserPoolTokenFile" => Some(json!("none")),
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
            if f.key == "browserPoolTokenFile" && env.get(vars::DSHKIT_BROWSER_POOL_TOKEN).is_some() {
                field["overriddenBy"] = json!(vars::DSHKIT_BROWSER_POOL_TOKEN);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_fields_say_their_default_and_that_the_variable_wins_without_its_value() {
        let env = Environment::from_pairs_on(
            crate::Platform::Linux,
            [
                (vars::HOME, "/home/u"),
                (vars::DSHKIT_BROWSER_POOL_TOKEN, "s3cret-value"),
            ],
        );
        let stored = Settings {
            browser_pool_token_file: Some("/run/secrets/pool".into()),
            ..Settings::default()
        };
        let fields = described(&env, &stored, |_| None);
        let field = |key: &str| fields.iter().find(|f| f["key"] == key).unwrap().clone();
        assert_eq!(
            field("browserPoolEndpoint")["default"],
            "none (dshkit's own Chromium)"
        );
        let token_file = field("browserPoolTokenFile");
        assert_eq!(token_file["value"], "/run/secrets/pool");
        assert_eq!(token_file["overriddenBy"], vars::DSHKIT_BROWSER_POOL_TOKEN);
        let text = text(Path::new("/s.json"), &fields, None, "");
        assert!(!text.contains("s3cret-value"), "{text}");
        assert!(
            text.contains("(overridden by DSHKIT_BROWSER_POOL_TOKEN)"),
            "{text}"
        );
    }
}
