//! `dshkit detect`, `dshkit run` and `dshkit verify`: LiveLoop for people.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow};
use dshkit_env::Environment;
use dshkit_liveloop::detect::{Detection, detect};
use dshkit_liveloop::preview::{PreviewConfig, PreviewManager};
use dshkit_liveloop::runtime::{RunSpec, RuntimeManager, ServerStatus};
use dshkit_liveloop::verify::evidence::{EvidenceStore, Retention};
use dshkit_liveloop::verify::{
    Assertion, ReferenceSpec, Report, Step, Verdict, VerifyContext, VerifyRequest, page_url,
    unverified_without_browser, verify,
};

use crate::cli::{DetectArgs, RunArgs, VerifyArgs};
use crate::exit::{self, Failure};
use crate::output::{Color, Output, progress};

fn detection_of(dir: &Path) -> Result<Detection, Failure> {
    detect(dir, None).map_err(Failure::refused)
}

pub(crate) fn detect_command(args: &DetectArgs, out: Output) -> Result<u8, Failure> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let detection = detection_of(&dir)?;
    if out.json {
        out.json(&detection);
    } else {
        out.write(&detection_text(&detection));
    }
    Ok(if detection.candidates.is_empty() || detection.ambiguous {
        exit::PROBLEM_FOUND
    } else {
        exit::SUCCESS
    })
}

pub(crate) fn detection_text(detection: &Detection) -> String {
    let mut text = format!(
        "{} app(s) in {} ({} directories visited{})\n",
        detection.candidates.len(),
        detection.root.display(),
        detection.dirs_visited,
        if detection.truncated {
            ", walk cut short"
        } else {
            ""
        }
    );
    for candidate in &detection.candidates {
        let argv = if candidate.argv.is_empty() {
            "(built-in static server)".to_owned()
        } else {
            candidate.argv.join(" ")
        };
        text.push_str(&format!(
            "  {}  {:?} via {:?} ({}), confidence {}: {}{}\n    because: {}\n",
            candidate.dir.display(),
            candidate.framework,
            candidate.package_manager,
            candidate.package_manager_source,
            candidate.confidence,
            argv,
            candidate
                .expected_port
                .map(|p| format!(" on port {p}"))
                .unwrap_or_default(),
            candidate.reasons.join("; ")
        ));
    }
    for diagnostic in &detection.diagnostics {
        text.push_str(&format!("  note: {diagnostic}\n"));
    }
    text
}

/// Detects, chooses and starts the app in `dir`; waits until it is ready. On
/// failure nothing it started is left running.
async fn start_app(
    runtime: &RuntimeManager,
    dir: &Path,
    app: Option<&Path>,
    conflict: dshkit_liveloop::runtime::PortConflict,
    ready_timeout: Duration,
) -> Result<(ServerStatus, PathBuf), Failure> {
    let started = start_app_inner(runtime, dir, app, conflict, ready_timeout).await;
    if started.is_err() {
        runtime.shutdown().await;
    }
    started
}

async fn start_app_inner(
    runtime: &RuntimeManager,
    dir: &Path,
    app: Option<&Path>,
    conflict: dshkit_liveloop::runtime::PortConflict,
    ready_timeout: Duration,
) -> Result<(ServerStatus, PathBuf), Failure> {
    progress(&format!("detecting the web app in {}", dir.display()));
    let detection = detection_of(dir)?;
    let candidate = detection.choose(app).map_err(|e| Failure::refused(anyhow!(e)))?;
    let spec = RunSpec::of(&detection.root, candidate).map_err(Failure::refused)?;
    let source = spec.dir.clone();
    progress(&format!(
        "found {:?} in {} (confidence {}); starting {}",
        candidate.framework,
        candidate.dir.display(),
        candidate.confidence,
        if spec.argv.is_empty() {
            "the built-in static server".to_owned()
        } else {
            format!("`{}`", spec.argv.join(" "))
        }
    ));
    let started = runtime.start(spec, conflict).await.map_err(Failure::refused)?;
    let ready = runtime
        .wait_ready(&started.id, ready_timeout)
        .await
        .map_err(Failure::runtime)?;
    progress(&format!(
        "ready at {} ({})",
        ready.url.as_deref().unwrap_or("?"),
        ready.url_reason.as_deref().unwrap_or("")
    ));
    Ok((ready, source))
}

