//! Documented exit codes. Scripts may rely on these.

use std::process::ExitCode;

use dshkit_os::error::{Classified, ErrorClass};

/// The command did what was asked.
pub const SUCCESS: u8 = 0;
/// The command ran and found a problem it reports (e.g. `doctor` found a missing piece).
pub const PROBLEM_FOUND: u8 = 1;
/// The command line is wrong (unknown flag, bad value). Clap's own code.
pub const USAGE: u8 = 2;
/// Input or configuration is refused: an unparsable patch file, an unsafe token
/// file, a non-loopback bind without `--allow-remote`.
pub const REFUSED: u8 = 3;
/// Something failed at run time: I/O, a transport, a crashed child.
pub const RUNTIME: u8 = 4;
/// `verify` could not produce evidence (verdict UNVERIFIED): no browser, no
/// screenshot, an incomplete requested diff. Not a pass and not an app failure.
pub const UNVERIFIED: u8 = 5;
/// A server dshkit was told to reach could not be reached (`echo record --http`,
/// `echo verify --url`): refused, not resolved, TLS failed or its certificate is
/// not trusted. The message names the URL and the cause.
pub const UNREACHABLE: u8 = 6;

/// The exit code of a failure of `class`: the one place an error's class
/// becomes a number. Every domain error says its class
/// ([`dshkit_os::error::Classified`]); a failure of this binary's own picks one.
pub fn for_class(class: ErrorClass) -> u8 {
    match class {
        ErrorClass::Refused => REFUSED,
        ErrorClass::Runtime => RUNTIME,
        ErrorClass::Unreachable => UNREACHABLE,
    }
}

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
    /// The error's stable code (`PROFILE_NOT_FOUND`) when its type says one.
    pub name: Option<&'static str>,
}

impl Failure {
    /// A failure of `class`, with its exit code ([`for_class`]).
    pub fn of_class(class: ErrorClass, error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: for_class(class),
            error: error.into(),
            name: None,
        }
    }

    /// Refused input or configuration; for an error without a class of its own.
    pub fn refused(error: impl Into<anyhow::Error>) -> Self {
        Self::of_class(ErrorClass::Refused, error)
    }

    /// A failure at run time; for an error without a class of its own.
    pub fn runtime(error: impl Into<anyhow::Error>) -> Self {
        Self::of_class(ErrorClass::Runtime, error)
    }
}

/// A domain error becomes a failure of its own class, so `?` maps it to its
/// exit code.
impl<E> From<E> for Failure
where
    E: Classified + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        let name = Some(error.code());
        Self {
            name,
            ..Self::of_class(error.class(), error)
        }
    }
}

pub fn code(value: u8) -> ExitCode {
    ExitCode::from(value)
}

#[cfg(test)]
mod tests {
    use dshkit_env::settings::SettingsError;

    use super::*;

    #[test]
    fn each_class_has_its_documented_exit_code() {
        for (class, code) in [
            (ErrorClass::Refused, 3),
            (ErrorClass::Runtime, 4),
            (ErrorClass::Unreachable, 6),
        ] {
            assert_eq!(for_class(class), code, "{class:?}");
            assert_eq!(
                Failure::of_class(class, anyhow::anyhow!("x")).code,
                code,
                "{class:?}"
            );
        }
        assert_eq!(Failure::refused(anyhow::anyhow!("x")).code, REFUSED);
        assert_eq!(Failure::runtime(anyhow::anyhow!("x")).code, RUNTIME);
    }

    #[test]
    fn a_domain_error_fails_with_the_exit_code_of_its_class_and_keeps_its_message() {
        let refused = Failure::from(SettingsError::NoLocation);
        assert_eq!(refused.code, REFUSED);
        assert_eq!(refused.error.to_string(), SettingsError::NoLocation.to_string());
        let io = SettingsError::Io {
            action: "read",
            path: "settings.json".into(),
            source: std::io::ErrorKind::PermissionDenied.into(),
        };
        let runtime = Failure::from(io);
        assert_eq!(runtime.code, RUNTIME);
        assert!(runtime.error.downcast_ref::<SettingsError>().is_some());
    }
}
