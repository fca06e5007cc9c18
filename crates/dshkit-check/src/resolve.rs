//! Module resolution as Node 22 does it, without running Node: relative and
//! absolute specifiers, `node_modules` packages with their `exports` map (or
//! `main`), and built-ins. ES modules and `require()` differ: ESM wants exact
//! files and refuses directories; `require` tries extensions and `index.js`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Which loader resolves: `import` or `require()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    Import,
    Require,
}

impl Loader {
    /// The `exports` conditions Node 22 matches, in its order of preference.
    fn conditions(self) -> &'static [&'static str] {
        match self {
            Self::Import => &["node", "import", "module-sync", "default"],
            Self::Require => &["node", "require", "module-sync", "default"],
        }
    }
}

/// What a specifier resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A file on disk (its real path).
    File(PathBuf),
    /// A Node built-in (`fs`, `node:fs`, `node:test`), by its name without `node:`.
    Builtin(String),
    /// Something this layer does not decide (`data:`, `http:` URLs, …).
    Undecided(String),
}

/// Why a specifier does not resolve, with the message Node prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// A stable finding id: `import.not_found`, `import.directory`,
    /// `import.package_not_found`, `import.not_exported`.
    pub id: &'static str,
    pub message: String,
}

/// How a package's entry was found, when Node warns about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryWarning {
    pub id: &'static str,
    pub message: String,
}

/// Resolves `specifier` imported (or required) from `from`. `is_builtin` says
/// whether a bare name is a Node built-in.
pub fn resolve(
    specifier: &str,
    from: &Path,
    loader: Loader,
    is_builtin: &dyn Fn(&str) -> bool,
) -> Result<Resolved, Unresolved> {
    if let Some(name) = specifier.strip_prefix("node:") {
        return Ok(Resolved::Builtin(name.to_owned()));
    }
    let dir = from.parent().unwrap_or(Path::new("/"));
    let shown_from = from.display();
    if specifier.starts_with("./")
        || specifier.starts_with("../")
        || specifier.starts_with('/')
        || specifier == "."
        || specifier == ".."
    {
        let target = dir.join(specifier);
        return match loader {
            Loader::Import => esm_file(&target, &shown_from.to_string()),
            Loader::Require => cjs_path(&target).map(Resolved::File).ok_or_else(|| Unresolved {
                id: "require.not_found",
                message: format!(
                    "Cannot find module '{}' (required from {shown_from})",
                    target.display()
                ),
            }),
        };
    }
    if let Some(path) = specifier.strip_prefix("file://") {
        return esm_file(Path::new(path), &shown_from.to_string());
    }
    if specifier.contains(':') {
        return Ok(Resolved::Undecided(specifier.to_owned()));
    }
    if is_builtin(specifier) {
        return Ok(Resolved::Builtin(specifier.to_owned()));
    }
    package(specifier, dir, loader, &shown_from.to_string())
}

