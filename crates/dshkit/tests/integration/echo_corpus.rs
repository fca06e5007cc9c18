//! The Echo corpus: real MCP servers from npm (memory, filesystem,
//! sequential-thinking) and `PyPI` (time), each driven by the official TypeScript
//! SDK client through a realistic sequence of calls. Each is recorded in one
//! directory (its working directory, with a home and a temp directory of its
//! own) and then, from another directory with another home, replayed (every
//! request must hit and the client must see the same answers, with the paths
//! of the new directory) and verified against the live server (no drift).
//!
//! Installed by `cargo xtask setup` from `harness/echo-servers` and
//! `harness/pypi/echo-servers.txt`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dshkit_test::Peers;
use serde_json::{Value, json};

use crate::support::{dshkit, dshkit_command, isolate, output, stdout_json};

/// One place a session runs in: its working directory, its home and its temp
/// directory, each a directory of its own.
struct Place {
    cwd: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Place {
    fn new() -> Self {
        let place = Self {
            cwd: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(place.tmp()).unwrap();
        place
    }

    fn cwd(&self) -> &Path {
        self.cwd.path()
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn tmp(&self) -> PathBuf {
        self.home().join("tmp")
    }

    /// `command` run here: this working directory (and `PWD`, as a shell
    /// sets it), and an environment that holds only what a child needs, with
    /// this home and temp directory.
    fn run_here(&self, command: &mut Command, env: &[(String, String)]) {
        isolate(command, self.home());
        command
            .current_dir(self.cwd())
            .env("PWD", self.cwd())
            .env("TMPDIR", self.tmp());
        for (name, value) in env {
            command.env(name, value);
        }
    }

    /// `text` with this place's paths written as `<cwd>` and `<home>`.
    fn neutral(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (dir, word) in [(self.cwd(), "<cwd>"), (self.home(), "<home>")] {
            let resolved = dshkit_os::fs::canonicalize(dir).unwrap();
            for path in [resolved.as_path(), dir] {
                text = text.replace(path.to_str().unwrap(), word);
            }
        }
        text
    }
}

/// A server of the corpus: how to start it and what an agent does with it, in
/// a given place.
struct Server {
    name: &'static str,
    /// The live server's argv.
    argv: fn(&Peers, &Place) -> Vec<String>,
    /// Its environment beyond the place's.
    env: fn(&Place) -> Vec<(String, String)>,
    /// Files the session expects to find.
    prepare: fn(&Place),
    /// The client's calls.
    plan: fn(&Place) -> Value,
}

fn echo_servers(peers: &Peers) -> PathBuf {
    let modules = peers.dir.join("echo-servers/node_modules/@modelcontextprotocol");
    assert!(
        modules.is_dir() && client_script().parent().unwrap().join("node_modules").exists(),
        "the Echo corpus servers are missing: run `cargo xtask setup`"
    );
    modules
}

fn client_script() -> PathBuf {
    dshkit_test::workspace_root().join("harness/echo-servers/corpus-client.mjs")
}

fn node_server(peers: &Peers, package: &str) -> Vec<String> {
    vec![
        peers.node().display().to_string(),
        echo_servers(peers)
            .join(package)
            .join("dist/index.js")
            .display()
            .to_string(),
    ]
}

/// The SDK client's session with `argv` from `place`: its report, what it
/// (and the dshkit it started) printed on stderr, and how long it took.
fn session(
    peers: &Peers,
    place: &Place,
    env: &[(String, String)],
    plan: &Value,
    argv: &[String],
) -> (Value, String, Duration) {
    let mut command = Command::new(peers.node());
    command.arg(client_script()).arg(plan.to_string()).args(argv);
    place.run_here(&mut command, env);
    let started = Instant::now();
    let out = output(&mut command);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{argv:?} from {}: {stderr}",
        place.cwd().display()
    );
    (stdout_json(&out), stderr, took)
}

/// `dshkit echo replay`'s own count, `(hits, misses)`, from what it printed.
fn replay_counts(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("dshkit echo: ") && line.contains(" hit(s), "))
        .unwrap_or_else(|| panic!("replay printed no summary: {stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// Records `server` in one place, then replays and verifies it from another;
/// returns how many requests the cassette holds.
fn record_in_one_directory_and_replay_from_another(server: &Server) -> usize {
    let peers = Peers::get();
    let (recording, elsewhere) = (Place::new(), Place::new());
    let fixtures = tempfile::tempdir().unwrap();
    let cassette = fixtures.path().join(format!("{}.jsonl", server.name));
    let cassette_arg = cassette.display().to_string();
    let bin = dshkit().display().to_string();
    (server.prepare)(&recording);
    (server.prepare)(&elsewhere);

    // Recorded live, by the SDK client through `dshkit echo record`.
    let mut record = vec![bin.clone(), "echo".into(), "record".into(), "-o".into()];
    record.extend([cassette_arg.clone(), "--".into()]);
    record.extend((server.argv)(&peers, &recording));
    let (live, _, record_took) = session(
        &peers,
        &recording,
        &(server.env)(&recording),
        &(server.plan)(&recording),
        &record,
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    for (dir, what) in [(recording.cwd(), "working directory"), (recording.home(), "home")] {
        let dir = dir.to_str().unwrap();
        assert!(
            !text.contains(dir),
            "the recording's {what} {dir} is in the cassette"
        );
    }
    assert!(
        !text.contains("[REDACTED:env-"),
        "no environment value was a secret here"
    );
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["paths"], json!(["cwd", "home"]), "{header}");
    let requests = text
        .lines()
        .filter(|l| l.contains(r#""type":"interaction""#))
        .count();

    // Replayed from the other place: the server is not started.
    let replay = [bin.clone(), "echo".into(), "replay".into(), cassette_arg.clone()];
    let (replayed, replay_log, replay_took) =
        session(&peers, &elsewhere, &[], &(server.plan)(&elsewhere), &replay);
    let (hits, misses) = replay_counts(&replay_log);
    assert_eq!(
        elsewhere.neutral(&replayed.to_string()),
        recording.neutral(&live.to_string()),
        "the replay from another directory answers as the live server did"
    );

    // Verified from the other place against the live server.
    let mut verify = dshkit_command(elsewhere.home());
    elsewhere.run_here(&mut verify, &(server.env)(&elsewhere));
    verify
        .args(["--json", "echo", "verify", &cassette_arg, "--"])
        .args((server.argv)(&peers, &elsewhere));
    let started = Instant::now();
    let verified = output(&mut verify);
    let verify_took = started.elapsed();
    let report = stdout_json(&verified);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), requests, "{report:#}");
    for check in checks {
        if check["method"] == "tools/call" {
            assert!(check["tool"].is_string(), "a call names its tool: {check}");
        }
    }
    let drift = report["drift"].as_u64().unwrap();
    report_case(
        server.name,
        requests,
        hits,
        misses,
        drift,
        [record_took, replay_took, verify_took],
    );
    assert_eq!((hits, misses), (requests as u64, 0), "{replay_log}");
    assert_eq!(verified.status.code(), Some(0), "{report:#}");
    assert_eq!(drift, 0, "{report:#}");
    requests
}

#[expect(clippy::print_stderr, reason = "the corpus reports its figures")]
fn report_case(name: &str, requests: usize, hits: u64, misses: u64, drift: u64, took: [Duration; 3]) {
    eprintln!(
        "echo corpus: {name}: {requests} requests; replayed from another directory: {hits} hit(s), {misses} miss(es); verify: {drift} drifted; record {:.2} s, replay {:.2} s, verify {:.2} s",
        took[0].as_secs_f64(),
        took[1].as_secs_f64(),
        took[2].as_secs_f64()
    );
}

fn path_in(place: &Place, relative: &str) -> String {
    place.cwd().join(relative).display().to_string()
}

fn prepare_project(place: &Place) {
    let cwd = place.cwd();
    std::fs::write(
        cwd.join("notes.txt"),
        "Meeting notes\n- record the server\n- replay it in CI\n",
    )
    .unwrap();
    std::fs::create_dir(cwd.join("src")).unwrap();
    std::fs::write(cwd.join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    let shared = place.home().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(
        shared.join("readme.md"),
        "# Shared\nKept in the home directory.\n",
    )
    .unwrap();
}

const FILESYSTEM: Server = Server {
    name: "filesystem",
    argv: |peers, place| {
        let mut argv = node_server(peers, "server-filesystem");
        argv.push(place.cwd().display().to_string());
        argv.push(place.home().join("shared").display().to_string());
        argv
    },
    env: |_| Vec::new(),
    prepare: prepare_project,
    plan: |place| {
        let at = |relative: &str| path_in(place, relative);
        let home = |relative: &str| place.home().join(relative).display().to_string();
        json!([
            {"tool": "list_allowed_directories"},
            {"tool": "list_directory", "arguments": {"path": at("")}},
            {"tool": "directory_tree", "arguments": {"path": at("src")}},
            {"tool": "read_text_file", "arguments": {"path": at("notes.txt")}},
            {"tool": "read_text_file", "arguments": {"path": at("notes.txt"), "head": 1}},
            {"tool": "read_text_file", "arguments": {"path": home("shared/readme.md")}},
            {"tool": "write_file", "arguments": {"path": at("todo.md"), "content": "- [ ] ship\n- [ ] test\n"}},
            {"tool": "edit_file", "arguments": {"path": at("todo.md"), "edits": [{"oldText": "- [ ] ship", "newText": "- [x] ship"}]}},
            {"tool": "create_directory", "arguments": {"path": at("build")}},
            {"tool": "move_file", "arguments": {"source": at("todo.md"), "destination": at("build/todo.md")}},
            {"tool": "search_files", "arguments": {"path": at(""), "pattern": "**/*.md"}},
            {"tool": "get_file_info", "arguments": {"path": at("build/todo.md")}},
            {"tool": "list_directory_with_sizes", "arguments": {"path": at(""), "sortBy": "name"}},
            {"tool": "read_multiple_files", "arguments": {"paths": [at("notes.txt"), at("build/todo.md")]}},
            {"tool": "read_text_file", "arguments": {"path": "/etc/hostname"}}
        ])
    },
};

const MEMORY: Server = Server {
    name: "memory",
    argv: |peers, _| node_server(peers, "server-memory"),
    // The knowledge graph lives in the working directory, not in the package.
    env: |place| vec![("MEMORY_FILE_PATH".into(), path_in(place, "memory.jsonl"))],
    prepare: |_| {},
    plan: |_| {
        json!([
            {"tool": "create_entities", "arguments": {"entities": [
                {"name": "Ana", "entityType": "person", "observations": ["maintains the MCP servers", "prefers Rust"]},
                {"name": "dshkit", "entityType": "project", "observations": ["records MCP servers"]},
                {"name": "CI", "entityType": "system", "observations": ["replays cassettes"]}
            ]}},
            {"tool": "create_relations", "arguments": {"relations": [
                {"from": "Ana", "to": "dshkit", "relationType": "works on"},
                {"from": "CI", "to": "dshkit", "relationType": "tests"}
            ]}},
            {"tool": "add_observations", "arguments": {"observations": [
                {"entityName": "dshkit", "contents": ["replays from any directory"]}
            ]}},
            {"tool": "read_graph"},
            {"tool": "search_nodes", "arguments": {"query": "Rust"}},
            {"tool": "open_nodes", "arguments": {"names": ["dshkit", "CI"]}},
            {"tool": "delete_observations", "arguments": {"deletions": [
                {"entityName": "Ana", "observations": ["prefers Rust"]}
            ]}},
            {"tool": "delete_relations", "arguments": {"relations": [
                {"from": "CI", "to": "dshkit", "relationType": "tests"}
            ]}},
            {"resource": "memory://knowledge-graph"},
            {"tool": "read_graph"}
        ])
    },
};

const SEQUENTIAL_THINKING: Server = Server {
    name: "sequential-thinking",
    argv: |peers, _| node_server(peers, "server-sequential-thinking"),
    env: |_| Vec::new(),
    prepare: |_| {},
    plan: |_| {
        let thought = |n: u32, text: &str, next: bool, extra: Value| {
            let mut arguments =
                json!({"thought": text, "thoughtNumber": n, "totalThoughts": 4, "nextThoughtNeeded": next});
            arguments
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"tool": "sequentialthinking", "arguments": arguments})
        };
        json!([
            thought(
                1,
                "The replay misses requests when the directory changes.",
                true,
                json!({})
            ),
            thought(
                2,
                "The paths in the requests hold the recording's directory.",
                true,
                json!({})
            ),
            thought(
                3,
                "Normalise the working directory on both sides of matching.",
                true,
                json!({})
            ),
            thought(
                2,
                "Rather: the environment's PWD was taken for a secret.",
                true,
                json!({"isRevision": true, "revisesThought": 2})
            ),
            thought(
                4,
                "Both: fix the redaction and write the paths as tokens.",
                false,
                json!({"branchFromThought": 3, "branchId": "tokens"})
            )
        ])
    },
};

/// The time server answers with today's date and weekday: a verification
/// that runs across midnight in one of these zones reports the weekday as
/// drift, which it is (the timestamps themselves are normalised).
const TIME: Server = Server {
    name: "time",
    argv: |peers, _| {
        vec![
            peers.dir.join("echo-servers-py/bin/python").display().to_string(),
            "-m".into(),
            "mcp_server_time".into(),
            "--local-timezone".into(),
            "UTC".into(),
        ]
    },
    env: |_| Vec::new(),
    prepare: |_| {},
    plan: |_| {
        json!([
            {"tool": "get_current_time", "arguments": {"timezone": "Europe/Warsaw"}},
            {"tool": "get_current_time", "arguments": {"timezone": "America/New_York"}},
            {"tool": "convert_time", "arguments": {"source_timezone": "Europe/London", "time": "16:30", "target_timezone": "Asia/Tokyo"}},
            {"tool": "convert_time", "arguments": {"source_timezone": "America/Los_Angeles", "time": "09:15", "target_timezone": "Europe/Berlin"}}
        ])
    },
};

#[test]
fn echo_corpus_filesystem_server_replays_and_verifies_from_another_directory() {
    let requests = record_in_one_directory_and_replay_from_another(&FILESYSTEM);
    assert!(requests >= 16, "{requests}");
}

#[test]
fn echo_corpus_memory_server_replays_and_verifies_from_another_directory() {
    let requests = record_in_one_directory_and_replay_from_another(&MEMORY);
    assert!(requests >= 12, "{requests}");
}

#[test]
fn echo_corpus_sequential_thinking_server_replays_and_verifies_from_another_directory() {
    let requests = record_in_one_directory_and_replay_from_another(&SEQUENTIAL_THINKING);
    assert!(requests >= 7, "{requests}");
}

#[test]
fn echo_corpus_time_server_from_pypi_replays_and_verifies_from_another_directory() {
    let requests = record_in_one_directory_and_replay_from_another(&TIME);
    assert!(requests >= 6, "{requests}");
}
