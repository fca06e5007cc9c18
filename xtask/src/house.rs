//! `cargo xtask house`: the house rules that can be measured, measured from the
//! code.
//!
//! - No two files of a crate import each other, directly or in a loop: the
//!   file-level import graph of each crate's `src/` (from `crate::`, `super::`,
//!   `self::` and child-module paths of product code) has no cycle.
//! - No product source file is over [`MAX_FILE_LINES`] lines (a tests module
//!   counts unless it is a file of its own).
//! - The binary crate's `src/` stays under [`MAX_BINARY_CODE_LINES`] code lines
//!   (neither blank nor comment).
//! - Only the binary crate and the MCP plumbing depend on `rmcp`.
//!
//! Each finding names its files; any finding fails the task.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest a product source file may be, in lines.
const MAX_FILE_LINES: usize = 1_000;
/// The binary crate's `src/` stays under this many code lines.
const MAX_BINARY_CODE_LINES: usize = 4_000;
/// The binary crate (CLI and MCP tool routers).
const BINARY_CRATE: &str = "dshkit";
/// The only crates that may depend on the MCP SDK.
const MCP_CRATES: [&str; 2] = ["dshkit", "dshkit-mcp"];
/// The MCP SDK.
const MCP_SDK: &str = "rmcp";

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(args.is_empty(), "usage: cargo xtask house");
    let crates_dir = crate::root().join("crates");
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&crates_dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    let mut findings = Vec::new();
    let (mut cyclic_crates, mut long_files) = (0, 0);
    for dir in &crates {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let src = dir.join("src");
        let sources = read_sources(&src)?;
        let graph = ImportGraph::of(&sources);
        let cycles = graph.cycles();
        let mutual = graph.mutual_pairs();
        if !cycles.is_empty() {
            cyclic_crates += 1;
        }
        for cycle in &cycles {
            findings.push(format!("import cycle in crates/{name}/src: {}", cycle.join(", ")));
        }
        for (a, b) in &mutual {
            findings.push(format!(
                "files importing each other in crates/{name}/src: {a} <-> {b}"
            ));
        }
        let tests = test_files(&sources);
        for (file, text) in &sources {
            let lines = text.lines().count();
            if lines > MAX_FILE_LINES && !tests.contains(file) {
                long_files += 1;
                findings.push(format!(
                    "crates/{name}/src/{file}: {lines} lines (at most {MAX_FILE_LINES})"
                ));
            }
        }
        if name == BINARY_CRATE {
            let code: usize = sources.values().map(|text| code_lines(text)).sum();
            println!(
                "crates/{name}/src: {code} code lines (under {MAX_BINARY_CODE_LINES}), {} import cycle(s)",
                cycles.len()
            );
            if code >= MAX_BINARY_CODE_LINES {
                findings.push(format!(
                    "crates/{name}/src: {code} code lines (under {MAX_BINARY_CODE_LINES} wanted)"
                ));
            }
        }
    }
    let mut sdk_users = 0;
    for dir in &crates {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
        let name = package_name(&manifest).unwrap_or_default();
        if !MCP_CRATES.contains(&name.as_str()) && depends_on(&manifest, MCP_SDK) {
            sdk_users += 1;
            findings.push(format!(
                "{}/Cargo.toml: `{name}` depends on {MCP_SDK} (only {} may)",
                relative(dir),
                MCP_CRATES.join(" and ")
            ));
        }
    }
    for finding in &findings {
        println!("{finding}");
    }
    println!(
        "house: {} finding(s): {cyclic_crates} crate(s) with import cycles, {long_files} file(s) over {MAX_FILE_LINES} lines, {sdk_users} other crate(s) on {MCP_SDK}",
        findings.len()
    );
    anyhow::ensure!(
        findings.is_empty(),
        "the house rules are broken ({} finding(s))",
        findings.len()
    );
    Ok(())
}

fn relative(dir: &Path) -> String {
    dir.strip_prefix(crate::root())
        .unwrap_or(dir)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every `.rs` file under `src`, by its path relative to `src` (`/`-separated).
fn read_sources(src: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src)?.to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&path)?);
            }
        }
    }
    Ok(out)
}

