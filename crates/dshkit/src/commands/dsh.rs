//! `dshkit dsh mcp-row`, `connect`, `install` and `uninstall`.

use std::collections::BTreeMap;

use anyhow::Context;
use dshkit_dsh::install;
use dshkit_dsh::patch::{self, Outcome};
use dshkit_dsh::row::{McpRow, Transport};
use dshkit_env::{Environment, dsh, vars};

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
                .and_then(dshkit_os::fs::canonicalize)
                .context("failed to find the path of the running dshkit executable")
                .map_err(Failure::runtime)?;
            Transport::Stdio {
                command: exe,
                // DSH's MCP client fails a text-only model's whole turn on an image block.
                args: vec!["mcp".into(), "--stdio".into(), "--images".into(), "never".into()],
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
            Outcome::Removed => "dshkit's row removed",
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

fn home_of(explicit: Option<&std::path::Path>) -> Result<std::path::PathBuf, Failure> {
    let env = Environment::from_process();
    explicit
        .map(std::path::Path::to_owned)
        .or_else(|| dsh::home(&env))
        .map(|home| absolute(&home))
        .context("no DSH home: pass --dsh-home or set DSH_HOME")
        .map_err(Failure::refused)
}

fn install_failure(error: install::InstallError) -> Failure {
    match error {
        install::InstallError::Io { .. } | install::InstallError::Patch(patch::PatchError::Io { .. }) => {
            Failure::runtime(error)
        }
        other => Failure::refused(other),
    }
}

pub(crate) async fn install(args: InstallArgs, out: Output) -> Result<u8, Failure> {
    let home = home_of(args.dsh_home.as_deref())?;
    let profile_dir = dsh::profile_dir(&home, &args.profile);
    let binary = std::env::current_exe()
        .and_then(dshkit_os::fs::canonicalize)
        .context("failed to find the path of the running dshkit executable")
        .map_err(Failure::runtime)?;
    let row = install::PluginRow {
        binary,
        dsh_home: Some(home.clone()),
        devtools: args.devtools,
        devtools_experiments: args.devtools_experiments,
        devtools_endpoint: args.devtools_endpoint.clone(),
    };
    let report = install::install(&profile_dir, &row).map_err(install_failure)?;
    let proof = if args.no_boot_check {
        None
    } else {
        match prove_boot(&home, &args.profile, &profile_dir, &report).await? {
            Ok(boot) => Some(boot),
            Err((why, check)) => {
                let mut text = format!(
                    "dshkit dsh install: rolled back ({}: the patch file is as it was): {why}\n",
                    profile_dir.display()
                );
                text.push_str(&crate::tools::check::compact_text(&check));
                if out.json {
                    out.json(&serde_json::json!({ "installed": false, "reason": why, "check": check }));
                } else {
                    out.write(&text);
                }
                return Ok(exit::PROBLEM_FOUND);
            }
        }
    };
    if out.json {
        out.json(&serde_json::json!({ "installed": true, "install": report, "bootProof": proof }));
    } else {
        let mut text = format!(
            "{}: the dshkit plugin {} (binary {})\n",
            report.plugin_dir.display(),
            if report.files_changed {
                "written"
            } else {
                "already current"
            },
            row.binary.display()
        );
        text.push_str(&format!(
            "{}: {}\n",
            report.patch.path.display(),
            match report.patch.outcome {
                Outcome::Created => "created with the plugin row",
                Outcome::Added => "plugin row added",
                Outcome::Updated => "dshkit's block now holds the plugin row (a connect row is replaced)",
                Outcome::Unchanged | Outcome::Removed => "already installed; nothing changed",
            }
        ));
        if let Some(backup) = &report.patch.backup {
            text.push_str(&format!("backup of the previous file: {}\n", backup.display()));
        }
        match &proof {
            Some(boot) => text.push_str(&format!("boot proven: {}\n", boot.detail)),
            None => text.push_str("boot not proven (--no-boot-check)\n"),
        }
        text.push_str(&format!(
            "Restart the `{}` profile: the model sees liveloop_verify, plugin_check and the other tools natively.\n",
            args.profile
        ));
        out.write(&text);
    }
    Ok(exit::SUCCESS)
}

fn uninstall(args: &UninstallArgs, out: Output) -> Result<u8, Failure> {
    let home = home_of(args.dsh_home.as_deref())?;
    let profile_dir = dsh::profile_dir(&home, &args.profile);
    let report = install::uninstall(&profile_dir).map_err(install_failure)?;
    if out.json {
        out.json(&report);
    } else {
        let mut text = String::new();
        for path in &report.removed {
            text.push_str(&format!("removed {}\n", path.display()));
        }
        text.push_str(&format!(
            "{}: {}\n",
            report.patch.path.display(),
            match report.patch.outcome {
                Outcome::Removed => "dshkit's block removed",
                _ => "had no dshkit block; unchanged",
            }
        ));
        text.push_str("Evidence (reports, screenshots) is kept.\n");
        out.write(&text);
    }
    Ok(exit::SUCCESS)
}

/// Runs `dshkit check --live` on the profile. When the boot is not proven, rolls
/// the install back and returns why, with the check report.
async fn prove_boot(
    home: &std::path::Path,
    profile: &str,
    profile_dir: &std::path::Path,
    report: &install::InstallReport,
) -> Result<Result<dshkit_check::Check, (String, dshkit_check::Report)>, Failure> {
    crate::output::progress(&format!(
        "proving the `{profile}` profile still boots (dshkit check --live) ..."
    ));
    let options = crate::tools::check::options(
        crate::tools::check::CheckArgs {
            dsh_home: Some(home.to_owned()),
            profile: Some(profile.to_owned()),
            live: true,
            ..Default::default()
        },
        &Environment::from_process(),
    )
    .map_err(|e| Failure::refused(anyhow::anyhow!(e)))?;
    let check = dshkit_check::run(options).await;
    let boot = check.check("live_boot").cloned();
    if let Some(boot) = boot
        .clone()
        .filter(|b| check.ok && b.status == dshkit_check::Status::Pass)
    {
        return Ok(Ok(boot));
    }
    install::restore(profile_dir, report.previous_patch.as_deref()).map_err(install_failure)?;
    // Files nothing loads any more go too; an earlier install's stay.
    if !report
        .previous_patch
        .as_deref()
        .is_some_and(|p| p.contains(install::PLUGIN_PACKAGE))
    {
        install::remove_files(profile_dir).map_err(install_failure)?;
    }
    let why = match &boot {
        Some(b) if b.status == dshkit_check::Status::NotTested => format!(
            "the boot could not be tried here: {} (pass --no-boot-check to install without the proof)",
            b.detail
        ),
        _ => "the profile does not pass `dshkit check --live` with the plugin".to_owned(),
    };
    Ok(Err((why, check)))
}
