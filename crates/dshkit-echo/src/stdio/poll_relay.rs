//! The recording proxy's relay for this process's own stdin and stdout, where
//! they are pipes (Linux) or sockets (Unix): one poll(2) loop on a thread of its
//! own. A call through it costs a few µs of the proxy's CPU; through the event
//! loop of [`super::record::record`], 20-40 µs more, most of it the event loop's code and
//! data coming back into cold caches at every wake-up (docs/echo.md).
//!
//! Each frame is forwarded first, then joins a [`Batch`] for the recording
//! thread before anything more is read, so an answer is always recorded after
//! what it answers. Writes never block: what a side cannot take yet waits in its
//! direction's buffer, that direction reads nothing more until the buffer is
//! gone, and the other direction goes on.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::FileType;
use rustix::io::Errno;

use super::queue::{
    Queue, RECORD_BATCH_AGE, RECORD_BATCH_BYTES, RECORD_BATCH_FRAMES, RECORD_BATCH_IDLE, Seen, Side,
};
use crate::error::EchoError;
use crate::frame::MAX_FRAME_BYTES;

/// Bytes read from a side at a time.
const READ_CHUNK: usize = 64 * 1024;

/// The client's ends, as the relay uses them.
pub(crate) struct ClientFds<'a> {
    input: BorrowedFd<'a>,
    output: Sink<'a>,
}

impl ClientFds<'static> {
    /// This process's stdin and stdout, if the relay can serve them: stdin a
    /// pipe or a socket, stdout a socket or (on Linux) a pipe. `None` leaves
    /// them to the event loop.
    pub(crate) fn of_this_process() -> Option<Self> {
        let kind = |fd| {
            rustix::fs::fstat(fd)
                .ok()
                .map(|stat| FileType::from_raw_mode(stat.st_mode))
        };
        let (input, output) = (rustix::stdio::stdin(), rustix::stdio::stdout());
        if !matches!(kind(input)?, FileType::Fifo | FileType::Socket) {
            return None;
        }
        let output = match kind(output)? {
            FileType::Socket => Sink::Socket(output),
            #[cfg(target_os = "linux")]
            FileType::Fifo => Sink::Pipe(private_nonblocking(output)?),
            _ => return None,
        };
        Some(Self { input, output })
    }
}

#[cfg(test)]
impl<'a> ClientFds<'a> {
    /// The client on the two ends of a socket.
    pub(crate) fn socket(input: BorrowedFd<'a>, output: BorrowedFd<'a>) -> Self {
        Self {
            input,
            output: Sink::Socket(output),
        }
    }
}

/// The pipe `fd` opened again through /proc: non-blocking writes without
/// touching the open file description that others (a shell, the server's
/// inherited stderr) may share.
#[cfg(target_os = "linux")]
fn private_nonblocking(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let reopened = rustix::fs::open(
        path,
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&reopened).ok()?;
    (FileType::from_raw_mode(stat.st_mode) == FileType::Fifo).then_some(reopened)
}

/// Where a direction writes, without ever blocking.
enum Sink<'a> {
    /// A pipe whose open file description is non-blocking.
    Pipe(OwnedFd),
    /// A socket: each send is non-blocking on its own.
    Socket(BorrowedFd<'a>),
}

impl Sink<'_> {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Sink::Pipe(fd) => fd.as_fd(),
            Sink::Socket(fd) => *fd,
        }
    }

    /// Writes what the other end takes now: 0 bytes if it takes nothing.
    fn write(&self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = match self {
            Sink::Pipe(fd) => rustix::io::write(fd, bytes),
            Sink::Socket(fd) => rustix::net::send(fd, bytes, rustix::net::SendFlags::DONTWAIT),
        };
        match written {
            Err(Errno::AGAIN | Errno::INTR) => Ok(0),
            other => other.map_err(Into::into),
        }
    }
}

/// How the relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Both sides ended: the client's input (the server's stdin was then
    /// closed) and the server's output, and the client took all of it.
    Finished,
    /// The server still had its stdout open `grace` after its stdin was closed.
    Lingered,
    /// The stop pipe was closed.
    Stopped,
}

