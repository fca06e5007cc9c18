//! What dshkit keeps in its block of a profile's `cordis.patch.yml`: the row
//! [`crate::patch`] writes and [`crate::row`] and [`crate::install`] make.

use serde_json::Value;

/// An entry dshkit keeps in its block: the MCP row of `dshkit dsh connect` or the
/// plugin row of `dshkit dsh install`. The block holds one, so each replaces the
/// other and the tools are never loaded twice.
pub trait ManagedRow {
    /// The loader entry id.
    fn id(&self) -> &str;
    /// The entry as the JSON value DSH's loader reads.
    fn to_value(&self) -> Value;
    /// The patch entry (`- insert: [row]`) as YAML text, ending in a newline.
    fn to_patch_yaml(&self) -> String {
        let patch = serde_json::json!([{ "insert": [self.to_value()] }]);
        yaml_serde::to_string(&patch).expect("a JSON value always serializes to YAML")
    }
}
