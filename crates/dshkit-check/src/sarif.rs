//! `dshkit check --sarif FILE`: the report as SARIF 2.1.0, the format
//! code-scanning UIs read.
//!
//! - One run, its tool driver `dshkit` with its version and the rules it
//!   reports: each check's id (`syntax`, `patch_references`, …) and the finer
//!   ids of link findings (`import.package_not_found`, …).
//! - A result for each finding of a check that did not pass: `error` for a
//!   failure, `warning` for a warning, `note` for what was not tested. A
//!   finding with a place ([`Located`]) has a physical location: its file,
//!   relative to the DSH home (`uriBaseId` `DSH_HOME`, whose absolute URI is in
//!   `originalUriBaseIds`; a file outside the home has its absolute `file:`
//!   URI), and its line and column (columns count characters:
//!   `columnKind` `unicodeCodePoints`). One without a place (a boot that
//!   failed, a manifest problem) has the message alone.
//! - Bounded: each check keeps at most [`crate::MAX_EVIDENCE`] findings and
//!   says how many more there were in a tool notification; each message is cut
//!   at [`MAX_MESSAGE_CHARS`], saying so.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::report::{Check, Located, Report, Status};

/// Most characters of one result's message.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// The SARIF version written, and the schema it validates against.
pub const SARIF_VERSION: &str = "2.1.0";
const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The name of the base the results' paths are relative to: the DSH home.
pub const BASE_ID: &str = "DSH_HOME";

/// A SARIF file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the SARIF report {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl WriteError {
    /// The stable code of the error.
    pub fn code(&self) -> &'static str {
        "SARIF_WRITE_FAILED"
    }

    /// Writing failed on this machine: a runtime failure.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Runtime
    }
}

dshkit_os::classified!(WriteError);

/// The report of a check of the DSH home `home` as a SARIF 2.1.0 log.
pub fn log(report: &Report, home: &Path) -> Value {
    let base = Base::new(home);
    let mut rules: Vec<(String, String)> = Vec::new();
    let mut rule_index = |id: &str, description: String| {
        rules
            .iter()
            .position(|(known, _)| known == id)
            .unwrap_or_else(|| {
                rules.push((id.to_owned(), description));
                rules.len() - 1
            })
    };
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for check in report.checks.iter().filter(|c| c.status != Status::Pass) {
        for located in &check.located {
            let index = rule_index(located.rule, rule_description(check, located.rule));
            results.push(located_result(check, located, index, &base));
        }
        let index = rule_index(check.id, check.name.to_owned());
        let unlocated = unlocated_lines(check);
        if check.located.is_empty() && unlocated.is_empty() {
            results.push(result(check.id, index, level(check.status), &check.detail));
        }
        for line in unlocated {
            let message = format!("{}: {line}", check.detail);
            results.push(result(check.id, index, level(check.status), &message));
        }
        if check.omitted > 0 {
            notifications.push(json!({
                "level": "warning",
                "message": { "text": format!(
                    "{}: {} more finding(s) not shown: a check keeps at most {}",
                    check.id,
                    check.omitted,
                    crate::MAX_EVIDENCE
                ) },
            }));
        }
    }
    let rules: Vec<Value> = rules
        .into_iter()
        .map(|(id, description)| {
            json!({
                "id": id,
                "name": id,
                "shortDescription": { "text": description },
            })
        })
        .collect();
    let mut invocation = json!({ "executionSuccessful": true });
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = Value::Array(notifications);
    }
    json!({
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": { "driver": {
                "name": "dshkit",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            } },
            "originalUriBaseIds": { BASE_ID: {
                "uri": base.uri,
                "description": { "text": "The DSH home checked." },
            } },
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }],
    })
}

/// Writes the SARIF log of `report` (a check of the DSH home `home`) to
/// `path`, atomically.
pub fn write(path: &Path, report: &Report, home: &Path) -> Result<(), WriteError> {
    let mut text = serde_json::to_string_pretty(&log(report, home)).unwrap_or_default();
    text.push('\n');
    dshkit_os::fs::write_atomic(path, text.as_bytes()).map_err(|source| WriteError {
        path: path.to_owned(),
        source,
    })
}

fn rule_description(check: &Check, rule: &str) -> String {
    if rule == check.id {
        check.name.to_owned()
    } else {
        format!("{}: {rule}", check.name)
    }
}

fn level(status: Status) -> &'static str {
    match status {
        Status::Fail => "error",
        Status::Warn => "warning",
        Status::Pass | Status::NotTested => "note",
    }
}

fn result(rule: &str, index: usize, level: &str, message: &str) -> Value {
    json!({
        "ruleId": rule,
        "ruleIndex": index,
        "level": level,
        "message": { "text": bounded(message) },
    })
}

fn located_result(check: &Check, located: &Located, index: usize, base: &Base) -> Value {
    let mut result = result(located.rule, index, level(located.status), &located.message);
    result["locations"] = json!([{
        "physicalLocation": {
            "artifactLocation": base.artifact(&located.file),
            "region": {
                "startLine": located.line.max(1),
                "startColumn": located.column.max(1),
            },
        },
    }]);
    result["properties"] = json!({ "check": check.id });
    result
}

/// The evidence lines of `check` that no located finding stands for (a
/// located finding's line starts with its `file:line:column: `).
fn unlocated_lines(check: &Check) -> Vec<&str> {
    let places: Vec<String> = check
        .located
        .iter()
        .map(|l| format!("{}:{}:{}: ", l.file.display(), l.line, l.column))
        .collect();
    check
        .evidence
        .iter()
        .filter(|line| !places.iter().any(|place| line.starts_with(place.as_str())))
        .map(String::as_str)
        .collect()
}