/// Relays frames between `client` and the server's pipes (both non-blocking),
/// recording each through `queue`, until both sides end ([`Ended`]). The
/// server's stdin is closed once the client's input ended and all of it was
/// written. `stop`: the read end of a pipe whose closing ends the relay.
#[expect(
    clippy::needless_pass_by_value,
    reason = "the relay owns its ends: they close when it returns"
)]
pub(crate) fn relay(
    client: ClientFds<'_>,
    server_in: OwnedFd,
    server_out: OwnedFd,
    stop: BorrowedFd<'_>,
    grace: Duration,
    queue: &Queue,
) -> Result<Ended, EchoError> {
    let mut up = Direction::new(Side::Client, ("the client's stdin", "the server's stdin"));
    let mut down = Direction::new(Side::Server, ("the server's stdout", "the client's stdout"));
    let mut server_in = Some(Sink::Pipe(server_in));
    let mut chunk = vec![0; READ_CHUNK];
    let mut batch = Batch::new(queue);
    let mut deadline = None;
    loop {
        if server_in.is_some() && !up.open && up.drained() {
            server_in = None;
            deadline = Some(Instant::now() + grace);
        }
        if server_in.is_none() && !down.open && down.drained() {
            return Ok(Ended::Finished);
        }
        // The grace is for the server to close its stdout; after that, the
        // client may take its time to read the rest.
        let now = Instant::now();
        let grace_left = deadline
            .filter(|_| down.open)
            .map(|deadline: Instant| deadline.saturating_duration_since(now));
        if grace_left.is_some_and(|left| left.is_zero()) {
            return Ok(Ended::Lingered);
        }
        let batch_left = batch.due().map(|due| due.saturating_duration_since(now));
        let timeout = [grace_left, batch_left].into_iter().flatten().min().map(|left| {
            Timespec::try_from(left).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            })
        });

        let mut fds = Vec::with_capacity(5);
        let stopping = watch(&mut fds, stop, PollFlags::IN, true);
        let client_in = watch(&mut fds, client.input, PollFlags::IN, up.wants_input());
        let server_out_fd = server_out.as_fd();
        let server_out_in = watch(&mut fds, server_out_fd, PollFlags::IN, down.wants_input());
        let client_out = watch(&mut fds, client.output.fd(), PollFlags::OUT, !down.drained());
        let server_in_out = match &server_in {
            Some(sink) => watch(&mut fds, sink.fd(), PollFlags::OUT, !up.drained()),
            None => None,
        };
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(e) => return Err(EchoError::io("poll")(e.into())),
        }
        if batch.due().is_some_and(|due| Instant::now() >= due) {
            batch.hand_over();
        }
        let ready = |at: Option<usize>| at.is_some_and(|at| !fds[at].revents().is_empty());
        let (stopping, client_in, server_out_in, client_out, server_in_out) = (
            ready(stopping),
            ready(client_in),
            ready(server_out_in),
            ready(client_out),
            ready(server_in_out),
        );
        drop(fds);

        if stopping {
            return Ok(Ended::Stopped);
        }
        if client_out {
            down.flush(&client.output)?;
        }
        if let Some(sink) = server_in.as_ref() {
            if server_in_out {
                up.flush(sink)?;
            }
            if client_in {
                up.read(client.input, sink, &mut chunk, &mut batch)?;
            }
        }
        if server_out_in {
            down.read(server_out.as_fd(), &client.output, &mut chunk, &mut batch)?;
        }
    }
}

/// Adds `fd` to the poll set if `wanted`; returns where it is.
fn watch<'fd>(
    fds: &mut Vec<PollFd<'fd>>,
    fd: BorrowedFd<'fd>,
    flags: PollFlags,
    wanted: bool,
) -> Option<usize> {
    wanted.then(|| {
        fds.push(PollFd::from_borrowed_fd(fd, flags));
        fds.len() - 1
    })
}

/// One way through the proxy.
struct Direction {
    side: Side,
    /// The stream it reads and the one it writes, named for errors.
    what: (&'static str, &'static str),
    /// Its input has not ended.
    open: bool,
    /// The start of a frame whose newline has not been read yet.
    partial: Vec<u8>,
    /// Forwarded bytes the other side has not taken yet, from `sent` on.
    unsent: Vec<u8>,
    sent: usize,
}

impl Direction {
    fn new(side: Side, what: (&'static str, &'static str)) -> Self {
        Self {
            side,
            what,
            open: true,
            partial: Vec::new(),
            unsent: Vec::new(),
            sent: 0,
        }
    }

    /// The other side took everything forwarded so far.
    fn drained(&self) -> bool {
        self.unsent.is_empty()
    }

    fn wants_input(&self) -> bool {
        self.open && self.drained()
    }

