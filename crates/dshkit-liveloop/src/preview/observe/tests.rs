use serde_json::json;

use super::*;

#[test]
fn rings_are_bounded_and_count_what_they_drop() {
    let mut ring = Ring::new(3);
    for i in 0..5 {
        ring.push(i);
    }
    assert_eq!(ring.iter().copied().collect::<Vec<_>>(), [2, 3, 4]);
    assert_eq!(ring.dropped(), 2);
}

#[test]
fn exceptions_and_rejections_keep_their_location_one_based() {
    let mut o = Observations::default();
    o.ingest(
        "Runtime.exceptionThrown",
        &json!({"exceptionDetails": {"text": "Uncaught", "lineNumber": 9, "columnNumber": 4, "url": "http://127.0.0.1:1/app.js",
                "exception": {"description": "TypeError: x is undefined"}}}),
    );
    o.ingest(
        "Runtime.exceptionThrown",
        &json!({"exceptionDetails": {"text": "Uncaught (in promise)", "lineNumber": 0, "columnNumber": 0,
                "exception": {"value": "nope"}, "stackTrace": {"callFrames": [{"url": "http://127.0.0.1:1/b.js"}]}}}),
    );
    let entries: Vec<_> = o.console.iter().collect();
    assert_eq!(entries[0].source, ConsoleSource::Exception);
    assert_eq!((entries[0].line, entries[0].column), (Some(10), Some(5)));
    assert!(entries[0].text.contains("TypeError"));
    assert_eq!(entries[1].source, ConsoleSource::Rejection);
    assert_eq!(entries[1].url.as_deref(), Some("http://127.0.0.1:1/b.js"));
    assert_eq!(o.errors().count(), 2);
}

#[test]
fn failed_and_error_status_requests_are_kept_and_streams_are_not_in_flight() {
    let mut o = Observations::default();
    o.ingest(
        "Network.requestWillBeSent",
        &json!({"requestId": "1", "request": {"url": "http://x/a", "method": "POST"}, "type": "Fetch"}),
    );
    o.ingest("Network.requestWillBeSent", &json!({"requestId": "2", "request": {"url": "http://x/events", "method": "GET"}, "type": "EventSource"}));
    o.ingest(
        "Network.requestWillBeSent",
        &json!({"requestId": "3", "request": {"url": "http://x/missing", "method": "GET"}, "type": "Script"}),
    );
    assert_eq!(o.in_flight(), 2);
    o.ingest("Network.requestWillBeSent", &json!({"requestId": "4", "request": {"url": "http://x/favicon.ico", "method": "GET"}, "type": "Other"}));
    assert_eq!(o.in_flight(), 2, "the browser's favicon request holds no load");
    assert_eq!(o.pending(1).len(), 1, "bounded");
    let pending = o.pending(5);
    assert_eq!(pending.len(), 2, "the stream is not pending: {pending:?}");
    assert!(
        pending.iter().any(|p| p.starts_with("POST http://x/a (Fetch, ")),
        "{pending:?}"
    );
    o.ingest(
        "Network.responseReceived",
        &json!({"requestId": "3", "response": {"url": "http://x/missing", "status": 404}, "type": "Script"}),
    );
    o.ingest("Network.loadingFinished", &json!({"requestId": "3"}));
    o.ingest(
        "Network.loadingFailed",
        &json!({"requestId": "1", "errorText": "net::ERR_CONNECTION_REFUSED"}),
    );
    assert_eq!(o.in_flight(), 0);
    let entries: Vec<_> = o.network.iter().collect();
    assert_eq!(entries[0].status, Some(404));
    assert_eq!(entries[1].method, "POST");
    assert_eq!(entries[1].error.as_deref(), Some("net::ERR_CONNECTION_REFUSED"));
    o.reset_window();
    assert!(o.network.is_empty());
}
