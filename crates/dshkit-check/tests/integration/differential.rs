//! The static layer judged by the real DSH: a corpus of small plugin trees (each
//! class of loader failure in ESM and CommonJS, with healthy variants, and the
//! profile's layout around them: `@local` links, `dsh.client` and `dsh.bundle`
//! declarations, patch files), each checked statically and booted by the real
//! `dsh`. They must agree; where a case names what DSH prints, the check says it
//! too; where DSH boots a plugin with a client half, the check predicts whether
//! DSH serves it; and every boot DSH refuses is reported as an exit.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use dshkit_check::live::{self, Dsh};
use dshkit_check::static_checks::{self, Target};
use dshkit_check::{Report, Status};

use crate::DshHome;

mod layout;
mod loader;

/// One plugin tree, `plugins/p` inserted as `@local/p`, and the profile around it.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    /// Its `package.json` fields beyond the name.
    pub(crate) manifest: serde_json::Value,
    pub(crate) files: Vec<(&'static str, &'static str)>,
    /// What `node_modules/@local/p` is.
    pub(crate) link: Link,
    /// More plugins under `plugins/`.
    pub(crate) others: Vec<Other>,
    /// The profile's `cordis.patch.yml`, when it is not the rows inserting the plugins.
    pub(crate) patch: Option<&'static str>,
    /// Whether the profile lists `@local/p` in `dsh.profile.bundles`.
    pub(crate) bundle_listed: bool,
    /// A phrase DSH prints when it refuses the tree, which the check must say too.
    pub(crate) says: Option<&'static str>,
}

/// What `node_modules/@local/p` is.
pub(crate) enum Link {
    /// `../../plugins/p`, the profile's layout.
    ToPlugin,
    Missing,
    /// A link with this target.
    To(&'static str),
    /// A directory (not a link) holding these files.
    Directory(Vec<(&'static str, &'static str)>),
}

/// Another plugin in `plugins/<dir>`, named `@local/<dir>`, linked as the layout
/// wants it, and inserted when `inserted`.
pub(crate) struct Other {
    pub(crate) dir: &'static str,
    pub(crate) manifest: serde_json::Value,
    pub(crate) files: Vec<(&'static str, &'static str)>,
    pub(crate) inserted: bool,
}

impl Case {
    pub(crate) fn link(mut self, link: Link) -> Self {
        self.link = link;
        self
    }

    pub(crate) fn other(mut self, other: Other) -> Self {
        self.others.push(other);
        self
    }

    pub(crate) fn patch(mut self, patch: &'static str) -> Self {
        self.patch = Some(patch);
        self
    }

    pub(crate) fn bundle_listed(mut self) -> Self {
        self.bundle_listed = true;
        self
    }

