//! The debug core against the collector in a real Cordis runtime (the testbed's
//! `@deepseek-ai/cordis` under Node): candidates name each misbehaving plugin and
//! a clean runtime has none; waits find dispatches and report a gap for a cursor
//! the journal has passed; bounds refuse; a gone target is reported and pruned.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::ChildStdin;
use std::time::Duration;

use dshkit_devtools::agent;
use dshkit_devtools::journal::{Change, Filter};
use dshkit_devtools::{
    COLLECTOR_PROTOCOL, DebugCore, DebugError, LOCAL_OWNER, MAX_CHECKPOINTS, MAX_SESSIONS, MAX_WAITERS,
    SESSION_IDLE, WaitFor,
};
use dshkit_test::{ChildGuard, Peers, spawn_guarded, workspace_root};
use serde_json::{Value, json};

/// A Node process running the fixture runtime, and a way to make it emit.
struct Runtime {
    guard: ChildGuard,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Runtime {
    fn start(registry: &Path, scenario: &str) -> Self {
        Self::start_labelled(registry, scenario, &format!("fixture-{scenario}"))
    }

    fn start_labelled(registry: &Path, scenario: &str, label: &str) -> Self {
        Self::start_with(
            registry,
            scenario,
            label,
            &workspace_root().join("packages/dsh-plugin/devtools.js"),
        )
    }

    /// The runtime with `collector` as its collector module.
    fn start_with(registry: &Path, scenario: &str, label: &str, collector: &Path) -> Self {
        let peers = Peers::get();
        let mut command = std::process::Command::new(peers.node());
        command
            .arg(workspace_root().join("crates/dshkit-devtools/tests/fixtures/runtime.mjs"))
            .arg(peers.cordis())
            .arg(collector)
            .arg(registry)
            .arg(scenario)
            .arg(label);
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

    /// Sends one command line and returns the answer line starting with `answer`.
    fn say(&mut self, command: &str, answer: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.expect(answer)
    }

    fn emit(&mut self, count: usize) {
        writeln!(self.stdin, "burst {count}").unwrap();
        self.stdin.flush().unwrap();
        self.expect("emitted ");
    }
}

/// A wait for records of `event` (any when `None`) after the session's cursor.
fn waiting(event: Option<&str>, timeout: Duration) -> WaitFor {
    WaitFor {
        filter: Filter {
            kind: None,
            event: event.map(str::to_owned),
        },
        after: None,
        timeout,
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
        .wait(
            &attached.session,
            &waiting(Some("custom/ping"), Duration::from_secs(30)),
        )
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
        .wait(&lagging.session, &waiting(None, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(gap.outcome, "gap", "{gap:?}");
    assert!(gap.window.gap && gap.window.retained == 500, "{gap:?}");
    assert!(gap.records.is_empty());
    assert_eq!(
        Some(gap.cursor()),
        gap.window.oldest,
        "the next wait reads the retained window"
    );
    // The retained records are read in pages of 100, then the session is caught up.
    let mut read = 0;
    let quiet = loop {
        let next = core
            .wait(&lagging.session, &waiting(None, Duration::from_millis(300)))
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
        .wait(session, &waiting(None, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(last.outcome, "found");
    assert_eq!(
        last.records.last().unwrap().change,
        Change::TargetDisposed {
            reason: "target-disposed".into()
        }
    );
    // Read to the end: a further wait says so at once instead of waiting.
    assert!(matches!(
        core.wait(session, &waiting(None, Duration::from_secs(30))).await,
        Err(DebugError::Stale {
            reason: "target-disposed",
            ..
        })
    ));
    assert!(matches!(
        core.snapshot(session).await,
        Err(DebugError::Stale {
            reason: "target-disposed",
            replacement: None,
            ..
        })
    ));
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

/// Waits for a journal record matching `wanted` (after the session's cursor).
async fn wait_for(
    core: &DebugCore,
    session: &str,
    event: Option<&str>,
    wanted: impl Fn(&Change) -> bool,
) -> Change {
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no matching record within a minute"
        );
        let seen = core
            .wait(session, &waiting(event, Duration::from_secs(30)))
            .await
            .unwrap();
        if let Some(found) = seen.records.into_iter().find(|r| wanted(&r.change)) {
            return found.change;
        }
    }
}

#[tokio::test]
async fn a_waterfall_experiment_traces_each_listener_and_restores_the_original_dispatch() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "profiled");
    let core = DebugCore::new(registry.path().to_owned());
    let attached = core.attach(None).await.unwrap();
    let session = attached.session.as_str();

    let started = core
        .start_experiment(session, "custom/pipe", Duration::from_secs(30))
        .await
        .unwrap();
    let lease = started["lease"].as_str().unwrap().to_owned();
    // One experiment at a time: a second one, from another session too, is refused.
    let other = core.attach(None).await.unwrap();
    let refused = core
        .start_experiment(&other.session, "custom/ping", Duration::from_secs(5))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("one at a time") && refused.contains(&lease),
        "{refused}"
    );
    // Only the owner stops it by its lease.
    assert!(matches!(
        core.stop_experiment(&other.session, &lease).await,
        Err(DebugError::NotLeaseOwner(_))
    ));

    assert_eq!(
        runtime.say("pipe", "piped "),
        "piped inner",
        "the waterfall's result is untouched"
    );
    wait_for(&core, session, Some("custom/pipe"), |c| {
        matches!(c, Change::ProfilerTraceUpdated { .. })
    })
    .await;
    let traces = core.traces(session, None, 0, 20).await.unwrap();
    assert_eq!(traces["total"], 1, "{traces}");
    let trace = &traces["traces"][0];
    assert_eq!(trace["mode"], "waterfall");
    let listeners = trace["listeners"].as_array().unwrap();
    let by_owner = |name: &str| -> &Value {
        listeners
            .iter()
            .find(|l| l["ownerName"] == name)
            .unwrap_or_else(|| panic!("no listener of {name}: {trace}"))
    };
    for (owner, next_calls) in [("outer", 1), ("slow", 1), ("twice", 2), ("late", 1)] {
        let listener = by_owner(owner);
        assert_eq!(listener["called"], true, "{listener}");
        assert_eq!(listener["nextCalls"], next_calls, "{owner}: {listener}");
    }
    // The 3 ms of work is the slow listener's own time, outside its next().
    assert!(by_owner("slow")["selfUs"].as_u64().unwrap() >= 3000, "{trace}");
    assert!(
        by_owner("outer")["durationUs"].as_u64().unwrap() >= by_owner("slow")["durationUs"].as_u64().unwrap(),
        "a waterfall listener's duration includes the rest of the chain: {trace}"
    );
    // The late listener returned a promise and called next() after it returned,
    // and nothing after it ran before then.
    let late = by_owner("late");
    assert_eq!(
        (late["async"].as_bool(), late["lateNext"].as_bool()),
        (Some(true), Some(true)),
        "{late}"
    );
    assert_eq!(by_owner("twice")["lateNext"], false);
    assert!(
        !trace.to_string().contains("payload-never-sent"),
        "no argument value leaves: {trace}"
    );
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=wrapped callbacks=true"
    );

    let stopped = core.stop_experiment(session, &lease).await.unwrap();
    assert_eq!(stopped["last"]["restored"], "identical", "{stopped}");
    let found = kinds(&core.snapshot(session).await.unwrap());
    assert!(
        found.contains(&("repeated-next", "event custom/pipe".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&("late-next", "event custom/pipe".into())),
        "{found:?}"
    );
    assert_eq!(found.len(), 2, "only the twice and late listeners: {found:?}");
    assert_eq!(stopped["last"]["reason"], "stopped");
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=prototype callbacks=true",
        "the runtime's own dispatch is back while the core stays attached, and no listener record was touched"
    );
    // Outside an experiment nothing is traced.
    runtime.say("pipe", "piped ");
    assert_eq!(
        core.traces(session, Some(&lease), 0, 20).await.unwrap()["total"],
        1
    );
    // With no core attached it stays the runtime's own.
    drop(core);
    await_identity(&mut runtime, "identity dispatch=prototype callbacks=true").await;
}

/// Asks the runtime for its identity until it says `wanted` (a closed channel
/// reaches the collector in its own time), for at most 30 s.
async fn await_identity(runtime: &mut Runtime, wanted: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let said = runtime.say("identity", "identity ");
        if said == wanted {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still {said:?}, not {wanted:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_collector_ends_a_lease_whose_core_died_and_restores_by_identity() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "profiled");
    let observer = DebugCore::new(registry.path().to_owned());
    let watching = observer.attach(None).await.unwrap();
    {
        // A core that takes a lease and dies without a word: its channel closes.
        let doomed = DebugCore::new(registry.path().to_owned());
        let session = doomed.attach(None).await.unwrap().session;
        doomed
            .start_experiment(&session, "custom/pipe", Duration::from_millis(500))
            .await
            .unwrap();
    }
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=wrapped callbacks=true"
    );
    let ended = wait_for(
        &observer,
        &watching.session,
        Some("custom/pipe"),
        |c| matches!(c, Change::ProfilerStatusChanged { state, .. } if state == "stopped"),
    )
    .await;
    let Change::ProfilerStatusChanged { reason, restored, .. } = ended else {
        unreachable!()
    };
    assert_eq!(
        (reason.as_str(), restored.as_deref()),
        ("lease-expired", Some("identical"))
    );
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=prototype callbacks=true"
    );
    let status = observer.experiment_status(&watching.session).await.unwrap();
    assert!(status["running"].is_null(), "{status}");
}

#[tokio::test]
async fn the_last_core_gone_mid_experiment_leaves_the_runtimes_own_dispatch_once_the_lease_ends() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "profiled");
    {
        let only = DebugCore::new(registry.path().to_owned());
        let session = only.attach(None).await.unwrap().session;
        only.start_experiment(&session, "custom/pipe", Duration::from_millis(500))
            .await
            .unwrap();
    }
    // The experiment outlives its core until its lease ends.
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=wrapped callbacks=true"
    );
    await_identity(&mut runtime, "identity dispatch=prototype callbacks=true").await;
    assert_eq!(runtime.say("pipe", "piped "), "piped inner");
}

