//! The real server a replay passes a miss to (`--on-miss passthrough`, and
//! `record --mode new-episodes`), whichever transport the replay serves: a
//! command spoken to over its stdio, or a Streamable HTTP server (`-- URL`, an
//! `http://` or `https://` URL alone) reached through [`crate::upstream`].
//! Started (or reached) on the first miss and opened with the cassette's
//! recorded handshake; what it sends for a request is passed on as it arrives,
//! and the exchange is appended to the cassette (redacted, `origin: live`).

use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::cassette::{Interaction, Record};
use crate::error::EchoError;
use crate::frame::{json_line, read_frame};
use crate::passthrough_http::Exchange;
use crate::recorder::leads_us;
use crate::replay::{ReplayOptions, annotate};
use crate::server_process::{ServerProcess, close_server, spawn_server};
use crate::writer::Appender;

/// The real server, and the cassette its answers are appended to.
pub(crate) struct Live {
    server: Server,
    appender: Appender,
}

/// How the real server is spoken to.
enum Server {
    Stdio(Stdio),
    Http(crate::passthrough_http::Http),
}

/// A real server over its stdio.
struct Stdio {
    child: ServerProcess,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Live {
    /// Starts `argv` (or reaches the server at the URL that is all of it) and
    /// opens it with `initialize` (the recorded handshake, if any) before it
    /// is asked anything else; its answers go to `cassette`.
    pub(crate) async fn start(
        argv: &[String],
        initialize: Option<&Value>,
        cassette: &std::path::Path,
    ) -> Result<Self, EchoError> {
        let server = match argv {
            [] => return Err(EchoError::NoLiveServer),
            [url] if crate::upstream::is_url(url) => {
                Server::Http(crate::passthrough_http::Http::open(url, initialize).await?)
            }
            argv => Server::Stdio(Stdio::start(argv, initialize).await?),
        };
        Ok(Self {
            server,
            appender: Appender::open_existing(cassette)?,
        })
    }

    /// Sends `request` to the server, passes on to `client_out` everything it
    /// sends until the answer (annotated when asked), and appends the exchange
    /// to the cassette as interaction `ordinal`, redacted.
    pub(crate) async fn pass_through(
        &mut self,
        request: &Value,
        ordinal: u64,
        client_out: &mut (impl AsyncWrite + Unpin),
        options: &ReplayOptions,
    ) -> Result<(), EchoError> {
        let started = Instant::now();
        let exchange = match &mut self.server {
            Server::Stdio(server) => server.exchange(request, client_out).await?,
            Server::Http(server) => server.exchange(request, client_out).await?,
        };
        let mut response = exchange.response.clone();
        let interaction = Interaction {
            ordinal,
            request: request.clone(),
            responses: if exchange.body.is_some() {
                Vec::new()
            } else {
                vec![exchange.response]
            },
            notification_lead_us: leads_us(&exchange.notified_at, Instant::now()),
            notifications: exchange.notifications,
            server_requests: Vec::new(),
            server_requests_after: Vec::new(),
            status: exchange.status,
            content_type: exchange.content_type,
            body: exchange.body,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            origin: "live".into(),
        };
        if options.annotate {
            annotate(
                &mut response,
                &options.cassette_id(),
                &interaction,
                "passthrough",
                request,
                &options.matching,
            );
        }
        crate::frame::write_message(client_out, &response).await?;
        let mut record = Record::Interaction(interaction);
        record.redact(&options.redactor);
        self.appender.append(&record)?;
        Ok(())
    }

    /// Closes the cassette and stops (or leaves) the server.
    pub(crate) async fn finish(self) -> Result<(), EchoError> {
        self.appender.finish()?;
        match self.server {
            Server::Stdio(server) => close_server(server.child, server.stdin).await,
            Server::Http(server) => server.close().await,
        }
        Ok(())
    }
}

impl Stdio {
    /// Starts `argv` and opens it with `initialize`, if any.
    async fn start(argv: &[String], initialize: Option<&Value>) -> Result<Self, EchoError> {
        let (child, mut stdin, mut stdout) = spawn_server(argv)?;
        // The live server needs its own handshake before it answers anything else.
        if let Some(init) = initialize {
            let mut init = init.clone();
            init["id"] = json!("dshkit-echo-init");
            stdin
                .write_all(&json_line(&init))
                .await
                .map_err(EchoError::io("the live server's stdin"))?;
            let mut line = Vec::new();
            while read_frame(&mut stdout, &mut line, "the live server's stdout").await? {
                if serde_json::from_slice::<Value>(&line).is_ok_and(|v| v["id"] == "dshkit-echo-init") {
                    break;
                }
            }
            if init["method"] == "initialize" {
                stdin
                    .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                    .await
                    .map_err(EchoError::io("the live server's stdin"))?;
            }
        }
        Ok(Self { child, stdin, stdout })
    }

    /// Sends `request`, passes on to `client_out` what the server sends
    /// before its answer; returns the exchange.
    async fn exchange(
        &mut self,
        request: &Value,
        client_out: &mut (impl AsyncWrite + Unpin),
    ) -> Result<Exchange, EchoError> {
        self.stdin
            .write_all(&json_line(request))
            .await
            .map_err(EchoError::io("the live server's stdin"))?;
        self.stdin
            .flush()
            .await
            .map_err(EchoError::io("the live server's stdin"))?;
        let mut notifications = Vec::new();
        let mut notified_at = Vec::new();
        let mut line = Vec::new();
        loop {
            if !read_frame(&mut self.stdout, &mut line, "the live server's stdout").await? {
                return Err(EchoError::Io {
                    what: "the live server",
                    error: "it closed its stdout before answering".into(),
                });
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if message.get("method").is_none() && message.get("id") == request.get("id") {
                return Ok(Exchange {
                    notifications,
                    notified_at,
                    response: message,
                    status: None,
                    content_type: None,
                    body: None,
                });
            }
            crate::frame::write_message(client_out, &message).await?;
            if message.get("id").is_none() {
                notifications.push(message);
                notified_at.push(Instant::now());
            }
        }
    }
}
