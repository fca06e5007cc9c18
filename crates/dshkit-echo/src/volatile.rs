//! Values that differ between two honest answers of one server, replaced by a
//! fixed word before `echo verify` compares them: timestamps in the shapes
//! servers print them, UUIDs, and epoch numbers under a key that names a time.
//!
//! Timestamps are found inside any string (`"created: Fri Dec 04 2026 …"`):
//! - RFC 3339 and ISO 8601 (`2026-12-04T15:24:22.5Z`, `2026-12-04 15:24`,
//!   `20261204T152422Z`);
//! - JavaScript's `Date.toString()` (`Fri Dec 04 2026 15:24:22 GMT+0000
//!   (Coordinated Universal Time)`);
//! - RFC 2822 and HTTP dates, `Date.toUTCString()` among them (`Fri, 04 Dec
//!   2026 15:24:22 +0000`, `4 Dec 2026 15:24 GMT`);
//! - C's `asctime` and Python's `ctime` (`Fri Dec  4 15:24:22 2026`).
//!
//! A number (or a string of digits) is an epoch only where a key names a time
//! (`createdAt`, `updated_at`, `timestamp`, `mtime`, `exp`, …) and it lies
//! between 2001 and 2096 in seconds, milliseconds, microseconds or
//! nanoseconds: a count that happens to be large stays itself.

use regex::Regex;
use serde_json::{Value, json};

/// What a timestamp becomes.
pub const TIMESTAMP: &str = "<timestamp>";
/// What a UUID becomes.
pub const UUID: &str = "<uuid>";
/// What an epoch number becomes.
pub const EPOCH: &str = "<epoch>";

const DAY: &str = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const MONTH: &str = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";

/// Words of a key that name a time (in capitals, see [`key_names_a_time`]).
const TIME_WORDS: &[&str] = &[
    "TIME",
    "TIMESTAMP",
    "TS",
    "DATE",
    "DATETIME",
    "EPOCH",
    "EXPIRES",
    "EXPIRY",
    "EXP",
    "IAT",
    "NBF",
    "MTIME",
    "CTIME",
    "ATIME",
    "BIRTHTIME",
    "MODIFIED",
    "CREATED",
    "UPDATED",
    "DELETED",
    "SINCE",
    "UNTIL",
    "WHEN",
    "NOW",
];

/// Replaces volatile values so that two honest answers compare equal.
pub struct Normaliser {
    timestamp: Regex,
    uuid: Regex,
}

impl Default for Normaliser {
    fn default() -> Self {
        let iso = r"\d{4}-\d{2}-\d{2}(?:[Tt]\d{2}:\d{2}|[ ]\d{2}:\d{2})(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?";
        let iso_basic = r"\b\d{8}T\d{6}(?:[.,]\d+)?(?:Z|[+-]\d{4})?";
        let javascript = format!(
            r"\b{DAY} {MONTH} \d{{2}} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}} GMT[+-]\d{{4}}(?: \([^)]{{1,64}}\))?"
        );
        let rfc2822 = format!(
            r"\b(?:{DAY}, ?)?\d{{1,2}} {MONTH} \d{{2,4}} \d{{2}}:\d{{2}}(?::\d{{2}})? ?(?:[+-]\d{{4}}|GMT|UTC|UT|Z|[ECMP][SD]T)\b"
        );
        let asctime = format!(r"\b{DAY} {MONTH} [ \d]\d \d{{2}}:\d{{2}}:\d{{2}} \d{{4}}\b");
        Self {
            timestamp: Regex::new(&format!("{javascript}|{rfc2822}|{asctime}|{iso}|{iso_basic}"))
                .expect("the timestamp shapes compile"),
            uuid: Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
                .expect("compiles"),
        }
    }
}

impl Normaliser {
    /// Normalises every volatile value in `value`.
    pub fn value(&self, value: &mut Value) {
        self.under(None, value);
    }

    /// Normalises `value`, the value of the member `key` (or an item of its
    /// array).
    fn under(&self, key: Option<&str>, value: &mut Value) {
        let timed = key.is_some_and(key_names_a_time);
        match value {
            Value::String(s) if timed && s.len() <= 20 && is_epoch_text(s) => *value = json!(EPOCH),
            Value::String(s) => {
                let replaced = self.timestamp.replace_all(s, TIMESTAMP);
                let replaced = self.uuid.replace_all(&replaced, UUID);
                if replaced != *s {
                    *s = replaced.into_owned();
                }
            }
            Value::Number(n) if timed && n.as_f64().is_some_and(is_epoch) => *value = json!(EPOCH),
            Value::Array(items) => items.iter_mut().for_each(|item| self.under(key, item)),
            Value::Object(map) => map
                .iter_mut()
                .for_each(|(key, member)| self.under(Some(key), member)),
            _ => {}
        }
    }
}

