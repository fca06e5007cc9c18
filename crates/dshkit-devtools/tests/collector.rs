//! The debug core against the collector in a real Cordis runtime (the testbed's
//! `@deepseek-ai/cordis` under Node): candidates name each misbehaving plugin and
//! a clean runtime has none; waits find dispatches and report a gap for a cursor
//! the journal has passed; bounds refuse; a gone target is reported and pruned.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::ChildStdin;
use std::time::Duration;

use dshkit_devtools::journal::Change;
use dshkit_devtools::{DebugCore, DebugError, MAX_SESSIONS};
use dshkit_test::{ChildGuard, Peers, spawn_guarded, workspace_root};

/// A Node process running the fixture runtime, and a way to make it emit.
struct Runtime {
    guard: ChildGuard,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Runtime {
    fn start(registry: &Path, scenario: &str) -> Self {
        let peers = Peers::get();
        let mut command = std::process::Command::new(peers.node());
        command
            .arg(workspace_root().join("crates/dshkit-devtools/tests/fixtures/runtime.mjs"))
            .arg(peers.cordis())
            .arg(workspace_root().join("packages/dsh-plugin/devtools.js"))
            .arg(registry)
            .arg(scenario);
        let mut guard = spawn_guarded(&mut command);
        let stdin = guard.child.stdin.take().unwrap();
        let stdout = guard.child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let runtime = Self { guard, stdin, lines };
        runtime.expect("ready ");
        runtime
    }

    fn expect(&self, prefix: &str) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_mins(1))
            .unwrap_or_else(|e| panic!("no line {prefix:?} from the runtime: {e}"));
        assert!(line.starts_with(prefix), "{line}");
        line
    }

    fn emit(&mut self, count: usize) {
        writeln!(self.stdin, "burst {count}").unwrap();
        self.stdin.flush().unwrap();
        self.expect("emitted ");
    }
}

fn kinds(snapshot: &dshkit_devtools::Snapshot) -> Vec<(&'static str, String)> {
    snapshot
        .candidates
        .iter()
        .map(|c| (c.kind, c.subject.clone()))
        .collect()
}

#[tokio::test]
async fn candidates_name_each_misbehaving_plugin_and_nothing_private_leaves_the_process() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "leaky");
    let core = DebugCore::new(registry.path().to_owned());
    let targets = core.targets();
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(targets[0].pid, runtime.guard.pid());

    let attached = core.attach(None).await.unwrap();
    let snapshot = core.snapshot(&attached.session).await.unwrap();
    let found = kinds(&snapshot);
    assert!(
        found.contains(&("failed-fiber", "fiber 5 (failing)".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&("duplicate-fiber-name", "plugin twin".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&("equivalent-registrations", "event custom/ping".into())),
        "{found:?}"
    );
    assert_eq!(found.len(), 3, "nothing else: {found:?}");
    let steady = snapshot
        .topology
        .fibers
        .iter()
        .find(|f| f.name == "steady")
        .unwrap();
    assert_eq!(steady.state, "active");

    runtime.emit(2);
    let seen = core
        .wait(&attached.session, Some("custom/ping"), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(seen.outcome, "found");
    assert!(
        seen.records.iter().any(|r| r.change
            == Change::DispatchObserved {
                mode: "emit".into(),
                event: "custom/ping".into(),
                argc: 1
            }),
        "{:?}",
        seen.records
    );
    let everything = format!(
        "{}{}",
        serde_json::to_string(&snapshot).unwrap(),
        serde_json::to_string(&seen).unwrap()
    );
    for private in ["secret-value-never-sent", "payload-never-sent"] {
        assert!(!everything.contains(private), "{private} left the process");
    }
}

#[tokio::test]
async fn a_clean_runtime_has_no_candidates() {
    let registry = tempfile::tempdir().unwrap();
    let _runtime = Runtime::start(registry.path(), "clean");
    let core = DebugCore::new(registry.path().to_owned());
    let attached = core.attach(None).await.unwrap();
    let snapshot = core.snapshot(&attached.session).await.unwrap();
    assert!(snapshot.candidates.is_empty(), "{:?}", snapshot.candidates);
    assert_eq!(snapshot.topology.fibers.len(), 1);
}

#[tokio::test]
async fn a_wait_on_a_cursor_the_journal_has_passed_reports_a_gap_then_times_out_caught_up() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "clean");
    let core = DebugCore::new(registry.path().to_owned());
    let lagging = core.attach(None).await.unwrap();
    // More dispatches than the journal keeps (500) pass before the session reads.
    runtime.emit(600);
    let watcher = core.attach(None).await.unwrap();
    // The core has read all 600 facts once the journal's newest record is the last.
    let received = async {
        while core
            .snapshot(&watcher.session)
            .await
            .unwrap()
            .journal
            .newest
            .is_none_or(|newest| newest < lagging.cursor + 599)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_mins(1), received)
        .await
        .expect("the core reads the burst");
    let gap = core
        .wait(&lagging.session, None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(gap.outcome, "gap", "{gap:?}");
    assert!(gap.window.gap && gap.window.retained == 500, "{gap:?}");
    assert!(gap.records.is_empty());
    assert_eq!(
        Some(gap.cursor),
        gap.window.oldest,
        "the next wait reads the retained window"
    );
    // The retained records are read in pages of 100, then the session is caught up.
    let mut read = 0;
    let quiet = loop {
        let next = core
            .wait(&lagging.session, None, Duration::from_millis(300))
            .await
            .unwrap();
        if next.outcome != "found" {
            break next;
        }
        read += next.records.len();
    };
    assert_eq!(quiet.outcome, "timeout", "{quiet:?}");
    assert_eq!(read, 500, "every retained record once");
}

#[tokio::test]
async fn sessions_are_bounded_and_a_gone_target_is_reported_and_pruned() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "clean");
    let core = DebugCore::new(registry.path().to_owned());
    let mut sessions = Vec::new();
    for _ in 0..MAX_SESSIONS {
        sessions.push(core.attach(None).await.unwrap().session);
    }
    assert!(matches!(
        core.attach(None).await,
        Err(DebugError::TooManySessions)
    ));
    core.detach(&sessions.pop().unwrap()).await.unwrap();
    assert!(matches!(
        core.detach("dbg-unknown").await,
        Err(DebugError::UnknownSession(_))
    ));

    let session = &sessions[0];
    let _ = runtime.guard.child.kill();
    let _ = runtime.guard.child.wait();
    let last = core
        .wait(session, Some("custom/ping"), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(last.outcome, "found");
    assert_eq!(last.records.last().unwrap().change, Change::TargetDisposed);
    // Read to the end: a further wait says so at once instead of waiting.
    assert!(matches!(
        core.wait(session, None, Duration::from_secs(30)).await,
        Err(DebugError::Stale(_))
    ));
    assert!(matches!(core.snapshot(session).await, Err(DebugError::Stale(_))));
    assert!(
        core.targets().is_empty(),
        "the dead target's registry file is pruned"
    );
    assert!(
        std::fs::read_dir(registry.path().join("targets"))
            .unwrap()
            .next()
            .is_none(),
        "no registry file is left"
    );
}
