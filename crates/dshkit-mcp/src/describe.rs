//! The host section of `dshkit mcp --describe`: for a host that wraps the server
//! (the DSH plugin), each tool's seams and the description it shows, and the
//! guidance and skills of the families served. Versioned: a host refuses a
//! format it does not know.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::family::{ToolFamily, ToolSpec};

/// Version of the host section's layout.
pub const HOST_FORMAT: u32 = 1;

/// One tool's entry: its family, the description a host that owns its seams
/// shows, and the seams.
pub(crate) fn host_tool(family: &str, spec: &ToolSpec) -> Value {
    let mut entry = json!({
        "name": spec.name,
        "family": family,
        "description": spec.host.host_description(spec.description),
    });
    if let (Some(entry), Ok(Value::Object(seams))) = (entry.as_object_mut(), serde_json::to_value(spec.host))
    {
        entry.extend(seams);
    }
    entry
}

/// The whole section: the tools' entries (in listing order), then the guidance
/// and skills of `families`, each named with its family.
pub(crate) fn host_section(tools: &[Value], families: &[Arc<dyn ToolFamily>]) -> Value {
    let with_family = |family: &dyn ToolFamily, value: Value| {
        let mut value = value;
        if let Some(object) = value.as_object_mut() {
            object.insert("family".into(), family.name().into());
        }
        value
    };
    let guidance: Vec<Value> = families
        .iter()
        .flat_map(|f| {
            f.guidance()
                .into_iter()
                .map(|g| with_family(f.as_ref(), json!(g)))
        })
        .collect();
    let skills: Vec<Value> = families
        .iter()
        .flat_map(|f| f.skills().into_iter().map(|s| with_family(f.as_ref(), json!(s))))
        .collect();
    json!({
        "format": HOST_FORMAT,
        "tools": tools,
        "guidance": guidance,
        "skills": skills,
    })
}
