//! Progress of long work, reported stage by stage to whoever listens (an MCP
//! client that sent a progress token, the CLI's stderr); silent when nobody does.

use std::sync::Arc;

/// Where stage messages go.
type StageSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Reports the stages of one piece of long work. Cheap to clone; a no-op by default.
#[derive(Clone, Default)]
pub struct Progress {
    sink: Option<StageSink>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("listened", &self.sink.is_some())
            .finish()
    }
}

impl Progress {
    /// Progress that calls `sink` with each stage's message.
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Reports that the work entered a stage. Messages name the stage and what it
    /// acts on (a URL, a step), never page content.
    pub fn stage(&self, message: &str) {
        if let Some(sink) = &self.sink {
            sink(message);
        }
    }
}
