//! `dshkit echo …`: record, replay, redact, lint and inspect MCP cassettes.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, anyhow};
use dshkit_echo::cassette;
use dshkit_echo::error::ErrorKind;
use dshkit_echo::key::MatchOptions;
use dshkit_echo::lint::{Linter, entry};
use dshkit_echo::recorder::{RecordOptions, RecordSummary};
use dshkit_echo::redact::Redactor;
use dshkit_echo::replay::{OnMiss, ReplayOptions, Timing};
use dshkit_echo::stdio::{Peer, record_stdio, replay, replay_stdio};
use dshkit_echo::writer::RecordMode;
use tokio::io::BufReader;

use crate::cli::{EchoCommand, ModeArg, OnMissArg, OverlayArgs, OverlayModeArg, RedactionArgs, TimingArg};
use crate::exit::{self, Failure};
use crate::output::Output;

/// Longest recorded delay reproduced by `--timing recorded`.
const TIMING_CAP: Duration = Duration::from_secs(10);

fn redactor(args: &RedactionArgs) -> Result<Redactor, Failure> {
    Redactor::new(&args.redact_env, &args.redact)
        .map_err(|e| Failure::refused(anyhow!("a --redact pattern is not a valid regex: {e}")))
}

/// The redactor of a recording: it also writes the paths of this working
/// directory and home as their tokens, so the cassette replays from anywhere.
fn recording_redactor(args: &RedactionArgs) -> Result<Redactor, Failure> {
    Ok(redactor(args)?.with_paths(dshkit_echo::paths::PathRoots::here()))
}

/// The MCP client side of a proxy: this process's stdin and stdout.
fn client_streams() -> (
    BufReader<impl tokio::io::AsyncRead + Unpin + Send + 'static>,
    impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) {
    let (input, output) = dshkit_mcp::stdio_streams();
    (BufReader::new(input), output)
}

/// Runs `work` until it ends or SIGINT/SIGTERM arrives. On a signal the work is
/// dropped: a server child is killed with it, and what a passthrough appended
/// stays (each record is appended whole as it completes). A recording is not
/// run through this: it finishes its cassette on a signal (see `record_stdio`).
async fn until_signal<T>(
    work: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<Option<T>, Failure> {
    let stop = dshkit_os::signal::stop_requested()
        .context("installing the SIGINT/SIGTERM handlers")
        .map_err(Failure::runtime)?;
    tokio::select! {
        result = work => result.map(Some),
        _ = stop => Ok(None),
    }
}

/// The failure of an Echo error of `kind`: refused input (exit 3) or a
/// runtime failure (exit 4). Every Echo error's kind is its own method
/// (`EchoError::kind`, `CassetteError::kind`, `ContractError::kind`).
fn echo_failure(kind: ErrorKind, error: impl Into<anyhow::Error>) -> Failure {
    match kind {
        ErrorKind::Refused => Failure::refused(error),
        ErrorKind::Runtime => Failure::runtime(error),
    }
}

/// Serves a bound HTTP endpoint until SIGINT/SIGTERM, after printing its one
/// readiness line on stdout (for scripts waiting on it).
async fn serve_until_signal(
    address: std::net::SocketAddr,
    serving: impl std::future::Future<Output = std::io::Result<()>>,
    out: Output,
) -> Result<(), Failure> {
    out.write(&format!("dshkit echo: http://{address}/mcp\n"));
    let work = async {
        serving
            .await
            .context("the HTTP endpoint failed")
            .map_err(Failure::runtime)
    };
    until_signal(work).await.map(drop)
}

fn note_recorded(summary: &RecordSummary) {
    note(&format!(
        "recorded {} interaction(s), {} message(s){} into {}",
        summary.interactions,
        summary.messages,
        if summary.raw_lines > 0 {
            format!(", {} non-JSON line(s)", summary.raw_lines)
        } else {
            String::new()
        },
        summary
            .cassette
            .as_deref()
            .map_or_else(|| "(nothing)".into(), |p| p.display().to_string())
    ));
}

fn note(message: &str) {
    // stdout carries MCP frames; notes go to stderr.
    crate::output::stderr_line(&format!("dshkit echo: {message}"));
}

pub(crate) async fn run(command: EchoCommand, out: Output) -> Result<u8, Failure> {
    match command {
        EchoCommand::Record {
            output,
            mode,
            http: Some(url),
            port,
            redaction,
            ..
        } => record_http_command(output, mode, &url, port, &redaction, out).await,
        EchoCommand::Record {
            output,
            mode,
            redaction,
            argv,
            ..
        } => record_command(output, mode, &redaction, argv).await,
        EchoCommand::Replay {
            cassette,
            on_miss,
            timing,
            timing_scale,
            annotate,
            ignore_paths,
            sequential,
            http,
            redaction,
            argv,
        } => {
            let options = replay_options(
                cassette,
                on_miss,
                timing,
                timing_scale,
                annotate,
                ignore_paths,
                sequential,
                &redaction,
                argv,
            )?;
            match http {
                Some(port) => replay_http_command(port, options, out).await,
                None => replay_command(options).await,
            }
        }
        EchoCommand::Redact {
            cassette: path,
            scan,
            redaction,
        } => redact_command(&path, scan, &redactor(&redaction)?, out),
        EchoCommand::Verify {
            cassette: path,
            url,
            ignore,
            redaction,
            argv,
        } => {
            let target = match url {
                Some(url) => dshkit_echo::verify::Target::Http(url),
                None => dshkit_echo::verify::Target::Stdio(argv),
            };
            let ignore = ignore
                .iter()
                .map(|text| dshkit_echo::verify::Pointer::parse(text))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Failure::refused(anyhow!("--ignore: {e}")))?;
            let options = dshkit_echo::verify::VerifyOptions {
                redactor: redactor(&redaction)?,
                ignore,
            };
            verify_command(&path, options, &target, out).await
        }
        EchoCommand::Snapshot {
            cassette: path,
            output,
        } => snapshot_command(&path, output.as_deref(), out),
        EchoCommand::Diff { old, new } => diff_command(&old, &new, out),
        EchoCommand::Lint { cassette: path } => lint_command(&path, out),
        EchoCommand::Inspect { cassette: path } => inspect_command(&path, out),
        EchoCommand::DshOverlay(args) => overlay_command(&args, out),
    }
}

