//! `verify-*.html`: the report for people, self-contained (images inline as data
//! URLs), written beside the JSON report. It opens in any browser with no server.
//! Everything from the page is escaped, and the document's own policy forbids
//! every load but its inline images and every script but its own one, pinned by
//! its hash, which shows the times in the reader's zone: a hostile page cannot
//! run in it.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::report::{MAX_REPORT_ENTRIES, Report};

/// Largest image inlined; a bigger one is named, not embedded.
pub const MAX_INLINE_IMAGE_BYTES: u64 = 8 * 1024 * 1024;
/// Most image bytes one report inlines; the images past it are named, not embedded.
pub const MAX_INLINE_TOTAL_BYTES: u64 = 48 * 1024 * 1024;

/// The one script of dshkit's pages: each `<time datetime>` in the reader's
/// zone and language, the UTC text kept as its tooltip (and shown without scripts).
const LOCAL_TIME_SCRIPT: &str = "for(const t of document.querySelectorAll('time[datetime]')){const d=new Date(t.dateTime);if(!isNaN(d)){t.title=t.textContent;t.textContent=d.toLocaleString(undefined,{dateStyle:'medium',timeStyle:'long'});}}";

/// The policy of dshkit's pages: nothing loads but inline images and styles,
/// nothing runs but [`LOCAL_TIME_SCRIPT`].
fn content_security_policy() -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(LOCAL_TIME_SCRIPT));
    format!("default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{hash}'")
}

/// The head of one of dshkit's pages: policy, title, style.
pub(super) fn head(title: &str, style: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{style}</style></head><body>",
        content_security_policy(),
        escape(title)
    )
}

/// The end of one of dshkit's pages: the local-time script, last, once the times exist.
pub(super) fn tail() -> String {
    format!("<script>{LOCAL_TIME_SCRIPT}</script></body></html>\n")
}

/// A moment as `<time>`: UTC text, which the reader's browser shows in its zone.
pub(super) fn time_element(millis: u128, id: Option<&str>) -> String {
    let millis = u64::try_from(millis).unwrap_or(u64::MAX);
    let Some(at) = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(millis)) else {
        return String::new();
    };
    let id = id.map(|id| format!(" id=\"{id}\"")).unwrap_or_default();
    format!(
        "<time{id} datetime=\"{}\">{}</time>",
        iso8601(millis),
        httpdate::fmt_http_date(at)
    )
}