fn bounded(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message.to_owned(),
        Some((cut, _)) => format!(
            "{}… ({} more character(s) cut)",
            &message[..cut],
            message[cut..].chars().count()
        ),
    }
}

/// The DSH home as the base of the results' URIs.
struct Base {
    /// Its absolute `file:` URI, ending with `/`.
    uri: String,
    /// The home as given and as resolved (a file's path may be either).
    dirs: Vec<PathBuf>,
}

impl Base {
    fn new(home: &Path) -> Self {
        let absolute = std::path::absolute(home).unwrap_or_else(|_| home.to_owned());
        let mut dirs = vec![absolute.clone()];
        dirs.extend(dshkit_os::fs::canonicalize(home).ok());
        let uri = url::Url::from_directory_path(&absolute)
            .map_or_else(|()| format!("file:///{}/", absolute.display()), String::from);
        Self { uri, dirs }
    }

    /// `{uri, uriBaseId}` relative to the home, else the absolute `file:` URI.
    fn artifact(&self, file: &Path) -> Value {
        let file = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
        let Ok(file_uri) = url::Url::from_file_path(&file) else {
            return json!({ "uri": file.display().to_string().replace('\\', "/") });
        };
        for dir in &self.dirs {
            if let Ok(relative) = file.strip_prefix(dir)
                && let Ok(dir_uri) = url::Url::from_directory_path(dir)
                && let Some(relative_uri) = file_uri.as_str().strip_prefix(dir_uri.as_str())
                && !relative.as_os_str().is_empty()
            {
                return json!({ "uri": relative_uri, "uriBaseId": BASE_ID });
            }
        }
        json!({ "uri": file_uri.as_str() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn located(rule: &'static str, file: &str, line: usize, column: usize) -> Located {
        Located {
            rule,
            status: Status::Fail,
            file: file.into(),
            line,
            column,
            message: format!("{rule} at {line}"),
        }
    }

    #[cfg(unix)]
    fn report(home: &str) -> Report {
        let links = Check::new(
            "links",
            "Imports resolve and link",
            Status::Fail,
            "2 link failure(s)",
        )
        .with_evidence(vec![
            format!("{home}/profiles/p/plugins/a b/index.js:3:8: [import.package_not_found] x"),
            "a: not decided: y".into(),
        ])
        .with_located(vec![located(
            "import.package_not_found",
            &format!("{home}/profiles/p/plugins/a b/index.js"),
            3,
            8,
        )]);
        let boot = Check::new("boot", "Isolated boot", Status::Warn, "slow boot");
        let pass = Check::new("syntax", "JavaScript syntax", Status::Pass, "ok");
        Report::new(vec![links, boot, pass])
    }

    #[test]
    #[cfg(unix)]
    fn findings_carry_rule_level_and_place_relative_to_the_home() {
        let log = log(&report("/h"), Path::new("/h"));
        let run = &log["runs"][0];
        assert_eq!(log["version"], "2.1.0");
        assert_eq!(run["tool"]["driver"]["name"], "dshkit");
        assert_eq!(run["originalUriBaseIds"]["DSH_HOME"]["uri"], "file:///h/");
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "{results:#?}");
        let first = &results[0];
        assert_eq!(first["ruleId"], "import.package_not_found");
        assert_eq!(first["level"], "error");
        let place = &first["locations"][0]["physicalLocation"];
        assert_eq!(
            place["artifactLocation"]["uri"],
            "profiles/p/plugins/a%20b/index.js"
        );
        assert_eq!(place["artifactLocation"]["uriBaseId"], "DSH_HOME");
        assert_eq!(place["region"]["startLine"], 3);
        assert_eq!(place["region"]["startColumn"], 8);
        assert_eq!(results[1]["ruleId"], "links", "the unlocated evidence line");
        assert_eq!(
            results[1]["message"]["text"],
            "2 link failure(s): a: not decided: y"
        );
        assert!(results[1].get("locations").is_none());
        assert_eq!(results[2]["ruleId"], "boot");
        assert_eq!(results[2]["level"], "warning");
        let rules: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["import.package_not_found", "links", "boot"]);
        for result in results {
            let index = usize::try_from(result["ruleIndex"].as_u64().unwrap()).unwrap();
            assert_eq!(rules[index], result["ruleId"]);
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_file_outside_the_home_has_its_absolute_uri() {
        let base = Base::new(Path::new("/h"));
        assert_eq!(
            base.artifact(Path::new("/elsewhere/x.js")),
            json!({ "uri": "file:///elsewhere/x.js" })
        );
    }

    #[test]
    fn a_relative_home_and_relative_files_still_give_relative_uris() {
        let base = Base::new(Path::new("home"));
        let file = Path::new("home")
            .join("profiles")
            .join("web")
            .join("cordis.patch.yml");
        assert_eq!(
            base.artifact(&file),
            json!({ "uri": "profiles/web/cordis.patch.yml", "uriBaseId": BASE_ID })
        );
    }

    #[test]
    fn cut_findings_and_long_messages_say_so() {
        let many: Vec<String> = (0..crate::MAX_EVIDENCE + 3)
            .map(|i| format!("problem {i}"))
            .collect();
        let check = Check::new("manifest", "Manifests", Status::Fail, "many").with_evidence(many);
        let log = log(&Report::new(vec![check]), Path::new("/h"));
        let notes = &log["runs"][0]["invocations"][0]["toolExecutionNotifications"];
        assert!(
            notes[0]["message"]["text"]
                .as_str()
                .unwrap()
                .contains("3 more finding(s) not shown")
        );
        let message = "x".repeat(MAX_MESSAGE_CHARS + 2);
        assert!(bounded(&message).ends_with("… (2 more character(s) cut)"));
    }
}
