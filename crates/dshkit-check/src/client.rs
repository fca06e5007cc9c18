//! A plugin's browser half (`dsh.client`) as DSH's web host composes it
//! (`@deepseek-ai/dsh-client-modules`).
//!
//! DSH reads `require.resolve('<row>/package.json')` from the profile, so a
//! package whose `exports` does not export `./package.json` is never read as a
//! client. It then refuses, and stops the boot on:
//! - a `dsh.client` that is not an object;
//! - `platform` that is not a string;
//! - `inject` or `external` that is not an array of strings;
//! - `immediately` that is not a boolean;
//! - no `exports["./client"]`, or one that is neither a string nor an object
//!   with a string `default`;
//! - a client bundle that is not there;
//! - an `external` naming its own package, and a cycle of `external`s.
//!
//! A `platform` other than `"web"` is not served, and DSH says nothing.
//! Each message quotes DSH's own (`client-modules: …`).

use std::path::Path;

use serde_json::Value;

use crate::link::Severity;
use crate::resolve::{Loader, exports_target};

/// One finding about a plugin's `dsh.client`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinding {
    pub severity: Severity,
    pub message: String,
}

/// A client half DSH would serve: its row and the packages it requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRow {
    /// The row's package, `@local/NAME`.
    pub id: String,
    pub external: Vec<String>,
}

/// What DSH makes of the `dsh.client` of the plugin at `root` (`manifest` is its
/// `package.json`), loaded as the row `package`: its findings, and the row DSH
/// serves when it serves one. DSH stops at the first stage that refuses.
pub fn check(package: &str, root: &Path, manifest: &Value) -> (Vec<ClientFinding>, Option<ClientRow>) {
    if declaration(manifest).is_none() {
        return (Vec::new(), None);
    }
    let staged = (|| {
        let (manifest_file, read) = manifest_dsh_reads(package, root, manifest)?;
        let manifest = read.as_ref().unwrap_or(manifest);
        let Some(client) = declaration(manifest) else {
            return Ok(None);
        };
        declared_types(package, client)?;
        let platform = client["platform"].as_str().unwrap_or_default();
        if platform != "web" {
            return Err(vec![warn(format!(
                "{package}: dsh.client.platform is {platform:?}; DSH's web host serves only \"web\" client halves, so it never loads this one (and says nothing)"
            ))]);
        }
        client_bundle(package, root, &manifest_file, manifest)?;
        let external: Vec<String> = client
            .get("external")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(own) = external.iter().find(|e| strip_client_suffix(e) == package) {
            return Err(vec![fail(format!(
                "{package}: dsh.client.external names {own:?}, its own package, so DSH stops with \"client-modules: \\\"{package}\\\" requests module \\\"{own}\\\" that it answers itself\"; remove it from external"
            ))]);
        }
        Ok(Some(ClientRow {
            id: package.to_owned(),
            external,
        }))
    })();
    match staged {
        Ok(row) => (Vec::new(), row),
        Err(findings) => (findings, None),
    }
}

fn fail(message: String) -> ClientFinding {
    ClientFinding {
        severity: Severity::Fail,
        message,
    }
}

fn warn(message: String) -> ClientFinding {
    ClientFinding {
        severity: Severity::Warn,
        message,
    }
}

/// The manifest file DSH reads, `require.resolve('<row>/package.json')` through
/// the package's own `exports`, and its contents when it is not `manifest`.
fn manifest_dsh_reads(
    package: &str,
    root: &Path,
    manifest: &Value,
) -> Result<(std::path::PathBuf, Option<Value>), Vec<ClientFinding>> {
    let own = root.join("package.json");
    let file = match manifest.get("exports").filter(|e| !e.is_null()) {
        None => own.clone(),
        Some(exports) => match exports_target(exports, "./package.json", Loader::Require) {
            Some(target) => root.join(target.trim_start_matches("./")),
            None => {
                return Err(vec![warn(format!(
                    "{package}: dsh.client is set, but exports does not export \"./package.json\", so DSH cannot read it (require.resolve('{package}/package.json') fails) and never serves this client half; add \"./package.json\": \"./package.json\" to exports"
                ))]);
            }
        },
    };
    if file == own {
        return Ok((file, None));
    }
    let read = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    match read {
        Some(other) => Ok((file, Some(other))),
        None => Err(vec![warn(format!(
            "{package}: exports[\"./package.json\"] leads to {}, which is not a readable package.json, so DSH never serves this client half",
            file.display()
        ))]),
    }
}

