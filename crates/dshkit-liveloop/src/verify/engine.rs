//! The verification engine: one fresh load of the page in a preview session, the
//! ordered steps, the explicit assertions, a screenshot and optional reference diff
//! as evidence, the strict verdict, and a report persisted atomically. The
//! request it takes lives in [`super::request`], the report it gives in
//! [`super::report`]; both are named here too.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::diff::{self, Rgba};
use super::evidence::EvidenceStore;
use super::html;
use super::report::now_ms;
pub use super::report::{
    AssertionOutcome, DiffOutcome, MAX_REPORT_ENTRIES, MAX_STEP_SCREENSHOTS, Omitted, Report, Screenshot,
    StepOutcome, Timings,
};
pub use super::request::{
    Assertion, DEFAULT_DEADLINE_MS, DEFAULT_QUIET_MS, MAX_ASSERTIONS, MAX_DEADLINE_MS, MAX_QUIET_MS,
    MAX_STEPS, ReferenceSpec, Step, VerifyContext, VerifyError, VerifyRequest, page_url,
};
use super::request::{inside, validate};
use super::verdict::{Judgement, Observed, Verdict, judge};
use crate::preview::{Action, ErrorOverlay, NetworkEntry, Observations, PreviewError, PreviewSession};

/// Longest wait for a dev client to draw its error overlay after a source module
/// answered HTTP 5xx (only on pages that load such a client).
pub const MAX_ERROR_OVERLAY_WAIT: Duration = Duration::from_secs(1);

/// Reasons of each kind (console errors, server errors, other failed requests)
/// a verdict gives; the report lists up to [`MAX_REPORT_ENTRIES`] of each.
pub const MAX_REASONS_OF_A_KIND: usize = 5;

/// The warning a load that ended elsewhere than `requested` deserves: another
/// origin, path or query (a redirect, on the server or by the page's script).
/// A fragment the page changed is not another page.
fn redirect_warning(requested: &url::Url, loaded: &str) -> Option<String> {
    let Ok(mut at) = url::Url::parse(loaded) else {
        return Some(format!(
            "the page did not report a URL after loading, so nothing shows it is {requested}"
        ));
    };
    let mut named = requested.clone();
    named.set_fragment(None);
    at.set_fragment(None);
    (at != named).then(|| {
        format!(
            "the page loaded at {loaded}, not at the requested {requested} (redirected): every check is about {loaded}"
        )
    })
}

/// Longest page text a reason quotes.
const MAX_QUOTED_CHARS: usize = 200;

/// `text` cut to [`MAX_QUOTED_CHARS`], saying so.
fn clipped(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn first<T: Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    items.take(MAX_REPORT_ENTRIES).collect()
}

