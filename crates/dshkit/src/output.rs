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

/// `-q`: progress lines are not written.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Progress is a spinner with its elapsed time (a terminal, no `--json`).
static SPIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The stage the spinner shows, until the next one or the command's end.
static STAGE: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);
/// How often the spinner redraws.
const SPINNER_TICK: std::time::Duration = std::time::Duration::from_millis(120);

impl Output {
    /// Where results go, with colour by [`terminal::colored`] (never for JSON);
    /// `quiet` silences [`progress`] for the whole process.
    pub(crate) fn new(json: bool, color: ColorChoice, quiet: bool) -> Self {
        QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        SPIN.store(
            !json && !dumb && std::io::stderr().is_terminal(),
            std::sync::atomic::Ordering::Relaxed,
        );
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

/// Progress for people, on stderr (stdout carries the result); none with `-q`.
/// On a terminal each message is a stage: a spinner with its elapsed time until
/// the next stage or the command's end, then a line with the time it took. On a
/// pipe, or with `--json`, one plain line per message.
pub(crate) fn progress(message: &str) {
    use std::sync::atomic::Ordering;
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    if !SPIN.load(Ordering::Relaxed) {
        stderr_line(&format!("dshkit: {message}"));
        return;
    }
    let mut stage = STAGE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(done) = stage.take() {
        finish(&done);
    }
    let bar = indicatif::ProgressBar::new_spinner().with_style(
        indicatif::ProgressStyle::with_template("{spinner} dshkit: {msg} ({elapsed})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner())
            .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✓"),
    );
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(SPINNER_TICK);
    *stage = Some(bar);
}

/// Ends the spinner of the last stage, leaving its line with the time it took.
pub(crate) fn end_progress() {
    let stage = STAGE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(done) = stage {
        finish(&done);
    }
}

/// A stage's last frame (✓ and the time it took), then the next line.
fn finish(done: &indicatif::ProgressBar) {
    use std::io::Write as _;
    done.finish();
    let _ = writeln!(std::io::stderr().lock());
}

/// One line on stderr. A closed or broken stderr loses the line, never the
/// process (`eprintln!` would panic, and a panicking signal task would leave a
/// server that no longer stops on SIGTERM).
pub(crate) fn stderr_line(line: &str) {
    use std::io::Write as _;
    let write = || {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    };
    // Above a running spinner, not through it.
    let stage = STAGE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    match stage {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}
