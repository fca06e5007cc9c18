//! Echo in DSH over Streamable HTTP: the loopback proxies the DSH plugin runs
//! for the registry's HTTP servers (entries with `http`). DSH's own MCP row for
//! such a server names the proxy's URL and waits for the plugin's `dshkitEcho`
//! service, which the plugin provides only once every proxy listens, so no call
//! of DSH's ever reaches a port before its proxy holds it.
//!
//! The plugin's seam is one process, `dshkit echo dsh-proxies`: the registry as
//! the first line of its stdin, one JSON line back once every proxy listens,
//! then it serves until its stdin ends (DSH gone, even killed outright) or a
//! signal. Replay answers from the cassette (a miss annotated, as a stdio
//! replay's is); record forwards each call to the real server and records it.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::error::EchoError;
use crate::http::RecordingProxy;
use crate::paths::PathRoots;
use crate::recorder::{RecordOptions, RecordSummary};
use crate::redact::Redactor;
use crate::registry::{HttpProxy, Mode, Registry, RegistryConfig, RegistryError};
use crate::replay::{OnMiss, ReplayOptions, Timing};
use crate::upstream::Upstream;

/// Longest registry line read from the seam's stdin (the annotation seam's bound).
pub const MAX_REQUEST_BYTES: u64 = crate::annotation::MAX_SEAM_BYTES;

/// The seam's request: the plugin row's registry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxiesRequest {
    pub echo: RegistryConfig,
}

/// A proxy that listens.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    pub id: String,
    pub server: String,
    pub mode: Mode,
    /// What DSH's row for the server names.
    pub url: String,
}

/// Why the proxies do not run; nothing listens then.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(
        "the request is not one this seam reads (`{{\"echo\": {{rootDir, cassettes}}}}` on one line): {0}"
    )]
    Request(String),
    #[error("{0} [{rule}]", rule = .0.rule())]
    Registry(#[from] RegistryError),
    #[error("cassette {id:?} ({url}): {error}")]
    Proxy {
        id: String,
        url: String,
        error: EchoError,
    },
    #[error(
        "cassette {id:?}: port {port} is taken by another program; give http.port a free port (and DSH's row for the server the same)"
    )]
    PortTaken { id: String, port: u16 },
    #[error(
        "cassette {id:?} records over HTTP into {path}, which exists: a recording never overwrites one; replay it, use passthrough to append what it does not answer, or move it away to record anew"
    )]
    RecordedAlready { id: String, path: String },
}

impl ProxyError {
    /// Refused input, a cassette's own class, or a proxy that could not start.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        match self {
            Self::Proxy { error, .. } => error.class(),
            _ => dshkit_os::error::ErrorClass::Refused,
        }
    }
}

type Serving = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

/// The registry's HTTP proxies, each bound.
pub struct Proxies {
    started: Vec<Started>,
    serving: Vec<Serving>,
    recorders: Vec<(String, RecordingProxy)>,
}

