//! `dshkit devtools`: the debug core for people. Each command attaches a transient
//! session to one target and detaches it on every way out (a finished command,
//! an error, Ctrl-C); a profile's lease is stopped by its owner the same way,
//! and the collector ends it by itself if this process dies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use dshkit_devtools::{DebugCore, DebugError, Digest, MAX_LEASE};
use serde_json::{Value, json};

mod bridge;
mod doctor;

use crate::cli::{DevtoolsArgs, DevtoolsCommand};
use crate::exit::{self, Failure};
use crate::output::Output;

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
        DevtoolsCommand::Bridge { endpoint } => {
            let endpoint = endpoint
                .or_else(|| {
                    Some(
                        std::fs::read_to_string(registry.join(URL_FILE))
                            .ok()?
                            .trim()
                            .to_owned(),
                    )
                })
                .unwrap_or_else(|| format!("http://{DEFAULT_ENDPOINT}/mcp"));
            return bridge::run(&endpoint, &registry.join(TOKEN_FILE)).await;
        }
        DevtoolsCommand::RotateToken => return rotate_token(&registry, out),
        DevtoolsCommand::Setup {
            profile,
            dsh_home,
            experiments,
            endpoint,
            no_boot_check,
        } => {
            let args = crate::cli::InstallArgs {
                profile,
                dsh_home,
                no_boot_check,
                devtools: true,
                devtools_experiments: experiments,
                devtools_endpoint: endpoint,
            };
            return super::dsh::install(args, out).await;
        }
        DevtoolsCommand::Doctor => return Ok(doctor::run(&registry, out).await),
        _ => {}
    }
    let core = DebugCore::new(registry.clone());
    if matches!(args.command, DevtoolsCommand::Targets) {
        let targets = core.targets();
        if out.json {
            out.json(&json!({"registry": registry, "targets": targets}));
        } else if targets.is_empty() {
            out.write(&format!(
                "no debug targets in {}: no live DSH runs the dshkit plugin with the collector (`dshkit dsh install --devtools`)\n",
                registry.display()
            ));
        } else {
            let mut lines = String::new();
            for t in &targets {
                let _ = write!(lines, "{}  {}  pid {}", t.id, t.label, t.pid);
                if let Some(problem) = &t.problem {
                    let _ = write!(lines, "  ({problem})");
                }
                lines.push('\n');
            }
            out.write(&lines);
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

/// The endpoint's token file and the file with its URL, inside the devtools directory.
pub(super) const TOKEN_FILE: &str = "token";
pub(super) const URL_FILE: &str = "endpoint";
/// Where the endpoint listens by default.
const DEFAULT_ENDPOINT: &str = "127.0.0.1:43127";

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
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from::<_, std::ffi::OsString>(command_line)
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
                out.write(&snapshot_text(target, &snapshot));
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
                let mut text = format!(
                    "{}: {} listener(s), in dispatch order\n",
                    event.name,
                    event.listeners.len()
                );
                for (i, l) in event.listeners.iter().enumerate() {
                    text.push_str(&format!(
                        "  {i}. fiber {} ({}) {}{}{}\n",
                        l.owner.map_or("?".into(), |o| o.to_string()),
                        l.owner_name.as_deref().unwrap_or("?"),
                        l.owner_state.as_deref().unwrap_or("?"),
                        if l.prepend { " prepend" } else { "" },
                        if l.global { " global" } else { "" }
                    ));
                }
                out.write(&text);
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
                let mut text = String::new();
                for f in &fibers {
                    let _ = writeln!(
                        text,
                        "fiber {} {} {} parent {} effects {}: {}",
                        f.id,
                        f.name,
                        f.state,
                        f.parent.map_or("-".into(), |p| p.to_string()),
                        f.effects,
                        f.effect_labels.join(", ")
                    );
                }
                out.write(if text.is_empty() { "no such fiber\n" } else { &text });
            }
        }
        DevtoolsCommand::Watch { event, duration } => {
            watch(core, session, event.as_deref(), duration, out).await?;
        }
        DevtoolsCommand::Checkpoint { out: file } => {
            checkpoint(core, session, target, registry, file, out).await?;
        }
        DevtoolsCommand::Compare { file } => compare(core, session, target, registry, file, out).await?,
        DevtoolsCommand::Profile { event, ttl } => profile(core, session, &event, ttl, out).await?,
        DevtoolsCommand::Stop => {
            let stopped = core.emergency_stop(session).await.map_err(refused)?;
            if out.json {
                out.json(&stopped);
            } else if stopped["stopped"] == true {
                out.write(&format!(
                    "stopped lease {}; original dispatch restored: {}\n",
                    stopped["last"]["lease"], stopped["last"]["restored"]
                ));
            } else {
                out.write("no experiment was running\n");
            }
        }
    }
    Ok(exit::SUCCESS)
}

