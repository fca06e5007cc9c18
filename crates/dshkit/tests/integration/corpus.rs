//! The real-framework corpus: apps made by the frameworks' own generators (or by
//! hand from their real packages where a generator needs more network than the
//! npm registry), installed from their committed lock files under
//! `target/peers/corpus/` (`harness/corpus/README.md` says how each was made),
//! and verified the way people do it: `dshkit verify DIR --step ...
//! --expect-text ... --json`.
//!
//! Each case has the app's own interaction and the verdict dshkit must reach:
//! VERIFIED where the app works, and FAILED, for the error itself, on a copy of
//! the same app that throws after the interaction. The default suite runs one
//! app of each class (shadow DOM, a server that answers 503 while it starts,
//! scripts run in a new process group, client-side navigation, hydration, a
//! static site, a framework's own shadow root); the other apps' cases are
//! `#[ignore]`d and run by `cargo xtask test --corpus`, which installs their
//! apps.
//!
//! The apps run on their frameworks' default ports, one at a time (the
//! `real-apps` test group in `.config/nextest.toml`); a port another process
//! holds fails the case with dshkit's port-conflict error, never a verdict about
//! that process's server.
//!
//! Each run prints its figures to stderr (`--no-capture` shows them): the time
//! of detection, to the server's readiness and of the whole verification.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dshkit_test::{Peers, processes_mentioning, spawn_guarded, spawn_ready, wait_until, workspace_root};
use serde_json::{Value, json};

use crate::support::{dshkit_command, output};

/// What dshkit must conclude about an app.
#[derive(Clone, Copy, Debug)]
enum Expected {
    Verified,
    /// FAILED, with the first reason naming [`THROWN`].
    FailedOnTheThrownError,
}

/// The message of the error a broken copy throws after the interaction.
const THROWN: &str = "thrown by the corpus after the interaction";

/// The app that needs no install: plain HTML, served by dshkit itself.
const STATIC_SITE: &str = "static-site";

/// One app of the corpus, its interaction and what detection must find.
struct Case {
    /// Its folder under `harness/corpus/`.
    app: &'static str,
    framework: &'static str,
    /// None where no package manager is needed (dshkit serves the files).
    package_manager: Option<&'static str>,
    /// The dev server's default port; `None` for dshkit's own static server.
    port: Option<u16>,
    steps: &'static [&'static str],
    expect_text: &'static [&'static str],
    /// The path the interaction ends on, when it navigates.
    expect_path: Option<&'static str>,
}

/// A change to one file of an app's copy: `find` (which must be there) becomes
/// `replace`.
struct Edit {
    file: &'static str,
    find: &'static str,
    replace: &'static str,
}

/// The installed app (`target/peers/corpus/<app>`); the static site, which
/// needs no install, from the repository.
fn installed(peers: &Peers, app: &str) -> PathBuf {
    if app == STATIC_SITE {
        return workspace_root().join("harness/corpus").join(app);
    }
    let dir = peers.dir.join("corpus").join(app);
    assert!(
        dir.join("node_modules").is_dir(),
        "{} is not installed: run `cargo xtask setup --corpus` (or `cargo xtask test --corpus`)",
        dir.display()
    );
    dir
}

/// `PATH` with the corpus's pnpm 12, then Node 22, first.
fn corpus_path(peers: &Peers) -> std::ffi::OsString {
    let mut dirs = vec![peers.dir.join("pnpm/node_modules/.bin")];
    dirs.extend(std::env::split_paths(&peers.path_var()));
    std::env::join_paths(dirs).expect("valid PATH")
}

/// Verifies the installed app of `case`, started as after a fresh install:
/// without what an earlier run built or cached (a first run is where a dev
/// server discovers and optimises dependencies, and reloads the page).
fn verify_installed(case: &Case, expected: Expected) {
    let peers = Peers::get();
    let dir = installed(&peers, case.app);
    forget_builds(&dir);
    verify(case, &dir, expected);
}