/// Runs one verification in `session`. Verifications of one session run one at a
/// time. Errors are only for invalid requests and an unwritable store: every
/// failure of the app or of the browser becomes a verdict in the report.
#[expect(
    clippy::too_many_lines,
    reason = "the ten steps of a verification in their order, each a few lines"
)]
pub async fn verify(
    session: &PreviewSession,
    request: &VerifyRequest,
    context: &VerifyContext,
) -> Result<Report, VerifyError> {
    let actions = validate(request)?;
    let reference_path = match &request.reference {
        Some(reference) => Some(inside(&context.workspace, &reference.path)?),
        None => None,
    };
    let _one_at_a_time = session.verification.lock().await;
    let started = Instant::now();
    let target = page_url(&session.page_url(), request.url.as_deref())?;
    if !session.on_origin(&target) {
        return Err(VerifyError::Invalid(format!(
            "{target} is not on the preview's origin {}: verify it in a preview of its own origin",
            session.origin()
        )));
    }
    let quiet = request
        .quiet_window_ms
        .unwrap_or(DEFAULT_QUIET_MS)
        .min(MAX_QUIET_MS);
    let deadline = request
        .deadline_ms
        .unwrap_or(DEFAULT_DEADLINE_MS)
        .min(MAX_DEADLINE_MS);
    let mut report = Report::blank(&session.id, session.viewport(), target.as_str(), context);
    report.timings.quiet_window_ms = quiet;
    let mut observed = Observed {
        browser: true,
        diff_requested: request.reference.is_some(),
        has_criteria: !request.assertions.is_empty() || request.reference.as_ref().is_some_and(|r| !r.update),
        ..Observed::default()
    };

    // Steps 3-4: a fresh observation window and a fresh load.
    context.progress.stage(&format!("loading {target}"));
    let load = match session
        .load_fresh(
            target.as_str(),
            Duration::from_millis(quiet),
            Duration::from_millis(deadline),
        )
        .await
    {
        Ok(load) => load,
        Err(error) => return finish_without_page(report, observed, &error, context, started),
    };
    report.timings.blank_ms = load.blank_ms;
    report.timings.load_ms = load.load_ms;
    if let Some(warning) = redirect_warning(&target, &load.url) {
        observed.warnings.push(warning);
    }
    report.loaded_url = load.url;
    if !load.settled {
        let mut warning =
            format!("the network did not go quiet for {quiet} ms before the {deadline} ms deadline");
        if !load.pending.is_empty() {
            warning.push_str("; still in flight: ");
            warning.push_str(&load.pending.join(", "));
        }
        observed.warnings.push(warning);
    }

    // Steps 5-7: the ordered interactions, then collect and assert.
    run_steps(session, request, actions, &mut report, &mut observed, context).await?;
    context.progress.stage(&match request.assertions.len() {
        0 => "collecting console, network and page state".to_owned(),
        n => format!("checking {n} assertion(s)"),
    });
    let collect_started = Instant::now();
    collect(session, request, &mut report, &mut observed).await;
    observed.window_clear = session.observe(Observations::window_id) == load.window;
    report.timings.collect_ms = collect_started.elapsed().as_millis();

    // Step 8: the screenshot, persisted.
    context.progress.stage("taking the screenshot");
    let shot_started = Instant::now();
    let shot = session.screenshot(request.full_page).await;
    report.timings.screenshot_ms = shot_started.elapsed().as_millis();
    let current = match shot {
        Ok(shot) => {
            observed.screenshot_unchanged = shot.sha256 == load.before_sha256;
            let file = context.evidence.write_png(&session.id, &shot.png)?;
            observed.screenshot = true;
            report.screenshot = Some(Screenshot {
                file,
                width: shot.width,
                height: shot.height,
                clipped: shot.clipped,
            });
            Some(shot.png)
        }
        Err(error) => {
            observed
                .warnings
                .push(format!("screenshot failed: {}: {error}", error.code()));
            None
        }
    };

    // Step 9: the reference diff.
    if let (Some(spec), Some(path), Some(png)) = (&request.reference, reference_path, current.as_deref()) {
        context
            .progress
            .stage(&format!("comparing with the reference {}", path.display()));
        let diff_started = Instant::now();
        let outcome = reference_diff(spec, &path, png, &session.id, &context.evidence)?;
        observed.diff_complete = outcome.complete;
        if !outcome.complete {
            observed.warnings.push(format!("reference: {}", outcome.note));
        }
        if outcome.passed == Some(false) {
            observed.failures.push(format!(
                "the page differs from the reference {} ({})",
                path.display(),
                outcome.note
            ));
        }
        report.diff = Some(outcome);
        report.timings.diff_ms = diff_started.elapsed().as_millis();
    }

    // Step 10: the verdict, and the report persisted atomically.
    report.judgement = judge(&observed);
    report.timings.total_ms = started.elapsed().as_millis();
    context
        .progress
        .stage(&format!("verdict: {}", report.judgement.verdict.as_str()));
    persist(report, context)
}