async fn checkpoint(
    core: &DebugCore,
    session: &str,
    target: &str,
    registry: &Path,
    file: Option<PathBuf>,
    out: Output,
) -> Result<(), Failure> {
    let (digest, at_ms) = core.digest(session).await.map_err(refused)?;
    let file = file.unwrap_or_else(|| default_checkpoint(registry, target));
    let saved = json!({"target": target, "atMs": at_ms, "digest": digest});
    super::write_private(&file, &serde_json::to_vec_pretty(&saved).expect("json"))
        .with_context(|| format!("failed to write {}", file.display()))
        .map_err(Failure::runtime)?;
    if out.json {
        out.json(&json!({"file": file, "items": digest.len(), "atMs": at_ms}));
    } else {
        out.write(&format!(
            "checkpoint of {target} ({} items) in {}\n",
            digest.len(),
            file.display()
        ));
    }
    Ok(())
}

async fn compare(
    core: &DebugCore,
    session: &str,
    target: &str,
    registry: &Path,
    file: Option<PathBuf>,
    out: Output,
) -> Result<(), Failure> {
    let file = file.unwrap_or_else(|| default_checkpoint(registry, target));
    let saved: Value = std::fs::read(&file)
        .with_context(|| {
            format!(
                "no checkpoint at {}: run `dshkit devtools checkpoint` first",
                file.display()
            )
        })
        .and_then(|bytes| Ok(serde_json::from_slice(&bytes)?))
        .map_err(Failure::refused)?;
    let digest: Digest = serde_json::from_value(saved["digest"].clone())
        .with_context(|| format!("{} is not a dshkit checkpoint", file.display()))
        .map_err(Failure::refused)?;
    let (now, at_ms) = core.digest(session).await.map_err(refused)?;
    let comparison = digest.compare(
        &now,
        &file.display().to_string(),
        saved["atMs"].as_u64().unwrap_or(0),
        at_ms,
    );
    if out.json {
        out.json(&comparison);
    } else {
        let mut text = format!(
            "since the checkpoint: {} added, {} removed, {} changed{}\n",
            comparison.totals["added"],
            comparison.totals["removed"],
            comparison.totals["changed"],
            if comparison.truncated {
                " (100 of each listed)"
            } else {
                ""
            }
        );
        for (sign, items) in [
            ("+", &comparison.added),
            ("-", &comparison.removed),
            ("~", &comparison.changed),
        ] {
            for item in items {
                text.push_str(&format!(
                    "{sign} {} {}: {}\n",
                    item.scope,
                    item.key,
                    match (&item.was, &item.now) {
                        (Some(was), Some(now)) => format!("{was} -> {now}"),
                        (Some(one), None) | (None, Some(one)) => one.clone(),
                        (None, None) => String::new(),
                    }
                ));
            }
        }
        out.write(&text);
    }
    Ok(())
}

fn snapshot_text(target: &str, snapshot: &dshkit_devtools::Snapshot) -> String {
    let t = &snapshot.topology;
    let mut text = format!(
        "target {target}: {} fibers, {} events, {} services, {} loader entries\n{} candidate(s) (facts to look at, never causes)\n",
        t.fibers_total,
        t.events_total,
        t.services.len(),
        t.entries.len(),
        snapshot.candidates.len()
    );
    for c in &snapshot.candidates {
        let _ = writeln!(text, "  {}: {}: {}", c.kind, c.subject, c.detail);
    }
    text
}

fn default_checkpoint(registry: &Path, target: &str) -> PathBuf {
    registry.join("checkpoints").join(format!("{target}.json"))
}

