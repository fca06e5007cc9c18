//! The static checks' cache on a profile laid out as DSH lays it out: a hit gives
//! the result a fresh parse gives, and any changed input misses.

use std::path::{Path, PathBuf};

use dshkit_check::static_checks::{self, Target};
use dshkit_check::{CacheStats, Check, Status};

const PLUGINS: [&str; 3] = ["alpha", "beta", "gamma"];

/// A profile of three local plugins, each an ES module entry importing two files.
struct Profile {
    dir: tempfile::TempDir,
}

impl Profile {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("home/profiles/web");
        let mut patch = String::new();
        for name in PLUGINS {
            let root = profile.join("plugins").join(name);
            std::fs::create_dir_all(root.join("lib")).unwrap();
            std::fs::write(
                root.join("package.json"),
                format!(r#"{{"name":"@local/{name}","type":"module","main":"index.js"}}"#),
            )
            .unwrap();
            std::fs::write(
                root.join("index.js"),
                "import { one } from './lib/one.js';\nimport { two } from './lib/two.js';\nexport const apply = () => one + two;\n",
            )
            .unwrap();
            std::fs::write(root.join("lib/one.js"), "export const one = 1;\n").unwrap();
            std::fs::write(root.join("lib/two.js"), "export const two = 2;\n").unwrap();
            let links = profile.join("node_modules/@local");
            std::fs::create_dir_all(&links).unwrap();
            dshkit_os::fs::symlink(format!("../../plugins/{name}"), links.join(name)).unwrap();
            patch.push_str(&format!(
                "- insert:\n    - id: {name}\n      name: '@local/{name}'\n"
            ));
        }
        std::fs::write(profile.join("cordis.patch.yml"), patch).unwrap();
        Self { dir }
    }

    fn plugin(&self, name: &str) -> PathBuf {
        self.dir.path().join("home/profiles/web/plugins").join(name)
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache/check")
    }

    fn target(&self, cache: bool) -> Target {
        Target {
            home: self.dir.path().join("home"),
            profile: "web".into(),
            plugin: None,
            path: None,
            cache: cache.then(|| self.cache_dir()),
        }
    }

    /// The checks through the cache, and what the cache did.
    fn cached(&self) -> (Vec<Check>, CacheStats) {
        let (checks, stats) = static_checks::run_counted(&self.target(true));
        (checks, stats.expect("a cache was given"))
    }

    /// The checks with every file parsed.
    fn fresh(&self) -> Vec<Check> {
        static_checks::run(&self.target(false))
    }
}

fn real(path: &Path) -> PathBuf {
    dshkit_os::fs::canonicalize(path).unwrap()
}

fn status(checks: &[Check], id: &str) -> Status {
    checks.iter().find(|c| c.id == id).unwrap().status
}

#[test]
fn one_changed_byte_of_one_file_misses_that_file_only() {
    let profile = Profile::new();
    let (cold, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses), (0, 9), "{stats:?}");
    assert_eq!(cold, profile.fresh());
    let (warm, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses, stats.ignored), (9, 0, 0), "{stats:?}");
    assert_eq!(warm, cold, "a hit gives what a parse gives");

    // One byte: `1` becomes `(`, a syntax error the report must show.
    let file = profile.plugin("beta").join("lib/one.js");
    std::fs::write(&file, "export const one = (;\n").unwrap();
    let (changed, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses), (8, 1), "{stats:?}");
    assert_eq!(stats.missed, vec![real(&file)]);
    assert_eq!(status(&changed, "syntax"), Status::Fail, "{changed:#?}");
    assert_eq!(changed, profile.fresh());
}

#[test]
fn a_package_json_that_changes_how_files_load_misses_that_plugins_files() {
    let profile = Profile::new();
    profile.cached();
    // `commonjs`: gamma's files now load as scripts, where `import` is an error.
    std::fs::write(
        profile.plugin("gamma").join("package.json"),
        r#"{"name":"@local/gamma","type":"commonjs","main":"index.js"}"#,
    )
    .unwrap();
    let (checks, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses), (6, 3), "{stats:?}");
    assert!(
        stats
            .missed
            .iter()
            .all(|f| f.starts_with(real(&profile.plugin("gamma")))),
        "{stats:?}"
    );
    assert_eq!(status(&checks, "syntax"), Status::Fail, "{checks:#?}");
    assert_eq!(checks, profile.fresh());
}

#[test]
fn a_package_json_that_changes_resolution_is_seen_though_every_file_hits() {
    let profile = Profile::new();
    profile.cached();
    // Same files, same kinds: every analysis hits, and the entry is still resolved anew.
    std::fs::write(
        profile.plugin("alpha").join("package.json"),
        r#"{"name":"@local/alpha","type":"module","exports":{"./other":"./index.js"}}"#,
    )
    .unwrap();
    let (checks, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses), (9, 0), "{stats:?}");
    assert_eq!(status(&checks, "links"), Status::Fail, "{checks:#?}");
    assert_eq!(checks, profile.fresh());
}

#[test]
fn a_damaged_store_entry_is_ignored_and_written_again() {
    let profile = Profile::new();
    let (cold, _) = profile.cached();
    let store = std::fs::read_dir(profile.cache_dir())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // Still JSON that reads as an analysis, but not what was written.
    let text = std::fs::read_to_string(&store).unwrap();
    let damaged = text.replacen("\"one\"", "\"eno\"", 1);
    assert_ne!(damaged, text);
    std::fs::write(&store, damaged).unwrap();
    let (checks, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses, stats.ignored), (8, 1, 1), "{stats:?}");
    assert_eq!(checks, cold, "the damaged entry was not trusted");
    let (_, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses, stats.ignored), (9, 0, 0), "{stats:?}");
}

#[test]
fn a_missing_export_is_found_from_stored_analyses_as_from_a_parse() {
    let profile = Profile::new();
    // `two.js` exports `two` and `twice`, never `three`.
    let two = profile.plugin("gamma").join("lib/two.js");
    std::fs::write(&two, "export const twice = 4;\nexport const two = 2;\n").unwrap();
    let index = profile.plugin("gamma").join("index.js");
    std::fs::write(
        &index,
        "import { one } from './lib/one.js';\nimport { two, twice, three } from './lib/two.js';\nexport const apply = () => one + two + twice + three;\n",
    )
    .unwrap();
    let (cold, _) = profile.cached();
    let (warm, stats) = profile.cached();
    assert_eq!((stats.hits, stats.misses), (9, 0), "{stats:?}");
    assert_eq!(warm, cold, "a hit gives what a parse gives");
    assert_eq!(warm, profile.fresh());
    let links = warm.iter().find(|c| c.id == "links").unwrap();
    assert_eq!(links.status, Status::Fail, "{links:#?}");
    let found = serde_json::to_string(links).unwrap();
    assert!(
        found.contains("does not provide an export named 'three'")
            && !found.contains("export named 'two'")
            && !found.contains("export named 'twice'"),
        "only `three` is missing: {found}"
    );
}
