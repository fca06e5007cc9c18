//! Result bounding: every tool result leaves the server under a named cap and says
//! when it was cut.

use serde_json::{Map, Value};

/// Largest serialized `structuredContent` a tool result may carry (64 KiB).
pub const DEFAULT_MAX_STRUCTURED_BYTES: usize = 64 * 1024;
/// Largest text block a tool result may carry (16 KiB of UTF-8).
pub const DEFAULT_MAX_TEXT_BYTES: usize = 16 * 1024;

/// Largest image a tool result may carry (1 MB encoded; families fit theirs first).
pub const DEFAULT_MAX_IMAGE_BYTES: usize = 1_000_000;
/// Most images one tool result may carry.
pub const DEFAULT_MAX_IMAGES: usize = 4;

/// The caps applied to every tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultLimits {
    pub max_structured_bytes: usize,
    pub max_text_bytes: usize,
    pub max_image_bytes: usize,
    pub max_images: usize,
}

impl Default for ResultLimits {
    fn default() -> Self {
        Self {
            max_structured_bytes: DEFAULT_MAX_STRUCTURED_BYTES,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_images: DEFAULT_MAX_IMAGES,
        }
    }
}

/// Cuts `text` to at most `max_bytes` on a char boundary, appending a marker that
/// names the cap. Returns whether it cut.
pub fn bound_text(text: &mut String, max_bytes: usize) -> bool {
    if text.len() <= max_bytes {
        return false;
    }
    let original = text.len();
    let marker_room = 96.min(max_bytes);
    let mut cut = max_bytes - marker_room;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n[truncated: {} of {original} bytes omitted, cap {max_bytes}]",
        original - cut
    ));
    true
}

/// Shrinks a JSON object until its serialization fits `max_bytes`, by cutting long
/// strings and long arrays ever shorter. When it cut anything it sets
/// `"truncated": true` and `"truncatedBytes"` on the top-level object, so a client
/// always knows the result is partial. Returns whether it cut.
pub fn bound_structured(value: &mut Map<String, Value>, max_bytes: usize) -> bool {
    let original = serialized_len(value);
    if original <= max_bytes {
        return false;
    }
    // Halve the per-string and per-array allowance until the whole fits; the loop
    // ends because at 0 every string is empty and every array holds one marker.
    let mut max_string = 4096usize;
    let mut max_items = 256usize;
    let pristine = value.clone();
    loop {
        let mut candidate = pristine.clone();
        for item in candidate.values_mut() {
            shrink(item, max_string, max_items);
        }
        candidate.insert("truncated".into(), Value::Bool(true));
        candidate.insert("truncatedBytes".into(), Value::from(original));
        if serialized_len(&candidate) <= max_bytes || (max_string == 0 && max_items == 0) {
            if serialized_len(&candidate) > max_bytes {
                // Even fully shrunk the keys alone exceed the cap: keep only the marker.
                candidate = Map::new();
                candidate.insert("truncated".into(), Value::Bool(true));
                candidate.insert("truncatedBytes".into(), Value::from(original));
            }
            *value = candidate;
            return true;
        }
        max_string /= 2;
        max_items /= 2;
    }
}

fn shrink(value: &mut Value, max_string: usize, max_items: usize) {
    match value {
        Value::String(s) if s.len() > max_string => {
            let mut cut = max_string;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            let omitted = s.len() - cut;
            s.truncate(cut);
            s.push_str(&format!("…[{omitted} bytes omitted]"));
        }
        Value::Array(items) => {
            if items.len() > max_items {
                let omitted = items.len() - max_items;
                items.truncate(max_items);
                items.push(Value::String(format!("…[{omitted} items omitted]")));
            }
            for item in items {
                shrink(item, max_string, max_items);
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                shrink(item, max_string, max_items);
            }
        }
        _ => {}
    }
}

fn serialized_len(value: &Map<String, Value>) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_results_pass_untouched() {
        let mut text = "hello".to_owned();
        assert!(!bound_text(&mut text, 100));
        assert_eq!(text, "hello");
        let mut map = json!({"a": [1, 2, 3]}).as_object().unwrap().clone();
        let before = map.clone();
        assert!(!bound_structured(&mut map, 1000));
        assert_eq!(map, before);
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary_with_a_marker() {
        let mut text = "é".repeat(1000);
        assert!(bound_text(&mut text, 300));
        assert!(text.len() <= 300 + 64, "len {}", text.len());
        assert!(text.contains("[truncated:"));
        assert!(text.contains("cap 300"));
    }

    #[test]
    fn oversized_structured_content_fits_and_says_so() {
        let big: Vec<Value> = (0..10_000)
            .map(|i| json!({"line": format!("log line {i} {}", "x".repeat(50))}))
            .collect();
        let mut map = json!({"name": "doctor", "lines": big})
            .as_object()
            .unwrap()
            .clone();
        assert!(bound_structured(&mut map, 8 * 1024));
        let len = serde_json::to_vec(&map).unwrap().len();
        assert!(len <= 8 * 1024, "still {len} bytes");
        assert_eq!(map["truncated"], json!(true));
        assert!(map["truncatedBytes"].as_u64().unwrap() > 8 * 1024);
        assert_eq!(map["name"], json!("doctor"));
    }

    #[test]
    fn a_cap_smaller_than_the_keys_leaves_only_the_marker() {
        let mut map = Map::new();
        for i in 0..200 {
            map.insert(format!("key-number-{i}"), json!(i));
        }
        assert!(bound_structured(&mut map, 64));
        assert_eq!(map.len(), 2);
        assert_eq!(map["truncated"], json!(true));
    }
}
