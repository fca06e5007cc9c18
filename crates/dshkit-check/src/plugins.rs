//! The local plugins of a profile and the files they ship.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cache::AnalysisCache;
use crate::realpath::Kind;
use crate::syntax::{Analysis, ModuleKind};

/// Most files followed from one plugin's entries.
pub const MAX_FILES_PER_PLUGIN: usize = 2000;

/// A local plugin: `profiles/P/plugins/NAME`, as DSH resolves `@local/NAME`.
#[derive(Debug, Clone)]
pub struct LocalPlugin {
    /// The directory name, e.g. `my-plugin`.
    pub dir_name: String,
    /// Its real directory.
    pub root: PathBuf,
    /// Its `package.json`, when it parsed.
    pub manifest: Option<Value>,
    /// Why `package.json` could not be read, if it could not.
    pub manifest_error: Option<String>,
}

impl LocalPlugin {
    /// `type` of its `package.json`.
    pub fn package_type(&self) -> Option<&str> {
        self.manifest.as_ref()?.get("type")?.as_str()
    }

    /// The entry files: `main` (default `index.js`) and every string target of `exports`.
    pub fn entries(&self) -> Vec<PathBuf> {
        let mut entries = Vec::new();
        let main = self
            .manifest
            .as_ref()
            .and_then(|m| m["main"].as_str())
            .unwrap_or("index.js");
        entries.push(self.root.join(main));
        if let Some(exports) = self.manifest.as_ref().map(|m| &m["exports"]) {
            collect_targets(exports, &mut |target| entries.push(self.root.join(target)));
        }
        entries.sort();
        entries.dedup();
        entries
    }
}

fn collect_targets(value: &Value, push: &mut dyn FnMut(&str)) {
    match value {
        Value::String(target) if target.starts_with("./") => push(target),
        Value::Object(map) => map.values().for_each(|v| collect_targets(v, push)),
        Value::Array(items) => items.iter().for_each(|v| collect_targets(v, push)),
        _ => {}
    }
}

/// The local plugins of `profile_dir`, sorted by name.
pub fn local_plugins(profile_dir: &Path) -> Vec<LocalPlugin> {
    let Ok(entries) = std::fs::read_dir(profile_dir.join("plugins")) else {
        return Vec::new();
    };
    let mut plugins: Vec<LocalPlugin> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .map(|dir_name| {
            let dir = profile_dir.join("plugins").join(&dir_name);
            let root = crate::realpath::real(&dir).unwrap_or(dir);
            let (manifest, manifest_error) = match crate::realpath::manifest(&root) {
                crate::realpath::Manifest::Parsed(value) => (Some(Value::clone(&value)), None),
                crate::realpath::Manifest::Invalid(e) => {
                    (None, Some(format!("package.json is not valid JSON: {e}")))
                }
                crate::realpath::Manifest::Missing(e) => {
                    (None, Some(format!("package.json cannot be read: {e}")))
                }
            };
            LocalPlugin {
                dir_name,
                root,
                manifest,
                manifest_error,
            }
        })
        .collect();
    plugins.sort_by(|a, b| a.dir_name.cmp(&b.dir_name));
    plugins
}

/// The files of one plugin with their analyses (see [`analyze_plugin`]).
pub(crate) type Analyzed = Vec<(PathBuf, Result<Analysis, String>)>;

/// Every file a plugin ships as code: its entries, what they import relatively
/// (transitively), and everything under `lib/`. Each with its analysis.
pub fn analyze_plugin(plugin: &LocalPlugin) -> Vec<(PathBuf, Result<Analysis, String>)> {
    analyze_plugin_with(plugin, &AnalysisCache::disabled())
}

/// Most threads the plugins of one run are checked on, this one included.
pub const MAX_CHECK_THREADS: usize = 4;
/// Fewest plugins worth another thread (starting one costs about what checking
/// a small plugin from the cache does).
const PLUGINS_PER_THREAD: usize = 4;