#[tokio::test]
async fn experiments_are_refused_where_the_host_did_not_enable_them() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "clean");
    let core = DebugCore::new(registry.path().to_owned());
    let session = core.attach(None).await.unwrap().session;
    let refused = core
        .start_experiment(&session, "custom/ping", Duration::from_secs(5))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("experiments are off"), "{refused}");
    assert_eq!(core.experiment_status(&session).await.unwrap()["enabled"], false);
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=prototype callbacks=true"
    );
}

#[tokio::test]
async fn a_checkpoint_compares_as_added_removed_and_changed_and_dispatches_are_searchable() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "clean");
    let core = DebugCore::new(registry.path().to_owned());
    let session = core.attach(None).await.unwrap().session;
    let unchanged = {
        let first = core.capture_checkpoint(&session).await.unwrap();
        core.compare_current(&session, Some(&first.checkpoint))
            .await
            .unwrap()
    };
    assert_eq!(
        (
            unchanged.added.len(),
            unchanged.removed.len(),
            unchanged.changed.len()
        ),
        (0, 0, 0),
        "{unchanged:?}"
    );
    let before = core.capture_checkpoint(&session).await.unwrap();
    runtime.say("load", "loaded");
    let compared = core.compare_current(&session, None).await.unwrap();
    assert_eq!(
        compared.checkpoint, before.checkpoint,
        "the newest checkpoint by default"
    );
    assert!(
        compared.added.iter().any(|a| a.scope == "fiber"
            && a.now
                .as_deref()
                .is_some_and(|n| n.starts_with("loaded-later active"))),
        "{compared:?}"
    );
    assert!(
        compared.changed.iter().any(|c| c.scope == "event"
            && c.key == "custom/ping"
            && c.was.as_deref().is_some_and(|w| w.starts_with("1 listener"))
            && c.now.as_deref().is_some_and(|n| n.starts_with("2 listener"))),
        "{compared:?}"
    );
    assert!(compared.removed.is_empty() && !compared.truncated, "{compared:?}");
    // The session keeps the newest 8 checkpoints.
    let mut evicted = Vec::new();
    for _ in 0..MAX_CHECKPOINTS {
        evicted.extend(core.capture_checkpoint(&session).await.unwrap().evicted);
    }
    assert_eq!(evicted.len(), 2, "{evicted:?}");
    assert!(matches!(
        core.compare_current(&session, Some(&before.checkpoint)).await,
        Err(DebugError::UnknownCheckpoint(_))
    ));

    runtime.emit(3);
    wait_for(&core, &session, Some("custom/ping"), |c| {
        matches!(c, Change::DispatchObserved { .. })
    })
    .await;
    let found = core
        .search_dispatches(&session, Some("ping"), (None, None), 2)
        .await
        .unwrap();
    assert!(found.total >= 1 && found.returned <= 2, "{found:?}");
    assert_eq!(found.truncated, found.total > 2);
    assert!(
        core.search_dispatches(&session, Some("nothing-like-it"), (None, None), 10)
            .await
            .unwrap()
            .records
            .is_empty()
    );
}

