//! `dshkit echo verify --junit FILE`: the verification of a cassette as JUnit
//! XML, in the one model of [`dshkit_ci::junit`].
//!
//! - The first testcase, `drift`, fails when any answer drifted, so the suite
//!   passes only when every recorded request was answered as recorded.
//! - Each recorded request is a testcase (`#ordinal method tool`): `MATCH`
//!   passes; `CHANGED`, `ERROR-SHAPE-CHANGED` and `MISSING` are failures of
//!   that type, with where the answers differ and the detail.
//! - A verification that could not run (a damaged cassette, a server that
//!   would not start) is one `<error>` testcase.

use std::path::Path;

use dshkit_ci::junit::{Case, Outcome as CaseOutcome, Problem, Property, Suite, WriteError, first_line};

use crate::show::{Verified, wire_name};
use crate::verify::{Check, Outcome};

/// The `classname` of the testcases.
pub const CLASSNAME: &str = "dshkit.echo.verify";

/// The suite's name: the same for every run over one cassette, so CI keeps its history.
fn suite_name(cassette: &Path) -> String {
    format!("dshkit echo verify {}", cassette.display())
}

/// The verification of `cassette` as a suite.
pub fn suite(cassette: &Path, verified: &Verified) -> Suite {
    let total = verified.checks.len();
    let summary = format!("{total} request(s), {} drifted", verified.drift);
    let drift = if verified.drift == 0 {
        CaseOutcome::Passed
    } else {
        let drifted: Vec<String> = verified
            .checks
            .iter()
            .filter(|c| c.outcome != Outcome::Match)
            .map(|c| format!("#{} {}: {}", c.ordinal, request(c), wire_name(c.outcome)))
            .collect();
        CaseOutcome::Failed(Problem::new("drift", &summary, drifted.join("\n")))
    };
    let mut cases = vec![Case::new(CLASSNAME, "drift", drift)];
    cases.extend(verified.checks.iter().map(check_case));
    Suite {
        name: suite_name(cassette),
        properties: vec![
            Property::new("cassette", cassette.display().to_string()),
            Property::new("summary", summary),
        ],
        cases,
        ..Suite::default()
    }
}

fn check_case(check: &Check) -> Case {
    let outcome = if check.outcome == Outcome::Match {
        CaseOutcome::Passed
    } else {
        let kind = wire_name(check.outcome);
        let message = match (&check.detail, check.paths.is_empty()) {
            (Some(detail), _) => first_line(detail).to_owned(),
            (None, false) => format!("the answer differs at {}", check.paths.join(", ")),
            (None, true) => format!("the answer is {kind}"),
        };
        let mut text = check.paths.join("\n");
        if let Some(detail) = &check.detail {
            text = format!("{detail}\n{text}");
        }
        CaseOutcome::Failed(Problem::new(kind, message, text.trim_end()))
    };
    Case::new(
        CLASSNAME,
        format!("#{} {}", check.ordinal, request(check)),
        outcome,
    )
}

/// The request as the text output names it: the method, and the tool of a `tools/call`.
fn request(check: &Check) -> String {
    match &check.tool {
        Some(tool) => format!("{} {tool}", check.method),
        None => check.method.clone(),
    }
}

/// Writes the JUnit file of the verification of `cassette` to `path`
/// (atomically): its suite, or one `<error>` saying why it could not run.
pub fn write<E: std::fmt::Display>(
    path: &Path,
    cassette: &Path,
    outcome: Result<&Verified, &E>,
) -> Result<(), WriteError> {
    match outcome {
        Ok(verified) => suite(cassette, verified),
        Err(error) => Suite::could_not_run(suite_name(cassette), CLASSNAME, &error.to_string()),
    }
    .write(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ordinal: u64, outcome: Outcome, paths: &[&str]) -> Check {
        Check {
            ordinal,
            method: "tools/call".into(),
            tool: Some("echo".into()),
            outcome,
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            detail: None,
        }
    }

    #[test]
    fn drift_fails_the_suite_and_names_each_drifted_request() {
        let verified = Verified {
            checks: vec![
                check(1, Outcome::Match, &[]),
                check(2, Outcome::Changed, &["/result/content/0/text"]),
            ],
            drift: 1,
        };
        let suite = suite(Path::new("c.jsonl"), &verified);
        assert!(!suite.passes());
        let xml = suite.to_xml();
        assert!(xml.contains("tests=\"3\" failures=\"2\""), "{xml}");
        assert!(xml.contains("<failure type=\"drift\" message=\"2 request(s), 1 drifted\">#2 tools/call echo: CHANGED</failure>"), "{xml}");
        assert!(
            xml.contains(
                "<testcase classname=\"dshkit.echo.verify\" name=\"#1 tools/call echo\" time=\"0.000\"/>"
            ),
            "{xml}"
        );
        assert!(xml.contains("<failure type=\"CHANGED\" message=\"the answer differs at /result/content/0/text\">/result/content/0/text</failure>"), "{xml}");
    }

    #[test]
    fn no_drift_passes() {
        let verified = Verified {
            checks: vec![check(1, Outcome::Match, &[])],
            drift: 0,
        };
        assert!(suite(Path::new("c.jsonl"), &verified).passes());
    }
}
