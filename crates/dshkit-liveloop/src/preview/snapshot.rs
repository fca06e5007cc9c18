//! The DOM snapshot: a fixed internal script, refs with generations, and the
//! compact outline the model reads.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The snapshot script; with [`PAGE_TEXT_SCRIPT`], the only script dshkit
/// evaluates in a page to read it.
pub const SNAPSHOT_SCRIPT: &str = include_str!("snapshot.js");
/// The page text as a person reads it, open shadow roots included: the
/// snapshot's text and what text assertions and waits look in.
pub const PAGE_TEXT_SCRIPT: &str = include_str!("page_text.js");
/// Installed before any page script: notes the hosts of closed shadow roots, so
/// a snapshot names what it cannot read.
pub const CLOSED_ROOTS_SCRIPT: &str = include_str!("closed_roots.js");
/// Framework tooling that is not the app, by its element's name: left out of the
/// outline, the page text and the warnings with everything inside it. Astro's
/// dev toolbar (a shadow root of its own on every page of `astro dev`).
pub const FRAMEWORK_TOOLING: &[&str] = &["astro-dev-toolbar"];
/// A framework's error overlay, by its element's name: read for its message
/// ([`ErrorOverlay`]) and otherwise left out like tooling, so its code frame
/// (the app's source) never passes a text assertion. `vite-error-overlay`, which
/// Vite draws and Astro draws its own under the same name.
pub const FRAMEWORK_ERROR_OVERLAYS: &[&str] = &["vite-error-overlay"];
/// Most hosts of closed shadow roots a snapshot's warning names (it counts the rest).
pub const MAX_NAMED_CLOSED_HOSTS: usize = 5;
/// Longest error overlay message or file kept (characters).
pub const MAX_OVERLAY_CHARS: usize = 500;
/// Nodes an outline shows by default (the compact view; more by paging).
pub const DEFAULT_MAX_NODES: usize = 400;
/// Most nodes one snapshot collects (every one of them reachable by paging,
/// scoping or search, with refs of the same generation).
pub const MAX_SNAPSHOT_NODES: usize = 5000;
/// Longest outline text one view returns (characters).
pub const MAX_VIEW_CHARS: usize = 30_000;
/// Most nodes a search returns.
pub const MAX_FOUND: usize = 50;
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

impl Node {
    /// The node's outline line, indented by its depth below `base`.
    pub fn line(&self, base: usize) -> String {
        let mut out = "  ".repeat(self.depth.saturating_sub(base).min(12));
        out.push_str("- ");
        out.push_str(&self.role);
        if !self.name.is_empty() {
            out.push_str(&format!(" {:?}", self.name));
        }
        if let Some(level) = self.level {
            out.push_str(&format!(" [level={level}]"));
        }
        if let Some(reference) = &self.reference {
            out.push_str(&format!(" [ref={reference}]"));
        }
        if let Some(value) = &self.value {
            out.push_str(&format!(" value={value:?}"));
        }
        if !self.state.is_empty() {
            out.push_str(&format!(" ({})", self.state.join(", ")));
        }
        out.push('\n');
        out
    }
}

/// A framework's error overlay on the page (`vite-error-overlay`, drawn by Vite
/// or by Astro): the dev server's own account of why the app's code did not
/// build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorOverlay {
    /// The framework that drew it (`vite`, `astro`).
    pub source: String,
    /// The error, with the plugin that raised it (at most [`MAX_OVERLAY_CHARS`]).
    pub message: String,
    /// The file, line and column it names, when it names one.
    #[serde(default)]
    pub file: String,
}

impl ErrorOverlay {
    /// One line for a reason: who says what, and where.
    pub fn summary(&self) -> String {
        let who = match self.source.as_str() {
            "vite" => "Vite",
            "astro" => "Astro",
            other => other,
        };
        let mut line = format!("{who}'s error overlay shows: {}", self.message);
        if !self.file.is_empty() && !self.message.contains(&self.file) {
            line.push_str(&format!(" (at {})", self.file));
        }
        line
    }
}