/// The module path a file defines: `lib.rs`/`main.rs` the root, `a/mod.rs` `a`,
/// `a/b.rs` `a::b`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    } else if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file-level import graph of one crate's `src/`.
#[derive(Debug, Default)]
struct ImportGraph {
    files: BTreeSet<String>,
    /// Imports from product code.
    product: BTreeMap<String, BTreeSet<String>>,
    /// Imports from test code.
    tests: BTreeMap<String, BTreeSet<String>>,
}

impl ImportGraph {
    /// The graph of `sources` (path relative to `src` → text).
    fn of(sources: &BTreeMap<String, String>) -> Self {
        let modules: BTreeMap<Vec<String>, String> = sources
            .keys()
            .map(|file| (module_of(file), file.clone()))
            .collect();
        let mut graph = Self {
            files: sources.keys().cloned().collect(),
            ..Self::default()
        };
        for (module, file) in &modules {
            let text = strip(&sources[file]);
            let children = child_modules(&text);
            for import in imports(&text) {
                let cur: Vec<String> = module.iter().chain(&import.inline).cloned().collect();
                let first = import.head[0].as_str();
                let (base, rest): (Vec<String>, Vec<String>) = if first == "crate" {
                    (Vec::new(), import.head[1..].to_vec())
                } else if first == "super" || first == "self" {
                    let mut base = cur;
                    let mut k = 0;
                    while k < import.head.len() && (import.head[k] == "super" || import.head[k] == "self") {
                        if import.head[k] == "super" {
                            base.pop();
                        }
                        k += 1;
                    }
                    (base, import.head[k..].to_vec())
                } else if import.inline.is_empty() && children.contains(first) {
                    (module.clone(), import.head.clone())
                } else {
                    continue;
                };
                let targets: Vec<Vec<String>> = match &import.group {
                    Some(items) => items
                        .iter()
                        .map(|segs| rest.iter().chain(segs).cloned().collect())
                        .collect(),
                    None => vec![rest],
                };
                for target in targets {
                    let Some(found) = resolve(&modules, &base, &target) else {
                        continue;
                    };
                    if found == *module {
                        continue;
                    }
                    let edges = if import.test {
                        &mut graph.tests
                    } else {
                        &mut graph.product
                    };
                    edges
                        .entry(file.clone())
                        .or_default()
                        .insert(modules[&found].clone());
                }
            }
        }
        graph
    }

    /// The groups of product files that import each other in a loop, each sorted.
    fn cycles(&self) -> Vec<Vec<String>> {
        strongly_connected(&self.files, &self.product)
            .into_iter()
            .filter(|group| group.len() > 1)
            .collect()
    }

    /// Pairs of product files that import each other directly.
    fn mutual_pairs(&self) -> BTreeSet<(String, String)> {
        let mut pairs = BTreeSet::new();
        for (a, targets) in &self.product {
            for b in targets {
                if self.product.get(b).is_some_and(|back| back.contains(a)) {
                    let (x, y) = if a < b { (a, b) } else { (b, a) };
                    pairs.insert((x.clone(), y.clone()));
                }
            }
        }
        pairs
    }
}

/// The longest prefix of `base` + `segs` that names a file module.
fn resolve(modules: &BTreeMap<Vec<String>, String>, base: &[String], segs: &[String]) -> Option<Vec<String>> {
    let full: Vec<String> = base.iter().chain(segs).cloned().collect();
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|prefix| modules.contains_key(prefix))
}

