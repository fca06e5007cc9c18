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
    // A new commit moves the branch's ref (or HEAD itself when detached). Only
    // paths that exist are named: cargo runs a build script whose named path is
    // missing on every build, which would relink the binary each time. The refs
    // directory is scanned as a whole, so a ref written loose or packed away
    // is seen either way.
    if let Some(git_dir) = git(&["rev-parse", "--path-format=absolute", "--git-dir"]).map(PathBuf::from) {
        let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).map(PathBuf::from);
        let mut watched = vec![git_dir.join("HEAD")];
        if let Some(common) = common {
            watched.extend([common.join("refs"), common.join("packed-refs")]);
        }
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
