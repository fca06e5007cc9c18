//! Link checks without running code: what Node's loader refuses when DSH imports
//! a plugin. From the plugin's entry (as `import('@local/NAME')` resolves it)
//! through every module it reaches: relative files that are not there (or are
//! directories, in an ES module), packages that cannot be found or do not export
//! the subpath, names a module does not export, JSON without its import
//! attribute, CommonJS globals in an ES module, and a `main` Node only finds by
//! falling back. Each finding has a stable id, its place, and Node's message.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::builtins::LazyBuiltins;
use crate::cache::AnalysisCache;
use crate::names::Names;
use crate::resolve::{Loader, Resolved, package_entry, resolve};
use crate::syntax::{Analysis, ModuleKind};

/// Most modules followed from one entry.
pub const MAX_MODULES: usize = 2000;
/// Most `export *` levels followed to collect a module's names.
const MAX_STAR_DEPTH: usize = 32;

/// How bad a finding is: a failure stops the boot; a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warn,
    Fail,
}

/// One thing Node's loader would say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable id, e.g. `import.missing_export`.
    pub id: &'static str,
    pub severity: Severity,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: [{}] {}",
            self.file.display(),
            self.line,
            self.column,
            self.id,
            self.message
        )
    }
}

/// The link findings of one plugin, and what this layer could not decide.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    pub findings: Vec<Finding>,
    /// Modules followed.
    pub modules: usize,
    /// Questions only running code answers (a named import from a CommonJS
    /// module, a URL import, built-ins without a Node to ask), each said once.
    pub undecided: Vec<String>,
}

/// Follows the plugin at `root` from its entry. `builtins` are those of the Node
/// DSH runs, asked for at the first built-in or bare import. `known` are files
/// already analysed (by the syntax check), by real path: they are not parsed again;
/// others are analysed through `cache`.
pub fn check_plugin(
    root: &Path,
    builtins: &LazyBuiltins,
    known: &[(PathBuf, Result<Analysis, String>)],
    cache: &AnalysisCache,
) -> Links {
    let mut walk = Walk {
        builtins,
        cache,
        analyses: known
            .iter()
            .filter_map(|(file, analysis)| {
                let analysis = analysis.as_ref().ok()?;
                Some((file.clone(), Some(Rc::new(Cow::Borrowed(analysis)))))
            })
            .collect(),
        types: HashMap::new(),
        links: Links::default(),
    };
    let manifest_file = root.join("package.json");
    let entry = match package_entry(root, Loader::Import) {
        Ok((entry, warning)) => {
            if let Some(warning) = warning {
                walk.found(
                    warning.id,
                    Severity::Warn,
                    &manifest_file,
                    (1, 1),
                    warning.message,
                );
            }
            entry
        }
        Err(unresolved) => {
            walk.found(
                unresolved.id,
                Severity::Fail,
                &manifest_file,
                (1, 1),
                unresolved.message,
            );
            return walk.links;
        }
    };
    let mut queue = vec![entry];
    let mut seen = BTreeSet::new();
    while let Some(file) = queue.pop() {
        if !seen.insert(file.clone()) || seen.len() > MAX_MODULES {
            continue;
        }
        let Some(analysis) = walk.analysis(&file) else {
            continue;
        };
        if !analysis.errors.is_empty() {
            continue; // The syntax check reports it; its imports never run.
        }
        walk.links.modules += 1;
        walk.follow(&file, &analysis, &mut queue);
    }
    walk.links
        .findings
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    walk.links
}

/// An analysis the walk holds: the syntax check's, borrowed, or its own.
type Held<'b> = Rc<Cow<'b, Analysis>>;

struct Walk<'b> {
    builtins: &'b LazyBuiltins,
    cache: &'b AnalysisCache,
    analyses: HashMap<PathBuf, Option<Held<'b>>>,
    /// Directory → the `type` of its nearest `package.json`.
    types: HashMap<PathBuf, Option<String>>,
    links: Links,
}

impl<'b> Walk<'b> {
    fn found(
        &mut self,
        id: &'static str,
        severity: Severity,
        file: &Path,
        at: (usize, usize),
        message: String,
    ) {
        self.links.findings.push(Finding {
            id,
            severity,
            file: file.to_owned(),
            line: at.0,
            column: at.1,
            message,
        });
    }

    fn undecided(&mut self, what: String) {
        if !self.links.undecided.contains(&what) {
            self.links.undecided.push(what);
        }
    }

    /// Checks what one loaded module asks for; local modules it reaches join `queue`.
    fn follow(&mut self, file: &Path, analysis: &Analysis, queue: &mut Vec<PathBuf>) {
        for global in &analysis.commonjs_globals {
            let hint = if global.name == "require" {
                ", you can use import instead"
            } else {
                ""
            };
            self.found(
                "esm.commonjs_global",
                if global.top_level {
                    Severity::Fail
                } else {
                    Severity::Warn
                },
                file,
                (global.line, global.column),
                format!(
                    "ReferenceError: {} is not defined in ES module scope{hint}{}",
                    global.name,
                    if global.top_level {
                        ""
                    } else {
                        " (inside a function: it throws when called)"
                    }
                ),
            );
        }
        for request in &analysis.requests {
            let loader = if request.is_require {
                Loader::Require
            } else {
                Loader::Import
            };
            let severity = if request.top_level {
                Severity::Fail
            } else {
                Severity::Warn
            };
            let at = (request.line, request.column);
            let builtins = self.builtins;
            let is_builtin = |name: &str| builtins.get().is_some_and(|b| b.contains(name));
            match resolve(&request.specifier, file, loader, &is_builtin) {
                Err(unresolved) => self.found(unresolved.id, severity, file, at, unresolved.message),
                Ok(Resolved::Undecided(what)) => self.undecided(format!("{what} (from {})", file.display())),
                Ok(Resolved::Builtin(name)) => {
                    self.builtin(file, at, &request.specifier, &name, &request.names);
                }
                Ok(Resolved::File(target)) => {
                    let is_json = target.extension().is_some_and(|e| e == "json");
                    if is_json && loader == Loader::Import && !request.json_attribute {
                        self.found(
                        "import.json_attribute",
                        Severity::Fail,
                        file,
                        at,
                        format!(
                            "Module \"file://{}\" needs an import attribute of \"type: json\" (ERR_IMPORT_ATTRIBUTE_MISSING)",
                            target.display()
                        ),
                    );
                    } else if !request.names.is_empty() {
                        self.names(file, at, &request.specifier, &target, &request.names);
                    }
                    let in_package = target.components().any(|c| c.as_os_str() == "node_modules");
                    if !in_package && !is_json {
                        queue.push(target);
                    }
                }
            }
        }
    }