#[tokio::test]
async fn a_session_is_stale_with_why_its_target_went() {
    let registry = tempfile::tempdir().unwrap();
    let core = DebugCore::new(registry.path().to_owned());

    // Disposed in place (DSH restarting its runtime, the plugin unloaded).
    let mut runtime = Runtime::start_labelled(registry.path(), "clean", "first");
    let session = core.attach(None).await.unwrap().session;
    runtime.say("dispose", "disposed");
    let error = loop {
        match core.wait(&session, &waiting(None, Duration::from_secs(30))).await {
            Ok(_) => {}
            Err(error) => break error,
        }
    };
    assert!(
        matches!(
            error,
            DebugError::Stale {
                reason: "host-disposed",
                ..
            }
        ),
        "{error}"
    );
    drop(runtime);

    // Replaced: the process ends and another with the same label takes its place.
    let first = Runtime::start_labelled(registry.path(), "clean", "dsh-like");
    let session = core.attach(None).await.unwrap().session;
    drop(first);
    let second = Runtime::start_labelled(registry.path(), "clean", "dsh-like");
    let error = loop {
        match core.snapshot(&session).await {
            Ok(_) => tokio::task::yield_now().await,
            Err(error) => break error,
        }
    };
    let DebugError::Stale {
        reason, replacement, ..
    } = &error
    else {
        panic!("{error}")
    };
    assert_eq!(*reason, "target-replaced", "{error}");
    let targets = core.targets();
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(replacement.as_deref(), Some(targets[0].id.as_str()));
    assert_eq!(targets[0].pid, second.guard.pid());
}

