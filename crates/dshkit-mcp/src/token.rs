//! Bearer tokens for the HTTP transport: from an environment variable, or from a
//! token file that is created with mode 0600 when absent.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use dshkit_os::error::ErrorClass;

/// Bytes of randomness in a generated token (rendered as 64 hex characters).
pub const TOKEN_BYTES: usize = 32;
/// Shortest token accepted from a file or the environment.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A bearer token. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Wraps a token value after checking it is usable in an `Authorization` header.
    pub fn new(value: &str) -> Result<Self, TokenError> {
        let value = value.trim();
        if value.len() < MIN_TOKEN_CHARS {
            return Err(TokenError::TooShort(MIN_TOKEN_CHARS));
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::BadCharacters);
        }
        Ok(Self(value.to_owned()))
    }

    /// A fresh random token.
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(Self(hex::encode(bytes)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison against a presented token.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        if expected.len() != presented.len() {
            return false;
        }
        expected
            .iter()
            .zip(presented)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// Where a server's token came from, for the startup log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    Environment(&'static str),
    File { path: PathBuf, created: bool },
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    #[error("token is shorter than {0} characters")]
    TooShort(usize),
    #[error("token must be printable ASCII without spaces")]
    BadCharacters,
    #[error("failed to generate a random token: {0}")]
    Random(String),
    #[error("failed to read token file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create token file {path}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file {path} is readable by other users (mode {mode:o}); run `chmod 600 {path}`")]
    TooOpen { path: PathBuf, mode: u32 },
    #[error("token file {path}: {problem}")]
    Invalid { path: PathBuf, problem: Box<TokenError> },
}

impl TokenError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooShort(_) => "TOKEN_TOO_SHORT",
            Self::BadCharacters => "TOKEN_BAD_CHARACTERS",
            Self::Random(_) => "TOKEN_RANDOM_FAILED",
            Self::Read { .. } => "TOKEN_FILE_UNREADABLE",
            Self::Create { .. } => "TOKEN_FILE_CREATE_FAILED",
            Self::TooOpen { .. } => "TOKEN_FILE_TOO_OPEN",
            Self::Invalid { .. } => "TOKEN_FILE_INVALID",
        }
    }

    /// A token or token file that cannot be used as given is refused; failing
    /// to generate a token or create its file is a runtime failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Random(_) | Self::Create { .. } => ErrorClass::Runtime,
            Self::TooShort(_)
            | Self::BadCharacters
            | Self::Read { .. }
            | Self::TooOpen { .. }
            | Self::Invalid { .. } => ErrorClass::Refused,
        }
    }
}

dshkit_os::classified!(TokenError);

