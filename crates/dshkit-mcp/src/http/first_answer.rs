//! A POST's event stream, its head held back for its first answer: rmcp writes
//! the head and a priming event as soon as a request is taken, and the answer in a
//! second write; a quick answer sent with its head costs one write per call.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::FutureExt as _;
use http::header;
use http_body::Frame;
use http_body_util::BodyExt as _;

/// How many times a POST's event stream lets the runtime run all else that is
/// ready before its head leaves without an answer. An answer that needs no I/O
/// and no timer (the session worker, the service and the tool handing it on) is
/// there after one.
const ROUNDS_FOR_FIRST_ANSWER: usize = 2;
/// Most frames read ahead of the head (a priming event comes once, first).
const MAX_FRAMES_HELD: usize = 4;

/// A POST answered with an event stream, its head held back until the stream's
/// first event that is not a priming event, its end or an error, for at most
/// [`ROUNDS_FOR_FIRST_ANSWER`] rounds of the runtime: a quick answer then leaves in
/// one write with its head (rmcp would write the head and priming event first,
/// the answer second). An answer that waits for anything leaves as before. No
/// timer: one would wake the runtime's driver on every call.
pub(super) async fn with_first_answer(response: Response) -> Response {
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream {
        return response;
    }
    let (parts, mut rest) = response.into_parts();
    let mut held = VecDeque::new();
    let mut rounds = 0;
    loop {
        let Some(frame) = rest.frame().now_or_never() else {
            if rounds == ROUNDS_FOR_FIRST_ANSWER {
                break;
            }
            rounds += 1;
            tokio::task::yield_now().await;
            continue;
        };
        let answered = match &frame {
            Some(Ok(frame)) => !frame.data_ref().is_some_and(|d| d.starts_with(PRIMING_EVENT)),
            Some(Err(_)) | None => true,
        };
        held.push_back(frame);
        if answered || held.len() == MAX_FRAMES_HELD {
            break;
        }
    }
    Response::from_parts(parts, Body::new(Prefixed { held, rest }))
}

/// How a priming event (SEP-1699: an id and an empty data field) starts.
const PRIMING_EVENT: &[u8] = b"data: \n";

/// A body whose first frames were read ahead (`None`: it ended), then the rest.
struct Prefixed {
    held: VecDeque<Option<Result<Frame<Bytes>, axum::Error>>>,
    rest: Body,
}

impl http_body::Body for Prefixed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        match this.held.pop_front() {
            Some(frame) => Poll::Ready(frame),
            None => Pin::new(&mut this.rest).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_empty() && self.rest.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt as _;
    use futures::channel::mpsc::{UnboundedSender, unbounded};

    use super::*;

    const PRIMING: &str = "data: \nid: 0\nretry: 3000\n\n";
    const ANSWER: &str = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nid: 1\n\n";

    type Sent = Result<Bytes, std::io::Error>;

    /// A response of `content_type` whose body is what `sender` sends.
    fn streamed(content_type: &str) -> (UnboundedSender<Sent>, Response) {
        let (sender, frames) = unbounded::<Sent>();
        let response = Response::builder()
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from_stream(frames))
            .unwrap();
        (sender, response)
    }

    /// What `body` has ready now: its frames' text, `<end>` and `<error>`.
    fn ready(body: &mut Body) -> Vec<String> {
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().now_or_never() {
            match frame {
                Some(Ok(frame)) => seen.push(String::from_utf8_lossy(frame.data_ref().unwrap()).into_owned()),
                Some(Err(_)) => seen.push("<error>".to_owned()),
                None => {
                    seen.push("<end>".to_owned());
                    break;
                }
            }
        }
        seen
    }

    #[tokio::test]
    async fn the_head_waits_for_an_answer_handed_on_by_other_tasks_and_leaves_with_it() {
        let (sender, response) = streamed("text/event-stream");
        sender.unbounded_send(Ok(PRIMING.into())).unwrap();
        // The answer comes from a task that is ready but has not run yet, through
        // one more that it wakes: what the session worker and the tool do.
        let (relay, relayed) = futures::channel::oneshot::channel::<Sent>();
        let answering = sender.clone();
        tokio::spawn(async move { answering.unbounded_send(relayed.await.unwrap()).unwrap() });
        tokio::spawn(async move { relay.send(Ok(ANSWER.into())).unwrap() });
        let mut body = with_first_answer(response).await.into_body();
        assert_eq!(ready(&mut body), [PRIMING, ANSWER]);
        drop(sender);
        assert_eq!(ready(&mut body), ["<end>"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_waits_for_a_timer_lets_the_head_go_first_and_follows() {
        let (sender, response) = streamed("text/event-stream");
        sender.unbounded_send(Ok(PRIMING.into())).unwrap();
        let later = sender.clone();
        let answered = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            later.unbounded_send(Ok(ANSWER.into())).unwrap();
        });
        let mut body = with_first_answer(response).await.into_body();
        assert_eq!(ready(&mut body), [PRIMING]);
        answered.await.unwrap();
        assert_eq!(ready(&mut body), [ANSWER]);
    }

    #[tokio::test]
    async fn an_end_or_an_error_lets_the_head_go_at_once_and_is_passed_on() {
        let (sender, response) = streamed("text/event-stream");
        sender.unbounded_send(Ok(PRIMING.into())).unwrap();
        drop(sender);
        let mut body = with_first_answer(response).await.into_body();
        assert_eq!(ready(&mut body), [PRIMING, "<end>"]);

        let (sender, response) = streamed("text/event-stream");
        sender.unbounded_send(Ok(PRIMING.into())).unwrap();
        sender.unbounded_send(Err(std::io::Error::other("gone"))).unwrap();
        let mut body = with_first_answer(response).await.into_body();
        assert_eq!(ready(&mut body), [PRIMING, "<error>"]);
    }

    #[tokio::test]
    async fn no_more_than_the_cap_is_read_ahead() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let taken = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&taken);
        let frames = futures::stream::iter(0..100).map(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(Bytes::from(PRIMING))
        });
        let response = Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from_stream(frames))
            .unwrap();
        let mut body = with_first_answer(response).await.into_body();
        assert_eq!(taken.load(Ordering::SeqCst), MAX_FRAMES_HELD);
        assert_eq!(ready(&mut body).len(), 100 + 1, "every frame, then the end");
    }

    #[tokio::test]
    async fn a_json_answer_is_not_read_ahead() {
        let (sender, response) = streamed("application/json");
        let mut body = with_first_answer(response).await.into_body();
        assert!(ready(&mut body).is_empty());
        sender.unbounded_send(Ok("{}".into())).unwrap();
        assert_eq!(ready(&mut body), ["{}"]);
    }
}
