//! The two routes of `dshkit devtools` to a debug session, as one seam: the
//! `cordis_*` tools called on the session, over the endpoint's MCP client
//! ([`crate::remote::Remote`]) or straight on this process's core ([`Local`],
//! the collector's socket). Both answer with the tools' same structured
//! values, so a command's workflow ([`crate::profile`]) is written once.

use serde_json::{Map, Value};

use crate::agent::{self, AgentError};
use crate::client::on_session;
use crate::core::{DebugCore, LOCAL_OWNER, Snapshot};

/// A debug session reached one way or the other.
pub trait Route {
    /// Why a call failed on this route.
    type Error;

    /// `tool` called with `arguments` on this route's debug session (named
    /// for it): the tool's structured value.
    #[expect(
        async_fn_in_trait,
        reason = "awaited in place by the CLI's commands, never spawned: no Send bound is needed"
    )]
    async fn call(&mut self, tool: &str, arguments: Map<String, Value>) -> Result<Value, Self::Error>;
}

/// A session this process attached to the collector's socket itself
/// ([`DebugCore::attach`], owned by [`LOCAL_OWNER`]).
/// Its pages show one moment: the runtime is read once, by its first call
/// that shows it ([`agent::answer_with`]).
pub struct Local<'a> {
    core: &'a DebugCore,
    session: &'a str,
    taken: Option<Snapshot>,
}

impl<'a> Local<'a> {
    pub fn new(core: &'a DebugCore, session: &'a str) -> Self {
        Self {
            core,
            session,
            taken: None,
        }
    }
}

impl Route for Local<'_> {
    type Error = AgentError;

    async fn call(&mut self, tool: &str, arguments: Map<String, Value>) -> Result<Value, AgentError> {
        let Value::Object(arguments) = on_session(self.session, arguments) else {
            unreachable!("on_session gives an object")
        };
        let (_, value) = agent::answer_with(self.core, LOCAL_OWNER, tool, arguments, &mut self.taken).await?;
        Ok(value)
    }
}

/// The members of a JSON object (none for anything else).
pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
