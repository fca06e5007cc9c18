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
    /// HTTP 5xx answers for the page or a source module it loads (a script, a
    /// module, a stylesheet): the dev server could not build or serve the app's
    /// code, so everything else may follow from it. Ranked first.
    pub server_errors: Vec<String>,
    /// A framework's error overlay on the page (Vite's), its message with file and
    /// line: the dev server's own account of a build error. Ranked with the
    /// server errors, after them.
    pub error_overlay: Option<String>,
    /// Uncaught exceptions and unhandled rejections: usually why the remaining
    /// failures happened. Ranked after the build errors.
    pub uncaught: Vec<String>,
    /// The other application failures, in the order observed: failed steps and
    /// assertions, console errors, failed requests, a failed diff. Each a short
    /// sentence naming where.
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

impl Observed {
    /// The build errors (server errors, then the overlay's message), in rank order.
    fn build_errors(&self) -> impl Iterator<Item = &String> {
        self.server_errors.iter().chain(&self.error_overlay)
    }

    /// Every application failure, the likeliest cause first: build errors, then
    /// uncaught exceptions, then the rest in the order observed; the same
    /// failure seen again is said once, with its count.
    fn ranked_failures(&self) -> Vec<String> {
        counted(self.build_errors().chain(&self.uncaught).chain(&self.failures))
    }
}

/// `lines` in their order, each said once: a line seen `n > 1` times gets ` (×n)`.
fn counted<'a>(lines: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut seen: Vec<(&String, usize)> = Vec::new();
    for line in lines {
        match seen.iter_mut().find(|(said, _)| *said == line) {
            Some((_, count)) => *count += 1,
            None => seen.push((line, 1)),
        }
    }
    seen.into_iter()
        .map(|(line, count)| match count {
            1 => line.clone(),
            n => format!("{line} (×{n})"),
        })
        .collect()
}

/// Most build errors the next action quotes.
const MAX_BUILD_ERRORS_QUOTED: usize = 2;