/// Tarjan's strongly connected components, each sorted.
fn strongly_connected(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, v: &'a str) {
        let n = state.index.len();
        state.index.insert(v, n);
        state.low.insert(v, n);
        state.stack.push(v);
        state.on_stack.insert(v);
        for w in state.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !state.index.contains_key(w) {
                visit(state, w);
                let low = state.low[v].min(state.low[w]);
                state.low.insert(v, low);
            } else if state.on_stack.contains(w) {
                let low = state.low[v].min(state.index[w]);
                state.low.insert(v, low);
            }
        }
        if state.low[v] == state.index[v] {
            let mut group = Vec::new();
            while let Some(w) = state.stack.pop() {
                state.on_stack.remove(w);
                group.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            group.sort();
            state.out.push(group);
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in nodes {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.out
}

/// One path that may name another file of the crate.
#[derive(Debug, PartialEq, Eq)]
struct Import {
    /// The inline modules it is written in, outermost first.
    inline: Vec<String>,
    /// Its segments before any `{` group.
    head: Vec<String>,
    /// The items of its `{...}` group, each as segments.
    group: Option<Vec<Vec<String>>>,
    /// Written in test code (under `#[cfg(test)]`).
    test: bool,
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn skip_space(text: &[u8], mut i: usize) -> usize {
    while i < text.len() && text[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The identifier at `i` (`[A-Za-z_][A-Za-z0-9_]*`), its end.
fn ident_end(text: &[u8], i: usize) -> Option<usize> {
    let first = *text.get(i)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let mut j = i + 1;
    while j < text.len() && (text[j].is_ascii_alphanumeric() || text[j] == b'_') {
        j += 1;
    }
    Some(j)
}

/// The path starting at `i`: a lowercase first segment, then one or more
/// `::` segments (an identifier, `*` or a `{...}` group); its end.
fn path_end(text: &[u8], i: usize) -> Option<usize> {
    let end = ident_end(text, i)?;
    let first = &text[i..end];
    if !(first[0].is_ascii_lowercase() || first[0] == b'_')
        || !first
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
    {
        return None;
    }
    let mut end = end;
    let mut segments = 0;
    loop {
        let j = skip_space(text, end);
        if !text[j..].starts_with(b"::") {
            break;
        }
        let k = skip_space(text, j + 2);
        let next = match text.get(k) {
            Some(b'{') => text[k..]
                .iter()
                .position(|c| *c == b'}' || *c == b';')
                .filter(|p| text[k + p] == b'}')
                .map(|p| k + p + 1),
            Some(b'*') => Some(k + 1),
            _ => ident_end(text, k),
        };
        let Some(next) = next else { break };
        end = next;
        segments += 1;
    }
    (segments > 0).then_some(end)
}

/// Splits a path's text into its segments (`a :: b` → `a`, `b`), dropping empty
/// ones and those `skip` names.
fn segments(text: &str, skip: &[&str]) -> Vec<String> {
    let head = text.split('{').next().unwrap_or_default();
    let head = head.trim_end_matches([':', ' ']);
    head.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty() && !skip.contains(s))
        .map(str::to_owned)
        .collect()
}

/// The `{...}` group at the end of a path, split into its items' segments.
fn group_items(path: &str) -> Option<Vec<Vec<String>>> {
    let bytes = path.as_bytes();
    let open = (0..bytes.len())
        .find(|&i| bytes[i..].starts_with(b"::") && bytes.get(skip_space(bytes, i + 2)) == Some(&b'{'))?;
    let open = skip_space(bytes, open + 2);
    let close = path.trim_end().len().checked_sub(1)?;
    if close <= open || bytes[close] != b'}' {
        return None;
    }
    let inner = &path[open + 1..close];
    Some(
        inner
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| segments(item, &["*", "self"]))
            .collect(),
    )
}

/// The paths of `text` (comments and literals stripped) that may name a file of
/// the crate, with the inline modules around them and whether they are test code.
fn imports(text: &str) -> Vec<Import> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // (name, depth at its brace, is test code)
    let mut stack: Vec<(String, usize, bool)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_test = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"#[cfg(test)]") {
            pending_test = true;
            i += b"#[cfg(test)]".len();
            continue;
        }
        let word_start = i == 0 || !is_word(bytes[i - 1]);
        if word_start && rest.starts_with(b"mod") && rest.get(3).is_some_and(u8::is_ascii_whitespace) {
            let name_at = skip_space(bytes, i + 3);
            if let Some(name_end) = ident_end(bytes, name_at) {
                let brace = skip_space(bytes, name_end);
                if bytes.get(brace) == Some(&b'{') && !bytes.get(name_end).is_some_and(|c| is_word(*c)) {
                    depth += 1;
                    let in_tests = pending_test || stack.iter().any(|(_, _, t)| *t);
                    stack.push((text[name_at..name_end].to_owned(), depth, in_tests));
                    pending_test = false;
                    i = brace + 1;
                    continue;
                }
            }
        }
        match bytes[i] {
            b'{' => {
                depth += 1;
                i += 1;
                continue;
            }
            b'}' => {
                if stack.last().is_some_and(|(_, d, _)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
                continue;
            }
            _ => {}
        }
        let path_start = i == 0 || !(is_word(bytes[i - 1]) || bytes[i - 1] == b':');
        if path_start && let Some(end) = path_end(bytes, i) {
            let path = &text[i..end];
            let head = segments(path, &["*"]);
            if !head.is_empty() {
                let group = if path.contains('{') {
                    group_items(path)
                } else {
                    None
                };
                out.push(Import {
                    inline: stack.iter().map(|(name, _, _)| name.clone()).collect(),
                    head,
                    group,
                    test: pending_test || stack.iter().any(|(_, _, t)| *t),
                });
            }
            i = end;
            continue;
        }
        // Skip the rest of a word: a path never starts inside one.
        if is_word(bytes[i]) {
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The child modules `text` declares as files (`mod a;`, `pub(crate) mod a;`).
fn child_modules(text: &str) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let mut rest = line.trim_start();
        if let Some(after) = rest.strip_prefix("pub") {
            let after = if let Some(scoped) = after.strip_prefix('(') {
                match scoped.find(')') {
                    Some(close) => &scoped[close + 1..],
                    None => continue,
                }
            } else {
                after
            };
            if !after.starts_with(char::is_whitespace) {
                continue;
            }
            rest = after.trim_start();
        }
        let Some(after) = rest.strip_prefix("mod") else {
            continue;
        };
        if !after.starts_with(char::is_whitespace) {
            continue;
        }
        let after = after.trim_start();
        let name_len = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].trim_start().starts_with(';') {
            out.insert(&after[..name_len]);
        }
    }
    out
}

/// The files of `sources` that are tests modules of their own: declared under
/// `#[cfg(test)]` (`#[cfg(test)] mod tests;`), and the files below them.
fn test_files(sources: &BTreeMap<String, String>) -> BTreeSet<String> {
    let modules: BTreeMap<Vec<String>, &String> =
        sources.keys().map(|file| (module_of(file), file)).collect();
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    for (module, file) in &modules {
        let text = strip(&sources[*file]);
        let mut attributes = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[") {
                attributes.push_str(line);
                continue;
            }
            let is_test = attributes.contains("cfg(test)") || attributes.contains("cfg(all(test");
            attributes.clear();
            if is_test && let Some(name) = child_modules(line).into_iter().next() {
                let mut child = module.clone();
                child.push(name.to_owned());
                test_modules.push(child);
            }
        }
    }
    modules
        .iter()
        .filter(|(module, _)| test_modules.iter().any(|t| module.starts_with(t)))
        .map(|(_, file)| (*file).clone())
        .collect()
}

