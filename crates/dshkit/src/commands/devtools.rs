//! `dshkit devtools`: the debug core for people. Each command attaches a transient
//! session to one target and detaches it on every way out (a finished command,
//! an error, Ctrl-C); a profile's lease is stopped by its owner the same way,
//! and the collector ends it by itself if this process dies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use dshkit_devtools::doctor::{self, Tone};
use dshkit_devtools::endpoint::{TOKEN_FILE, URL_FILE, endpoint_url};
use dshkit_devtools::text::{self, ProfileError, SavedCheckpoint, default_checkpoint, read_checkpoint};
use dshkit_devtools::{DebugCore, DebugError};
use serde_json::json;

use crate::cli::{DevtoolsArgs, DevtoolsCommand};
use crate::exit::{self, Failure};
use crate::output::{Color, Output};

pub(crate) async fn run(args: DevtoolsArgs, out: Output) -> Result<u8, Failure> {
    let registry = args
        .devtools_dir
        .clone()
        .unwrap_or_else(|| dshkit_env::resolve::devtools_dir(&dshkit_env::Environment::from_process()));
    match args.command {
        DevtoolsCommand::Serve {
            listen,
            exit_on_stdin_eof,
        } => return serve(listen, exit_on_stdin_eof, &registry, out).await,
        DevtoolsCommand::Bridge { endpoint } => return bridge(&registry, endpoint).await,
        DevtoolsCommand::RotateToken => return rotate_token(&registry, out),
        DevtoolsCommand::Setup {
            profile,
            dsh_home,
            experiments,
            endpoint,
            no_boot_check,
            fail_on_startup_error,
        } => {
            let args = crate::cli::InstallArgs {
                profile,
                dsh_home,
                no_boot_check,
                devtools: true,
                devtools_experiments: experiments,
                devtools_endpoint: endpoint,
                fail_on_startup_error,
                echo: None,
            };
            return super::dsh::install(args, out).await;
        }
        DevtoolsCommand::Doctor => return Ok(doctor(&registry, out).await),
        _ => {}
    }
    let core = DebugCore::new(registry.clone());
    if matches!(args.command, DevtoolsCommand::Targets) {
        let targets = core.targets();
        if out.json {
            out.json(&json!({"registry": registry, "targets": targets}));
        } else {
            out.write(&text::targets_text(&registry, &targets));
        }
        return Ok(exit::SUCCESS);
    }
    let attached = core.attach(args.target.as_deref()).await.map_err(refused)?;
    let session = attached.session.clone();
    let target = attached.target.id.clone();
    // Every way out of the command below passes the detach after it.
    let result = tokio::select! {
        result = command(&core, &session, &target, &registry, args.command, out) => result,
        _ = tokio::signal::ctrl_c() => Ok(exit::SUCCESS),
    };
    let _ = core.detach(&session).await;
    result
}

/// `dshkit devtools bridge`: this process's stdio forwarded to the endpoint,
/// with the token of the devtools directory.
async fn bridge(registry: &Path, endpoint: Option<String>) -> Result<u8, Failure> {
    let token_file = registry.join(TOKEN_FILE);
    let text = std::fs::read_to_string(&token_file)
        .with_context(|| {
            format!(
                "no DevTools endpoint token at {}: start the endpoint with `dshkit devtools serve`",
                token_file.display()
            )
        })
        .map_err(Failure::refused)?;
    let token = dshkit_mcp::Token::new(&text)
        .with_context(|| format!("{} holds no usable token", token_file.display()))
        .map_err(Failure::refused)?;
    let (input, output) = (tokio::io::stdin(), tokio::io::stdout());
    dshkit_devtools::bridge::run(
        &endpoint_url(registry, endpoint),
        token.expose().to_owned(),
        input,
        output,
    )
    .await
    .map_err(Failure::runtime)?;
    Ok(exit::SUCCESS)
}

