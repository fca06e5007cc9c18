//! MCP over stdio: the recording proxy (byte-for-byte transparent, it only adds
//! latency) and the replaying server (the real server is never started unless
//! passthrough is explicitly asked for).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::server_process::ServerProcess;

use crate::cassette::{Appender, CassetteError, Interaction, Record, RecordMode};
use crate::index::CassetteIndex;
use crate::live_id::{id_place, splice, with_live_id};
use crate::live_request::{LiveRequest, Read};
use crate::matcher::{MatchOptions, Matcher};
use crate::recorder::{Message, Recorder, leads_us};
use crate::redact::Redactor;

#[cfg(unix)]
mod blocking_client;
#[cfg(unix)]
mod poll_relay;
#[cfg(unix)]
use std::os::fd::AsFd;

/// Longest JSON-RPC line accepted from either side (16 MiB).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// How long the server may take to exit once its stdin is closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Longest recorded gap reproduced between a replayed notification and the
/// message after it.
pub const MAX_NOTIFICATION_GAP: Duration = Duration::from_millis(250);
/// Longest wait for the client to read the last notification before the response.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(2);
/// JSON-RPC error code of a replay miss.
pub const MISS_CODE: i64 = -32_001;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EchoError {
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    #[error("failed to start the server `{argv}`: {error}")]
    Spawn { argv: String, error: String },
    #[error("I/O on {what}: {error}")]
    Io { what: &'static str, error: String },
    #[error("a frame longer than {MAX_FRAME_BYTES} bytes on {0}")]
    FrameTooLong(&'static str),
    #[error("passthrough needs the real server's argv")]
    NoLiveServer,
}

fn io(what: &'static str) -> impl Fn(std::io::Error) -> EchoError {
    move |e| EchoError::Io {
        what,
        error: e.to_string(),
    }
}

/// Reads one line (with its newline) into `line`; `Ok(false)` at end of input.
async fn read_frame(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    what: &'static str,
) -> Result<bool, EchoError> {
    line.clear();
    let n = reader
        .take(MAX_FRAME_BYTES as u64 + 1)
        .read_until(b'\n', line)
        .await
        .map_err(io(what))?;
    if n > MAX_FRAME_BYTES {
        return Err(EchoError::FrameTooLong(what));
    }
    Ok(n > 0)
}

fn spawn_server(argv: &[String]) -> Result<(ServerProcess, ChildStdin, BufReader<ChildStdout>), EchoError> {
    let spawn_error = |error: String| EchoError::Spawn {
        argv: argv.join(" "),
        error,
    };
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| spawn_error("empty argv".into()))?;
    let mut child = ServerProcess::spawn(
        Command::new(program)
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit()),
    )
    .map_err(|e| spawn_error(e.to_string()))?;
    let stdin = child.stdin.take().ok_or_else(|| spawn_error("no stdin".into()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| spawn_error("no stdout".into()))?;
    Ok((child, stdin, BufReader::new(stdout)))
}

async fn close_server(child: ServerProcess, stdin: ChildStdin) {
    drop(stdin);
    reap_server(child, EXIT_GRACE).await;
}

/// Waits up to `grace` for the server to exit, then kills it.
async fn reap_server(mut child: ServerProcess, grace: Duration) {
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

// ---------------------------------------------------------------------------
// Recording
// ---------------------------------------------------------------------------

/// What to record.
#[derive(Debug)]
pub struct RecordOptions {
    pub argv: Vec<String>,
    pub cassette: PathBuf,
    pub mode: RecordMode,
    pub redactor: Redactor,
}

/// What a recording did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub interactions: u64,
    pub messages: u64,
    pub raw_lines: u64,
    pub cassette: Option<PathBuf>,
}

/// Redacts every message of `record` in place; returns whether anything changed.
pub fn redact_record(redactor: &Redactor, record: &mut Record) -> bool {
    match record {
        Record::Interaction(i) => {
            let mut changed = redactor.value(&mut i.request);
            for value in i
                .responses
                .iter_mut()
                .chain(i.notifications.iter_mut())
                .chain(i.server_requests.iter_mut())
            {
                changed |= redactor.value(value);
            }
            changed
        }
        Record::Message { message, .. } => redactor.value(message),
        Record::Raw { line } => match redactor.redact(line) {
            std::borrow::Cow::Owned(redacted) if redacted != *line => {
                *line = redacted;
                true
            }
            _ => false,
        },
    }
}

/// Runs `options.argv` behind a transparent proxy between `client_in` and
/// `client_out`, recording every exchange into the cassette, until the client
/// closes its input or `stop` resolves (a signal). Either way, what passed is
/// recorded and the cassette finished before this returns; on `stop` the
/// server is killed at once.
pub async fn record(
    client_in: impl AsyncBufRead + Unpin + Send + 'static,
    mut client_out: impl AsyncWrite + Unpin + Send + 'static,
    options: RecordOptions,
    stop: impl std::future::Future,
) -> Result<RecordSummary, EchoError> {
    refuse_to_overwrite(&options)?;
    let (child, mut server_in, mut server_out) = spawn_server(&options.argv)?;
    let recording = Recording::start(options)?;
    // Both directions run in this one task, so they interleave only where one
    // awaits (see `relay`): a peer's answer is always recorded after what it answers.
    let relayed = {
        let queue = &recording.queue;
        let downstream = relay(
            &mut server_out,
            &mut client_out,
            queue,
            Side::Server,
            ("the server's stdout", "the client's stdout"),
        );
        let upstream = async {
            let mut client_in = client_in;
            let forwarded = relay(
                &mut client_in,
                &mut server_in,
                queue,
                Side::Client,
                ("the client's stdin", "the server's stdin"),
            )
            .await;
            close_server(child, server_in).await;
            forwarded
        };
        // On `stop` both relays are dropped, the server (owned by `upstream`)
        // is killed with them, and what they queued is still recorded below.
        tokio::select! {
            relayed = async { tokio::join!(upstream, downstream) } => Some(relayed),
            _ = stop => None,
        }
    };
    let summary = recording.finish().await?;
    if let Some((upstream, downstream)) = relayed {
        upstream?;
        downstream?;
    }
    Ok(summary)
}

/// Like [`record`], with this process's stdin and stdout as the client. Where
/// they are pipes or sockets that [`poll_relay`] serves (Unix), the frames pass
/// through its poll(2) loop on a thread of its own; elsewhere through [`record`]
/// over the streams `streams` makes.
pub async fn record_stdio<R, W>(
    streams: impl FnOnce() -> (R, W),
    options: RecordOptions,
    stop: impl std::future::Future,
) -> Result<RecordSummary, EchoError>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    #[cfg(unix)]
    if let Some(client) = poll_relay::ClientFds::of_this_process() {
        return record_polled(client, options, stop).await;
    }
    let (client_in, client_out) = streams();
    record(client_in, client_out, options, stop).await
}