/// Removes what a dev server built or cached in `app` (the directories a
/// broken copy leaves out).
fn forget_builds(app: &Path) {
    let built = NOT_COPIED.iter().map(|name| app.join(name));
    let cached = NOT_COPIED_FROM_NODE_MODULES
        .iter()
        .map(|name| app.join("node_modules").join(name));
    for dir in built.chain(cached) {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot remove {}: {e}", dir.display()),
        }
    }
}

/// Verifies a copy of the installed app of `case` with `edit` made, which
/// throws [`THROWN`] after the interaction: it must be FAILED for that error.
fn verify_broken_copy(case: &Case, edit: &Edit) {
    let peers = Peers::get();
    let copy = broken_copy(&peers, &installed(&peers, case.app), edit);
    verify(case, copy.path(), Expected::FailedOnTheThrownError);
}

/// `dshkit run DIR`, then `dshkit verify URL` with the URL of the running app
/// at `case.expect_path`: the page the URL names is the one verified, and the
/// report names it.
fn verify_url_with_path(case: &Case, dir: &Path, expected: Expected) {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let path = corpus_path(&peers);
    let (mut server, origin) = spawn_ready(
        dshkit_command(home.path()).env("PATH", &path).arg("run").arg(dir),
        "http://",
        Duration::from_mins(2),
    );
    let page = format!(
        "http://{}{}",
        origin.trim_end_matches('/'),
        case.expect_path.expect("a path to verify")
    );
    let run = run_verify(case, OsStr::new(&page), home.path(), &path);
    print_figures(&page, None, &run, expected);
    assert_verdict(&run, expected);
    assert_eq!(run.report["requestedUrl"], page, "{:#}", run.report);
    assert_eq!(run.report["url"], page, "{:#}", run.report);

    // `dshkit run` stops its server when it is asked to stop.
    server.terminate(Duration::from_secs(10));
    wait_until(
        Duration::from_secs(10),
        &format!("processes of {} left behind", dir.display()),
        || processes_mentioning(dir.to_str().unwrap()).is_empty(),
    );
}

/// `dshkit detect` and `dshkit verify` on `dir` as `case` says; asserts the
/// detection, the verdict, the report's URL and run profile, and that no
/// process of the app is left.
fn verify(case: &Case, dir: &Path, expected: Expected) {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let path = corpus_path(&peers);
    let (candidate, detect_time) = detect(case, dir, home.path(), &path);
    let run = run_verify(case, dir.as_os_str(), home.path(), &path);
    print_figures(&dir.display().to_string(), Some(detect_time), &run, expected);
    assert_verdict(&run, expected);
    assert_the_report_names_the_app(case, dir, &candidate, &run.report);

    // Nothing of the app is left running.
    let left = processes_mentioning(dir.to_str().unwrap());
    assert!(
        left.is_empty(),
        "processes of {} left behind: {left:?}",
        dir.display()
    );
    if let Some(port) = case.port {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} is still served"
        );
    }
}

/// The verdict and exit code `expected`; a FAILED one for the thrown error alone.
fn assert_verdict(run: &VerifyRun, expected: Expected) {
    let report = &run.report;
    match expected {
        Expected::Verified => {
            assert_eq!(report["verdict"], "VERIFIED", "{report:#}\n{:#?}", run.log);
            assert_eq!(run.exit, Some(0));
        }
        Expected::FailedOnTheThrownError => {
            assert_eq!(report["verdict"], "FAILED", "{report:#}\n{:#?}", run.log);
            assert_eq!(run.exit, Some(1));
            let first = report["reasons"][0].as_str().unwrap_or_default();
            assert!(
                first.contains(THROWN),
                "the first reason must be the thrown error: {report:#}"
            );
            // The broken copy differs from the working app by the error alone:
            // besides it, only the case's own assertions may fail (the error
            // can stop the page from showing what they expect), and the
            // framework may warn of it. A failed step or request, or another
            // exception, is about something else.
            for reason in report["reasons"].as_array().unwrap() {
                let reason = reason.as_str().unwrap();
                let warned = reason.starts_with("console warning: ")
                    || reason.split_once(" console warnings, the first: ").is_some();
                assert!(
                    reason.contains(THROWN) || reason.starts_with("assertion failed: ") || warned,
                    "a reason that is not the thrown error: {reason}\n{report:#}"
                );
            }
        }
    }
}