/// The declaration's fields typed as DSH types them.
fn declared_types(package: &str, client: &Value) -> Result<(), Vec<ClientFinding>> {
    // `typeof value === "object"` in DSH: an array passes this test.
    if !(client.is_object() || client.is_array()) {
        return Err(vec![fail(format!(
            "{package}: dsh.client is {}, so DSH stops with \"client-modules: {package} has a non-object dsh.client declaration\"; make it an object: {{\"platform\": \"web\"}}",
            kind(client)
        ))]);
    }
    let mut findings = Vec::new();
    match client.get("platform") {
        Some(Value::String(_)) => {}
        None => findings.push(fail(format!(
            "{package}: dsh.client has no platform, so DSH stops with \"client-modules: {package} dsh.client.platform must be a string\"; add \"platform\": \"web\" to dsh.client"
        ))),
        Some(other) => findings.push(fail(format!(
            "{package}: dsh.client.platform is {}, so DSH stops with \"client-modules: {package} dsh.client.platform must be a string\"; set it to \"web\"",
            kind(other)
        ))),
    }
    for name in ["inject", "external"] {
        if let Some(value) = client.get(name)
            && !is_string_array(value)
        {
            findings.push(fail(format!(
                "{package}: dsh.client.{name} is {}, so DSH stops with \"client-modules: {package} dsh.client.{name} must be a string array\"; make it a list of package names",
                kind(value)
            )));
        }
    }
    if let Some(value) = client.get("immediately")
        && !value.is_boolean()
    {
        findings.push(fail(format!(
            "{package}: dsh.client.immediately is {}, so DSH stops with \"client-modules: {package} dsh.client.immediately must be a boolean\"; make it true or false",
            kind(value)
        )));
    }
    if findings.is_empty() {
        Ok(())
    } else {
        Err(findings)
    }
}

/// `exports["./client"]` as DSH reads it (a string, or an object's string
/// `default`), and the bundle file it names.
fn client_bundle(
    package: &str,
    root: &Path,
    manifest_file: &Path,
    manifest: &Value,
) -> Result<(), Vec<ClientFinding>> {
    let exports = manifest.get("exports").filter(|e| e.is_object() || e.is_array());
    let relative = match exports.and_then(|e| e.get("./client")) {
        None => {
            return Err(vec![fail(format!(
                "{package}: dsh.client is set but exports[\"./client\"] is missing, so DSH stops with \"client-modules: {package} declares dsh.client but exports no \\\"./client\\\" bundle\"; add \"./client\": \"./client.js\" to exports"
            ))]);
        }
        Some(Value::String(target)) => target,
        Some(Value::Object(map)) if map.get("default").is_some_and(Value::is_string) => {
            map["default"].as_str().unwrap_or_default()
        }
        Some(other) => {
            return Err(vec![fail(format!(
                "{package}: exports[\"./client\"] is {}, so DSH stops with \"client-modules: {package} exports[\\\"./client\\\"] must be a string or an object with a string default\"; DSH reads only a string or the \"default\" condition",
                kind(other)
            ))]);
        }
    };
    let bundle = manifest_file
        .parent()
        .unwrap_or(root)
        .join(relative.trim_start_matches("./"));
    if bundle.is_file() {
        return Ok(());
    }
    Err(vec![fail(format!(
        "{package}: exports[\"./client\"] is {relative:?}, but {} is not a file, so DSH stops with \"client-modules: … client bundles not found; run `pnpm run build` before launch: package: {package}, path: {}\"; build the client bundle or fix the path",
        bundle.display(),
        bundle.display()
    ))])
}

/// The first cycle among `rows` through their `external`s, as DSH walks them
/// (in row order), as `a -> b -> a`.
pub fn cycle(rows: &[ClientRow]) -> Option<String> {
    fn visit<'r>(
        row: &'r ClientRow,
        rows: &'r [ClientRow],
        open: &mut Vec<&'r str>,
        placed: &mut Vec<&'r str>,
    ) -> Option<String> {
        if placed.contains(&row.id.as_str()) {
            return None;
        }
        if let Some(start) = open.iter().position(|id| *id == row.id) {
            let mut path: Vec<&str> = open[start..].to_vec();
            path.push(&row.id);
            return Some(path.join(" -> "));
        }
        open.push(&row.id);
        for name in &row.external {
            let dependency = rows
                .iter()
                .find(|r| r.id == *name)
                .or_else(|| rows.iter().find(|r| r.id == strip_client_suffix(name)));
            if let Some(dependency) = dependency
                && let Some(found) = visit(dependency, rows, open, placed)
            {
                return Some(found);
            }
        }
        open.pop();
        placed.push(&row.id);
        None
    }
    let mut placed = Vec::new();
    rows.iter()
        .find_map(|row| visit(row, rows, &mut Vec::new(), &mut placed))
}

/// `dsh.client`, read as DSH reads it (`dsh` must be an object).
fn declaration(manifest: &Value) -> Option<&Value> {
    manifest
        .get("dsh")
        .filter(|d| d.is_object())
        .and_then(|d| d.get("client"))
}

/// `<id>/client` and `<id>` name the same row.
fn strip_client_suffix(spec: &str) -> &str {
    spec.strip_suffix("/client").unwrap_or(spec)
}

fn is_string_array(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| items.iter().all(Value::is_string))
}

