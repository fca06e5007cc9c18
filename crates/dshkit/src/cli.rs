#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, read in a terminal without Markdown"
)]

//! The command line. Parsing only; each command runs in `commands`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod examples;
#[cfg(test)]
use examples::EXAMPLES;
use examples::with_examples;

/// `dshkit --version`: the workspace version, and the commit it was built from
/// with that commit's date when built in a git checkout (`build.rs`).
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("DSHKIT_BUILD"));

/// dshkit: make coding agents trustworthy when they build software.
///
/// Serves LiveLoop, Echo, Startup Check and Cordis DevTools as MCP tools (`dshkit mcp`)
/// and as commands for people.
#[derive(Debug, Parser)]
#[command(name = "dshkit", version = VERSION, propagate_version = true, max_term_width = 100)]
#[command(
    after_help = "Exit codes: 0 success, 1 problem found (verify: FAILED), 2 usage error, 3 refused input or configuration, 4 runtime failure, 5 verify: UNVERIFIED, 6 a server could not be reached (echo record --http, echo verify --url).\nLogs go to stderr: -v, -vv or DSHKIT_LOG (e.g. DSHKIT_LOG=debug) show more, -q only errors. Colour follows --color, NO_COLOR and CLICOLOR_FORCE."
)]
pub(crate) struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// When to colour text: auto (on a terminal, unless NO_COLOR is set;
    /// CLICOLOR_FORCE forces it), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: crate::output::ColorArg,

    /// Only errors on stderr: no progress lines, no warnings.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub(crate) quiet: bool,

    /// More logs on stderr: -v info, -vv debug, -vvv trace (over DSHKIT_LOG).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,

    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The command line as people see it: the definition above, with each
    /// subcommand's examples.
    pub(crate) fn command() -> clap::Command {
        with_examples(<Self as clap::CommandFactory>::command(), "")
    }

    /// Parses `args` against [`Self::command`]. The examples show only in help,
    /// so the definition gets them only when help is asked for.
    pub(crate) fn parse_args(args: &[std::ffi::OsString]) -> Result<Self, clap::Error> {
        use clap::error::ErrorKind;
        let matches = match <Self as clap::CommandFactory>::command().try_get_matches_from(args) {
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                ) =>
            {
                Self::command().try_get_matches_from(args)?
            }
            parsed => parsed?,
        };
        <Self as clap::FromArgMatches>::from_arg_matches(&matches)
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve dshkit's tools over MCP (stdio by default).
    Mcp(McpArgs),
    /// Check the machine facts dshkit depends on, each with its fix.
    Doctor,
    /// Put dshkit into DSH (DeepSeek Harness) profiles: the native plugin or an MCP row.
    #[command(subcommand)]
    Dsh(DshCommand),
    /// Check a DSH plugin tree before restarting DSH (plugin_check).
    Check(CheckArgs),
    /// Detect the web app(s) in a workspace and how to run each.
    Detect(DetectArgs),
    /// Start the app's dev server (or the built-in static server) until Ctrl-C.
    Run(RunArgs),
    /// Verify the web app in headless Chromium: detect, start, load, act, assert,
    /// and print the verdict with its evidence.
    Verify(VerifyArgs),
    /// Write the index of past verification reports (newest first: verdict, URL,
    /// time, links) to <evidence root>/verify/index.html and print its path;
    /// --json prints the list.
    Report(ReportArgs),
    /// Record and replay MCP servers with versioned JSONL cassettes (Echo).
    #[command(subcommand)]
    Echo(EchoCommand),
    /// Cordis DevTools for people: the live DSH processes whose dshkit plugin runs
    /// the collector, their runtime, a watch on it, checkpoints and finite profiles.
    Devtools(DevtoolsArgs),
    /// Show or change dshkit's settings file (preview limit, idle timeout, quiet
    /// window, evidence retention, external-host allowlist).
    Settings(SettingsArgs),
    /// Print a shell completion script (bash: `source <(dshkit completions bash)`),
    /// or with --man the man page (roff: `dshkit completions --man | man -l -`).
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        #[arg(required_unless_present = "man")]
        shell: Option<clap_complete::Shell>,
        /// The man page instead.
        #[arg(long, conflicts_with = "shell")]
        man: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum EchoCommand {
    /// Run an MCP server over stdio behind a transparent proxy and record every
    /// exchange: dshkit echo record -o FILE -- <server argv>
    Record {
        /// The cassette to write.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: PathBuf,
        /// once: never overwrite; new-episodes: replay and append the misses;
        /// all: record again, replacing the cassette when done.
        #[arg(long, value_enum, default_value = "once")]
        mode: ModeArg,
        /// Record a Streamable HTTP server at URL (http:// or https://) instead: a loopback proxy on
        /// --port (default: a free port) prints `dshkit echo: http://127.0.0.1:PORT/mcp`
        /// and records until SIGINT/SIGTERM.
        #[arg(long, value_name = "URL", conflicts_with = "argv")]
        http: Option<String>,
        /// The port of the local recording proxy (0: a free one).
        #[arg(long, value_name = "PORT", default_value_t = 0, requires = "http")]
        port: u16,
        /// A PEM file of CAs to trust for an https:// --http, besides the
        /// system's and SSL_CERT_FILE's (repeatable).
        #[arg(long = "ca-file", value_name = "PATH", requires = "http")]
        ca_files: Vec<PathBuf>,
        #[command(flatten)]
        redaction: RedactionArgs,
        /// The real server's command line (stdio).
        #[arg(last = true, required_unless_present = "http", value_name = "ARGV")]
        argv: Vec<String>,
    },
    /// Serve a cassette over stdio as if it were the server; the real server is
    /// never started unless --on-miss passthrough is given with its argv.
    Replay {
        /// The cassette to serve.
        cassette: PathBuf,
        /// error: a JSON-RPC error explaining the near miss; passthrough: ask the
        /// real server (after --: its command line, or the http:// or https:// URL
        /// of a Streamable HTTP server) and append its answer.
        #[arg(long, value_enum, default_value = "error")]
        on_miss: OnMissArg,
        /// none: answer at once; recorded: wait the recorded time (scaled, at most 10 s).
        #[arg(long, value_enum, default_value = "none")]
        timing: TimingArg,
        /// With --timing recorded: wait the recorded time times FACTOR (0.5: twice as fast).
        #[arg(long, value_name = "FACTOR", default_value_t = 1.0)]
        timing_scale: f64,
        /// Add `_meta["dshkit/echo"]` (cassette, ordinal, hit or passthrough,
        /// fingerprint, diff) to every replayed tool result.
        #[arg(long)]
        annotate: bool,
        /// A request path ignored when matching, e.g. params.arguments.now (repeatable).
        #[arg(long = "ignore-path", value_name = "PATH")]
        ignore_paths: Vec<String>,
        /// When a request's recorded answers are used up, take the next unused
        /// answer of the same method in recorded order.
        #[arg(long)]
        sequential: bool,
        /// Serve over Streamable HTTP on 127.0.0.1:PORT (default: a free port)
        /// instead of stdio; prints `dshkit echo: http://127.0.0.1:PORT/mcp`.
        #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "0")]
        http: Option<u16>,
        #[command(flatten)]
        redaction: RedactionArgs,
        /// The real server, for --on-miss passthrough: its command line, or a
        /// Streamable HTTP server's URL (TLS trusts the system's CAs and SSL_CERT_FILE's).
        #[arg(last = true, value_name = "ARGV")]
        argv: Vec<String>,
    },
    /// Redact secrets in an existing cassette (atomically), or with --scan report
    /// secrets left and exit 1 if any.
    Redact {
        /// The cassette to redact (rewritten atomically).
        cassette: PathBuf,
        /// Only report the secrets left (exit 1 if any); the file is not changed.
        #[arg(long)]
        scan: bool,
        #[command(flatten)]
        redaction: RedactionArgs,
    },
    /// Send the recorded requests to the live server and compare its answers
    /// (timestamps, UUIDs and epochs normalised): MATCH, CHANGED,
    /// ERROR-SHAPE-CHANGED or MISSING per request. Exit 0 clean, 1 drift, 2 error,
    /// 3 refused input (an --ignore that is no JSON pointer), 6 the --url server
    /// could not be reached.
    Verify {
        /// The cassette whose requests are sent again.
        cassette: PathBuf,
        /// A live Streamable HTTP server (`http://…/mcp` or `https://…/mcp`)
        /// instead of a command.
        #[arg(long, value_name = "URL", conflicts_with = "argv")]
        url: Option<String>,
        /// A PEM file of CAs to trust for an https:// --url, besides the
        /// system's and SSL_CERT_FILE's (repeatable).
        #[arg(long = "ca-file", value_name = "PATH", requires = "url")]
        ca_files: Vec<PathBuf>,
        /// A member of each answer expected to change, left out of the
        /// comparison: a JSON pointer into the answer, e.g.
        /// /result/structuredContent/requestId (repeatable).
        #[arg(long = "ignore", value_name = "POINTER")]
        ignore: Vec<String>,
        #[command(flatten)]
        redaction: RedactionArgs,
        /// Also write the result as JUnit XML to FILE (atomically), for CI: one
        /// testcase per request and one for the drift, failing when any drifted;
        /// a run that could not verify is an error testcase.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// The live server's command line (stdio).
        #[arg(last = true, required_unless_present = "url", value_name = "ARGV")]
        argv: Vec<String>,
    },
    /// Snapshot the tool contract a cassette recorded (names, descriptions, input
    /// and output schemas, annotations) as JSON, to stdout or -o FILE.
    Snapshot {
        /// The cassette whose contract is taken.
        cassette: PathBuf,
        /// Write the snapshot to FILE (atomically) instead of stdout.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compare two tool contracts (snapshots or cassettes): each change is breaking,
    /// dangerous, minor or info under a stable rule id. Exit 1 on breaking or
    /// dangerous changes.
    Diff {
        /// The contract before: a snapshot or a cassette.
        old: PathBuf,
        /// The contract after: a snapshot or a cassette.
        new: PathBuf,
    },
    /// Check a cassette: header against frames, orphan responses, id collisions.
    Lint {
        /// The cassette to check.
        cassette: PathBuf,
    },
    /// A readable timeline of a cassette (or --json).
    Inspect {
        /// The cassette to show.
        cassette: PathBuf,
        /// Also write the interactions as one self-contained HTML page to FILE
        /// (atomically): no script and nothing loaded, everything escaped.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// The DSH plugin's seam: what the registered cassette says about a call DSH
    /// made (hit with its ordinal, or miss with why), as `{"dshCassette": …}`.
    /// Reads `{"echo": {rootDir, cassettes}, "server", "calls": [{tool, arguments}]}`
    /// from stdin, the server's calls in this DSH process, oldest first.
    Annotate,
    /// The DSH plugin's seam: one recorded interaction of a registered cassette,
    /// redacted again, as `{"interaction": …}`. Reads `{"echo", "id", "ordinal"}`
    /// from stdin.
    Interaction,
    /// The DSH plugin's seam: the loopback proxies of the registry's HTTP servers.
    /// Reads `{"echo": {rootDir, cassettes}}` as stdin's first line, prints
    /// `{"proxies": [{id, server, mode, url}]}` once all listen, serves until stdin ends.
    DshProxies,
    /// Write a new DSH overlay (plus a recovery manifest) whose MCP row runs the
    /// server through dshkit: dsh --profile P --patch OVERLAY. The profile itself is
    /// never edited.
    DshOverlay(OverlayArgs),
}

#[derive(Debug, Args)]
pub(crate) struct OverlayArgs {
    /// The profile the overlay is meant for (recorded in the manifest).
    #[arg(long, default_value = "web")]
    pub(crate) profile: String,
    /// The MCP server name in DSH (tools appear as mcp__NAME__TOOL).
    #[arg(long, value_name = "NAME")]
    pub(crate) server: String,
    /// record: run the real server through the recorder; replay: serve the cassette
    /// only (the row holds no server command); passthrough: replay, asking the real
    /// server on a miss.
    #[arg(long, value_enum)]
    pub(crate) mode: OverlayModeArg,
    /// The cassette.
    #[arg(long, value_name = "FILE")]
    pub(crate) cassette: PathBuf,
    /// Where to write the overlay (default: <DSH home>/overlays/echo-<server>-<mode>.patch.yml).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// DSH home (default: $DSH_HOME, else ~/.dsh).
    #[arg(long, value_name = "DIR")]
    pub(crate) dsh_home: Option<PathBuf>,
    /// Replay rows leave out the `_meta["dshkit/echo"]` annotation (hit, miss,
    /// passthrough) that they add to tool results by default.
    #[arg(long)]
    pub(crate) no_annotate: bool,
    /// The real server's command line (record and passthrough).
    #[arg(last = true, value_name = "ARGV")]
    pub(crate) argv: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OverlayModeArg {
    Record,
    Replay,
    Passthrough,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RedactionArgs {
    /// Also redact the value of this environment variable (repeatable); a variable
    /// whose name looks secret (TOKEN, SECRET, PASSWORD, API_KEY, *_KEY, …) always
    /// is when its value looks like one (not a path, a number or a boolean).
    #[arg(long = "redact-env", value_name = "NAME")]
    pub(crate) redact_env: Vec<String>,
    /// Also redact matches of this regex (repeatable).
    #[arg(long = "redact", value_name = "REGEX")]
    pub(crate) redact: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ModeArg {
    Once,
    NewEpisodes,
    All,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum OnMissArg {
    Error,
    Passthrough,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum TimingArg {
    None,
    Recorded,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Then open the index in your browser ($BROWSER, else the system's opener).
    #[arg(long)]
    pub open: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DetectArgs {
    /// The workspace (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The workspace (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    /// The app directory inside the workspace, when it holds several.
    #[arg(long, value_name = "DIR")]
    pub(crate) app: Option<PathBuf>,
    /// When the expected port is taken: fail, adopt (use that server, never stop
    /// it) or other-port (start on a free port).
    #[arg(long, value_enum, default_value = "fail")]
    pub(crate) on_port_conflict: PortConflictArg,
    /// Longest the server may take to become ready (e.g. 90s, 2m).
    #[arg(long = "ready-timeout", alias = "ready-timeout-secs", value_name = "DURATION", default_value = "90s", value_parser = seconds)]
    pub(crate) ready_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line switches, each its own flag"
)]
pub(crate) struct VerifyArgs {
    /// A workspace directory (default: .) or a loopback URL of a running app.
    pub(crate) target: Option<String>,
    /// The app directory inside the workspace, when it holds several.
    #[arg(long, value_name = "DIR")]
    pub(crate) app: Option<PathBuf>,
    /// The path (or same-origin URL) to load, resolved against the target's URL
    /// (default: the target's URL itself, with its path, query and fragment).
    #[arg(long = "path", value_name = "PATH")]
    pub(crate) path: Option<String>,
    /// A step, in order (repeatable): click:ROLE=NAME, hover:ROLE=NAME,
    /// fill:ROLE=NAME=TEXT, type:ROLE=NAME=TEXT, select:ROLE=NAME=OPTION, press:KEY,
    /// navigate:PATH, wait:TEXT, scroll:PIXELS, reload, back.
    #[arg(long = "step", value_name = "STEP")]
    pub(crate) steps: Vec<String>,
    /// The page text must contain TEXT (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub(crate) expect_text: Vec<String>,
    /// The page text must not contain TEXT (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub(crate) expect_absent: Vec<String>,
    /// An element with this role and accessible name must exist: ROLE=NAME (repeatable).
    #[arg(long, value_name = "ROLE=NAME")]
    pub(crate) expect_element: Vec<String>,
    /// The title must contain TEXT.
    #[arg(long, value_name = "TEXT")]
    pub(crate) expect_title: Option<String>,
    /// The final URL must contain TEXT.
    #[arg(long, value_name = "TEXT")]
    pub(crate) expect_url: Option<String>,
    /// The page's document must answer with this HTTP status.
    #[arg(long, value_name = "CODE")]
    pub(crate) expect_status: Option<u16>,
    /// Compare with this reference PNG (inside the workspace).
    #[arg(long, value_name = "PNG")]
    pub(crate) reference: Option<PathBuf>,
    /// Write the screenshot as the new reference instead of comparing.
    #[arg(long, requires = "reference")]
    pub(crate) update_reference: bool,
    /// Largest share of differing pixels that still passes (default 0.0001).
    #[arg(long, value_name = "RATIO", requires = "reference")]
    pub(crate) max_mismatch: Option<f64>,
    /// A JSON verification request (the liveloop_verify arguments); flags add to it.
    #[arg(long, value_name = "FILE")]
    pub(crate) spec: Option<PathBuf>,
    /// The browser window: desktop (1280x800), tablet (820x1180) or mobile (390x844).
    #[arg(long, value_enum, default_value = "desktop")]
    pub(crate) viewport: ViewportArg,
    /// Screenshot the full page, not only the viewport.
    #[arg(long)]
    pub(crate) full_page: bool,
    /// Screenshot the page after each step (the first 20) for the report's
    /// timeline; about 35 ms a step.
    #[arg(long)]
    pub(crate) step_screenshots: bool,
    /// Console errors are only reported, not failures.
    #[arg(long)]
    pub(crate) allow_console_errors: bool,
    /// How long the network must be quiet after DOMContentLoaded (e.g. 500ms).
    #[arg(long = "quiet-window", alias = "quiet-window-ms", value_name = "DURATION", value_parser = millis)]
    pub(crate) quiet_window: Option<std::time::Duration>,
    /// When the expected port is taken: fail, adopt (use that server, never stop
    /// it) or other-port (start on a free port).
    #[arg(long, value_enum, default_value = "fail")]
    pub(crate) on_port_conflict: PortConflictArg,
    /// Longest the server may take to become ready (e.g. 90s, 2m).
    #[arg(long = "ready-timeout", alias = "ready-timeout-secs", value_name = "DURATION", default_value = "90s", value_parser = seconds)]
    pub(crate) ready_timeout: std::time::Duration,
    /// Preview on the browser pool (or browser) at this DevTools WebSocket
    /// instead of launching Chromium, as `dshkit mcp --browser-ws`; its token
    /// from DSHKIT_BROWSER_POOL_TOKEN or `browserPoolTokenFile`.
    #[arg(long, value_name = "URL")]
    pub(crate) browser_ws: Option<String>,
    /// Also write the verification as JUnit XML to FILE (atomically), for CI:
    /// the verdict, each step, assertion and reference diff a testcase, the
    /// screenshot attached; FAILED is a failure, UNVERIFIED an error.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
}

/// `--viewport` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ViewportArg {
    Desktop,
    Tablet,
    Mobile,
}

impl From<ViewportArg> for dshkit_liveloop::preview::Viewport {
    fn from(value: ViewportArg) -> Self {
        match value {
            ViewportArg::Desktop => Self::Desktop,
            ViewportArg::Tablet => Self::Tablet,
            ViewportArg::Mobile => Self::Mobile,
        }
    }
}

/// `--on-port-conflict` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum PortConflictArg {
    Fail,
    Adopt,
    OtherPort,
}

impl From<PortConflictArg> for dshkit_liveloop::runtime::PortConflict {
    fn from(value: PortConflictArg) -> Self {
        match value {
            PortConflictArg::Fail => Self::Fail,
            PortConflictArg::Adopt => Self::Adopt,
            PortConflictArg::OtherPort => Self::OtherPort,
        }
    }
}

#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one documented switch of `dshkit mcp`"
)]
pub(crate) struct McpArgs {
    /// Serve over stdio (the default).
    #[arg(long, conflicts_with = "http")]
    pub(crate) stdio: bool,

    /// Serve over Streamable HTTP on ADDR (default 127.0.0.1:0). Prints
    /// `dshkit mcp: http://ADDR/mcp` on stdout once ready.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub(crate) http: Option<SocketAddr>,

    /// Bearer token file for --http; created with mode 0600 and a random token when
    /// absent. Default: $XDG_CONFIG_HOME/dshkit/mcp-token. DSHKIT_MCP_TOKEN overrides
    /// the default file.
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,

    /// With --http: also write the URL to PATH (0600) once ready, and remove it on
    /// exit (how `dshkit devtools bridge` finds `dshkit devtools serve`).
    #[arg(long, value_name = "PATH", hide = true, requires = "http")]
    pub(crate) url_file: Option<PathBuf>,

    /// With --http: stop when stdin reaches its end, so a server started by a
    /// host with a pipe on its stdin ends with that host, even one killed outright.
    #[arg(long, requires = "http")]
    pub(crate) exit_on_stdin_eof: bool,

    /// Do not launch the preview browser at startup nor keep a blank preview
    /// ready (by default both are done in the background when the liveloop tools
    /// are served, so opens are fast; the browser is closed after the idle timeout
    /// without sessions).
    #[arg(long)]
    pub(crate) no_prewarm: bool,

    /// Tool families to expose, comma-separated (default: all). Known: core, liveloop, check, echo, devtools.
    #[arg(long, value_delimiter = ',', value_name = "FAMILIES")]
    pub(crate) tools: Option<Vec<String>>,

    /// Allow --http on a non-loopback address. Requires a token you chose
    /// (--token-file with an existing file, or DSHKIT_MCP_TOKEN).
    #[arg(long)]
    pub(crate) allow_remote: bool,

    /// Extra Host header values to accept (e.g. `mybox.lan:8080`); loopback names
    /// are always accepted.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,

    /// Extra browser Origins to accept (e.g. `http://localhost:5173`).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,

    /// Largest accepted HTTP request body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = dshkit_mcp::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,

    /// --http: an MCP session without a request this long ends (its previews
    /// close); the client's next request gets 404 and re-initializes (default 10m).
    #[arg(long, value_name = "DURATION", value_parser = nonzero_seconds)]
    pub(crate) session_idle: Option<std::time::Duration>,

    /// --http: most MCP sessions at once. A new one beyond it ends the least
    /// recently used idle session, or gets 503 when every session is busy.
    #[arg(long, value_name = "N", default_value_t = dshkit_mcp::DEFAULT_MAX_SESSIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_sessions: usize,

    /// --http: most connections at once. A new one beyond it replaces the oldest
    /// connection with no request in flight, or gets 503 when all are serving.
    #[arg(long, value_name = "N", default_value_t = dshkit_mcp::DEFAULT_MAX_CONNECTIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_connections: usize,

    /// --http: a connection that does not send a full request head this soon (of
    /// its first byte, or of its previous response) is closed (default 10s).
    #[arg(long, value_name = "DURATION", value_parser = nonzero_seconds)]
    pub(crate) header_timeout: Option<std::time::Duration>,

    /// Use the browser pool (or browser) at this DevTools WebSocket (browserless:
    /// `ws://host:3000/chromium`) instead of launching Chromium: one connection per
    /// preview; its token from DSHKIT_BROWSER_POOL_TOKEN or `browserPoolTokenFile`.
    #[arg(long, value_name = "URL", conflicts_with = "browser_url")]
    pub(crate) browser_ws: Option<String>,

    /// Use the browser whose HTTP debugging endpoint is URL (`http://host:port`).
    #[arg(long, value_name = "URL")]
    pub(crate) browser_url: Option<String>,

    /// An external host previews may load from (repeatable); its addresses are
    /// checked after DNS resolution and private ones are refused.
    #[arg(long = "allow-external-host", value_name = "HOST")]
    pub(crate) allow_external_hosts: Vec<String>,

    /// The workspace LiveLoop's app tools detect, run and verify in (default: the
    /// current directory); paths never leave it.
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Let liveloop_runtime start dev servers without a per-call confirm: true.
    #[arg(long)]
    pub(crate) allow_run: bool,

    /// Screenshots as MCP image content: `auto` when a call asks (`image: true`),
    /// `always` unless a call says `image: false`, `never` for hosts whose models
    /// read text only. Images are fitted to 1280 px wide, 2000 px tall and 1 MB.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t)]
    pub(crate) images: crate::tools::ImagePolicy,

    /// Where Cordis DevTools collectors register their targets (default:
    /// `<DSH home>/dshkit-devtools`).
    #[arg(long, value_name = "DIR")]
    pub(crate) devtools_dir: Option<PathBuf>,

    /// Longest a tool call may run (default 5m).
    #[arg(long, value_name = "DURATION", value_parser = nonzero_seconds)]
    pub(crate) tool_timeout: Option<std::time::Duration>,

    /// Print the tools (as `tools/list` gives them) and the prompts as JSON, then exit
    /// without serving.
    #[arg(long, conflicts_with_all = ["stdio", "http"])]
    pub(crate) describe: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DshCommand {
    /// Print the `@deepseek-ai/dsh-mcp-client` row that connects a DSH profile to dshkit.
    McpRow(RowArgs),
    /// Add that row to a profile's cordis.patch.yml (atomic, idempotent, with a backup).
    Connect(ConnectArgs),
    /// Install the native DSH plugin (approvals, screenshots as attachments, guidance,
    /// skills) into a profile, replacing a `connect` row; proves the profile still boots.
    Install(InstallArgs),
    /// Remove what `install` wrote (the plugin, its link, its patch row); evidence is kept.
    Uninstall(UninstallArgs),
}

#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line switches, each its own flag"
)]
pub(crate) struct InstallArgs {
    /// The profile to install into.
    #[arg(long, default_value = "web")]
    pub(crate) profile: String,

    /// DSH home (default: $DSH_HOME, else ~/.dsh).
    #[arg(long, value_name = "DIR")]
    pub(crate) dsh_home: Option<PathBuf>,

    /// Skip the boot proof (`dshkit check --live` on the profile). Without it, an
    /// install whose profile does not boot, or cannot be booted here, is rolled back.
    #[arg(long)]
    pub(crate) no_boot_check: bool,

    /// Run the Cordis DevTools collector inside DSH: the `devtools` tools of any
    /// `dshkit mcp` on this machine can then attach to the running DSH.
    #[arg(long)]
    pub(crate) devtools: bool,

    /// Also let those tools run leased experiments (profiling one event's
    /// listeners for at most 60 s; the collector ends a lease itself). Implies
    /// --devtools.
    #[arg(long)]
    pub(crate) devtools_experiments: bool,

    /// Serve the DevTools endpoint for MCP hosts outside DSH (`dshkit devtools
    /// serve`, the row's devtools.mcp.enabled) at ADDR, or `on` for
    /// 127.0.0.1:43127. Default: off.
    #[arg(long, value_name = "ADDR|on|off", value_parser = endpoint_address)]
    pub(crate) devtools_endpoint: Option<String>,

    /// With the collector: one that cannot start fails the plugin, and so the
    /// boot proof, instead of being reported and left off.
    #[arg(long)]
    pub(crate) fail_on_startup_error: bool,

    /// An Echo registry (JSON: `{"rootDir": DIR, "cassettes": [{"id", "path",
    /// "server", "mode"}]}`): DSH's calls to those servers carry `meta.dshCassette`
    /// and show in the Echo tab. Refused, with its rule, when a path leaves the root.
    #[arg(long, value_name = "FILE")]
    pub(crate) echo: Option<PathBuf>,
}

/// A loopback socket address, `on` or `off`.
fn endpoint_address(text: &str) -> Result<String, String> {
    if text == "off" || text == "on" {
        return Ok(text.to_owned());
    }
    let address: SocketAddr = text
        .parse()
        .map_err(|e| format!("{e}: give IP:PORT, on or off"))?;
    if !address.ip().is_loopback() {
        return Err("the DevTools endpoint listens on loopback only".into());
    }
    Ok(address.to_string())
}

#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// The profile to remove the plugin from.
    #[arg(long, default_value = "web")]
    pub(crate) profile: String,

    /// DSH home (default: $DSH_HOME, else ~/.dsh).
    #[arg(long, value_name = "DIR")]
    pub(crate) dsh_home: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RowArgs {
    /// Connect to a running `dshkit mcp --http` at URL instead of spawning dshkit over stdio.
    #[arg(long, value_name = "URL")]
    pub(crate) http: Option<String>,

    /// Token file of that HTTP server (default: the server's default token file).
    #[arg(long, value_name = "PATH", requires = "http")]
    pub(crate) token_file: Option<PathBuf>,

    /// DSH home to pass to the stdio server as DSH_HOME (DSH strips DSH_* variables
    /// from its children). Default: $DSH_HOME, else ~/.dsh.
    #[arg(long, value_name = "DIR")]
    pub(crate) dsh_home: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ConnectArgs {
    /// The profile to connect.
    #[arg(long, default_value = "web")]
    pub(crate) profile: String,

    #[command(flatten)]
    pub(crate) row: RowArgs,
}

#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one documented input of plugin_check"
)]
pub(crate) struct CheckArgs {
    /// DSH home (default: $DSH_HOME, else ~/.dsh).
    #[arg(long, value_name = "DIR")]
    pub(crate) dsh_home: Option<PathBuf>,
    /// The profile to check.
    #[arg(long, default_value = "web")]
    pub(crate) profile: String,
    /// Check one local plugin only.
    #[arg(long, value_name = "PLUGIN")]
    pub(crate) target: Option<String>,
    /// Boot an isolated instance and prove it shuts down.
    #[arg(long)]
    pub(crate) live: bool,
    /// Also load the booted page in Chromium (implies --live).
    #[arg(long)]
    pub(crate) page: bool,
    /// Only audit leftover DSH instances.
    #[arg(long)]
    pub(crate) sweep: bool,
    /// Kill leaked and old smoke instances during the audit (never hosts).
    #[arg(long)]
    pub(crate) kill_stray: bool,
    /// How old a smoke instance must be to count as a stray (default 10m: a
    /// younger one may belong to a check still running).
    #[arg(long = "stray-age", alias = "stray-age-secs", value_name = "DURATION", value_parser = seconds)]
    pub(crate) stray_age: Option<std::time::Duration>,
    /// Boot against a temporary mirror of the profile.
    #[arg(long)]
    pub(crate) isolate_home: bool,
    /// Longest the boot may take to print its URL (e.g. 60s).
    #[arg(long = "boot-timeout", alias = "boot-timeout-ms", value_name = "DURATION", value_parser = millis)]
    pub(crate) boot_timeout: Option<std::time::Duration>,
    /// How long the booted instance is watched (e.g. 3s).
    #[arg(long = "observe", alias = "observe-ms", value_name = "DURATION", value_parser = millis)]
    pub(crate) observe: Option<std::time::Duration>,
    /// Print the plugin-fault-diagnosis playbook and exit.
    #[arg(long)]
    pub(crate) explain: bool,
    /// Also write the findings as SARIF 2.1.0 to FILE (atomically), for
    /// code-scanning UIs: rule id, level, message, file:line:column.
    #[arg(long, value_name = "FILE")]
    pub(crate) sarif: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SettingsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<SettingsCommand>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SettingsCommand {
    /// Change settings: `--fields '{"quietWindowMs": "250"}'` changes the settings
    /// named (a value as typed; "" or null restores the default) and keeps the
    /// others; `--value '{...}'` replaces them all (`{}` restores every default).
    /// Validated; nothing is written when any value breaks its rule, and every
    /// broken rule is named. A running `dshkit mcp` applies it at its next call.
    #[command(group(clap::ArgGroup::new("change").required(true).args(["fields", "value"])))]
    Set {
        /// The settings to change, as a JSON object; the others are kept.
        #[arg(long, value_name = "JSON")]
        fields: Option<String>,
        /// Every setting, as a JSON object; those left out return to their defaults.
        #[arg(long, value_name = "JSON")]
        value: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DevtoolsArgs {
    /// The target (from `dshkit devtools targets`); default: the only live one.
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) target: Option<String>,

    /// Where collectors register (default: <DSH home>/dshkit-devtools).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) devtools_dir: Option<PathBuf>,

    /// The DevTools endpoint (loopback only) that targets, snapshot, event,
    /// fiber, watch and profile call as an MCP client; also the bridge's.
    /// Default: $DSH_CORDIS_DEBUG_ENDPOINT, else the URL in <devtools
    /// dir>/endpoint; with none, they attach to the collector's socket directly.
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) endpoint: Option<String>,

    /// The endpoint's token file. Default: $DSH_CORDIS_DEBUG_TOKEN (the token
    /// itself), else <devtools dir>/token.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: DevtoolsCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DevtoolsCommand {
    /// List the live targets: DSH processes running the collector.
    Targets,
    /// The runtime now: counts, candidates (facts to look at, never causes).
    Snapshot,
    /// One event's listeners in dispatch order.
    Event {
        /// The event name, e.g. internal/config.
        name: String,
    },
    /// Fibers by uid or name.
    Fiber {
        /// The fiber with this uid.
        #[arg(long, conflicts_with = "name", required_unless_present = "name")]
        uid: Option<i64>,
        /// The fibers with this name (names repeat: a plugin loaded twice).
        #[arg(long)]
        name: Option<String>,
    },
    /// Print runtime changes (dispatches, topology, experiments) as they happen,
    /// until Ctrl-C or --for.
    Watch {
        /// Only records of this event.
        #[arg(long)]
        event: Option<String>,
        /// Stop after this long (e.g. 30s, 2m).
        #[arg(long = "for", value_name = "DURATION", value_parser = seconds)]
        duration: Option<std::time::Duration>,
    },
    /// Save a digest of the runtime's shape (fibers, events, services, entries).
    Checkpoint {
        /// Where to write it (default: <devtools dir>/checkpoints/<target>.json).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// What was added, removed and changed since a checkpoint.
    Compare {
        /// The checkpoint file (default: the target's last `dshkit devtools checkpoint`).
        file: Option<PathBuf>,
    },
    /// Profile one event's listeners for a finite window (a leased experiment
    /// held for the whole window), then print the traces. Ctrl-C stops early.
    Profile {
        /// The event, e.g. internal/config.
        event: String,
        /// How long to profile (at most 60s).
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = seconds)]
        ttl: std::time::Duration,
        /// Also write the traces as Chrome trace event JSON (Perfetto, chrome://tracing).
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
    },
    /// Emergency stop: end whatever experiment runs in the target, whoever started it.
    Stop,
    /// The DevTools endpoint: `dshkit mcp --http` with the devtools tools only, its
    /// bearer token in <devtools dir>/token (0600), Host and Origin checked. One
    /// endpoint serves every target in the registry.
    Serve {
        /// Where to listen (loopback only).
        #[arg(long, default_value = "127.0.0.1:43127", value_name = "ADDR")]
        listen: SocketAddr,
        /// Stop when stdin reaches its end (how the DSH plugin ties the endpoint's
        /// life to DSH's).
        #[arg(long)]
        exit_on_stdin_eof: bool,
    },
    /// A stdio MCP server that forwards to the endpoint (--endpoint, else the URL
    /// in <devtools dir>/endpoint, else http://127.0.0.1:43127/mcp), for hosts
    /// that only speak stdio. It reads the token file itself at each session the
    /// host opens (never shows it) and never retries a failed call.
    Bridge,
    /// Replace the endpoint's token (a running endpoint keeps the old one until it
    /// restarts).
    RotateToken,
    /// Install the dshkit plugin into a DSH profile with the collector on
    /// (`dshkit dsh install --devtools`, with its boot proof); restart the profile
    /// after.
    Setup {
        /// The profile to install into.
        #[arg(long, default_value = "web")]
        profile: String,
        /// DSH home (default: $DSH_HOME, else ~/.dsh).
        #[arg(long, value_name = "DIR")]
        dsh_home: Option<PathBuf>,
        /// Also allow leased experiments (profiling one event for at most 60 s).
        #[arg(long)]
        experiments: bool,
        /// Serve the DevTools endpoint for MCP hosts outside DSH at ADDR, or `on`
        /// for 127.0.0.1:43127. Default: off.
        #[arg(long, value_name = "ADDR|on|off", value_parser = endpoint_address)]
        endpoint: Option<String>,
        /// Skip the boot proof.
        #[arg(long)]
        no_boot_check: bool,
        /// A collector that cannot start fails the plugin (and the boot proof).
        #[arg(long)]
        fail_on_startup_error: bool,
        /// Also register the bridge (`dsh-devtools`) with this MCP host, once the
        /// install succeeded; repeatable. claude-code: <project>/.mcp.json;
        /// codex: $CODEX_HOME/config.toml, else ~/.codex/config.toml. Needs the
        /// endpoint (--endpoint, `on` when not given).
        #[arg(long = "agent", value_name = "HOST", value_parser = ["claude-code", "codex"])]
        agents: Vec<String>,
        /// The project whose .mcp.json claude-code reads (default: here).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
    },
    /// Check the DevTools set-up: the private directory and its modes, the live
    /// targets (each attached once), the endpoint and its token. Exits 1 when
    /// something is wrong.
    Doctor,
}

/// A duration (`500ms`, `30s`, `2m`); a bare number is seconds.
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    dshkit_env::duration::parse(text, dshkit_env::duration::BareUnit::Seconds)
}

/// [`seconds`], above zero.
fn nonzero_seconds(text: &str) -> Result<std::time::Duration, String> {
    seconds(text).and_then(|d| {
        if d.is_zero() {
            Err("must be above zero".into())
        } else {
            Ok(d)
        }
    })
}

/// A duration; a bare number is milliseconds (the flag's older `-ms` spelling).
fn millis(text: &str) -> Result<std::time::Duration, String> {
    dshkit_env::duration::parse(text, dshkit_env::duration::BareUnit::Millis)
}

#[cfg(test)]
mod tests;
