//! JavaScript syntax, checked in-process the way `node --check` would: the parser
//! plus the semantic pass's early errors (a duplicate `let`, say), with the module
//! kind chosen from the extension and the nearest `package.json` `type`.

use std::path::{Path, PathBuf};

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;

/// Largest file checked (4 MiB); a bigger one is reported, not parsed.
pub const MAX_SOURCE_BYTES: u64 = 4 * 1024 * 1024;

/// How Node would load a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleKind {
    /// ES module: `.mjs`, or `.js` under `"type": "module"`.
    Module,
    /// CommonJS: `.cjs`, or `.js` under any other `type`.
    CommonJs,
}

impl ModuleKind {
    /// The kind Node picks for `path` given the `type` of its nearest `package.json`.
    pub fn for_file(path: &Path, package_type: Option<&str>) -> Option<Self> {
        match path.extension()?.to_str()? {
            "mjs" => Some(Self::Module),
            "js" if package_type == Some("module") => Some(Self::Module),
            "cjs" | "js" => Some(Self::CommonJs),
            _ => None,
        }
    }

    fn source_type(self) -> SourceType {
        match self {
            Self::Module => SourceType::mjs(),
            Self::CommonJs => SourceType::cjs(),
        }
    }
}

/// One syntax error, positioned like an editor counts (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SyntaxError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// What one file says: its syntax errors and the modules it imports statically.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    pub errors: Vec<SyntaxError>,
    /// Specifiers of static `import`/`export … from` (e.g. `./lib/a.js`, `@deepseek-ai/x`).
    pub imports: Vec<String>,
}

/// The syntax errors of `source` (the text of `file`) loaded as `kind`. A CommonJS
/// `.js` file that only parses as a module is accepted, as Node's module-syntax
/// detection loads it as one.
pub fn check_source(file: &Path, source: &str, kind: ModuleKind) -> Vec<SyntaxError> {
    analyze(file, source, kind).errors
}

/// [`check_source`] plus the file's static imports.
pub fn analyze(file: &Path, source: &str, kind: ModuleKind) -> Analysis {
    let analysis = analyze_as(file, source, kind);
    if analysis.errors.is_empty()
        || kind == ModuleKind::Module
        || file.extension().is_some_and(|e| e == "cjs")
    {
        return analysis;
    }
    let as_module = analyze_as(file, source, ModuleKind::Module);
    if as_module.errors.is_empty() {
        as_module
    } else {
        analysis
    }
}

fn analyze_as(file: &Path, source: &str, kind: ModuleKind) -> Analysis {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, kind.source_type()).parse();
    let mut imports: Vec<String> = parsed
        .module_record
        .requested_modules
        .keys()
        .map(ToString::to_string)
        .collect();
    imports.sort();
    let mut diagnostics: Vec<_> = parsed.diagnostics.errors().cloned().collect();
    if !parsed.panicked && diagnostics.is_empty() {
        let semantic = SemanticBuilder::new()
            .with_check_syntax_error(true)
            .build(&parsed.program);
        diagnostics.extend(semantic.diagnostics.errors().cloned());
    }
    let errors = diagnostics
        .iter()
        .map(|diagnostic| {
            // The primary label marks the offending place; for a redeclaration the
            // labels list the first declaration before the second, which Node reports.
            let label = diagnostic
                .labels
                .iter()
                .find(|l| l.primary())
                .or_else(|| diagnostic.labels.last());
            let offset = label.map_or(0, |label| label.offset() as usize);
            let (line, column) = line_column(source, offset);
            SyntaxError {
                file: file.to_owned(),
                line,
                column,
                message: diagnostic.message.to_string(),
            }
        })
        .collect();
    Analysis { errors, imports }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, source: &str, package_type: Option<&str>) -> Vec<SyntaxError> {
        let path = Path::new(name);
        check_source(path, source, ModuleKind::for_file(path, package_type).unwrap())
    }

    #[test]
    fn module_kind_follows_node() {
        assert_eq!(
            ModuleKind::for_file(Path::new("a.mjs"), None),
            Some(ModuleKind::Module)
        );
        assert_eq!(
            ModuleKind::for_file(Path::new("a.cjs"), Some("module")),
            Some(ModuleKind::CommonJs)
        );
        assert_eq!(
            ModuleKind::for_file(Path::new("a.js"), Some("module")),
            Some(ModuleKind::Module)
        );
        assert_eq!(
            ModuleKind::for_file(Path::new("a.js"), Some("commonjs")),
            Some(ModuleKind::CommonJs)
        );
        assert_eq!(ModuleKind::for_file(Path::new("a.ts"), None), None);
    }

    #[test]
    fn a_syntax_error_is_positioned() {
        let errors = check(
            "index.js",
            "export const name = 'x';\nexport function apply(ctx) {\n  ctx.on('ready', () => {\n}\n",
            Some("module"),
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].line >= 4, "{}", errors[0]);
        assert!(errors[0].to_string().starts_with("index.js:"));
    }

    #[test]
    fn a_duplicate_let_needs_the_semantic_pass_and_is_caught() {
        let errors = check("index.mjs", "let a = 1;\nlet a = 2;\n", None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].column), (2, 5));
        assert!(errors[0].message.contains('a'), "{}", errors[0].message);
    }

    #[test]
    fn commonjs_allows_top_level_return_and_detects_module_syntax() {
        assert!(check("a.js", "module.exports = 1;\nreturn;\n", None).is_empty());
        assert!(
            check("b.js", "export const x = 1;\n", None).is_empty(),
            "Node loads it as a module"
        );
        assert!(
            !check("c.cjs", "export const x = 1;\n", None).is_empty(),
            ".cjs is never a module"
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(line_column("é = ;", 5), (1, 5));
        assert_eq!(line_column("a\nbc", 3), (2, 2));
    }
}