/// `dshkit devtools doctor`: exits 1 on any `fail`.
async fn doctor(registry: &Path, out: Output) -> u8 {
    let report = doctor::diagnose(registry).await;
    if out.json {
        out.json(&report);
    } else {
        out.write(&report.text(|word, tone| {
            out.paint(
                word,
                match tone {
                    Tone::Good => Color::Green,
                    Tone::Caution => Color::Yellow,
                    Tone::Bad => Color::Red,
                    Tone::Quiet => Color::Dim,
                },
            )
        }));
    }
    if report.ok {
        exit::SUCCESS
    } else {
        exit::PROBLEM_FOUND
    }
}

/// `dshkit mcp --http ADDR --tools devtools` with the token in the devtools directory.
async fn serve(
    listen: std::net::SocketAddr,
    exit_on_stdin_eof: bool,
    registry: &Path,
    out: Output,
) -> Result<u8, Failure> {
    dshkit_os::fs::create_private_dir(registry)
        .with_context(|| format!("failed to prepare {}", registry.display()))
        .map_err(Failure::runtime)?;
    let mut command_line: Vec<std::ffi::OsString> = vec![
        "dshkit".into(),
        "mcp".into(),
        "--http".into(),
        listen.to_string().into(),
        "--tools".into(),
        "devtools".into(),
        "--token-file".into(),
        registry.join(TOKEN_FILE).into_os_string(),
        "--devtools-dir".into(),
        registry.as_os_str().to_owned(),
        "--url-file".into(),
        registry.join(URL_FILE).into_os_string(),
    ];
    if exit_on_stdin_eof {
        command_line.push("--exit-on-stdin-eof".into());
    }
    let cli = crate::cli::Cli::parse_args(&command_line)
        .map_err(|e| Failure::refused(anyhow::anyhow!(e.to_string())))?;
    let crate::cli::Command::Mcp(mcp_args) = cli.command else {
        unreachable!("parsed as `dshkit mcp`")
    };
    super::mcp::run(mcp_args, out).await
}

fn rotate_token(registry: &Path, out: Output) -> Result<u8, Failure> {
    let path = registry.join(TOKEN_FILE);
    let token = dshkit_mcp::Token::generate().map_err(Failure::runtime)?;
    super::write_private(&path, format!("{}\n", token.expose()).as_bytes())
        .with_context(|| format!("failed to write {}", path.display()))
        .map_err(Failure::runtime)?;
    if out.json {
        out.json(&json!({"tokenFile": path}));
    } else {
        out.write(&format!(
            "a new token is in {} (0600); a running `dshkit devtools serve` keeps the old one until it restarts\n",
            path.display()
        ));
    }
    Ok(exit::SUCCESS)
}

fn refused(error: DebugError) -> Failure {
    match error {
        DebugError::Link(_) | DebugError::Protocol(_) => Failure::runtime(error),
        other => Failure::refused(other),
    }
}

