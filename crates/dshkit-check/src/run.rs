//! One `plugin_check` run: the checks in order, each honest about what it tested.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dshkit_cdp::LaunchOptions;

use crate::live::{self, BOOT_WATCH, DEFAULT_BOOT_TIMEOUT, DEFAULT_DUMP_TIMEOUT, Dsh};
use crate::report::{Check, Report, Status};
use crate::static_checks::{self, Target};
use crate::{audit, headless, smoke};

/// What to check and how.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one documented input of plugin_check"
)]
pub struct CheckOptions {
    pub home: PathBuf,
    pub profile: String,
    /// Check only this local plugin.
    pub target: Option<String>,
    /// Boot an isolated instance.
    pub live: bool,
    /// Also open the booted page in Chromium (implies `live`).
    pub page: bool,
    /// Only audit the process table.
    pub sweep: bool,
    /// Kill strays during the audit (leaked by this run, or old smoke instances).
    pub kill_stray: bool,
    /// Smoke instances at least this old count as strays.
    pub stray_age: Duration,
    pub boot_timeout: Duration,
    /// How long the page smoke observes the booted page after load.
    pub observe: Duration,
    /// Boot against a mirror of the profile in a temporary home.
    pub isolate_home: bool,
    /// The `dsh` launcher; the DSH checks are `not_tested` without one.
    pub launcher: Option<PathBuf>,
    /// `PATH` and `HOME` for DSH.
    pub path: OsString,
    pub user_home: PathBuf,
    pub browser: LaunchOptions,
    /// Told each check as it starts (an MCP client's progress, the CLI's stderr).
    pub progress: Progress,
    /// Where the static checks cache each file's analysis (see [`crate::cache`]).
    pub cache: Option<PathBuf>,
}

/// Where stage messages go.
type StageSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// Where a run reports the check it is starting. Cheap to clone; silent by default.
#[derive(Clone, Default)]
pub struct Progress(Option<StageSink>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Progress").field(&self.0.is_some()).finish()
    }
}

impl Progress {
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Some(std::sync::Arc::new(sink)))
    }

    fn stage(&self, message: &str) {
        if let Some(sink) = &self.0 {
            sink(message);
        }
    }
}

impl CheckOptions {
    /// Defaults for `home` and `profile`: static checks, config assembly and the audit.
    pub fn new(
        home: PathBuf,
        profile: String,
        launcher: Option<PathBuf>,
        path: OsString,
        user_home: PathBuf,
    ) -> Self {
        Self {
            home,
            profile,
            target: None,
            live: false,
            page: false,
            sweep: false,
            kill_stray: false,
            stray_age: audit::DEFAULT_STRAY_AGE,
            boot_timeout: DEFAULT_BOOT_TIMEOUT,
            observe: smoke::DEFAULT_PAGE_OBSERVE,
            isolate_home: false,
            launcher,
            path,
            user_home,
            browser: LaunchOptions::default(),
            progress: Progress::default(),
            cache: None,
        }
    }
}

fn not_tested(id: &'static str, name: &'static str, why: &str) -> Check {
    Check::new(id, name, Status::NotTested, why.to_owned())
}

