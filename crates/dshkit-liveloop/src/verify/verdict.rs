//! The strict verdict: evidence failures are judged before success, so a
//! verification without proof can never pass.

use serde::Serialize;

/// The four verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    Verified,
    VerifiedWithWarnings,
    Failed,
    Unverified,
}

impl Verdict {
    /// The verdict as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "VERIFIED",
            Self::VerifiedWithWarnings => "VERIFIED_WITH_WARNINGS",
            Self::Failed => "FAILED",
            Self::Unverified => "UNVERIFIED",
        }
    }
}

/// What a verification observed, as the engine hands it over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one independent piece of evidence"
)]
pub struct Observed {
    /// A browser session existed for the whole run.
    pub browser: bool,
    /// A screenshot was captured and persisted.
    pub screenshot: bool,
    /// The screenshot is byte-identical to the one taken before the navigation:
    /// no proof that anything was rendered anew.
    pub screenshot_unchanged: bool,
    /// A reference diff was requested; and whether it completed.
    pub diff_requested: bool,
    pub diff_complete: bool,
    /// The observation window was reset before the navigation and not disturbed.
    pub window_clear: bool,
    /// Application failures: failed assertions, console errors, failed requests,
    /// a failed diff. Each a short sentence naming where.
    pub failures: Vec<String>,
    /// The task gave explicit criteria (assertions or a reference).
    pub has_criteria: bool,
    /// Warnings: console warnings, slow settles, ...
    pub warnings: Vec<String>,
}

/// The verdict and the next action it implies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Judgement {
    pub verdict: Verdict,
    /// Why, in order of importance.
    pub reasons: Vec<String>,
    /// What to do next.
    pub next_action: String,
}

/// Judges. A failure needs no screenshot to be proven, a success does:
/// - nothing observed (no browser, a broken observation window): `UNVERIFIED`;
/// - an observed application failure: `FAILED`, even when the success evidence is
///   missing (a page that throws while loading renders nothing);
/// - missing success evidence (no or an unchanged screenshot, an incomplete
///   diff): `UNVERIFIED`;
/// - missing criteria or warnings: `VERIFIED_WITH_WARNINGS`.
pub fn judge(observed: &Observed) -> Judgement {
    let mut unobserved = Vec::new();
    if !observed.browser {
        unobserved.push("no browser session: nothing was looked at".to_owned());
    }
    if !observed.window_clear {
        unobserved
            .push("the observation window was not clean: errors cannot be attributed to this run".to_owned());
    }
    if !unobserved.is_empty() {
        return Judgement {
            verdict: Verdict::Unverified,
            reasons: unobserved,
            next_action: "Fix the verification itself (run dshkit_doctor for the browser), then verify again; do not report the task as done.".into(),
        };
    }
    let mut missing = Vec::new();
    if !observed.screenshot {
        missing.push("no screenshot was captured".to_owned());
    } else if observed.screenshot_unchanged {
        missing.push(
            "the screenshot is byte-identical to the one before the navigation, so it proves nothing"
                .to_owned(),
        );
    }
    if observed.diff_requested && !observed.diff_complete {
        missing.push("the requested reference diff (or update) did not complete".to_owned());
    }
    if !observed.failures.is_empty() {
        let mut reasons = observed.failures.clone();
        reasons.extend(missing);
        return Judgement {
            verdict: Verdict::Failed,
            next_action: format!(
                "Fix the first failure ({}), then verify again.",
                observed.failures[0]
            ),
            reasons,
        };
    }
    if !missing.is_empty() {
        return Judgement {
            verdict: Verdict::Unverified,
            reasons: missing,
            next_action: "Nothing proves the page rendered: check that the app draws something and that the screenshot works (dshkit_doctor), then verify again; do not report the task as done.".into(),
        };
    }
    let mut reasons = Vec::new();
    if !observed.has_criteria {
        reasons.push(
            "no explicit criteria: the page loaded cleanly, but nothing task-specific was checked".to_owned(),
        );
    }
    reasons.extend(observed.warnings.iter().cloned());
    if reasons.is_empty() {
        Judgement {
            verdict: Verdict::Verified,
            reasons: vec!["every criterion held and the evidence is complete".into()],
            next_action: "Done: cite this report as evidence.".into(),
        }
    } else {
        Judgement {
            verdict: Verdict::VerifiedWithWarnings,
            reasons,
            next_action:
                "Add assertions for what the task changed, or look at the warnings, then verify again.".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> Observed {
        Observed {
            browser: true,
            screenshot: true,
            window_clear: true,
            has_criteria: true,
            ..Observed::default()
        }
    }

    #[test]
    fn clean_evidence_with_criteria_is_verified() {
        assert_eq!(judge(&clean()).verdict, Verdict::Verified);
    }

    #[test]
    fn nothing_observed_wins_over_everything_else() {
        for broken in [
            Observed {
                browser: false,
                ..clean()
            },
            Observed {
                window_clear: false,
                ..clean()
            },
        ] {
            // Even with a failure recorded: nothing can be attributed to this run.
            let observed = Observed {
                failures: vec!["console error".into()],
                ..broken
            };
            assert_eq!(judge(&observed).verdict, Verdict::Unverified, "{observed:?}");
        }
    }

    #[test]
    fn a_failure_needs_no_screenshot_but_a_success_does() {
        for broken in [
            Observed {
                screenshot: false,
                ..clean()
            },
            Observed {
                screenshot_unchanged: true,
                ..clean()
            },
            Observed {
                diff_requested: true,
                diff_complete: false,
                ..clean()
            },
        ] {
            assert_eq!(judge(&broken).verdict, Verdict::Unverified, "{broken:?}");
            let failed = judge(&Observed {
                failures: vec!["uncaught TypeError at /app.js:2:5".into()],
                ..broken.clone()
            });
            assert_eq!(failed.verdict, Verdict::Failed, "{broken:?}");
            assert!(failed.reasons[0].contains("/app.js:2:5"), "{failed:?}");
            assert!(failed.next_action.contains("/app.js:2:5"), "{failed:?}");
            assert!(
                failed.reasons.len() > 1,
                "the missing evidence is still said: {failed:?}"
            );
        }
    }

    #[test]
    fn an_application_failure_fails_and_names_the_next_step() {
        let judgement = judge(&Observed {
            failures: vec!["text \"Saved\" is absent".into()],
            ..clean()
        });
        assert_eq!(judgement.verdict, Verdict::Failed);
        assert!(judgement.next_action.contains("Saved"));
    }

    #[test]
    fn no_criteria_or_warnings_are_only_verified_with_warnings() {
        assert_eq!(
            judge(&Observed {
                has_criteria: false,
                ..clean()
            })
            .verdict,
            Verdict::VerifiedWithWarnings
        );
        let warned = Observed {
            warnings: vec!["console warning".into()],
            ..clean()
        };
        assert_eq!(judge(&warned).verdict, Verdict::VerifiedWithWarnings);
    }
}