/// One page of an outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutlineView {
    pub text: String,
    /// Index of the first node shown (within the scope).
    pub from: usize,
    pub shown: usize,
    /// Nodes in the scope.
    pub total: usize,
    /// Where the next page starts, when there is one.
    pub next: Option<usize>,
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
    /// A framework's error overlay covering the page, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_overlay: Option<ErrorOverlay>,
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
        self.nodes.iter().map(|node| node.line(0)).collect()
    }

    /// A part of the outline: the nodes under `within` (a ref; the whole page when
    /// `None`), starting at the `from`-th of them, at most `limit` nodes and
    /// [`MAX_VIEW_CHARS`] characters.
    pub fn view(&self, from: usize, limit: usize, within: Option<&str>) -> Result<OutlineView, String> {
        let scope: &[Node] = match within {
            None => &self.nodes,
            Some(reference) => {
                let start = self
                    .nodes
                    .iter()
                    .position(|n| n.reference.as_deref() == Some(reference))
                    .ok_or_else(|| {
                        format!("no element {reference} in the last snapshot (generation {}); take a snapshot and use one of its refs", self.generation)
                    })?;
                let depth = self.nodes[start].depth;
                let end = self.nodes[start + 1..]
                    .iter()
                    .position(|n| n.depth <= depth)
                    .map_or(self.nodes.len(), |offset| start + 1 + offset);
                &self.nodes[start..end]
            }
        };
        let base = scope.first().map_or(0, |n| n.depth);
        let mut text = String::new();
        let mut shown = 0;
        for node in scope.iter().skip(from).take(limit) {
            let line = node.line(base);
            if text.len() + line.len() > MAX_VIEW_CHARS && shown > 0 {
                break;
            }
            text.push_str(&line);
            shown += 1;
        }
        let end = from.min(scope.len()) + shown;
        Ok(OutlineView {
            text,
            from,
            shown,
            total: scope.len(),
            next: (end < scope.len()).then_some(end),
        })
    }

    /// Nodes whose name or value contains `text` (ignoring case) and whose role is
    /// `role`, when given; at most [`MAX_FOUND`], and how many matched in all.
    pub fn search(&self, text: Option<&str>, role: Option<&str>) -> (Vec<&Node>, usize) {
        let needle = text.map(str::to_lowercase);
        let matches = self.nodes.iter().filter(|n| {
            role.is_none_or(|r| n.role == r)
                && needle.as_deref().is_none_or(|needle| {
                    n.name.to_lowercase().contains(needle)
                        || n.value
                            .as_deref()
                            .is_some_and(|v| v.to_lowercase().contains(needle))
                })
        });
        let all: Vec<&Node> = matches.collect();
        let total = all.len();
        (all.into_iter().take(MAX_FOUND).collect(), total)
    }

    /// The nodes with a ref whose role and name match.
    pub fn find(&self, role: &str, name: &str) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.reference.is_some() && n.role == role && n.name.trim() == name.trim())
            .collect()
    }
}

/// The snapshot as a function of its generation, with its limits and the page
/// text script in it: one constant source, which V8 compiles once per document
/// when it is called through `Runtime.callFunctionOn` (an expression with the
/// generation in it is compiled anew on every snapshot, about 1 ms here).
pub(super) static SNAPSHOT_FUNCTION: LazyLock<String> = LazyLock::new(|| {
    let tooling = serde_json::to_string(FRAMEWORK_TOOLING).expect("names serialize");
    let overlays = serde_json::to_string(FRAMEWORK_ERROR_OVERLAYS).expect("names serialize");
    format!(
        "function (generation) {{ return ({SNAPSHOT_SCRIPT})(generation, {{maxNodes: {MAX_SNAPSHOT_NODES}, maxVisited: {DEFAULT_MAX_VISITED}, maxName: {DEFAULT_MAX_NAME_CHARS}, maxText: {DEFAULT_MAX_TEXT_CHARS}, maxOverlay: {MAX_OVERLAY_CHARS}, maxNamedHosts: {MAX_NAMED_CLOSED_HOSTS}, tooling: {tooling}, overlays: {overlays}}}, {PAGE_TEXT_SCRIPT}); }}"
    )
});

/// The expression that runs the snapshot for `generation` (where the page's main
/// world is not known: [`SNAPSHOT_FUNCTION`] is cheaper).
pub fn snapshot_expression(generation: u64) -> String {
    format!("({})({generation})", *SNAPSHOT_FUNCTION)
}

/// The expression that is true when the whole page text (not the snapshot's
/// bounded copy) contains `needle`.
pub fn text_includes_expression(needle: &str) -> String {
    let left_out: Vec<&str> = FRAMEWORK_TOOLING
        .iter()
        .chain(FRAMEWORK_ERROR_OVERLAYS)
        .copied()
        .collect();
    let left_out = serde_json::to_string(&left_out).expect("names serialize");
    let needle = serde_json::to_string(needle).expect("a string serializes");
    format!("({PAGE_TEXT_SCRIPT})({left_out}).includes({needle})")
}

