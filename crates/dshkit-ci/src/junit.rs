//! JUnit XML as Jenkins and GitLab read it, in the shape of the Jenkins JUnit
//! XSD: `<testsuites>` holding one `<testsuite>` (its `<properties>`, its
//! `<testcase>`s, then `<system-out>`), each testcase with at most one
//! `<skipped>`, `<error>` or `<failure>` and its `<system-out>`.
//!
//! - A failure (`<failure>`) is a check that ran and found a problem; an error
//!   (`<error>`) is one that could not judge (dshkit's UNVERIFIED, a run that
//!   never got a report). CI systems count both against the suite.
//! - A file a testcase keeps (a screenshot) is named in its `<system-out>` as
//!   `[[ATTACHMENT|path]]`, the line the Jenkins JUnit Attachments plugin and
//!   GitLab's test reports read, and in the suite's `<properties>` as a
//!   `property` named `attachment` (the XSD allows properties on suites only).
//! - The output is bounded: at most [`MAX_CASES`] testcases (those that did not
//!   pass are kept first) and [`MAX_TEXT_CHARS`] characters in any one text;
//!   what was left out is said in the file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::xml;

/// Most testcases one file holds; the suite's `<system-out>` and a `truncated`
/// property say how many more there were.
pub const MAX_CASES: usize = 10_000;
/// Most characters of one message, text or property; a longer one is cut and
/// says so.
pub const MAX_TEXT_CHARS: usize = 16 * 1024;

/// One test suite: a whole `verify` or `echo verify` run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Suite {
    pub name: String,
    pub time: Duration,
    pub properties: Vec<Property>,
    pub cases: Vec<Case>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub name: String,
    pub value: String,
}

impl Property {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// One testcase: a step, an assertion, a check or the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub classname: String,
    pub name: String,
    pub time: Duration,
    pub outcome: Outcome,
    /// Lines for the testcase's `<system-out>`.
    pub output: Vec<String>,
    /// Files CI shows beside the testcase (`[[ATTACHMENT|path]]`).
    pub attachments: Vec<PathBuf>,
}

impl Case {
    pub fn new(classname: impl Into<String>, name: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            classname: classname.into(),
            name: name.into(),
            time: Duration::ZERO,
            outcome,
            output: Vec::new(),
            attachments: Vec::new(),
        }
    }

    fn passed(&self) -> bool {
        matches!(self.outcome, Outcome::Passed | Outcome::Skipped(_))
    }
}

/// How a testcase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// It ran and found a problem (`<failure>`).
    Failed(Problem),
    /// It could not judge (`<error>`).
    Error(Problem),
    /// It did not run, and says why (`<skipped>`).
    Skipped(String),
}

/// A failure or an error: its `type`, its one-line `message` and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: String,
    pub message: String,
    pub text: String,
}

impl Problem {
    pub fn new(kind: impl Into<String>, message: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            text: text.into(),
        }
    }
}

/// A JUnit file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the JUnit report {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl WriteError {
    /// The stable code of the error.
    pub fn code(&self) -> &'static str {
        "JUNIT_WRITE_FAILED"
    }

    /// Writing failed on this machine: a runtime failure.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Runtime
    }
}

dshkit_os::classified!(WriteError);

impl Suite {
    /// A suite of one testcase that errs: the run that should have filled it
    /// could not (the app never started, the cassette is damaged, ...).
    pub fn could_not_run(name: impl Into<String>, classname: &str, message: &str) -> Self {
        let problem = Problem::new("could-not-run", first_line(message), message);
        Self {
            name: name.into(),
            cases: vec![Case::new(classname, "run", Outcome::Error(problem))],
            ..Self::default()
        }
    }

    /// Whether CI reads this suite as passing: no failure and no error.
    pub fn passes(&self) -> bool {
        self.cases.iter().all(Case::passed)
    }