async fn record_http_command(
    output: std::path::PathBuf,
    mode: ModeArg,
    url: &str,
    port: u16,
    redaction: &RedactionArgs,
    out: Output,
) -> Result<u8, Failure> {
    let mode = match mode {
        ModeArg::Once => RecordMode::Once,
        ModeArg::All => RecordMode::All,
        ModeArg::NewEpisodes => {
            return Err(Failure::refused(anyhow!(
                "--mode new-episodes is not available with --http (the recorder is a proxy and cannot answer from the cassette): record anew with --mode once or --mode all, or append misses with `dshkit echo replay FILE --http --on-miss passthrough -- <server argv>`"
            )));
        }
    };
    let options = RecordOptions {
        argv: Vec::new(),
        cassette: output,
        mode,
        redactor: recording_redactor(redaction)?,
    };
    let (address, proxy, serving) = dshkit_echo::http::bind_recorder(port, url, options)
        .await
        .map_err(|e| echo_failure(e.kind(), e))?;
    serve_until_signal(address, serving, out).await?;
    note_recorded(&proxy.finish().map_err(|e| echo_failure(e.kind(), e))?);
    Ok(exit::SUCCESS)
}

async fn record_command(
    output: std::path::PathBuf,
    mode: ModeArg,
    redaction: &RedactionArgs,
    argv: Vec<String>,
) -> Result<u8, Failure> {
    let redactor = recording_redactor(redaction)?;
    let mode = match mode {
        ModeArg::Once => RecordMode::Once,
        ModeArg::NewEpisodes => RecordMode::NewEpisodes,
        ModeArg::All => RecordMode::All,
    };
    if mode == RecordMode::NewEpisodes && output.exists() {
        // Replay what is there; misses go to the real server and are appended.
        let (client_in, client_out) = client_streams();
        let work = async {
            replay(
                client_in,
                client_out,
                ReplayOptions {
                    cassette: output.clone(),
                    timing: Timing::None,
                    on_miss: OnMiss::Passthrough(argv),
                    annotate: false,
                    matching: MatchOptions::default(),
                    redactor,
                },
                Peer::Stdout,
            )
            .await
            .map_err(|e| echo_failure(e.kind(), e))
        };
        let Some(summary) = until_signal(work).await? else {
            return Ok(exit::SUCCESS);
        };
        note(&format!(
            "{} replayed, {} new episode(s) appended to {}",
            summary.hits,
            summary.passthroughs,
            output.display()
        ));
        return Ok(exit::SUCCESS);
    }
    // A signal ends the forwarding; what passed is still recorded and the
    // cassette finished before the exit.
    let stop = dshkit_os::signal::stop_requested()
        .context("installing the SIGINT/SIGTERM handlers")
        .map_err(Failure::runtime)?;
    let summary = record_stdio(
        client_streams,
        RecordOptions {
            argv,
            cassette: output,
            mode: if mode == RecordMode::NewEpisodes {
                RecordMode::Once
            } else {
                mode
            },
            redactor,
        },
        stop,
    )
    .await
    .map_err(|e| echo_failure(e.kind(), e))?;
    note_recorded(&summary);
    Ok(exit::SUCCESS)
}

