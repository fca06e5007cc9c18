//! The dshkit binary's library: command-line parsing, commands, and the MCP tool
//! routers that adapt the capability crates to MCP tool families.
//!
//! `main.rs` only calls [`main`].

mod cli;
mod commands;
mod config;
pub mod exit;
mod output;
mod tools;

use std::ffi::OsString;
use std::process::ExitCode;

pub use tools::{ToolsConfig, all_families};

/// Runs dshkit with `args` (including the program name) and returns its exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match cli::Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout; a closed pipe there is not an error.
            let _ = err.print();
            let code = u8::try_from(err.exit_code()).unwrap_or(exit::USAGE);
            if err.use_stderr() && args.iter().any(|a| a == "--json") {
                output::Output::new(true, dshkit_env::terminal::ColorChoice::Never, false)
                    .json(&serde_json::json!({ "error": usage_json(&err, code) }));
            }
            return exit::code(code);
        }
    };
    let env = dshkit_env::Environment::from_process();
    let colored_stderr = {
        use std::io::IsTerminal;
        dshkit_env::terminal::colored(cli.color.into(), &env, std::io::stderr().is_terminal())
    };
    init_logging(
        &dshkit_env::terminal::log_filter(cli.quiet, cli.verbose, &env),
        colored_stderr,
    );
    let out = output::Output::new(cli.json, cli.color.into(), cli.quiet);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return report(&exit::Failure::runtime(err), out),
    };
    let result = runtime.block_on(async move {
        match cli.command {
            cli::Command::Mcp(args) => commands::mcp::run(args, out).await,
            cli::Command::Doctor => Ok(commands::doctor::run(out).await),
            cli::Command::Dsh(command) => commands::dsh::run(command, out).await,
            cli::Command::Check(args) => commands::check::run(args, out).await,
            cli::Command::Detect(args) => commands::liveloop::detect_command(&args, out),
            cli::Command::Run(args) => commands::liveloop::run_command(args, out).await,
            cli::Command::Verify(args) => commands::liveloop::verify_command(args, out).await,
            cli::Command::Report(args) => commands::report::run(&args, out),
            cli::Command::Echo(command) => commands::echo::run(command, out).await,
            cli::Command::Settings(args) => commands::settings::run(args, out),
            cli::Command::Devtools(args) => commands::devtools::run(args, out).await,
            cli::Command::Completions { shell, .. } => commands::completions(shell, out),
        }
    });
    output::end_progress();
    // Do not wait for stray blocking tasks (a stdin read) once the command is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => exit::code(code),
        Err(failure) => report(&failure, out),
    }
}

pub use output::FORMAT_VERSION;

/// The one error path: the cause once on stderr, and under `--json` the error
/// as an object on stdout, `{formatVersion, error: {code, message, exitCode,
/// hint?, ...}}`, with the same exit code.
fn report(failure: &exit::Failure, out: output::Output) -> ExitCode {
    let message = dshkit_os::error::each_cause_once(failure.error.as_ref());
    tracing::debug!(error = %message, "command failed");
    output::stderr_line(&format!("dshkit: error: {message}"));
    if out.json {
        out.json(&serde_json::json!({ "error": error_json(failure) }));
    }
    exit::code(failure.code)
}

/// A failure as JSON: a LiveLoop refusal with its fields (candidates, the next
/// action as `hint`), a settings refusal with each broken rule, else its code.
fn error_json(failure: &exit::Failure) -> serde_json::Value {
    let refusal = failure
        .error
        .downcast_ref::<dshkit_liveloop::workflow::render::Refusal>();
    let mut error = match refusal {
        Some(refusal) => {
            let mut error = serde_json::to_value(refusal).unwrap_or_default();
            if let Some(next) = &refusal.next_action {
                error["hint"] = serde_json::json!(next);
            }
            error
        }
        None => serde_json::json!({
            "code": failure
                .name
                .or_else(|| failure.error.downcast_ref::<dshkit_env::settings::SettingsError>().map(dshkit_env::settings::SettingsError::code))
                .unwrap_or(if failure.code == exit::REFUSED { "REFUSED" } else { "RUNTIME_ERROR" }),
            "message": dshkit_os::error::each_cause_once(failure.error.as_ref()),
        }),
    };
    let problems = failure
        .error
        .downcast_ref::<dshkit_env::settings::SettingsError>()
        .map(dshkit_env::settings::SettingsError::problems)
        .or_else(|| {
            failure
                .error
                .downcast_ref::<config::BrokenSettings>()
                .map(config::BrokenSettings::problems)
        });
    if let Some(problems) = problems {
        error["problems"] = serde_json::json!(problems);
    }
    error["exitCode"] = serde_json::json!(failure.code);
    error
}

/// A command line clap refused, as the JSON error object: its first line as the
/// message, the usage and the way to help as the hint.
fn usage_json(err: &clap::Error, code: u8) -> serde_json::Value {
    let text = err.render().to_string();
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    serde_json::json!({
        "code": "USAGE",
        "message": first.trim_start_matches("error: ").trim(),
        "hint": rest.trim(),
        "exitCode": code,
    })
}

/// Logs go to stderr only: stdout carries MCP frames or command results. The
/// filter and colour come from `dshkit_env::terminal` (flags, then environment).
fn init_logging(filter: &str, ansi: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rustls_platform_verifier=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log line that cannot be written is lost quietly: reporting it would
        // `eprintln!` to the same broken stderr and panic the logging task.
        .log_internal_errors(false)
        .with_ansi(ansi)
        .with_target(false)
        .try_init();
}
