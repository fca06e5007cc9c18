//! Where the DevTools endpoint for hosts outside DSH is found: its token file
//! and the file with its URL, inside the devtools directory.

use std::path::Path;

/// The endpoint's token file, inside the devtools directory.
pub const TOKEN_FILE: &str = "token";
/// The file holding the endpoint's URL, inside the devtools directory.
pub const URL_FILE: &str = "endpoint";
/// Where the endpoint listens by default.
pub const DEFAULT_ENDPOINT: &str = "127.0.0.1:43127";

/// The endpoint a bridge forwards to: `explicit`, else the URL the running
/// endpoint wrote into `registry`, else the default address.
pub fn endpoint_url(registry: &Path, explicit: Option<String>) -> String {
    explicit
        .or_else(|| {
            Some(
                std::fs::read_to_string(registry.join(URL_FILE))
                    .ok()?
                    .trim()
                    .to_owned(),
            )
        })
        .unwrap_or_else(|| format!("http://{DEFAULT_ENDPOINT}/mcp"))
}