#[expect(clippy::too_many_arguments, reason = "one argument per replay flag")]
fn replay_options(
    cassette: std::path::PathBuf,
    on_miss: OnMissArg,
    timing: TimingArg,
    timing_scale: f64,
    annotate: bool,
    ignore_paths: Vec<String>,
    sequential: bool,
    redaction: &RedactionArgs,
    argv: Vec<String>,
) -> Result<ReplayOptions, Failure> {
    let on_miss = match on_miss {
        OnMissArg::Error => OnMiss::Error,
        OnMissArg::Passthrough if argv.is_empty() => {
            return Err(Failure::refused(anyhow!(
                "--on-miss passthrough needs the real server: dshkit echo replay FILE --on-miss passthrough -- <server argv>"
            )));
        }
        OnMissArg::Passthrough => OnMiss::Passthrough(argv),
    };
    Ok(ReplayOptions {
        cassette,
        timing: match timing {
            TimingArg::None => Timing::None,
            TimingArg::Recorded => Timing::Recorded {
                scale: timing_scale,
                cap: TIMING_CAP,
            },
        },
        on_miss,
        annotate,
        matching: MatchOptions {
            ignore_paths,
            sequential_fallback: sequential,
        },
        redactor: redactor(redaction)?,
    })
}

async fn replay_http_command(port: u16, options: ReplayOptions, out: Output) -> Result<u8, Failure> {
    let (address, serving) = dshkit_echo::http::bind(port, options)
        .await
        .map_err(|e| echo_failure(e.kind(), e))?;
    serve_until_signal(address, serving, out).await?;
    Ok(exit::SUCCESS)
}

async fn replay_command(options: ReplayOptions) -> Result<u8, Failure> {
    let work = async {
        replay_stdio(client_streams, options)
            .await
            .map_err(|e| echo_failure(e.kind(), e))
    };
    let Some(summary) = until_signal(work).await? else {
        return Ok(exit::SUCCESS);
    };
    note(&format!(
        "{} hit(s), {} miss(es), {} passthrough(s)",
        summary.hits, summary.misses, summary.passthroughs
    ));
    Ok(exit::SUCCESS)
}

/// Exit code of `echo verify` when it could not run (JSON-RPC-style: 2 = error).
const VERIFY_ERROR: u8 = 2;

