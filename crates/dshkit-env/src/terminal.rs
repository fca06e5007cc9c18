//! How dshkit speaks on a terminal: whether a stream gets colour, and which logs
//! reach stderr. The command line's global flags (`--color`, `-q`, `-v`) meet the
//! environment here, in one place.

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