pub(crate) async fn run_command(args: RunArgs, out: Output) -> Result<u8, Failure> {
    let runtime = RuntimeManager::default();
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let (status, _) = start_app(
        &runtime,
        &dir,
        args.app.as_deref(),
        args.on_port_conflict.into(),
        Duration::from_secs(args.ready_timeout_secs),
    )
    .await?;
    if out.json {
        out.json(&status);
    } else {
        out.write(&format!("{}\n", status.url.as_deref().unwrap_or("")));
    }
    progress("serving; press Ctrl-C to stop the server and its whole process tree");
    let stop = dshkit_os::signal::stop_requested()
        .context("installing the SIGINT/SIGTERM handlers")
        .map_err(Failure::runtime)?;
    tokio::pin!(stop);
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    let ended = loop {
        tokio::select! {
            _ = &mut stop => break None,
            _ = ticker.tick() => {
                let now = runtime.status(Some(&status.id)).await.map_err(Failure::runtime)?;
                if let Some(s) = now.first().filter(|s| s.state != dshkit_liveloop::runtime::ServerState::Ready) {
                    break Some(s.clone());
                }
            }
        }
    };
    runtime.shutdown().await;
    match ended {
        None => {
            progress("stopped");
            Ok(exit::SUCCESS)
        }
        Some(status) => Err(Failure::runtime(anyhow!(
            "the server left the ready state ({:?}): {}",
            status.state,
            status.error.unwrap_or_default()
        ))),
    }
}

/// Parses `--step` values: `click:ROLE=NAME`, `fill:ROLE=NAME=TEXT`, `press:KEY`, ...
fn parse_step(text: &str) -> Result<Step, String> {
    let (action, rest) = text.split_once(':').unwrap_or((text, ""));
    let mut step = Step {
        action: action.to_owned(),
        ..Step::default()
    };
    match action {
        "click" | "hover" | "fill" | "type" | "select" => {
            let mut parts = rest.splitn(3, '=');
            let (Some(role), Some(name)) = (parts.next(), parts.next()) else {
                return Err(format!(
                    "`{text}`: write {action}:ROLE=NAME{}",
                    if action == "click" || action == "hover" {
                        ""
                    } else {
                        "=VALUE"
                    }
                ));
            };
            step.role = Some(role.to_owned());
            step.name = Some(name.to_owned());
            let value = parts.next().map(str::to_owned);
            match action {
                "fill" | "type" => {
                    step.text = Some(value.ok_or(format!("`{text}`: write {action}:ROLE=NAME=TEXT"))?);
                }
                "select" => {
                    step.option = Some(value.ok_or(format!("`{text}`: write select:ROLE=NAME=OPTION"))?);
                }
                _ => {}
            }
        }
        "press" => step.key = Some(rest.to_owned()),
        "navigate" => step.url = Some(rest.to_owned()),
        "wait" => step.text = Some(rest.to_owned()),
        "scroll" => {
            step.delta_y = Some(
                rest.parse()
                    .map_err(|_| format!("`{text}`: write scroll:PIXELS"))?,
            );
        }
        "reload" | "back" => {}
        other => {
            return Err(format!(
                "unknown step `{other}`; use click, hover, fill, type, select, press, navigate, wait, scroll, reload or back"
            ));
        }
    }
    step.action().map(|_| step)
}

fn role_name(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(r, n)| (r.to_owned(), n.to_owned()))
        .ok_or_else(|| format!("`{text}`: write ROLE=NAME, e.g. button=Save"))
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
        request.steps.push(parse_step(step).map_err(refuse)?);
    }
    let assertions = &mut request.assertions;
    assertions.extend(
        args.expect_text
            .iter()
            .map(|t| Assertion::TextPresent { text: t.clone() }),
    );
    assertions.extend(
        args.expect_absent
            .iter()
            .map(|t| Assertion::TextAbsent { text: t.clone() }),
    );
    for element in &args.expect_element {
        let (role, name) = role_name(element).map_err(refuse)?;
        assertions.push(Assertion::Element { role, name });
    }
    assertions.extend(
        args.expect_title
            .iter()
            .map(|t| Assertion::Title { contains: t.clone() }),
    );
    assertions.extend(
        args.expect_url
            .iter()
            .map(|u| Assertion::Url { contains: u.clone() }),
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
    request.allow_console_errors |= args.allow_console_errors;
    if args.quiet_window_ms.is_some() {
        request.quiet_window_ms = args.quiet_window_ms;
    }
    Ok(request)
}

fn evidence_store() -> Result<EvidenceStore, Failure> {
    let env = Environment::from_process();
    let root = dshkit_env::disk::evidence_root(&env)
        .ok_or_else(|| Failure::refused(anyhow!("no evidence root: set DSHKIT_EVIDENCE_ROOT or HOME")))?;
    Ok(EvidenceStore::new(root.join("verify")))
}

