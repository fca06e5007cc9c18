//! A verification as JUnit XML (`dshkit verify --junit FILE`), in the one
//! model of [`dshkit_ci::junit`]: the verdict, each step, each assertion and
//! the reference diff are testcases.
//!
//! - The verdict's testcase passes for `VERIFIED` and `VERIFIED_WITH_WARNINGS`
//!   (the warnings in its output), is a `<failure>` for `FAILED` and an
//!   `<error>` for `UNVERIFIED` (nothing could be judged), each with the
//!   verdict's reasons (the first as the message, all with the next action as
//!   the text). So a suite passes only when the verdict is a pass.
//! - The screenshot (and the diff image) are the verdict's attachments, and a
//!   step's screenshot its step's.
//! - A run that got no report at all is one `<error>` testcase.

use std::path::Path;
use std::time::Duration;

use dshkit_ci::junit::{Case, Outcome, Problem, Property, Suite, WriteError, first_line};

use super::report::Report;
use super::verdict::Verdict;

/// The `classname` of the verdict's testcase; steps, assertions and the
/// reference diff have their own below it.
pub const CLASSNAME: &str = "dshkit.verify";

/// The suite's name: the same for every run of one target, so CI keeps its history.
fn suite_name(target: &str) -> String {
    format!("dshkit verify {target}")
}

/// The report of a verification of `target` as a suite.
pub fn suite(target: &str, report: &Report) -> Suite {
    let mut cases = vec![verdict_case(report)];
    cases.extend(report.steps.iter().map(|step| {
        let outcome = match &step.error {
            None if step.ok => Outcome::Passed,
            error => {
                let message = error.clone().unwrap_or_else(|| "the step failed".into());
                Outcome::Failed(Problem::new("step", first_line(&message), message.clone()))
            }
        };
        let mut case = Case::new(
            format!("{CLASSNAME}.steps"),
            format!("step {}: {}", step.index, step.step),
            outcome,
        );
        case.time = millis(step.ms);
        case.attachments
            .extend(step.screenshot.iter().map(|s| s.path.clone()));
        case
    }));
    cases.extend(report.assertions.iter().map(|assertion| {
        let outcome = if assertion.passed {
            Outcome::Passed
        } else {
            Outcome::Failed(Problem::new(
                "assertion",
                first_line(&assertion.detail),
                assertion.detail.clone(),
            ))
        };
        let mut case = Case::new(
            format!("{CLASSNAME}.assertions"),
            assertion.assertion.describe(),
            outcome,
        );
        case.time = millis(assertion.ms);
        if assertion.passed {
            // A failure's detail is its text already.
            case.output.push(assertion.detail.clone());
        }
        case
    }));
    if let Some(diff) = &report.diff {
        let problem = |kind| Problem::new(kind, first_line(&diff.note), diff.note.clone());
        let outcome = match diff.passed {
            Some(true) => Outcome::Passed,
            Some(false) => Outcome::Failed(problem("mismatch")),
            None => Outcome::Error(problem("incomplete")),
        };
        let mut case = Case::new(
            format!("{CLASSNAME}.reference"),
            format!("reference {}", diff.reference.display()),
            outcome,
        );
        case.time = millis(report.timings.diff_ms);
        case.output.push(diff.note.clone());
        cases.push(case);
    }
    let mut properties = vec![
        Property::new("verdict", report.judgement.verdict.as_str()),
        Property::new("requestedUrl", &report.requested_url),
        Property::new("url", &report.url),
    ];
    properties.extend(
        [("report", &report.report_path), ("html", &report.html_path)]
            .into_iter()
            .filter_map(|(name, path)| Some(Property::new(name, path.as_ref()?.display().to_string()))),
    );
    Suite {
        name: suite_name(target),
        time: millis(report.timings.total_ms),
        properties,
        cases,
    }
}

fn verdict_case(report: &Report) -> Case {
    let judgement = &report.judgement;
    let mut text = judgement.reasons.join("\n");
    if !judgement.next_action.is_empty() {
        text.push_str(&format!("\nnext: {}", judgement.next_action));
    }
    let verdict = judgement.verdict.as_str();
    let message = judgement
        .reasons
        .first()
        .map_or(verdict, |reason| first_line(reason));
    let outcome = match judgement.verdict {
        Verdict::Verified | Verdict::VerifiedWithWarnings => Outcome::Passed,
        Verdict::Failed => Outcome::Failed(Problem::new(verdict, message, text)),
        Verdict::Unverified => Outcome::Error(Problem::new(verdict, message, text)),
    };
    let mut case = Case::new(CLASSNAME, "verdict", outcome);
    case.time = millis(report.timings.total_ms);
    case.output.push(format!("verdict: {verdict}"));
    if judgement.verdict == Verdict::VerifiedWithWarnings {
        case.output.extend(judgement.reasons.iter().cloned());
    }
    case.attachments
        .extend(report.screenshot.iter().map(|s| s.file.path.clone()));
    if let Some(diff) = report.diff.as_ref().and_then(|d| d.diff.as_ref()) {
        case.attachments.push(diff.path.clone());
    }
    case
}

