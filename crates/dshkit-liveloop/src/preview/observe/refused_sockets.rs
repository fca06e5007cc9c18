use serde_json::json;

use super::*;

fn cross(url: &str) -> BlockReason {
    BlockReason::CrossOriginWebSocket { url: url.into() }
}

fn blocked(o: &Observations) -> Vec<(String, BlockReason)> {
    o.blocked
        .iter()
        .map(|b| (b.url.clone(), b.reason.clone()))
        .collect()
}

fn unclaimed(o: &Observations) -> Vec<String> {
    o.refused_unclaimed().map(|(a, _)| a.to_owned()).collect()
}

#[test]
fn a_refused_socket_is_the_pages_only_once_a_websocket_of_the_page_claims_it() {
    let mut o = Observations::default();
    // The browser's own tunnel: refused, but nothing of the page's.
    o.refused_socket("www.google.com:443", cross("ws://www.google.com:443/"));
    // The page's socket, refused before its event came.
    o.refused_socket("127.0.0.1:8089", cross("ws://127.0.0.1:8089/"));
    assert!(blocked(&o).is_empty(), "{:?}", blocked(&o));
    o.ingest(
        "Network.webSocketCreated",
        &json!({"requestId": "1.2", "url": "ws://127.0.0.1:8089/live?x=1"}),
    );
    assert_eq!(
        blocked(&o),
        [(
            "ws://127.0.0.1:8089/live?x=1".to_owned(),
            cross("ws://127.0.0.1:8089/live?x=1")
        )]
    );
    assert_eq!(unclaimed(&o), ["www.google.com:443"]);
}

#[test]
fn a_websocket_of_the_page_claims_the_refusal_that_comes_after_it() {
    let mut o = Observations::default();
    o.ingest(
        "Network.webSocketCreated",
        &json!({"url": "wss://Example.COM/feed"}),
    );
    o.ingest("Network.webSocketCreated", &json!({"url": "ws://[::1]:9000/"}));
    o.refused_socket("[::1]:9000", cross("ws://[::1]:9000/"));
    o.refused_socket(
        "example.com:443",
        BlockReason::ExternalHost {
            host: "example.com".into(),
        },
    );
    // One socket claims one refusal: a second refusal there waits for its own.
    o.refused_socket("example.com:443", cross("ws://example.com:443/"));
    assert_eq!(
        blocked(&o),
        [
            ("ws://[::1]:9000/".to_owned(), cross("ws://[::1]:9000/")),
            (
                "wss://Example.COM/feed".to_owned(),
                BlockReason::ExternalHost {
                    host: "example.com".into()
                }
            ),
        ]
    );
    assert_eq!(unclaimed(&o), ["example.com:443"]);
}

#[test]
fn unmatched_sockets_are_bounded_and_a_new_window_forgets_them() {
    let mut o = Observations::default();
    for port in 0..(MAX_UNMATCHED_SOCKETS + 8) {
        o.refused_socket(&format!("10.0.0.1:{port}"), cross("ws://10.0.0.1/"));
        o.ingest(
            "Network.webSocketCreated",
            &json!({"url": format!("ws://10.0.0.2:{port}/")}),
        );
    }
    assert_eq!(unclaimed(&o).len(), MAX_UNMATCHED_SOCKETS);
    assert_eq!(unclaimed(&o)[0], "10.0.0.1:8", "the oldest went first");
    assert_eq!(o.page_sockets.len(), MAX_UNMATCHED_SOCKETS);
    o.reset_window();
    assert!(unclaimed(&o).is_empty());
    o.refused_socket("10.0.0.2:39", cross("ws://10.0.0.2:39/"));
    assert!(
        blocked(&o).is_empty(),
        "a socket of the last window claims nothing"
    );
}

#[test]
fn only_a_5xx_for_the_page_or_its_code_is_a_code_server_error() {
    let entry = |status: Option<u16>, kind: &str| NetworkEntry {
        url: "http://127.0.0.1:1/src/App.tsx".into(),
        method: "GET".into(),
        status,
        error: None,
        resource_type: Some(kind.into()),
        loader: None,
    };
    for kind in ["Script", "Stylesheet", "Document"] {
        assert!(entry(Some(500), kind).is_code_server_error(), "{kind}");
        assert!(!entry(Some(404), kind).is_code_server_error(), "{kind} 404");
        assert!(
            !entry(None, kind).is_code_server_error(),
            "{kind} without an answer"
        );
    }
    // An API answering 500 is the app's failure, not its build's.
    for kind in ["Fetch", "XHR", "Image"] {
        assert!(!entry(Some(503), kind).is_code_server_error(), "{kind}");
    }
}