async fn command(
    core: &DebugCore,
    session: &str,
    target: &str,
    registry: &Path,
    command: DevtoolsCommand,
    out: Output,
) -> Result<u8, Failure> {
    match command {
        DevtoolsCommand::Targets
        | DevtoolsCommand::Serve { .. }
        | DevtoolsCommand::Bridge { .. }
        | DevtoolsCommand::RotateToken
        | DevtoolsCommand::Setup { .. }
        | DevtoolsCommand::Doctor => unreachable!("answered without a session"),
        DevtoolsCommand::Snapshot => {
            let snapshot = core.snapshot(session).await.map_err(refused)?;
            if out.json {
                out.json(&snapshot);
            } else {
                out.write(&text::snapshot_text(target, &snapshot));
            }
        }
        DevtoolsCommand::Event { name } => {
            let snapshot = core.snapshot(session).await.map_err(refused)?;
            let event = snapshot
                .topology
                .events
                .into_iter()
                .find(|e| e.name == name)
                .with_context(|| format!("no listener is registered for {name:?}"))
                .map_err(Failure::refused)?;
            if out.json {
                out.json(&event);
            } else {
                out.write(&text::event_text(&event));
            }
        }
        DevtoolsCommand::Fiber { uid, name } => {
            let snapshot = core.snapshot(session).await.map_err(refused)?;
            let fibers: Vec<_> = snapshot
                .topology
                .fibers
                .into_iter()
                .filter(|f| uid.is_none_or(|u| f.id == u) && name.as_ref().is_none_or(|n| &f.name == n))
                .collect();
            if out.json {
                out.json(&fibers);
            } else {
                out.write(&text::fibers_text(&fibers));
            }
        }
        DevtoolsCommand::Watch { event, duration } => {
            watch(core, session, event.as_deref(), duration, out).await?;
        }
        DevtoolsCommand::Checkpoint { out: file } => {
            let file = checkpoint_file(registry, target, file);
            checkpoint(core, session, target, &file, out).await?;
        }
        DevtoolsCommand::Compare { file } => {
            let file = checkpoint_file(registry, target, file);
            compare(core, session, &file, out).await?;
        }
        DevtoolsCommand::Profile { event, ttl } => profile(core, session, &event, ttl, out).await?,
        DevtoolsCommand::Stop => {
            let stopped = core.emergency_stop(session).await.map_err(refused)?;
            if out.json {
                out.json(&stopped);
            } else {
                out.write(&text::stopped_text(&stopped));
            }
        }
    }
    Ok(exit::SUCCESS)
}

/// The checkpoint file a command names, or the target's default one.
fn checkpoint_file(registry: &Path, target: &str, named: Option<PathBuf>) -> PathBuf {
    named.unwrap_or_else(|| default_checkpoint(registry, target))
}

async fn checkpoint(
    core: &DebugCore,
    session: &str,
    target: &str,
    file: &Path,
    out: Output,
) -> Result<(), Failure> {
    let (digest, at_ms) = core.digest(session).await.map_err(refused)?;
    let items = digest.len();
    let saved = SavedCheckpoint {
        target: target.to_owned(),
        at_ms,
        digest,
    };
    super::write_private(file, &serde_json::to_vec_pretty(&saved).expect("json"))
        .with_context(|| format!("failed to write {}", file.display()))
        .map_err(Failure::runtime)?;
    if out.json {
        out.json(&json!({"file": file, "items": items, "atMs": at_ms}));
    } else {
        out.write(&format!(
            "checkpoint of {target} ({items} items) in {}\n",
            file.display()
        ));
    }
    Ok(())
}

async fn compare(core: &DebugCore, session: &str, file: &Path, out: Output) -> Result<(), Failure> {
    let (digest, from_ms) = read_checkpoint(file).map_err(Failure::refused)?;
    let (now, at_ms) = core.digest(session).await.map_err(refused)?;
    let comparison = digest.compare(&now, &file.display().to_string(), from_ms, at_ms);
    if out.json {
        out.json(&comparison);
    } else {
        out.write(&text::comparison_text(&comparison));
    }
    Ok(())
}

async fn watch(
    core: &DebugCore,
    session: &str,
    event: Option<&str>,
    duration: Option<Duration>,
    out: Output,
) -> Result<(), Failure> {
    text::watch(core, session, event, duration, |seen| {
        out.write(&if out.json {
            format!("{}\n", seen.json())
        } else {
            seen.text()
        });
    })
    .await
    .map_err(refused)
}

async fn profile(
    core: &DebugCore,
    session: &str,
    event: &str,
    ttl: Duration,
    out: Output,
) -> Result<(), Failure> {
    let started = |lease: &str| {
        if !out.json {
            crate::output::progress(&format!(
                "profiling {event} for {}s (lease {lease})",
                ttl.as_secs_f64()
            ));
        }
    };
    let profile = text::profile(core, session, event, ttl, started)
        .await
        .map_err(|e| match e {
            ProfileError::Debug(error) => refused(error),
            other => Failure::refused(other),
        })?;
    if out.json {
        out.json(&profile.to_json());
    } else {
        out.write(&profile.text());
    }
    Ok(())
}
