//! Tool routers: one module per family, each adapting a domain crate to MCP.
//! What they share lives in [`shared`], which imports none of them.

pub(crate) mod check;
mod core;
mod devtools;
mod echo;
mod liveloop;
mod liveloop_app;
mod shared;

use std::sync::Arc;

use dshkit_mcp::ToolFamily;

pub(crate) use shared::ImagePolicy;
pub use shared::ToolsConfig;

/// Every family this build can serve, in listing order.
pub fn all_families(config: &ToolsConfig) -> Vec<Arc<dyn ToolFamily>> {
    vec![
        Arc::new(core::CoreFamily),
        Arc::new(liveloop::LiveLoopFamily::new(config)),
        Arc::new(check::CheckFamily),
        Arc::new(echo::EchoFamily::new(
            config
                .workspace
                .clone()
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| ".".into()),
        )),
        Arc::new(devtools::DevtoolsFamily::new(
            config.resolved.devtools_dir.clone(),
        )),
    ]
}
