//! The DSH-running checks against the real DSH testbed and real Chromium.

use std::process::{Command, Stdio};
use std::time::Duration;

use dshkit_check::{CheckOptions, Report, Status};

use crate::{DshHome, HEALTHY, manifest};

fn options(home: &DshHome) -> CheckOptions {
    CheckOptions::new(
        home.home.clone(),
        "web".into(),
        Some(home.peers.dsh()),
        home.peers.path_var(),
        home.home.parent().unwrap().to_owned(),
    )
}

fn run(options: CheckOptions) -> Report {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(dshkit_check::run(options))
}

fn status(report: &Report, id: &str) -> Status {
    report
        .check(id)
        .unwrap_or_else(|| panic!("no {id} in {report:#?}"))
        .status
}

#[test]
fn a_healthy_profile_passes_every_check_live_and_in_the_page() {
    let home = DshHome::new();
    home.plugin("healthy", &manifest("healthy"), &[("index.js", HEALTHY)]);
    let mut options = options(&home);
    options.page = true;
    let report = run(options);
    for id in [
        "patch_references",
        "syntax",
        "manifest",
        "config_assembly",
        "live_boot",
        "page_smoke",
        "shutdown",
        "leftover_audit",
    ] {
        assert!(
            matches!(status(&report, id), Status::Pass | Status::Warn),
            "{id}: {:#?}",
            report.check(id)
        );
    }
    assert!(report.ok, "{report:#?}");
    let page = report.check("page_smoke").unwrap();
    assert!(
        page.evidence[0].contains("__DSH_BOOT__ present (keys: "),
        "{page:#?}"
    );
    assert!(page.evidence[0].contains("observed 3s after load"), "{page:#?}");
}

#[test]
fn an_isolated_home_that_cannot_be_mirrored_is_an_error_not_the_real_home() {
    let home = DshHome::new();
    // A socket in the profile cannot be copied.
    let _socket = std::os::unix::net::UnixListener::bind(home.home.join("profiles/web/dsh.sock")).unwrap();
    let mut options = options(&home);
    options.live = true;
    options.isolate_home = true;
    let report = run(options);
    let boot = report.check("live_boot").unwrap();
    assert_eq!(boot.status, Status::Fail, "{report:#?}");
    assert!(boot.detail.contains("isolateHome: cannot mirror"), "{boot:#?}");
    assert_eq!(status(&report, "shutdown"), Status::NotTested);
    assert!(
        dsh_processes_of(&home.home, "--no-open").is_empty(),
        "nothing booted against the real home"
    );
}

const THROWS_AT_APPLY: &str = "export const name = 'thrower';\nexport function apply() { throw new Error('thrower refuses to start'); }\n";

/// What a boot of a tree whose plugin throws at apply must say: an exit before
/// the URL, with DSH's status and its first error block, never a timeout.
fn assert_an_exit_with_dshs_error(boot: &dshkit_check::Check) {
    assert_eq!(boot.status, Status::Fail, "{boot:#?}");
    assert!(
        boot.detail.starts_with("DSH exited (exit status: 1) ")
            && boot.detail.contains(
                "after it started, before printing its URL: Error: dsh: plugin tree failed to load: "
            )
            && boot.detail.contains("thrower refuses to start"),
        "{boot:#?}"
    );
    assert!(!boot.detail.contains("no URL"), "{boot:#?}");
    assert!(
        boot.evidence[0].starts_with("Error: dsh: plugin tree failed to load: "),
        "the evidence is DSH's error block, from its first line: {boot:#?}"
    );
    assert!(
        boot.evidence
            .iter()
            .any(|l| l.contains("plugins/thrower/index.js:2:")),
        "the stack names the plugin's line: {boot:#?}"
    );
    assert!(
        boot.evidence.len() <= dshkit_check::live::MAX_ERROR_BLOCK_LINES
            && !boot.evidence.iter().any(|l| l.contains("[cause]")),
        "bounded, without the repeated cause chain: {boot:#?}"
    );
}

#[test]
fn an_apply_that_throws_fails_the_live_boot_with_the_thrown_message() {
    let home = DshHome::new();
    home.plugin("thrower", &manifest("thrower"), &[("index.js", THROWS_AT_APPLY)]);
    let mut options = options(&home);
    options.live = true;
    let report = run(options);
    assert!(!report.ok);
    assert_eq!(status(&report, "syntax"), Status::Pass);
    assert_an_exit_with_dshs_error(report.check("live_boot").unwrap());
    assert_eq!(status(&report, "page_smoke"), Status::NotTested);
    assert_eq!(status(&report, "shutdown"), Status::NotTested);
}