/// Judges. A failure needs no screenshot to be proven, a success does:
/// - nothing observed (no browser, a broken observation window): `UNVERIFIED`;
/// - an observed application failure: `FAILED`, even when the success evidence is
///   missing (a page that throws while loading renders nothing); its reasons are
///   the failures, the likeliest cause first (an HTTP 5xx for the page or one of
///   its source modules, a framework's error overlay, an uncaught exception),
///   then the missing evidence, then the warnings;
/// - missing success evidence (no or an unchanged screenshot, an incomplete
///   diff): `UNVERIFIED`;
/// - missing criteria or warnings: `VERIFIED_WITH_WARNINGS`.
///
/// The next action fits the case: the build error when there is one, else the
/// first failure; "add assertions" only when none were given.
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
    let failures = observed.ranked_failures();
    if let Some(first) = failures.first() {
        let build: Vec<String> = counted(observed.build_errors())
            .into_iter()
            .take(MAX_BUILD_ERRORS_QUOTED)
            .collect();
        let next_action = if build.is_empty() {
            format!("Fix the first failure ({first}), then verify again.")
        } else {
            format!(
                "Fix the build error first ({}): the page could not load its code, so the other reasons may follow from it. Then verify again.",
                build.join("; ")
            )
        };
        let mut reasons = failures.clone();
        reasons.extend(missing);
        reasons.extend(observed.warnings.iter().cloned());
        return Judgement {
            verdict: Verdict::Failed,
            next_action,
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
    let next_action = match (observed.has_criteria, observed.warnings.first()) {
        (true, None) => {
            return Judgement {
                verdict: Verdict::Verified,
                reasons: vec!["every criterion held and the evidence is complete".into()],
                next_action: "Done: cite this report as evidence.".into(),
            };
        }
        (false, None) => "Add assertions for what the task changed (text, element, URL), then verify again.".to_owned(),
        (false, Some(_)) => {
            "Add assertions for what the task changed (text, element, URL), and look at the warnings, then verify again."
                .to_owned()
        }
        (true, Some(first)) => format!(
            "Every criterion held; look at the warnings (first: {first}): fix what they point at or judge them harmless, then verify again."
        ),
    };
    Judgement {
        verdict: Verdict::VerifiedWithWarnings,
        reasons,
        next_action,
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
    fn warnings_stay_in_the_reasons_of_a_failed_verdict_after_the_failures() {
        let judgement = judge(&Observed {
            failures: vec!["text \"Saved\" is absent".into()],
            warnings: vec!["snapshot: closed shadow root of <secret-box>".into()],
            ..clean()
        });
        assert_eq!(judgement.verdict, Verdict::Failed);
        assert_eq!(
            judgement.reasons,
            vec![
                "text \"Saved\" is absent".to_owned(),
                "snapshot: closed shadow root of <secret-box>".to_owned()
            ]
        );
    }

    #[test]
    fn the_next_action_asks_for_assertions_only_when_none_were_given() {
        let warning = vec!["1 console warning(s)".to_owned()];
        let with_criteria = judge(&Observed {
            warnings: warning.clone(),
            ..clean()
        });
        assert_eq!(with_criteria.verdict, Verdict::VerifiedWithWarnings);
        assert!(
            !with_criteria.next_action.contains("Add assertions"),
            "{with_criteria:?}"
        );
        assert!(
            with_criteria.next_action.contains("1 console warning(s)"),
            "the next action names the warning: {with_criteria:?}"
        );
        for warnings in [Vec::new(), warning] {
            let bare = judge(&Observed {
                has_criteria: false,
                warnings,
                ..clean()
            });
            assert_eq!(bare.verdict, Verdict::VerifiedWithWarnings);
            assert!(bare.next_action.starts_with("Add assertions"), "{bare:?}");
        }
    }

    #[test]
    fn a_server_error_for_a_source_module_ranks_first_with_the_overlay_and_the_next_step_points_at_it() {
        let server_error = "request GET http://127.0.0.1:5173/src/App.tsx failed: HTTP 500 (a source module: the dev server could not build or serve it)";
        let overlay =
            "Vite's error overlay shows: [plugin:vite:oxc] Unexpected token (at /app/src/App.tsx:5:10)";
        let judgement = judge(&Observed {
            // As the engine collects them: assertions and console errors first.
            failures: vec![
                "assertion failed: text \"count is 0\" is present (not in the page text)".into(),
                "browser error: Failed to fetch dynamically imported module".into(),
            ],
            uncaught: vec!["uncaught exception: TypeError: x is undefined at /src/main.tsx:3:1".into()],
            server_errors: vec![server_error.into()],
            error_overlay: Some(overlay.into()),
            warnings: vec!["1 console warning(s)".into()],
            ..clean()
        });
        assert_eq!(judgement.verdict, Verdict::Failed);
        assert_eq!(judgement.reasons[0], server_error);
        assert_eq!(judgement.reasons[1], overlay);
        assert!(
            judgement.reasons[2].starts_with("uncaught exception"),
            "{judgement:?}"
        );
        assert!(
            judgement.reasons[3].starts_with("assertion failed"),
            "{judgement:?}"
        );
        assert_eq!(judgement.reasons.last().unwrap(), "1 console warning(s)");
        for part in [
            "build error",
            "/src/App.tsx failed: HTTP 500",
            "Unexpected token (at /app/src/App.tsx:5:10)",
        ] {
            assert!(
                judgement.next_action.contains(part),
                "{part:?} in {}",
                judgement.next_action
            );
        }
        assert!(
            !judgement.next_action.contains("count is 0"),
            "{}",
            judgement.next_action
        );
    }

    #[test]
    fn an_error_overlay_alone_fails_and_uncaught_exceptions_come_before_other_failures() {
        let overlay = judge(&Observed {
            error_overlay: Some("Vite's error overlay shows: Failed to resolve import".into()),
            ..clean()
        });
        assert_eq!(overlay.verdict, Verdict::Failed);
        assert!(
            overlay.next_action.contains("Failed to resolve import"),
            "{overlay:?}"
        );
        let thrown = judge(&Observed {
            failures: vec!["step 1 (click button \"Go\") failed".into()],
            uncaught: vec!["uncaught exception: ReferenceError at /app.js:2:5".into()],
            ..clean()
        });
        assert!(thrown.reasons[0].contains("/app.js:2:5"), "{thrown:?}");
        assert!(
            thrown.next_action.starts_with("Fix the first failure (uncaught"),
            "{thrown:?}"
        );
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

    #[test]
    fn the_same_failure_seen_again_is_said_once_with_its_count() {
        let twice = "request GET http://127.0.0.1:1/src/App.jsx failed: HTTP 500".to_owned();
        let judgement = judge(&Observed {
            server_errors: vec![twice.clone(), twice.clone()],
            failures: vec!["assertion failed: text \"x\" is present".into()],
            ..clean()
        });
        assert_eq!(judgement.reasons[0], format!("{twice} (×2)"));
        assert_eq!(judgement.reasons.len(), 2, "{judgement:?}");
        assert_eq!(
            judgement.next_action.matches("App.jsx").count(),
            1,
            "{judgement:?}"
        );
    }
}