/// A bare specifier (a package, or the package itself by its own name) or a
/// subpath import (`#name`), resolved by `oxc_resolver` as Node resolves it:
/// the `node_modules` walk, `exports` and `imports` maps with Node's
/// conditions and patterns, self-reference, `main` for a package without
/// `exports`, symlinks followed. Its refusals are said as Node says them.
fn package(specifier: &str, dir: &Path, loader: Loader, from: &str) -> Result<Resolved, Unresolved> {
    let resolver = oxc_resolver::Resolver::new(oxc_resolver::ResolveOptions {
        condition_names: loader.conditions().iter().map(|c| (*c).to_owned()).collect(),
        extensions: vec![".js".into(), ".json".into(), ".node".into()],
        main_fields: vec!["main".into()],
        main_files: vec!["index".into()],
        alias_fields: Vec::new(),
        builtin_modules: false,
        symlinks: true,
        ..oxc_resolver::ResolveOptions::default()
    });
    let (name, _) = split_package(specifier);
    match resolver.resolve(dir, specifier) {
        Ok(resolution) => {
            // An ES module's subpath into a package without `exports` is that
            // exact file: Node's ESM loader guesses no extension there.
            let (name, subpath) = split_package(specifier);
            if loader == Loader::Import
                && !specifier.starts_with('#')
                && !subpath.is_empty()
                && let Some(root) = package_dir(name, dir)
                && read_manifest(&root).is_none_or(|m| m.get("exports").is_none_or(Value::is_null))
            {
                return esm_file(&root.join(subpath), from);
            }
            Ok(Resolved::File(real(resolution.path())))
        }
        Err(oxc_resolver::ResolveError::PackageImportNotDefined(specifier, package)) => Err(Unresolved {
            id: "import.import_not_defined",
            message: format!(
                "Package import specifier \"{specifier}\" is not defined in package {} imported from {from} (ERR_PACKAGE_IMPORT_NOT_DEFINED)",
                package.display()
            ),
        }),
        Err(oxc_resolver::ResolveError::PackagePathNotExported {
            subpath,
            package_json_path,
            ..
        }) => Err(Unresolved {
            id: "import.not_exported",
            message: if subpath == "." {
                format!(
                    "No \"exports\" main defined in {} imported from {from} (ERR_PACKAGE_PATH_NOT_EXPORTED)",
                    package_json_path.display()
                )
            } else {
                format!(
                    "Package subpath '{subpath}' is not defined by \"exports\" in {} imported from {from} (ERR_PACKAGE_PATH_NOT_EXPORTED)",
                    package_json_path.display()
                )
            },
        }),
        Err(oxc_resolver::ResolveError::NotFound(_))
            if package_dir(name, dir).is_none() && !specifier.starts_with('#') =>
        {
            Err(Unresolved {
                id: "import.package_not_found",
                message: format!("Cannot find package '{name}' imported from {from} (ERR_MODULE_NOT_FOUND)"),
            })
        }
        Err(error) => Err(Unresolved {
            id: if loader == Loader::Require {
                "require.not_found"
            } else {
                "import.not_found"
            },
            message: match loader {
                Loader::Require => {
                    format!("Cannot find module '{specifier}' (required from {from}): {error}")
                }
                Loader::Import => format!(
                    "Cannot find module '{specifier}' imported from {from}: {error} (ERR_MODULE_NOT_FOUND)"
                ),
            },
        }),
    }
}

/// An ES module's relative target: exactly that file; a directory is refused.
fn esm_file(target: &Path, from: &str) -> Result<Resolved, Unresolved> {
    use crate::realpath::Kind;
    let target = normalize(target);
    let found = crate::realpath::lookup(&target);
    if let Some((_, Kind::Dir)) = found {
        return Err(Unresolved {
            id: "import.directory",
            message: format!(
                "Directory import '{}' is not supported resolving ES modules imported from {from} (ERR_UNSUPPORTED_DIR_IMPORT)",
                target.display()
            ),
        });
    }
    if let Some((real, Kind::File)) = found {
        return Ok(Resolved::File(real));
    }
    Err(Unresolved {
        id: "import.not_found",
        message: format!(
            "Cannot find module '{}' imported from {from} (ERR_MODULE_NOT_FOUND)",
            target.display()
        ),
    })
}

/// `require`'s file lookup: the path, with `.js`/`.json`/`.node`, then as a
/// directory (its `package.json` `main`, then `index.*`).
fn cjs_path(target: &Path) -> Option<PathBuf> {
    let target = normalize(target);
    if target.is_file() {
        return Some(real(&target));
    }
    for extension in ["js", "json", "node"] {
        let candidate = PathBuf::from(format!("{}.{extension}", target.display()));
        if candidate.is_file() {
            return Some(real(&candidate));
        }
    }
    if target.is_dir() {
        if let Some(main) = read_manifest(&target).and_then(|m| m["main"].as_str().map(str::to_owned)) {
            let main = target.join(main);
            if let Some(found) = cjs_file_or_index(&main) {
                return Some(found);
            }
        }
        return cjs_file_or_index(&target.join("index"));
    }
    None
}

fn cjs_file_or_index(target: &Path) -> Option<PathBuf> {
    if target.is_file() {
        return Some(real(target));
    }
    ["js", "json", "node"]
        .iter()
        .map(|e| PathBuf::from(format!("{}.{e}", target.display())))
        .chain(
            ["index.js", "index.json", "index.node"]
                .iter()
                .map(|i| target.join(i)),
        )
        .find(|c| c.is_file())
        .map(|c| real(&c))
}

/// Where Node finds the package `name` (`@scope/name` or `name`) imported from a
/// module in `dir`: the first `node_modules/<name>` that is a directory (a link
/// followed), walking up from `dir`. A dangling link is passed over, as Node does.
pub fn package_dir(name: &str, dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("node_modules").join(name))
        .find(|candidate| candidate.is_dir())
}

