//! The DOM snapshot: a fixed internal script, refs with generations, and the
//! compact outline the model reads.

use serde::{Deserialize, Serialize};

/// The snapshot script; the only script dshkit evaluates in a page to read it.
pub const SNAPSHOT_SCRIPT: &str = include_str!("snapshot.js");
/// Most nodes in an outline.
pub const DEFAULT_MAX_NODES: usize = 400;
/// Most elements visited in one walk.
pub const DEFAULT_MAX_VISITED: usize = 20_000;
/// Longest accessible name or value kept (characters).
pub const DEFAULT_MAX_NAME_CHARS: usize = 80;
/// Longest body text kept (characters).
pub const DEFAULT_MAX_TEXT_CHARS: usize = 4000;

/// One node of the outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub role: String,
    pub name: String,
    pub depth: usize,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<String>,
}

/// A snapshot as the script returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    #[serde(default)]
    pub generation: u64,
    pub url: String,
    pub title: String,
    pub nodes: Vec<Node>,
    pub warnings: Vec<String>,
    pub text: String,
    pub text_truncated: bool,
    pub text_length: usize,
    pub ready_state: String,
}

impl Snapshot {
    /// The compact outline: one line per node, indented by depth.
    ///
    /// ```text
    /// - heading "Sign in" [level=1]
    /// - textbox "Email" [ref=r2-1] value="a@b.c"
    /// - button "Sign in" [ref=r2-2] (disabled)
    /// ```
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            out.push_str(&"  ".repeat(node.depth.min(12)));
            out.push_str("- ");
            out.push_str(&node.role);
            if !node.name.is_empty() {
                out.push_str(&format!(" {:?}", node.name));
            }
            if let Some(level) = node.level {
                out.push_str(&format!(" [level={level}]"));
            }
            if let Some(reference) = &node.reference {
                out.push_str(&format!(" [ref={reference}]"));
            }
            if let Some(value) = &node.value {
                out.push_str(&format!(" value={value:?}"));
            }
            if !node.state.is_empty() {
                out.push_str(&format!(" ({})", node.state.join(", ")));
            }
            out.push('\n');
        }
        out
    }

    /// The nodes with a ref whose role and name match.
    pub fn find(&self, role: &str, name: &str) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.reference.is_some() && n.role == role && n.name.trim() == name.trim())
            .collect()
    }
}

/// The expression that runs the script for `generation`.
pub fn snapshot_expression(generation: u64) -> String {
    format!(
        "({SNAPSHOT_SCRIPT})({generation}, {{maxNodes: {DEFAULT_MAX_NODES}, maxVisited: {DEFAULT_MAX_VISITED}, maxName: {DEFAULT_MAX_NAME_CHARS}, maxText: {DEFAULT_MAX_TEXT_CHARS}}})"
    )
}

/// A parsed element ref `r<generation>-<index>`.
pub fn parse_ref(reference: &str) -> Option<(u64, u64)> {
    let (generation, index) = reference.strip_prefix('r')?.split_once('-')?;
    Some((generation.parse().ok()?, index.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_parse_and_garbage_does_not() {
        assert_eq!(parse_ref("r3-12"), Some((3, 12)));
        for bad in ["3-12", "r3", "rx-1", "r3-", "'];alert(1)//"] {
            assert_eq!(parse_ref(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_outline_is_compact_and_carries_refs_values_and_state() {
        let snapshot = Snapshot {
            generation: 2,
            url: "http://127.0.0.1:1/".into(),
            title: "t".into(),
            nodes: vec![
                Node {
                    role: "heading".into(),
                    name: "Sign in".into(),
                    depth: 0,
                    reference: None,
                    level: Some(1),
                    value: None,
                    state: vec![],
                },
                Node {
                    role: "textbox".into(),
                    name: "Email".into(),
                    depth: 1,
                    reference: Some("r2-1".into()),
                    level: None,
                    value: Some("a@b.c".into()),
                    state: vec![],
                },
                Node {
                    role: "button".into(),
                    name: "Go".into(),
                    depth: 1,
                    reference: Some("r2-2".into()),
                    level: None,
                    value: None,
                    state: vec!["disabled".into()],
                },
            ],
            warnings: vec![],
            text: String::new(),
            text_truncated: false,
            text_length: 0,
            ready_state: "complete".into(),
        };
        assert_eq!(
            snapshot.outline(),
            "- heading \"Sign in\" [level=1]\n  - textbox \"Email\" [ref=r2-1] value=\"a@b.c\"\n  - button \"Go\" [ref=r2-2] (disabled)\n"
        );
        assert_eq!(snapshot.find("button", "Go").len(), 1);
        assert!(snapshot.find("button", "Stop").is_empty());
    }
}
