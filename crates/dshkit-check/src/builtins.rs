//! Node's built-in modules and their export names, asked of the Node that DSH
//! runs (they change between versions: `fs.glob` is new in 22) once, then cached
//! on disk by that binary's identity, so a check run spawns no Node.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::names::Names;

/// Built-ins only reachable with the `node:` prefix (not in `builtinModules`).
const PREFIX_ONLY: &[&str] = &["sea", "sqlite", "test", "test/reporters"];

/// What Node prints: its version and, per built-in, its export names.
const SCRIPT: &str = r"
const { builtinModules } = require('node:module');
const modules = {};
for (const name of [...builtinModules, ...JSON.parse(process.argv[1])]) {
  try { modules[name] = Object.keys(require(name.includes(':') || builtinModules.includes(name) ? name : 'node:' + name)); }
  catch { modules[name] = null; }
}
process.stdout.write(JSON.stringify({ version: process.version, modules }));
";

/// Node's built-ins: the names, and what each exports (`None`: unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Builtins {
    pub version: String,
    pub modules: BTreeMap<String, Option<BTreeSet<String>>>,
}

impl Builtins {
    /// Whether `name` (without `node:`) is a built-in.
    pub fn contains(&self, name: &str) -> bool {
        self.modules.contains_key(name)
    }

    /// The names `import { … } from 'name'` may take (`default` included).
    pub fn exports(&self, name: &str) -> Option<Names> {
        let names = self.modules.get(name)?.as_ref()?;
        Some(names.iter().map(String::as_str).chain(["default"]).collect())
    }

    /// The built-ins of `node`, from the cache when its binary is unchanged.
    pub fn of(node: &Path) -> Result<Self, String> {
        let cache = cache_file(node);
        if let Some(cached) = cache
            .as_ref()
            .and_then(|c| std::fs::read_to_string(c).ok())
            .and_then(|text| serde_json::from_str::<Self>(&text).ok())
        {
            return Ok(cached);
        }
        let output = std::process::Command::new(node)
            .arg("-e")
            .arg(SCRIPT)
            .arg(serde_json::to_string(PREFIX_ONLY).unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{} could not list its built-ins: {}",
                node.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let builtins: Self = serde_json::from_slice(&output.stdout)
            .map_err(|e| format!("{} printed no built-in list: {e}", node.display()))?;
        if let Some(cache) = cache {
            store(&cache, &builtins);
        }
        Ok(builtins)
    }
}

/// The built-ins of a Node, asked for only when a module imports a built-in or a
/// bare name (a tree of relative imports never spawns Node).
#[derive(Debug)]
pub struct LazyBuiltins {
    node: Option<PathBuf>,
    loaded: std::sync::OnceLock<Result<Builtins, String>>,
}

impl LazyBuiltins {
    /// The built-ins of `node`; `None`: there is no Node to ask.
    pub fn new(node: Option<PathBuf>) -> Self {
        Self {
            node,
            loaded: std::sync::OnceLock::new(),
        }
    }

    /// The built-ins, loading them at the first question.
    pub fn get(&self) -> Option<&Builtins> {
        self.loaded
            .get_or_init(|| match &self.node {
                Some(node) => Builtins::of(node),
                None => Err("no node on DSH's PATH".to_owned()),
            })
            .as_ref()
            .ok()
    }

    /// What a result says about them.
    pub fn note(&self) -> String {
        match self.loaded.get() {
            None => "no built-in imported".to_owned(),
            Some(Ok(builtins)) => format!("built-ins of Node {}", builtins.version),
            Some(Err(why)) => format!("built-ins not known: {why}"),
        }
    }
}

/// The `node` in `path` (a `PATH` value), as DSH would find it.
pub fn node_in(path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
}

/// `node-builtins/<digest of the binary's path, size and mtime>.json` in dshkit's
/// cache directory (`$XDG_CACHE_HOME/dshkit` on Linux, `%LOCALAPPDATA%\dshkit` on Windows).
fn cache_file(node: &Path) -> Option<PathBuf> {
    let identity = crate::cache::file_identity(node)?;
    let digest = hex::encode(&sha2::Sha256::digest(identity.as_bytes())[..12]);
    let env = dshkit_env::Environment::from_process();
    let base = env.dshkit_dir(dshkit_env::Dir::Cache)?;
    Some(base.join("node-builtins").join(format!("{digest}.json")))
}

/// Writes the cache atomically; a failure only costs a spawn next time.
fn store(cache: &Path, builtins: &Builtins) {
    let Some(dir) = cache.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(text) = serde_json::to_string(builtins) else {
        return;
    };
    let _ = dshkit_os::fs::write_atomic(cache, text.as_bytes());
}
