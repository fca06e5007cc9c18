//! What the tool families share: their configuration, the image policy and
//! fitting, argument parsing, structured results and preview owners.

use dshkit_mcp::ToolFailure;
use serde_json::{Map, Value};

/// What the families are configured with.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// An existing browser endpoint (`ws://…` or `http://host:port`) instead of a launch.
    pub browser_endpoint: Option<String>,
    /// The directory LiveLoop's app tools may detect, run and read references in
    /// (default: the current directory).
    pub workspace: Option<std::path::PathBuf>,
    /// Start dev servers without a per-call `confirm: true`.
    pub allow_run: bool,
    /// When screenshots travel as MCP image content.
    pub images: ImagePolicy,
    /// Every setting as resolved when the server started (flags over
    /// environment over the settings file over defaults): the DevTools registry.
    pub resolved: dshkit_env::resolve::Resolved,
    /// The same flags and environment over the settings file as it is at each
    /// call: preview limits, quiet window, retention, external hosts and the
    /// evidence root apply without a restart.
    pub settings: dshkit_env::resolve::Live,
}

/// The settings as they are now, or the file's trouble as the call's failure
/// (`{code, message, problems}`, with the fix).
pub(crate) fn settings_now(
    live: &dshkit_env::resolve::Live,
) -> Result<dshkit_env::resolve::Resolved, ToolFailure> {
    crate::config::current(live).map_err(|broken| ToolFailure {
        message: broken.to_string(),
        structured: Some(Map::from_iter([
            ("code".to_owned(), Value::from(broken.code())),
            ("message".to_owned(), Value::from(broken.to_string())),
            (
                "problems".to_owned(),
                serde_json::to_value(broken.problems()).unwrap_or_default(),
            ),
        ])),
    })
}

/// When a result carries its screenshots as MCP `image` content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ImagePolicy {
    /// When the call asks with `image: true`.
    #[default]
    Auto,
    /// Unless the call says `image: false`.
    Always,
    /// Never: for hosts whose models read text only (one image block fails their turn).
    Never,
}

impl ImagePolicy {
    /// Whether a call that gave `asked` gets its images.
    pub(crate) fn sends(self, asked: Option<bool>) -> bool {
        match self {
            Self::Never => false,
            Self::Always => asked.unwrap_or(true),
            Self::Auto => asked.unwrap_or(false),
        }
    }
}

/// The images of one result and what the text says about them: each PNG fitted
/// to [`dshkit_liveloop::fit::MCP_IMAGE_BOUNDS`] (the saved evidence is untouched).
pub(crate) fn fitted_images(
    policy: ImagePolicy,
    asked: Option<bool>,
    images: &[(&str, &std::path::Path)],
) -> SentImages {
    /// Largest evidence file read to send (a 16384 px full page is about 20 MB).
    const MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;
    let mut out = SentImages::default();
    if images.is_empty() || !policy.sends(asked) {
        if asked == Some(true) && policy == ImagePolicy::Never {
            out.notes.push(
                "images are not sent by this server (dshkit mcp --images never); the paths above have them"
                    .to_owned(),
            );
        }
        return out;
    }
    for (role, path) in images {
        let read = std::fs::metadata(path).map_err(|e| e.to_string()).and_then(|m| {
            if m.len() > MAX_SOURCE_BYTES {
                Err(format!("{} bytes is above {MAX_SOURCE_BYTES}", m.len()))
            } else {
                std::fs::read(path).map_err(|e| e.to_string())
            }
        });
        let fitted = read.and_then(|png| {
            dshkit_liveloop::fit::fit_png(&png, &dshkit_liveloop::fit::MCP_IMAGE_BOUNDS)
                .map_err(|e| e.to_string())
        });
        match fitted {
            Ok(fitted) => {
                let number = out.images.len() + 1;
                out.notes.push(match fitted.note() {
                    Some(note) => format!("image {number}: {role}, {note}"),
                    None => format!(
                        "image {number}: {role}, {}x{} as saved",
                        fitted.width, fitted.height
                    ),
                });
                out.described.push(serde_json::json!({
                    "role": role,
                    "width": fitted.width,
                    "height": fitted.height,
                    "bytes": fitted.png.len(),
                    "fitted": fitted.note(),
                }));
                out.images.push(dshkit_mcp::ToolImage {
                    mime_type: "image/png",
                    data: fitted.png,
                });
            }
            Err(e) => out.notes.push(format!("{role} image not sent: {e}")),
        }
    }
    out
}

/// What [`fitted_images`] sends.
#[derive(Debug, Default)]
pub(crate) struct SentImages {
    /// The image content, in order.
    pub(crate) images: Vec<dshkit_mcp::ToolImage>,
    /// One line per image (or per image not sent) for the result text.
    pub(crate) notes: Vec<String>,
    /// Per sent image, in the same order: role, size and how it was fitted, for
    /// `structuredContent.images`.
    pub(crate) described: Vec<Value>,
}

impl SentImages {
    /// Adds the images, their lines and their descriptions to `output`.
    pub(crate) fn add_to(self, output: &mut dshkit_mcp::ToolOutput, indent: &str) {
        for note in self.notes {
            if !output.text.ends_with('\n') {
                output.text.push('\n');
            }
            output.text.push_str(indent);
            output.text.push_str(&note);
        }
        if !self.described.is_empty() {
            output
                .structured
                .insert("images".into(), Value::Array(self.described));
        }
        output.images = self.images;
    }
}

/// Deserializes a call's arguments into `T`, or fails with the schema hint.
pub(crate) fn arguments<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Map<String, Value>,
) -> Result<T, ToolFailure> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolFailure::invalid_arguments(tool, e))
}

/// A serializable report as a JSON object for `structuredContent`.
pub(crate) fn structured(value: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        other => Map::from_iter([("value".to_owned(), other.unwrap_or(Value::Null))]),
    }
}

/// The owner of previews for a call: the caller's subject, or a workstream the
/// caller named inside it. One MCP session can never reach another's previews by
/// naming its owner.
pub(crate) fn scoped_owner(subject: &str, owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!("{subject}/owner:{owner}"),
        None => subject.to_owned(),
    }
}

/// Text of a resource (evidence, a cassette) redacted again before it is shown.
pub(crate) fn redact_again(text: &str) -> Result<String, ToolFailure> {
    let redactor =
        dshkit_echo::redact::Redactor::new(&[], &[]).map_err(|e| ToolFailure::new(e.to_string()))?;
    Ok(redactor.text(text))
}

#[cfg(test)]
mod owner_tests {
    use super::scoped_owner;

    #[test]
    fn a_named_owner_stays_inside_the_callers_scope() {
        let a = scoped_owner("mcp-session:aaa", Some("build"));
        let b = scoped_owner("mcp-session:bbb", Some("build"));
        assert_ne!(a, b, "the same owner name in two sessions is two owners");
        assert_eq!(scoped_owner("stdio", None), "stdio");
    }
}