/// The entry of the package at `root` as `import('<its name>')` finds it, with
/// Node's warning when it only found it by falling back.
pub fn package_entry(root: &Path, loader: Loader) -> Result<(PathBuf, Option<EntryWarning>), Unresolved> {
    let parent = root.parent().unwrap_or(root);
    let manifest = read_manifest(root);
    let from = format!("{}", parent.display());
    if let Some(exports) = manifest
        .as_ref()
        .and_then(|m| m.get("exports"))
        .filter(|e| !e.is_null())
    {
        return match exports_target(exports, ".", loader) {
            Some(target) => {
                let file = root.join(target.trim_start_matches("./"));
                if file.is_file() {
                    Ok((real(&file), None))
                } else {
                    Err(Unresolved {
                        id: "import.not_found",
                        message: format!("Cannot find module '{}' (ERR_MODULE_NOT_FOUND)", file.display()),
                    })
                }
            }
            None => Err(Unresolved {
                id: "import.not_exported",
                message: format!(
                    "No \"exports\" main defined in {}/package.json (ERR_PACKAGE_PATH_NOT_EXPORTED)",
                    root.display()
                ),
            }),
        };
    }
    legacy_main(root, manifest.as_deref(), loader).ok_or_else(|| Unresolved {
        id: "import.not_found",
        message: format!(
            "Cannot find package '{}' imported from {from} (ERR_MODULE_NOT_FOUND)",
            root.display()
        ),
    })
}

/// Node's legacy main resolution: `main` (with `.js`, `.json`, `.node`, then as a
/// directory's `index.*`), then the package's `index.js`, `index.json`,
/// `index.node`. Guessing an extension or falling back warns.
fn legacy_main(
    root: &Path,
    manifest: Option<&Value>,
    loader: Loader,
) -> Option<(PathBuf, Option<EntryWarning>)> {
    let main = manifest.and_then(|m| m["main"].as_str());
    if let Some(main) = main {
        let target = root.join(main);
        if target.is_file() {
            return Some((real(&target), None));
        }
        if let Some(found) = cjs_file_or_index(&target) {
            let warning = (loader == Loader::Import).then(|| EntryWarning {
                id: "manifest.main_guessed",
                message: format!(
                    "[DEP0151] Package {}/ has a \"main\" field set to \"{main}\", excluding the full filename and extension to the resolved file at \"{}\". Automatic extension resolution of the \"main\" field is deprecated for ES modules.",
                    root.display(),
                    found.strip_prefix(root).unwrap_or(&found).display()
                ),
            });
            return Some((found, warning));
        }
    }
    let index = ["index.js", "index.json", "index.node"]
        .iter()
        .map(|i| root.join(i))
        .find(|c| c.is_file())?;
    let warning = main.map(|main| EntryWarning {
        id: "manifest.main_fallback",
        message: match loader {
            // What Node 22 prints when DSH imports the plugin.
            Loader::Import => format!(
                "[DEP0151] Package {}/ has a \"main\" field set to \"{main}\", excluding the full filename and extension to the resolved file at \"{}\". Automatic extension resolution of the \"main\" field is deprecated for ES modules.",
                root.display(),
                index.strip_prefix(root).unwrap_or(&index).display()
            ),
            Loader::Require => format!(
                "[DEP0128] Invalid 'main' field in '{}/package.json' of '{main}'. Please either fix that or report it to the module author",
                root.display()
            ),
        },
    });
    Some((real(&index), warning))
}

/// The target `exports` gives `key` (`.` or `./sub`) under `loader`'s conditions,
/// with single-`*` subpath patterns.
pub fn exports_target(exports: &Value, key: &str, loader: Loader) -> Option<String> {
    let is_subpath_map = exports
        .as_object()
        .is_some_and(|m| m.keys().next().is_some_and(|k| k.starts_with('.')));
    if !is_subpath_map {
        return if key == "." {
            conditional(exports, loader)
        } else {
            None
        };
    }
    let map = exports.as_object()?;
    if let Some(value) = map.get(key) {
        return conditional(value, loader);
    }
    // The longest matching pattern wins.
    let mut best: Option<(&str, &str, &Value)> = None;
    for (pattern, value) in map {
        let Some((prefix, suffix)) = pattern.split_once('*') else {
            continue;
        };
        if key.len() >= prefix.len() + suffix.len()
            && key.starts_with(prefix)
            && key.ends_with(suffix)
            && best.is_none_or(|(p, _, _)| prefix.len() > p.len())
        {
            best = Some((prefix, suffix, value));
        }
    }
    let (prefix, suffix, value) = best?;
    let matched = &key[prefix.len()..key.len() - suffix.len()];
    conditional(value, loader).map(|t| t.replace('*', matched))
}

