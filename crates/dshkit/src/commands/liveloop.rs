//! `dshkit detect`, `dshkit run` and `dshkit verify`: LiveLoop for people. Each
//! turns its flags into a request for a workflow of `dshkit_liveloop::workflow`
//! and prints the result with its renderers.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow};
use dshkit_env::resolve::{Flags, SettingsFile};
use dshkit_liveloop::preview::PreviewManager;
use dshkit_liveloop::runtime::{RuntimeConfig, RuntimeManager};
use dshkit_liveloop::verify::evidence::{EvidenceStore, VERIFY_DIR};
use dshkit_liveloop::verify::{Assertion, ReferenceSpec, Verdict, VerifyRequest, junit};
use dshkit_liveloop::workflow::{
    self, AppTarget, DetectRequest, Stages, StartRequest, StartTarget, Started, Surface, VerifyAppRequest,
    VerifyTools, Watched, WorkflowError, render,
};

use crate::cli::{DetectArgs, PortConflictArg, RunArgs, VerifyArgs};
use crate::exit::{self, Failure};
use crate::output::{Output, progress};

/// A workflow's error as the CLI exits with it: a refusal with a stable code
/// (under `--json` written to stdout as `{"error": {...}}`), else by its kind.
fn failure(error: WorkflowError) -> Failure {
    match (render::refusal(&error, Surface::Cli), error) {
        (Some(refusal), _) => Failure::refused(refusal),
        (None, WorkflowError::Waiting { error, .. }) => Failure::runtime(error),
        (None, error) if error.is_runtime_failure() => Failure::runtime(error),
        (None, error) => Failure::refused(error),
    }
}

/// The stages the CLI shows, on stderr.
fn stages() -> Stages {
    Stages::new(|stage| {
        if let Some(line) = render::stage_line(stage, Surface::Cli) {
            progress(&line);
        }
    })
}

pub(crate) fn detect_command(args: &DetectArgs, out: Output) -> Result<u8, Failure> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let detected = workflow::detect_app(&DetectRequest {
        dir,
        max_listed: None,
    })
    .map_err(failure)?;
    Ok(out.report(
        &detected.detection,
        || render::detection_text(&detected.detection),
        !detected.found_one(),
    ))
}

/// How much longer than the server's own deadline the CLI waits for it, so
/// that deadline decides (and the server is stopped and says so) before the
/// wait gives up.
const READY_WAIT_MARGIN: Duration = Duration::from_secs(10);

/// A runtime whose servers get `ready_timeout` to become ready.
fn runtime_for(ready_timeout: Duration) -> RuntimeManager {
    RuntimeManager::new(RuntimeConfig {
        ready_timeout,
        ..RuntimeConfig::default()
    })
}

/// Starting the app in `dir` (the `--app` one of several).
fn start_request(
    dir: PathBuf,
    app: Option<PathBuf>,
    conflict: PortConflictArg,
    ready: Duration,
) -> StartRequest {
    StartRequest {
        target: StartTarget::Detect { dir, app },
        on_port_conflict: conflict.into(),
        wait: ready + READY_WAIT_MARGIN,
    }
}

pub(crate) async fn run_command(args: RunArgs, out: Output) -> Result<u8, Failure> {
    let runtime = runtime_for(args.ready_timeout);
    let served = serve(&runtime, args, out).await;
    runtime.shutdown().await;
    match served {
        Ok(Watched::Stopped) => {
            progress("stopped");
            Ok(exit::SUCCESS)
        }
        Ok(Watched::LeftReady(status)) => Err(Failure::runtime(anyhow!(render::left_ready_text(&status)))),
        Err(failure) => Err(failure),
    }
}

async fn serve(runtime: &RuntimeManager, args: RunArgs, out: Output) -> Result<Watched, Failure> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let request = start_request(dir, args.app, args.on_port_conflict, args.ready_timeout);
    let status = match workflow::start_app(runtime, &request, &stages())
        .await
        .map_err(failure)?
    {
        Started::Ready { status, .. } => status,
        Started::NeverReady { failure, .. } => {
            return Err(Failure::runtime(anyhow!(render::never_ready_text(&failure))));
        }
    };
    if out.json {
        out.json(&status);
    } else {
        out.write(&format!("{}\n", status.url.as_deref().unwrap_or("")));
    }
    progress("serving; press Ctrl-C to stop the server and its whole process tree");
    let stop = dshkit_os::signal::stop_requested()
        .context("installing the SIGINT/SIGTERM handlers")
        .map_err(Failure::runtime)?;
    workflow::watch_ready(runtime, &status.id, stop)
        .await
        .map_err(failure)
}

