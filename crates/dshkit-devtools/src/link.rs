//! The channel to one collector: a Unix socket (a named pipe on Windows)
//! carrying JSON lines. Requests
//! (`hello`, `topology`) are answered by id; facts stream in between and go to
//! the target's journal.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, watch};

use crate::journal::{Change, Journal};

/// Version of the line protocol between a collector and this core. A collector
/// announces its own (in its registry file and its `hello` answer); one that
/// announces another is refused with both versions and the fix.
pub const COLLECTOR_PROTOCOL: u64 = 1;
/// Longest a collector may take to answer a request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest line read from a collector (a topology of a large runtime).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Why talking to a collector failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    #[error("cannot connect to the collector at {path}: {source}")]
    Connect {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the collector closed the channel (the target is gone)")]
    Closed,
    #[error("the collector did not answer `{0}` within {REQUEST_TIMEOUT:?}")]
    Timeout(&'static str),
    #[error("the collector refused `{op}`: {message}")]
    Refused { op: &'static str, message: String },
}

impl LinkError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Connect { .. } => "COLLECTOR_UNREACHABLE",
            Self::Closed => "COLLECTOR_CLOSED",
            Self::Timeout(_) => "COLLECTOR_TIMEOUT",
            Self::Refused { .. } => "COLLECTOR_REFUSED",
        }
    }

    /// Talking to a collector failed while it ran, whatever went wrong.
    pub fn class(&self) -> dshkit_os::error::ErrorClass {
        dshkit_os::error::ErrorClass::Runtime
    }
}

dshkit_os::classified!(LinkError);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A live channel to a collector.
pub(crate) struct Link {
    writer: tokio::sync::Mutex<dshkit_os::local_socket::WriteHalf>,
    pending: Pending,
    next_id: std::sync::atomic::AtomicU64,
    /// The journal the collector's facts go to.
    pub(crate) journal: Arc<Mutex<Journal>>,
    /// The journal's head, for waiters; stops changing when the link closes.
    pub(crate) head: watch::Receiver<u64>,
    closed: watch::Receiver<bool>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Link {
    pub(crate) async fn connect(socket: &Path) -> Result<Self, LinkError> {
        let (read, write) =
            dshkit_os::local_socket::connect(socket)
                .await
                .map_err(|source| LinkError::Connect {
                    path: socket.display().to_string(),
                    source,
                })?;
        let pending: Pending = Arc::default();
        let journal = Arc::new(Mutex::new(Journal::default()));
        let (head_tx, head) = watch::channel(journal.lock().unwrap_or_else(PoisonError::into_inner).head());
        let (closed_tx, closed) = watch::channel(false);
        let reader = tokio::spawn(read_lines(
            BufReader::new(read),
            Arc::clone(&pending),
            Arc::clone(&journal),
            head_tx,
            closed_tx,
        ));
        Ok(Self {
            writer: tokio::sync::Mutex::new(write),
            pending,
            next_id: std::sync::atomic::AtomicU64::new(1),
            journal,
            head,
            closed,
            reader,
        })
    }

    /// Whether the collector has closed the channel.
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Sends `op` and waits for its answer.
    pub(crate) async fn request(&self, op: &'static str) -> Result<Value, LinkError> {
        self.request_with(op, serde_json::Map::new()).await
    }

    /// Sends `op` with `params` beside it and waits for its answer.
    pub(crate) async fn request_with(
        &self,
        op: &'static str,
        mut params: serde_json::Map<String, Value>,
    ) -> Result<Value, LinkError> {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        params.insert("id".into(), id.into());
        params.insert("op".into(), op.into());
        let line = format!("{}\n", Value::Object(params));
        if self.writer.lock().await.write_all(line.as_bytes()).await.is_err() {
            return Err(LinkError::Closed);
        }
        match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Err(_) => {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                Err(LinkError::Timeout(op))
            }
            Ok(Err(_)) => Err(LinkError::Closed),
            Ok(Ok(Err(message))) => Err(LinkError::Refused { op, message }),
            Ok(Ok(Ok(value))) => Ok(value),
        }
    }
}

