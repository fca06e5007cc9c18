//! `dshkit doctor`: the facts every capability depends on, each with the exact fix
//! when it is missing.

use std::path::PathBuf;

use serde::Serialize;

use crate::command::{DEFAULT_PROBE_TIMEOUT, parse_version, probe_output};
use crate::env::Environment;
use crate::locate::{self, FoundBy, Lookup};
use crate::{disk, dsh};

/// Version of the doctor report format (`formatVersion`).
pub const DOCTOR_FORMAT_VERSION: u32 = 1;
/// DSH needs at least this Node.js (zstd session files, `stripTypeScriptTypes`).
pub const MIN_NODE_FOR_DSH: (u64, u64) = (22, 19);

/// What a fact says about readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// Usable, with a caveat the `summary` names.
    Warn,
    /// Not usable; `fix` says what to do.
    Missing,
}

/// One fact of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    /// Stable id: `chromium`, `node`, `dsh`, `dsh_home`, `evidence_root`, `disk`.
    pub id: &'static str,
    pub status: Status,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_by: Option<FoundBy>,
    /// Extra observations (profiles present, bytes free), short strings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// The exact command or setting that makes this fact `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Fact {
    fn new(id: &'static str, status: Status, summary: impl Into<String>) -> Self {
        Self {
            id,
            status,
            summary: summary.into(),
            path: None,
            version: None,
            found_by: None,
            details: Vec::new(),
            fix: None,
        }
    }

    fn located(mut self, located: &locate::Located) -> Self {
        self.path = Some(located.path.clone());
        self.found_by = Some(located.found_by);
        self
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// The whole report. `ok` is false when any fact is `missing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    pub format_version: u32,
    pub dshkit_version: String,
    pub ok: bool,
    pub facts: Vec<Fact>,
}

impl DoctorReport {
    pub fn fact(&self, id: &str) -> Option<&Fact> {
        self.facts.iter().find(|f| f.id == id)
    }

    /// One line per fact: `ok chromium 156.0.8078.114 /usr/bin/chromium`.
    pub fn compact_text(&self) -> String {
        let mut out = format!("dshkit doctor: {}\n", if self.ok { "ready" } else { "not ready" });
        for fact in &self.facts {
            out.push_str(&format!(
                "{:<7} {:<13} {}",
                status_word(fact.status),
                fact.id,
                fact.summary
            ));
            if let Some(fix) = &fact.fix {
                out.push_str(&format!(" | fix: {fix}"));
            }
            out.push('\n');
        }
        out
    }
}

pub fn status_word(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Warn => "warn",
        Status::Missing => "missing",
    }
}

/// Gathers every fact. Probes run concurrently; each is bounded by
/// [`DEFAULT_PROBE_TIMEOUT`]. The evidence root is created if absent (that is how
/// its writability is proven).
pub async fn diagnose(env: &Environment) -> DoctorReport {
    let (chromium, node) = tokio::join!(chromium_fact(env), node_fact(env));
    let node_version = node.version.clone();
    let mut facts = vec![
        chromium,
        node,
        dsh_fact(env, node_version.as_deref()),
        dsh_home_fact(env),
    ];
    facts.extend(evidence_facts(env));
    DoctorReport {
        format_version: DOCTOR_FORMAT_VERSION,
        dshkit_version: env!("CARGO_PKG_VERSION").to_owned(),
        ok: facts.iter().all(|f| f.status != Status::Missing),
        facts,
    }
}

fn chromium_install_fix() -> String {
    dshkit_os::browsers::CHROMIUM_INSTALL_HINT.into()
}

const NODE_INSTALL_FIX: &str = "npm install --prefix ~/.local/share/dshkit/node node@22.23.3 && export PATH=~/.local/share/dshkit/node/node_modules/.bin:$PATH";

fn bad_variable(id: &'static str, what: &str, variable: &str, value: &std::path::Path) -> Fact {
    Fact::new(
        id,
        Status::Missing,
        format!("{variable}={} is not an executable {what}", value.display()),
    )
    .fix(format!(
        "point {variable} at an executable {what}, or unset it to search the usual places"
    ))
}

