//! The index of past reports: `index.html` at the evidence store's root, every
//! `verify-<ms>.json` of its sessions newest first (verdict, app and URL, time,
//! duration, links to the report's HTML and JSON), bounded, written atomically.
//! A report that cannot be read is listed as damaged with its reason.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

use super::evidence::{EvidenceError, REPORT_FORMAT_VERSION};
use super::html::{STYLE, escape, head, tail, time_element};

/// The index's file name, at the store's root.
pub const INDEX_FILE: &str = "index.html";
/// Reports an index lists (the newest); it says how many it left out.
pub const MAX_INDEX_ROWS: usize = 500;
/// Largest report file read; a bigger one is listed as damaged.
pub const MAX_REPORT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One report as the index lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    /// `verify-<ms>`.
    pub id: String,
    /// The evidence session (the report's directory).
    pub session: String,
    /// Milliseconds since the Unix epoch (from the report, else its name).
    pub created_at_ms: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The URL the report checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The app's directory, when a dev server served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<u128>,
    pub json_path: PathBuf,
    /// The report for people, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html_path: Option<PathBuf>,
    /// Why the report could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

/// The index: what it lists and what it left out.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// The evidence store's root it lists.
    pub root: PathBuf,
    /// Where `index.html` is (written by [`write`]).
    pub path: PathBuf,
    /// Reports found.
    pub total: usize,
    /// Of those, the ones past [`MAX_INDEX_ROWS`] not listed.
    pub left_out: usize,
    /// Listed reports that could not be read.
    pub damaged: usize,
    /// Newest first.
    pub reports: Vec<IndexEntry>,
}

/// Lists the reports under the store's `root`, newest first, at most `max_rows`.
pub fn scan(root: &Path, max_rows: usize) -> Index {
    let mut found: Vec<(u128, String, String)> = Vec::new();
    for session in std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let is_dir = session.file_type().is_ok_and(|t| t.is_dir() && !t.is_symlink());
        let Some(name) = session.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !is_dir {
            continue;
        }
        for file in std::fs::read_dir(session.path())
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            if let Some((ms, id)) = file.file_name().to_str().and_then(report_name) {
                found.push((ms, name.clone(), id));
            }
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let reports: Vec<IndexEntry> = found
        .into_iter()
        .take(max_rows)
        .map(|(ms, session, id)| entry(root, ms, session, id))
        .collect();
    Index {
        root: root.to_owned(),
        path: root.join(INDEX_FILE),
        total,
        left_out: total - reports.len(),
        damaged: reports.iter().filter(|r| r.damaged.is_some()).count(),
        reports,
    }
}

