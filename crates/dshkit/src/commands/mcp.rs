//! `dshkit mcp`: serve every selected tool family over stdio or Streamable HTTP.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use dshkit_env::resolve::{Flags, SettingsFile};
use dshkit_env::{Environment, vars};
use dshkit_mcp::{
    ConnectionLimits, DshkitServer, HttpOptions, ResultLimits, ServerOptions, SessionLimits, Token,
    TokenOrigin, load_or_create_token_file, serve_http, serve_stdio,
};
use tokio_util::sync::CancellationToken;

use crate::cli::McpArgs;
use crate::exit::{self, Failure};
use crate::output::Output;
use crate::tools;

const INSTRUCTIONS: &str = "dshkit gives coding agents ground truth about the software they build. \
Call dshkit_doctor first when a dshkit tool reports a missing prerequisite: it names the exact fix. \
Tool results are bounded; a `truncated: true` field means part of a result was cut.";

/// The token file used when none is given: `mcp-token` in dshkit's config
/// directory (`$XDG_CONFIG_HOME/dshkit/mcp-token` on Linux, `%APPDATA%\dshkit` on Windows).
pub(crate) fn default_token_file(env: &Environment) -> Option<PathBuf> {
    env.dshkit_dir(dshkit_env::Dir::Config)
        .map(|dir| dir.join("mcp-token"))
}

/// An explicit `--token-file` wins, then `DSHKIT_MCP_TOKEN`, then the default file.
pub(crate) fn resolve_token(
    explicit: Option<&Path>,
    env: &Environment,
) -> anyhow::Result<(Token, TokenOrigin)> {
    if let Some(path) = explicit {
        return Ok(load_or_create_token_file(path)?);
    }
    if let Some(value) = env.get(vars::DSHKIT_MCP_TOKEN) {
        let value = value
            .to_str()
            .ok_or_else(|| anyhow!("{} is not valid UTF-8", vars::DSHKIT_MCP_TOKEN))?;
        let token =
            Token::new(value).with_context(|| format!("{} is not a usable token", vars::DSHKIT_MCP_TOKEN))?;
        return Ok((token, TokenOrigin::Environment(vars::DSHKIT_MCP_TOKEN)));
    }
    let path = default_token_file(env).context("no token file: pass --token-file or set HOME")?;
    Ok(load_or_create_token_file(&path)?)
}

/// `--max-sessions` and `--session-idle` (default 10m).
fn session_limits(args: &McpArgs) -> SessionLimits {
    SessionLimits {
        max_sessions: args.max_sessions,
        idle: args.session_idle.unwrap_or(dshkit_mcp::DEFAULT_SESSION_IDLE),
        ..SessionLimits::default()
    }
}

/// `--max-connections` and `--header-timeout` (default 10s).
fn connection_limits(args: &McpArgs) -> ConnectionLimits {
    ConnectionLimits {
        max_connections: args.max_connections,
        header_read_timeout: args
            .header_timeout
            .unwrap_or(dshkit_mcp::DEFAULT_HEADER_READ_TIMEOUT),
    }
}

