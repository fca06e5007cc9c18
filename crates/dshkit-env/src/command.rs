//! Running a probe command with a time limit and a cap on what it may print.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use dshkit_os::error::ErrorClass;
use tokio::io::AsyncReadExt;

/// Longest a version probe (`chromium --version`) may run.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(15);
/// Most stdout bytes kept from a probe.
pub const DEFAULT_PROBE_OUTPUT_BYTES: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    #[error("failed to start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} did not answer within {seconds}s")]
    Timeout { program: String, seconds: u64 },
    #[error("{program} exited with {status}")]
    Failed { program: String, status: String },
}

impl ProbeError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Spawn { .. } => "PROBE_SPAWN_FAILED",
            Self::Timeout { .. } => "PROBE_TIMEOUT",
            Self::Failed { .. } => "PROBE_FAILED",
        }
    }

    /// A probe that could not start, answer or succeed failed while it ran.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Runtime
    }
}

dshkit_os::classified!(ProbeError);

/// Runs `program args…` with stdin closed and returns the first
/// [`DEFAULT_PROBE_OUTPUT_BYTES`] of stdout. The child is killed on timeout.
pub async fn probe_output(program: &Path, args: &[&str], timeout: Duration) -> Result<String, ProbeError> {
    let name = program.display().to_string();
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ProbeError::Spawn {
            program: name.clone(),
            source,
        })?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let work = async {
        let mut buf = Vec::with_capacity(256);
        let _ = (&mut stdout)
            .take(DEFAULT_PROBE_OUTPUT_BYTES as u64)
            .read_to_end(&mut buf)
            .await;
        drop(stdout);
        (child.wait().await, buf)
    };
    let (status, buf) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| ProbeError::Timeout {
            program: name.clone(),
            seconds: timeout.as_secs(),
        })?;
    let status = status.map_err(|source| ProbeError::Spawn {
        program: name.clone(),
        source,
    })?;
    if !status.success() {
        return Err(ProbeError::Failed {
            program: name,
            status: status.to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The first dotted version number in `text`, e.g. `156.0.8078.114` or `22.23.3`.
pub fn parse_version(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .map(|word| word.trim_start_matches('v'))
        .find(|word| {
            word.contains('.')
                && word.chars().next().is_some_and(|c| c.is_ascii_digit())
                && word.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_is_a_runtime_failure() {
        let table = [
            (
                ProbeError::Spawn {
                    program: "node".into(),
                    source: std::io::ErrorKind::NotFound.into(),
                },
                "PROBE_SPAWN_FAILED",
            ),
            (
                ProbeError::Timeout {
                    program: "node".into(),
                    seconds: 15,
                },
                "PROBE_TIMEOUT",
            ),
            (
                ProbeError::Failed {
                    program: "node".into(),
                    status: "exit status: 1".into(),
                },
                "PROBE_FAILED",
            ),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), ErrorClass::Runtime, "{error}");
        }
    }

    #[test]
    fn versions_are_found_in_real_banners() {
        assert_eq!(
            parse_version("Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)").as_deref(),
            Some("156.0.8078.114")
        );
        assert_eq!(parse_version("v22.23.3\n").as_deref(), Some("22.23.3"));
        assert_eq!(
            parse_version("Google Chrome 131.0.6778.85 ").as_deref(),
            Some("131.0.6778.85")
        );
        assert_eq!(parse_version("no version here"), None);
    }

    #[tokio::test]
    async fn a_hanging_probe_is_killed_at_its_deadline() {
        // This test binary, running the helper below: a program that hangs on
        // every platform.
        let this = std::env::current_exe().unwrap();
        let hang = [
            "--exact",
            "command::tests::hang_helper",
            "--ignored",
            "--nocapture",
        ];
        let err = probe_output(&this, &hang, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, ProbeError::Timeout { .. }), "{err}");
    }

    /// Not a test: the hanging program of the test above.
    #[test]
    #[ignore = "run as a child process by a_hanging_probe_is_killed_at_its_deadline"]
    fn hang_helper() {
        std::thread::sleep(Duration::from_mins(10));
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let err = probe_output(Path::new("/nonexistent/chromium"), &[], DEFAULT_PROBE_TIMEOUT)
            .await
            .unwrap_err();
        assert!(matches!(err, ProbeError::Spawn { .. }), "{err}");
    }
}