    /// The suite as JUnit XML.
    pub fn to_xml(&self) -> String {
        let (cases, left_out) = bounded_cases(&self.cases);
        let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
        let failures = count(|o| matches!(o, Outcome::Failed(_)));
        let errors = count(|o| matches!(o, Outcome::Error(_)));
        let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
        let tests = cases.len();
        let time = seconds(self.time);
        let name = attr(&self.name);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time}\">"
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">"
        );
        let mut properties = self.properties.clone();
        properties.extend(
            cases
                .iter()
                .flat_map(|c| &c.attachments)
                .map(|path| Property::new("attachment", path.display().to_string())),
        );
        let left_out_note = (left_out > 0)
            .then(|| format!("{left_out} more testcase(s) left out: a file holds at most {MAX_CASES}"));
        if let Some(note) = &left_out_note {
            properties.push(Property::new("truncated", note.clone()));
        }
        if !properties.is_empty() {
            out.push_str("    <properties>\n");
            for property in &properties {
                let _ = writeln!(
                    out,
                    "      <property name=\"{}\" value=\"{}\"/>",
                    attr(&property.name),
                    attr(&property.value)
                );
            }
            out.push_str("    </properties>\n");
        }
        for case in &cases {
            case_xml(&mut out, case);
        }
        if let Some(note) = &left_out_note {
            let _ = writeln!(out, "    <system-out>{}</system-out>", text(note));
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }

    /// Writes the suite to `path` atomically (the old file or the new one,
    /// never a part).
    pub fn write(&self, path: &Path) -> Result<(), WriteError> {
        dshkit_os::fs::write_atomic(path, self.to_xml().as_bytes()).map_err(|source| WriteError {
            path: path.to_owned(),
            source,
        })
    }
}

fn case_xml(out: &mut String, case: &Case) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
        attr(&case.classname),
        attr(&case.name),
        seconds(case.time)
    );
    let mut output: Vec<String> = case
        .attachments
        .iter()
        .map(|path| format!("[[ATTACHMENT|{}]]", path.display()))
        .collect();
    output.extend(case.output.iter().cloned());
    if matches!(case.outcome, Outcome::Passed) && output.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    match &case.outcome {
        Outcome::Passed => {}
        Outcome::Skipped(why) => {
            let _ = writeln!(out, "      <skipped>{}</skipped>", text(why));
        }
        Outcome::Failed(problem) => problem_xml(out, "failure", problem),
        Outcome::Error(problem) => problem_xml(out, "error", problem),
    }
    if !output.is_empty() {
        let _ = writeln!(out, "      <system-out>{}</system-out>", text(&output.join("\n")));
    }
    out.push_str("    </testcase>\n");
}

fn problem_xml(out: &mut String, element: &str, problem: &Problem) {
    let _ = writeln!(
        out,
        "      <{element} type=\"{}\" message=\"{}\">{}</{element}>",
        attr(&problem.kind),
        attr(&problem.message),
        text(&problem.text)
    );
}

/// At most [`MAX_CASES`] of `cases`, in their order, those that did not pass
/// kept first; and how many were left out.
fn bounded_cases(cases: &[Case]) -> (Vec<&Case>, usize) {
    if cases.len() <= MAX_CASES {
        return (cases.iter().collect(), 0);
    }
    let not_passing = cases.iter().filter(|c| !c.passed()).count();
    let mut passing_room = MAX_CASES.saturating_sub(not_passing);
    let mut not_passing_room = MAX_CASES;
    let kept: Vec<&Case> = cases
        .iter()
        .filter(|case| {
            let room = if case.passed() {
                &mut passing_room
            } else {
                &mut not_passing_room
            };
            let keep = *room > 0;
            *room = room.saturating_sub(1);
            keep
        })
        .collect();
    let left_out = cases.len() - kept.len();
    (kept, left_out)
}

/// `value` cut to [`MAX_TEXT_CHARS`] characters (saying so), as an attribute.
fn attr(value: &str) -> String {
    xml::attribute(&bounded(value))
}

/// `value` cut to [`MAX_TEXT_CHARS`] characters (saying so), as element text.
fn text(value: &str) -> String {
    xml::text(&bounded(value))
}

fn bounded(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(MAX_TEXT_CHARS) {
        None => value.into(),
        Some((cut, _)) => {
            let more = value[cut..].chars().count();
            format!("{}… ({more} more character(s) cut)", &value[..cut]).into()
        }
    }
}

/// The first line of `message`, for a `message` attribute.
pub fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or_default()
}