/// `dshkit detect DIR --json`: asserts its one candidate is what `case` says;
/// returns it and the time detection took.
fn detect(case: &Case, dir: &Path, home: &Path, path: &OsStr) -> (Value, Duration) {
    let started = Instant::now();
    let detect = output(
        dshkit_command(home)
            .env("PATH", path)
            .arg("detect")
            .arg(dir)
            .arg("--json"),
    );
    let took = started.elapsed();
    let detection: Value = serde_json::from_slice(&detect.stdout)
        .unwrap_or_else(|_| panic!("no detection: {}", String::from_utf8_lossy(&detect.stderr)));
    assert_eq!(detection["ambiguous"], false, "{detection:#}");
    let candidate = &detection["candidates"][0];
    assert_eq!(candidate["framework"], case.framework, "{detection:#}");
    assert_eq!(
        candidate["packageManager"],
        json!(case.package_manager),
        "{detection:#}"
    );
    assert_eq!(candidate["expectedPort"], json!(case.port), "{detection:#}");
    (candidate.clone(), took)
}

/// A finished `dshkit verify --json`.
struct VerifyRun {
    report: Value,
    exit: Option<i32>,
    /// Its progress lines (stderr).
    log: Vec<String>,
    /// From its start to the progress line that says the server is ready.
    ready: Option<Duration>,
    took: Duration,
}

/// `dshkit verify TARGET --json` (a directory or a URL) with the steps and
/// assertions of `case`.
fn run_verify(case: &Case, target: &OsStr, home: &Path, path: &OsStr) -> VerifyRun {
    let mut command = dshkit_command(home);
    command.env("PATH", path).arg("verify").arg(target).arg("--json");
    for step in case.steps {
        command.args(["--step", step]);
    }
    for text in case.expect_text {
        command.args(["--expect-text", text]);
    }
    if let Some(path) = case.expect_path {
        command.args(["--expect-url", path]);
    }
    let started = Instant::now();
    let mut run = spawn_guarded(&mut command);
    let stderr = run.child.stderr.take().expect("stderr is piped");
    // Each progress line with the time it came: readiness is one of them.
    let progress = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .map(|line| (started.elapsed(), line))
            .collect::<Vec<_>>()
    });
    let mut stdout = Vec::new();
    run.child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_end(&mut stdout)
        .unwrap();
    let status = run.child.wait().unwrap();
    let took = started.elapsed();
    let progress = progress.join().unwrap();
    let ready = progress
        .iter()
        .find(|(_, line)| line.starts_with("dshkit: ready at "))
        .map(|(at, _)| *at);
    let log: Vec<String> = progress.into_iter().map(|(_, line)| line).collect();
    let report: Value = serde_json::from_slice(&stdout)
        .unwrap_or_else(|_| panic!("no report on stdout ({status}): {log:#?}"));
    VerifyRun {
        report,
        exit: status.code(),
        log,
        ready,
        took,
    }
}

#[expect(clippy::print_stderr, reason = "the corpus's figures")]
fn print_figures(target: &str, detect: Option<Duration>, run: &VerifyRun, expected: Expected) {
    let seconds =
        |took: Option<Duration>| took.map_or_else(|| "-".to_owned(), |t| format!("{:.2} s", t.as_secs_f64()));
    eprintln!(
        "corpus {target}: detect {}, ready {}, verify {:.1} s, verdict {} (expected {expected:?}); reasons: {}",
        seconds(detect),
        seconds(run.ready),
        run.took.as_secs_f64(),
        run.report["verdict"],
        run.report["reasons"]
    );
}