#[tokio::test]
async fn a_dispatch_replaced_during_an_experiment_is_left_in_place_and_reported() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "profiled");
    let core = DebugCore::new(registry.path().to_owned());
    let session = core.attach(None).await.unwrap().session;
    let started = core
        .start_experiment(&session, "custom/pipe", Duration::from_secs(30))
        .await
        .unwrap();
    runtime.say("patch", "patched");
    let stopped = core
        .stop_experiment(&session, started["lease"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(stopped["last"]["restored"], "conflict", "{stopped}");
    assert_eq!(
        runtime.say("identity", "identity "),
        "identity dispatch=wrapped callbacks=true",
        "the other instrumentation stays"
    );
    assert_eq!(
        runtime.say("pipe", "piped "),
        "piped inner",
        "and the runtime works through both"
    );
    let found = kinds(&core.snapshot(&session).await.unwrap());
    assert!(
        found.contains(&("instrumentation-conflict", "event custom/pipe".into())),
        "{found:?}"
    );
}

#[tokio::test]
async fn waiters_and_traces_are_bounded_and_say_so() {
    let registry = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::start(registry.path(), "profiled");
    let core = std::sync::Arc::new(DebugCore::new(registry.path().to_owned()));
    let session = core.attach(None).await.unwrap().session;

    // 32 waits park; the 33rd is refused at once.
    let mut parked = Vec::new();
    for _ in 0..MAX_WAITERS {
        let (core, session) = (std::sync::Arc::clone(&core), session.clone());
        parked.push(tokio::spawn(async move {
            core.wait(&session, &waiting(Some("never/emitted"), Duration::from_secs(30)))
                .await
        }));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    while core.waits_running() < MAX_WAITERS {
        assert!(tokio::time::Instant::now() < deadline, "the waits never parked");
        tokio::task::yield_now().await;
    }
    let refused = core
        .wait(
            &session,
            &waiting(Some("never/emitted"), Duration::from_millis(1)),
        )
        .await
        .unwrap_err();
    assert!(matches!(refused, DebugError::TooManyWaiters), "{refused}");
    for wait in parked {
        wait.abort();
    }

    // 210 traced dispatches keep the newest 200 and count the rest.
    let started = core
        .start_experiment(&session, "custom/pipe", Duration::from_secs(30))
        .await
        .unwrap();
    runtime.say("pipe 210", "piped ");
    let lease = started["lease"].as_str().unwrap();
    let stopped = core.stop_experiment(&session, lease).await.unwrap();
    assert_eq!(stopped["last"]["traces"], 200, "{stopped}");
    assert_eq!(stopped["last"]["tracesDropped"], 10, "{stopped}");
    assert_eq!(stopped["last"]["dispatches"], 210, "{stopped}");
    let last_page = core.traces(&session, Some(lease), 180, 100).await.unwrap();
    assert_eq!(last_page["returned"], 20);
    assert_eq!(last_page["traces"][19]["id"], 210, "the newest are kept");
    assert!(last_page["cursor"].is_null());
    traces_page_on_session_cursors(&core, &session, lease).await;
}

/// `cordis_profiler_traces` is a catalog on the session's cursors: 100 a page
/// at most, a single-use `nextCursor` that reads the same lease on; a number
/// (the offset before v0.8) is still read, for one release.
async fn traces_page_on_session_cursors(core: &DebugCore, session: &str, lease: &str) {
    let traces = |arguments: Value| {
        let Value::Object(mut arguments) = arguments else {
            unreachable!()
        };
        arguments.insert("debugSessionId".into(), session.into());
        agent::answer(core, LOCAL_OWNER, agent::TRACES, arguments)
    };
    let (_, first) = traces(json!({"lease": lease, "limit": 1000})).await.unwrap();
    let page = &first["traces"];
    assert_eq!(
        (&page["total"], &page["returned"], &page["truncated"]),
        (&json!(200), &json!(100), &json!(true)),
        "{first}"
    );
    assert_eq!(first["experiment"]["lease"], lease, "{first}");
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    // No lease named: the cursor knows which experiment it pages.
    let (_, second) = traces(json!({"cursor": cursor})).await.unwrap();
    let page = &second["traces"];
    assert_eq!(page["cursor"], cursor.as_str(), "{second}");
    assert_eq!(page["returned"], 20, "20 a page by default: {second}");
    assert_eq!(
        page["items"][0]["id"], 111,
        "read on from the first page: {second}"
    );
    let third = page["nextCursor"].as_str().unwrap().to_owned();
    let used = traces(json!({"cursor": cursor})).await.unwrap_err();
    assert!(
        matches!(used, agent::AgentError::Debug(DebugError::UnknownCursor(_))),
        "a cursor is used once: {used}"
    );
    let (_, last) = traces(json!({"cursor": third, "limit": 100})).await.unwrap();
    assert_eq!(last["traces"]["returned"], 80, "{last}");
    assert!(last["traces"]["nextCursor"].is_null(), "the last page: {last}");
    assert_eq!(last["traces"]["items"][79]["id"], 210, "{last}");
    let (_, deprecated) = traces(json!({"lease": lease, "cursor": 190})).await.unwrap();
    assert_eq!(deprecated["traces"]["returned"], 10, "{deprecated}");
}

/// A copy of the collector with `edit` applied (it must change the file).
fn edited_collector(dir: &Path, name: &str, edit: impl Fn(&str) -> String) -> std::path::PathBuf {
    let original = std::fs::read_to_string(workspace_root().join("packages/dsh-plugin/devtools.js")).unwrap();
    let edited = edit(&original);
    assert_ne!(edited, original, "{name}: the edit changed nothing");
    let path = dir.join(name);
    std::fs::write(&path, edited).unwrap();
    path
}

#[tokio::test]
async fn a_collector_of_another_protocol_or_none_is_refused_with_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    // A later collector (protocol 2), and one whose `hello` names no version while
    // its registry file still says 1: the `hello` answer is what is checked.
    let later = edited_collector(dir.path(), "later.js", |s| {
        s.replacen("export const PROTOCOL = 1;", "export const PROTOCOL = 2;", 1)
    });
    let unversioned = edited_collector(dir.path(), "unversioned.js", |s| {
        s.replacen(
            "case 'hello': return { protocol: PROTOCOL, ",
            "case 'hello': return { ",
            1,
        )
    });
    for (collector, announced, listed) in [(later, Some(2), Some(2)), (unversioned, None, Some(1))] {
        let registry = tempfile::tempdir().unwrap();
        let _runtime = Runtime::start_with(registry.path(), "clean", "versioned", &collector);
        let core = DebugCore::new(registry.path().to_owned());
        let [target] = <[_; 1]>::try_from(core.targets()).unwrap();
        assert_eq!(target.protocol, listed);
        assert_eq!(target.problem.is_some(), listed != Some(1), "{target:?}");
        let refused = core.attach(None).await.map(|a| a.session).unwrap_err();
        let DebugError::ProtocolMismatch {
            target: named,
            collector,
            core: speaks,
        } = &refused
        else {
            panic!("not a protocol mismatch: {refused}");
        };
        assert_eq!(
            (named.as_str(), *collector, *speaks),
            (target.id.as_str(), announced, COLLECTOR_PROTOCOL)
        );
        let message = refused.to_string();
        assert!(message.contains("dshkit dsh install --devtools"), "{message}");
        assert!(
            message.contains(&format!("speaks protocol {COLLECTOR_PROTOCOL}")),
            "{message}"
        );
    }
}

/// `startCollectorIsolated` on a registry that is a plain file: off by default,
/// the failure is kept for the view and reported, and the start returns null;
/// with `failOnStartupError` it throws as before.
#[test]
fn a_failed_collector_start_is_isolated_unless_fail_on_startup_error() {
    let peers = Peers::get();
    let home = tempfile::tempdir().unwrap();
    let registry = home.path().join("registry");
    std::fs::write(&registry, "not a directory").unwrap();
    let collector = workspace_root().join("packages/dsh-plugin/devtools.js");
    let script = r"
const [collector, dir] = process.argv.slice(1);
const { startCollectorIsolated, startupFailure } = await import(collector);
const started = startCollectorIsolated({}, { dir }, {});
const failure = startupFailure()?.dir ?? null;
let thrown = null;
try { startCollectorIsolated({}, { dir }, { failOnStartupError: true }); } catch (error) { thrown = error.code; }
console.log(JSON.stringify({ started, failure, thrown }));
";
    let output = std::process::Command::new(peers.node())
        .args(["--input-type=module", "-e", script])
        .arg(collector.as_os_str())
        .arg(registry.as_os_str())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let got: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(got["started"].is_null(), "no collector: {got}");
    assert_eq!(got["failure"], registry.display().to_string(), "{got}");
    assert_eq!(got["thrown"], "ENOTDIR", "{got}");
    assert!(stderr.contains("Cordis DevTools did not start"), "{stderr}");
}

/// Parks a wait for an event nobody emits (60 s at most) on `session`, once it
/// is pending.
async fn pending_wait(
    core: &std::sync::Arc<DebugCore>,
    session: &str,
) -> tokio::task::JoinHandle<Result<dshkit_devtools::WaitResult, DebugError>> {
    let (waiter, session) = (std::sync::Arc::clone(core), session.to_owned());
    let before = core.waits_running();
    let pending = tokio::spawn(async move {
        waiter
            .wait(&session, &waiting(Some("never/emitted"), Duration::from_mins(1)))
            .await
    });
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    while core.waits_running() == before {
        assert!(tokio::time::Instant::now() < deadline, "the wait never parked");
        tokio::task::yield_now().await;
    }
    pending
}

#[tokio::test]
#[expect(
    clippy::print_stderr,
    reason = "the cancellation latency is a figure the report names"
)]
async fn detaching_or_the_target_going_away_cancels_a_pending_wait_with_why() {
    let registry = tempfile::tempdir().unwrap();
    let runtime = Runtime::start(registry.path(), "clean");
    let core = std::sync::Arc::new(DebugCore::new(registry.path().to_owned()));

    let session = core.attach(None).await.unwrap().session;
    let pending = pending_wait(&core, &session).await;
    let detached_at = std::time::Instant::now();
    core.detach(&session).await.unwrap();
    let cancelled = pending.await.unwrap().unwrap();
    eprintln!(
        "a detach cancelled a pending 60 s wait in {:?}",
        detached_at.elapsed()
    );
    assert_eq!(
        (cancelled.outcome, cancelled.reason),
        ("cancelled", Some("detached")),
        "{cancelled:?}"
    );

    let session = core.attach(None).await.unwrap().session;
    let pending = pending_wait(&core, &session).await;
    drop(runtime);
    let cancelled = pending.await.unwrap().unwrap();
    assert_eq!(
        (cancelled.outcome, cancelled.reason),
        ("cancelled", Some("target-disposed")),
        "the filter matches no record, and the wait still ends: {cancelled:?}"
    );
    assert!(cancelled.records.is_empty());
}

