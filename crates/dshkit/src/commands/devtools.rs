//! `dshkit devtools`: the debug core for people. Each command attaches a transient
//! session to one target and detaches it on every way out (a finished command,
//! an error, Ctrl-C); a profile's lease is stopped by its owner the same way,
//! and the collector ends it by itself if this process dies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use dshkit_devtools::agent::AgentError;
use dshkit_devtools::bridge::BridgeError;
use dshkit_devtools::client::{ClientError, TokenSource};
use dshkit_devtools::doctor::{self, Tone};
use dshkit_devtools::endpoint::{TOKEN_FILE, URL_FILE};
use dshkit_devtools::hosts;
use dshkit_devtools::profile;
use dshkit_devtools::remote::{self, Found, Remote};
use dshkit_devtools::route::{Local, Route};
use dshkit_devtools::show::{self, CommandFailed, Shown, Via};
use dshkit_devtools::text::{self, SavedCheckpoint, default_checkpoint, read_checkpoint};
use dshkit_devtools::{DebugCore, DebugError};
use dshkit_env::vars::{CODEX_HOME, DSH_CORDIS_DEBUG_ENDPOINT, DSH_CORDIS_DEBUG_TOKEN};
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
        DevtoolsCommand::Bridge => {
            let token = token(&args, &registry);
            return bridge(registry, endpoint_named(&args), token).await;
        }
        DevtoolsCommand::RotateToken => return rotate_token(&registry, out),
        DevtoolsCommand::Setup {
            profile,
            dsh_home,
            experiments,
            endpoint,
            no_boot_check,
            fail_on_startup_error,
            agents,
            project,
        } => {
            // A host's bridge needs the endpoint: on unless said otherwise.
            let endpoint = endpoint.or_else(|| (!agents.is_empty()).then(|| "on".to_owned()));
            let registry = args
                .devtools_dir
                .clone()
                .or_else(|| {
                    dsh_home
                        .as_ref()
                        .map(|h| h.join(dshkit_env::resolve::DEVTOOLS_DIR_NAME))
                })
                .unwrap_or(registry);
            let install = crate::cli::InstallArgs {
                profile,
                dsh_home,
                no_boot_check,
                devtools: true,
                devtools_experiments: experiments,
                devtools_endpoint: endpoint,
                fail_on_startup_error,
                echo: None,
            };
            let installed = super::dsh::install(install, out).await?;
            if installed == exit::SUCCESS {
                register_agents(&agents, project, &registry)?;
            }
            return Ok(installed);
        }
        DevtoolsCommand::Doctor => return Ok(doctor(&registry, out).await),
        _ => {}
    }
    if let Some(found) = remote::find_endpoint(&registry, endpoint_named(&args))
        && through_endpoint(&args.command)
    {
        let url = match &found {
            Found::Named(url) | Found::FromFile(url) => url.clone(),
        };
        match remote(&url, &token(&args, &registry), &args, out).await {
            // A URL file left by an endpoint that is gone: the socket, saying so.
            Err(error) if error.is_unreachable() && matches!(found, Found::FromFile(_)) => {
                crate::output::progress(&format!(
                    "{error} (named in {}); attaching to the collector's socket directly",
                    registry.join(URL_FILE).display()
                ));
            }
            done => return Ok(done?),
        }
    }
    let core = DebugCore::new(registry.clone());
    let via = Via::Socket(registry.clone());
    if matches!(args.command, DevtoolsCommand::Targets) {
        let targets: Vec<serde_json::Value> = core.list_targets().await.iter().map(|t| json!(t)).collect();
        print(out, show::targets(&via, &targets));
        return Ok(exit::SUCCESS);
    }
    let attached = core.attach(args.target.as_deref()).await.map_err(refused)?;
    let session = attached.session.clone();
    let target = attached.target.id.clone();
    // Every way out of the command below passes the detach after it.
    let result = tokio::select! {
        result = async {
            match routed(&mut Local::new(&core, &session), (&via, &target), &args.command, out).await {
                Ok(Some(shown)) => Ok(print(out, shown)),
                Ok(None) => command(&core, &session, &target, &registry, args.command, out).await,
                Err(AgentError::Debug(error)) => Err(refused(error)),
                Err(other) => Err(Failure::refused(other)),
            }
        } => result,
        _ = tokio::signal::ctrl_c() => Ok(exit::SUCCESS),
    };
    let _ = core.detach(&session).await;
    result
}

/// `dshkit devtools bridge`: this process's stdio forwarded to the endpoint,
/// with the token read at each session the host opens.
async fn bridge(registry: PathBuf, explicit: Option<String>, token: TokenSource) -> Result<u8, Failure> {
    let source = dshkit_devtools::bridge::Source {
        registry,
        explicit,
        token,
    };
    let (input, output) = (tokio::io::stdin(), tokio::io::stdout());
    dshkit_devtools::bridge::run(source, input, output)
        .await
        .map_err(|e| match e {
            BridgeError::Token(_) => Failure::refused(e),
            other => Failure::runtime(other),
        })?;
    Ok(exit::SUCCESS)
}

