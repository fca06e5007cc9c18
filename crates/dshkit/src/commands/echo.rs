//! `dshkit echo …`: record, replay, redact, lint and inspect MCP cassettes.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, anyhow};
use dshkit_dsh::overlay::{self, OverlayMode, OverlayRequest};
use dshkit_echo::annotation;
use dshkit_echo::key::MatchOptions;
use dshkit_echo::recorder::{RecordOptions, RecordSummary};
use dshkit_echo::redact::Redactor;
use dshkit_echo::replay::{OnMiss, ReplayOptions, Timing};
use dshkit_echo::show;
use dshkit_echo::stdio::{Peer, record_stdio, replay, replay_stdio};
use dshkit_echo::upstream::Upstream;
use dshkit_echo::writer::RecordMode;
use dshkit_os::error::ErrorClass;
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
    note(&show::recorded_note(summary));
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
            ca_files,
            redaction,
            ..
        } => record_http_command(output, mode, &upstream(url, ca_files), port, &redaction, out).await,
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
            ca_files,
            ignore,
            redaction,
            junit,
            argv,
        } => {
            let target = match url {
                Some(url) => dshkit_echo::verify::Target::Http(upstream(url, ca_files)),
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
            verify_command(&path, options, &target, junit.as_deref(), out).await
        }
        EchoCommand::Snapshot {
            cassette: path,
            output,
        } => snapshot_command(&path, output.as_deref(), out),
        EchoCommand::Diff { old, new } => diff_command(&old, &new, out),
        EchoCommand::Lint { cassette: path } => lint_command(&path, out),
        EchoCommand::Inspect { cassette: path, html } => inspect_command(&path, html.as_deref(), out),
        EchoCommand::Annotate => seam(annotation::Seam::Annotate, out),
        EchoCommand::Interaction => seam(annotation::Seam::Interaction, out),
        EchoCommand::DshOverlay(args) => overlay_command(args, out),
        EchoCommand::DshProxies => dsh_proxies(out).await,
    }
}

/// The live HTTP server at `url`, trusting the system's CAs, `SSL_CERT_FILE`'s
/// and each `--ca-file`.
fn upstream(url: String, ca_files: Vec<std::path::PathBuf>) -> Upstream {
    Upstream::trusting(url, ca_files)
}

async fn record_http_command(
    output: std::path::PathBuf,
    mode: ModeArg,
    upstream: &Upstream,
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
    let (address, proxy, serving) = dshkit_echo::http::bind_recorder(port, upstream, options)
        .await
        .map_err(Failure::from)?;
    serve_until_signal(address, serving, out).await?;
    note_recorded(&proxy.finish().map_err(Failure::from)?);
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
            .map_err(Failure::from)
        };
        let Some(summary) = until_signal(work).await? else {
            return Ok(exit::SUCCESS);
        };
        note(&show::appended_note(&summary, &output));
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
    .map_err(Failure::from)?;
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
        .map_err(Failure::from)?;
    serve_until_signal(address, serving, out).await?;
    Ok(exit::SUCCESS)
}

async fn replay_command(options: ReplayOptions) -> Result<u8, Failure> {
    let work = async { replay_stdio(client_streams, options).await.map_err(Failure::from) };
    let Some(summary) = until_signal(work).await? else {
        return Ok(exit::SUCCESS);
    };
    note(&show::replayed_note(&summary));
    Ok(exit::SUCCESS)
}

/// Exit code of `echo verify` when it could not run (JSON-RPC-style: 2 = error);
/// a server it could not reach exits as every unreachable one does
/// ([`exit::UNREACHABLE`]).
const VERIFY_ERROR: u8 = 2;

async fn verify_command(
    path: &Path,
    options: dshkit_echo::verify::VerifyOptions,
    target: &dshkit_echo::verify::Target,
    junit: Option<&Path>,
    out: Output,
) -> Result<u8, Failure> {
    let verified = show::verify_cassette(path, target, options).await;
    if let Some(file) = junit {
        dshkit_echo::junit::write(file, path, verified.as_ref())?;
    }
    let verified = match verified {
        Ok(verified) => verified,
        Err(e) => {
            note(&format!("error: {e}"));
            return Ok(match e.class() {
                ErrorClass::Unreachable => exit::for_class(ErrorClass::Unreachable),
                ErrorClass::Refused | ErrorClass::Runtime => VERIFY_ERROR,
            });
        }
    };
    Ok(out.report(&verified, || verified.text(), verified.drift != 0))
}