/// A target after conditions: a string, the first resolvable array item, or the
/// first object key among the loader's conditions.
fn conditional(value: &Value, loader: Loader) -> Option<String> {
    match value {
        Value::String(target) => Some(target.clone()),
        Value::Array(items) => items.iter().find_map(|v| conditional(v, loader)),
        Value::Object(map) => map
            .iter()
            .find(|(condition, _)| loader.conditions().contains(&condition.as_str()))
            .and_then(|(_, v)| conditional(v, loader)),
        _ => None,
    }
}

/// `@scope/name/sub` → (`@scope/name`, `sub`); `name/sub` → (`name`, `sub`).
fn split_package(specifier: &str) -> (&str, &str) {
    let mut slashes = specifier.match_indices('/').map(|(i, _)| i);
    let end = if specifier.starts_with('@') {
        slashes.nth(1)
    } else {
        slashes.next()
    };
    match end {
        Some(i) => (&specifier[..i], &specifier[i + 1..]),
        None => (specifier, ""),
    }
}

/// The `package.json` of `dir`, when it parses (read once per run).
pub fn read_manifest(dir: &Path) -> Option<std::sync::Arc<Value>> {
    match crate::realpath::manifest(dir) {
        crate::realpath::Manifest::Parsed(value) => Some(value),
        _ => None,
    }
}

/// `a/./b/../c` → `a/c`, lexically (Node resolves specifiers as URLs).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn real(path: &Path) -> PathBuf {
    crate::realpath::real(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn package_names_split_like_node() {
        assert_eq!(split_package("a"), ("a", ""));
        assert_eq!(split_package("a/b/c"), ("a", "b/c"));
        assert_eq!(split_package("@s/a"), ("@s/a", ""));
        assert_eq!(split_package("@s/a/b"), ("@s/a", "b"));
    }

    #[test]
    fn exports_follow_conditions_and_patterns() {
        let exports = json!({
            ".": { "require": "./cjs.js", "import": "./esm.js" },
            "./client": "./client.js",
            "./features/*.js": { "default": "./src/features/*.js" },
            "./package.json": "./package.json"
        });
        assert_eq!(
            exports_target(&exports, ".", Loader::Import).as_deref(),
            Some("./esm.js")
        );
        assert_eq!(
            exports_target(&exports, ".", Loader::Require).as_deref(),
            Some("./cjs.js")
        );
        assert_eq!(
            exports_target(&exports, "./client", Loader::Import).as_deref(),
            Some("./client.js")
        );
        assert_eq!(
            exports_target(&exports, "./features/x.js", Loader::Import).as_deref(),
            Some("./src/features/x.js")
        );
        assert_eq!(exports_target(&exports, "./nope", Loader::Import), None);
        assert_eq!(
            exports_target(&json!("./main.js"), ".", Loader::Import).as_deref(),
            Some("./main.js")
        );
        assert_eq!(
            exports_target(&json!({ "browser": "./b.js" }), ".", Loader::Import),
            None
        );
    }

    #[test]
    fn relative_imports_are_exact_in_esm_and_guessed_by_require() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.js"), "").unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/index.js"), "").unwrap();
        let from = dir.path().join("entry.js");
        let never = |_: &str| false;
        assert!(matches!(
            resolve("./a.js", &from, Loader::Import, &never),
            Ok(Resolved::File(_))
        ));
        assert_eq!(
            resolve("./a", &from, Loader::Import, &never).unwrap_err().id,
            "import.not_found"
        );
        assert_eq!(
            resolve("./lib", &from, Loader::Import, &never).unwrap_err().id,
            "import.directory"
        );
        assert!(matches!(
            resolve("./a", &from, Loader::Require, &never),
            Ok(Resolved::File(_))
        ));
        assert!(matches!(
            resolve("./lib", &from, Loader::Require, &never),
            Ok(Resolved::File(_))
        ));
        assert_eq!(
            resolve("nope-pkg", &from, Loader::Import, &never).unwrap_err().id,
            "import.package_not_found"
        );
        assert_eq!(
            resolve("node:fs", &from, Loader::Import, &never).unwrap(),
            Resolved::Builtin("fs".into())
        );
    }
}
