//! `dshkit settings` and `dshkit settings set --value JSON`.

use dshkit_env::{Environment, settings};

use crate::cli::{SettingsArgs, SettingsCommand};
use crate::exit::{self, Failure};
use crate::output::Output;

pub(crate) fn run(args: SettingsArgs, out: Output) -> Result<u8, Failure> {
    let env = Environment::from_process();
    let path = settings::path(&env).ok_or_else(|| Failure::refused(settings::SettingsError::NoLocation))?;
    let stored = match args.command {
        None => settings::load(&path).map_err(Failure::refused)?,
        Some(SettingsCommand::Set { value }) => settings::store(&path, &value).map_err(|e| match e {
            settings::SettingsError::Io { .. } => Failure::runtime(e),
            other => Failure::refused(other),
        })?,
    };
    if out.json {
        out.json(&serde_json::json!({ "path": path, "settings": stored }));
    } else {
        let text = serde_json::to_string_pretty(&stored).expect("settings serialize");
        out.write(&format!(
            "{}:\n{text}\n(absent settings keep dshkit's defaults; `dshkit mcp` reads them when it starts)\n",
            path.display()
        ));
    }
    Ok(exit::SUCCESS)
}