pub(crate) async fn verify_command(args: VerifyArgs, out: Output) -> Result<u8, Failure> {
    let request = request_of(&args)?;
    let evidence = evidence_store()?;
    let target = args.target.clone().unwrap_or_else(|| ".".into());
    let runtime = RuntimeManager::default();
    let is_url = target.starts_with("http://") || target.starts_with("https://");
    let (url, workspace, source, server) = if is_url {
        (
            target.clone(),
            std::env::current_dir().map_err(Failure::runtime)?,
            None,
            None,
        )
    } else {
        let dir = PathBuf::from(&target);
        let (status, source) = start_app(
            &runtime,
            &dir,
            args.app.as_deref(),
            args.on_port_conflict.into(),
            Duration::from_secs(args.ready_timeout_secs),
        )
        .await?;
        let workspace = dshkit_os::fs::canonicalize(&dir).map_err(Failure::refused)?;
        (
            status.url.clone().unwrap_or_default(),
            workspace,
            Some(source),
            Some(status),
        )
    };
    let context = VerifyContext {
        evidence: evidence.clone(),
        workspace,
        source_dir: source,
        runtime: server.as_ref().and_then(|s| serde_json::to_value(s).ok()),
        progress: dshkit_liveloop::progress::Progress::new(progress),
    };
    // The page named, exactly: the URL given (or the server's), with `--path`
    // (or the spec's `url`) resolved against it.
    let mut request = request;
    let url = page_url(&url, args.path.as_deref().or(request.url.as_deref()))
        .map_err(|e| Failure::refused(anyhow!(e)))?
        .to_string();
    request.url = Some(url.clone());
    let previews = PreviewManager::new(PreviewConfig::default());
    progress(&format!("opening {url} in headless Chromium"));
    let report = match previews
        .open_for_verification("cli", &url, args.viewport.into())
        .await
    {
        Ok((session, _)) => verify(&session, &request, &context).await,
        Err(error) if matches!(error.code(), "BROWSER_GONE" | "BROWSER_ERROR") => {
            unverified_without_browser(&format!("{}: {error}", error.code()), &url, &context)
        }
        Err(error) => {
            previews.shutdown().await;
            runtime.shutdown().await;
            return Err(Failure::refused(anyhow!("{}: {error}", error.code())));
        }
    };
    previews.shutdown().await;
    runtime.shutdown().await;
    let report = report.map_err(Failure::runtime)?;
    if let Err(e) = evidence.apply_retention(Retention::default(), std::time::SystemTime::now()) {
        tracing::warn!(%e, "evidence retention failed");
    }
    if out.json {
        out.json(&report);
    } else {
        out.write(&report_text(&report, out));
    }
    Ok(match report.judgement.verdict {
        Verdict::Verified | Verdict::VerifiedWithWarnings => exit::SUCCESS,
        Verdict::Failed => exit::PROBLEM_FOUND,
        Verdict::Unverified => exit::UNVERIFIED,
    })
}

/// The human summary of a report.
pub(crate) fn report_text(report: &Report, out: Output) -> String {
    let (label, color) = match report.judgement.verdict {
        Verdict::Verified => ("VERIFIED", Color::Green),
        Verdict::VerifiedWithWarnings => ("VERIFIED_WITH_WARNINGS", Color::Yellow),
        Verdict::Failed => ("FAILED", Color::Red),
        Verdict::Unverified => ("UNVERIFIED", Color::Red),
    };
    let mut text = format!(
        "{}  {}  {:?}\n",
        out.paint(label, color),
        report.requested_url,
        report.title
    );
    if !report.loaded_url.is_empty() && report.loaded_url != report.requested_url {
        text.push_str(&format!("  loaded at {}\n", report.loaded_url));
    }
    if !report.url.is_empty() && report.url != report.loaded_url {
        text.push_str(&format!("  after the steps at {}\n", report.url));
    }
    let mark = |ok: bool| {
        if ok {
            out.paint("✓", Color::Green)
        } else {
            out.paint("✗", Color::Red)
        }
    };
    for step in &report.steps {
        text.push_str(&format!(
            "  {} step {} {} ({} ms){}\n",
            mark(step.ok),
            step.index,
            step.step,
            step.ms,
            step.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
        ));
    }
    for assertion in &report.assertions {
        text.push_str(&format!(
            "  {} {}: {}\n",
            mark(assertion.passed),
            assertion.assertion.describe(),
            assertion.detail
        ));
    }
    for reason in &report.judgement.reasons {
        text.push_str(&format!("  why: {reason}\n"));
    }
    text.push_str(&format!("  next: {}\n", report.judgement.next_action));
    if let Some(shot) = &report.screenshot {
        text.push_str(&format!(
            "  screenshot: {} ({} bytes, sha256 {})\n",
            shot.file.path.display(),
            shot.file.bytes,
            &shot.file.sha256[..16]
        ));
    }
    if let Some(diff) = &report.diff {
        text.push_str(&format!(
            "  reference: {}: {}\n",
            diff.reference.display(),
            diff.note
        ));
        if let Some(image) = &diff.diff {
            text.push_str(&format!("  diff image: {}\n", image.path.display()));
        }
    }
    if let Some(path) = &report.report_path {
        text.push_str(&format!("  report: {}\n", path.display()));
    }
    if let Some(path) = &report.html_path {
        text.push_str(&format!("  for people: {}\n", path.display()));
    }
    let t = &report.timings;
    text.push_str(&out.paint(
        &format!(
            "  timings: load {} ms (quiet window {} ms), steps {} ms, screenshot {} ms, total {} ms\n",
            t.load_ms, t.quiet_window_ms, t.steps_ms, t.screenshot_ms, t.total_ms
        ),
        Color::Dim,
    ));
    text
}