/// `verify-<ms>.json` → its time and id.
fn report_name(file: &str) -> Option<(u128, String)> {
    let id = file.strip_suffix(".json")?;
    let digits = id.strip_prefix("verify-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, id.to_owned()))
}

fn entry(root: &Path, ms: u128, session: String, id: String) -> IndexEntry {
    let dir = root.join(&session);
    let json_path = dir.join(format!("{id}.json"));
    let html = dir.join(format!("{id}.html"));
    let mut entry = IndexEntry {
        html_path: html.is_file().then_some(html),
        id,
        session,
        created_at_ms: ms,
        verdict: None,
        url: None,
        app: None,
        total_ms: None,
        json_path,
        damaged: None,
    };
    match read(&entry.json_path) {
        Ok(report) => {
            let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
            entry.verdict = text(&report["verdict"]);
            entry.url = text(&report["requestedUrl"]);
            entry.app = text(&report["runtime"]["dir"]).map(PathBuf::from);
            entry.total_ms = report["timings"]["totalMs"].as_u64().map(u128::from);
            if let Some(at) = report["createdAtMs"].as_u64() {
                entry.created_at_ms = u128::from(at);
            }
        }
        Err(why) => entry.damaged = Some(why),
    }
    entry
}

/// A report file as JSON, once it is one this dshkit reads.
fn read(path: &Path) -> Result<Value, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_REPORT_FILE_BYTES {
        return Err(format!(
            "{} bytes, above the {MAX_REPORT_FILE_BYTES}-byte limit of a report",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let report: Value = serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
    match report["formatVersion"].as_u64() {
        Some(v) if v == u64::from(REPORT_FORMAT_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "format version {v}, which this dshkit (version {REPORT_FORMAT_VERSION}) does not read"
            ));
        }
        None => return Err("no formatVersion: not a verification report".into()),
    }
    if !report["verdict"].is_string() {
        return Err("no verdict".into());
    }
    Ok(report)
}

/// The index as one HTML document (self-contained, links relative to the root).
pub fn render(index: &Index) -> String {
    let mut out = head("dshkit verification reports", STYLE);
    let _ = write!(
        out,
        "<h1>Verification reports</h1><p id=\"summary\">{} report(s) in <code>{}</code>, newest first",
        index.total,
        escape(&index.root.display().to_string())
    );
    if index.damaged > 0 {
        let _ = write!(out, " · {} damaged", index.damaged);
    }
    if index.left_out > 0 {
        let _ = write!(
            out,
            " · <span id=\"left-out\">{} older not listed (an index lists the newest {})</span>",
            index.left_out,
            index.reports.len()
        );
    }
    out.push_str(".</p>");
    if index.reports.is_empty() {
        out.push_str("<p>No verification has written a report here yet.</p>");
    } else {
        out.push_str(
            "<table id=\"reports\"><tr><th>verdict</th><th>app / URL checked</th><th>when</th><th>took</th><th>report</th></tr>",
        );
        for entry in &index.reports {
            row(&mut out, entry);
        }
        out.push_str("</table>");
    }
    let _ = write!(
        out,
        "<p>Written by dshkit {}.</p>{}",
        env!("CARGO_PKG_VERSION"),
        tail()
    );
    out
}

fn row(out: &mut String, entry: &IndexEntry) {
    let link = |name: &str, label: &str| {
        format!(
            "<a href=\"{}/{}\">{label}</a>",
            escape(&entry.session),
            escape(name)
        )
    };
    let (verdict, checked) = match &entry.damaged {
        Some(why) => (
            "<span class=\"badge\">DAMAGED</span>".to_owned(),
            format!("<span class=\"bad damaged\">{}</span>", escape(why)),
        ),
        None => {
            let verdict = entry.verdict.as_deref().unwrap_or_default();
            let mut checked = format!("<code>{}</code>", escape(entry.url.as_deref().unwrap_or("")));
            if let Some(app) = &entry.app {
                let _ = write!(
                    checked,
                    "<br>app <code>{}</code>",
                    escape(&app.display().to_string())
                );
            }
            (
                format!("<span class=\"badge {0}\">{0}</span>", escape(verdict)),
                checked,
            )
        }
    };
    let mut links = Vec::new();
    if entry.html_path.is_some() {
        links.push(link(&format!("{}.html", entry.id), "HTML"));
    }
    links.push(link(&format!("{}.json", entry.id), "JSON"));
    let _ = write!(
        out,
        "<tr class=\"report\" data-id=\"{}\" data-session=\"{}\"><td class=\"verdict\">{verdict}</td><td>{checked}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
        escape(&entry.id),
        escape(&entry.session),
        time_element(entry.created_at_ms, None),
        entry.total_ms.map(|ms| format!("{ms} ms")).unwrap_or_default(),
        links.join(" · ")
    );
}

/// What `dshkit report` prints: the index's path on the first line, then how
/// many reports it lists, the newest, and each damaged one with its reason.
pub fn text(index: &Index) -> String {
    let mut text = format!("{}\n  {} report(s)", index.path.display(), index.total);
    if index.damaged > 0 {
        let _ = write!(text, ", {} damaged", index.damaged);
    }
    if index.left_out > 0 {
        let _ = write!(text, ", {} older not listed", index.left_out);
    }
    text.push('\n');
    if let Some(newest) = index.reports.iter().find(|r| r.damaged.is_none()) {
        let _ = writeln!(
            text,
            "  newest: {} {}",
            newest.verdict.as_deref().unwrap_or_default(),
            newest.url.as_deref().unwrap_or_default()
        );
    }
    for entry in &index.reports {
        if let Some(why) = &entry.damaged {
            let _ = writeln!(text, "  damaged: {}: {why}", entry.json_path.display());
        }
    }
    text
}

/// Scans the store's `root` and writes its `index.html` atomically (the root
/// made if missing). Writes of one process run one at a time, so the last
/// written saw every report written before it.
pub fn write(root: &Path) -> Result<Index, EvidenceError> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::fs::create_dir_all(root).map_err(|source| EvidenceError::Io {
        action: "create",
        path: root.to_owned(),
        source,
    })?;
    let index = scan(root, MAX_INDEX_ROWS);
    dshkit_os::fs::write_atomic(&index.path, render(&index).as_bytes()).map_err(|source| {
        EvidenceError::Io {
            action: "write",
            path: index.path.clone(),
            source,
        }
    })?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(dir: &Path, session: &str, ms: u128, body: &str) {
        let dir = dir.join(session);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("verify-{ms}.json")), body).unwrap();
    }

    fn good(verdict: &str, url: &str, ms: u128) -> String {
        serde_json::json!({
            "formatVersion": 1, "verdict": verdict, "requestedUrl": url, "createdAtMs": ms,
            "timings": { "totalMs": 42 }, "runtime": { "dir": "/apps/shop" }
        })
        .to_string()
    }

    #[test]
    fn newest_first_damaged_named_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        report(
            dir.path(),
            "s1",
            1000,
            &good("VERIFIED", "http://127.0.0.1:1/a", 1000),
        );
        report(
            dir.path(),
            "s2",
            3000,
            &good("FAILED", "http://127.0.0.1:1/<b>", 3000),
        );
        report(dir.path(), "s2", 2000, "{ not json");
        report(
            dir.path(),
            "s3",
            4000,
            r#"{"formatVersion": 9, "verdict": "VERIFIED"}"#,
        );
        std::fs::write(dir.path().join("s1/verify-1000.html"), "<p>").unwrap();
        std::fs::write(dir.path().join("s1/notes.json"), "{}").unwrap();
        std::fs::write(dir.path().join("s1/verify-x.json"), "{}").unwrap();

        let index = scan(dir.path(), MAX_INDEX_ROWS);
        let ids: Vec<_> = index.reports.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["verify-4000", "verify-3000", "verify-2000", "verify-1000"]);
        assert_eq!((index.total, index.damaged, index.left_out), (4, 2, 0));
        assert!(
            index.reports[0]
                .damaged
                .as_deref()
                .unwrap()
                .contains("format version 9")
        );
        assert!(
            index.reports[2]
                .damaged
                .as_deref()
                .unwrap()
                .starts_with("not JSON")
        );
        let verified = &index.reports[3];
        assert_eq!(verified.verdict.as_deref(), Some("VERIFIED"));
        assert_eq!(verified.app.as_deref(), Some(Path::new("/apps/shop")));
        assert_eq!(verified.total_ms, Some(42));
        assert!(verified.html_path.is_some() && index.reports[1].html_path.is_none());

        let html = render(&index);
        assert!(
            html.contains("http://127.0.0.1:1/&lt;b&gt;"),
            "page text is escaped"
        );
        assert!(
            html.contains("href=\"s1/verify-1000.html\"") && html.contains("href=\"s1/verify-1000.json\"")
        );
        assert!(
            !html.contains("verify-3000.html"),
            "no link to a missing HTML report"
        );
        assert!(html.contains("DAMAGED"));

        let bounded = scan(dir.path(), 2);
        assert_eq!((bounded.reports.len(), bounded.left_out), (2, 2));
        assert!(render(&bounded).contains("2 older not listed"));
    }

    #[test]
    fn a_missing_root_is_an_empty_index_and_write_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("evidence/verify");
        assert_eq!(scan(&root, 10).total, 0);
        let index = write(&root).unwrap();
        let html = std::fs::read_to_string(index.path).unwrap();
        assert!(html.contains("No verification has written a report here yet."));
    }
}