/// The report names the app that was detected and run (its directory and run
/// profile) and the URL it verified.
fn assert_the_report_names_the_app(case: &Case, dir: &Path, candidate: &Value, report: &Value) {
    let runtime = &report["runtime"];
    assert_eq!(runtime["owned"], true, "{report:#}");
    assert_eq!(
        Path::new(runtime["dir"].as_str().unwrap()),
        std::fs::canonicalize(dir)
            .unwrap()
            .join(candidate["dir"].as_str().unwrap())
            .components()
            .collect::<PathBuf>(),
        "{report:#}"
    );
    assert_eq!(runtime["argv"], candidate["argv"], "{report:#}");
    let origin = runtime["url"].as_str().unwrap();
    if let Some(port) = case.port {
        assert!(origin.ends_with(&format!(":{port}/")), "{report:#}");
    }
    assert_eq!(report["requestedUrl"], origin, "{report:#}");
    let expected_url = case.expect_path.map_or_else(
        || origin.to_owned(),
        |path| format!("{}{path}", origin.trim_end_matches('/')),
    );
    assert_eq!(report["url"], expected_url, "{report:#}");
}

/// The frameworks' build output and caches, which a copy must not share with
/// the installed app: folders of these names anywhere, and `.vite` and `.cache`
/// inside a `node_modules`.
const NOT_COPIED: &[&str] = &[".next", ".nuxt", ".output", ".svelte-kit", ".astro", ".angular"];
const NOT_COPIED_FROM_NODE_MODULES: &[&str] = &[".vite", ".cache"];

/// A copy of `app` next to the installed apps with `edit` made. Its files are
/// hard links to the installed ones (a copy where links cannot be made), so a
/// copy of a large `node_modules` is cheap; the edited file is written anew,
/// so the install is never changed.
fn broken_copy(peers: &Peers, app: &Path, edit: &Edit) -> tempfile::TempDir {
    let scratch = peers.dir.join("corpus");
    std::fs::create_dir_all(&scratch).unwrap();
    let copy = tempfile::Builder::new()
        .prefix(".broken-")
        .tempdir_in(&scratch)
        .unwrap();
    link_tree(app, copy.path());
    let file = copy.path().join(edit.file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(edit.find), "{} has no {:?}", edit.file, edit.find);
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, text.replacen(edit.find, edit.replace, 1)).unwrap();
    copy
}

fn link_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let in_node_modules = from.file_name().is_some_and(|n| n == "node_modules");
        if NOT_COPIED.iter().any(|skip| name == *skip)
            || (in_node_modules && NOT_COPIED_FROM_NODE_MODULES.iter().any(|skip| name == *skip))
        {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            dshkit_os::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            std::fs::create_dir(&target).unwrap();
            link_tree(&source, &target);
        } else if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).unwrap();
        }
    }
}

// Shadow DOM: the Lit counter is inside the element's open shadow root.

const LIT: Case = Case {
    app: "vite-lit",
    framework: "vite",
    package_manager: Some("npm"),
    port: Some(5173),
    steps: &["click:button=Count is 0"],
    expect_text: &["Count is 1", "Get started"],
    expect_path: None,
};

#[test]
fn lit_counter_inside_a_shadow_root_is_verified() {
    verify_installed(&LIT, Expected::Verified);
}

#[test]
fn lit_counter_that_throws_after_the_click_fails() {
    verify_broken_copy(
        &LIT,
        &Edit {
            file: "src/my-element.js",
            find: "    this.count++\n",
            replace: "    this.count++\n    throw new Error('thrown by the corpus after the interaction')\n",
        },
    );
}

// Hydration: the counter of the Next default app works once React hydrated it.

const NEXT: Case = Case {
    app: "next-default",
    framework: "next",
    package_manager: Some("npm"),
    port: Some(3000),
    steps: &["click:button=Count is 0"],
    expect_text: &["Count is 1", "To get started, edit the page.tsx file."],
    expect_path: None,
};

#[test]
fn next_default_app_counter_after_hydration_is_verified() {
    verify_installed(&NEXT, Expected::Verified);
}