/// Writes the JUnit file of a verification of `target` to `path`
/// (atomically): the report's suite, or one `<error>` saying why there is no
/// report.
pub fn write<E: std::fmt::Display>(
    path: &Path,
    target: &str,
    outcome: Result<&Report, &E>,
) -> Result<(), WriteError> {
    match outcome {
        Ok(report) => suite(target, report),
        Err(error) => Suite::could_not_run(suite_name(target), CLASSNAME, &error.to_string()),
    }
    .write(path)
}

fn millis(ms: impl TryInto<u64>) -> Duration {
    Duration::from_millis(ms.try_into().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::evidence::{EvidenceFile, EvidenceStore};
    use crate::verify::report::{AssertionOutcome, Screenshot, StepOutcome};
    use crate::verify::{Assertion, Judgement, VerifyContext};

    fn report(verdict: Verdict, reasons: &[&str]) -> Report {
        let context = VerifyContext {
            evidence: EvidenceStore::new("/e"),
            workspace: "/w".into(),
            source_dir: None,
            runtime: None,
            progress: crate::progress::Progress::default(),
        };
        let mut report = Report::blank("s", crate::preview::Viewport::default(), "http://x/", &context);
        report.judgement = Judgement {
            verdict,
            reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
            next_action: "fix it".into(),
        };
        let file = |path: &str| EvidenceFile {
            path: path.into(),
            sha256: String::new(),
            bytes: 1,
        };
        report.screenshot = Some(Screenshot {
            file: file("/e/shot.png"),
            width: 1,
            height: 1,
            clipped: false,
        });
        report.steps.push(StepOutcome {
            index: 1,
            step: "click button \"Go\"".into(),
            ok: false,
            error: Some("no such element\u{1b}[0m".into()),
            ms: 12,
            screenshot: Some(file("/e/step-1.png")),
        });
        report.assertions.push(AssertionOutcome {
            assertion: Assertion::TextPresent { text: "<b>".into() },
            passed: true,
            detail: "found".into(),
            ms: 3,
        });
        report
    }

    #[test]
    fn a_failed_verdict_is_a_failure_with_its_reasons_and_the_screenshot() {
        let suite = suite(
            ".",
            &report(Verdict::Failed, &["step 1 failed: no such element", "second"]),
        );
        assert!(!suite.passes());
        let verdict = &suite.cases[0];
        let Outcome::Failed(problem) = &verdict.outcome else {
            panic!("{verdict:?}")
        };
        assert_eq!(problem.message, "step 1 failed: no such element");
        assert_eq!(
            problem.text,
            "step 1 failed: no such element\nsecond\nnext: fix it"
        );
        assert_eq!(verdict.attachments, vec![std::path::PathBuf::from("/e/shot.png")]);
        let xml = suite.to_xml();
        assert!(xml.contains("[[ATTACHMENT|/e/shot.png]]"), "{xml}");
        assert!(xml.contains("[[ATTACHMENT|/e/step-1.png]]"), "{xml}");
        assert!(
            xml.contains("name=\"step 1: click button &quot;Go&quot;\""),
            "{xml}"
        );
        assert!(
            xml.contains("no such element\u{FFFD}[0m"),
            "the escape character is replaced: {xml}"
        );
        assert!(
            xml.contains("name=\"text &quot;&lt;b&gt;&quot; is present\""),
            "{xml}"
        );
        assert!(
            xml.contains("<property name=\"verdict\" value=\"FAILED\"/>"),
            "{xml}"
        );
    }

    #[test]
    fn unverified_is_an_error_and_verified_passes() {
        let unverified = suite(".", &report(Verdict::Unverified, &["no browser"]));
        assert!(matches!(&unverified.cases[0].outcome, Outcome::Error(p) if p.kind == "UNVERIFIED"));
        assert!(!unverified.passes());
        let mut verified = report(Verdict::VerifiedWithWarnings, &["1 console warning"]);
        verified.steps.clear();
        let verified = suite(".", &verified);
        assert!(verified.passes(), "{verified:?}");
        assert!(verified.cases[0].output.contains(&"1 console warning".to_owned()));
    }

    #[test]
    fn no_report_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        let error = "no app detected in ./web";
        write::<&str>(&path, "./web", Err(&error)).unwrap();
        let xml = std::fs::read_to_string(&path).unwrap();
        assert!(
            xml.contains("<error type=\"could-not-run\" message=\"no app detected in ./web\">"),
            "{xml}"
        );
        assert!(xml.contains("testsuite name=\"dshkit verify ./web\""), "{xml}");
    }
}