/// The expression that tells whether an error overlay is on the page (`"shown"`),
/// may still be drawn (`"awaited"`: the page loads Vite's dev client, which
/// draws it once the server tells it of a build error), or will not (`"none"`).
pub(super) fn error_overlay_probe_expression() -> String {
    let overlays = serde_json::to_string(FRAMEWORK_ERROR_OVERLAYS).expect("names serialize");
    format!(
        "{overlays}.some((name) => document.querySelector(name)) ? 'shown' \
         : document.querySelector('script[src*=\"/@vite/client\"]') ? 'awaited' : 'none'"
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
            error_overlay: None,
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

    #[test]
    fn an_error_overlay_names_its_framework_and_its_place_once() {
        let overlay = ErrorOverlay {
            source: "vite".into(),
            message: "[plugin:vite:oxc] Expected `,` or `)` but found `;`".into(),
            file: "/app/src/App.jsx:4:39".into(),
        };
        assert_eq!(
            overlay.summary(),
            "Vite's error overlay shows: [plugin:vite:oxc] Expected `,` or `)` but found `;` (at /app/src/App.jsx:4:39)"
        );
        let named = ErrorOverlay {
            source: "astro".into(),
            message: "CompilerError: Unexpected \";\" at /app/src/pages/index.astro:2:14".into(),
            file: "/app/src/pages/index.astro:2:14".into(),
        };
        assert_eq!(
            named.summary(),
            "Astro's error overlay shows: CompilerError: Unexpected \";\" at /app/src/pages/index.astro:2:14"
        );
    }

    #[test]
    fn the_page_text_leaves_out_tooling_and_error_overlays_and_quotes_the_needle() {
        let expression = text_includes_expression("a\"); alert(1); (\"");
        assert!(
            expression.contains(r#"["astro-dev-toolbar","vite-error-overlay"]"#),
            "{expression}"
        );
        assert!(
            expression.ends_with(r#".includes("a\"); alert(1); (\"")"#),
            "{expression}"
        );
    }

    fn wide(rows: usize) -> Snapshot {
        let mut nodes = vec![Node {
            role: "table".into(),
            name: String::new(),
            depth: 0,
            reference: None,
            level: None,
            value: None,
            state: vec![],
        }];
        for row in 0..rows {
            nodes.push(Node {
                role: "button".into(),
                name: format!("Row {row}"),
                depth: 1,
                reference: Some(format!("r1-{row}")),
                level: None,
                value: None,
                state: vec![],
            });
        }
        nodes.push(Node {
            role: "link".into(),
            name: "Footer".into(),
            depth: 0,
            reference: Some("r1-footer".into()),
            level: None,
            value: None,
            state: vec![],
        });
        Snapshot {
            generation: 1,
            url: "http://127.0.0.1:1/".into(),
            title: "t".into(),
            nodes,
            warnings: vec![],
            error_overlay: None,
            text: String::new(),
            text_truncated: false,
            text_length: 0,
            ready_state: "complete".into(),
        }
    }

    #[test]
    fn every_node_of_a_large_page_is_reachable_page_by_page() {
        let snapshot = wide(900);
        let mut from = 0;
        let mut seen = 0;
        loop {
            let view = snapshot.view(from, DEFAULT_MAX_NODES, None).unwrap();
            assert!(view.text.len() <= MAX_VIEW_CHARS);
            seen += view.shown;
            match view.next {
                Some(next) => from = next,
                None => break,
            }
        }
        assert_eq!(seen, 902, "the table, 900 rows and the footer");
        let page = snapshot.view(400, DEFAULT_MAX_NODES, None).unwrap();
        assert!(page.text.starts_with("  - button \"Row 399\""), "{}", page.text);
    }

    #[test]
    fn a_view_within_a_ref_is_its_subtree_and_search_returns_refs() {
        let mut snapshot = wide(3);
        snapshot.nodes[0].reference = Some("r1-table".into());
        let view = snapshot.view(0, 100, Some("r1-table")).unwrap();
        assert_eq!(view.total, 4, "the table and its rows, not the footer");
        assert!(!view.text.contains("Footer"));
        assert!(snapshot.view(0, 100, Some("r9-9")).is_err());
        let (found, total) = snapshot.search(Some("row 2"), None);
        assert_eq!(total, 1);
        assert_eq!(found[0].reference.as_deref(), Some("r1-2"));
        let (links, _) = snapshot.search(None, Some("link"));
        assert_eq!(links[0].name, "Footer");
        let large = wide(300);
        let (many, total) = large.search(Some("row"), Some("button"));
        assert_eq!((many.len(), total), (MAX_FOUND, 300));
    }
}
