//! Tool contracts: what a server promises through `tools/list` (names,
//! descriptions, input and output schemas, annotations), snapshotted from a
//! cassette and diffed, each change classified under a stable rule id.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cassette::{self, Cassette};
use crate::error::ContractError;
use crate::key::canonical;

/// Version of the snapshot format.
pub const SNAPSHOT_VERSION: u32 = 1;

/// How much a change matters to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Existing clients break.
    Breaking,
    /// Clients keep working but may now do harm or meet values they do not expect.
    Dangerous,
    /// A compatible addition.
    Minor,
    /// Text only.
    Info,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub severity: Severity,
    /// A stable id, e.g. `input-required-added`.
    pub rule: &'static str,
    pub tool: String,
    /// Where in the tool (`inputSchema.properties.path`), empty for the tool itself.
    pub path: String,
    pub message: String,
}

/// The tools of a server, by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Contract {
    pub tools: BTreeMap<String, Value>,
}

impl Contract {
    /// The tools the server listed in `cassette` (every page of the last listing).
    pub fn from_cassette(cassette: &Cassette) -> Self {
        let mut tools = BTreeMap::new();
        for interaction in cassette.interactions() {
            if interaction.request["method"] != "tools/list" {
                continue;
            }
            if interaction.request["params"].get("cursor").is_none() {
                tools.clear(); // a new listing starts
            }
            for response in &interaction.responses {
                for tool in response["result"]["tools"].as_array().into_iter().flatten() {
                    if let Some(name) = tool["name"].as_str() {
                        tools.insert(name.to_owned(), tool.clone());
                    }
                }
            }
        }
        Self { tools }
    }

    /// A snapshot file's JSON.
    pub fn to_snapshot(&self) -> Value {
        json!({ "type": "contract", "formatVersion": SNAPSHOT_VERSION, "tools": self.tools.values().collect::<Vec<_>>() })
    }

    /// Reads a snapshot, or a cassette (its tool listing).
    pub fn read(path: &Path) -> Result<Self, ContractError> {
        let text = std::fs::read_to_string(path).map_err(|source| ContractError::Io {
            path: path.to_owned(),
            source,
        })?;
        if let Ok(snapshot) = serde_json::from_str::<Value>(&text)
            && snapshot["type"] == "contract"
        {
            let found = snapshot["formatVersion"].as_u64().unwrap_or(0);
            if found > u64::from(SNAPSHOT_VERSION) {
                return Err(ContractError::FutureVersion {
                    path: path.to_owned(),
                    found,
                });
            }
            let tools = snapshot["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| Some((t["name"].as_str()?.to_owned(), t.clone())))
                .collect();
            return Ok(Self { tools });
        }
        let loaded = cassette::parse(path, text.as_bytes())?;
        Ok(Self::from_cassette(&loaded.cassette))
    }
}

struct Differ<'a> {
    tool: &'a str,
    changes: Vec<Change>,
}

