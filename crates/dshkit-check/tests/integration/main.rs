//! The static checks against profiles made by the real DSH, with `node --check` as
//! the reference for syntax positions.

use std::path::{Path, PathBuf};
use std::process::Command;

use dshkit_check::static_checks::{self, Target};
use dshkit_check::{Report, Status};
use dshkit_test::Peers;

#[cfg(unix)]
mod boot_exit;
mod cache;
mod differential;
// Boots the real DSH testbed, which is installed on Linux only.
#[cfg(target_os = "linux")]
mod live;

/// A DSH home with the web profile, made by the real `dsh`.
pub(crate) struct DshHome {
    _dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) peers: Peers,
}

impl DshHome {
    pub(crate) fn new() -> Self {
        let peers = Peers::get();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("dsh");
        let out = peers
            .dsh_command(dir.path(), &home)
            .args(["web", "--dump-default-config"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Self {
            _dir: dir,
            home,
            peers,
        }
    }

    fn profile(&self) -> PathBuf {
        self.home.join("profiles/web")
    }

    /// Adds a local plugin with `files` and a row inserting it.
    pub(crate) fn plugin(&self, name: &str, manifest: &serde_json::Value, files: &[(&str, &str)]) -> PathBuf {
        let root = self.profile().join("plugins").join(name);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("package.json"),
            serde_json::to_string_pretty(manifest).unwrap(),
        )
        .unwrap();
        for (file, text) in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let links = self.profile().join("node_modules/@local");
        std::fs::create_dir_all(&links).unwrap();
        dshkit_os::fs::symlink(format!("../../plugins/{name}"), links.join(name)).unwrap();
        self.insert(&format!("@local/{name}"), name);
        root
    }

    fn insert(&self, package: &str, id: &str) {
        let patch = self.profile().join("cordis.patch.yml");
        let text = std::fs::read_to_string(&patch).unwrap().replace("[]\n", "");
        std::fs::write(
            &patch,
            format!("{text}- insert:\n    - id: {id}\n      name: '{package}'\n"),
        )
        .unwrap();
    }

    fn check(&self) -> Report {
        Report::new(static_checks::run(&Target {
            home: self.home.clone(),
            profile: "web".into(),
            plugin: None,
            path: Some(self.peers.path_var()),
            cache: None,
        }))
    }

    /// The real `dsh` on this home.
    pub(crate) fn dsh(&self) -> Command {
        self.peers.dsh_command(self.home.parent().unwrap(), &self.home)
    }

    /// What `dsh --profile web --dump-config` says: whether the real DSH composes it.
    fn dsh_composes(&self) -> bool {
        self.dsh()
            .args(["--profile", "web", "--dump-config"])
            .output()
            .unwrap()
            .status
            .success()
    }

    /// The line `node --check` reports for `file`, or `None` when it accepts it.
    fn node_check_line(&self, file: &Path) -> Option<usize> {
        let out = Command::new(self.peers.node())
            .arg("--check")
            .arg(file)
            .output()
            .unwrap();
        if out.status.success() {
            return None;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr
            .lines()
            .find(|l| l.starts_with(&*file.display().to_string()))?;
        first.rsplit(':').next()?.trim().parse().ok()
    }
}

pub(crate) fn manifest(name: &str) -> serde_json::Value {
    serde_json::json!({ "name": format!("@local/{name}"), "type": "module", "main": "index.js" })
}

pub(crate) const HEALTHY: &str =
    "export const name = 'healthy';\nexport function apply(ctx) {\n  return ctx;\n}\n";

fn status(report: &Report, id: &str) -> Status {
    report.check(id).unwrap().status
}

#[test]
fn a_healthy_local_plugin_passes_every_static_check() {
    let home = DshHome::new();
    home.plugin("healthy", &manifest("healthy"), &[("index.js", "import { helper } from './lib/helper.js';\nexport const name = 'healthy';\nexport function apply(ctx) { helper(ctx); }\n"), ("lib/helper.js", "export function helper() {}\n")]);
    let report = home.check();
    assert!(report.ok, "{report:#?}");
    assert!(
        report.checks.iter().all(|c| c.status == Status::Pass),
        "{report:#?}"
    );
    assert!(
        report.check("syntax").unwrap().detail.starts_with("2 file(s)"),
        "{report:#?}"
    );
    assert!(home.dsh_composes());
}

#[test]
fn a_syntax_error_fails_at_the_line_node_reports() {
    let home = DshHome::new();
    let root = home.plugin(
        "broken",
        &manifest("broken"),
        &[(
            "index.js",
            "export const name = 'broken';\nexport function apply(ctx) {\n  if (ctx {\n  }\n}\n",
        )],
    );
    let report = home.check();
    assert!(!report.ok);
    let syntax = report.check("syntax").unwrap();
    assert_eq!(syntax.status, Status::Fail);
    let file = std::fs::canonicalize(root.join("index.js")).unwrap();
    let evidence = &syntax.evidence[0];
    assert!(
        evidence.starts_with(&format!("{}:3:", file.display())),
        "{evidence}"
    );
    assert_eq!(
        home.node_check_line(&file),
        Some(3),
        "node --check agrees on the line"
    );
    assert_eq!(
        status(&report, "patch_references"),
        Status::Pass,
        "the other checks still report honestly"
    );
    assert_eq!(status(&report, "manifest"), Status::Pass);
}

#[test]
fn a_duplicate_let_is_caught_by_the_semantic_pass_as_node_does() {
    let home = DshHome::new();
    let root = home.plugin(
        "twice",
        &manifest("twice"),
        &[(
            "index.js",
            "export const name = 'twice';\nlet count = 0;\nlet count = 1;\nexport function apply() {}\n",
        )],
    );
    let report = home.check();
    let syntax = report.check("syntax").unwrap();
    assert_eq!(syntax.status, Status::Fail, "{report:#?}");
    let file = std::fs::canonicalize(root.join("index.js")).unwrap();
    assert!(
        syntax.evidence[0].starts_with(&format!("{}:3:5:", file.display())),
        "{}",
        syntax.evidence[0]
    );
    assert_eq!(home.node_check_line(&file), Some(3));
}

#[test]
fn a_missing_package_fails_the_patch_references() {
    let home = DshHome::new();
    home.insert("@local/does-not-exist", "ghost");
    home.insert("some-npm-plugin-that-is-not-installed", "npm-ghost");
    let report = home.check();
    let refs = report.check("patch_references").unwrap();
    assert_eq!(refs.status, Status::Fail);
    assert_eq!(refs.evidence.len(), 2, "{refs:#?}");
    // Where each name is written: the patch's last lines, at the quoted value.
    let patch = home.profile().join("cordis.patch.yml");
    let lines = std::fs::read_to_string(&patch).unwrap().lines().count();
    assert!(
        refs.evidence[0].starts_with(&format!(
            "{}:{}:13: @local/does-not-exist",
            patch.display(),
            lines - 3
        )),
        "{refs:#?}"
    );
    assert!(
        refs.evidence[1].starts_with(&format!("{}:{lines}:13: some-npm-plugin", patch.display())),
        "{refs:#?}"
    );
    assert!(refs.evidence[1].contains("not installed"));
}

#[test]
fn bad_yaml_fails_with_line_and_column_as_dsh_refuses_it() {
    let home = DshHome::new();
    std::fs::write(
        home.profile().join("cordis.patch.yml"),
        "- insert:\n    - id: x\n      name: [unclosed\n",
    )
    .unwrap();
    let report = home.check();
    let refs = report.check("patch_references").unwrap();
    assert_eq!(refs.status, Status::Fail);
    assert!(refs.evidence[0].contains("cordis.patch.yml:"), "{refs:#?}");
    assert!(refs.detail.contains("line"), "{}", refs.detail);
    assert!(!home.dsh_composes(), "DSH refuses the same file");
}

#[test]
fn a_missing_client_export_fails_the_manifest_check() {
    let home = DshHome::new();
    let mut m = manifest("ui");
    m["dsh"] = serde_json::json!({ "client": { "platform": "web" } });
    m["exports"] = serde_json::json!({ ".": "./index.js", "./package.json": "./package.json" });
    home.plugin("ui", &m, &[("index.js", HEALTHY)]);
    let report = home.check();
    let manifest = report.check("manifest").unwrap();
    assert_eq!(manifest.status, Status::Fail);
    assert!(
        manifest.evidence[0].contains("exports[\"./client\"] is missing, so DSH stops with \"client-modules: @local/ui declares dsh.client but exports no"),
        "{manifest:#?}"
    );
    assert_eq!(status(&report, "syntax"), Status::Pass);
}

#[test]
fn a_client_dsh_cannot_read_warns_that_it_is_not_served() {
    let home = DshHome::new();
    let mut m = manifest("ui");
    // No "./package.json" in exports: DSH cannot read dsh.client, and boots without it.
    m["dsh"] = serde_json::json!({ "client": { "platform": "web" } });
    m["exports"] = serde_json::json!({ ".": "./index.js", "./client": "./index.js" });
    home.plugin("ui", &m, &[("index.js", HEALTHY)]);
    let report = home.check();
    let manifest = report.check("manifest").unwrap();
    assert_eq!(manifest.status, Status::Warn, "{manifest:#?}");
    assert!(
        manifest.evidence[0]
            .contains("never serves this client half; add \"./package.json\": \"./package.json\" to exports"),
        "{manifest:#?}"
    );
    assert!(report.ok, "DSH boots: {report:#?}");
}

#[test]
fn an_apply_that_throws_passes_the_static_checks_it_is_for_the_live_boot() {
    let home = DshHome::new();
    home.plugin(
        "thrower",
        &manifest("thrower"),
        &[(
            "index.js",
            "export const name = 'thrower';\nexport function apply() { throw new Error('boom'); }\n",
        )],
    );
    let report = home.check();
    assert!(
        report.ok,
        "static checks cannot see a throw at apply time: {report:#?}"
    );
}

#[test]
fn a_target_that_names_no_plugin_fails_with_that_name() {
    let home = DshHome::new();
    home.plugin("healthy", &manifest("healthy"), &[("index.js", HEALTHY)]);
    let report = Report::new(static_checks::run(&Target {
        home: home.home.clone(),
        profile: "web".into(),
        plugin: Some("helthy".into()),
        path: None,
        cache: None,
    }));
    for id in ["patch_references", "syntax", "links", "manifest"] {
        let check = report.check(id).unwrap();
        assert_eq!(check.status, Status::Fail, "{check:#?}");
        assert!(
            check.detail.contains("`helthy` names no local plugin"),
            "{check:#?}"
        );
        assert!(
            check.detail.contains("healthy"),
            "the known plugins are listed: {check:#?}"
        );
    }
}

#[test]
fn a_link_that_leads_elsewhere_fails_naming_what_dsh_loads_instead_of_the_plugin() {
    let home = DshHome::new();
    home.plugin(
        "real",
        &manifest("real"),
        &[(
            "index.js",
            "export const name = 'real';\nexport function apply( {\n",
        )],
    );
    // The @local link points at a healthy copy elsewhere: DSH loads that copy
    // (the differential corpus boots such trees), never plugins/real.
    let elsewhere = home.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("package.json"), manifest("real").to_string()).unwrap();
    std::fs::write(elsewhere.join("index.js"), HEALTHY).unwrap();
    let link = home.home.join("profiles/web/node_modules/@local/real");
    std::fs::remove_file(&link).unwrap();
    dshkit_os::fs::symlink(&elsewhere, &link).unwrap();
    let report = home.check();
    let refs = report.check("patch_references").unwrap();
    assert_eq!(refs.status, Status::Fail, "{report:#?}");
    let evidence = &refs.evidence[0];
    let elsewhere = std::fs::canonicalize(&elsewhere).unwrap();
    assert!(
        evidence.contains(&format!(
            "@local/real: DSH loads {} for this row (the link {} -> {})",
            elsewhere.display(),
            link.display(),
            elsewhere.display()
        )),
        "{evidence}"
    );
    assert!(
        evidence.ends_with(&format!("ln -sfn ../../plugins/real {}", link.display())),
        "{evidence}"
    );
    // The checks of the plugin's own files still read plugins/real.
    assert_eq!(status(&report, "syntax"), Status::Fail, "{report:#?}");
}

#[test]
fn a_missing_link_fails_the_patch_references_with_what_dsh_prints_and_the_fix() {
    let home = DshHome::new();
    home.plugin("healthy", &manifest("healthy"), &[("index.js", HEALTHY)]);
    let link = home.home.join("profiles/web/node_modules/@local/healthy");
    std::fs::remove_file(&link).unwrap();
    let report = home.check();
    let refs = report.check("patch_references").unwrap();
    assert_eq!(refs.status, Status::Fail, "{report:#?}");
    let profile = home.profile();
    assert!(
        refs.evidence[0].contains(&format!(
            "@local/healthy: the link {} is missing, so DSH stops with \"Cannot find package '@local/healthy' imported from {}/\"",
            link.display(),
            profile.display()
        )),
        "{refs:#?}"
    );
    assert!(
        refs.evidence[0].ends_with(&format!("ln -s ../../plugins/healthy {}", link.display())),
        "{refs:#?}"
    );
    // The command restores what DSH needs.
    let restore = refs.evidence[0].rsplit("restore it: ").next().unwrap();
    let out = Command::new("sh").args(["-c", restore]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(home.check().ok, "restored");
}

#[test]
fn link_findings_carry_their_id_place_and_nodes_message_and_a_main_fallback_only_warns() {
    let home = DshHome::new();
    home.plugin(
        "broken",
        &manifest("broken"),
        &[
            (
                "index.js",
                "import { nope } from 'node:fs';\nimport data from './data.json';\nexport const name = 'broken' + data;\nexport function apply() {}\n",
            ),
            ("data.json", "{}\n"),
        ],
    );
    let report = home.check();
    let links = report.check("links").unwrap();
    assert_eq!(links.status, Status::Fail, "{links:#?}");
    let line = |needle: &str| {
        links
            .evidence
            .iter()
            .find(|e| e.contains(needle))
            .unwrap_or_else(|| panic!("no {needle}: {links:#?}"))
            .clone()
    };
    assert!(
        line("[import.missing_export]").ends_with(
            "index.js:1:22: [import.missing_export] SyntaxError: The requested module 'node:fs' does not provide an export named 'nope'"
        ),
        "{links:#?}"
    );
    assert!(
        line("[import.json_attribute]").contains("index.js:2:18: [import.json_attribute] Module \"file://")
    );
    assert!(
        links.detail.contains("built-ins of Node v22."),
        "{}",
        links.detail
    );

    let home = DshHome::new();
    let mut fallback = manifest("fallback");
    fallback["main"] = serde_json::json!("lib/index.js");
    home.plugin("fallback", &fallback, &[("index.js", HEALTHY)]);
    let report = home.check();
    let links = report.check("links").unwrap();
    assert_eq!(links.status, Status::Warn, "{links:#?}");
    assert!(
        links.evidence[0].contains("[manifest.main_fallback] [DEP0151]"),
        "{links:#?}"
    );
    assert!(report.ok, "a fallback Node takes is not a failure: {report:#?}");
}
