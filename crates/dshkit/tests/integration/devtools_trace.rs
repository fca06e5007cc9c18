//! `dshkit devtools profile --trace FILE` on a real DSH: a turn's `tools/execute`
//! profiled for a window, written as Chrome trace event JSON, and loaded in Chrome
//! DevTools' own trace engine (`@paulirish/trace_engine` from npm, installed by
//! `cargo xtask setup` under `target/peers/trace-reader`), which must parse every
//! slice dshkit wrote, by name, nested as the calls were; a spoiled file must
//! not read the same. The reader runs under Node's permission model (reads only
//! in its own package folder, its script and the trace) with every network entry
//! point made to fail and counted.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use dshkit_test::{Peers, wait_for};
use serde_json::Value;

use crate::devtools::MidTurn;
use crate::support::{dshkit_command, output, stdout_json};

/// The reader's pinned version (harness/trace-reader/package.json).
const READER: &str = "@paulirish/trace_engine@0.0.65";

/// What the trace engine parsed of `file`: its JSON line, or its refusal.
fn read_in_trace_engine(peers: &Peers, file: &Path) -> Result<Value, String> {
    let modules = peers.dir.join("trace-reader/node_modules");
    let engine = modules.join("@paulirish/trace_engine");
    assert!(
        engine.join("package.json").is_file(),
        "{} is missing: run `cargo xtask setup`",
        engine.display()
    );
    let script = dshkit_test::workspace_root().join("harness/trace-reader/read-trace.mjs");
    let allow = |path: &Path| format!("--allow-fs-read={}", path.display());
    let read = output(
        std::process::Command::new(peers.node())
            .env_clear()
            .arg("--permission")
            .arg(allow(&modules.join("")))
            .arg(allow(&script))
            .arg(allow(file))
            .arg(&script)
            .arg(&engine)
            .arg(file),
    );
    if read.status.success() {
        Ok(stdout_json(&read))
    } else {
        Err(format!(
            "{}: {}",
            read.status,
            String::from_utf8_lossy(&read.stderr)
        ))
    }
}

/// The names of the complete events of a trace file, sorted.
fn written_slices(trace: &Value) -> Vec<String> {
    let mut names: Vec<String> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The names the reader parsed, sorted.
fn parsed_slices(read: &Value) -> Vec<String> {
    let mut names: Vec<String> = read["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// `dshkit devtools profile EVENT --ttl 20s --trace FILE` on `registry`,
/// with `during` called once the lease runs: what it printed.
fn profile_to(home: &Path, registry: &Path, file: &Path, during: impl FnOnce()) -> String {
    let mut profiling = dshkit_command(home)
        .arg("devtools")
        .arg("--devtools-dir")
        .arg(registry)
        .args(["profile", "tools/execute", "--ttl", "20s", "--trace"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(profiling.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the profile never started: {said}"
        );
        said.push_str(&line);
        if line.contains("profiling tools/execute") {
            break;
        }
    }
    during();
    let finished = profiling.wait_with_output().unwrap();
    assert!(finished.status.success(), "{said}");
    String::from_utf8_lossy(&finished.stdout).into_owned()
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "the reader's figures: slices parsed and written"
)]
fn a_real_dsh_profile_loads_in_chrome_devtools_trace_engine_slice_for_slice() {
    let peers = Peers::get();
    // The second detection's reply waits for a release: DSH runs it while profiled.
    let dsh = MidTurn::start(&peers);
    let (home, registry, model) = (&dsh.home, &dsh.registry, &dsh.model);
    wait_for(Duration::from_mins(2), || {
        let listed = stdout_json(&output(
            dshkit_command(home.path())
                .arg("devtools")
                .arg("--devtools-dir")
                .arg(registry)
                .args(["targets", "--json"]),
        ));
        match listed["targets"].as_array().map(Vec::len) {
            Some(1..) => Ok(()),
            _ => Err(format!("no debug target appeared: {listed}")),
        }
    });

    let file: PathBuf = home.path().join("profile.trace.json");
    let shown = profile_to(home.path(), registry, &file, || model.release());
    let trace: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let written = written_slices(&trace);
    let dispatches = written.iter().filter(|n| *n == "tools/execute").count();
    assert!(dispatches >= 1, "a tools/execute was traced: {trace}");
    assert!(written.len() > dispatches, "and the listeners it called: {trace}");
    assert_eq!(trace["otherData"]["dshkit"]["slices"], written.len(), "{trace}");
    assert!(
        shown.contains(&format!("Chrome trace with {} slices", written.len())),
        "{shown}"
    );

    // DevTools' own trace engine reads every slice, by name, nested as called.
    let read = read_in_trace_engine(&peers, &file).unwrap();
    assert_eq!(read["engine"], READER, "{read}");
    assert_eq!(read["networkAttempts"], 0, "{read}");
    assert_eq!(parsed_slices(&read), written, "{read}");
    for slice in read["slices"].as_array().unwrap() {
        let depth = slice["depth"].as_u64().unwrap();
        if slice["cat"] == "cordis.dispatch" {
            assert_eq!(depth, 0, "a dispatch is a root: {slice}");
        } else {
            assert!(depth >= 1, "a listener runs inside its dispatch: {slice}");
        }
    }
    eprintln!(
        "trace reader {READER}: {} slices parsed of {} written ({dispatches} dispatch(es)): {written:?}",
        read["slices"].as_array().unwrap().len(),
        written.len()
    );

    // A spoiled trace does not read the same: a slice without its phase is
    // dropped, and a cut file is refused.
    let mut spoiled = trace.clone();
    let first_listener = spoiled["traceEvents"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["cat"] == "cordis.listener")
        .unwrap();
    first_listener.as_object_mut().unwrap().remove("ph");
    let spoiled_file = home.path().join("spoiled.trace.json");
    std::fs::write(&spoiled_file, serde_json::to_vec(&spoiled).unwrap()).unwrap();
    let read = read_in_trace_engine(&peers, &spoiled_file).unwrap();
    assert_eq!(
        parsed_slices(&read).len(),
        written.len() - 1,
        "a spoiled slice is not read: {read}"
    );
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&spoiled_file, &bytes[..bytes.len() / 2]).unwrap();
    let refused = read_in_trace_engine(&peers, &spoiled_file).unwrap_err();
    assert!(refused.contains("not a Chrome trace"), "{refused}");

    dsh.finish();
}