/// Runs the checks.
pub async fn run(options: CheckOptions) -> Report {
    let launcher_script = options.launcher.as_deref().and_then(live::launcher_script);
    let audit_check = |leaked: Vec<(u32, u64)>, options: &CheckOptions| match &launcher_script {
        Some(script) => audit::audit(script, &leaked, options.kill_stray, options.stray_age),
        None => not_tested(
            "leftover_audit",
            "Leftover DSH instances",
            "no dsh launcher found: set DSHKIT_DSH or put dsh on PATH",
        ),
    };
    let stage = |message: &str| options.progress.stage(message);
    if options.sweep {
        stage("leftover audit");
        return Report::new(vec![audit_check(Vec::new(), &options)]);
    }
    stage("static checks: syntax, manifests, patch references");
    let target = Target {
        home: options.home.clone(),
        profile: options.profile.clone(),
        plugin: options.target.clone(),
        path: Some(options.path.clone()),
        cache: options.cache.clone(),
    };
    let (mut checks, cache) = tokio::task::spawn_blocking(move || static_checks::run_counted(&target))
        .await
        .unwrap_or_default();
    let report = |checks| Report {
        cache: cache.clone(),
        ..Report::new(checks)
    };

    let Some(launcher) = options.launcher.clone() else {
        let why = "no dsh launcher found: set DSHKIT_DSH or put dsh on PATH";
        checks.extend([
            not_tested("config_assembly", "Profile config assembles", why),
            not_tested("live_boot", "Isolated boot", why),
            not_tested("page_smoke", "Page renders in Chromium", why),
            not_tested("shutdown", "Clean shutdown", why),
        ]);
        stage("leftover audit");
        checks.push(audit_check(Vec::new(), &options));
        return report(checks);
    };
    let dsh = Dsh {
        launcher,
        path: options.path.clone(),
        home: options.home.clone(),
        user_home: options.user_home.clone(),
    };
    let (assembly_dsh, profile) = (dsh.clone(), options.profile.clone());
    stage("config assembly (dsh --dump-config)");
    checks.push(
        tokio::task::spawn_blocking(move || {
            live::config_assembly(&assembly_dsh, &profile, DEFAULT_DUMP_TIMEOUT)
        })
        .await
        .unwrap_or_else(|e| {
            Check::new(
                "config_assembly",
                "Profile config assembles",
                Status::Fail,
                e.to_string(),
            )
        }),
    );

    let (live, leaked) = if options.live || options.page {
        live_checks(&options, &dsh).await
    } else {
        let why = "not requested: run with live (and page for the browser smoke)";
        let skipped = vec![
            not_tested("live_boot", "Isolated boot", why),
            not_tested("page_smoke", "Page renders in Chromium", why),
            not_tested("shutdown", "Clean shutdown", why),
        ];
        (skipped, Vec::new())
    };
    checks.extend(live);
    stage("leftover audit");
    checks.push(audit_check(leaked.clone(), &options));
    // Whatever this run leaked is gone even if the audit could not run.
    for (pid, start_ticks) in leaked {
        live::kill_instance_group(pid, start_ticks);
    }
    report(checks)
}