async fn run_steps(
    session: &PreviewSession,
    request: &VerifyRequest,
    actions: Vec<Action>,
    report: &mut Report,
    observed: &mut Observed,
    context: &VerifyContext,
) -> Result<(), VerifyError> {
    let steps_started = Instant::now();
    let count = request.steps.len();
    let shots = request.step_screenshots.unwrap_or(false);
    for (index, (step, action)) in request.steps.iter().zip(actions).enumerate() {
        context
            .progress
            .stage(&format!("step {}/{count}: {}", index + 1, step.describe()));
        let began = Instant::now();
        let outcome = session.interact(action).await;
        let ms = began.elapsed().as_millis();
        let error = outcome.err().map(|e| format!("{}: {e}", e.code()));
        if let Some(error) = &error {
            observed.failures.push(format!(
                "step {} ({}) failed: {error}",
                index + 1,
                step.describe()
            ));
        }
        let screenshot = if shots && index < MAX_STEP_SCREENSHOTS {
            let shot_started = Instant::now();
            let file = step_screenshot(session, context).await?;
            report.timings.step_screenshots_ms += shot_started.elapsed().as_millis();
            file
        } else {
            None
        };
        report.steps.push(StepOutcome {
            index: index + 1,
            step: step.describe(),
            ok: error.is_none(),
            error: error.clone(),
            ms,
            screenshot,
        });
        if error.is_some() {
            break; // later steps depend on this one
        }
    }
    report.timings.steps_ms = steps_started.elapsed().as_millis();
    Ok(())
}

/// The page as a step left it, kept as evidence; a screenshot the browser could
/// not take is only missing from the timeline (the verdict rests on the final one).
async fn step_screenshot(
    session: &PreviewSession,
    context: &VerifyContext,
) -> Result<Option<super::evidence::EvidenceFile>, VerifyError> {
    match session.screenshot(false).await {
        Ok(shot) => Ok(Some(context.evidence.write_png(&session.id, &shot.png)?)),
        Err(error) => {
            tracing::debug!(%error, "no screenshot after the step");
            Ok(None)
        }
    }
}

async fn collect(
    session: &PreviewSession,
    request: &VerifyRequest,
    report: &mut Report,
    observed: &mut Observed,
) {
    // A dev server that could not build a module tells its client, which draws
    // the error overlay a moment after the load: its message is the reason.
    if session.observe(|o| o.failed_requests().any(NetworkEntry::is_code_server_error)) {
        let _ = session.wait_for_error_overlay(MAX_ERROR_OVERLAY_WAIT).await;
    }
    match session.snapshot().await {
        Ok(snapshot) => {
            report.url.clone_from(&snapshot.url);
            report.title.clone_from(&snapshot.title);
            observed
                .warnings
                .extend(snapshot.warnings.iter().map(|w| format!("snapshot: {w}")));
            observed.error_overlay = snapshot.error_overlay.as_ref().map(ErrorOverlay::summary);
            for assertion in &request.assertions {
                let began = Instant::now();
                let mut outcome = evaluate(session, &snapshot, assertion).await;
                outcome.ms = began.elapsed().as_millis();
                if !outcome.passed {
                    observed.failures.push(format!(
                        "assertion failed: {} ({})",
                        assertion.describe(),
                        outcome.detail
                    ));
                }
                report.assertions.push(outcome);
            }
        }
        Err(error) => {
            observed
                .failures
                .push(format!("the page could not be read ({}: {error})", error.code()));
        }
    }
    collect_observations(session, request, report, observed);
}