/// [`record`] through the poll relay. On `stop` it closes the relay's stop
/// pipe: the relay's thread returns at once (handing over what it batched), the
/// server is killed, and the recording is finished. Dropping this future closes
/// the pipe too, but leaves what was not written yet.
#[cfg(unix)]
async fn record_polled(
    client: poll_relay::ClientFds<'static>,
    options: RecordOptions,
    stop: impl std::future::Future,
) -> Result<RecordSummary, EchoError> {
    refuse_to_overwrite(&options)?;
    let (child, server_in, server_out) = spawn_server(&options.argv)?;
    let server_in = server_in.into_owned_fd().map_err(io("the server's stdin"))?;
    let server_out = server_out
        .into_inner()
        .into_owned_fd()
        .map_err(io("the server's stdout"))?;
    let recording = Recording::start(options)?;
    // Closing `stopper` ends the relay.
    let (stop_pipe, stopper) = std::io::pipe().map_err(io("a stop pipe"))?;
    let mut stopper = Some(stopper);
    let queue = recording.queue.clone();
    let relay = tokio::task::spawn_blocking(move || {
        poll_relay::relay(
            client,
            server_in,
            server_out,
            stop_pipe.as_fd(),
            EXIT_GRACE,
            &queue,
        )
    });
    tokio::pin!(relay);
    let joined = tokio::select! {
        joined = relay.as_mut() => joined,
        _ = stop => {
            stopper = None;
            relay.as_mut().await
        }
    };
    drop(stopper);
    let relayed = joined.unwrap_or_else(|_| {
        Err(EchoError::Io {
            what: "the relay thread",
            error: "it panicked".into(),
        })
    });
    // The relay closed the server's stdin when the client's input ended.
    let grace = match relayed {
        Ok(poll_relay::Ended::Finished) => EXIT_GRACE,
        _ => Duration::ZERO,
    };
    reap_server(child, grace).await;
    let summary = recording.finish().await?;
    relayed?;
    Ok(summary)
}

fn refuse_to_overwrite(options: &RecordOptions) -> Result<(), EchoError> {
    if options.mode == RecordMode::Once && options.cassette.exists() {
        return Err(CassetteError::Exists(options.cassette.clone()).into());
    }
    Ok(())
}

/// The recorder and its thread, as a recording proxy shares them between its
/// relay and the thread (see [`Queue`]).
struct Recording {
    queue: Queue,
    thread: std::thread::JoinHandle<()>,
}

impl Recording {
    fn start(options: RecordOptions) -> Result<Self, EchoError> {
        // The proxy forwards each frame before it records it. The poll relay
        // gathers frames into batches for a thread of its own (see
        // `poll_relay::Batch`); the event loop's relay records a small frame on
        // the spot when nothing waits before it, and queues a large one (and any
        // frame behind it). The queue is bounded in bytes and a full queue holds
        // the forwarding back: a frame is never dropped.
        let (frames, queue) = tokio::sync::mpsc::unbounded_channel::<Vec<Seen>>();
        let shared = Arc::new(SharedRecorder {
            recorder: std::sync::Mutex::new(Recorder::new(options, "stdio")),
            queued: AtomicUsize::new(0),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("echo-recorder".into())
                .spawn(move || record_frames(queue, &shared))
                .map_err(io("a thread for the recording"))?
        };
        Ok(Self {
            queue: Queue {
                frames,
                budget: Arc::new(tokio::sync::Semaphore::new(RECORD_QUEUE_BYTES)),
                shared,
            },
            thread,
        })
    }

    /// Lets the thread record what is queued, then writes what is left.
    async fn finish(self) -> Result<RecordSummary, EchoError> {
        let Self { queue, thread } = self;
        let Queue { frames, shared, .. } = queue;
        drop(frames);
        let panicked = || EchoError::Io {
            what: "the recording thread",
            error: "it panicked".into(),
        };
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(panicked)?;
        shared.recorder.lock().map_err(|_| panicked())?.finish()
    }
}

/// Client requests waiting for their answer, at most, while recording; past it
/// the oldest is recorded as an unanswered message.
pub const MAX_PENDING_REQUESTS: usize = 4096;
/// Bytes of frames forwarded but not yet recorded, at most.
pub const RECORD_QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// Longest frame the event loop's relay records on its own thread (when nothing
/// is queued before it); longer ones go to the recording thread. Recording a
/// frame this long takes well under a millisecond.
pub const INLINE_RECORD_BYTES: usize = 16 * 1024;
/// Most frames the poll relay gathers before it hands them to the recording
/// thread. Recorded one at a time between the server's and the client's turns,
/// a frame found the recorder's code and data evicted from the caches each time;
/// a batch pays that once.
pub const RECORD_BATCH_FRAMES: usize = 64;
/// Most bytes of frames in one batch.
pub const RECORD_BATCH_BYTES: usize = 1024 * 1024;
/// A batch is handed over once no frame has passed for this long…
pub const RECORD_BATCH_IDLE: Duration = Duration::from_millis(10);
/// …and at the latest once its first frame is this old, however busy the relay.
pub const RECORD_BATCH_AGE: Duration = Duration::from_millis(100);

/// Which way a frame went through the proxy.
#[derive(Debug, Clone, Copy)]
enum Side {
    Client,
    Server,
}

/// A forwarded frame on its way to the recording thread, with when it passed
/// and its share of the queue's byte budget, returned once it is recorded (none
/// only for the small frame that [`relay`] describes).
struct Seen {
    side: Side,
    frame: Vec<u8>,
    at: Instant,
    _room: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The recorder's queue, as the proxy's two directions share it. The
/// recording thread ends once every clone of it is dropped.
#[derive(Clone)]
struct Queue {
    frames: tokio::sync::mpsc::UnboundedSender<Vec<Seen>>,
    /// Bytes the queue may still take ([`RECORD_QUEUE_BYTES`] in all).
    budget: Arc<tokio::sync::Semaphore>,
    shared: Arc<SharedRecorder>,
}

/// The recorder, used by the proxy for small frames and by the recording
/// thread for queued ones.
struct SharedRecorder {
    recorder: std::sync::Mutex<Recorder>,
    /// Frames queued and not yet recorded. Only the proxy adds to it, and the
    /// thread takes a batch's frames off after it let go of the recorder, so
    /// the proxy that reads 0 records in order and finds the recorder free.
    queued: AtomicUsize,
}

impl Queue {
    /// Whether a frame of `len` bytes can be recorded on the spot now: it is
    /// small and nothing waits before it.
    fn takes_inline(&self, len: usize) -> bool {
        len <= INLINE_RECORD_BYTES && self.shared.queued.load(Ordering::Acquire) == 0
    }

    /// The share of the queue's budget a frame of `len` bytes must reserve
    /// before it is forwarded; `None` if it will be recorded on the spot.
    fn room_needed(&self, len: usize) -> Option<u32> {
        (!self.takes_inline(len)).then(|| queue_cost(len))
    }

    /// Room for a frame of `len` bytes if the queue has it now.
    #[cfg(unix)]
    fn try_reserve(&self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.budget)
            .try_acquire_many_owned(queue_cost(len))
            .ok()
    }

    /// Room for a frame of `len` bytes, waited for on a thread that may block.
    #[cfg(unix)]
    fn reserve_blocking(&self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        futures::executor::block_on(Arc::clone(&self.budget).acquire_many_owned(queue_cost(len))).ok()
    }