/// Reads the token in `path`, or creates the file with a fresh token (mode 0600,
/// created exclusively so two servers starting at once agree on one token).
pub fn load_or_create_token_file(path: &Path) -> Result<(Token, TokenOrigin), TokenError> {
    match fs::read_to_string(path) {
        Ok(text) => {
            check_private(path)?;
            let token = Token::new(&text).map_err(|problem| TokenError::Invalid {
                path: path.to_owned(),
                problem: Box::new(problem),
            })?;
            Ok((
                token,
                TokenOrigin::File {
                    path: path.to_owned(),
                    created: false,
                },
            ))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => create(path),
        Err(source) => Err(TokenError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

fn create(path: &Path) -> Result<(Token, TokenOrigin), TokenError> {
    let create_err = |source| TokenError::Create {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(create_err)?;
    }
    let token = Token::generate()?;
    match dshkit_os::fs::private_file(fs::OpenOptions::new().write(true).create_new(true)).open(path) {
        Ok(mut file) => {
            file.write_all(token.expose().as_bytes()).map_err(create_err)?;
            file.write_all(b"\n").map_err(create_err)?;
            file.sync_all().map_err(create_err)?;
            Ok((
                token,
                TokenOrigin::File {
                    path: path.to_owned(),
                    created: true,
                },
            ))
        }
        // Another server created it between our read and our create: use theirs.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => load_or_create_token_file(path),
        Err(source) => Err(create_err(source)),
    }
}

/// Refuses a token file others can read (Unix mode bits; on Windows the
/// profile's ACLs keep it private and there is nothing to check).
fn check_private(path: &Path) -> Result<(), TokenError> {
    let metadata = fs::metadata(path).map_err(|source| TokenError::Read {
        path: path.to_owned(),
        source,
    })?;
    if dshkit_os::fs::open_to_others(&metadata) {
        return Err(TokenError::TooOpen {
            path: path.to_owned(),
            mode: dshkit_os::fs::mode(&metadata).unwrap_or(0) & 0o777,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_class() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let table = [
            (TokenError::TooShort(32), "TOKEN_TOO_SHORT", ErrorClass::Refused),
            (
                TokenError::BadCharacters,
                "TOKEN_BAD_CHARACTERS",
                ErrorClass::Refused,
            ),
            (
                TokenError::Random("no entropy".into()),
                "TOKEN_RANDOM_FAILED",
                ErrorClass::Runtime,
            ),
            (
                TokenError::Read {
                    path: "t".into(),
                    source: io(),
                },
                "TOKEN_FILE_UNREADABLE",
                ErrorClass::Refused,
            ),
            (
                TokenError::Create {
                    path: "t".into(),
                    source: io(),
                },
                "TOKEN_FILE_CREATE_FAILED",
                ErrorClass::Runtime,
            ),
            (
                TokenError::TooOpen {
                    path: "t".into(),
                    mode: 0o644,
                },
                "TOKEN_FILE_TOO_OPEN",
                ErrorClass::Refused,
            ),
            (
                TokenError::Invalid {
                    path: "t".into(),
                    problem: Box::new(TokenError::BadCharacters),
                },
                "TOKEN_FILE_INVALID",
                ErrorClass::Refused,
            ),
        ];
        for (error, code, class) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), class, "{error}");
        }
    }

    #[test]
    fn creates_a_private_token_file_once_and_reuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/token");
        let (first, origin) = load_or_create_token_file(&path).unwrap();
        assert_eq!(
            origin,
            TokenOrigin::File {
                path: path.clone(),
                created: true
            }
        );
        assert_eq!(first.expose().len(), TOKEN_BYTES * 2);
        if let Some(mode) = dshkit_os::fs::mode(&fs::metadata(&path).unwrap()) {
            assert_eq!(mode & 0o777, 0o600);
        }
        let (second, origin) = load_or_create_token_file(&path).unwrap();
        assert_eq!(first, second);
        assert_eq!(origin, TokenOrigin::File { path, created: false });
    }

    #[test]
    fn refuses_a_token_file_others_can_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        fs::write(&path, "0123456789abcdef0123").unwrap();
        dshkit_os::fs::set_mode(&path, 0o644).unwrap();
        if dshkit_os::fs::mode(&fs::metadata(&path).unwrap()).is_none() {
            return; // No mode bits on this platform: the ACLs decide.
        }
        let err = load_or_create_token_file(&path).unwrap_err();
        assert!(matches!(err, TokenError::TooOpen { .. }), "{err}");
        assert!(err.to_string().contains("chmod 600"));
    }

    #[test]
    fn rejects_short_or_spaced_tokens() {
        assert!(matches!(Token::new("short"), Err(TokenError::TooShort(_))));
        assert!(matches!(
            Token::new("has a space in the middle"),
            Err(TokenError::BadCharacters)
        ));
        assert!(Token::new("  0123456789abcdef\n").is_ok());
    }

    #[test]
    fn matching_is_exact() {
        let token = Token::new("0123456789abcdef").unwrap();
        assert!(token.matches(b"0123456789abcdef"));
        assert!(!token.matches(b"0123456789abcdeF"));
        assert!(!token.matches(b"0123456789abcde"));
        assert!(!format!("{token:?}").contains("0123"));
    }
}
