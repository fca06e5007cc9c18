//! Names the commit the binary is built from, for `dshkit --version`:
//! `DSHKIT_BUILD` is ` (COMMIT DATE)` in a git checkout, empty elsewhere (a
//! source tarball, `cargo install` from a registry).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn main() {
    let build = match (
        git(&["rev-parse", "--short=12", "HEAD"]),
        git(&["log", "-1", "--format=%cs"]),
    ) {
        (Some(commit), Some(date)) => format!(" ({commit} {date})"),
        (Some(commit), None) => format!(" ({commit})"),
        _ => String::new(),
    };
    println!("cargo:rustc-env=DSHKIT_BUILD={build}");
    // A new commit moves the branch's ref (or HEAD itself when detached).
    if let Some(git_dir) = git(&["rev-parse", "--path-format=absolute", "--git-dir"]).map(PathBuf::from) {
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
        if let (Some(common), Some(reference)) = (
            git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).map(PathBuf::from),
            git(&["symbolic-ref", "-q", "HEAD"]),
        ) {
            println!("cargo:rerun-if-changed={}", common.join(reference).display());
            println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
