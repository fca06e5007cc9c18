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

/// A source file's text, opened once: one larger than
/// [`MAX_SOURCE_BYTES`] is not read.
pub(crate) fn read_source(file: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let opened = std::fs::File::open(file).map_err(|e| e.to_string())?;
    let size = opened.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_SOURCE_BYTES {
        return Err(format!("larger than {MAX_SOURCE_BYTES} bytes; not checked"));
    }
    let mut text = String::with_capacity(usize::try_from(size).unwrap_or(0));
    opened
        .take(MAX_SOURCE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(text)
}

/// How Node would load a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleKind {
    /// ES module: `.mjs`, or `.js` under `"type": "module"`.
    Module,
    /// CommonJS: `.cjs`, or `.js` under any other `type`.
    CommonJs,
}

impl ModuleKind {
    /// The kind Node picks for `path` given the `type` of its nearest `package.json`.
    /// An ambiguous file (see [`Self::is_detected`]) starts as CommonJS.
    pub fn for_file(path: &Path, package_type: Option<&str>) -> Option<Self> {
        match path.extension()?.to_str()? {
            "mjs" => Some(Self::Module),
            "js" if package_type == Some("module") => Some(Self::Module),
            "cjs" | "js" => Some(Self::CommonJs),
            _ => None,
        }
    }

    /// Whether Node 22 decides `path`'s kind by its syntax: a `.js` file whose
    /// nearest `package.json` has no `type` of `module` or `commonjs` is loaded as
    /// an ES module when it only parses as one (module syntax detection).
    pub fn is_detected(path: &Path, package_type: Option<&str>) -> bool {
        path.extension().is_some_and(|e| e == "js") && !matches!(package_type, Some("module" | "commonjs"))
    }

    /// Which rule decided, in Node's words, for findings.
    pub fn rule(path: &Path, package_type: Option<&str>) -> &'static str {
        match path.extension().and_then(|e| e.to_str()) {
            Some("mjs" | "cjs") => "its extension",
            _ if Self::is_detected(path, package_type) => "its syntax (no package.json \"type\")",
            _ => "the package.json \"type\"",
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// What one file says: its syntax errors, the kind it loads as, what it asks
/// for (imports, top-level requires) and what it exports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    pub errors: Vec<SyntaxError>,
    /// The kind Node loads it as (after module syntax detection).
    pub kind: ModuleKind,
    /// Specifiers of static `import`/`export … from` (e.g. `./lib/a.js`, `@deepseek-ai/x`).
    pub imports: Vec<String>,
    /// Every static request with its place: imports and re-exports of an ES
    /// module, `require('…')` calls with a literal of a CommonJS one.
    pub requests: Vec<Request>,
    /// An ES module's export names (`default` included) and the specifiers of its
    /// `export * from`.
    pub exports: Exports,
    /// CommonJS-only names (`require`, `module`, `exports`, `__dirname`,
    /// `__filename`) an ES module uses without declaring them.
    pub commonjs_globals: Vec<GlobalUse>,
}

/// One static request of a module.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    pub specifier: String,
    pub line: usize,
    pub column: usize,
    /// The names it imports or re-exports by name (not `default`, not `*`).
    pub names: Vec<String>,
    /// It carries `with { type: 'json' }`.
    pub json_attribute: bool,
    /// A `require()` call (CommonJS) rather than an `import`.
    pub is_require: bool,
    /// Runs when the module loads (not inside a function).
    pub top_level: bool,
}

/// What an ES module exports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exports {
    pub names: crate::names::Names,
    /// `export * from '…'` specifiers: their names (but `default`) are exported too.
    pub stars: Vec<String>,
}

/// A CommonJS-only name used in an ES module.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GlobalUse {
    pub name: String,
    pub line: usize,
    pub column: usize,
    /// At module top level (throws on load) rather than inside a function.
    pub top_level: bool,
}

/// CommonJS's module-scope names, undefined in an ES module.
pub const COMMONJS_GLOBALS: &[&str] = &["require", "module", "exports", "__dirname", "__filename"];

/// The syntax errors of `source` (the text of `file`) loaded as `kind`. With
/// `detect`, a CommonJS file that only parses as a module is accepted, as Node's
/// module syntax detection loads it as one.
pub fn check_source(file: &Path, source: &str, kind: ModuleKind, detect: bool) -> Vec<SyntaxError> {
    analyze(file, source, kind, detect).errors
}

