//! Every environment variable dshkit reads, in one place.

/// Path of the Chromium (or Chrome/Edge) executable to use.
pub const DSHKIT_CHROMIUM: &str = "DSHKIT_CHROMIUM";
/// Path of the Node.js executable to use.
pub const DSHKIT_NODE: &str = "DSHKIT_NODE";
/// Path of the `dsh` executable to use.
pub const DSHKIT_DSH: &str = "DSHKIT_DSH";
/// DSH's own home directory variable (default `~/.dsh`).
pub const DSH_HOME: &str = "DSH_HOME";
/// Root directory for evidence (screenshots, reports).
pub const DSHKIT_EVIDENCE_ROOT: &str = "DSHKIT_EVIDENCE_ROOT";
/// Bearer token for `dshkit mcp --http`, instead of a token file.
pub const DSHKIT_MCP_TOKEN: &str = "DSHKIT_MCP_TOKEN";
/// The browser pool's token (sent as a bearer header, never shown), over the
/// `browserPoolTokenFile` setting.
pub const DSHKIT_BROWSER_POOL_TOKEN: &str = "DSHKIT_BROWSER_POOL_TOKEN";
/// The DevTools endpoint `dshkit devtools` talks to (a loopback URL), as `--endpoint`.
pub const DSH_CORDIS_DEBUG_ENDPOINT: &str = "DSH_CORDIS_DEBUG_ENDPOINT";
/// The DevTools endpoint's bearer token itself, for `dshkit devtools` (a
/// `--token-file` wins over it; the devtools directory's token file is the default).
pub const DSH_CORDIS_DEBUG_TOKEN: &str = "DSH_CORDIS_DEBUG_TOKEN";
/// Codex's home, where `dshkit devtools setup --agent codex` writes `config.toml`
/// (default `~/.codex`).
pub const CODEX_HOME: &str = "CODEX_HOME";
/// `tracing` filter for logs on stderr, e.g. `dshkit=debug`.
pub const DSHKIT_LOG: &str = "DSHKIT_LOG";
/// A PEM file of CAs to trust for an `https://` upstream, as OpenSSL, curl and
/// Node read it.
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";
/// Disables colour in human output when set to any value but empty.
pub const NO_COLOR: &str = "NO_COLOR";
/// Forces colour in human output, even to a pipe, when set to any value but
/// empty or `0` (`--color` and `NO_COLOR` win over it).
pub const CLICOLOR_FORCE: &str = "CLICOLOR_FORCE";
/// Base of per-user state (evidence), per the XDG base directory spec.
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
/// Base of per-user configuration (token file), per the XDG base directory spec.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// Base of per-user caches (the Node built-ins list), per the XDG base directory spec.
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
pub const HOME: &str = "HOME";
/// The user's home on Windows, where `HOME` is rarely set.
pub const USERPROFILE: &str = "USERPROFILE";
pub const PATH: &str = "PATH";
/// The roaming application data folder on Windows (settings, the MCP token).
pub const APPDATA: &str = "APPDATA";
/// The local application data folder on Windows (evidence, caches).
pub const LOCALAPPDATA: &str = "LOCALAPPDATA";
