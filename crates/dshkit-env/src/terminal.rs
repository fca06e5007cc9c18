//! How dshkit speaks on a terminal: whether a stream gets colour, which logs
//! reach stderr, and how progress is shown there (a spinner with its elapsed time
//! on a terminal, plain lines on a pipe). The command line's global flags
//! (`--color`, `-q`, `-v`, `--json`) meet the environment here, in one place.

use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::Environment;
use crate::vars;

/// `--color`: when output is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour on a terminal, unless `NO_COLOR`; `CLICOLOR_FORCE` forces it.
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether a stream that `is_terminal` (or not) gets colour under `choice`.
/// `--color always` and `never` win over the environment; under `auto`,
/// `NO_COLOR` (any value but empty) turns colour off, then `CLICOLOR_FORCE`
/// (any value but empty or `0`) turns it on even for a pipe, then a terminal
/// has colour and anything else has none (the rules of no-color.org and of
/// bixense.com/clicolors).
pub fn colored(choice: ColorChoice, env: &Environment, is_terminal: bool) -> bool {
    let set = |name: &str| env.get(name).is_some_and(|value| !value.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if set(vars::NO_COLOR) => false,
        ColorChoice::Auto => {
            let forced = env
                .get(vars::CLICOLOR_FORCE)
                .is_some_and(|v| !v.is_empty() && v.as_os_str() != "0");
            forced || is_terminal
        }
    }
}

/// The logs that reach stderr, as a `tracing` filter: `-q` only errors, `-v`
/// info, `-vv` debug, `-vvv` and more trace (each also for dshkit's own
/// crates); without either flag `DSHKIT_LOG` when set, else warnings. The
/// platform certificate verifier stays quiet unless asked for by name: Echo
/// reports a rejected certificate itself, with the URL and the fix.
pub fn log_filter(quiet: bool, verbose: u8, env: &Environment) -> String {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => {
            if let Some(filter) = env.get(vars::DSHKIT_LOG).and_then(|v| v.to_str()) {
                return filter.to_owned();
            }
            "warn"
        }
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    format!("{level},rustls_platform_verifier=off")
}

/// `-q`: progress lines are not written.
static QUIET: AtomicBool = AtomicBool::new(false);
/// Progress is a spinner with its elapsed time (a terminal, no `--json`).
static SPIN: AtomicBool = AtomicBool::new(false);
/// The stage the spinner shows, until the next one or the command's end.
static STAGE: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
/// How often the spinner redraws.
const SPINNER_TICK: std::time::Duration = std::time::Duration::from_millis(120);

/// How [`progress`] speaks for the rest of the process: not at all (`quiet`),
/// in plain lines (`json`, a pipe, `TERM=dumb`), or as a spinner on a terminal.
pub fn speak_on_stderr(json: bool, quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    SPIN.store(
        !json && !dumb && std::io::stderr().is_terminal(),
        Ordering::Relaxed,
    );
}

/// A stage of a long command, on stderr. On a terminal: a spinner with its
/// elapsed time until the next stage or the command's end, then a ✓ line with
/// the time it took. Otherwise one plain line, `dshkit: MESSAGE`.
pub fn progress(message: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    if !SPIN.load(Ordering::Relaxed) {
        stderr_line(&format!("dshkit: {message}"));
        return;
    }
    let mut stage = STAGE.lock().unwrap_or_else(PoisonError::into_inner);
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
pub fn end_progress() {
    let stage = STAGE.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(done) = stage {
        finish(&done);
    }
}

/// A stage's last frame (✓ and the time it took), then the next line.
fn finish(done: &indicatif::ProgressBar) {
    done.finish();
    let _ = writeln!(std::io::stderr().lock());
}

/// One line on stderr, above a running spinner rather than through it. A closed
/// or broken stderr loses the line, never the process (`eprintln!` would panic,
/// and a panicking signal task would leave a server that no longer stops on
/// SIGTERM).
pub fn stderr_line(line: &str) {
    let write = || {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    };
    let stage = STAGE.lock().unwrap_or_else(PoisonError::into_inner).clone();
    match stage {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().map(|(k, v)| (*k, *v)))
    }

    #[test]
    fn color_follows_the_flag_then_no_color_then_clicolor_force_then_the_terminal() {
        let none = env(&[]);
        assert!(colored(ColorChoice::Auto, &none, true));
        assert!(!colored(ColorChoice::Auto, &none, false));
        assert!(colored(ColorChoice::Always, &env(&[("NO_COLOR", "1")]), false));
        assert!(!colored(
            ColorChoice::Never,
            &env(&[("CLICOLOR_FORCE", "1")]),
            true
        ));
        assert!(!colored(ColorChoice::Auto, &env(&[("NO_COLOR", "1")]), true));
        assert!(
            colored(ColorChoice::Auto, &env(&[("NO_COLOR", "")]), true),
            "an empty NO_COLOR is unset"
        );
        assert!(colored(
            ColorChoice::Auto,
            &env(&[("CLICOLOR_FORCE", "1")]),
            false
        ));
        assert!(!colored(
            ColorChoice::Auto,
            &env(&[("CLICOLOR_FORCE", "0")]),
            false
        ));
        assert!(
            !colored(
                ColorChoice::Auto,
                &env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]),
                true
            ),
            "NO_COLOR wins over CLICOLOR_FORCE"
        );
    }

    #[test]
    fn the_log_filter_takes_the_flags_over_dshkit_log() {
        let logged = env(&[("DSHKIT_LOG", "dshkit=trace")]);
        assert_eq!(
            log_filter(false, 0, &env(&[])),
            "warn,rustls_platform_verifier=off"
        );
        assert_eq!(log_filter(false, 0, &logged), "dshkit=trace");
        assert_eq!(log_filter(true, 0, &logged), "error,rustls_platform_verifier=off");
        assert_eq!(log_filter(false, 1, &logged), "info,rustls_platform_verifier=off");
        assert_eq!(
            log_filter(false, 2, &env(&[])),
            "debug,rustls_platform_verifier=off"
        );
        assert_eq!(
            log_filter(false, 5, &env(&[])),
            "trace,rustls_platform_verifier=off"
        );
    }
}
