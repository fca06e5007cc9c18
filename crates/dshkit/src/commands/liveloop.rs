//! `dshkit detect`, `dshkit run` and `dshkit verify`: LiveLoop for people.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow};
use dshkit_env::Environment;
use dshkit_env::resolve::{Flags, SettingsFile};
use dshkit_liveloop::detect::{Choice, ChooseError, Detection, detect};
use dshkit_liveloop::preview::PreviewManager;
use dshkit_liveloop::runtime::failure::StartFailure;
use dshkit_liveloop::runtime::{RunSpec, RuntimeError, RuntimeManager, ServerStatus};
use dshkit_liveloop::verify::evidence::EvidenceStore;
use dshkit_liveloop::verify::{
    Assertion, ReferenceSpec, Report, Step, Verdict, VerifyContext, VerifyRequest, page_url,
    unverified_without_browser, verify,
};

use crate::cli::{DetectArgs, RunArgs, VerifyArgs};
use crate::exit::{self, Failure};
use crate::output::{Color, Output, progress};

fn detection_of(dir: &Path) -> Result<Detection, Failure> {
    detect(dir, None).map_err(|e| Refusal::new("NO_WORKSPACE", e.to_string()).into())
}

/// An input the CLI refuses, with a stable code, the CLI's own hint in its
/// message, and the apps to choose from when that is the trouble. Under
/// `--json` it is written to stdout as `{"error": {...}}`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Refusal {
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    candidates: Vec<Choice>,
}

impl Refusal {
    fn new(code: &'static str, message: String) -> Self {
        Self {
            code,
            message,
            candidates: Vec::new(),
        }
    }

    /// A choice the CLI cannot make, with `--app DIR` to make it.
    fn choose(error: &ChooseError) -> Self {
        let hint = match error.candidates().first() {
            Some(first) => format!(
                "; pass --app DIR with one of those directories (e.g. --app {})",
                first.dir.display()
            ),
            None => String::new(),
        };
        Self {
            code: error.code(),
            message: format!("{error}{hint}"),
            candidates: error.candidates().to_vec(),
        }
    }

    /// A runtime error as the CLI says it: a port conflict names the CLI's flag.
    fn runtime(error: &RuntimeError) -> Self {
        let hint = match error {
            RuntimeError::PortInUse { .. } => {
                "; pass --on-port-conflict adopt to use that server, or --on-port-conflict other-port to start on a free port"
            }
            _ => "",
        };
        Self::new(error.code(), format!("{error}{hint}"))
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Failure::refused(refusal)
    }
}

/// Under `--json`, a failure still writes an object on stdout:
/// `{"error": {"code", "message", "exitCode", "candidates"?}}`.
fn json_failure(failure: &Failure, out: Output) {
    let refusal = failure.error.downcast_ref::<Refusal>();
    let settings = failure.error.downcast_ref::<crate::config::BrokenSettings>();
    let mut error = match (refusal, settings) {
        (Some(refusal), _) => serde_json::to_value(refusal).unwrap_or_default(),
        (None, Some(settings)) => serde_json::json!({
            "code": settings.code(),
            "message": settings.to_string(),
        }),
        (None, None) => serde_json::json!({
            "code": if failure.code == exit::REFUSED { "REFUSED" } else { "RUNTIME_ERROR" },
            "message": format!("{:#}", failure.error),
        }),
    };
    error["exitCode"] = serde_json::json!(failure.code);
    out.json(&serde_json::json!({ "error": error }));
}