/// [`check_source`] plus what the file requests and exports.
pub fn analyze(file: &Path, source: &str, kind: ModuleKind, detect: bool) -> Analysis {
    let analysis = analyze_as(file, source, kind);
    if analysis.errors.is_empty() || kind == ModuleKind::Module || !detect {
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
    let mut requests = Vec::new();
    let mut exports = Exports::default();
    let mut commonjs_globals = Vec::new();
    if !parsed.panicked && diagnostics.is_empty() {
        let semantic = SemanticBuilder::new()
            .with_check_syntax_error(true)
            .build(&parsed.program);
        diagnostics.extend(semantic.diagnostics.errors().cloned());
        let at = |offset: u32| line_column(source, offset as usize);
        let (requires, globals) = commonjs_uses(&parsed.program, semantic.semantic.scoping(), &at);
        match kind {
            ModuleKind::Module => {
                requests = module_requests(&parsed.program, &parsed.module_record, at);
                exports = module_exports(&parsed.module_record);
                commonjs_globals = globals;
            }
            ModuleKind::CommonJs => requests = requires,
        }
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
    Analysis {
        errors,
        kind,
        imports,
        requests,
        exports,
        commonjs_globals,
    }
}

/// An ES module's imports and re-exports, in source order, with the names each
/// asks for and whether it carries `with { type: 'json' }`.
fn module_requests(
    program: &oxc_ast::ast::Program<'_>,
    record: &oxc_syntax::module_record::ModuleRecord<'_>,
    at: impl Fn(u32) -> (usize, usize),
) -> Vec<Request> {
    use oxc_ast::ast::{ImportAttributeKey, Statement, WithClause};
    use oxc_syntax::module_record::{ExportImportName, ImportImportName};
    let is_json = |clause: Option<&WithClause<'_>>| {
        clause.is_some_and(|c| {
            c.with_entries.iter().any(|e| {
                let key = match &e.key {
                    ImportAttributeKey::Identifier(i) => i.name.as_str(),
                    ImportAttributeKey::StringLiteral(s) => s.value.as_str(),
                };
                key == "type" && e.value.value == "json"
            })
        })
    };
    let mut requests = Vec::new();
    for statement in &program.body {
        let (source, clause) = match statement {
            Statement::ImportDeclaration(d) => (&d.source, d.with_clause.as_deref()),
            Statement::ExportFromDeclaration(d) => (&d.source, d.with_clause.as_deref()),
            Statement::ExportAllDeclaration(d) => (&d.source, d.with_clause.as_deref()),
            _ => continue,
        };
        let (line, column) = at(source.span.start);
        requests.push(Request {
            specifier: source.value.to_string(),
            line,
            column,
            names: Vec::new(),
            json_attribute: is_json(clause),
            is_require: false,
            top_level: true,
        });
    }
    let mut add = |specifier: &str, name: &str| {
        if let Some(request) = requests.iter_mut().find(|r| r.specifier == specifier)
            && !request.names.iter().any(|n| n == name)
        {
            request.names.push(name.to_owned());
        }
    };
    for entry in &record.import_entries {
        if let ImportImportName::Name(name) = &entry.import_name
            && !entry.is_type
        {
            add(&entry.module_request.name, &name.name);
        }
    }
    for entry in &record.indirect_export_entries {
        if let (Some(request), ExportImportName::Name(name)) = (&entry.module_request, &entry.import_name)
            && !entry.is_type
        {
            add(&request.name, &name.name);
        }
    }
    requests
}

/// An ES module's export names and `export *` sources.
fn module_exports(record: &oxc_syntax::module_record::ModuleRecord<'_>) -> Exports {
    use oxc_syntax::module_record::ExportExportName;
    let mut names = Vec::new();
    let mut stars = Vec::new();
    for entry in record
        .local_export_entries
        .iter()
        .chain(&record.indirect_export_entries)
    {
        match &entry.export_name {
            ExportExportName::Name(name) => names.push(name.name.as_str()),
            ExportExportName::Default(_) => names.push("default"),
            ExportExportName::Null => {}
        }
    }
    for entry in &record.star_export_entries {
        match (&entry.export_name, &entry.module_request) {
            // `export * as ns from` exports one name.
            (ExportExportName::Name(name), _) => names.push(name.name.as_str()),
            (_, Some(request)) => stars.push(request.name.to_string()),
            _ => {}
        }
    }
    Exports {
        names: names.into_iter().collect(),
        stars,
    }
}

/// Walks a module for the CommonJS names it uses without declaring them
/// (`require(\'…\')` calls with a literal, and the bare names), noting whether
/// each runs at load time or inside a function. Only run when the module has
/// such an unresolved name at all.
struct CommonJsUses<'s> {
    scoping: &'s oxc_semantic::Scoping,
    at: &'s dyn Fn(u32) -> (usize, usize),
    /// One entry per open scope: whether it is a function's.
    functions: Vec<bool>,
    /// The identifier that is the direct operand of `typeof` (which never throws).
    typeof_operand: Option<oxc_span::Span>,
    requires: Vec<Request>,
    globals: Vec<GlobalUse>,
}

impl CommonJsUses<'_> {
    fn unresolved(&self, reference: &oxc_ast::ast::IdentifierReference<'_>) -> bool {
        reference
            .reference_id
            .get()
            .is_some_and(|id| self.scoping.get_reference(id).symbol_id().is_none())
    }

    fn top_level(&self) -> bool {
        !self.functions.iter().any(|f| *f)
    }
}

