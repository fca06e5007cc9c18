//! What a host that wraps the server (the DSH plugin) takes over from the model,
//! declared beside each tool: asking the user before a side effect, attaching
//! images, naming whose previews a call uses. Also the texts such a host shows
//! its model: guidance and skills. The host interprets this data and holds no
//! table of its own, so a change here reaches it with no edit on its side.

use serde::Serialize;
use serde_json::Value;

/// The host seams of one tool. Each names the argument the host owns: the host
/// takes it out of the schema it offers its model and sets it itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostSeams {
    /// Calls that need the user's approval, asked by the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// Calls whose images the host asks for and attaches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
    /// The argument naming whose previews a call uses: the host sets it (its
    /// conversation), never the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

impl HostSeams {
    /// A tool the host forwards as it is.
    pub const NONE: Self = Self {
        approval: None,
        images: None,
        owner: None,
    };
}

/// A side effect the user approves. `action`, `reason` and `otherwise` are
/// fragments the host joins into its question and its refusals: "dshkit wants
/// to {action} (the `shows` arguments given): {reason}", "did not {action}: (the
/// outcome). {otherwise}".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The boolean argument that says the user agreed (`confirm`).
    pub argument: &'static str,
    /// Which calls need it; every call when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// What the user is asked to allow; `{name}` stands for the call's argument
    /// `name`.
    pub action: &'static str,
    /// The call's arguments the question names after the action, those given
    /// (so the user sees what exactly is approved).
    pub shows: &'static [&'static str],
    /// What it does, in the user's terms.
    pub reason: &'static str,
    /// What the model does when it is not approved.
    pub otherwise: &'static str,
    /// The value of `when`'s argument that asks the tool what the call would do,
    /// without doing it: a host calls the tool so first, with the call's other
    /// arguments, and names the answer's `plan` (its structured content's text)
    /// in its question. A plan that fails fails the call, and nobody is asked
    /// to approve what cannot run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<&'static str>,
    /// The description as the host shows it: each pair is words of the tool's
    /// description that tell the model to ask the user and pass the argument
    /// (exactly as they appear there, once), and what the host says instead.
    #[serde(skip)]
    pub host_words: &'static [(&'static str, &'static str)],
}

/// The images of a call: the host sets `argument` to true when `when` holds
/// (every call when `None`) and attaches what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Images {
    pub argument: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// The argument a host sets to the owner of the call's previews.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub argument: &'static str,
}

/// A rule on one argument: it holds when the argument's value is one of `any_of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct When {
    pub argument: &'static str,
    #[serde(rename = "in")]
    pub any_of: &'static [&'static str],
}

/// A skill for a host's skill catalog: when to use it (`description`) and what
/// it says (`text`, Markdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SkillSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub text: &'static str,
}

impl SkillSpec {
    /// A skill file as hosts that read skills take it: front matter with `name`
    /// and `description` between `---` lines, then the text. `None` when the
    /// file is not one.
    pub fn from_file(file: &'static str) -> Option<Self> {
        let (front, text) = file.strip_prefix("---\n")?.split_once("\n---\n")?;
        let field = |key: &str| {
            front
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
                .map(str::trim)
                .filter(|value| !value.is_empty())
        };
        Some(Self {
            name: field("name")?,
            description: field("description")?,
            text: text.trim_start(),
        })
    }
}

/// Guidance a host puts in its model's instructions (a system-prompt section).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GuidanceSpec {
    pub name: &'static str,
    pub text: &'static str,
}

/// A host seam that does not fit its tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostSeamError {
    #[error("the host seam names `{0}`, which is not an argument of the tool")]
    UnknownArgument(&'static str),
    #[error("the host seam's rule expects `{argument}` to be {value:?}, which its schema does not allow")]
    UnknownValue {
        argument: &'static str,
        value: &'static str,
    },
    #[error("the approval's action names `{{{0}}}`, which is not an argument of the tool")]
    UnknownPlaceholder(String),
    #[error("the approval's plan needs a `when` rule whose argument allows the plan's value")]
    PlanWithoutRule,
    #[error(
        "the description does not say {0:?} exactly once, so the host cannot say its own words in its place"
    )]
    WordsNotFound(&'static str),
}

