//! Helpers shared by the integration tests: each sets up one thing a test
//! needs, so that the test reads as what it checks. This file only gathers
//! them; each lives in the module of what it sets up.

mod command;
mod dsh;
mod echo;
mod home;
mod http_session;
mod models;
mod servers;
mod session;

pub(crate) use command::{copy_hello_app, dshkit, dshkit_command, free_port, isolate, output, stdout_json};
pub(crate) use dsh::{
    PAGE, assert_no_process_left, dsh_command, dsh_run_in, dsh_turn, dsh_turn_in, dsh_web, dsh_web_at,
    headless_home, install, installed_home, model_verifying, processes_of, profile_home, serve_html,
    serve_page, the_model_gets_the_binarys_guidance_and_skills, tool_answer, verify_arguments, web_home,
};
pub(crate) use echo::{
    RECORDED_GREETING, echo_overlay, echo_registry, echo_root, http_registry, install_with_echo,
    recorded_everything, stored_tool_results, web_row,
};
pub(crate) use home::{EnvDir, Home, describe, walk_files};
pub(crate) use http_session::{HttpSession, message as http_session_message};
pub(crate) use models::ConversationModels;
pub(crate) use servers::{
    HttpServer, echo_http, everything_http, everything_launcher, spawn_http, start_http,
};
pub(crate) use session::Session;

/// Every tool `dshkit mcp` serves by default, in listing order.
pub(crate) const ALL_TOOLS: &[&str] = &[
    "dshkit_doctor",
    "dshkit_info",
    "liveloop_browser",
    "liveloop_detect",
    "liveloop_runtime",
    "liveloop_verify",
    "plugin_check",
    "echo_cassettes",
    "echo_inspect",
    "echo_diff",
    "cordis_list_debug_targets",
    "cordis_attach_debug_session",
    "cordis_debug_snapshot",
    "cordis_wait_for_runtime_change",
    "cordis_detach_debug_session",
    "cordis_runtime_summary",
    "cordis_inspect_event",
    "cordis_inspect_fiber",
    "cordis_search_dispatches",
    "cordis_capture_checkpoint",
    "cordis_compare_current",
    "cordis_waterfall_experiment_status",
    "cordis_start_waterfall_experiment",
    "cordis_stop_waterfall_experiment",
    "cordis_profiler_traces",
];