    /// Queues `frames`, in the order they passed, for the recording thread.
    #[cfg(unix)]
    fn enqueue_batch(&self, frames: Vec<Seen>) {
        if frames.is_empty() {
            return;
        }
        self.shared.queued.fetch_add(frames.len(), Ordering::AcqRel);
        let _ = self.frames.send(frames);
    }

    /// Records `frame`, forwarded at `at`, on the spot if [`Self::takes_inline`];
    /// `false` if it must be [queued](Self::enqueue). Comes right after the
    /// frame's write, with nothing read in between, so that an answer to it is
    /// recorded after it.
    fn record_inline(&self, side: Side, frame: &[u8], at: Instant) -> bool {
        if !self.takes_inline(frame.len()) {
            return false;
        }
        // A recorder left poisoned by a panic is reported when the recording ends.
        if let Ok(mut recorder) = self.shared.recorder.lock() {
            record_frame(&mut recorder, side, frame, at);
        }
        true
    }

    /// Queues for the recording thread a frame that [`Self::record_inline`]
    /// refused, with the `room` reserved for it.
    fn enqueue(
        &self,
        side: Side,
        frame: Vec<u8>,
        at: Instant,
        room: Option<tokio::sync::OwnedSemaphorePermit>,
    ) {
        // Without room only if the other direction queued a frame while this
        // small one was written: at most one such frame per queued one, and it
        // takes room if there is any.
        let room = room.or_else(|| {
            Arc::clone(&self.budget)
                .try_acquire_many_owned(queue_cost(frame.len()))
                .ok()
        });
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        let _ = self.frames.send(vec![Seen {
            side,
            frame,
            at,
            _room: room,
        }]);
    }
}

/// A frame's share of the queue's byte budget.
fn queue_cost(len: usize) -> u32 {
    u32::try_from(len.clamp(1, RECORD_QUEUE_BYTES)).unwrap_or(u32::MAX)
}

/// Forwards every frame of `from` to `to` and records it (see
/// [`Queue::record_inline`]) or queues it for the recording thread, until `from`
/// ends. Room in the queue is reserved before a frame that will be queued is
/// forwarded (a full queue holds the proxy back); the frame is recorded or
/// queued with no await after its last byte is written, so an answer the peer
/// reads only after that is recorded after it. `what`: the two streams, named
/// for errors.
async fn relay(
    from: &mut (impl AsyncBufRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    queue: &Queue,
    side: Side,
    what: (&'static str, &'static str),
) -> Result<(), EchoError> {
    let mut frame = Vec::new();
    while read_frame(from, &mut frame, what.0).await? {
        let room = match queue.room_needed(frame.len()) {
            Some(cost) => Arc::clone(&queue.budget).acquire_many_owned(cost).await.ok(),
            None => None,
        };
        let at = Instant::now();
        to.write_all(&frame).await.map_err(io(what.1))?;
        // No await between the write and this.
        if !queue.record_inline(side, &frame, at) {
            queue.enqueue(side, std::mem::take(&mut frame), at, room);
        }
        to.flush().await.map_err(io(what.1))?;
    }
    Ok(())
}

/// The recording thread: records each queued frame in the order it passed,
/// until the queue closes; a batch's records reach the cassette in one write.
fn record_frames(mut queue: tokio::sync::mpsc::UnboundedReceiver<Vec<Seen>>, shared: &SharedRecorder) {
    while let Some(batch) = queue.blocking_recv() {
        if let Ok(mut recorder) = shared.recorder.lock() {
            recorder.hold_writes();
            for seen in &batch {
                record_frame(&mut recorder, seen.side, &seen.frame, seen.at);
            }
            recorder.write_held();
        }
        let count = batch.len();
        drop(batch); // its room in the queue
        shared.queued.fetch_sub(count, Ordering::AcqRel);
    }
}

/// Parses one frame that passed the proxy at `at`, attributes it and writes
/// what it completes.
fn record_frame(recorder: &mut Recorder, side: Side, frame: &[u8], at: Instant) {
    let text = String::from_utf8_lossy(frame);
    match (side, Message::parse(&text, recorder.redactor())) {
        (Side::Client, Some(message)) => recorder.on_client_at(message, at),
        (Side::Server, Some(message)) => recorder.on_server_at(message, at),
        (Side::Server, None) => {
            let text = text.trim_end_matches(['\n', '\r']);
            if !text.is_empty() {
                recorder.raw_line(text);
            }
        }
        (Side::Client, None) => {}
    }
}

// ---------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------

/// How recorded timing is reproduced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// Answer at once.
    None,
    /// Wait the recorded time times `scale`, at most `cap`.
    Recorded { scale: f64, cap: Duration },
}

/// What to do when a request has no recorded answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnMiss {
    /// A JSON-RPC error with the near-miss explanation (the default).
    Error,
    /// Ask the real server (started on the first miss) and append its answer to the
    /// cassette, marked `origin: live`.
    Passthrough(Vec<String>),
}

/// What to replay.
#[derive(Debug)]
pub struct ReplayOptions {
    pub cassette: PathBuf,
    pub timing: Timing,
    pub on_miss: OnMiss,
    pub annotate: bool,
    pub matching: MatchOptions,
    pub redactor: Redactor,
    /// Where the frames go, for the delivery check before a response.
    pub peer: Peer,
}

/// Where replayed frames go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// This process's stdout: a pipe or a socket whose unread bytes can be counted.
    Stdout,
    /// A stream whose reading cannot be observed (in-memory streams in tests).
    Unobserved,
}

/// What a replay did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySummary {
    pub hits: u64,
    pub misses: u64,
    pub passthroughs: u64,
    pub parse_errors: u64,
    pub warnings: Vec<String>,
}

pub(crate) struct Live {
    child: ServerProcess,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    appender: Appender,
}

/// A replay between frames: the cassette's pools and what was answered.
struct Replayer {
    matcher: Matcher,
    summary: ReplaySummary,
    /// The cassette's file name, for annotations.
    cassette_id: String,
    /// What a passthrough opens the live server with.
    handshake: Option<Value>,
    /// The highest ordinal in the cassette (passthroughs are numbered after it).
    max_ordinal: u64,
}

/// What replay does about one frame from the client.
enum Step<'f> {
    /// Nothing: a blank line, a notification, an answer to a server request.
    Nothing,
    /// Send this line (newline included): the frame was not JSON.
    Line(Vec<u8>),
    /// A hit: send what it recorded.
    Hit(Outgoing),
    /// No recorded answer for `request`.
    Miss(LiveRequest<'f>, crate::matcher::Miss),
}

impl Replayer {
    /// Opens the cassette; `options.redactor` takes the roots its header names
    /// (see [`with_cassette_paths`]).
    fn open(options: &mut ReplayOptions) -> Result<Self, EchoError> {
        let index = CassetteIndex::open(&options.cassette, &options.matching)?;
        with_cassette_paths(&index.header, &mut options.redactor);
        for warning in &index.warnings {
            tracing::warn!("{}: {warning}", options.cassette.display());
        }
        Ok(Self {
            summary: ReplaySummary {
                warnings: index.warnings.clone(),
                ..ReplaySummary::default()
            },
            cassette_id: options
                .cassette
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            handshake: index.handshake.clone(),
            max_ordinal: index.max_ordinal,
            matcher: Matcher::indexed(index, options.matching.clone()),
        })
    }