/// `each` for every plugin, the results in the plugins' order, and `beside`,
/// another piece of the run's work. With more than one core, the work is shared
/// out among up to [`MAX_CHECK_THREADS`] threads: the first to start takes
/// `beside`, and each takes the next plugin when it is done with its last. Each
/// thread resolves paths in a scope of its own that starts from what this
/// thread's knew; this thread's scope keeps what they found.
pub(crate) fn each_plugin_beside<R: Send, T: Send>(
    plugins: &[LocalPlugin],
    each: impl Fn(&LocalPlugin) -> R + Sync,
    beside: impl FnOnce() -> T + Send,
) -> (Vec<R>, T) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = cores
        .min(MAX_CHECK_THREADS)
        .min(plugins.len() / PLUGINS_PER_THREAD + 1);
    each_plugin_on(plugins, each, beside, threads)
}

fn each_plugin_on<R: Send, T: Send>(
    plugins: &[LocalPlugin],
    each: impl Fn(&LocalPlugin) -> R + Sync,
    beside: impl FnOnce() -> T + Send,
    threads: usize,
) -> (Vec<R>, T) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    let beside = Mutex::new(Some(beside));
    let next = AtomicUsize::new(0);
    // The first thread to start takes `beside`; then each takes the next plugin.
    let work = || {
        let beside = beside.lock().unwrap_or_else(PoisonError::into_inner).take();
        let beside = beside.map(|beside| beside());
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(plugin) = plugins.get(i) else { break };
            done.push((i, each(plugin)));
        }
        (beside, done)
    };
    let (beside, mut done) = std::thread::scope(|scope| {
        let known = (threads > 1).then(crate::realpath::known).unwrap_or_default();
        // A thread that cannot be started leaves its share to the others.
        let others: Vec<_> = (1..threads)
            .filter_map(|_| {
                let known = known.clone();
                std::thread::Builder::new()
                    .name("dshkit-check".into())
                    .spawn_scoped(scope, || crate::realpath::scope_from(known, work))
                    .ok()
            })
            .collect();
        let (mut beside, mut done) = work();
        for other in others {
            match other.join() {
                Ok(((theirs, their_done), learned)) => {
                    beside = beside.or(theirs);
                    done.extend(their_done);
                    crate::realpath::adopt(learned);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        (beside, done)
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    let beside = beside.expect("every thread ran `work`, and the first took `beside`");
    (done.into_iter().map(|(_, result)| result).collect(), beside)
}

/// [`analyze_plugin`], each file's analysis taken from `cache` when its inputs
/// are unchanged.
pub fn analyze_plugin_with(plugin: &LocalPlugin, cache: &AnalysisCache) -> Analyzed {
    // An entry that is not there is the manifest's and the links' finding, not a
    // file to parse (Node may fall back, or `exports` may name the entry instead).
    let mut queue: Vec<PathBuf> = plugin
        .entries()
        .iter()
        .filter_map(|p| match crate::realpath::lookup(p) {
            Some((real, Kind::File)) => Some(real),
            _ => None,
        })
        .collect();
    queue.extend(files_under(&plugin.root.join("lib")).iter().map(|p| normalize(p)));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut types = std::collections::HashMap::new();
    while let Some(file) = queue.pop() {
        if !seen.insert(file.clone()) || out.len() >= MAX_FILES_PER_PLUGIN {
            continue;
        }
        // The nearest package.json decides, as in Node (a nested lib/package.json too).
        let package_type =
            crate::link::nearest_package_type(file.parent().unwrap_or(&plugin.root), &mut types);
        let Some(kind) = ModuleKind::for_file(&file, package_type.as_deref()) else {
            continue;
        };
        let analysis = crate::syntax::read_source(&file).map(|text| {
            cache.analyze(
                &file,
                &text,
                kind,
                ModuleKind::is_detected(&file, package_type.as_deref()),
            )
        });
        if let Ok(analysis) = &analysis {
            let dir = file.parent().unwrap_or(&plugin.root).to_owned();
            queue.extend(
                analysis
                    .imports
                    .iter()
                    .filter(|s| s.starts_with("./") || s.starts_with("../"))
                    .map(|s| normalize(&dir.join(s))),
            );
        }
        out.push((file, analysis));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The real path when it exists (so `./a.js` and `a.js` are one file), else as given.
fn normalize(path: &Path) -> PathBuf {
    crate::realpath::real(path).unwrap_or_else(|_| path.to_owned())
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let real_dir = match crate::realpath::lookup(&dir) {
            Some((real, Kind::Dir)) => Some(real),
            _ => None,
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            // The entry's type is in the listing; a link is followed (and its
            // answer kept for the real path asked next).
            let (is_dir, is_plain_file) = match entry.file_type() {
                Ok(t) if !t.is_symlink() => (t.is_dir(), t.is_file()),
                _ => (
                    matches!(crate::realpath::lookup(&path), Some((_, Kind::Dir))),
                    false,
                ),
            };
            if is_dir {
                if entry.file_name() != "node_modules" {
                    stack.push(path);
                }
            } else if ModuleKind::for_file(&path, None).is_some() {
                files.push(match (&real_dir, is_plain_file) {
                    (Some(real_dir), true) => crate::realpath::listed_file(real_dir, &entry.file_name()),
                    _ => path,
                });
            }
            if files.len() >= MAX_FILES_PER_PLUGIN {
                return files;
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile of `count` plugins, each an entry importing one file of `lib/`;
    /// in one in three that file has a syntax error, in another one in three the
    /// entry asks it for a name it does not export.
    fn profile(count: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..count {
            let root = dir.path().join(format!("plugins/p{i:02}"));
            std::fs::create_dir_all(root.join("lib")).unwrap();
            std::fs::write(
                root.join("package.json"),
                r#"{"type":"module","main":"index.js"}"#,
            )
            .unwrap();
            let name = if i % 3 == 1 { "b" } else { "a" };
            let index = format!("import {{ {name} }} from './lib/a.js';\nexport default {name};\n");
            std::fs::write(root.join("index.js"), index).unwrap();
            let body = if i % 3 == 0 {
                "export const a = (;\n"
            } else {
                "export const a = 1;\n"
            };
            std::fs::write(root.join("lib/a.js"), body).unwrap();
        }
        dir
    }

    type Checked = (Analyzed, crate::link::Links);

    /// Each plugin's analyses and links, on `threads` threads through `cache`.
    fn checked_on(plugins: &[LocalPlugin], cache: &AnalysisCache, threads: usize) -> Vec<Checked> {
        let builtins = crate::builtins::LazyBuiltins::new(None);
        let each = |plugin: &LocalPlugin| {
            let analyzed = analyze_plugin_with(plugin, cache);
            let links = crate::link::check_plugin(&plugin.root, &builtins, &analyzed, cache);
            (analyzed, links)
        };
        crate::realpath::scope(|| each_plugin_on(plugins, each, || (), threads)).0
    }

    #[test]
    fn plugins_shared_among_threads_are_checked_as_on_one() {
        let dir = profile(9);
        let plugins = local_plugins(dir.path());
        assert_eq!(plugins.len(), 9);
        let one = checked_on(&plugins, &AnalysisCache::disabled(), 1);
        let broken: Vec<bool> = one
            .iter()
            .map(|(files, _)| {
                files
                    .iter()
                    .any(|(_, a)| a.as_ref().is_ok_and(|a| !a.errors.is_empty()))
            })
            .collect();
        assert_eq!(broken, (0..9).map(|i| i % 3 == 0).collect::<Vec<_>>());
        let missing: Vec<bool> = one
            .iter()
            .map(|(_, links)| links.findings.iter().any(|f| f.id == "import.missing_export"))
            .collect();
        assert_eq!(missing, (0..9).map(|i| i % 3 == 1).collect::<Vec<_>>());
        for threads in [2, 3, 16] {
            assert_eq!(
                checked_on(&plugins, &AnalysisCache::disabled(), threads),
                one,
                "on {threads} threads"
            );
        }

        // Through one store shared by the threads: a cold run, then a warm one.
        let store = tempfile::tempdir().unwrap();
        for hits in [0, 18] {
            let cache = AnalysisCache::open(store.path(), dir.path());
            assert_eq!(checked_on(&plugins, &cache, 3), one);
            let stats = cache.stats().unwrap();
            assert_eq!((stats.hits, stats.misses), (hits, 18 - hits), "{stats:?}");
            cache.save();
        }
    }

    #[test]
    fn beside_runs_once_on_whichever_thread_starts_first() {
        let dir = profile(5);
        let plugins = local_plugins(dir.path());
        let ran = std::sync::atomic::AtomicUsize::new(0);
        for threads in [1, 2, 8] {
            let beside = || ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (names, _) =
                crate::realpath::scope(|| each_plugin_on(&plugins, |p| p.dir_name.clone(), beside, threads));
            assert_eq!(names, ["p00", "p01", "p02", "p03", "p04"]);
        }
        assert_eq!(ran.into_inner(), 3, "once per run");
    }
}
