//! Why a started dev server never became ready, in the server's own words: the
//! first error block it printed, with the file and line it names, rather than
//! the tail of a stack trace.

use serde::Serialize;

/// Most lines of the server's first error block kept.
pub const MAX_ERROR_LINES: usize = 16;
/// Log lines kept with a failure, for context.
pub const FAILURE_LOG_TAIL: usize = 8;
/// How many lines above an error line a bare `file:line` may stand (Node prints
/// the place of a syntax error, the code and a caret above the error's name).
const LOCATION_LOOKBACK: usize = 4;

/// How a start ended without a ready server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureCause {
    /// The server's process ended by itself before it was ready: the app (its
    /// configuration, its build, its dependencies) is broken.
    Exited { code: Option<i32> },
    /// It was not ready within the deadline.
    #[serde(rename_all = "camelCase")]
    TimedOut {
        after_secs: u64,
        /// The last HTTP status a URL of its own answered with (a 503 while it
        /// said it was starting), if any.
        last_answer: Option<u16>,
        /// It was stopped (its own deadline), or still starts (a caller's shorter
        /// wait ended).
        stopped: bool,
    },
}

/// A start that ended without a ready server, with what the server printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StartFailure {
    pub cause: FailureCause,
    /// The first error block the server printed, stack frames and decoration
    /// left out; at most [`MAX_ERROR_LINES`].
    pub error_lines: Vec<String>,
    /// Where that error points, `file:line[:column]`, when it names a place
    /// outside dependencies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The line of the block that says what is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// The last log lines, `[stream] text`; at most [`FAILURE_LOG_TAIL`].
    pub log_tail: Vec<String>,
}

impl StartFailure {
    /// Reads the failure out of the server's log lines (oldest first).
    pub fn from_log<'a>(
        cause: FailureCause,
        lines: impl IntoIterator<Item = &'a str>,
        log_tail: Vec<String>,
    ) -> Self {
        let lines: Vec<&str> = lines.into_iter().collect();
        let block = first_error_block(&lines);
        Self {
            cause,
            error_lines: block.lines,
            location: block.location,
            headline: block.headline,
            log_tail,
        }
    }

    /// The app itself is shown broken: its server ended by itself. (A server
    /// that was too slow shows nothing about the app.)
    pub fn app_is_broken(&self) -> bool {
        matches!(self.cause, FailureCause::Exited { .. })
    }

    /// One sentence: what happened.
    pub fn summary(&self) -> String {
        match self.cause {
            FailureCause::Exited { code } => format!(
                "the dev server exited with {} before it was ready",
                code.map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"))
            ),
            FailureCause::TimedOut {
                after_secs,
                last_answer,
                stopped,
            } => format!(
                "the dev server was not ready within {after_secs} s ({}); {}",
                last_answer.map_or_else(
                    || "no loopback URL of its own answered".to_owned(),
                    |status| format!("it still answered HTTP {status}")
                ),
                if stopped {
                    "it was stopped"
                } else {
                    "it is still starting"
                }
            ),
        }
    }

    /// What to do about it, naming the place and the error when the server did.
    pub fn next_step(&self) -> String {
        let what = match (&self.location, &self.headline) {
            (Some(place), Some(headline)) => format!("{place} ({headline})"),
            (Some(place), None) => place.clone(),
            (None, Some(headline)) => headline.clone(),
            (None, None) => String::new(),
        };
        match (self.cause, what.is_empty()) {
            (FailureCause::Exited { .. }, false) => format!(
                "Fix {what}: the dev server stops there before it serves a page. Then verify again."
            ),
            (FailureCause::Exited { .. }, true) => {
                "Read the dev server's log (the lines above), fix what stops it, then verify again.".to_owned()
            }
            (FailureCause::TimedOut { .. }, _) => {
                "Look at the dev server's log: if it is only slow, give it longer (a larger ready timeout); otherwise fix what keeps it from serving, then verify again.".to_owned()
            }
        }
    }
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())?;
        if self.error_lines.is_empty() {
            write!(f, "; the last log lines: {}", self.log_tail.join(" | "))
        } else {
            write!(f, "; it printed: {}", self.error_lines.join(" | "))
        }
    }
}

/// The first error block of a log.
#[derive(Debug, Default, PartialEq, Eq)]
struct ErrorBlock {
    lines: Vec<String>,
    location: Option<String>,
    headline: Option<String>,
}