    /// What to do about `frame`; counts hits and parse errors (the caller counts
    /// misses and passthroughs, which it decides between).
    fn step<'f>(&mut self, frame: &'f [u8], options: &ReplayOptions) -> Step<'f> {
        if frame.iter().all(u8::is_ascii_whitespace) {
            return Step::Nothing;
        }
        let request = match LiveRequest::read(frame, &options.redactor) {
            Read::Request(request) => request,
            Read::NoReply => return Step::Nothing,
            Read::NotJson => {
                self.summary.parse_errors += 1;
                let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32_700, "message": "Parse error: not JSON"}});
                return Step::Line(json_line(&error));
            }
        };
        match outgoing(&mut self.matcher, &request, options, &self.cassette_id) {
            Ok(outgoing) => {
                self.summary.hits += 1;
                Step::Hit(outgoing)
            }
            Err(miss) => Step::Miss(request, miss),
        }
    }
}

/// Makes `redactor` normalise this machine's paths of the roots `header`
/// names, and no others: live requests are keyed as the recording was, and
/// what is appended holds the same tokens. A version 1 cassette names none.
pub(crate) fn with_cassette_paths(header: &crate::cassette::Header, redactor: &mut Redactor) {
    let paths = header.path_roots();
    if *redactor.paths() != paths {
        redactor.set_paths(paths);
    }
}

/// The error line a miss of `request` is answered with.
fn miss_line(request: &LiveRequest<'_>, miss: &crate::matcher::Miss) -> Vec<u8> {
    json_line(&json!({"jsonrpc": "2.0", "id": request.id(), "error": {
        "code": MISS_CODE, "message": format!("echo: no recorded answer: {}", miss.message()), "data": miss.data()
    }}))
}

/// `message` as one line, its newline included.
fn json_line(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("JSON serializes");
    line.push(b'\n');
    line
}

/// Answers MCP requests from `client_in` on `client_out` out of the cassette.
pub async fn replay(
    mut client_in: impl AsyncBufRead + Unpin,
    mut client_out: impl AsyncWrite + Unpin,
    mut options: ReplayOptions,
) -> Result<ReplaySummary, EchoError> {
    let mut replayer = Replayer::open(&mut options)?;
    let mut live: Option<Live> = None;
    let mut ordinal = replayer.max_ordinal;
    let mut frame = Vec::new();
    while read_frame(&mut client_in, &mut frame, "the client's stdin").await? {
        match replayer.step(&frame, &options) {
            Step::Nothing => {}
            Step::Line(error) => write_line(&mut client_out, &error).await?,
            Step::Hit(outgoing) => answer(&mut client_out, outgoing, options.peer).await?,
            Step::Miss(request, miss) => {
                let (OnMiss::Passthrough(argv), Ok(tree)) = (&options.on_miss, request.tree()) else {
                    replayer.summary.misses += 1;
                    write_line(&mut client_out, &miss_line(&request, &miss)).await?;
                    continue;
                };
                replayer.summary.passthroughs += 1;
                if live.is_none() {
                    live = Some(start_live(argv, replayer.handshake.as_ref(), &options.cassette).await?);
                }
                let server = live.as_mut().expect("just started");
                ordinal += 1;
                let interaction = pass_through(server, tree, ordinal, &mut client_out, &options).await?;
                let mut record = Record::Interaction(interaction);
                let _ = redact_record(&options.redactor, &mut record);
                server.appender.append(&record)?;
            }
        }
    }
    if let Some(server) = live {
        server.finish().await?;
    }
    Ok(replayer.summary)
}

/// [`replay`] without passthrough, over blocking streams: a frame is read,
/// answered and written with no event loop between, and `runtime` only runs
/// the answers that wait (recorded timing, notifications before a response).
#[cfg(unix)]
fn replay_blocking(
    input: blocking_client::Blocking,
    mut output: blocking_client::Blocking,
    options: &mut ReplayOptions,
    runtime: &tokio::runtime::Runtime,
) -> Result<ReplaySummary, EchoError> {
    use std::io::{BufRead, Read as _};
    let mut replayer = Replayer::open(options)?;
    let options = &*options;
    let mut input = std::io::BufReader::new(input);
    let mut frame = Vec::new();
    let write = |output: &mut blocking_client::Blocking, line: &[u8]| {
        std::io::Write::write_all(output, line).map_err(io("the client's stdout"))
    };
    loop {
        frame.clear();
        let read = (&mut input)
            .take(MAX_FRAME_BYTES as u64 + 1)
            .read_until(b'\n', &mut frame)
            .map_err(io("the client's stdin"))?;
        if read == 0 {
            return Ok(replayer.summary);
        }
        if read > MAX_FRAME_BYTES {
            return Err(EchoError::FrameTooLong("the client's stdin"));
        }
        match replayer.step(&frame, options) {
            Step::Nothing => {}
            Step::Line(error) => write(&mut output, &error)?,
            Step::Hit(outgoing) if outgoing.delay.is_none() && outgoing.notifications.is_empty() => {
                for mut response in outgoing.responses {
                    response.push(b'\n');
                    write(&mut output, &response)?;
                }
            }
            Step::Hit(outgoing) => runtime.block_on(answer(&mut output, outgoing, options.peer))?,
            Step::Miss(request, miss) => {
                replayer.summary.misses += 1;
                write(&mut output, &miss_line(&request, &miss))?;
            }
        }
    }
}

/// Like [`replay`], with this process's stdin and stdout as the client. Without
/// passthrough (on Unix), replay runs on a thread of its own that blocks in
/// `read` between requests ([`blocking_client`]); with it, or elsewhere, on the
/// event loop over the streams `streams` makes. Dropping this future (on a
/// signal) leaves that thread in `read` until the process exits: it holds
/// nothing to close or flush, as a hit writes nothing but the answer.
pub async fn replay_stdio<R, W>(
    streams: impl FnOnce() -> (R, W),
    options: ReplayOptions,
) -> Result<ReplaySummary, EchoError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    #[cfg(unix)]
    if !matches!(options.on_miss, OnMiss::Passthrough(_))
        && let Some((input, output)) = blocking_client::of_this_process()
    {
        return replay_on_thread(input, output, options).await;
    }
    let (client_in, client_out) = streams();
    replay(client_in, client_out, options).await
}

/// [`replay`] over blocking streams, on a thread with a runtime of its own (for
/// the recorded delays).
#[cfg(unix)]
async fn replay_on_thread(
    input: blocking_client::Blocking,
    output: blocking_client::Blocking,
    mut options: ReplayOptions,
) -> Result<ReplaySummary, EchoError> {
    let (done, replayed) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("echo-replay".into())
        .spawn(move || {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map_err(io("the replay thread's runtime"))
                .and_then(|runtime| replay_blocking(input, output, &mut options, &runtime));
            let _ = done.send(result);
        })
        .map_err(io("the replay thread"))?;
    replayed.await.unwrap_or_else(|_| {
        Err(EchoError::Io {
            what: "the replay thread",
            error: "it ended without a result".into(),
        })
    })
}

