//! An existing browser's DevTools endpoint, as a pool engine (browserless,
//! Selenium Grid 4) serves it: its URL, the token it asks for, and how long a
//! connection may wait to be admitted (a pool queues connections beyond its
//! concurrency and refuses those beyond its queue).
//!
//! The token is sent as an `Authorization: Bearer` header (browserless reads
//! it there as from its `token` query parameter) and is never shown: not in
//! `Debug`, not in an error. An endpoint URL that carries one itself (`?token=`,
//! a password) is shown with it replaced.

use std::time::Duration;

/// How long a connection may wait for the endpoint to admit it: a pool holds a
/// queued connection's upgrade until one of its browsers is free.
pub const DEFAULT_ADMIT_DEADLINE: Duration = Duration::from_mins(1);
/// Most characters of an endpoint's refusal (its answer's body) quoted in an error.
pub const MAX_REFUSAL_CHARS: usize = 300;
/// Largest token file read.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// What stands for a secret wherever it would be shown.
pub const REDACTED: &str = "<redacted>";

/// A secret (a pool's token): its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// `text` without its surrounding white space (a token file's newline);
    /// `None` when nothing is left.
    pub fn new(text: &str) -> Option<Self> {
        let text = text.trim();
        (!text.is_empty()).then(|| Self(text.to_owned()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

/// A browser endpoint to connect to: `ws://…` (a browser or a pool's WebSocket)
/// or `http://host:port` (its `/json/version` names the WebSocket).
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    url: String,
    token: Option<TokenSource>,
    admit_deadline: Duration,
}

/// Where the token is: given, or in a file read at each connection (so a
/// rotated token needs no restart).
#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenSource {
    Value(Secret),
    File(std::path::PathBuf),
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.shown())
            .field("token", &self.token)
            .field("admit_deadline", &self.admit_deadline)
            .finish()
    }
}