    /// Reads what `from` has and passes on each frame it completes; at the end
    /// of `from`, also a last frame without its newline.
    fn read(
        &mut self,
        from: BorrowedFd<'_>,
        to: &Sink<'_>,
        chunk: &mut [u8],
        batch: &mut Batch<'_>,
    ) -> Result<(), EchoError> {
        let read = match rustix::io::read(from, &mut *chunk) {
            Ok(read) => read,
            Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
            Err(e) => return Err(EchoError::io(self.what.0)(e.into())),
        };
        if read == 0 {
            self.open = false;
            if !self.partial.is_empty() {
                let last = std::mem::take(&mut self.partial);
                self.pass(&last, to, batch)?;
            }
            return Ok(());
        }
        let mut rest = &chunk[..read];
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            let (line, after) = rest.split_at(newline + 1);
            rest = after;
            if self.partial.is_empty() {
                self.pass(line, to, batch)?;
                continue;
            }
            self.partial.extend_from_slice(line);
            if self.partial.len() > MAX_FRAME_BYTES {
                return Err(EchoError::FrameTooLong {
                    stream: self.what.0,
                    limit: MAX_FRAME_BYTES,
                });
            }
            let frame = std::mem::take(&mut self.partial);
            self.pass(&frame, to, batch)?;
            // Keep a small buffer for the next partial frame, not a large one.
            if frame.capacity() <= READ_CHUNK {
                self.partial = frame;
                self.partial.clear();
            }
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > MAX_FRAME_BYTES {
            return Err(EchoError::FrameTooLong {
                stream: self.what.0,
                limit: MAX_FRAME_BYTES,
            });
        }
        Ok(())
    }

    /// Forwards `frame` (what `to` does not take now waits in `unsent`), then
    /// adds it to the batch to be recorded.
    fn pass(&mut self, frame: &[u8], to: &Sink<'_>, batch: &mut Batch<'_>) -> Result<(), EchoError> {
        let room = batch.room(frame.len());
        let at = Instant::now();
        if self.drained() {
            let written = to.write(frame).map_err(EchoError::io(self.what.1))?;
            self.unsent.extend_from_slice(&frame[written..]);
        } else {
            self.unsent.extend_from_slice(frame);
        }
        batch.push(Seen {
            side: self.side,
            frame: frame.to_vec(),
            at,
            _room: room,
        });
        Ok(())
    }

    /// Writes what `to` takes of what waits for it.
    fn flush(&mut self, to: &Sink<'_>) -> Result<(), EchoError> {
        self.sent += to
            .write(&self.unsent[self.sent..])
            .map_err(EchoError::io(self.what.1))?;
        if self.sent == self.unsent.len() {
            self.sent = 0;
            if self.unsent.capacity() > READ_CHUNK {
                self.unsent = Vec::new();
            } else {
                self.unsent.clear();
            }
        }
        Ok(())
    }
}

/// Frames forwarded and not yet handed to the recording thread, in the order
/// they passed. Handed over whole when it holds [`RECORD_BATCH_FRAMES`] or
/// [`RECORD_BATCH_BYTES`], once the relay has been idle for
/// [`RECORD_BATCH_IDLE`], when its first frame is [`RECORD_BATCH_AGE`] old, and
/// when the relay ends (dropped). Each frame holds its room in the queue from
/// before it was forwarded.
struct Batch<'q> {
    queue: &'q Queue,
    frames: Vec<Seen>,
    bytes: usize,
}

impl<'q> Batch<'q> {
    fn new(queue: &'q Queue) -> Self {
        Self {
            queue,
            frames: Vec::with_capacity(RECORD_BATCH_FRAMES),
            bytes: 0,
        }
    }

    /// Room in the queue for a frame of `len` bytes. Before it waits for room,
    /// the batch is handed over: its frames hold room the recording thread
    /// would otherwise never give back.
    fn room(&mut self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.queue.try_reserve(len).or_else(|| {
            self.hand_over();
            self.queue.reserve_blocking(len)
        })
    }

    /// Adds a frame; its `at` (when it passed) is the batch's clock.
    fn push(&mut self, seen: Seen) {
        self.bytes += seen.frame.len();
        let now = seen.at;
        self.frames.push(seen);
        let age = self
            .frames
            .first()
            .map(|first| now.saturating_duration_since(first.at));
        if self.frames.len() >= RECORD_BATCH_FRAMES
            || self.bytes >= RECORD_BATCH_BYTES
            || age.is_some_and(|age| age >= RECORD_BATCH_AGE)
        {
            self.hand_over();
        }
    }