async fn verify_command(
    path: &Path,
    options: dshkit_echo::verify::VerifyOptions,
    target: &dshkit_echo::verify::Target,
    out: Output,
) -> Result<u8, Failure> {
    // One pass to refuse a damaged cassette before any request reaches the
    // server, then one that sends: neither holds the cassette in memory.
    let records = cassette::Records::open(path).and_then(|mut records| {
        records.try_for_each(|record| record.map(drop))?;
        cassette::Records::open(path)
    });
    let records = match records {
        Ok(records) => records,
        Err(e) => {
            note(&format!("error: {e}"));
            return Ok(VERIFY_ERROR);
        }
    };
    let checks = match dshkit_echo::verify::verify(records, target, options).await {
        Ok(checks) => checks,
        Err(e) => {
            note(&format!("error: {e}"));
            return Ok(VERIFY_ERROR);
        }
    };
    let drift = checks
        .iter()
        .filter(|c| c.outcome != dshkit_echo::verify::Outcome::Match)
        .count();
    if out.json {
        out.json(&serde_json::json!({ "checks": checks, "drift": drift }));
    } else {
        let mut text = String::new();
        for check in &checks {
            let request = match &check.tool {
                Some(tool) => format!("{} {tool}", check.method),
                None => check.method.clone(),
            };
            text.push_str(&format!(
                "#{:<4} {:<22} {:<36}{}{}\n",
                check.ordinal,
                serde_json::to_value(check.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                request,
                if check.paths.is_empty() {
                    String::new()
                } else {
                    format!(" at {:?}", check.paths)
                },
                check
                    .detail
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        }
        text.push_str(&format!("{} request(s), {drift} drifted\n", checks.len()));
        out.write(&text);
    }
    Ok(if drift == 0 {
        exit::SUCCESS
    } else {
        exit::PROBLEM_FOUND
    })
}

fn snapshot_command(path: &Path, output: Option<&Path>, out: Output) -> Result<u8, Failure> {
    use dshkit_echo::contract::Contract;
    let contract = Contract::read(path).map_err(|e| echo_failure(e.kind(), e))?;
    if contract.tools.is_empty() {
        return Err(Failure::refused(anyhow!(
            "{} holds no tools/list answer",
            path.display()
        )));
    }
    let mut snapshot = contract.to_snapshot();
    redactor(&RedactionArgs {
        redact_env: Vec::new(),
        redact: Vec::new(),
    })?
    .value(&mut snapshot);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&snapshot).map_err(Failure::runtime)?
    );
    match output {
        Some(file) => {
            dshkit_os::fs::write_atomic(file, text.as_bytes())
                .with_context(|| format!("writing {}", file.display()))
                .map_err(Failure::runtime)?;
            note(&format!(
                "{} tool(s) written to {}",
                contract.tools.len(),
                file.display()
            ));
        }
        None => out.write(&text),
    }
    Ok(exit::SUCCESS)
}

fn diff_command(old: &Path, new: &Path, out: Output) -> Result<u8, Failure> {
    use dshkit_echo::contract::{Contract, Severity, diff};
    let before = Contract::read(old).map_err(|e| echo_failure(e.kind(), e))?;
    let after = Contract::read(new).map_err(|e| echo_failure(e.kind(), e))?;
    let changes = diff(&before, &after);
    let count = |s: Severity| changes.iter().filter(|c| c.severity == s).count();
    let (breaking, dangerous) = (count(Severity::Breaking), count(Severity::Dangerous));
    if out.json {
        out.json(&serde_json::json!({ "changes": changes, "breaking": breaking, "dangerous": dangerous }));
    } else {
        let mut text = String::new();
        for change in &changes {
            text.push_str(&format!(
                "{:<9} {:<36} {}{}: {}\n",
                serde_json::to_value(change.severity)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                change.rule,
                change.tool,
                if change.path.is_empty() {
                    String::new()
                } else {
                    format!(" {}", change.path)
                },
                change.message
            ));
        }
        text.push_str(&format!(
            "{} change(s): {breaking} breaking, {dangerous} dangerous, {} minor, {} info\n",
            changes.len(),
            count(Severity::Minor),
            count(Severity::Info)
        ));
        out.write(&text);
    }
    Ok(if breaking + dangerous > 0 {
        exit::PROBLEM_FOUND
    } else {
        exit::SUCCESS
    })
}

fn lint_command(path: &Path, out: Output) -> Result<u8, Failure> {
    // Record by record: a cassette of any size is linted in bounded memory.
    let mut records = cassette::Records::open(path).map_err(|e| echo_failure(e.kind(), e))?;
    let mut linter = Linter::new(records.header());
    for record in records.by_ref() {
        linter.record(&record.map_err(|e| echo_failure(e.kind(), e))?);
    }
    let mut findings = linter.finish();
    for warning in records.warnings().iter().cloned() {
        findings.push(dshkit_echo::lint::Finding {
            level: "warning",
            rule: "reader",
            message: warning,
        });
    }
    if out.json {
        out.json(&findings);
    } else if findings.is_empty() {
        out.write(&format!("{}: ok\n", path.display()));
    } else {
        let text = findings.iter().fold(String::new(), |mut text, f| {
            text.push_str(&format!(
                "{}: {} [{}] {}\n",
                path.display(),
                f.level,
                f.rule,
                f.message
            ));
            text
        });
        out.write(&text);
    }
    Ok(if findings.iter().any(|f| f.level == "error") {
        exit::PROBLEM_FOUND
    } else {
        exit::SUCCESS
    })
}

/// Timeline lines written to stdout at once.
const INSPECT_CHUNK: usize = 1024;

fn inspect_command(path: &Path, out: Output) -> Result<u8, Failure> {
    // Record by record, written as read: a cassette of any size is shown in
    // bounded memory.
    let mut records = cassette::Records::open(path).map_err(|e| echo_failure(e.kind(), e))?;
    let header = records.header().clone();
    let mut chunk = String::new();
    if out.json {
        let header = serde_json::to_string(&header).expect("a header serializes");
        chunk.push_str(&format!("{{\n  \"header\": {header},\n  \"timeline\": ["));
    } else {
        chunk.push_str(&format!(
            "{} · {} · era {} · protocol {} · server {} · recorded by {}{}\n",
            path.display(),
            header.transport,
            header.era,
            header.protocol_version.as_deref().unwrap_or("?"),
            header.server_info.as_ref().map_or_else(
                || "?".into(),
                |s| format!(
                    "{} {}",
                    s["name"].as_str().unwrap_or("?"),
                    s["version"].as_str().unwrap_or("")
                )
            ),
            header.recorder,
            if header.redacted { " · redacted" } else { "" }
        ));
    }
    for (index, record) in records.by_ref().enumerate() {
        let entry = entry(&record.map_err(|e| echo_failure(e.kind(), e))?);
        if out.json {
            let separator = if index == 0 { "\n    " } else { ",\n    " };
            chunk.push_str(separator);
            chunk.push_str(&serde_json::to_string(&entry).expect("an entry serializes"));
        } else {
            chunk.push_str(&format!(
                "{:>5} {:<16} {:<26} {}{}{}{}\n",
                entry.ordinal.map_or_else(|| "-".into(), |o| format!("#{o}")),
                entry.kind,
                entry.method,
                entry.summary,
                entry.ms.map(|ms| format!("  {ms} ms")).unwrap_or_default(),
                if entry.notifications > 0 {
                    format!("  +{} notification(s)", entry.notifications)
                } else {
                    String::new()
                },
                if entry.is_error { "  ERROR" } else { "" }
            ));
        }
        if index % INSPECT_CHUNK == INSPECT_CHUNK - 1 {
            out.write(&std::mem::take(&mut chunk));
        }
    }
    if out.json {
        let warnings = serde_json::to_string(records.warnings()).expect("strings serialize");
        chunk.push_str(&format!("\n  ],\n  \"warnings\": {warnings}\n}}\n"));
    } else {
        for warning in records.warnings() {
            chunk.push_str(&format!("warning: {warning}\n"));
        }
    }
    out.write(&chunk);
    Ok(exit::SUCCESS)
}

fn redact_command(path: &Path, scan: bool, redactor: &Redactor, out: Output) -> Result<u8, Failure> {
    if scan {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(Failure::refused)?;
        let found = redactor.scan(&text);
        if out.json {
            out.json(&found);
        } else if found.is_empty() {
            out.write(&format!("{}: no secrets found\n", path.display()));
        } else {
            let text = found.iter().fold(String::new(), |mut text, f| {
                let place = if f.column > 0 {
                    format!("{}:{}", f.line, f.column)
                } else {
                    f.line.to_string()
                };
                text.push_str(&format!(
                    "{}:{place}: secret ({}) {}\n",
                    path.display(),
                    f.rule,
                    f.hint
                ));
                text
            });
            out.write(&text);
        }
        return Ok(if found.is_empty() {
            exit::SUCCESS
        } else {
            exit::PROBLEM_FOUND
        });
    }
    // Record by record, in memory bounded by the longest line; the file is
    // replaced whole (atomically) once every record is written.
    let changed =
        dshkit_echo::writer::redact_in_place(path, redactor).map_err(|e| echo_failure(e.kind(), e))?;
    out.write(&format!(
        "{}: {}\n",
        path.display(),
        if changed {
            "secrets replaced by placeholders"
        } else {
            "nothing to redact"
        }
    ));
    Ok(exit::SUCCESS)
}

/// Writes the overlay and its recovery manifest; never touches the profile.
fn overlay_command(args: &OverlayArgs, out: Output) -> Result<u8, Failure> {
    let valid_name = !args.server.is_empty()
        && args.server.len() <= 64
        && args
            .server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return Err(Failure::refused(anyhow!(
            "--server must be letters, digits, `-` or `_` (at most 64): it becomes mcp__{{server}}__<tool>"
        )));
    }
    if args.mode != OverlayModeArg::Replay && args.argv.is_empty() {
        return Err(Failure::refused(anyhow!(
            "mode {:?} needs the real server after --: dshkit echo dsh-overlay ... -- <server argv>",
            args.mode
        )));
    }
    if args.mode == OverlayModeArg::Replay && !args.cassette.is_file() {
        return Err(Failure::refused(anyhow!(
            "{} does not exist: record it first (mode record)",
            args.cassette.display()
        )));
    }
    let env = dshkit_env::Environment::from_process();
    let home = args
        .dsh_home
        .clone()
        .or_else(|| dshkit_env::dsh::home(&env))
        .ok_or_else(|| Failure::refused(anyhow!("no DSH home: pass --dsh-home or set DSH_HOME or HOME")))?;
    let (row, cassette, mode_name) = overlay_row(args)?;
    let overlay = match &args.output {
        Some(path) => path.clone(),
        None => home
            .join("overlays")
            .join(format!("echo-{}-{mode_name}.patch.yml", args.server)),
    };
    if let Some(parent) = overlay.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))
            .map_err(Failure::runtime)?;
    }
    let profile_patch = dshkit_env::dsh::profile_dir(&home, &args.profile).join("cordis.patch.yml");
    let profile_digest = std::fs::read(&profile_patch).ok().map(|bytes| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(bytes))
    });
    let yaml = format!(
        "# Written by `dshkit echo dsh-overlay` ({mode_name} {}). Use: dsh --profile {} --patch {}\n# The profile is untouched; delete this file (and its .manifest.json) to undo.\n{}",
        args.server,
        args.profile,
        overlay.display(),
        row.to_patch_yaml()
    );
    dshkit_dsh::patch::write_atomic(&overlay, yaml.as_bytes()).map_err(Failure::runtime)?;
    let manifest = serde_json::json!({
        "formatVersion": 1,
        "tool": format!("dshkit {}", env!("CARGO_PKG_VERSION")),
        "overlay": overlay,
        "profile": args.profile,
        "profilePatch": profile_patch,
        "profilePatchSha256": profile_digest,
        "server": args.server,
        "mode": mode_name,
        "cassette": cassette,
        "row": row.to_value(),
        "undo": format!("delete {} and this manifest; run dsh without --patch", overlay.display()),
    });
    let manifest_path = overlay.with_extension("manifest.json");
    dshkit_dsh::patch::write_atomic(
        &manifest_path,
        serde_json::to_string_pretty(&manifest)
            .unwrap_or_default()
            .as_bytes(),
    )
    .map_err(Failure::runtime)?;
    if out.json {
        out.json(&manifest);
    } else {
        out.write(&format!(
            "wrote {} ({mode_name} {}) and {}\nrun: dsh --profile {} --patch {}\n",
            overlay.display(),
            args.server,
            manifest_path.display(),
            args.profile,
            overlay.display()
        ));
    }
    Ok(exit::SUCCESS)
}