impl Endpoint {
    /// `url` without a token, admitted within [`DEFAULT_ADMIT_DEADLINE`].
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            token: None,
            admit_deadline: DEFAULT_ADMIT_DEADLINE,
        }
    }

    /// The same endpoint with `token`, sent as a bearer header.
    #[must_use]
    pub fn with_token(mut self, token: Option<Secret>) -> Self {
        self.token = token.map(TokenSource::Value);
        self
    }

    /// The same endpoint with its token in `file`, read at each connection (at
    /// most [`MAX_TOKEN_FILE_BYTES`], white space around it ignored).
    #[must_use]
    pub fn with_token_file(mut self, file: std::path::PathBuf) -> Self {
        self.token = Some(TokenSource::File(file));
        self
    }

    /// The same endpoint with another admission deadline.
    #[must_use]
    pub fn with_admit_deadline(mut self, deadline: Duration) -> Self {
        self.admit_deadline = deadline;
        self
    }

    /// The same endpoint at another URL (the WebSocket an HTTP endpoint named),
    /// with its token and deadline.
    #[must_use]
    pub(crate) fn at(&self, url: &str) -> Self {
        Self {
            url: url.to_owned(),
            ..self.clone()
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The token, its file read now; an error says which file and why,
    /// never what it holds.
    pub(crate) fn token(&self) -> Result<Option<Secret>, String> {
        match &self.token {
            None => Ok(None),
            Some(TokenSource::Value(secret)) => Ok(Some(secret.clone())),
            Some(TokenSource::File(path)) => {
                let read = || -> std::io::Result<String> {
                    use std::io::Read;
                    let mut text = String::new();
                    std::fs::File::open(path)?
                        .take(MAX_TOKEN_FILE_BYTES)
                        .read_to_string(&mut text)?;
                    Ok(text)
                };
                let text =
                    read().map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
                Secret::new(&text)
                    .map(Some)
                    .ok_or_else(|| format!("the token file {} is empty", path.display()))
            }
        }
    }

    pub fn admit_deadline(&self) -> Duration {
        self.admit_deadline
    }

    /// Whether it is a WebSocket URL (else an HTTP one, read for its WebSocket).
    pub fn is_websocket(&self) -> bool {
        self.url.starts_with("ws://") || self.url.starts_with("wss://")
    }

    /// The URL as it may be shown: a `token` query value and a password replaced.
    pub fn shown(&self) -> String {
        let Ok(mut url) = reqwest::Url::parse(&self.url) else {
            return format!("{REDACTED} (not a URL)");
        };
        if url.password().is_some() {
            let _ = url.set_password(Some(REDACTED));
        }
        if url.query_pairs().any(|(key, _)| is_secret_key(&key)) {
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(key, value)| {
                    let value = if is_secret_key(&key) {
                        REDACTED.to_owned()
                    } else {
                        value.into_owned()
                    };
                    (key.into_owned(), value)
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        // Shown as written: the parser's encoding of `<redacted>` would hide the word.
        url.to_string().replace("%3Credacted%3E", REDACTED)
    }

    /// `text` with every secret of this endpoint (its token, a token or a
    /// password in its URL) replaced, for an error or a log line.
    pub fn redact(&self, text: &str) -> String {
        let mut secrets: Vec<String> = self.token().ok().flatten().map(|t| t.0).into_iter().collect();
        if let Ok(url) = reqwest::Url::parse(&self.url) {
            secrets.extend(url.password().map(str::to_owned));
            secrets.extend(
                url.query_pairs()
                    .filter(|(key, _)| is_secret_key(key))
                    .map(|(_, value)| value.into_owned()),
            );
        }
        let mut text = text.to_owned();
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
        text
    }
}

/// Query parameters that carry a secret (browserless's `token`, others' `key`).
fn is_secret_key(key: &str) -> bool {
    ["token", "key", "apikey", "api_key", "access_token"]
        .iter()
        .any(|k| key.eq_ignore_ascii_case(k))
}

/// What an endpoint's refusal says: its body (browserless writes its reason
/// there), else the status's own phrase; secrets removed, at most
/// [`MAX_REFUSAL_CHARS`].
pub(crate) fn refusal_reason(endpoint: &Endpoint, status: u16, body: Option<&[u8]>) -> String {
    let body = body
        .map(|b| String::from_utf8_lossy(b).trim().to_owned())
        .unwrap_or_default();
    let reason = if body.is_empty() {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no reason given")
            .to_owned()
    } else {
        body
    };
    let reason = endpoint.redact(&reason.split_whitespace().collect::<Vec<_>>().join(" "));
    match reason.char_indices().nth(MAX_REFUSAL_CHARS) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cr3t-pool-token";

    #[test]
    fn an_endpoint_never_shows_its_token() {
        let endpoint = Endpoint::new("ws://127.0.0.1:3000/chromium?token=inline-secret&blockAds=false")
            .with_token(Secret::new(&format!("{TOKEN}\n")));
        let shown = endpoint.shown();
        assert_eq!(
            shown,
            "ws://127.0.0.1:3000/chromium?token=<redacted>&blockAds=false"
        );
        let debug = format!("{endpoint:?}");
        for secret in [TOKEN, "inline-secret"] {
            assert!(!debug.contains(secret), "{debug}");
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(
            endpoint.redact(&format!("echo {TOKEN} and inline-secret")),
            "echo <redacted> and <redacted>"
        );
        let with_password = Endpoint::new("ws://user:hunter2@127.0.0.1:3000/");
        assert!(
            !with_password.shown().contains("hunter2"),
            "{}",
            with_password.shown()
        );
        assert_eq!(
            Endpoint::new("ws://127.0.0.1:3000/devtools/browser/x").shown(),
            "ws://127.0.0.1:3000/devtools/browser/x"
        );
    }

    #[test]
    fn a_refusal_quotes_the_engines_reason_or_its_status() {
        let endpoint = Endpoint::new("ws://127.0.0.1:3000").with_token(Secret::new(TOKEN));
        assert_eq!(
            refusal_reason(&endpoint, 429, Some(b"Too many requests\n")),
            "Too many requests"
        );
        assert_eq!(refusal_reason(&endpoint, 503, None), "Service Unavailable");
        assert_eq!(
            refusal_reason(&endpoint, 401, Some(format!("bad token {TOKEN}").as_bytes())),
            "bad token <redacted>"
        );
        let long = "x".repeat(MAX_REFUSAL_CHARS * 2);
        let cut = refusal_reason(&endpoint, 429, Some(long.as_bytes()));
        assert_eq!(cut.chars().count(), MAX_REFUSAL_CHARS + 1);
        assert!(Secret::new("  \n").is_none());
    }

    #[test]
    fn a_token_file_is_read_at_each_use_and_its_trouble_named_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let endpoint = Endpoint::new("ws://127.0.0.1:3000").with_token_file(file.clone());
        let missing = endpoint.token().unwrap_err();
        assert!(missing.contains("cannot read the token file"), "{missing}");
        std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
        assert_eq!(endpoint.token().unwrap(), Secret::new(TOKEN));
        assert_eq!(endpoint.redact(TOKEN), REDACTED);
        assert!(!format!("{endpoint:?}").contains(TOKEN));
        std::fs::write(&file, "rotated").unwrap();
        assert_eq!(endpoint.token().unwrap(), Secret::new("rotated"));
        std::fs::write(&file, " \n").unwrap();
        assert!(endpoint.token().unwrap_err().contains("is empty"));
    }
}
