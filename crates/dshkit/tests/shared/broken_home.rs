//! A DSH home whose `web` profile has two faults, written the same on every
//! platform: a local plugin with a syntax error, and an inserted `@local`
//! plugin that does not exist. The Linux suite and the Windows suite (under
//! Wine) check the same home and expect the same positions.

use std::path::{Path, PathBuf};

/// The patch file: the first row's plugin exists, the second's does not.
pub(crate) const PATCH: &str =
    "- insert:\n    - id: broken\n      name: '@local/broken'\n    - id: ghost\n      name: '@local/ghost'\n";
/// Where `@local/ghost` is written in [`PATCH`]: line 5, at its quote.
pub(crate) const GHOST_AT: (usize, usize) = (5, 13);
/// The plugin's entry: line 3 has a statement cut short.
pub(crate) const BROKEN_INDEX: &str =
    "export const name = 'broken';\nexport function apply(ctx) {\n  const answer = ;\n  return ctx;\n}\n";
/// Where the syntax error is reported in [`BROKEN_INDEX`] (`node --check`
/// agrees on the line).
pub(crate) const SYNTAX_AT: (usize, usize) = (3, 18);

/// The files written, for the assertions.
pub(crate) struct BrokenHome {
    pub(crate) home: PathBuf,
    pub(crate) patch: PathBuf,
    pub(crate) broken_index: PathBuf,
}

/// Writes the home under `dir`.
pub(crate) fn write(dir: &Path) -> BrokenHome {
    let home = dir.join("dsh-home");
    let profile = home.join("profiles").join("web");
    let plugin = profile.join("plugins").join("broken");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("package.json"),
        r#"{ "name": "@local/broken", "type": "module", "main": "index.js" }"#,
    )
    .unwrap();
    let broken_index = plugin.join("index.js");
    std::fs::write(&broken_index, BROKEN_INDEX).unwrap();
    let patch = profile.join("cordis.patch.yml");
    std::fs::write(&patch, PATCH).unwrap();
    BrokenHome {
        home,
        patch,
        broken_index,
    }
}

/// Writes the home under `dir`, runs `dshkit --json check` on it (`dshkit` is
/// the platform's binary, its environment set) and asserts that both faults are
/// reported at their positions, with the platform's own paths.
pub(crate) fn check(mut dshkit: std::process::Command, dir: &Path) -> BrokenHome {
    let home = write(dir);
    let out = dshkit
        .args(["--json", "check", "--dsh-home"])
        .arg(&home.home)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the report is JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let expectations = [
        ("syntax", &home.broken_index, SYNTAX_AT, ""),
        (
            "patch_references",
            &home.patch,
            GHOST_AT,
            "@local/ghost: no local plugin at ",
        ),
    ];
    for (id, file, (line, column), message) in expectations {
        let check = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id} check: {report:#}"));
        assert_eq!(check["status"], "fail", "{check:#}");
        let expected = format!("{}:{line}:{column}: {message}", file.display());
        assert!(
            check["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e.as_str().unwrap().starts_with(&expected)),
            "{check:#} has a line starting with {expected:?}"
        );
    }
    home
}
