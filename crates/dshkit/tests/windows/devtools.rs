//! DevTools discovery on Windows: a Windows Node process running the real
//! collector (`packages/dsh-plugin/devtools.js`) on the testbed's
//! `@deepseek-ai/cordis` is found in the registry through the process table
//! (`dshkit-os`: the process's creation time), attached over its named pipe by
//! two cores at once and snapshotted; the registry files of a dead process and
//! of a reused pid are removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dshkit_devtools::journal::{Change, Filter};
use dshkit_devtools::{DebugCore, WaitFor};
use dshkit_os::process::Identity;

use super::{Guard, PATIENCE, node, spawn};

/// A Cordis runtime with dshkit's collector that stays up: it loads one plugin
/// with a listener and emits `custom/ping` every 200 ms. Windows Node writes
/// nothing to a Linux pipe, so it says it is ready with a file.
/// argv: <cordis module> <collector module> <registry dir> <ready file>
const RUNTIME: &str = r"
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [cordisPath, collectorPath, dir, ready] = process.argv.slice(2);
const { Context } = await import(pathToFileURL(cordisPath).href);
const { startCollector } = await import(pathToFileURL(collectorPath).href);
const root = new Context();
const collector = startCollector(root, { dir, label: 'wine-runtime' });
root.plugin({ name: 'windows-probe', apply(ctx) { ctx.on('custom/ping', () => {}); } });
setInterval(() => root.emit('custom/ping', { token: 'payload-never-sent' }), 200);
writeFileSync(ready, collector.socket);
";

fn workspace_file(relative: &str) -> PathBuf {
    dshkit_os::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)).unwrap()
}

fn ms(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// A registry file as the collector writes it, for a process that is not one.
fn registry_file(registry: &Path, name: &str, pid: u32, started_at_ms: u64) -> PathBuf {
    let file = registry.join("targets").join(name);
    let record = serde_json::json!({
        "protocol": dshkit_devtools::COLLECTOR_PROTOCOL,
        "pid": pid,
        "socket": format!(r"\\.\pipe\dshkit-devtools-none-{pid}"),
        "label": "not-a-collector",
        "epoch": started_at_ms + 500,
        "startedAtMs": started_at_ms,
    });
    std::fs::write(&file, record.to_string()).unwrap();
    file
}

/// Starts the runtime in Windows Node and waits until its collector has listed
/// itself in `registry`. Returns it and the pipe it listens on.
fn start_runtime(dir: &Path, registry: &Path) -> (Guard, String) {
    let cordis = std::env::var_os("DSHKIT_WINDOWS_CORDIS")
        .map(PathBuf::from)
        .expect("DSHKIT_WINDOWS_CORDIS names the testbed's Cordis (cargo xtask test-windows sets it)");
    let cordis = dshkit_os::fs::canonicalize(&cordis).unwrap();
    let script = dir.join("runtime.mjs");
    std::fs::write(&script, RUNTIME).unwrap();
    let ready = dir.join("ready");
    let runtime = Guard(spawn(
        Command::new(node())
            .arg(&script)
            .arg(&cordis)
            .arg(workspace_file("packages/dsh-plugin/devtools.js"))
            .arg(registry)
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    ));
    let pid = runtime.0.id();
    // The collector lists itself once its pipe listens, after its start returned.
    let listed = registry.join("targets").join(format!("{pid}.json"));
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let (Ok(pipe), true) = (std::fs::read_to_string(&ready), listed.is_file()) {
            return (runtime, pipe);
        }
        assert!(
            dshkit_os::process::entry(pid).is_some(),
            "the Windows Node runtime exited before its collector was ready"
        );
        assert!(Instant::now() < deadline, "the collector never said it was ready");
        std::thread::sleep(dshkit_os::process::POLL);
    }
}

/// Registry files that name no live collector: a Node process that has
/// exited, and this test's own (live) pid in a file whose process said it
/// started an hour before this one did (pid reuse).
fn dead_and_reused_files(registry: &Path) -> [PathBuf; 2] {
    let before = ms(SystemTime::now());
    let mut gone = spawn(
        Command::new(node())
            .args(["-e", ""])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let gone_pid = gone.id();
    assert!(gone.wait().unwrap().success());
    let dead = registry_file(registry, &format!("{gone_pid}.json"), gone_pid, before);
    let me = Identity::of(std::process::id()).unwrap();
    let reused = registry_file(
        registry,
        "reused.json",
        me.pid,
        ms(me.started_at().unwrap()) - 3_600_000,
    );
    [dead, reused]
}

/// Attaches over the pipe, takes a snapshot and waits for a dispatch fact.
async fn attach_and_snapshot(core: &DebugCore, target: &str) {
    let attached = core.attach(None).await.expect("attached over the named pipe");
    assert_eq!(attached.target_id, target);
    let snapshot = core.snapshot(&attached.session).await.expect("a snapshot");
    assert!(
        snapshot.topology.fibers.iter().any(|f| f.name == "windows-probe"),
        "{:#?}",
        snapshot.topology.fibers
    );
    assert!(
        snapshot
            .topology
            .events
            .iter()
            .any(|e| e.name == "custom/ping" && !e.listeners.is_empty()),
        "{:#?}",
        snapshot.topology.events
    );
    // Facts stream back over the pipe: a dispatch the runtime emits.
    let wait = WaitFor {
        filter: Filter {
            kind: None,
            event: Some("custom/ping".into()),
        },
        after: None,
        timeout: Duration::from_secs(30),
    };
    let found = core.wait(&attached.session, &wait).await.expect("a wait");
    assert_eq!(found.outcome, "found", "{found:?}");
    assert!(
        found
            .records
            .iter()
            .any(|r| matches!(&r.change, Change::DispatchObserved { event, .. } if event == "custom/ping")),
        "{found:?}"
    );
    core.detach(&attached.session).await.unwrap();
}

#[test]
fn a_windows_node_collector_is_discovered_attached_over_its_pipe_and_snapshotted() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("devtools");
    let (runtime, pipe) = start_runtime(dir.path(), &registry);
    let pid = runtime.0.id();
    assert!(pipe.starts_with(r"\\.\pipe\dshkit-devtools-"), "{pipe}");
    let [dead, reused] = dead_and_reused_files(&registry);

    let node_process = Identity::of(pid).expect("the runtime is in the process table");
    let core = DebugCore::new(registry.clone());
    let [target] = <[_; 1]>::try_from(core.targets()).unwrap();
    assert_eq!(target.pid, pid);
    assert!(
        target
            .id
            .starts_with(&format!("{pid}-{}-", node_process.started.0)),
        "{target:?}"
    );
    assert_eq!(target.status, "live", "{target:?}");
    assert_eq!(target.label, "wine-runtime");
    assert_eq!(target.socket, PathBuf::from(pipe.trim()));
    assert!(!dead.exists(), "the dead process's registry file is removed");
    assert!(!reused.exists(), "the reused pid's registry file is removed");
    // This core and a second one (another dshkit) on the same pipe at once.
    let other = DebugCore::new(registry.clone());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::join!(
                attach_and_snapshot(&core, &target.id),
                attach_and_snapshot(&other, &target.id)
            )
        });

    drop(runtime);
    assert!(super::gone(pid), "the runtime's process is gone after its kill");
    // The runtime was killed: its file stays (nothing of it ran to remove it)
    // until the next discovery, which prunes it.
    assert!(core.targets().is_empty());
    assert!(
        std::fs::read_dir(registry.join("targets"))
            .unwrap()
            .next()
            .is_none(),
        "no registry file is left"
    );
}