impl Differ<'_> {
    fn push(&mut self, severity: Severity, rule: &'static str, path: &str, message: String) {
        self.changes.push(Change {
            severity,
            rule,
            tool: self.tool.to_owned(),
            path: path.to_owned(),
            message,
        });
    }

    /// Compares two JSON schemas. `input`: the client sends values of it (narrowing
    /// breaks callers); otherwise the server sends them (widening surprises clients).
    fn schema(&mut self, old: &Value, new: &Value, path: &str, input: bool) {
        let side = if input { "input" } else { "output" };
        if old["type"] != new["type"] && !(old["type"].is_null() && new["type"].is_null()) {
            self.push(
                Severity::Breaking,
                if input {
                    "input-type-changed"
                } else {
                    "output-type-changed"
                },
                path,
                format!("{side} type {} became {}", old["type"], new["type"]),
            );
        }
        if old["description"] != new["description"] {
            self.push(
                Severity::Info,
                "schema-description-changed",
                path,
                "description changed".into(),
            );
        }
        self.properties(old, new, path, input);
        self.enums(old, new, path, input);
        self.additional(old, new, path, input);
        for combinator in ["anyOf", "oneOf", "allOf"] {
            self.variants(old, new, path, input, combinator);
        }
        if old.get("items").is_some() || new.get("items").is_some() {
            self.schema(&old["items"], &new["items"], &format!("{path}.items"), input);
        }
    }

    /// Properties removed, added, newly required or optional.
    fn properties(&mut self, old: &Value, new: &Value, path: &str, input: bool) {
        let names = |v: &Value| -> Vec<String> {
            v["properties"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let required = |v: &Value| -> Vec<String> {
            v["required"]
                .as_array()
                .map(|a| a.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
                .unwrap_or_default()
        };
        let (old_names, new_names) = (names(old), names(new));
        let (old_required, new_required) = (required(old), required(new));
        for name in &old_names {
            let child = format!("{path}.properties.{name}");
            if new_names.contains(name) {
                self.schema(&old["properties"][name], &new["properties"][name], &child, input);
            } else if input {
                self.push(
                    Severity::Breaking,
                    "input-property-removed",
                    &child,
                    format!("parameter `{name}` was removed"),
                );
            } else {
                self.push(
                    Severity::Breaking,
                    "output-property-removed",
                    &child,
                    format!("result field `{name}` was removed"),
                );
            }
        }
        for name in new_names.iter().filter(|n| !old_names.contains(n)) {
            let child = format!("{path}.properties.{name}");
            match (input, new_required.contains(name)) {
                (true, true) => self.push(
                    Severity::Breaking,
                    "input-required-added",
                    &child,
                    format!("new required parameter `{name}`"),
                ),
                (true, false) => self.push(
                    Severity::Minor,
                    "input-optional-added",
                    &child,
                    format!("new optional parameter `{name}`"),
                ),
                (false, _) => self.push(
                    Severity::Minor,
                    "output-property-added",
                    &child,
                    format!("new result field `{name}`"),
                ),
            }
        }
        for name in new_required
            .iter()
            .filter(|n| !old_required.contains(n) && old_names.contains(n))
        {
            let (severity, rule) = if input {
                (Severity::Breaking, "input-became-required")
            } else {
                (Severity::Minor, "output-became-required")
            };
            self.push(
                severity,
                rule,
                &format!("{path}.required"),
                format!("`{name}` is now required"),
            );
        }
        for name in old_required
            .iter()
            .filter(|n| !new_required.contains(n) && new_names.contains(n))
        {
            let (severity, rule) = if input {
                (Severity::Minor, "input-became-optional")
            } else {
                (Severity::Breaking, "output-became-optional")
            };
            self.push(
                severity,
                rule,
                &format!("{path}.required"),
                format!("`{name}` is no longer required"),
            );
        }
    }

    fn enums(&mut self, old: &Value, new: &Value, path: &str, input: bool) {
        let (Some(before), Some(after)) = (old["enum"].as_array(), new["enum"].as_array()) else {
            if old.get("enum").is_none() && new.get("enum").is_some() && input {
                self.push(
                    Severity::Breaking,
                    "input-enum-introduced",
                    path,
                    "values are now restricted to an enum".into(),
                );
            }
            return;
        };
        let removed: Vec<&Value> = before.iter().filter(|v| !after.contains(v)).collect();
        let added: Vec<&Value> = after.iter().filter(|v| !before.contains(v)).collect();
        if !removed.is_empty() {
            let (severity, rule) = if input {
                (Severity::Breaking, "input-enum-value-removed")
            } else {
                (Severity::Minor, "output-enum-value-removed")
            };
            self.push(severity, rule, path, format!("enum values removed: {removed:?}"));
        }
        if !added.is_empty() {
            let (severity, rule) = if input {
                (Severity::Minor, "input-enum-value-added")
            } else {
                (Severity::Dangerous, "output-enum-value-added")
            };
            self.push(severity, rule, path, format!("enum values added: {added:?}"));
        }
    }

    fn additional(&mut self, old: &Value, new: &Value, path: &str, input: bool) {
        // Absent means allowed.
        let allows = |v: &Value| v.get("additionalProperties") != Some(&Value::Bool(false));
        match (allows(old), allows(new), input) {
            (true, false, true) => self.push(
                Severity::Breaking,
                "input-additional-properties-closed",
                path,
                "extra parameters are now refused".into(),
            ),
            (false, true, true) => self.push(
                Severity::Minor,
                "input-additional-properties-opened",
                path,
                "extra parameters are now accepted".into(),
            ),
            (false, true, false) => self.push(
                Severity::Dangerous,
                "output-additional-properties-opened",
                path,
                "results may now carry undeclared fields".into(),
            ),
            _ => {}
        }
    }

    fn variants(&mut self, old: &Value, new: &Value, path: &str, input: bool, combinator: &str) {
        let set = |v: &Value| -> Vec<String> {
            v[combinator]
                .as_array()
                .map(|a| a.iter().map(canonical).collect())
                .unwrap_or_default()
        };
        let (before, after) = (set(old), set(new));
        if before == after {
            return;
        }
        let removed = before.iter().filter(|v| !after.contains(v)).count();
        let added = after.iter().filter(|v| !before.contains(v)).count();
        let child = format!("{path}.{combinator}");
        // allOf narrows with every added branch; anyOf/oneOf widen.
        let narrows = if combinator == "allOf" {
            added > 0
        } else {
            removed > 0
        };
        let widens = if combinator == "allOf" {
            removed > 0
        } else {
            added > 0
        };
        if narrows {
            let (severity, rule) = if input {
                (Severity::Breaking, "input-variants-narrowed")
            } else {
                (Severity::Minor, "output-variants-narrowed")
            };
            self.push(
                severity,
                rule,
                &child,
                format!("{combinator}: {removed} branch(es) removed, {added} added"),
            );
        }
        if widens {
            let (severity, rule) = if input {
                (Severity::Minor, "input-variants-widened")
            } else {
                (Severity::Dangerous, "output-variants-widened")
            };
            self.push(
                severity,
                rule,
                &child,
                format!("{combinator}: {removed} branch(es) removed, {added} added"),
            );
        }
    }
}

/// Every change from `old` to `new`, most severe first.
pub fn diff(old: &Contract, new: &Contract) -> Vec<Change> {
    let mut changes = Vec::new();
    for (name, before) in &old.tools {
        let mut differ = Differ {
            tool: name,
            changes: Vec::new(),
        };
        let Some(after) = new.tools.get(name) else {
            differ.push(
                Severity::Breaking,
                "tool-removed",
                "",
                format!("tool `{name}` was removed"),
            );
            changes.extend(differ.changes);
            continue;
        };
        for field in ["description", "title"] {
            if before[field] != after[field] {
                differ.push(
                    Severity::Info,
                    "tool-text-changed",
                    field,
                    format!("{field} changed"),
                );
            }
        }
        differ.schema(&before["inputSchema"], &after["inputSchema"], "inputSchema", true);
        match (before.get("outputSchema"), after.get("outputSchema")) {
            (Some(b), Some(a)) => differ.schema(b, a, "outputSchema", false),
            (Some(_), None) => differ.push(
                Severity::Breaking,
                "output-schema-removed",
                "outputSchema",
                "the structured result is no longer declared".into(),
            ),
            (None, Some(_)) => differ.push(
                Severity::Minor,
                "output-schema-added",
                "outputSchema",
                "a structured result is now declared".into(),
            ),
            (None, None) => {}
        }
        let hint = |v: &Value, key: &str| v["annotations"][key].as_bool();
        for (key, risky, rule) in [
            ("destructiveHint", true, "became-destructive"),
            ("readOnlyHint", false, "no-longer-read-only"),
            ("openWorldHint", true, "became-open-world"),
            ("idempotentHint", false, "no-longer-idempotent"),
        ] {
            if hint(after, key) == Some(risky) && hint(before, key) != Some(risky) {
                differ.push(
                    Severity::Dangerous,
                    rule,
                    &format!("annotations.{key}"),
                    format!("{key} is now {risky}"),
                );
            }
        }
        changes.extend(differ.changes);
    }
    for name in new.tools.keys().filter(|n| !old.tools.contains_key(*n)) {
        changes.push(Change {
            severity: Severity::Minor,
            rule: "tool-added",
            tool: name.clone(),
            path: String::new(),
            message: format!("new tool `{name}`"),
        });
    }
    changes.sort_by(|a, b| a.severity.cmp(&b.severity).then_with(|| a.tool.cmp(&b.tool)));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(tools: &Value) -> Contract {
        Contract {
            tools: tools
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone()))
                .collect(),
        }
    }

    fn rules(changes: &[Change]) -> Vec<(&'static str, Severity)> {
        changes.iter().map(|c| (c.rule, c.severity)).collect()
    }

    #[test]
    fn each_kind_of_change_gets_its_rule_and_severity() {
        let old = contract(&json!([
            {"name": "search", "description": "Search.", "inputSchema": {"type": "object", "additionalProperties": true,
              "properties": {"q": {"type": "string"}, "mode": {"type": "string", "enum": ["fast", "deep"]},
                             "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": []},
                             "limit": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
              "required": ["q"]},
             "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}, "total": {"type": "integer"}}, "required": ["hits", "total"]},
             "annotations": {"readOnlyHint": true}},
            {"name": "legacy", "inputSchema": {"type": "object"}}
        ]));
        let new = contract(&json!([
            {"name": "search", "description": "Search things.", "inputSchema": {"type": "object", "additionalProperties": false,
              "properties": {"q": {"type": "string"}, "mode": {"type": "string", "enum": ["fast"]},
                             "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
                             "limit": {"anyOf": [{"type": "integer"}]}, "lang": {"type": "string"}},
              "required": ["q", "lang"]},
             "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}}, "required": ["hits"]},
             "annotations": {"readOnlyHint": false, "destructiveHint": true}},
            {"name": "fresh", "inputSchema": {"type": "object"}}
        ]));
        let changes = diff(&old, &new);
        let found = rules(&changes);
        for expected in [
            ("tool-removed", Severity::Breaking),
            ("input-required-added", Severity::Breaking),
            ("input-enum-value-removed", Severity::Breaking),
            ("input-became-required", Severity::Breaking),
            ("input-additional-properties-closed", Severity::Breaking),
            ("input-variants-narrowed", Severity::Breaking),
            ("output-property-removed", Severity::Breaking),
            ("became-destructive", Severity::Dangerous),
            ("no-longer-read-only", Severity::Dangerous),
            ("tool-added", Severity::Minor),
            ("tool-text-changed", Severity::Info),
        ] {
            assert!(found.contains(&expected), "{expected:?} missing from {found:#?}");
        }
        assert_eq!(changes[0].severity, Severity::Breaking, "most severe first");
        let nested = changes
            .iter()
            .find(|c| c.rule == "input-became-required")
            .unwrap();
        assert_eq!(
            nested.path, "inputSchema.properties.filter.required",
            "nested required is seen"
        );
        assert!(diff(&old, &old).is_empty());
    }
}