impl Proxies {
    /// Checks the registry and binds a proxy for each HTTP entry, in order; the
    /// first that cannot bind ends them all (dropping what was bound).
    pub async fn bind(config: RegistryConfig) -> Result<Self, ProxyError> {
        let registry = Registry::check(config)?;
        let mut proxies = Self {
            started: Vec::new(),
            serving: Vec::new(),
            recorders: Vec::new(),
        };
        for entry in registry.entries() {
            let Some(http) = &entry.http else { continue };
            let path = registry.root().join(&entry.path);
            let failed = |error| ProxyError::Proxy {
                id: entry.id.clone(),
                url: http.url(),
                error,
            };
            if std::net::TcpListener::bind(("127.0.0.1", http.port))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::AddrInUse)
            {
                return Err(ProxyError::PortTaken {
                    id: entry.id.clone(),
                    port: http.port,
                });
            }
            let address = match entry.mode {
                Mode::Replay | Mode::Passthrough => {
                    // Passthrough: a miss goes to the real server and is appended,
                    // annotated `passthrough`; replay answers it with an error.
                    let on_miss = match (entry.mode, &http.upstream) {
                        (Mode::Passthrough, Some(upstream)) => OnMiss::Passthrough(vec![upstream.clone()]),
                        _ => OnMiss::Error,
                    };
                    let options = ReplayOptions {
                        cassette: path,
                        timing: Timing::None,
                        on_miss,
                        annotate: true,
                        matching: crate::key::MatchOptions::default(),
                        redactor: builtin_redactor(),
                    };
                    let (address, serving) = crate::http::bind(http.port, options).await.map_err(failed)?;
                    proxies.serving.push(Box::pin(serving));
                    address
                }
                Mode::Record => {
                    if path.exists() {
                        return Err(ProxyError::RecordedAlready {
                            id: entry.id.clone(),
                            path: entry.path.display().to_string(),
                        });
                    }
                    let (address, recorder, serving) = record(http, path).await.map_err(failed)?;
                    proxies.serving.push(Box::pin(serving));
                    proxies.recorders.push((entry.id.clone(), recorder));
                    address
                }
            };
            proxies.started.push(Started {
                id: entry.id.clone(),
                server: entry.server.clone(),
                mode: entry.mode,
                url: format!("http://{address}/mcp"),
            });
        }
        Ok(proxies)
    }

    /// The proxies that listen, in registry order.
    pub fn started(&self) -> &[Started] {
        &self.started
    }

    /// Serves until `stop` ends, then finishes each recording (its cassette
    /// complete on disk). A proxy whose server fails ends them all.
    pub async fn serve_until(
        self,
        stop: impl Future<Output = ()>,
    ) -> Result<Vec<(String, RecordSummary)>, ProxyError> {
        let Self {
            serving, recorders, ..
        } = self;
        if serving.is_empty() {
            stop.await;
        } else {
            tokio::select! {
                (result, index, _) = futures::future::select_all(serving) => {
                    let error = result.err().map_or_else(|| "stopped serving".to_owned(), |e| e.to_string());
                    tracing::error!(index, error, "an Echo proxy ended");
                }
                () = stop => {}
            }
        }
        recorders
            .into_iter()
            .map(|(id, recorder)| {
                let summary = recorder.finish().map_err(|error| ProxyError::Proxy {
                    id: id.clone(),
                    url: String::new(),
                    error,
                })?;
                Ok((id, summary))
            })
            .collect()
    }
}

/// The seam's answer once every proxy listens: the proxies, and what each mode
/// that reaches a real server does, for the person who chooses one.
pub fn ready_answer(started: &[Started]) -> serde_json::Value {
    let side_effects: serde_json::Map<String, serde_json::Value> = Mode::ALL
        .iter()
        .filter_map(|mode| Some((mode.name().to_owned(), mode.side_effects()?.into())))
        .collect();
    serde_json::json!({"proxies": started, "sideEffects": side_effects})
}

/// The seam: reads the registry line from `input`, binds every proxy, hands
/// what listens to `ready`, then serves until `input` ends or `stop` does; a
/// recording's cassette is complete either way. An `https://` upstream trusts
/// the system's CAs and `SSL_CERT_FILE`'s.
pub async fn serve_seam<T>(
    input: impl AsyncRead + Unpin,
    ready: impl FnOnce(&[Started]),
    stop: impl Future<Output = T>,
) -> Result<Vec<(String, RecordSummary)>, ProxyError> {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    (&mut input)
        .take(MAX_REQUEST_BYTES)
        .read_until(b'\n', &mut line)
        .await
        .map_err(|e| ProxyError::Request(e.to_string()))?;
    let request: ProxiesRequest =
        serde_json::from_slice(&line).map_err(|e| ProxyError::Request(e.to_string()))?;
    let proxies = Proxies::bind(request.echo).await?;
    ready(proxies.started());
    proxies
        .serve_until(async move {
            let mut sink = tokio::io::sink();
            tokio::select! {
                // Nothing more is read; the end of stdin is DSH going away.
                _ = tokio::io::copy(&mut input, &mut sink) => {}
                _ = stop => {}
            }
        })
        .await
}

async fn record(
    http: &HttpProxy,
    cassette: std::path::PathBuf,
) -> Result<
    (
        std::net::SocketAddr,
        RecordingProxy,
        impl Future<Output = std::io::Result<()>> + Send + use<>,
    ),
    EchoError,
> {
    let url = http.upstream.clone().unwrap_or_default();
    let upstream = Upstream::trusting(url, Vec::new());
    let options = RecordOptions {
        argv: Vec::new(),
        cassette,
        mode: crate::writer::RecordMode::Once,
        redactor: builtin_redactor().with_paths(PathRoots::here()),
    };
    crate::http::bind_recorder(http.port, &upstream, options).await
}

fn builtin_redactor() -> Redactor {
    Redactor::new(&[], &[]).expect("the built-in rules compile")
}
