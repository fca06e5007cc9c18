use serde_json::json;

use super::Observations;

#[test]
fn what_the_old_page_throws_after_retirement_is_not_in_the_window() {
    let mut o = Observations::default();
    o.ingest("Runtime.executionContextCreated", &json!({"context": {"id": 1}}));
    o.retire_contexts();
    o.reset_window();
    let throw = |id: i64| json!({"exceptionDetails": {"executionContextId": id, "text": "Uncaught", "exception": {"description": "Error: boom"}}});
    o.ingest("Runtime.exceptionThrown", &throw(1));
    o.ingest(
        "Runtime.consoleAPICalled",
        &json!({"executionContextId": 1, "type": "error", "args": [{"type": "string", "value": "old"}]}),
    );
    assert_eq!(o.console.iter().count(), 0, "the old page's errors are dropped");
    o.ingest("Runtime.executionContextsCleared", &json!({}));
    o.ingest("Runtime.executionContextCreated", &json!({"context": {"id": 2}}));
    o.ingest("Runtime.exceptionThrown", &throw(2));
    o.ingest(
        "Runtime.exceptionThrown",
        &json!({"exceptionDetails": {"text": "Uncaught"}}),
    );
    assert_eq!(
        o.console.iter().count(),
        2,
        "the new page's errors, and errors without a context, count"
    );
}