impl Live {
    /// Appends one passthrough to the cassette, redacted.
    pub(crate) fn append(&mut self, interaction: Interaction, redactor: &Redactor) -> Result<(), EchoError> {
        let mut record = Record::Interaction(interaction);
        let _ = redact_record(redactor, &mut record);
        self.appender.append(&record)?;
        Ok(())
    }

    /// Closes the cassette and stops the server.
    pub(crate) async fn finish(self) -> Result<(), EchoError> {
        self.appender.finish()?;
        close_server(self.child, self.stdin).await;
        Ok(())
    }
}

/// What replaying `interaction` for the live request `message` (id `id`) sends:
/// its notifications (progress tokens rewritten to the live request's), then its
/// response(s) with the live id, annotated when asked.
fn playback(
    interaction: &Interaction,
    message: &Value,
    id: &Value,
    options: &ReplayOptions,
    cassette_id: &str,
) -> (Vec<Value>, Vec<Value>) {
    let notifications = with_live_token(
        interaction.notifications.clone(),
        &message["params"]["_meta"]["progressToken"],
    );
    let responses = interaction
        .responses
        .iter()
        .map(|response| {
            let mut response = response.clone();
            response["id"] = id.clone();
            if options.annotate {
                annotate(
                    &mut response,
                    cassette_id,
                    interaction,
                    "hit",
                    message,
                    &options.matching,
                );
            }
            response
        })
        .collect();
    (notifications, responses)
}

/// Recorded `notifications` with the live request's progress `token`.
fn with_live_token(mut notifications: Vec<Value>, token: &Value) -> Vec<Value> {
    if !token.is_null() {
        for notification in &mut notifications {
            if !notification["params"]["progressToken"].is_null() {
                notification["params"]["progressToken"] = token.clone();
            }
        }
    }
    notifications
}

/// The recorded delay (`ms` from request to response) under `timing`.
fn recorded_delay(ms: u64, timing: Timing) -> Option<Duration> {
    match timing {
        Timing::None => None,
        Timing::Recorded { scale, cap } => Some(Duration::from_millis(ms).mul_f64(scale.max(0.0)).min(cap)),
    }
}

/// How long to wait after each of `count` replayed notifications: the recorded
/// gap (from `leads`, each notification's lead on the response in µs) to the
/// next notification or, after the last one, to the response; scaled like the
/// rest of the timing and at most [`MAX_NOTIFICATION_GAP`]. Zero for cassettes
/// recorded without the gaps.
fn notification_gaps(leads: &[u64], count: usize, timing: Timing) -> Vec<Duration> {
    if leads.len() != count {
        return vec![Duration::ZERO; count];
    }
    let scale = match timing {
        Timing::None => 1.0,
        Timing::Recorded { scale, .. } => scale.max(0.0),
    };
    leads
        .iter()
        .enumerate()
        .map(|(i, lead)| {
            let next = leads.get(i + 1).copied().unwrap_or(0);
            Duration::from_micros(lead.saturating_sub(next))
                .mul_f64(scale)
                .min(MAX_NOTIFICATION_GAP)
        })
        .collect()
}

/// The part of a cassette line a replay hit sends. The request is skipped
/// unread and each response is kept as its recorded text: a hit builds no JSON
/// tree but the (usually absent) notifications.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply<'a> {
    #[serde(borrow)]
    responses: Vec<&'a RawValue>,
    #[serde(default)]
    notifications: Vec<Value>,
    #[serde(default)]
    notification_lead_us: Vec<u64>,
    ms: u64,
}

/// What replay sends for one hit, in order, and the pauses between.
pub(crate) struct Outgoing {
    /// Before anything (the recorded time to the response, under `--timing`).
    pub(crate) delay: Option<Duration>,
    pub(crate) notifications: Vec<Value>,
    /// After each notification.
    pub(crate) gaps: Vec<Duration>,
    /// Each response: one JSON line, without its newline.
    pub(crate) responses: Vec<Vec<u8>>,
}

/// What replay (over stdio or HTTP) sends for the live `request`: the recorded
/// answer `matcher` finds for it, or why there is none. Annotated answers are
/// built as JSON trees (their result gains `_meta`); the others copy the
/// recorded responses' text with the live id put in.
pub(crate) fn outgoing(
    matcher: &mut Matcher,
    request: &LiveRequest<'_>,
    options: &ReplayOptions,
    cassette_id: &str,
) -> Result<Outgoing, crate::matcher::Miss> {
    // Most requests are keyed from their text; the rest, and every miss (which
    // `position_of` leaves as it was), go through the tree.
    let found = request
        .key(&options.matching, &options.redactor)
        .and_then(|(key, method)| matcher.position_of(&key, method));
    let position = match found {
        Some(position) => position,
        None => matcher.find_position(tree_of(request)?, Some(&options.redactor))?,
    };
    let matcher = &*matcher;
    let paths = options.redactor.paths();
    let mut line = Vec::new();
    if !options.annotate
        && options.timing == Timing::None
        && let Some(response) = matcher.answer(position, &mut line)?
        && let Some(place) = id_place(response)
    {
        let response = splice(response, &place, &request.id_json());
        return Ok(Outgoing {
            delay: None,
            notifications: Vec::new(),
            gaps: Vec::new(),
            responses: vec![expand_paths(paths, response)],
        });
    }
    if options.annotate {
        let interaction: Interaction = matcher.parse(position, &mut line)?;
        let (mut notifications, mut responses) = playback(
            &interaction,
            tree_of(request)?,
            &request.id(),
            options,
            cassette_id,
        );
        for message in notifications.iter_mut().chain(&mut responses) {
            paths.expand_value(message);
        }
        return Ok(Outgoing {
            delay: recorded_delay(interaction.ms, options.timing),
            gaps: notification_gaps(
                &interaction.notification_lead_us,
                notifications.len(),
                options.timing,
            ),
            notifications,
            responses: responses
                .iter()
                .map(|r| serde_json::to_vec(r).expect("JSON serializes"))
                .collect(),
        });
    }
    let reply: Reply<'_> = matcher.parse(position, &mut line)?;
    let mut notifications = if reply.notifications.is_empty() {
        reply.notifications
    } else {
        with_live_token(reply.notifications, request.progress_token())
    };
    for notification in &mut notifications {
        paths.expand_value(notification);
    }
    let id = request.id_json();
    Ok(Outgoing {
        delay: recorded_delay(reply.ms, options.timing),
        gaps: notification_gaps(&reply.notification_lead_us, notifications.len(), options.timing),
        notifications,
        responses: reply
            .responses
            .iter()
            .map(|r| expand_paths(paths, with_live_id(r.get(), &id)))
            .collect(),
    })
}

/// A recorded response's text with this machine's paths where the cassette
/// holds tokens; the same bytes when it holds none.
fn expand_paths(paths: &crate::paths::PathRoots, response: Vec<u8>) -> Vec<u8> {
    match paths.expand_json_text(&response) {
        std::borrow::Cow::Borrowed(_) => response,
        std::borrow::Cow::Owned(expanded) => expanded,
    }
}

/// The tree of the live `request`, or the miss of one that has none.
fn tree_of<'r>(request: &'r LiveRequest<'_>) -> Result<&'r Value, crate::matcher::Miss> {
    request.tree().map_err(|reason| crate::matcher::Miss::Unreadable {
        reason: reason.to_owned(),
    })
}