impl HostSeamError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownArgument(_) => "HOST_SEAM_UNKNOWN_ARGUMENT",
            Self::UnknownValue { .. } => "HOST_SEAM_UNKNOWN_VALUE",
            Self::UnknownPlaceholder(_) => "HOST_SEAM_UNKNOWN_PLACEHOLDER",
            Self::PlanWithoutRule => "HOST_SEAM_PLAN_WITHOUT_RULE",
            Self::WordsNotFound(_) => "HOST_SEAM_WORDS_NOT_FOUND",
        }
    }

    /// A host seam that does not fit its tool is refused.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Refused
    }
}

dshkit_os::classified!(HostSeamError);

impl HostSeams {
    /// Whether every argument, value and sentence the seams name is in the tool.
    pub(crate) fn check(&self, description: &str, input_schema: &Value) -> Result<(), HostSeamError> {
        let property = |name: &'static str| {
            input_schema["properties"]
                .get(name)
                .ok_or(HostSeamError::UnknownArgument(name))
        };
        let check_when = |when: Option<When>| -> Result<(), HostSeamError> {
            let Some(when) = when else { return Ok(()) };
            let allowed = property(when.argument)?["enum"].as_array();
            for value in when.any_of {
                if allowed.is_some_and(|allowed| !allowed.iter().any(|a| a == value)) {
                    return Err(HostSeamError::UnknownValue {
                        argument: when.argument,
                        value,
                    });
                }
            }
            Ok(())
        };
        if let Some(approval) = &self.approval {
            property(approval.argument)?;
            check_when(approval.when)?;
            for shown in approval.shows {
                property(shown)?;
            }
            if let Some(plan) = approval.plan {
                let when = approval.when.ok_or(HostSeamError::PlanWithoutRule)?;
                let allowed = property(when.argument)?["enum"].as_array();
                if allowed.is_some_and(|allowed| !allowed.iter().any(|a| a == plan)) {
                    return Err(HostSeamError::UnknownValue {
                        argument: when.argument,
                        value: plan,
                    });
                }
                if when.any_of.contains(&plan) {
                    return Err(HostSeamError::PlanWithoutRule);
                }
            }
            for placeholder in placeholders(approval.action) {
                if input_schema["properties"].get(placeholder).is_none() {
                    return Err(HostSeamError::UnknownPlaceholder(placeholder.to_owned()));
                }
            }
            for (model_words, _) in approval.host_words {
                if description.matches(model_words).count() != 1 {
                    return Err(HostSeamError::WordsNotFound(model_words));
                }
            }
        }
        if let Some(images) = &self.images {
            property(images.argument)?;
            check_when(images.when)?;
        }
        if let Some(owner) = &self.owner {
            property(owner.argument)?;
        }
        Ok(())
    }

    /// The tool's description as a host that owns these seams shows it.
    pub(crate) fn host_description(&self, description: &str) -> String {
        let words = self.approval.map_or(&[][..], |approval| approval.host_words);
        words.iter().fold(
            description.to_owned(),
            |description, (model_words, host_words)| description.replacen(model_words, host_words, 1),
        )
    }
}