async fn read_lines(
    mut reader: BufReader<dshkit_os::local_socket::ReadHalf>,
    pending: Pending,
    journal: Arc<Mutex<Journal>>,
    head: watch::Sender<u64>,
    closed: watch::Sender<bool>,
) {
    let mut line = Vec::new();
    let mut reason = "target-disposed";
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        let Ok(n) = read else { break };
        if n == 0 || line.len() > MAX_LINE_BYTES {
            break;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            tracing::debug!("ignored a line from the collector that is not JSON");
            continue;
        };
        if let Some(fact) = message.get("fact") {
            if fact.get("kind").and_then(Value::as_str) == Some("host-disposed") {
                reason = "host-disposed";
                continue;
            }
            if let Some((at_ms, change)) = to_change(fact) {
                // A run of identical dispatches: one record per dispatch.
                let repeat = fact.get("repeat").and_then(Value::as_u64).unwrap_or(1);
                let seq = journal
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push_repeated(at_ms, change, repeat);
                head.send_replace(seq + 1);
            }
            continue;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            continue;
        };
        let waiter = pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        if let Some(waiter) = waiter {
            let answer = match message.get("error") {
                Some(error) => Err(error.as_str().unwrap_or("error").to_owned()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
    }
    let now = now_ms();
    let seq = journal.lock().unwrap_or_else(PoisonError::into_inner).push(
        now,
        Change::TargetDisposed {
            reason: reason.to_owned(),
        },
    );
    head.send_replace(seq + 1);
    closed.send_replace(true);
    pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A collector fact as a journal change (unknown kinds are skipped).
fn to_change(fact: &Value) -> Option<(u64, Change)> {
    let text = |key: &str| fact.get(key).and_then(Value::as_str).map(str::to_owned);
    let at = fact.get("at").and_then(Value::as_u64).unwrap_or_else(now_ms);
    let change = match fact.get("kind")?.as_str()? {
        "dispatch" => Change::DispatchObserved {
            mode: text("mode")?,
            event: text("name")?,
            argc: fact
                .get("argc")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
        },
        reason @ ("status" | "plugin" | "listener" | "service") => Change::TopologyInvalidated {
            reason: reason.to_owned(),
            fiber: fact
                .get("fiber")
                .or_else(|| fact.get("owner"))
                .and_then(Value::as_i64),
            name: text("name").or_else(|| text("event")),
            state: text("state"),
        },
        "trace" => Change::ProfilerTraceUpdated {
            lease: text("lease")?,
            trace: fact.get("trace").and_then(Value::as_u64)?,
            event: text("event")?,
            listeners: fact
                .get("listeners")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
        },
        "profiler" => Change::ProfilerStatusChanged {
            state: text("state")?,
            lease: text("lease")?,
            event: text("event")?,
            reason: text("reason").unwrap_or_default(),
            restored: text("restored"),
        },
        "dropped" => Change::FactsDropped {
            count: fact.get("count").and_then(Value::as_u64).unwrap_or(0),
        },
        _ => return None,
    };
    Some((at, change))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_is_a_runtime_failure() {
        let table = [
            (
                LinkError::Connect {
                    path: "/run/c.sock".into(),
                    source: std::io::ErrorKind::ConnectionRefused.into(),
                },
                "COLLECTOR_UNREACHABLE",
            ),
            (LinkError::Closed, "COLLECTOR_CLOSED"),
            (LinkError::Timeout("snapshot"), "COLLECTOR_TIMEOUT"),
            (
                LinkError::Refused {
                    op: "snapshot",
                    message: "no".into(),
                },
                "COLLECTOR_REFUSED",
            ),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
            assert_eq!(error.class(), dshkit_os::error::ErrorClass::Runtime, "{error}");
        }
    }
}