/// `millis` since the epoch as an ISO 8601 UTC date-time (`2026-12-06T02:20:31.123Z`).
fn iso8601(millis: u64) -> String {
    let (days, rest) = (millis / 86_400_000, millis % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// The style dshkit's pages share.
pub(super) const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1100px;color:#1f2328}\
.badge{color:#fff;border-radius:4px;padding:2px 8px;font-weight:600;background:#57606a;white-space:nowrap}\
.badge.VERIFIED{background:#1a7f37}.badge.VERIFIED_WITH_WARNINGS{background:#9a6700}.badge.FAILED{background:#cf222e}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
.ok{color:#1a7f37}.bad{color:#cf222e}.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:12px;align-items:start}\
figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}img{max-width:100%;border:1px solid #d0d7de}\
img.shot{max-width:320px;display:block}code{background:#f6f8fa;padding:0 4px;word-break:break-all}";

/// The report as one HTML document.
pub fn render(report: &Report) -> String {
    let verdict = report.judgement.verdict.as_str();
    let mut out = head(
        &format!("dshkit verification: {verdict} {}", report.requested_url),
        STYLE,
    );
    let _ = write!(
        out,
        "<h1>Verification <span class=\"badge {verdict}\" id=\"verdict\">{verdict}</span></h1>\
<p>Verified: <code id=\"requested-url\">{}</code>{} · title: {} · viewport: {} · report <code>{}</code> \
· made {} · took {} ms</p>",
        escape(&report.requested_url),
        elsewhere(report),
        escape(&report.title),
        escape(&format!("{:?}", report.viewport)),
        escape(&report.id),
        time_element(report.created_at_ms, Some("created-at")),
        report.timings.total_ms,
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

    let mut budget = MAX_INLINE_TOTAL_BYTES;
    timeline(&mut out, report, &mut budget);
    observed(&mut out, report);
    evidence(&mut out, report, &mut budget);
    let _ = write!(
        out,
        "<p>Page-derived text above is untrusted data from the app under test. Written by dshkit {}.</p>{}",
        env!("CARGO_PKG_VERSION"),
        tail()
    );
    out
}

/// The steps, then the assertions, in the order they ran: each with its
/// outcome, its duration and, for a step, the page it left.
fn timeline(out: &mut String, report: &Report, budget: &mut u64) {
    if report.steps.is_empty() && report.assertions.is_empty() {
        return;
    }
    // A column for the pages only when the verification took them.
    let shots = report.steps.iter().any(|step| step.screenshot.is_some());
    let _ = write!(
        out,
        "<h2>Timeline</h2><table id=\"timeline\"><tr><th>#</th><th>what</th><th>result</th><th>ms</th>{}</tr>",
        if shots { "<th>the page after it</th>" } else { "" }
    );
    for step in &report.steps {
        let _ = write!(
            out,
            "<tr class=\"step\" data-index=\"{}\"><td class=\"num\">{}</td><td>{}</td><td class=\"{}\">{}</td><td class=\"num ms\">{}</td>",
            step.index,
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
        match &step.screenshot {
            _ if !shots => {}
            Some(file) => {
                out.push_str("<td>");
                let name = file
                    .path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let _ = write!(out, "<a href=\"{}\">", escape(&name));
                image(
                    out,
                    &format!("the page after step {}", step.index),
                    &file.path,
                    "shot",
                    budget,
                );
                out.push_str("</a></td>");
            }
            None => out.push_str("<td>not taken</td>"),
        }
        out.push_str("</tr>");
    }
    for (index, assertion) in report.assertions.iter().enumerate() {
        let _ = write!(
            out,
            "<tr class=\"assertion\"><td class=\"num\">{}</td><td>assert {}</td><td class=\"{}\">{}: {}</td><td class=\"num ms\">{}</td>{}</tr>",
            report.steps.len() + index + 1,
            escape(&assertion.assertion.describe()),
            if assertion.passed { "ok" } else { "bad" },
            if assertion.passed { "passed" } else { "failed" },
            escape(&assertion.detail),
            assertion.ms,
            if shots { "<td></td>" } else { "" }
        );
    }
    out.push_str("</table>");
}

fn observed(out: &mut String, report: &Report) {
    let omitted = report.omitted;
    let _ = write!(
        out,
        "<h2>Console and network</h2><p>console errors: {} · console warnings: {} · failed requests: {} · blocked requests: {}</p>",
        report.console_errors.len() + omitted.console_errors,
        report.console_warnings,
        report.failed_requests.len() + omitted.failed_requests,
        report.blocked_requests.len() + omitted.blocked_requests
    );
    list(
        out,
        ("console", "Console errors", &["level", "message", "where"]),
        &report.console_errors,
        omitted.console_errors,
        |e| {
            let place = match (text(e, "url"), e.get("line")) {
                (url, Some(line)) if !url.is_empty() => {
                    format!(
                        "{url}:{line}:{}",
                        e.get("column").map(Value::to_string).unwrap_or_default()
                    )
                }
                (url, _) => url,
            };
            vec![text(e, "level"), text(e, "text"), place]
        },
    );
    list(
        out,
        ("network", "Failed requests", &["method", "URL", "status", "type"]),
        &report.failed_requests,
        omitted.failed_requests,
        |e| {
            let status = e.get("status").map_or_else(|| text(e, "error"), Value::to_string);
            vec![text(e, "method"), text(e, "url"), status, text(e, "resourceType")]
        },
    );
    list(
        out,
        ("blocked", "Blocked requests", &["URL", "rule"]),
        &report.blocked_requests,
        omitted.blocked_requests,
        |e| vec![text(e, "url"), text(e, "rule")],
    );
    if !report.framework_notices.is_empty() {
        out.push_str("<h3>Framework notices</h3><ul>");
        for notice in &report.framework_notices {
            let _ = write!(out, "<li>{}</li>", escape(notice));
        }
        out.push_str("</ul>");
    }
}

/// One kind of entries as a table (`id`, heading, columns), each row's cells
/// from `cells`, and how many the report left out.
fn list(
    out: &mut String,
    (id, heading, columns): (&str, &str, &[&str]),
    entries: &[Value],
    omitted: usize,
    cells: impl Fn(&Value) -> Vec<String>,
) {
    if entries.is_empty() {
        return;
    }
    let _ = write!(out, "<h3>{heading}</h3><table id=\"{id}\"><tr>");
    for column in columns {
        let _ = write!(out, "<th>{column}</th>");
    }
    out.push_str("</tr>");
    for entry in entries {
        out.push_str("<tr>");
        for cell in cells(entry) {
            let _ = write!(out, "<td><code>{}</code></td>", escape(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    if omitted > 0 {
        let _ = write!(
            out,
            "<p>{omitted} more not kept (a report keeps the first {MAX_REPORT_ENTRIES}).</p>"
        );
    }
}

/// A field of an entry as text (a string as itself, anything else as JSON).
fn text(entry: &Value, key: &str) -> String {
    match entry.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An image inlined from `path` within the budget, else named with why not.
fn image(out: &mut String, label: &str, path: &Path, class: &str, budget: &mut u64) {
    match inline_png(path, *budget) {
        Ok((data, bytes)) => {
            *budget = budget.saturating_sub(bytes);
            let _ = write!(
                out,
                "<img class=\"{class}\" alt=\"{}\" src=\"data:image/png;base64,{data}\">",
                escape(label)
            );
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
}

/// The images a person compares: Reference, Current and Diff side by side for
/// a reference diff (Current stands for the screenshot then), else the screenshot.
fn evidence(out: &mut String, report: &Report, budget: &mut u64) {
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
        image(out, label, path, "evidence", budget);
        out.push_str("</figure>");
    }
    out.push_str("</div>");
}

/// The PNG at `path` as base64, and its size; refused above the per-image
/// limit or the bytes `left` of the report's budget.
fn inline_png(path: &Path, left: u64) -> Result<(String, u64), String> {
    use base64::Engine as _;
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_INLINE_IMAGE_BYTES {
        return Err(format!(
            "{size} bytes, above the {MAX_INLINE_IMAGE_BYTES}-byte inline limit"
        ));
    }
    if size > left {
        return Err(format!(
            "not inlined: the report already holds its {MAX_INLINE_TOTAL_BYTES} bytes of images"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    Ok((
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        bytes.len() as u64,
    ))
}

/// HTML text and attribute escaping.
pub(super) fn escape(text: &str) -> String {
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
    use super::{escape, iso8601};

    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_437_231_123), "2026-12-05T02:20:31.123Z");
    }

    #[test]
    fn page_text_cannot_become_markup() {
        assert_eq!(
            escape("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
    }
}