/// Plays back one hit on stdio. A notification and the response that ends its
/// request never reach the client in one read: clients (the TypeScript SDK among
/// them) handle notifications asynchronously but responses at once, so a
/// progress notification read together with its response is dropped. Before the
/// response, replay waits until the client has read the notifications (bounded
/// by [`DELIVERY_TIMEOUT`]), then keeps the recorded gap.
async fn answer(
    client_out: &mut (impl AsyncWrite + Unpin),
    outgoing: Outgoing,
    peer: Peer,
) -> Result<(), EchoError> {
    if let Some(wait) = outgoing.delay {
        tokio::time::sleep(wait).await;
    }
    let count = outgoing.notifications.len();
    for (index, notification) in outgoing.notifications.iter().enumerate() {
        send(client_out, notification).await?;
        if index + 1 == count {
            until_read(peer).await;
        }
        if !outgoing.gaps[index].is_zero() {
            tokio::time::sleep(outgoing.gaps[index]).await;
        }
    }
    for mut response in outgoing.responses {
        response.push(b'\n');
        write_line(client_out, &response).await?;
    }
    Ok(())
}

/// Waits until the peer has read everything written to it, or
/// [`DELIVERY_TIMEOUT`] passed, or its reading cannot be observed.
async fn until_read(peer: Peer) {
    if peer == Peer::Unobserved {
        return;
    }
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    let mut pause = Duration::from_micros(100);
    while dshkit_os::pipe::unread_by_peer(std::io::stdout()).is_some_and(|unread| unread > 0)
        && Instant::now() < deadline
    {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

async fn send(out: &mut (impl AsyncWrite + Unpin), message: &Value) -> Result<(), EchoError> {
    write_line(out, &json_line(message)).await
}

/// Writes one whole line (its newline included) to the client and flushes it.
async fn write_line(out: &mut (impl AsyncWrite + Unpin), line: &[u8]) -> Result<(), EchoError> {
    out.write_all(line).await.map_err(io("the client's stdout"))?;
    out.flush().await.map_err(io("the client's stdout"))
}

fn annotate(
    response: &mut Value,
    cassette: &str,
    interaction: &Interaction,
    outcome: &str,
    live_request: &Value,
    matching: &MatchOptions,
) {
    if live_request["method"] != "tools/call" {
        return;
    }
    let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    let key = crate::matcher::key(live_request, matching);
    let fingerprint = hex::encode(Sha256::digest(key.as_bytes()));
    let diff = crate::matcher::differing_paths(
        &interaction.request["params"]["arguments"],
        &live_request["params"]["arguments"],
    );
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "dshkit/echo".into(),
            json!({
                "cassette": cassette, "mode": "replay", "ordinal": interaction.ordinal,
                "outcome": outcome, "fingerprint": &fingerprint[..16], "diff": diff,
            }),
        );
    }
}

pub(crate) async fn start_live(
    argv: &[String],
    initialize: Option<&Value>,
    cassette: &std::path::Path,
) -> Result<Live, EchoError> {
    if argv.is_empty() {
        return Err(EchoError::NoLiveServer);
    }
    let (child, mut stdin, mut stdout) = spawn_server(argv)?;
    // The live server needs its own handshake before it answers anything else.
    if let Some(init) = initialize {
        let mut init = init.clone();
        init["id"] = json!("dshkit-echo-init");
        let mut text = serde_json::to_string(&init).expect("JSON");
        text.push('\n');
        stdin
            .write_all(text.as_bytes())
            .await
            .map_err(io("the live server's stdin"))?;
        let mut line = Vec::new();
        while read_frame(&mut stdout, &mut line, "the live server's stdout").await? {
            if serde_json::from_slice::<Value>(&line).is_ok_and(|v| v["id"] == "dshkit-echo-init") {
                break;
            }
        }
        if init["method"] == "initialize" {
            stdin
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                .await
                .map_err(io("the live server's stdin"))?;
        }
    }
    Ok(Live {
        child,
        stdin,
        stdout,
        appender: Appender::open_existing(cassette)?,
    })
}