fn request_of(args: &VerifyArgs) -> Result<VerifyRequest, Failure> {
    let refuse = |e: String| Failure::refused(anyhow!(e));
    let mut request = match &args.spec {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))
                .map_err(Failure::refused)?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not a verification request", path.display()))
                .map_err(Failure::refused)?
        }
        None => VerifyRequest::default(),
    };
    for step in &args.steps {
        request.steps.push(workflow::parse_step(step).map_err(refuse)?);
    }
    let assertions = &mut request.assertions;
    let texts =
        |texts: &[String], of: fn(String) -> Assertion| texts.iter().cloned().map(of).collect::<Vec<_>>();
    assertions.extend(texts(&args.expect_text, |text| Assertion::TextPresent { text }));
    assertions.extend(texts(&args.expect_absent, |text| Assertion::TextAbsent { text }));
    for element in &args.expect_element {
        let (role, name) = workflow::parse_role_name(element).map_err(refuse)?;
        assertions.push(Assertion::Element { role, name });
    }
    assertions.extend(
        args.expect_title
            .clone()
            .map(|contains| Assertion::Title { contains }),
    );
    assertions.extend(
        args.expect_url
            .clone()
            .map(|contains| Assertion::Url { contains }),
    );
    assertions.extend(args.expect_status.map(|code| Assertion::Status { code }));
    if let Some(reference) = &args.reference {
        request.reference = Some(ReferenceSpec {
            path: reference.clone(),
            max_mismatch_ratio: args.max_mismatch,
            update: args.update_reference,
        });
    }
    request.full_page |= args.full_page;
    if args.step_screenshots {
        request.step_screenshots = Some(true);
    }
    request.allow_console_errors |= args.allow_console_errors;
    if let Some(window) = args.quiet_window {
        request.quiet_window_ms = Some(dshkit_env::duration::millis(window));
    }
    // `--path`, else the spec's own `url`, is resolved against the target's URL.
    request.url = args.path.clone().or(request.url);
    Ok(request)
}

pub(crate) async fn verify_command(args: VerifyArgs, out: Output) -> Result<u8, Failure> {
    verify_target(args, out).await
}

async fn verify_target(args: VerifyArgs, out: Output) -> Result<u8, Failure> {
    let resolved = crate::config::resolve(
        Flags {
            quiet_window_ms: args.quiet_window.map(dshkit_env::duration::millis),
            ..Flags::default()
        },
        SettingsFile::Read,
    )?;
    let request = request_of(&args)?;
    let root = resolved
        .evidence_root
        .clone()
        .ok_or_else(|| Failure::refused(anyhow!(crate::config::NO_EVIDENCE_ROOT)))?;
    let evidence = EvidenceStore::new(root.join(VERIFY_DIR));
    let target_arg = args.target.clone().unwrap_or_else(|| ".".into());
    let (target, workspace) = AppTarget::named(&target_arg, |dir| {
        start_request(dir, args.app.clone(), args.on_port_conflict, args.ready_timeout)
    })
    .map_err(Failure::runtime)?;
    let runtime = runtime_for(args.ready_timeout);
    let previews = PreviewManager::new(crate::config::preview_config(
        &resolved,
        args.browser_ws.as_deref(),
    ));
    let request = VerifyAppRequest {
        target,
        request,
        owner: "cli".into(),
        viewport: Some(args.viewport.into()),
        workspace,
        detect_source: false,
        quiet_window_ms: resolved.quiet_window_ms,
    };
    let tools = VerifyTools {
        previews: &previews,
        runtime: &runtime,
        evidence: &evidence,
        retention: crate::config::retention(&resolved),
    };
    let verified = workflow::verify_app(request, tools, &stages()).await;
    previews.shutdown().await;
    runtime.shutdown().await;
    let report = verified.as_ref().map(|v| &v.report);
    let junit = args.junit.map(|path| junit::write(&path, &target_arg, report));
    let report = verified.map_err(failure)?.report;
    junit.transpose()?;
    if out.json {
        out.json(&report);
    } else {
        out.write(&render::report_text(&report, out.color));
    }
    Ok(match report.judgement.verdict {
        Verdict::Verified | Verdict::VerifiedWithWarnings => exit::SUCCESS,
        Verdict::Failed => exit::PROBLEM_FOUND,
        Verdict::Unverified => exit::UNVERIFIED,
    })
}