/// Whether the member name `key` names a time: one of its words (split at
/// `_`, `-`, `.` and where a lower case letter meets a capital) is a time word
/// (or its plural),
/// its last word is `at` (`createdAt`, `updated_at`, `at`), or it is `t`.
pub fn key_names_a_time(key: &str) -> bool {
    let words = crate::env_secrets::words(key);
    key == "t"
        || words.iter().any(|word| {
            let singular = word.strip_suffix('S').unwrap_or(word);
            TIME_WORDS.contains(&word.as_str()) || TIME_WORDS.contains(&singular)
        })
        || words.last().is_some_and(|last| last == "AT")
}

/// Whether `n` is a moment between 2001 and 2096 in seconds, milliseconds,
/// microseconds or nanoseconds since the Unix epoch.
fn is_epoch(n: f64) -> bool {
    const SECONDS: std::ops::Range<f64> = 1.0e9..4.0e9;
    [1.0, 1.0e3, 1.0e6, 1.0e9]
        .iter()
        .any(|scale| SECONDS.contains(&(n / scale)))
}

/// Whether `text` is a number (digits, at most one `.`) that [`is_epoch`].
fn is_epoch_text(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|b| *b == b'.').count() <= 1
        && text.parse::<f64>().is_ok_and(is_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(text: &str) -> String {
        let mut value = json!(text);
        Normaliser::default().value(&mut value);
        value.as_str().unwrap().to_owned()
    }

    #[test]
    fn each_timestamp_shape_is_normalised_inside_text() {
        for (shape, stamp) in [
            ("RFC 3339", "2026-12-04T15:24:22Z"),
            (
                "RFC 3339 with fraction and offset",
                "2026-12-04T15:24:22.123+01:00",
            ),
            ("RFC 3339 lower case", "2026-12-04t15:24:22z"),
            ("ISO 8601 with a space", "2026-12-04 15:24:22"),
            ("ISO 8601 without seconds", "2026-12-04T15:24"),
            ("ISO 8601 basic", "20261204T152422Z"),
            (
                "Date.toString()",
                "Fri Dec 04 2026 15:24:22 GMT+0000 (Coordinated Universal Time)",
            ),
            (
                "Date.toString() elsewhere",
                "Mon Jan 05 2026 09:00:00 GMT-0800 (Pacific Standard Time)",
            ),
            ("Date.toUTCString()", "Fri, 04 Dec 2026 15:24:22 GMT"),
            ("RFC 2822", "Fri, 4 Dec 2026 15:24:22 +0000"),
            ("RFC 2822 without a day or seconds", "4 Dec 2026 15:24 -0500"),
            ("RFC 2822 with a zone name", "Fri, 04 Dec 2026 15:24:22 EST"),
            ("asctime", "Fri Dec  4 15:24:22 2026"),
        ] {
            assert_eq!(
                normalised(&format!("created: {stamp}\nsize: 29")),
                "created: <timestamp>\nsize: 29",
                "{shape}: {stamp}"
            );
        }
    }

    #[test]
    fn dates_of_another_shape_and_ordinary_text_stay() {
        for text in [
            "2026-12-04",
            "version 2026.8.31",
            "Fri Dec 04",
            "04 Dec",
            "15:24:22",
            "sha 20261204",
            "Friday, 4 December",
        ] {
            assert_eq!(normalised(text), text);
        }
    }

    #[test]
    fn epochs_are_normalised_only_under_a_key_that_names_a_time() {
        let normaliser = Normaliser::default();
        let mut value = json!({
            "createdAt": 1_796_400_065_123_u64, "updated_at": 1_796_400_065, "timestamp": "1796400065",
            "mtime": 1_796_400_065.25, "exp": 1_796_400_065, "t": 1_796_400_065,
            "times": [1_796_400_065, 1_796_400_066], "ns": {"birthtimeNs": 1_796_400_065_000_000_000_u64},
            "count": 1_796_400_065, "id": 1_796_400_065_123_u64, "size": "1796400065",
            "at": 1_796_400_065, "timeout": 3, "date": 12
        });
        normaliser.value(&mut value);
        assert_eq!(
            value,
            json!({
                "createdAt": "<epoch>", "updated_at": "<epoch>", "timestamp": "<epoch>",
                "mtime": "<epoch>", "exp": "<epoch>", "t": "<epoch>",
                "times": ["<epoch>", "<epoch>"], "ns": {"birthtimeNs": "<epoch>"},
                "count": 1_796_400_065, "id": 1_796_400_065_123_u64, "size": "1796400065",
                "at": "<epoch>", "timeout": 3, "date": 12
            })
        );
    }

    #[test]
    fn uuids_are_normalised() {
        assert_eq!(
            normalised("job 0f8fad5b-d9cb-469f-a165-70867728950e done"),
            "job <uuid> done"
        );
    }
}