/// From the first line that reads as an error (or the bare `file:line` just
/// above it) to the first stack frame or the package manager's own epilogue;
/// blank and box-drawing-only lines are left out.
fn first_error_block(lines: &[&str]) -> ErrorBlock {
    let Some(first) = lines.iter().position(|l| reads_as_error(l)) else {
        return ErrorBlock::default();
    };
    let start = (first.saturating_sub(LOCATION_LOOKBACK)..first)
        .find(|&i| bare_location(lines[i]).is_some())
        .unwrap_or(first);
    let mut block: Vec<&str> = Vec::new();
    let mut end = start;
    for (index, line) in lines.iter().enumerate().skip(start) {
        end = index;
        let text = line.trim();
        if is_stack_frame(text) || (index > first && is_epilogue(text)) || block.len() >= MAX_ERROR_LINES {
            break;
        }
        if !text.is_empty() && !is_decoration(text) {
            block.push(line.trim_end());
        }
        end = index + 1;
    }
    let located = block
        .iter()
        .enumerate()
        .find_map(|(i, line)| location_in(line).map(|place| (i, place)));
    // A place the block does not name may be the first frame of the stack under
    // it, when that frame is the app's own code.
    let location = located.as_ref().map(|(_, place)| place.clone()).or_else(|| {
        lines
            .get(end)
            .filter(|l| is_stack_frame(l.trim()))
            .and_then(|l| location_in(l))
    });
    let errors: Vec<(usize, &str)> = block
        .iter()
        .enumerate()
        .filter(|(_, l)| reads_as_error(l))
        .map(|(i, l)| (i, *l))
        .collect();
    let headline = match located {
        Some((at, _)) => errors
            .iter()
            .rev()
            .find(|(i, _)| *i <= at)
            .or_else(|| errors.iter().find(|(i, _)| *i > at)),
        None => errors.last(),
    }
    .map(|(_, l)| l.trim().to_owned());
    ErrorBlock {
        lines: block.into_iter().map(str::to_owned).collect(),
        location,
        headline,
    }
}

fn reads_as_error(line: &str) -> bool {
    let text = line.trim();
    // The package manager's echo of the script it runs (`> vite`, `$ vite`)
    // says nothing of how it went.
    if text.is_empty() || is_stack_frame(text) || text.starts_with("> ") || text.starts_with("$ ") {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    ["error", "failed", "cannot ", "can't ", "exception", "unexpected"]
        .iter()
        .any(|word| lower.contains(word))
}

fn is_stack_frame(text: &str) -> bool {
    text.strip_prefix("at ")
        .is_some_and(|rest| rest.contains(':') || rest.contains('('))
}

/// The package manager's own lines once the script failed (npm, pnpm, Yarn,
/// Bun), and Node's version line under an uncaught error.
fn is_epilogue(text: &str) -> bool {
    [
        "npm error",
        "npm ERR!",
        "[ELIFECYCLE]",
        "ELIFECYCLE",
        "error Command failed",
        "Node.js v",
    ]
    .iter()
    .any(|prefix| text.starts_with(prefix))
}

/// A line of box drawing alone (the frame around a code excerpt).
fn is_decoration(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c))
}

/// A line that is only a `file:line` (Node's place of a syntax error).
fn bare_location(line: &str) -> Option<String> {
    let text = line.trim();
    location_in(text).filter(|place| place == text)
}

/// The first `file:line[:column]` in `line` that is not a dependency's or
/// Node's own, with a `file://` scheme dropped.
fn location_in(line: &str) -> Option<String> {
    line.split(|c: char| c.is_whitespace() || "[](){}<>\"'`,".contains(c))
        .map(|token| {
            token
                .strip_prefix("file://")
                .unwrap_or(token)
                .trim_end_matches(['.', ':', ';'])
        })
        .find(|token| {
            file_of_place(token).is_some_and(|file| {
                let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
                name.contains('.')
                    && !file.starts_with("node:")
                    && !file.starts_with("http")
                    && !file.contains("node_modules")
            })
        })
        .map(str::to_owned)
}