impl<'a> oxc_ast_visit::Visit<'a> for CommonJsUses<'_> {
    fn enter_scope(
        &mut self,
        flags: oxc_syntax::scope::ScopeFlags,
        _scope_id: &std::cell::Cell<Option<oxc_syntax::scope::ScopeId>>,
    ) {
        self.functions.push(flags.is_function());
    }

    fn leave_scope(&mut self) {
        self.functions.pop();
    }

    fn visit_unary_expression(&mut self, it: &oxc_ast::ast::UnaryExpression<'a>) {
        if it.operator == oxc_syntax::operator::UnaryOperator::Typeof
            && let oxc_ast::ast::Expression::Identifier(id) = &it.argument
        {
            self.typeof_operand = Some(id.span);
        }
        oxc_ast_visit::walk::walk_unary_expression(self, it);
    }

    fn visit_call_expression(&mut self, it: &oxc_ast::ast::CallExpression<'a>) {
        if let oxc_ast::ast::Expression::Identifier(callee) = &it.callee
            && callee.name == "require"
            && self.unresolved(callee)
            && let Some(oxc_ast::ast::Argument::StringLiteral(literal)) = it.arguments.first()
        {
            let (line, column) = (self.at)(literal.span.start);
            self.requires.push(Request {
                specifier: literal.value.to_string(),
                line,
                column,
                names: Vec::new(),
                json_attribute: false,
                is_require: true,
                top_level: self.top_level(),
            });
        }
        oxc_ast_visit::walk::walk_call_expression(self, it);
    }

    fn visit_identifier_reference(&mut self, it: &oxc_ast::ast::IdentifierReference<'a>) {
        if COMMONJS_GLOBALS.contains(&it.name.as_str())
            && self.typeof_operand != Some(it.span)
            && self.unresolved(it)
        {
            let (line, column) = (self.at)(it.span.start);
            self.globals.push(GlobalUse {
                name: it.name.to_string(),
                line,
                column,
                top_level: self.top_level(),
            });
        }
    }
}

/// The CommonJS uses of `program` (see [`CommonJsUses`]): `(requires, globals)`.
fn commonjs_uses(
    program: &oxc_ast::ast::Program<'_>,
    scoping: &oxc_semantic::Scoping,
    at: &dyn Fn(u32) -> (usize, usize),
) -> (Vec<Request>, Vec<GlobalUse>) {
    let used = scoping
        .root_unresolved_references()
        .keys()
        .any(|name| COMMONJS_GLOBALS.contains(&name.as_str()));
    if !used {
        return (Vec::new(), Vec::new());
    }
    let mut walk = CommonJsUses {
        scoping,
        at,
        functions: Vec::new(),
        typeof_operand: None,
        requires: Vec::new(),
        globals: Vec::new(),
    };
    oxc_ast_visit::Visit::visit_program(&mut walk, program);
    (walk.requires, walk.globals)
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
        check_source(
            path,
            source,
            ModuleKind::for_file(path, package_type).unwrap(),
            ModuleKind::is_detected(path, package_type),
        )
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

#[cfg(test)]
mod requests_tests {
    use super::*;

    fn module(source: &str) -> Analysis {
        analyze(Path::new("a.mjs"), source, ModuleKind::Module, false)
    }

    #[test]
    fn an_es_module_says_what_it_asks_for_and_exports() {
        let a = module(
            "import { a, b as c } from './x.js';\nimport d from 'pkg';\nimport data from './d.json' with { type: 'json' };\nexport { e } from './y.js';\nexport * from './z.js';\nexport const f = 1;\nexport default 2;\nconst g = require('fs');\nfunction h() { return __dirname; }\nconst t = typeof module;\n",
        );
        assert!(a.errors.is_empty(), "{:?}", a.errors);
        let x = a.requests.iter().find(|r| r.specifier == "./x.js").unwrap();
        assert_eq!(
            (x.line, x.column, x.names.clone()),
            (1, 27, vec!["a".to_owned(), "b".to_owned()])
        );
        assert!(
            a.requests
                .iter()
                .find(|r| r.specifier == "./d.json")
                .unwrap()
                .json_attribute
        );
        assert_eq!(
            a.requests.iter().find(|r| r.specifier == "./y.js").unwrap().names,
            ["e"]
        );
        assert_eq!(a.exports.names.iter().collect::<Vec<_>>(), ["default", "e", "f"]);
        assert_eq!(a.exports.stars, ["./z.js"]);
        let globals: Vec<(&str, bool)> = a
            .commonjs_globals
            .iter()
            .map(|g| (g.name.as_str(), g.top_level))
            .collect();
        assert_eq!(
            globals,
            [("require", true), ("__dirname", false)],
            "typeof never throws"
        );
    }

    #[test]
    fn a_commonjs_module_says_what_it_requires_and_where() {
        let a = analyze(
            Path::new("a.cjs"),
            "const x = require('./x');\nfunction later() { return require('pkg'); }\nconst y = require(name);\n",
            ModuleKind::CommonJs,
            false,
        );
        let requests: Vec<(&str, bool)> = a
            .requests
            .iter()
            .map(|r| (r.specifier.as_str(), r.top_level))
            .collect();
        assert_eq!(requests, [("./x", true), ("pkg", false)]);
    }
}