fn snapshot_command(path: &Path, output: Option<&Path>, out: Output) -> Result<u8, Failure> {
    let Some((text, tools)) = show::snapshot(path).map_err(Failure::from)? else {
        return Err(Failure::refused(anyhow!(
            "{} holds no tools/list answer",
            path.display()
        )));
    };
    match output {
        Some(file) => {
            dshkit_os::fs::write_atomic(file, text.as_bytes())
                .with_context(|| format!("writing {}", file.display()))
                .map_err(Failure::runtime)?;
            note(&format!("{tools} tool(s) written to {}", file.display()));
        }
        None => out.write(&text),
    }
    Ok(exit::SUCCESS)
}

fn diff_command(old: &Path, new: &Path, out: Output) -> Result<u8, Failure> {
    let diff = show::ContractDiff::read(old, new).map_err(Failure::from)?;
    Ok(out.report(&diff.to_json(), || diff.text(), diff.has_risk()))
}

fn lint_command(path: &Path, out: Output) -> Result<u8, Failure> {
    let findings = show::lint(path).map_err(Failure::from)?;
    Ok(out.report(
        &findings,
        || show::lint_text(path, &findings),
        findings.iter().any(|f| f.level == "error"),
    ))
}

/// A seam of the DSH plugin: its request on stdin, its answer (with the
/// format version) on stdout.
fn seam(seam: annotation::Seam, out: Output) -> Result<u8, Failure> {
    let answer = annotation::answer_seam(seam, std::io::stdin().lock())
        .map_err(|e| Failure::of_class(e.class(), e))?;
    out.json(&answer);
    Ok(exit::SUCCESS)
}

/// The DSH plugin's HTTP proxies, until stdin ends or a signal arrives.
async fn dsh_proxies(out: Output) -> Result<u8, Failure> {
    let stop = dshkit_os::signal::stop_requested()
        .context("installing the SIGINT/SIGTERM handlers")
        .map_err(Failure::runtime)?;
    let ready = |proxies: &[dshkit_echo::dsh_proxy::Started]| {
        // One line: the plugin waits for it.
        out.json_line(&dshkit_echo::dsh_proxy::ready_answer(proxies));
    };
    let recorded = dshkit_echo::dsh_proxy::serve_seam(tokio::io::stdin(), ready, stop)
        .await
        .map_err(|e| Failure::of_class(e.class(), e))?;
    for (id, summary) in recorded {
        note(&format!("{id}: {}", show::recorded_note(&summary)));
    }
    Ok(exit::SUCCESS)
}

fn inspect_command(path: &Path, html: Option<&Path>, out: Output) -> Result<u8, Failure> {
    if let Some(file) = html {
        dshkit_echo::page::write(path, file)?;
    }
    show::inspect(path, out.json, |chunk| out.write(chunk)).map_err(Failure::from)?;
    Ok(exit::SUCCESS)
}

fn redact_command(path: &Path, scan: bool, redactor: &Redactor, out: Output) -> Result<u8, Failure> {
    if scan {
        let found = show::scan(path, redactor).map_err(Failure::from)?;
        return Ok(out.report(&found, || show::scan_text(path, &found), !found.is_empty()));
    }
    // Record by record, in memory bounded by the longest line; the file is
    // replaced whole (atomically) once every record is written.
    let changed = dshkit_echo::writer::redact_in_place(path, redactor).map_err(Failure::from)?;
    out.write(&show::redacted_text(path, changed));
    Ok(exit::SUCCESS)
}

/// Writes the overlay and its recovery manifest; never touches the profile.
fn overlay_command(args: OverlayArgs, out: Output) -> Result<u8, Failure> {
    let env = dshkit_env::Environment::from_process();
    let request = OverlayRequest {
        home: args.dsh_home.or_else(|| dshkit_env::dsh::home(&env)),
        profile: args.profile,
        server: args.server,
        mode: match args.mode {
            OverlayModeArg::Record => OverlayMode::Record,
            OverlayModeArg::Replay => OverlayMode::Replay,
            OverlayModeArg::Passthrough => OverlayMode::Passthrough,
        },
        cassette: args.cassette,
        output: args.output,
        annotate: !args.no_annotate,
        argv: args.argv,
        binary: super::dsh::current_binary()?,
    };
    let overlay = overlay::write(&request).map_err(|e| Failure::of_class(e.class(), e))?;
    if out.json {
        out.json(&overlay.manifest);
    } else {
        out.write(&overlay.text());
    }
    Ok(exit::SUCCESS)
}
