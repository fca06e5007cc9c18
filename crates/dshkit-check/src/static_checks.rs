//! The checks that need no running DSH: patch references, syntax, manifests.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::builtins::LazyBuiltins;
use crate::cache::{AnalysisCache, CacheStats};
use crate::link::Links;
use crate::plugins::{Analyzed, LocalPlugin, analyze_plugin_with, each_plugin_beside, local_plugins};
use crate::report::{Check, Located, Status};

/// Where to look.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub home: PathBuf,
    pub profile: String,
    /// Check only this local plugin (its directory name).
    pub plugin: Option<String>,
    /// `PATH` DSH runs with: its `node` says which built-ins exist and what they
    /// export. Without one, named imports from built-ins are not decided.
    pub path: Option<std::ffi::OsString>,
    /// Where each file's analysis is cached (dshkit's `cache/check`); `None`:
    /// every file is parsed (see [`crate::cache`]).
    pub cache: Option<PathBuf>,
}

impl Target {
    pub fn profile_dir(&self) -> PathBuf {
        self.home.join("profiles").join(&self.profile)
    }
}

/// The static checks' ids, in order.
const IDS: [&str; 4] = ["patch_references", "syntax", "links", "manifest"];

/// Patch references, syntax, links and manifests, in that order.
pub fn run(target: &Target) -> Vec<Check> {
    run_counted(target).0
}

/// [`run`], and what the cache did when there is one.
/// Each real path is asked of the file system once in a run (see [`crate::realpath`]).
pub fn run_counted(target: &Target) -> (Vec<Check>, Option<CacheStats>) {
    crate::realpath::scope(|| {
        let profile_dir = target.profile_dir();
        let cache = match &target.cache {
            Some(dir) => AnalysisCache::open(dir, &profile_dir),
            None => AnalysisCache::disabled(),
        };
        let checks = checks(target, &profile_dir, &cache);
        let stats = cache.stats();
        cache.save();
        (checks, stats)
    })
}

fn checks(target: &Target, profile_dir: &Path, cache: &AnalysisCache) -> Vec<Check> {
    let profile_dir = profile_dir.to_owned();
    if !profile_dir.is_dir() {
        let missing = format!("profile directory {} does not exist", profile_dir.display());
        return IDS
            .into_iter()
            .map(|id| Check::new(id, name_of(id), Status::Fail, missing.clone()))
            .collect();
    }
    let plugins: Vec<LocalPlugin> = local_plugins(&profile_dir)
        .into_iter()
        .filter(|p| {
            target
                .plugin
                .as_deref()
                .is_none_or(|t| t == p.dir_name || format!("@local/{}", p.dir_name) == t)
        })
        .collect();
    if let Some(wanted) = target.plugin.as_deref()
        && plugins.is_empty()
    {
        // A target that names nothing must not pass vacuously.
        let known: Vec<String> = local_plugins(&profile_dir)
            .into_iter()
            .map(|p| p.dir_name)
            .collect();
        let missing = format!(
            "the target `{wanted}` names no local plugin of this profile (its plugins: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
        return IDS
            .into_iter()
            .map(|id| Check::new(id, name_of(id), Status::Fail, missing.clone()))
            .collect();
    }
    // Each file is parsed once; the syntax, links and manifest checks share it.
    // A plugin's links are followed from its own analyses, on the same thread.
    let builtins = LazyBuiltins::new(target.path.as_deref().and_then(crate::builtins::node_in));
    let each = |plugin: &LocalPlugin| {
        let analyzed = analyze_plugin_with(plugin, cache);
        let links = plugin
            .manifest
            .is_some()
            .then(|| crate::link::check_plugin(&plugin.root, &builtins, &analyzed, cache));
        (analyzed, links)
    };
    let (each_plugin, patches) = each_plugin_beside(&plugins, each, || {
        patch_references(&profile_dir, target.plugin.as_deref())
    });
    let (analyzed, links_of): (Vec<Analyzed>, Vec<Option<Links>>) = each_plugin.into_iter().unzip();
    vec![
        patches,
        syntax(&plugins, &analyzed),
        links(&plugins, links_of, &builtins),
        crate::manifest::check(&plugins, &analyzed, &target.home, &profile_dir),
    ]
}

pub(crate) fn name_of(id: &str) -> &'static str {
    match id {
        "patch_references" => "Patch references resolve",
        "syntax" => "JavaScript syntax",
        "links" => "Imports resolve and link",
        _ => crate::manifest::NAME,
    }
}

