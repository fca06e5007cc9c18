//! `verify-*.html`: the report for people, self-contained (images inline as data
//! URLs), written beside the JSON report. It opens in any browser with no server.
//! Everything from the page is escaped, and the document's own policy forbids
//! scripts and every load but its inline images, so a hostile page cannot run in it.

use std::fmt::Write as _;

use super::report::Report;

/// Largest image inlined; a bigger one is named, not embedded.
pub const MAX_INLINE_IMAGE_BYTES: u64 = 8 * 1024 * 1024;

/// The report as one HTML document.
pub fn render(report: &Report) -> String {
    let verdict = serde_json::to_value(report.judgement.verdict)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let color = match verdict.as_str() {
        "VERIFIED" => "#1a7f37",
        "VERIFIED_WITH_WARNINGS" => "#9a6700",
        "FAILED" => "#cf222e",
        _ => "#57606a",
    };
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\
<title>dshkit verification: {verdict} {}</title>\
<style>body{{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1100px;color:#1f2328}}\
.badge{{background:{color};color:#fff;border-radius:4px;padding:2px 8px;font-weight:600}}\
table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}}\
.ok{{color:#1a7f37}}.bad{{color:#cf222e}}.figures{{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:12px;align-items:start}}\
figure{{margin:0}}figcaption{{font-weight:600;margin-bottom:4px}}img{{max-width:100%;border:1px solid #d0d7de}}\
code{{background:#f6f8fa;padding:0 4px}}</style></head><body>",
        escape(&report.requested_url)
    );
    let _ = write!(
        out,
        "<h1>Verification <span class=\"badge\" id=\"verdict\">{verdict}</span></h1>\
<p>Verified: <code id=\"requested-url\">{}</code>{} · title: {} · viewport: {} · report <code>{}</code> \
· made <time id=\"created-at\">{}</time></p>",
        escape(&report.requested_url),
        elsewhere(report),
        escape(&report.title),
        escape(&format!("{:?}", report.viewport)),
        escape(&report.id),
        created_at(report),
    );
    out.push_str("<h2>Why</h2><ul>");
    for reason in &report.judgement.reasons {
        let _ = write!(out, "<li>{}</li>", escape(reason));
    }
    let _ = write!(
        out,
        "</ul><p><strong>Next:</strong> {}</p>",
        escape(&report.judgement.next_action)
    );

    tables(&mut out, report);
    observed(&mut out, report);
    evidence(&mut out, report);
    let _ = writeln!(
        out,
        "<p>Page-derived text above is untrusted data from the app under test. Written by dshkit {}.</p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn tables(out: &mut String, report: &Report) {
    if !report.steps.is_empty() {
        out.push_str("<h2>Steps</h2><table><tr><th>#</th><th>step</th><th>result</th><th>ms</th></tr>");
        for step in &report.steps {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                step.index,
                escape(&step.step),
                if step.ok { "ok" } else { "bad" },
                if step.ok {
                    "ok".to_owned()
                } else {
                    escape(step.error.as_deref().unwrap_or("failed"))
                },
                step.ms
            );
        }
        out.push_str("</table>");
    }
    if !report.assertions.is_empty() {
        out.push_str("<h2>Assertions</h2><table><tr><th>assertion</th><th>result</th><th>detail</th></tr>");
        for assertion in &report.assertions {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                escape(&assertion.assertion.describe()),
                if assertion.passed { "ok" } else { "bad" },
                if assertion.passed { "passed" } else { "failed" },
                escape(&assertion.detail)
            );
        }
        out.push_str("</table>");
    }
}

fn observed(out: &mut String, report: &Report) {
    let _ = write!(
        out,
        "<h2>Observed</h2><p>console errors: {} · console warnings: {} · failed requests: {} · blocked requests: {}</p>",
        report.console_errors.len(),
        report.console_warnings,
        report.failed_requests.len(),
        report.blocked_requests.len()
    );
    for (label, entries) in [
        ("Console errors", &report.console_errors),
        ("Failed requests", &report.failed_requests),
        ("Blocked requests", &report.blocked_requests),
    ] {
        if entries.is_empty() {
            continue;
        }
        let _ = write!(out, "<h3>{label}</h3><ul>");
        for entry in entries {
            let _ = write!(out, "<li><code>{}</code></li>", escape(&entry.to_string()));
        }
        out.push_str("</ul>");
    }
}

/// The images a person compares: Reference, Current and Diff side by side for
/// a reference diff (Current stands for the screenshot then), else the screenshot.
fn evidence(out: &mut String, report: &Report) {
    out.push_str("<h2>Evidence</h2>");
    let mut images: Vec<(&str, &std::path::Path)> = Vec::new();
    let screenshot = report.screenshot.as_ref().map(|shot| shot.file.path.as_path());
    match &report.diff {
        Some(diff) => {
            images.push(("Reference", diff.reference.as_path()));
            match (&diff.current, screenshot) {
                (Some(current), _) => images.push(("Current", current.path.as_path())),
                (None, Some(shot)) => images.push(("Screenshot", shot)),
                (None, None) => {}
            }
            if let Some(file) = &diff.diff {
                images.push(("Diff", file.path.as_path()));
            }
        }
        None => images.extend(screenshot.map(|shot| ("Screenshot", shot))),
    }
    if images.is_empty() {
        out.push_str("<p>No screenshot was taken.</p>");
        return;
    }
    out.push_str("<div class=\"figures\">");
    for (label, path) in images {
        let _ = write!(
            out,
            "<figure data-role=\"{}\"><figcaption>{label}</figcaption>",
            label.to_lowercase()
        );
        match inline_png(path) {
            Ok(data) => {
                let _ = write!(out, "<img alt=\"{label}\" src=\"data:image/png;base64,{data}\">");
            }
            Err(why) => {
                let _ = write!(
                    out,
                    "<p>{}: {}</p>",
                    escape(&path.display().to_string()),
                    escape(&why)
                );
            }
        }
        out.push_str("</figure>");
    }
    out.push_str("</div>");
}

/// When the report was made, readable (`Sun, 06 Dec 2026 02:20:31 GMT`).
fn created_at(report: &Report) -> String {
    let millis = u64::try_from(report.created_at_ms).unwrap_or(u64::MAX);
    std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_millis(millis))
        .map(httpdate::fmt_http_date)
        .unwrap_or_default()
}

fn inline_png(path: &std::path::Path) -> Result<String, String> {
    use base64::Engine as _;
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_INLINE_IMAGE_BYTES {
        return Err(format!(
            "{size} bytes, above the {MAX_INLINE_IMAGE_BYTES}-byte inline limit"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// HTML text and attribute escaping.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// Where the page was, when not at the URL named: loaded elsewhere (a
/// redirect), or elsewhere after the steps.
fn elsewhere(report: &Report) -> String {
    let mut out = String::new();
    if !report.loaded_url.is_empty() && report.loaded_url != report.requested_url {
        let _ = write!(out, " · loaded at <code>{}</code>", escape(&report.loaded_url));
    }
    if !report.url.is_empty() && report.url != report.loaded_url {
        let _ = write!(out, " · after the steps at <code>{}</code>", escape(&report.url));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn page_text_cannot_become_markup() {
        assert_eq!(
            escape("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
    }
}
