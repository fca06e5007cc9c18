//! The live server Echo reaches over HTTP (`record --http`, `verify --url`): its
//! URL, the roots an `https://` one is checked against, the one client built for
//! it, and what a failure to connect means ([`Unreachable`]).
//!
//! TLS is rustls with the graviola provider (pure Rust, so every target builds
//! it) and the platform's verifier: the system's roots, plus the CAs of
//! `SSL_CERT_FILE` and `--ca-file`. An `http://` URL builds no TLS at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use serde_json::Value;

use crate::error::{EchoError, Unreachable, UnreachableCause};

/// Longest wait for the TCP connection to the live server.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest wait for the first answer of the reachability check of `record --http`.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A live Streamable HTTP server and how to trust it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// `http://…/mcp` or `https://…/mcp`.
    pub url: String,
    /// PEM files of CAs trusted besides the system's: `SSL_CERT_FILE`'s, then
    /// each `--ca-file`.
    pub ca_files: Vec<PathBuf>,
}

impl Upstream {
    /// `url`, trusting the system's CAs, `SSL_CERT_FILE`'s (read from this
    /// process's environment) and `ca_files`'.
    pub fn trusting(url: impl Into<String>, ca_files: Vec<PathBuf>) -> Self {
        let ssl_cert_file = std::env::var_os(dshkit_env::vars::SSL_CERT_FILE).map(Into::into);
        Self::new(url, ssl_cert_file, ca_files)
    }

    /// `url`, trusting the CAs of `ssl_cert_file` (the variable's value, if
    /// set and not empty) and of `ca_files`.
    pub fn new(url: impl Into<String>, ssl_cert_file: Option<PathBuf>, ca_files: Vec<PathBuf>) -> Self {
        let mut files: Vec<PathBuf> = ssl_cert_file
            .filter(|file| !file.as_os_str().is_empty())
            .into_iter()
            .collect();
        files.extend(ca_files);
        Self {
            url: url.into(),
            ca_files: files,
        }
    }

    /// Whether the URL asks for TLS.
    pub fn is_https(&self) -> bool {
        self.url
            .get(..8)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
    }

    /// The one client for this server: TLS with the roots above for
    /// `https://`, plain TCP for `http://` (no roots read, no CA file needed);
    /// a TCP connection that takes longer than [`DEFAULT_CONNECT_TIMEOUT`]
    /// fails as [`UnreachableCause::TimedOut`].
    pub fn client(&self) -> Result<Client, EchoError> {
        let uri: http::Uri = self.url.parse().map_err(|e| EchoError::BadUrl {
            url: self.url.clone(),
            reason: format!("{e}"),
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(EchoError::BadUrl {
                url: self.url.clone(),
                reason: "not an http:// or https:// URL with a host".into(),
            });
        }
        let tls = if self.is_https() {
            self.tls_config()?
        } else {
            // Never used: the connector only starts TLS for an https:// URI.
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls_graviola::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| self.setup(&e))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        };
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_connect_timeout(Some(DEFAULT_CONNECT_TIMEOUT));
        tcp.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
        Ok(Client {
            http,
            uri,
            upstream: self.clone(),
        })
    }

    fn setup(&self, error: &dyn std::fmt::Display) -> EchoError {
        EchoError::TlsSetup {
            url: self.url.clone(),
            error: error.to_string(),
        }
    }

    fn tls_config(&self) -> Result<rustls::ClientConfig, EchoError> {
        if let Some(feature) = cpu_lacks() {
            return Err(self.setup(&format!(
                "this CPU lacks {feature}, which the TLS provider (graviola) needs"
            )));
        }
        let mut roots = Vec::new();
        for file in &self.ca_files {
            roots.extend(read_ca_file(file)?);
        }
        let provider = Arc::new(rustls_graviola::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(roots, Arc::clone(&provider))
            .map_err(|e| {
                self.setup(&format!(
                    "{e}; pass the server's CA with --ca-file PATH or SSL_CERT_FILE"
                ))
            })?;
        // ALPN (HTTP/1.1 only) is the connector's to set.
        Ok(rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| self.setup(&e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth())
    }

    /// The connection failure `error` is, if it is one: `None` for a failure
    /// after the connection was made (a broken answer), which the caller
    /// reports as its own.
    fn unreachable(&self, error: &hyper_util::client::legacy::Error) -> Option<Unreachable> {
        if !error.is_connect() {
            return None;
        }
        Some(Unreachable {
            url: self.url.clone(),
            cause: cause_of(error),
            detail: connect_detail(error),
        })
    }
}

/// Whether `text` is an `http://` or `https://` URL (any case), as a real
/// server's command line of one word may be instead of a command.
pub fn is_url(text: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    })
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// The response of a live server; its body is read or streamed as it comes.
pub type Response = http::Response<hyper::body::Incoming>;

/// Why a request to the live server got no response.
#[derive(Debug)]
pub enum SendError {
    /// No connection was made: the server is unreachable.
    Unreachable(Unreachable),
    /// The connection was made but the exchange failed.
    Failed(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) => e.fmt(f),
            Self::Failed(why) => f.write_str(why),
        }
    }
}