fn collect_observations(
    session: &PreviewSession,
    request: &VerifyRequest,
    report: &mut Report,
    observed: &mut Observed,
) {
    session.observe(|o| {
        report.document_status = o.document_status;
        report.console_errors = first(o.errors().map(|e| json!(e)));
        let warnings: Vec<_> = o
            .console
            .iter()
            .filter(|e| e.level == "warning" && e.framework_notice().is_none())
            .collect();
        report.console_warnings = warnings.len();
        report.framework_notices = o
            .console
            .iter()
            .filter(|e| e.level == "warning")
            .filter_map(|e| e.framework_notice().map(|f| format!("{f}: {}", e.text)))
            .take(MAX_REPORT_ENTRIES)
            .collect();
        report.failed_requests = first(o.network.iter().map(|n| json!(n)));
        report.blocked_requests = first(o.blocked.iter().map(|b| json!(b)));
        report.omitted = Omitted {
            console_errors: o.errors().count().saturating_sub(MAX_REPORT_ENTRIES),
            failed_requests: o.network.len().saturating_sub(MAX_REPORT_ENTRIES),
            blocked_requests: o.blocked.len().saturating_sub(MAX_REPORT_ENTRIES),
        };
        if !request.allow_console_errors {
            // The verdict ranks uncaught exceptions before the rest.
            let (uncaught, logged): (Vec<_>, Vec<_>) = o
                .errors()
                .take(MAX_REASONS_OF_A_KIND)
                .partition(|e| e.is_uncaught());
            observed.uncaught.extend(uncaught.iter().map(|e| e.summary()));
            observed.failures.extend(logged.iter().map(|e| e.summary()));
        }
        if !request.allow_failed_requests {
            // A 5xx for the app's code is kept however many other requests failed
            // before it: the verdict ranks it first.
            let (code, other): (Vec<_>, Vec<_>) = o.failed_requests().partition(|f| f.is_code_server_error());
            for failed in code.into_iter().take(MAX_REASONS_OF_A_KIND) {
                observed.server_errors.push(format!(
                    "request {} {} failed: HTTP {} ({}: the dev server could not build or serve it)",
                    failed.method,
                    failed.url,
                    failed.status.unwrap_or_default(),
                    failed.code_kind().unwrap_or_default()
                ));
            }
            for failed in other.into_iter().take(MAX_REASONS_OF_A_KIND) {
                let why = failed.status.map_or_else(
                    || failed.error.clone().unwrap_or_default(),
                    |s| format!("HTTP {s}"),
                );
                observed
                    .failures
                    .push(format!("request {} {} failed: {why}", failed.method, failed.url));
            }
        }
        if let Some(first) = warnings.first() {
            observed.warnings.push(match warnings.len() {
                1 => format!("console warning: {}{}", clipped(&first.text), first.place()),
                n => format!(
                    "{n} console warnings, the first: {}{}",
                    clipped(&first.text),
                    first.place()
                ),
            });
        }
        if !o.blocked.is_empty() {
            observed.warnings.push(format!(
                "{} request(s) blocked by the loopback-only network policy",
                o.blocked.len()
            ));
        }
        if o.console.dropped() + o.network.dropped() > 0 {
            observed
                .warnings
                .push("the observation buffers overflowed; older entries were dropped".into());
        }
    });
}

async fn evaluate(
    session: &PreviewSession,
    snapshot: &crate::preview::Snapshot,
    assertion: &Assertion,
) -> AssertionOutcome {
    let (passed, detail) = match assertion {
        Assertion::TextPresent { text } | Assertion::TextAbsent { text } => {
            match session.text_contains(text).await {
                Ok(found) => {
                    let want = matches!(assertion, Assertion::TextPresent { .. });
                    (
                        found == want,
                        if found {
                            "found in the page text"
                        } else {
                            "not in the page text"
                        }
                        .to_owned(),
                    )
                }
                Err(error) => (false, format!("could not read the page text: {error}")),
            }
        }
        Assertion::Element { role, name } => {
            let found = snapshot
                .nodes
                .iter()
                .filter(|n| n.role == *role && n.name.trim() == name.trim())
                .count();
            let detail = if found > 0 {
                format!("{found} match(es)")
            } else {
                let same_role: Vec<&str> = snapshot
                    .nodes
                    .iter()
                    .filter(|n| n.role == *role)
                    .map(|n| n.name.as_str())
                    .take(5)
                    .collect();
                format!("no {role} named {name:?}; {role}s on the page: {same_role:?}")
            };
            (found > 0, detail)
        }
        Assertion::Url { contains } => (
            snapshot.url.contains(contains.as_str()),
            format!("URL is {}", snapshot.url),
        ),
        Assertion::Title { contains } => (
            snapshot.title.contains(contains.as_str()),
            format!("title is {:?}", snapshot.title),
        ),
        Assertion::Status { code } => {
            let status = session.observe(|o| o.document_status);
            (
                status == Some(*code),
                status.map_or_else(|| "no document response was seen".into(), |s| format!("HTTP {s}")),
            )
        }
        Assertion::NoConsoleErrors => {
            let count = session.observe(|o| o.errors().count());
            (count == 0, format!("{count} console error(s)"))
        }
        Assertion::NoFailedRequests => {
            let count = session.observe(|o| o.failed_requests().count());
            (count == 0, format!("{count} failed request(s)"))
        }
    };
    AssertionOutcome {
        assertion: assertion.clone(),
        passed,
        detail,
        ms: 0,
    }
}