/// Boot, page smoke and shutdown proof; returns them and the instances leaked.
async fn live_checks(options: &CheckOptions, dsh: &Dsh) -> (Vec<Check>, Vec<(u32, u64)>) {
    let mut checks = Vec::new();
    let mut leaked = Vec::new();
    let mirror = if options.isolate_home {
        match mirror_home(&options.home, &options.profile) {
            Ok(mirror) => Some(mirror),
            Err(e) => {
                // Never boot against the real home when isolation was asked for.
                let why = "isolateHome could not build the mirror, so nothing was booted";
                checks.extend([
                    Check::new(
                        "live_boot",
                        "Isolated boot",
                        Status::Fail,
                        format!("isolateHome: cannot mirror the profile into a temporary home: {e}"),
                    ),
                    not_tested("page_smoke", "Page renders in Chromium", why),
                    not_tested("shutdown", "Clean shutdown", why),
                ]);
                return (checks, leaked);
            }
        }
    } else {
        None
    };
    let mut boot_dsh = dsh.clone();
    if let Some(mirror) = &mirror {
        boot_dsh.home = mirror.path().to_owned();
    }
    let (profile, boot_timeout) = (options.profile.clone(), options.boot_timeout);
    if headless::is_headless(&boot_dsh.home, &profile) {
        checks.extend(headless_checks(options, boot_dsh, profile, boot_timeout).await);
        drop(mirror);
        return (checks, leaked);
    }
    options.progress.stage("isolated boot");
    // The boot blocks a thread of its own. If this run is stopped meanwhile (a
    // cancelled or timed-out tool call), nobody takes the instance: kill it.
    let (booted, boot_result) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let result = live::live_boot(&boot_dsh, &profile, boot_timeout, BOOT_WATCH);
        if let Err((_, Some(mut orphan))) = booted.send(result) {
            live::kill_instance_group(orphan.pid, orphan.start_ticks);
            let _ = orphan.child.wait();
        }
    });
    let (boot, instance) = boot_result.await.unwrap_or_else(|e| {
        (
            Check::new("live_boot", "Isolated boot", Status::Fail, e.to_string()),
            None,
        )
    });
    checks.push(boot);
    let Some(instance) = instance else {
        checks.push(not_tested(
            "page_smoke",
            "Page renders in Chromium",
            "the instance did not boot",
        ));
        checks.push(not_tested(
            "shutdown",
            "Clean shutdown",
            "the instance did not boot",
        ));
        return (checks, leaked);
    };
    // Until its shutdown is proved, a stopped run kills the instance.
    let mut armed = KillOnDrop(Some((instance.pid, instance.start_ticks)));
    checks.push(if options.page {
        options.progress.stage("page smoke in Chromium");
        smoke::page_smoke(&instance.url, &options.browser, options.observe).await
    } else {
        not_tested(
            "page_smoke",
            "Page renders in Chromium",
            "not requested: run with page",
        )
    });
    let identity = (instance.pid, instance.start_ticks);
    armed.0 = None; // the shutdown check takes it from here
    options.progress.stage("clean shutdown");
    let shutdown = tokio::task::spawn_blocking(move || live::shutdown(instance, Duration::from_secs(5)))
        .await
        .unwrap_or_else(|e| Check::new("shutdown", "Clean shutdown", Status::Fail, e.to_string()));
    if shutdown.status == Status::Fail {
        leaked.push(identity);
    }
    checks.push(shutdown);
    drop(mirror);
    (checks, leaked)
}

/// A headless profile's live checks: one turn against a stand-in model is its
/// boot (and proves its group gone); it serves no page.
async fn headless_checks(options: &CheckOptions, dsh: Dsh, profile: String, timeout: Duration) -> Vec<Check> {
    options
        .progress
        .stage("isolated boot (one headless turn against a stand-in model)");
    let boot = tokio::task::spawn_blocking(move || headless::headless_turn(&dsh, &profile, timeout))
        .await
        .unwrap_or_else(|e| Check::new("live_boot", "Isolated boot", Status::Fail, e.to_string()));
    vec![
        boot,
        not_tested(
            "page_smoke",
            "Page renders in Chromium",
            "a headless profile serves no page",
        ),
        not_tested(
            "shutdown",
            "Clean shutdown",
            "a headless turn ends by itself: the boot check proved its group gone",
        ),
    ]
}

/// Kills a booted instance's group when dropped: a run stopped before its shutdown
/// check leaves no DSH behind.
struct KillOnDrop(Option<(u32, u64)>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some((pid, start_ticks)) = self.0.take() {
            live::kill_instance_group(pid, start_ticks);
        }
    }
}

/// Copies `home/profiles/<profile>` and the shared module farm into a temporary
/// home. Links are copied as links, so relative ones point inside the mirror.
fn mirror_home(home: &Path, profile: &str) -> std::io::Result<tempfile::TempDir> {
    let mirror = tempfile::Builder::new().prefix("dshkit-check-home-").tempdir()?;
    copy_tree(
        &home.join("profiles").join(profile),
        &mirror.path().join("profiles").join(profile),
    )?;
    let farm = home.join("profiles/node_modules");
    if farm.exists() {
        copy_tree(&farm, &mirror.path().join("profiles/node_modules"))?;
    }
    Ok(mirror)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            dshkit_os::fs::symlink(&std::fs::read_link(&source)?, &dest)?;
        } else if kind.is_dir() {
            copy_tree(&source, &dest)?;
        } else {
            std::fs::copy(&source, &dest)?;
        }
    }
    Ok(())
}
