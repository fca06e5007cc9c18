//! dshkit's integration tests: the real binary against real peers.

#[path = "../shared/broken_home.rs"]
mod broken_home;
mod browser_pool;
mod ci_outputs;
mod cli;
mod conformance;
mod corpus;
mod devtools;
mod devtools_clients;
mod devtools_contract;
mod devtools_trace;
mod dsh_agent;
mod dsh_plugin;
mod dsh_plugin_web;
mod echo;
mod echo_corpus;
mod echo_dsh;
mod echo_http;
mod echo_server_requests;
mod echo_tls;
mod liveloop_app;
mod liveloop_tool;
mod mcp_http;
mod mcp_http_limits;
mod mcp_stdio;
mod packaging;
mod report;
mod sdk_peers;
mod secret_judges;
mod settings;
mod support;
mod verify_named;
