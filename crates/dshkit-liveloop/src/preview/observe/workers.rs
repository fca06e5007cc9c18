use serde_json::json;

use super::Observations;

#[test]
fn a_workers_main_script_does_not_hold_the_page_in_flight() {
    let mut o = Observations::default();
    // As Chromium 148 reports `new Worker('/w.js')` to the page: it ends on
    // the worker's target.
    o.ingest(
        "Network.requestWillBeSent",
        &json!({"requestId": "43AF", "loaderId": "", "documentURL": "http://127.0.0.1:1/w.js",
                "request": {"url": "http://127.0.0.1:1/w.js", "method": "GET"}, "type": "Script"}),
    );
    assert_eq!(o.in_flight(), 0, "{:?}", o.pending(3));
    // The page's own script, and a script without a loader that is not its
    // own document, are the page's.
    o.ingest(
        "Network.requestWillBeSent",
        &json!({"requestId": "2", "loaderId": "L1", "documentURL": "http://127.0.0.1:1/",
                "request": {"url": "http://127.0.0.1:1/app.js", "method": "GET"}, "type": "Script"}),
    );
    o.ingest(
        "Network.requestWillBeSent",
        &json!({"requestId": "3", "loaderId": "", "documentURL": "http://127.0.0.1:1/",
                "request": {"url": "http://127.0.0.1:1/lib.js", "method": "GET"}, "type": "Script"}),
    );
    assert_eq!(o.in_flight(), 2);
}

#[test]
fn a_workers_errors_keep_their_kind() {
    let mut o = Observations::default();
    let entry = |source: &str, level: &str, text: &str| json!({"entry": {"source": source, "level": level, "text": text, "url": "http://127.0.0.1:1/w.js", "lineNumber": 2}});
    // As Chromium 148 reports them to the page.
    o.ingest(
        "Log.entryAdded",
        &entry("worker", "error", "Uncaught Error: worker boom"),
    );
    o.ingest(
        "Log.entryAdded",
        &entry("worker", "error", "Uncaught (in promise) Error: worker rejected"),
    );
    o.ingest(
        "Log.entryAdded",
        &entry("worker", "error", "worker console error"),
    );
    o.ingest(
        "Log.entryAdded",
        &entry(
            "network",
            "error",
            "Failed to load resource: the server responded with a status of 404",
        ),
    );
    let summaries: Vec<String> = o.errors().map(super::ConsoleEntry::summary).collect();
    assert_eq!(
        summaries,
        [
            "uncaught exception: Uncaught Error: worker boom at http://127.0.0.1:1/w.js:3",
            "unhandled rejection: Uncaught (in promise) Error: worker rejected at http://127.0.0.1:1/w.js:3",
            "console.error: worker console error at http://127.0.0.1:1/w.js:3",
        ]
    );
    assert_eq!(o.errors().filter(|e| e.is_uncaught()).count(), 2);
}