pub(crate) async fn pass_through(
    server: &mut Live,
    request: &Value,
    ordinal: u64,
    client_out: &mut (impl AsyncWrite + Unpin),
    options: &ReplayOptions,
) -> Result<Interaction, EchoError> {
    let started = Instant::now();
    let mut text = serde_json::to_string(request).expect("JSON");
    text.push('\n');
    server
        .stdin
        .write_all(text.as_bytes())
        .await
        .map_err(io("the live server's stdin"))?;
    server
        .stdin
        .flush()
        .await
        .map_err(io("the live server's stdin"))?;
    let mut notifications = Vec::new();
    let mut notified_at = Vec::new();
    let mut line = Vec::new();
    loop {
        if !read_frame(&mut server.stdout, &mut line, "the live server's stdout").await? {
            return Err(EchoError::Io {
                what: "the live server",
                error: "it closed its stdout before answering".into(),
            });
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if message.get("method").is_none() && message.get("id") == request.get("id") {
            let mut response = message.clone();
            let interaction = Interaction {
                ordinal,
                request: request.clone(),
                responses: vec![message],
                notification_lead_us: leads_us(&notified_at, Instant::now()),
                notifications,
                server_requests: Vec::new(),
                status: None,
                ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                origin: "live".into(),
            };
            if options.annotate {
                let cassette = options
                    .cassette
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                annotate(
                    &mut response,
                    &cassette,
                    &interaction,
                    "passthrough",
                    request,
                    &options.matching,
                );
            }
            send(client_out, &response).await?;
            return Ok(interaction);
        }
        send(client_out, &message).await?;
        if message.get("id").is_none() {
            notifications.push(message);
            notified_at.push(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_keep_their_recorded_distance_to_what_follows_them() {
        // Two progress notifications, 1 s and 300 µs before the response.
        let gaps = notification_gaps(&[1_000_000, 300], 2, Timing::None);
        assert_eq!(gaps, [MAX_NOTIFICATION_GAP, Duration::from_micros(300)]);
        let halved = notification_gaps(
            &[100_000, 300],
            2,
            Timing::Recorded {
                scale: 0.5,
                cap: Duration::from_secs(10),
            },
        );
        assert_eq!(
            halved,
            [Duration::from_micros(49_850), Duration::from_micros(150)]
        );
    }

    /// What `replay` writes for `requests` (one per line) out of a cassette of
    /// `interactions`.
    async fn replayed(interactions: Vec<Value>, requests: &[&str]) -> Vec<Value> {
        replayed_under(
            &crate::cassette::Header::new("stdio"),
            false,
            interactions,
            requests,
        )
        .await
    }

    /// [`replayed`] with the cassette's `header`, annotated or not.
    async fn replayed_under(
        header: &crate::cassette::Header,
        annotate: bool,
        interactions: Vec<Value>,
        requests: &[&str],
    ) -> Vec<Value> {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let mut text = serde_json::to_string(header).unwrap();
        for interaction in interactions {
            text.push('\n');
            text.push_str(&interaction.to_string());
        }
        text.push('\n');
        std::fs::write(&cassette, text).unwrap();
        let options = ReplayOptions {
            cassette,
            timing: Timing::None,
            on_miss: OnMiss::Error,
            annotate,
            matching: MatchOptions::default(),
            redactor: Redactor::new(&[], &[]).unwrap(),
            peer: Peer::Unobserved,
        };
        let input = requests.join("\n");
        let mut out = Vec::new();
        replay(input.as_bytes(), &mut out, options).await.unwrap();
        out.split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn replay_answers_with_the_live_id_and_progress_token_whichever_way_a_request_is_keyed() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let redactor = Redactor::new(&[], &[]).unwrap();
        let mut login = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "login", "arguments": {"token": token}}});
        assert!(redactor.value(&mut login), "the recorded request holds a secret");
        let interactions = vec![
            json!({"type": "interaction", "ordinal": 1,
                "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"n": 1}, "_meta": {"progressToken": "recorded"}}},
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"done": true}}],
                "notifications": [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "recorded", "progress": 1}}],
                "ms": 0}),
            json!({"type": "interaction", "ordinal": 2, "request": login,
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"ok": true}}], "ms": 0}),
        ];
        let login_live = format!(
            r#"{{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{{"name":"login","arguments":{{"token":"{token}"}}}}}}"#
        );
        let out = replayed(
            interactions,
            &[
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"_meta":{"progressToken":"live-7"},"arguments":{"n":1},"name":"slow"}}"#,
                &login_live,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"n":2}}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"n":1e400}}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            ],
        )
        .await;
        assert_eq!(out[0]["params"]["progressToken"], "live-7", "{out:?}");
        assert_eq!(
            out[1],
            json!({"jsonrpc": "2.0", "id": "a", "result": {"done": true}})
        );
        assert_eq!(
            out[2],
            json!({"jsonrpc": "2.0", "id": "b", "result": {"ok": true}}),
            "a live secret meets its recorded placeholder"
        );
        assert_eq!(out[3]["id"], 3);
        assert_eq!(out[3]["error"]["data"]["differingPaths"], json!(["n"]), "{out:?}");
        // JSON with a number no tree holds is a miss that says so, and replay goes on.
        assert_eq!(out[4]["id"], 4);
        assert_eq!(out[4]["error"]["data"]["reason"], "unreadable", "{out:?}");
        assert_eq!(out[5]["id"], 5);
        assert_eq!(out[5]["error"]["data"]["reason"], "not_recorded", "{out:?}");
        assert_eq!(out.len(), 6);
    }

    #[tokio::test]
    async fn a_cassette_recorded_elsewhere_answers_with_the_paths_of_this_directory() {
        // Recorded in another directory: the cassette holds the working
        // directory as its token. The live request names a file here; replay
        // keys it with the token and answers with this directory's path, in
        // the response and in the notification before it.
        let here = std::env::current_dir().unwrap();
        let here = here.to_str().unwrap();
        let interactions = || {
            vec![json!({"type": "interaction", "ordinal": 1,
                "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_text_file",
                    "arguments": {"path": "{{dshkit:cwd}}/notes.txt"}}},
                "responses": [{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "{{dshkit:cwd}}/notes.txt: hello"}]}}],
                "notifications": [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "reading {{dshkit:cwd}}"}}],
                "ms": 0})]
        };
        let live = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"read_text_file","arguments":{{"path":"{here}/notes.txt"}}}}}}"#
        );
        let mut header = crate::cassette::Header::new("stdio");
        header.paths = vec!["cwd".into()];
        for annotate in [false, true] {
            let out = replayed_under(&header, annotate, interactions(), &[&live]).await;
            assert_eq!(out.len(), 2, "{out:?}");
            assert_eq!(out[0]["params"]["data"], format!("reading {here}"));
            assert_eq!(out[1]["id"], 7, "{out:?}");
            assert_eq!(
                out[1]["result"]["content"][0]["text"],
                format!("{here}/notes.txt: hello"),
                "annotated: {annotate}"
            );
        }
        // Without the header's `paths` (format 1) nothing is normalised or
        // expanded: the token is text like any other.
        let old = crate::cassette::Header {
            format_version: 1,
            ..crate::cassette::Header::new("stdio")
        };
        let token = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"{{dshkit:cwd}}/notes.txt"}}}"#;
        let out = replayed_under(&old, false, interactions(), &[&live, token]).await;
        assert_eq!(out[0]["error"]["data"]["reason"], "arguments_differ", "{out:?}");
        assert_eq!(
            out[2]["result"]["content"][0]["text"],
            "{{dshkit:cwd}}/notes.txt: hello"
        );
    }

    /// What replay writes for `requests` out of a cassette of `lines`, under `timing`.
    async fn replay_bytes(lines: &[String], requests: &[String], timing: Timing) -> String {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let header = serde_json::to_string(&crate::cassette::Header::new("stdio")).unwrap();
        std::fs::write(&cassette, format!("{header}\n{}\n", lines.join("\n"))).unwrap();
        let options = ReplayOptions {
            cassette,
            timing,
            on_miss: OnMiss::Error,
            annotate: false,
            matching: MatchOptions::default(),
            redactor: Redactor::new(&[], &[]).unwrap(),
            peer: Peer::Unobserved,
        };
        let mut out = Vec::new();
        replay(requests.join("\n").as_bytes(), &mut out, options)
            .await
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn a_hit_copied_unread_sends_the_bytes_that_reading_it_sends() {
        // Under recorded timing (scaled to nothing) every hit is read as JSON;
        // without, a plain one is copied from where the index found it.
        let responses = [
            r#"[{"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "a \"q\" \u00e9"}]}}]"#,
            r#"[ {"result":{"id":7},"\u0069d":"r-1","jsonrpc":"2.0"} ]"#,
            r#"[{"jsonrpc":"2.0","error":{"code":-1,"message":"no"}}]"#,
            r#"[{"id":1,"result":{}},{"id":1,"result":{"second":true}}]"#,
            r#"[{"id":1,"id":2,"result":{}}]"#,
        ];
        let lines: Vec<String> = responses
            .iter()
            .enumerate()
            .map(|(i, responses)| {
                format!(
                    r#"{{"type":"interaction","ordinal":{i},"request":{{"method":"tools/call","params":{{"name":"t","arguments":{{"n":{i}}}}}}},"responses":{responses},"ms":5}}"#
                )
            })
            .collect();
        let requests: Vec<String> = (0..responses.len())
            .flat_map(|i| {
                [format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t","arguments":{{"n":{i}}}}}}}"#)]
            })
            .chain([r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"t","arguments":{"n":0}}}"#.to_owned()])
            .collect();
        let copied = replay_bytes(&lines, &requests, Timing::None).await;
        let read = replay_bytes(
            &lines,
            &requests,
            Timing::Recorded {
                scale: 0.0,
                cap: Duration::ZERO,
            },
        )
        .await;
        assert_eq!(copied, read);
        let first = copied.lines().next().unwrap();
        assert_eq!(
            first,
            r#"{"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "a \"q\" \u00e9"}]}}"#,
            "the recorded text, spaces and escapes kept"
        );
        assert_eq!(copied.lines().count(), 7, "{copied}");
        assert!(
            copied.lines().last().unwrap().contains(r#""error""#),
            "an answer hit once is used up: {copied}"
        );
    }

    #[test]
    fn a_cassette_without_recorded_gaps_replays_without_pauses() {
        let gaps = notification_gaps(&[], 2, Timing::None);
        assert_eq!(gaps, [Duration::ZERO, Duration::ZERO]);
    }

    #[test]
    fn the_recorder_keeps_when_each_notification_came_before_its_response() {
        let dir = tempfile::tempdir().unwrap();
        let options = RecordOptions {
            argv: Vec::new(),
            cassette: dir.path().join("c.jsonl"),
            mode: RecordMode::Once,
            redactor: Redactor::new(&[], &[]).unwrap(),
        };
        let mut recorder = Recorder::new(options, "stdio");
        recorder.on_client(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "slow", "_meta": {"progressToken": 3}}}));
        recorder.on_server(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 3, "progress": 1}}));
        std::thread::sleep(Duration::from_millis(20));
        recorder.on_server(json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        recorder.finish().unwrap();
        let loaded = crate::cassette::read(&dir.path().join("c.jsonl")).unwrap();
        let interaction = &loaded.cassette.into_interactions()[0];
        assert_eq!(interaction.notifications.len(), 1);
        assert!(
            interaction.notification_lead_us[0] >= 20_000,
            "{:?}",
            interaction.notification_lead_us
        );
    }

    /// A server for the poll relay's tests: it answers each request with an
    /// empty result, `big` with a 4 MiB one, and on `mark` it also creates
    /// the file its argument names.
    #[cfg(unix)]
    const ANSWERING_SERVER: &str = r#"
        const fs = require("fs");
        require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
            const m = JSON.parse(line);
            if (m.id === undefined) return;
            const result = m.method === "big" ? { text: "x".repeat(4 << 20) } : {};
            process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }) + "\n");
            if (m.method === "mark") fs.writeFileSync(process.argv[1], "marked");
        });
    "#;

    /// A recording through the poll relay, its client on a socket.
    #[cfg(unix)]
    struct PollRecording {
        child: crate::server_process::ServerProcess,
        recording: Recording,
        relay: std::thread::JoinHandle<Result<poll_relay::Ended, EchoError>>,
        stopper: std::io::PipeWriter,
        cassette: std::path::PathBuf,
    }

    #[cfg(unix)]
    impl PollRecording {
        /// Records `argv` into `dir`'s cassette; returns the client's end too.
        fn start(dir: &std::path::Path, argv: Vec<String>) -> (Self, std::os::unix::net::UnixStream) {
            use std::os::fd::AsFd;
            let (child, server_in, server_out) = spawn_server(&argv).unwrap();
            let server_in = server_in.into_owned_fd().unwrap();
            let server_out = server_out.into_inner().into_owned_fd().unwrap();
            let cassette = dir.join("c.jsonl");
            let recording = Recording::start(RecordOptions {
                argv,
                cassette: cassette.clone(),
                mode: RecordMode::Once,
                redactor: Redactor::new(&[], &[]).unwrap(),
            })
            .unwrap();
            let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
            let (stop, stopper) = std::io::pipe().unwrap();
            let queue = recording.queue.clone();
            let relay = std::thread::spawn(move || {
                let client = poll_relay::ClientFds::socket(theirs.as_fd(), theirs.as_fd());
                poll_relay::relay(client, server_in, server_out, stop.as_fd(), EXIT_GRACE, &queue)
            });
            let recording = Self {
                child,
                recording,
                relay,
                stopper,
                cassette,
            };
            (recording, ours)
        }

        /// Waits for the relay to end (the client must have shut its input),
        /// then for the server and the recording.
        async fn finish(self) -> (poll_relay::Ended, RecordSummary) {
            let ended = self.relay.join().unwrap().unwrap();
            drop(self.stopper);
            reap_server(self.child, EXIT_GRACE).await;
            (ended, self.recording.finish().await.unwrap())
        }
    }

    /// Waits until `done`, for at most a minute; polls, as a file has no event.
    #[cfg(unix)]
    fn wait_for(what: &str, done: &dyn Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_mins(1);
        while !done() {
            assert!(Instant::now() < deadline, "gave up waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The client on a socket leaves a 4 MiB answer unread. The relay must go
    /// on forwarding what the client sends meanwhile: a relay whose write to
    /// the client blocks would never pass the `mark` request on.
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_poll_relay_forwards_requests_while_the_client_leaves_an_answer_unread() {
        use std::io::{BufRead, Write};

        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("marked");
        let argv: Vec<String> = vec![
            dshkit_test::Peers::get().node().display().to_string(),
            "-e".into(),
            ANSWERING_SERVER.into(),
            marker.display().to_string(),
        ];
        let (recording, mut ours) = PollRecording::start(dir.path(), argv);

        ours.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"big\"}\n")
            .unwrap();
        // The relay has filled the socket: what it holds of the answer waits.
        wait_for("the answer to fill the socket", &|| {
            rustix::io::ioctl_fionread(&ours).unwrap() >= 64 * 1024
        });
        // One request in two writes, a notification, then a last line without
        // its newline.
        ours.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,").unwrap();
        ours.write_all(
            b"\"method\":\"mark\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        )
        .unwrap();
        wait_for("the mark request to reach the server", &|| marker.exists());
        ours.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"last\"}")
            .unwrap();
        ours.shutdown(std::net::Shutdown::Write).unwrap();

        let answers: Vec<Value> = std::io::BufReader::new(&ours)
            .lines()
            .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
            .collect();
        let (ended, summary) = recording.finish().await;

        assert_eq!(ended, poll_relay::Ended::Finished);
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [1, 2, 3], "every answer, in order");
        assert_eq!(answers[0]["result"]["text"].as_str().map(str::len), Some(4 << 20));
        assert_eq!((summary.interactions, summary.messages), (3, 1), "{summary:?}");
    }

    /// Frames wait in a batch while calls follow each other closely; once the
    /// traffic pauses, what passed is recorded without waiting for more.
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_poll_relay_records_what_passed_once_the_traffic_pauses() {
        use std::io::{BufRead, Write};

        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = vec![
            dshkit_test::Peers::get().node().display().to_string(),
            "-e".into(),
            ANSWERING_SERVER.into(),
            dir.path().join("unused").display().to_string(),
        ];
        let (recording, mut ours) = PollRecording::start(dir.path(), argv);
        let mut answers = std::io::BufReader::new(ours.try_clone().unwrap());
        let mut answer = String::new();
        for id in 1..=3 {
            let method = if id == 1 { "initialize" } else { "ping" };
            writeln!(
                ours,
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"}}"
            )
            .unwrap();
            answer.clear();
            answers.read_line(&mut answer).unwrap();
        }
        let cassette = recording.cassette.clone();
        let interactions = || {
            std::fs::read_to_string(&cassette)
                .map_or(0, |text| text.matches("\"type\":\"interaction\"").count())
        };
        wait_for(
            "the three calls in the cassette, the relay still running",
            &|| interactions() == 3,
        );
        assert!(
            !recording.relay.is_finished(),
            "the client has not ended its input"
        );

        ours.shutdown(std::net::Shutdown::Write).unwrap();
        let (ended, summary) = recording.finish().await;
        assert_eq!(ended, poll_relay::Ended::Finished);
        assert_eq!(summary.interactions, 3, "{summary:?}");
    }
}