fn reference_diff(
    spec: &ReferenceSpec,
    path: &Path,
    current: &[u8],
    session: &str,
    evidence: &EvidenceStore,
) -> Result<DiffOutcome, VerifyError> {
    let max = spec
        .max_mismatch_ratio
        .unwrap_or(diff::DEFAULT_MAX_MISMATCH_RATIO);
    let mut outcome = DiffOutcome {
        reference: path.to_owned(),
        complete: false,
        mismatch_ratio: None,
        max_mismatch_ratio: max,
        passed: None,
        current: None,
        diff: None,
        note: String::new(),
    };
    if spec.update {
        let temp = path.with_extension(format!("png.tmp-{}", std::process::id()));
        let written = std::fs::write(&temp, current).and_then(|()| std::fs::rename(&temp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            outcome.note = format!("could not write the reference: {e}");
        } else {
            outcome.complete = true;
            outcome.note = "the current screenshot is now the reference; nothing was compared".into();
        }
        return Ok(outcome);
    }
    let reference = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            outcome.note =
                format!("cannot read the reference ({e}); verify once with update: true to create it");
            return Ok(outcome);
        }
    };
    let (reference, current_image) = match (Rgba::from_png(&reference), Rgba::from_png(current)) {
        (Ok(r), Ok(c)) => (r, c),
        (Err(e), _) | (_, Err(e)) => {
            outcome.note = format!("cannot decode: {e}");
            return Ok(outcome);
        }
    };
    if reference.width != current_image.width {
        outcome.note = format!(
            "the widths differ (reference {}, current {}): take the reference with the same viewport",
            reference.width, current_image.width
        );
        return Ok(outcome);
    }
    // Normalise: compare the common height; rows only one image has all differ.
    let height = reference.height.min(current_image.height);
    let extra_rows = u64::from(reference.height.max(current_image.height) - height);
    let (reference, current_image) = (crop(&reference, height), crop(&current_image, height));
    let comparison = match diff::compare(&reference, &current_image, diff::DEFAULT_PIXEL_THRESHOLD, max) {
        Ok(c) => c,
        Err(e) => {
            outcome.note = e.to_string();
            return Ok(outcome);
        }
    };
    let width = u64::from(reference.width);
    let total = comparison.total_pixels as u64 + extra_rows * width;
    #[expect(clippy::cast_precision_loss, reason = "a ratio of pixel counts")]
    let ratio = (comparison.differing_pixels as u64 + extra_rows * width) as f64 / total.max(1) as f64;
    outcome.mismatch_ratio = Some(ratio);
    outcome.passed = Some(ratio <= max);
    outcome.current = Some(evidence.write(session, &format!("current-{}", now_ms()), "png", current)?);
    let diff_png = comparison
        .diff
        .to_png()
        .map_err(|e| VerifyError::Invalid(e.to_string()))?;
    outcome.diff = Some(evidence.write(session, &format!("diff-{}", now_ms()), "png", &diff_png)?);
    outcome.complete = true;
    outcome.note = format!(
        "{} of {} pixels differ ({:.4} %), {} anti-aliased pixels ignored{}",
        comparison.differing_pixels as u64 + extra_rows * width,
        total,
        ratio * 100.0,
        comparison.anti_aliased_pixels,
        if extra_rows > 0 {
            format!("; heights differ by {extra_rows} rows, counted as different")
        } else {
            String::new()
        }
    );
    Ok(outcome)
}

fn crop(image: &Rgba, height: u32) -> Rgba {
    let row = image.width as usize * 4;
    Rgba {
        width: image.width,
        height,
        pixels: image.pixels[..row * height as usize].to_vec(),
    }
}

