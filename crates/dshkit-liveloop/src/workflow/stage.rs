//! The stages a workflow goes through, typed, for whoever listens: each surface
//! says the ones it shows in its own words ([`super::render::stage_line`]).

use std::path::Path;
use std::sync::Arc;

use crate::detect::Candidate;
use crate::progress::Progress;
use crate::runtime::{RunSpec, ServerStatus};

/// One stage of a workflow.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Stage<'a> {
    /// Detecting the app in a directory.
    Detecting(&'a Path),
    /// The app chosen and the profile it starts with.
    Starting(&'a Candidate, &'a RunSpec),
    /// Its port was taken, so the server already there was adopted.
    Adopted(&'a ServerStatus),
    /// A dev server process was spawned and is getting ready.
    Spawned(&'a ServerStatus),
    /// A step of getting ready (the URL logged, the port, the HTTP answer).
    Readiness(&'a str),
    /// The server is ready.
    Ready(&'a ServerStatus),
    /// Opening the preview the verification runs in.
    Opening(&'a str),
    /// A stage of the verification itself (loading, a step, the verdict).
    Verifying(&'a str),
}

type Sink = Arc<dyn Fn(Stage<'_>) + Send + Sync>;

/// Where stages go. Cheap to clone; silent by default.
#[derive(Clone, Default)]
pub struct Stages {
    sink: Option<Sink>,
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("listened", &self.sink.is_some())
            .finish()
    }
}

impl Stages {
    /// Stages that call `sink` with each stage.
    pub fn new(sink: impl Fn(Stage<'_>) + Send + Sync + 'static) -> Self {
        Self {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Reports `stage`.
    pub fn report(&self, stage: Stage<'_>) {
        if let Some(sink) = &self.sink {
            sink(stage);
        }
    }

    /// The runtime's and the engine's untyped progress, as `wrap` stages.
    pub(crate) fn progress(&self, wrap: fn(&str) -> Stage<'_>) -> Progress {
        match &self.sink {
            Some(sink) => {
                let sink = Arc::clone(sink);
                Progress::new(move |message| sink(wrap(message)))
            }
            None => Progress::default(),
        }
    }
}
