//! What a stdio recording shares between the proxy's relay and its recording
//! thread: the [`Recorder`] behind a lock, and a queue bounded in bytes. The
//! proxy forwards each frame before it records it: the event loop's relay
//! records a small frame on the spot when nothing waits before it and queues
//! the rest; the poll relay hands frames over in batches. A full queue holds
//! the forwarding back: a frame is never dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::EchoError;
use crate::recorder::{Message, RecordOptions, RecordSummary, Recorder};

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

/// The recorder and its thread, as a recording proxy shares them between its
/// relay and the thread (see [`Queue`]).
pub(super) struct Recording {
    pub(super) queue: Queue,
    thread: std::thread::JoinHandle<()>,
}

impl Recording {
    pub(super) fn start(options: RecordOptions) -> Result<Self, EchoError> {
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
                .map_err(EchoError::io("a thread for the recording"))?
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
    pub(super) async fn finish(self) -> Result<RecordSummary, EchoError> {
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

/// Which way a frame went through the proxy.
#[derive(Debug, Clone, Copy)]
pub(super) enum Side {
    Client,
    Server,
}

/// A forwarded frame on its way to the recording thread, with when it passed
/// and its share of the queue's byte budget, returned once it is recorded (none
/// only for the small frame that [`relay`] describes).
pub(super) struct Seen {
    pub(super) side: Side,
    pub(super) frame: Vec<u8>,
    pub(super) at: Instant,
    pub(super) _room: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The recorder's queue, as the proxy's two directions share it. The
/// recording thread ends once every clone of it is dropped.
#[derive(Clone)]
pub(super) struct Queue {
    frames: tokio::sync::mpsc::UnboundedSender<Vec<Seen>>,
    /// Bytes the queue may still take ([`RECORD_QUEUE_BYTES`] in all).
    pub(super) budget: Arc<tokio::sync::Semaphore>,
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
    pub(super) fn room_needed(&self, len: usize) -> Option<u32> {
        (!self.takes_inline(len)).then(|| queue_cost(len))
    }

    /// Room for a frame of `len` bytes if the queue has it now.
    #[cfg(unix)]
    pub(super) fn try_reserve(&self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.budget)
            .try_acquire_many_owned(queue_cost(len))
            .ok()
    }

    /// Room for a frame of `len` bytes, waited for on a thread that may block.
    #[cfg(unix)]
    pub(super) fn reserve_blocking(&self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        futures::executor::block_on(Arc::clone(&self.budget).acquire_many_owned(queue_cost(len))).ok()
    }

    /// Queues `frames`, in the order they passed, for the recording thread.
    #[cfg(unix)]
    pub(super) fn enqueue_batch(&self, frames: Vec<Seen>) {
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
    pub(super) fn record_inline(&self, side: Side, frame: &[u8], at: Instant) -> bool {
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
    pub(super) fn enqueue(
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