    pub(crate) fn says(mut self, phrase: &'static str) -> Self {
        self.says = Some(phrase);
        self
    }
}

/// What the static layer says: `Some(true)` would boot, `Some(false)` would not,
/// `None` not decided (a check `not_tested`, no failure).
fn static_verdict(report: &Report) -> Option<bool> {
    let statuses: Vec<Status> = ["patch_references", "syntax", "links", "manifest"]
        .iter()
        .map(|id| report.check(id).unwrap().status)
        .collect();
    if statuses.contains(&Status::Fail) {
        Some(false)
    } else if statuses.contains(&Status::NotTested) {
        None
    } else {
        Some(true)
    }
}

/// A profile of its own (a copy of `web`) holding the case's plugins.
fn add_profile(home: &DshHome, case: &Case) -> String {
    let profile = format!("case-{}", case.name);
    let web = home.home.join("profiles/web");
    let dir = home.home.join("profiles").join(&profile);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    for file in ["cordis.yml", "package.json", "pnpm-workspace.yaml"] {
        if web.join(file).is_file() {
            std::fs::copy(web.join(file), dir.join(file)).unwrap();
        }
    }
    if case.bundle_listed {
        let path = dir.join("package.json");
        let mut profile_manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        profile_manifest["dsh"]["profile"]["bundles"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!("@local/p"));
        write(&path, &profile_manifest.to_string());
    }
    let mut manifest = case.manifest.clone();
    manifest["name"] = serde_json::json!("@local/p");
    write_plugin(&dir.join("plugins/p"), &manifest, &case.files);
    let links = dir.join("node_modules/@local");
    std::fs::create_dir_all(&links).unwrap();
    match &case.link {
        Link::ToPlugin => dshkit_os::fs::symlink("../../plugins/p", links.join("p")).unwrap(),
        Link::Missing => {}
        Link::To(target) => dshkit_os::fs::symlink(target, links.join("p")).unwrap(),
        Link::Directory(files) => write_plugin(&links.join("p"), &manifest, files),
    }
    let mut rows = "- insert:\n    - id: p\n      name: '@local/p'\n".to_owned();
    for other in &case.others {
        let mut manifest = other.manifest.clone();
        manifest["name"] = serde_json::json!(format!("@local/{}", other.dir));
        write_plugin(&dir.join("plugins").join(other.dir), &manifest, &other.files);
        dshkit_os::fs::symlink(format!("../../plugins/{}", other.dir), links.join(other.dir)).unwrap();
        if other.inserted {
            rows.push_str(&format!("    - id: {0}\n      name: '@local/{0}'\n", other.dir));
        }
    }
    write(&dir.join("cordis.patch.yml"), case.patch.unwrap_or(&rows));
    profile
}

fn write_plugin(root: &Path, manifest: &serde_json::Value, files: &[(&str, &str)]) {
    write(
        &root.join("package.json"),
        &serde_json::to_string_pretty(manifest).unwrap(),
    );
    for (file, text) in files {
        write(&root.join(file), text);
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What the real DSH did with one tree.
#[derive(Default)]
struct Booted {
    ok: bool,
    detail: String,
    evidence: Vec<String>,
    took: Duration,
    /// Whether `@local/p` is a row of the page's `window.__DSH_BOOT__`.
    serves_client: bool,
}

/// Whether the page DSH serves at `url` lists `id` in its boot graph.
fn boot_graph_lists(url: &str, id: &str) -> bool {
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET / HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut page = String::new();
    stream.take(8 << 20).read_to_string(&mut page).unwrap();
    let boot = page
        .split_once("window.__DSH_BOOT__ = ")
        .unwrap_or_else(|| panic!("no boot graph in the page of {url}"))
        .1;
    boot.contains(&format!("\"id\":\"{id}\""))
}

fn boot(dsh: &Dsh, profile: &str) -> Booted {
    let started = Instant::now();
    let (check, instance) = live::live_boot(dsh, profile, Duration::from_mins(1), live::BOOT_WATCH);
    let took = started.elapsed();
    let serves_client = instance
        .as_ref()
        .is_some_and(|instance| boot_graph_lists(&instance.url, "@local/p"));
    if let Some(instance) = instance {
        let _ = live::shutdown(instance, Duration::from_secs(10));
    }
    Booted {
        ok: matches!(check.status, Status::Pass | Status::Warn),
        detail: check.detail,
        evidence: check.evidence,
        took,
        serves_client,
    }
}

#[test]
#[expect(clippy::print_stdout, reason = "the agreement figure is this test's report")]
fn the_static_layer_agrees_with_a_real_dsh_boot_on_every_tree() {
    let home = DshHome::new();
    let mut cases = loader::cases();
    let loader_cases = cases.len();
    cases.extend(layout::cases());
    assert!(cases.len() >= 90, "the corpus has {} trees", cases.len());
    let profiles: Vec<String> = cases.iter().map(|c| add_profile(&home, c)).collect();
    let dsh = Dsh {
        launcher: home.peers.dsh(),
        path: home.peers.path_var(),
        home: home.home.clone(),
        user_home: home.home.parent().unwrap().to_owned(),
    };
    // Boots run a few at a time; each is bounded by its own deadline.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new((0..profiles.len()).map(|_| Booted::default()).collect::<Vec<_>>());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(profile) = profiles.get(index) else { break };
                    let booted = boot(&dsh, profile);
                    results.lock().unwrap()[index] = booted;
                }
            });
        }
    });
    let booted = results.into_inner().unwrap();

    let mut agreed = 0;
    let mut undecided = Vec::new();
    let mut disagreements = Vec::new();
    let mut figures = Vec::new();
    for (index, ((case, profile), boot)) in cases.iter().zip(&profiles).zip(&booted).enumerate() {
        let started = Instant::now();
        let report = Report::new(static_checks::run(&Target {
            home: home.home.clone(),
            profile: profile.clone(),
            path: Some(home.peers.path_var()),
            ..Target::default()
        }));
        let static_took = started.elapsed();
        if index >= loader_cases {
            figures.push(format!(
                "{:<40} boot {:>5.2} s, static {:>5.1} ms, DSH {}",
                case.name,
                boot.took.as_secs_f64(),
                static_took.as_secs_f64() * 1000.0,
                if boot.ok { "booted" } else { "refused" }
            ));
        }
        let said = format!("{}: {}", boot.detail, boot.evidence.join(" | "));
        let mut disagree =
            |why: String| disagreements.push(format!("{}: {why} ({said})\n{:#?}", case.name, report.checks));
        match static_verdict(&report) {
            Some(verdict) if verdict == boot.ok => agreed += 1,
            Some(verdict) => disagree(format!(
                "static says {}, DSH {}",
                if verdict { "boots" } else { "fails" },
                if boot.ok { "booted" } else { "did not boot" },
            )),
            None => undecided.push(case.name),
        }
        // A refused boot is an exit, with DSH's own error, never a timeout.
        let reported_as_exit =
            boot.detail.starts_with("DSH exited (") && boot.detail.contains("before printing its URL");
        if !boot.ok && !reported_as_exit {
            disagree("the refused boot is not reported as an exit before the URL".to_owned());
        }
        if let Some(phrase) = case.says {
            let static_says = report
                .checks
                .iter()
                .flat_map(|c| &c.evidence)
                .any(|e| e.contains(phrase));
            if boot.ok || !boot.evidence.iter().any(|e| e.contains(phrase)) {
                disagree(format!("DSH did not refuse the tree saying {phrase:?}"));
            } else if !static_says {
                disagree(format!("DSH says {phrase:?}, the check does not"));
            }
        }
        if boot.ok && case.manifest.pointer("/dsh/client").is_some() {
            let predicted = report.check("manifest").unwrap().status == Status::Pass;
            if predicted != boot.serves_client {
                disagree(format!(
                    "the check predicts the client half {}served, DSH {}serves it",
                    if predicted { "" } else { "not " },
                    if boot.serves_client { "" } else { "never " }
                ));
            }
        }
    }
    let decided = cases.len() - undecided.len();
    println!(
        "static vs DSH: {agreed}/{decided} decided trees agree ({:.1} %); not_tested: {undecided:?}",
        100.0 * f64::from(u32::try_from(agreed).unwrap()) / f64::from(u32::try_from(decided).unwrap())
    );
    println!("profile layout cases:\n{}", figures.join("\n"));
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n\n"));
    assert!(
        undecided.len() <= 1,
        "only the CommonJS named import is undecided: {undecided:?}"
    );
}
