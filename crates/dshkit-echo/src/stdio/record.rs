//! Recording over stdio: a transparent proxy in front of the server's argv,
//! each frame forwarded byte for byte before it is recorded (see
//! [`super::queue`]). Where this process's stdin and stdout are pipes or
//! sockets, the frames pass through [`super::poll_relay`]'s poll(2) loop on a
//! thread of its own; elsewhere through the event loop's [`relay`].

use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};

#[cfg(unix)]
use std::os::fd::AsFd;

use super::queue::{Queue, Recording, Side};
use crate::error::EchoError;
use crate::frame::read_frame;
use crate::recorder::{RecordOptions, RecordSummary};
use crate::server_process::{close_server, spawn_server};

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
    options.refuse_to_overwrite()?;
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
/// they are pipes or sockets that `poll_relay` serves (Unix), the frames pass
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
    if let Some(client) = super::poll_relay::ClientFds::of_this_process() {
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
    client: super::poll_relay::ClientFds<'static>,
    options: RecordOptions,
    stop: impl std::future::Future,
) -> Result<RecordSummary, EchoError> {
    use crate::server_process::{EXIT_GRACE, reap_server};
    options.refuse_to_overwrite()?;
    let (child, server_in, server_out) = spawn_server(&options.argv)?;
    let server_in = server_in
        .into_owned_fd()
        .map_err(EchoError::io("the server's stdin"))?;
    let server_out = server_out
        .into_inner()
        .into_owned_fd()
        .map_err(EchoError::io("the server's stdout"))?;
    let recording = Recording::start(options)?;
    // Closing `stopper` ends the relay.
    let (stop_pipe, stopper) = std::io::pipe().map_err(EchoError::io("a stop pipe"))?;
    let mut stopper = Some(stopper);
    let queue = recording.queue.clone();
    let relay = tokio::task::spawn_blocking(move || {
        super::poll_relay::relay(
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
        Ok(super::poll_relay::Ended::Finished) => EXIT_GRACE,
        _ => std::time::Duration::ZERO,
    };
    reap_server(child, grace).await;
    let summary = recording.finish().await?;
    relayed?;
    Ok(summary)
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
        to.write_all(&frame).await.map_err(EchoError::io(what.1))?;
        // No await between the write and this.
        if !queue.record_inline(side, &frame, at) {
            queue.enqueue(side, std::mem::take(&mut frame), at, room);
        }
        to.flush().await.map_err(EchoError::io(what.1))?;
    }
    Ok(())
}
