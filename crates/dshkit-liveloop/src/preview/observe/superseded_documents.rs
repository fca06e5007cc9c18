use serde_json::json;

use super::Observations;

fn document(o: &mut Observations, request: &str, loader: &str, status: u16) {
    o.ingest("Network.requestWillBeSent", &json!({"requestId": request, "loaderId": loader, "request": {"url": "http://x/", "method": "GET"}, "type": "Document"}));
    o.ingest("Network.responseReceived", &json!({"requestId": request, "loaderId": loader, "frameId": "main", "response": {"url": "http://x/", "status": status}, "type": "Document"}));
    o.ingest("Network.loadingFinished", &json!({"requestId": request}));
    o.ingest(
        "Page.frameNavigated",
        &json!({"frame": {"id": "main", "loaderId": loader, "url": "http://x/"}}),
    );
}

fn fetch(o: &mut Observations, request: &str, loader: &str, status: u16) {
    o.ingest("Network.requestWillBeSent", &json!({"requestId": request, "loaderId": loader, "request": {"url": "http://x/", "method": "GET"}, "type": "Fetch"}));
    o.ingest("Network.responseReceived", &json!({"requestId": request, "loaderId": loader, "frameId": "main", "response": {"url": "http://x/", "status": status}, "type": "Fetch"}));
    o.ingest("Network.loadingFinished", &json!({"requestId": request}));
}

#[test]
fn a_starting_page_that_the_same_url_replaced_leaves_no_failure_in_the_window() {
    let mut o = Observations::default();
    // Nuxt's loading page: a 503 that polls its own URL, then reloads.
    document(&mut o, "d1", "L1", 503);
    fetch(&mut o, "f1", "L1", 503);
    fetch(&mut o, "f2", "L1", 503);
    assert_eq!(o.failed_requests().count(), 3);
    document(&mut o, "d2", "L2", 200);
    assert_eq!(
        o.failed_requests().count(),
        0,
        "{:?}",
        o.network.iter().collect::<Vec<_>>()
    );
    assert_eq!(o.document_status, Some(200));
    // A poll of the old page answered late is not the new page's either;
    // the new page's own failures count.
    fetch(&mut o, "f3", "L1", 503);
    fetch(&mut o, "f4", "L2", 500);
    let failed: Vec<_> = o.failed_requests().map(|n| n.status).collect();
    assert_eq!(failed, [Some(500)]);
}

fn module(o: &mut Observations, request: &str, loader: &str, status: u16, status_text: &str) {
    o.ingest("Network.requestWillBeSent", &json!({"requestId": request, "loaderId": loader, "request": {"url": "http://x/deps/d.js?v=1", "method": "GET"}, "type": "Script"}));
    o.ingest("Network.responseReceived", &json!({"requestId": request, "loaderId": loader, "frameId": "main", "response": {"url": "http://x/deps/d.js?v=1", "status": status, "statusText": status_text}, "type": "Script"}));
    o.ingest("Network.loadingFinished", &json!({"requestId": request}));
}

fn rejection(o: &mut Observations, text: &str) {
    o.ingest(
        "Runtime.exceptionThrown",
        &json!({"exceptionDetails": {"text": text, "exception": {"description": text}}}),
    );
}

#[test]
fn a_page_the_dev_server_reloads_for_outdated_modules_leaves_nothing_in_the_window() {
    // Vite's first load: a dependency discovered late is re-optimised, the
    // old one answered 504 "Outdated Optimize Dep", the page reloaded.
    let mut o = Observations::default();
    document(&mut o, "d1", "L1", 200);
    module(&mut o, "m1", "L1", 504, "Outdated Optimize Dep");
    rejection(&mut o, "TypeError: Failed to fetch dynamically imported module");
    assert!(o.awaiting_reload(), "the page is not settled before its reload");
    assert_eq!(o.failed_requests().count(), 1);
    assert_eq!(o.errors().count(), 1);
    document(&mut o, "d2", "L2", 200);
    assert!(!o.awaiting_reload());
    assert_eq!(o.failed_requests().count(), 0);
    assert_eq!(
        o.errors().count(),
        0,
        "{:?}",
        o.console.iter().collect::<Vec<_>>()
    );
    // The reloaded page's own errors count.
    rejection(&mut o, "Error: the app's own");
    module(&mut o, "m2", "L2", 504, "Optimize Deps Processing Error");
    assert_eq!(o.errors().count(), 1);
    assert_eq!(o.failed_requests().count(), 1);
    assert!(!o.awaiting_reload(), "a processing error announces no reload");
}

#[test]
fn a_page_with_an_outdated_module_that_is_not_reloaded_keeps_its_failures() {
    let mut o = Observations::default();
    document(&mut o, "d1", "L1", 200);
    module(&mut o, "m1", "L1", 504, "Outdated Optimize Dep");
    rejection(&mut o, "TypeError: Failed to fetch dynamically imported module");
    assert_eq!(o.failed_requests().count(), 1);
    assert_eq!(o.errors().count(), 1);
}

#[test]
fn an_app_error_page_reloaded_keeps_its_failures() {
    let mut o = Observations::default();
    document(&mut o, "d1", "L1", 500);
    fetch(&mut o, "f1", "L1", 500);
    document(&mut o, "d2", "L2", 200);
    assert_eq!(o.failed_requests().count(), 2);
    assert_eq!(o.document_status, Some(500), "the first document of the window");
}