/// `setup --agent HOST…`: the bridge (this dshkit, on `registry`) in each host's file.
fn register_agents(agents: &[String], project: Option<PathBuf>, registry: &Path) -> Result<(), Failure> {
    if agents.is_empty() {
        return Ok(());
    }
    let env = dshkit_env::Environment::from_process();
    let home = env
        .home()
        .context("no home directory (HOME)")
        .map_err(Failure::refused)?;
    let places = hosts::Places {
        project: project
            .map_or_else(std::env::current_dir, Ok)
            .map_err(Failure::runtime)?,
        codex_home: hosts::codex_home(env.get(CODEX_HOME).map(PathBuf::from), &home),
    };
    let dshkit = std::env::current_exe().map_err(Failure::runtime)?;
    let registered = hosts::register_bridge(agents, &places, &dshkit, registry)
        .map_err(|e| Failure::refused(anyhow::anyhow!(e)))?;
    for done in registered {
        // On stderr: stdout holds the install's own answer (JSON with --json).
        let verb = if done.changed {
            "registered"
        } else {
            "already registers"
        };
        let (host, file) = (done.host, done.file.display());
        crate::output::progress(&format!("{host}: {verb} {} in {file}", hosts::SERVER_NAME));
    }
    Ok(())
}

/// The endpoint named by `--endpoint`, else by the environment.
fn endpoint_named(args: &DevtoolsArgs) -> Option<String> {
    args.endpoint
        .clone()
        .or_else(|| env_var(DSH_CORDIS_DEBUG_ENDPOINT))
}

/// `--token-file`, else the token in the environment, else the devtools directory's file.
fn token(args: &DevtoolsArgs, registry: &Path) -> TokenSource {
    TokenSource::resolve(args.token_file.clone(), env_var(DSH_CORDIS_DEBUG_TOKEN), registry)
}

fn env_var(name: &str) -> Option<String> {
    dshkit_env::Environment::from_process()
        .get(name)
        .and_then(|v| v.to_str().map(str::to_owned))
}

/// The commands that go through an endpoint when there is one. A checkpoint and
/// its comparison keep the runtime's digest in a file, which no tool gives; the
/// emergency stop is a person's, which the endpoint offers no client.
fn through_endpoint(command: &DevtoolsCommand) -> bool {
    matches!(
        command,
        DevtoolsCommand::Targets
            | DevtoolsCommand::Snapshot
            | DevtoolsCommand::Event { .. }
            | DevtoolsCommand::Fiber { .. }
            | DevtoolsCommand::Watch { .. }
            | DevtoolsCommand::Profile { .. }
    )
}

/// A command as calls of the endpoint's tools on a transient debug session,
/// detached on every way out (Ctrl-C included).
async fn remote(url: &str, token: &TokenSource, args: &DevtoolsArgs, out: Output) -> Result<u8, ClientError> {
    if matches!(args.command, DevtoolsCommand::Targets) {
        print(out, remote::targets(url, token).await?);
        return Ok(exit::SUCCESS);
    }
    let mut session = Remote::attach(url, token, args.target.as_deref()).await?;
    let (via, target) = (Via::Endpoint(url.to_owned()), session.target.clone());
    let result = tokio::select! {
        result = async {
            if let DevtoolsCommand::Watch { event, duration } = &args.command {
                let seen = |json: &serde_json::Value, text: &str| if out.json { out.json_line(json) } else { out.write(text) };
                return session.watch(event.as_deref(), *duration, seen).await;
            }
            let shown = routed(&mut session, (&via, &target), &args.command, out).await?;
            print(out, shown.expect("only the commands through_endpoint names"));
            Ok(())
        } => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
    };
    session.end().await;
    result.map(|()| exit::SUCCESS)
}

/// The commands both routes answer with one workflow each: what they show
/// (`None` for the others).
async fn routed<R: Route>(
    route: &mut R,
    (via, target): (&Via, &str),
    command: &DevtoolsCommand,
    out: Output,
) -> Result<Option<Shown>, R::Error>
where
    R::Error: From<CommandFailed>,
{
    Ok(Some(match command {
        DevtoolsCommand::Snapshot => show::snapshot(route, via, target).await?,
        DevtoolsCommand::Event { name } => show::event(route, name).await?,
        DevtoolsCommand::Fiber { uid, name } => show::fibers(route, *uid, name.as_deref()).await?,
        DevtoolsCommand::Profile { event, ttl, trace } => {
            let profile =
                profile::profile(route, event, *ttl, |lease| started(out, event, *ttl, lease)).await?;
            profile.shown(target, trace.as_deref())?
        }
        _ => return Ok(None),
    }))
}

/// What a command shows: its JSON with `--json`, else its text.
fn print(out: Output, (text, json): Shown) -> u8 {
    if out.json {
        out.json(&json);
    } else {
        out.write(&text);
    }
    exit::SUCCESS
}

fn started(out: Output, event: &str, ttl: Duration, lease: &str) {
    if !out.json {
        crate::output::progress(&format!(
            "profiling {event} for {}s (lease {lease})",
            ttl.as_secs_f64()
        ));
    }
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
        | DevtoolsCommand::Bridge
        | DevtoolsCommand::RotateToken
        | DevtoolsCommand::Setup { .. }
        | DevtoolsCommand::Doctor => unreachable!("answered without a session"),
        DevtoolsCommand::Snapshot
        | DevtoolsCommand::Event { .. }
        | DevtoolsCommand::Fiber { .. }
        | DevtoolsCommand::Profile { .. } => unreachable!("answered by `routed`"),
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
        if out.json {
            out.json_line(&seen.json());
        } else {
            out.write(&seen.text());
        }
    })
    .await
    .map_err(refused)
}
