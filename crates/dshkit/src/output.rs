//! The only place that writes to stdout. A closed pipe (`dshkit doctor | head -1`)
//! is success, not a panic; colour follows `--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE` and whether stdout is a terminal.

use std::io::{IsTerminal, Write};

use dshkit_env::Environment;
use dshkit_env::terminal::{self, ColorChoice};

/// Where command results go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    pub(crate) json: bool,
    pub(crate) color: bool,
}

/// Version of the JSON every command writes (its result, or its error).
pub const FORMAT_VERSION: u32 = 1;

/// The one rule that every JSON output carries its format's version: an object
/// gets `formatVersion` unless it names its own (a report of a versioned
/// format), and a list becomes `{formatVersion, items}`.
fn versioned(value: &impl serde::Serialize) -> serde_json::Value {
    match serde_json::to_value(value).expect("our reports always serialize") {
        serde_json::Value::Object(mut object) => {
            object
                .entry("formatVersion")
                .or_insert_with(|| FORMAT_VERSION.into());
            serde_json::Value::Object(object)
        }
        serde_json::Value::Array(items) => {
            serde_json::json!({ "formatVersion": FORMAT_VERSION, "items": items })
        }
        other => serde_json::json!({ "formatVersion": FORMAT_VERSION, "value": other }),
    }
}

impl Output {
    /// Where results go, with colour by [`terminal::colored`] (never for JSON);
    /// `quiet` silences [`progress`] for the whole process.
    pub(crate) fn new(json: bool, color: ColorChoice, quiet: bool) -> Self {
        terminal::speak_on_stderr(json, quiet);
        let color = !json
            && terminal::colored(
                color,
                &Environment::from_process(),
                std::io::stdout().is_terminal(),
            );
        Self { json, color }
    }

    /// Writes `text` to stdout and flushes. A broken pipe ends quietly.
    #[expect(
        clippy::unused_self,
        reason = "every write goes through Output, so a quiet mode would land in one place"
    )]
    pub(crate) fn write(self, text: &str) {
        // A result ends the stage spinner first: both may share one terminal.
        end_progress();
        let mut stdout = std::io::stdout().lock();
        let result = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
        if let Err(err) = result {
            if err.kind() == std::io::ErrorKind::BrokenPipe {
                return;
            }
            tracing::warn!(%err, "failed to write to stdout");
        }
    }

    /// Pretty JSON and a newline, versioned ([`versioned`]).
    pub(crate) fn json(self, value: &impl serde::Serialize) {
        let mut text = serde_json::to_string_pretty(&versioned(value)).expect("our reports always serialize");
        text.push('\n');
        self.write(&text);
    }

    /// One line of JSON (a seam's answer, a record of a stream), versioned.
    pub(crate) fn json_line(self, value: &impl serde::Serialize) {
        self.write(&format!("{}\n", versioned(value)));
    }

    /// A finished report: the JSON object with `--json`, else the text; exit 1
    /// when it found a problem, else 0.
    pub(crate) fn report(
        self,
        value: &impl serde::Serialize,
        text: impl FnOnce() -> String,
        problem: bool,
    ) -> u8 {
        if self.json {
            self.json(value);
        } else {
            self.write(&text());
        }
        if problem {
            crate::exit::PROBLEM_FOUND
        } else {
            crate::exit::SUCCESS
        }
    }

    /// `text` in an ANSI colour when colour is on.
    pub(crate) fn paint(self, text: &str, color: Color) -> String {
        if self.color {
            format!("\x1b[{}m{text}\x1b[0m", color as u8)
        } else {
            text.to_owned()
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Color {
    Red = 31,
    Green = 32,
    Yellow = 33,
    Dim = 2,
}

/// Progress for people and lines on stderr (stdout carries the result).
pub(crate) use dshkit_env::terminal::{end_progress, progress, stderr_line};

/// `--color`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

impl From<ColorArg> for dshkit_env::terminal::ColorChoice {
    fn from(arg: ColorArg) -> Self {
        match arg {
            ColorArg::Auto => Self::Auto,
            ColorArg::Always => Self::Always,
            ColorArg::Never => Self::Never,
        }
    }
}
