//! The page's main world: the JavaScript context of the top document, where the
//! preview's own scripts (the snapshot, the settle) run. Knowing its id lets them
//! run through `Runtime.callFunctionOn` with one constant source, which V8
//! compiles once per document instead of on every call; and what such a call
//! returns.

use std::collections::HashMap;

use serde_json::Value;

use super::error::PreviewError;

/// Most frames whose main-world context is tracked.
pub(crate) const MAX_TRACKED_FRAMES: usize = 256;

/// The main frame and each frame's main-world context, from the page's events.
#[derive(Debug, Default)]
pub(crate) struct MainWorld {
    /// The top frame's id (constant for a page), from its first navigation.
    main_frame: Option<String>,
    /// Each frame's main-world ("default") context (at most [`MAX_TRACKED_FRAMES`]).
    contexts: HashMap<String, i64>,
}

impl MainWorld {
    /// Takes one CDP event of the page.
    pub(crate) fn ingest(&mut self, method: &str, params: &Value) {
        match method {
            "Runtime.executionContextCreated" => {
                let context = &params["context"];
                let (Some(id), Some(frame)) =
                    (context["id"].as_i64(), context["auxData"]["frameId"].as_str())
                else {
                    return;
                };
                if context["auxData"]["isDefault"] == true
                    && (self.contexts.len() < MAX_TRACKED_FRAMES || self.contexts.contains_key(frame))
                {
                    self.contexts.insert(frame.to_owned(), id);
                }
            }
            "Runtime.executionContextDestroyed" => {
                if let Some(id) = params["executionContextId"].as_i64() {
                    self.contexts.retain(|_, context| *context != id);
                }
            }
            "Runtime.executionContextsCleared" => self.contexts.clear(),
            "Page.frameNavigated" if params["frame"].get("parentId").is_none() => {
                if let Some(frame) = params["frame"]["id"].as_str() {
                    self.main_frame = Some(frame.to_owned());
                }
            }
            _ => {}
        }
    }

    /// The top document's main-world context, when it is known and alive.
    pub(crate) fn context(&self) -> Option<i64> {
        self.contexts.get(self.main_frame.as_deref()?).copied()
    }
}

/// The value a page script returned, or its exception as an error.
pub(super) fn page_value(mut reply: Value) -> Result<Value, PreviewError> {
    if let Some(details) = reply.get("exceptionDetails") {
        let text = details["exception"]["description"]
            .as_str()
            .or_else(|| details["text"].as_str())
            .unwrap_or("exception");
        return Err(PreviewError::Interaction(format!("page script failed: {text}")));
    }
    Ok(reply["result"]["value"].take())
}

/// `function` called with `args`, as an expression.
pub(super) fn call_expression(function: &str, args: &[Value]) -> String {
    let args: Vec<String> = args.iter().map(Value::to_string).collect();
    format!("({function})({})", args.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn created(id: i64, frame: &str, default: bool) -> Value {
        json!({"context": {"id": id, "auxData": {"frameId": frame, "isDefault": default}}})
    }

    #[test]
    fn the_top_documents_main_world_is_followed_across_documents_and_frames() {
        let mut world = MainWorld::default();
        world.ingest("Runtime.executionContextCreated", &created(1, "top", true));
        assert_eq!(world.context(), None, "the top frame is not known yet");
        world.ingest(
            "Page.frameNavigated",
            &json!({"frame": {"id": "top", "url": "http://a/"}}),
        );
        assert_eq!(world.context(), Some(1));
        // An isolated world and an iframe's main world are not the page's.
        world.ingest("Runtime.executionContextCreated", &created(2, "top", false));
        world.ingest("Runtime.executionContextCreated", &created(3, "child", true));
        world.ingest(
            "Page.frameNavigated",
            &json!({"frame": {"id": "child", "parentId": "top", "url": "http://a/f"}}),
        );
        assert_eq!(world.context(), Some(1));
        // A new document: the old context goes, the new one is the page's.
        world.ingest(
            "Runtime.executionContextDestroyed",
            &json!({"executionContextId": 1}),
        );
        assert_eq!(world.context(), None);
        world.ingest("Runtime.executionContextCreated", &created(4, "top", true));
        assert_eq!(world.context(), Some(4));
        world.ingest("Runtime.executionContextsCleared", &json!({}));
        assert_eq!(world.context(), None);
    }
}
