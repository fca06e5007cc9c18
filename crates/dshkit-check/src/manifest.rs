//! The `manifest` check: each local plugin's `package.json` as DSH reads it.
//!
//! The name and the entry; the browser half (`dsh.client`, see [`crate::client`]);
//! the bundle patch (`dsh.bundle.patch`), which DSH reads only for a package the
//! profile lists in `dsh.profile.bundles` (what `dsh plugin add` does): a broken
//! one fails there and only warns elsewhere; and no `@deepseek-ai/*` import from
//! a plugin that lives outside `DSH_HOME`.

use std::path::Path;

use serde_json::Value;

use crate::client::{self, ClientRow};
use crate::link::Severity;
use crate::plugins::{Analyzed, LocalPlugin};
use crate::report::{Check, Status};

/// The check's stable id and its name in a report.
const ID: &str = "manifest";
pub(crate) const NAME: &str = "Plugin manifests";

/// The manifest check over `plugins` of the profile at `profile_dir`.
pub(crate) fn check(
    plugins: &[LocalPlugin],
    analyzed: &[Analyzed],
    home: &Path,
    profile_dir: &Path,
) -> Check {
    let real_home = crate::realpath::real(home).unwrap_or_else(|_| home.to_owned());
    let bundles = profile_bundles(profile_dir);
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    let mut client_rows: Vec<ClientRow> = Vec::new();
    for (plugin, files_of) in plugins.iter().zip(analyzed) {
        let label = &plugin.dir_name;
        let Some(manifest) = &plugin.manifest else {
            failures.push(format!(
                "{label}: {}",
                plugin.manifest_error.as_deref().unwrap_or("no package.json")
            ));
            continue;
        };
        let name = manifest["name"].as_str().unwrap_or_default();
        if !name.starts_with("@local/") {
            failures.push(format!("{label}: name {name:?} lacks the @local/ prefix"));
        }
        // The entry as `import('@local/NAME')` finds it; a fallback is the links
        // check's warning, not a manifest failure.
        if let Err(unresolved) = crate::resolve::package_entry(&plugin.root, crate::resolve::Loader::Import) {
            failures.push(format!("{label}: no entry: {}", unresolved.message));
        }
        // DSH names a client by its row, `@local/<directory>`.
        let (findings, row) = client::check(&format!("@local/{label}"), &plugin.root, manifest);
        for finding in findings {
            match finding.severity {
                Severity::Fail => failures.push(finding.message),
                Severity::Warn => warnings.push(finding.message),
            }
        }
        client_rows.extend(row);
        bundle(
            plugin,
            manifest,
            bundles.contains(&name.to_owned()),
            &mut failures,
            &mut warnings,
        );
        if !plugin.root.starts_with(&real_home) {
            // Node resolves imports from the real path: outside DSH_HOME there is no
            // node_modules holding @deepseek-ai packages.
            for (file, analysis) in files_of {
                let Ok(analysis) = analysis else { continue };
                for import in analysis.imports.iter().filter(|i| i.starts_with("@deepseek-ai/")) {
                    failures.push(format!(
                        "{label}: {} imports {import}, which cannot resolve at boot: the plugin lives outside DSH_HOME ({})",
                        file.display(),
                        plugin.root.display()
                    ));
                }
            }
        }
    }
    if let Some(cycle) = client::cycle(&client_rows) {
        failures.push(format!(
            "dsh.client.external makes a cycle, {cycle}, so DSH stops with \"client-modules: module graph cycle {cycle}\"; a client may request another only one way"
        ));
    }
    let (status, detail) = if !failures.is_empty() {
        (
            Status::Fail,
            format!("{} manifest problem(s)", failures.len() + warnings.len()),
        )
    } else if !warnings.is_empty() {
        (
            Status::Warn,
            format!(
                "{} warning(s): DSH boots, but not with everything declared",
                warnings.len()
            ),
        )
    } else {
        (
            Status::Pass,
            format!("{} local plugin manifest(s) are sound", plugins.len()),
        )
    };
    failures.extend(warnings);
    Check::new(ID, NAME, status, detail).with_evidence(failures)
}

/// `dsh.profile.bundles` of the profile's `package.json`.
fn profile_bundles(profile_dir: &Path) -> Vec<String> {
    crate::resolve::read_manifest(profile_dir)
        .and_then(|m| {
            m.pointer("/dsh/profile/bundles")?.as_array().map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// `dsh.bundle.patch`: what DSH refuses when the profile lists the plugin as a
/// bundle (a failure), or would refuse once it does (a warning).
fn bundle(
    plugin: &LocalPlugin,
    manifest: &Value,
    listed: bool,
    failures: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    let label = &plugin.dir_name;
    let name = manifest["name"].as_str().unwrap_or_default();
    let declared = manifest.get("dsh").and_then(|d| d.get("bundle"));
    if declared.is_none() && !listed {
        return;
    }
    let problem = match declared.and_then(|b| b.get("patch")) {
        None if listed => Some(format!(
            "{label}: dsh.profile.bundles lists it, but it declares no dsh.bundle.patch, so DSH stops with \"profile bundle {name:?} declares no dsh.bundle in its package.json\"; add \"dsh\": {{\"bundle\": {{\"patch\": \"./cordis.patch.yml\"}}}} or remove it from the bundles"
        )),
        None => Some(format!(
            "{label}: dsh.bundle has no patch; add \"patch\": \"./cordis.patch.yml\""
        )),
        Some(Value::String(patch)) => {
            let file = plugin.root.join(patch);
            match std::fs::read_to_string(&file) {
                Err(e) => Some(format!(
                    "{label}: dsh.bundle.patch {patch}: DSH cannot read {}: {e} (DSH stops with \"failed to read overlay\")",
                    file.display()
                )),
                Ok(text) => crate::patch_list::parse(&file, &text)
                    .err()
                    .map(|e| format!("{label}: dsh.bundle.patch {}", e.evidence())),
            }
        }
        Some(other) => Some(format!(
            "{label}: dsh.bundle.patch is {other}, not a path; make it a path such as \"./cordis.patch.yml\""
        )),
    };
    let Some(problem) = problem else { return };
    if listed {
        failures.push(problem);
    } else {
        warnings.push(format!(
            "{problem} (DSH reads dsh.bundle only for the profile's dsh.profile.bundles, which do not list it, so it boots now; it stops once the plugin is added as a bundle)"
        ));
    }
}