#[test]
fn next_default_app_that_throws_after_the_click_fails() {
    verify_broken_copy(
        &NEXT,
        &Edit {
            file: "app/counter.tsx",
            find: "onClick={() => setCount((n) => n + 1)}",
            replace: "onClick={() => { setCount((n) => n + 1); throw new Error(\"thrown by the corpus after the interaction\"); }}",
        },
    );
}

// Client-side navigation: the layout's click count survives only a navigation
// that SvelteKit's router makes in the page.

const SVELTEKIT: Case = Case {
    app: "sveltekit-minimal",
    framework: "svelte-kit",
    package_manager: Some("npm"),
    port: Some(5173),
    steps: &["click:button=Clicks: 0", "click:link=About"],
    expect_text: &["About this app", "Clicks: 1"],
    expect_path: Some("/about"),
};

#[test]
fn sveltekit_client_side_navigation_keeps_the_layout_state_and_is_verified() {
    verify_installed(&SVELTEKIT, Expected::Verified);
}

/// The About page of `sveltekit-minimal` throws once it is mounted.
const SVELTEKIT_ABOUT_THROWS: Edit = Edit {
    file: "src/routes/about/+page.svelte",
    find: "<h1>About this app</h1>\n",
    replace: "<script lang=\"ts\">\n\timport { onMount } from 'svelte';\n\tonMount(() => {\n\t\tthrow new Error('thrown by the corpus after the interaction');\n\t});\n</script>\n\n<h1>About this app</h1>\n",
};

#[test]
fn sveltekit_page_that_throws_after_client_side_navigation_fails() {
    verify_broken_copy(&SVELTEKIT, &SVELTEKIT_ABOUT_THROWS);
}

// A URL with a path: the page it names is verified, not the app's root.

const SVELTEKIT_ABOUT: Case = Case {
    steps: &[],
    expect_text: &["About this app"],
    expect_path: Some("/about"),
    ..SVELTEKIT
};

#[test]
fn sveltekit_page_named_by_a_url_with_a_path_is_verified() {
    let peers = Peers::get();
    verify_url_with_path(
        &SVELTEKIT_ABOUT,
        &installed(&peers, SVELTEKIT_ABOUT.app),
        Expected::Verified,
    );
}

/// The app's root is healthy; the page the URL names throws.
#[test]
fn sveltekit_page_named_by_a_url_with_a_path_that_throws_fails() {
    let peers = Peers::get();
    let copy = broken_copy(
        &peers,
        &installed(&peers, SVELTEKIT_ABOUT.app),
        &SVELTEKIT_ABOUT_THROWS,
    );
    verify_url_with_path(&SVELTEKIT_ABOUT, copy.path(), Expected::FailedOnTheThrownError);
}

// A server that answers 503 while it starts: Nuxt 4's dev server.

const NUXT: Case = Case {
    app: "nuxt-minimal",
    framework: "nuxt",
    package_manager: Some("npm"),
    port: Some(3000),
    steps: &["click:button=Count is 0"],
    expect_text: &["Count is 1", "Welcome to Nuxt"],
    expect_path: None,
};

#[test]
fn nuxt_app_whose_server_answers_503_while_starting_is_verified() {
    verify_installed(&NUXT, Expected::Verified);
}

#[test]
fn nuxt_app_that_throws_after_the_click_fails() {
    verify_broken_copy(
        &NUXT,
        &Edit {
            file: "app/app.vue",
            find: "const count = ref(0)\n",
            replace: "const count = ref(0)\nwatch(count, () => {\n  throw new Error('thrown by the corpus after the interaction')\n})\n",
        },
    );
}

// Scripts run in a new process group: pnpm 12 in a workspace, whose web app
// imports a package of the workspace.

const PNPM: Case = Case {
    app: "pnpm-workspace",
    framework: "vite",
    package_manager: Some("pnpm"),
    port: Some(5173),
    steps: &["click:button=Count is 0"],
    expect_text: &["Count is 1", "Greeting from a workspace package"],
    expect_path: None,
};