/// Seconds with millisecond precision, as JUnit's `time` attributes hold them.
fn seconds(time: Duration) -> String {
    format!("{}.{:03}", time.as_secs(), time.subsec_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(name: &str) -> Case {
        Case::new("c", name, Outcome::Failed(Problem::new("t", "m", "x")))
    }

    #[test]
    fn a_suite_counts_and_renders_each_outcome() {
        let mut passed = Case::new("dshkit.verify", "step 1: click", Outcome::Passed);
        passed.time = Duration::from_millis(1234);
        let mut shot = Case::new(
            "dshkit.verify",
            "verdict",
            Outcome::Error(Problem::new(
                "UNVERIFIED",
                "no browser",
                "no browser\nnext: retry",
            )),
        );
        shot.attachments.push(PathBuf::from("/tmp/shot <1>.png"));
        let suite = Suite {
            name: "verify \"x\"".into(),
            time: Duration::from_millis(5),
            properties: vec![Property::new("verdict", "UNVERIFIED")],
            cases: vec![
                passed,
                shot,
                failed("assertion"),
                Case::new("c", "s", Outcome::Skipped("not asked".into())),
            ],
        };
        assert!(!suite.passes());
        let xml = suite.to_xml();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"verify &quot;x&quot;\" tests=\"4\" failures=\"1\" errors=\"1\" time=\"0.005\">"), "{xml}");
        assert!(xml.contains("skipped=\"1\""), "{xml}");
        assert!(
            xml.contains("<testcase classname=\"dshkit.verify\" name=\"step 1: click\" time=\"1.234\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("<error type=\"UNVERIFIED\" message=\"no browser\">no browser\nnext: retry</error>"),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>[[ATTACHMENT|/tmp/shot &lt;1&gt;.png]]</system-out>"),
            "{xml}"
        );
        assert!(
            xml.contains("<property name=\"attachment\" value=\"/tmp/shot &lt;1&gt;.png\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("<property name=\"verdict\" value=\"UNVERIFIED\"/>"),
            "{xml}"
        );
        assert!(xml.contains("<skipped>not asked</skipped>"), "{xml}");
    }

    #[test]
    fn a_suite_without_failures_passes_and_has_no_properties_element() {
        let suite = Suite {
            name: "s".into(),
            cases: vec![Case::new("c", "a", Outcome::Passed)],
            ..Suite::default()
        };
        assert!(suite.passes());
        assert!(
            !suite.to_xml().contains("<properties>"),
            "the XSD wants at least one property inside"
        );
    }

    #[test]
    fn could_not_run_is_an_error_not_a_pass() {
        let suite = Suite::could_not_run("verify", "dshkit.verify", "the app never started\nits log: x");
        assert!(!suite.passes());
        let xml = suite.to_xml();
        assert!(xml.contains("errors=\"1\""), "{xml}");
        assert!(xml.contains("message=\"the app never started\""), "{xml}");
    }

    #[test]
    fn too_many_cases_keep_the_failures_and_say_how_many_were_left_out() {
        let mut cases: Vec<Case> = (0..MAX_CASES + 5)
            .map(|i| Case::new("c", format!("ok {i}"), Outcome::Passed))
            .collect();
        cases.push(failed("late failure"));
        let suite = Suite {
            name: "big".into(),
            cases,
            ..Suite::default()
        };
        let xml = suite.to_xml();
        assert!(xml.contains("late failure"), "a failure is never the one cut");
        assert!(xml.contains(&format!("tests=\"{MAX_CASES}\"")));
        assert!(xml.contains("6 more testcase(s) left out"), "said in the file");
        assert_eq!(xml.matches("<testcase ").count(), MAX_CASES);
    }

    #[test]
    fn long_texts_are_cut_and_say_so() {
        let long = "é".repeat(MAX_TEXT_CHARS + 10);
        let cut = bounded(&long);
        assert!(
            cut.ends_with("… (10 more character(s) cut)"),
            "{}",
            &cut[cut.len() - 40..]
        );
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn the_write_is_atomic_and_replaces_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        std::fs::write(&path, "old").unwrap();
        Suite::could_not_run("s", "c", "m").write(&path).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().starts_with("<?xml"));
        let missing = dir.path().join("no/such/dir/junit.xml");
        let error = Suite::default().write(&missing).unwrap_err();
        assert!(
            error.to_string().starts_with("cannot write the JUnit report"),
            "{error}"
        );
    }
}