async fn chromium_fact(env: &Environment) -> Fact {
    match locate::chromium(env) {
        Lookup::NotFound => Fact::new("chromium", Status::Missing, "no Chromium, Chrome or Edge found")
            .fix(chromium_install_fix()),
        Lookup::BadVariable { variable, value } => bad_variable("chromium", "browser", variable, &value),
        Lookup::Found(found) => {
            match probe_output(&found.path, &["--version"], DEFAULT_PROBE_TIMEOUT).await {
                Ok(banner) => {
                    let version = parse_version(&banner);
                    let mut fact = Fact::new(
                        "chromium",
                        Status::Ok,
                        format!(
                            "{} {}",
                            version.as_deref().unwrap_or("unknown version"),
                            found.path.display()
                        ),
                    )
                    .located(&found);
                    fact.version = version;
                    fact
                }
                Err(err) => Fact::new("chromium", Status::Missing, format!("found but unusable: {err}"))
                    .located(&found)
                    .fix(chromium_install_fix()),
            }
        }
    }
}

async fn node_fact(env: &Environment) -> Fact {
    match locate::node(env) {
        Lookup::NotFound => Fact::new("node", Status::Missing, "no node on PATH").fix(NODE_INSTALL_FIX),
        Lookup::BadVariable { variable, value } => bad_variable("node", "Node.js", variable, &value),
        Lookup::Found(found) => {
            match probe_output(&found.path, &["--version"], DEFAULT_PROBE_TIMEOUT).await {
                Ok(banner) => {
                    let version = parse_version(&banner);
                    let recent = version.as_deref().is_some_and(meets_dsh_minimum);
                    let summary = format!(
                        "{} {}",
                        version.as_deref().unwrap_or("unknown version"),
                        found.path.display()
                    );
                    let mut fact = if recent {
                        Fact::new("node", Status::Ok, summary)
                    } else {
                        let (major, minor) = MIN_NODE_FOR_DSH;
                        Fact::new(
                            "node",
                            Status::Warn,
                            format!("{summary}; DSH needs Node >= {major}.{minor}"),
                        )
                        .fix(NODE_INSTALL_FIX)
                    }
                    .located(&found);
                    fact.version = version;
                    fact
                }
                Err(err) => Fact::new("node", Status::Missing, format!("found but unusable: {err}"))
                    .located(&found)
                    .fix(NODE_INSTALL_FIX),
            }
        }
    }
}

/// Whether a Node version string is at least [`MIN_NODE_FOR_DSH`].
pub fn meets_dsh_minimum(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= MIN_NODE_FOR_DSH
}

const DSH_INSTALL_FIX: &str = "install DSH with Node >= 22.19 as docs/dsh.md shows, then put `dsh` on PATH or set DSHKIT_DSH=/path/to/node_modules/.bin/dsh";

fn dsh_fact(env: &Environment, node_version: Option<&str>) -> Fact {
    let found = match locate::dsh(env) {
        Lookup::NotFound => return Fact::new("dsh", Status::Missing, "no dsh on PATH").fix(DSH_INSTALL_FIX),
        Lookup::BadVariable { variable, value } => {
            return bad_variable("dsh", "DSH launcher", variable, &value);
        }
        Lookup::Found(found) => found,
    };
    let Some((package, version)) = dsh::package_of_launcher(&found.path) else {
        return Fact::new(
            "dsh",
            Status::Missing,
            format!(
                "{} is not a launcher of the {} package",
                found.path.display(),
                dsh::DSH_PACKAGE
            ),
        )
        .located(&found)
        .fix(DSH_INSTALL_FIX);
    };
    let node_ok = node_version.is_some_and(meets_dsh_minimum);
    let mut fact = if node_ok {
        Fact::new(
            "dsh",
            Status::Ok,
            format!("{} {version} at {}", dsh::DSH_PACKAGE, package.display()),
        )
    } else {
        Fact::new(
            "dsh",
            Status::Warn,
            format!(
                "{} {version} installed, but the node found is too old to run it",
                dsh::DSH_PACKAGE
            ),
        )
        .fix(NODE_INSTALL_FIX)
    }
    .located(&found);
    fact.version = Some(version);
    fact.details.push(format!("package: {}", package.display()));
    fact
}

fn dsh_home_fact(env: &Environment) -> Fact {
    let Some(home) = dsh::home(env) else {
        return Fact::new("dsh_home", Status::Warn, "neither DSH_HOME nor HOME is set")
            .fix("export DSH_HOME=~/.dsh");
    };
    let profiles = dsh::profiles(&home);
    let mut fact = if profiles.is_empty() {
        Fact::new(
            "dsh_home",
            Status::Warn,
            format!("{} has no profiles yet", home.display()),
        )
        .fix("dsh web --dump-default-config (creates the web profile)")
    } else {
        Fact::new(
            "dsh_home",
            Status::Ok,
            format!("{} with profiles: {}", home.display(), profiles.join(", ")),
        )
    };
    fact.path = Some(home);
    fact.details = profiles.into_iter().map(|p| format!("profile: {p}")).collect();
    fact
}

