//! Is the DevTools set-up on this machine sound? Each fact is `ok`, `warn`
//! (nothing broken, but nothing to debug either) or `fail` (something a person
//! must fix): the registry directory and its modes, each live target attached
//! once, the endpoint for hosts outside DSH (an authenticated `tools/list`)
//! and its token.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::client::{ClientError, McpClient, TokenSource};
use crate::core::DebugCore;
use crate::endpoint::{TOKEN_FILE, URL_FILE};
use crate::error::DebugError;

/// Live targets attached to, at most (the rest are only counted).
pub const MAX_TARGETS_CHECKED: usize = 8;
/// How long one target's attach and question, or the endpoint's connect, may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// How a word of the text is shown where colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Good,
    Caution,
    Bad,
    Quiet,
}

#[derive(Debug, Serialize)]
pub struct Fact {
    pub id: &'static str,
    pub status: Status,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The doctor's answer: no fact failed is `ok`.
#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub registry: PathBuf,
    pub ok: bool,
    pub facts: Vec<Fact>,
}

fn fact(id: &'static str, status: Status, summary: String, fix: Option<&str>) -> Fact {
    Fact {
        id,
        status,
        summary,
        fix: fix.map(str::to_owned),
    }
}

impl DoctorReport {
    /// The text `dshkit devtools doctor` prints; `paint` colours a word in a tone.
    pub fn text(&self, paint: impl Fn(&str, Tone) -> String) -> String {
        let mut text = format!(
            "dshkit devtools doctor ({}): {}\n",
            self.registry.display(),
            if self.ok {
                paint("no problem found", Tone::Good)
            } else {
                paint("problems found", Tone::Bad)
            }
        );
        for f in &self.facts {
            let (word, tone) = match f.status {
                Status::Ok => ("ok", Tone::Good),
                Status::Warn => ("warn", Tone::Caution),
                Status::Fail => ("fail", Tone::Bad),
            };
            text.push_str(&format!(
                "  {} {:<10} {}\n",
                paint(&format!("{word:<5}"), tone),
                f.id,
                f.summary
            ));
            if let Some(fix) = &f.fix {
                text.push_str(&format!(
                    "  {:<5} {:<10} {}\n",
                    "",
                    "",
                    paint(&format!("fix: {fix}"), Tone::Quiet)
                ));
            }
        }
        text
    }
}

/// Every fact about the DevTools registry `registry`.
pub async fn diagnose(registry: &Path) -> DoctorReport {
    let facts = facts(registry).await;
    DoctorReport {
        registry: registry.to_owned(),
        ok: facts.iter().all(|f| f.status != Status::Fail),
        facts,
    }
}

async fn facts(registry: &Path) -> Vec<Fact> {
    let mut facts = Vec::new();
    let Ok(meta) = std::fs::metadata(registry) else {
        facts.push(fact(
            "directory",
            Status::Warn,
            format!(
                "{} does not exist: no DSH has run the collector here",
                registry.display()
            ),
            Some("dshkit devtools setup --profile web, then restart that DSH profile"),
        ));
        return facts;
    };
    facts.push(private_mode(
        "directory",
        registry,
        &meta,
        0o700,
        "private to its owner",
    ));
    let targets_dir = registry.join("targets");
    if let Ok(entries) = std::fs::read_dir(&targets_dir) {
        for entry in entries.flatten().take(64) {
            if let Ok(meta) = entry.metadata()
                && dshkit_os::fs::open_to_others(&meta)
            {
                facts.push(private_mode("registry", &entry.path(), &meta, 0o600, ""));
            }
        }
    }
    facts.extend(targets(registry).await);
    facts.extend(endpoint(registry).await);
    facts
}

fn private_mode(
    id: &'static str,
    path: &Path,
    metadata: &std::fs::Metadata,
    wanted: u32,
    ok_text: &str,
) -> Fact {
    if dshkit_os::fs::open_to_others(metadata) {
        fact(
            id,
            Status::Fail,
            format!("{} is open to other users", path.display()),
            Some(&format!("chmod {wanted:o} {}", path.display())),
        )
    } else {
        fact(id, Status::Ok, format!("{} is {ok_text}", path.display()), None)
    }
}