async fn watch(
    core: &DebugCore,
    session: &str,
    event: Option<&str>,
    duration: Option<Duration>,
    out: Output,
) -> Result<(), Failure> {
    let until = duration.map(|d| tokio::time::Instant::now() + d);
    loop {
        let left = until.map_or(dshkit_devtools::MAX_WAIT, |u| {
            u.saturating_duration_since(tokio::time::Instant::now())
        });
        if left.is_zero() {
            return Ok(());
        }
        let seen = match core
            .wait(session, event, left.min(dshkit_devtools::MAX_WAIT))
            .await
        {
            Ok(seen) => seen,
            // The target went away: say why and end the watch.
            Err(error @ DebugError::Stale { .. }) => {
                out.write(&format!("{error}\n"));
                return Ok(());
            }
            Err(error) => return Err(refused(error)),
        };
        if seen.outcome == "gap" {
            out.write(&format!(
                "gap: records fell out of the journal before they were read; reading on from {}\n",
                seen.cursor
            ));
        }
        for record in &seen.records {
            if out.json {
                out.json(record);
            } else {
                let value = serde_json::to_value(record).expect("json");
                let kind = value["kind"].as_str().unwrap_or("?").to_owned();
                let mut rest = value.as_object().cloned().unwrap_or_default();
                for key in ["kind", "seq", "at_ms"] {
                    rest.remove(key);
                }
                out.write(&format!("{} {kind} {}\n", record.seq, Value::Object(rest)));
            }
        }
    }
}

async fn profile(
    core: &DebugCore,
    session: &str,
    event: &str,
    ttl: Duration,
    out: Output,
) -> Result<(), Failure> {
    if ttl > MAX_LEASE {
        return Err(Failure::refused(anyhow::anyhow!(
            "a profile lasts at most {}s",
            MAX_LEASE.as_secs()
        )));
    }
    // The lease outlasts the window a little, so the window's own end (not the
    // collector's timer) stops it; the collector's timer covers our death.
    let lease_for = (ttl + Duration::from_secs(2)).min(MAX_LEASE);
    let started = core
        .start_experiment(session, event, lease_for)
        .await
        .map_err(refused)?;
    let lease = started["lease"].as_str().unwrap_or_default().to_owned();
    if !out.json {
        crate::output::progress(&format!(
            "profiling {event} for {}s (lease {lease})",
            ttl.as_secs_f64()
        ));
    }
    let began = tokio::time::Instant::now();
    tokio::time::sleep(ttl).await;
    let held = began.elapsed();
    let stopped = core.stop_experiment(session, &lease).await.map_err(refused)?;
    let mut traces = Vec::new();
    let mut cursor = 0;
    loop {
        let page = core
            .traces(session, Some(&lease), cursor, dshkit_devtools::MAX_PAGE)
            .await
            .map_err(refused)?;
        traces.extend(page["traces"].as_array().cloned().unwrap_or_default());
        match page["cursor"].as_u64() {
            Some(next) => cursor = usize::try_from(next).unwrap_or(usize::MAX),
            None => break,
        }
    }
    let summary = json!({
        "lease": lease,
        "event": event,
        "heldMs": held.as_millis(),
        "restored": stopped["last"]["restored"],
        "tracesDropped": stopped["last"]["tracesDropped"],
        "traces": traces,
    });
    if out.json {
        out.json(&summary);
        return Ok(());
    }
    let mut text = format!(
        "{event}: {} dispatch(es) traced in {} ms (lease {lease}; original dispatch restored: {})\n",
        traces.len(),
        held.as_millis(),
        stopped["last"]["restored"].as_str().unwrap_or("unknown")
    );
    for trace in &traces {
        text.push_str(&format!(
            "#{} {} at {}\n",
            trace["id"], trace["mode"], trace["at"]
        ));
        for l in trace["listeners"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "  {}. {} (fiber {}): {}{}{}{}\n",
                l["index"],
                l["ownerName"].as_str().unwrap_or("?"),
                l["owner"],
                if l["called"] == true {
                    format!("{} µs, self {} µs", l["durationUs"], l["selfUs"])
                } else {
                    "not called".to_owned()
                },
                if l["nextCalls"].is_null() {
                    String::new()
                } else {
                    format!(", next() x{}", l["nextCalls"])
                },
                if l["lateNext"] == true {
                    ", next() after return"
                } else {
                    ""
                },
                if l["async"] == true {
                    ", returned a promise"
                } else {
                    ""
                },
            ));
        }
    }
    out.write(&text);
    Ok(())
}
