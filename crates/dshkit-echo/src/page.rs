//! `dshkit echo inspect --html FILE`: a cassette's interactions as one
//! self-contained page for people.
//!
//! - Self-contained: its style is inline and it loads nothing (no script, no
//!   image, no font; its Content-Security-Policy forbids every load but the
//!   inline style), so it opens from a file, an artifact store or an e-mail.
//! - Escaped: everything the cassette holds is text on the page, never markup
//!   ([`dshkit_ci::xml`], the one escaping home; characters XML cannot hold
//!   become U+FFFD).
//! - The header (transport, era, protocol, server, recorder, redaction), then
//!   one row per record as `echo inspect` lists it (ordinal, kind, method,
//!   summary, time, notifications, error), each interaction with its request and
//!   its first answer as JSON behind a disclosure.
//! - Bounded: at most [`MAX_PAGE_ROWS`] rows and [`MAX_SHOWN_JSON_CHARS`]
//!   characters of each JSON shown; the page says what it left out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dshkit_ci::xml::{attribute, text};
use serde_json::Value;

use crate::cassette::{Header, Record, Records};
use crate::error::CassetteError;
use crate::lint::entry;

/// Most records a page lists; it says how many more the cassette holds.
pub const MAX_PAGE_ROWS: usize = 5_000;
/// Most characters of one request or answer shown (pretty-printed JSON).
pub const MAX_SHOWN_JSON_CHARS: usize = 2_048;

/// Why the page was not written.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    #[error("cannot write the page {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PageError {
    /// A stable machine-readable code: the cassette's, or `PAGE_WRITE_FAILED`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Cassette(e) => e.code(),
            Self::Write { .. } => "PAGE_WRITE_FAILED",
        }
    }

    /// A cassette that cannot be read is refused; a page not written failed here.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        match self {
            Self::Cassette(e) => e.class(),
            Self::Write { .. } => dshkit_os::error::ErrorClass::Runtime,
        }
    }
}