/// The live targets, each attached once (at most [`MAX_TARGETS_CHECKED`]).
async fn targets(registry: &Path) -> Vec<Fact> {
    let core = DebugCore::new(registry.to_owned());
    let listed = core.targets();
    if listed.is_empty() {
        return vec![fact(
            "targets",
            Status::Warn,
            "no live target: no DSH running the collector lists itself here".into(),
            Some("start DSH with a profile set up by `dshkit devtools setup`"),
        )];
    }
    let mut facts = vec![fact(
        "targets",
        Status::Ok,
        format!(
            "{} live target(s){}",
            listed.len(),
            if listed.len() > MAX_TARGETS_CHECKED {
                format!(", the first {MAX_TARGETS_CHECKED} checked")
            } else {
                String::new()
            }
        ),
        None,
    )];
    for target in listed.iter().take(MAX_TARGETS_CHECKED) {
        let probe = async {
            let attached = core.attach(Some(&target.id)).await?;
            let status = core.experiment_status(&attached.session).await;
            let _ = core.detach(&attached.session).await;
            status
        };
        facts.push(match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Ok(status)) => fact(
                "target",
                Status::Ok,
                format!(
                    "{} ({}, pid {}) answers; experiments {}",
                    target.id,
                    target.label,
                    target.pid,
                    if status["enabled"] == true { "on" } else { "off" }
                ),
                None,
            ),
            Ok(Err(error)) => fact(
                "target",
                Status::Fail,
                format!("{} ({}, pid {}): {error}", target.id, target.label, target.pid),
                Some(match &error {
                    DebugError::ProtocolMismatch { .. } => {
                        "install the DSH plugin again with this dshkit (`dshkit dsh install --devtools`) and restart that DSH"
                    }
                    _ => "restart that DSH; its collector does not answer",
                }),
            ),
            Err(_) => fact(
                "target",
                Status::Fail,
                format!(
                    "{} ({}, pid {}) did not answer within {} s",
                    target.id,
                    target.label,
                    target.pid,
                    PROBE_TIMEOUT.as_secs()
                ),
                Some("restart that DSH; its collector does not answer"),
            ),
        });
    }
    facts
}

/// The endpoint the plugin serves for hosts outside DSH, and its token: an
/// authenticated `initialize` and `tools/list`, the token never shown.
async fn endpoint(registry: &Path) -> Vec<Fact> {
    let url_file = registry.join(URL_FILE);
    let token_file = registry.join(TOKEN_FILE);
    let mut facts = Vec::new();
    match std::fs::read_to_string(&url_file) {
        Err(_) => facts.push(fact(
            "endpoint",
            Status::Warn,
            "no endpoint runs: hosts outside DSH cannot reach the tools (DSH's own model still can)".into(),
            Some("dshkit devtools setup --endpoint on (the row's devtools.mcp.enabled: true), then restart DSH; or run `dshkit devtools serve`"),
        )),
        Ok(url) => facts.push(discover(url.trim(), &url_file, &token_file).await),
    }
    match std::fs::metadata(&token_file) {
        Ok(meta) => facts.push(private_mode(
            "token",
            &token_file,
            &meta,
            0o600,
            "readable by its owner only",
        )),
        Err(_) if url_file.exists() => facts.push(fact(
            "token",
            Status::Fail,
            format!("{} is missing while the endpoint runs", token_file.display()),
            Some("dshkit devtools rotate-token, then restart DSH"),
        )),
        Err(_) => {}
    }
    facts
}

/// The endpoint at `url` asked, with the token of `token_file`, which tools it lists.
async fn discover(url: &str, url_file: &Path, token_file: &Path) -> Fact {
    let token = TokenSource::File(token_file.to_owned());
    let asked = tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut client = McpClient::connect(url, &token).await?;
        let names = client.tool_names().await;
        client.close().await;
        names
    })
    .await;
    match asked {
        Ok(Ok(names)) => {
            let devtools = names.iter().filter(|n| n.starts_with("cordis_")).count();
            if devtools == 0 {
                fact(
                    "endpoint",
                    Status::Fail,
                    format!("{url} answers, but lists no devtools tool: it is not a DevTools endpoint"),
                    Some("restart DSH, or remove the file it names"),
                )
            } else {
                fact(
                    "endpoint",
                    Status::Ok,
                    format!("{url} answers an authenticated tools/list: {devtools} devtools tools"),
                    None,
                )
            }
        }
        Ok(Err(error @ ClientError::Unauthorized(_))) => fact(
            "endpoint",
            Status::Fail,
            format!(
                "{url} refuses the token in {} (HTTP 401): {error}",
                token_file.display()
            ),
            Some(
                "`dshkit devtools rotate-token`, then restart DSH (or `dshkit devtools serve`) so the endpoint reads it",
            ),
        ),
        Ok(Err(error @ (ClientError::NoToken { .. } | ClientError::BadToken(_)))) => fact(
            "endpoint",
            Status::Fail,
            format!("{url} cannot be asked: {error}"),
            Some("dshkit devtools rotate-token, then restart DSH"),
        ),
        Ok(Err(error @ ClientError::NotLoopback(_))) => fact(
            "endpoint",
            Status::Fail,
            error.to_string(),
            Some(&format!(
                "remove {}; the endpoint listens on loopback only",
                url_file.display()
            )),
        ),
        Ok(Err(ClientError::Unreachable { .. })) => fact(
            "endpoint",
            Status::Fail,
            format!(
                "{} names {url}, but nothing accepts connections there (left by an endpoint that died?)",
                url_file.display()
            ),
            Some("restart DSH, or remove the file"),
        ),
        Ok(Err(error)) => fact(
            "endpoint",
            Status::Fail,
            error.to_string(),
            Some("restart DSH, or remove the file"),
        ),
        Err(_) => fact(
            "endpoint",
            Status::Fail,
            format!(
                "{url} did not answer tools/list within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
            Some("restart DSH, or remove the file"),
        ),
    }
}