/// How JavaScript would describe the value, for messages.
fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plugin(
        manifest: &Value,
        client_file: bool,
    ) -> (tempfile::TempDir, Vec<ClientFinding>, Option<ClientRow>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("package.json"), manifest.to_string()).unwrap();
        if client_file {
            std::fs::write(dir.path().join("client.js"), "").unwrap();
        }
        let (findings, row) = check("@local/p", dir.path(), manifest);
        (dir, findings, row)
    }

    fn exporting(client: &Value) -> Value {
        json!({
            "name": "@local/p",
            "exports": { ".": "./index.js", "./client": "./client.js", "./package.json": "./package.json" },
            "dsh": { "client": client }
        })
    }

    fn failures(findings: &[ClientFinding]) -> Vec<&str> {
        findings
            .iter()
            .filter(|f| f.severity == Severity::Fail)
            .map(|f| f.message.as_str())
            .collect()
    }

    #[test]
    fn a_web_client_with_its_bundle_is_served() {
        let (_dir, findings, row) = plugin(
            &exporting(&json!({ "platform": "web", "external": ["@local/q/client"] })),
            true,
        );
        assert!(findings.is_empty(), "{findings:#?}");
        assert_eq!(
            row,
            Some(ClientRow {
                id: "@local/p".into(),
                external: vec!["@local/q/client".into()]
            })
        );
    }

    #[test]
    fn a_client_without_a_platform_fails_with_dshs_message() {
        let (_dir, findings, row) = plugin(&exporting(&json!({})), true);
        assert_eq!(row, None);
        let failed = failures(&findings);
        assert_eq!(failed.len(), 1, "{findings:#?}");
        assert!(
            failed[0].contains("\"client-modules: @local/p dsh.client.platform must be a string\""),
            "{}",
            failed[0]
        );
        assert!(failed[0].contains("add \"platform\": \"web\""), "{}", failed[0]);
    }

    #[test]
    fn each_declaration_field_is_typed_as_dsh_types_it() {
        for (client, says) in [
            (json!("web"), "has a non-object dsh.client declaration"),
            (json!(null), "has a non-object dsh.client declaration"),
            (json!([]), "dsh.client.platform must be a string"),
            (json!({ "platform": 42 }), "dsh.client.platform must be a string"),
            (
                json!({ "platform": "web", "inject": "x" }),
                "dsh.client.inject must be a string array",
            ),
            (
                json!({ "platform": "web", "external": [1] }),
                "dsh.client.external must be a string array",
            ),
            (
                json!({ "platform": "web", "immediately": "yes" }),
                "dsh.client.immediately must be a boolean",
            ),
            (
                json!({ "platform": "web", "external": ["@local/p/client"] }),
                "that it answers itself",
            ),
        ] {
            let (_dir, findings, _) = plugin(&exporting(&client), true);
            let failed = failures(&findings);
            assert!(failed.iter().any(|f| f.contains(says)), "{client}: {findings:#?}");
        }
    }

    #[test]
    fn the_client_export_is_a_string_or_a_default_and_its_bundle_must_exist() {
        let mut manifest = exporting(&json!({ "platform": "web" }));
        manifest["exports"]["./client"] = json!({ "default": "./client.js", "types": "./gone.d.ts" });
        let (_dir, findings, row) = plugin(&manifest, true);
        assert!(findings.is_empty(), "only default is read: {findings:#?}");
        assert!(row.is_some());

        manifest["exports"]["./client"] = json!({ "browser": "./client.js" });
        let (_dir, findings, _) = plugin(&manifest, true);
        assert!(failures(&findings)[0].contains("must be a string or an object with a string default"));

        let (_dir, findings, _) = plugin(&exporting(&json!({ "platform": "web" })), false);
        assert!(failures(&findings)[0].contains("client bundles not found"));

        let (_dir, findings, _) = plugin(
            &json!({ "name": "@local/p", "dsh": { "client": { "platform": "web" } } }),
            true,
        );
        assert!(
            failures(&findings)[0].contains("exports no \\\"./client\\\" bundle"),
            "{findings:#?}"
        );
    }

    #[test]
    fn a_client_dsh_cannot_read_or_does_not_serve_is_a_warning() {
        let mut manifest = exporting(&json!({ "platform": "web" }));
        manifest["exports"] = json!({ ".": "./index.js", "./client": "./client.js" });
        let (_dir, findings, row) = plugin(&manifest, true);
        assert_eq!(row, None);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].severity, Severity::Warn);
        assert!(findings[0].message.contains("does not export \"./package.json\""));

        let (_dir, findings, row) = plugin(&exporting(&json!({ "platform": "browser" })), true);
        assert_eq!(row, None);
        assert_eq!(findings[0].severity, Severity::Warn);
        assert!(findings[0].message.contains("serves only \"web\""));
    }

    #[test]
    fn a_cycle_of_externals_is_named_in_dshs_order() {
        let row = |id: &str, external: &[&str]| ClientRow {
            id: id.into(),
            external: external.iter().map(|e| (*e).to_owned()).collect(),
        };
        assert_eq!(
            cycle(&[
                row("@local/a", &["@local/b/client"]),
                row("@local/b", &["@local/a"]),
            ])
            .as_deref(),
            Some("@local/a -> @local/b -> @local/a")
        );
        assert_eq!(
            cycle(&[row("@local/a", &["@local/b"]), row("@local/b", &["react"])]),
            None
        );
    }
}