/// A client of one live server ([`Upstream::client`]); cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    http: hyper_util::client::legacy::Client<Connector, Full<Bytes>>,
    uri: http::Uri,
    upstream: Upstream,
}

impl Client {
    /// Sends `method` to the server's URL with `headers` and `body`; the
    /// response arrives once its head does.
    pub async fn send(
        &self,
        method: http::Method,
        headers: impl IntoIterator<Item = (http::HeaderName, http::HeaderValue)>,
        body: Bytes,
    ) -> Result<Response, SendError> {
        let mut request = http::Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.uri.clone();
        request.headers_mut().extend(headers);
        self.http
            .request(request)
            .await
            .map_err(|error| match self.upstream.unreachable(&error) {
                Some(unreachable) => SendError::Unreachable(unreachable),
                None => SendError::Failed(chain_text(&error)),
            })
    }

    /// Whether the server can be reached at all: one `HEAD` of its URL, whose
    /// answer (any status) or a wait for it past [`DEFAULT_PROBE_TIMEOUT`]
    /// says yes. Refused, unresolvable, untrusted or failed TLS says no, as
    /// [`EchoError::Unreachable`]. Nothing is sent that a recording would keep.
    pub async fn probe(&self) -> Result<(), EchoError> {
        let head = self.send(http::Method::HEAD, [], Bytes::new());
        match tokio::time::timeout(DEFAULT_PROBE_TIMEOUT, head).await {
            Ok(Err(SendError::Unreachable(unreachable))) => Err(unreachable.into()),
            Ok(Ok(_) | Err(SendError::Failed(_))) | Err(_) => Ok(()),
        }
    }
}

/// Splits a growing SSE text into events and returns the JSON messages of the
/// complete ones.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: String,
}

impl SseParser {
    /// Adds `chunk` and returns the JSON messages of the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Value> {
        self.pending
            .push_str(&String::from_utf8_lossy(chunk).replace("\r\n", "\n"));
        let mut messages = Vec::new();
        while let Some(end) = self.pending.find("\n\n") {
            let event: String = self.pending.drain(..end + 2).collect();
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n")) {
                messages.push(message);
            }
        }
        messages
    }
}

/// The first CPU feature the TLS provider needs that this CPU lacks, checked
/// before graviola would assert it.
fn cpu_lacks() -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    let needed = [
        ("AES-NI", std::arch::is_x86_feature_detected!("aes")),
        ("PCLMULQDQ", std::arch::is_x86_feature_detected!("pclmulqdq")),
        ("BMI1", std::arch::is_x86_feature_detected!("bmi1")),
        ("BMI2", std::arch::is_x86_feature_detected!("bmi2")),
        ("ADX", std::arch::is_x86_feature_detected!("adx")),
        ("AVX", std::arch::is_x86_feature_detected!("avx")),
        ("AVX2", std::arch::is_x86_feature_detected!("avx2")),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let needed: [(&str, bool); 0] = [];
    needed.iter().find(|(_, present)| !present).map(|(name, _)| *name)
}