#[tokio::test]
async fn an_idle_session_expires_cancelling_its_wait_and_stopping_its_own_lease() {
    let registry = tempfile::tempdir().unwrap();
    let _runtime = Runtime::start(registry.path(), "profiled");
    let observer = DebugCore::new(registry.path().to_owned());
    let watching = observer.attach(None).await.unwrap().session;
    let core = std::sync::Arc::new(DebugCore::new(registry.path().to_owned()));
    let session = core.attach(None).await.unwrap().session;
    let started = core
        .start_experiment(&session, "custom/pipe", Duration::from_mins(1))
        .await
        .unwrap();
    let pending = pending_wait(&core, &session).await;

    core.expire_idle(std::time::Instant::now() + SESSION_IDLE).await;
    let cancelled = pending.await.unwrap().unwrap();
    assert_eq!(
        (cancelled.outcome, cancelled.reason),
        ("cancelled", Some("expired")),
        "{cancelled:?}"
    );
    assert!(matches!(
        core.snapshot(&session).await,
        Err(DebugError::UnknownSession(_))
    ));
    // The collector is told by the exact owner, long before the lease's own end.
    let stopped = wait_for(
        &observer,
        &watching,
        Some("custom/pipe"),
        |c| matches!(c, Change::ProfilerStatusChanged { state, .. } if state == "stopped"),
    )
    .await;
    let Change::ProfilerStatusChanged { lease, reason, .. } = stopped else {
        unreachable!()
    };
    assert_eq!(lease, started["lease"].as_str().unwrap());
    assert_eq!(reason, "owner-gone");
}

/// The collector names its process's start in the kernel's own clock (Linux),
/// and a registry file whose pid now runs a process that started at another
/// time (the pid was reused) is no target: it is removed.
#[cfg(target_os = "linux")]
#[test]
fn a_registry_file_whose_pid_runs_another_process_is_no_target_and_is_removed() {
    let registry = tempfile::tempdir().unwrap();
    let runtime = Runtime::start(registry.path(), "clean");
    let pid = runtime.guard.child.id();
    let process = dshkit_os::process::Identity::of(pid).unwrap();
    let file = registry.path().join(format!("targets/{pid}.json"));
    let mut record: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(record["startTime"], process.started.0, "{record}");
    let core = DebugCore::new(registry.path().to_owned());
    let [target] = <[_; 1]>::try_from(core.targets()).unwrap();
    assert!(
        target.id.starts_with(&format!("{pid}-{}-", process.started.0)),
        "{target:?}"
    );

    // The same file as a collector whose process started one tick earlier wrote it.
    record["startTime"] = (process.started.0 - 1).into();
    std::fs::write(&file, record.to_string()).unwrap();
    assert!(core.targets().is_empty());
    assert!(!file.exists(), "the reused pid's registry file is removed");
}
