//! `dshkit settings`, `dshkit settings set --fields JSON` and `--value JSON`:
//! each setting with its rule, default and value, and what a change moved.

use dshkit_env::settings::{self, FIELDS, Settings, SettingsError};
use dshkit_env::{Environment, vars};
use serde_json::{Map, Value, json};

use crate::cli::{SettingsArgs, SettingsCommand};
use crate::exit::{self, Failure};
use crate::output::Output;

/// What a saved change applies to, said after every change.
const APPLIES: &str = "a running `dshkit mcp` applies it at its next call; no restart is needed";

pub(crate) fn run(args: SettingsArgs, out: Output) -> Result<u8, Failure> {
    let result = show_or_change(args, out);
    if let (Err(failure), true) = (&result, out.json) {
        let problems = failure
            .error
            .downcast_ref::<SettingsError>()
            .map_or(&[][..], SettingsError::problems);
        let code = failure
            .error
            .downcast_ref::<SettingsError>()
            .map(SettingsError::code);
        out.json(&json!({"error": {
            "code": code.unwrap_or("RUNTIME_ERROR"),
            "message": failure.error.to_string(),
            "problems": problems,
            "exitCode": failure.code,
        }}));
    }
    result
}

fn show_or_change(args: SettingsArgs, out: Output) -> Result<u8, Failure> {
    let env = Environment::from_process();
    let path = settings::path(&env).ok_or_else(|| Failure::refused(SettingsError::NoLocation))?;
    let classified = |e: SettingsError| match e {
        SettingsError::Io { .. } => Failure::runtime(e),
        other => Failure::refused(other),
    };
    let (stored, changed) = match args.command {
        None => (settings::load(&path).map_err(classified)?, None),
        Some(SettingsCommand::Set {
            fields: Some(fields), ..
        }) => {
            let fields: Map<String, Value> = serde_json::from_str(&fields).map_err(|e| {
                classified(SettingsError::Parse {
                    path: "--fields".into(),
                    message: format!(
                        "{e}; give a JSON object of settings, such as {{\"quietWindowMs\": 250}}"
                    ),
                    syntax: true,
                })
            })?;
            let (stored, changed) = settings::update(&path, &fields).map_err(classified)?;
            (stored, Some(changed))
        }
        Some(SettingsCommand::Set { value, .. }) => {
            let before = settings::load(&path).ok();
            let stored = settings::store(&path, value.as_deref().unwrap_or("{}")).map_err(classified)?;
            let changed = before.map(|before| settings::changes(&before, &stored));
            (stored, changed)
        }
    };
    let fields = described(&env, &stored);
    if out.json {
        let mut answer = json!({ "path": path, "settings": stored, "fields": fields });
        if let Some(changed) = &changed {
            answer["changed"] = json!(changed);
            answer["applies"] = json!(APPLIES);
        }
        out.json(&answer);
        return Ok(exit::SUCCESS);
    }
    let mut text = String::new();
    if let Some(changed) = &changed {
        if changed.is_empty() {
            text.push_str("Nothing changed.\n");
        }
        for change in changed {
            text.push_str(&format!(
                "Changed {}: {} -> {}\n",
                change.label,
                shown(change.from.as_ref()),
                shown(change.to.as_ref())
            ));
        }
        if !changed.is_empty() {
            text.push_str(&format!("({APPLIES})\n"));
        }
    }
    text.push_str(&format!("{}:\n", path.display()));
    for field in &fields {
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
    out.write(&text);
    Ok(exit::SUCCESS)
}

/// Every setting as a person reads it: key, label, help, rule in words,
/// default, stored value (`null`: the default), and what overrides it.
fn described(env: &Environment, stored: &Settings) -> Vec<Value> {
    let values = serde_json::to_value(stored).unwrap_or_default();
    FIELDS
        .iter()
        .map(|f| {
            let default = match f.key {
                "evidenceRoot" => dshkit_env::disk::default_evidence_root(env).map(|p| json!(p)),
                key => crate::config::default_of(key),
            };
            let mut field = json!({
                "key": f.key,
                "label": f.label,
                "help": f.help,
                "rule": f.rule.describe(),
                "default": default,
                "value": values.get(f.key),
            });
            if let dshkit_env::settings::Rule::Whole { low, high, unit } = f.rule {
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

/// A value for the text output (`default` when absent).
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