/// The certificates of a PEM file, at least one.
fn read_ca_file(path: &Path) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, EchoError> {
    use rustls_pki_types::pem::PemObject as _;
    let refuse = |reason: String| EchoError::CaFile {
        path: path.to_owned(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| refuse(e.to_string()))?;
    let certs = rustls_pki_types::CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refuse(format!("not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(refuse(
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// Why a connection failed, read from its chain of causes: an I/O error's
/// kind, a rustls error, or the resolver's words.
pub(crate) fn cause_of(error: &(dyn std::error::Error + 'static)) -> UnreachableCause {
    let mut cause = UnreachableCause::Other;
    for error in causes(error) {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return UnreachableCause::Refused,
                std::io::ErrorKind::TimedOut => cause = UnreachableCause::TimedOut,
                _ => {}
            }
        }
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return match tls {
                rustls::Error::InvalidCertificate(_) => UnreachableCause::Certificate,
                _ => UnreachableCause::Tls,
            };
        }
        // hyper-util names a failed lookup `dns error`; its type is private.
        if error.to_string().starts_with("dns error") {
            return UnreachableCause::Dns;
        }
    }
    cause
}

/// `error` and every cause below it. An I/O error that wraps another error
/// (as tokio-rustls wraps rustls's, and hyper-rustls that again) does not
/// name it as its source, so it is taken from `get_ref`.
fn causes<'a>(error: &'a (dyn std::error::Error + 'static)) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut all = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        all.push(error);
        next = match error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    all
}

/// What a failed connection says below the client's own words ("client error
/// (Connect)"): its causes, each once.
fn connect_detail(error: &hyper_util::client::legacy::Error) -> String {
    let detail = words(causes(error).into_iter().skip(1));
    if detail.is_empty() {
        error.to_string()
    } else {
        detail
    }
}

/// An error and its causes, one text.
fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    words(causes(error))
}

/// The texts of `errors` joined, each once: a wrapper may repeat its cause's words.
fn words<'a>(errors: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for error in errors {
        let text = error.to_string();
        if !text.is_empty() && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(&'static str, Box<dyn std::error::Error + Send + Sync>);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn a_connection_failure_is_named_by_its_deepest_cause() {
        let refused = Wrapper(
            "tcp connect error",
            Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        );
        assert_eq!(cause_of(&refused), UnreachableCause::Refused);
        let untrusted = Wrapper(
            "client error (Connect)",
            Box::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            )),
        );
        assert_eq!(cause_of(&untrusted), UnreachableCause::Certificate);
        // hyper-rustls wraps tokio-rustls's I/O error in another one.
        let wrapped = Wrapper(
            "client error (Connect)",
            Box::new(std::io::Error::other(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            ))),
        );
        assert_eq!(cause_of(&wrapped), UnreachableCause::Certificate);
        let handshake = Wrapper(
            "client error (Connect)",
            Box::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::HandshakeNotComplete,
            )),
        );
        assert_eq!(cause_of(&handshake), UnreachableCause::Tls);
        let dns = Wrapper(
            "client error (Connect)",
            Box::new(Wrapper(
                "dns error",
                Box::new(std::io::Error::other("failed to lookup address information")),
            )),
        );
        assert_eq!(cause_of(&dns), UnreachableCause::Dns);
        let other = Wrapper("client error (Connect)", Box::new(std::io::Error::other("x")));
        assert_eq!(cause_of(&other), UnreachableCause::Other);
    }

    #[test]
    fn a_url_is_told_from_a_command_by_its_scheme() {
        assert!(is_url("https://example.test/mcp") && is_url("HTTP://127.0.0.1:9/mcp"));
        for command in ["npx", "./http-server", "http:/x", "ftp://x", ""] {
            assert!(!is_url(command), "{command}");
        }
    }

    #[test]
    fn the_ca_files_are_ssl_cert_file_then_each_given_one() {
        let upstream = Upstream::new(
            "https://127.0.0.1:1/mcp",
            Some("env.pem".into()),
            vec!["a.pem".into(), "b.pem".into()],
        );
        assert_eq!(
            upstream.ca_files,
            [PathBuf::from("env.pem"), "a.pem".into(), "b.pem".into()]
        );
        assert!(upstream.is_https());
        let plain = Upstream::new("http://127.0.0.1:1/mcp", Some(PathBuf::new()), Vec::new());
        assert!(plain.ca_files.is_empty(), "an empty SSL_CERT_FILE names no file");
        assert!(!plain.is_https());
        assert!(Upstream::new("HTTPS://x/mcp", None, Vec::new()).is_https());
    }

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        for file in [&missing, &empty] {
            let upstream = Upstream::new("https://127.0.0.1:1/mcp", None, vec![file.clone()]);
            let error = upstream.client().unwrap_err();
            assert_eq!(error.code(), "CA_FILE_UNREADABLE", "{error}");
            assert_eq!(error.class(), dshkit_os::error::ErrorClass::Refused);
            assert!(error.to_string().contains(&file.display().to_string()), "{error}");
        }
        // An http:// URL reads no CA file and builds no TLS.
        let plain = Upstream::new("http://127.0.0.1:1/mcp", None, vec![missing]);
        assert!(plain.client().is_ok());
    }

    #[tokio::test]
    async fn a_refused_port_is_unreachable_and_says_so_with_its_url() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let upstream = Upstream::new(format!("http://127.0.0.1:{port}/mcp"), None, Vec::new());
        let error = upstream.client().unwrap().probe().await.unwrap_err();
        assert_eq!(error.code(), "UNREACHABLE_REFUSED", "{error}");
        assert_eq!(error.class(), dshkit_os::error::ErrorClass::Unreachable);
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("cannot reach http://127.0.0.1:{port}/mcp: ")),
            "{text}"
        );
        assert!(text.contains("refused"), "{text}");
    }
}