/// DSH closes its outputs as it exits, a moment before its exit can be read.
/// A boot that took the closed outputs for "no URL" said "no URL within 30s"
/// after two seconds on about one boot in three here: every boot must say exit.
#[test]
fn an_early_exit_is_reported_as_an_exit_on_every_boot_never_as_a_timeout() {
    let home = DshHome::new();
    home.plugin("thrower", &manifest("thrower"), &[("index.js", THROWS_AT_APPLY)]);
    let dsh = dshkit_check::live::Dsh {
        launcher: home.peers.dsh(),
        path: home.peers.path_var(),
        home: home.home.clone(),
        user_home: home.home.parent().unwrap().to_owned(),
    };
    // One after another: DSH rewrites the profile's cordis.yml as it boots, so
    // boots of one profile at once read each other's half-written file.
    let boots: Vec<dshkit_check::Check> = (0..6)
        .map(|_| {
            let (check, instance) = dshkit_check::live::live_boot(
                &dsh,
                "web",
                Duration::from_mins(1),
                dshkit_check::live::BOOT_WATCH,
            );
            assert!(instance.is_none(), "{check:#?}");
            check
        })
        .collect();
    for boot in &boots {
        assert_an_exit_with_dshs_error(boot);
    }
}

#[test]
fn without_a_browser_the_page_smoke_is_not_tested_and_not_a_failure() {
    let home = DshHome::new();
    let mut options = options(&home);
    options.page = true;
    options.isolate_home = true;
    options.browser.executable = Some("/nonexistent/chromium".into());
    let report = run(options);
    assert_eq!(status(&report, "live_boot"), Status::Pass, "{report:#?}");
    assert_eq!(status(&report, "page_smoke"), Status::NotTested, "{report:#?}");
    assert_eq!(status(&report, "shutdown"), Status::Pass);
    assert!(report.ok, "not tested is not a failure: {report:#?}");
}

/// A plugin that keeps DSH alive through SIGTERM: it takes every other SIGTERM
/// listener away and ignores the signal itself.
const IGNORES_SIGTERM: &str = "export const name = 'stubborn';
export function apply() {
  const keep = () => {};
  const strip = () => {
    for (const listener of process.listeners('SIGTERM')) {
      if (listener !== keep) process.removeListener('SIGTERM', listener);
    }
    if (!process.listeners('SIGTERM').includes(keep)) process.on('SIGTERM', keep);
  };
  strip();
  setInterval(strip, 5).unref();
}
";