fn evidence_facts(env: &Environment) -> Vec<Fact> {
    let fix = "dshkit settings set --fields '{\"evidenceRoot\": \"/a/writable/directory\"}' (or export DSHKIT_EVIDENCE_ROOT=/a/writable/directory)";
    // The settings' root where the file is readable (a broken file is the
    // business of the commands that use it), else the default.
    let resolved = crate::resolve::resolve(
        env,
        crate::resolve::Flags::default(),
        crate::resolve::SettingsFile::Read,
    );
    let Some(root) = resolved
        .ok()
        .and_then(|r| r.evidence_root)
        .or_else(|| disk::evidence_root(env))
    else {
        return vec![
            Fact::new(
                "evidence_root",
                Status::Missing,
                "no evidence root: no home (HOME, or USERPROFILE on Windows) and no state directory (XDG_STATE_HOME on Linux, LOCALAPPDATA on Windows)",
            )
            .fix(fix),
        ];
    };
    let mut writable = match disk::ensure_writable(&root) {
        Ok(()) => Fact::new(
            "evidence_root",
            Status::Ok,
            format!("{} is writable", root.display()),
        ),
        Err(err) => Fact::new(
            "evidence_root",
            Status::Missing,
            format!("{} is not writable: {err}", root.display()),
        )
        .fix(fix),
    };
    writable.path = Some(root.clone());
    if let Some(settings) = crate::settings::path(env) {
        writable.details.push(format!("settings: {}", settings.display()));
    }
    let mut space = match disk::space(&root) {
        Ok(space) if space.available_bytes < disk::DEFAULT_MIN_FREE_BYTES => Fact::new(
            "disk",
            Status::Warn,
            format!(
                "{} free of {} (below {})",
                disk::human_bytes(space.available_bytes),
                disk::human_bytes(space.total_bytes),
                disk::human_bytes(disk::DEFAULT_MIN_FREE_BYTES)
            ),
        )
        .fix(format!(
            "free space on the filesystem of {} or point DSHKIT_EVIDENCE_ROOT elsewhere",
            root.display()
        )),
        Ok(space) => Fact::new(
            "disk",
            Status::Ok,
            format!(
                "{} free of {}",
                disk::human_bytes(space.available_bytes),
                disk::human_bytes(space.total_bytes)
            ),
        ),
        Err(err) => Fact::new("disk", Status::Warn, format!("free space unknown: {err}")),
    };
    if let Ok(s) = disk::space(&root) {
        space.details = vec![
            format!("availableBytes: {}", s.available_bytes),
            format!("totalBytes: {}", s.total_bytes),
        ];
    }
    space.path = Some(root);
    vec![writable, space]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars;

    #[test]
    fn node_minimum_is_compared_numerically() {
        assert!(meets_dsh_minimum("22.19.0"));
        assert!(meets_dsh_minimum("22.23.3"));
        assert!(meets_dsh_minimum("24.0.0"));
        assert!(!meets_dsh_minimum("22.9.0"));
        assert!(!meets_dsh_minimum("20.20.2"));
    }

    #[tokio::test]
    async fn an_empty_machine_reports_every_missing_piece_with_a_fix() {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::from_pairs([
            (vars::PATH, dir.path().join("bin").into_os_string()),
            (vars::HOME, dir.path().into()),
            (
                vars::DSHKIT_CHROMIUM,
                dir.path().join("no-chromium").into_os_string(),
            ),
        ]);
        let report = diagnose(&env).await;
        assert!(!report.ok);
        for id in ["chromium", "node", "dsh"] {
            let fact = report.fact(id).unwrap();
            assert_eq!(fact.status, Status::Missing, "{id}: {fact:?}");
            assert!(
                fact.fix.as_deref().is_some_and(|f| !f.is_empty()),
                "{id} has no fix"
            );
        }
        assert_eq!(report.fact("dsh_home").unwrap().status, Status::Warn);
        assert_eq!(report.fact("evidence_root").unwrap().status, Status::Ok);
        assert!(disk::default_evidence_root(&env).unwrap().is_dir());
    }

    #[tokio::test]
    async fn an_unwritable_evidence_root_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let env =
            Environment::from_pairs([(vars::DSHKIT_EVIDENCE_ROOT, file.join("evidence").into_os_string())]);
        let facts = evidence_facts(&env);
        assert_eq!(facts[0].status, Status::Missing);
        assert!(facts[0].fix.is_some());
    }
}