    /// When the batch is to be handed over if no frame passes before; `None`
    /// when it is empty.
    fn due(&self) -> Option<Instant> {
        let first = self.frames.first()?.at;
        let last = self.frames.last()?.at;
        Some((last + RECORD_BATCH_IDLE).min(first + RECORD_BATCH_AGE))
    }

    fn hand_over(&mut self) {
        if self.frames.is_empty() {
            return;
        }
        let frames = std::mem::replace(&mut self.frames, Vec::with_capacity(RECORD_BATCH_FRAMES));
        self.bytes = 0;
        self.queue.enqueue_batch(frames);
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.hand_over();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::queue::Recording;
    use super::*;
    use crate::recorder::{RecordOptions, RecordSummary};
    use crate::redact::Redactor;
    use crate::server_process::{EXIT_GRACE, ServerProcess, reap_server, spawn_server};
    use crate::writer::RecordMode;

    #[tokio::test]
    async fn a_batch_is_handed_over_by_the_clock_of_the_frames_that_pass() {
        let dir = tempfile::tempdir().unwrap();
        let recording = Recording::start(RecordOptions {
            argv: vec!["server".into()],
            cassette: dir.path().join("c.jsonl"),
            mode: RecordMode::Once,
            redactor: Redactor::new(&[], &[]).unwrap(),
        })
        .unwrap();
        let mut batch = Batch::new(&recording.queue);
        let seen = |at: Instant| Seen {
            side: Side::Client,
            frame: b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n".to_vec(),
            at,
            _room: None,
        };
        let first = Instant::now();
        let step = RECORD_BATCH_IDLE / 2;
        let mut at = first;
        while at + step < first + RECORD_BATCH_AGE {
            batch.push(seen(at));
            assert_eq!(
                batch.due(),
                Some((at + RECORD_BATCH_IDLE).min(first + RECORD_BATCH_AGE))
            );
            at += step;
        }
        let kept = batch.frames.len();
        assert!(kept > 1 && kept < RECORD_BATCH_FRAMES, "{kept} frames wait");
        batch.push(seen(first + RECORD_BATCH_AGE));
        assert!(
            batch.frames.is_empty(),
            "handed over once its first frame is as old as the limit"
        );
        for _ in 0..RECORD_BATCH_FRAMES - 1 {
            batch.push(seen(at));
        }
        assert_eq!(batch.frames.len(), RECORD_BATCH_FRAMES - 1);
        batch.push(seen(at));
        assert!(batch.frames.is_empty(), "handed over when full");
        let mut large = seen(at);
        large.frame = format!("\"{}\"\n", "x".repeat(RECORD_BATCH_BYTES)).into_bytes();
        batch.push(large);
        assert!(batch.frames.is_empty(), "handed over at its size in bytes");
        drop(batch);
        let summary = recording.finish().await.unwrap();
        assert_eq!(summary.messages, kept as u64 + 1 + RECORD_BATCH_FRAMES as u64);
    }

    /// A server for the poll relay's tests: it answers each request with an
    /// empty result, `big` with a 4 MiB one, and on `mark` it also creates
    /// the file its argument names.
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
    struct PollRecording {
        child: ServerProcess,
        recording: Recording,
        relay: std::thread::JoinHandle<Result<Ended, EchoError>>,
        stopper: std::io::PipeWriter,
        cassette: std::path::PathBuf,
    }

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
                let client = ClientFds::socket(theirs.as_fd(), theirs.as_fd());
                relay(client, server_in, server_out, stop.as_fd(), EXIT_GRACE, &queue)
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
        async fn finish(self) -> (Ended, RecordSummary) {
            let ended = self.relay.join().unwrap().unwrap();
            drop(self.stopper);
            reap_server(self.child, EXIT_GRACE).await;
            (ended, self.recording.finish().await.unwrap())
        }
    }

    /// Waits until `done`, for at most a minute; polls, as a file has no event.
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

        assert_eq!(ended, Ended::Finished);
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [1, 2, 3], "every answer, in order");
        assert_eq!(answers[0]["result"]["text"].as_str().map(str::len), Some(4 << 20));
        assert_eq!((summary.interactions, summary.messages), (3, 1), "{summary:?}");
    }

    /// Frames wait in a batch while calls follow each other closely; once the
    /// traffic pauses, what passed is recorded without waiting for more.
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
        assert_eq!(ended, Ended::Finished);
        assert_eq!(summary.interactions, 3, "{summary:?}");
    }
}
