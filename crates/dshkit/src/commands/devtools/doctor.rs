//! `dshkit devtools doctor`: is the DevTools set-up on this machine sound? Each
//! fact is `ok`, `warn` (nothing broken, but nothing to debug either) or `fail`
//! (something a person must fix); the command exits 1 on any `fail`.

use std::path::Path;
use std::time::Duration;

use dshkit_devtools::{DebugCore, DebugError};
use serde::Serialize;
use serde_json::json;

use crate::exit;
use crate::output::{Color, Output};

/// Live targets attached to, at most (the rest are only counted).
const MAX_TARGETS_CHECKED: usize = 8;
/// How long one target's attach and question, or the endpoint's connect, may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
struct Fact {
    id: &'static str,
    status: Status,
    summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn fact(id: &'static str, status: Status, summary: String, fix: Option<&str>) -> Fact {
    Fact {
        id,
        status,
        summary,
        fix: fix.map(str::to_owned),
    }
}

pub(super) async fn run(registry: &Path, out: Output) -> u8 {
    let facts = diagnose(registry).await;
    let ok = facts.iter().all(|f| f.status != Status::Fail);
    if out.json {
        out.json(&json!({"registry": registry, "ok": ok, "facts": facts}));
    } else {
        let mut text = format!(
            "dshkit devtools doctor ({}): {}\n",
            registry.display(),
            if ok {
                out.paint("no problem found", Color::Green)
            } else {
                out.paint("problems found", Color::Red)
            }
        );
        for f in &facts {
            let (word, color) = match f.status {
                Status::Ok => ("ok", Color::Green),
                Status::Warn => ("warn", Color::Yellow),
                Status::Fail => ("fail", Color::Red),
            };
            text.push_str(&format!(
                "  {} {:<10} {}\n",
                out.paint(&format!("{word:<5}"), color),
                f.id,
                f.summary
            ));
            if let Some(fix) = &f.fix {
                text.push_str(&format!(
                    "  {:<5} {:<10} {}\n",
                    "",
                    "",
                    out.paint(&format!("fix: {fix}"), Color::Dim)
                ));
            }
        }
        out.write(&text);
    }
    if ok { exit::SUCCESS } else { exit::PROBLEM_FOUND }
}

async fn diagnose(registry: &Path) -> Vec<Fact> {
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

/// The endpoint the plugin serves for hosts outside DSH, and its token.
async fn endpoint(registry: &Path) -> Vec<Fact> {
    let url_file = registry.join(super::URL_FILE);
    let token_file = registry.join(super::TOKEN_FILE);
    let mut facts = Vec::new();
    match std::fs::read_to_string(&url_file) {
        Err(_) => facts.push(fact(
            "endpoint",
            Status::Warn,
            "no endpoint runs: hosts outside DSH cannot reach the tools (DSH's own model still can)".into(),
            Some("the plugin starts it with DSH unless set up with --endpoint off; or run `dshkit devtools serve`"),
        )),
        Ok(url) => {
            let url = url.trim().to_owned();
            let address = url
                .strip_prefix("http://")
                .and_then(|rest| rest.split('/').next())
                .map(str::to_owned)
                .unwrap_or_default();
            let reached =
                tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(address.as_str())).await;
            facts.push(match reached {
                Ok(Ok(_)) => fact("endpoint", Status::Ok, format!("{url} accepts connections"), None),
                _ => fact(
                    "endpoint",
                    Status::Fail,
                    format!(
                        "{} names {url}, but nothing accepts connections there (left by an endpoint that died?)",
                        url_file.display()
                    ),
                    Some("restart DSH, or remove the file"),
                ),
            });
        }
    }
    match std::fs::metadata(&token_file) {
        Ok(meta) => facts.push(private_mode(
            "token",
            &token_file,
            &meta,
            0o600,
            "readable by its owner only",
        )),
        Err(_) if facts.iter().any(|f| f.status == Status::Ok) => facts.push(fact(
            "token",
            Status::Fail,
            format!("{} is missing while the endpoint runs", token_file.display()),
            Some("dshkit devtools rotate-token, then restart DSH"),
        )),
        Err(_) => {}
    }
    facts
}