#[test]
fn pnpm12_workspace_app_in_a_new_process_group_is_verified() {
    verify_installed(&PNPM, Expected::Verified);
}

#[test]
fn pnpm12_workspace_app_that_throws_after_the_click_fails() {
    verify_broken_copy(
        &PNPM,
        &Edit {
            file: "apps/web/src/counter.js",
            find: "element.addEventListener('click', () => setCounter(counter + 1))",
            replace: "element.addEventListener('click', () => {\n    setCounter(counter + 1)\n    throw new Error('thrown by the corpus after the interaction')\n  })",
        },
    );
}

// A static site: plain HTML and a script, no package.json.

const STATIC: Case = Case {
    app: STATIC_SITE,
    framework: "static-html",
    package_manager: None,
    port: None,
    steps: &["fill:textbox=Your name=Ada", "click:button=Greet"],
    expect_text: &["Hello, Ada!"],
    expect_path: None,
};

#[test]
fn static_site_form_is_verified() {
    verify_installed(&STATIC, Expected::Verified);
}

#[test]
fn static_site_that_throws_after_the_click_fails() {
    verify_broken_copy(
        &STATIC,
        &Edit {
            file: "greet.js",
            find: "  document.getElementById(\"greeting\").textContent = `Hello, ${name}!`;\n",
            replace: "  document.getElementById(\"greeting\").textContent = `Hello, ${name}!`;\n  throw new Error(\"thrown by the corpus after the interaction\");\n",
        },
    );
}

// A framework's own shadow root: Astro's dev toolbar is not the app, so it is
// no warning; the page is reached by a plain link.

const ASTRO: Case = Case {
    app: "astro-minimal",
    framework: "astro",
    package_manager: Some("npm"),
    port: Some(4321),
    steps: &["click:link=About this site"],
    expect_text: &["A second page of the Astro app."],
    expect_path: Some("/about"),
};

#[test]
fn astro_navigation_is_verified_and_its_dev_toolbar_is_no_warning() {
    verify_installed(&ASTRO, Expected::Verified);
}

#[test]
fn astro_page_that_throws_after_the_navigation_fails() {
    verify_broken_copy(
        &ASTRO,
        &Edit {
            file: "src/pages/about.astro",
            find: "\t</body>\n",
            replace: "\t\t<script>\n\t\t\tthrow new Error('thrown by the corpus after the interaction');\n\t\t</script>\n\t</body>\n",
        },
    );
}

// The other apps: `cargo xtask test --corpus` installs them and runs these.

/// A create-vite template's own counter.
const fn vite_template(app: &'static str, framework: &'static str) -> Case {
    Case {
        app,
        framework,
        package_manager: Some("npm"),
        port: Some(5173),
        steps: &["click:button=Count is 0"],
        expect_text: &["Count is 1"],
        expect_path: None,
    }
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_vanilla_counter_is_verified() {
    verify_installed(&vite_template("vite-vanilla", "vite"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_vue_counter_is_verified() {
    verify_installed(&vite_template("vite-vue", "vite-vue"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_react_counter_is_verified() {
    verify_installed(&vite_template("vite-react", "vite-react"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_preact_counter_is_verified() {
    verify_installed(&vite_template("vite-preact", "vite"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_svelte_counter_is_verified() {
    verify_installed(&vite_template("vite-svelte", "vite-svelte"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes: run by cargo xtask test --corpus"]
fn vite_solid_counter_is_verified() {
    verify_installed(&vite_template("vite-solid", "vite"), Expected::Verified);
}

#[test]
#[ignore = "corpus beyond the default classes (Angular's install is the largest): run by cargo xtask test --corpus"]
fn angular_default_app_counter_is_verified() {
    verify_installed(
        &Case {
            app: "angular-default",
            framework: "angular",
            package_manager: Some("npm"),
            port: Some(4200),
            steps: &["click:button=Count is 0"],
            expect_text: &["Count is 1", "Hello, angular-default"],
            expect_path: None,
        },
        Expected::Verified,
    );
}
