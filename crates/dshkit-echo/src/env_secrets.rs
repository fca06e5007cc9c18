//! Which environment variables hold secrets. A value is redacted wherever it
//! appears when the variable's name looks secret and the value looks like a
//! secret: both, so that neither the shell's own variables (`PWD`, `HOME`,
//! `PATH`, `USER`, `SHELL`, `LANG`, …) nor a secret-sounding name that holds a
//! path (`SSH_AUTH_SOCK`, `GOOGLE_APPLICATION_CREDENTIALS`) turns ordinary text
//! into placeholders.
//!
//! A name looks secret by its words (split at `_`, `-`, `.` and where a lower
//! case letter meets a capital), never by a part of a word (`TOKENIZERS_…` and
//! `OLDPWD` are not secret):
//! - a word that names a secret by itself, or ends with one (`PGPASSWORD`):
//!   `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL(S)`,
//!   `AUTHORIZATION`, `COOKIE`, `APIKEY`, …;
//! - `KEY` after another word (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY_ID`);
//! - `PWD`, `PASS`, `AUTH` or `PAT` as the last word after another
//!   (`MYSQL_PWD`, `SMTP_PASS`, `NPM_AUTH`, `GITHUB_PAT`): alone, `PWD` is the
//!   shell's working directory.
//!
//! A value looks like a secret when it has at least [`MIN_ENV_SECRET_CHARS`]
//! characters and is not a filesystem path, a number, a boolean or a reference
//! to another value (`${VAR}`).

/// Shortest environment variable value redacted (shorter ones are too likely to
/// appear by chance).
pub const MIN_ENV_SECRET_CHARS: usize = 8;

/// Words that make a name secret wherever they stand in it.
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTHORIZATION",
    "COOKIE",
    "COOKIES",
    "APIKEY",
    "ACCESSKEY",
    "SECRETKEY",
    "PRIVATEKEY",
    "AUTHTOKEN",
];

/// Words that make a name secret as its last word, after another word.
const QUALIFIED_LAST_WORDS: &[&str] = &["PWD", "PASS", "AUTH", "PAT"];

/// Whether the variable `name` is named like a secret (see the module's rules).
pub fn name_looks_secret(name: &str) -> bool {
    let words = words(name);
    let Some((last, _)) = words.split_last() else {
        return false;
    };
    words
        .iter()
        .any(|word| SECRET_WORDS.iter().any(|secret| word.ends_with(secret)))
        || words.iter().skip(1).any(|word| word == "KEY")
        || words.len() > 1 && QUALIFIED_LAST_WORDS.contains(&last.as_str())
}

/// Whether `value` looks like a secret (see the module's rules).
pub fn value_looks_secret(value: &str) -> bool {
    value.chars().count() >= MIN_ENV_SECRET_CHARS
        && !is_path(value)
        && !value
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "undefined" | "disabled" | "enabled"
        )
        && !value.starts_with("${")
        && !value.starts_with("$(")
}

/// The words of a variable's name, in capitals.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in part.chars() {
            if c.is_ascii_uppercase() && previous_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c.to_ascii_uppercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// Whether `value` is a filesystem path or a list of them (`PATH`): absolute,
/// home-relative or relative to the current directory, Unix or Windows.
pub(crate) fn is_path(value: &str) -> bool {
    let is_one = |part: &str| {
        let bytes = part.as_bytes();
        part.starts_with('/')
            || part.starts_with("~/")
            || part.starts_with("./")
            || part.starts_with("../")
            || part.starts_with("\\\\")
            || bytes.len() >= 3
                && bytes[0].is_ascii_alphabetic()
                && bytes[1] == b':'
                && matches!(bytes[2], b'\\' | b'/')
    };
    is_one(value) || value.split([':', ';']).filter(|p| !p.is_empty()).all(is_one)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shells_own_variables_are_never_named_like_secrets() {
        for name in [
            "PWD",
            "OLDPWD",
            "HOME",
            "PATH",
            "TMPDIR",
            "TMP",
            "TEMP",
            "USER",
            "LOGNAME",
            "SHELL",
            "LANG",
            "LC_ALL",
            "TERM",
            "HOSTNAME",
            "EDITOR",
            "XDG_SESSION_ID",
            "TERM_SESSION_ID",
            "SSH_AUTH_SOCK",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD_LAYOUT",
            "KEY",
            "PASS",
            "GIT_ASKPASS",
        ] {
            assert!(!name_looks_secret(name), "{name}");
        }
    }

    #[test]
    fn names_of_secrets_are_recognised_by_their_words() {
        for name in [
            "GITHUB_TOKEN",
            "NPM_TOKEN",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "STRIPE_KEY",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PWD",
            "SMTP_PASS",
            "NPM_AUTH",
            "GITHUB_PAT",
            "client_secret",
            "apiKey",
            "githubToken",
            "SLACK_BOT_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "HTTP_AUTHORIZATION",
            "SESSION_COOKIE",
        ] {
            assert!(name_looks_secret(name), "{name}");
        }
    }

    #[test]
    fn paths_numbers_and_references_are_no_secret_values() {
        for value in [
            "/tmp/rec-1",
            "/usr/local/bin:/usr/bin:/bin",
            "~/.config/gcloud/key.json",
            "./secrets/dev.env",
            "C:\\Users\\ana\\key.pem",
            "12345678901",
            "1.2.3-4567",
            "${GITHUB_TOKEN}",
            "disabled",
            "short",
        ] {
            assert!(!value_looks_secret(value), "{value}");
        }
        for value in [
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12",
            "hunter2hunter2",
            "correct horse battery staple",
            "s3cr3t-v4lue",
        ] {
            assert!(value_looks_secret(value), "{value}");
        }
    }
}