/// The CLI's text for a start that ended without a ready server: what happened,
/// the server's own error lines, and the next step.
fn start_failure_text(failure: &StartFailure) -> String {
    let mut text = failure.summary();
    if failure.error_lines.is_empty() {
        text.push_str("; the last log lines:");
        for line in &failure.log_tail {
            text.push_str("\n    ");
            text.push_str(line);
        }
    } else {
        text.push_str("; it printed:");
        for line in &failure.error_lines {
            text.push_str("\n    ");
            text.push_str(line);
        }
    }
    text.push_str("\n  next: ");
    text.push_str(&failure.next_step());
    text
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
        let manager = match candidate.package_manager {
            Some(manager) => format!("via {manager} ({})", candidate.package_manager_source),
            None => format!("({})", candidate.package_manager_source),
        };
        text.push_str(&format!(
            "  {}  {} {manager}, confidence {}: {}{}\n    because: {}\n",
            candidate.dir.display(),
            candidate.framework,
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

/// How much longer than the server's own deadline the CLI waits for it, so
/// that deadline decides (and the server is stopped and says so) before the
/// wait gives up.
const READY_WAIT_MARGIN: Duration = Duration::from_secs(10);

/// A runtime whose servers get `ready_timeout_secs` to become ready.
fn runtime_for(ready_timeout_secs: u64) -> RuntimeManager {
    RuntimeManager::new(dshkit_liveloop::runtime::RuntimeConfig {
        ready_timeout: Duration::from_secs(ready_timeout_secs),
        ..dshkit_liveloop::runtime::RuntimeConfig::default()
    })
}

/// What starting the app came to.
enum Started {
    Ready(Box<ServerStatus>),
    /// The start ended, or the wait did, without a ready server (its status
    /// then, which holds the failure).
    NeverReady(Box<StartFailure>, Box<ServerStatus>),
}

/// Detects, chooses and starts the app in `dir`; waits until it is ready. On
/// failure nothing it started is left running. Returns the app's directory too.
async fn start_app(
    runtime: &RuntimeManager,
    dir: &Path,
    app: Option<&Path>,
    conflict: dshkit_liveloop::runtime::PortConflict,
    ready_timeout: Duration,
) -> Result<(Started, PathBuf), Failure> {
    let started = start_app_inner(runtime, dir, app, conflict, ready_timeout).await;
    if !matches!(started, Ok((Started::Ready(_), _))) {
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
) -> Result<(Started, PathBuf), Failure> {
    progress(&format!("detecting the web app in {}", dir.display()));
    let detection = detection_of(dir)?;
    let candidate = detection.choose(app).map_err(|e| Refusal::choose(&e))?;
    let spec = RunSpec::of(&detection.root, candidate).map_err(|e| Refusal::runtime(&e))?;
    let source = spec.dir.clone();
    progress(&format!(
        "found {} in {} (confidence {}); starting {}",
        candidate.framework,
        candidate.dir.display(),
        candidate.confidence,
        if spec.argv.is_empty() {
            "the built-in static server".to_owned()
        } else {
            format!("`{}`", spec.argv.join(" "))
        }
    ));
    let started = runtime
        .start(spec, conflict)
        .await
        .map_err(|e| Refusal::runtime(&e))?;
    let ready = match runtime
        .wait_ready(&started.id, ready_timeout + READY_WAIT_MARGIN)
        .await
    {
        Ok(ready) => ready,
        Err(RuntimeError::NotReady(failure)) => {
            let mut status = runtime
                .status(Some(&started.id))
                .await
                .map_err(Failure::runtime)?
                .remove(0);
            status.failure = Some((*failure).clone());
            return Ok((Started::NeverReady(failure, Box::new(status)), source));
        }
        Err(error) => return Err(Failure::runtime(error)),
    };
    progress(&format!(
        "ready at {} ({})",
        ready.url.as_deref().unwrap_or("?"),
        ready.url_reason.as_deref().unwrap_or("")
    ));
    Ok((Started::Ready(Box::new(ready)), source))
}

pub(crate) async fn run_command(args: RunArgs, out: Output) -> Result<u8, Failure> {
    let result = serve(args, out).await;
    if out.json
        && let Err(failure) = &result
    {
        json_failure(failure, out);
    }
    result
}

async fn serve(args: RunArgs, out: Output) -> Result<u8, Failure> {
    let runtime = runtime_for(args.ready_timeout_secs);
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let status = match start_app(
        &runtime,
        &dir,
        args.app.as_deref(),
        args.on_port_conflict.into(),
        Duration::from_secs(args.ready_timeout_secs),
    )
    .await?
    {
        (Started::Ready(status), _) => *status,
        (Started::NeverReady(failure, _), _) => {
            return Err(Failure::runtime(anyhow!(start_failure_text(&failure))));
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
    let result = verify_target(args, out).await;
    if out.json
        && let Err(failure) = &result
    {
        json_failure(failure, out);
    }
    result
}

/// Writes `report` (JSON or text) and returns the exit code of its verdict.
fn print_report(report: &Report, out: Output) -> u8 {
    if out.json {
        out.json(report);
    } else {
        out.write(&report_text(report, out));
    }
    match report.judgement.verdict {
        Verdict::Verified | Verdict::VerifiedWithWarnings => exit::SUCCESS,
        Verdict::Failed => exit::PROBLEM_FOUND,
        Verdict::Unverified => exit::UNVERIFIED,
    }
}

async fn verify_target(args: VerifyArgs, out: Output) -> Result<u8, Failure> {
    let resolved = crate::config::resolve(
        Flags {
            quiet_window_ms: args.quiet_window_ms,
            ..Flags::default()
        },
        SettingsFile::Read,
    )?;
    let mut request = request_of(&args)?;
    // The flag, else the spec's own, else the settings file's.
    request.quiet_window_ms = request.quiet_window_ms.or(resolved.quiet_window_ms);
    let evidence = evidence_store()?;
    let target = args.target.clone().unwrap_or_else(|| ".".into());
    let runtime = runtime_for(args.ready_timeout_secs);
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
        let (status, source) = match start_app(
            &runtime,
            &dir,
            args.app.as_deref(),
            args.on_port_conflict.into(),
            Duration::from_secs(args.ready_timeout_secs),
        )
        .await?
        {
            (Started::Ready(status), source) => (*status, source),
            (Started::NeverReady(failure, status), source) => {
                return report_never_ready(&failure, &status, &dir, source, &evidence, out);
            }
        };
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
    let url = page_url(&url, args.path.as_deref().or(request.url.as_deref()))
        .map_err(|e| Failure::refused(anyhow!(e)))?
        .to_string();
    request.url = Some(url.clone());
    let previews = PreviewManager::new(crate::config::preview_config(&resolved));
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
    if let Err(e) =
        evidence.apply_retention(crate::config::retention(&resolved), std::time::SystemTime::now())
    {
        tracing::warn!(%e, "evidence retention failed");
    }
    Ok(print_report(&report, out))
}

/// The verdict on an app whose dev server never became ready: `FAILED` when it
/// ended by itself (the app's build is broken), `UNVERIFIED` when it was only
/// not ready in time; a report either way.
fn report_never_ready(
    failure: &StartFailure,
    status: &ServerStatus,
    dir: &Path,
    source: PathBuf,
    evidence: &EvidenceStore,
    out: Output,
) -> Result<u8, Failure> {
    let context = VerifyContext {
        evidence: evidence.clone(),
        workspace: dshkit_os::fs::canonicalize(dir).map_err(Failure::refused)?,
        source_dir: Some(source),
        runtime: serde_json::to_value(status).ok(),
        progress: dshkit_liveloop::progress::Progress::new(progress),
    };
    let report = dshkit_liveloop::verify::engine::report_without_server(failure, "", &context)
        .map_err(Failure::runtime)?;
    Ok(print_report(&report, out))
}

/// The human summary of a report.
pub(crate) fn report_text(report: &Report, out: Output) -> String {
    let (label, color) = match report.judgement.verdict {
        Verdict::Verified => ("VERIFIED", Color::Green),
        Verdict::VerifiedWithWarnings => ("VERIFIED_WITH_WARNINGS", Color::Yellow),
        Verdict::Failed => ("FAILED", Color::Red),
        Verdict::Unverified => ("UNVERIFIED", Color::Red),
    };
    let mut text = if report.requested_url.is_empty() {
        format!("{}  (no page was loaded)\n", out.paint(label, color))
    } else {
        format!(
            "{}  {}  {:?}\n",
            out.paint(label, color),
            report.requested_url,
            report.title
        )
    };
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
        // A reason of several lines (a server's error block) keeps them under it.
        text.push_str(&format!("  why: {}\n", reason.replace('\n', "\n       ")));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_names_its_own_flags_in_a_port_conflict_and_an_ambiguous_workspace() {
        let conflict = Refusal::runtime(&RuntimeError::PortInUse {
            port: 5173,
            holder: "pid 42 (node vite)".into(),
        });
        assert_eq!(conflict.code, "PORT_IN_USE");
        assert_eq!(
            conflict.message,
            "port 5173 is already in use by pid 42 (node vite); pass --on-port-conflict adopt to use that server, or --on-port-conflict other-port to start on a free port"
        );
        let ambiguous = Refusal::choose(&ChooseError::Ambiguous {
            candidates: vec![Choice {
                dir: "apps/web".into(),
                framework: dshkit_liveloop::detect::Framework::ViteReact,
                confidence: 90,
            }],
        });
        assert!(
            ambiguous
                .message
                .ends_with("candidates: apps/web (Vite + React, confidence 90); pass --app DIR with one of those directories (e.g. --app apps/web)"),
            "{}",
            ambiguous.message
        );
    }

    #[test]
    fn a_detection_reads_with_the_names_people_write() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<h1>hi</h1>").unwrap();
        let text = detection_text(&detect(dir.path(), None).unwrap());
        assert!(
            text.contains(".  a static site (none needed: dshkit serves the files itself), confidence 40: (built-in static server)"),
            "{text}"
        );
    }
}
