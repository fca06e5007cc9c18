//! `dshkit dsh mcp-row`, `connect`, `install` and `uninstall`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use dshkit_dsh::install::PluginRow;
use dshkit_dsh::patch;
use dshkit_dsh::row::{McpRow, Transport};
use dshkit_env::{Environment, dsh, vars};
use dshkit_install::InstallRequest;

use crate::cli::{ConnectArgs, DshCommand, InstallArgs, RowArgs, UninstallArgs};
use crate::commands::mcp::resolve_token;
use crate::exit::{self, Failure};
use crate::output::Output;

pub(crate) async fn run(command: DshCommand, out: Output) -> Result<u8, Failure> {
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
        DshCommand::Install(args) => install(args, out).await,
        DshCommand::Uninstall(args) => uninstall(&args, out),
    }
}

/// The path of the running dshkit executable.
pub(crate) fn current_binary() -> Result<PathBuf, Failure> {
    std::env::current_exe()
        .and_then(dshkit_os::fs::canonicalize)
        .context("failed to find the path of the running dshkit executable")
        .map_err(Failure::runtime)
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
        None => Transport::Stdio {
            command: current_binary()?,
            // DSH's MCP client fails a text-only model's whole turn on an image block.
            args: vec!["mcp".into(), "--stdio".into(), "--images".into(), "never".into()],
        },
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

fn absolute(path: &Path) -> PathBuf {
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
    let report = patch::connect(&dsh::profile_dir(&home, &args.profile), &row)?;
    if out.json {
        out.json(&report);
    } else {
        out.write(&report.connect_text(&row.server_name, &args.profile));
    }
    Ok(exit::SUCCESS)
}

fn home_of(explicit: Option<&Path>) -> Result<PathBuf, Failure> {
    let env = Environment::from_process();
    explicit
        .map(Path::to_owned)
        .or_else(|| dsh::home(&env))
        .map(|home| absolute(&home))
        .context("no DSH home: pass --dsh-home or set DSH_HOME")
        .map_err(Failure::refused)
}

pub(crate) async fn install(args: InstallArgs, out: Output) -> Result<u8, Failure> {
    let home = home_of(args.dsh_home.as_deref())?;
    let request = InstallRequest {
        row: PluginRow {
            binary: current_binary()?,
            dsh_home: Some(home.clone()),
            devtools: args.devtools,
            devtools_experiments: args.devtools_experiments,
            devtools_endpoint: args.devtools_endpoint,
            fail_on_startup_error: args.fail_on_startup_error,
            echo: (args
                .echo
                .as_deref()
                .map(dshkit_echo::registry::Registry::read)
                .transpose())
            .map_err(|e| Failure::refused(anyhow::anyhow!(e)))?
            .map(|registry| serde_json::json!(registry)),
        },
        home,
        profile: args.profile,
        no_boot_check: args.no_boot_check,
    };
    let installed =
        dshkit_install::install(&request, &Environment::from_process(), crate::output::progress).await?;
    Ok(out.report(
        &installed.to_json(),
        || installed.text(&request),
        !installed.installed(),
    ))
}

fn uninstall(args: &UninstallArgs, out: Output) -> Result<u8, Failure> {
    let home = home_of(args.dsh_home.as_deref())?;
    let report = dshkit_install::uninstall(&home, &args.profile)?;
    if out.json {
        out.json(&report);
    } else {
        out.write(&dshkit_install::uninstall_text(&report));
    }
    Ok(exit::SUCCESS)
}
