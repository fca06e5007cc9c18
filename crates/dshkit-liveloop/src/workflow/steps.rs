//! Steps and element targets as people write them on a command line:
//! `click:ROLE=NAME`, `fill:ROLE=NAME=TEXT`, `press:KEY`, `button=Save`.

use crate::verify::Step;

/// Parses a step: `click:ROLE=NAME`, `hover:ROLE=NAME`, `fill:ROLE=NAME=TEXT`,
/// `type:ROLE=NAME=TEXT`, `select:ROLE=NAME=OPTION`, `press:KEY`,
/// `navigate:PATH`, `wait:TEXT`, `scroll:PIXELS`, `reload`, `back`.
pub fn parse_step(text: &str) -> Result<Step, String> {
    let (action, rest) = text.split_once(':').unwrap_or((text, ""));
    let mut step = Step {
        action: action.to_owned(),
        ..Step::default()
    };
    match action {
        "click" | "hover" | "fill" | "type" | "select" => {
            let mut parts = rest.splitn(3, '=');
            let (Some(role), Some(name)) = (parts.next(), parts.next()) else {
                return Err(format!(
                    "`{text}`: write {action}:ROLE=NAME{}",
                    if action == "click" || action == "hover" {
                        ""
                    } else {
                        "=VALUE"
                    }
                ));
            };
            step.role = Some(role.to_owned());
            step.name = Some(name.to_owned());
            let value = parts.next().map(str::to_owned);
            match action {
                "fill" | "type" => {
                    step.text = Some(value.ok_or(format!("`{text}`: write {action}:ROLE=NAME=TEXT"))?);
                }
                "select" => {
                    step.option = Some(value.ok_or(format!("`{text}`: write select:ROLE=NAME=OPTION"))?);
                }
                _ => {}
            }
        }
        "press" => step.key = Some(rest.to_owned()),
        "navigate" => step.url = Some(rest.to_owned()),
        "wait" => step.text = Some(rest.to_owned()),
        "scroll" => {
            step.delta_y = Some(
                rest.parse()
                    .map_err(|_| format!("`{text}`: write scroll:PIXELS"))?,
            );
        }
        "reload" | "back" => {}
        other => {
            return Err(format!(
                "unknown step `{other}`; use click, hover, fill, type, select, press, navigate, wait, scroll, reload or back"
            ));
        }
    }
    step.action().map(|_| step)
}

/// Parses `ROLE=NAME`.
pub fn parse_role_name(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(r, n)| (r.to_owned(), n.to_owned()))
        .ok_or_else(|| format!("`{text}`: write ROLE=NAME, e.g. button=Save"))
}