pub(crate) async fn run(args: McpArgs, out: Output) -> Result<u8, Failure> {
    return_freed_memory_at_once();
    let options = ServerOptions {
        name: "dshkit".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: INSTRUCTIONS.into(),
        limits: ResultLimits::default(),
        tool_timeout: args.tool_timeout.unwrap_or(dshkit_mcp::DEFAULT_TOOL_TIMEOUT),
    };
    let config = tools_config(&args)?;
    let server = DshkitServer::new(options, tools::all_families(&config), args.tools.as_deref())
        .map_err(Failure::refused)?;
    if args.describe {
        let mut described = server.describe();
        // The host's DevTools collector registers where the DevTools tools look:
        // the directory is resolved here, once, never again by the host.
        if let Some(host) = described.get_mut("host").and_then(|h| h.as_object_mut()) {
            host.insert(
                "devtoolsDir".into(),
                serde_json::json!(config.resolved.devtools_dir),
            );
            // Where the plugin keeps what its views find again after a restart.
            let env = dshkit_env::Environment::from_process();
            host.insert(
                "stateDir".into(),
                serde_json::json!(dshkit_env::resolve::plugin_state_dir(&env)),
            );
        }
        out.json(&described);
        return Ok(exit::SUCCESS);
    }
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone());
    if args.exit_on_stdin_eof {
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            // Nothing is read from stdin; its end is the host going away.
            let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await;
            tracing::info!("stdin ended: shutting down");
            shutdown.cancel();
        });
    }
    if !args.no_prewarm {
        server.warm();
    }

    let Some(addr) = args.http else {
        tracing::info!(tools = ?server.tool_names(), "serving MCP over stdio");
        serve_stdio(server, shutdown).await.map_err(Failure::runtime)?;
        return Ok(exit::SUCCESS);
    };

    if !addr.ip().is_loopback() && !args.allow_remote {
        // Refused before anything is created, so a refused command leaves no token file.
        return Err(Failure::refused(dshkit_mcp::HttpError::NonLoopback(addr)));
    }
    let env = Environment::from_process();
    let (token, origin) = resolve_token(args.token_file.as_deref(), &env).map_err(Failure::refused)?;
    let chosen = match &origin {
        TokenOrigin::Environment(_) => true,
        TokenOrigin::File { created, .. } => !created,
    };
    if args.allow_remote && !addr.ip().is_loopback() && !chosen {
        return Err(Failure::refused(anyhow!(
            "--allow-remote needs a token you chose: put one in an existing --token-file or in DSHKIT_MCP_TOKEN"
        )));
    }
    match &origin {
        TokenOrigin::Environment(var) => tracing::info!("bearer token from {var}"),
        TokenOrigin::File { path, created } => {
            tracing::info!(path = %path.display(), created, "bearer token file");
        }
    }
    let (sessions, connections) = (session_limits(&args), connection_limits(&args));
    let http_options = HttpOptions {
        allow_remote: args.allow_remote,
        allowed_hosts: args.allow_hosts,
        allowed_origins: args.allow_origins,
        max_body_bytes: args.max_body_bytes,
        sessions,
        connections,
        ..HttpOptions::loopback(addr, token)
    };
    let running = serve_http(server.clone(), http_options, shutdown)
        .await
        .map_err(Failure::refused)?;
    if let Some(path) = &args.url_file {
        super::write_private(path, format!("{}\n", running.url()).as_bytes())
            .with_context(|| format!("failed to write {}", path.display()))
            .map_err(Failure::runtime)?;
    }
    // The one line on stdout, for scripts and test harnesses waiting on readiness
    // (after the URL file: the line means everything is in place).
    out.write(&format!("dshkit mcp: {}\n", running.url()));
    let finished = running.finished().await;
    if let Some(path) = &args.url_file {
        let _ = std::fs::remove_file(path);
    }
    finished.context("HTTP server failed").map_err(Failure::runtime)?;
    server.shutdown().await;
    Ok(exit::SUCCESS)
}

/// mimalloc's `mi_option_purge_delay` (`mimalloc.h`, v2: the 16th option).
#[cfg(not(target_os = "macos"))]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A server gives memory back as soon as it is freed. mimalloc delays that (10 ms)
/// and then does it only when the freeing thread allocates again, which the
/// threads of an idle server may never do: the memory of ended sessions would
/// stay resident. `MIMALLOC_PURGE_DELAY` in the environment still wins.
#[cfg(not(target_os = "macos"))]
#[expect(unsafe_code, reason = "one call into mimalloc's option API")]
fn return_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a plain integer option; mimalloc reads it on each purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

/// macOS keeps its system allocator, which returns freed memory itself.
#[cfg(target_os = "macos")]
fn return_freed_memory_at_once() {}

/// The families' configuration: the flags resolved over the environment, the
/// settings file (left alone by `--describe`: it only lists the tools, and a
/// host calls it while booting, which a hand-broken settings file must not stop)
/// and the defaults.
fn tools_config(args: &McpArgs) -> Result<tools::ToolsConfig, Failure> {
    let flags = Flags {
        quiet_window_ms: None,
        allow_external_hosts: args.allow_external_hosts.clone(),
        devtools_dir: args.devtools_dir.clone(),
    };
    let file = if args.describe {
        SettingsFile::Ignore
    } else {
        SettingsFile::Read
    };
    Ok(tools::ToolsConfig {
        browser_endpoint: args.browser_ws.clone().or_else(|| args.browser_url.clone()),
        workspace: args.workspace.clone(),
        allow_run: args.allow_run,
        images: args.images,
        resolved: crate::config::resolve(flags.clone(), file)?,
        settings: crate::config::live(flags, file),
    })
}

/// Cancels `shutdown` on SIGINT or SIGTERM (Ctrl-C, Ctrl-Break or the console
/// closing on Windows). The handlers are installed before this returns, so a
/// signal right after readiness is not lost.
fn cancel_on_signal(shutdown: CancellationToken) {
    let requested = match dshkit_os::signal::stop_requested() {
        Ok(requested) => requested,
        Err(e) => {
            tracing::warn!(%e, "failed to install signal handlers");
            return;
        }
    };
    tokio::spawn(async move {
        let name = requested.await;
        // Stop first: nothing after this line may keep the server running.
        shutdown.cancel();
        tracing::info!("{name}: shutting down");
    });
}