/// The file of `file:line` or `file:line:column`.
fn file_of_place(token: &str) -> Option<&str> {
    let (rest, last) = token.rsplit_once(':')?;
    if !is_number(last) {
        return None;
    }
    Some(match rest.rsplit_once(':') {
        Some((file, line)) if is_number(line) => file,
        _ => rest,
    })
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Vite 8 printed, through `npm run dev`, for a `vite.config.ts` with a
    /// missing `}`.
    const VITE_PARSE_ERROR: &str = "
> dev
> vite

failed to load config from /tmp/app/vite.config.ts
error when starting dev server:
Error: Build failed with 1 error:

[PARSE_ERROR] Expected `,` or `}` but found `)`
   ╭─[ vite.config.ts:7:2 ]
   │
 4 │ export default defineConfig({
   │                             ┬  
   │                             ╰── Opened here
   │ 
 7 │ });
   │  ┬  
   │  ╰── `,` or `}` expected
───╯

    at aggregateBindingErrorsIntoJsError (file:///tmp/app/node_modules/rolldown/dist/shared/error-z4CTM_u3.mjs:110:18)
    at unwrapBindingResult (file:///tmp/app/node_modules/rolldown/dist/shared/error-z4CTM_u3.mjs:78:128)
    at async CAC.<anonymous> (file:///tmp/app/node_modules/vite/dist/node/cli.js:962:18) {
  errors: [Getter/Setter]
}";

    fn failure(log: &str) -> StartFailure {
        StartFailure::from_log(FailureCause::Exited { code: Some(1) }, log.lines(), Vec::new())
    }

    #[test]
    fn a_vite_config_parse_error_is_its_first_block_with_the_file_and_line_not_the_stack() {
        let failure = failure(VITE_PARSE_ERROR);
        assert_eq!(
            failure.error_lines,
            [
                "failed to load config from /tmp/app/vite.config.ts",
                "error when starting dev server:",
                "Error: Build failed with 1 error:",
                "[PARSE_ERROR] Expected `,` or `}` but found `)`",
                "   ╭─[ vite.config.ts:7:2 ]",
                " 4 │ export default defineConfig({",
                "   │                             ╰── Opened here",
                " 7 │ });",
                "   │  ╰── `,` or `}` expected",
            ]
        );
        assert_eq!(failure.location.as_deref(), Some("vite.config.ts:7:2"));
        assert_eq!(
            failure.headline.as_deref(),
            Some("[PARSE_ERROR] Expected `,` or `}` but found `)`")
        );
        assert_eq!(
            failure.next_step(),
            "Fix vite.config.ts:7:2 ([PARSE_ERROR] Expected `,` or `}` but found `)`): the dev server stops there before it serves a page. Then verify again."
        );
        assert!(failure.app_is_broken());
        assert!(!failure.to_string().contains("    at "), "{failure}");
    }

    #[test]
    fn a_node_syntax_error_keeps_the_place_node_prints_above_it() {
        let log = "> dev\n> node server.js\n\n/tmp/app/server.js:2\nconst x = ;\n          ^\n\nSyntaxError: Unexpected token ';'\n    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n\nNode.js v20.20.2";
        let failure = failure(log);
        assert_eq!(
            failure.error_lines,
            [
                "/tmp/app/server.js:2",
                "const x = ;",
                "          ^",
                "SyntaxError: Unexpected token ';'"
            ]
        );
        assert_eq!(failure.location.as_deref(), Some("/tmp/app/server.js:2"));
        assert_eq!(
            failure.headline.as_deref(),
            Some("SyntaxError: Unexpected token ';'")
        );
    }

    #[test]
    fn without_a_place_in_the_block_the_apps_own_first_frame_gives_it() {
        let log = "failed to load config from /tmp/app/vite.config.js\nerror when starting dev server:\nReferenceError: react is not defined\n    at file:///tmp/app/node_modules/.vite-temp/vite.config.js.timestamp-1-2.mjs:3:51\n[ELIFECYCLE] Command failed with exit code 1.";
        let config = failure(log);
        assert_eq!(config.error_lines.len(), 3, "{config:?}");
        assert_eq!(config.location, None, "a dependency's file is no place to fix");
        assert_eq!(
            config.headline.as_deref(),
            Some("ReferenceError: react is not defined")
        );
        let own =
            "TypeError: boom\n    at Server.<anonymous> (/tmp/app/server.js:5:9)\n    at node:internal/x:1:1";
        assert_eq!(failure(own).location.as_deref(), Some("/tmp/app/server.js:5:9"));
    }

    #[test]
    fn the_package_managers_echo_and_epilogue_are_no_part_of_the_block() {
        let log = "> dev\n> node -e \"console.error('Error: x')\"\nError: Cannot find module 'vite-plugin-missing'\nnpm error Lifecycle script `dev` failed with error:\nnpm error code 3";
        assert_eq!(
            failure(log).error_lines,
            ["Error: Cannot find module 'vite-plugin-missing'"]
        );
    }

    #[test]
    fn a_log_without_an_error_gives_no_block_and_a_generic_next_step() {
        let failure = failure("> dev\n> node server.js\nlistening");
        assert!(failure.error_lines.is_empty());
        assert_eq!(failure.location, None);
        assert!(failure.next_step().starts_with("Read the dev server's log"));
    }

    #[test]
    fn a_long_block_is_cut_at_its_limit() {
        let log = (0..100)
            .map(|i| format!("Error line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(failure(&log).error_lines.len(), MAX_ERROR_LINES);
    }
}