/// The MCP row of an overlay: the server run through `dshkit echo` in `args.mode`.
fn overlay_row(
    args: &OverlayArgs,
) -> Result<(dshkit_dsh::row::McpRow, std::path::PathBuf, &'static str), Failure> {
    use dshkit_dsh::row::{McpRow, Transport};
    let exe = std::env::current_exe()
        .and_then(dshkit_os::fs::canonicalize)
        .context("failed to find the path of the running dshkit executable")
        .map_err(Failure::runtime)?;
    let cassette = std::path::absolute(&args.cassette).map_err(Failure::runtime)?;
    let cassette_text = cassette.display().to_string();
    let mode_name = match args.mode {
        OverlayModeArg::Record => "record",
        OverlayModeArg::Replay => "replay",
        OverlayModeArg::Passthrough => "passthrough",
    };
    let mut command: Vec<String> = match args.mode {
        OverlayModeArg::Record => vec![
            "echo".into(),
            "record".into(),
            "-o".into(),
            cassette_text,
            "--mode".into(),
            "new-episodes".into(),
            "--".into(),
        ],
        OverlayModeArg::Replay => vec!["echo".into(), "replay".into(), cassette_text],
        OverlayModeArg::Passthrough => vec![
            "echo".into(),
            "replay".into(),
            cassette_text,
            "--on-miss".into(),
            "passthrough".into(),
            "--".into(),
        ],
    };
    if args.mode != OverlayModeArg::Record && !args.no_annotate {
        // An agent in DSH sees in each tool result whether the cassette answered.
        let at = command.iter().position(|a| a == "--").unwrap_or(command.len());
        command.insert(at, "--annotate".into());
    }
    if args.mode != OverlayModeArg::Replay {
        command.extend(args.argv.iter().cloned());
    }
    let mut row = McpRow::new(Transport::Stdio {
        command: exe,
        args: command,
    });
    row.id = format!("mcp-{}", args.server);
    row.server_name.clone_from(&args.server);
    Ok((row, cassette, mode_name))
}
