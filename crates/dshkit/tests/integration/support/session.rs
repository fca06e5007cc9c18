//! A running `dshkit` MCP server over stdio, driven with raw JSON-RPC lines.

use std::io::{BufRead, BufReader, Write};
use std::process::ChildStdin;
use std::sync::mpsc;
use std::time::Duration;

use dshkit_os::process::Identity;
use dshkit_test::{ChildGuard, spawn_guarded};
use serde_json::{Value, json};

use super::command::dshkit_command;

/// The protocol version the tests initialize with unless they test another.
const PROTOCOL: &str = "2025-11-25";

/// `dshkit mcp` (or another stdio MCP server of dshkit's) in a home of its own,
/// its stdout lines read on a thread.
pub(crate) struct Session {
    guard: ChildGuard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _home: tempfile::TempDir,
}

impl Session {
    /// `dshkit mcp` with `extra_env`, not yet initialized.
    pub(crate) fn start(extra_env: &[(&str, &str)]) -> Self {
        Self::start_with(&[], extra_env)
    }

    /// `dshkit mcp` with extra arguments (`--workspace DIR`, ...), not yet initialized.
    pub(crate) fn start_with(args: &[&str], extra_env: &[(&str, &str)]) -> Self {
        let mut all = vec!["mcp"];
        all.extend_from_slice(args);
        Self::start_dshkit(&all, extra_env)
    }

    /// `dshkit mcp ARGS` with `extra_env`, initialized at [`PROTOCOL`]: ready for calls.
    pub(crate) fn initialized(args: &[&str], extra_env: &[(&str, &str)]) -> Self {
        let mut session = Self::start_with(args, extra_env);
        session.initialize(PROTOCOL);
        session
    }

    /// `dshkit` with `args` (an MCP server over stdio: `echo replay FILE`, ...).
    pub(crate) fn start_dshkit(args: &[&str], extra_env: &[(&str, &str)]) -> Self {
        let home = tempfile::tempdir().unwrap();
        let mut command = dshkit_command(home.path());
        command.args(args);
        for (k, v) in extra_env {
            command.env(k, v);
        }
        let mut guard = spawn_guarded(&mut command);
        let stdin = guard.child.stdin.take();
        let stdout = guard.child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            guard,
            stdin,
            lines,
            _home: home,
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.guard.pid()
    }

    /// SIGKILL to dshkit alone (not its process group), then reap it.
    pub(crate) fn kill(&mut self) {
        assert!(Identity::of(self.guard.pid()).unwrap().kill());
        let _ = self.guard.child.wait();
    }

    /// Writes one line (a JSON-RPC message) to the server's stdin.
    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next stdout line as JSON-RPC, within 20 s.
    pub(crate) fn recv(&self) -> Value {
        self.recv_within(Duration::from_secs(20))
    }

    /// The next stdout line as JSON-RPC, within `within`.
    pub(crate) fn recv_within(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("a response line within {within:?}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON-RPC ({e}): {line}"))
    }

    /// `initialize` at `version`, then `notifications/initialized`: the
    /// server's answer to the first.
    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        self.send(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"raw","version":"1"}}})
            .to_string(),
        );
        let response = self.recv();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        response
    }

    /// A `tools/call` whose answer comes within 20 s (see [`Self::call_within`]).
    pub(crate) fn call(&mut self, id: u64, name: &str, arguments: &Value) -> Value {
        self.call_within(id, name, arguments, Duration::from_secs(20))
    }

    /// A call whose answer may take up to `within` (a slow operation on a loaded
    /// machine). Notifications before the answer (logs, a changed resource list)
    /// are skipped; tests of them read with `send` and `recv`.
    pub(crate) fn call_within(&mut self, id: u64, name: &str, arguments: &Value, within: Duration) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}}).to_string());
        loop {
            let message = self.recv_within(within);
            if message.get("id").is_some() || message.get("method").is_none() {
                return message;
            }
        }
    }

    /// `liveloop_browser` `open` of `url` as call `id`, which must succeed: the
    /// preview session's id.
    pub(crate) fn open_preview(&mut self, id: u64, url: &str) -> String {
        let opened = self.call(id, "liveloop_browser", &json!({"operation": "open", "url": url}));
        assert_eq!(opened["result"]["isError"], false, "{opened}");
        opened["result"]["structuredContent"]["session"]
            .as_str()
            .unwrap_or_else(|| panic!("{opened}"))
            .to_owned()
    }

    /// `resources/read` of `uri` as request `id`: the response, whatever it is.
    pub(crate) fn read_resource(&mut self, id: u64, uri: &str) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}})
                .to_string(),
        );
        self.recv()
    }

    /// Closes stdin and waits for the server to end.
    pub(crate) fn finish(mut self, within: Duration) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.wait_exit(within)
    }

    /// Waits for the server to end (after a signal, say).
    pub(crate) fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let guard = &mut self.guard;
        dshkit_test::wait_for(within, || {
            guard
                .child
                .try_wait()
                .unwrap()
                .ok_or_else(|| "dshkit mcp did not exit".to_owned())
        })
    }
}