dshkit_os::classified!(PageError);

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1a1a1a;background:#fff}\
h1{font-size:1.3em}table{border-collapse:collapse;width:100%}\
th,td{text-align:left;vertical-align:top;padding:.3em .6em;border-bottom:1px solid #ddd}\
th{background:#f4f4f4}tr.error td{background:#fff0f0}td.ms,td.n{text-align:right;white-space:nowrap}\
pre{white-space:pre-wrap;word-break:break-all;background:#f8f8f8;padding:.5em;margin:.3em 0}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}\
@media (prefers-color-scheme:dark){body{color:#e8e8e8;background:#161616}th{background:#262626}\
th,td{border-color:#333}tr.error td{background:#3a1f1f}pre{background:#222}}";

/// The page of the cassette at `path`.
pub fn page(path: &Path) -> Result<String, CassetteError> {
    let mut records = Records::open(path)?;
    let header = records.header().clone();
    let name = path.display().to_string();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        text(&format!("Echo cassette {name}")),
        text(&name)
    );
    header_list(&mut out, &header);
    out.push_str(
        "<table id=\"interactions\"><thead><tr><th>#</th><th>kind</th><th>method</th>\
         <th>summary</th><th>ms</th><th>notifications</th></tr></thead><tbody>\n",
    );
    let mut rows = 0usize;
    let mut left_out = 0usize;
    for record in records.by_ref() {
        let record = record?;
        if rows == MAX_PAGE_ROWS {
            left_out += 1;
            continue;
        }
        rows += 1;
        row(&mut out, &record);
    }
    out.push_str("</tbody></table>\n");
    if left_out > 0 {
        let _ = writeln!(
            out,
            "<p id=\"left-out\">{left_out} more record(s) not shown: a page lists at most {MAX_PAGE_ROWS}; \
             <code>dshkit echo inspect</code> lists them all.</p>"
        );
    }
    for warning in records.warnings() {
        let _ = writeln!(out, "<p class=\"warning\">warning: {}</p>", text(warning));
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

/// Writes the page of the cassette at `cassette` to `file`, atomically.
pub fn write(cassette: &Path, file: &Path) -> Result<(), PageError> {
    let page = page(cassette)?;
    dshkit_os::fs::write_atomic(file, page.as_bytes()).map_err(|source| PageError::Write {
        path: file.to_owned(),
        source,
    })
}

fn header_list(out: &mut String, header: &Header) {
    let server = header.server_info.as_ref().map_or_else(
        || "?".to_owned(),
        |s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap_or("?"),
                s["version"].as_str().unwrap_or("")
            )
        },
    );
    let facts = [
        ("transport", header.transport.clone()),
        ("era", header.era.clone()),
        (
            "protocol",
            header.protocol_version.clone().unwrap_or_else(|| "?".into()),
        ),
        ("server", server),
        ("recorded by", header.recorder.clone()),
        ("redacted", if header.redacted { "yes" } else { "no" }.to_owned()),
        ("format version", header.format_version.to_string()),
    ];
    out.push_str("<dl id=\"header\">");
    for (name, value) in facts {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", text(name), text(&value));
    }
    out.push_str("</dl>\n");
}

fn row(out: &mut String, record: &Record) {
    let entry = entry(record);
    let class = match (record, entry.is_error) {
        (Record::Interaction(_), true) => "interaction error",
        (Record::Interaction(_), false) => "interaction",
        _ => "message",
    };
    let ordinal = entry.ordinal.map_or_else(|| "-".to_owned(), |o| format!("#{o}"));
    let _ = write!(
        out,
        "<tr class=\"{class}\" data-ordinal=\"{}\"><td>{}</td><td>{}</td><td class=\"method\">{}</td><td class=\"summary\">{}",
        attribute(&entry.ordinal.map(|o| o.to_string()).unwrap_or_default()),
        text(&ordinal),
        text(entry.kind),
        text(&entry.method),
        text(&entry.summary)
    );
    if entry.is_error {
        out.push_str(" <strong>ERROR</strong>");
    }
    if let Record::Interaction(interaction) = record {
        let answer = interaction.responses.first().unwrap_or(&Value::Null);
        let _ = write!(
            out,
            "<details><summary>request and answer</summary><pre class=\"request\">{}</pre><pre class=\"answer\">{}</pre></details>",
            text(&shown_json(&interaction.request)),
            text(&shown_json(answer))
        );
    }
    let _ = writeln!(
        out,
        "</td><td class=\"ms\">{}</td><td class=\"n\">{}</td></tr>",
        entry.ms.map(|ms| ms.to_string()).unwrap_or_default(),
        entry.notifications
    );
}

/// `value` pretty-printed, cut at [`MAX_SHOWN_JSON_CHARS`] (saying so).
fn shown_json(value: &Value) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    match pretty.char_indices().nth(MAX_SHOWN_JSON_CHARS) {
        None => pretty,
        Some((cut, _)) => format!(
            "{}\n… ({} more character(s) not shown)",
            &pretty[..cut],
            pretty[cut..].chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cassette::test_records::{recorded_line, write_cassette};

    #[test]
    fn the_page_lists_each_interaction_escaped_and_loads_nothing() {
        let (_dir, path) = write_cassette(
            &[
                recorded_line(
                    1,
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "<img src=x onerror=alert(1)> & \u{1b}[31m"}}}),
                ),
                recorded_line(2, json!({"jsonrpc": "2.0", "id": 2, "method": "ping\u{1b}<b>"})),
            ],
            true,
        );
        let html = page(&path).unwrap();
        assert_eq!(html.matches("<tr class=\"interaction\"").count(), 2, "{html}");
        assert!(html.contains("<td class=\"method\">tools/call</td>"), "{html}");
        assert!(
            !html.contains("<img"),
            "page content never becomes markup: {html}"
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
        assert!(
            html.contains("<td class=\"method\">ping\u{FFFD}&lt;b&gt;</td>"),
            "a raw escape character is replaced: {html}"
        );
        assert!(!html.contains('\u{1b}'), "{html}");
        for load in ["<script", "<link", "src=\"", "href=", "url(", "@import"] {
            assert!(!html.contains(load), "the page loads nothing ({load}): {html}");
        }
        assert!(html.contains("default-src 'none'"));
    }

    #[test]
    fn long_answers_and_many_records_are_cut_and_say_so() {
        let long = json!({"text": "x".repeat(MAX_SHOWN_JSON_CHARS * 2)});
        assert!(shown_json(&long).contains("more character(s) not shown"));
        let lines: Vec<String> = (1..=MAX_PAGE_ROWS as u64 + 2)
            .map(|n| recorded_line(n, json!({"jsonrpc": "2.0", "id": n, "method": "ping"})))
            .collect();
        let (_dir, path) = write_cassette(&lines, true);
        let html = page(&path).unwrap();
        assert_eq!(html.matches("<tr class=\"interaction\"").count(), MAX_PAGE_ROWS);
        assert!(html.contains("2 more record(s) not shown"), "said on the page");
    }

    #[test]
    fn a_page_not_written_and_a_damaged_cassette_are_errors_with_their_codes() {
        let (dir, path) = write_cassette(&[recorded_line(1, json!({"method": "ping"}))], true);
        let error = write(&path, &dir.path().join("no/such/dir/page.html")).unwrap_err();
        assert_eq!(error.code(), "PAGE_WRITE_FAILED", "{error}");
        std::fs::write(&path, "not a cassette\n").unwrap();
        let error = write(&path, &dir.path().join("page.html")).unwrap_err();
        assert_eq!(error.class(), dshkit_os::error::ErrorClass::Refused, "{error}");
    }
}