    /// The analysis of a JavaScript file, as Node would load it (cached).
    fn analysis(&mut self, file: &Path) -> Option<Held<'b>> {
        if let Some(cached) = self.analyses.get(file) {
            return cached.clone();
        }
        let package_type = self.package_type(file.parent().unwrap_or(file));
        let analysis = ModuleKind::for_file(file, package_type.as_deref()).and_then(|kind| {
            let text = crate::syntax::read_source(file).ok()?;
            Some(Rc::new(Cow::Owned(self.cache.analyze(
                file,
                &text,
                kind,
                ModuleKind::is_detected(file, package_type.as_deref()),
            ))))
        });
        self.analyses.insert(file.to_owned(), analysis.clone());
        analysis
    }

    fn package_type(&mut self, dir: &Path) -> Option<String> {
        nearest_package_type(dir, &mut self.types)
    }

    fn builtin(&mut self, file: &Path, at: (usize, usize), specifier: &str, name: &str, names: &[String]) {
        let Some(builtins) = self.builtins.get() else {
            if !names.is_empty() {
                self.undecided(format!(
                    "named imports from {specifier} (no Node to ask for its exports)"
                ));
            }
            return;
        };
        if !builtins.contains(name) {
            self.found(
                "import.unknown_builtin",
                Severity::Fail,
                file,
                at,
                format!("No such built-in module: {specifier} (ERR_UNKNOWN_BUILTIN_MODULE)"),
            );
            return;
        }
        match builtins.exports(name) {
            Some(exported) => self.missing(file, at, specifier, names, &exported),
            None if !names.is_empty() => self.undecided(format!("named imports from {specifier}")),
            None => {}
        }
    }

    fn names(&mut self, file: &Path, at: (usize, usize), specifier: &str, target: &Path, names: &[String]) {
        match self.exported_names(target, 0) {
            Some(exported) => self.missing(file, at, specifier, names, &exported),
            None => self.undecided(format!(
                "named imports from {specifier} (a CommonJS module's names show only when it runs)"
            )),
        }
    }

    fn missing(
        &mut self,
        file: &Path,
        at: (usize, usize),
        specifier: &str,
        names: &[String],
        exported: &Names,
    ) {
        for name in names.iter().filter(|n| !exported.contains(n)) {
            self.found(
                "import.missing_export",
                Severity::Fail,
                file,
                at,
                format!("SyntaxError: The requested module '{specifier}' does not provide an export named '{name}'"),
            );
        }
    }

    /// Every name an ES module exports, through its `export *` chains; `None`
    /// when that depends on a CommonJS module or something unresolvable.
    fn exported_names(&mut self, file: &Path, depth: usize) -> Option<Names> {
        if depth > MAX_STAR_DEPTH {
            return None;
        }
        if file.extension().is_some_and(|e| e == "json") {
            return Some(Names::from_iter(["default"]));
        }
        let analysis = self.analysis(file)?;
        if analysis.kind != ModuleKind::Module || !analysis.errors.is_empty() {
            return None;
        }
        let mut names = analysis.exports.names.clone();
        for star in &analysis.exports.stars {
            let is_builtin = |name: &str| self.builtins.get().is_some_and(|b| b.contains(name));
            let more = match resolve(star, file, Loader::Import, &is_builtin).ok()? {
                Resolved::File(target) => self.exported_names(&target, depth + 1)?,
                Resolved::Builtin(name) => self.builtins.get()?.exports(&name)?,
                Resolved::Undecided(_) => return None,
            };
            names = names.union(more.iter().filter(|n| *n != "default"));
        }
        Some(names)
    }
}

/// The `type` of the nearest `package.json` at or above `dir` (Node's package
/// scope, which ends at a `node_modules` directory), cached per directory.
pub(crate) fn nearest_package_type(
    dir: &Path,
    cache: &mut HashMap<PathBuf, Option<String>>,
) -> Option<String> {
    use crate::realpath::Manifest;
    if let Some(known) = cache.get(dir) {
        return known.clone();
    }
    let found = if dir.file_name().is_some_and(|n| n == "node_modules") {
        None
    } else {
        match crate::realpath::manifest(dir) {
            Manifest::Parsed(m) => m["type"].as_str().map(str::to_owned),
            Manifest::Invalid(_) => None,
            Manifest::Missing(_) => match dir.parent() {
                Some(parent) => nearest_package_type(parent, cache),
                None => None,
            },
        }
    };
    cache.insert(dir.to_owned(), found.clone());
    found
}
