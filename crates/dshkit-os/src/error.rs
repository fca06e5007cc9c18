//! What an error means for whoever ran the command: the one vocabulary every
//! domain error answers in, so the binary can map any of them to its documented
//! exit code without knowing the error's type.
//!
//! It lives here because this is the one crate every other crate depends on.

/// What an error means for whoever asked. Each domain error says which class
/// each of its variants is ([`Classified::class`]); the binary maps each class
/// to one documented exit code.
///
/// Not `#[non_exhaustive]`: a new class must make every mapping decide what it
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// dshkit will not do it as asked: the input, a file it reads or the setup
    /// is wrong or conflicts (a damaged cassette, an unsafe token file, a stale
    /// element ref, a port already in use, no browser installed). Running again
    /// unchanged fails the same way; fix what the message names. Exit code 3.
    Refused,
    /// It was tried and failed while running: I/O, a transport, a browser or a
    /// child process that crashed or did not answer in time. The request was
    /// fine; running again may succeed once the cause is gone (an error's
    /// `is_retryable` says where retrying as is makes sense). Exit code 4.
    Runtime,
    /// A server dshkit was told to reach could not be reached: the connection
    /// was refused, the name did not resolve, the TLS handshake failed or the
    /// server's certificate is not trusted. Nothing was asked of it; running
    /// again succeeds once the server is up, named right or trusted. Exit code 6.
    Unreachable,
}

/// A domain error that says what it is: a stable code for programs and the
/// class of failure for people and exit codes.
pub trait Classified: std::error::Error {
    /// A stable upper-case code (`SCREAMING_CASE`) that tools, scripts and JSON output carry.
    fn code(&self) -> &'static str;
    /// What the error means for whoever asked.
    fn class(&self) -> ErrorClass;
}

/// Implements [`Classified`] for error types whose inherent `code()` and
/// `class()` say it, so callers have both without importing the trait.
#[macro_export]
macro_rules! classified {
    ($($error:ty),+ $(,)?) => {$(
        impl $crate::error::Classified for $error {
            fn code(&self) -> &'static str {
                <$error>::code(self)
            }

            fn class(&self) -> $crate::error::ErrorClass {
                <$error>::class(self)
            }
        }
    )+};
}

/// Checks that each error of a table says its row's code and class: the one
/// check behind every crate's table of its errors, kept here beside
/// [`Classified`] so each table is only its rows.
///
/// # Panics
///
/// On the first error whose code or class is not its row's.
#[doc(hidden)]
pub fn assert_classified<E: Classified>(table: impl IntoIterator<Item = (E, &'static str, ErrorClass)>) {
    for (error, code, class) in table {
        assert_eq!(error.code(), code, "{error}");
        assert_eq!(error.class(), class, "{error}");
    }
}

/// An error and its causes, each said once, joined by `: `: a cause whose words
/// an error before it already carries (`failed to read x: No such file…` over
/// the OS error itself) is not repeated.
pub fn each_cause_once(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = String::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        let said = cause.to_string();
        if !message.contains(&said) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&said);
        }
        next = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Gone;

    impl std::fmt::Display for Gone {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the peer is gone")
        }
    }

    impl std::error::Error for Gone {}

    impl Classified for Gone {
        fn code(&self) -> &'static str {
            "PEER_GONE"
        }

        fn class(&self) -> ErrorClass {
            ErrorClass::Runtime
        }
    }

    #[test]
    fn a_table_whose_rows_fit_passes() {
        assert_classified([(Gone, "PEER_GONE", ErrorClass::Runtime)]);
    }

    #[test]
    #[should_panic(expected = "the peer is gone")]
    fn a_row_with_another_code_fails_naming_the_error() {
        assert_classified([(Gone, "GONE", ErrorClass::Runtime)]);
    }

    #[test]
    #[should_panic(expected = "the peer is gone")]
    fn a_row_with_another_class_fails_naming_the_error() {
        assert_classified([(Gone, "PEER_GONE", ErrorClass::Refused)]);
    }
}
