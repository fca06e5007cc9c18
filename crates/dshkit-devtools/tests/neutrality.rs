//! The collector's observer is behaviour-neutral, shown on the real
//! `@deepseek-ai/cordis`: a battery of Cordis event semantics (`emit`, `parallel`,
//! `serial`, `bail`, `waterfall`; return values and thrown errors; listener order,
//! `this` and `next()`; a listener that removes itself; re-entered dispatches; a
//! plugin's listeners; the runtime's `events.dispatch` by identity) runs on a
//! runtime observed by the collector with a core attached and on one observed by
//! nobody, and every difference in what the battery wrote down is a failure. The
//! battery itself is shown able to fail: it tells a replaced `events.dispatch` from
//! the runtime's own, an observer made to change what a dispatch returns, and
//! an `internal/*` waterfall observer that does not pass the chain on. The
//! observed run also shows the core received facts of Cordis's own
//! `internal/*` dispatches.

use std::path::Path;
use std::process::Command;

use dshkit_test::{Peers, workspace_root};
use serde_json::Value;

/// The collector module as the plugin ships it.
fn collector() -> std::path::PathBuf {
    workspace_root().join("packages/dsh-plugin/devtools.js")
}

/// One run of the battery (`plain`, `observed` or `wrapped`) with `collector` as
/// the collector module: its transcript and the battery dispatches it saw.
fn battery(mode: &str, collector: &Path) -> (Vec<Value>, u64) {
    let (transcript, observed, _) = battery_with_internal(mode, collector);
    (transcript, observed)
}

/// [`battery`], with the facts of `internal/*` dispatches the core received,
/// by `"<mode> <event>"`.
fn battery_with_internal(mode: &str, collector: &Path) -> (Vec<Value>, u64, Value) {
    let peers = Peers::get();
    let registry = tempfile::tempdir().unwrap();
    let output = Command::new(peers.node())
        .arg(workspace_root().join("crates/dshkit-devtools/tests/fixtures/neutrality.mjs"))
        .arg(peers.cordis())
        .arg(collector)
        .arg(registry.path())
        .arg(mode)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the {mode} battery failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    let transcript = answer["transcript"].as_array().unwrap().clone();
    (
        transcript,
        answer["observed"].as_u64().unwrap(),
        answer["internal"].clone(),
    )
}

/// The entries where two transcripts differ (with their index), and a length
/// difference as one more.
fn differences(plain: &[Value], other: &[Value]) -> Vec<String> {
    let mut found: Vec<String> = plain
        .iter()
        .zip(other)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| format!("#{i}: {a} became {b}"))
        .collect();
    if plain.len() != other.len() {
        found.push(format!("{} entries became {}", plain.len(), other.len()));
    }
    found
}

#[test]
fn a_runtime_observed_by_an_attached_core_behaves_exactly_as_one_observed_by_nobody() {
    let (plain, _) = battery("plain", &collector());
    let (observed, seen, internal) = battery_with_internal("observed", &collector());
    assert!(plain.len() > 80, "the battery wrote {} entries", plain.len());
    let found = differences(&plain, &observed);
    assert!(found.is_empty(), "the observer changed:\n{}", found.join("\n"));
    // Cordis's own internal/* dispatches reached the core too (metadata only), in
    // the mode Cordis dispatches each: the waterfalls through the observer's
    // pass-through listeners, which changed nothing above.
    for dispatched in [
        "waterfall internal/config",
        "waterfall internal/get",
        "waterfall internal/update",
        "bail internal/listener",
        "emit internal/status",
    ] {
        assert!(
            internal[dispatched].as_u64() >= Some(1),
            "no fact of {dispatched}: {internal}"
        );
    }
    // Neutral because it observed, not because it slept: the core received a fact
    // for every dispatch of the battery, as many as a wrapper of the runtime's
    // dispatch counts.
    let (_, counted) = battery("wrapped", &collector());
    assert!(counted > 20, "{counted}");
    assert_eq!(seen, counted, "dispatches the core saw against those made");
}

#[test]
fn the_battery_tells_a_replaced_dispatch_from_the_runtimes_own() {
    let (plain, _) = battery("plain", &collector());
    let (wrapped, _) = battery("wrapped", &collector());
    let found = differences(&plain, &wrapped);
    let identity = [
        "dispatch is the prototype's",
        "dispatch is the one kept",
        "dispatch is an own property",
    ];
    for check in identity {
        assert!(
            found.iter().any(|d| d.contains(check)),
            "{check} not told apart: {found:?}"
        );
    }
}

/// The differences between a plain battery and one observed by a mutant
/// collector: `anchor` (found once in the collector) replaced by `replacement`.
fn observed_by_mutant(anchor: &str, replacement: &str) -> Vec<String> {
    let source = std::fs::read_to_string(collector()).unwrap();
    assert_eq!(
        source.matches(anchor).count(),
        1,
        "{anchor:?} moved in the collector: update this mutant"
    );
    let dir = tempfile::tempdir().unwrap();
    let mutant = dir.path().join("devtools.js");
    std::fs::write(&mutant, source.replace(anchor, replacement)).unwrap();
    let (plain, _) = battery("plain", &collector());
    let (observed, _) = battery("observed", &mutant);
    differences(&plain, &observed)
}

#[test]
fn an_observer_made_to_change_what_a_dispatch_returns_fails_the_battery() {
    // The observer's listener gets the dispatch's own argument array: a mutant
    // that writes to it changes what `bail`'s listeners return.
    let found = observed_by_mutant(
        "noteDispatch(mode, name, args.length);",
        "if (mode === 'bail') args[0] = -1; noteDispatch(mode, name, args.length);",
    );
    assert!(
        found.iter().any(|d| d.contains(r#""bail","returned""#)),
        "a changed bail result went unnoticed: {found:?}"
    );
}

#[test]
fn an_internal_waterfall_observer_that_does_not_pass_the_chain_on_fails_the_battery() {
    // The pass-through listener of the internal/* waterfalls: a mutant that
    // vetoes the chain instead of calling the `next` Cordis gave it.
    let found = observed_by_mutant("return args[args.length - 1]();", "return undefined;");
    assert!(
        found
            .iter()
            .any(|d| d.contains("configured") || d.contains("get virtual")),
        "a vetoed internal waterfall went unnoticed: {found:?}"
    );
}