/// The `{name}` placeholders of a template.
fn placeholders(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_is_refused() {
        let table = [
            (
                HostSeamError::UnknownArgument("url"),
                "HOST_SEAM_UNKNOWN_ARGUMENT",
            ),
            (
                HostSeamError::UnknownValue {
                    argument: "mode",
                    value: "all",
                },
                "HOST_SEAM_UNKNOWN_VALUE",
            ),
            (
                HostSeamError::UnknownPlaceholder("x".into()),
                "HOST_SEAM_UNKNOWN_PLACEHOLDER",
            ),
            (
                HostSeamError::WordsNotFound("the host"),
                "HOST_SEAM_WORDS_NOT_FOUND",
            ),
            (HostSeamError::PlanWithoutRule, "HOST_SEAM_PLAN_WITHOUT_RULE"),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), dshkit_os::error::ErrorClass::Refused, "{error}");
        }
    }
    use serde_json::json;

    const RUN: Approval = Approval {
        argument: "confirm",
        when: Some(When {
            argument: "operation",
            any_of: &["start"],
        }),
        action: "{operation} the server",
        shows: &["image"],
        reason: "it runs a program",
        otherwise: "ask the user to start it",
        plan: None,
        host_words: &[
            ("start {confirm: true}", "start {}"),
            (
                "ask the user first and pass confirm: true.",
                "the user is asked first.",
            ),
        ],
    };

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "operation": {"enum": ["start", "stop"]},
            "confirm": {"type": "boolean"},
            "image": {"type": "boolean"}
        }})
    }

    #[test]
    fn a_seam_that_fits_its_tool_passes_and_the_host_says_its_own_words() {
        let seams = HostSeams {
            approval: Some(RUN),
            ..HostSeams::NONE
        };
        let description = "Runs it: start {confirm: true}. Side effect: ask the user first and pass confirm: true. Then wait.";
        assert_eq!(seams.check(description, &schema()), Ok(()));
        assert_eq!(
            seams.host_description(description),
            "Runs it: start {}. Side effect: the user is asked first. Then wait."
        );
        assert_eq!(
            serde_json::to_value(seams).unwrap(),
            json!({"approval": {"argument": "confirm", "when": {"argument": "operation", "in": ["start"]},
                "action": "{operation} the server", "shows": ["image"], "reason": "it runs a program", "otherwise": "ask the user to start it"}})
        );
    }

    #[test]
    fn a_seam_that_does_not_fit_its_tool_is_refused_with_what_is_wrong() {
        let description = "start {confirm: true}: ask the user first and pass confirm: true.";
        let refused = |seams: HostSeams, description: &str| seams.check(description, &schema()).unwrap_err();
        let approval = |change: fn(&mut Approval)| {
            let mut approval = RUN;
            change(&mut approval);
            HostSeams {
                approval: Some(approval),
                ..HostSeams::NONE
            }
        };
        assert_eq!(
            refused(approval(|a| a.argument = "consent"), description),
            HostSeamError::UnknownArgument("consent")
        );
        assert_eq!(
            refused(
                approval(|a| a.when = Some(When {
                    argument: "operation",
                    any_of: &["restart"]
                })),
                description
            ),
            HostSeamError::UnknownValue {
                argument: "operation",
                value: "restart"
            }
        );
        assert_eq!(
            refused(approval(|a| a.shows = &["dir"]), description),
            HostSeamError::UnknownArgument("dir")
        );
        assert_eq!(
            refused(approval(|a| a.action = "start {app}"), description),
            HostSeamError::UnknownPlaceholder("app".into())
        );
        // A plan is a value of the rule's argument, outside the calls it covers.
        assert_eq!(
            refused(approval(|a| a.plan = Some("preview")), description),
            HostSeamError::UnknownValue {
                argument: "operation",
                value: "preview"
            }
        );
        assert_eq!(
            refused(approval(|a| a.plan = Some("start")), description),
            HostSeamError::PlanWithoutRule
        );
        assert_eq!(
            refused(
                approval(|a| {
                    a.plan = Some("stop");
                    a.when = None;
                }),
                description
            ),
            HostSeamError::PlanWithoutRule
        );
        assert_eq!(
            approval(|a| a.plan = Some("stop")).check(description, &schema()),
            Ok(())
        );
        assert_eq!(
            refused(
                approval(|_| {}),
                "start {confirm: true}: ask the user, then pass confirm."
            ),
            HostSeamError::WordsNotFound("ask the user first and pass confirm: true.")
        );
        let images = HostSeams {
            images: Some(Images {
                argument: "picture",
                when: None,
            }),
            ..HostSeams::NONE
        };
        assert_eq!(refused(images, ""), HostSeamError::UnknownArgument("picture"));
    }

    #[test]
    fn a_skill_file_gives_its_name_description_and_text() {
        let skill = SkillSpec::from_file(
            "---\nname: live-loop\ndescription: Verify web work.\n---\n\n# Body\ntext\n",
        )
        .unwrap();
        assert_eq!(
            skill,
            SkillSpec {
                name: "live-loop",
                description: "Verify web work.",
                text: "# Body\ntext\n"
            }
        );
        assert_eq!(SkillSpec::from_file("# no front matter"), None);
        assert_eq!(SkillSpec::from_file("---\nname: x\n---\nno description"), None);
    }
}