#[test]
fn an_instance_that_survives_sigterm_fails_the_shutdown_and_is_removed_by_the_audit() {
    let home = DshHome::new();
    home.plugin(
        "stubborn",
        &manifest("stubborn"),
        &[("index.js", IGNORES_SIGTERM)],
    );
    let mut options = options(&home);
    options.live = true;
    let report = run(options);
    assert_eq!(status(&report, "live_boot"), Status::Pass, "{report:#?}");
    let shutdown = report.check("shutdown").unwrap();
    assert_eq!(shutdown.status, Status::Fail, "{report:#?}");
    assert!(shutdown.detail.contains("survived two SIGTERMs"), "{shutdown:#?}");
    let survivor: u32 = shutdown.evidence[0]
        .strip_prefix("pid ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("the survivor is named: {shutdown:#?}"));
    let audit = report.check("leftover_audit").unwrap();
    assert_eq!(audit.status, Status::Fail, "{audit:#?}");
    assert!(audit.detail.contains("leaked by this run"), "{audit:#?}");
    assert!(
        audit
            .evidence
            .iter()
            .any(|l| l.starts_with("killed the process tree of leaked pid") && l.ends_with("verified gone")),
        "{audit:#?}"
    );
    assert!(
        dshkit_os::process::entry(survivor).is_none(),
        "the survivor was removed"
    );
    assert!(!report.ok);
}

/// A plugin that starts a long-lived child and writes its pid next to the home.
const SPAWNS_A_CHILD: &str = "export const name = 'spawner';
export function apply() {
  const { spawn } = process.getBuiltinModule('node:child_process');
  const fs = process.getBuiltinModule('node:fs');
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  fs.writeFileSync(process.env.DSH_HOME + '/child-of-' + process.pid, String(child.pid));
}
";

/// A DSH instance started outside the check.
fn spawn_dsh(home: &DshHome, args: &[&str]) -> std::process::Child {
    home.dsh()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_url(child: &mut std::process::Child) {
    use std::io::BufRead;
    let stdout = child.stdout.take().unwrap();
    let line = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("dsh web: "));
    assert!(line.is_some(), "the instance booted");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario reads best as one story"
)]
fn kill_stray_removes_a_leaked_smoke_instance_and_never_a_host_or_a_lookalike() {
    let home = DshHome::new();
    // Every instance starts a child and says which: killStray must take the tree.
    home.plugin("spawner", &manifest("spawner"), &[("index.js", SPAWNS_A_CHILD)]);
    // A host: a user's DSH on a fixed port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut host = spawn_dsh(
        &home,
        &["--profile", "web", "--port", &port.to_string(), "--no-open"],
    );
    wait_for_url(&mut host);
    // A leaked smoke instance: its parent shell is killed; the instance lives on.
    let script = format!(
        "DSH_HOME='{}' HOME='{}' PATH='{}' DSH_TELEMETRY_DISABLED=1 '{}' --profile web --port 0 --no-open >/dev/null 2>&1 & echo $!; exec sleep 60",
        home.home.display(),
        home.home.parent().unwrap().display(),
        home.peers.path_var().to_string_lossy(),
        home.peers.dsh().display()
    );
    let mut shell = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pid_line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shell.stdout.take().unwrap()),
        &mut pid_line,
    )
    .unwrap();
    let leaked: u32 = pid_line.trim().parse().unwrap();
    shell.kill().unwrap();
    shell.wait().unwrap();
    // A lookalike that only mentions dsh.
    let mut lookalike = Command::new(home.peers.node())
        .args(["-e", "setTimeout(() => {}, 60000)", "dsh", "--port", "0"])
        .spawn()
        .unwrap();
    // The leaked instance counts once the process table shows it as DSH.
    let script = dshkit_check::live::launcher_script(&home.peers.dsh()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    while !dshkit_check::audit::find(&script).iter().any(|p| p.pid == leaked) {
        assert!(
            std::time::Instant::now() < deadline,
            "the leaked instance never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let child_file = home.home.join(format!("child-of-{leaked}"));
    while !child_file.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stray never started its child"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut options = options(&home);
    options.sweep = true;
    let report = run(options.clone());
    let audit = report.check("leftover_audit").unwrap();
    assert!(
        audit.detail.contains("younger than 10 min left alone"),
        "a young smoke instance is reported, not hidden: {audit:#?}"
    );
    assert!(
        audit
            .evidence
            .iter()
            .any(|l| l.starts_with(&format!("pid {} Host", host.id()))),
        "{audit:#?}"
    );
    assert!(
        audit
            .evidence
            .iter()
            .any(|l| l.starts_with(&format!("pid {leaked} Smoke"))),
        "{audit:#?}"
    );
    assert!(
        !audit
            .evidence
            .iter()
            .any(|l| l.starts_with(&format!("pid {} ", lookalike.id()))),
        "a lookalike is not DSH: {audit:#?}"
    );

    options.kill_stray = true;
    options.stray_age = Duration::ZERO;
    let report = run(options);
    let audit = report.check("leftover_audit").unwrap();
    assert_eq!(audit.status, Status::Pass, "{audit:#?}");
    assert!(
        audit
            .evidence
            .iter()
            .any(|l| l == &format!("killed the process tree of stray pid {leaked} (Smoke), verified gone")),
        "{audit:#?}"
    );
    assert!(dshkit_os::process::entry(leaked).is_none(), "the stray is gone");
    let child: u32 = std::fs::read_to_string(home.home.join(format!("child-of-{leaked}")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        dshkit_os::process::entry(child).is_none(),
        "the stray's child went with it"
    );
    assert!(host.try_wait().unwrap().is_none(), "the host survives killStray");
    assert!(
        lookalike.try_wait().unwrap().is_none(),
        "the lookalike survives killStray"
    );
    if let Some(child) = std::fs::read_to_string(home.home.join(format!("child-of-{}", host.id())))
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .and_then(dshkit_os::process::Identity::of)
    {
        child.kill();
    }
    let _ = host.kill();
    let _ = host.wait();
    let _ = lookalike.kill();
    let _ = lookalike.wait();
}

/// Live pids whose environment holds `DSH_HOME=<home>` and whose command line
/// has `needle`.
fn dsh_processes_of(home: &std::path::Path, needle: &str) -> Vec<u32> {
    let wanted = format!("DSH_HOME={}", home.display());
    dshkit_os::process::snapshot()
        .into_iter()
        .map(|entry| entry.pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
        })
        .filter(|pid| dshkit_os::process::argv(*pid).is_some_and(|a| a.join(" ").contains(needle)))
        .collect()
}

#[test]
fn a_check_stopped_during_the_boot_leaves_no_dsh_running() {
    let home = DshHome::new();
    let mut options = options(&home);
    options.live = true;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let task = runtime.spawn(dshkit_check::run(options));
    // Stopped (as a cancelled or timed-out tool call is) once the boot is under way.
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    while dsh_processes_of(&home.home, "--no-open").is_empty() {
        assert!(std::time::Instant::now() < deadline, "the boot never started");
        assert!(!task.is_finished(), "the check ended before it booted");
        std::thread::sleep(Duration::from_millis(20));
    }
    task.abort();
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    while !dsh_processes_of(&home.home, "--no-open").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stopped check left DSH running: {:?}",
            dsh_processes_of(&home.home, "--no-open")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    runtime.shutdown_background();
}
