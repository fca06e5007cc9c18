//! `dshkit dsh mcp-row` and `dshkit dsh connect`.

use std::collections::BTreeMap;

use anyhow::Context;
use dshkit_dsh::patch::{self, Outcome};
use dshkit_dsh::row::{McpRow, Transport};
use dshkit_env::{Environment, dsh, vars};

use crate::cli::{ConnectArgs, DshCommand, RowArgs};
use crate::commands::mcp::resolve_token;
use crate::exit::{self, Failure};
use crate::output::Output;

pub(crate) fn run(command: DshCommand, out: Output) -> Result<u8, Failure> {
    match command {
        DshCommand::McpRow(args) => {
            let row = build_row(&args)?;
            if out.json {
                out.json(&row.to_value());
            } else {
                out.write(&row.to_patch_yaml());
            }
            Ok(exit::SUCCESS)
        }
        DshCommand::Connect(args) => connect(&args, out),
    }
}

fn build_row(args: &RowArgs) -> Result<McpRow, Failure> {
    let env = Environment::from_process();
    let transport = match &args.http {
        Some(url) => {
            let (token, _) = resolve_token(args.token_file.as_deref(), &env).map_err(Failure::refused)?;
            Transport::Http {
                url: url.clone(),
                token: token.expose().to_owned(),
            }
        }
        None => {
            let exe = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context("failed to find the path of the running dshkit executable")
                .map_err(Failure::runtime)?;
            Transport::Stdio {
                command: exe,
                args: vec!["mcp".into(), "--stdio".into()],
            }
        }
    };
    let mut row = McpRow::new(transport);
    if args.http.is_none() {
        let home = args.dsh_home.clone().or_else(|| dsh::home(&env));
        if let Some(home) = home {
            row.env = BTreeMap::from([(vars::DSH_HOME.to_owned(), absolute(&home).display().to_string())]);
        }
    }
    Ok(row)
}

fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

fn connect(args: &ConnectArgs, out: Output) -> Result<u8, Failure> {
    let env = Environment::from_process();
    let home = args
        .row
        .dsh_home
        .clone()
        .or_else(|| dsh::home(&env))
        .context("no DSH home: pass --dsh-home or set DSH_HOME")
        .map_err(Failure::refused)?;
    let row = build_row(&RowArgs {
        dsh_home: Some(home.clone()),
        ..args.row.clone()
    })?;
    let report = patch::connect(&dsh::profile_dir(&home, &args.profile), &row).map_err(|e| match e {
        patch::PatchError::Io { .. } => Failure::runtime(e),
        other => Failure::refused(other),
    })?;
    if out.json {
        out.json(&report);
    } else {
        let what = match report.outcome {
            Outcome::Created => "created with dshkit's row",
            Outcome::Added => "dshkit's row added",
            Outcome::Updated => "dshkit's row updated",
            Outcome::Unchanged => "already connected; nothing changed",
        };
        let mut text = format!("{}: {what}\n", report.path.display());
        if let Some(backup) = &report.backup {
            text.push_str(&format!("backup of the previous file: {}\n", backup.display()));
        }
        text.push_str(&format!(
            "DSH's model sees the tools as mcp__{}__<tool>; restart the `{}` profile to load them.\n",
            row.server_name, args.profile
        ));
        out.write(&text);
    }
    Ok(exit::SUCCESS)
}