/// A report for a verification that never saw the page (the browser failed or the
/// navigation did): always `UNVERIFIED`, with the error as the last reason. An app
/// that answers with an error page is not this case: its page loads, and the
/// failures observed on it make the verdict `FAILED`.
fn finish_without_page(
    mut report: Report,
    mut observed: Observed,
    error: &PreviewError,
    context: &VerifyContext,
    started: Instant,
) -> Result<Report, VerifyError> {
    observed.browser = !error.is_browser_failure();
    observed.window_clear = true;
    report.judgement = judge(&observed);
    report
        .judgement
        .reasons
        .push(format!("{}: {error}", error.code()));
    report.timings.total_ms = started.elapsed().as_millis();
    persist(report, context)
}

/// The report for a verification that could not get a browser at all.
pub fn unverified_without_browser(
    reason: &str,
    requested_url: &str,
    context: &VerifyContext,
) -> Result<Report, VerifyError> {
    let mut judgement = judge(&Observed::default());
    judgement.reasons.push(reason.to_owned());
    let mut report = Report::blank(
        "no-browser",
        crate::preview::Viewport::default(),
        requested_url,
        context,
    );
    report.judgement = judgement;
    persist(report, context)
}

/// The report for an app whose dev server never became ready, so no page was
/// loaded. A server that ended by itself shows the app broken (its
/// configuration, build or dependencies): `FAILED`, with the error block the
/// server printed and a next step at the place it names. One that was only not
/// ready in time shows nothing about the app: `UNVERIFIED`.
pub fn report_without_server(
    failure: &crate::runtime::failure::StartFailure,
    requested_url: &str,
    context: &VerifyContext,
) -> Result<Report, VerifyError> {
    let mut reason = format!("{}, so no page was loaded", failure.summary());
    let (heading, lines) = if failure.error_lines.is_empty() {
        ("; its last log lines:", &failure.log_tail)
    } else {
        ("; it printed:", &failure.error_lines)
    };
    if !lines.is_empty() {
        reason.push_str(heading);
        for line in lines {
            reason.push('\n');
            reason.push_str(line);
        }
    }
    let mut report = Report::blank(
        "no-server",
        crate::preview::Viewport::default(),
        requested_url,
        context,
    );
    report.judgement = Judgement {
        verdict: if failure.app_is_broken() {
            Verdict::Failed
        } else {
            Verdict::Unverified
        },
        reasons: vec![reason],
        next_action: failure.next_step(),
    };
    persist(report, context)
}

fn persist(mut report: Report, context: &VerifyContext) -> Result<Report, VerifyError> {
    let session = report.session.clone();
    let dir = context.evidence.session_dir(&session)?;
    report.report_path = Some(dir.join(format!("{}.json", report.id)));
    report.html_path = Some(dir.join(format!("{}.html", report.id)));
    let bytes = serde_json::to_vec_pretty(&report).map_err(|e| VerifyError::Invalid(e.to_string()))?;
    context.evidence.write(&session, &report.id, "json", &bytes)?;
    context
        .evidence
        .write(&session, &report.id, "html", html::render(&report).as_bytes())?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::redirect_warning;

    #[test]
    fn a_load_elsewhere_is_a_redirect_but_a_changed_fragment_is_not() {
        let requested = url::Url::parse("http://127.0.0.1:5173/old?q=1#a").unwrap();
        assert_eq!(
            redirect_warning(&requested, "http://127.0.0.1:5173/old?q=1#a"),
            None
        );
        assert_eq!(
            redirect_warning(&requested, "http://127.0.0.1:5173/old?q=1#b"),
            None
        );
        for elsewhere in [
            "http://127.0.0.1:5173/",
            "http://127.0.0.1:5173/old?q=2",
            "http://127.0.0.1:5173/old/?q=1",
        ] {
            let warning = redirect_warning(&requested, elsewhere).unwrap();
            assert!(
                warning.contains(elsewhere) && warning.contains("redirected"),
                "{warning}"
            );
        }
        assert!(
            redirect_warning(&requested, "").is_some(),
            "no URL proves nothing"
        );
    }
}
