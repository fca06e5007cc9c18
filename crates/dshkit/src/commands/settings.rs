//! `dshkit settings`, `dshkit settings set --fields JSON` and `--value JSON`:
//! each setting with its rule, default and value, and what a change moved.

use dshkit_env::settings::{self, SettingsError};
use dshkit_env::{Environment, settings_view};
use serde_json::{Map, Value, json};

use crate::cli::{SettingsArgs, SettingsCommand};
use crate::exit::{self, Failure};
use crate::output::Output;

/// What a saved change applies to, said after every change.
const APPLIES: &str = "a running `dshkit mcp` applies it at its next call; no restart is needed";

pub(crate) fn run(args: SettingsArgs, out: Output) -> Result<u8, Failure> {
    show_or_change(args, out)
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
    let fields = settings_view::described(&env, &stored, crate::config::default_of);
    if out.json {
        let mut answer = json!({ "path": path, "settings": stored, "fields": fields });
        if let Some(changed) = &changed {
            answer["changed"] = json!(changed);
            answer["applies"] = json!(APPLIES);
        }
        out.json(&answer);
    } else {
        out.write(&settings_view::text(&path, &fields, changed.as_deref(), APPLIES));
    }
    Ok(exit::SUCCESS)
}