/// Every `name` inserted by the profile's `cordis.patch.yml`.
fn inserted_names(patches: &[Value]) -> Vec<String> {
    patches
        .iter()
        .filter_map(|p| p.get("insert")?.as_array())
        .flatten()
        .filter_map(|row| row.get("name")?.as_str().map(str::to_owned))
        .collect()
}

fn package_installed(profile_dir: &Path, name: &str) -> bool {
    [
        profile_dir.join("node_modules"),
        profile_dir.join("../node_modules"),
    ]
    .iter()
    .any(|modules| modules.join(name).join("package.json").is_file())
}

fn patch_references(profile_dir: &Path, only: Option<&str>) -> Check {
    let path = profile_dir.join("cordis.patch.yml");
    let id = "patch_references";
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::new(
                id,
                name_of(id),
                Status::Pass,
                "no cordis.patch.yml: the profile adds nothing",
            );
        }
        Err(e) => {
            return Check::new(
                id,
                name_of(id),
                Status::Fail,
                format!("cannot read {}: {e}", path.display()),
            );
        }
    };
    let patches = match crate::patch_list::parse(&path, &text) {
        Ok(patches) => patches,
        Err(e) => {
            let located = e.place().map(|(file, line, column, message)| Located {
                rule: id,
                status: Status::Fail,
                file: file.to_owned(),
                line,
                column,
                message: message.to_owned(),
            });
            return Check::new(id, name_of(id), Status::Fail, e.to_string())
                .with_evidence(vec![e.evidence()])
                .with_located(located.into_iter().collect());
        }
    };
    let mut problems = Vec::new();
    let mut located = Vec::new();
    let names = inserted_names(&patches);
    let mut names_at = NameLocator::new(&text);
    for name in &names {
        // Every name is located, in order, so a repeated name finds its own line.
        let at = names_at.next(name);
        if only.is_some_and(|o| o != name.as_str() && format!("@local/{o}") != *name) {
            continue;
        }
        let place = at;
        let at = at.map_or_else(String::new, |(line, column)| {
            format!("{}:{line}:{column}: ", path.display())
        });
        let problem = if let Some(local) = name.strip_prefix("@local/") {
            // DSH loads the row through node_modules/@local/NAME, which must lead
            // to plugins/NAME, the plugin these checks read.
            crate::local_link::locate(profile_dir, local).problem()
        } else if package_installed(profile_dir, name) {
            None
        } else {
            Some(format!(
                "{name}: package not installed for this profile (looked in node_modules)"
            ))
        };
        if let Some(problem) = problem {
            problems.push(format!("{at}{problem}"));
            located.extend(place.map(|(line, column)| Located {
                rule: id,
                status: Status::Fail,
                file: path.clone(),
                line,
                column,
                message: problem,
            }));
        }
    }
    if problems.is_empty() {
        Check::new(
            id,
            name_of(id),
            Status::Pass,
            format!("{} inserted plugin(s) resolve", names.len()),
        )
    } else {
        Check::new(
            id,
            name_of(id),
            Status::Fail,
            format!(
                "{} of {} inserted plugin(s) do not resolve",
                problems.len(),
                names.len()
            ),
        )
        .with_evidence(problems)
        .with_located(located)
    }
}

/// Finds where each inserted name is written in the patch file: the 1-based
/// line and column of the value of a `name:` key, quoted or not, in the order
/// the names appear.
struct NameLocator<'a> {
    lines: Vec<&'a str>,
    /// The line and byte after the last name found.
    from: (usize, usize),
}

impl<'a> NameLocator<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            lines: text.lines().collect(),
            from: (0, 0),
        }
    }

    fn next(&mut self, name: &str) -> Option<(usize, usize)> {
        let (first_line, first_byte) = self.from;
        for (index, line) in self.lines.iter().enumerate().skip(first_line) {
            let start = if index == first_line { first_byte } else { 0 };
            let mut search = start;
            while let Some(found) = line.get(search..).and_then(|rest| rest.find("name:")) {
                let key_end = search + found + "name:".len();
                let value_start = key_end + (line.len() - key_end - line[key_end..].trim_start().len());
                let value = &line[value_start..];
                let quoted = value.starts_with(['\'', '"']);
                let bare = if quoted { &value[1..] } else { value };
                let ends_well = bare.strip_prefix(name).is_some_and(|after| {
                    after.is_empty() || after.starts_with(['\'', '"', ',', '}', ' ', '#'])
                });
                if bare.starts_with(name) && ends_well {
                    self.from = (index, value_start + 1);
                    // Columns count characters, as editors and YAML parsers do.
                    let column = line[..value_start].chars().count() + 1;
                    return Some((index + 1, column));
                }
                search = key_end;
            }
        }
        None
    }
}

