//! The HTTP connection layer: a cap on open connections, a header-read timeout
//! (which also closes a kept-alive connection that sends no next request), and
//! connections that close with the server.
//!
//! At the cap a new connection takes the place of the oldest connection with no
//! request in flight (a stalled or idle one); when every connection is serving a
//! request, the new one gets an immediate 503 and is closed. So stalled clients
//! cannot lock honest ones out, and nothing but the cap bounds the count.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Most connections open at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Longest a connection may take to send a request head, counted from its first
/// byte or, on a kept-alive connection, from the end of its previous response.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest the server waits for the connections' in-flight requests at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The answer of a connection refused at the cap.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: 97\r\nConnection: close\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"server busy: too many connections\"}}";

/// How connections are bounded.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
        }
    }
}

struct Slot {
    opened: Instant,
    /// Requests of the connection whose responses are still being sent.
    in_flight: Arc<AtomicUsize>,
    close: CancellationToken,
}

/// The open connections.
#[derive(Default)]
pub(crate) struct Connections {
    slots: Mutex<HashMap<u64, Slot>>,
    next_id: AtomicU64,
}

/// One admitted connection's hold on its slot.
struct Ticket {
    connections: Arc<Connections>,
    id: u64,
    in_flight: Arc<AtomicUsize>,
    close: CancellationToken,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open connections.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// A slot for a new connection, shedding the oldest connection without a
    /// request in flight when all `max` are taken; `None` when every connection
    /// is serving.
    fn admit(self: &Arc<Self>, max: usize, shutdown: &CancellationToken) -> Option<Ticket> {
        let mut slots = self.lock();
        if slots.len() >= max.max(1) {
            let shed = slots
                .iter()
                .filter(|(_, slot)| slot.in_flight.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, slot)| slot.opened)
                .map(|(id, _)| *id)?;
            let slot = slots.remove(&shed).expect("present");
            slot.close.cancel();
            tracing::debug!(
                connection = shed,
                "connection cap reached: closed the oldest idle connection"
            );
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let close = shutdown.child_token();
        slots.insert(
            id,
            Slot {
                opened: Instant::now(),
                in_flight: Arc::clone(&in_flight),
                close: close.clone(),
            },
        );
        Some(Ticket {
            connections: Arc::clone(self),
            id,
            in_flight,
            close,
        })
    }
}

/// Counts a request in flight until its response body is sent or dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(counter))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `response` with `guard` held until its body has been sent or dropped (a
/// client that goes away drops a streaming body).
pub(crate) fn hold_until_sent<G: Send + Unpin + 'static>(response: Response, guard: G) -> Response {
    response.map(|body| Body::new(Held { body, _guard: guard }))
}

/// A body that holds a guard; frames, end and size pass through unchanged.
struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G: Unpin> http_body::Body for Held<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Accepts connections and answers each request on them with `handle` until
/// `shutdown` fires, then waits (at most [`SHUTDOWN_GRACE`]) for the connections
/// to close.
pub(crate) async fn serve<H, F>(
    listener: TcpListener,
    handle: H,
    limits: ConnectionLimits,
    connections: Arc<Connections>,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    H: Fn(Request) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let tasks = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, _peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of descriptors or a connection reset before accept: keep serving.
                tracing::warn!(%err, "accept failed");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    () = shutdown.cancelled() => break,
                }
            }
        };
        // Nagle's algorithm would hold the small SSE frames for a delayed ACK (~40 ms).
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%err, "failed to set TCP_NODELAY");
        }
        let Some(ticket) = connections.admit(limits.max_connections, &shutdown) else {
            tracing::warn!(
                max = limits.max_connections,
                "connection refused: every connection is serving a request"
            );
            // Best effort and never waiting: the client may not be reading.
            let _ = stream.try_write(REFUSED);
            continue;
        };
        tasks.spawn(serve_connection(stream, handle.clone(), limits, ticket));
    }
    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait()).await.is_err() {
        tracing::warn!("connections still open after the shutdown grace; closing them");
    }
    Ok(())
}

async fn serve_connection<H, F>(stream: TcpStream, handle: H, limits: ConnectionLimits, ticket: Ticket)
where
    H: Fn(Request) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let in_flight = Arc::clone(&ticket.in_flight);
    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let serving = InFlight::new(&in_flight);
        let request = request.map(Body::new);
        let response = handle(request);
        async move {
            let response = response.await;
            Ok::<_, Infallible>(hold_until_sent(response, serving))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(err) = result {
                tracing::debug!(%err, "connection ended with an error");
            }
        }
        () = ticket.close.cancelled() => {
            // Idle connections close at once; one serving a request finishes it.
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
        }
    }
    drop(ticket);
}
