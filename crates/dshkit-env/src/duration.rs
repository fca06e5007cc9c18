//! Durations as people type them on dshkit's command line: `500ms`, `30s`, `2m`,
//! `1.5s`. One form for every flag; a bare number is read in the unit the flag's
//! older spelling used (`--quiet-window-ms 250` still means 250 ms).

use std::time::Duration;

/// The unit a number without one is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUnit {
    Millis,
    Seconds,
}

/// Parses `text`; the error says what was wrong and gives examples.
pub fn parse(text: &str, bare: BareUnit) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?} (e.g. 500ms, 30s, 2m)"))?;
    let seconds = match (unit.trim(), bare) {
        ("ms", _) | ("", BareUnit::Millis) => value / 1000.0,
        ("s", _) | ("", BareUnit::Seconds) => value,
        ("m", _) => value * 60.0,
        (other, _) => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: use ms, s or m (e.g. 500ms, 30s, 2m)"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

/// Whole milliseconds of `duration`, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_reads_the_same_and_a_bare_number_keeps_the_old_spellings_unit() {
        for (text, bare, ms) in [
            ("500ms", BareUnit::Seconds, 500),
            ("30s", BareUnit::Millis, 30_000),
            ("2m", BareUnit::Millis, 120_000),
            ("1.5s", BareUnit::Seconds, 1_500),
            ("90", BareUnit::Seconds, 90_000),
            ("250", BareUnit::Millis, 250),
        ] {
            assert_eq!(millis(parse(text, bare).unwrap()), ms, "{text}");
        }
        assert!(
            parse("10h", BareUnit::Seconds)
                .unwrap_err()
                .contains("use ms, s or m")
        );
        assert!(
            parse("soon", BareUnit::Seconds)
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(parse("-1s", BareUnit::Seconds).is_err());
    }
}