/// The lines of `text` with code on them: neither blank nor only comment.
fn code_lines(text: &str) -> usize {
    lex(text, true)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .count()
}

/// `text` without comments, its string and char literals blanked to `""`
/// and `''` (lifetimes kept): what import paths are read from.
fn strip(text: &str) -> String {
    lex(text, false)
}

/// Drops comments. With `keep_lines`, every newline stays and a literal's text
/// becomes `x`s (so lines can be counted); without, a block comment goes whole
/// and a literal becomes `""` or `''`.
fn lex(text: &str, keep_lines: bool) -> String {
    let src = text.as_bytes();
    let n = src.len();
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let blank = |out: &mut Vec<u8>, span: &[u8], quote: &[u8]| {
        if keep_lines {
            out.extend(span.iter().map(|c| if *c == b'\n' { b'\n' } else { b'x' }));
        } else {
            out.extend_from_slice(quote);
        }
    };
    let mut i = 0;
    while i < n {
        let ch = src[i];
        if src[i..].starts_with(b"//") {
            i = src[i..].iter().position(|c| *c == b'\n').map_or(n, |p| i + p);
            continue;
        }
        if src[i..].starts_with(b"/*") {
            let mut depth = 1;
            i += 2;
            while i < n && depth > 0 {
                if src[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if src[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                } else {
                    if keep_lines && src[i] == b'\n' {
                        out.push(b'\n');
                    }
                    i += 1;
                }
            }
            continue;
        }
        if (ch == b'b' || ch == b'r')
            && (i == 0 || !(src[i - 1].is_ascii_alphanumeric() || src[i - 1] == b'_'))
        {
            // A raw string: `r"`, `r#"`, `br#"` ...
            let mut at = i;
            if src[at] == b'b' {
                at += 1;
            }
            if src.get(at) == Some(&b'r') {
                at += 1;
                let hashes = src[at..].iter().take_while(|c| **c == b'#').count();
                if src.get(at + hashes) == Some(&b'"') && at + hashes + 1 - i <= 10 {
                    let mut end = vec![b'"'];
                    end.extend(std::iter::repeat_n(b'#', hashes));
                    let body = at + hashes + 1;
                    let close = src[body..].windows(end.len()).position(|w| w == end.as_slice());
                    let stop = close.map_or(n, |p| body + p + end.len());
                    blank(&mut out, &src[i..stop], b"\"\"");
                    i = stop;
                    continue;
                }
            }
        }
        if ch == b'"' {
            let mut end = i + 1;
            while end < n && src[end] != b'"' {
                end += if src[end] == b'\\' { 2 } else { 1 };
            }
            let stop = (end + 1).min(n);
            blank(&mut out, &src[i..stop], b"\"\"");
            i = stop;
            continue;
        }
        if ch == b'\''
            && let Some(len) = char_literal(&src[i..])
        {
            blank(&mut out, &src[i..i + len], b"''");
            i += len;
            continue;
        }
        out.push(ch);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The length of the char literal at the start of `b` (`'a'`, `'\n'`,
/// `'\x7f'`, `'\u{1F600}'`, `'é'`), or `None` for a lifetime.
fn char_literal(b: &[u8]) -> Option<usize> {
    let body = b.get(1..)?;
    let len = if body.first() == Some(&b'\\') {
        match body.get(1)? {
            b'x' if body.len() >= 4 && body[2..4].iter().all(u8::is_ascii_hexdigit) => 4,
            b'u' if body.get(2) == Some(&b'{') => {
                let digits = body[3..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
                if digits == 0 || body.get(3 + digits) != Some(&b'}') {
                    return None;
                }
                4 + digits
            }
            _ => 2,
        }
    } else {
        let first = *body.first()?;
        if first == b'\'' {
            return None;
        }
        // One UTF-8 character.
        match first {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        }
    };
    (body.get(len) == Some(&b'\'')).then_some(len + 2)
}

/// `[package] name` of a manifest.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// Whether a manifest depends on `dependency` (normal, dev, build or
/// target-specific; by its key or renamed with `package = "..."`).
fn depends_on(manifest: &str, dependency: &str) -> bool {
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            let parts: Vec<&str> = header.split('.').map(|p| p.trim().trim_matches('"')).collect();
            if let Some(at) = parts.iter().position(|p| p.ends_with("dependencies")) {
                if parts.get(at + 1) == Some(&dependency) {
                    return true;
                }
                in_dependencies = parts.len() == at + 1;
            } else {
                in_dependencies = false;
            }
            continue;
        }
        if !in_dependencies {
            continue;
        }
        let key = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or_default()
            .trim_matches('"');
        let renamed = line
            .replace(' ', "")
            .contains(&format!("package=\"{dependency}\""));
        if key == dependency || renamed {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect()
    }

    fn edges(graph: &ImportGraph) -> Vec<(String, String)> {
        graph
            .product
            .iter()
            .flat_map(|(from, to)| to.iter().map(move |t| (from.clone(), t.clone())))
            .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn a_loop_through_three_files_is_a_cycle() {
        let graph = ImportGraph::of(&sources(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "use crate::{c::C, a};\npub struct B;\n"),
            ("c.rs", "pub struct C(super::a::A);\n"),
        ]));
        assert_eq!(graph.cycles(), [vec!["a.rs", "b.rs", "c.rs"]]);
        assert_eq!(graph.mutual_pairs(), BTreeSet::from([pair("a.rs", "b.rs")]));
    }

    #[test]
    fn imports_in_one_direction_are_no_cycle() {
        let graph = ImportGraph::of(&sources(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::B;\n"),
            (
                "a.rs",
                "use crate::b::B;\n// use crate::lib::X; a comment is no import\npub struct A(B);\nconst S: &str = \"crate::lib\";\n",
            ),
            (
                "b.rs",
                "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
            ),
        ]));
        assert!(graph.cycles().is_empty(), "{:?}", edges(&graph));
        assert!(graph.mutual_pairs().is_empty());
        assert_eq!(
            edges(&graph),
            [
                pair("a.rs", "b.rs"),
                pair("lib.rs", "a.rs"),
                pair("lib.rs", "b.rs")
            ]
        );
        assert_eq!(
            graph.tests.get("b.rs"),
            Some(&BTreeSet::from(["a.rs".to_owned()])),
            "a test's import is counted apart"
        );
    }

    #[test]
    fn super_in_a_mod_rs_names_the_parent_of_its_directory() {
        let graph = ImportGraph::of(&sources(&[
            ("lib.rs", "mod net;\nmod util;\n"),
            ("util.rs", "pub fn f() {}\n"),
            (
                "net/mod.rs",
                "mod http;\nuse super::util::f;\npub use http::Conn;\n",
            ),
            (
                "net/http.rs",
                "pub struct Conn;\nfn g() { super::super::util::f(); }\n",
            ),
        ]));
        assert_eq!(
            edges(&graph),
            [
                pair("net/http.rs", "util.rs"),
                pair("net/mod.rs", "net/http.rs"),
                pair("net/mod.rs", "util.rs")
            ]
        );
        assert!(graph.cycles().is_empty());
        // `super::` in `net/http.rs` is `net/mod.rs`: the two import each other.
        let graph = ImportGraph::of(&sources(&[
            ("lib.rs", "mod net;\n"),
            ("net/mod.rs", "mod http;\npub use http::Conn;\npub struct Pool;\n"),
            ("net/http.rs", "use super::Pool;\npub struct Conn(Pool);\n"),
        ]));
        assert_eq!(graph.cycles(), [vec!["net/http.rs", "net/mod.rs"]]);
    }

    #[test]
    fn a_tests_file_is_known_and_code_lines_leave_comments_out() {
        let files = sources(&[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", "#[cfg(test)]\nmod tests;\nmod b;\n"),
            ("a/tests.rs", ""),
            ("a/b.rs", ""),
        ]);
        assert_eq!(test_files(&files), BTreeSet::from(["a/tests.rs".to_owned()]));
        let text = "// a comment\n\nfn f() {\n    /* inline\n       block */\n    let s = \"two\nlines\"; // end\n}\n";
        assert_eq!(code_lines(text), 4);
    }

    #[test]
    fn only_a_dependency_on_the_sdk_counts() {
        let manifest =
            "[package]\nname = \"x\"\n\n[dependencies]\nrmcp-like = \"1\"\nserde.workspace = true\n";
        assert_eq!(package_name(manifest).as_deref(), Some("x"));
        assert!(!depends_on(manifest, "rmcp"));
        assert!(depends_on(&format!("{manifest}rmcp.workspace = true\n"), "rmcp"));
        assert!(depends_on(
            "[dev-dependencies]\nrmcp = { workspace = true }\n",
            "rmcp"
        ));
        assert!(depends_on(
            "[target.'cfg(unix)'.dependencies.rmcp]\nworkspace = true\n",
            "rmcp"
        ));
        assert!(depends_on(
            "[dependencies]\nmcp = { package = \"rmcp\", version = \"1\" }\n",
            "rmcp"
        ));
        assert!(!depends_on("[features]\nrmcp = []\n", "rmcp"));
    }
}