fn syntax(plugins: &[LocalPlugin], analyzed: &[Analyzed]) -> Check {
    let id = "syntax";
    let mut files = 0usize;
    let mut problems = Vec::new();
    let mut located = Vec::new();
    for files_of in analyzed {
        for (file, analysis) in files_of {
            files += 1;
            match analysis {
                Ok(analysis) => {
                    problems.extend(analysis.errors.iter().map(ToString::to_string));
                    located.extend(analysis.errors.iter().map(|e| Located {
                        rule: id,
                        status: Status::Fail,
                        file: e.file.clone(),
                        line: e.line,
                        column: e.column,
                        message: e.message.clone(),
                    }));
                }
                Err(e) => problems.push(format!("{}: {e}", file.display())),
            }
        }
    }
    if problems.is_empty() {
        Check::new(
            id,
            name_of(id),
            Status::Pass,
            format!("{files} file(s) of {} local plugin(s) parse", plugins.len()),
        )
    } else {
        Check::new(
            id,
            name_of(id),
            Status::Fail,
            format!("{} problem(s) in {files} file(s)", problems.len()),
        )
        .with_evidence(problems)
        .with_located(located)
    }
}

/// What Node's loader would refuse, from each plugin's entry on: what each
/// plugin's walk found (`None` for a plugin without a readable manifest), with
/// the built-ins the walks asked.
fn links(plugins: &[LocalPlugin], links_of: Vec<Option<Links>>, builtins: &LazyBuiltins) -> Check {
    let id = "links";
    let mut modules = 0;
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    let mut undecided = Vec::new();
    let mut located = Vec::new();
    for (plugin, links) in plugins.iter().zip(links_of) {
        let Some(links) = links else { continue };
        modules += links.modules;
        for finding in links.findings {
            let status = match finding.severity {
                crate::link::Severity::Fail => {
                    failures.push(finding.to_string());
                    Status::Fail
                }
                crate::link::Severity::Warn => {
                    warnings.push(finding.to_string());
                    Status::Warn
                }
            };
            located.push(Located {
                rule: finding.id,
                status,
                file: finding.file,
                line: finding.line,
                column: finding.column,
                message: finding.message,
            });
        }
        undecided.extend(
            links
                .undecided
                .into_iter()
                .map(|u| format!("{}: not decided: {u}", plugin.dir_name)),
        );
    }
    let builtins_note = builtins.note();
    let (status, detail) = if !failures.is_empty() {
        (
            Status::Fail,
            format!(
                "{} link failure(s) in {modules} module(s) ({builtins_note})",
                failures.len()
            ),
        )
    } else if !warnings.is_empty() {
        (
            Status::Warn,
            format!(
                "{} warning(s) in {modules} module(s) ({builtins_note})",
                warnings.len()
            ),
        )
    } else if !undecided.is_empty() {
        (
            Status::NotTested,
            format!(
                "{} question(s) only running code answers, in {modules} module(s) ({builtins_note})",
                undecided.len()
            ),
        )
    } else {
        (
            Status::Pass,
            format!(
                "{modules} module(s) of {} local plugin(s) link ({builtins_note})",
                plugins.len()
            ),
        )
    };
    let mut evidence = failures;
    evidence.extend(warnings);
    evidence.extend(undecided);
    // Failures first, as the evidence lists them.
    located.sort_by_key(|l| l.status != Status::Fail);
    Check::new(id, name_of(id), status, detail)
        .with_evidence(evidence)
        .with_located(located)
}

#[cfg(test)]
mod tests {
    use super::NameLocator;

    #[test]
    fn inserted_names_are_located_in_order_quoted_or_not() {
        let text = "- insert:\n    - id: a\n      name: '@local/a'\n    - { id: b, name: \"@local/ab\" }\n- insert:\n    - id: c\n      name: @local/a # again\n";
        let mut names = NameLocator::new(text);
        assert_eq!(names.next("@local/a"), Some((3, 13)));
        assert_eq!(names.next("@local/ab"), Some((4, 22)));
        assert_eq!(
            names.next("@local/a"),
            Some((7, 13)),
            "the repeat finds its own line"
        );
        assert_eq!(names.next("@local/zzz"), None);
    }
}
